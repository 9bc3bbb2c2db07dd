"""Constant folding of the nodes onnx's reference evaluator cannot fold: GatherElements with
more than 32 positions along its axis (PyTorch's BERT embeddings) and DequantizeLinear before
opset 19 (the bias of onnxruntime's QDQ models). Folded at import, their values must be
onnxruntime's, which computes the same nodes at run time."""

import numpy as np
import nxe
import nxe.onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_testing import onnxruntime_outputs, value_info


def folded_model(node, constants, output_elem, opset):
    """A model whose only node reads initializers alone (so nxe folds it at import) and whose
    output is that node's plus the run-time input, so nxe also compiles a graph."""
    add = helper.make_node("Add", ["folded", "x"], ["y"])
    graph = helper.make_graph(
        [node, add], "fold", [value_info("x", output_elem, None)],
        [value_info("y", output_elem, None)],
        [numpy_helper.from_array(value, name) for name, value in constants.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def assert_folds_as_onnxruntime(node, constants, shape, opset=17):
    model = folded_model(node, constants, TensorProto.FLOAT, opset)
    feeds = {"x": np.zeros(shape, np.float32)}
    expected = onnxruntime_outputs(model, feeds)["y"]
    loaded = nxe.onnx.load(model)
    got = loaded.run(feeds)["y"]
    assert loaded.compile_for(feeds).folded_nodes == 1
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("axis, data_shape, index_shape", [
    (1, (1, 64), (1, 16)),        # BERT's token-type ids: 16 of a 64-wide buffer
    (0, (40, 3), (7, 3)),
    (-1, (2, 3, 50), (2, 3, 9)),
    (1, (4, 40, 5), (2, 33, 3)),  # indices smaller than data outside the axis too
])
def test_gather_elements_over_32_positions_folds(axis, data_shape, index_shape, rng):
    data = rng.standard_normal(data_shape).astype(np.float32)
    size = data_shape[axis]
    indices = rng.integers(-size, size, index_shape).astype(np.int64)
    node = helper.make_node("GatherElements", ["data", "indices"], ["folded"], axis=axis)
    assert_folds_as_onnxruntime(node, {"data": data, "indices": indices}, index_shape)


def test_gather_elements_index_out_of_range_is_invalid(rng):
    data = rng.standard_normal((1, 40)).astype(np.float32)
    indices = np.array([[0, 40]], np.int64)
    node = helper.make_node("GatherElements", ["data", "indices"], ["folded"], axis=1)
    model = folded_model(node, {"data": data, "indices": indices}, TensorProto.FLOAT, 17)
    with pytest.raises(nxe.InvalidGraphError, match=r"GatherElements node .*outside \[-40, 39\]"):
        nxe.onnx.load(model).run({"x": np.zeros((1, 2), np.float32)})


@pytest.mark.parametrize("opset", [10, 13, 17])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32])
def test_dequantize_linear_per_tensor_folds_before_opset_19(opset, dtype, rng):
    info = np.iinfo(dtype)
    low, high = max(info.min, -(1 << 20)), min(info.max, 1 << 20)
    x = rng.integers(low, high, (3, 5), endpoint=True).astype(dtype)
    zero = np.array(0 if dtype == np.int32 else rng.integers(low, high), dtype)
    scale = np.array(0.037, np.float32)
    node = helper.make_node("DequantizeLinear", ["q", "scale", "zero"], ["folded"])
    assert_folds_as_onnxruntime(node, {"q": x, "scale": scale, "zero": zero}, (3, 5), opset)


def test_dequantize_linear_of_a_scalar_folds_to_an_array(rng):
    """A 0-d quantized constant (QDQ attention's scale factor) folds to a 0-d array, not a
    numpy scalar: shape inference of the nodes that read it needs an array's type."""
    node = helper.make_node("DequantizeLinear", ["q", "scale", "zero"], ["folded"])
    constants = {"q": np.array(77, np.uint8), "scale": np.array(0.01, np.float32),
                 "zero": np.array(3, np.uint8)}
    model = folded_model(node, constants, TensorProto.FLOAT, 13)
    (value,) = nxe.onnx.load(model).evaluate_node(node, constants)
    assert isinstance(value, np.ndarray) and value.shape == () and value.dtype == np.float32
    feeds = {"x": np.zeros((), np.float32)}
    np.testing.assert_array_equal(value, onnxruntime_outputs(model, feeds)["y"])


@pytest.mark.parametrize("axis, shape", [(0, (4, 3, 2)), (1, (2, 4, 3)), (-1, (3, 2, 4))])
def test_dequantize_linear_per_axis_folds_at_opset_13(axis, shape, rng):
    x = rng.integers(-128, 128, shape).astype(np.int8)
    scale = rng.uniform(0.01, 0.1, 4).astype(np.float32)
    zero = rng.integers(-5, 5, 4).astype(np.int8)
    node = helper.make_node("DequantizeLinear", ["q", "scale", "zero"], ["folded"], axis=axis)
    assert_folds_as_onnxruntime(node, {"q": x, "scale": scale, "zero": zero}, shape, 13)


def test_dequantize_linear_of_a_per_tensor_bias_folds(rng):
    """onnxruntime's quantizer writes a per-tensor int32 bias with a scale of shape [1] and no
    axis: one value is per tensor, whatever the (here absent) axis would be."""
    bias = rng.integers(-(1 << 16), 1 << 16, 8).astype(np.int32)
    scale = np.array([3e-5], np.float32)
    node = helper.make_node("DequantizeLinear", ["q", "scale", "zero"], ["folded"])
    constants = {"q": bias, "scale": scale, "zero": np.zeros(1, np.int32)}
    assert_folds_as_onnxruntime(node, constants, (8,), 13)


def test_dequantize_linear_of_a_per_channel_bias_folds(rng):
    bias = rng.integers(-(1 << 16), 1 << 16, 8).astype(np.int32)
    scale = rng.uniform(1e-5, 1e-4, 8).astype(np.float32)
    node = helper.make_node("DequantizeLinear", ["q", "scale", "zero"], ["folded"], axis=0)
    constants = {"q": bias, "scale": scale, "zero": np.zeros(8, np.int32)}
    assert_folds_as_onnxruntime(node, constants, (8,), 13)


def test_dequantize_linear_with_scales_for_another_axis_is_invalid():
    node = helper.make_node("DequantizeLinear", ["q", "scale"], ["folded"], axis=0)
    constants = {"q": np.zeros((2, 3), np.int8), "scale": np.ones(3, np.float32)}
    model = folded_model(node, constants, TensorProto.FLOAT, 13)
    with pytest.raises(nxe.InvalidGraphError, match="3 scales for axis 0 of size 2"):
        nxe.onnx.load(model).run({"x": np.zeros((2, 3), np.float32)})
