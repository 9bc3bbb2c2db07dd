"""ONNX training and utility converters, composed from nxe ops: the losses
NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, the optimizers Adagrad, Adam and Momentum
(ai.onnx.preview.training), AffineGrid, Det (2x2 and 3x3) and CausalConvWithState.
Losses are computed in f32 and cast back to the scores' dtype; targets may be runtime tensors."""

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


# ---- optimizers (ai.onnx.preview.training): one update step, inputs R, T, then groups ----

_TRAINING = "ai.onnx.preview.training"


def _optimizer_groups(ctx: Any, node: Any, per_tensor: int) -> list[list[Tensor]]:
    """Checks R (f32 scalar), T (i64 scalar) and the f32 tensor inputs, and returns them as
    ``per_tensor`` lists (X, G, ...) of n tensors each, in ONNX's input order."""
    count = ctx.num_inputs - 2
    if count <= 0 or count % per_tensor:
        raise ctx.unsupported(f"{ctx.num_inputs} inputs (needs 2 + {per_tensor} * n)")
    if ctx.dtype(0) != "f32" or ctx.shape(0) not in ((), (1,)):
        raise ctx.unsupported(f"a learning rate R of dtype {ctx.dtype(0)} and shape "
                              f"{ctx.shape(0)} (needs an f32 scalar)")
    if ctx.dtype(1) != "i64" or ctx.shape(1) not in ((), (1,)):
        raise ctx.unsupported(f"a step count T of dtype {ctx.dtype(1)} and shape "
                              f"{ctx.shape(1)} (needs an i64 scalar)")
    n = count // per_tensor
    groups = []
    for k in range(per_tensor):
        group = []
        for i in range(n):
            index = 2 + k * n + i
            if ctx.dtype(index) != "f32":
                raise ctx.unsupported(f"input {index} of dtype {ctx.dtype(index)} (needs f32)")
            if ctx.shape(index) != ctx.shape(2 + i):
                raise ctx.unsupported(f"input {index} of shape {ctx.shape(index)} for a tensor "
                                      f"of shape {ctx.shape(2 + i)}")
            group.append(ctx.input(index))
        groups.append(group)
    return groups


def _scalar(ctx: Any, value: float) -> Tensor:
    return ctx.constant(np.float32(value))


def _regularized(ctx: Any, node: Any, x: Tensor, gradient: Tensor) -> Tensor:
    norm = float(ctx.attr(node, "norm_coefficient", 0.0))
    return ctx.g.Add(ctx.g.Mul(_scalar(ctx, norm), x), gradient)


@converter("Adagrad", domain=_TRAINING)
def convert_adagrad(ctx: Any, node: Any) -> list[Tensor]:
    xs, gs, hs = _optimizer_groups(ctx, node, 3)
    g = ctx.g
    decay = float(ctx.attr(node, "decay_factor", 0.0))
    epsilon = float(ctx.attr(node, "epsilon", 0.0))
    steps = _cast(ctx, ctx.input(1), "f32")
    rate = g.Div(ctx.input(0), g.Add(_scalar(ctx, 1.0), g.Mul(steps, _scalar(ctx, decay))))
    new_xs, new_hs = [], []
    for x, gradient, h in zip(xs, gs, hs):
        regularized = _regularized(ctx, node, x, gradient)
        h_new = g.Add(h, g.Mul(regularized, regularized))
        scale = g.Add(g.Sqrt(h_new), _scalar(ctx, epsilon))
        new_xs.append(g.Sub(x, g.Div(g.Mul(rate, regularized), scale)))
        new_hs.append(h_new)
    return new_xs + new_hs


@converter("Adam", domain=_TRAINING)
def convert_adam(ctx: Any, node: Any) -> list[Tensor]:
    xs, gs, vs, hs = _optimizer_groups(ctx, node, 4)
    g = ctx.g
    alpha = float(ctx.attr(node, "alpha", 0.9))
    beta = float(ctx.attr(node, "beta", 0.999))
    epsilon = float(ctx.attr(node, "epsilon", 0.0))
    post = float(ctx.attr(node, "norm_coefficient_post", 0.0))
    rate = ctx.input(0)
    steps = _cast(ctx, ctx.input(1), "f32")
    one = _scalar(ctx, 1.0)
    # With T > 0 the rate carries the bias correction sqrt(1 - beta^T) / (1 - alpha^T).
    corrected = g.Div(g.Mul(rate, g.Sqrt(g.Sub(one, g.Pow(_scalar(ctx, beta), steps)))),
                      g.Sub(one, g.Pow(_scalar(ctx, alpha), steps)))
    started = g.Greater(ctx.input(1), ctx.constant(np.int64(0)))
    rate = g.Where(started, corrected, rate)
    new_xs, new_vs, new_hs = [], [], []
    for x, gradient, v, h in zip(xs, gs, vs, hs):
        regularized = _regularized(ctx, node, x, gradient)
        v_new = g.Add(g.Mul(_scalar(ctx, alpha), v), g.Mul(_scalar(ctx, 1.0 - alpha),
                                                           regularized))
        h_new = g.Add(g.Mul(_scalar(ctx, beta), h),
                      g.Mul(_scalar(ctx, 1.0 - beta), g.Mul(regularized, regularized)))
        scale = g.Add(g.Sqrt(h_new), _scalar(ctx, epsilon))
        x_new = g.Sub(x, g.Mul(rate, g.Div(v_new, scale)))
        if post != 0.0:
            x_new = g.Mul(_scalar(ctx, 1.0 - post), x_new)
        new_xs.append(x_new)
        new_vs.append(v_new)
        new_hs.append(h_new)
    return new_xs + new_vs + new_hs


@converter("Momentum", domain=_TRAINING)
def convert_momentum(ctx: Any, node: Any) -> list[Tensor]:
    xs, gs, vs = _optimizer_groups(ctx, node, 3)
    g = ctx.g
    alpha = float(ctx.attr(node, "alpha"))
    beta = float(ctx.attr(node, "beta"))
    mode = ctx.attr(node, "mode")
    if isinstance(mode, bytes):
        mode = mode.decode()
    if mode not in ("standard", "nesterov"):
        raise ctx.unsupported(f"mode={mode!r} (ONNX defines standard and nesterov)")
    rate = ctx.input(0)
    # The gradient's coefficient is 1 at the first step (T == 0), beta afterwards.
    started = g.Greater(ctx.input(1), ctx.constant(np.int64(0)))
    beta_t = g.Where(started, _scalar(ctx, beta), _scalar(ctx, 1.0))
    new_xs, new_vs = [], []
    for x, gradient, v in zip(xs, gs, vs):
        regularized = _regularized(ctx, node, x, gradient)
        v_new = g.Add(g.Mul(_scalar(ctx, alpha), v), g.Mul(beta_t, regularized))
        step = v_new if mode == "standard" else \
            g.Add(regularized, g.Mul(_scalar(ctx, alpha), v_new))
        new_xs.append(g.Sub(x, g.Mul(rate, step)))
        new_vs.append(v_new)
    return new_xs + new_vs


# ---- AffineGrid: a constant homogeneous base grid times the runtime theta ----

def _grid_axis(size: int, align_corners: bool) -> np.ndarray:
    """Normalized coordinates in [-1, 1] of ``size`` samples along one axis."""
    index = np.arange(size, dtype=np.float64)
    if align_corners:
        return -1.0 + 2.0 * index / (size - 1) if size > 1 else np.full(1, -1.0)
    return (2.0 * index + 1.0) / size - 1.0


@converter("AffineGrid")
def convert_affine_grid(ctx: Any, node: Any) -> list[Tensor]:
    theta_shape = tuple(ctx.shape(0))
    if len(theta_shape) != 3 or theta_shape[1:] not in ((2, 3), (3, 4)):
        raise ctx.unsupported(f"theta of shape {theta_shape} (needs [N, 2, 3] or [N, 3, 4])")
    spatial = theta_shape[1]
    size = ctx.const(1)
    if size is not None:
        size = [int(v) for v in np.asarray(size).reshape(-1)]
    else:
        out = ctx.output_shape(0)
        if out is None or len(out) != spatial + 2:
            raise ctx.unsupported("the size is only known at run time")
        size = [theta_shape[0], 1, *[int(d) for d in out[1:-1]]]
    if len(size) != spatial + 2 or size[0] != theta_shape[0] or min(size[2:]) <= 0:
        raise ctx.unsupported(f"size {size} for theta of shape {theta_shape}")
    dtype = ctx.dtype(0)
    if dtype not in ("f32", "f16"):
        raise ctx.unsupported(f"theta of dtype {dtype} (needs f32 or f16)")
    align = bool(ctx.attr(node, "align_corners", 0))
    dims = size[2:]
    # Base points [x, y, (z,) 1] over the grid, x varying fastest: shape [prod(dims), spatial + 1].
    axes = [_grid_axis(d, align) for d in dims]
    mesh = np.meshgrid(*axes, indexing="ij")
    coords = [m.reshape(-1) for m in reversed(mesh)]
    base = np.stack([*coords, np.ones(coords[0].size)], axis=1).astype(np.float32)
    g = ctx.g
    theta = ctx.input(0) if dtype == "f32" else _cast(ctx, ctx.input(0), "f32")
    points = g.MatMul(ctx.constant(base), g.Transpose(theta, perm=[0, 2, 1]))
    grid = g.Reshape(points, shape=[theta_shape[0], *dims, spatial])
    return [grid if dtype == "f32" else _cast(ctx, grid, dtype)]


# ---- Det by the cofactor formula, for 2x2 and 3x3 matrices ----

@converter("Det")
def convert_det(ctx: Any, node: Any) -> list[Tensor]:
    shape = tuple(ctx.shape(0))
    if len(shape) < 2 or shape[-1] != shape[-2] or shape[-1] not in (2, 3):
        raise ctx.unsupported(f"an input of shape {shape} (nxe computes 2x2 and 3x3 "
                              "determinants)")
    dtype = ctx.dtype(0)
    if dtype not in ("f32", "f16"):
        raise ctx.unsupported(f"an input of dtype {dtype} (needs f32 or f16)")
    g = ctx.g
    x = ctx.input(0) if dtype == "f32" else _cast(ctx, ctx.input(0), "f32")
    axis = len(shape) - 2
    rows = [g.Gather(x, ctx.constant(np.int64(i)), axis=axis) for i in range(shape[-1])]

    def at(i: int, j: int) -> Tensor:
        return g.Gather(rows[i], ctx.constant(np.int64(j)), axis=axis)

    if shape[-1] == 2:
        det = g.Sub(g.Mul(at(0, 0), at(1, 1)), g.Mul(at(0, 1), at(1, 0)))
    else:
        terms = []
        for j in range(3):
            minor = g.Sub(g.Mul(at(1, (j + 1) % 3), at(2, (j + 2) % 3)),
                          g.Mul(at(1, (j + 2) % 3), at(2, (j + 1) % 3)))
            terms.append(g.Mul(at(0, j), minor))
        det = g.Add(g.Add(terms[0], terms[1]), terms[2])
    return [det if dtype == "f32" else _cast(ctx, det, dtype)]


# ---- CausalConvWithState: depthwise causal Conv1d over [past state, input] ----

@converter("CausalConvWithState")
def convert_causal_conv_with_state(ctx: Any, node: Any) -> list[Any]:
    activation = ctx.attr(node, "activation", "none")
    if isinstance(activation, bytes):
        activation = activation.decode()
    if activation not in ("none", "silu", "swish"):
        raise ctx.unsupported(f"activation={activation!r} (ONNX defines none, silu, swish)")
    shape = tuple(ctx.shape(0))
    weight_shape = tuple(ctx.shape(1))
    if len(shape) != 3 or len(weight_shape) != 3 or weight_shape[:2] != (shape[1], 1):
        raise ctx.unsupported(f"an input of shape {shape} with a weight of shape "
                              f"{weight_shape} (needs [B, C, L] and [C, 1, k])")
    batch, channels, _ = shape
    k = weight_shape[2]
    dtype = ctx.dtype(0)
    if dtype not in ("f32", "f16"):
        raise ctx.unsupported(f"an input of dtype {dtype} (needs f32 or f16)")
    for index in (1, 2, 3):
        if ctx.has_input(index) and ctx.dtype(index) != dtype:
            raise ctx.unsupported(f"input {index} of dtype {ctx.dtype(index)} with an input "
                                  f"of dtype {dtype}")
    if ctx.has_input(2) and tuple(ctx.shape(2)) != (channels,):
        raise ctx.unsupported(f"a bias of shape {ctx.shape(2)} for {channels} channels")
    state_shape = (batch, channels, k - 1)
    if ctx.has_input(3) and tuple(ctx.shape(3)) != state_shape:
        raise ctx.unsupported(f"a past state of shape {ctx.shape(3)} (needs {state_shape})")
    g = ctx.g

    def f32(index: int) -> Tensor:
        t = ctx.input(index)
        return t if dtype == "f32" else _cast(ctx, t, "f32")

    x = f32(0)
    if k > 1:
        past = f32(3) if ctx.has_input(3) else \
            ctx.constant(np.zeros(state_shape, dtype=np.float32))
        padded = g.Concat(past, x, axis=2)
    else:
        padded = x
    conv_inputs = [padded, f32(1)] + ([f32(2)] if ctx.has_input(2) else [])
    y = g.Conv1d(*conv_inputs, strides=[1], dilations=[1], pads=[0, 0], group=channels)
    if activation != "none":
        y = g.Mul(y, g.Sigmoid(y))
    outputs: list[Any] = [y if dtype == "f32" else _cast(ctx, y, dtype)]
    if len(node.output) > 1 and node.output[1]:
        if k == 1:
            outputs.append(np.zeros(state_shape, dtype=_dtypes.numpy_of(
                _dtypes.code_of(dtype))))
        else:
            total = shape[2] + k - 1
            state = g.Slice(padded, starts=[total - (k - 1)], ends=[total], axes=[2])
            outputs.append(state if dtype == "f32" else _cast(ctx, state, dtype))
    return outputs
