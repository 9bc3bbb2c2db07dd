"""Ordinary ops (Conv2d, FullyConnected, MatMul, pools, Add, Relu, Softmax...) on tensors that
carry quantization, lowered at compile to the integer kernels or, where none fits, to
DequantizeLinear -> f32 op -> QuantizeLinear; checked against numpy references computed here.

Tolerances: integer lowerings (QLinearConv, QLinearMatMul, 8-bit values passing through
max pools and reshapes, integer clamps) must equal the integer reference exactly: int32
accumulation, the multiplier x_scale * w_scale / y_scale formed in f32 and applied in double,
round half to even, saturate (the documented arithmetic of QLinearConv / QLinearMatMul). The
fallback's quantized results are equal to the f32 reference, except AveragePool (the f32 mean
may differ in the last bit from numpy's): within 1 quantization step there. f32 results
(Softmax) within 1e-6 absolute."""

import os
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import nxe
import pytest
from nxe import _binding

REPO = Path(__file__).resolve().parents[1]
RANGES = {"u8": (0, 255), "i8": (-128, 127)}


@pytest.fixture
def rng():
    return np.random.default_rng(18)


# ---- numpy references ------------------------------------------------------------------------

def multiplier(x_scale, w_scale, y_scale):
    """The requantization multiplier as the integer kernels form it: in f32."""
    return np.float32(np.float32(x_scale) * np.float32(w_scale)) / np.float32(y_scale)


def requantize(acc, mult, zero_point, dtype):
    """saturate(round_half_even(acc * multiplier) + zero_point), the product in double."""
    lo, hi = RANGES[dtype]
    v = np.rint(acc.astype(np.float64) * np.asarray(mult, np.float64)) + zero_point
    return np.clip(v, lo, hi).astype(np.uint8 if dtype == "u8" else np.int8)


def conv_acc(x, x_zero, w, w_zero, stride=1, pads=(0, 0, 0, 0)):
    """int64 accumulators of an NCHW convolution of zero-point-shifted operands."""
    xs = x.astype(np.int64) - x_zero
    xs = np.pad(xs, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    ws = w.astype(np.int64) - np.asarray(w_zero, np.int64).reshape(-1, 1, 1, 1)
    kh, kw = w.shape[2:]
    win = np.lib.stride_tricks.sliding_window_view(xs, (kh, kw), axis=(2, 3))
    win = win[:, :, ::stride, ::stride]
    return np.einsum("ncijkl,ockl->noij", win, ws)


def maxpool2(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def dequantize(q, scale, zero_point):
    return (q.astype(np.float32) - np.float32(zero_point)) * np.float32(scale)


def quantize(x, scale, zero_point, dtype):
    lo, hi = RANGES[dtype]
    v = np.rint(x.astype(np.float32) / np.float32(scale)) + zero_point
    return np.clip(v, lo, hi).astype(np.uint8 if dtype == "u8" else np.int8)


def softmax(x):
    e = np.exp(x.astype(np.float64) - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def q_tensor(g, name, dtype, scale, zero_point, kind="transient", shape=None):
    t = g.tensor(name=name, dtype=dtype, kind=kind, shape=shape)
    t.set_quant_asymmetric(scale, zero_point)
    return t


def q_constant(g, value, name, scale, zero_point):
    t = g.constant(value, name=name)
    t.set_quant_asymmetric(scale, zero_point)
    return t


class LogCapture:
    def __init__(self):
        self.lines = []

    def __enter__(self):
        nxe.log.set_log_callback(lambda level, message: self.lines.append(message), "info")
        return self

    def __exit__(self, *exc):
        nxe.log.set_log_callback(None)

    def lowering(self):
        return [line for line in self.lines if line.startswith("quantized op")]


# ---- LeNet, as the modelled runtime's LeNet sample builds it ----------------------------------

def lenet_params(rng):
    """Random u8 weights with per-tensor scale and zero point, int32 biases in units of
    in_scale * w_scale, and output scales calibrated on the integer reference itself."""
    layers = [("conv1", (20, 1, 5, 5)), ("conv2", (50, 20, 5, 5)), ("fc1", (500, 800)),
              ("fc2", (10, 500))]
    params = {}
    for name, shape in layers:
        fan_in = int(np.prod(shape[1:]))
        params[name] = {
            "w": rng.integers(0, 256, shape, dtype=np.uint8),
            "w_scale": float(np.float32(1.0 / (64 * np.sqrt(fan_in)))),
            "w_zero": int(rng.integers(124, 132)),
            "b": rng.integers(-3000, 3000, shape[0]).astype(np.int32),
        }
    return params


def lenet_reference(image, params, calibrate=False):
    """u8 logits and f32 probabilities of the integer LeNet; with calibrate, also picks each
    layer's output scale and zero point from the range of its real-valued accumulators."""
    x, x_scale, x_zero = image, np.float32(1.0 / 256), 0
    outputs = {}
    for name in ("conv1", "conv2", "fc1", "fc2"):
        p = params[name]
        if name.startswith("conv"):
            acc = conv_acc(x, x_zero, p["w"], p["w_zero"]) + p["b"].reshape(1, -1, 1, 1)
        else:
            flat = x.reshape(x.shape[0], -1).astype(np.int64) - x_zero
            acc = flat @ (p["w"].astype(np.int64) - p["w_zero"]).T + p["b"]
        b_scale = np.float32(np.float32(x_scale) * np.float32(p["w_scale"]))
        p["b_scale"] = float(b_scale)
        if calibrate:
            real = acc * np.float64(b_scale)
            lo, hi = min(real.min(), 0.0), max(real.max(), 0.0)
            p["y_scale"] = float(np.float32((hi - lo) / 255))
            p["y_zero"] = int(np.clip(np.rint(-lo / p["y_scale"]), 0, 255))
        y = requantize(acc, multiplier(x_scale, p["w_scale"], p["y_scale"]), p["y_zero"], "u8")
        if name.startswith("conv"):
            y = maxpool2(y)
        if name == "fc1":
            y = np.maximum(y, np.uint8(p["y_zero"]))  # Relu, its result quantized alike
        x, x_scale, x_zero = y, np.float32(p["y_scale"]), p["y_zero"]
        outputs[name] = y
    logits = outputs["fc2"]
    probs = softmax(dequantize(logits, x_scale, x_zero))
    return logits, probs


def build_lenet(params, batch=1):
    g = nxe.Graph()
    x = g.input("input", (batch, 1, 28, 28), "u8")
    x.set_quant_asymmetric(1.0 / 256, 0)
    scale, zero = 1.0 / 256, 0
    for name in ("conv1", "conv2", "fc1", "fc2"):
        p = params[name]
        w = q_constant(g, p["w"], f"{name}.w", p["w_scale"], p["w_zero"])
        b = q_constant(g, p["b"], f"{name}.b", p["b_scale"], 0)
        kind = "output" if name == "fc2" else "transient"
        y = q_tensor(g, name, "u8", p["y_scale"], p["y_zero"], kind=kind)
        if name.startswith("conv"):
            g.op("Conv2d", [x, w, b], outputs=[y], name=name)
            pooled = q_tensor(g, f"{name}.pool", "u8", p["y_scale"], p["y_zero"])
            g.op("MaxPool2d", [y], outputs=[pooled], kernel_shape=[2, 2], strides=[2, 2])
            y = pooled
        else:
            if name == "fc1":
                flat = q_tensor(g, "flatten", "u8", scale, zero)
                g.op("Reshape", [x], outputs=[flat], shape=[batch, 800])
                x = flat
            g.op("FullyConnected", [x, w, b], outputs=[y], name=name)
        if name == "fc1":
            relu = q_tensor(g, "fc1.relu", "u8", p["y_scale"], p["y_zero"])
            g.op("Relu", [y], outputs=[relu], name="relu1")
            y = relu
        x, scale, zero = y, p["y_scale"], p["y_zero"]
    probs = g.tensor(name="probs", dtype="f32", kind="output")
    g.op("Softmax", [x], outputs=[probs], name="softmax")
    return g


def check_lenet(result, logits, probs):
    np.testing.assert_array_equal(result["fc2"], logits)
    np.testing.assert_allclose(result["probs"], probs, rtol=0, atol=1e-6)


def test_lenet_u8_from_python_equals_the_integer_reference(rng):
    params = lenet_params(rng)
    images = rng.integers(0, 256, (2, 1, 28, 28), dtype=np.uint8)
    lenet_reference(images[:1], params, calibrate=True)
    g = build_lenet(params)
    with LogCapture() as log:
        exe = g.compile(threads=2)
    lines = log.lowering()
    assert any("Conv2d 'conv1': integer (QLinearConv)" in line for line in lines), lines
    assert any("FullyConnected 'fc1': integer" in line and "Relu 'relu1' folded" in line
               for line in lines), lines
    assert any("Softmax 'softmax': fallback" in line for line in lines), lines
    assert any("MaxPool2d" in line and "pass through" in line for line in lines), lines
    for image in images:
        logits, probs = lenet_reference(image[None], params)
        # a test that could not fail if every logit saturated
        assert len(np.unique(logits)) > 3
        check_lenet(exe.run({"input": image[None]}), logits, probs)


def test_lenet_u8_graph_compiles_again_and_through_a_binary_alike(rng):
    params = lenet_params(rng)
    image = rng.integers(0, 256, (1, 1, 28, 28), dtype=np.uint8)
    logits, probs = lenet_reference(image, params, calibrate=True)
    g = build_lenet(params)
    first = g.compile(threads=1).run({"input": image})
    second = g.compile(threads=2).run({"input": image})
    with nxe.VirtualMachine(g.compile_to_binary(), threads=1) as vm:
        loaded = dict(zip(first, vm["main"]({"input": image})))  # outputs in graph order
    for result in (first, second, loaded):
        check_lenet(result, logits, probs)
    # the user's graph is unchanged and reports the settled shapes
    assert g.find_tensor("conv1").dtype == "u8"
    assert g.find_tensor("conv1").shape == (1, 20, 24, 24)
    assert g.find_tensor("conv1").quant["type"] == "asymmetric"


# ---- single ops -------------------------------------------------------------------------------

@pytest.mark.parametrize("weights", ["per-tensor-u8", "per-channel-i8"])
def test_conv2d_with_padding_stride_and_relu_matches_numpy(weights, rng):
    x = rng.integers(0, 256, (2, 3, 9, 8), dtype=np.uint8)
    x_scale, x_zero = 0.02, 131
    if weights == "per-tensor-u8":
        w = rng.integers(0, 256, (6, 3, 3, 3), dtype=np.uint8)
        w_scales, w_zero = np.full(6, 0.004, np.float32), 120
    else:
        w = rng.integers(-127, 128, (6, 3, 3, 3), dtype=np.int8)
        w_scales, w_zero = (rng.random(6) * 0.006 + 0.001).astype(np.float32), 0
    b = rng.integers(-400, 400, 6).astype(np.int32)
    y_scale, y_zero = 0.05, 100
    g = nxe.Graph()
    xt = g.input("x", x.shape, "u8")
    xt.set_quant_asymmetric(x_scale, x_zero)
    wt = g.constant(w, name="w")
    if weights == "per-tensor-u8":
        wt.set_quant_asymmetric(float(w_scales[0]), w_zero)
    else:
        wt.set_quant_per_channel(0, w_scales)
    bt = g.constant(b, name="b")
    bt.set_quant_per_channel(0, [float(np.float32(x_scale) * s) for s in w_scales])
    conv = q_tensor(g, "conv", "u8", y_scale, y_zero)
    g.op("Conv2d", [xt, wt, bt], outputs=[conv], name="conv", strides=[2, 2], padding="SAME")
    y = q_tensor(g, "y", "u8", y_scale, y_zero, kind="output")
    g.op("Relu", [conv], outputs=[y], name="relu")
    with LogCapture() as log:
        got = g.compile(threads=2).run({"x": x})["y"]
    expected_path = "per-channel weights" if weights == "per-channel-i8" else "QLinearConv)"
    assert any("Conv2d 'conv': integer (QLinearConv" in line and expected_path in line
               and "Relu 'relu' folded" in line for line in log.lowering()), log.lines
    # SAME with stride 2: 9 -> 5 (pads 1, 1), 8 -> 4 (pads 0 at the start, 1 at the end)
    acc = conv_acc(x, x_zero, w, w_zero, stride=2, pads=(1, 0, 1, 1))
    acc = acc + b.reshape(1, -1, 1, 1)
    mult = np.array([multiplier(x_scale, s, y_scale) for s in w_scales]).reshape(1, -1, 1, 1)
    expected = np.maximum(requantize(acc, mult, y_zero, "u8"), np.uint8(y_zero))
    np.testing.assert_array_equal(got, expected)


def test_fully_connected_and_matmul_on_u8_match_numpy(rng):
    x = rng.integers(0, 256, (5, 40), dtype=np.uint8)
    w = rng.integers(0, 256, (7, 40), dtype=np.uint8)
    b = rng.integers(-500, 500, 7).astype(np.int32)
    m = rng.integers(0, 256, (40, 9), dtype=np.uint8)
    x_scale, x_zero, w_scale, w_zero, m_scale, m_zero = 0.03, 128, 0.01, 117, 0.02, 140
    g = nxe.Graph()
    xt = g.input("x", x.shape, "u8")
    xt.set_quant_asymmetric(x_scale, x_zero)
    fc = q_tensor(g, "fc", "u8", 0.2, 120, kind="output")
    g.op("FullyConnected", [xt, q_constant(g, w, "w", w_scale, w_zero),
                            q_constant(g, b, "b", x_scale * w_scale, 0)], outputs=[fc], name="fc")
    mm = q_tensor(g, "mm", "u8", 0.3, 90, kind="output")
    g.op("MatMul", [xt, q_constant(g, m, "m", m_scale, m_zero)], outputs=[mm], name="mm")
    with LogCapture() as log:
        got = g.compile(threads=1).run({"x": x})
    lines = log.lowering()
    assert any("FullyConnected 'fc': integer (QLinearConv 1x1" in line for line in lines), lines
    assert any("MatMul 'mm': integer (QLinearMatMul)" in line for line in lines), lines
    xs = x.astype(np.int64) - x_zero
    acc = xs @ (w.astype(np.int64) - w_zero).T + b
    np.testing.assert_array_equal(
        got["fc"], requantize(acc, multiplier(x_scale, w_scale, 0.2), 120, "u8"))
    acc = xs @ (m.astype(np.int64) - m_zero)
    np.testing.assert_array_equal(
        got["mm"], requantize(acc, multiplier(x_scale, m_scale, 0.3), 90, "u8"))


def test_dynamic_fixed_point_i8_runs_on_the_integer_kernels(rng):
    # real = q * 2^-fl: the integer kernels take it as scale 2^-fl with zero point 0
    x = rng.integers(-128, 128, (4, 32), dtype=np.int8)
    w = rng.integers(-128, 128, (6, 32), dtype=np.int8)
    g = nxe.Graph()
    xt = g.input("x", x.shape, "i8")
    xt.set_quant_dynamic_fixed_point(5)
    wt = g.constant(w, name="w")
    wt.set_quant_dynamic_fixed_point(7)
    y = g.tensor(name="y", dtype="i8", kind="output")
    y.set_quant_dynamic_fixed_point(2)
    g.op("FullyConnected", [xt, wt], outputs=[y], name="fc")
    with LogCapture() as log:
        got = g.compile(threads=1).run({"x": x})["y"]
    assert any("FullyConnected 'fc': integer" in line for line in log.lowering()), log.lines
    acc = x.astype(np.int64) @ w.astype(np.int64).T
    np.testing.assert_array_equal(got, requantize(acc, multiplier(2.0**-5, 2.0**-7, 2.0**-2), 0,
                                                  "i8"))


def test_add_of_two_u8_tensors_with_different_scales_falls_back(rng):
    a = rng.integers(0, 256, (3, 17), dtype=np.uint8)
    b = rng.integers(0, 256, (3, 17), dtype=np.uint8)
    g = nxe.Graph()
    at = g.input("a", a.shape, "u8")
    at.set_quant_asymmetric(0.05, 120)
    bt = g.input("b", b.shape, "u8")
    bt.set_quant_asymmetric(0.013, 7)
    y = q_tensor(g, "y", "u8", 0.07, 60, kind="output")
    g.op("Add", [at, bt], outputs=[y], name="add")
    with LogCapture() as log:
        got = g.compile(threads=1).run({"a": a, "b": b})["y"]
    assert any("Add 'add': fallback (DequantizeLinear -> f32 Add -> QuantizeLinear)" in line
               for line in log.lowering()), log.lines
    real = dequantize(a, 0.05, 120) + dequantize(b, 0.013, 7)
    np.testing.assert_array_equal(got, quantize(real, 0.07, 60, "u8"))


def test_max_pool_runs_on_u8_and_average_pool_falls_back(rng):
    x = rng.integers(0, 256, (2, 3, 8, 6), dtype=np.uint8)
    g = nxe.Graph()
    xt = g.input("x", x.shape, "u8")
    xt.set_quant_asymmetric(0.1, 30)
    mx = q_tensor(g, "max", "u8", 0.1, 30, kind="output")
    g.op("MaxPool2d", [xt], outputs=[mx], name="maxpool", kernel_shape=[2, 2], strides=[2, 2])
    avg = q_tensor(g, "avg", "u8", 0.08, 10, kind="output")
    g.op("AveragePool2d", [xt], outputs=[avg], name="avgpool", kernel_shape=[2, 2],
         strides=[2, 2])
    with LogCapture() as log:
        got = g.compile(threads=1).run({"x": x})
    lines = log.lowering()
    assert any("MaxPool2d 'maxpool': integer" in line for line in lines), lines
    assert any("AveragePool2d 'avgpool': fallback" in line for line in lines), lines
    np.testing.assert_array_equal(got["max"], maxpool2(x))
    real = dequantize(x, 0.1, 30).reshape(2, 3, 4, 2, 3, 2).mean(axis=(3, 5), dtype=np.float32)
    diff = np.abs(got["avg"].astype(np.int32) - quantize(real, 0.08, 10, "u8").astype(np.int32))
    assert diff.max() <= 1


def test_graph_without_quantized_tensors_logs_no_lowering():
    g = nxe.Graph()
    g.mark_output(g.Relu(g.input("x", (4,))))
    with LogCapture() as log:
        g.compile()
    assert log.lowering() == []


def test_ops_on_8_bit_values_into_undeclared_tensors_run_as_before(rng):
    # as imported QDQ models have them: QuantizeLinear -> MaxPool2d -> DequantizeLinear
    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    g = nxe.Graph()
    q = q_tensor(g, "q", "u8", 0.05, 128)
    g.op("QuantizeLinear", [g.input("x", x.shape)], outputs=[q])
    pooled = g.MaxPool2d(q, kernel_shape=[2, 2], strides=[2, 2])
    pooled_quant = q_tensor(g, "pooled_quant", "u8", 0.05, 128)
    g.op("Reshape", [pooled], outputs=[pooled_quant], shape=[1, 2, 2, 2])
    g.mark_output(g.DequantizeLinear(pooled_quant), name="y")
    with LogCapture() as log:
        got = g.compile(threads=1).run({"x": x})["y"]
    assert [line for line in log.lowering() if "MaxPool2d" in line] == []
    expected = dequantize(maxpool2(quantize(x, 0.05, 128, "u8")), 0.05, 128)
    np.testing.assert_array_equal(got, expected)


# ---- bad quantization parameters --------------------------------------------------------------

@pytest.mark.parametrize("dtype, zero_point", [("u8", 256), ("u8", -1), ("i8", 128), ("i8", -129)])
def test_zero_point_outside_the_dtype_is_refused_at_the_setter(dtype, zero_point):
    g = nxe.Graph()
    t = g.input("act", (2, 2), dtype)
    t.set_quant_asymmetric(0.5, 3 if dtype == "u8" else -3)
    with pytest.raises(nxe.InvalidArgumentError, match="'act'.*zero point"):
        t.set_quant_asymmetric(0.5, zero_point)
    assert t.quant["zero_point"] == (3 if dtype == "u8" else -3)


@pytest.mark.parametrize("scale", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_scales_are_refused_at_the_setter(scale):
    g = nxe.Graph()
    t = g.constant(np.zeros((3, 2), np.int8), name="wq")
    with pytest.raises(nxe.InvalidArgumentError, match="'wq'"):
        t.set_quant_asymmetric(scale, 0)
    with pytest.raises(nxe.InvalidArgumentError, match="'wq'"):
        t.set_quant_per_channel(0, [0.5, scale, 0.5])


def test_per_channel_count_not_matching_the_axis_is_refused():
    g = nxe.Graph()
    t = g.constant(np.zeros((3, 2), np.int8), name="wq")
    with pytest.raises(nxe.ShapeMismatchError, match="'wq'.*3 channels on axis 0 but 2"):
        t.set_quant_per_channel(0, [0.5, 0.5])
    with pytest.raises(nxe.InvalidArgumentError, match="axis 2 is out of range for tensor 'wq'"):
        t.set_quant_per_channel(2, [0.5, 0.5])


def test_per_channel_count_found_wrong_at_compile_names_the_tensor():
    # rank unknown when set: the setter cannot check the count, the compile does
    g = nxe.Graph()
    x = g.input("x", (4, 3), "u8")
    x.set_quant_asymmetric(0.5, 3)
    y = g.tensor(name="pc", dtype="u8", kind="output")
    y.set_quant_per_channel(1, [0.5, 0.25])
    g.op("Relu", [x], outputs=[y], name="relu")
    for _ in range(2):  # and the graph is left as it was
        with pytest.raises(nxe.InvalidArgumentError, match="'pc' has 2 per-channel scales"):
            g.compile()


def test_a_quantized_result_the_fallback_cannot_write_is_a_clear_error():
    g = nxe.Graph()
    x = g.input("x", (4,), "u8")
    x.set_quant_asymmetric(0.5, 3)
    y = g.tensor(name="acc32", dtype="i32", kind="output")
    y.set_quant_asymmetric(0.5, 0)
    g.op("Add", [x, x], outputs=[y], name="add")
    with pytest.raises(nxe.UnsupportedError, match="'acc32'"):
        g.compile()


# ---- the C sample -----------------------------------------------------------------------------

def read_dump(directory):
    """The sample's dump: params.txt lines 'name dtype scale zero_point shape...' beside
    name.bin raw files."""
    dtypes = {"u8": np.uint8, "i32": np.int32, "f32": np.float32}
    tensors, quant = {}, {}
    for line in (directory / "params.txt").read_text().splitlines():
        name, dtype, scale, zero, *shape = line.split()
        if shape:  # the hidden layers' lines carry their quantization alone
            data = np.fromfile(directory / f"{name}.bin", dtypes[dtype])
            tensors[name] = data.reshape([int(s) for s in shape])
        quant[name] = (float(scale), int(zero))
    return tensors, quant


def test_lenet_u8_c_sample_equals_the_integer_reference(tmp_path):
    env = dict(os.environ)
    env.pop("LD_LIBRARY_PATH", None)
    env["PKG_CONFIG_PATH"] = str(_binding.PKGCONFIG_DIR)
    config = [sys.executable, "-m", "nxe", "config"]
    cflags = shlex.split(subprocess.run(config + ["--cflags"], capture_output=True, text=True,
                                        check=True).stdout)
    libs = shlex.split(subprocess.run(config + ["--libs"], capture_output=True, text=True,
                                      check=True).stdout)
    program = tmp_path / "lenet_u8"
    compiler = shlex.split(os.environ.get("CC", "cc"))
    build = subprocess.run(compiler + ["-std=c11", "-Wall", "-Wextra", "-Werror", *cflags,
                                       str(REPO / "examples" / "lenet_u8.c"), "-o", str(program),
                                       *libs, "-lm"], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    dump = tmp_path / "dump"
    dump.mkdir()
    result = subprocess.run([str(program), str(dump)], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "integer (QLinearConv)" in result.stdout  # the sample prints the compile log
    tensors, quant = read_dump(dump)
    params = {}
    for name in ("conv1", "conv2", "fc1", "fc2"):
        (w_scale, w_zero), b_zero = quant[f"{name}.w"], quant[f"{name}.b"][1]
        y_scale, y_zero = quant[name]
        assert b_zero == 0
        params[name] = {"w": tensors[f"{name}.w"], "w_scale": w_scale, "w_zero": w_zero,
                        "b": tensors[f"{name}.b"], "y_scale": y_scale, "y_zero": y_zero}
    assert quant["input"] == (np.float32(1 / 256), 0)
    logits, probs = lenet_reference(tensors["input"], params)
    for name, bias_scale in ((n, quant[f"{n}.b"][0]) for n in params):
        assert np.float32(bias_scale) == np.float32(params[name]["b_scale"])  # in_scale * w_scale
    assert len(np.unique(logits)) > 3
    np.testing.assert_array_equal(tensors["fc2"], logits)
    np.testing.assert_allclose(tensors["probs"], probs, rtol=0, atol=1e-6)
    # the sample ran the same graph from a compiled binary and found it equal
    assert "binary: same results" in result.stdout
