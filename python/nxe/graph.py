"""nxe.Graph and nxe.Tensor: the Python face of the C graph builder.

One method per registered op type is generated from the C registry at import. Names, shapes,
dtypes and bindings are checked by the library alone, so each mistake has one message;
Python checks only what C cannot see (Python types, tensors of another Graph object).

The library lets one thread at a time use a graph, and every call into it releases the GIL;
so each Graph has a lock, and every call on it or its tensors holds it.
"""

from __future__ import annotations

import inspect
import json
import keyword
import operator
import os
import threading
from collections.abc import Callable, Sequence
from functools import wraps
from typing import Any, TypeVar

import numpy as np

from . import _dtypes, custom_ops, registry
from ._binding import check, ffi, lib, text
from .device import device_handle
from .errors import InvalidStateError
from .executable import Executable
from .limits import Limits, c_limits

KINDS = {
    "input": lib.NXE_TENSOR_INPUT,
    "output": lib.NXE_TENSOR_OUTPUT,
    "constant": lib.NXE_TENSOR_CONSTANT,
    "transient": lib.NXE_TENSOR_TRANSIENT,
    "variable": lib.NXE_TENSOR_VARIABLE,
}
_KIND_NAMES = {code: name for name, code in KINDS.items()}

_QUANT_NAMES = {
    lib.NXE_QUANT_NONE: "none",
    lib.NXE_QUANT_ASYMMETRIC: "asymmetric",
    lib.NXE_QUANT_SYMMETRIC_PER_CHANNEL: "per_channel",
    lib.NXE_QUANT_DYNAMIC_FIXED_POINT: "dynamic_fixed_point",
}

Shape = Sequence["int | None"]

_Method = TypeVar("_Method", bound=Callable[..., Any])


def _locked(method: _Method) -> _Method:
    """Runs a Graph or Tensor method under its graph's lock."""

    @wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        graph = self if isinstance(self, Graph) else self._graph
        with graph._lock:
            return method(self, *args, **kwargs)

    return call  # type: ignore[return-value]


def _shape_array(shape: Shape | None) -> tuple[int, Any]:
    """(ndim, int64_t[]) for the C spec; None means rank unknown, a None dim means unknown."""
    if shape is None:
        return -1, ffi.NULL
    dims = [-1 if d is None else operator.index(d) for d in shape]
    return len(dims), ffi.new("int64_t[]", dims) if dims else ffi.NULL


class Tensor:
    """A tensor of a Graph. Keeps its graph alive; shapes left to inference are filled in
    by Graph.compile."""

    __slots__ = ("_graph", "_handle")

    def __init__(self, graph: Graph, handle: Any) -> None:
        self._graph = graph
        self._handle = handle

    @property
    def graph(self) -> Graph:
        return self._graph

    @_locked
    def _info(self) -> Any:
        self._graph._require_open()
        info = ffi.new("nxe_tensor_info *")
        info.struct_size = ffi.sizeof("nxe_tensor_info")
        check(lib.nxe_tensor_get_info(self._handle, info))
        return info

    @property
    def name(self) -> str:
        return text(self._info().name)

    @property
    def dtype(self) -> str | None:
        """nxe dtype name ("f32", ...); None while left to inference."""
        return _dtypes.name_of(self._info().dtype)

    @property
    def shape(self) -> tuple[int | None, ...] | None:
        """None while the rank is unknown; unknown dimensions are None."""
        info = self._info()
        if info.ndim < 0:
            return None
        return tuple(None if d < 0 else int(d) for d in info.shape[0:info.ndim])

    @property
    def kind(self) -> str:
        return _KIND_NAMES.get(self._info().kind, f"unknown({self._info().kind})")

    @property
    def quant(self) -> dict[str, Any]:
        """Quantization: ``type`` and the fields that type uses."""
        info = self._info()
        quant_type = _QUANT_NAMES.get(info.quant_type, f"unknown({info.quant_type})")
        result: dict[str, Any] = {"type": quant_type}
        if info.quant_type == lib.NXE_QUANT_ASYMMETRIC:
            result.update(scale=float(info.scale), zero_point=int(info.zero_point))
        elif info.quant_type == lib.NXE_QUANT_SYMMETRIC_PER_CHANNEL:
            scales = [float(info.scales[i]) for i in range(info.num_scales)]
            result.update(axis=int(info.axis), scales=scales)
        elif info.quant_type == lib.NXE_QUANT_DYNAMIC_FIXED_POINT:
            result.update(fractional_length=int(info.fractional_length))
        return result

    @_locked
    def set_shape(self, shape: Shape) -> None:
        """Declares a new shape for an input, output or transient tensor before compiling; a
        graph built for one input size compiles for another (shapes downstream are inferred
        again). ``None`` entries (unknown) are allowed for outputs and transients only."""
        self._graph._require_open()
        ndim, dims = _shape_array(shape)
        check(lib.nxe_tensor_set_shape(self._handle, ndim, dims))

    @_locked
    def set_quant_asymmetric(self, scale: float, zero_point: int) -> None:
        """real = scale * (q - zero_point), one scale for the whole tensor."""
        self._graph._require_open()
        check(lib.nxe_tensor_set_quant_asymmetric(self._handle, float(scale),
                                                  operator.index(zero_point)))

    @_locked
    def set_quant_per_channel(self, axis: int, scales: Sequence[float]) -> None:
        """real = scales[c] * q along ``axis``."""
        self._graph._require_open()
        values = [float(s) for s in scales]
        array = ffi.new("float[]", values) if values else ffi.NULL
        check(lib.nxe_tensor_set_quant_per_channel(self._handle, operator.index(axis), array,
                                                   len(values)))

    @_locked
    def set_quant_dynamic_fixed_point(self, fractional_length: int) -> None:
        """real = q * 2^-fractional_length."""
        self._graph._require_open()
        check(lib.nxe_tensor_set_quant_dynamic_fixed_point(self._handle,
                                                           operator.index(fractional_length)))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Tensor) and other._graph is self._graph
                and other._handle == self._handle)

    def __hash__(self) -> int:
        return hash((id(self._graph), int(ffi.cast("uintptr_t", self._handle))))

    def __repr__(self) -> str:
        if self._graph._handle is None:
            return "<nxe.Tensor of a closed graph>"
        shape = "?" if self.shape is None else tuple("?" if d is None else d for d in self.shape)
        return f"<nxe.Tensor {self.name!r} {self.dtype or '?'} {shape} {self.kind}>"


class Graph:
    """A graph of tensors and ops under construction; ``compile`` turns it into an Executable.

    Besides the generic ``op``, every registered op type is a method (``g.Conv2d(x, w, None,
    strides=[1, 1])``): inputs positionally in schema order, attributes as keywords.
    Calls from several threads take turns.

    ``limits`` (nxe.Limits) bound the graph as it grows (``max_ops``: adding one op more
    raises InvalidGraphError) and are what ``compile`` and ``compile_to_binary`` enforce when
    they are given no limits of their own.

    ``context`` (nxe.Context) is where op types registered with it are found (``limits``, when
    given, are then set on that context); without one the graph has a context of its own
    holding the ops of ``nxe.default_context()``.
    """

    def __init__(self, limits: Limits | None = None, context: Any = None) -> None:
        self._handle = None
        self._lock = threading.RLock()
        self._context = context
        limits_struct = c_limits(limits)  # checked before anything is created
        graph = ffi.new("nxe_graph **")
        if context is not None:
            context._require_open()
            if limits is not None:
                check(lib.nxe_context_set_limits(context._handle, limits_struct))
            check(lib.nxe_graph_create(context._handle, graph))
        else:
            c_context = ffi.new("nxe_context **")
            check(lib.nxe_context_create(c_context))
            status = lib.nxe_context_set_limits(c_context[0], limits_struct)
            if status == lib.NXE_OK and custom_ops._DEFAULT is not None:
                try:
                    custom_ops._DEFAULT.install_into(c_context[0])
                except Exception:
                    lib.nxe_context_release(c_context[0])
                    raise
            if status == lib.NXE_OK:
                status = lib.nxe_graph_create(c_context[0], graph)
            # The graph holds its own reference to the context.
            lib.nxe_context_release(c_context[0])
            check(status)
        self._handle = graph[0]
        self._used_names: set[str] = set()
        self._op_count = 0
        self._variables: list[Tensor] = []

    @classmethod
    def _from_handle(cls, handle: Any, variables: Sequence[str] = ()) -> Graph:
        """Wraps a C graph made elsewhere (e.g. by nxe_model_build_graph), taking ownership:
        the Graph releases it. ``variables`` names its VARIABLE tensors, so executables
        compiled from it can read and write them by name."""
        graph = cls.__new__(cls)
        graph._handle = handle
        graph._context = None
        graph._lock = threading.RLock()
        graph._used_names = set()
        graph._op_count = 0
        graph._variables = []
        try:
            for name in variables:
                graph._variables.append(graph.find_tensor(name))
                graph._used_names.add(name)
        except BaseException:
            graph.close()
            raise
        return graph

    # -- lifetime ------------------------------------------------------------------------

    @_locked
    def close(self) -> None:
        """Releases the C graph; executables compiled from it stay valid."""
        if self._handle is not None:
            lib.nxe_graph_release(self._handle)
            self._handle = None

    def __enter__(self) -> Graph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # At interpreter exit the module globals may already be gone.
        if getattr(self, "_handle", None) is not None and lib is not None:
            self.close()

    def _require_open(self) -> None:
        if self._handle is None:
            raise InvalidStateError("the graph is closed")

    # -- tensors -------------------------------------------------------------------------

    @_locked
    def _add_tensor(self, name: str | None, dtype: int, kind: int, shape: Shape | None) -> Tensor:
        self._require_open()
        ndim, dims = _shape_array(shape)
        # Struct fields do not keep cdata alive: the name buffer is held here for the call.
        name_buffer = ffi.new("char[]", name.encode()) if name else ffi.NULL
        spec = ffi.new("nxe_tensor_spec *")
        spec.struct_size = ffi.sizeof("nxe_tensor_spec")
        spec.name = name_buffer
        spec.dtype = dtype
        spec.kind = kind
        spec.ndim = ndim
        spec.shape = dims
        out = ffi.new("nxe_tensor **")
        check(lib.nxe_graph_add_tensor(self._handle, spec, out))
        tensor = Tensor(self, out[0])
        self._used_names.add(tensor.name)
        return tensor

    @_locked
    def _add_data_tensor(self, value: Any, name: str | None, dtype: Any, kind: int) -> Tensor:
        if dtype is None:
            array = np.asarray(value, order="C")
            code = _dtypes.code_of(array.dtype)
        else:
            code = _dtypes.code_of(dtype)
            array = np.asarray(value, dtype=_dtypes.numpy_of(code), order="C")
        tensor = self._add_tensor(name, code, kind, array.shape)
        check(lib.nxe_tensor_set_data(tensor._handle, ffi.from_buffer(array), array.nbytes))
        return tensor

    def input(self, name: str, shape: Shape, dtype: Any = "f32") -> Tensor:
        """A tensor fed on every run."""
        return self._add_tensor(name, _dtypes.code_of(dtype), lib.NXE_TENSOR_INPUT, shape)

    def constant(self, value: Any, name: str | None = None, dtype: Any = None) -> Tensor:
        """A constant holding a copy of ``value``; its dtype is the array's unless given
        (then the value is converted). bf16 values are np.uint16 raw bits."""
        return self._add_data_tensor(value, name, dtype, lib.NXE_TENSOR_CONSTANT)

    def variable(self, value: Any, name: str | None = None, dtype: Any = None) -> Tensor:
        """Persistent state, initialised from ``value``, kept across runs."""
        tensor = self._add_data_tensor(value, name, dtype, lib.NXE_TENSOR_VARIABLE)
        self._variables.append(tensor)
        return tensor

    def tensor(self, name: str | None = None, dtype: Any = None, kind: str = "transient",
               shape: Shape | None = None) -> Tensor:
        """Declares a tensor explicitly, e.g. an op output whose dtype or quantization is
        fixed ahead (``kind="output"``). dtype and shape may be left to inference."""
        if kind not in KINDS:
            raise ValueError(f"kind {kind!r} is not one of {', '.join(KINDS)}")
        code = lib.NXE_DTYPE_NONE if dtype is None else _dtypes.code_of(dtype)
        tensor = self._add_tensor(name, code, KINDS[kind], shape)
        if kind == "variable":
            self._variables.append(tensor)
        return tensor

    @_locked
    def find_tensor(self, name: str) -> Tensor:
        self._require_open()
        out = ffi.new("nxe_tensor **")
        check(lib.nxe_graph_find_tensor(self._handle, name.encode(), out))
        return Tensor(self, out[0])

    @_locked
    def keep_outputs(self, names: Sequence[str]) -> None:
        """Keeps only what computes the named outputs (nxe_graph_keep_outputs): the ops none
        of them depends on and the tensors no kept op uses are dropped, other outputs of kept
        ops become intermediate. Tensor objects of what was dropped must not be used again."""
        self._require_open()
        if isinstance(names, str):
            raise TypeError("keep_outputs: expected a sequence of names, not one string")
        encoded = [ffi.new("char[]", str(name).encode()) for name in names]
        array = ffi.new("const char *[]", encoded or [ffi.NULL])
        variables = [t.name for t in self._variables]
        check(lib.nxe_graph_keep_outputs(self._handle, array, len(encoded)))
        kept = []
        for name in variables:
            found = ffi.new("nxe_tensor **")
            if lib.nxe_graph_find_tensor(self._handle, name.encode(), found) == lib.NXE_OK:
                kept.append(Tensor(self, found[0]))
        self._variables = kept

    @_locked
    def mark_output(self, tensor: Tensor, name: str | None = None) -> None:
        """Makes an op's result a graph output, renamed to ``name`` if given: the key it gets
        in the results of Executable.run."""
        self._check_own(tensor, "mark_output")
        check(lib.nxe_tensor_set_kind(tensor._handle, lib.NXE_TENSOR_OUTPUT))
        if name is not None:
            check(lib.nxe_tensor_set_name(tensor._handle, name.encode()))
            self._used_names.add(name)

    def _check_own(self, tensor: Any, what: str) -> None:
        self._require_open()
        if not isinstance(tensor, Tensor):
            raise TypeError(f"{what}: expected an nxe.Tensor, got {type(tensor).__name__}")
        if tensor._graph is not self:
            raise ValueError(f"{what}: tensor belongs to another graph")

    # -- ops -----------------------------------------------------------------------------

    def _custom_schema(self, op_type: str) -> dict[str, Any] | None:
        """The schema of an op type registered from Python in the graph's context."""
        for context in (self._context, custom_ops._DEFAULT if self._context is None else None):
            schema = context.schema(op_type) if context is not None else None
            if schema is not None:
                return schema
        return None

    def _fresh_name(self, base: str) -> str:
        while True:
            candidate = f"{base}_{self._op_count}"
            self._op_count += 1
            if candidate not in self._used_names:
                return candidate

    def op(self, op_type: str, inputs: Sequence[Tensor | None] = (), num_outputs: int | None = None,
           name: str | None = None, outputs: Sequence[Tensor] | None = None,
           **attrs: Any) -> list[Tensor]:
        """Adds an op of a registered type and returns its output tensors.

        ``inputs`` in schema order (None leaves an optional input absent); attributes as
        keywords. Outputs are new TRANSIENT tensors named after the op (``name``, or
        ``name:i`` for several) unless ``outputs`` binds tensors declared with ``tensor()``.
        """
        return self._add_op(op_type, inputs, num_outputs, name, outputs, attrs)

    @_locked
    def _add_op(self, op_type: str, inputs: Sequence[Tensor | None], num_outputs: int | None,
                name: str | None, outputs: Sequence[Tensor] | None,
                attrs: dict[str, Any]) -> list[Tensor]:
        self._require_open()
        schema = registry.find(op_type) or self._custom_schema(op_type)
        # Everything Python can check is checked before the op exists, so a mistake caught
        # here leaves the graph as it was.
        for i, tensor in enumerate(inputs):
            if tensor is not None:
                self._check_own(tensor, f"{op_type} input {i}")
        if outputs is not None:
            outputs = list(outputs)
            for i, tensor in enumerate(outputs):
                self._check_own(tensor, f"{op_type} output {i}")
        else:
            count = _output_count(op_type, schema, num_outputs)
        attr_types = {a["name"]: a["type"] for a in schema["attrs"]} if schema else {}
        setters = [_attr_setter(op_type, attr_name, attr_types.get(attr_name), value)
                   for attr_name, value in attrs.items()]

        op_name = name if name is not None else self._fresh_name(op_type)
        out = ffi.new("nxe_op **")
        check(lib.nxe_graph_add_op(self._handle, op_type.encode(), op_name.encode(), out))
        self._used_names.add(op_name)
        handle = out[0]
        try:
            for setter in setters:
                check(setter(handle))
            input_handles = [ffi.NULL if t is None else t._handle for t in inputs]
            check(lib.nxe_op_bind_inputs(handle, ffi.new("nxe_tensor *[]", input_handles),
                                         len(input_handles)))
            if outputs is None:
                names = [op_name] if count == 1 else [f"{op_name}:{i}" for i in range(count)]
                outputs = [self._add_tensor(n, lib.NXE_DTYPE_NONE, lib.NXE_TENSOR_TRANSIENT,
                                            None) for n in names]
            output_handles = [t._handle for t in outputs]
            check(lib.nxe_op_bind_outputs(handle, ffi.new("nxe_tensor *[]", output_handles),
                                          len(output_handles)))
        except Exception:
            # A rejected attribute or binding leaves no half-built op behind.
            lib.nxe_graph_remove_op(self._handle, handle)
            self._used_names.discard(op_name)
            raise
        return outputs

    # -- compile -------------------------------------------------------------------------

    @_locked
    def compile(self, threads: int = 0, relax: bool = False,
                limits: Limits | None = None, winograd: str = "auto",
                device: Any = None) -> Executable:
        """Infers shapes, validates and plans the graph. ``threads`` = 0 uses every online CPU;
        ``relax`` lets fp32 work run in bf16 with fp32 accumulation; ``limits`` (nxe.Limits)
        bounds the op count, each tensor's bytes and a run's memory (None: the graph's own
        limits, ``Graph(limits=...)``); ``winograd`` chooses how fp32 3x3 stride-1
        convolutions run: "auto" (a cost model per layer; the NXE_WINOGRAD environment
        variable may override it), "off" (the direct product: every output computed from its
        receptive field alone) or "on" (Winograd F(4x4, 3x3) wherever it applies).
        ``device`` (nxe.devices(): a Device, its name, or None for the default CPU) chooses
        where it runs: a CPU device's cores get the worker threads (``threads`` 0 = its core
        count); an ``nxe.RemoteDevice`` compiles here and returns its remote executable."""
        self._require_open()
        if getattr(device, "kind", None) == "remote":
            binary = self.compile_to_binary(relax=relax, limits=limits, winograd=winograd)
            return device.load(binary, threads=threads)
        options = _compile_options(threads, relax, winograd)
        options.device = device_handle(device)
        limits_struct = c_limits(limits)  # kept alive through the call
        options.limits = limits_struct
        out = ffi.new("nxe_executable **")
        check(lib.nxe_graph_compile(self._handle, options, out))
        variables = {t.name: (t.shape, t.dtype) for t in self._variables}
        return Executable(out[0], variables=variables)

    @_locked
    def compile_to_binary(self, path: str | os.PathLike[str] | None = None, threads: int = 0,
                          relax: bool = False, limits: Limits | None = None,
                          winograd: str = "auto") -> bytes:
        """Compiles the graph as ``compile`` does and returns the compiled binary (.nxb), which
        ``nxe.VirtualMachine`` loads; with ``path`` it is also written to that file. ``relax``
        and ``winograd`` are baked into the plan; the thread count is chosen again by whoever
        loads it, so ``threads`` only sizes the compile's own executable; ``limits`` as for
        ``compile``."""
        self._require_open()
        options = _compile_options(threads, relax, winograd)
        limits_struct = c_limits(limits)  # kept alive through the call
        options.limits = limits_struct
        size = ffi.new("size_t *")
        check(lib.nxe_graph_compile_to_binary(self._handle, options, ffi.NULL, size))
        buffer = bytearray(size[0])
        check(lib.nxe_graph_compile_to_binary(self._handle, options, ffi.from_buffer(buffer),
                                              size))
        data = bytes(buffer[:size[0]])
        if path is not None:
            with open(path, "wb") as file:
                file.write(data)
        return data


_WINOGRAD_MODES = {"auto": "NXE_WINOGRAD_AUTO", "off": "NXE_WINOGRAD_OFF",
                   "on": "NXE_WINOGRAD_ON"}


def _compile_options(threads: int, relax: bool, winograd: str) -> Any:
    """nxe_compile_options for the compile calls (limits are set by the caller, which keeps
    their struct alive)."""
    if winograd not in _WINOGRAD_MODES:
        raise ValueError(f"winograd={winograd!r}; expected one of {sorted(_WINOGRAD_MODES)}")
    options = ffi.new("nxe_compile_options *")
    options.struct_size = ffi.sizeof("nxe_compile_options")
    options.num_threads = operator.index(threads)
    options.relax_precision = 1 if relax else 0
    options.winograd = getattr(lib, _WINOGRAD_MODES[winograd])
    return options


def _output_count(op_type: str, schema: dict[str, Any] | None, num_outputs: int | None) -> int:
    if num_outputs is not None:
        count = operator.index(num_outputs)
        if count < 0:
            raise ValueError(f"{op_type}: num_outputs must be >= 0, got {count}")
        return count
    if schema is None:
        return 1
    if schema["outputs"] and schema["outputs"][-1]["variadic"]:
        raise TypeError(f"{op_type} has a variadic output: pass num_outputs=")
    return len(schema["outputs"])


def _guess_attr_type(value: Any) -> str:
    if isinstance(value, str):
        return "string"
    if isinstance(value, (bool, int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    if all(isinstance(v, (bool, int, np.integer)) for v in value):
        return "ints"
    return "floats"


def _as_float(value: Any) -> float:
    # float() would also parse strings; an attribute value must already be a number.
    if isinstance(value, (str, bytes)):
        raise TypeError
    return float(value)


def _attr_setter(op_type: str, name: str, attr_type: str | None,
                 value: Any) -> Callable[[Any], int]:
    """Converts an attribute value for the setter its schema type names and returns the call
    that sets it on an op. Attributes the schema lacks go through the setter their value
    suggests, and the library rejects them with its own message."""
    key = name.encode()
    try:
        attr_type = attr_type or _guess_attr_type(value)
        if attr_type == "int":
            number = operator.index(value)
            return lambda op: lib.nxe_op_set_attr_int(op, key, number)
        if attr_type == "float":
            real = _as_float(value)
            return lambda op: lib.nxe_op_set_attr_float(op, key, real)
        if attr_type == "string":
            if not isinstance(value, str):
                raise TypeError
            text_value = value.encode()
            return lambda op: lib.nxe_op_set_attr_string(op, key, text_value)
        if attr_type == "ints":
            ints = [operator.index(v) for v in value]
            return lambda op: lib.nxe_op_set_attr_ints(op, key, ffi.new("int64_t[]", ints),
                                                       len(ints))
        if attr_type == "floats":
            reals = [_as_float(v) for v in value]
            return lambda op: lib.nxe_op_set_attr_floats(op, key, ffi.new("float[]", reals),
                                                         len(reals))
        raise TypeError
    except (TypeError, ValueError):
        expected = attr_type or "an int, float, string or a sequence of numbers"
        raise TypeError(f"{op_type} attribute {name!r} takes {expected}, got {value!r}") from None


# -- op methods generated from the registry ----------------------------------------------

_RESERVED = {"self", "name", "num_outputs"}


def _python_name(name: str, taken: set[str]) -> str:
    result = name if name.isidentifier() else "".join(c if c.isalnum() else "_" for c in name)
    while keyword.iskeyword(result) or result in _RESERVED or result in taken or not result:
        result += "_"
    taken.add(result)
    return result


def _param_doc(p: dict[str, Any]) -> str:
    notes = ", ".join(["/".join(p["dtypes"])] + [k for k in ("optional", "variadic") if p[k]])
    return f"    {p['name']} ({notes}): {p['doc']}".rstrip(": ")


def _doc(schema: dict[str, Any]) -> str:
    lines = [schema["summary"] or schema["name"], ""]
    if schema["inputs"]:
        lines.append("Inputs:")
        lines += [_param_doc(p) for p in schema["inputs"]]
    if schema["attrs"]:
        lines.append("Attributes (keyword-only; unset ones take the library's default):")
        for a in schema["attrs"]:
            default = "required" if a["required"] else f"default {json.dumps(a['default'])}"
            lines.append(f"    {a['name']} ({a['type']}, {default}): {a['doc']}".rstrip(": "))
    if schema["outputs"]:
        lines.append("Outputs:")
        lines += [_param_doc(p) for p in schema["outputs"]]
    lines += ["", "name: op name (generated when None)."]
    variadic_output = bool(schema["outputs"]) and schema["outputs"][-1]["variadic"]
    if variadic_output:
        lines.append("num_outputs: how many outputs the variadic output has.")
        lines.append("Returns a tuple of Tensors.")
    elif len(schema["outputs"]) == 1:
        lines.append("Returns a Tensor.")
    else:
        lines.append("Returns a tuple of Tensors.")
    return "\n".join(lines)


def _op_method(schema: dict[str, Any]) -> Any:
    op_type = schema["name"]
    P = inspect.Parameter
    taken: set[str] = set()
    params = [P("self", P.POSITIONAL_OR_KEYWORD)]
    inputs: list[tuple[str, bool]] = []
    after_optional = False
    for p in schema["inputs"]:
        py = _python_name(p["name"], taken)
        if p["variadic"]:
            params.append(P(py, P.VAR_POSITIONAL))
        else:
            # A required input after an optional one keeps the signature valid with a None
            # default; the library reports it if left unbound.
            after_optional = after_optional or p["optional"]
            default = None if after_optional else P.empty
            params.append(P(py, P.POSITIONAL_OR_KEYWORD, default=default))
        inputs.append((py, p["variadic"]))
    attrs: list[tuple[str, str]] = []
    for a in schema["attrs"]:
        py = _python_name(a["name"], taken)
        params.append(P(py, P.KEYWORD_ONLY, default=P.empty if a["required"] else a["default"]))
        attrs.append((py, a["name"]))
    params.append(P("name", P.KEYWORD_ONLY, default=None))
    variadic_output = bool(schema["outputs"]) and schema["outputs"][-1]["variadic"]
    if variadic_output:
        params.append(P("num_outputs", P.KEYWORD_ONLY))
    signature = inspect.Signature(params)
    several = variadic_output or len(schema["outputs"]) != 1

    def method(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        given = bound.arguments
        values: list[Any] = []
        for py, variadic in inputs:
            if variadic:
                values.extend(given.get(py, ()))
            else:
                values.append(given.get(py))
        # Only attributes the caller set go to C; the library applies its own defaults.
        attr_values = {c_name: given[py] for py, c_name in attrs if py in given}
        outputs = given["self"]._add_op(op_type, values, given.get("num_outputs"),
                                        given.get("name"), None, attr_values)
        return tuple(outputs) if several else outputs[0]

    method.__name__ = op_type
    method.__qualname__ = f"Graph.{op_type}"
    method.__doc__ = _doc(schema)
    method.__signature__ = signature
    return method


def _install_op_methods() -> None:
    # The schemas are only read here: the registry's own entries serve without ops()'s copy,
    # which took a third of the import.
    for schema in registry._registry():
        if not hasattr(Graph, schema["name"]):
            setattr(Graph, schema["name"], _op_method(schema))


_install_op_methods()
