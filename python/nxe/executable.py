"""nxe.Executable: a compiled graph that runs on numpy arrays.

Inputs are checked here against the executable's own descriptions so a wrong array gets a
message naming the input. Inputs may be numpy arrays, objects numpy reads (``__array__``,
``__array_interface__``, sequences) or DLPack producers (``__dlpack__``: PyTorch, JAX, CuPy on
the CPU), which are read where they lie when C-contiguous; like a numpy array, a strided one is
copied once into C order, and its dtype must be the input's (no silent cast). run() returns
fresh arrays the caller owns; run_nocopy() and create_input() return arrays living in the
executable's staging buffer, which keep it alive. profile() times each step of the plan
(nxe_executable_get_profile).

Every call into the library releases the GIL. The library lets several threads use one
executable at once (each run has its own memory), so no lock is taken here; each method reads
the handle once, and a run under way keeps it alive through a concurrent ``close``.
"""

from __future__ import annotations

import json
import operator
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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

    from .iobinding import IoBinding

IoSpec = tuple[str, tuple[int, ...], str]

# DLPack's DLDeviceType codes, for messages; kDLCPU (1) is the one nxe reads.
_DLPACK_CPU = 1
_DLPACK_DEVICES = {1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal",
                   9: "vpi", 10: "rocm", 11: "rocm_host", 13: "cuda_managed", 14: "oneapi",
                   15: "webgpu", 16: "hexagon", 17: "maia"}

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


def _from_dlpack(value: Any, io: _Io, what: str) -> np.ndarray:
    """A DLPack producer's tensor as a numpy array over the same memory. Only CPU memory is
    read; the dtype must be one numpy has (not bfloat16, whose DLPack code numpy refuses)."""
    device = getattr(value, "__dlpack_device__", None)
    if device is not None:
        device_type, device_id = (int(v) for v in device())
        if device_type != _DLPACK_CPU:
            where = _DLPACK_DEVICES.get(device_type, f"DLPack device type {device_type}")
            raise InvalidArgumentError(
                f"{what} '{io.name}': the tensor is on {where}:{device_id}; nxe reads CPU "
                "memory, so move it there first (PyTorch: tensor.cpu())")
    try:
        return np.from_dlpack(value)
    except (BufferError, RuntimeError, TypeError, ValueError) as error:
        # numpy names the dtype when that is what it refuses ("Unsupported dtype in
        # DLTensor"); a producer may refuse export too (PyTorch, a tensor requiring grad).
        kind = DtypeMismatchError if "dtype" in str(error).lower() else InvalidArgumentError
        raise kind(f"{what} '{io.name}' (expected {_dtypes.name_of(io.dtype)}): cannot be read "
                   f"through DLPack: {error}") from error


@dataclass(frozen=True)
class ProfileStep:
    """One step of the plan in one profiled run (nxe_profile_step): times in nanoseconds,
    ``start_ns`` from the run's first step."""

    index: int
    op_type: str
    op_name: str
    kernel: str
    input_shape: tuple[int, ...] | None  # of input 0; None when the step has none
    output_shape: tuple[int, ...] | None  # of output 0
    start_ns: int
    elapsed_ns: int


@dataclass(frozen=True)
class RunProfile:
    """One profiled run: its steps, when it began (``time.perf_counter_ns``), its wall time as
    the caller saw it (staging and copies included) and the native id of the thread it ran
    on."""

    begin_ns: int
    wall_ns: int
    steps: tuple[ProfileStep, ...]
    thread_id: int


def _shape_text(shape: tuple[int, ...] | None) -> str:
    return "-" if shape is None else "x".join(map(str, shape)) or "scalar"


class Profile:
    """Per-step times of one or more runs of an executable, as ``Executable.profile`` makes.

    ``rows()`` averages each step over the runs; ``str(profile)`` is a table of them;
    ``to_chrome_trace(path)`` writes every run's steps as Chrome trace events.
    """

    def __init__(self, runs: Sequence[RunProfile]) -> None:
        self.runs = list(runs)

    @property
    def wall_ms(self) -> list[float]:
        """Each run's wall time, milliseconds."""
        return [run.wall_ns / 1e6 for run in self.runs]

    def rows(self) -> list[dict[str, Any]]:
        """Per step, in plan order: op name, op type, kernel, input and output shape, mean
        milliseconds over the runs and share of the steps' total time (0..1)."""
        if not self.runs:
            return []
        count = len(self.runs)
        steps = self.runs[0].steps
        mean_ns = [sum(run.steps[i].elapsed_ns for run in self.runs) / count
                   for i in range(len(steps))]
        total = sum(mean_ns)
        return [{"op_name": step.op_name, "op_type": step.op_type, "kernel": step.kernel,
                 "input_shape": step.input_shape, "output_shape": step.output_shape,
                 "ms": ns / 1e6, "share": ns / total if total > 0 else 0.0}
                for step, ns in zip(steps, mean_ns)]

    def table(self) -> str:
        """The rows as an aligned text table, with a total line."""
        header = ("#", "op", "type", "kernel", "input", "output", "ms", "share")
        lines = [header]
        rows = self.rows()
        for i, row in enumerate(rows):
            lines.append((str(i), row["op_name"] or "-", row["op_type"], row["kernel"],
                          _shape_text(row["input_shape"]), _shape_text(row["output_shape"]),
                          f"{row['ms']:.3f}", f"{100 * row['share']:.1f}%"))
        total_ms = sum(row["ms"] for row in rows)
        lines.append(("", "total", "", "", "", "", f"{total_ms:.3f}", "100.0%" if rows else ""))
        widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
        numeric = {0, 6, 7}
        return "\n".join(
            "  ".join(cell.rjust(w) if i in numeric else cell.ljust(w)
                      for i, (cell, w) in enumerate(zip(line, widths))).rstrip()
            for line in lines)

    def __str__(self) -> str:
        return self.table()

    def chrome_trace(self) -> dict[str, Any]:
        """The runs as Chrome trace events (chrome://tracing, Perfetto): a complete ("X")
        event of category "Node" per step of each run, inside one of category "Session" per
        run; times in microseconds from the first run's start."""
        pid = os.getpid()
        origin = self.runs[0].begin_ns if self.runs else 0
        events: list[dict[str, Any]] = []
        for number, run in enumerate(self.runs):
            begin_us = (run.begin_ns - origin) / 1e3
            tid = run.thread_id
            events.append({"name": "run", "cat": "Session", "ph": "X", "ts": begin_us,
                           "dur": run.wall_ns / 1e3, "pid": pid, "tid": tid,
                           "args": {"run": number}})
            for step in run.steps:
                events.append({
                    "name": step.op_name or step.op_type, "cat": "Node", "ph": "X",
                    "ts": begin_us + step.start_ns / 1e3, "dur": step.elapsed_ns / 1e3,
                    "pid": pid, "tid": tid,
                    "args": {"run": number, "step": step.index, "op_type": step.op_type,
                             "kernel": step.kernel,
                             "input_shape": None if step.input_shape is None
                             else list(step.input_shape),
                             "output_shape": None if step.output_shape is None
                             else list(step.output_shape)}})
        return {"traceEvents": events, "displayTimeUnit": "ms"}

    def to_chrome_trace(self, path: str | os.PathLike[str]) -> None:
        """Writes ``chrome_trace()`` as JSON to ``path``."""
        with open(path, "w", encoding="utf-8") as file:
            json.dump(self.chrome_trace(), file)


def _profile_shape(ndim: int, shape: Any) -> tuple[int, ...] | None:
    return None if ndim < 0 else tuple(int(d) for d in shape[0:ndim])


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
        if not isinstance(value, np.ndarray) and hasattr(value, "__dlpack__"):
            value = _from_dlpack(value, io, what)
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

    def bind(self, inputs: Any = None, outputs: Any = None) -> IoBinding:
        """Caller arrays bound to the inputs and outputs (``nxe.IoBinding``): its ``run()``
        reads inputs and writes outputs in place, copying nothing. `inputs`/`outputs` are
        sequences in order or mappings by name; outputs None get new 64-byte aligned arrays."""
        from .iobinding import bind

        return bind(self, inputs, outputs)

    # -- profiling -----------------------------------------------------------------------

    def set_profiling(self, enable: bool) -> None:
        """Turns per-step timing of runs on or off (off by default; off costs nothing).
        Turning it on forgets the profile kept so far; ``last_profile`` reads it."""
        handle = self._open_handle()
        check(lib.nxe_executable_set_profiling(handle, 1 if enable else 0))

    def last_profile(self) -> list[ProfileStep]:
        """The steps of the most recent successful run made while profiling was on, from any
        thread (NotFoundError when there is none since it was turned on)."""
        handle = self._open_handle()
        count = ffi.new("int32_t *")
        check(lib.nxe_executable_get_profile(handle, ffi.NULL, 0, count))
        steps = ffi.new("nxe_profile_step[]", max(count[0], 1))
        steps[0].struct_size = ffi.sizeof("nxe_profile_step")
        check(lib.nxe_executable_get_profile(handle, steps, count[0], count))
        return [ProfileStep(index=int(step.index), op_type=text(step.op_type) or "",
                            op_name=text(step.op_name) or "",
                            kernel=ffi.string(step.kernel).decode("utf-8", "replace"),
                            input_shape=_profile_shape(step.input_ndim, step.input_shape),
                            output_shape=_profile_shape(step.output_ndim, step.output_shape),
                            start_ns=int(step.start_ns), elapsed_ns=int(step.elapsed_ns))
                for step in steps[0:count[0]]]

    def profile(self, *args: Any, runs: int = 1, warmup: int = 1) -> Profile:
        """Runs ``warmup`` times unprofiled, then ``runs`` times with profiling on, each like
        ``run(*args)``, and returns every profiled run's steps. Profiling is off afterwards.

        Each run's profile is read right after it; another thread running the executable at
        the same time may have finished last, so profile from one thread at a time.
        """
        if operator.index(runs) < 1 or operator.index(warmup) < 0:
            raise InvalidArgumentError(f"profile: runs must be >= 1 and warmup >= 0, got "
                                       f"runs={runs}, warmup={warmup}")
        for _ in range(warmup):
            self.run(*args)
        profiled = []
        self.set_profiling(True)
        try:
            for _ in range(runs):
                begin = time.perf_counter_ns()
                self.run(*args)
                wall = time.perf_counter_ns() - begin
                profiled.append(RunProfile(begin, wall, tuple(self.last_profile()),
                                           threading.get_native_id()))
        finally:
            self.set_profiling(False)
        return Profile(profiled)

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

    def reset_variable(self, name: str | None = None) -> None:
        """Sets a VARIABLE tensor, or every variable when ``name`` is None, back to the initial
        value the graph gave it (in-graph state restarts, e.g. an RNN's state or a key/value
        cache)."""
        handle = self._open_handle()
        check(lib.nxe_executable_reset_variable(
            handle, ffi.NULL if name is None else name.encode()))
