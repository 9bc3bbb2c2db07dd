"""QDQ-format quantized models (what onnxruntime.quantization.quantize_static writes) rewritten
into ONNX's quantized operators, so their convolutions and matrix products run on nxe's integer
kernels instead of in float between DequantizeLinear and QuantizeLinear nodes.

A QDQ model keeps every op in float and marks quantization with pairs: an activation goes
QuantizeLinear -> DequantizeLinear into an op, a weight is an int8 initializer behind a
DequantizeLinear, a bias an int32 one, and the op's output goes into a QuantizeLinear. Where
that whole pattern is there, the op with its DequantizeLinear inputs and its QuantizeLinear
output is one quantized op (onnxruntime fuses the same patterns):

    DQ(x) -> Conv(DQ(w), DQ(b)) -> Q    =>  QLinearConv(x, w, b)
    DQ(a) -> MatMul(DQ(b)) -> Q         =>  QLinearMatMul(a, b)
    DQ(a) -> Gemm(DQ(b)) -> Q           =>  QLinearMatMul(a, b or b transposed)
    DQ(a) -> Gemm(DQ(b), DQ(c)) -> Q    =>  MatMulInteger(a, b) + c, requantized

with per-tensor activations and per-tensor or per-output-channel weights, the int32 bias taken
as it is stored (in units of x_scale * w_scale, which its DequantizeLinear's scale must be).
Everything else (Add, pooling, reshapes, nodes outside a complete pattern) stays as written and
runs in float between its DequantizeLinear and QuantizeLinear nodes, as the ONNX semantics say.
The rewrite produces standard ONNX nodes; the converters of ops_sequence_quant.py take them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

_QUANTIZED = (np.dtype(np.int8), np.dtype(np.uint8))
# A bias DequantizeLinear's scale is x_scale * w_scale formed in f32 by the quantizer; a scale
# further off than this (relative) would not be the bias of this product.
_BIAS_SCALE_RTOL = 1e-6


@dataclass
class _Quant:
    """One DequantizeLinear input or QuantizeLinear output: the quantized tensor's name, its
    scale and zero point (names and values), and the axis of a per-axis scale."""

    name: str
    scale_name: str
    scale: np.ndarray
    zero_name: str | None
    zero: np.ndarray | None
    axis: int | None


class _Rewriter:
    def __init__(self, graph: onnx.GraphProto, values: dict[str, np.ndarray]) -> None:
        self.graph = graph
        # An initializer that is also a graph input may be fed at run time: not a constant.
        inputs = {i.name for i in graph.input}
        self.values = {name: v for name, v in values.items() if name not in inputs}
        self.added: dict[str, np.ndarray] = {}
        self.producer: dict[str, onnx.NodeProto] = {}
        self.readers: dict[str, list[onnx.NodeProto]] = {}
        self.uses: dict[str, int] = {}
        # Constant nodes' values, read when a pattern needs one.
        self.constant_nodes: dict[str, onnx.TensorProto] = {}
        for node in graph.node:
            for name in node.output:
                if name:
                    self.producer[name] = node
            for name in _read_names(node):
                self.uses[name] = self.uses.get(name, 0) + 1
            for name in node.input:
                self.readers.setdefault(name, []).append(node)
            if _is(node, "Constant") and node.output:
                value = next((a.t for a in node.attribute if a.name == "value"), None)
                if value is not None:
                    self.constant_nodes[node.output[0]] = value
        for output in graph.output:
            self.uses[output.name] = self.uses.get(output.name, 0) + 1
        self.names = set(self.producer) | set(values) | inputs

    # -- helpers ------------------------------------------------------------------------

    def value(self, name: str) -> np.ndarray | None:
        """The value of ``name`` when it is an initializer or a Constant node's output."""
        if name not in self.values and name in self.constant_nodes:
            self.values[name] = numpy_helper.to_array(self.constant_nodes.pop(name))
        return self.values.get(name)

    def fresh(self, hint: str) -> str:
        """A name no value of the graph has, from ``hint``."""
        name = hint
        while name in self.names:
            name += "_"
        self.names.add(name)
        return name

    def new_constant(self, value: np.ndarray, hint: str) -> str:
        name = self.fresh(hint)
        self.added[name] = np.asarray(value)
        return name

    def zero_point(self, params: _Quant) -> str:
        """The zero point's name; for a weight without one, a new constant of zeros."""
        if params.zero_name is None:
            dtype = self.value(params.name).dtype
            params.zero_name = self.new_constant(np.zeros(params.scale.shape, dtype),
                                                 f"{params.name}/qdq_zero_point")
        return params.zero_name

    def quant_params(self, node: onnx.NodeProto) -> _Quant | None:
        """Scale and zero point of a Quantize/DequantizeLinear node, when known and of the
        plain int8/uint8 kind the quantized ops take (no blocks, f32 scales)."""
        if len(node.input) < 2 or _attr(node, "block_size", 0) != 0:
            return None
        scale = self.value(node.input[1])
        if scale is None or scale.dtype != np.float32 or scale.ndim > 1 or scale.size == 0:
            return None
        zero_name = node.input[2] if len(node.input) > 2 and node.input[2] else None
        zero = self.value(zero_name) if zero_name else None
        if zero_name and (zero is None or zero.size != scale.size):
            return None
        axis = int(_attr(node, "axis", 1)) if scale.size > 1 else None
        return _Quant(node.input[0], node.input[1], scale, zero_name, zero, axis)

    def dequantized(self, name: str) -> _Quant | None:
        """The quantization of ``name`` when a DequantizeLinear makes it."""
        producer = self.producer.get(name)
        if producer is None or not _is(producer, "DequantizeLinear"):
            return None
        return self.quant_params(producer)

    def activation(self, name: str) -> _Quant | None:
        """A per-tensor int8/uint8 input: its dtype is its zero point's, which must be there."""
        params = self.dequantized(name)
        if params is None:
            return None
        if params.scale.size != 1 or params.zero is None or params.zero.dtype not in _QUANTIZED:
            return None
        return params

    def weight(self, name: str, channel_axis: int | None, rank: int) -> _Quant | None:
        """A weight: per tensor, or per channel along ``channel_axis`` (of a rank-``rank``
        weight); its dtype is its value's or, for a run-time one, its zero point's."""
        params = self.dequantized(name)
        if params is None:
            return None
        value = self.value(params.name)
        dtype = value.dtype if value is not None else \
            (params.zero.dtype if params.zero is not None else None)
        if dtype not in _QUANTIZED or (params.zero is not None and params.zero.dtype != dtype):
            return None
        if params.scale.size > 1:
            if value is None or channel_axis is None or value.ndim != rank:
                return None
            if params.axis % rank != channel_axis or value.shape[channel_axis] != \
                    params.scale.size:
                return None
        return params

    def bias(self, name: str, expected_scale: np.ndarray, channels: int) -> str | None:
        """The int32 bias behind a DequantizeLinear whose scale is ``expected_scale``
        (x_scale * w_scale), zero point 0, one value per output channel."""
        params = self.dequantized(name)
        if params is None:
            return None
        value = self.value(params.name)
        if value is None or value.dtype != np.int32 or value.size != channels or \
                value.ndim > 2 or (value.ndim == 2 and value.shape[0] != 1):
            return None
        if params.zero is not None and np.any(params.zero != 0):
            return None
        scale = np.broadcast_to(params.scale.reshape(-1), (channels,))
        wanted = np.broadcast_to(expected_scale.reshape(-1), (channels,))
        if not np.allclose(scale, wanted, rtol=_BIAS_SCALE_RTOL, atol=0):
            return None
        if value.ndim == 1:
            return params.name
        return self.new_constant(value.reshape(-1), f"{params.name}/qdq_flat")

    def output(self, node: onnx.NodeProto) -> tuple[onnx.NodeProto, _Quant] | None:
        """The QuantizeLinear that alone takes ``node``'s only output, per tensor."""
        if len([o for o in node.output if o]) != 1:
            return None
        name = node.output[0]
        if self.uses.get(name, 0) != 1:
            return None
        readers = self.readers.get(name, [])
        if len(readers) != 1 or not _is(readers[0], "QuantizeLinear") or \
                readers[0].input[0] != name:
            return None
        quantize = readers[0]
        params = self.quant_params(quantize)
        if params is None or params.scale.size != 1 or params.zero is None or \
                params.zero.dtype not in _QUANTIZED:
            return None
        return quantize, params

    # -- patterns -----------------------------------------------------------------------

    def conv(self, node: onnx.NodeProto) -> list[onnx.NodeProto] | None:
        found = self.output(node)
        if found is None or len(node.input) < 2:
            return None
        quantize, _ = found
        x = self.activation(node.input[0])
        w_value = self.value(self.producer[node.input[1]].input[0]) \
            if node.input[1] in self.producer else None
        if x is None or w_value is None or w_value.ndim not in (3, 4):
            return None  # nxe's quantized convolutions are 1-D and 2-D
        w = self.weight(node.input[1], 0, w_value.ndim)
        if w is None:
            return None
        inputs = [x.name, x.scale_name, x.zero_name, w.name, w.scale_name,
                  self.zero_point(w), quantize.input[1], quantize.input[2]]
        if len(node.input) > 2 and node.input[2]:
            bias = self.bias(node.input[2], x.scale * w.scale, w_value.shape[0])
            if bias is None:
                return None
            inputs.append(bias)
        return [helper.make_node("QLinearConv", inputs, [quantize.output[0]], name=node.name,
                                 domain="", **_attributes(node))]

    def matmul(self, node: onnx.NodeProto) -> list[onnx.NodeProto] | None:
        found = self.output(node)
        if found is None or len(node.input) != 2:
            return None
        quantize, _ = found
        a = self.activation(node.input[0])
        b_producer = self.producer.get(node.input[1])
        b_value = self.value(b_producer.input[0]) if b_producer is not None else None
        rank = b_value.ndim if b_value is not None else 0
        # Per channel is per column of b (its last axis): one scale per output column. A b
        # known only at run time (attention's product of two activations) is per tensor.
        b = self.weight(node.input[1], rank - 1 if rank >= 2 else None, rank)
        if a is None or b is None:
            return None
        return [helper.make_node(
            "QLinearMatMul", [a.name, a.scale_name, a.zero_name, b.name, b.scale_name,
                              self.zero_point(b), quantize.input[1], quantize.input[2]],
            [quantize.output[0]], name=node.name)]

    def gemm(self, node: onnx.NodeProto) -> list[onnx.NodeProto] | None:
        found = self.output(node)
        if found is None or len(node.input) < 2:
            return None
        quantize, y = found
        alpha, beta = float(_attr(node, "alpha", 1.0)), float(_attr(node, "beta", 1.0))
        trans_b = int(_attr(node, "transB", 0))
        has_c = len(node.input) > 2 and bool(node.input[2])
        if int(_attr(node, "transA", 0)) != 0 or alpha != 1.0 or (has_c and beta != 1.0):
            return None
        a = self.activation(node.input[0])
        b_producer = self.producer.get(node.input[1])
        b_value = self.value(b_producer.input[0]) if b_producer is not None and \
            b_producer.input else None
        if a is None or b_value is None or b_value.ndim != 2:
            return None
        # Per channel is per output column: axis 1 of b, or axis 0 of the transposed b.
        b = self.weight(node.input[1], 0 if trans_b else 1, 2)
        if b is None:
            return None
        b_name = b.name
        if trans_b:
            b_name = self.new_constant(np.ascontiguousarray(b_value.T),
                                       f"{b.name}/qdq_transposed")
        columns = b_value.shape[0 if trans_b else 1]
        y_scale, y_zero = quantize.input[1], quantize.input[2]
        if not has_c:
            return [helper.make_node(
                "QLinearMatMul", [a.name, a.scale_name, a.zero_name, b_name, b.scale_name,
                                  self.zero_point(b), y_scale, y_zero],
                [quantize.output[0]], name=node.name)]
        bias = self.bias(node.input[2], a.scale * b.scale, columns)
        if bias is None:
            return None
        # The int32 product plus the bias, requantized as QLinearMatMul does: the multiplier
        # a_scale * b_scale / y_scale formed in f32, rounding half to even, saturating.
        multiplier = (a.scale.reshape(()) * b.scale / y.scale.reshape(())).astype(np.float32)
        out = quantize.output[0]
        stem = f"{out}/qdq_gemm"
        accumulated, biased, as_float, scaled = (self.fresh(f"{stem}/{part}") for part in
                                                  ("acc", "biased", "float", "scaled"))
        return [
            helper.make_node("MatMulInteger", [a.name, b_name, a.zero_name, self.zero_point(b)],
                             [accumulated], name=node.name),
            helper.make_node("Add", [accumulated, bias], [biased], name=f"{node.name}/bias"),
            helper.make_node("Cast", [biased], [as_float], name=f"{node.name}/cast",
                             to=TensorProto.FLOAT),
            helper.make_node("Mul", [as_float, self.new_constant(multiplier,
                                                                 f"{stem}/multiplier")],
                             [scaled], name=f"{node.name}/requantize"),
            helper.make_node("QuantizeLinear",
                             [scaled, self.new_constant(np.array(1.0, np.float32),
                                                        f"{stem}/unit_scale"), y_zero],
                             [out], name=f"{node.name}/quantize"),
        ]

    # -- the pass -----------------------------------------------------------------------

    def run(self) -> list[onnx.NodeProto] | None:
        patterns = {"Conv": self.conv, "MatMul": self.matmul, "Gemm": self.gemm}
        replaced: dict[int, list[onnx.NodeProto]] = {}
        removed: set[int] = set()
        index_of = {id(n): i for i, n in enumerate(self.graph.node)}
        for i, node in enumerate(self.graph.node):
            rewrite = patterns.get(node.op_type) if node.domain in ("", "ai.onnx") else None
            if rewrite is None:
                continue
            try:
                fused = rewrite(node)
            except (ValueError, TypeError, IndexError, KeyError, ZeroDivisionError):
                # A malformed node or attribute (the rewrite runs at load, before onnx's
                # checker) is left as it is: building it reports the model as invalid.
                fused = None
            if fused is None:
                continue
            quantize = self.producer[fused[-1].output[0]]
            # In the QuantizeLinear's place: everything the op and the QuantizeLinear read
            # (a Constant node's scale among them) is defined by then.
            replaced[index_of[id(quantize)]] = fused
            removed.add(i)
            for name in list(_read_names(node)) + list(_read_names(quantize)):
                self.uses[name] -= 1
            for fused_node in fused:
                for name in fused_node.input:
                    if name:
                        self.uses[name] = self.uses.get(name, 0) + 1
        if not replaced:
            return None
        # DequantizeLinear nodes that only fed the rewritten ops are left without readers.
        for i, node in enumerate(self.graph.node):
            if _is(node, "DequantizeLinear") and i not in replaced and \
                    all(self.uses.get(o, 0) == 0 for o in node.output if o):
                removed.add(i)
        nodes: list[onnx.NodeProto] = []
        for i, node in enumerate(self.graph.node):
            if i in replaced:
                nodes.extend(replaced[i])
            elif i not in removed:
                nodes.append(node)
        return nodes


def fuse(graph: onnx.GraphProto, values: dict[str, np.ndarray]
         ) -> tuple[list[onnx.NodeProto], dict[str, np.ndarray]]:
    """The nodes of ``graph`` with its complete QDQ patterns rewritten into quantized ops (see
    the module's description), and the constants the rewritten nodes add, by name.
    ``values`` are the initializers."""
    rewriter = _Rewriter(graph, values)
    nodes = rewriter.run()
    if nodes is None:
        return list(graph.node), {}
    return nodes, rewriter.added


def _is(node: onnx.NodeProto, op_type: str) -> bool:
    return node.op_type == op_type and node.domain in ("", "ai.onnx")


def _attr(node: onnx.NodeProto, name: str, default: Any) -> Any:
    for attribute in node.attribute:
        if attribute.name == name:
            return helper.get_attribute_value(attribute)
    return default


def _attributes(node: onnx.NodeProto) -> dict[str, Any]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _read_names(node: onnx.NodeProto) -> Iterable[str]:
    """Every name ``node`` reads: its inputs and the outer names its subgraphs read."""
    yield from (n for n in node.input if n)
    for attribute in node.attribute:
        subgraphs = ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs)
        for subgraph in subgraphs:
            for inner in subgraph.node:
                yield from _read_names(inner)
