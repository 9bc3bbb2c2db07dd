"""nxe.Executable: a compiled graph that runs on numpy arrays.

Inputs are checked here against the executable's own descriptions so a wrong array gets a
message naming the input; outputs are fresh arrays the library fills.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

import numpy as np

from . import _dtypes
from ._binding import check, ffi, lib, text
from .errors import (
    DtypeMismatchError,
    InvalidArgumentError,
    InvalidStateError,
    NotFoundError,
    ShapeMismatchError,
)

IoSpec = tuple[str, tuple[int, ...], str]


def _desc_dtype(desc: Any) -> int:
    dtype = ffi.new("int32_t *")
    check(lib.nxe_dtype_from_dlpack(desc.dtype_code, desc.dtype_bits, dtype))
    return dtype[0]


@cache
def _dlpack(dtype: int) -> tuple[int, int]:
    code = ffi.new("int32_t *")
    bits = ffi.new("int32_t *")
    check(lib.nxe_dtype_to_dlpack(dtype, code, bits))
    return code[0], bits[0]


def _fill_desc(desc: Any, array: np.ndarray, dtype: int) -> None:
    code, bits = _dlpack(dtype)
    desc.data = ffi.cast("void *", array.ctypes.data)
    desc.data_size = array.nbytes
    desc.ndim = array.ndim
    desc.dtype_code = code
    desc.dtype_bits = bits
    desc.reserved = 0
    for i, d in enumerate(array.shape):
        desc.shape[i] = d


class _Io:
    """One input or output as the executable describes it."""

    __slots__ = ("index", "name", "shape", "dtype")

    def __init__(self, index: int, name: str, shape: tuple[int, ...], dtype: int) -> None:
        self.index = index
        self.name = name
        self.shape = shape
        self.dtype = dtype

    def spec(self) -> IoSpec:
        return (self.name, self.shape, _dtypes.name_of(self.dtype))


class Executable:
    """Runs one request at a time. Independent of the Graph it came from."""

    def __init__(self, handle: Any,
                 variables: Mapping[str, tuple[Any, str | None]] | None = None) -> None:
        self._handle = handle
        num_inputs = ffi.new("int32_t *")
        num_outputs = ffi.new("int32_t *")
        try:
            check(lib.nxe_executable_io_count(handle, num_inputs, num_outputs))
            self._inputs = [self._describe(lib.nxe_executable_input_desc, i)
                            for i in range(num_inputs[0])]
            self._outputs = [self._describe(lib.nxe_executable_output_desc, i)
                             for i in range(num_outputs[0])]
        except BaseException:
            self.close()
            raise
        self._variables = dict(variables or {})

    def _describe(self, describe: Any, index: int) -> _Io:
        desc = ffi.new("nxe_tensor_desc *")
        name = ffi.new("const char **")
        check(describe(self._handle, index, desc, name))
        shape = tuple(int(d) for d in desc.shape[0:desc.ndim])
        return _Io(index, text(name[0]) or f"#{index}", shape, _desc_dtype(desc))

    # -- lifetime ------------------------------------------------------------------------

    def close(self) -> None:
        if self._handle is not None:
            lib.nxe_executable_release(self._handle)
            self._handle = None

    def __enter__(self) -> Executable:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_handle", None) is not None and lib is not None:
            self.close()

    def _require_open(self) -> None:
        if self._handle is None:
            raise InvalidStateError("the executable is closed")

    # -- description ---------------------------------------------------------------------

    @property
    def inputs(self) -> list[IoSpec]:
        """(name, shape, dtype) of each input, in run order."""
        return [io.spec() for io in self._inputs]

    @property
    def outputs(self) -> list[IoSpec]:
        """(name, shape, dtype) of each output, in the order of run's results."""
        return [io.spec() for io in self._outputs]

    def memory_info(self) -> dict[str, int]:
        """Arena, transient and constant bytes, threads and kernel calls per run."""
        self._require_open()
        info = ffi.new("nxe_memory_info *")
        info.struct_size = ffi.sizeof("nxe_memory_info")
        check(lib.nxe_executable_memory_info(self._handle, info))
        return {
            "arena_bytes": int(info.arena_bytes),
            "transient_bytes": int(info.transient_bytes),
            "constant_bytes": int(info.constant_bytes),
            "num_threads": int(info.num_threads),
            "num_steps": int(info.num_steps),
        }

    # -- running -------------------------------------------------------------------------

    @staticmethod
    def _array_for(io: _Io, value: Any, what: str) -> np.ndarray:
        expected = _dtypes.numpy_of(io.dtype)
        if isinstance(value, np.ndarray):
            if value.dtype != expected:
                raise DtypeMismatchError(
                    f"{what} '{io.name}': expected {_dtypes.name_of(io.dtype)} "
                    f"(numpy {expected}), got numpy {value.dtype}")
            array = np.asarray(value, order="C")
        else:
            array = np.asarray(value, dtype=expected, order="C")
        if array.shape != io.shape:
            raise ShapeMismatchError(
                f"{what} '{io.name}': expected shape {list(io.shape)}, got {list(array.shape)}")
        return array

    def _feeds(self, args: tuple[Any, ...]) -> list[np.ndarray]:
        if len(args) == 1 and isinstance(args[0], Mapping):
            feeds = args[0]
            unknown = sorted(set(feeds) - {io.name for io in self._inputs})
            if unknown:
                raise InvalidArgumentError(
                    f"run: no input named {', '.join(map(repr, unknown))}; inputs are "
                    f"{[io.name for io in self._inputs]}")
            missing = [io.name for io in self._inputs if io.name not in feeds]
            if missing:
                raise InvalidArgumentError(f"run: input {', '.join(map(repr, missing))} not fed")
            values = [feeds[io.name] for io in self._inputs]
        else:
            if len(args) != len(self._inputs):
                raise InvalidArgumentError(
                    f"run: {len(self._inputs)} inputs expected "
                    f"({[io.name for io in self._inputs]}), got {len(args)}")
            values = list(args)
        return [self._array_for(io, v, "input") for io, v in zip(self._inputs, values)]

    def run(self, *args: Any) -> dict[str, np.ndarray]:
        """Runs once: ``run({"x": x})`` or ``run(x)`` with arrays in input order.

        Returns a new array per output, keyed by output name.
        """
        self._require_open()
        arrays = self._feeds(args)
        results = [np.empty(io.shape, _dtypes.numpy_of(io.dtype)) for io in self._outputs]
        in_descs = ffi.new("nxe_tensor_desc[]", max(len(arrays), 1))
        out_descs = ffi.new("nxe_tensor_desc[]", max(len(results), 1))
        for i, (io, array) in enumerate(zip(self._inputs, arrays)):
            _fill_desc(in_descs[i], array, io.dtype)
        for i, (io, array) in enumerate(zip(self._outputs, results)):
            _fill_desc(out_descs[i], array, io.dtype)
        check(lib.nxe_executable_run(self._handle, in_descs, len(arrays), out_descs, len(results)))
        return {io.name: array for io, array in zip(self._outputs, results)}

    # -- variables -----------------------------------------------------------------------

    def _variable(self, name: str) -> tuple[tuple[int, ...], int]:
        if name not in self._variables:
            raise NotFoundError(
                f"no variable named {name!r}; variables are {sorted(self._variables)}")
        shape, dtype = self._variables[name]
        return tuple(shape), _dtypes.code_of(dtype)

    def read_variable(self, name: str) -> np.ndarray:
        """A copy of a VARIABLE tensor's current value."""
        self._require_open()
        shape, dtype = self._variable(name)
        array = np.empty(shape, _dtypes.numpy_of(dtype))
        desc = ffi.new("nxe_tensor_desc *")
        _fill_desc(desc, array, dtype)
        check(lib.nxe_executable_read_variable(self._handle, name.encode(), desc))
        return array

    def write_variable(self, name: str, value: Any) -> None:
        """Overwrites a VARIABLE tensor's value between runs."""
        self._require_open()
        shape, dtype = self._variable(name)
        io = _Io(0, name, shape, dtype)
        array = self._array_for(io, value, "variable")
        desc = ffi.new("nxe_tensor_desc *")
        _fill_desc(desc, array, dtype)
        check(lib.nxe_executable_write_variable(self._handle, name.encode(), desc))
