"""Attention written out in ONNX nodes (MatMul -> scale -> mask Add -> Softmax -> MatMul, with
torch's Q/K scalings and NaN guard) imported as one ScaledDotProductAttention
(python/nxe/onnx/attention_fusion.py), equal to onnxruntime; patterns that differ in any part
(another Softmax axis, scores or weights read elsewhere, a scale that is not a constant, a mask
that widens the scores) imported node by node, still equal to onnxruntime. Hugging Face
exports: tests/test_onnx_hf_exports.py. nxe's BERT builder emits the op itself: checked here
against its written-out form, and in tests/test_reference_models.py against numpy."""

from __future__ import annotations

import numpy as np
import nxe.onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

# f32 against f32, outputs of order one.
ATOL = 2e-6
B, H, L, S, E = 2, 3, 5, 7, 8


def scalar(name, value):
    return helper.make_node("Constant", [], [name],
                            value=numpy_helper.from_array(np.array(value, np.float32), name))


def attention_model(*, torch_style=False, mask_shape=(B, 1, 1, S), axis=-1, extra_output=None,
                    scale_input=False, transposed_node=True):
    """Q [B, H, L, E], K [B, H, S, E] (transposed by a Transpose node in the graph, or K^T as
    the input), V [B, H, S, E] and a mask into the written-out attention."""
    nodes, inputs = [], [helper.make_tensor_value_info("q", TensorProto.FLOAT, [B, H, L, E])]
    if transposed_node:
        inputs.append(helper.make_tensor_value_info("k", TensorProto.FLOAT, [B, H, S, E]))
        nodes.append(helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]))
    else:
        inputs.append(helper.make_tensor_value_info("kt", TensorProto.FLOAT, [B, H, E, S]))
    inputs.append(helper.make_tensor_value_info("v", TensorProto.FLOAT, [B, H, S, E]))
    q, kt = "q", "kt"
    if torch_style:
        nodes += [scalar("c1", E ** -0.25), scalar("c2", E ** -0.25),
                  helper.make_node("Mul", ["q", "c1"], ["qs"]),
                  helper.make_node("Mul", ["kt", "c2"], ["kts"])]
        q, kt = "qs", "kts"
    nodes.append(helper.make_node("MatMul", [q, kt], ["scores"]))
    scores = "scores"
    if not torch_style:
        if scale_input:
            inputs.append(helper.make_tensor_value_info("d", TensorProto.FLOAT, []))
        else:
            nodes.append(scalar("d", np.sqrt(E)))
        nodes.append(helper.make_node("Div", ["scores", "d"], ["scaled"]))
        scores = "scaled"
    if mask_shape is not None:
        inputs.append(helper.make_tensor_value_info("mask", TensorProto.FLOAT, list(mask_shape)))
        nodes.append(helper.make_node("Add", [scores, "mask"], ["masked"]))
        scores = "masked"
    nodes.append(helper.make_node("Softmax", [scores], ["p"], axis=axis))
    weights = "p"
    if torch_style:
        nodes += [helper.make_node("IsNaN", ["p"], ["nan"]), scalar("zero", 0.0),
                  helper.make_node("Where", ["nan", "zero", "p"], ["pg"])]
        weights = "pg"
    nodes.append(helper.make_node("MatMul", [weights, "v"], ["y"]))
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if extra_output:
        outputs.append(helper.make_tensor_value_info(extra_output, TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "attention", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def feeds_for(model, rng, mask_shape=(B, 1, 1, S), empty_row=False):
    feeds = {}
    for value in model.graph.input:
        dims = [d.dim_value for d in value.type.tensor_type.shape.dim]
        feeds[value.name] = rng.standard_normal(dims).astype(np.float32)
    if "d" in feeds:
        feeds["d"] = np.array(np.sqrt(E), np.float32)
    if "mask" in feeds:
        mask = np.zeros(mask_shape, np.float32)
        mask[-1, ..., S - 2:] = np.finfo(np.float32).min  # padding keys of the last sequence
        if empty_row:
            mask[0, ..., :] = -np.inf  # the first sequence attends to nothing
        feeds["mask"] = mask
    return feeds


def run_both(model, feeds):
    nxe_model = nxe.onnx.load(model, threads=1)
    got = nxe_model.run(feeds)
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    want = dict(zip([o.name for o in model.graph.output], session.run(None, feeds)))
    executable = nxe_model.compile_for(feeds).executable
    ops = [row["op_type"] for row in executable.profile(feeds).rows()]
    return got, want, ops


@pytest.mark.parametrize("torch_style", [False, True], ids=["div_scale", "torch_sdpa"])
@pytest.mark.parametrize("transposed_node", [True, False], ids=["transpose_node", "kt_input"])
def test_written_out_attention_is_fused_and_matches_onnxruntime(torch_style, transposed_node,
                                                                 rng):
    model = attention_model(torch_style=torch_style, transposed_node=transposed_node)
    got, want, ops = run_both(model, feeds_for(model, rng))
    assert "ScaledDotProductAttention" in ops and "Softmax" not in ops
    assert "MatMul" not in ops and "Div" not in ops and "Mul" not in ops
    np.testing.assert_allclose(got["y"], want["y"], rtol=0, atol=ATOL)


def test_unmasked_unscaled_attention_is_fused(rng):
    model = attention_model(mask_shape=None)
    got, want, ops = run_both(model, feeds_for(model, rng))
    assert ops.count("ScaledDotProductAttention") == 1 and "Softmax" not in ops
    np.testing.assert_allclose(got["y"], want["y"], rtol=0, atol=ATOL)


def test_torch_guard_zeros_rows_without_keys_like_the_fused_op(rng):
    model = attention_model(torch_style=True)
    feeds = feeds_for(model, rng, empty_row=True)
    got, want, ops = run_both(model, feeds)
    assert "ScaledDotProductAttention" in ops
    assert np.all(want["y"][0] == 0) and np.all(got["y"][0] == 0)
    np.testing.assert_allclose(got["y"], want["y"], rtol=0, atol=ATOL)


@pytest.mark.parametrize("variant", [
    {"axis": 2},                                # Softmax over the queries, not the keys
    {"extra_output": "scores"},                 # the scores are read elsewhere
    {"extra_output": "p"},                      # the weights are read elsewhere
    {"scale_input": True},                      # the scale is an input, not a constant
    {"mask_shape": (2, 1, 1, 1, S)},            # the mask widens the scores
], ids=["softmax_axis", "scores_read", "weights_read", "scale_not_constant", "mask_widens"])
def test_patterns_that_differ_stay_unfused_and_match_onnxruntime(variant, rng):
    model = attention_model(**variant)
    mask_shape = variant.get("mask_shape", (B, 1, 1, S))
    got, want, ops = run_both(model, feeds_for(model, rng, mask_shape=mask_shape))
    assert "ScaledDotProductAttention" not in ops and "Softmax" in ops
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=0, atol=ATOL, err_msg=name)


def test_bert_builder_runs_one_attention_op_per_layer_equal_to_the_written_out_form(rng):
    from nxe import models

    config = models.BertConfig(hidden=64, heads=4, intermediate=128, layers=2)
    weights = models.bert_random_weights(config, seed=5)
    embeddings = rng.standard_normal((2, 19, config.hidden)).astype(np.float32)
    mask = np.zeros((2, 1, 1, 19), np.float32)
    mask[1, ..., 12:] = -10000.0
    results = {}
    for fused in (True, False):
        built = models.bert_encoder(weights, 2, 19, config, fused_attention=fused)
        executable = built.graph.compile(threads=2)
        ops = [row["op_type"] for row in executable.profile(embeddings, mask).rows()]
        assert ops.count("ScaledDotProductAttention") == (config.layers if fused else 0)
        assert ("Softmax" in ops) != fused
        results[fused] = executable.run(embeddings, mask)["hidden_states"]
    np.testing.assert_allclose(results[True], results[False], rtol=0, atol=1e-5)
