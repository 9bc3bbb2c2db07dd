"""ONNX converters for the recurrent layers (RNN, GRU, LSTM), attention (ONNX Attention onto
ScaledDotProductAttention) and the quantized ops (MatMulInteger, QLinearMatMul, ConvInteger,
QLinearConv, DynamicQuantizeLinear). Unsupported attribute combinations raise ctx.unsupported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import Tensor
from .registry import converter

# ---- quantized ----------------------------------------------------------------------------


def _per_axis_zero_point(ctx: Any, index: int, operand_shape: tuple[int, ...],
                         axis_from_end: int) -> Tensor | None:
    """A MatMulInteger/QLinearMatMul zero point or scale as nxe takes it: one value, or 1-D
    along the operand's rows (axis_from_end 2) or columns (1). ONNX also allows [..., M, 1] /
    [..., 1, N] forms, which are squeezed when their value is known."""
    if not ctx.has_input(index):
        return None
    shape = ctx.shape(index)
    if int(np.prod(shape)) == 1 or len(shape) == 1:
        return ctx.input(index)
    value = ctx.const(index)
    if value is not None:
        flat = np.asarray(value).reshape(-1)
        axis_len = operand_shape[-axis_from_end] if len(operand_shape) >= axis_from_end else 1
        if flat.size == axis_len:
            return ctx.constant(flat)
    raise ctx.unsupported(f"input {index} of shape {shape}: only per-tensor or 1-D "
                          "per-row/per-column quantization parameters")


@converter("MatMulInteger")
def convert_matmul_integer(ctx: Any, node: Any) -> list[Tensor]:
    a_shape, b_shape = ctx.shape(0), ctx.shape(1)
    return [ctx.g.MatMulInteger(ctx.input(0), ctx.input(1),
                                _per_axis_zero_point(ctx, 2, a_shape, 2),
                                _per_axis_zero_point(ctx, 3, b_shape, 1))]


def _f32_scales(ctx: Any, indices: tuple[int, ...]) -> list[Any] | None:
    """Scales of another float dtype, known at import, as f32 arrays: when all are single
    values, the requantization multiplier a_scale * b_scale / y_scale is formed in their own
    dtype (as ONNX does) and carried by the first, the others becoming 1."""
    if all(ctx.dtype(i) == "f32" for i in indices):
        return None
    values = [ctx.const(i) for i in indices]
    if any(v is None for v in values):
        raise ctx.unsupported(f"{ctx.dtype(indices[0])} scales known only at run time")
    if all(np.size(v) == 1 for v in values):
        a, b, y = (np.asarray(v).reshape(()) for v in values)
        one = np.float32(1.0)
        return [np.float32(a * b / y), one, one]
    return [np.asarray(v, dtype=np.float32) for v in values]


@converter("QLinearMatMul")
def convert_qlinear_matmul(ctx: Any, node: Any) -> list[Tensor]:
    a_shape, b_shape = ctx.shape(0), ctx.shape(3)
    a_scale = _per_axis_zero_point(ctx, 1, a_shape, 2)
    b_scale = _per_axis_zero_point(ctx, 4, b_shape, 1)
    y_scale = ctx.input(6)
    converted = _f32_scales(ctx, (1, 4, 6))
    if converted is not None:
        a_scale, b_scale, y_scale = (ctx.constant(np.ravel(v) if np.ndim(v) > 1 else v)
                                     for v in converted)
    return [ctx.g.QLinearMatMul(
        ctx.input(0), a_scale, _per_axis_zero_point(ctx, 2, a_shape, 2), ctx.input(3),
        b_scale, _per_axis_zero_point(ctx, 5, b_shape, 1), y_scale,
        ctx.input(7) if ctx.has_input(7) else None)]


def _conv_geometry(ctx: Any, node: Any, x_shape: tuple[int, ...],
                   w_shape: tuple[int, ...]) -> dict[str, Any]:
    """ONNX conv attributes resolved to nxe's explicit 2-D form (1-D convs get a unit H)."""
    spatial = len(x_shape) - 2
    if spatial not in (1, 2):
        raise ctx.unsupported(f"{spatial}-D convolution (nxe's quantized convolutions are 2-D)")
    kernel = list(ctx.attr(node, "kernel_shape", w_shape[2:]))
    if list(kernel) != list(w_shape[2:]):
        raise ctx.unsupported(f"kernel_shape {kernel} differs from the weights {w_shape[2:]}")
    strides = list(ctx.attr(node, "strides", [1] * spatial))
    dilations = list(ctx.attr(node, "dilations", [1] * spatial))
    pads = list(ctx.attr(node, "pads", [0] * (2 * spatial)))
    auto_pad = ctx.attr(node, "auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * (2 * spatial)
        for i in range(spatial):
            size = x_shape[2 + i]
            out = -(-size // strides[i])
            total = max(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - size)
            small, large = total // 2, total - total // 2
            pads[i], pads[i + spatial] = (small, large) if auto_pad == "SAME_UPPER" \
                else (large, small)
    elif auto_pad == "VALID":
        pads = [0] * (2 * spatial)
    elif auto_pad != "NOTSET":
        raise ctx.unsupported(f"auto_pad={auto_pad!r}")
    if spatial == 1:
        strides, dilations = [1] + strides, [1] + dilations
        pads = [0, pads[0], 0, pads[1]]
    return {"strides": [int(s) for s in strides], "dilations": [int(d) for d in dilations],
            "pads": [int(p) for p in pads], "group": int(ctx.attr(node, "group", 1))}


def _as_2d(ctx: Any, tensor: Tensor, shape: tuple[int, ...]) -> Tensor:
    return tensor if len(shape) == 4 else ctx.g.Reshape(tensor, shape=[*shape[:2], 1, shape[2]])


def _from_2d(ctx: Any, tensor: Tensor, x_shape: tuple[int, ...],
             w_shape: tuple[int, ...]) -> Tensor:
    """[N, O, 1, OW] back to [N, O, OW] for a 1-D convolution."""
    if len(x_shape) == 4:
        return tensor
    return ctx.g.Reshape(tensor, shape=[x_shape[0], w_shape[0], -1])


def _conv_weight(ctx: Any, index: int) -> tuple[Tensor, tuple[int, ...]]:
    shape = ctx.shape(index)
    return _as_2d(ctx, ctx.input(index), shape), shape


@converter("ConvInteger")
def convert_conv_integer(ctx: Any, node: Any) -> list[Tensor]:
    x_shape = ctx.shape(0)
    w, w_shape = _conv_weight(ctx, 1)
    attrs = _conv_geometry(ctx, node, x_shape, w_shape)
    y = ctx.g.ConvInteger(_as_2d(ctx, ctx.input(0), x_shape), w,
                          ctx.input(2) if ctx.has_input(2) else None,
                          ctx.input(3) if ctx.has_input(3) else None, **attrs)
    return [_from_2d(ctx, y, x_shape, w_shape)]


@converter("QLinearConv")
def convert_qlinear_conv(ctx: Any, node: Any) -> list[Tensor]:
    x_shape = ctx.shape(0)
    w, w_shape = _conv_weight(ctx, 3)
    attrs = _conv_geometry(ctx, node, x_shape, w_shape)
    optional = [ctx.input(i) if ctx.has_input(i) else None for i in (2, 5, 7, 8)]
    y = ctx.g.QLinearConv(_as_2d(ctx, ctx.input(0), x_shape), ctx.input(1), optional[0], w,
                          ctx.input(4), optional[1], ctx.input(6), optional[2], optional[3],
                          **attrs)
    return [_from_2d(ctx, y, x_shape, w_shape)]


@converter("DynamicQuantizeLinear")
def convert_dynamic_quantize_linear(ctx: Any, node: Any) -> list[Tensor]:
    if ctx.dtype(0) != "f32":
        raise ctx.unsupported(f"input dtype {ctx.dtype(0)} (nxe quantizes f32)")
    return list(ctx.g.DynamicQuantizeLinear(ctx.input(0)))


# ---- recurrent ------------------------------------------------------------------------------

_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


@converter("RNN", "GRU", "LSTM")
def convert_recurrent(ctx: Any, node: Any) -> list[Tensor]:
    cell = node.op_type
    if ctx.dtype(0) != "f32":
        raise ctx.unsupported(f"input dtype {ctx.dtype(0)} (nxe's recurrent layers are f32)")
    r_shape = ctx.shape(2)
    hidden = ctx.attr(node, "hidden_size", None)
    if hidden is not None and int(hidden) != r_shape[-1]:
        raise ctx.unsupported(f"hidden_size {hidden} differs from R's shape {r_shape}")
    attrs: dict[str, Any] = {
        "direction": ctx.attr(node, "direction", "forward"),
        "layout": int(ctx.attr(node, "layout", 0)),
    }
    clip = ctx.attr(node, "clip", None)
    if clip is not None:
        attrs["clip"] = float(clip)
    activations = ctx.attr(node, "activations", None)
    if activations:
        attrs["activations"] = ",".join(activations)
    for name in ("activation_alpha", "activation_beta"):
        values = ctx.attr(node, name, None)
        if values:
            attrs[name] = [float(v) for v in values]
    if cell == "GRU":
        attrs["linear_before_reset"] = int(ctx.attr(node, "linear_before_reset", 0))
    if cell == "LSTM":
        attrs["input_forget"] = int(ctx.attr(node, "input_forget", 0))
    count = 8 if cell == "LSTM" else 6
    inputs: list[Tensor | None] = [ctx.input(i) if ctx.has_input(i) else None
                                   for i in range(count)]
    if inputs[4] is not None:
        lengths = ctx.const(4)
        steps = ctx.shape(0)[1 if attrs["layout"] else 0]
        if lengths is not None and np.all(np.asarray(lengths) == steps):
            inputs[4] = None  # every sequence is full length
        elif ctx.dtype(4) != "i32":
            inputs[4] = ctx.g.Cast(inputs[4], to=7)
    while inputs and inputs[-1] is None:
        inputs.pop()
    outputs = ctx.g.op(cell, inputs, **attrs)
    return list(outputs)[:max(1, len(node.output))]


# ---- attention -------------------------------------------------------------------------------


def _heads_first(ctx: Any, tensor: Tensor, shape: tuple[int, ...], heads: int) -> Tensor:
    """[B, L, heads * E] -> [B, heads, L, E]."""
    batch, length, hidden = shape
    split = ctx.g.Reshape(tensor, shape=[batch, length, heads, hidden // heads])
    return ctx.g.Transpose(split, perm=[0, 2, 1, 3])


@converter("Attention")
def convert_attention(ctx: Any, node: Any) -> list[Tensor]:
    if ctx.dtype(0) != "f32":
        raise ctx.unsupported(f"dtype {ctx.dtype(0)} (nxe's attention is f32)")
    if len(node.output) > 3 and node.output[3]:
        raise ctx.unsupported("the qk_matmul_output output")
    if ctx.has_input(6):
        raise ctx.unsupported("nonpad_kv_seqlen")
    for name in ("left_window_size", "right_window_size"):
        if int(ctx.attr(node, name, -1)) != -1:
            raise ctx.unsupported(f"{name} (sliding-window attention)")
    q_shape, k_shape, v_shape = ctx.shape(0), ctx.shape(1), ctx.shape(2)
    q, k, v = ctx.input(0), ctx.input(1), ctx.input(2)
    rank3 = len(q_shape) == 3
    if rank3:
        q_heads = ctx.attr(node, "q_num_heads", None)
        kv_heads = ctx.attr(node, "kv_num_heads", None)
        if q_heads is None or kv_heads is None:
            raise ctx.unsupported("3-D inputs without q_num_heads and kv_num_heads")
        q = _heads_first(ctx, q, q_shape, int(q_heads))
        k = _heads_first(ctx, k, k_shape, int(kv_heads))
        v = _heads_first(ctx, v, v_shape, int(kv_heads))
        head_size = q_shape[2] // int(q_heads)
    elif len(q_shape) == 4:
        head_size = q_shape[3]
    else:
        raise ctx.unsupported(f"Q of rank {len(q_shape)}")
    past = 0
    if ctx.has_input(4) != ctx.has_input(5):
        raise ctx.unsupported("past_key without past_value or the reverse")
    if ctx.has_input(4):
        past = ctx.shape(4)[2]
        if past > 0:
            k = ctx.g.Concat(ctx.input(4), k, axis=2)
            v = ctx.g.Concat(ctx.input(5), v, axis=2)
    q_len = q_shape[1] if rank3 else q_shape[2]
    kv_len = past + (k_shape[1] if rank3 else k_shape[2])

    mask = None
    if ctx.has_input(3):
        mask_shape = ctx.shape(3)
        if mask_shape[-1] != kv_len:
            value = ctx.const(3)
            if value is None or mask_shape[-1] > kv_len:
                raise ctx.unsupported(f"attn_mask of shape {mask_shape} for {kv_len} keys "
                                      "(a shorter mask must be known at import)")
            width = [(0, 0)] * (value.ndim - 1) + [(0, kv_len - mask_shape[-1])]
            fill = False if value.dtype == np.bool_ else -np.inf
            mask = ctx.constant(np.pad(value, width, constant_values=fill))
        else:
            mask = ctx.input(3)
        if ctx.dtype(3) not in ("f32", "bool"):
            raise ctx.unsupported(f"attn_mask of dtype {ctx.dtype(3)}")

    scale = ctx.attr(node, "scale", None)
    attrs: dict[str, Any] = {
        "scale": float(scale) if scale is not None else 1.0 / float(np.sqrt(head_size)),
        "causal": int(ctx.attr(node, "is_causal", 0)),
        "causal_offset": past,
    }
    softcap = float(ctx.attr(node, "softcap", 0.0) or 0.0)
    if softcap > 0:
        attrs["softcap"] = softcap
    if attrs["scale"] == 0.0:
        raise ctx.unsupported("scale = 0 (nxe reads 0 as 1/sqrt(E))")
    y = ctx.g.ScaledDotProductAttention(q, k, v, mask, **attrs)
    if rank3:
        y = ctx.g.Reshape(ctx.g.Transpose(y, perm=[0, 2, 1, 3]), shape=[q_shape[0], q_len, -1])
    return [y, k, v][:max(1, len(node.output))]
