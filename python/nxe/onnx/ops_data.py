"""ONNX converters for data movement: Pad, Tile, Expand, the gathers and scatters, OneHot,
SpaceToDepth, Resize, Trilu, Flatten, Shape, Size, Range, ConstantOfShape, NonZero and Einsum.
Values that nxe takes as attributes (pads, repeats, sizes, ...) must be known at import.
"""

from __future__ import annotations

import math
import string
from typing import Any

import numpy as np

from .. import _dtypes
from ..graph import Tensor
from .registry import converter, fold_only


def _known(ctx: Any, index: int, what: str) -> np.ndarray | None:
    """Input ``index`` as a numpy array; None when absent; unsupported when only known at run
    time."""
    if not ctx.has_input(index):
        return None
    value = ctx.const(index)
    if value is None:
        raise ctx.unsupported(f"{what} is only known at run time")
    return np.asarray(value)


def _known_ints(ctx: Any, index: int, what: str) -> list[int] | None:
    value = _known(ctx, index, what)
    return None if value is None else [int(v) for v in value.reshape(-1)]


def _scalar_float(value: np.ndarray) -> float:
    flat = np.asarray(value).reshape(-1)
    return float(flat[0]) if flat.size else 0.0


def _as_index(ctx: Any, index: int) -> Tensor:
    """Input ``index`` as an i32 or i64 tensor (other integer types are widened)."""
    tensor = ctx.input(index)
    if ctx.dtype(index) in ("i32", "i64"):
        return tensor
    if ctx.dtype(index) in ("i8", "u8", "i16", "f32", "f16"):
        return ctx.g.Cast(tensor, to=_dtypes.code_of("i64"))
    raise ctx.unsupported(f"indices of dtype {ctx.dtype(index)}")


# ---- Pad, Tile, Expand ------------------------------------------------------------------------

@converter("Pad")
def convert_pad(ctx: Any, node: Any) -> list[Tensor]:
    rank = len(ctx.shape(0))
    mode = ctx.attr(node, "mode", "constant")
    if isinstance(mode, bytes):
        mode = mode.decode()
    if ctx.opset < 11:
        pads = [int(p) for p in ctx.attr(node, "pads", [])]
        value = float(ctx.attr(node, "value", 0.0))
    else:
        pads = _known_ints(ctx, 1, "'pads'") or []
        runtime_value = ctx.has_input(2) and ctx.const(2) is None
        constant = None if runtime_value else _known(ctx, 2, "'constant_value'")
        value = 0.0 if constant is None else _scalar_float(constant)
        axes = _known_ints(ctx, 3, "'axes'")
        if axes is not None:
            full = [0] * (2 * rank)
            for i, axis in enumerate(axes):
                axis = axis + rank if axis < 0 else axis
                full[axis] = pads[i]
                full[rank + axis] = pads[len(axes) + i]
            pads = full
    if mode not in ("constant", "reflect", "edge", "wrap"):
        raise ctx.unsupported(f"mode {mode!r}")
    if not math.isfinite(value) and ctx.dtype(0) not in ("f32", "f16", "bf16"):
        raise ctx.unsupported("a non-finite fill value for integer data")
    padded = ctx.g.Pad(ctx.input(0), pads=pads, mode=mode, value=value)
    if ctx.opset < 11 or not runtime_value or mode != "constant":
        return [padded]
    # The fill value is only known at run time, but pads and shapes are static: the padded
    # region is a constant mask, and the value is selected there.
    if ctx.dtype(2) != ctx.dtype(0) or int(np.prod(ctx.shape(2))) != 1:
        raise ctx.unsupported(f"a runtime 'constant_value' of shape {ctx.shape(2)} and dtype "
                              f"{ctx.dtype(2)} for data of dtype {ctx.dtype(0)}")
    mask = _pad_mask(ctx.shape(0), pads)
    if not mask.any():
        return [padded]
    fill = ctx.g.Reshape(ctx.input(2), shape=[1] * mask.ndim)
    return [ctx.g.Where(ctx.constant(mask), fill, padded)]


def _pad_mask(shape: tuple[int, ...], pads: list[int]) -> np.ndarray:
    """True where constant padding of an array of ``shape`` by ``pads`` (ONNX order, negative
    values crop) writes the fill value rather than copying input."""
    rank = len(shape)
    out_shape = [shape[i] + pads[i] + pads[rank + i] for i in range(rank)]
    mask = np.zeros(out_shape, dtype=bool)
    for axis in range(rank):
        source = np.arange(out_shape[axis]) - pads[axis]
        outside = (source < 0) | (source >= shape[axis])
        view = [1] * rank
        view[axis] = out_shape[axis]
        mask |= outside.reshape(view)
    return mask


@converter("Tile")
def convert_tile(ctx: Any, node: Any) -> list[Tensor]:
    repeats = _known_ints(ctx, 1, "'repeats'")
    return [ctx.g.Tile(ctx.input(0), repeats=repeats)]


@converter("Expand")
def convert_expand(ctx: Any, node: Any) -> list[Tensor]:
    shape = _known_ints(ctx, 1, "the target shape")
    return [ctx.g.Expand(ctx.input(0), shape=shape)]


@converter("SpaceToDepth")
def convert_space_to_depth(ctx: Any, node: Any) -> list[Tensor]:
    return [ctx.g.SpaceToDepth(ctx.input(0), blocksize=int(ctx.attr(node, "blocksize")),
                               mode=_text(ctx.attr(node, "mode", "DCR")))]


@converter("Trilu")
def convert_trilu(ctx: Any, node: Any) -> list[Tensor]:
    k = _known(ctx, 1, "'k'")
    return [ctx.g.Trilu(ctx.input(0), upper=int(ctx.attr(node, "upper", 1)),
                        k=0 if k is None else int(np.asarray(k).reshape(-1)[0]))]


# ---- Gathers and scatters ---------------------------------------------------------------------

@converter("GatherElements")
def convert_gather_elements(ctx: Any, node: Any) -> list[Tensor]:
    return [ctx.g.GatherElements(ctx.input(0), _as_index(ctx, 1),
                                 axis=int(ctx.attr(node, "axis", 0)))]


@converter("GatherND")
def convert_gather_nd(ctx: Any, node: Any) -> list[Tensor]:
    return [ctx.g.GatherND(ctx.input(0), _as_index(ctx, 1),
                           batch_dims=int(ctx.attr(node, "batch_dims", 0)))]


def _reduction(ctx: Any, node: Any) -> str:
    reduction = ctx.attr(node, "reduction", "none")
    return reduction.decode() if isinstance(reduction, bytes) else reduction


@converter("ScatterElements", "Scatter")
def convert_scatter_elements(ctx: Any, node: Any) -> list[Tensor]:
    return [ctx.g.ScatterElements(ctx.input(0), _as_index(ctx, 1), ctx.input(2),
                                  axis=int(ctx.attr(node, "axis", 0)),
                                  reduction=_reduction(ctx, node))]


@converter("ScatterND")
def convert_scatter_nd(ctx: Any, node: Any) -> list[Tensor]:
    return [ctx.g.ScatterND(ctx.input(0), _as_index(ctx, 1), ctx.input(2),
                            reduction=_reduction(ctx, node))]


@converter("OneHot")
def convert_one_hot(ctx: Any, node: Any) -> list[Tensor]:
    depth = _known(ctx, 1, "'depth'")
    values = _known(ctx, 2, "'values'")
    depth_value = float(np.asarray(depth).reshape(-1)[0])
    if not math.isfinite(depth_value) or depth_value < 1:
        raise ctx.unsupported(f"depth {depth_value}")
    dtype = ctx.dtype(2)
    off, on = (float(v) for v in np.asarray(values).reshape(-1)[:2])
    return [ctx.g.OneHot(_as_index(ctx, 0), depth=int(depth_value),
                         axis=int(ctx.attr(node, "axis", -1)), on_value=on, off_value=off,
                         dtype=dtype)]


# ---- Resize -----------------------------------------------------------------------------------

def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@converter("Resize")
def convert_resize(ctx: Any, node: Any) -> list[Tensor]:
    shape = list(ctx.shape(0))
    rank = len(shape)
    if ctx.opset < 11:
        scales = _known(ctx, 1, "'scales'")
        roi = sizes = None
        coord, nearest_mode = "asymmetric", "floor"
    else:
        roi = _known(ctx, 1, "'roi'")
        scales = _known(ctx, 2, "'scales'")
        sizes = _known(ctx, 3, "'sizes'")
        coord = _text(ctx.attr(node, "coordinate_transformation_mode", "half_pixel"))
        nearest_mode = _text(ctx.attr(node, "nearest_mode", "round_prefer_floor"))
    if int(ctx.attr(node, "antialias", 0)):
        raise ctx.unsupported("antialias=1")
    mode = _text(ctx.attr(node, "mode", "nearest"))
    if mode != "nearest" and ctx.dtype(0) != "f32":
        raise ctx.unsupported(f"{mode} mode on {ctx.dtype(0)} input")
    scales = None if scales is None or scales.size == 0 else [float(s) for s in scales.reshape(-1)]
    sizes = None if sizes is None or sizes.size == 0 else [int(s) for s in sizes.reshape(-1)]
    roi = None if roi is None or roi.size == 0 else [float(r) for r in roi.reshape(-1)]
    axes = ctx.attr(node, "axes", None)
    axes = list(range(rank)) if axes is None else [a + rank if a < 0 else a for a in axes]
    if scales is None and sizes is None:
        raise ctx.unsupported("neither scales nor sizes is given")
    if any(not 0 <= a < rank for a in axes) or len(set(axes)) != len(axes):
        raise ctx.invalid(f"axes {axes} are not distinct axes of rank {rank}")
    for what, values in (("scales", scales), ("sizes", sizes)):
        if values is not None and len(values) != len(axes):
            raise ctx.invalid(f"{len(values)} {what} for {len(axes)} axes")
    if scales is not None:
        full_scales = [1.0] * rank
        for i, a in enumerate(axes):
            full_scales[a] = scales[i]
        scales = full_scales
    if sizes is not None:
        full_sizes = list(shape)
        for i, a in enumerate(axes):
            full_sizes[a] = sizes[i]
        sizes = full_sizes
        policy = _text(ctx.attr(node, "keep_aspect_ratio_policy", "stretch"))
        if policy != "stretch":
            ratios = [sizes[a] / shape[a] for a in axes]
            scale = min(ratios) if policy == "not_larger" else max(ratios)
            scales = [scale if d in axes else 1.0 for d in range(rank)]
            sizes = [int(scale * shape[d] + 0.5) if d in axes else shape[d] for d in range(rank)]
    attrs: dict[str, Any] = {"mode": mode, "coordinate_transformation_mode": coord,
                             "nearest_mode": nearest_mode,
                             "cubic_coeff_a": float(ctx.attr(node, "cubic_coeff_a", -0.75)),
                             "exclude_outside": int(ctx.attr(node, "exclude_outside", 0)),
                             "extrapolation_value": float(ctx.attr(node, "extrapolation_value",
                                                                   0.0))}
    if sizes is not None:
        attrs["sizes"] = sizes
    if scales is not None:
        attrs["scales"] = scales
    if coord == "tf_crop_and_resize" and roi is not None:
        if len(roi) == 2 * len(axes) and len(axes) != rank:
            full_roi = [0.0] * rank + [1.0] * rank
            for i, a in enumerate(axes):
                full_roi[a] = roi[i]
                full_roi[rank + a] = roi[len(axes) + i]
            roi = full_roi
        attrs["roi"] = roi
    return [ctx.g.Resize(ctx.input(0), **attrs)]


# ---- Shape-only ops ---------------------------------------------------------------------------

@converter("Flatten")
def convert_flatten(ctx: Any, node: Any) -> list[Tensor]:
    shape = ctx.shape(0)
    axis = int(ctx.attr(node, "axis", 1))
    axis = axis + len(shape) if axis < 0 else axis
    if not 0 <= axis <= len(shape):
        raise ctx.unsupported(f"axis {axis} for rank {len(shape)}")
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    inner = int(np.prod(shape[axis:], dtype=np.int64))
    return [ctx.g.Reshape(ctx.input(0), shape=[outer, inner], allowzero=1)]


@converter("Shape")
def convert_shape(ctx: Any, node: Any) -> list[np.ndarray]:
    shape = list(ctx.shape(0))
    start = int(ctx.attr(node, "start", 0))
    end = ctx.attr(node, "end", None)
    end = len(shape) if end is None else int(end)
    return [np.array(shape[slice(start, end)], dtype=np.int64)]


@converter("Size")
def convert_size(ctx: Any, node: Any) -> list[np.ndarray]:
    return [np.array(int(np.prod(ctx.shape(0), dtype=np.int64)), dtype=np.int64)]


# The output shape of these depends on input values: they run only folded at import.
fold_only("Range", "start, limit and delta must be known at import (the output length "
                   "depends on their values)")
fold_only("ConstantOfShape", "the shape must be known at import")
fold_only("NonZero", "the output shape depends on the input values, which are only known at "
                     "run time")


# ---- Einsum -----------------------------------------------------------------------------------

def _parse_einsum(ctx: Any, equation: str, count: int) -> tuple[list[str], str]:
    equation = equation.replace(" ", "")
    if "..." in equation:
        raise ctx.unsupported("an equation with an ellipsis")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != count:
        raise ctx.unsupported(f"equation {equation!r} names {len(terms)} operands, "
                              f"{count} given")
    if not arrow:
        letters = "".join(terms)
        rhs = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    for term in terms + [rhs]:
        if len(set(term)) != len(term) or not set(term) <= set(string.ascii_letters):
            raise ctx.unsupported(f"equation {equation!r} (repeated letters in one term take "
                                  "diagonals)")
    if not set(rhs) <= set("".join(terms)):
        raise ctx.unsupported(f"equation {equation!r} has output letters no input has")
    return terms, rhs


def _sum_out(ctx: Any, x: Tensor, term: str, keep: set[str]) -> tuple[Tensor, str]:
    """Sums the letters of ``term`` not in ``keep``."""
    axes = [i for i, c in enumerate(term) if c not in keep]
    if not axes:
        return x, term
    return (ctx.g.ReduceSum(x, axes=axes, keepdims=0),
            "".join(c for c in term if c in keep))


def _permute(ctx: Any, x: Tensor, term: str, order: str) -> Tensor:
    perm = [term.index(c) for c in order]
    return x if perm == list(range(len(perm))) else ctx.g.Transpose(x, perm=perm)


@converter("Einsum")
def convert_einsum(ctx: Any, node: Any) -> list[Tensor]:
    """Maps einsum onto ReduceSum, Transpose, Reshape and MatMul: one operand is a sum and a
    permutation; two operands are a batched matrix product of (batch, kept-a, contracted) by
    (batch, contracted, kept-b). f16 and bf16 operands are computed in f32 and the result
    rounded once; f64 stays f64 (its product is a broadcast Mul summed by ReduceSum, as nxe's
    MatMul is f32 only)."""
    equation = _text(ctx.attr(node, "equation"))
    terms, out = _parse_einsum(ctx, equation, ctx.num_inputs)
    if ctx.num_inputs not in (1, 2):
        raise ctx.unsupported(f"{ctx.num_inputs} operands")
    dtype = ctx.dtype(0)
    if dtype not in ("f32", "f16", "bf16", "f64"):
        raise ctx.unsupported(f"operands of {dtype} (nxe's takes f32, f16, bf16 and f64)")
    if any(ctx.dtype(i) != dtype for i in range(ctx.num_inputs)):
        raise ctx.unsupported("operands of different dtypes")
    compute = "f64" if dtype == "f64" else "f32"
    operands = [ctx.input(i) if dtype == compute else
                ctx.g.Cast(ctx.input(i), to=_dtypes.code_of(compute))
                for i in range(ctx.num_inputs)]

    def result(y: Tensor) -> list[Tensor]:
        return [y if dtype == compute else ctx.g.Cast(y, to=_dtypes.code_of(dtype))]

    sizes: dict[str, int] = {}
    for i, term in enumerate(terms):
        for c, n in zip(term, ctx.shape(i)):
            if sizes.setdefault(c, n) != n:
                raise ctx.unsupported(f"letter {c!r} has sizes {sizes[c]} and {n} (broadcast)")
    if len(terms) == 1:
        x, term = _sum_out(ctx, operands[0], terms[0], set(out))
        return result(_permute(ctx, x, term, out))
    ta, tb = terms
    a, ta = _sum_out(ctx, operands[0], ta, set(out) | set(tb))
    b, tb = _sum_out(ctx, operands[1], tb, set(out) | set(ta))
    batch = "".join(c for c in ta if c in tb and c in out)
    contracted = "".join(c for c in ta if c in tb and c not in out)
    kept_a = "".join(c for c in ta if c not in tb)
    kept_b = "".join(c for c in tb if c not in ta)

    def size(letters: str) -> int:
        return int(np.prod([sizes[c] for c in letters], dtype=np.int64))

    a = ctx.g.Reshape(_permute(ctx, a, ta, batch + kept_a + contracted),
                      shape=[size(batch), size(kept_a), size(contracted)], allowzero=1)
    b = ctx.g.Reshape(_permute(ctx, b, tb, batch + contracted + kept_b),
                      shape=[size(batch), size(contracted), size(kept_b)], allowzero=1)
    if compute == "f64":
        # [n, m, k, 1] * [n, 1, k, p] summed over k.
        y = ctx.g.ReduceSum(ctx.g.Mul(ctx.g.Unsqueeze(a, axes=[3]),
                                      ctx.g.Unsqueeze(b, axes=[1])), axes=[2], keepdims=0)
    else:
        y = ctx.g.MatMul(a, b)
    order = batch + kept_a + kept_b
    y = ctx.g.Reshape(y, shape=[sizes[c] for c in order], allowzero=1)
    return result(_permute(ctx, y, order, out))


# ---- GridSample -------------------------------------------------------------------------------

# Opset 16 spelled the interpolation modes "bilinear" and "bicubic".
_GRID_SAMPLE_MODES = {"bilinear": "linear", "bicubic": "cubic", "linear": "linear",
                      "cubic": "cubic", "nearest": "nearest"}


def _string_attr(ctx: Any, node: Any, name: str, default: str) -> str:
    value = ctx.attr(node, name, default)
    return value.decode() if isinstance(value, bytes) else str(value)


@converter("GridSample")
def convert_grid_sample(ctx: Any, node: Any) -> list[Tensor]:
    if ctx.dtype(0) != "f32" or ctx.dtype(1) != "f32":
        raise ctx.unsupported(f"GridSample of {ctx.dtype(0)} with a {ctx.dtype(1)} grid "
                              "(nxe's takes f32)")
    mode = _string_attr(ctx, node, "mode", "linear" if ctx.opset >= 20 else "bilinear")
    if mode not in _GRID_SAMPLE_MODES:
        raise ctx.unsupported(f"mode={mode!r}")
    padding_mode = _string_attr(ctx, node, "padding_mode", "zeros")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ctx.unsupported(f"padding_mode={padding_mode!r}")
    if not 3 <= len(ctx.shape(0)) <= 5:
        raise ctx.unsupported(f"X of rank {len(ctx.shape(0))} (nxe takes 1 to 3 spatial axes)")
    return [ctx.g.GridSample(ctx.input(0), ctx.input(1), mode=_GRID_SAMPLE_MODES[mode],
                             padding_mode=padding_mode,
                             align_corners=int(ctx.attr(node, "align_corners", 0)))]


# ---- ReverseSequence --------------------------------------------------------------------------

@converter("ReverseSequence")
def convert_reverse_sequence(ctx: Any, node: Any) -> list[Tensor]:
    if ctx.dtype(1) != "i64":
        raise ctx.unsupported(f"sequence_lens of dtype {ctx.dtype(1)}")
    batch_axis = int(ctx.attr(node, "batch_axis", 1))
    time_axis = int(ctx.attr(node, "time_axis", 0))
    if {batch_axis, time_axis} != {0, 1}:
        raise ctx.unsupported(f"batch_axis={batch_axis}, time_axis={time_axis}")
    lens = ctx.input(1) if ctx.const(1) is None else ctx.constant(np.asarray(ctx.const(1)))
    return [ctx.g.ReverseSequence(ctx.input(0), lens, batch_axis=batch_axis,
                                  time_axis=time_axis)]


# ---- BitCast ----------------------------------------------------------------------------------

@converter("BitCast")
def convert_bit_cast(ctx: Any, node: Any) -> list[Tensor]:
    import onnx

    from_name = ctx.dtype(0)  # an input of a dtype nxe lacks is reported here
    to_type = int(ctx.attr(node, "to"))
    try:
        code = _dtypes.code_of(onnx.helper.tensor_dtype_to_np_dtype(to_type))
    except (KeyError, TypeError, ValueError):
        raise ctx.unsupported(f"bit cast to {onnx.helper.tensor_dtype_to_string(to_type)}, "
                              "which nxe does not have") from None
    from_size = _dtypes.numpy_of(_dtypes.code_of(from_name)).itemsize
    to_size = _dtypes.numpy_of(code).itemsize
    if from_size != to_size:
        raise ctx.unsupported(f"bit cast from {from_name} ({from_size} bytes) to "
                              f"{_dtypes.name_of(code)} ({to_size} bytes); nxe bit casts keep "
                              "the element size")
    if _dtypes.name_of(code) == "bool" and from_name != "bool":
        raise ctx.unsupported(f"bit cast from {from_name} to bool")
    return [ctx.g.BitCast(ctx.input(0), to=code)]
