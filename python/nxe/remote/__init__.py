"""Remote execution: compile here, run on an ``nxe worker`` over gRPC.

    worker = nxe.RemoteDevice("127.0.0.1:7000", token="s3cret", timeout=10)
    exe = graph.compile(device=worker)           # or worker.load(binary_bytes_or_path)
    outputs = exe.run({"x": x})                  # numpy arrays, as Executable.run returns

The service is defined in nxe_remote.proto (beside this file). A binary travels once: the
client names it by the SHA-256 of its bytes, and sends the bytes only when the worker answers
that it does not hold them. Every call carries a deadline (``timeout`` seconds); a worker that
cannot be reached, dies during a call or answers something that is not a valid reply raises
``RemoteError`` (an ``nxe.IoError``), a deadline that passes raises ``nxe.DeadlineError``, and a
failure of nxe on the worker raises the same ``nxe.Error`` subclass a local call would, with
the worker's message. Needs the optional grpcio and protobuf packages (the `remote` extra).
"""

from __future__ import annotations

import hashlib
import itertools
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _dtypes
from .._binding import check, ffi, lib
from ..device import Device, _remote_objects
from ..errors import (
    DeadlineError,
    Error,
    InvalidArgumentError,
    InvalidStateError,
    IoError,
    error_for_status,
)
from ..executable import Executable, IoSpec, _Io

try:
    import grpc

    from . import nxe_remote_pb2 as pb
    from . import nxe_remote_pb2_grpc as pb_grpc
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("nxe remote execution needs grpcio and protobuf: "
                      "pip install 'nxe[remote]'") from exc

if TYPE_CHECKING:
    from typing_extensions import Self

# Metadata keys: the shared token, and the nxe status of a failure on the worker.
TOKEN_KEY = "authorization"
STATUS_KEY = "nxe-status"
# Messages carry whole binaries and tensors.
MAX_MESSAGE_BYTES = 2**31 - 1
CHANNEL_OPTIONS = [("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                   ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]


class RemoteError(IoError):
    """The worker could not be reached, went away during a call, refused the caller or
    answered something that is not a valid reply."""


def fingerprint(binary: bytes) -> bytes:
    """The name a binary travels under: SHA-256 of its bytes."""
    return hashlib.sha256(binary).digest()


def _error_from_rpc(error: grpc.RpcError, address: str, what: str) -> Error:
    code = error.code() if hasattr(error, "code") else None
    details = (error.details() if hasattr(error, "details") else None) or str(error)
    trailing = dict(error.trailing_metadata() or ()) if hasattr(error, "trailing_metadata") \
        else {}
    where = f"remote {address}: {what}"
    status = trailing.get(STATUS_KEY)
    if status is not None and str(status).isdigit():
        return error_for_status(int(status), f"{where}: {details}")
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return DeadlineError(f"{where}: no answer within the deadline ({details})")
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return RemoteError(f"{where}: refused: {details}")
    if code == grpc.StatusCode.UNAVAILABLE:
        return RemoteError(f"{where}: the worker cannot be reached or went away ({details})")
    if code == grpc.StatusCode.INTERNAL and "deserializ" in details.lower():
        return RemoteError(f"{where}: the worker's answer is not a valid reply ({details})")
    name = code.name if code is not None else "unknown"
    return RemoteError(f"{where}: {name}: {details}")


def _specs(messages: Any, address: str) -> list[_Io]:
    result = []
    for index, spec in enumerate(messages):
        code = _dtypes.code_of(spec.dtype) if spec.dtype in _dtypes.NAMES else None
        if code is None or any(d < 0 for d in spec.shape):
            raise RemoteError(f"remote {address}: the worker described tensor '{spec.name}' "
                              f"as {spec.dtype} {list(spec.shape)}, which is not a tensor")
        result.append(_Io(index, spec.name, tuple(int(d) for d in spec.shape), code))
    return result


class RemoteDevice(Device):
    """A worker (``nxe worker``) at ``address`` ("host:port"), listed by ``nxe.devices()`` as
    "remote:<address>" once made. ``token``: the worker's shared token; ``root_certificates``
    (PEM bytes or a path): talk TLS, trusting those roots; ``timeout``: seconds every call may
    take (uploads and runs included) before ``nxe.DeadlineError``."""

    def __init__(self, address: str, token: str | None = None, timeout: float = 30.0,
                 root_certificates: bytes | str | os.PathLike[str] | None = None) -> None:
        if not isinstance(address, str) or ":" not in address:
            raise InvalidArgumentError(f"RemoteDevice: address {address!r}; expected "
                                       "'host:port'")
        if timeout is None or not timeout > 0:
            raise InvalidArgumentError(f"RemoteDevice: timeout {timeout!r}; expected seconds > 0")
        self.address = address
        self.timeout = float(timeout)
        self._metadata = ((TOKEN_KEY, f"Bearer {token}"),) if token is not None else ()
        if root_certificates is not None:
            if not isinstance(root_certificates, bytes):
                with open(root_certificates, "rb") as file:
                    root_certificates = file.read()
            credentials = grpc.ssl_channel_credentials(root_certificates=root_certificates)
            self._channel = grpc.secure_channel(address, credentials, options=CHANNEL_OPTIONS)
        else:
            self._channel = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
        self._stub = pb_grpc.NxeWorkerStub(self._channel)
        # The C library's remote device runs over this client too: nxe_graph_compile and
        # nxe_executable_load_* with this device, and so nxe.VirtualMachine(device=...).
        transport = _CTransport(self)
        out = ffi.new("const nxe_device **")
        check(lib.nxe_device_add_remote(address.encode(), transport.struct, out))
        _transports.append(transport)  # the library may call it for the process's life
        super().__init__(out[0])
        _remote_objects[self.name] = self
        self.uploads = 0  # binaries this client has sent

    def _call(self, method: str, request: Any, what: str) -> Any:
        try:
            return getattr(self._stub, method)(request, timeout=self.timeout,
                                               metadata=self._metadata)
        except grpc.RpcError as error:
            raise _error_from_rpc(error, self.address, what) from None
        except ValueError as error:  # a closed channel
            raise InvalidStateError(f"remote {self.address}: {what}: {error}") from None

    def health(self) -> dict[str, Any]:
        """The worker's state: status ("ok"), nxe version, executables loaded, binaries held,
        uploads received and its ISA level."""
        reply = self._call("Health", pb.HealthRequest(), "health")
        return {"status": reply.status, "version": reply.version, "loaded": reply.loaded,
                "binaries": reply.binaries, "uploads": reply.uploads, "isa": reply.isa}

    def load(self, binary: bytes | bytearray | memoryview | str | os.PathLike[str],
             threads: int = 0) -> RemoteExecutable:
        """Loads a compiled binary (its bytes or a path to a .nxb) on the worker, sending the
        bytes only if the worker does not hold them yet."""
        if isinstance(binary, (str, os.PathLike)):
            with open(binary, "rb") as file:
                binary = file.read()
        data = bytes(binary)
        digest = fingerprint(data)
        uploaded = False
        try:
            reply = self._call("LoadBinary", pb.LoadRequest(fingerprint=digest, threads=threads),
                               "load")
        except Error as error:
            if error.status != lib.NXE_ERROR_NOT_FOUND or "not held" not in str(error):
                raise
            reply = self._call("LoadBinary", pb.LoadRequest(fingerprint=digest, binary=data,
                                                           threads=threads), "upload")
            uploaded = True
            self.uploads += 1
        if not reply.handle:
            raise RemoteError(f"remote {self.address}: load: the worker answered no handle")
        return RemoteExecutable(self, reply.handle, _specs(reply.inputs, self.address),
                                _specs(reply.outputs, self.address), uploaded)

    def close(self) -> None:
        """Closes the connection; the device stays listed."""
        self._channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<nxe.RemoteDevice {self.address}>"


# Transports handed to the library: their callbacks must outlive every executable using them.
_transports: list[_CTransport] = []


class _CTransport:
    """nxe_remote_transport over a RemoteDevice: the library's remote executables call it."""

    def __init__(self, device: RemoteDevice) -> None:
        self._device = device
        self._loaded: dict[int, RemoteExecutable] = {}
        self._ids = itertools.count(1)  # next() is atomic under the GIL
        self._load = ffi.callback("nxe_status(void *, const void *, size_t, uint64_t *)",
                                  self._on_load)
        self._run = ffi.callback("nxe_status(void *, uint64_t, const nxe_tensor_desc *, int32_t, "
                                 "nxe_tensor_desc *, int32_t)", self._on_run)
        self._unload = ffi.callback("void(void *, uint64_t)", self._on_unload)
        self.struct = ffi.new("nxe_remote_transport *")
        self.struct.struct_size = ffi.sizeof("nxe_remote_transport")
        self.struct.load = self._load
        self.struct.run = self._run
        self.struct.unload = self._unload

    @staticmethod
    def _fail(error: BaseException) -> int:
        status = error.status if isinstance(error, Error) and error.status > 0 \
            else lib.NXE_ERROR_INTERNAL
        return lib.nxe_set_error_message(status, str(error).encode("utf-8", "replace"))

    def _on_load(self, user_data: Any, binary: Any, size: int, handle: Any) -> int:
        try:
            executable = self._device.load(bytes(ffi.buffer(binary, size)))
            key = next(self._ids)
            self._loaded[key] = executable
            handle[0] = key
            return lib.NXE_OK
        except BaseException as error:  # noqa: BLE001 - reported to the library
            return self._fail(error)

    def _on_run(self, user_data: Any, handle: int, inputs: Any, num_inputs: int, outputs: Any,
                num_outputs: int) -> int:
        try:
            executable = self._loaded[handle]
            arrays = []
            for i, io in enumerate(executable._inputs):
                desc = inputs[i]
                dtype = _dtypes.numpy_of(io.dtype)
                arrays.append(np.frombuffer(ffi.buffer(desc.data, desc.data_size), dtype,
                                            count=int(np.prod(io.shape, dtype=np.int64)))
                              .reshape(io.shape))
            results = executable.run(*arrays)
            for i, io in enumerate(executable._outputs):
                array = np.ascontiguousarray(results[io.name])
                if outputs[i].data_size < array.nbytes:
                    raise InvalidArgumentError(f"output {i} holds {outputs[i].data_size} bytes, "
                                               f"needs {array.nbytes}")
                ffi.memmove(outputs[i].data, array, array.nbytes)
            return lib.NXE_OK
        except BaseException as error:  # noqa: BLE001 - reported to the library
            return self._fail(error)

    def _on_unload(self, user_data: Any, handle: int) -> None:
        executable = self._loaded.pop(handle, None)
        if executable is not None:
            try:
                executable.unload()
            except Error:
                pass  # the worker went away: nothing is left to free


class RemoteExecutable:
    """A binary loaded on a worker: ``run`` takes and returns what ``Executable.run`` does."""

    def __init__(self, device: RemoteDevice, handle: str, inputs: list[_Io], outputs: list[_Io],
                 uploaded: bool) -> None:
        self.device = device
        self.handle = handle
        self._inputs = inputs
        self._outputs = outputs
        self.uploaded = uploaded  # whether loading it sent the binary's bytes

    @property
    def inputs(self) -> list[IoSpec]:
        return [io.spec() for io in self._inputs]

    @property
    def outputs(self) -> list[IoSpec]:
        return [io.spec() for io in self._outputs]

    def _open(self) -> str:
        if self.handle is None:
            raise InvalidStateError("the remote executable is unloaded")
        return self.handle

    def run(self, *args: Any) -> dict[str, np.ndarray]:
        """Runs once on the worker: ``run({"x": x})`` or ``run(x)`` with arrays in input order.
        Returns a new array per output, keyed by output name."""
        handle = self._open()
        arrays = Executable._feeds(self, args)  # the local executable's checks, same messages
        request = pb.RunRequest(handle=handle)
        for io, array in zip(self._inputs, arrays):
            request.inputs.add(name=io.name, dtype=_dtypes.name_of(io.dtype),
                               shape=array.shape, data=array.tobytes())
        reply = self.device._call("Run", request, "run")
        return self._results(reply)

    def _results(self, reply: Any) -> dict[str, np.ndarray]:
        where = f"remote {self.device.address}: run"
        if len(reply.outputs) != len(self._outputs):
            raise RemoteError(f"{where}: the worker answered {len(reply.outputs)} outputs, "
                              f"expected {len(self._outputs)}")
        results = {}
        for io, tensor in zip(self._outputs, reply.outputs):
            dtype = _dtypes.numpy_of(io.dtype)
            if (tensor.name != io.name or tensor.dtype != _dtypes.name_of(io.dtype)
                    or tuple(tensor.shape) != io.shape
                    or len(tensor.data) != int(np.prod(io.shape, dtype=np.int64)) * dtype.itemsize):
                raise RemoteError(f"{where}: the worker's output '{tensor.name}' "
                                  f"({tensor.dtype} {list(tensor.shape)}, {len(tensor.data)} "
                                  f"bytes) does not match '{io.name}' "
                                  f"({_dtypes.name_of(io.dtype)} {list(io.shape)})")
            results[io.name] = np.frombuffer(tensor.data, dtype).reshape(io.shape).copy()
        return results

    def unload(self) -> None:
        """Frees the executable on the worker (the worker keeps the binary's bytes, so loading
        it again sends nothing)."""
        if self.handle is None:
            return
        handle, self.handle = self.handle, None
        self.device._call("Unload", pb.UnloadRequest(handle=handle), "unload")

    close = unload

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.unload()

    # Executable._feeds reads these.
    _array_for = staticmethod(Executable._array_for)


__all__ = ["RemoteDevice", "RemoteError", "RemoteExecutable", "fingerprint"]
