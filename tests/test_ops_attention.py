"""ScaledDotProductAttention against a numpy softmax reference: ranks, masks (additive, boolean,
broadcast), causal frontiers, soft-capping, grouped key/value heads, fully masked rows,
thread-count independence and bad input."""

from __future__ import annotations

import numpy as np
import nxe
import pytest

RTOL, ATOL = 1e-5, 1e-6


def run_sdpa(arrays, threads=1, **attrs):
    g = nxe.Graph()
    inputs = [None if a is None else g.input(f"in{i}", a.shape, a.dtype)
              for i, a in enumerate(arrays)]
    y = g.ScaledDotProductAttention(*inputs, **attrs)
    g.mark_output(y, "y")
    feed = {f"in{i}": a for i, a in enumerate(arrays) if a is not None}
    return g.compile(threads=threads).run(feed)["y"]


def compile_sdpa(arrays, **attrs):
    g = nxe.Graph()
    inputs = [None if a is None else g.input(f"in{i}", a.shape, a.dtype)
              for i, a in enumerate(arrays)]
    y = g.ScaledDotProductAttention(*inputs, **attrs)
    g.mark_output(y)
    return g.compile(threads=1)


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
    got = run_sdpa([q, k, v])
    ref = reference(q, k, v)
    assert got.shape == ref.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("mask_shape", [(6, 9), (1, 9), (9,), (2, 1, 6, 9), (3, 1, 1)], ids=str)
def test_sdpa_additive_mask_broadcasts(mask_shape, rng):
    q, k, v = randn(rng, 2, 3, 6, 4), randn(rng, 2, 3, 9, 4), randn(rng, 2, 3, 9, 5)
    mask = randn(rng, *mask_shape)
    mask[..., 0] = -np.inf  # removes key 0 wherever the mask reaches it
    got = run_sdpa([q, k, v, mask])
    np.testing.assert_allclose(got, reference(q, k, v, mask), rtol=RTOL, atol=ATOL)


def test_sdpa_boolean_mask_keeps_true_keys(rng):
    q, k, v = randn(rng, 2, 5, 8), randn(rng, 2, 7, 8), randn(rng, 2, 7, 3)
    mask = rng.random((2, 5, 7)) < 0.6
    mask[:, :, 2] = True
    got = run_sdpa([q, k, v, mask])
    np.testing.assert_allclose(got, reference(q, k, v, mask), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("lengths,offset", [((5, 5), 0), ((3, 8), 5), ((4, 6), 0), ((6, 4), -1)],
                         ids=str)
def test_sdpa_causal_frontier_with_offset(lengths, offset, rng):
    ll, ss = lengths
    q, k, v = randn(rng, 2, ll, 4), randn(rng, 2, ss, 4), randn(rng, 2, ss, 4)
    got = run_sdpa([q, k, v], causal=1, causal_offset=offset)
    ref = reference(q, k, v, causal=1, causal_offset=offset)
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL)


def test_sdpa_fully_masked_row_gives_zeros(rng):
    q, k, v = randn(rng, 3, 4), randn(rng, 5, 4), randn(rng, 5, 2)
    mask = np.ones((3, 5), bool)
    mask[1] = False
    got = run_sdpa([q, k, v, mask])
    np.testing.assert_array_equal(got[1], np.zeros(2, np.float32))
    np.testing.assert_allclose(got, reference(q, k, v, mask), rtol=RTOL, atol=ATOL)


def test_sdpa_scale_and_softcap(rng):
    q, k, v = randn(rng, 4, 6) * 4, randn(rng, 7, 6) * 4, randn(rng, 7, 3)
    got = run_sdpa([q, k, v], scale=0.7, softcap=2.5)
    np.testing.assert_allclose(got, reference(q, k, v, scale=0.7, softcap=2.5),
                               rtol=RTOL, atol=ATOL)


def test_sdpa_grouped_key_value_heads(rng):
    q, k, v = randn(rng, 2, 6, 5, 8), randn(rng, 2, 2, 7, 8), randn(rng, 2, 2, 7, 8)
    got = run_sdpa([q, k, v], causal=1, causal_offset=2)
    ref = reference(q, k, v, causal=1, causal_offset=2)
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL)


def test_sdpa_large_scores_stay_finite(rng):
    # Online softmax must rescale rather than overflow exp.
    q, k, v = randn(rng, 4, 8) * 30, randn(rng, 12, 8) * 30, randn(rng, 12, 4)
    got = run_sdpa([q, k, v], scale=1.0)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, reference(q, k, v, scale=1.0), rtol=1e-4, atol=1e-5)


def test_sdpa_one_and_many_threads_agree(rng):
    q, k, v = randn(rng, 2, 4, 33, 16), randn(rng, 2, 4, 40, 16), randn(rng, 2, 4, 40, 16)
    mask = randn(rng, 33, 40)
    np.testing.assert_array_equal(run_sdpa([q, k, v, mask], threads=1),
                                  run_sdpa([q, k, v, mask], threads=4))


def test_sdpa_rejects_mismatched_head_size(rng):
    with pytest.raises(nxe.ShapeMismatchError, match="'ScaledDotProductAttention'"):
        compile_sdpa([randn(rng, 3, 4), randn(rng, 5, 3), randn(rng, 5, 2)])


def test_sdpa_rejects_heads_that_do_not_group(rng):
    with pytest.raises(nxe.ShapeMismatchError, match="'ScaledDotProductAttention'.*grouped"):
        compile_sdpa([randn(rng, 5, 3, 4), randn(rng, 2, 6, 4), randn(rng, 2, 6, 4)])


def test_sdpa_rejects_mask_that_does_not_broadcast(rng):
    with pytest.raises(nxe.ShapeMismatchError, match="'ScaledDotProductAttention'.*mask"):
        compile_sdpa([randn(rng, 3, 4), randn(rng, 5, 4), randn(rng, 5, 2), randn(rng, 3, 4)])


def test_sdpa_rejects_integer_mask(rng):
    with pytest.raises(nxe.DtypeMismatchError, match="'ScaledDotProductAttention'"):
        compile_sdpa([randn(rng, 3, 4), randn(rng, 5, 4), randn(rng, 5, 2),
                      np.zeros((3, 5), np.int32)])


def test_sdpa_rejects_bad_causal_flag(rng):
    with pytest.raises(nxe.InvalidArgumentError, match="'ScaledDotProductAttention'.*causal"):
        compile_sdpa([randn(rng, 3, 4), randn(rng, 5, 4), randn(rng, 5, 2)], causal=2)


def test_onnx_attention_3d_grouped_heads_with_past_imports_and_matches_reference(rng):
    pytest.importorskip("onnx")
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
