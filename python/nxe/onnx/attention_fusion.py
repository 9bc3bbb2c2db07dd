"""Attention written out in ONNX nodes, imported as one ScaledDotProductAttention, so that the
[batch, heads, L, S] scores never reach memory (nxe's fused attention keeps one block of them;
docs/architecture.md). The patterns are what Hugging Face encoders export, with and without
torch's scaled_dot_product_attention:

    Q' = Q [* c1]            K' = K^T [* c2]          (c1, c2 scalar constants)
    S  = MatMul(Q', K') [* c | / c] [+ mask]
    P  = Softmax(S, last axis)
    P' = P, or Where(IsNaN(P), 0, P)                 (torch's guard for rows with no key)
    Y  = MatMul(P', V)

becomes Y = ScaledDotProductAttention(Q, K^T, V, mask, scale=c1*c2*c, transposed_keys=1).
Every intermediate must be read by the next node of the pattern alone (not by another node, a
subgraph or a graph output); the constants, shapes and dtypes are checked when the graph is
built for concrete input shapes, and a pattern that fails a check is imported node by node.
Matching is structural first (find, once per model) so that the nodes of a pattern are held
back, not converted, until its last MatMul decides (fuse).

The fused op computes the same function in f32, with two differences at the edges: a row whose
every score is -inf gives zeros (the unfused Softmax gives NaN there; with the IsNaN guard both
give zeros), and a NaN in Q, K or V reaches its rows as NaN (the guard would zero them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence, Set
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto

from . import qdq


@dataclass
class Pattern:
    """One match: the final MatMul, the nodes before it that it replaces (in graph order),
    and the roles of those nodes."""

    final: onnx.NodeProto
    members: list[onnx.NodeProto]
    scores: onnx.NodeProto                     # MatMul(Q', K')
    q_scale: onnx.NodeProto | None             # Mul giving Q', maybe by a scalar
    k_scale: onnx.NodeProto | None             # Mul giving K', maybe by a scalar
    scale: onnx.NodeProto | None               # Mul or Div of the scores
    mask: str | None                           # the other operand of the Add
    softmax: onnx.NodeProto
    zero: str | None                           # the Where's replacement for NaN


def _is(node: onnx.NodeProto | None, op_type: str) -> bool:
    return node is not None and node.op_type == op_type and node.domain in ("", "ai.onnx")


def find(nodes: Sequence[onnx.NodeProto], output_names: Sequence[str],
         initializers: Set[str]) -> dict[int, Pattern]:
    """The patterns among ``nodes`` (a model's top-level nodes in order), by id of the final
    MatMul. A Mul before the scores' MatMul belongs to the pattern when one of its operands is
    an initializer or a Constant node's output (its value, a scalar, is checked by fuse)."""
    producer: dict[str, onnx.NodeProto] = {}
    reads: dict[str, int] = {}
    for node in nodes:
        for name in node.output:
            if name:
                producer[name] = node
        for name in qdq._read_names(node):
            reads[name] = reads.get(name, 0) + 1
    for name in output_names:
        reads[name] = reads.get(name, 0) + 2  # never an intermediate

    constants = set(initializers) | {n.output[0] for n in nodes if _is(n, "Constant") and n.output}

    def once(name: str) -> bool:
        return reads.get(name, 0) == 1

    def made_by(name: str, op_type: str) -> onnx.NodeProto | None:
        node = producer.get(name)
        return node if _is(node, op_type) else None

    def scores_of(name: str) -> tuple[onnx.NodeProto | None, onnx.NodeProto] | None:
        """(the scaling Mul or Div, the MatMul) whose result is ``name``."""
        node = producer.get(name)
        if not once(name) or node is None:
            return None
        if _is(node, "MatMul"):
            return None, node
        candidates = [0] if _is(node, "Div") else [0, 1] if _is(node, "Mul") else []
        for i in candidates:
            matmul = made_by(node.input[i], "MatMul")
            if matmul is not None and once(node.input[i]) and len(node.input) == 2:
                return node, matmul
        return None

    def constant_mul(name: str) -> onnx.NodeProto | None:
        node = made_by(name, "Mul")
        if node is None or not once(name) or len(node.input) != 2 or \
                not any(operand in constants for operand in node.input):
            return None
        return node

    patterns: dict[int, Pattern] = {}
    for final in nodes:
        if not _is(final, "MatMul") or len(final.input) != 2:
            continue
        weights, zero, guard = final.input[0], None, []
        where = made_by(weights, "Where")
        if where is not None and once(weights) and len(where.input) == 3:
            isnan = made_by(where.input[0], "IsNaN")
            if isnan is not None and once(where.input[0]) and isnan.input[0] == where.input[2] \
                    and reads.get(where.input[2], 0) == 2:
                weights, zero, guard = where.input[2], where.input[1], [isnan, where]
        softmax = made_by(weights, "Softmax")
        if softmax is None or (not guard and not once(weights)):
            continue
        x, mask, add = softmax.input[0], None, None
        found = scores_of(x)
        if found is None and once(x) and _is(producer.get(x), "Add"):
            add = producer[x]
            for i in (0, 1):
                found = scores_of(add.input[i])
                if found is not None:
                    mask = add.input[1 - i]
                    break
        if found is None:
            continue
        scale, scores = found
        q_scale, k_scale = (constant_mul(name) for name in scores.input[:2])
        chosen = {id(n) for n in (q_scale, k_scale, scores, scale, add, softmax, *guard) if n}
        members = [n for n in nodes if id(n) in chosen]
        patterns[id(final)] = Pattern(final, members, scores, q_scale, k_scale, scale, mask,
                                      softmax, zero)
    # A node in two patterns (it cannot be, each intermediate having one reader) would be
    # held back twice; the check keeps the rewrite safe should the rules above change.
    seen: set[int] = set()
    for key in list(patterns):
        ids = {id(n) for n in patterns[key].members}
        if ids & seen:
            del patterns[key]
        seen |= ids
    return patterns


def fuse(builder: Any, pattern: Pattern) -> bool:
    """Emits the pattern as one ScaledDotProductAttention into ``builder`` (the importer's
    graph builder) when its checks pass; False, with nothing built, when they fail."""

    def scalar(name: str) -> float | None:
        value = builder.known.get(name)
        if value is None or np.asarray(value).size != 1 or \
                np.asarray(value).dtype not in (np.float32, np.float64):
            return None
        return float(np.asarray(value).reshape(()))

    def unscaled(node: onnx.NodeProto | None, operand: str) -> tuple[str, float | None]:
        """The operand before a Mul by a scalar, and the scalar (None: not a scalar)."""
        if node is None:
            return operand, 1.0
        for i in (0, 1):
            factor = scalar(node.input[1 - i])
            if factor is not None:
                return node.input[i], factor
        return operand, None

    scores = pattern.scores
    q, q_factor = unscaled(pattern.q_scale, scores.input[0])
    k, k_factor = unscaled(pattern.k_scale, scores.input[1])
    if q_factor is None or k_factor is None:
        return False
    factor = q_factor * k_factor
    if pattern.scale is not None:
        by = pattern.scale.input[1 if pattern.scale.input[0] == scores.output[0] else 0]
        c = scalar(by)
        if c is None or c == 0.0:
            return False
        factor = factor / c if _is(pattern.scale, "Div") else factor * c
    # A zero scale would mean 1 / sqrt(E) to the op.
    if (pattern.zero is not None and scalar(pattern.zero) != 0.0) or \
            not math.isfinite(factor) or factor == 0.0:
        return False
    v = pattern.final.input[1]
    # Constant operands fold node by node instead.
    if any(name in builder.known for name in (q, k, v)):
        return False
    shapes = [builder.inferred_shape(name) for name in (q, k, v)]
    if any(shape is None for shape in shapes) or \
            [builder.inferred_dtype(name) for name in (q, k, v)] != ["f32"] * 3:
        return False
    q_shape, k_shape, v_shape = (tuple(shape) for shape in shapes)
    rank = len(q_shape)
    # MatMul's batch broadcasting and rank-1 operands are not attention's.
    if rank < 2 or len(k_shape) != rank or len(v_shape) != rank or \
            not q_shape[:-2] == k_shape[:-2] == v_shape[:-2] or \
            q_shape[-1] != k_shape[-2] or k_shape[-1] != v_shape[-2]:
        return False
    axis = -1 if builder.model.opset >= 13 else 1
    for attribute in pattern.softmax.attribute:
        if attribute.name == "axis":
            axis = attribute.i
    if axis not in (-1, rank - 1):
        return False
    if pattern.mask is not None:
        scores_shape = q_shape[:-1] + (k_shape[-1],)
        mask_shape = builder.inferred_shape(pattern.mask)
        # The mask must broadcast to the scores, not widen them.
        if mask_shape is None or builder.inferred_dtype(pattern.mask) != "f32" or \
                len(mask_shape) > rank or any(
                    d not in (1, full)
                    for d, full in zip(reversed(mask_shape), reversed(scores_shape))):
            return False
    inputs = [builder.tensor_of(name) for name in (q, k, v)]
    if pattern.mask is not None:
        inputs.append(builder.tensor_of(pattern.mask))
    output = pattern.final.output[0]
    builder.tensors[output] = builder.graph.ScaledDotProductAttention(
        *inputs, scale=float(np.float32(factor)), transposed_keys=1,
        name=pattern.final.name or None)
    builder.record_type(output, q_shape[:-1] + (v_shape[-1],), TensorProto.FLOAT)
    return True
