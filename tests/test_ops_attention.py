"""ScaledDotProductAttention against a numpy softmax reference: ranks, masks (additive, boolean,
broadcast), causal frontiers, soft-capping, grouped key/value heads, fully masked rows,
thread-count independence and bad input."""

from __future__ import annotations

import numpy as np
import nxe
import pytest
from op_testing import compile_op, run_single

SDPA = "ScaledDotProductAttention"
RTOL, ATOL = 1e-5, 1e-6


def reference(q, k, v, mask=None, scale=0.0, causal=0, causal_offset=0, softcap=0.0):
    """softmax(softcap(q k^T * scale) + mask) v in float64; rows with no key give 0."""
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    group = q.shape[-3] // k.shape[-3] if q.ndim >= 3 else 1
    if group > 1:
        k = np.repeat(k, group, axis=-3)
        v = np.repeat(v, group, axis=-3)
    if scale == 0.0:
        scale = 1.0 / np.sqrt(q.shape[-1])
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    if softcap > 0:
        s = softcap * np.tanh(s / softcap)
    bias = np.zeros(s.shape)
    if mask is not None:
        bias = bias + (np.where(mask, 0.0, -np.inf) if mask.dtype == bool else mask)
    if causal:
        ll, ss = s.shape[-2:]
        allowed = np.arange(ss)[None, :] <= np.arange(ll)[:, None] + causal_offset
        bias = bias + np.where(allowed, 0.0, -np.inf)
    s = s + bias
    top = np.max(s, axis=-1, keepdims=True)
    empty = np.isneginf(top)
    e = np.exp(s - np.where(empty, 0.0, top))
    total = np.sum(e, axis=-1, keepdims=True)
    p = e / np.where(total == 0, 1.0, total)
    return np.matmul(p, v)


def randn(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("shapes", [
    ((5, 3), (7, 3), (7, 4)),
    ((2, 6, 8), (2, 9, 8), (2, 9, 5)),
    ((2, 3, 4, 16), (2, 3, 6, 16), (2, 3, 6, 16)),
    ((1, 2, 2, 1, 3, 2), (1, 2, 2, 1, 4, 2), (1, 2, 2, 1, 4, 3)),
], ids=str)
def test_sdpa_matches_softmax_reference_across_ranks(shapes, rng):
    q, k, v = (randn(rng, *s) for s in shapes)
    got = run_single(SDPA, [q, k, v])
    ref = reference(q, k, v)
    assert got.shape == ref.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("mask_shape", [(6, 9), (1, 9), (9,), (2, 1, 6, 9), (3, 1, 1)], ids=str)
def test_sdpa_additive_mask_broadcasts(mask_shape, rng):
    q, k, v = randn(rng, 2, 3, 6, 4), randn(rng, 2, 3, 9, 4), randn(rng, 2, 3, 9, 5)
    mask = randn(rng, *mask_shape)
    mask[..., 0] = -np.inf  # removes key 0 wherever the mask reaches it
    got = run_single(SDPA, [q, k, v, mask])
    np.testing.assert_allclose(got, reference(q, k, v, mask), rtol=RTOL, atol=ATOL)


def test_sdpa_boolean_mask_keeps_true_keys(rng):
    q, k, v = randn(rng, 2, 5, 8), randn(rng, 2, 7, 8), randn(rng, 2, 7, 3)
    mask = rng.random((2, 5, 7)) < 0.6
    mask[:, :, 2] = True
    got = run_single(SDPA, [q, k, v, mask])
    np.testing.assert_allclose(got, reference(q, k, v, mask), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("lengths,offset", [((5, 5), 0), ((3, 8), 5), ((4, 6), 0), ((6, 4), -1)],
                         ids=str)
def test_sdpa_causal_frontier_with_offset(lengths, offset, rng):
    ll, ss = lengths
    q, k, v = randn(rng, 2, ll, 4), randn(rng, 2, ss, 4), randn(rng, 2, ss, 4)
    got = run_single(SDPA, [q, k, v], causal=1, causal_offset=offset)
    ref = reference(q, k, v, causal=1, causal_offset=offset)
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL)


def test_sdpa_fully_masked_row_gives_zeros(rng):
    q, k, v = randn(rng, 3, 4), randn(rng, 5, 4), randn(rng, 5, 2)
    mask = np.ones((3, 5), bool)
    mask[1] = False
    got = run_single(SDPA, [q, k, v, mask])
    np.testing.assert_array_equal(got[1], np.zeros(2, np.float32))
    np.testing.assert_allclose(got, reference(q, k, v, mask), rtol=RTOL, atol=ATOL)


def test_sdpa_scale_and_softcap(rng):
    q, k, v = randn(rng, 4, 6) * 4, randn(rng, 7, 6) * 4, randn(rng, 7, 3)
    got = run_single(SDPA, [q, k, v], scale=0.7, softcap=2.5)
    np.testing.assert_allclose(got, reference(q, k, v, scale=0.7, softcap=2.5),
                               rtol=RTOL, atol=ATOL)


def test_sdpa_grouped_key_value_heads(rng):
    q, k, v = randn(rng, 2, 6, 5, 8), randn(rng, 2, 2, 7, 8), randn(rng, 2, 2, 7, 8)
    got = run_single(SDPA, [q, k, v], causal=1, causal_offset=2)
    ref = reference(q, k, v, causal=1, causal_offset=2)
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL)


def test_sdpa_large_scores_stay_finite(rng):
    # Online softmax must rescale rather than overflow exp.
    q, k, v = randn(rng, 4, 8) * 30, randn(rng, 12, 8) * 30, randn(rng, 12, 4)
    got = run_single(SDPA, [q, k, v], scale=1.0)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, reference(q, k, v, scale=1.0), rtol=1e-4, atol=1e-5)


def test_sdpa_one_and_many_threads_agree(rng):
    q, k, v = randn(rng, 2, 4, 33, 16), randn(rng, 2, 4, 40, 16), randn(rng, 2, 4, 40, 16)
    mask = randn(rng, 33, 40)
    np.testing.assert_array_equal(run_single(SDPA, [q, k, v, mask], threads=1),
                                  run_single(SDPA, [q, k, v, mask], threads=4))


def test_sdpa_rejects_mismatched_head_size(rng):
    with pytest.raises(nxe.ShapeMismatchError, match="'ScaledDotProductAttention'"):
        compile_op(SDPA, [randn(rng, 3, 4), randn(rng, 5, 3), randn(rng, 5, 2)])


def test_sdpa_rejects_heads_that_do_not_group(rng):
    with pytest.raises(nxe.ShapeMismatchError, match="'ScaledDotProductAttention'.*grouped"):
        compile_op(SDPA, [randn(rng, 5, 3, 4), randn(rng, 2, 6, 4), randn(rng, 2, 6, 4)])


def test_sdpa_rejects_mask_that_does_not_broadcast(rng):
    with pytest.raises(nxe.ShapeMismatchError, match="'ScaledDotProductAttention'.*mask"):
        compile_op(SDPA, [randn(rng, 3, 4), randn(rng, 5, 4), randn(rng, 5, 2), randn(rng, 3, 4)])


def test_sdpa_rejects_integer_mask(rng):
    with pytest.raises(nxe.DtypeMismatchError, match="'ScaledDotProductAttention'"):
        compile_op(SDPA, [randn(rng, 3, 4), randn(rng, 5, 4), randn(rng, 5, 2),
                          np.zeros((3, 5), np.int32)])


def test_sdpa_rejects_bad_causal_flag(rng):
    with pytest.raises(nxe.InvalidArgumentError, match="'ScaledDotProductAttention'.*causal"):
        compile_op(SDPA, [randn(rng, 3, 4), randn(rng, 5, 4), randn(rng, 5, 2)], causal=2)


def test_sdpa_transposed_keys_match_keys_as_rows(rng):
    q, k, v = randn(rng, 2, 5, 6), randn(rng, 2, 9, 6), randn(rng, 2, 9, 3)
    kt = np.ascontiguousarray(np.swapaxes(k, -1, -2))
    got = run_single(SDPA, [q, kt, v], transposed_keys=1)
    np.testing.assert_allclose(got, reference(q, k, v), rtol=RTOL, atol=ATOL)


def test_sdpa_rejects_bad_transposed_keys_flag_and_shape(rng):
    q, k, v = randn(rng, 3, 4), randn(rng, 5, 4), randn(rng, 5, 2)
    with pytest.raises(nxe.InvalidArgumentError, match="'ScaledDotProductAttention'.*transposed"):
        compile_op(SDPA, [q, k, v], transposed_keys=2)
    with pytest.raises(nxe.ShapeMismatchError,
                       match=r"'ScaledDotProductAttention'.*\[\.\.\., E, S\]"):
        compile_op(SDPA, [q, k, v], transposed_keys=1)


def test_onnx_attention_3d_grouped_heads_with_past_imports_and_matches_reference(rng):
    import nxe.onnx
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    batch, q_len, past, q_heads, kv_heads, head = 2, 3, 4, 4, 2, 8
    node = helper.make_node("Attention", ["q", "k", "v", "", "pk", "pv"],
                            ["y", "present_k", "present_v"], q_num_heads=q_heads,
                            kv_num_heads=kv_heads, is_causal=1)
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        [node], "attention",
        [helper.make_tensor_value_info("q", f, [batch, q_len, q_heads * head]),
         helper.make_tensor_value_info("k", f, [batch, q_len, kv_heads * head]),
         helper.make_tensor_value_info("v", f, [batch, q_len, kv_heads * head]),
         helper.make_tensor_value_info("pk", f, [batch, kv_heads, past, head]),
         helper.make_tensor_value_info("pv", f, [batch, kv_heads, past, head])],
        [helper.make_tensor_value_info(n, f, None) for n in ("y", "present_k", "present_v")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    feeds = {
        "q": randn(rng, batch, q_len, q_heads * head),
        "k": randn(rng, batch, q_len, kv_heads * head),
        "v": randn(rng, batch, q_len, kv_heads * head),
        "pk": randn(rng, batch, kv_heads, past, head),
        "pv": randn(rng, batch, kv_heads, past, head),
    }
    got = nxe.onnx.load(model).run(**feeds)
    want = ReferenceEvaluator(model).run(None, feeds)
    for name, ref in zip(("y", "present_k", "present_v"), want):
        assert got[name].shape == ref.shape
        np.testing.assert_allclose(got[name], ref, rtol=1e-4, atol=1e-5)


# ---- ONNX converters composed from nxe ops: Attention extras, RotaryEmbedding, DFT -----------


def onnx_model(node, inputs, outputs, opset=23):
    """A one-node ONNX model; inputs / outputs are (name, numpy dtype, shape or None)."""
    from onnx import helper
    from onnx.helper import np_dtype_to_tensor_dtype as onnx_type
    graph = helper.make_graph(
        [node], "case",
        [helper.make_tensor_value_info(n, onnx_type(np.dtype(t)), s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, onnx_type(np.dtype(t)), s) for n, t, s in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def scores_reference(q, k, scale, softcap, bias):
    """(softcapped scaled Q K^T, the bias added, softmax with all-masked rows zeroed)."""
    q, k = q.astype(np.float64), k.astype(np.float64)
    k = np.repeat(k, q.shape[1] // k.shape[1], axis=1)
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    if softcap > 0:
        s = softcap * np.tanh(s / softcap)
    with_bias = s + bias
    top = np.max(with_bias, axis=-1, keepdims=True)
    e = np.exp(with_bias - np.where(np.isneginf(top), 0.0, top))
    total = np.sum(e, axis=-1, keepdims=True)
    p = e / np.where(total == 0, 1.0, total)
    p = np.where(np.isneginf(np.max(bias + np.zeros(s.shape), axis=-1, keepdims=True)), 0.0, p)
    return s, with_bias, p


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
@pytest.mark.parametrize("softcap", [0.0, 2.5])
def test_onnx_attention_qk_matmul_output_modes(mode, softcap, rng):
    import nxe.onnx
    from onnx import helper
    b, h, hkv, l, s, e = 2, 4, 2, 3, 5, 8
    attrs = {"qk_matmul_output_mode": mode, "is_causal": 1}
    if softcap:
        attrs["softcap"] = softcap
    node = helper.make_node("Attention", ["q", "k", "v", "mask"], ["y", "", "", "qk"], **attrs)
    f = np.float32
    model = onnx_model(node, [("q", f, [b, h, l, e]), ("k", f, [b, hkv, s, e]),
                              ("v", f, [b, hkv, s, e]), ("mask", f, [l, s])],
                       [("y", f, None), ("qk", f, None)])
    q, k, v = randn(rng, b, h, l, e), randn(rng, b, hkv, s, e), randn(rng, b, hkv, s, e)
    mask = randn(rng, l, s)
    mask[1, :] = -np.inf                       # one fully masked query row
    got = nxe.onnx.load(model).run(q=q, k=k, v=v, mask=mask)
    causal = np.where(np.arange(s)[None, :] <= np.arange(l)[:, None], 0.0, -np.inf)
    raw, with_bias, probs = scores_reference(q, k, 1 / np.sqrt(e), softcap, mask + causal)
    want = {0: raw, 1: raw, 2: with_bias, 3: probs}[mode]
    assert got["qk"].shape == (b, h, l, s)
    np.testing.assert_allclose(got["qk"], want, rtol=1e-4, atol=1e-5)
    y = np.matmul(probs, np.repeat(v.astype(np.float64), h // hkv, axis=1))
    np.testing.assert_allclose(got["y"], y, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("causal", [0, 1])
@pytest.mark.parametrize("window", [(-1, -1), (1, -1), (1, 0)], ids=str)
def test_onnx_attention_nonpad_kv_seqlen_and_windows(causal, window, rng):
    import nxe.onnx
    from onnx import helper
    b, h, l, s, e = 3, 2, 2, 6, 4
    # The window attributes exist from opset 25; at 24 onnx's checker refuses them.
    windows = {} if window == (-1, -1) else {"left_window_size": window[0],
                                             "right_window_size": window[1]}
    node = helper.make_node("Attention", ["q", "k", "v", "", "", "", "lens"], ["y"],
                            is_causal=causal, **windows)
    f = np.float32
    model = onnx_model(node, [("q", f, [b, h, l, e]), ("k", f, [b, h, s, e]),
                              ("v", f, [b, h, s, e]), ("lens", np.int64, [b])],
                       [("y", f, None)], opset=24 if window == (-1, -1) else 25)
    q, k, v = randn(rng, b, h, l, e), randn(rng, b, h, s, e), randn(rng, b, h, s, e)
    lens = np.array([6, 3, 1], dtype=np.int64)
    got = nxe.onnx.load(model).run(q=q, k=k, v=v, lens=lens)["y"]
    j = np.arange(s)[None, None, :]
    i = np.arange(l)[None, :, None]
    position = i + (lens - l)[:, None, None]   # each query's absolute position
    allowed = (j < lens[:, None, None]) & (i >= 0)
    if causal:
        allowed &= j <= position
    if window[0] >= 0:
        allowed &= position - j <= window[0]
    if window[1] >= 0:
        allowed &= j - position <= window[1]
    bias = np.where(allowed, 0.0, -np.inf)[:, None]
    _, _, probs = scores_reference(q, k, 1 / np.sqrt(e), 0.0, bias)
    np.testing.assert_allclose(got, np.matmul(probs, v.astype(np.float64)), rtol=1e-4,
                               atol=1e-5)


def test_onnx_attention_f16_runs_widened_and_short_runtime_mask(rng):
    import nxe.onnx
    from onnx import helper
    b, h, l, s, e = 1, 2, 3, 5, 4
    node = helper.make_node("Attention", ["q", "k", "v", "mask"], ["y"])
    f = np.float16
    model = onnx_model(node, [("q", f, [b, h, l, e]), ("k", f, [b, h, s, e]),
                              ("v", f, [b, h, s, e]), ("mask", np.bool_, [l, 3])],
                       [("y", f, None)])
    q, k, v = (randn(rng, *shape).astype(f) for shape in
               ([b, h, l, e], [b, h, s, e], [b, h, s, e]))
    mask = np.array([[1, 0, 1], [1, 1, 1], [0, 0, 1]], dtype=bool)
    got = nxe.onnx.load(model).run(q=q, k=k, v=v, mask=mask)["y"]
    assert got.dtype == np.float16
    full = np.concatenate([mask, np.zeros((l, s - 3), dtype=bool)], axis=1)
    want = reference(q.astype(np.float32), k.astype(np.float32), v.astype(np.float32), full)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2e-3, atol=2e-3)


def test_onnx_attention_rejects_unknown_qk_mode(rng):
    import nxe.onnx
    from onnx import helper
    node = helper.make_node("Attention", ["q", "k", "v"], ["y", "", "", "qk"],
                            qk_matmul_output_mode=7)
    f = np.float32
    model = onnx_model(node, [("q", f, [1, 1, 2, 4]), ("k", f, [1, 1, 3, 4]),
                              ("v", f, [1, 1, 3, 4])], [("y", f, None), ("qk", f, None)])
    with pytest.raises(Exception, match="qk_matmul_output_mode 7"):
        nxe.onnx.load(model).run(q=randn(rng, 1, 1, 2, 4), k=randn(rng, 1, 1, 3, 4),
                                 v=randn(rng, 1, 1, 3, 4))


def rope_reference(x, cos, sin, interleaved, rotary):
    """x [B, S, H, D]; cos / sin [B, S, R/2]."""
    x = x.astype(np.float64)
    c, s_ = cos[:, :, None, :], sin[:, :, None, :]
    part = x[..., :rotary]
    x1, x2 = (part[..., 0::2], part[..., 1::2]) if interleaved else np.split(part, 2, -1)
    real, imag = c * x1 - s_ * x2, s_ * x1 + c * x2
    if interleaved:
        rotated = np.stack([real, imag], axis=-1).reshape(part.shape)
    else:
        rotated = np.concatenate([real, imag], axis=-1)
    return np.concatenate([rotated, x[..., rotary:]], axis=-1)


@pytest.mark.parametrize("rank", [3, 4])
@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("rotary", [0, 4])
@pytest.mark.parametrize("positions", [True, False])
def test_onnx_rotary_embedding(rank, interleaved, rotary, positions, rng):
    import nxe.onnx
    from onnx import helper
    b, seq, heads, d, table = 2, 3, 2, 6, 7
    r = rotary or d
    f = np.float32
    shape = [b, heads, seq, d] if rank == 4 else [b, seq, heads * d]
    attrs = {"interleaved": interleaved, "rotary_embedding_dim": rotary}
    if rank == 3:
        attrs["num_heads"] = heads
    names = ["x", "cos", "sin"] + (["pos"] if positions else [])
    node = helper.make_node("RotaryEmbedding", names, ["y"], **attrs)
    cache = [table, r // 2] if positions else [b, seq, r // 2]
    inputs = [("x", f, shape), ("cos", f, cache), ("sin", f, cache)]
    if positions:
        inputs.append(("pos", np.int64, [b, seq]))
    model = onnx_model(node, inputs, [("y", f, None)])
    x = randn(rng, *shape)
    angles = rng.uniform(0, 6.3, cache)
    feeds = {"x": x, "cos": np.cos(angles).astype(f), "sin": np.sin(angles).astype(f)}
    cos, sin = feeds["cos"], feeds["sin"]
    if positions:
        feeds["pos"] = rng.integers(0, table, (b, seq)).astype(np.int64)
        cos, sin = cos[feeds["pos"]], sin[feeds["pos"]]
    got = nxe.onnx.load(model).run(**feeds)["y"]
    x4 = x.transpose(0, 2, 1, 3) if rank == 4 else x.reshape(b, seq, heads, d)
    want = rope_reference(x4, cos, sin, interleaved, r)
    want = want.transpose(0, 2, 1, 3) if rank == 4 else want.reshape(shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_onnx_rotary_embedding_rejects_odd_rotary_dim(rng):
    import nxe.onnx
    from onnx import helper
    f = np.float32
    node = helper.make_node("RotaryEmbedding", ["x", "cos", "sin"], ["y"],
                            rotary_embedding_dim=3)
    model = onnx_model(node, [("x", f, [1, 1, 2, 4]), ("cos", f, [1, 2, 1]),
                              ("sin", f, [1, 2, 1])], [("y", f, None)])
    with pytest.raises(Exception, match="RotaryEmbedding.*rotary_embedding_dim 3"):
        nxe.onnx.load(model).run(x=randn(rng, 1, 1, 2, 4), cos=randn(rng, 1, 2, 1),
                                 sin=randn(rng, 1, 2, 1))


# A one-sided inverse takes a complex half spectrum, so real input is not a case of it.
DFT_KINDS = [(complex_input, inverse, onesided)
             for complex_input in (False, True) for inverse in (0, 1) for onesided in (0, 1)
             if not (inverse and onesided and not complex_input)]


@pytest.mark.parametrize(("complex_input", "inverse", "onesided"), DFT_KINDS)
@pytest.mark.parametrize("axis", [1, 2, -2])
@pytest.mark.parametrize("length", [None, 4, 9])
def test_onnx_dft(complex_input, axis, inverse, onesided, length, rng):
    import nxe.onnx
    from onnx import helper
    shape = [2, 6, 5, 2 if complex_input else 1]
    f = np.float32
    names = ["x", "n" if length else "", "axis"]
    node = helper.make_node("DFT", names, ["y"], inverse=inverse, onesided=onesided)
    model = onnx_model(node, [("x", f, shape)], [("y", f, None)], opset=20)
    consts = [helper.make_tensor("axis", 7, [], [axis])]
    if length:
        consts.append(helper.make_tensor("n", 7, [], [length]))
    model.graph.initializer.extend(consts)
    x = randn(rng, *shape)
    signal = x[..., 0] + (1j * x[..., 1] if complex_input else 0)
    ax = axis % 4
    if inverse and onesided:
        n = length or 2 * (shape[ax] - 1)
        want = np.fft.irfft(signal, n=n, axis=ax)[..., None]
    else:
        n = length or shape[ax]
        spectrum = np.fft.ifft(signal, n=n, axis=ax) if inverse else \
            np.fft.fft(signal, n=n, axis=ax)
        if onesided:
            spectrum = np.take(spectrum, np.arange(n // 2 + 1), axis=ax)
        want = np.stack([spectrum.real, spectrum.imag], axis=-1)
    got = nxe.onnx.load(model).run(x=x)["y"]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_onnx_dft_rejects_the_complex_axis(rng):
    import nxe.onnx
    from onnx import helper
    node = helper.make_node("DFT", ["x"], ["y"], axis=2)
    model = onnx_model(node, [("x", np.float32, [2, 3, 1])], [("y", np.float32, None)],
                       opset=19)
    with pytest.raises(Exception, match="DFT.*axis 2"):
        nxe.onnx.load(model).run(x=randn(rng, 2, 3, 1))
