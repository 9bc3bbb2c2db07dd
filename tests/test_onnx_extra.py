"""ONNX import of converters composed from existing nxe ops: the training optimizers, AffineGrid,
Det, CausalConvWithState, QuantizeLinear with a run-time scale and empty Split/Slice outputs,
each checked against a numpy reference computed here."""

import numpy as np
import nxe
import nxe.onnx
import pytest
from onnx import TensorProto, helper

F32, F16, I64, U8, I8 = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT64,
                         TensorProto.UINT8, TensorProto.INT8)
RNG = np.random.default_rng(7)


def _model(node, inputs, outputs, opset=21, domain=""):
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs])
    opsets = [helper.make_opsetid("", opset)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    return helper.make_model(graph, opset_imports=opsets)


def _run(model, *feeds):
    out = nxe.onnx.load(model).run(*feeds)
    return [np.asarray(out[o.name]) for o in model.graph.output]


TRAINING = "ai.onnx.preview.training"


@pytest.mark.parametrize("step", [0, 3])
def test_adagrad_two_tensors(step):
    shapes = [(3,), (2, 5)]
    xs = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    gs = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    hs = [RNG.random(s).astype(np.float32) for s in shapes]
    names = ["x0", "x1", "g0", "g1", "h0", "h1"]
    node = helper.make_node("Adagrad", ["r", "t", *names], ["xn0", "xn1", "hn0", "hn1"],
                            domain=TRAINING, decay_factor=0.1, epsilon=1e-5,
                            norm_coefficient=0.01)
    inputs = [("r", F32, []), ("t", I64, [])] + [(n, F32, list(a.shape)) for n, a in
                                                  zip(names, xs + gs + hs)]
    model = _model(node, inputs, [(n, F32) for n in node.output], domain=TRAINING)
    r, t = np.float32(0.1), np.int64(step)
    got = _run(model, r, t, *xs, *gs, *hs)
    for i in range(2):
        rate = r / (1 + t * 0.1)
        reg = 0.01 * xs[i] + gs[i]
        h_new = hs[i] + reg * reg
        x_new = xs[i] - rate * reg / (np.sqrt(h_new) + 1e-5)
        np.testing.assert_allclose(got[i], x_new, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[2 + i], h_new, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("step", [0, 4])
def test_adam_matches_the_update_rule(step):
    shape = (4, 3)
    x, gr, v = (RNG.standard_normal(shape).astype(np.float32) for _ in range(3))
    h = RNG.random(shape).astype(np.float32)
    alpha, beta, eps, norm, post = 0.8, 0.95, 1e-4, 0.02, 0.1
    node = helper.make_node("Adam", ["r", "t", "x", "g", "v", "h"], ["xn", "vn", "hn"],
                            domain=TRAINING, alpha=alpha, beta=beta, epsilon=eps,
                            norm_coefficient=norm, norm_coefficient_post=post)
    inputs = [("r", F32, []), ("t", I64, [])] + [(n, F32, list(shape)) for n in "xgvh"]
    model = _model(node, inputs, [(n, F32) for n in node.output], domain=TRAINING)
    r = np.float32(0.05)
    got = _run(model, r, np.int64(step), x, gr, v, h)
    reg = norm * x + gr
    v_new = alpha * v + (1 - alpha) * reg
    h_new = beta * h + (1 - beta) * reg * reg
    rate = r * np.sqrt(1 - beta ** step) / (1 - alpha ** step) if step > 0 else r
    x_new = (1 - post) * (x - rate * v_new / (np.sqrt(h_new) + eps))
    for a, b in zip(got, [x_new, v_new, h_new]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["standard", "nesterov"])
@pytest.mark.parametrize("step", [0, 2])
def test_momentum_modes(mode, step):
    shape = (5,)
    x, gr, v = (RNG.standard_normal(shape).astype(np.float32) for _ in range(3))
    alpha, beta, norm = 0.9, 0.3, 0.05
    node = helper.make_node("Momentum", ["r", "t", "x", "g", "v"], ["xn", "vn"],
                            domain=TRAINING, alpha=alpha, beta=beta, mode=mode,
                            norm_coefficient=norm)
    inputs = [("r", F32, []), ("t", I64, [])] + [(n, F32, list(shape)) for n in "xgv"]
    model = _model(node, inputs, [(n, F32) for n in node.output], domain=TRAINING)
    r = np.float32(0.2)
    got = _run(model, r, np.int64(step), x, gr, v)
    reg = norm * x + gr
    v_new = alpha * v + (beta if step > 0 else 1.0) * reg
    x_new = x - r * (v_new if mode == "standard" else reg + alpha * v_new)
    np.testing.assert_allclose(got[0], x_new, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], v_new, rtol=1e-5, atol=1e-6)


def test_momentum_rejects_an_unknown_mode():
    node = helper.make_node("Momentum", ["r", "t", "x", "g", "v"], ["xn", "vn"],
                            domain=TRAINING, alpha=0.9, beta=0.1, mode="heavy",
                            norm_coefficient=0.0)
    inputs = [("r", F32, []), ("t", I64, [])] + [(n, F32, [2]) for n in "xgv"]
    model = _model(node, inputs, [("xn", F32), ("vn", F32)], domain=TRAINING)
    with pytest.raises(nxe.Error, match="Momentum.*heavy"):
        _run(model, np.float32(1), np.int64(1), *[np.ones(2, np.float32)] * 3)


def _affine_reference(theta, dims, align):
    axes = []
    for d in dims:
        i = np.arange(d, dtype=np.float64)
        axes.append((-1 + 2 * i / (d - 1) if d > 1 else np.full(1, -1.0)) if align
                    else (2 * i + 1) / d - 1)
    mesh = np.meshgrid(*axes, indexing="ij")
    points = np.stack([*reversed(mesh), np.ones(mesh[0].shape)], axis=-1)
    return np.einsum("nij,...j->n...i", theta.astype(np.float64), points)


@pytest.mark.parametrize("dims", [(3, 5), (2, 3, 4), (1, 4)])
@pytest.mark.parametrize("align", [0, 1])
def test_affine_grid(dims, align):
    n, k = 2, len(dims)
    theta = RNG.standard_normal((n, k, k + 1)).astype(np.float32)
    size = np.array([n, 3, *dims], dtype=np.int64)
    node = helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=align)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("theta", F32, list(theta.shape))],
        [helper.make_tensor_value_info("grid", F32, None)],
        initializer=[helper.make_tensor("size", I64, [len(size)], size)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    (got,) = _run(model, theta)
    assert got.shape == (n, *dims, k) and got.dtype == np.float32
    np.testing.assert_allclose(got, _affine_reference(theta, dims, align), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("shape", [(2, 2), (3, 3), (4, 2, 2), (2, 3, 3, 3)])
def test_det_small_matrices(shape):
    x = RNG.standard_normal(shape).astype(np.float32)
    model = _model(helper.make_node("Det", ["x"], ["y"]), [("x", F32, list(shape))],
                   [("y", F32)])
    (got,) = _run(model, x)
    expected = np.linalg.det(x.astype(np.float64))
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_det_rejects_a_4x4_matrix():
    model = _model(helper.make_node("Det", ["x"], ["y"]), [("x", F32, [4, 4])], [("y", F32)])
    with pytest.raises(nxe.Error, match="Det.*4, 4"):
        _run(model, np.eye(4, dtype=np.float32))


def _causal_reference(x, w, b, past, silu):
    batch, channels, length = x.shape
    k = w.shape[2]
    if past is None:
        past = np.zeros((batch, channels, k - 1), x.dtype)
    padded = np.concatenate([past, x], axis=2).astype(np.float64)
    y = np.zeros((batch, channels, length))
    for t in range(length):
        y[:, :, t] = np.sum(padded[:, :, t:t + k] * w[None, :, 0, :], axis=2)
    if b is not None:
        y += b[None, :, None]
    if silu:
        y = y / (1 + np.exp(-y))
    return y, padded[:, :, padded.shape[2] - (k - 1):]


@pytest.mark.parametrize("k", [1, 2, 4])
@pytest.mark.parametrize("bias,past,activation", [(False, False, "none"),
                                                  (True, True, "silu"),
                                                  (False, True, "swish")])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_causal_conv_with_state(k, bias, past, activation, dtype):
    batch, channels, length = 2, 3, 5
    onnx_type = F32 if dtype == np.float32 else F16
    x = RNG.standard_normal((batch, channels, length)).astype(dtype)
    w = RNG.standard_normal((channels, 1, k)).astype(dtype)
    b = RNG.standard_normal(channels).astype(dtype) if bias else None
    state = RNG.standard_normal((batch, channels, k - 1)).astype(dtype) if past else None
    names = ["x", "w", "b" if bias else "", "s" if past else ""]
    node = helper.make_node("CausalConvWithState", names, ["y", "state"],
                            activation=activation)
    feeds = [a for a in (x, w, b, state) if a is not None]
    inputs = [(n, onnx_type, list(a.shape)) for n, a in zip([n for n in names if n], feeds)]
    if past and k == 1:
        return  # a past state of length 0 cannot be a model input
    model = _model(node, inputs, [("y", onnx_type), ("state", onnx_type)], opset=27)
    y, new_state = _run(model, *feeds)
    ref_y, ref_state = _causal_reference(x, w, b, state, activation != "none")
    tol = 1e-5 if dtype == np.float32 else 1e-2
    assert y.dtype == dtype and new_state.dtype == dtype
    assert new_state.shape == (batch, channels, k - 1)
    np.testing.assert_allclose(y, ref_y, rtol=tol, atol=tol)
    np.testing.assert_allclose(new_state, ref_state, rtol=tol, atol=tol)


def test_causal_conv_rejects_an_unknown_activation():
    node = helper.make_node("CausalConvWithState", ["x", "w"], ["y", "state"],
                            activation="relu")
    model = _model(node, [("x", F32, [1, 2, 3]), ("w", F32, [2, 1, 2])], [("y", F32)],
                   opset=27)
    with pytest.raises(nxe.Error, match="CausalConvWithState.*relu"):
        _run(model, np.ones((1, 2, 3), np.float32), np.ones((2, 1, 2), np.float32))


def _quantize_model(out_type, with_zero, scale_shape):
    # Scale and zero point come out of other nodes, so they are known only at run time.
    nodes = [helper.make_node("Abs", ["s"], ["scale"])]
    inputs = [helper.make_tensor_value_info("x", F32, [2, 3]),
              helper.make_tensor_value_info("s", F32, scale_shape)]
    names = ["x", "scale"]
    if with_zero:
        nodes.append(helper.make_node("Cast", ["z"], ["zp"], to=out_type))
        inputs.append(helper.make_tensor_value_info("z", F32, []))
        names.append("zp")
    nodes.append(helper.make_node("QuantizeLinear", names, ["y"]))
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", out_type,
                                                                                 None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


@pytest.mark.parametrize("out_type,zero", [(U8, 10), (I8, -3), (U8, None)])
def test_quantize_linear_with_a_run_time_scale(out_type, zero):
    x = (RNG.standard_normal((2, 3)) * 40).astype(np.float32)
    x[0] = [0.5, 1.5, -2.5]  # ties round half to even
    scale = np.float32(0.5 if zero is None else -0.37)
    feeds = [x, scale] + ([np.float32(zero)] if zero is not None else [])
    np_type = np.uint8 if out_type == U8 else np.int8
    (got,) = _run(_quantize_model(out_type, zero is not None, []), *feeds)
    info = np.iinfo(np_type)
    expected = np.clip(np.round(x / abs(scale)) + (zero or 0), info.min, info.max)
    assert got.dtype == np_type
    np.testing.assert_array_equal(got, expected.astype(np_type))


def test_quantize_linear_rejects_a_per_axis_run_time_scale():
    model = _quantize_model(U8, False, [3])
    with pytest.raises(nxe.Error, match="QuantizeLinear.*scale of shape"):
        _run(model, np.ones((2, 3), np.float32), np.ones(3, np.float32))


def test_split_with_empty_parts():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    sizes = np.array([0, 3, 0, 1], dtype=np.int64)
    node = helper.make_node("Split", ["x", "split"], ["a", "b", "c", "d"], axis=1)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", F32, [3, 4])],
        [helper.make_tensor_value_info(n, F32, None) for n in "abcd"],
        initializer=[helper.make_tensor("split", I64, [4], sizes)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    got = _run(model, x)
    expected = np.split(x, np.cumsum(sizes)[:-1], axis=1)
    for a, b in zip(got, expected):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_slice_with_an_empty_result():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    node = helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["y"])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", F32, [3, 4])],
        [helper.make_tensor_value_info("y", F32, None)],
        initializer=[helper.make_tensor("starts", I64, [1], [7]),
                     helper.make_tensor("ends", I64, [1], [9]),
                     helper.make_tensor("axes", I64, [1], [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    (got,) = _run(model, x)
    assert got.shape == x[:, 7:9].shape and got.dtype == np.float32
