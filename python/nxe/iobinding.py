"""nxe.IoBinding: numpy arrays bound to an executable's inputs and outputs
(nxe_binding in nxe.h, "Bound caller memory").

A run of the binding reads each input array where it lies and the kernels write each output
straight into its array: nothing is copied in or out (``Executable.stats()`` counts the inputs
as in place and no bytes copied). Arrays are checked when bound: exactly the tensor's dtype and
shape, C-contiguous (a strided array would need the copy binding exists to avoid, so it is
refused, not copied), outputs writable, aligned to the element size, and an output may not
overlap any other bound array. The binding keeps every bound array alive; the caller must not
use them while a run is under way. One call at a time per binding (a second thread gets
InvalidStateError); make one binding per thread to run an executable from several at once.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _dtypes
from ._binding import check, ffi, lib
from .errors import (
    DtypeMismatchError,
    InvalidArgumentError,
    InvalidStateError,
    NotFoundError,
    ShapeMismatchError,
)

if TYPE_CHECKING:
    from typing_extensions import Self

    from .executable import Executable, _Io

ALIGNMENT = 64  # what aligned_empty gives: cache lines, as nxe's own buffers


def aligned_empty(shape: Sequence[int], dtype: Any, alignment: int = ALIGNMENT) -> np.ndarray:
    """An uninitialized C-contiguous array whose data starts on an `alignment`-byte boundary."""
    dtype = np.dtype(dtype)
    shape = tuple(operator.index(d) for d in shape)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + alignment, np.uint8)
    offset = (-raw.ctypes.data) % alignment
    return raw[offset:offset + nbytes].view(dtype).reshape(shape)


class IoBinding:
    """Arrays bound to one executable's inputs and outputs; ``run()`` runs on them in place.

    Made by ``Executable.bind()``. ``bind_input``/``bind_output`` take an input or output by
    index or name; ``bind_output`` without an array allocates a 64-byte aligned one.
    ``outputs`` holds the bound output arrays by name.
    """

    def __init__(self, executable: Executable) -> None:
        handle = executable._open_handle()
        out = ffi.new("nxe_binding **")
        check(lib.nxe_binding_create(handle, out))
        # The binding must not outlive the C executable: holding the handle keeps it alive.
        self._executable_handle = handle
        self._handle = ffi.gc(out[0], lib.nxe_binding_release)
        self._input_ios = executable._inputs
        self._output_ios = executable._outputs
        self._inputs: dict[int, np.ndarray] = {}
        self._outputs: dict[int, np.ndarray] = {}

    def close(self) -> None:
        """Releases the binding (the arrays stay the caller's)."""
        self._handle = None
        self._inputs.clear()
        self._outputs.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open(self) -> Any:
        if self._handle is None:
            raise InvalidStateError("the binding is closed")
        return self._handle

    @staticmethod
    def _index(ios: list[_Io], key: int | str, what: str) -> int:
        if isinstance(key, str):
            for io in ios:
                if io.name == key:
                    return io.index
            raise NotFoundError(f"bind_{what}: no {what} named {key!r}; {what}s are "
                                f"{[io.name for io in ios]}")
        index = operator.index(key)
        if not 0 <= index < len(ios):
            raise NotFoundError(f"bind_{what}: {what} index {index} out of range; the "
                                f"executable has {len(ios)} {what}s")
        return index

    @staticmethod
    def _check_array(io: _Io, array: Any, what: str) -> np.ndarray:
        if not isinstance(array, np.ndarray):
            raise InvalidArgumentError(
                f"bind_{what}: {what} '{io.name}' needs a numpy array, got "
                f"{type(array).__name__} (binding reads and writes the caller's memory, so "
                "nothing is converted)")
        expected = _dtypes.numpy_of(io.dtype)
        if array.dtype != expected:
            raise DtypeMismatchError(
                f"bind_{what}: {what} '{io.name}' is {_dtypes.name_of(io.dtype)} (numpy "
                f"{expected}), the array is numpy {array.dtype}")
        if array.shape != io.shape:
            raise ShapeMismatchError(
                f"bind_{what}: {what} '{io.name}' has shape {list(io.shape)}, the array "
                f"{list(array.shape)}")
        if not array.flags.c_contiguous:
            raise InvalidArgumentError(
                f"bind_{what}: the array for {what} '{io.name}' is not C-contiguous; bind a "
                "contiguous array (np.ascontiguousarray makes one)")
        if what == "output" and not array.flags.writeable:
            raise InvalidArgumentError(
                f"bind_output: the array for output '{io.name}' is read-only")
        return array

    def _bind(self, what: str, key: int | str, array: Any) -> np.ndarray:
        handle = self._open()
        ios = self._input_ios if what == "input" else self._output_ios
        index = self._index(ios, key, what)
        io = ios[index]
        if array is None:
            if what == "input":
                raise InvalidArgumentError("bind_input: an array is needed")
            array = aligned_empty(io.shape, _dtypes.numpy_of(io.dtype))
        array = self._check_array(io, array, what)
        desc = ffi.new("nxe_tensor_desc *")
        code = ffi.new("int32_t *")
        bits = ffi.new("int32_t *")
        check(lib.nxe_dtype_to_dlpack(io.dtype, code, bits))
        desc.data = ffi.cast("void *", array.ctypes.data)
        desc.data_size = array.nbytes
        desc.ndim = array.ndim
        desc.dtype_code = code[0]
        desc.dtype_bits = bits[0]
        for i, d in enumerate(array.shape):
            desc.shape[i] = d
        bind = lib.nxe_binding_bind_input if what == "input" else lib.nxe_binding_bind_output
        check(bind(handle, index, desc))
        (self._inputs if what == "input" else self._outputs)[index] = array
        return array

    def bind_input(self, key: int | str, array: np.ndarray) -> np.ndarray:
        """Binds `array` to an input (by index or name); returns it. Later runs read it where
        it lies: refill it in place between runs."""
        return self._bind("input", key, array)

    def bind_output(self, key: int | str, array: np.ndarray | None = None) -> np.ndarray:
        """Binds `array` (None: a new 64-byte aligned one) to an output; returns it. Each run
        writes the output into it."""
        return self._bind("output", key, array)

    def clear(self) -> None:
        """Unbinds every array."""
        check(lib.nxe_binding_clear(self._open()))
        self._inputs.clear()
        self._outputs.clear()

    def run(self) -> dict[str, np.ndarray]:
        """Runs once on the bound arrays; returns the output arrays by name (the bound ones,
        not copies)."""
        check(lib.nxe_binding_run(self._open()))
        return self.outputs

    @property
    def outputs(self) -> dict[str, np.ndarray]:
        return {self._output_ios[i].name: a for i, a in sorted(self._outputs.items())}


def bind(executable: Executable, inputs: Sequence[Any] | Mapping[str, Any] | None = None,
         outputs: Sequence[Any] | Mapping[str, Any] | None = None) -> IoBinding:
    """An IoBinding with `inputs` bound (a sequence in input order or a mapping by name) and
    `outputs` bound likewise (None: every output gets a new aligned array)."""
    binding = IoBinding(executable)
    for what, given in (("input", inputs), ("output", outputs)):
        if given is None:
            if what == "output":
                for io in binding._output_ios:
                    binding.bind_output(io.index)
            continue
        items = given.items() if isinstance(given, Mapping) else enumerate(given)
        for key, array in items:
            binding._bind(what, key, array)
    return binding
