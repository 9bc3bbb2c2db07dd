"""QDQ-format int8 models, as onnxruntime.quantization.quantize_static writes them from float
models exported by PyTorch, imported by nxe.onnx: the complete DequantizeLinear -> op ->
QuantizeLinear patterns run as nxe's quantized ops (QLinearConv, QLinearMatMul,
MatMulInteger), and the outputs equal onnxruntime's (which fuses the same patterns) within one
quantization step of the output scale."""

import warnings

import numpy as np
import nxe
import nxe.onnx
import onnx
import onnxruntime
import pytest
import torch
from onnx import numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

# Outputs are dequantized int8/uint8 values: nxe and onnxruntime may round a value that falls
# within float rounding of a half-step differently, so they may differ by one step of the
# output's scale, never more.
MAX_STEPS = 1
CALIBRATION_BATCHES = 8
# ONNX's float layers, and the nxe ops they convert to.
FLOAT_LAYERS = {"Conv", "MatMul", "Gemm"}
FLOAT_OPS = {"Conv1d", "Conv2d", "MatMul", "Gemm"}
INTEGER_OPS = {"QLinearConv", "QLinearMatMul", "MatMulInteger"}


class ConvNet(torch.nn.Module):
    """Conv 3->8 (ReLU) -> conv 8->8 with a residual Add -> max pool -> conv 8->4, 1x1."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.conv3 = torch.nn.Conv2d(8, 4, 1)

    def forward(self, x):
        h = torch.relu(self.conv1(x))
        h = torch.nn.functional.max_pool2d(self.conv2(h) + h, 2)
        return self.conv3(h)


class MatMulNet(torch.nn.Module):
    """Linear layers on a 2-D input export as Gemm (transB, bias); without a bias as MatMul;
    on a 3-D input as MatMul + Add. A residual Add joins the branches."""

    def __init__(self, rank3):
        super().__init__()
        self.rank3 = rank3
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8, bias=False)
        self.fc3 = torch.nn.Linear(8, 8)

    def forward(self, x):
        h = self.fc2(torch.relu(self.fc1(x)))
        return self.fc3(h) + h


class RandomBatches(CalibrationDataReader):
    def __init__(self, name, shape, seed):
        rng = np.random.default_rng(seed)
        self.batches = iter([{name: rng.standard_normal(shape).astype(np.float32)}
                             for _ in range(CALIBRATION_BATCHES)])

    def get_next(self):
        return next(self.batches, None)


CASES = {
    # name: (module, input shape at export and calibration, dynamic axes)
    "conv": (lambda: ConvNet(), (1, 3, 12, 10), {0: "n"}),
    "gemm": (lambda: MatMulNet(rank3=False), (4, 16), {0: "n"}),
    "matmul": (lambda: MatMulNet(rank3=True), (2, 5, 16), {0: "n", 1: "s"}),
}


def quantized_model(folder, case, per_channel, activations):
    make, shape, axes = CASES[case]
    output_axes = {i: axes[i] for i in (0, 1) if i in axes}
    torch.manual_seed(7)
    float_path, int8_path = folder / f"{case}.onnx", folder / f"{case}-int8.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(make().eval(), torch.randn(*shape), str(float_path), dynamo=False,
                          opset_version=17, input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": axes, "y": output_axes})
        quantize_static(str(float_path), str(int8_path), RandomBatches("x", shape, 11),
                        quant_format=QuantFormat.QDQ, per_channel=per_channel,
                        activation_type=activations, weight_type=QuantType.QInt8)
    return onnx.load(str(int8_path))


def onnxruntime_run(model, feeds, optimized=False):
    """onnxruntime's answer. By default with its graph optimizations off: the ONNX semantics
    node by node (DequantizeLinear, the float op, QuantizeLinear), which is exact here. Its
    fused integer kernels are not on every CPU: without VNNI they sum u8 x s8 pairs with
    vpmaddubsw, which saturates at int16 (seen on an AMD Zen 3: 20-30 quantization steps off
    its own unfused answer, where nxe's integer kernels agree with the unfused one exactly)."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    if not optimized:
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                           providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def output_scale(model):
    """The scale of the DequantizeLinear that makes the graph output y."""
    (node,) = [n for n in model.graph.node if list(n.output) == ["y"]]
    assert node.op_type == "DequantizeLinear"
    initializers = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    return float(initializers[node.input[1]])


def executed_ops(model, feeds):
    """The op types of the steps nxe's compiled graph runs for these feeds."""
    executable = model.compile_for(feeds).executable
    return [row["op_type"] for row in executable.profile(feeds).rows()]


def assert_within_steps(got, expected, scale):
    assert got.shape == expected.shape and got.dtype == expected.dtype == np.float32
    steps = np.abs(got.astype(np.float64) - expected) / scale
    # Dequantized values are multiples of the scale up to f32 rounding.
    assert steps.max() <= MAX_STEPS + 1e-3, f"max difference {steps.max():.3f} steps"


@pytest.mark.parametrize("activations", [QuantType.QUInt8, QuantType.QInt8],
                         ids=["u8", "s8"])
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
@pytest.mark.parametrize("case", list(CASES))
def test_quantize_static_model_runs_on_integer_ops_and_matches_onnxruntime(
        case, per_channel, activations, tmp_path, rng):
    model_proto = quantized_model(tmp_path, case, per_channel, activations)
    per_axis_scales = [t.name for t in model_proto.graph.initializer
                       if t.name.endswith("_scale") and np.prod(t.dims) > 1]
    assert bool(per_axis_scales) == per_channel  # the quantizer did what the case says
    model = nxe.onnx.load(model_proto, threads=1)
    scale = output_scale(model_proto)
    _, shape, _ = CASES[case]
    batches = [shape, (3, *shape[1:])] + ([(1, 7, 16)] if case == "matmul" else [])
    for batch_shape in batches:
        feeds = {"x": rng.standard_normal(batch_shape).astype(np.float32)}
        (expected,) = onnxruntime_run(model_proto, feeds)
        assert_within_steps(model.run(feeds)["y"], expected, scale)
        ops = executed_ops(model, feeds)
        assert not FLOAT_OPS & set(ops), ops
        float_layers = sum(n.op_type in FLOAT_LAYERS for n in model_proto.graph.node)
        assert sum(op in INTEGER_OPS for op in ops) == float_layers, ops


def test_per_channel_conv_keeps_one_scale_per_output_channel(tmp_path):
    """Per-channel weights fold into QLinearConv with their scales per output channel: the
    channels' results differ from what one shared scale would give."""
    model_proto = quantized_model(tmp_path, "conv", True, QuantType.QUInt8)
    scales = {t.name: numpy_helper.to_array(t) for t in model_proto.graph.initializer}
    assert any(v.ndim == 1 and v.size == 8 and np.ptp(v) > 0 for v in scales.values())
    fused = [n for n in nxe.onnx.load(model_proto).nodes if n.op_type == "QLinearConv"]
    assert len(fused) == 3
    assert all(np.size(scales[n.input[4]]) == np.size(scales[n.input[3]], 0) for n in fused)


def test_partial_pattern_stays_float_and_follows_the_onnx_semantics(tmp_path, rng):
    """A quantized Conv whose float result is also a graph output cannot become one quantized
    op: it runs in float between its DequantizeLinear and QuantizeLinear nodes, as
    onnxruntime does (here with its fusions off, the plain ONNX semantics)."""
    model_proto = quantized_model(tmp_path, "conv", False, QuantType.QUInt8)
    conv = next(n for n in model_proto.graph.node if n.op_type == "Conv")
    model_proto.graph.output.append(onnx.helper.make_tensor_value_info(
        conv.output[0], onnx.TensorProto.FLOAT, None))
    model = nxe.onnx.load(model_proto, threads=1)
    feeds = {"x": rng.standard_normal((2, 3, 12, 10)).astype(np.float32)}
    expected = onnxruntime_run(model_proto, feeds, optimized=False)
    got = model.run(feeds)
    np.testing.assert_allclose(got[conv.output[0]], expected[1], rtol=1e-5, atol=1e-5)
    assert_within_steps(got["y"], expected[0], output_scale(model_proto))
    ops = executed_ops(model, feeds)
    assert ops.count("Conv2d") == 1 and ops.count("QLinearConv") == 2, ops


def test_bias_with_another_scale_is_not_taken_as_the_accumulator_bias(tmp_path, rng):
    """A bias whose DequantizeLinear scale is not x_scale * w_scale is not in the units of the
    integer accumulator: the Conv stays float, computed as the ONNX graph says."""
    model_proto = quantized_model(tmp_path, "conv", False, QuantType.QUInt8)
    conv = next(n for n in model_proto.graph.node if n.op_type == "Conv")
    (bias_dequantize,) = [n for n in model_proto.graph.node if n.output[0] == conv.input[2]]
    bias_scale = next(t for t in model_proto.graph.initializer
                      if t.name == bias_dequantize.input[1])
    doubled = numpy_helper.to_array(bias_scale) * np.float32(2)
    bias_scale.CopyFrom(numpy_helper.from_array(doubled, bias_scale.name))
    model = nxe.onnx.load(model_proto, threads=1)
    feeds = {"x": rng.standard_normal((1, 3, 12, 10)).astype(np.float32)}
    (expected,) = onnxruntime_run(model_proto, feeds, optimized=False)
    assert_within_steps(model.run(feeds)["y"], expected, output_scale(model_proto))
    ops = executed_ops(model, feeds)
    assert ops.count("Conv2d") == 1 and ops.count("QLinearConv") == 2, ops


def test_weights_without_zero_points_and_gemm_without_bias_fold(tmp_path, rng):
    """Forms quantize_static does not write but the patterns allow: weight DequantizeLinear
    nodes without a zero point (0 of the weight's dtype) and a Gemm without a bias."""
    model_proto = quantized_model(tmp_path, "gemm", True, QuantType.QUInt8)
    initializers = {t.name: numpy_helper.to_array(t) for t in model_proto.graph.initializer}
    for node in model_proto.graph.node:
        if node.op_type == "DequantizeLinear" and initializers.get(node.input[0]) is not None \
                and initializers[node.input[0]].dtype == np.int8:
            assert not np.any(initializers[node.input[2]])
            del node.input[2:]
        if node.op_type == "Gemm":
            del node.input[2:]
    model = nxe.onnx.load(model_proto, threads=1)
    feeds = {"x": rng.standard_normal((5, 16)).astype(np.float32)}
    (expected,) = onnxruntime_run(model_proto, feeds)
    assert_within_steps(model.run(feeds)["y"], expected, output_scale(model_proto))
    assert executed_ops(model, feeds).count("QLinearMatMul") == 3


class TokenBatches(CalibrationDataReader):
    def __init__(self, vocab, shape, seed):
        rng = np.random.default_rng(seed)
        self.batches = iter([{"input_ids": rng.integers(1, vocab, shape),
                              "attention_mask": np.ones(shape, np.int64)}
                             for _ in range(CALIBRATION_BATCHES)])

    def get_next(self):
        return next(self.batches, None)


def test_quantized_transformer_encoder_runs_every_matmul_on_integer_ops(tmp_path, rng):
    """A BERT encoder (transformers, small configuration, seeded random weights) exported and
    quantized per channel: projections and attention's two activation products all become
    QLinearMatMul; embeddings, LayerNorm, Softmax and GELU stay float between their Q/DQ."""
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=64,
                                     max_position_embeddings=64)
    torch.manual_seed(3)
    bert = transformers.BertModel(config).eval()

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask):
            return self.bert(input_ids=input_ids,
                             attention_mask=attention_mask).last_hidden_state

    float_path, int8_path = tmp_path / "bert.onnx", tmp_path / "bert-int8.onnx"
    shape = (1, 16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ids = torch.randint(1, 100, shape)
        torch.onnx.export(Encoder(), (ids, torch.ones_like(ids)), str(float_path),
                          dynamo=False, opset_version=17,
                          input_names=["input_ids", "attention_mask"], output_names=["y"])
        quantize_static(str(float_path), str(int8_path), TokenBatches(100, shape, 5),
                        quant_format=QuantFormat.QDQ, per_channel=True)
    model_proto = onnx.load(str(int8_path))
    model = nxe.onnx.load(model_proto, threads=1)
    feeds = {"input_ids": rng.integers(1, 100, shape), "attention_mask": np.ones(shape, np.int64)}
    (expected,) = onnxruntime_run(model_proto, feeds)
    assert_within_steps(model.run(feeds)["y"], expected, output_scale(model_proto))
    ops = executed_ops(model, feeds)
    matmuls = sum(n.op_type == "MatMul" for n in model_proto.graph.node)
    assert matmuls == 16  # per layer: Q, K, V, output, two FFN, and the two attention products
    assert ops.count("QLinearMatMul") == matmuls and "MatMul" not in ops, ops


def test_malformed_pattern_is_left_to_the_checker(tmp_path):
    """The rewrite runs at load, before onnx's checker: a QDQ pattern with a malformed
    attribute is not rewritten, and the model is refused as invalid when it is built."""
    model_proto = quantized_model(tmp_path, "conv", True, QuantType.QUInt8)
    weight = next(n for n in model_proto.graph.node if n.op_type == "DequantizeLinear"
                  and any(a.name == "axis" for a in n.attribute))
    axis = next(a for a in weight.attribute if a.name == "axis")
    axis.CopyFrom(onnx.helper.make_attribute("axis", "zero"))
    model = nxe.onnx.load(model_proto)
    assert "Conv" in [n.op_type for n in model.nodes]
    with pytest.raises(nxe.InvalidGraphError):
        model.run({"x": np.zeros((1, 3, 12, 10), np.float32)})


def test_output_scale_from_a_constant_node_between_the_op_and_its_quantize(tmp_path, rng):
    """A QuantizeLinear whose scale comes from a Constant node placed after the op it quantizes
    (exporters interleave Constant nodes): the quantized op takes the QuantizeLinear's place,
    where the scale is defined."""
    model_proto = quantized_model(tmp_path, "conv", False, QuantType.QUInt8)
    nodes = list(model_proto.graph.node)
    position, quantize = next((i, n) for i, n in enumerate(nodes)
                              if n.op_type == "QuantizeLinear" and n.input[0] in
                              {o for c in nodes if c.op_type == "Conv" for o in c.output})
    scale = next(t for t in model_proto.graph.initializer if t.name == quantize.input[1])
    model_proto.graph.initializer.remove(scale)
    nodes.insert(position, onnx.helper.make_node("Constant", [], [scale.name], value=scale))
    del model_proto.graph.node[:]
    model_proto.graph.node.extend(nodes)
    model = nxe.onnx.load(model_proto, threads=1)
    feeds = {"x": rng.standard_normal((1, 3, 12, 10)).astype(np.float32)}
    (expected,) = onnxruntime_run(model_proto, feeds)
    assert_within_steps(model.run(feeds)["y"], expected, output_scale(model_proto))
    assert executed_ops(model, feeds).count("QLinearConv") == 3
