"""nxe.Executable: a compiled graph that runs on numpy arrays.

Inputs are checked here against the executable's own descriptions so a wrong array gets a
message naming the input. run() returns fresh arrays the caller owns; run_nocopy() and
create_input() return arrays living in the executable's staging buffer, which keep it alive.

Every call into the library releases the GIL. The library lets several threads use one
executable at once (each run has its own memory), so no lock is taken here; each method reads
the handle once, and a run under way keeps it alive through a concurrent ``close``.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from typing_extensions import Self

IoSpec = tuple[str, tuple[int, ...], str]

_STATS_FIELDS = ("runs", "inputs_copied", "inputs_in_place", "bytes_copied_in",
                 "bytes_copied_out", "staging_bytes", "staging_used")


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

    __slots__ = ("dtype", "index", "name", "shape")

    def __init__(self, index: int, name: str, shape: tuple[int, ...], dtype: int) -> None:
        self.index = index
        self.name = name
        self.shape = shape
        self.dtype = dtype

    def spec(self) -> IoSpec:
        return (self.name, self.shape, _dtypes.name_of(self.dtype))


class _StagingMemory:
    """Shows numpy an array inside the executable's staging buffer (``__array_interface__``)
    and holds the C executable, so the memory outlives every other reference to it."""

    __slots__ = ("__array_interface__", "_owner")

    def __init__(self, owner: Any, pointer: Any, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self._owner = owner
        self.__array_interface__ = {
            "version": 3,
            "shape": shape,
            "typestr": dtype.str,
            "data": (int(ffi.cast("uintptr_t", pointer)), False),
        }


def _staging_array(owner: Any, desc: Any, io: _Io, what: str) -> np.ndarray:
    dtype = _dtypes.numpy_of(io.dtype)
    nbytes = int(np.prod(io.shape, dtype=np.int64)) * dtype.itemsize
    if nbytes == 0:
        return np.empty(io.shape, dtype)
    if desc.data == ffi.NULL:
        raise InvalidStateError(f"{what} '{io.name}': the library gave no data pointer")
    if desc.data_size < nbytes:
        raise InvalidStateError(f"{what} '{io.name}': the library gave {desc.data_size} bytes, "
                                f"the tensor needs {nbytes}")
    # Writable because DLPack consumers (numpy before DLPack 1.0, PyTorch) refuse read-only
    # arrays; the memory is the executable's own scratch, so writes harm nothing else.
    return np.asarray(_StagingMemory(owner, desc.data, io.shape, dtype))


class Executable:
    """Runs on numpy arrays, from any number of threads at once. Independent of the Graph it
    came from.

    The C executable is released when ``close()`` has been called (or this object is gone)
    and no array from ``run_nocopy`` or ``create_input`` still uses its memory.
    """

    def __init__(self, handle: Any,
                 variables: Mapping[str, tuple[Any, str | None]] | None = None) -> None:
        # Arrays in the staging buffer hold this same object: the last holder releases it.
        self._handle = ffi.gc(handle, lib.nxe_executable_release)
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
        """Ends use of the executable. Its memory goes now, or with the last array from
        ``run_nocopy``/``create_input`` that still points into it."""
        self._handle = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open_handle(self) -> Any:
        handle = self._handle
        if handle is None:
            raise InvalidStateError("the executable is closed")
        return handle

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
        handle = self._open_handle()
        info = ffi.new("nxe_memory_info *")
        info.struct_size = ffi.sizeof("nxe_memory_info")
        check(lib.nxe_executable_memory_info(handle, info))
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

    def _input_descs(self, args: tuple[Any, ...]) -> tuple[Any, list[np.ndarray]]:
        arrays = self._feeds(args)
        descs = ffi.new("nxe_tensor_desc[]", max(len(arrays), 1))
        for i, (io, array) in enumerate(zip(self._inputs, arrays)):
            _fill_desc(descs[i], array, io.dtype)
        # The arrays are returned too: the descriptors point into them.
        return descs, arrays

    def run(self, *args: Any) -> dict[str, np.ndarray]:
        """Runs once: ``run({"x": x})`` or ``run(x)`` with arrays in input order.

        Returns a new array per output, keyed by output name, owned by the caller: later runs
        leave it alone. An input made by ``create_input`` is used where it lies, without a copy.
        """
        handle = self._open_handle()
        in_descs, arrays = self._input_descs(args)
        results = [np.empty(io.shape, _dtypes.numpy_of(io.dtype)) for io in self._outputs]
        out_descs = ffi.new("nxe_tensor_desc[]", max(len(results), 1))
        for i, (io, array) in enumerate(zip(self._outputs, results)):
            _fill_desc(out_descs[i], array, io.dtype)
        check(lib.nxe_executable_run(handle, in_descs, len(arrays), out_descs, len(results)))
        return {io.name: array for io, array in zip(self._outputs, results)}

    def run_nocopy(self, *args: Any) -> dict[str, np.ndarray]:
        """Runs once like ``run``, but each output is a view into a result buffer of the
        executable: nothing is copied out.

        The views are valid until this thread's next run of the executable: that run
        overwrites them with its own results; other threads' runs leave them alone. They keep
        the executable's memory alive, and ``np.from_dlpack`` (or ``torch.from_dlpack``) takes
        them without a copy.
        """
        handle = self._open_handle()
        in_descs, arrays = self._input_descs(args)
        out_descs = ffi.new("nxe_tensor_desc[]", max(len(self._outputs), 1))
        check(lib.nxe_executable_run_nocopy(handle, in_descs, len(arrays), out_descs,
                                            len(self._outputs)))
        return {io.name: _staging_array(handle, out_descs[i], io, "output")
                for i, io in enumerate(self._outputs)}

    # -- zero-copy inputs and statistics -------------------------------------------------

    def _input_index(self, index_or_name: int | str | None, shape: Sequence[int] | None,
                     dtype: Any) -> int:
        if index_or_name is not None:
            if shape is not None or dtype is not None:
                raise TypeError("create_input: give an input (index or name) or shape/dtype, "
                                "not both")
            if isinstance(index_or_name, str):
                for io in self._inputs:
                    if io.name == index_or_name:
                        return io.index
                raise NotFoundError(f"create_input: no input named {index_or_name!r}; inputs "
                                    f"are {[io.name for io in self._inputs]}")
            index = operator.index(index_or_name)
            if not 0 <= index < len(self._inputs):
                raise NotFoundError(f"create_input: input index {index} out of range; the "
                                    f"executable has {len(self._inputs)} inputs")
            return index
        if shape is None and dtype is None:
            if not self._inputs:
                raise NotFoundError("create_input: the executable has no inputs")
            return 0
        wanted_shape = None if shape is None else tuple(operator.index(d) for d in shape)
        wanted_dtype = None if dtype is None else _dtypes.code_of(dtype)
        matches = [io for io in self._inputs
                   if (wanted_shape is None or io.shape == wanted_shape)
                   and (wanted_dtype is None or io.dtype == wanted_dtype)]
        wanted = (f"shape {list(wanted_shape) if wanted_shape is not None else 'any'}, "
                  f"dtype {_dtypes.name_of(wanted_dtype) if wanted_dtype is not None else 'any'}")
        if not matches:
            raise NotFoundError(f"create_input: no input has {wanted}; inputs are "
                                f"{self.inputs}")
        if len(matches) > 1:
            raise InvalidArgumentError(
                f"create_input: several inputs have {wanted} "
                f"({[io.name for io in matches]}); pass the input's name or index")
        return matches[0].index

    def create_input(self, index_or_name: int | str | None = None, *,
                     shape: Sequence[int] | None = None, dtype: Any = None) -> np.ndarray:
        """A writable array for one input, living in the executable's staging buffer: fill it
        and pass it to ``run``/``run_nocopy``, which then use it in place instead of copying.

        The input is chosen by index or name, or by the ``shape`` and/or ``dtype`` that
        exactly one input has (none given: input 0). The array belongs to the executable, not
        to the thread: any thread may pass it to a run. It is valid until ``reset_staging``;
        a full staging buffer raises BufferTooSmallError.
        """
        handle = self._open_handle()
        index = self._input_index(index_or_name, shape, dtype)
        desc = ffi.new("nxe_tensor_desc *")
        check(lib.nxe_executable_create_input(handle, index, desc))
        return _staging_array(handle, desc, self._inputs[index], "input")

    def reset_staging(self) -> None:
        """Forgets every ``create_input`` allocation. Arrays made before must not be used
        afterwards, by any thread: their memory is handed out again."""
        handle = self._open_handle()
        check(lib.nxe_executable_reset_staging(handle))

    def stats(self) -> dict[str, int]:
        """Run statistics since creation or load: runs, inputs copied into staging and used in
        place, bytes copied in and out, staging capacity and use."""
        handle = self._open_handle()
        stats = ffi.new("nxe_run_stats *")
        stats.struct_size = ffi.sizeof("nxe_run_stats")
        check(lib.nxe_executable_stats(handle, stats))
        return {field: int(getattr(stats, field)) for field in _STATS_FIELDS}

    def info(self) -> dict[str, Any]:
        """Where the plan came from: the source model's fingerprint (hex), the ISA and kernel
        ABI it needs, whether it was loaded from a binary or recompiled from the model
        embedded in one, and the number of distinct constant buffers."""
        handle = self._open_handle()
        info = ffi.new("nxe_executable_info *")
        info.struct_size = ffi.sizeof("nxe_executable_info")
        check(lib.nxe_executable_get_info(handle, info))
        return {
            "fingerprint": bytes(ffi.buffer(info.fingerprint)).hex(),
            "isa": ffi.string(info.isa).decode("utf-8", "replace"),
            "kernel_abi": int(info.kernel_abi),
            "loaded": bool(info.loaded),
            "recompiled": bool(info.recompiled),
            "num_constants": int(info.num_constants),
        }

    # -- variables -----------------------------------------------------------------------

    def _variable(self, name: str) -> tuple[tuple[int, ...], int]:
        if name not in self._variables:
            raise NotFoundError(
                f"no variable named {name!r}; variables are {sorted(self._variables)}")
        shape, dtype = self._variables[name]
        return tuple(shape), _dtypes.code_of(dtype)

    def read_variable(self, name: str) -> np.ndarray:
        """A copy of a VARIABLE tensor's current value."""
        handle = self._open_handle()
        shape, dtype = self._variable(name)
        array = np.empty(shape, _dtypes.numpy_of(dtype))
        desc = ffi.new("nxe_tensor_desc *")
        _fill_desc(desc, array, dtype)
        check(lib.nxe_executable_read_variable(handle, name.encode(), desc))
        return array

    def write_variable(self, name: str, value: Any) -> None:
        """Overwrites a VARIABLE tensor's value between runs."""
        handle = self._open_handle()
        shape, dtype = self._variable(name)
        io = _Io(0, name, shape, dtype)
        array = self._array_for(io, value, "variable")
        desc = ffi.new("nxe_tensor_desc *")
        _fill_desc(desc, array, dtype)
        check(lib.nxe_executable_write_variable(handle, name.encode(), desc))
