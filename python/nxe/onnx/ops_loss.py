"""ONNX converters for the training losses used at inference: NegativeLogLikelihoodLoss and
SoftmaxCrossEntropyLoss, composed from nxe ops.
Losses are computed in f32 and cast back to the scores' dtype; targets may be runtime tensors.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _dtypes
from ..graph import Tensor
from .ops_basic import _cast
from .registry import converter

_REDUCTIONS = ("none", "sum", "mean")
_SCORE_DTYPES = ("f32", "f16", "bf16")
_TARGET_DTYPES = {"i32": np.int32, "i64": np.int64}


def _reduction(ctx: Any, node: Any) -> str:
    reduction = ctx.attr(node, "reduction", "mean")
    if isinstance(reduction, bytes):
        reduction = reduction.decode()
    if reduction not in _REDUCTIONS:
        raise ctx.unsupported(f"reduction={reduction!r} (ONNX defines none, sum and mean)")
    return reduction


def _f32_scores(ctx: Any) -> tuple[Tensor, str]:
    """Input 0 ([N, C, d1, ...] scores) as f32, and its dtype to cast the results back to."""
    shape = ctx.shape(0)
    if len(shape) < 2:
        raise ctx.unsupported(f"an input of rank {len(shape)} (needs [N, C, d1, ...])")
    dtype = ctx.dtype(0)
    if dtype not in _SCORE_DTYPES:
        raise ctx.unsupported(f"scores of dtype {dtype} (needs f32, f16 or bf16)")
    x = ctx.input(0)
    return (x if dtype == "f32" else _cast(ctx, x, "f32")), dtype


def _negative_log_likelihood(ctx: Any, node: Any, log_probs: Tensor) -> Tensor:
    """The f32 loss of NegativeLogLikelihoodLoss for f32 ``log_probs`` [N, C, d1, ...], target
    input 1 [N, d1, ...] and optional weight input 2 [C]."""
    reduction = _reduction(ctx, node)
    target_dtype = ctx.dtype(1)
    if target_dtype not in _TARGET_DTYPES:
        raise ctx.unsupported(f"a target of dtype {target_dtype} (needs i32 or i64)")
    scores_shape = tuple(ctx.shape(0))
    target_shape = tuple(ctx.shape(1))
    if target_shape != scores_shape[:1] + scores_shape[2:]:
        raise ctx.unsupported(f"a target of shape {target_shape} for an input of shape "
                              f"{scores_shape} (needs [N, d1, ...])")
    g = ctx.g
    target = ctx.input(1)
    ignore_index = ctx.attr(node, "ignore_index", None)
    kept = None
    if ignore_index is not None:
        index_type = _TARGET_DTYPES[target_dtype]
        kept = g.Not(g.Equal(target, ctx.constant(ignore_index, index_type)))
        # An ignored target may lie outside [0, C); gather class 0 there and mask it out.
        target = g.Where(kept, target, ctx.constant(0, index_type))

    picked = g.Squeeze(g.GatherElements(log_probs, g.Unsqueeze(target, axes=[1]), axis=1),
                       axes=[1])
    zero = ctx.constant(np.float32(0.0))
    loss = g.Neg(picked) if kept is None else g.Where(kept, g.Neg(picked), zero)

    weights = None
    if ctx.has_input(2):
        class_weights = ctx.input(2)
        if ctx.shape(2) != scores_shape[1:2]:
            raise ctx.unsupported(f"a weight of shape {ctx.shape(2)} for {scores_shape[1]} "
                                  "classes")
        if ctx.dtype(2) != "f32":
            class_weights = _cast(ctx, class_weights, "f32")
        weights = g.Gather(class_weights, target, axis=0)
        if kept is not None:
            weights = g.Where(kept, weights, zero)
        loss = g.Mul(loss, weights)
    elif kept is not None:
        weights = g.Cast(kept, to=_dtypes.code_of("f32"))

    if reduction == "none":
        return loss
    every_axis = list(range(len(target_shape)))
    if reduction == "mean" and weights is None:
        return g.ReduceMean(loss, axes=every_axis, keepdims=0)
    total = g.ReduceSum(loss, axes=every_axis, keepdims=0)
    if reduction == "sum":
        return total
    # ONNX's mean divides by the summed weights of the targets not ignored.
    return g.Div(total, g.ReduceSum(weights, axes=every_axis, keepdims=0))


def _as_dtype(ctx: Any, y: Tensor, dtype: str) -> Tensor:
    return y if dtype == "f32" else _cast(ctx, y, dtype)


@converter("NegativeLogLikelihoodLoss")
def convert_negative_log_likelihood_loss(ctx: Any, node: Any) -> list[Tensor]:
    scores, dtype = _f32_scores(ctx)
    return [_as_dtype(ctx, _negative_log_likelihood(ctx, node, scores), dtype)]


@converter("SoftmaxCrossEntropyLoss")
def convert_softmax_cross_entropy_loss(ctx: Any, node: Any) -> list[Tensor]:
    scores, dtype = _f32_scores(ctx)
    log_probs = ctx.g.LogSoftmax(scores, axis=1)
    results = [_as_dtype(ctx, _negative_log_likelihood(ctx, node, log_probs), dtype)]
    if len(node.output) > 1 and node.output[1]:
        results.append(_as_dtype(ctx, log_probs, dtype))
    return results
