"""ONNX converters for the ops nxe had before the importer: arithmetic, activations, matmul,
casts and quantization, shape-only data movement, softmax, layer norm, sum and mean.
Values a converter needs at import (shapes, axes, scales) come from ctx; nothing is guessed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _dtypes
from .. import registry as op_registry
from ..graph import Tensor
from ._importer import _ONNX_TYPES, nxe_dtype_of, onnx_type_name
from .registry import converter


def _accepts(op_type: str, dtype: str, input_index: int = 0) -> bool:
    schema = op_registry.find(op_type)
    return schema is not None and dtype in schema["inputs"][input_index]["dtypes"]


def _cast(ctx: Any, tensor: Tensor, dtype: str) -> Tensor:
    return ctx.g.Cast(tensor, to=_dtypes.code_of(dtype))


def _compute_dtype(ctx: Any, op_type: str, dtype: str) -> str:
    """The dtype ``op_type`` runs in for inputs of ``dtype``: the dtype itself when the op
    takes it, else a wider one whose result casts back exactly (f16 and bf16 via f32; narrow
    integers via i32, wrapping as ONNX's integer arithmetic does)."""
    if _accepts(op_type, dtype):
        return dtype
    if dtype in ("f16", "bf16") and _accepts(op_type, "f32"):
        return "f32"
    if dtype in ("i8", "u8", "i16") and _accepts(op_type, "i32"):
        return "i32"
    raise ctx.unsupported(f"nxe's {op_type} does not take {dtype}")


def _in_dtype(ctx: Any, tensors: list[Tensor], dtype: str, compute: str) -> list[Tensor]:
    return tensors if compute == dtype else [_cast(ctx, t, compute) for t in tensors]


def _out_dtype(ctx: Any, tensor: Tensor, dtype: str, compute: str) -> Tensor:
    return tensor if compute == dtype else _cast(ctx, tensor, dtype)


@converter("Add", "Sub", "Mul", "Div")
def convert_arithmetic(ctx: Any, node: Any) -> list[Tensor]:
    dtype = ctx.dtype(0)
    compute = _compute_dtype(ctx, node.op_type, dtype)
    a, b = _in_dtype(ctx, [ctx.input(0), ctx.input(1)], dtype, compute)
    return [_out_dtype(ctx, getattr(ctx.g, node.op_type)(a, b), dtype, compute)]


def _unary(ctx: Any, op_type: str, **attrs: Any) -> list[Tensor]:
    dtype = ctx.dtype(0)
    compute = _compute_dtype(ctx, op_type, dtype)
    (x,) = _in_dtype(ctx, [ctx.input(0)], dtype, compute)
    return [_out_dtype(ctx, getattr(ctx.g, op_type)(x, **attrs), dtype, compute)]


@converter("Relu", "Tanh", "Sigmoid", "Erf")
def convert_unary(ctx: Any, node: Any) -> list[Tensor]:
    return _unary(ctx, node.op_type)


@converter("LeakyRelu")
def convert_leaky_relu(ctx: Any, node: Any) -> list[Tensor]:
    return _unary(ctx, "LeakyRelu", alpha=float(ctx.attr(node, "alpha", 0.01)))


@converter("Gelu")
def convert_gelu(ctx: Any, node: Any) -> list[Tensor]:
    approximate = ctx.attr(node, "approximate", "none")
    if approximate not in ("none", "tanh"):
        raise ctx.unsupported(f"approximate={approximate!r}")
    return _unary(ctx, "Gelu", approximate=approximate)


@converter("MatMul")
def convert_matmul(ctx: Any, node: Any) -> list[Tensor]:
    dtype = ctx.dtype(0)
    compute = _compute_dtype(ctx, "MatMul", dtype)
    a, b = _in_dtype(ctx, [ctx.input(0), ctx.input(1)], dtype, compute)
    return [_out_dtype(ctx, ctx.g.MatMul(a, b), dtype, compute)]


@converter("Gemm")
def convert_gemm(ctx: Any, node: Any) -> list[Tensor]:
    dtype = ctx.dtype(0)
    compute = _compute_dtype(ctx, "Gemm", dtype)
    inputs = [ctx.input(0), ctx.input(1)]
    if ctx.has_input(2):
        inputs.append(ctx.input(2))
    inputs = _in_dtype(ctx, inputs, dtype, compute)
    y = ctx.g.Gemm(*inputs, alpha=float(ctx.attr(node, "alpha", 1.0)),
                   beta=float(ctx.attr(node, "beta", 1.0)),
                   transA=int(ctx.attr(node, "transA", 0)),
                   transB=int(ctx.attr(node, "transB", 0)))
    return [_out_dtype(ctx, y, dtype, compute)]


@converter("Identity")
def convert_identity(ctx: Any, node: Any) -> list[Tensor]:
    return [ctx.input(0)]


@converter("Dropout")
def convert_dropout(ctx: Any, node: Any) -> list[Any]:
    # Inference: the identity. A runtime training_mode could turn dropout on, so it must be
    # known (and false).
    if ctx.has_input(2):
        training = ctx.const(2)
        if training is None:
            raise ctx.unsupported("training_mode is only known at run time")
        ratio = ctx.const(1) if ctx.has_input(1) else np.array(0.5)
        if bool(training) and (ratio is None or float(ratio) != 0.0):
            raise ctx.unsupported("training_mode=true with a nonzero ratio (random dropout)")
    results: list[Any] = [ctx.input(0)]
    if len(node.output) > 1 and node.output[1]:
        results.append(np.ones(ctx.shape(0), dtype=np.bool_))
    return results


def _onnx_to_nxe(ctx: Any, elem_type: int) -> str:
    if elem_type not in _ONNX_TYPES:
        raise ctx.unsupported(f"cast to {onnx_type_name(elem_type)}, which nxe does not have")
    return _ONNX_TYPES[elem_type][1]


@converter("Cast")
def convert_cast(ctx: Any, node: Any) -> list[Tensor]:
    ctx.dtype(0)  # an input of a dtype nxe lacks is reported here
    return [_cast(ctx, ctx.input(0), _onnx_to_nxe(ctx, ctx.attr(node, "to")))]


@converter("CastLike")
def convert_cast_like(ctx: Any, node: Any) -> list[Tensor]:
    ctx.dtype(0)
    return [_cast(ctx, ctx.input(0), ctx.dtype(1))]


def _quant_values(ctx: Any, node: Any, x_rank: int,
                  blocked: bool = False) -> tuple[np.ndarray, np.ndarray | None, int]:
    """(scale, zero point or None, axis) of a Quantize/DequantizeLinear node, checked; with
    ``blocked``, block-wise scales and zero points come back repeated to the input's shape."""
    scale = ctx.const(1)
    if scale is None:
        raise ctx.unsupported("the scale is only known at run time")
    zero_point = ctx.const(2) if ctx.has_input(2) else None
    if ctx.has_input(2) and zero_point is None:
        raise ctx.unsupported("the zero point is only known at run time")
    axis = int(ctx.attr(node, "axis", 1))
    block_size = int(ctx.attr(node, "block_size", 0))
    if block_size != 0:
        if not blocked:
            raise ctx.unsupported("blocked quantization (block_size > 0)")
        axis = axis + x_rank if axis < 0 else axis
        dim = ctx.shape(0)[axis]

        def expand(values: np.ndarray) -> np.ndarray:
            return np.ascontiguousarray(np.repeat(values, block_size, axis=axis).take(
                range(dim), axis=axis))

        return expand(scale), None if zero_point is None else expand(zero_point), axis
    if scale.ndim > 1:
        raise ctx.unsupported(f"a scale of rank {scale.ndim}")
    if scale.ndim == 1 and scale.size > 1:
        axis = axis + x_rank if axis < 0 else axis
        if not 0 <= axis < x_rank:
            raise ctx.unsupported(f"axis {axis} for an input of rank {x_rank}")
    return scale, zero_point, axis


def _along(values: np.ndarray, axis: int, rank: int) -> np.ndarray:
    """A 1-D per-axis array shaped to broadcast along ``axis`` of a rank-``rank`` tensor
    (a full-rank array, as blocked quantization gives, is already shaped)."""
    if values.ndim == rank and rank > 1:
        return values
    if values.ndim == 0 or values.size == 1:
        return values.reshape(())
    shape = [1] * rank
    shape[axis] = values.size
    return values.reshape(shape)


@converter("DequantizeLinear")
def convert_dequantize_linear(ctx: Any, node: Any) -> list[Tensor]:
    # y = (float(x) - float(zero_point)) * scale, as ONNX defines it, in the scale's dtype.
    rank = len(ctx.shape(0))
    scale, zero_point, axis = _quant_values(ctx, node, rank, blocked=True)
    out_dtype = nxe_dtype_of(scale)
    if out_dtype not in ("f32", "f16"):
        raise ctx.unsupported(f"a scale of dtype {scale.dtype}")
    if ctx.dtype(0) not in ("i8", "u8", "i16", "i32"):
        raise ctx.unsupported(f"input dtype {ctx.dtype(0)}")
    x = _cast(ctx, ctx.input(0), "f32")
    if zero_point is not None and np.any(zero_point != 0):
        x = ctx.g.Sub(x, ctx.constant(_along(zero_point.astype(np.float32), axis, rank)))
    y = ctx.g.Mul(x, ctx.constant(_along(scale.astype(np.float32), axis, rank)))
    return [y if out_dtype == "f32" else _cast(ctx, y, "f16")]


_QUANT_RANGES = {"i8": (-128, 127), "u8": (0, 255)}


def _quantize_at_run_time(ctx: Any, node: Any) -> list[Tensor]:
    """QuantizeLinear with a scale or zero point known only at run time, composed as
    saturate(round_half_even(x / scale) + zero_point) in f32 and cast to the output dtype."""
    if int(ctx.attr(node, "block_size", 0)) != 0:
        raise ctx.unsupported("blocked quantization with a scale known only at run time")
    for index, what in ((1, "scale"), (2, "zero point")):
        if ctx.has_input(index) and tuple(ctx.shape(index)) not in ((), (1,)):
            raise ctx.unsupported(f"a run-time {what} of shape {ctx.shape(index)} (nxe takes "
                                  "a per-tensor one)")
    if ctx.has_input(2):
        out_dtype = ctx.dtype(2)
    else:
        elem = int(ctx.attr(node, "output_dtype", 0))
        out_dtype = _onnx_to_nxe(ctx, elem) if elem else "u8"
    if out_dtype not in _QUANT_RANGES:
        raise ctx.unsupported(f"quantizing to {out_dtype}; nxe quantizes to i8 and u8")
    dtype = ctx.dtype(0)
    if dtype not in ("f32", "f16") or ctx.dtype(1) != dtype:
        raise ctx.unsupported(f"an input of dtype {dtype} with a scale of dtype "
                              f"{ctx.dtype(1)} (needs f32 or f16 for both)")
    g = ctx.g
    x = ctx.input(0) if dtype == "f32" else _cast(ctx, ctx.input(0), "f32")
    scale = ctx.input(1) if dtype == "f32" else _cast(ctx, ctx.input(1), "f32")
    if ctx.dtype(0) == "f16":
        # ONNX divides in the input's dtype: round the quotient to f16 first.
        y = g.Round(_cast(ctx, _cast(ctx, g.Div(x, scale), "f16"), "f32"))
    else:
        y = g.Round(g.Div(x, scale))
    if ctx.has_input(2):
        y = g.Add(y, _cast(ctx, ctx.input(2), "f32"))
    low, high = _QUANT_RANGES[out_dtype]
    return [_cast(ctx, g.Clip(y, min=float(low), max=float(high)), out_dtype)]


@converter("QuantizeLinear")
def convert_quantize_linear(ctx: Any, node: Any) -> list[Tensor]:
    if ctx.const(1) is None or (ctx.has_input(2) and ctx.const(2) is None):
        return _quantize_at_run_time(ctx, node)
    rank = len(ctx.shape(0))
    scale, zero_point, axis = _quant_values(ctx, node, rank)
    if zero_point is not None:
        out_dtype = nxe_dtype_of(zero_point)
    else:
        elem = int(ctx.attr(node, "output_dtype", 0))
        out_dtype = _onnx_to_nxe(ctx, elem) if elem else "u8"
    if out_dtype not in ("i8", "u8"):
        raise ctx.unsupported(f"quantizing to {out_dtype if out_dtype else 'this dtype'}; "
                              "nxe quantizes to i8 and u8")
    if ctx.dtype(0) not in ("f32", "f16"):
        raise ctx.unsupported(f"input dtype {ctx.dtype(0)}")
    if ctx.dtype(0) == "f16" and scale.dtype != np.float16:
        raise ctx.unsupported("an f16 input with a scale of another dtype")
    x = ctx.input(0) if ctx.dtype(0) == "f32" else _cast(ctx, ctx.input(0), "f32")
    scales = scale.astype(np.float32).reshape(-1)
    zeros = (np.zeros(1, np.int64) if zero_point is None
             else zero_point.astype(np.int64).reshape(-1))
    y = ctx.g.tensor(dtype=out_dtype)
    if scales.size == 1 or (np.all(scales == scales[0]) and np.all(zeros == zeros[0])):
        y.set_quant_asymmetric(float(scales[0]), int(zeros[0]))
    elif np.all(zeros == 0):
        y.set_quant_per_channel(axis, [float(s) for s in scales])
    else:
        raise ctx.unsupported("per-axis quantization with nonzero zero points")
    return ctx.g.op("QuantizeLinear", [x], outputs=[y])


def _known_ints(ctx: Any, index: int, what: str) -> list[int] | None:
    """Input ``index`` as a list of ints; None when absent; unsupported when not known."""
    if not ctx.has_input(index):
        return None
    value = ctx.const(index)
    if value is None:
        raise ctx.unsupported(f"{what} is only known at run time")
    return [int(v) for v in np.asarray(value).reshape(-1)]


@converter("Reshape")
def convert_reshape(ctx: Any, node: Any) -> list[Tensor]:
    shape = _known_ints(ctx, 1, "the target shape") if ctx.opset >= 5 else \
        list(ctx.attr(node, "shape", []))
    allowzero = int(ctx.attr(node, "allowzero", 0))
    return [ctx.g.Reshape(ctx.input(0), shape=shape, allowzero=allowzero)]


@converter("Transpose")
def convert_transpose(ctx: Any, node: Any) -> list[Tensor]:
    perm = ctx.attr(node, "perm", None)
    if perm is None:
        perm = list(range(len(ctx.shape(0))))[::-1]
    return [ctx.g.Transpose(ctx.input(0), perm=[int(p) for p in perm])]


@converter("Concat")
def convert_concat(ctx: Any, node: Any) -> list[Tensor]:
    axis = int(ctx.attr(node, "axis"))
    rank = len(ctx.shape(0))
    axis = axis + rank if axis < 0 else axis
    # Empty parts add nothing; nxe tensors need at least one element.
    indices = [i for i in range(ctx.num_inputs) if ctx.has_input(i) and ctx.shape(i)[axis] > 0]
    if not indices:
        return [np.zeros(ctx.output_shape(0), dtype=_dtypes.numpy_of(
            _dtypes.code_of(ctx.dtype(0))))]
    if len(indices) == 1:
        return [ctx.input(indices[0])]
    return [ctx.g.Concat(*[ctx.input(i) for i in indices], axis=axis)]


@converter("Split")
def convert_split(ctx: Any, node: Any) -> list[Tensor]:
    shape = ctx.shape(0)
    axis = int(ctx.attr(node, "axis", 0))
    axis = axis + len(shape) if axis < 0 else axis
    count = len(node.output)
    if ctx.opset >= 13:
        sizes = _known_ints(ctx, 1, "the split sizes")
    else:
        sizes = ctx.attr(node, "split", None)
    if not sizes:
        parts = int(ctx.attr(node, "num_outputs", count))
        chunk = -(-shape[axis] // parts)
        sizes = [min(chunk, max(shape[axis] - chunk * i, 0)) for i in range(parts)]
    sizes = [int(s) for s in sizes]
    if len(sizes) != count:
        raise ctx.unsupported(f"{len(sizes)} split sizes for {count} outputs")
    if any(s < 0 for s in sizes) or sum(sizes) != shape[axis]:
        raise ctx.unsupported(f"split sizes {sizes} for an axis of size {shape[axis]}")
    if any(s == 0 for s in sizes):
        # nxe tensors need at least one element: empty parts are folded values, the others
        # slices of the input.
        empty_type = _dtypes.numpy_of(_dtypes.code_of(ctx.dtype(0)))
        parts: list[Any] = []
        offset = 0
        for size in sizes:
            if size == 0:
                part_shape = list(shape)
                part_shape[axis] = 0
                parts.append(np.zeros(part_shape, dtype=empty_type))
            else:
                parts.append(ctx.g.Slice(ctx.input(0), starts=[offset], ends=[offset + size],
                                         axes=[axis]))
            offset += size
        return parts
    if count == 1:
        return [ctx.input(0)]
    return list(ctx.g.Split(ctx.input(0), axis=axis, split=sizes, num_outputs=count))


@converter("Slice")
def convert_slice(ctx: Any, node: Any) -> list[Tensor]:
    if ctx.opset >= 10:
        starts = _known_ints(ctx, 1, "starts")
        ends = _known_ints(ctx, 2, "ends")
        axes = _known_ints(ctx, 3, "axes") or []
        steps = _known_ints(ctx, 4, "steps") or []
    else:
        starts = list(ctx.attr(node, "starts"))
        ends = list(ctx.attr(node, "ends"))
        axes = list(ctx.attr(node, "axes", []))
        steps = []
    out_shape = ctx.output_shape(0)
    if out_shape is not None and any(d == 0 for d in out_shape):
        # nxe tensors need at least one element: an empty result is a folded value.
        return [np.zeros(out_shape, dtype=_dtypes.numpy_of(_dtypes.code_of(ctx.dtype(0))))]
    rank = len(ctx.shape(0))
    axes = [a + rank if a < 0 else a for a in axes]
    # Clamp to what nxe's int64 attributes take without overflow surprises.
    limit = np.iinfo(np.int64)
    starts = [int(np.clip(s, limit.min + 1, limit.max)) for s in starts]
    ends = [int(np.clip(e, limit.min + 1, limit.max)) for e in ends]
    return [ctx.g.Slice(ctx.input(0), starts=starts, ends=ends, axes=axes, steps=steps)]


@converter("Squeeze")
def convert_squeeze(ctx: Any, node: Any) -> list[Tensor]:
    if ctx.opset >= 13:
        axes = _known_ints(ctx, 1, "axes")
    else:
        axes = ctx.attr(node, "axes", None)
    shape = ctx.shape(0)
    if not axes:
        axes = [i for i, d in enumerate(shape) if d == 1]
    axes = [int(a) + len(shape) if int(a) < 0 else int(a) for a in axes]
    if not axes:
        return [ctx.input(0)]
    return [ctx.g.Squeeze(ctx.input(0), axes=axes)]


@converter("Unsqueeze")
def convert_unsqueeze(ctx: Any, node: Any) -> list[Tensor]:
    if ctx.opset >= 13:
        axes = _known_ints(ctx, 1, "axes")
    else:
        axes = [int(a) for a in ctx.attr(node, "axes", [])]
    return [ctx.g.Unsqueeze(ctx.input(0), axes=axes)]


@converter("Gather")
def convert_gather(ctx: Any, node: Any) -> list[Tensor]:
    axis = int(ctx.attr(node, "axis", 0))
    indices = ctx.const(1)
    if indices is not None:
        shape = ctx.shape(0)
        if not -len(shape) <= axis < len(shape):
            raise ctx.invalid(f"axis {axis} is out of range for rank {len(shape)}")
        dim = shape[axis + len(shape) if axis < 0 else axis]
        if np.any((indices < -dim) | (indices >= dim)):
            raise ctx.unsupported(f"an index outside [{-dim}, {dim - 1}]")
    if any(d == 0 for d in ctx.output_shape(0) or ()):
        raise ctx.unsupported("an empty result")
    return [ctx.g.Gather(ctx.input(0), ctx.input(1), axis=axis)]


@converter("DepthToSpace")
def convert_depth_to_space(ctx: Any, node: Any) -> list[Tensor]:
    mode = ctx.attr(node, "mode", "DCR")
    return [ctx.g.DepthToSpace(ctx.input(0), blocksize=int(ctx.attr(node, "blocksize")),
                               mode=mode)]


def _float_input(ctx: Any, op_type: str) -> tuple[Tensor, str, str]:
    dtype = ctx.dtype(0)
    compute = _compute_dtype(ctx, op_type, dtype)
    if compute not in ("f32", "f16", "bf16"):
        raise ctx.unsupported(f"{op_type} of {dtype}")
    (x,) = _in_dtype(ctx, [ctx.input(0)], dtype, compute)
    return x, dtype, compute


@converter("Softmax")
def convert_softmax(ctx: Any, node: Any) -> list[Tensor]:
    x, dtype, compute = _float_input(ctx, "Softmax")
    shape = ctx.shape(0)
    rank = len(shape)
    if ctx.opset >= 13:
        axis = int(ctx.attr(node, "axis", -1))
        y = ctx.g.Softmax(x, axis=axis)
    else:
        # Before opset 13 the input is coerced to 2-D [prod(shape[:axis]), prod(shape[axis:])].
        axis = int(ctx.attr(node, "axis", 1))
        axis = axis + rank if axis < 0 else axis
        if axis == rank - 1:
            y = ctx.g.Softmax(x, axis=-1)
        else:
            rows = int(np.prod(shape[:axis]))
            flat = ctx.g.Reshape(x, shape=[rows, -1])
            y = ctx.g.Reshape(ctx.g.Softmax(flat, axis=-1), shape=list(shape))
    return [_out_dtype(ctx, y, dtype, compute)]


@converter("LayerNormalization")
def convert_layer_normalization(ctx: Any, node: Any) -> list[Tensor]:
    x, dtype, compute = _float_input(ctx, "LayerNorm")
    shape = ctx.shape(0)
    axis = int(ctx.attr(node, "axis", -1))
    axis = axis + len(shape) if axis < 0 else axis
    trailing = tuple(shape[axis:])
    affine = []
    for index in (1, 2):
        if not ctx.has_input(index):
            affine.append(None)
            continue
        value = ctx.const(index)
        if value is not None and tuple(value.shape) != trailing:
            value = np.broadcast_to(value, trailing)
            affine.append(ctx.constant(np.ascontiguousarray(value), dtype=np.float32)
                          if compute == "f32" else ctx.constant(np.ascontiguousarray(value)))
        elif value is None and ctx.shape(index) != trailing:
            raise ctx.unsupported(f"a runtime scale or bias of shape {ctx.shape(index)}")
        else:
            tensor = ctx.input(index)
            affine.append(tensor if ctx.dtype(index) == compute else _cast(ctx, tensor, compute))
    epsilon = float(ctx.attr(node, "epsilon", 1e-5))
    y = ctx.g.LayerNorm(x, affine[0], affine[1], axis=axis, epsilon=epsilon)
    results = [_out_dtype(ctx, y, dtype, compute)]
    if any(name for name in node.output[1:]):
        results += _layer_norm_statistics(ctx, x, compute, list(range(axis, len(shape))), epsilon)
    return results


def _layer_norm_statistics(ctx: Any, x: Tensor, compute: str, axes: list[int],
                           epsilon: float) -> list[Tensor]:
    """LayerNormalization's optional Mean and InvStdDev outputs, 1 / sqrt(var + epsilon)."""
    if compute != "f32" or op_registry.find("Sqrt") is None:
        raise ctx.unsupported("the Mean and InvStdDev outputs need f32 and nxe's Sqrt")
    g = ctx.g
    mean = g.ReduceMean(x, axes=axes, keepdims=1)
    centered = g.Sub(x, mean)
    variance = g.ReduceMean(g.Mul(centered, centered), axes=axes, keepdims=1)
    std = g.Sqrt(g.Add(variance, ctx.constant(np.array(epsilon, np.float32))))
    return [mean, g.Div(ctx.constant(np.array(1.0, np.float32)), std)]


def _reduce(ctx: Any, node: Any, op_type: str, axes_input_since: int) -> list[Any]:
    shape = ctx.shape(0)
    if ctx.opset >= axes_input_since:
        axes = _known_ints(ctx, 1, "axes")
    else:
        axes = ctx.attr(node, "axes", None)
    keepdims = int(ctx.attr(node, "keepdims", 1))
    if not axes:
        if int(ctx.attr(node, "noop_with_empty_axes", 0)):
            return [ctx.input(0)]
        axes = list(range(len(shape)))
    axes = sorted({int(a) + len(shape) if int(a) < 0 else int(a) for a in axes})
    dtype = ctx.dtype(0)
    compute = _compute_dtype(ctx, op_type, dtype)
    if compute != dtype and compute == "i32":
        raise ctx.unsupported(f"{op_type} of {dtype} (would not wrap as ONNX does)")
    (x,) = _in_dtype(ctx, [ctx.input(0)], dtype, compute)
    y = getattr(ctx.g, op_type)(x, axes=axes, keepdims=keepdims)
    return [_out_dtype(ctx, y, dtype, compute)]


@converter("ReduceSum")
def convert_reduce_sum(ctx: Any, node: Any) -> list[Any]:
    return _reduce(ctx, node, "ReduceSum", 13)


@converter("ReduceMean")
def convert_reduce_mean(ctx: Any, node: Any) -> list[Any]:
    return _reduce(ctx, node, "ReduceMean", 18)


# ---- ops composed from others at import --------------------------------------------------------

@converter("EyeLike")
def convert_eye_like(ctx: Any, node: Any) -> np.ndarray:
    # The output depends only on the (static) input shape: it is folded to a constant.
    shape = ctx.shape(0)
    if len(shape) != 2:
        raise ctx.unsupported(f"an input of rank {len(shape)} (EyeLike takes rank 2)")
    elem = ctx.attr(node, "dtype", None)
    if elem is None:
        np_dtype = np.dtype(_dtypes_numpy(ctx, ctx.dtype(0)))
    elif elem in _ONNX_TYPES:
        np_dtype = _ONNX_TYPES[elem][0]
    else:
        raise ctx.unsupported(f"dtype {onnx_type_name(elem)}, which nxe does not have")
    return np.eye(shape[0], shape[1], k=int(ctx.attr(node, "k", 0)), dtype=np_dtype)


def _dtypes_numpy(ctx: Any, dtype: str) -> np.dtype:
    for np_dtype, name in _ONNX_TYPES.values():
        if name == dtype:
            return np_dtype
    raise ctx.unsupported(f"dtype {dtype}")


@converter("Shrink")
def convert_shrink(ctx: Any, node: Any) -> list[Tensor]:
    # y = x + bias where x < -lambd, x - bias where x > lambd, else 0.
    lambd = float(ctx.attr(node, "lambd", 0.5))
    bias = float(ctx.attr(node, "bias", 0.0))
    dtype = ctx.dtype(0)
    rank = len(ctx.shape(0))
    np_dtype = _dtypes_numpy(ctx, dtype)
    compute = dtype if dtype != "u8" else "i16"  # x - bias may go below zero before the select
    if np_dtype.kind in "iu":
        # For integers, x < -lambd is x < ceil(-lambd) and x > lambd is x > floor(lambd); the
        # bias must itself be an integer of the dtype computed in.
        info = np.iinfo(_dtypes_numpy(ctx, compute))
        low, high = float(np.ceil(-lambd)), float(np.floor(lambd))
        if not bias.is_integer() or not all(info.min <= v <= info.max for v in (low, high, bias)):
            raise ctx.unsupported(f"lambd={lambd} and bias={bias} for {dtype} input")
    elif np_dtype.kind == "f":
        low, high = -lambd, lambd
    else:
        raise ctx.unsupported(f"input of dtype {dtype}")
    x = ctx.input(0) if compute == dtype else _cast(ctx, ctx.input(0), compute)
    cdt = _dtypes_numpy(ctx, compute)

    def const(v: float) -> Tensor:
        return ctx.constant(np.full([1] * rank, v, dtype=cdt))

    below = ctx.g.Less(x, const(low))
    above = ctx.g.Greater(x, const(high))
    y = ctx.g.Where(below, ctx.g.Add(x, const(bias)),
                    ctx.g.Where(above, ctx.g.Sub(x, const(bias)),
                                const(0)))
    return [y if compute == dtype else _cast(ctx, y, dtype)]


@converter("CenterCropPad")
def convert_center_crop_pad(ctx: Any, node: Any) -> list[Tensor]:
    # A Slice for the axes that shrink and a zero Pad for those that grow (static shapes).
    shape = ctx.shape(0)
    rank = len(shape)
    target = _known_ints(ctx, 1, "shape")
    axes = ctx.attr(node, "axes", None)
    axes = list(range(rank)) if axes is None else [a + rank if a < 0 else a for a in axes]
    if len(axes) != len(target) or any(not 0 <= a < rank for a in axes) or \
            any(t < 0 for t in target):
        raise ctx.unsupported(f"shape {target} for axes {axes} of an input of rank {rank}")
    starts, ends, slice_axes, pads = [], [], [], [0] * (2 * rank)
    for axis, size in zip(axes, target):
        dim = shape[axis]
        if size < dim:
            begin = (dim - size) // 2
            starts.append(begin)
            ends.append(begin + size)
            slice_axes.append(axis)
        elif size > dim:
            pads[axis] = (size - dim) // 2
            pads[rank + axis] = size - dim - pads[axis]
    if 0 in target:
        raise ctx.unsupported("an empty result")
    y = ctx.input(0)
    if slice_axes:
        y = ctx.g.Slice(y, starts=starts, ends=ends, axes=slice_axes)
    if any(pads):
        y = ctx.g.Pad(y, pads=pads, mode="constant", value=0.0)
    return [y]
