# ONNX NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss through nxe.onnx: every reduction,
# with and without class weights and ignore_index, 2-D to 4-D scores, i32/i64 targets, checked
# against numpy references written from the ONNX spec (and onnxruntime for a few models).
from __future__ import annotations

import numpy as np
import nxe
import nxe.onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

RTOL = 1e-5
ATOL = 1e-6
CLASSES = 5
SHAPES = [(4, CLASSES), (3, CLASSES, 2), (2, CLASSES, 3, 4)]
_ONNX_INDEX = {np.int32: TensorProto.INT32, np.int64: TensorProto.INT64}


def _loss_model(op_type, scores_shape, reduction, weight=None, ignore_index=None,
                target_dtype=np.int64, log_prob=False, weight_initializer=False,
                score_type=TensorProto.FLOAT):
    """A one-node model: inputs x, t and (unless an initializer) w; outputs loss[, log_prob]."""
    inputs = ["x", "t"]
    value_infos = [helper.make_tensor_value_info("x", score_type, scores_shape),
                   helper.make_tensor_value_info("t", _ONNX_INDEX[target_dtype],
                                                 scores_shape[:1] + scores_shape[2:])]
    initializers = []
    if weight is not None:
        inputs.append("w")
        if weight_initializer:
            initializers.append(numpy_helper.from_array(weight, "w"))
        else:
            value_infos.append(helper.make_tensor_value_info("w", score_type, [CLASSES]))
    outputs = ["loss", "log_prob"] if log_prob else ["loss"]
    attrs = {"reduction": reduction}
    if ignore_index is not None:
        attrs["ignore_index"] = ignore_index
    node = helper.make_node(op_type, inputs, outputs, **attrs)
    graph = helper.make_graph([node], "loss", value_infos,
                              [helper.make_tensor_value_info(n, score_type, None)
                               for n in outputs], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def _feeds(rng, scores_shape, weight=None, ignore_index=None, target_dtype=np.int64,
           weight_initializer=False):
    x = rng.standard_normal(scores_shape).astype(np.float32)
    t = rng.integers(0, CLASSES, scores_shape[:1] + scores_shape[2:]).astype(target_dtype)
    if ignore_index is not None:
        # About a third of the targets are ignored, at least one.
        ignored = rng.random(t.shape) < 0.35
        ignored.reshape(-1)[0] = True
        t[ignored] = ignore_index
    feeds = {"x": x, "t": t}
    if weight is not None and not weight_initializer:
        feeds["w"] = weight
    return feeds


def _reference_nll(log_probs, target, weight, reduction, ignore_index):
    """NegativeLogLikelihoodLoss as the ONNX spec states it, element by element."""
    flat_target = target.reshape(target.shape[0], -1)
    flat_scores = log_probs.reshape(log_probs.shape[0], log_probs.shape[1], -1)
    loss = np.zeros(flat_target.shape, np.float64)
    weights = np.zeros(flat_target.shape, np.float64)
    for n in range(flat_target.shape[0]):
        for d in range(flat_target.shape[1]):
            c = int(flat_target[n, d])
            if ignore_index is not None and c == ignore_index:
                continue
            weights[n, d] = 1.0 if weight is None else weight[c]
            loss[n, d] = -flat_scores[n, c, d] * weights[n, d]
    loss = loss.reshape(target.shape)
    if reduction == "none":
        return loss.astype(np.float32)
    if reduction == "sum":
        return np.float32(loss.sum())
    with np.errstate(invalid="ignore"):
        return np.float32(loss.sum() / weights.sum())


def _log_softmax(x):
    shifted = x.astype(np.float64) - x.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def _run(model, feeds):
    return nxe.onnx.load(model, threads=1).run(feeds)


def _assert_close(actual, expected, rtol=RTOL, atol=ATOL):
    expected = np.asarray(expected)
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{len(s)}d")
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("ignore_index", [None, 1, -3, 9], ids=lambda i: f"ii{i}")
def test_nll_loss_matches_the_spec(shape, reduction, weighted, ignore_index):
    rng = np.random.default_rng(len(shape) * 100 + (ignore_index or 0))
    weight = rng.uniform(0.2, 2.0, CLASSES).astype(np.float32) if weighted else None
    model = _loss_model("NegativeLogLikelihoodLoss", list(shape), reduction, weight,
                        ignore_index)
    feeds = _feeds(rng, shape, weight, ignore_index)
    expected = _reference_nll(feeds["x"], feeds["t"], weight, reduction, ignore_index)
    _assert_close(_run(model, feeds)["loss"], expected)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{len(s)}d")
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("ignore_index", [None, 2, -1], ids=lambda i: f"ii{i}")
def test_softmax_cross_entropy_matches_the_spec_with_its_log_prob(shape, reduction, weighted,
                                                                 ignore_index):
    rng = np.random.default_rng(len(shape) * 10 + (ignore_index or 0) + 7)
    weight = rng.uniform(0.2, 2.0, CLASSES).astype(np.float32) if weighted else None
    model = _loss_model("SoftmaxCrossEntropyLoss", list(shape), reduction, weight,
                        ignore_index, log_prob=True)
    feeds = _feeds(rng, shape, weight, ignore_index)
    log_probs = _log_softmax(feeds["x"])
    actual = _run(model, feeds)
    _assert_close(actual["log_prob"], log_probs.astype(np.float32))
    _assert_close(actual["loss"],
                  _reference_nll(log_probs, feeds["t"], weight, reduction, ignore_index))


@pytest.mark.parametrize("op_type", ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"])
def test_softmax_cross_entropy_without_log_prob_output_has_one_output(op_type):
    rng = np.random.default_rng(3)
    model = _loss_model(op_type, [4, CLASSES], "mean")
    feeds = _feeds(rng, (4, CLASSES))
    assert list(_run(model, feeds)) == ["loss"]


@pytest.mark.parametrize("op_type", ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"])
@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_int32_targets_and_an_initializer_weight_match_onnxruntime(op_type, reduction):
    rng = np.random.default_rng(11)
    shape = (3, CLASSES, 4, 2)
    weight = rng.uniform(0.2, 2.0, CLASSES).astype(np.float32)
    model = _loss_model(op_type, list(shape), reduction, weight, ignore_index=0,
                        target_dtype=np.int32, weight_initializer=True)
    feeds = _feeds(rng, shape, weight, 0, np.int32, weight_initializer=True)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    (expected,) = session.run(None, feeds)
    _assert_close(_run(model, feeds)["loss"], expected)


def test_sum_reduction_with_high_ignore_index_matches_onnxruntime():
    rng = np.random.default_rng(5)
    weight = rng.uniform(0.2, 2.0, CLASSES).astype(np.float32)
    model = _loss_model("SoftmaxCrossEntropyLoss", [6, CLASSES], "sum", weight, 10,
                        log_prob=True)
    feeds = _feeds(rng, (6, CLASSES), weight, 10)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    expected = dict(zip(["loss", "log_prob"], session.run(None, feeds)))
    actual = _run(model, feeds)
    for name, value in expected.items():
        _assert_close(actual[name], value)


def test_f16_scores_give_f16_losses():
    rng = np.random.default_rng(9)
    shape = (4, CLASSES, 3)
    model = _loss_model("SoftmaxCrossEntropyLoss", list(shape), "none", log_prob=True,
                        ignore_index=1, score_type=TensorProto.FLOAT16)
    feeds = _feeds(rng, shape, ignore_index=1)
    feeds["x"] = feeds["x"].astype(np.float16)
    log_probs = _log_softmax(feeds["x"].astype(np.float32))
    actual = _run(model, feeds)
    _assert_close(actual["log_prob"], log_probs.astype(np.float16), rtol=2e-3, atol=2e-3)
    _assert_close(actual["loss"],
                  _reference_nll(log_probs, feeds["t"], None, "none", 1).astype(np.float16),
                  rtol=2e-3, atol=2e-3)


def test_mean_over_only_ignored_targets_is_nan_as_zero_over_zero():
    model = _loss_model("NegativeLogLikelihoodLoss", [3, CLASSES], "mean", ignore_index=4)
    feeds = {"x": np.ones((3, CLASSES), np.float32), "t": np.full(3, 4, np.int64)}
    loss = _run(model, feeds)["loss"]
    assert loss.shape == () and np.isnan(loss)


def test_an_unknown_reduction_is_unsupported_naming_the_node():
    model = _loss_model("NegativeLogLikelihoodLoss", [3, CLASSES], "max")
    feeds = _feeds(np.random.default_rng(1), (3, CLASSES))
    with pytest.raises(nxe.UnsupportedError, match="NegativeLogLikelihoodLoss.*reduction"):
        _run(model, feeds)


def test_scores_without_a_class_axis_are_unsupported():
    node = helper.make_node("SoftmaxCrossEntropyLoss", ["x", "t"], ["loss"])
    graph = helper.make_graph(
        [node], "loss", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5]),
                         helper.make_tensor_value_info("t", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    with pytest.raises(nxe.UnsupportedError, match="SoftmaxCrossEntropyLoss.*rank 1"):
        _run(model, {"x": np.zeros(5, np.float32), "t": np.array(1, np.int64)})


def test_a_target_outside_the_classes_fails_the_run_in_gather_elements():
    model = _loss_model("NegativeLogLikelihoodLoss", [3, CLASSES], "sum")
    feeds = {"x": np.zeros((3, CLASSES), np.float32),
             "t": np.array([0, CLASSES + 2, 1], np.int64)}
    with pytest.raises(nxe.Error, match="GatherElements"):
        _run(model, feeds)
