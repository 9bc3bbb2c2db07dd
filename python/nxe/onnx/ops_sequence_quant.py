"""ONNX converters for the recurrent layers (RNN, GRU, LSTM), attention (ONNX Attention onto
ScaledDotProductAttention) and the quantized ops (MatMulInteger, QLinearMatMul, ConvInteger,
QLinearConv, DynamicQuantizeLinear). Unsupported attribute combinations raise ctx.unsupported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _dtypes
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


def _mask_input(ctx: Any) -> Tensor:
    """attn_mask as nxe's attention takes it: bool, or f32 (an f16 or bf16 mask is
    widened)."""
    return ctx.g.Cast(ctx.input(3), to=1) if ctx.dtype(3) in ("f16", "bf16") else ctx.input(3)


def _allowed_to_bias(ctx: Any, allowed: Tensor) -> Tensor:
    """A bool 'attend' tensor as an additive f32 bias: 0 where true, -inf where false."""
    return ctx.g.Where(allowed, ctx.constant(np.float32(0.0)), ctx.constant(np.float32(-np.inf)))


def _attention_bias(ctx: Any, node: Any, batch: int, q_len: int, kv_len: int, past: int,
                    causal: bool) -> Tensor | None:
    """Everything ONNX Attention adds to the scores as one f32 tensor broadcasting to
    [B, H, L, S]: attn_mask (padded to S; bool as 0 / -inf), the causal and sliding-window
    frontiers (offset by the past keys, or per batch by nonpad_kv_seqlen - L) and the key
    padding of nonpad_kv_seqlen. None when nothing is added."""
    g = ctx.g
    left = int(ctx.attr(node, "left_window_size", -1))
    right = int(ctx.attr(node, "right_window_size", -1))
    i_idx = np.arange(q_len, dtype=np.int64).reshape(q_len, 1)
    j_idx = np.arange(kv_len, dtype=np.int64).reshape(1, kv_len)
    terms: list[Tensor] = []

    if ctx.has_input(3):
        mask_shape = ctx.shape(3)
        if ctx.dtype(3) not in ("f32", "f16", "bf16", "bool"):
            raise ctx.unsupported(f"attn_mask of dtype {ctx.dtype(3)}")
        if mask_shape[-1] > kv_len:
            raise ctx.unsupported(f"attn_mask of shape {mask_shape} for {kv_len} keys")
        if mask_shape[-1] < kv_len:
            # Keys past the mask's end are masked out (false / -inf).
            is_bool = ctx.dtype(3) == "bool"
            fill = np.full((*mask_shape[:-1], kv_len - mask_shape[-1]),
                           False if is_bool else -np.inf,
                           dtype=np.bool_ if is_bool else np.float32)
            mask = g.Concat(_mask_input(ctx), ctx.constant(fill), axis=-1)
        else:
            mask = _mask_input(ctx)
        terms.append(_allowed_to_bias(ctx, mask) if ctx.dtype(3) == "bool" else mask)

    nonpad = None
    if ctx.has_input(6):
        if ctx.has_input(4):
            raise ctx.unsupported("nonpad_kv_seqlen together with past_key")
        if ctx.dtype(6) not in ("i64", "i32"):
            raise ctx.unsupported(f"nonpad_kv_seqlen of dtype {ctx.dtype(6)}")
        nonpad = ctx.input(6)
        if ctx.dtype(6) != "i64":
            nonpad = g.Cast(nonpad, to=8)
        nonpad = g.Reshape(nonpad, shape=[batch, 1, 1])           # [B, 1, 1]
        keys = ctx.constant(j_idx.reshape(1, 1, kv_len))
        terms.append(g.Reshape(_allowed_to_bias(ctx, g.Less(keys, nonpad)),
                               shape=[batch, 1, 1, kv_len]))

    # Frontier rules: key j is allowed for query i when j - i <= offset (causal),
    # i + offset - j <= left and j - i - offset <= right (window).
    rules: list[tuple[np.ndarray, str]] = []
    if causal:
        rules.append((j_idx - i_idx, "le"))
    if left >= 0:
        rules.append((i_idx - j_idx - left, "ge_neg"))
    if right >= 0:
        rules.append((j_idx - i_idx - right, "le"))
    if rules:
        if nonpad is None:
            offset = past
            allowed = np.ones((q_len, kv_len), dtype=np.bool_)
            for diff, kind in rules:
                allowed &= (diff <= offset) if kind == "le" else (diff + offset <= 0)
            terms.append(ctx.constant(np.where(allowed, np.float32(0), np.float32(-np.inf))))
        else:
            offset = g.Sub(nonpad, ctx.constant(np.int64(q_len)))  # [B, 1, 1]
            allowed_t = None
            for diff, kind in rules:
                d = ctx.constant(diff.reshape(1, q_len, kv_len))
                if kind == "le":    # diff <= offset
                    part = g.LessOrEqual(d, offset)
                else:               # diff + offset <= 0, i.e. offset <= -diff
                    part = g.LessOrEqual(offset, ctx.constant(-diff.reshape(1, q_len, kv_len)))
                allowed_t = part if allowed_t is None else g.And(allowed_t, part)
            terms.append(g.Reshape(_allowed_to_bias(ctx, allowed_t),
                                   shape=[batch, 1, q_len, kv_len]))
    if not terms:
        return None
    bias = terms[0]
    for term in terms[1:]:
        bias = g.Add(bias, term)
    return bias


def _qk_matmul_output(ctx: Any, q: Tensor, k: Tensor, q_shape4: tuple[int, ...],
                      kv_heads: int, scale: float, softcap: float, bias: Tensor | None,
                      mode: int) -> Tensor:
    """The ONNX Attention qk_matmul_output [B, H, L, S] for qk_matmul_output_mode `mode`:
    0 and 1 the (soft-capped) scaled Q @ K^T, 2 with the bias added, 3 after the softmax,
    rows whose bias is all -inf giving zeros."""
    g = ctx.g
    batch, heads, q_len, head_size = q_shape4
    k_t = g.Transpose(k, perm=[0, 1, 3, 2])                      # [B, Hkv, E, S]
    if heads != kv_heads:
        group = heads // kv_heads
        q5 = g.Reshape(q, shape=[batch, kv_heads, group, q_len, head_size])
        k5 = g.Reshape(k_t, shape=[batch, kv_heads, 1, head_size, -1])
        qk = g.Reshape(g.MatMul(q5, k5), shape=[batch, heads, q_len, -1])
    else:
        qk = g.MatMul(q, k_t)
    qk = g.Mul(qk, ctx.constant(np.float32(scale)))
    if softcap > 0:
        cap = ctx.constant(np.float32(softcap))
        qk = g.Mul(g.Tanh(g.Div(qk, cap)), cap)
    if mode in (0, 1):
        return qk
    if mode not in (2, 3):
        raise ctx.unsupported(f"qk_matmul_output_mode {mode}")
    with_bias = qk if bias is None else g.Add(qk, bias)
    if mode == 2:
        return with_bias
    probabilities = g.Softmax(with_bias, axis=-1)
    if bias is None:
        return probabilities
    row_masked = g.Equal(g.ReduceMax(bias, axes=[-1], keepdims=1),
                         ctx.constant(np.float32(-np.inf)))
    return g.Where(row_masked, ctx.constant(np.float32(0.0)), probabilities)


@converter("Attention")
def convert_attention(ctx: Any, node: Any) -> list[Tensor]:
    dtype = ctx.dtype(0)
    if dtype not in ("f32", "f16", "bf16"):
        raise ctx.unsupported(f"dtype {dtype} (nxe's attention is f32; f16 and bf16 are "
                              "widened)")
    widened = dtype != "f32"
    q_shape, k_shape, v_shape = ctx.shape(0), ctx.shape(1), ctx.shape(2)
    q, k, v = ctx.input(0), ctx.input(1), ctx.input(2)
    if widened:
        # Computed in f32 and rounded once at the end.
        q, k, v = (ctx.g.Cast(t, to=1) for t in (q, k, v))
    rank3 = len(q_shape) == 3
    if rank3:
        q_heads = ctx.attr(node, "q_num_heads", None)
        kv_heads = ctx.attr(node, "kv_num_heads", None)
        if q_heads is None or kv_heads is None:
            raise ctx.unsupported("3-D inputs without q_num_heads and kv_num_heads")
        q_heads, kv_heads = int(q_heads), int(kv_heads)
        q = _heads_first(ctx, q, q_shape, q_heads)
        k = _heads_first(ctx, k, k_shape, kv_heads)
        v = _heads_first(ctx, v, v_shape, kv_heads)
        head_size = q_shape[2] // q_heads
        q_len = q_shape[1]
        new_keys = k_shape[1]
    elif len(q_shape) == 4:
        q_heads, kv_heads = q_shape[1], k_shape[1]
        head_size, q_len, new_keys = q_shape[3], q_shape[2], k_shape[2]
    else:
        raise ctx.unsupported(f"Q of rank {len(q_shape)}")
    if q_heads % kv_heads != 0:
        raise ctx.unsupported(f"{q_heads} query heads over {kv_heads} key/value heads")
    past = 0
    if ctx.has_input(4) != ctx.has_input(5):
        raise ctx.unsupported("past_key without past_value or the reverse")
    if ctx.has_input(4):
        past = ctx.shape(4)[2]
        if past > 0:
            past_k, past_v = ctx.input(4), ctx.input(5)
            if widened:
                past_k, past_v = ctx.g.Cast(past_k, to=1), ctx.g.Cast(past_v, to=1)
            k = ctx.g.Concat(past_k, k, axis=2)
            v = ctx.g.Concat(past_v, v, axis=2)
    kv_len = past + new_keys
    batch = q_shape[0]

    scale = ctx.attr(node, "scale", None)
    scale = float(scale) if scale is not None else 1.0 / float(np.sqrt(head_size))
    if scale == 0.0:
        raise ctx.unsupported("scale = 0 (nxe reads 0 as 1/sqrt(E))")
    softcap = float(ctx.attr(node, "softcap", 0.0) or 0.0)
    causal = bool(ctx.attr(node, "is_causal", 0))
    windowed = any(int(ctx.attr(node, n, -1)) != -1
                   for n in ("left_window_size", "right_window_size"))
    want_qk = len(node.output) > 3 and bool(node.output[3])
    attrs: dict[str, Any] = {"scale": scale}
    if softcap > 0:
        attrs["softcap"] = softcap
    if not (want_qk or windowed or ctx.has_input(6)):
        # The op's own causal frontier; only attn_mask becomes the bias.
        attrs["causal"] = int(causal)
        attrs["causal_offset"] = past
        bias = _attention_bias(ctx, node, batch, q_len, kv_len, past, False)
    else:
        bias = _attention_bias(ctx, node, batch, q_len, kv_len, past, causal)
    y = ctx.g.ScaledDotProductAttention(q, k, v, bias, **attrs)
    if rank3:
        y = ctx.g.Reshape(ctx.g.Transpose(y, perm=[0, 2, 1, 3]), shape=[q_shape[0], q_len, -1])
    outputs = [y, k, v]
    if want_qk:
        mode = int(ctx.attr(node, "qk_matmul_output_mode", 0))
        outputs.append(_qk_matmul_output(ctx, q, k, (batch, q_heads, q_len, head_size),
                                         kv_heads, scale, softcap, bias, mode))
    outputs = outputs[:max(1, len(node.output))]
    if widened:
        outputs = [ctx.g.Cast(t, to=_dtypes.code_of(dtype)) for t in outputs]
    return outputs


# ---- rotary embedding -----------------------------------------------------------------------


@converter("RotaryEmbedding")
def convert_rotary_embedding(ctx: Any, node: Any) -> list[Tensor]:
    """x [B, H, S, D] or [B, S, H * D] rotated pairwise by the cos/sin caches: the first
    rotary_embedding_dim features as halves (x1 | x2) or interleaved pairs (x1, x2, ...),
    (x1, x2) -> (cos x1 - sin x2, sin x1 + cos x2); the remaining features pass through."""
    g = ctx.g
    dtype = ctx.dtype(0)
    if dtype not in ("f32", "f16"):
        raise ctx.unsupported(f"dtype {dtype}")
    shape = ctx.shape(0)
    x, cos, sin = ctx.input(0), ctx.input(1), ctx.input(2)
    if dtype == "f16":
        x, cos, sin = (g.Cast(t, to=1) for t in (x, cos, sin))
    if ctx.has_input(3):
        positions = ctx.input(3)
        cos = g.Gather(cos, positions, axis=0)
        sin = g.Gather(sin, positions, axis=0)
        cache_shape = (*ctx.shape(3), ctx.shape(1)[-1])
    else:
        cache_shape = ctx.shape(1)
    if len(cache_shape) != 3:
        raise ctx.unsupported(f"cos/sin caches of shape {cache_shape} (expected [B, S, R/2] "
                              "after position_ids)")
    batch, seq, half = cache_shape
    if len(shape) == 4:
        heads, head_size = shape[1], shape[3]
        x4 = x
        cos = g.Reshape(cos, shape=[batch, 1, seq, half])
        sin = g.Reshape(sin, shape=[batch, 1, seq, half])
    elif len(shape) == 3:
        heads = int(ctx.attr(node, "num_heads", 0))
        if heads <= 0 or shape[2] % heads != 0:
            raise ctx.unsupported(f"3-D input {shape} with num_heads {heads}")
        head_size = shape[2] // heads
        x4 = g.Reshape(x, shape=[shape[0], shape[1], heads, head_size])
        cos = g.Reshape(cos, shape=[batch, seq, 1, half])
        sin = g.Reshape(sin, shape=[batch, seq, 1, half])
    else:
        raise ctx.unsupported(f"input of rank {len(shape)}")
    rotary = int(ctx.attr(node, "rotary_embedding_dim", 0)) or head_size
    if rotary % 2 != 0 or rotary > head_size or rotary // 2 != half:
        raise ctx.unsupported(f"rotary_embedding_dim {rotary} with head size {head_size} and "
                              f"caches of {half} frequencies")
    interleaved = bool(ctx.attr(node, "interleaved", 0))
    if interleaved:
        x1 = g.Slice(x4, starts=[0], ends=[rotary], axes=[3], steps=[2])
        x2 = g.Slice(x4, starts=[1], ends=[rotary], axes=[3], steps=[2])
    else:
        x1 = g.Slice(x4, starts=[0], ends=[half], axes=[3])
        x2 = g.Slice(x4, starts=[half], ends=[rotary], axes=[3])
    real = g.Sub(g.Mul(cos, x1), g.Mul(sin, x2))
    imag = g.Add(g.Mul(sin, x1), g.Mul(cos, x2))
    if interleaved:
        pairs = g.Concat(g.Unsqueeze(real, axes=[4]), g.Unsqueeze(imag, axes=[4]), axis=4)
        dims = [int(d) for d in (shape[0], shape[1], shape[2], half)] if len(shape) == 4 \
            else [shape[0], shape[1], heads, half]
        rotated = g.Reshape(pairs, shape=[*dims[:3], rotary])
    else:
        rotated = g.Concat(real, imag, axis=3)
    if rotary < head_size:
        rotated = g.Concat(rotated, g.Slice(x4, starts=[rotary], ends=[head_size], axes=[3]),
                           axis=3)
    y = rotated if len(shape) == 4 else g.Reshape(rotated, shape=list(shape))
    return [g.Cast(y, to=2) if dtype == "f16" else y]


# ---- DFT ------------------------------------------------------------------------------------


def _dft_matrices(rows: int, length: int, inverse: bool, onesided: bool
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(rr, ir, ri, ii): real-out = re @ rr + im @ ir, imag-out = re @ ri + im @ ii for a
    signal of `rows` samples (a DFT of `length` points, the rest zero)."""
    n = np.arange(rows, dtype=np.float64).reshape(rows, 1)
    if inverse and onesided:
        # Half spectrum -> real signal: Hermitian symmetry supplies the other half.
        k = n
        t = np.arange(length, dtype=np.float64).reshape(1, length)
        angle = 2.0 * np.pi * ((k * t) % length) / length
        weight = np.where((k == 0) | (2 * k == length), 1.0, 2.0)
        rr = weight * np.cos(angle) / length
        ir = -weight * np.sin(angle) / length
        return rr, ir, np.zeros_like(rr), np.zeros_like(rr)
    outputs = length // 2 + 1 if onesided else length
    k = np.arange(outputs, dtype=np.float64).reshape(1, outputs)
    angle = 2.0 * np.pi * ((n * k) % length) / length
    cos, sin = np.cos(angle), np.sin(angle)
    if inverse:
        return cos / length, -sin / length, sin / length, cos / length
    return cos, sin, -sin, cos


@converter("DFT")
def convert_dft(ctx: Any, node: Any) -> list[Tensor]:
    """DFT as matrix products with constant cos/sin matrices along the transformed axis."""
    g = ctx.g
    if ctx.dtype(0) != "f32":
        raise ctx.unsupported(f"dtype {ctx.dtype(0)} (nxe's DFT is f32)")
    shape = ctx.shape(0)
    rank = len(shape)
    opset = ctx.opset
    axis = ctx.attr(node, "axis", None)
    if ctx.num_inputs > 2 and ctx.has_input(2):
        value = ctx.const(2)
        if value is None:
            raise ctx.unsupported("axis known only at run time")
        axis = int(np.asarray(value).reshape(()))
    if axis is None:
        axis = 1 if opset < 20 else -2
    axis = int(axis)
    if not -rank <= axis < rank or axis % rank == rank - 1:
        raise ctx.unsupported(f"axis {axis} for input of rank {rank}")
    axis %= rank
    inverse = bool(ctx.attr(node, "inverse", 0))
    onesided = bool(ctx.attr(node, "onesided", 0))
    size = shape[axis]
    length = None
    if ctx.num_inputs > 1 and ctx.has_input(1):
        value = ctx.const(1)
        if value is None:
            raise ctx.unsupported("dft_length known only at run time")
        length = int(np.asarray(value).reshape(()))
    if length is None:
        length = 2 * (size - 1) if inverse and onesided else size
    if length < 1:
        raise ctx.unsupported(f"dft_length {length}")
    if shape[-1] not in (1, 2):
        raise ctx.unsupported(f"last dimension {shape[-1]} (1 real or 2 complex)")
    rows = min(size, length // 2 + 1 if inverse and onesided else length)
    # Signal axis last, the real/imaginary axis dropped: [..., rows].
    perm = [d for d in range(rank - 1) if d != axis] + [axis]
    def part(index: int) -> Tensor:
        piece = g.Slice(ctx.input(0), starts=[index, 0], ends=[index + 1, rows],
                        axes=[rank - 1, axis])
        return g.Transpose(g.Squeeze(piece, axes=[rank - 1]), perm=perm)
    re = part(0)
    im = part(1) if shape[-1] == 2 else None
    rr, ir, ri, ii = (np.ascontiguousarray(m, dtype=np.float32)
                      for m in _dft_matrices(rows, length, inverse, onesided))
    def combine(a: np.ndarray, b: np.ndarray) -> Tensor:
        y = g.MatMul(re, ctx.constant(a))
        return y if im is None else g.Add(y, g.MatMul(im, ctx.constant(b)))
    back = [perm.index(d) for d in range(rank - 1)]
    def restore(y: Tensor) -> Tensor:
        return g.Unsqueeze(g.Transpose(y, perm=back), axes=[rank - 1])
    if inverse and onesided:
        return [restore(combine(rr, ir))]
    return [g.Concat(restore(combine(rr, ir)), restore(combine(ri, ii)), axis=rank - 1)]
