"""`nxe worker`: serves the NxeWorker service (nxe_remote.proto) over gRPC. Binaries arrive once,
named by the SHA-256 of their bytes, and are loaded with nxe's own loader
(nxe_executable_load_memory, through nxe.VirtualMachine); runs take and return tensors.

Bound to a loopback address it may run open; on any other address it needs a shared token
(checked on every call, metadata "authorization: Bearer <token>") or TLS (a certificate and
key), or both.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import math
import signal
import sys
import threading
import uuid
from concurrent import futures
from typing import Any

import grpc
import numpy as np

from .. import _dtypes
from ..cpu import cpu_info
from ..errors import Error
from ..vm import VirtualMachine
from . import CHANNEL_OPTIONS, STATUS_KEY, TOKEN_KEY
from . import nxe_remote_pb2 as pb
from . import nxe_remote_pb2_grpc as pb_grpc

# gRPC codes for nxe's statuses: the caller reads the exact status from the trailing metadata.
_GRPC_CODES = {1: grpc.StatusCode.INVALID_ARGUMENT, 2: grpc.StatusCode.RESOURCE_EXHAUSTED,
               6: grpc.StatusCode.UNIMPLEMENTED, 7: grpc.StatusCode.NOT_FOUND,
               8: grpc.StatusCode.FAILED_PRECONDITION, 14: grpc.StatusCode.RESOURCE_EXHAUSTED,
               15: grpc.StatusCode.DEADLINE_EXCEEDED, 16: grpc.StatusCode.CANCELLED}
NOT_FOUND, INVALID_ARGUMENT = 7, 1


def _abort(context: grpc.ServicerContext, status: int, message: str) -> None:
    context.set_trailing_metadata(((STATUS_KEY, str(status)),))
    context.abort(_GRPC_CODES.get(status, grpc.StatusCode.INTERNAL), message)


def is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def split_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"--listen {address!r}: expected HOST:PORT (PORT 0 picks a free one)")
    return host, int(port)


class Worker(pb_grpc.NxeWorkerServicer):
    """The service's state: binaries by fingerprint, loaded executables by handle."""

    def __init__(self, max_binaries: int = 64) -> None:
        self._lock = threading.Lock()
        self._binaries: dict[bytes, bytes] = {}
        self._loaded: dict[str, VirtualMachine] = {}
        self._uploads = 0
        self._max_binaries = max_binaries

    def LoadBinary(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        digest = bytes(request.fingerprint)
        if len(digest) != 32:
            _abort(context, INVALID_ARGUMENT,
                   f"load: the fingerprint is {len(digest)} bytes; expected a 32-byte SHA-256")
        if request.threads < 0 or request.threads > 1024:
            _abort(context, INVALID_ARGUMENT, f"load: threads {request.threads} is outside "
                   "[0, 1024]")
        uploaded = bool(request.binary)
        if uploaded:
            data = bytes(request.binary)
            if hashlib.sha256(data).digest() != digest:
                _abort(context, INVALID_ARGUMENT,
                       "load: the binary's SHA-256 is not the fingerprint it was sent under")
            with self._lock:
                if digest not in self._binaries and len(self._binaries) >= self._max_binaries:
                    self._binaries.pop(next(iter(self._binaries)))  # the oldest goes
                self._binaries[digest] = data
                self._uploads += 1
        else:
            with self._lock:
                data = self._binaries.get(digest)
            if data is None:
                _abort(context, NOT_FOUND, f"load: binary {digest.hex()} is not held here; "
                       "send its bytes")
        try:
            vm = VirtualMachine(data, threads=request.threads)
        except Error as error:
            _abort(context, error.status, f"load: {error}")
        handle = uuid.uuid4().hex
        with self._lock:
            self._loaded[handle] = vm
        reply = pb.LoadReply(handle=handle, uploaded=uploaded)
        for specs, out in ((vm.inputs, reply.inputs), (vm.outputs, reply.outputs)):
            for name, shape, dtype in specs:
                out.add(name=name, dtype=dtype, shape=shape)
        return reply

    def _vm(self, handle: str, context: grpc.ServicerContext, what: str) -> VirtualMachine:
        with self._lock:
            vm = self._loaded.get(handle)
        if vm is None:
            _abort(context, NOT_FOUND, f"{what}: no executable has handle {handle!r}")
        return vm

    def Run(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        vm = self._vm(request.handle, context, "run")
        feeds: dict[str, np.ndarray] = {}
        arrays: list[np.ndarray] = []
        for tensor in request.inputs:
            if tensor.dtype not in _dtypes.NAMES:
                _abort(context, INVALID_ARGUMENT,
                       f"run: input '{tensor.name}' has dtype {tensor.dtype!r}; expected one of "
                       f"{list(_dtypes.NAMES)}")
            dtype = _dtypes.numpy_of(_dtypes.code_of(tensor.dtype))
            shape = tuple(int(d) for d in tensor.shape)
            if any(d < 0 for d in shape) or len(shape) > 6:
                _abort(context, INVALID_ARGUMENT, f"run: input '{tensor.name}' has shape "
                       f"{list(shape)}")
            expected = math.prod(shape) * dtype.itemsize  # exact: no int64 wrap-around
            if len(tensor.data) != expected:
                _abort(context, INVALID_ARGUMENT,
                       f"run: input '{tensor.name}' ({tensor.dtype} {list(shape)}) needs "
                       f"{expected} bytes, got {len(tensor.data)}")
            array = np.frombuffer(tensor.data, dtype).reshape(shape)
            arrays.append(array)
            feeds[tensor.name] = array
        named = bool(request.inputs) and all(t.name for t in request.inputs)
        try:
            results = vm.executable.run(feeds) if named else vm.executable.run(*arrays)
        except Error as error:
            _abort(context, error.status, f"run: {error}")
        reply = pb.RunReply()
        for name, shape, dtype in vm.outputs:
            array = results[name]
            reply.outputs.add(name=name, dtype=dtype, shape=shape, data=array.tobytes())
        return reply

    def Unload(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        with self._lock:
            vm = self._loaded.pop(request.handle, None)
        if vm is None:
            _abort(context, NOT_FOUND, f"unload: no executable has handle {request.handle!r}")
        vm.close()
        return pb.UnloadReply()

    def Health(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        from .. import version

        with self._lock:
            return pb.HealthReply(status="ok", version=version(), loaded=len(self._loaded),
                                  binaries=len(self._binaries), uploads=self._uploads,
                                  isa=cpu_info()["isa"])


class _TokenCheck(grpc.ServerInterceptor):
    """Refuses every call whose metadata lacks the shared token."""

    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

    def intercept_service(self, continuation: Any, details: Any) -> Any:
        given = dict(details.invocation_metadata or ()).get(TOKEN_KEY, "")
        if isinstance(given, str):
            given = given.encode()
        if hmac.compare_digest(given, self._expected):
            return continuation(details)

        def refuse(request: Any, context: grpc.ServicerContext) -> None:
            context.abort(grpc.StatusCode.UNAUTHENTICATED,
                          "a missing or wrong token (metadata 'authorization: Bearer <token>')")

        return grpc.unary_unary_rpc_method_handler(refuse)


def serve(listen: str, token: str | None = None, tls_cert: str | None = None,
          tls_key: str | None = None, max_workers: int = 4) -> int:
    """Runs the worker until SIGINT or SIGTERM; returns the exit status."""
    host, _ = split_address(listen)
    if (tls_cert is None) != (tls_key is None):
        print("nxe worker: --tls-cert and --tls-key go together", file=sys.stderr)
        return 2
    if not is_loopback(host) and token is None and tls_cert is None:
        print(f"nxe worker: refusing to listen on {host}, which is not a loopback address, "
              "without --token or --tls-cert/--tls-key", file=sys.stderr)
        return 2
    if token is not None and not token:
        print("nxe worker: --token must not be empty", file=sys.stderr)
        return 2
    interceptors = [_TokenCheck(token)] if token is not None else []
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers),
                         interceptors=interceptors, options=CHANNEL_OPTIONS)
    pb_grpc.add_NxeWorkerServicer_to_server(Worker(), server)
    try:
        if tls_cert is not None:
            with open(tls_cert, "rb") as cert, open(tls_key, "rb") as key:
                credentials = grpc.ssl_server_credentials([(key.read(), cert.read())])
            port = server.add_secure_port(listen, credentials)
        else:
            port = server.add_insecure_port(listen)
    except (OSError, RuntimeError) as error:
        print(f"nxe worker: cannot listen on {listen}: {error}", file=sys.stderr)
        return 1
    if port == 0:
        print(f"nxe worker: cannot listen on {listen}", file=sys.stderr)
        return 1
    server.start()
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    print(f"nxe worker: listening on {host}:{port}", flush=True)
    stop.wait()
    server.stop(grace=1.0).wait()
    return 0
