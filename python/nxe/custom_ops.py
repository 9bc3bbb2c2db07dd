"""Custom and composed ops from Python: a shape rule and a compute function given as Python
callables (through cffi callbacks into nxe_context_register_op), or a subgraph of existing ops
(nxe_context_register_composed_op).

    ctx = nxe.Context()

    def infer(inputs, attrs):                 # [(shape, dtype, constant value or None)]
        shape, dtype, _ = inputs[0]
        return [(shape, dtype)]               # one (shape, dtype) per output

    def compute(inputs, attrs):               # read-only numpy views of the inputs
        x = inputs[0]
        return [x / (1 + np.exp(-attrs["beta"] * x))]

    ctx.register_op("my.Swish", infer, compute, num_inputs=1, attrs={"beta": 1.0},
                    domain="my.domain")
    g = nxe.Graph(context=ctx)
    y, = g.op("my.Swish", [x], beta=1.5)

``nxe.register_op`` registers in ``nxe.default_context()``, whose ops every ``nxe.Graph``
made without a context (and the ONNX importer's) gets. An exception raised by a callback fails
the compile or run with its message (nxe.Error subclasses keep their status, others give
RunError). The callbacks stay alive as long as any graph or executable uses the op.
"""

from __future__ import annotations

import json
import operator
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from . import _dtypes
from ._binding import check, ffi, lib, text
from .errors import Error
from .limits import Limits, c_limits

Spec = tuple[tuple[int, ...], str, Any]

_ATTR_TYPES = {"int": lib.NXE_ATTR_INT, "float": lib.NXE_ATTR_FLOAT,
               "string": lib.NXE_ATTR_STRING, "ints": lib.NXE_ATTR_INTS,
               "floats": lib.NXE_ATTR_FLOATS}

# Registrations alive in some C context, by id: the C op entries hold their handle as user data
# and drop it through the destroy callback when the last graph or executable using them goes.
_LIVE: dict[int, _Registration] = {}
_LIVE_LOCK = threading.Lock()


def _attr_type(value: Any) -> str:
    if isinstance(value, str):
        return "string"
    if isinstance(value, (bool, int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    if isinstance(value, Sequence) and all(isinstance(v, (bool, int, np.integer)) for v in value):
        return "ints"
    if isinstance(value, Sequence):
        return "floats"
    raise TypeError(f"attribute default {value!r} is not an int, float, string or list")


def _attr_decls(attrs: Mapping[str, Any] | None) -> list[tuple[str, str, str | None]]:
    """(name, type, JSON default or None) per attribute. A value is its default (its type
    guessed); a (type, default) pair names the type, default None meaning required."""
    decls = []
    for name, value in (attrs or {}).items():
        if isinstance(value, tuple) and len(value) == 2 and value[0] in _ATTR_TYPES:
            kind, default = value
        else:
            kind, default = _attr_type(value), value
        if default is None:
            decls.append((name, kind, None))
        elif kind in ("ints", "floats"):
            decls.append((name, kind, json.dumps([float(v) if kind == "floats" else int(v)
                                                  for v in default])))
        elif kind == "string":
            decls.append((name, kind, json.dumps(str(default))))
        else:
            decls.append((name, kind, json.dumps(int(default) if kind == "int"
                                                 else float(default))))
    return decls


def _fail(error: BaseException) -> int:
    """Records a callback's exception as the op's failure and returns its status."""
    status = error.status if isinstance(error, Error) and error.status > 0 else \
        lib.NXE_ERROR_RUNTIME
    message = str(error) or type(error).__name__
    if not isinstance(error, Error):
        message = f"{type(error).__name__}: {message}"
    return lib.nxe_custom_fail(status, message.encode("utf-8", "replace")[:600])


def _shape(tensor: Any) -> tuple[int, ...]:
    return tuple(int(tensor.shape[d]) for d in range(tensor.ndim))


def _view(tensor: Any, writable: bool) -> np.ndarray | None:
    """A numpy view of a callback's tensor (None for an absent input or no data)."""
    if tensor.dtype == lib.NXE_DTYPE_NONE or tensor.data == ffi.NULL:
        return None
    dtype = _dtypes.numpy_of(tensor.dtype)
    array = np.frombuffer(ffi.buffer(tensor.data, tensor.data_size), dtype=dtype)
    array = array.reshape(_shape(tensor))
    if not writable:
        array.flags.writeable = False
    return array


def _read_attrs(call: Any, decls: list[tuple[str, str, str | None]]) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    for name, kind, _ in decls:
        key = name.encode()
        if kind == "int":
            value = ffi.new("int64_t *")
            status = lib.nxe_custom_attr_int(call.attrs, key, value)
            result: Any = int(value[0])
        elif kind == "float":
            value = ffi.new("double *")
            status = lib.nxe_custom_attr_float(call.attrs, key, value)
            result = float(value[0])
        elif kind == "string":
            value = ffi.new("char **")
            status = lib.nxe_custom_attr_string(call.attrs, key, value)
            result = text(value[0]) if status == lib.NXE_OK else None
        else:
            count = ffi.new("int32_t *")
            if kind == "ints":
                values = ffi.new("int64_t **")
                status = lib.nxe_custom_attr_ints(call.attrs, key, values, count)
            else:
                values = ffi.new("float **")
                status = lib.nxe_custom_attr_floats(call.attrs, key, values, count)
            result = [values[0][i] for i in range(count[0])] if status == lib.NXE_OK else None
        if status == lib.NXE_OK:
            attrs[name] = result
        elif status != lib.NXE_ERROR_INVALID_ARGUMENT:  # a required one left unset: absent
            check(status)
    return attrs


class _Registration:
    """One op definition with the cffi callbacks that keep it callable from C."""

    def __init__(self, name: str, infer: Callable[..., Any], compute: Callable[..., Any],
                 num_inputs: int, num_outputs: int, num_optional_inputs: int,
                 attrs: Mapping[str, Any] | None, domain: str | None,
                 onnx_op_type: str | None, prepare: Callable[..., Any] | None = None) -> None:
        self.name = name
        self.domain = domain
        self.onnx_op_type = onnx_op_type or name
        self.num_inputs = operator.index(num_inputs)
        self.num_outputs = operator.index(num_outputs)
        self.num_optional_inputs = operator.index(num_optional_inputs)
        self.decls = _attr_decls(attrs)
        self._infer = infer
        self._compute = compute
        self._prepare = prepare
        self._states: dict[int, Any] = {}  # prepared states by token (the C state pointer)
        self._next_token = 1
        self._state_lock = threading.Lock()
        self._entries = 0  # C entries alive
        self._handle = ffi.new_handle(self)
        self._c_infer = ffi.callback("nxe_custom_infer_fn", self._infer_callback)
        self._c_compute = ffi.callback("nxe_custom_compute_fn", self._compute_callback)
        self._c_destroy = ffi.callback("void(void *)", _destroy_callback)
        self._c_prepare = ffi.callback("nxe_custom_prepare_fn", self._prepare_callback)
        self._c_release = ffi.callback("nxe_custom_release_fn", self._release_callback)
        self._keep: list[Any] = []

    def schema(self) -> dict[str, Any]:
        """The op's schema in the shape of nxe.registry's."""
        def param(i: int, kind: str) -> dict[str, Any]:
            return {"name": f"{kind}{i}", "doc": "", "dtypes": list(_dtypes.NAMES),
                    "optional": kind == "input" and
                    i >= self.num_inputs - self.num_optional_inputs, "variadic": False}
        return {"name": self.name, "summary": "a custom op registered from Python",
                "inputs": [param(i, "input") for i in range(self.num_inputs)],
                "outputs": [param(i, "output") for i in range(self.num_outputs)],
                "attrs": [{"name": n, "doc": "", "type": k, "required": d is None,
                           "default": None if d is None else json.loads(d)}
                          for n, k, d in self.decls]}

    def _infer_callback(self, call, inputs, num_inputs, outputs, num_outputs):
        try:
            specs: list[Spec | None] = []
            for i in range(num_inputs):
                t = inputs[i]
                if t.dtype == lib.NXE_DTYPE_NONE:
                    specs.append(None)
                    continue
                value = _view(t, writable=False)
                specs.append((_shape(t), _dtypes.name_of(t.dtype), value))
            result = self._infer(specs, _read_attrs(call, self.decls))
            if isinstance(result, tuple) and len(result) == 2 and \
                    isinstance(result[1], str):
                result = [result]
            result = list(result)
            if len(result) != num_outputs:
                raise ValueError(f"the shape rule returned {len(result)} outputs, the op has "
                                 f"{num_outputs}")
            for i, (shape, dtype) in enumerate(result):
                shape = tuple(operator.index(d) for d in shape)
                outputs[i].dtype = _dtypes.code_of(dtype)
                outputs[i].ndim = len(shape)
                for d, size in enumerate(shape[:lib.NXE_MAX_RANK]):
                    outputs[i].shape[d] = size
            return lib.NXE_OK
        except BaseException as error:  # noqa: BLE001 - every failure goes back to C
            return _fail(error)

    def _prepare_callback(self, call, inputs, num_inputs, state):
        try:
            values = [_view(inputs[i], writable=False) for i in range(num_inputs)]
            prepared = self._prepare(values, _read_attrs(call, self.decls))
            with self._state_lock:
                token = self._next_token
                self._next_token += 1
                self._states[token] = prepared
            state[0] = ffi.cast("void *", token)
            return lib.NXE_OK
        except BaseException as error:  # noqa: BLE001 - every failure goes back to C
            return _fail(error)

    def _release_callback(self, user_data, state):
        lock = getattr(self, "_state_lock", None)
        if lock is not None and ffi is not None:
            with lock:
                self._states.pop(int(ffi.cast("uintptr_t", state)), None)

    def _compute_callback(self, call, inputs, num_inputs, outputs, num_outputs):
        try:
            arrays = [_view(inputs[i], writable=False) for i in range(num_inputs)]
            if self._prepare is not None:
                with self._state_lock:
                    prepared = self._states.get(int(ffi.cast("uintptr_t", call.state)))
                result = self._compute(arrays, _read_attrs(call, self.decls), prepared)
            else:
                result = self._compute(arrays, _read_attrs(call, self.decls))
            if isinstance(result, np.ndarray):
                result = [result]
            result = list(result)
            if len(result) != num_outputs:
                raise ValueError(f"compute returned {len(result)} outputs, the op has "
                                 f"{num_outputs}")
            for i in range(num_outputs):
                out = _view(outputs[i], writable=True)
                value = np.asarray(result[i])
                if out is None:
                    continue
                if value.shape != out.shape:
                    raise ValueError(f"compute returned shape {value.shape} for output {i}, "
                                     f"the shape rule said {out.shape}")
                out[...] = value.astype(out.dtype, copy=False)
            return lib.NXE_OK
        except BaseException as error:  # noqa: BLE001 - every failure goes back to C
            return _fail(error)

    def install(self, c_context: Any) -> None:
        """Registers this definition in a C context."""
        op = ffi.new("nxe_custom_op *")
        op.struct_size = ffi.sizeof("nxe_custom_op")
        name = ffi.new("char[]", self.name.encode())
        domain = ffi.new("char[]", self.domain.encode()) if self.domain else ffi.NULL
        onnx_type = ffi.new("char[]", self.onnx_op_type.encode())
        attrs = ffi.new("nxe_op_attr_info[]", max(len(self.decls), 1))
        keep = [name, domain, onnx_type, attrs]
        for i, (attr_name, kind, default) in enumerate(self.decls):
            c_name = ffi.new("char[]", attr_name.encode())
            c_default = ffi.new("char[]", default.encode()) if default is not None else ffi.NULL
            keep += [c_name, c_default]
            attrs[i].name = c_name
            attrs[i].doc = ffi.NULL
            attrs[i].type = _ATTR_TYPES[kind]
            attrs[i].default_value = c_default
        op.name = name
        op.domain = domain
        op.onnx_op_type = onnx_type
        op.num_inputs = self.num_inputs
        op.num_optional_inputs = self.num_optional_inputs
        op.num_outputs = self.num_outputs
        op.attrs = attrs
        op.num_attrs = len(self.decls)
        op.infer = self._c_infer
        op.compute = self._c_compute
        if self._prepare is not None:
            op.prepare = self._c_prepare
            op.release = self._c_release
        op.user_data = self._handle
        op.destroy = self._c_destroy
        with _LIVE_LOCK:
            status = lib.nxe_context_register_op(c_context, op)
            if status == lib.NXE_OK:
                self._entries += 1
                _LIVE[id(self)] = self
        check(status)


def _destroy_callback(user_data: Any) -> None:
    # At interpreter exit the module's globals may already be gone: nothing is left to free.
    lock = globals().get("_LIVE_LOCK")
    if lock is None or ffi is None:
        return
    registration = ffi.from_handle(user_data)
    with lock:
        registration._entries -= 1
        if registration._entries == 0:
            _LIVE.pop(id(registration), None)


class _Composed:
    """A composed op: its body graph, kept to register it in other contexts."""

    def __init__(self, name: str, body: Any, domain: str | None) -> None:
        self.name = name
        self.body = body
        self.domain = domain

    def install(self, c_context: Any) -> None:
        self.body._require_open()
        check(lib.nxe_context_register_composed_op(
            c_context, self.name.encode(), self.domain.encode() if self.domain else ffi.NULL,
            self.body._handle))


class Context:
    """A set of op types graphs can use beside the built-in ones (an nxe_context).

    ``Graph(context=ctx)`` builds in it; ``nxe.VirtualMachine(binary, context=ctx)`` and
    ``nxe.onnx.load(model, context=ctx)`` find its ops. ``limits`` as for nxe.Graph."""

    def __init__(self, limits: Limits | None = None, *, _default_ops: bool = True) -> None:
        self._handle = None
        self._registrations: list[_Registration | _Composed] = []
        limits_struct = c_limits(limits)
        out = ffi.new("nxe_context **")
        check(lib.nxe_context_create(out))
        status = lib.nxe_context_set_limits(out[0], limits_struct)
        if status != lib.NXE_OK:
            lib.nxe_context_release(out[0])
            check(status)
        self._handle = out[0]
        if _default_ops and _DEFAULT is not None:
            _DEFAULT.install_into(self._handle)

    def close(self) -> None:
        """Drops this handle on the context; graphs and executables using it keep it."""
        if self._handle is not None:
            lib.nxe_context_release(self._handle)
            self._handle = None

    def __del__(self) -> None:
        if getattr(self, "_handle", None) is not None and lib is not None:
            self.close()

    def register_op(self, name: str, infer: Callable[..., Any], compute: Callable[..., Any], *,
                    num_inputs: int, num_outputs: int = 1, num_optional_inputs: int = 0,
                    attrs: Mapping[str, Any] | None = None, domain: str | None = None,
                    onnx_op_type: str | None = None,
                    prepare: Callable[..., Any] | None = None) -> None:
        """Registers op type ``name``.

        ``infer(inputs, attrs)`` gets one ``(shape, dtype, value)`` per input (value: the
        array of a constant input, else None; None for an absent optional input) and returns
        one ``(shape, dtype)`` per output. ``compute(inputs, attrs)`` gets read-only numpy
        arrays and returns the outputs (arrays of the shapes infer gave). ``attrs`` declares
        the attributes: ``{"beta": 1.0}`` (a default, its type guessed) or ``{"axis": ("int",
        None)}`` (a required one). ``domain`` (and ``onnx_op_type``, default ``name``) is what
        the ONNX importer maps to this op. ``prepare(inputs, attrs)``, optional, runs once per
        op when an executable is compiled or loaded, with the values of constant inputs (None
        for the others); what it returns is handed to ``compute(inputs, attrs, prepared)``."""
        registration = _Registration(name, infer, compute, num_inputs, num_outputs,
                                     num_optional_inputs, attrs, domain, onnx_op_type, prepare)
        self._require_open()
        registration.install(self._handle)
        self._registrations.append(registration)

    def register_composed_op(self, name: str, body: Any, domain: str | None = None) -> None:
        """Registers op type ``name`` defined by the nxe.Graph ``body``: its inputs (in the
        order declared) are the op's inputs, its outputs the op's outputs. Using the op expands
        the body when the graph compiles, shapes inferred from the tensors it is bound to."""
        composed = _Composed(name, body, domain)
        self._require_open()
        composed.install(self._handle)
        self._registrations.append(composed)

    def schema(self, op_type: str) -> dict[str, Any] | None:
        """The schema of a registered op type (None for one this context lacks)."""
        for registration in self._registrations:
            if registration.name == op_type:
                if isinstance(registration, _Registration):
                    return registration.schema()
                return None
        return None

    def onnx_op(self, domain: str, op_type: str) -> str | None:
        """The op type registered here that answers to ONNX (domain, op_type), or None."""
        self._require_open()
        name = ffi.new("char **")
        status = lib.nxe_context_find_onnx_op(self._handle, domain.encode(), op_type.encode(),
                                              name)
        return text(name[0]) if status == lib.NXE_OK else None

    def install_into(self, c_context: Any) -> None:
        """Registers every op of this context in another C context."""
        for registration in self._registrations:
            registration.install(c_context)

    def _require_open(self) -> None:
        if self._handle is None:
            from .errors import InvalidStateError
            raise InvalidStateError("the context is closed")


_DEFAULT: Context | None = None
_DEFAULT_LOCK = threading.Lock()


def default_context() -> Context:
    """The process-wide context ``nxe.register_op`` registers in; every Graph made without a
    context gets its ops."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = Context(_default_ops=False)
        return _DEFAULT


def register_op(name: str, infer: Callable[..., Any], compute: Callable[..., Any],
                **kwargs: Any) -> None:
    """``default_context().register_op(...)``: see Context.register_op."""
    default_context().register_op(name, infer, compute, **kwargs)


def register_composed_op(name: str, body: Any, domain: str | None = None) -> None:
    """``default_context().register_composed_op(...)``."""
    default_context().register_composed_op(name, body, domain)
