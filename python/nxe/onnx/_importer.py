"""The ONNX importer core: turns an ONNX ModelProto into an nxe.Graph per tuple of input shapes,
folding everything known at import and converting the rest through the converter registry.
It must not hold op-specific logic beyond folding; converters live in the ops_*.py modules.
"""

from __future__ import annotations

import copy
import math
import os
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, shape_inference

from .. import _dtypes, custom_ops
from .._binding import check, ffi, lib
from ..errors import (
    DtypeMismatchError,
    Error,
    FormatError,
    InvalidArgumentError,
    InvalidGraphError,
    OutOfMemoryError,
    ShapeMismatchError,
    UnsupportedError,
)
from ..executable import Executable
from ..graph import Graph, Tensor
from . import attention_fusion, folding, qdq, registry

# ONNX element type -> (numpy dtype, nxe dtype name) for the types nxe computes with.
_ONNX_TYPES: dict[int, tuple[np.dtype, str]] = {
    TensorProto.FLOAT: (np.dtype(np.float32), "f32"),
    TensorProto.FLOAT16: (np.dtype(np.float16), "f16"),
    TensorProto.INT8: (np.dtype(np.int8), "i8"),
    TensorProto.UINT8: (np.dtype(np.uint8), "u8"),
    TensorProto.INT16: (np.dtype(np.int16), "i16"),
    TensorProto.INT32: (np.dtype(np.int32), "i32"),
    TensorProto.INT64: (np.dtype(np.int64), "i64"),
    TensorProto.BOOL: (np.dtype(np.bool_), "bool"),
    TensorProto.DOUBLE: (np.dtype(np.float64), "f64"),
    TensorProto.UINT16: (np.dtype(np.uint16), "u16"),
    TensorProto.UINT32: (np.dtype(np.uint32), "u32"),
    TensorProto.UINT64: (np.dtype(np.uint64), "u64"),
}
# BFLOAT16 values are ml_dtypes.bfloat16 arrays on the ONNX side (onnx's own convention) and
# raw np.uint16 bits on the nxe side; _to_nxe_array / _from_nxe_array convert at the boundary.
_BFLOAT16: np.dtype | None = _dtypes.BFLOAT16
if _BFLOAT16 is not None:
    _ONNX_TYPES[TensorProto.BFLOAT16] = (_BFLOAT16, "bf16")
_NXE_BY_NUMPY = {np_dtype: name for np_dtype, name in _ONNX_TYPES.values()}
_ELEM_BY_NXE = {name: elem for elem, (_, name) in _ONNX_TYPES.items()}


def _to_nxe_array(value: np.ndarray) -> np.ndarray:
    """A model input as nxe takes it: bf16 as its np.uint16 bits."""
    return value.view(np.uint16) if _BFLOAT16 is not None and value.dtype == _BFLOAT16 else value


def _from_nxe_array(value: np.ndarray, elem_type: int) -> np.ndarray:
    """An nxe result as ONNX types it: the bits of a bf16 output as ml_dtypes.bfloat16."""
    if elem_type == TensorProto.BFLOAT16 and _BFLOAT16 is not None and value.dtype == np.uint16:
        return value.view(_BFLOAT16)
    return value

# Ops evaluated at import only when asked to; their values differ run to run.
_NONDETERMINISTIC = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                     "Bernoulli", "Multinomial"}

MIN_OPSET = 7
MAX_RANK = 6

# Import-time bounds (each a keyword of load() and OnnxModel): the largest value folded at
# import, and how many compiled variants (and how many bytes of them) the cache keeps before
# evicting the least recently used.
DEFAULT_MAX_FOLD_BYTES = 64 << 20
DEFAULT_CACHE_ENTRIES = 32
DEFAULT_CACHE_BYTES = 1 << 30

_REDUCTIONS = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
               "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")

# Input positions that hold parameters (shapes, axes, sizes, scales) rather than data, per
# ONNX op type. A graph input used only at such positions is specialized: its value becomes
# part of the compile key, so the converters see it as known, as they would an initializer.
PARAMETER_INPUTS: dict[str, frozenset[int]] = {
    **{op: frozenset({1}) for op in _REDUCTIONS},
    "Reshape": frozenset({1}), "Slice": frozenset({1, 2, 3, 4}), "Squeeze": frozenset({1}),
    "Unsqueeze": frozenset({1}), "Split": frozenset({1}), "Tile": frozenset({1}),
    "Expand": frozenset({1}), "Pad": frozenset({1, 2, 3}), "TopK": frozenset({1}),
    "ConstantOfShape": frozenset({0}), "Range": frozenset({0, 1, 2}),
    "OneHot": frozenset({1, 2}), "Resize": frozenset({1, 2, 3}), "Upsample": frozenset({1}),
    "CumSum": frozenset({1}), "CumProd": frozenset({1}), "Trilu": frozenset({1}),
    "Clip": frozenset({1, 2}),
    "Dropout": frozenset({1, 2}), "QuantizeLinear": frozenset({1, 2}),
    "DequantizeLinear": frozenset({1, 2}), "QLinearConv": frozenset({1, 2, 4, 5, 6, 7}),
    "QLinearMatMul": frozenset({1, 2, 4, 5, 6, 7}), "ConvInteger": frozenset({2, 3}),
    "MatMulInteger": frozenset({2, 3}), "CenterCropPad": frozenset({1}),
    "Col2Im": frozenset({1, 2}), "NonMaxSuppression": frozenset({2, 3, 4}),
    "BlackmanWindow": frozenset({0}), "HannWindow": frozenset({0}),
    "HammingWindow": frozenset({0}), "DFT": frozenset({1, 2}), "STFT": frozenset({1, 2, 3}),
    "MelWeightMatrix": frozenset({0, 1, 2, 3, 4}), "If": frozenset({0}),
    "Loop": frozenset({0, 1}),
}


def onnx_type_name(elem_type: int) -> str:
    try:
        return TensorProto.DataType.Name(elem_type).lower()
    except ValueError:
        return f"type {elem_type}"


def _declared_dims(type_proto: onnx.TypeProto) -> list[int | str]:
    """The dims a tensor type declares: a fixed size, a symbolic name, or '?' for neither."""
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
            for d in type_proto.tensor_type.shape.dim]


def nxe_dtype_of(array: np.ndarray) -> str | None:
    """nxe dtype name of a numpy array's dtype, None when nxe has no such dtype."""
    return _NXE_BY_NUMPY.get(np.dtype(array.dtype))


def _node_label(node: onnx.NodeProto) -> str:
    domain = f"{node.domain}." if node.domain not in ("", "ai.onnx") else ""
    return f"{domain}{node.op_type} node {node.name or '(unnamed)'!r}"


class ConversionContext:
    """What a converter sees of the node it converts: its inputs as nxe tensors or known
    values, their static shapes and dtypes, attributes, and the graph being built."""

    def __init__(self, builder: _GraphBuilder, node: onnx.NodeProto) -> None:
        self._builder = builder
        self.node = node
        self.g: Graph = builder.graph
        self.opset: int = builder.opset

    def _name(self, index: int) -> str | None:
        if index < 0:
            index += len(self.node.input)
        if index < 0 or index >= len(self.node.input) or not self.node.input[index]:
            return None
        return self.node.input[index]

    @property
    def num_inputs(self) -> int:
        return len(self.node.input)

    def has_input(self, index: int) -> bool:
        return self._name(index) is not None

    def input(self, index: int) -> Tensor | None:
        """Input ``index`` as an nxe.Tensor (a constant when the value is known at import);
        None for an absent optional input."""
        name = self._name(index)
        return None if name is None else self._builder.tensor_of(name)

    def const(self, index: int) -> np.ndarray | None:
        """The value of input ``index`` when known at import, else None."""
        name = self._name(index)
        return None if name is None else self._builder.known.get(name)

    def shape(self, index: int) -> tuple[int, ...] | None:
        """Static shape of input ``index``; None for an absent input."""
        name = self._name(index)
        return None if name is None else self._builder.shape_of(name, self.node)

    def dtype(self, index: int) -> str | None:
        """nxe dtype name of input ``index``; None for an absent input."""
        name = self._name(index)
        return None if name is None else self._builder.dtype_of(name, self.node)

    def output_shape(self, index: int) -> tuple[int, ...] | None:
        """Static shape of output ``index`` from ONNX shape inference, None when unknown."""
        return self._builder.inferred_shape(self.node.output[index])

    def output_dtype(self, index: int) -> str | None:
        """nxe dtype name of output ``index`` from ONNX type inference, None when unknown."""
        return self._builder.inferred_dtype(self.node.output[index])

    @staticmethod
    def attr(node: onnx.NodeProto, name: str, default: Any = None) -> Any:
        """Attribute ``name`` as Python values (ints, floats, str, lists; tensors as numpy),
        or ``default`` when the node does not set it."""
        for attribute in node.attribute:
            if attribute.name == name:
                return _attribute_value(attribute)
        return default

    def constant(self, value: Any, dtype: Any = None) -> Tensor:
        """An nxe constant holding ``value``."""
        array = np.asarray(value) if dtype is None else np.asarray(value, dtype=dtype)
        if nxe_dtype_of(array) is None:
            raise self.unsupported(f"a constant of dtype {array.dtype} (nxe has no such dtype)")
        return self.g.constant(array)

    def unsupported(self, why: str) -> UnsupportedError:
        """The error to raise for an attribute or input combination nxe cannot run."""
        return UnsupportedError(f"unsupported: {_node_label(self.node)}: {why}")

    def invalid(self, why: str) -> InvalidGraphError:
        """The error to raise for a node the ONNX specification does not allow."""
        return _invalid(self.node, why)


def _missing_label(node: onnx.NodeProto) -> str:
    """A node without a converter, with why when its op runs only folded."""
    why = registry.fold_only_reason(node.op_type, node.domain)
    return _node_label(node) + (f" ({why})" if why else "")


def _invalid(node: onnx.NodeProto, why: str) -> InvalidGraphError:
    return InvalidGraphError(f"invalid model: {_node_label(node)}: {why}")


def _node_error(node: onnx.NodeProto, error: Exception) -> Error:
    """``error``, raised while importing ``node``, as an nxe.Error that names the node."""
    label = _node_label(node)
    if isinstance(error, Error):
        if isinstance(error, UnsupportedError) or label in str(error):
            return error
        # Library errors name nxe's op; the ONNX node they came from is added.
        return type(error)(f"{label}: {error}", error.status)
    if isinstance(error, MemoryError):
        return OutOfMemoryError(f"{label}: out of memory at import")
    # Anything else is a model the converters did not expect (an index, an attribute type or
    # a value out of range): reported as invalid, with what Python said.
    return _invalid(node, f"{type(error).__name__}: {error}")


def _attribute_value(attribute: onnx.AttributeProto) -> Any:
    value = helper.get_attribute_value(attribute)
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, list) and value:
        if isinstance(value[0], bytes):
            return [v.decode() for v in value]
        if isinstance(value[0], TensorProto):
            return [numpy_helper.to_array(v) for v in value]
    return value


def _type_of(type_proto: onnx.TypeProto) -> tuple[tuple[int, ...] | None, int]:
    """(static shape or None, ONNX element type or 0) of a tensor TypeProto."""
    if not type_proto.HasField("tensor_type"):
        return None, 0
    tensor_type = type_proto.tensor_type
    if not tensor_type.HasField("shape"):
        return None, tensor_type.elem_type
    dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim]
    shape = None if None in dims else tuple(int(d) for d in dims)
    return shape, tensor_type.elem_type


class _GraphBuilder:
    """Builds one nxe.Graph for one tuple of concrete input shapes and dtypes."""

    def __init__(self, model: OnnxModel, input_specs: dict[str, tuple[tuple[int, ...], str]]):
        self.model = model
        self.opset = model.opset
        self.graph = Graph(context=model.context)
        self.known: dict[str, np.ndarray] = {**model.initializers, **model.added_constants}
        self.tensors: dict[str, Tensor] = {}
        self.folded_nodes = 0
        self.converted_nodes = 0
        self._types: dict[str, tuple[tuple[int, ...] | None, int]] = {}
        self._model_types: dict[str, tuple[tuple[int, ...] | None, int]] | None = None
        self._input_specs = input_specs
        # Names the importer will give graph outputs stay free for them.
        self.graph._used_names.update(o.name for o in model.proto.graph.output)
        for name, (shape, dtype) in input_specs.items():
            if len(shape) > MAX_RANK:
                raise UnsupportedError(f"unsupported: model input {name!r} has rank "
                                       f"{len(shape)}; nxe tensors have rank <= {MAX_RANK}")
            self._types[name] = (shape, _ELEM_BY_NXE[dtype])

    # -- shapes and types -------------------------------------------------------------

    def _whole_model_types(self) -> dict[str, tuple[tuple[int, ...] | None, int]]:
        """Types from ONNX inference over the whole model with the concrete input shapes: the
        fallback for nodes per-node inference cannot handle (functions, other domains)."""
        if self._model_types is not None:
            return self._model_types
        proto = onnx.ModelProto()
        proto.CopyFrom(self.model.proto_without_data)
        for value_info in proto.graph.input:
            if value_info.name in self._input_specs:
                shape, _ = self._input_specs[value_info.name]
                dims = value_info.type.tensor_type.shape
                dims.Clear()
                for d in shape:
                    dims.dim.add().dim_value = d
        try:
            inferred = shape_inference.infer_shapes(proto, data_prop=True)
        except Exception:  # noqa: BLE001 - inference is a help; converters report gaps
            inferred = proto
        graph = inferred.graph
        self._model_types = {}
        for value_info in list(graph.value_info) + list(graph.output):
            self._model_types.setdefault(value_info.name, _type_of(value_info.type))
        return self._model_types

    def _type_proto(self, name: str) -> onnx.TypeProto | None:
        if name in self.known:
            array = self.known[name]
            if not isinstance(array, np.ndarray):
                return None
            try:
                elem = helper.np_dtype_to_tensor_dtype(array.dtype)
            except (KeyError, TypeError, ValueError):
                return None
            return helper.make_tensor_type_proto(elem, list(array.shape))
        if name in self._types:
            shape, elem = self._types[name]
            return helper.make_tensor_type_proto(elem, None if shape is None else list(shape))
        return None

    def _infer_node(self, node: onnx.NodeProto) -> None:
        """Records the output types of a node that is converted (not folded)."""
        types = self._node_output_types(node)
        fallback = None
        for name in node.output:
            if not name:
                continue
            shape, elem = types.get(name, (None, 0))
            if shape is None or not elem:
                fallback = fallback if fallback is not None else self._whole_model_types()
                f_shape, f_elem = fallback.get(name, (None, 0))
                shape = shape if shape is not None else f_shape
                elem = elem or f_elem
            self._types[name] = (shape, elem)

    def _node_output_types(self, node: onnx.NodeProto
                           ) -> dict[str, tuple[tuple[int, ...] | None, int]]:
        """Output types of ``node`` by ONNX inference from its inputs' types and known
        values; empty when inference cannot tell."""
        try:
            schema = onnx.defs.get_schema(node.op_type, self.model.opsets.get(node.domain, 1),
                                          node.domain)
            input_types, input_data = {}, {}
            for name in node.input:
                if not name:
                    continue
                proto = self._type_proto(name)
                if proto is None:
                    raise KeyError(name)
                input_types[name] = proto
                value = self.known.get(name)
                if isinstance(value, np.ndarray) and (value.size <= 4096
                                                      or value.dtype.kind in "iub"):
                    input_data[name] = numpy_helper.from_array(value, name)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                inferred = shape_inference.infer_node_outputs(
                    schema, node, input_types, input_data,
                    opset_imports=list(self.model.proto.opset_import))
            return {name: _type_of(t) for name, t in inferred.items()}
        except Exception:  # noqa: BLE001 - callers fall back when inference cannot tell
            return {}

    def _planned_fold_bytes(self, node: onnx.NodeProto) -> float | None:
        """Bytes the outputs of folding ``node`` would take, from shapes and parameters
        before anything is evaluated; None when that cannot be told beforehand."""
        if node.domain in ("", "ai.onnx") and node.op_type == "Range" and len(node.input) == 3:
            return _range_bytes(*(np.asarray(self.known[n]) for n in node.input))
        if node.domain in ("", "ai.onnx") and node.op_type == "ConstantOfShape":
            shape = np.asarray(self.known[node.input[0]]).reshape(-1) if node.input else \
                np.zeros(0, np.int64)
            value = ConversionContext.attr(node, "value")
            itemsize = np.asarray(value).itemsize if value is not None else 4
            if shape.dtype.kind not in "iu" or np.any(shape < 0):
                return None  # the evaluator reports the invalid shape
            return float(math.prod(int(d) for d in shape) * itemsize)
        total = 0.0
        types = self._node_output_types(node)
        for name in node.output:
            shape, elem = types.get(name, (None, 0)) if name else ((), 0)
            if not name:
                continue
            if shape is None or elem not in _ONNX_TYPES or any(d < 0 for d in shape):
                return None
            total += math.prod(shape) * _ONNX_TYPES[elem][0].itemsize
        return total

    def inferred_shape(self, name: str) -> tuple[int, ...] | None:
        if name in self.known:
            return tuple(np.shape(self.known[name]))
        return self._types.get(name, (None, 0))[0]

    def inferred_dtype(self, name: str) -> str | None:
        if name in self.known:
            return nxe_dtype_of(np.asarray(self.known[name]))
        elem = self._types.get(name, (None, 0))[1]
        return _ONNX_TYPES[elem][1] if elem in _ONNX_TYPES else None

    def shape_of(self, name: str, node: onnx.NodeProto | None = None) -> tuple[int, ...]:
        if name in self.known:
            return tuple(self.known[name].shape)
        if name in self._input_specs:
            return tuple(self._input_specs[name][0])
        shape = self.inferred_shape(name)
        if shape is None:
            where = f"{_node_label(node)}: " if node is not None else ""
            raise UnsupportedError(f"unsupported: {where}the shape of {name!r} is not static "
                                   "after ONNX shape inference")
        return shape

    def dtype_of(self, name: str, node: onnx.NodeProto | None = None) -> str:
        if name in self.known:
            dtype = nxe_dtype_of(self.known[name])
            if dtype is None:
                raise UnsupportedError(f"unsupported: {_node_label(node)}: input {name!r} has "
                                       f"dtype {self.known[name].dtype}, which nxe does not have")
            return dtype
        if name in self._input_specs:
            return self._input_specs[name][1]
        elem = self._types.get(name, (None, 0))[1]
        if elem in _ONNX_TYPES:
            return _ONNX_TYPES[elem][1]
        where = f"{_node_label(node)}: " if node is not None else ""
        if elem:
            raise UnsupportedError(f"unsupported: {where}{name!r} has ONNX type "
                                   f"{onnx_type_name(elem)}, which nxe does not have")
        tensor = self.tensors.get(name)
        if tensor is not None and tensor.dtype is not None:
            return tensor.dtype
        raise UnsupportedError(f"unsupported: {where}the dtype of {name!r} is unknown after "
                               "ONNX type inference")

    # -- values -----------------------------------------------------------------------

    def tensor_of(self, name: str) -> Tensor:
        tensor = self.tensors.get(name)
        if tensor is not None:
            return tensor
        if name in self._input_specs and name not in self.known:
            # Graph inputs exist only once used: nxe rejects inputs no op consumes.
            shape, dtype = self._input_specs[name]
            tensor = self.graph.input(name, shape, dtype)
            self.tensors[name] = tensor
            return tensor
        if name in self.known:
            array = np.array(self.known[name], order="C")
            if nxe_dtype_of(array) is None:
                raise UnsupportedError(f"unsupported: value {name!r} has dtype {array.dtype}, "
                                       "which nxe does not have")
            tensor = self.graph.constant(array)
            self.tensors[name] = tensor
            return tensor
        raise UnsupportedError(f"unsupported: no value for {name!r} (an input of a node that "
                               "could not be converted, or a name the graph never defines)")

    def plan(self, nodes: Sequence[onnx.NodeProto] | None = None) -> None:
        """Raises one UnsupportedError naming every node that would need a missing converter.
        An If node's taken branch is planned when it is inlined (see _inline_if)."""
        nodes = self.model.nodes if nodes is None else nodes
        known_names = set(self.known)
        missing = []
        for node in nodes:
            if _is_if(node) or _is_unrolled(node):
                continue
            if _foldable(node, known_names):
                known_names.update(o for o in node.output if o)
            elif _converter_for(node, self.model.context) is None:
                missing.append(node)
        if missing:
            listed = "; ".join(_missing_label(n) for n in missing)
            raise UnsupportedError(f"unsupported: {len(missing)} ONNX node(s) have no nxe "
                                   f"converter: {listed}")

    def build(self, nodes: Sequence[onnx.NodeProto] | None = None) -> None:
        top_level = nodes is None
        nodes = self.model.nodes if nodes is None else nodes
        self.plan(nodes)
        # The nodes of an attention pattern (attention_fusion.py) wait for its last MatMul,
        # which emits them fused or, when a check fails, builds them one by one.
        patterns = self.model.attention_patterns if top_level else {}
        held = {id(member) for pattern in patterns.values() for member in pattern.members}
        known_names = set(self.known)
        for node in nodes:
            if id(node) in held:
                continue
            pattern = patterns.get(id(node))
            if pattern is not None and self._guarded(
                    node, lambda pattern=pattern: attention_fusion.fuse(self, pattern)):
                self.converted_nodes += 1
                continue
            for each in (pattern.members if pattern is not None else []) + [node]:
                self._guarded(each, lambda each=each: self._build_node(each, known_names))
                known_names.update(o for o in each.output if o and o in self.known)

    @staticmethod
    def _guarded(node: onnx.NodeProto, build: Callable[[], Any]) -> Any:
        """build(), its failures as nxe errors naming ``node``."""
        try:
            return build()
        except Exception as error:  # noqa: BLE001 - every failure becomes an nxe.Error
            translated = _node_error(node, error)
            if translated is error:
                raise
            raise translated from error

    def record_type(self, name: str, shape: tuple[int, ...], elem_type: int) -> None:
        """The type of a value an op built outside the node converters produces."""
        self._types[name] = (shape, elem_type)

    def _build_node(self, node: onnx.NodeProto, known_names: set[str]) -> None:
        if _is_if(node):
            self._inline_if(node)
        elif _is_unrolled(node):
            self._unroll(node)
        elif _foldable(node, known_names):
            values = self._fold(node)
            for name, value in zip(node.output, values):
                if name:
                    self.known[name] = value
            self.folded_nodes += 1
        else:
            self._infer_node(node)
            self._convert(node)
            self.converted_nodes += 1

    def _inline_if(self, node: onnx.NodeProto) -> None:
        """An If whose condition is known at import (an initializer, a folded value, or a
        specialized graph input) is replaced by its taken branch: the branch's nodes are
        built in place (they read the outer scope's values directly; ONNX forbids a subgraph
        to shadow outer names) and its outputs become the If's outputs."""
        condition = self.known.get(node.input[0]) if node.input else None
        if condition is None:
            raise UnsupportedError(f"unsupported: {_node_label(node)}: the condition is only "
                                   "known at run time (nxe inlines an If whose condition is "
                                   "known at import)")
        flat = np.asarray(condition).reshape(-1)
        if flat.size != 1:
            raise UnsupportedError(f"unsupported: {_node_label(node)}: a condition of "
                                   f"{flat.size} elements")
        branch_name = "then_branch" if bool(flat[0]) else "else_branch"
        branch = next((a.g for a in node.attribute if a.name == branch_name), None)
        if branch is None:
            raise _invalid(node, f"no {branch_name} graph")
        for tensor in branch.initializer:
            self.known[tensor.name] = numpy_helper.to_array(tensor)
        for sparse in branch.sparse_initializer:
            self.known[sparse.values.name] = _sparse_to_dense(sparse)
        self.build(branch.node)
        if len(branch.output) != len(node.output):
            raise UnsupportedError(f"unsupported: {_node_label(node)}: the {branch_name} has "
                                   f"{len(branch.output)} outputs for {len(node.output)}")
        for name, source in zip(node.output, branch.output):
            if not name:
                continue
            if source.name in self.known:
                self.known[name] = self.known[source.name]
            else:
                self.tensors[name] = self.tensor_of(source.name)
                if source.name in self._types:
                    self._types[name] = self._types[source.name]
                elif source.name in self._input_specs:
                    shape, dtype = self._input_specs[source.name]
                    self._types[name] = (shape, _ELEM_BY_NXE[dtype])

    # -- Scan and Loop, unrolled ------------------------------------------------------

    def _alias(self, name: str, source: str) -> None:
        """Makes ``name`` another name of the value ``source`` (known or a tensor)."""
        if not name:
            return
        if source in self.known:
            self.known[name] = self.known[source]
            return
        self.tensors[name] = self.tensor_of(source)
        if source in self._types:
            self._types[name] = self._types[source]
        elif source in self._input_specs:
            shape, dtype = self._input_specs[source]
            self._types[name] = (shape, _ELEM_BY_NXE[dtype])

    def _emit(self, op_type: str, inputs: list[str], output: str, label: str,
              **attributes: Any) -> None:
        """Builds one helper ONNX node (folded or converted like any other)."""
        self.build([helper.make_node(op_type, inputs, [output], name=label, **attributes)])

    def _emit_constant(self, value: np.ndarray, prefix: str) -> str:
        name = f"{prefix}/const{len(self.known)}"
        while name in self.known or name in self.tensors:
            name += "_"
        self.known[name] = value
        return name

    def _emit_take(self, source: str, index: int, axis: int, output: str, label: str) -> None:
        """``output`` = ``source`` at ``index`` along ``axis``, that axis removed (a Gather of
        one index keeping the axis, then a Reshape: 0-d constants are avoided)."""
        shape = self.shape_of(source)
        position = self._emit_constant(np.array([index], dtype=np.int64), output)
        taken = f"{output}/taken"
        self._emit("Gather", [source, position], taken, label, axis=axis)
        target = np.array(shape[:axis] + shape[axis + 1:], dtype=np.int64)
        self._emit("Reshape", [taken, self._emit_constant(target, output)], output, label)

    def _emit_stack(self, items: list[str], axis: int, output: str, label: str,
                    node: onnx.NodeProto) -> None:
        """``output`` = ``items`` stacked along a new ``axis`` (negative counts from the end of
        the stacked rank)."""
        shape = self.shape_of(items[0], node)
        rank = len(shape) + 1
        if not -rank <= axis < rank:
            raise UnsupportedError(f"unsupported: {_node_label(node)}: output axis {axis} is "
                                   f"out of range for rank {rank}")
        axis %= rank
        target = np.array(shape[:axis] + (1,) + shape[axis:], dtype=np.int64)
        target_name = self._emit_constant(target, output)
        parts = []
        for index, item in enumerate(items):
            part = f"{output}/part{index}"
            self._emit("Reshape", [item, target_name], part, label)
            parts.append(part)
        self._emit("Concat", parts, output, label, axis=axis)

    def _body_instance(self, body: onnx.GraphProto, prefix: str) -> onnx.GraphProto:
        """A copy of ``body`` whose own names (inputs, initializers, node outputs, nested
        subgraphs' names) carry ``prefix``; outer-scope names stay, so one body can be built
        once per iteration in the enclosing graph."""
        instance = onnx.GraphProto()
        instance.CopyFrom(body)
        mapping = {name: f"{prefix}/{name}" for name in _graph_local_names(instance)}
        _rename_graph(instance, mapping)
        for tensor in instance.initializer:
            self.known[tensor.name] = numpy_helper.to_array(tensor)
        for sparse in instance.sparse_initializer:
            self.known[sparse.values.name] = _sparse_to_dense(sparse)
        return instance

    def _unroll(self, node: onnx.NodeProto) -> None:
        self._unroll_count = getattr(self, "_unroll_count", 0) + 1
        prefix = f"{node.op_type.lower()}{self._unroll_count}"
        body = next((a.g for a in node.attribute if a.name == "body"), None)
        if body is None:
            raise UnsupportedError(f"unsupported: {_node_label(node)}: no body graph")
        if node.op_type == "Loop":
            self._unroll_loop(node, body, prefix)
        elif self.model.opsets.get("", self.opset) < 9:
            self._unroll_scan8(node, body, prefix)
        else:
            self._unroll_scan(node, body, prefix)

    def _unroll_scan(self, node: onnx.NodeProto, body: onnx.GraphProto, prefix: str) -> None:
        """Scan (opset 9+) with a static sequence length: the body is built once per step."""
        count = int(ConversionContext.attr(node, "num_scan_inputs"))
        inputs = list(node.input)
        states, scans = inputs[:len(inputs) - count], inputs[len(inputs) - count:]
        in_axes = list(ConversionContext.attr(node, "scan_input_axes", [0] * count))
        in_dirs = list(ConversionContext.attr(node, "scan_input_directions", [0] * count))
        n_out = len(body.output) - len(states)
        out_axes = list(ConversionContext.attr(node, "scan_output_axes", [0] * n_out))
        out_dirs = list(ConversionContext.attr(node, "scan_output_directions", [0] * n_out))
        self._scan_core(node, body, prefix, states, scans, in_axes, in_dirs, out_axes,
                        out_dirs, list(node.output))

    def _unroll_scan8(self, node: onnx.NodeProto, body: onnx.GraphProto, prefix: str) -> None:
        """Scan-8: axis 0 of every input and output is a batch axis, the sequence axis is 1;
        each batch element is scanned on its own and the results stacked."""
        count = int(ConversionContext.attr(node, "num_scan_inputs"))
        inputs = list(node.input)
        lengths = inputs[0] if inputs else ""
        states, scans = inputs[1:len(inputs) - count], inputs[len(inputs) - count:]
        in_dirs = list(ConversionContext.attr(node, "directions", [0] * count))
        batch = self.shape_of((states + scans)[0], node)[0]
        steps = self.shape_of(scans[0], node)[1] if scans else 0
        if lengths:
            given = self.known.get(lengths)
            if given is None:
                raise UnsupportedError(f"unsupported: {_node_label(node)}: sequence_lens is "
                                       "only known at run time")
            if np.any(np.asarray(given) != steps):
                raise UnsupportedError(f"unsupported: {_node_label(node)}: sequence_lens "
                                       "shorter than the sequence axis")
        if batch == 0:
            raise UnsupportedError(f"unsupported: {_node_label(node)}: a batch of 0")
        n_out = len(body.output) - len(states)
        per_batch: list[list[str]] = []
        for b in range(batch):
            sliced = []
            for j, name in enumerate(states + scans):
                part = f"{prefix}/b{b}/in{j}"
                self._emit_take(name, b, 0, part, node.name)
                sliced.append(part)
            outputs = [f"{prefix}/b{b}/out{j}" if out else ""
                       for j, out in enumerate(node.output)]
            self._scan_core(node, body, f"{prefix}/b{b}", sliced[:len(states)],
                            sliced[len(states):], [0] * count, in_dirs, [0] * n_out,
                            [0] * n_out, outputs)
            per_batch.append(outputs)
        for j, name in enumerate(node.output):
            if name:
                self._emit_stack([outputs[j] for outputs in per_batch], 0, name, node.name,
                                 node)

    def _scan_core(self, node: onnx.NodeProto, body: onnx.GraphProto, prefix: str,
                   states: list[str], scans: list[str], in_axes: list[int],
                   in_dirs: list[int], out_axes: list[int], out_dirs: list[int],
                   outputs: list[str]) -> None:
        if len(body.input) != len(states) + len(scans):
            raise UnsupportedError(f"unsupported: {_node_label(node)}: the body has "
                                   f"{len(body.input)} inputs for {len(states)} states and "
                                   f"{len(scans)} scan inputs")
        if not scans:
            raise UnsupportedError(f"unsupported: {_node_label(node)}: no scan inputs")
        steps = None
        axes = []
        for name, axis in zip(scans, in_axes):
            shape = self.shape_of(name, node)
            if not -len(shape) <= axis < len(shape):
                raise UnsupportedError(f"unsupported: {_node_label(node)}: scan input axis "
                                       f"{axis} is out of range for {name!r} of rank "
                                       f"{len(shape)}")
            axis %= len(shape)
            axes.append(axis)
            if steps is not None and shape[axis] != steps:
                raise UnsupportedError(f"unsupported: {_node_label(node)}: scan inputs have "
                                       f"sequence lengths {steps} and {shape[axis]}")
            steps = shape[axis]
        if not steps:
            raise UnsupportedError(f"unsupported: {_node_label(node)}: a sequence of length 0")
        current = list(states)
        n_states = len(states)
        collected: list[list[str]] = [[] for _ in range(len(body.output) - n_states)]
        for step in range(steps):
            instance = self._body_instance(body, f"{prefix}/it{step}")
            for i, source in enumerate(current):
                self._alias(instance.input[i].name, source)
            for j, name in enumerate(scans):
                index = step if not in_dirs[j] else steps - 1 - step
                self._emit_take(name, index, axes[j], instance.input[n_states + j].name,
                                node.name)
            self.build(instance.node)
            current = [o.name for o in instance.output[:n_states]]
            for j, output in enumerate(instance.output[n_states:]):
                collected[j].append(output.name)
        for name, source in zip(outputs[:n_states], current):
            self._alias(name, source)
        for j, name in enumerate(outputs[n_states:]):
            if not name:
                continue
            items = collected[j][::-1] if out_dirs[j] else collected[j]
            self._emit_stack(items, int(out_axes[j]), name, node.name, node)

    def _unroll_loop(self, node: onnx.NodeProto, body: onnx.GraphProto, prefix: str) -> None:
        """Loop whose trip count and condition are known at import, and whose body's
        condition folds on every iteration: the body is built once per iteration."""
        inputs = list(node.input) + [""] * max(0, 2 - len(node.input))
        trip, condition = inputs[0], inputs[1]
        carried = inputs[2:]
        limit = None
        if trip:
            if trip not in self.known:
                raise UnsupportedError(f"unsupported: {_node_label(node)}: the trip count is "
                                       "only known at run time (nxe unrolls a Loop whose trip "
                                       "count and condition are known at import)")
            limit = int(np.asarray(self.known[trip]).reshape(-1)[0])
        go = True
        if condition:
            if condition not in self.known:
                raise UnsupportedError(f"unsupported: {_node_label(node)}: the condition is "
                                       "only known at run time (nxe unrolls a Loop whose trip "
                                       "count and condition are known at import)")
            go = bool(np.asarray(self.known[condition]).reshape(-1)[0])
        if len(body.input) != 2 + len(carried) or len(body.output) < 1 + len(carried):
            raise UnsupportedError(f"unsupported: {_node_label(node)}: the body's inputs and "
                                   "outputs do not match the loop-carried values")
        current = list(carried)
        n_carried = len(carried)
        collected: list[list[str]] = [[] for _ in range(len(body.output) - 1 - n_carried)]
        body_size = max(1, len(_all_nodes(body)))
        max_steps = min(_MAX_UNROLLED_ITERATIONS, _MAX_UNROLLED_NODES // body_size)
        too_long = UnsupportedError(
            f"unsupported: {_node_label(node)}: more than {max_steps} iterations of a "
            f"{body_size}-node body (nxe unrolls at most {_MAX_UNROLLED_ITERATIONS} iterations "
            f"and {_MAX_UNROLLED_NODES} body nodes)")
        if go and limit is not None and limit > max_steps:
            raise too_long  # known before the first iteration is built
        step = 0
        while go and (limit is None or step < limit):
            if step >= max_steps:
                raise too_long
            instance = self._body_instance(body, f"{prefix}/it{step}")
            self.known[instance.input[0].name] = np.array(step, dtype=np.int64)
            self.known[instance.input[1].name] = np.array(go, dtype=np.bool_)
            for i, source in enumerate(current):
                self._alias(instance.input[2 + i].name, source)
            self.build(instance.node)
            cond_out = instance.output[0].name
            if cond_out not in self.known:
                raise UnsupportedError(f"unsupported: {_node_label(node)}: the body's "
                                       "condition is only known at run time (nxe unrolls a "
                                       "Loop whose condition folds on every iteration)")
            go = bool(np.asarray(self.known[cond_out]).reshape(-1)[0])
            current = [o.name for o in instance.output[1:1 + n_carried]]
            for j, output in enumerate(instance.output[1 + n_carried:]):
                collected[j].append(output.name)
            step += 1
        for name, source in zip(node.output[:n_carried], current):
            self._alias(name, source)
        for j, name in enumerate(node.output[n_carried:]):
            if not name:
                continue
            if not collected[j]:
                raise UnsupportedError(f"unsupported: {_node_label(node)}: scan output "
                                       f"{name!r} of a loop that runs 0 iterations")
            self._emit_stack(collected[j], 0, name, node.name, node)

    def _fold(self, node: onnx.NodeProto) -> list[np.ndarray]:
        if node.op_type == "Shape" and node.input[0] not in self.known:
            shape = np.array(self.shape_of(node.input[0], node), dtype=np.int64)
            start = ConversionContext.attr(node, "start", 0)
            end = ConversionContext.attr(node, "end", None)
            return [shape[start:end] if end is not None else shape[start:]]
        if node.op_type == "Size" and node.input[0] not in self.known:
            return [np.array(int(np.prod(self.shape_of(node.input[0], node))), dtype=np.int64)]
        limit = self.model.max_fold_bytes
        planned = self._planned_fold_bytes(node)
        if planned is not None and planned > limit:
            raise _fold_too_large(node, planned, limit)
        values = self.model.evaluate_node(node, self.known)
        produced = sum(v.nbytes for v in values if isinstance(v, np.ndarray))
        if produced > limit:
            raise _fold_too_large(node, produced, limit)
        return values

    def _convert(self, node: onnx.NodeProto) -> None:
        convert = _converter_for(node, self.model.context)
        results = convert(ConversionContext(self, node), node)
        if isinstance(results, (Tensor, np.ndarray)) or not isinstance(results, Sequence):
            results = [results]
        for index, name in enumerate(node.output):
            if not name:
                continue
            if index >= len(results) or results[index] is None:
                raise UnsupportedError(f"unsupported: {_node_label(node)}: output {index} "
                                       f"({name!r}) is not produced by the converter")
            value = results[index]
            if isinstance(value, Tensor):
                self.tensors[name] = value
            else:
                self.known[name] = np.asarray(value)


def _range_bytes(start: np.ndarray, limit: np.ndarray, delta: np.ndarray) -> float | None:
    """Bytes of Range(start, limit, delta): max(ceil((limit - start) / delta), 0) elements."""
    if not start.size == limit.size == delta.size == 1:
        return None  # the evaluator reports inputs that are not scalars
    first, last, step = (v.reshape(-1)[0].item() for v in (start, limit, delta))
    if step == 0:
        return None
    if start.dtype.kind in "iu":
        count = -(-(int(last) - int(first)) // int(step))
    else:
        count = (last - first) / step
        if math.isnan(count):
            return None
        count = math.ceil(count) if math.isfinite(count) else count
    return max(float(count), 0.0) * start.itemsize


def _fold_too_large(node: onnx.NodeProto, size: float, limit: int) -> OutOfMemoryError:
    size_text = f"{int(size)} bytes" if math.isfinite(size) else "unbounded size"
    return OutOfMemoryError(f"{_node_label(node)}: folding it at import would make "
                            f"{size_text}, over the limit of {limit} bytes (max_fold_bytes)")


class _Compiled:
    """One compiled nxe executable and how to assemble the ONNX outputs around it."""

    def __init__(self, executable: Executable | None, sources: list[tuple[str, str, Any]],
                 builder: _GraphBuilder) -> None:
        self.executable = executable
        self.sources = sources
        self.folded_nodes = builder.folded_nodes
        self.converted_nodes = builder.converted_nodes
        # What keeping this variant costs: its executable's memory and the folded outputs.
        self.nbytes = sum(np.asarray(detail).nbytes for _, source, detail in sources
                          if source == "value")
        if executable is not None:
            info = executable.memory_info()
            self.nbytes += info["arena_bytes"] + info["transient_bytes"] + \
                info["constant_bytes"]


class OnnxModel:
    """An ONNX model ready to run with nxe. Each distinct tuple of input shapes and dtypes is
    compiled once, on its first run, and cached; the cache keeps at most ``cache_entries``
    variants and ``cache_bytes`` of their memory, evicting the least recently used.
    ``max_fold_bytes`` bounds every value computed at import (a larger one is an
    OutOfMemoryError naming the node)."""

    def __init__(self, model: onnx.ModelProto, threads: int = 0, *,
                 max_fold_bytes: int = DEFAULT_MAX_FOLD_BYTES,
                 cache_entries: int = DEFAULT_CACHE_ENTRIES,
                 cache_bytes: int = DEFAULT_CACHE_BYTES, context: Any = None) -> None:
        if max_fold_bytes < 0 or cache_entries < 1 or cache_bytes < 0:
            raise ValueError("max_fold_bytes and cache_bytes must be >= 0, cache_entries >= 1")
        self.context = context  # nxe.Context: custom ops answering to (domain, op type)
        self.proto = model
        self.threads = threads
        self.max_fold_bytes = max_fold_bytes
        self.cache_entries = cache_entries
        self.cache_bytes = cache_bytes
        self.opset = self._check_opset(model)
        self._checked = False
        self.initializers: dict[str, np.ndarray] = {}
        for tensor in model.graph.initializer:
            self.initializers[tensor.name] = self._initializer(tensor.name, tensor.data_type,
                                                               tensor.dims, tensor)
        for sparse in model.graph.sparse_initializer:
            self.initializers[sparse.values.name] = self._initializer(
                sparse.values.name, sparse.values.data_type, sparse.dims, sparse)
        # What the graphs are built from: the model's nodes with its QDQ patterns rewritten
        # into quantized ops (see qdq.py), and the constants the rewrite adds.
        self.nodes, self.added_constants = qdq.fuse(model.graph, self.initializers)
        self.proto_without_data = _strip_initializer_data(model)
        self.input_names = [i.name for i in model.graph.input if i.name not in self.initializers]
        self.parameter_inputs = _parameter_inputs(model.graph, set(self.input_names))
        self.output_names = [o.name for o in model.graph.output]
        self.attention_patterns = attention_fusion.find(
            self.nodes, self.output_names, set(self.initializers) | set(self.added_constants))
        self._input_types = {i.name: i.type for i in model.graph.input}
        self._cache: OrderedDict[tuple[Any, ...], _Compiled] = OrderedDict()
        self._lock = threading.Lock()
        self._cached_bytes = 0
        self.opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version
                       for o in model.opset_import}
        if not model.opset_import and model.ir_version < 3:
            self.opsets[""] = 1

    def _initializer(self, name: str, elem_type: int, dims: Sequence[int],
                     proto: onnx.TensorProto | onnx.SparseTensorProto) -> np.ndarray:
        """An initializer's value, its declared size checked before anything is allocated."""
        if any(d < 0 for d in dims):
            raise InvalidGraphError(f"invalid model: initializer {name!r} has dims {list(dims)}")
        itemsize = _ONNX_TYPES[elem_type][0].itemsize if elem_type in _ONNX_TYPES else 1
        if isinstance(proto, onnx.SparseTensorProto) and \
                math.prod(dims) * itemsize > self.max_fold_bytes:
            raise OutOfMemoryError(f"sparse initializer {name!r} of dims {list(dims)} would "
                                   f"take over {self.max_fold_bytes} bytes (max_fold_bytes)")
        try:
            if isinstance(proto, onnx.SparseTensorProto):
                return _sparse_to_dense(proto)
            return numpy_helper.to_array(proto)
        except Exception as error:  # noqa: BLE001 - any malformed tensor is the same error
            raise InvalidGraphError(f"invalid model: initializer {name!r}: "
                                    f"{type(error).__name__}: {error}") from error

    @staticmethod
    def _check_opset(model: onnx.ModelProto) -> int:
        """The default-domain opset the converters see.

        ONNX rules: a model of IR version < 3 has no opset_import and means opset 1; a newer
        model that imports no default opset may only use other domains (its default opset is
        then irrelevant and reported as the newest). A model whose opset is older than
        MIN_OPSET is accepted when every default-domain node it has (subgraphs included) has
        the same definition at its opset as at MIN_OPSET (e.g. Not, unchanged since opset 1);
        it is then converted as an opset-MIN_OPSET model.
        """
        newest = onnx.defs.onnx_opset_version()
        versions = {o.domain or "": o.version for o in model.opset_import}
        if "" in versions or "ai.onnx" in versions:
            version = versions.get("", versions.get("ai.onnx"))
        elif not model.opset_import and model.ir_version < 3:
            version = 1
        else:
            default_nodes = [n for n in _all_nodes(model.graph) if n.domain in ("", "ai.onnx")]
            if default_nodes:
                listed = "; ".join(_node_label(n) for n in default_nodes)
                raise UnsupportedError("unsupported: the model imports no default ONNX opset "
                                       f"but has default-domain nodes: {listed}")
            return newest
        if version > newest:
            raise UnsupportedError(f"unsupported: ONNX opset {version}; nxe imports opsets "
                                   f"{MIN_OPSET} to {newest}")
        if version >= MIN_OPSET:
            return version
        changed = set()
        for node in _all_nodes(model.graph):
            if node.domain not in ("", "ai.onnx"):
                continue
            try:
                same = (onnx.defs.get_schema(node.op_type, version, "").since_version
                        == onnx.defs.get_schema(node.op_type, MIN_OPSET, "").since_version)
            except onnx.defs.SchemaError:
                same = False
            if not same:
                changed.add(node.op_type)
        if changed:
            raise UnsupportedError(f"unsupported: ONNX opset {version}; nxe imports opsets "
                                   f"{MIN_OPSET} to {newest}, and older models only when "
                                   f"their ops are unchanged since; changed: "
                                   f"{', '.join(sorted(changed))}")
        return MIN_OPSET

    # -- folding ----------------------------------------------------------------------

    def evaluate_node(self, node: onnx.NodeProto, known: dict[str, np.ndarray]) -> list[Any]:
        """Evaluates one node whose inputs are all known: with numpy where onnx's reference
        evaluator cannot (see folding.py), else with the reference evaluator."""
        from onnx.reference import ReferenceEvaluator

        numpy_evaluator = folding.evaluator_for(node, self.opsets.get("", self.opset))
        if numpy_evaluator is not None:
            return [np.asarray(v) for v in numpy_evaluator(
                node, [known[n] if n else None for n in node.input])]
        inputs = [i for i in node.input if i]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                # A bare node is evaluated at the newest opset whatever `opsets` says: wrap it
                # in a one-node model that imports the model's own opsets.
                graph = helper.make_graph(
                    [node], "fold",
                    [helper.make_empty_tensor_value_info(n) for n in dict.fromkeys(inputs)],
                    [helper.make_empty_tensor_value_info(o) for o in node.output if o])
                model = helper.make_model(
                    graph, opset_imports=[helper.make_opsetid(d, v)
                                          for d, v in self.opsets.items()],
                    functions=list(self.proto.functions))
                evaluator = ReferenceEvaluator(model)
                feeds = {name: known[name] for name in inputs}
                values = evaluator.run(None, feeds)
        except Exception as error:
            raise UnsupportedError(f"unsupported: {_node_label(node)} could not be evaluated "
                                   f"at import: {type(error).__name__}: {error}") from error
        return [np.asarray(v) if not isinstance(v, (list, dict)) else v for v in values]

    # -- running ----------------------------------------------------------------------

    def _feeds(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, np.ndarray]:
        if len(args) == 1 and isinstance(args[0], dict) and not kwargs:
            given = dict(args[0])
        else:
            if len(args) > len(self.input_names):
                raise InvalidArgumentError(f"the model takes {len(self.input_names)} inputs, "
                                           f"got {len(args)} positionally")
            given = dict(zip(self.input_names, args))
            given.update(kwargs)
        unknown = [n for n in given if n not in self.input_names and n not in self.initializers]
        if unknown:
            raise InvalidArgumentError(f"unknown model input(s) {unknown}; inputs are "
                                       f"{self.input_names}")
        missing = [n for n in self.input_names if n not in given]
        if missing:
            raise InvalidArgumentError(f"missing model input(s) {missing}")
        return {name: np.asarray(value) for name, value in given.items()}

    def input_spec(self, name: str, value: np.ndarray) -> tuple[tuple[int, ...], str]:
        """(shape, nxe dtype) of a fed input, checked against its declared type and dims."""
        dtype = nxe_dtype_of(value)
        declared = self._input_types.get(name)
        if declared is not None and declared.HasField("tensor_type"):
            elem = declared.tensor_type.elem_type
            if elem not in _ONNX_TYPES:
                raise UnsupportedError(f"unsupported: model input {name!r} has ONNX type "
                                       f"{onnx_type_name(elem)}, which nxe does not have")
            if _ONNX_TYPES[elem][0] != value.dtype:
                raise DtypeMismatchError(f"input {name!r}: dtype {value.dtype}, expected "
                                         f"{_ONNX_TYPES[elem][0]}")
            if declared.tensor_type.HasField("shape"):
                dims = declared.tensor_type.shape.dim
                if len(dims) != value.ndim:
                    wanted = ", ".join(str(d) for d in _declared_dims(declared))
                    raise ShapeMismatchError(f"input {name!r}: rank {value.ndim}, expected "
                                             f"{len(dims)} ([{wanted}])")
                for axis, (d, n) in enumerate(zip(dims, value.shape)):
                    if d.HasField("dim_value") and d.dim_value != n:
                        raise ShapeMismatchError(f"input {name!r}: dimension {axis} is {n}, "
                                                 f"expected {d.dim_value}")
        elif declared is not None:
            raise UnsupportedError(f"unsupported: model input {name!r} is not a tensor")
        if dtype is None:
            raise UnsupportedError(f"unsupported: model input {name!r} has dtype {value.dtype}, "
                                   "which nxe does not have")
        return tuple(int(d) for d in value.shape), dtype

    def check(self) -> None:
        """Refuses, once, a model onnxruntime refuses as invalid (see _check_model), and the
        node forms onnx's shape inference cannot survive: an InvalidGraphError."""
        if not self._checked:
            _check_model(self.proto)
            self._checked = True

    def compile_for(self, feeds: dict[str, np.ndarray]) -> _Compiled:
        """The compiled executable for the shapes and dtypes of ``feeds`` (cached); inputs
        that only carry parameters (see PARAMETER_INPUTS) add their values to the key."""
        specs = {name: self.input_spec(name, value) for name, value in feeds.items()}
        parameters = {name: np.array(value) for name, value in feeds.items()
                      if name in self.parameter_inputs}
        for name in parameters:
            del specs[name]
        key = (tuple(sorted(specs.items())),
               tuple((n, v.dtype.str, v.shape, v.tobytes()) for n, v in
                     sorted(parameters.items())))
        # One thread at a time reads and fills the cache; runs go on outside the lock.
        with self._lock:
            return self._cached_compile(key, specs, parameters)

    def _cached_compile(self, key: tuple[Any, ...],
                        specs: dict[str, tuple[tuple[int, ...], str]],
                        parameters: dict[str, np.ndarray]) -> _Compiled:
        compiled = self._cache.get(key)
        if compiled is not None:
            self._cache.move_to_end(key)
            return compiled
        # Checked on first compile, not at load: unsupported_nodes() lists what a model needs
        # even when onnx's checker would refuse it (an op no opset defines).
        self.check()
        compiled = self._compile(specs, parameters)
        self._cache[key] = compiled
        self._cached_bytes += compiled.nbytes
        # The newest variant stays even when it alone is over the byte bound: it is in use.
        while len(self._cache) > 1 and (len(self._cache) > self.cache_entries
                                        or self._cached_bytes > self.cache_bytes):
            _, evicted = self._cache.popitem(last=False)
            self._cached_bytes -= evicted.nbytes
        return compiled

    def _compile(self, specs: dict[str, tuple[tuple[int, ...], str]],
                 parameters: dict[str, np.ndarray]) -> _Compiled:
        graph, sources, builder = self._build_graph(specs, parameters)
        marked = any(source == "output" for _, source, _ in sources)
        executable = graph.compile(threads=self.threads) if marked else None
        graph.close()
        return _Compiled(executable, sources, builder)

    def _build_graph(self, specs: dict[str, tuple[tuple[int, ...], str]],
                     parameters: dict[str, np.ndarray]
                     ) -> tuple[Graph, list[tuple[str, str, Any]], _GraphBuilder]:
        """The nxe graph of the model for these input shapes, and where each ONNX output comes
        from: ("output", graph output name), ("feed", input name) or ("value", array)."""
        # An initializer fed by the caller is a runtime input (IR < 4 lets inputs override).
        overridden = [n for n in specs if n in self.initializers]
        builder = _GraphBuilder(self, specs)
        for name in overridden:
            del builder.known[name]
        builder.known.update(parameters)
        builder.build()
        graph = builder.graph
        sources: list[tuple[str, str, Any]] = []
        marked: dict[Tensor, str] = {}
        for name in self.output_names:
            output_type = next(o.type for o in self.proto.graph.output if o.name == name)
            if not output_type.HasField("tensor_type"):
                raise UnsupportedError(f"unsupported: model output {name!r} is not a tensor")
            expected = output_type.tensor_type.elem_type
            if name in builder.known:
                value = builder.known[name]
                if expected in _ONNX_TYPES:
                    value = np.asarray(value).astype(_ONNX_TYPES[expected][0], copy=False)
                sources.append((name, "value", np.asarray(value)))
                continue
            if expected not in _ONNX_TYPES and expected != 0:
                raise UnsupportedError(f"unsupported: model output {name!r} has ONNX type "
                                       f"{onnx_type_name(expected)}, which nxe does not have")
            if name in specs:
                sources.append((name, "feed", name))
                continue
            tensor = builder.tensors.get(name)
            if tensor is None:
                raise UnsupportedError(f"unsupported: model output {name!r} is never produced")
            kind = tensor.kind
            if kind == "input":
                sources.append((name, "feed", tensor.name))
            elif kind == "constant":
                raise UnsupportedError(f"unsupported: model output {name!r} is a constant the "
                                       "importer cannot read back")
            elif tensor in marked:
                sources.append((name, "output", marked[tensor]))
            else:
                graph.mark_output(tensor, name)
                marked[tensor] = name
                sources.append((name, "output", name))
        return graph, sources, builder

    def save_model(self, path: str | os.PathLike[str], inputs: dict[str, Any],
                   metadata: dict[str, Any] | None = None) -> bytes:
        """Writes the model, specialized to the shapes and dtypes of ``inputs`` (example
        arrays, whose values are not used), as an nxe model file (.nxm) that nxe's executor
        and engine run without onnx; returns the file's bytes. ``metadata`` is merged into the
        file's metadata, which records ``"source": "onnx"`` and the ONNX producer. An output
        the importer computes at import or passes through from an input, and an input that
        only carries parameters (see parameter_inputs), cannot be expressed in the file:
        UnsupportedError naming it."""
        from ..model import save_model

        self.check()
        feeds = self._feeds((inputs,), {})
        specs = {name: self.input_spec(name, value) for name, value in feeds.items()}
        fixed = sorted(set(specs) & self.parameter_inputs)
        if fixed:
            raise UnsupportedError(f"unsupported: input(s) {fixed} only carry parameters the "
                                   "importer folds; a model file cannot take them at run time")
        graph, sources, _ = self._build_graph(specs, {})
        try:
            for name, source, _ in sources:
                if source != "output":
                    what = "computed at import" if source == "value" else "an input passed on"
                    raise UnsupportedError(f"unsupported: model output {name!r} is {what}; a "
                                           "model file holds only what the graph computes")
            described = {"source": "onnx", "producer": self.proto.producer_name,
                         "kind": "tensor", **(metadata or {})}
            return save_model(graph, path, metadata=described)
        finally:
            graph.close()

    def run(self, *args: Any, **kwargs: Any) -> dict[str, np.ndarray]:
        """Runs the model: inputs as one dict {name: array}, positionally in graph-input
        order, or as keywords. Returns {output name: array} in graph-output order."""
        return self._run(self._feeds(args, kwargs), nocopy=False)

    __call__ = run

    def run_nocopy(self, feeds: dict[str, Any]) -> dict[str, np.ndarray]:
        """Runs like ``run`` on a dict of every input, but each output the compiled graph
        computes is a view into the executable's result buffer (see Executable.run_nocopy),
        valid until this thread's next run of the same input shapes; outputs folded at import
        or passed through from an input are copies."""
        return self._run(self._feeds((feeds,), {}), nocopy=True)

    def _run(self, feeds: dict[str, np.ndarray], nocopy: bool) -> dict[str, np.ndarray]:
        compiled = self.compile_for(feeds)
        results: dict[str, np.ndarray] = {}
        if compiled.executable is not None:
            names = [spec[0] for spec in compiled.executable.inputs if spec[0] in feeds]
            run = compiled.executable.run_nocopy if nocopy else compiled.executable.run
            results = run({n: _to_nxe_array(feeds[n]) for n in names})
        elem_types = {o.name: o.type.tensor_type.elem_type for o in self.proto.graph.output}
        outputs = {}
        for name, source, detail in compiled.sources:
            if source == "value":
                outputs[name] = detail.copy()
            elif source == "feed":
                outputs[name] = np.array(feeds[detail])
            else:
                outputs[name] = _from_nxe_array(results[detail], elem_types.get(name, 0))
        return outputs

    @property
    def compiled_count(self) -> int:
        """How many compiled input-shape variants the cache holds."""
        return len(self._cache)

    def unsupported_nodes(self) -> list[tuple[str, str]]:
        """(op type, node name) of every node the importer cannot run: one that is not folded
        at import and has no converter (a fold-only op among them), an If whose condition or
        a Loop whose trip count or condition is only known at run time; the bodies of If,
        Loop and Scan are looked into. Decided as the importer decides what folds: from the
        initializers, the specialized inputs (see parameter_inputs), Constant nodes and
        Shape/Size, whatever the input shapes."""
        known = set(self.initializers) | set(self.parameter_inputs)
        result: list[tuple[str, str]] = []
        _unsupported_in(self.proto.graph, known, result, self.context)
        return result


def _foldable(node: onnx.NodeProto, known_names: set[str]) -> bool:
    """Whether the importer evaluates ``node`` at import, given the names known then."""
    if node.op_type in _NONDETERMINISTIC and node.domain in ("", "ai.onnx"):
        return False
    inputs = [i for i in node.input if i]
    if all(i in known_names for i in inputs):
        return True
    # Shapes are concrete (one compile per input shape), so Shape and Size always fold.
    return node.op_type in _SHAPE_ONLY and node.domain in ("", "ai.onnx")


def _custom_output_types(ctx: ConversionContext, name: str, attrs: dict[str, Any]
                         ) -> list[tuple[tuple[int, ...], str]]:
    """(shape, dtype) of each output of custom op ``name`` on the node's inputs, from the op's
    shape rule run on a graph of that op alone."""
    probe = Graph(context=ctx.g._context)
    inputs: list[Tensor | None] = []
    for i in range(ctx.num_inputs):
        if not ctx.has_input(i):
            inputs.append(None)
        elif ctx.const(i) is not None:
            inputs.append(probe.constant(np.array(ctx.const(i), order="C")))
        else:
            inputs.append(probe.input(f"input{i}", ctx.shape(i), ctx.dtype(i)))
    outputs = probe.op(name, inputs, num_outputs=len(ctx.node.output), **attrs)
    for index, tensor in enumerate(outputs):
        probe.mark_output(tensor, f"output{index}")
    size = ffi.new("size_t *")
    check(lib.nxe_graph_compile_to_binary(probe._handle, ffi.NULL, ffi.NULL, size))
    types = [(tuple(t.shape), t.dtype) for t in outputs]
    probe.close()
    return types


def _converter_for(node: onnx.NodeProto, context: Any) -> Any:
    """The converter of a node: a built-in one, else one for the custom op of ``context`` (or
    of nxe.default_context()) that answers to the node's (domain, op type); None if neither."""
    convert = registry.find(node.op_type, node.domain)
    if convert is not None:
        return convert
    context = context if context is not None else custom_ops._DEFAULT
    name = context.onnx_op(node.domain, node.op_type) if context is not None else None
    if name is None:
        return None

    def convert_custom(ctx: ConversionContext, node: onnx.NodeProto) -> list[Tensor]:
        inputs = [ctx.input(i) for i in range(ctx.num_inputs)]
        attrs = {a.name: _attribute_value(a) for a in node.attribute}
        outputs = ctx.g.op(name, inputs, num_outputs=len(node.output), **attrs)
        # ONNX inference knows nothing of the op: its own shape rule types its outputs, for
        # the converters of the nodes that read them.
        for output, (shape, dtype) in zip(node.output, _custom_output_types(ctx, name, attrs)):
            if output and dtype in _ELEM_BY_NXE:
                ctx._builder._types[output] = (shape, _ELEM_BY_NXE[dtype])
        return outputs

    return convert_custom


def _unsupported_in(graph: onnx.GraphProto, known: set[str],
                    result: list[tuple[str, str]], context: Any = None) -> None:
    """Appends to ``result`` the nodes of ``graph`` the importer cannot run (see
    OnnxModel.unsupported_nodes), adding to ``known`` the names that fold."""
    for node in graph.node:
        inputs = [i for i in node.input if i]
        outputs = [o for o in node.output if o]
        body_known = set(known)
        if _is_if(node):
            if not inputs or inputs[0] not in known:
                result.append(_op_and_name(node))
            # The branch taken depends on the condition's value: both are looked into.
            branches_known = []
            for attribute in node.attribute:
                if attribute.name in ("then_branch", "else_branch"):
                    inner = _with_initializers(attribute.g, body_known)
                    _unsupported_in(attribute.g, inner, result, context)
                    branches_known.append({o.name for o in attribute.g.output} <= inner)
            if branches_known and all(branches_known):
                known.update(outputs)
        elif _is_unrolled(node):
            body = next((a.g for a in node.attribute if a.name == "body"), None)
            if node.op_type == "Loop":
                padded = list(node.input) + [""] * max(0, 2 - len(node.input))
                if any(name and name not in known for name in padded[:2]):
                    result.append(_op_and_name(node))
                # The iteration number and condition are known in every iteration; a
                # loop-carried value is known where its initial value is.
                sources = [None, None] + padded[2:]
            else:
                sources = [i if all(n in known for n in inputs) else "" for i in inputs]
            if body is None:
                continue
            inner = _with_initializers(body, body_known)
            for index, body_input in enumerate(body.input):
                source = sources[index] if index < len(sources) else ""
                if source is None or (source and source in known):
                    inner.add(body_input.name)
            _unsupported_in(body, inner, result, context)
            if {o.name for o in body.output} <= inner:
                known.update(outputs)
        elif _foldable(node, known):
            known.update(outputs)
        elif _converter_for(node, context) is None:
            result.append(_op_and_name(node))


def _with_initializers(graph: onnx.GraphProto, known: set[str]) -> set[str]:
    """``known`` and the initializers of subgraph ``graph``, as a new set."""
    inner = set(known)
    inner.update(t.name for t in graph.initializer)
    inner.update(s.values.name for s in graph.sparse_initializer)
    return inner


def _op_and_name(node: onnx.NodeProto) -> tuple[str, str]:
    op = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
    return op, node.name


def _is_if(node: onnx.NodeProto) -> bool:
    return node.op_type == "If" and node.domain in ("", "ai.onnx")


def _is_unrolled(node: onnx.NodeProto) -> bool:
    """Scan and Loop, which the importer unrolls (see _GraphBuilder._unroll)."""
    return node.op_type in ("Scan", "Loop") and node.domain in ("", "ai.onnx")


# The most iterations the importer unrolls a Loop into, and the most body nodes (iterations
# times the body's size) it builds doing so: unrolling time grows with the second.
_MAX_UNROLLED_ITERATIONS = 4096
_MAX_UNROLLED_NODES = 1 << 14


def _graph_local_names(graph: onnx.GraphProto) -> set[str]:
    """Every name ``graph`` and its nested subgraphs define (inputs, initializers, node
    outputs); names they only read belong to an outer scope."""
    names = {i.name for i in graph.input}
    names.update(t.name for t in graph.initializer)
    names.update(s.values.name for s in graph.sparse_initializer)
    for node in graph.node:
        names.update(o for o in node.output if o)
        for attribute in node.attribute:
            subgraphs = ([attribute.g] if attribute.HasField("g") else []) + \
                list(attribute.graphs)
            for subgraph in subgraphs:
                names.update(_graph_local_names(subgraph))
    return names


def _rename_graph(graph: onnx.GraphProto, mapping: dict[str, str]) -> None:
    """Renames, in place, every use and definition of the names in ``mapping``."""
    for value in list(graph.input) + list(graph.output) + list(graph.value_info):
        value.name = mapping.get(value.name, value.name)
    for tensor in graph.initializer:
        tensor.name = mapping.get(tensor.name, tensor.name)
    for sparse in graph.sparse_initializer:
        sparse.values.name = mapping.get(sparse.values.name, sparse.values.name)
    for node in graph.node:
        node.input[:] = [mapping.get(n, n) if n else n for n in node.input]
        node.output[:] = [mapping.get(n, n) if n else n for n in node.output]
        for attribute in node.attribute:
            subgraphs = ([attribute.g] if attribute.HasField("g") else []) + \
                list(attribute.graphs)
            for subgraph in subgraphs:
                _rename_graph(subgraph, mapping)


def _all_nodes(graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    """Every node of ``graph`` and of its subgraphs, outer nodes first."""
    nodes = []
    for node in graph.node:
        nodes.append(node)
        for attribute in node.attribute:
            subgraphs = ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs)
            for subgraph in subgraphs:
                nodes.extend(_all_nodes(subgraph))
    return nodes


# Ops whose results depend only on their input's shape, which is part of every compile key.
_SHAPE_ONLY = frozenset({"Shape", "Size"})

_INTEGER_TYPES = {TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16, TensorProto.INT32,
                  TensorProto.INT64, TensorProto.BOOL}


def _parameter_inputs(graph: onnx.GraphProto, candidates: set[str]) -> frozenset[str]:
    """Graph inputs to specialize on (their values join the compile key).

    Any input every use of which is a parameter position of a top-level node; and integer and
    bool inputs whose value reaches a parameter position at all, through deterministic nodes
    (e.g. a target shape that Sub/Div/Concat turn into Pad's pads, or a window size that feeds
    Range and the window formula): such a value is needed at import anyway, since nxe compiles
    static shapes and takes parameters as attributes, and its other uses then fold.
    """
    uses: dict[str, list[tuple[int, int]]] = {}
    subgraph_reads: set[str] = set()
    for node_index, node in enumerate(graph.node):
        for index, name in enumerate(node.input):
            if name:
                uses.setdefault(name, []).append((node_index, index))
        for inner in _subgraph_nodes(node):
            subgraph_reads.update(inner.input)

    def is_parameter_use(node_index: int, index: int) -> bool:
        node = graph.node[node_index]
        return node.domain in ("", "ai.onnx") and \
            index in PARAMETER_INPUTS.get(node.op_type, frozenset())

    # Whether a value reaches a parameter position, decided from the last node backwards (a
    # node's results are decided before its inputs).
    reaches: dict[str, bool] = {}

    def use_reaches(node_index: int, index: int) -> bool:
        if is_parameter_use(node_index, index):
            return True
        node = graph.node[node_index]
        if node.domain not in ("", "ai.onnx") or node.op_type in _NONDETERMINISTIC or \
                _subgraph_nodes(node):
            return False
        if node.op_type in _SHAPE_ONLY:
            return False  # their results depend on the input's shape, never on its values
        return any(reaches.get(o, False) for o in node.output if o)

    for node in reversed(graph.node):
        for name in node.output:
            if name:
                reaches[name] = any(use_reaches(*u) for u in uses.get(name, []))
    elem_types = {i.name: i.type.tensor_type.elem_type for i in graph.input
                  if i.type.HasField("tensor_type")}
    result = set()
    for name in candidates:
        if name in subgraph_reads or not uses.get(name):
            continue
        if all(is_parameter_use(*u) for u in uses[name]) or (
                elem_types.get(name) in _INTEGER_TYPES
                and any(use_reaches(*u) for u in uses[name])):
            result.add(name)
    return frozenset(result)


def _subgraph_nodes(node: onnx.NodeProto) -> list[onnx.NodeProto]:
    """Every node of the subgraphs of ``node`` (If branches, Loop and Scan bodies)."""
    nodes = []
    for attribute in node.attribute:
        subgraphs = ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs)
        for subgraph in subgraphs:
            nodes.extend(_all_nodes(subgraph))
    return nodes


def _sparse_to_dense(sparse: onnx.SparseTensorProto) -> np.ndarray:
    values = numpy_helper.to_array(sparse.values)
    indices = numpy_helper.to_array(sparse.indices)
    dense = np.zeros(tuple(sparse.dims), dtype=values.dtype)
    if indices.ndim == 1:
        dense.reshape(-1)[indices] = values
    else:
        dense[tuple(indices.T)] = values
    return dense


def _strip_initializer_data(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of the model whose large float initializers are declared as typed graph inputs
    instead, so whole-model shape inference stays cheap; small and integer initializers, which
    shape computations read, keep their values."""
    stripped = onnx.ModelProto()
    stripped.CopyFrom(model)
    graph = stripped.graph
    declared = {i.name for i in graph.input}
    kept = []
    for tensor in graph.initializer:
        elements = int(np.prod(tensor.dims)) if tensor.dims else 1
        if elements <= 4096 or tensor.data_type in (TensorProto.INT64, TensorProto.INT32):
            kept.append(tensor)
        elif tensor.name not in declared:
            graph.input.append(helper.make_tensor_value_info(tensor.name, tensor.data_type,
                                                             list(tensor.dims)))
    del graph.initializer[:]
    graph.initializer.extend(kept)
    return stripped


def _declare_missing_shapes(graph: onnx.GraphProto) -> None:
    """Gives every tensor type of ``graph`` (and its subgraphs) without a shape an empty one:
    onnx's checker requires the field, onnxruntime does not, and the checker reads no dims."""
    for value in list(graph.input) + list(graph.output) + list(graph.value_info):
        if value.type.HasField("tensor_type") and not value.type.tensor_type.HasField("shape"):
            value.type.tensor_type.shape.SetInParent()
    for node in graph.node:
        for attribute in node.attribute:
            subgraphs = ([attribute.g] if attribute.HasField("g") else []) + \
                list(attribute.graphs)
            for subgraph in subgraphs:
                _declare_missing_shapes(subgraph)


_PROTOBUF_LIMIT = (1 << 31) - 1


def _check_model(model: onnx.ModelProto) -> None:
    """Refuses what onnxruntime refuses as invalid, with onnx's checker: unknown or
    mistyped attributes, wrong input counts, malformed tensors, broken graph topology."""
    checked = onnx.ModelProto()
    checked.CopyFrom(model)
    _declare_missing_shapes(checked.graph)
    if checked.ByteSize() > _PROTOBUF_LIMIT:
        # The checker serializes the model; initializers are then checked as they are read.
        del checked.graph.initializer[:]
    try:
        onnx.checker.check_model(checked)
    except (onnx.checker.ValidationError, ValueError) as error:
        raise InvalidGraphError(f"invalid model: {error}".strip()) from error
    for node in _all_nodes(model.graph):
        _check_before_inference(node)


_EINSUM_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ,->. ")


def _check_before_inference(node: onnx.NodeProto) -> None:
    """Refuses what the checker lets through but onnx's shape inference, which the importer
    runs, aborts the process on."""
    # An axis is below any tensor's rank; past int32 onnx's inference truncates it and can
    # index out of bounds.
    for attribute in node.attribute:
        if attribute.name in ("axis", "axes"):
            values = [attribute.i] if attribute.type == onnx.AttributeProto.INT else \
                list(attribute.ints)
            if any(not -2**31 <= v < 2**31 for v in values):
                raise _invalid(node, f"attribute {attribute.name!r} is {values}, not an axis")
    if node.op_type == "Einsum" and node.domain in ("", "ai.onnx"):
        # onnx's inference loops forever on other bytes; the ONNX grammar allows only these.
        equation = next((a.s for a in node.attribute if a.name == "equation"), b"")
        if not set(equation) <= _EINSUM_BYTES:
            raise _invalid(node, f"equation {equation!r} has characters outside letters, "
                                 "',', '->', '...' and spaces")
    if node.op_type == "GatherND" and node.domain in ("", "ai.onnx"):
        # onnx's inference indexes the shapes by it unchecked: a negative count crashes.
        batch_dims = ConversionContext.attr(node, "batch_dims", 0)
        if not 0 <= batch_dims < 2**31:
            raise _invalid(node, f"attribute 'batch_dims' is {batch_dims}; it counts leading "
                                 "axes, so it must be 0 or more")
    if node.op_type == "Split" and node.domain in ("", "ai.onnx"):
        count = ConversionContext.attr(node, "num_outputs")
        if count is not None and count != len(node.output):
            raise _invalid(node, f"num_outputs is {count} but the node has "
                                 f"{len(node.output)} outputs")


def load(path_or_model: str | os.PathLike[str] | bytes | onnx.ModelProto,
         threads: int = 0, *, max_fold_bytes: int = DEFAULT_MAX_FOLD_BYTES,
         cache_entries: int = DEFAULT_CACHE_ENTRIES,
         cache_bytes: int = DEFAULT_CACHE_BYTES, context: Any = None) -> OnnxModel:
    """Loads an ONNX model (a path, serialized bytes or a ModelProto) for running with nxe.

    Nothing is compiled yet: each distinct tuple of input shapes compiles on its first run.
    ``threads`` = 0 uses every online CPU. ``max_fold_bytes``, ``cache_entries`` and
    ``cache_bytes`` bound the work done for the model (see OnnxModel). A file that is not an
    ONNX model is a FormatError; an invalid model an InvalidGraphError. ``context``
    (nxe.Context) holds custom ops that answer to the (domain, op type) of nodes without a
    built-in converter; without it those of ``nxe.default_context()`` do.
    """
    if isinstance(path_or_model, onnx.ModelProto):
        model = copy.deepcopy(path_or_model)
    else:
        try:
            if isinstance(path_or_model, (bytes, bytearray)):
                model = onnx.load_from_string(bytes(path_or_model))
            else:
                model = onnx.load(os.fspath(path_or_model))
        except OSError:
            raise
        except Exception as error:  # noqa: BLE001 - protobuf raises several decode errors
            raise FormatError(f"not an ONNX model: {type(error).__name__}: {error}") from error
    return OnnxModel(model, threads=threads, max_fold_bytes=max_fold_bytes,
                     cache_entries=cache_entries, cache_bytes=cache_bytes, context=context)


def unsupported_nodes(path_or_model: str | os.PathLike[str] | bytes | onnx.ModelProto
                      ) -> list[tuple[str, str]]:
    """(op type, node name) of every node of the model that has no nxe converter."""
    return load(path_or_model).unsupported_nodes()
