"""nxe.VirtualMachine: runs a compiled binary (.nxb) loaded by the small executor, in the
manner of the NPU host clients. A thin face over Executable: no running logic of its own.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ._binding import check, ffi, lib
from .device import device_handle
from .errors import InvalidStateError
from .executable import Executable, IoSpec
from .limits import Limits, c_limits

if TYPE_CHECKING:
    from typing_extensions import Self

class Function:
    """The callable ``vm["main"]``: takes the inputs positionally, in order, and returns the
    outputs as arrays the caller owns (a tuple, or the array itself for one output)."""

    def __init__(self, vm: VirtualMachine, name: str) -> None:
        self._vm = vm
        self.name = name

    def __call__(self, *arrays: Any) -> np.ndarray | tuple[np.ndarray, ...]:
        return _unpack(self._vm._open().run(*arrays))

    def __repr__(self) -> str:
        return f"<nxe.VirtualMachine function {self.name!r}>"


class VirtualMachine:
    """A compiled binary loaded for running.

    ``source`` is a path (the file is memory-mapped; constants are used from the mapping) or
    the binary's bytes (copied). ``threads`` = 0 uses every online CPU; ``verify`` checks
    every section's checksum first; ``allow_recompile`` lets a binary made for an ISA or
    kernel ABI this machine lacks be recompiled from the model embedded in it (otherwise that
    is an UnsupportedError); ``staging_bytes`` sets the staging capacity (0: the result area
    plus room for every input twice); ``limits`` (nxe.Limits) bounds the file, its plan and a
    run's memory; ``context`` (nxe.Context) holds the custom ops the binary names. Like
    Executable, it may be run from several threads at
    once.

        with nxe.VirtualMachine("edsr.nxb") as vm:
            frame = vm.create_input((1, 3, 270, 480), "f32")
            frame[...] = pixels               # written in place: the run copies nothing in
            upscaled = vm.run_nocopy(frame)   # a view into the result buffer
    """

    def __init__(self, source: str | os.PathLike[str] | bytes | bytearray | memoryview,
                 threads: int = 0, verify: bool = True, allow_recompile: bool = True,
                 staging_bytes: int = 0, limits: Limits | None = None,
                 context: Any = None, device: Any = None) -> None:
        self._executable: Executable | None = None
        options = ffi.new("nxe_load_options *")
        options.struct_size = ffi.sizeof("nxe_load_options")
        limits_struct = c_limits(limits)  # kept alive through the call
        options.limits = limits_struct
        options.num_threads = operator.index(threads)
        options.verify = 1 if verify else 0
        options.allow_recompile = 1 if allow_recompile else 0
        options.staging_bytes = operator.index(staging_bytes)
        if context is not None:  # an nxe.Context: the custom ops the binary names
            context._require_open()
            options.context = context._handle
        options.device = device_handle(device)  # a CPU device: pins the workers (nxe.devices())
        out = ffi.new("nxe_executable **")
        if isinstance(source, (bytes, bytearray, memoryview)):
            data = ffi.from_buffer(source)
            check(lib.nxe_executable_load_memory(data, len(data), options, out))
        elif isinstance(source, (str, os.PathLike)):
            check(lib.nxe_executable_load_file(os.fsencode(source), options, out))
        else:
            raise TypeError("VirtualMachine: expected a path or the binary's bytes, got "
                            f"{type(source).__name__}")
        self._executable = Executable(out[0])

    # -- lifetime ------------------------------------------------------------------------

    def close(self) -> None:
        """Ends use of the binary; arrays from ``run_nocopy``/``create_input`` still keep
        its memory alive."""
        if self._executable is not None:
            self._executable.close()
            self._executable = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self._executable is None

    def _open(self) -> Executable:
        if self._executable is None:
            raise InvalidStateError("the virtual machine is closed")
        return self._executable

    # -- description ---------------------------------------------------------------------

    @property
    def executable(self) -> Executable:
        """The Executable the binary was loaded into."""
        return self._open()

    @property
    def inputs(self) -> list[IoSpec]:
        """(name, shape, dtype) of each input, in call order."""
        return self._open().inputs

    @property
    def outputs(self) -> list[IoSpec]:
        """(name, shape, dtype) of each output, in result order."""
        return self._open().outputs

    def stats(self) -> dict[str, int]:
        """Run statistics: see Executable.stats."""
        return self._open().stats()

    def info(self) -> dict[str, Any]:
        """Fingerprint, ISA, kernel ABI and load facts: see Executable.info."""
        return self._open().info()

    # -- running -------------------------------------------------------------------------

    def __getitem__(self, name: str) -> Function:
        """The binary's function ``name``; a binary holds one, "main"."""
        self._open()
        if name != "main":
            raise KeyError(f"no function {name!r} in this binary: it has only 'main'")
        return Function(self, name)

    def run_nocopy(self, *arrays: Any) -> np.ndarray | tuple[np.ndarray, ...]:
        """Runs like ``vm["main"]`` but returns views into a result buffer, valid until this
        thread's next run: see Executable.run_nocopy."""
        return _unpack(self._open().run_nocopy(*arrays))

    def create_input(self, shape: Sequence[int] | None = None, dtype: Any = None, *,
                     index_or_name: int | str | None = None) -> np.ndarray:
        """A writable array in the staging buffer for the one input with this ``shape`` and
        ``dtype`` (or the input given by index or name): a run passed it copies nothing in.
        See Executable.create_input."""
        return self._open().create_input(index_or_name, shape=shape, dtype=dtype)

    def reset_staging(self) -> None:
        """Forgets every ``create_input`` allocation: see Executable.reset_staging."""
        self._open().reset_staging()

    def __repr__(self) -> str:
        if self._executable is None:
            return "<nxe.VirtualMachine (closed)>"
        return f"<nxe.VirtualMachine inputs={self.inputs} outputs={self.outputs}>"


def _unpack(results: dict[str, np.ndarray]) -> np.ndarray | tuple[np.ndarray, ...]:
    values = tuple(results.values())
    return values[0] if len(values) == 1 else values
