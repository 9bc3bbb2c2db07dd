"""ONNX converters for reductions (ReduceMax ... ReduceLogSumExp, ArgMax, ArgMin, TopK, CumSum,
CumProd),
normalizations (BatchNormalization, InstanceNormalization, GroupNormalization, RMSNormalization,
LRN, LpNormalization, MeanVarianceNormalization) and LogSoftmax / Hardmax.
Axes, k and other values that nxe takes as attributes must be known at import.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import registry as op_registry
from ..graph import Tensor
from .ops_basic import (
    _cast,
    _compute_dtype,
    _float_input,
    _in_dtype,
    _known_ints,
    _out_dtype,
)
from .registry import converter

# ONNX op type -> (nxe op type, whether a narrow integer may be widened to i32 exactly).
_REDUCTIONS = {
    "ReduceMax": ("ReduceMax", True),
    "ReduceMin": ("ReduceMin", True),
    "ReduceProd": ("ReduceProd", False),
    "ReduceL1": ("ReduceL1", False),
    "ReduceL2": ("ReduceL2", False),
    "ReduceSumSquare": ("ReduceSumSquare", False),
    "ReduceLogSum": ("ReduceLogSum", False),
    "ReduceLogSumExp": ("ReduceLogSumExp", False),
}
# Reductions whose noop_with_empty_axes result is the input itself.
_IDENTITY_WHEN_NOOP = ("ReduceMax", "ReduceMin", "ReduceProd")


def _axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


@converter(*_REDUCTIONS)
def convert_reduction(ctx: Any, node: Any) -> list[Any]:
    op_type, widen_exact = _REDUCTIONS[node.op_type]
    shape = ctx.shape(0)
    # Every reduction listed takes axes as an input from opset 18 on.
    if ctx.opset >= 18:
        axes = _known_ints(ctx, 1, "axes")
    else:
        axes = ctx.attr(node, "axes", None)
    keepdims = int(ctx.attr(node, "keepdims", 1))
    if not axes:
        if int(ctx.attr(node, "noop_with_empty_axes", 0)):
            if node.op_type in _IDENTITY_WHEN_NOOP:
                return [ctx.input(0)]
            raise ctx.unsupported("noop_with_empty_axes with empty axes")
        axes = list(range(len(shape)))
    axes = sorted({_axis(int(a), len(shape)) for a in axes})
    dtype = ctx.dtype(0)
    compute = _compute_dtype(ctx, op_type, dtype)
    if compute != dtype and compute == "i32" and not widen_exact:
        raise ctx.unsupported(f"{node.op_type} of {dtype} (would not wrap as ONNX does)")
    (x,) = _in_dtype(ctx, [ctx.input(0)], dtype, compute)
    y = getattr(ctx.g, op_type)(x, axes=axes, keepdims=keepdims)
    return [_out_dtype(ctx, y, dtype, compute)]


@converter("ArgMax", "ArgMin")
def convert_arg_extreme(ctx: Any, node: Any) -> list[Tensor]:
    dtype = ctx.dtype(0)
    compute = _compute_dtype(ctx, node.op_type, dtype)
    (x,) = _in_dtype(ctx, [ctx.input(0)], dtype, compute)
    return [getattr(ctx.g, node.op_type)(
        x, axis=int(ctx.attr(node, "axis", 0)), keepdims=int(ctx.attr(node, "keepdims", 1)),
        select_last_index=int(ctx.attr(node, "select_last_index", 0)))]


@converter("TopK")
def convert_top_k(ctx: Any, node: Any) -> list[Tensor]:
    if ctx.opset >= 10:
        (k,) = _known_ints(ctx, 1, "k")
    else:
        k = int(ctx.attr(node, "k"))
    dtype = ctx.dtype(0)
    compute = _compute_dtype(ctx, "TopK", dtype)
    (x,) = _in_dtype(ctx, [ctx.input(0)], dtype, compute)
    values, indices = ctx.g.TopK(x, k=k, axis=int(ctx.attr(node, "axis", -1)),
                                 largest=int(ctx.attr(node, "largest", 1)),
                                 sorted=int(ctx.attr(node, "sorted", 1)))
    return [_out_dtype(ctx, values, dtype, compute), indices]


@converter("CumSum")
def convert_cumsum(ctx: Any, node: Any) -> list[Tensor]:
    (axis,) = _known_ints(ctx, 1, "axis")
    dtype = ctx.dtype(0)
    compute = _compute_dtype(ctx, "CumSum", dtype)
    if compute != dtype and compute == "i32":
        raise ctx.unsupported(f"CumSum of {dtype} (would not wrap as ONNX does)")
    (x,) = _in_dtype(ctx, [ctx.input(0)], dtype, compute)
    y = ctx.g.CumSum(x, axis=axis, exclusive=int(ctx.attr(node, "exclusive", 0)),
                     reverse=int(ctx.attr(node, "reverse", 0)))
    return [_out_dtype(ctx, y, dtype, compute)]


@converter("LogSoftmax", "Hardmax")
def convert_softmax_like(ctx: Any, node: Any) -> list[Tensor]:
    op_type = node.op_type
    x, dtype, compute = _float_input(ctx, op_type)
    shape = ctx.shape(0)
    rank = len(shape)
    fn = getattr(ctx.g, op_type)
    if ctx.opset >= 13:
        y = fn(x, axis=int(ctx.attr(node, "axis", -1)))
    else:
        # Before opset 13 the input is coerced to 2-D [prod(shape[:axis]), prod(shape[axis:])].
        axis = _axis(int(ctx.attr(node, "axis", 1)), rank)
        if axis == rank - 1:
            y = fn(x, axis=-1)
        else:
            rows = int(np.prod(shape[:axis]))
            y = ctx.g.Reshape(fn(ctx.g.Reshape(x, shape=[rows, -1]), axis=-1),
                              shape=list(shape))
    return [_out_dtype(ctx, y, dtype, compute)]


def _per_channel(ctx: Any, index: int, channels: int, what: str,
                 per_group: int = 1) -> Tensor:
    """Input ``index`` as an f32 [C] tensor; a known value of [C / per_group] values (one per
    group) is repeated per channel."""
    value = ctx.const(index)
    if value is not None:
        value = np.asarray(value, np.float32).reshape(-1)
        if per_group > 1 and value.size * per_group == channels:
            value = np.repeat(value, per_group)
        if value.size != channels:
            raise ctx.unsupported(f"{what} of shape {ctx.shape(index)} for {channels} channels")
        return ctx.constant(value)
    if tuple(ctx.shape(index)) != (channels,):
        raise ctx.unsupported(f"a runtime {what} of shape {ctx.shape(index)}")
    tensor = ctx.input(index)
    return tensor if ctx.dtype(index) == "f32" else _cast(ctx, tensor, "f32")


def _channels(ctx: Any) -> int:
    shape = ctx.shape(0)
    if len(shape) < 2:
        raise ctx.unsupported(f"an input of rank {len(shape)} (needs [N, C, ...])")
    return int(shape[1])


def _f32_input(ctx: Any, op_type: str) -> tuple[Tensor, str]:
    x, dtype, compute = _float_input(ctx, op_type)
    if compute != "f32":
        x = _cast(ctx, x, "f32")
    return x, dtype


def _to_dtype(ctx: Any, y: Tensor, dtype: str) -> Tensor:
    return y if dtype == "f32" else _cast(ctx, y, dtype)


@converter("BatchNormalization")
def convert_batch_normalization(ctx: Any, node: Any) -> list[Tensor]:
    if int(ctx.attr(node, "training_mode", 0)):
        raise ctx.unsupported("training_mode=1 (nxe normalizes with the running statistics)")
    if ctx.opset < 9 and int(ctx.attr(node, "spatial", 1)) == 0:
        raise ctx.unsupported("spatial=0")
    if any(name for name in node.output[1:]):
        raise ctx.unsupported("the running statistics outputs of training")
    x, dtype = _f32_input(ctx, "BatchNorm")
    c = _channels(ctx)
    params = [_per_channel(ctx, i, c, what)
              for i, what in ((1, "scale"), (2, "B"), (3, "mean"), (4, "var"))]
    y = ctx.g.BatchNorm(x, *params, epsilon=float(ctx.attr(node, "epsilon", 1e-5)))
    return [_to_dtype(ctx, y, dtype)]


@converter("InstanceNormalization")
def convert_instance_normalization(ctx: Any, node: Any) -> list[Tensor]:
    x, dtype = _f32_input(ctx, "InstanceNorm")
    c = _channels(ctx)
    y = ctx.g.InstanceNorm(x, _per_channel(ctx, 1, c, "scale"), _per_channel(ctx, 2, c, "B"),
                           epsilon=float(ctx.attr(node, "epsilon", 1e-5)))
    return [_to_dtype(ctx, y, dtype)]


@converter("GroupNormalization")
def convert_group_normalization(ctx: Any, node: Any) -> list[Tensor]:
    x, dtype = _f32_input(ctx, "GroupNorm")
    c = _channels(ctx)
    groups = int(ctx.attr(node, "num_groups"))
    # Opset 18 gave scale and bias per group; opset 21 per channel.
    per_group = c // groups if ctx.opset < 21 and groups > 0 and c % groups == 0 else 1
    y = ctx.g.GroupNorm(x, _per_channel(ctx, 1, c, "scale", per_group),
                        _per_channel(ctx, 2, c, "bias", per_group), num_groups=groups,
                        epsilon=float(ctx.attr(node, "epsilon", 1e-5)))
    return [_to_dtype(ctx, y, dtype)]


@converter("RMSNormalization")
def convert_rms_normalization(ctx: Any, node: Any) -> list[Tensor]:
    x, dtype = _f32_input(ctx, "RMSNorm")
    shape = ctx.shape(0)
    axis = _axis(int(ctx.attr(node, "axis", -1)), len(shape))
    trailing = tuple(shape[axis:])
    scale = None
    if ctx.has_input(1):
        value = ctx.const(1)
        if value is not None:
            scale = ctx.constant(np.ascontiguousarray(
                np.broadcast_to(np.asarray(value, np.float32), trailing)))
        elif tuple(ctx.shape(1)) == trailing:
            scale = ctx.input(1)
            scale = scale if ctx.dtype(1) == "f32" else _cast(ctx, scale, "f32")
        else:
            raise ctx.unsupported(f"a runtime scale of shape {ctx.shape(1)}")
    y = ctx.g.RMSNorm(x, scale, axis=axis, epsilon=float(ctx.attr(node, "epsilon", 1e-5)))
    return [_to_dtype(ctx, y, dtype)]


@converter("LRN")
def convert_lrn(ctx: Any, node: Any) -> list[Tensor]:
    x, dtype = _f32_input(ctx, "LRN")
    y = ctx.g.LRN(x, size=int(ctx.attr(node, "size")),
                  alpha=float(ctx.attr(node, "alpha", 1e-4)),
                  beta=float(ctx.attr(node, "beta", 0.75)), bias=float(ctx.attr(node, "bias", 1.0)))
    return [_to_dtype(ctx, y, dtype)]


@converter("LpNormalization")
def convert_lp_normalization(ctx: Any, node: Any) -> list[Tensor]:
    p = int(ctx.attr(node, "p", 2))
    if p not in (1, 2):
        raise ctx.unsupported(f"p={p} (nxe's LpNorm takes 1 or 2)")
    x, dtype = _f32_input(ctx, "LpNorm")
    return [_to_dtype(ctx, ctx.g.LpNorm(x, axis=int(ctx.attr(node, "axis", -1)), p=p), dtype)]


@converter("MeanVarianceNormalization")
def convert_mean_variance_normalization(ctx: Any, node: Any) -> list[Tensor]:
    """(X - mean) / (sqrt(variance) + 1e-9) over axes, as ONNX's function body defines it
    (the variance taken in two passes)."""
    if op_registry.find("Sqrt") is None:
        raise ctx.unsupported("MeanVarianceNormalization needs nxe's Sqrt")
    x, dtype = _f32_input(ctx, "ReduceMean")
    rank = len(ctx.shape(0))
    axes = sorted({_axis(int(a), rank) for a in ctx.attr(node, "axes", [0, 2, 3])})
    g = ctx.g
    centered = g.Sub(x, g.ReduceMean(x, axes=axes, keepdims=1))
    variance = g.ReduceMean(g.Mul(centered, centered), axes=axes, keepdims=1)
    std = g.Add(g.Sqrt(variance), ctx.constant(np.array(1e-9, np.float32)))
    return [_to_dtype(ctx, g.Div(centered, std), dtype)]


@converter("CumProd")
def convert_cumprod(ctx: Any, node: Any) -> list[Tensor]:
    (axis,) = _known_ints(ctx, 1, "axis")
    dtype = ctx.dtype(0)
    compute = _compute_dtype(ctx, "CumProd", dtype)
    if compute != dtype and compute == "i32":
        raise ctx.unsupported(f"CumProd of {dtype} (would not wrap as ONNX does)")
    (x,) = _in_dtype(ctx, [ctx.input(0)], dtype, compute)
    y = ctx.g.CumProd(x, axis=axis, exclusive=int(ctx.attr(node, "exclusive", 0)),
                      reverse=int(ctx.attr(node, "reverse", 0)))
    return [_out_dtype(ctx, y, dtype, compute)]
