"""nxe.Engine: the multi-model engine of libnxe (nxe_engine.h) from Python.

An Engine holds models by name, each with a kind ("tensor" for any .nxm/.nxb model,
"super_resolution" from libnxe_sr when that library is installed, or a kind a C program
registered), loads them when a request names them and evicts them under its budgets. All
device work runs on the engine's one worker thread; ``submit`` returns at once with a Request
to wait on, poll or cancel, or hands the finished Request to a callback on that worker thread.

Inputs are copied by the library when a request is submitted, so the caller's arrays are free
to change once ``submit`` returns. Outputs are copied out of the request by
``Request.outputs()``. Every call into the library releases the GIL.

Completion callbacks go through one C callback shared by every request: its user_data is a
key into a table of the requests in flight, which also keeps each such Request alive (the
caller may drop it) until its callback has run. An exception raised by a callback is printed
to stderr and goes no further: the worker thread is C's.
"""

from __future__ import annotations

import atexit
import itertools
import os
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _dtypes
from ._binding import check, ffi, lib, sr_check, sr_library, text
from ._cdef import FUNCTIONS
from .errors import DtypeMismatchError, InvalidArgumentError, InvalidStateError, error_for_status
from .executable import _desc_dtype, _dlpack

if TYPE_CHECKING:
    from typing_extensions import Self

STATES = ("unloaded", "loading", "resident", "failed")
EVICT_POLICIES = {"lru": 0, "none": 1}

# Requests wait in slices so that a waiting thread still sees KeyboardInterrupt.
_WAIT_SLICE_S = 0.25


@dataclass(frozen=True)
class ModelSpec:
    """One model of an engine. ``path`` is its file (for super_resolution also a built-in
    model name); ``options`` go to its kind as key=value strings (True/False as
    "true"/"false"). ``keep_alive_s``: idle time before unloading, 0 for the engine's
    idle_unload_s, -1 to pin it. The batch limits apply to kinds that batch."""

    name: str
    kind: str
    path: str
    options: Mapping[str, str | int | float | bool] = field(default_factory=dict)
    keep_alive_s: float = 0.0
    max_batch_size: int = 0
    max_batch_tokens: int = 0
    max_batch_delay_ms: float = 0.0


@dataclass(frozen=True)
class ApplyReport:
    """What Engine.apply did: models added, reloaded (spec or file changed), removed and
    left as they were."""

    added: int
    reloaded: int
    removed: int
    unchanged: int


@dataclass(frozen=True)
class ModelInfo:
    """A model's state: ``state`` one of "unloaded", "loading", "resident", "failed" (then
    ``error`` says why); ``idle_s`` since its last request; ``resident_bytes`` measured while
    resident; ``requests``, ``loads``, ``evictions`` counted since it was added; ``queued``
    now; ``last_used`` a Unix time (0: never); ``fingerprint`` of its file, hex."""

    name: str
    kind: str
    state: str
    idle_s: float
    keep_alive_s: float
    resident_bytes: int
    requests: int
    loads: int
    evictions: int
    queued: int
    last_used: float
    fingerprint: str
    error: str


@dataclass(frozen=True)
class EngineStats:
    """Engine-wide counts (nxe_engine_stats). ``batched_requests / batches`` is the mean batch
    size."""

    queue_depth: int
    queue_capacity: int
    resident_models: int
    resident_bytes: int
    submitted: int
    completed: int
    failed: int
    rejected: int
    batches: int
    batched_requests: int
    loads: int
    evictions: int
    idle_unloads: int


@dataclass(frozen=True)
class RequestTiming:
    """Seconds a request waited and ran, the size of the batch it ran in (0: it never ran) and
    whether its model was loaded for it."""

    queued_s: float
    run_s: float
    batch_size: int
    loaded_model: bool


# ---- the library's functions and the one completion callback ----------------------------------

_setup_lock = threading.Lock()
_callback: Any = None
# Requests in flight with a callback, by the key their user_data carries.
_pending: dict[int, Request] = {}
_keys = itertools.count(1)
_dispatch = threading.local()
# Engines not yet closed: closed at exit, before the interpreter can no longer take callbacks.
_open_engines: weakref.WeakSet[Engine] = weakref.WeakSet()


@atexit.register
def _close_open_engines() -> None:
    for engine in list(_open_engines):
        engine.close()


def _setup() -> None:
    """Resolves the engine's functions and creates the shared C callback, once. Resolving
    every symbol up front keeps cffi from doing it inside a finaliser (see _binding)."""
    global _callback
    with _setup_lock:
        if _callback is not None:
            return
        for name in FUNCTIONS["nxe_engine.h"]:
            getattr(lib, name)
        _callback = ffi.callback("nxe_engine_callback", _on_complete, onerror=_callback_failed)


def _on_complete(request: Any, user_data: Any) -> None:
    owner = _pending.pop(int(ffi.cast("uintptr_t", user_data)), None)
    if owner is None:
        return
    _dispatch.active = True
    try:
        owner._completed(request)
    finally:
        _dispatch.active = False


def _callback_failed(exception: type[BaseException], value: BaseException, tb: Any) -> None:
    # Anything that escaped _on_complete (a callback's own errors are caught in _completed).
    print("nxe.Engine: the completion callback failed:", file=sys.stderr)
    traceback.print_exception(exception, value, tb)


# ---- C structs from Python values ----------------------------------------------------------


def _option_text(value: str | int | float | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if not isinstance(value, (str, int, float)):
        raise InvalidArgumentError(f"option value {value!r} is not a string, number or bool")
    return str(value)


def _c_options(options: Mapping[str, Any] | None, keep: list[Any]) -> tuple[Any, int]:
    """An nxe_engine_option array (NULL for none); its strings are appended to ``keep``."""
    if not options:
        return ffi.NULL, 0
    array = ffi.new("nxe_engine_option[]", len(options))
    for i, (key, value) in enumerate(options.items()):
        if not isinstance(key, str):
            raise InvalidArgumentError(f"option name {key!r} is not a string")
        c_key = ffi.new("char[]", key.encode())
        c_value = ffi.new("char[]", _option_text(value).encode())
        keep += (c_key, c_value)
        array[i].key = c_key
        array[i].value = c_value
    keep.append(array)
    return array, len(options)


def _fill_spec(spec: Any, model: ModelSpec, keep: list[Any]) -> None:
    if not isinstance(model, ModelSpec):
        raise InvalidArgumentError(f"expected a ModelSpec, got {type(model).__name__}")
    spec.struct_size = ffi.sizeof("nxe_engine_model_spec")
    for attr in ("name", "kind", "path"):
        value = getattr(model, attr)
        if not isinstance(value, (str, os.PathLike)):
            raise InvalidArgumentError(f"model {model.name!r}: {attr} must be a string")
        c_text = ffi.new("char[]", os.fsencode(value))
        keep.append(c_text)
        setattr(spec, attr, c_text)
    spec.options, spec.num_options = _c_options(model.options, keep)
    try:
        spec.keep_alive_s = model.keep_alive_s
        spec.max_batch_size = model.max_batch_size
        spec.max_batch_tokens = model.max_batch_tokens
        spec.max_batch_delay_ms = model.max_batch_delay_ms
    except (OverflowError, TypeError) as error:
        raise InvalidArgumentError(f"model {model.name!r}: {error}") from None


def _c_spec(model: ModelSpec, keep: list[Any]) -> Any:
    spec = ffi.new("nxe_engine_model_spec *")
    _fill_spec(spec, model, keep)
    return spec


def _fill_io(io: Any, name: str, array: np.ndarray, keep: list[Any]) -> None:
    if array.ndim > lib.NXE_MAX_RANK:
        raise InvalidArgumentError(f"input '{name}' has rank {array.ndim}; nxe takes at most "
                                   f"{lib.NXE_MAX_RANK}")
    try:
        dtype = _dtypes.code_of(array.dtype)
    except TypeError as error:
        raise DtypeMismatchError(f"input '{name}': {error}") from None
    c_name = ffi.new("char[]", name.encode())
    keep.append(c_name)
    io.name = c_name
    code, bits = _dlpack(dtype)
    desc = io.tensor
    desc.data = ffi.cast("void *", array.ctypes.data)
    desc.data_size = array.nbytes
    desc.ndim = array.ndim
    desc.dtype_code = code
    desc.dtype_bits = bits
    desc.reserved = 0
    for i, d in enumerate(array.shape):
        desc.shape[i] = d


def _copy_output(io: Any) -> tuple[str, np.ndarray]:
    desc = io.tensor
    dtype = _dtypes.numpy_of(_desc_dtype(desc))
    shape = tuple(desc.shape[i] for i in range(desc.ndim))
    count = int(np.prod(shape, dtype=np.int64))
    name = ffi.string(io.name).decode()
    if count == 0:
        return name, np.empty(shape, dtype)
    nbytes = count * dtype.itemsize
    if desc.data == ffi.NULL or desc.data_size < nbytes:
        raise InvalidStateError(f"output '{name}': the library gave {desc.data_size} bytes, the "
                                f"tensor needs {nbytes}")
    return name, np.frombuffer(ffi.buffer(desc.data, nbytes), dtype).reshape(shape).copy()


# ---- requests --------------------------------------------------------------------------------


class Request:
    """A submitted request. ``done``, ``wait``, ``cancel``; once finished, ``status`` (0 for
    success), ``error`` ("" on success), ``outputs()`` and ``timing``. The request is released
    when this object is collected, or by ``release()``; releasing one not finished cancels it."""

    def __init__(self, callback: Callable[[Request], None] | None) -> None:
        self._callback = callback
        self._pointer: Any = None  # the C request: set by submit or by an early completion
        self._owner: Any = None  # the same pointer, releasing it when collected
        self._calls = 0  # calls in progress, under _idle
        self._released = False
        self._idle = threading.Condition()

    def _completed(self, pointer: Any) -> None:
        # On the worker thread. The completion may come before submit() has returned.
        if self._pointer is None:
            self._pointer = pointer
        callback, self._callback = self._callback, None
        if callback is None:
            return
        try:
            callback(self)
        except BaseException:  # noqa: BLE001 - nothing may unwind into the worker thread
            print("nxe.Engine: a request's completion callback raised:", file=sys.stderr)
            traceback.print_exc()

    @contextmanager
    def _use(self) -> Iterator[Any]:
        """The C request for one call; release() waits until every such call has left."""
        with self._idle:
            if self._released or self._pointer is None:
                raise InvalidStateError("the request has been released")
            self._calls += 1
            pointer = self._pointer
        try:
            yield pointer
        finally:
            with self._idle:
                self._calls -= 1
                self._idle.notify_all()

    def release(self) -> None:
        """Releases the request now (cancelling it if not finished; a callback still runs).
        Idempotent."""
        with self._idle:
            self._released = True
            self._idle.wait_for(lambda: self._calls == 0)
            owner, self._owner, self._pointer = self._owner, None, None
        if owner is not None:
            ffi.release(owner)

    @property
    def done(self) -> bool:
        with self._use() as pointer:
            return bool(lib.nxe_engine_request_done(pointer))

    def wait(self, timeout: float | None = None) -> bool:
        """Waits until the request has finished, at most ``timeout`` seconds (None: no limit);
        True when it has."""
        end = None if timeout is None else time.monotonic() + max(0.0, timeout)
        with self._use() as pointer:
            while True:
                left = _WAIT_SLICE_S if end is None else min(_WAIT_SLICE_S,
                                                             end - time.monotonic())
                status = lib.nxe_engine_request_wait(pointer, max(0.0, left))
                if status == lib.NXE_OK:
                    return True
                if status != lib.NXE_ERROR_TIMEOUT:
                    check(status)
                if (end is not None and time.monotonic() >= end) or self._released:
                    return False

    def cancel(self) -> None:
        """Asks the request to stop: one not yet started finishes as cancelled at once, one
        running at its kind's next check (or normally). Nothing for a finished request."""
        with self._use() as pointer:
            check(lib.nxe_engine_request_cancel(pointer))

    @property
    def status(self) -> int:
        """0 (NXE_OK) or the failing status; InvalidStateError's 8 while not finished."""
        with self._use() as pointer:
            return int(lib.nxe_engine_request_status(pointer))

    @property
    def error(self) -> str:
        """The failure's message; "" on success or while not finished."""
        with self._use() as pointer:
            return text(lib.nxe_engine_request_error(pointer)) or ""

    def outputs(self) -> dict[str, np.ndarray]:
        """The outputs by name, as arrays the caller owns. Raises the nxe.Error of a failed
        request, InvalidStateError while it has not finished."""
        with self._use() as pointer:
            status = lib.nxe_engine_request_status(pointer)
            if status == lib.NXE_ERROR_INVALID_STATE and not lib.nxe_engine_request_done(pointer):
                raise InvalidStateError("the request has not finished: wait() for it first")
            if status != lib.NXE_OK:
                raise error_for_status(status, text(lib.nxe_engine_request_error(pointer)) or "")
            count = ffi.new("int32_t *")
            check(lib.nxe_engine_request_output_count(pointer, count))
            io = ffi.new("nxe_engine_io *")
            outputs = {}
            for index in range(count[0]):
                check(lib.nxe_engine_request_output(pointer, index, io))
                name, array = _copy_output(io[0])
                outputs[name] = array
            return outputs

    @property
    def progress(self) -> float:
        """How far the request has got, from 0 to 1, as its kind reports it (a transcription:
        the fraction of the audio decoded); 1 once it has finished successfully."""
        fraction = ffi.new("double *")
        with self._use() as pointer:
            check(lib.nxe_engine_request_progress(pointer, fraction))
        return float(fraction[0])

    @property
    def timing(self) -> RequestTiming:
        timing = ffi.new("nxe_engine_request_timing *")
        timing.struct_size = ffi.sizeof("nxe_engine_request_timing")
        with self._use() as pointer:
            check(lib.nxe_engine_request_get_timing(pointer, timing))
        return RequestTiming(timing.queued_s, timing.run_s, timing.batch_size,
                             bool(timing.loaded_model))

    def __repr__(self) -> str:
        if self._released or self._pointer is None:
            return "<nxe.Request released>"
        return f"<nxe.Request {'done' if self.done else 'pending'}>"


# ---- the engine ------------------------------------------------------------------------------


def _model_info(info: Any) -> ModelInfo:
    state = info.state
    return ModelInfo(
        name=ffi.string(info.name).decode(),
        kind=ffi.string(info.kind).decode(),
        state=STATES[state] if 0 <= state < len(STATES) else str(state),
        idle_s=info.idle_s,
        keep_alive_s=info.keep_alive_s,
        resident_bytes=info.resident_bytes,
        requests=info.requests,
        loads=info.loads,
        evictions=info.evictions,
        queued=info.queued,
        last_used=info.last_used,
        fingerprint=bytes(ffi.buffer(info.fingerprint, 32)).hex(),
        error=ffi.string(info.error).decode("utf-8", "replace"),
    )


class Engine:
    """Many models behind one worker thread (nxe_engine.h). Budgets: ``max_resident`` models
    and ``max_resident_bytes`` (measured) loaded at once, 0 for no limit; ``idle_unload_s``
    unloads a model idle that long (0: never), checked every ``sweep_interval_s`` (0: 1 s);
    ``evict_policy`` "lru" (unload idle models, least recently used first) or "none" (refuse
    with BusyError). ``queue_capacity``: requests in flight before submit raises BusyError
    (0: 512). ``num_threads``: compute threads of each loaded model (0: one per CPU).

    A context manager; ``close()`` cancels requests not started, finishes the one running and
    unloads every model; it is idempotent and waits for engine calls in progress."""

    def __init__(self, *, queue_capacity: int = 0, max_resident: int = 0,
                 max_resident_bytes: int = 0, idle_unload_s: float = 0.0,
                 sweep_interval_s: float = 0.0, evict_policy: str = "lru",
                 num_threads: int = 0) -> None:
        _setup()
        if evict_policy not in EVICT_POLICIES:
            raise InvalidArgumentError(f"unknown evict_policy {evict_policy!r}; expected one of "
                                       f"{', '.join(EVICT_POLICIES)}")
        options = ffi.new("nxe_engine_options *")
        options.struct_size = ffi.sizeof("nxe_engine_options")
        try:
            options.queue_capacity = queue_capacity
            options.max_resident = max_resident
            options.max_resident_bytes = max_resident_bytes
            options.idle_unload_s = idle_unload_s
            options.sweep_interval_s = sweep_interval_s
            options.evict_policy = EVICT_POLICIES[evict_policy]
            options.num_threads = num_threads
        except (OverflowError, TypeError) as error:
            raise InvalidArgumentError(f"nxe.Engine: {error}") from None
        out = ffi.new("nxe_engine **")
        check(lib.nxe_engine_create(options, out))
        self._handle: Any = out[0]
        self._calls = 0  # calls in progress, under _idle
        self._idle = threading.Condition()
        _open_engines.add(self)
        try:
            self._register_builtin_kinds()
        except BaseException:
            self.close()
            raise

    def _register_builtin_kinds(self) -> None:
        """super_resolution, when libnxe_sr is installed with this package."""
        try:
            sr = sr_library()
        except ImportError:
            return
        with self._engine() as engine:
            sr_check(sr.nxe_sr_engine_register(engine))

    @contextmanager
    def _engine(self) -> Iterator[Any]:
        with self._idle:
            if self._handle is None:
                raise InvalidStateError("the Engine is closed")
            self._calls += 1
            handle = self._handle
        try:
            yield handle
        finally:
            with self._idle:
                self._calls -= 1
                self._idle.notify_all()

    def close(self) -> None:
        if getattr(_dispatch, "active", False):
            raise InvalidStateError("an Engine cannot be closed from a completion callback, "
                                    "which runs on its worker thread")
        self._release()

    def _release(self) -> None:
        with self._idle:
            self._idle.wait_for(lambda: self._calls == 0)
            handle, self._handle = self._handle, None
        if handle is not None:
            lib.nxe_engine_release(handle)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_handle", None) is None:
            return
        if getattr(_dispatch, "active", False):
            # Collected inside a completion callback, on a worker thread: releasing the engine
            # there would wait for that very thread.
            threading.Thread(target=self._release, daemon=True).start()
        else:
            self.close()

    # -- models

    def add_model(self, spec: ModelSpec) -> None:
        """Adds a model, unloaded: it loads when a request names it (or load_model)."""
        keep: list[Any] = []
        c_spec = _c_spec(spec, keep)
        with self._engine() as engine:
            check(lib.nxe_engine_add_model(engine, c_spec))

    def replace_model(self, spec: ModelSpec) -> None:
        """Replaces the spec of the model of that name: requests already queued run on the old
        one, later ones on the new one."""
        keep: list[Any] = []
        c_spec = _c_spec(spec, keep)
        with self._engine() as engine:
            check(lib.nxe_engine_replace_model(engine, c_spec))

    def remove_model(self, name: str) -> None:
        """Retires a model: later requests naming it fail; queued ones still run."""
        with self._engine() as engine:
            check(lib.nxe_engine_remove_model(engine, name.encode()))

    def apply(self, specs: Iterable[ModelSpec]) -> ApplyReport:
        """Makes the engine's models exactly ``specs``: adds new names, reloads those whose spec
        or file changed, removes the rest; all or nothing."""
        specs = list(specs)
        keep: list[Any] = []
        array = ffi.new("nxe_engine_model_spec[]", max(1, len(specs)))
        for i, spec in enumerate(specs):
            _fill_spec(array[i], spec, keep)
        report = ffi.new("nxe_engine_apply_report *")
        report.struct_size = ffi.sizeof("nxe_engine_apply_report")
        with self._engine() as engine:
            check(lib.nxe_engine_apply(engine, array, len(specs), report))
        return ApplyReport(report.added, report.reloaded, report.removed, report.unchanged)

    def load_model(self, name: str) -> None:
        """Loads a model now (on the worker, evicting as a request would) and waits for it."""
        with self._engine() as engine:
            check(lib.nxe_engine_load_model(engine, name.encode()))

    def unload_model(self, name: str) -> None:
        """Unloads a resident, idle model now (a pinned one too); BusyError while requests for
        it are queued or running."""
        with self._engine() as engine:
            check(lib.nxe_engine_unload_model(engine, name.encode()))

    def models(self) -> list[ModelInfo]:
        """Every model's state, in the order they were added."""
        count = ffi.new("int32_t *")
        info = ffi.new("nxe_engine_model_info *")
        result = []
        with self._engine() as engine:
            check(lib.nxe_engine_model_count(engine, count))
            for index in range(count[0]):
                info.struct_size = ffi.sizeof("nxe_engine_model_info")
                status = lib.nxe_engine_model_info_at(engine, index, info)
                if status == lib.NXE_ERROR_NOT_FOUND:
                    break  # removed since the count was taken
                check(status)
                result.append(_model_info(info))
        return result

    def model_info(self, name: str) -> ModelInfo:
        info = ffi.new("nxe_engine_model_info *")
        info.struct_size = ffi.sizeof("nxe_engine_model_info")
        with self._engine() as engine:
            check(lib.nxe_engine_model_info_by_name(engine, name.encode(), info))
        return _model_info(info)

    def stats(self) -> EngineStats:
        stats = ffi.new("nxe_engine_stats *")
        stats.struct_size = ffi.sizeof("nxe_engine_stats")
        with self._engine() as engine:
            check(lib.nxe_engine_get_stats(engine, stats))
        return EngineStats(*(getattr(stats, f.name) for f in fields(EngineStats)))

    # -- requests

    def submit(self, model: str, inputs: Mapping[str, Any], *, deadline_s: float | None = None,
               options: Mapping[str, str] | None = None,
               callback: Callable[[Request], None] | None = None) -> Request:
        """Queues a request for ``model`` and returns at once. ``inputs`` maps names to arrays
        (anything numpy reads); they are copied now. ``deadline_s``: seconds from now after
        which the request fails with DeadlineError. ``callback(request)`` runs on the engine's
        worker thread when the request finishes, whatever its status, and must return soon.
        Raises BusyError when the queue is full, NotFoundError for an unknown model."""
        if not isinstance(inputs, Mapping):
            raise InvalidArgumentError(f"inputs must map input names to arrays, got "
                                       f"{type(inputs).__name__}")
        keep: list[Any] = []
        arrays = {}
        for name, value in inputs.items():
            if not isinstance(name, str):
                raise InvalidArgumentError(f"input name {name!r} is not a string")
            array = np.asarray(value)
            arrays[name] = array if array.flags.c_contiguous else array.copy(order="C")
        c_inputs = ffi.new("nxe_engine_io[]", max(1, len(arrays)))
        for i, (name, array) in enumerate(arrays.items()):
            _fill_io(c_inputs[i], name, array, keep)
        submit = ffi.new("nxe_engine_submit_options *")
        submit.struct_size = ffi.sizeof("nxe_engine_submit_options")
        if deadline_s is not None:
            if not deadline_s > 0:
                raise InvalidArgumentError(f"deadline_s is {deadline_s}; expected seconds > 0 "
                                           "(None for no deadline)")
            submit.deadline_s = deadline_s
        submit.options, submit.num_options = _c_options(options, keep)
        request = Request(callback)
        key = 0
        if callback is not None:
            key = next(_keys)
            _pending[key] = request
            submit.callback = _callback
            submit.user_data = ffi.cast("void *", key)
        out = ffi.new("nxe_engine_request **")
        try:
            with self._engine() as engine:
                check(lib.nxe_engine_submit(engine, model.encode(), c_inputs, len(arrays),
                                            submit, out))
        except BaseException:
            _pending.pop(key, None)  # no callback will run
            raise
        owner = ffi.gc(out[0], lib.nxe_engine_request_release)
        with request._idle:
            request._owner = owner
            request._pointer = owner
        return request

    def run(self, model: str, inputs: Mapping[str, Any], **kw: Any) -> dict[str, np.ndarray]:
        """submit(), wait, and the outputs (or the request's error raised)."""
        request = self.submit(model, inputs, **kw)
        try:
            request.wait()
            return request.outputs()
        finally:
            request.release()

    def __repr__(self) -> str:
        if self._handle is None:
            return "<nxe.Engine closed>"
        return f"<nxe.Engine {len(self.models())} models>"


__all__ = [
    "ApplyReport",
    "Engine",
    "EngineStats",
    "ModelInfo",
    "ModelSpec",
    "Request",
    "RequestTiming",
]
