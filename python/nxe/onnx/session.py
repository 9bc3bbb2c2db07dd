"""An onnxruntime-shaped API over nxe.onnx: ``InferenceSession``, ``SessionOptions`` and
``IOBinding`` with the names and call shapes of onnxruntime's, so code written for onnxruntime's
CPU provider runs on nxe by changing the import.

    session = nxe.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
    [y] = session.run(None, {"x": x})

Feeds are checked against the model's declared inputs before anything is compiled; a refused
feed is an nxe.Error subclass whose message names the input (onnxruntime raises its own types
for the same cases).
"""

from __future__ import annotations

import operator
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx

from ..errors import InvalidArgumentError, UnsupportedError
from ._importer import OnnxModel, load, onnx_type_name

# The providers a session accepts, all meaning nxe's own CPU kernels.
PROVIDERS = ("NxeExecutionProvider", "CPUExecutionProvider")


def _type_string(type_proto: onnx.TypeProto) -> str:
    """onnxruntime's name of a type: 'tensor(float)', 'seq(tensor(int64))', ..."""
    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        return f"tensor({onnx_type_name(type_proto.tensor_type.elem_type)})"
    if kind == "sequence_type":
        return f"seq({_type_string(type_proto.sequence_type.elem_type)})"
    if kind == "map_type":
        key = onnx_type_name(type_proto.map_type.key_type)
        return f"map({key},{_type_string(type_proto.map_type.value_type)})"
    if kind == "optional_type":
        return f"optional({_type_string(type_proto.optional_type.elem_type)})"
    return "unknown"


def _shape_list(type_proto: onnx.TypeProto) -> list[int | str | None]:
    """Dims as onnxruntime gives them: an int for a fixed size, the symbolic name, else None."""
    if not type_proto.HasField("tensor_type"):
        return []
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
            for d in type_proto.tensor_type.shape.dim]


class NodeArg:
    """One model input or output: ``name``, ``shape`` (ints, symbolic names, None for a
    dimension with neither) and ``type`` ('tensor(float)')."""

    __slots__ = ("name", "shape", "type")

    def __init__(self, name: str, shape: list[int | str | None], type: str) -> None:
        self.name = name
        self.shape = shape
        self.type = type

    def __repr__(self) -> str:
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


class ModelMetadata:
    """The model's producer, graph name, domain, doc strings, version and metadata_props."""

    __slots__ = ("custom_metadata_map", "description", "domain", "graph_description",
                 "graph_name", "producer_name", "version")

    def __init__(self, proto: onnx.ModelProto) -> None:
        self.producer_name = proto.producer_name
        self.graph_name = proto.graph.name
        self.domain = proto.domain
        self.description = proto.doc_string
        self.graph_description = proto.graph.doc_string
        self.version = proto.model_version
        self.custom_metadata_map = {p.key: p.value for p in proto.metadata_props}


class SessionOptions:
    """Options of an InferenceSession, with onnxruntime's field names.

    ``intra_op_num_threads`` is the executables' thread count (0: every online CPU). Fields
    that cannot change results are accepted and ignored: ``inter_op_num_threads`` and
    ``execution_mode`` (nxe runs a graph's steps in order, each on the intra-op threads),
    ``graph_optimization_level`` (nxe always plans the same way), ``use_deterministic_compute``
    (nxe's results never depend on threads or timing), the arena and memory-pattern switches
    and the logging fields. ``enable_profiling`` and ``optimized_model_filepath`` ask for
    something nxe does not do here and are refused when a session is created with them set.
    Any other field is an AttributeError, as in onnxruntime.
    """

    __slots__ = ("enable_cpu_mem_arena", "enable_mem_pattern", "enable_mem_reuse",
                 "enable_profiling", "execution_mode", "graph_optimization_level",
                 "inter_op_num_threads", "intra_op_num_threads", "log_severity_level",
                 "log_verbosity_level", "logid", "optimized_model_filepath",
                 "use_deterministic_compute")

    def __init__(self) -> None:
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.execution_mode: Any = None
        self.graph_optimization_level: Any = None
        self.use_deterministic_compute = False
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.enable_profiling = False
        self.optimized_model_filepath = ""
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""

    def _threads(self) -> int:
        """The thread count to compile with, the options checked."""
        if self.enable_profiling:
            raise UnsupportedError("SessionOptions.enable_profiling: InferenceSession does not "
                                   "profile; leave it False")
        if self.optimized_model_filepath:
            raise UnsupportedError("SessionOptions.optimized_model_filepath: nxe writes no "
                                   "optimized ONNX model; leave it empty")
        try:
            threads = operator.index(self.intra_op_num_threads)
        except TypeError:
            threads = -1
        if threads < 0:
            raise InvalidArgumentError("SessionOptions.intra_op_num_threads is "
                                       f"{self.intra_op_num_threads!r}; expected an int >= 0 "
                                       "(0: every online CPU)")
        return threads


def _provider_names(providers: Sequence[Any] | None,
                    provider_options: Sequence[Mapping[str, Any]] | None) -> list[str]:
    """The providers asked for, checked: each a name or (name, options), options empty."""
    if providers is None:
        return ["CPUExecutionProvider"]
    names = []
    options = list(provider_options or [])
    for index, provider in enumerate(providers):
        name, option = (provider if isinstance(provider, tuple) and len(provider) == 2
                        else (provider, None))
        if index < len(options):
            option = option or options[index]
        if name not in PROVIDERS:
            raise ValueError(f"execution provider {name!r} is not available in nxe; accepted "
                             f"providers are {list(PROVIDERS)}")
        if option:
            raise ValueError(f"execution provider {name!r}: nxe takes no provider options, "
                             f"got {dict(option)}")
        names.append(name)
    if not names:
        raise ValueError(f"no execution provider given; accepted providers are "
                         f"{list(PROVIDERS)}")
    return names


def _as_array(value: Any) -> np.ndarray:
    """A feed as a numpy array: arrays and array-likes as they are, objects offering only
    ``__dlpack__`` through DLPack."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__dlpack__") and not hasattr(value, "__array__"):
        return np.from_dlpack(value)
    return np.asarray(value)


class InferenceSession:
    """An ONNX model loaded for running with nxe, used as onnxruntime's InferenceSession is.

    ``path_or_bytes`` is a path, serialized model bytes or an onnx.ModelProto;
    ``sess_options`` a SessionOptions; ``providers`` None or a list naming only
    'CPUExecutionProvider' and 'NxeExecutionProvider' (any other is a ValueError). Each
    distinct set of input shapes compiles on its first run (see nxe.onnx.load). A model
    onnx's checker refuses is an InvalidGraphError here, as onnxruntime refuses it on loading.
    """

    def __init__(self, path_or_bytes: str | os.PathLike[str] | bytes | onnx.ModelProto,
                 sess_options: SessionOptions | None = None,
                 providers: Sequence[Any] | None = None,
                 provider_options: Sequence[Mapping[str, Any]] | None = None) -> None:
        self._options = sess_options if sess_options is not None else SessionOptions()
        self._providers = _provider_names(providers, provider_options)
        self._model: OnnxModel = load(path_or_bytes, threads=self._options._threads())
        # As onnxruntime does on loading; also keeps shape inference off hostile node forms.
        self._model.check()
        graph = self._model.proto.graph
        declared = {i.name: i.type for i in graph.input}
        self._inputs = [NodeArg(name, _shape_list(declared[name]), _type_string(declared[name]))
                        for name in self._model.input_names]
        self._feedable = set(declared)
        self._outputs = [NodeArg(o.name, _shape_list(t), _type_string(t))
                         for o, t in zip(graph.output, self._output_types())]

    def _output_types(self) -> list[onnx.TypeProto]:
        """Each graph output's type as onnxruntime reports it: the declared type merged with
        what ONNX shape inference finds (an inferred size replaces a declared name or a
        missing dim, and fills in an undeclared shape). A symbolic dim that inference invents
        (a name the model never uses) is left without a name, as onnxruntime has it."""
        graph = self._model.proto.graph
        try:
            inferred = onnx.shape_inference.infer_shapes(self._model.proto_without_data)
        except Exception:  # noqa: BLE001 - inference is a help; the declared types stay
            return [o.type for o in graph.output]
        named = {d.dim_param for v in list(graph.input) + list(graph.value_info)
                 + list(graph.output) for d in v.type.tensor_type.shape.dim}
        by_name = {}
        for output in inferred.graph.output:
            for dim in output.type.tensor_type.shape.dim:
                if dim.HasField("dim_param") and dim.dim_param not in named:
                    dim.ClearField("dim_param")
            by_name[output.name] = output.type
        return [by_name.get(o.name, o.type) for o in graph.output]

    # -- description ---------------------------------------------------------------------

    def get_inputs(self) -> list[NodeArg]:
        """The inputs to feed (graph inputs that are not initializers), in graph order."""
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        """The graph outputs, in graph order."""
        return list(self._outputs)

    def get_overridable_initializers(self) -> list[NodeArg]:
        """Initializers that are also graph inputs, which a feed may replace."""
        graph = self._model.proto.graph
        return [NodeArg(i.name, _shape_list(i.type), _type_string(i.type)) for i in graph.input
                if i.name in self._model.initializers]

    def get_modelmeta(self) -> ModelMetadata:
        return ModelMetadata(self._model.proto)

    def get_providers(self) -> list[str]:
        return list(self._providers)

    def get_session_options(self) -> SessionOptions:
        return self._options

    # -- running -------------------------------------------------------------------------

    def _output_names(self, output_names: Sequence[str] | None, what: str) -> list[str]:
        all_names = [o.name for o in self._outputs]
        if output_names is None:
            return all_names
        if isinstance(output_names, str):
            raise InvalidArgumentError(f"{what}: output_names is a string; give a list of "
                                       "names or None")
        unknown = [n for n in output_names if n not in all_names]
        if unknown:
            raise InvalidArgumentError(f"{what}: no output named "
                                       f"{', '.join(map(repr, unknown))}; outputs are "
                                       f"{all_names}")
        return list(output_names)

    def _check_name(self, name: str, what: str) -> None:
        if name not in self._feedable:
            raise InvalidArgumentError(f"{what}: no input named {name!r}; inputs are "
                                       f"{[i.name for i in self._inputs]}")

    def _check_feeds(self, feeds: Mapping[str, Any], what: str) -> dict[str, np.ndarray]:
        """Every input fed, none unknown, each of the declared dtype, rank and fixed dims."""
        for name in feeds:
            self._check_name(name, what)
        missing = [i.name for i in self._inputs if i.name not in feeds]
        if missing:
            raise InvalidArgumentError(f"{what}: input {', '.join(map(repr, missing))} not "
                                       "fed")
        arrays = {name: _as_array(value) for name, value in feeds.items()}
        for name, array in arrays.items():
            self._model.input_spec(name, array)
        return arrays

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any],
            run_options: Any = None) -> list[np.ndarray]:
        """Runs once on ``input_feed`` ({input name: array}) and returns the outputs named by
        ``output_names`` in that order (None: every output, in graph order), as arrays the
        caller owns. ``run_options`` is accepted for onnxruntime's signature and ignored."""
        if not isinstance(input_feed, Mapping):
            raise InvalidArgumentError("run: input_feed must be a dict {input name: array}, "
                                       f"got {type(input_feed).__name__}")
        names = self._output_names(output_names, "run")
        results = self._model.run(self._check_feeds(input_feed, "run"))
        return [results[name] for name in names]

    def io_binding(self) -> IOBinding:
        """A binding of inputs and outputs for ``run_with_iobinding``."""
        return IOBinding(self)

    def run_with_iobinding(self, iobinding: IOBinding, run_options: Any = None) -> None:
        """Runs on the binding's inputs; its bound outputs are then views into the result
        buffer of the compiled model, nothing copied out (``iobinding.get_outputs()``), valid
        until this thread's next run of the session with the same input shapes.
        ``run_options`` is accepted for onnxruntime's signature and ignored."""
        if not isinstance(iobinding, IOBinding) or iobinding._session is not self:
            raise InvalidArgumentError("run_with_iobinding: the binding was not made by this "
                                       "session's io_binding()")
        if not iobinding._output_names:
            raise InvalidArgumentError("run_with_iobinding: no output bound; call "
                                       "bind_output(name) first")
        feeds = self._check_feeds(iobinding._inputs, "run_with_iobinding")
        results = self._model.run_nocopy(feeds)
        iobinding._results = [results[name] for name in iobinding._output_names]


class IOBinding:
    """Inputs and outputs bound for ``InferenceSession.run_with_iobinding``.

    Inputs are checked when bound and read where they lie until the run copies them into the
    executable's input staging; outputs are not copied out: ``get_outputs()`` gives views into
    the executable's result buffer, ``copy_outputs_to_cpu()`` copies of them.
    """

    def __init__(self, session: InferenceSession) -> None:
        self._session = session
        self._inputs: dict[str, np.ndarray] = {}
        self._output_names: list[str] = []
        self._results: list[np.ndarray] = []

    def bind_input(self, name: str, array: Any) -> None:
        """Binds input ``name`` to ``array`` (checked now against the declared dtype and
        shape). The array is read at each run: change it in place to feed new values."""
        self._session._check_name(name, "bind_input")
        value = _as_array(array)
        self._session._model.input_spec(name, value)
        self._inputs[name] = value

    # onnxruntime's name for binding a CPU array.
    bind_cpu_input = bind_input

    def bind_output(self, name: str, device_type: str = "cpu", device_id: int = 0) -> None:
        """Asks for output ``name`` from the next run; nxe places it in its own memory."""
        if device_type != "cpu" or device_id != 0:
            raise UnsupportedError(f"bind_output {name!r}: device {device_type!r} "
                                   f"{device_id}; nxe runs on the CPU ('cpu', 0)")
        [checked] = self._session._output_names([name], "bind_output")
        if checked not in self._output_names:
            self._output_names.append(checked)

    def clear_binding_inputs(self) -> None:
        self._inputs.clear()

    def clear_binding_outputs(self) -> None:
        self._output_names.clear()
        self._results = []

    def get_outputs(self) -> list[np.ndarray]:
        """The bound outputs of the last run, in binding order, as views into nxe's result
        buffer (see InferenceSession.run_with_iobinding for how long they hold)."""
        return list(self._results)

    def copy_outputs_to_cpu(self) -> list[np.ndarray]:
        """Copies of the bound outputs of the last run, in binding order, owned by the
        caller."""
        return [np.array(result) for result in self._results]
