"""Quantized op family (ONNX semantics): MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv
and DynamicQuantizeLinear against numpy references computed here, with zero points, per-row /
per-channel parameters, both 8-bit dtypes, thread-count independence and bad input."""

from __future__ import annotations

import numpy as np
import nxe
import pytest
from op_testing import compile_op, one_op_graph, run_op

Q8 = (np.uint8, np.int8)


def q8(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


def requantize(acc, multiplier, y_zero, y_dtype):
    """ONNX requantization: f32 multiplier applied in double, round half to even, saturate."""
    info = np.iinfo(y_dtype)
    v = np.rint(acc.astype(np.float64) * np.asarray(multiplier, np.float64)) + int(y_zero)
    return np.clip(v, info.min, info.max).astype(y_dtype)


def shifted(x, zero, axis_shape):
    """x as int64 minus its zero point, the zero point broadcast along axis_shape."""
    z = 0 if zero is None else np.asarray(zero, np.int64).reshape(axis_shape if np.size(zero) > 1
                                                                  else ())
    return x.astype(np.int64) - z


# ---- MatMulInteger / QLinearMatMul ------------------------------------------------------------

MATMUL_SHAPES = [((3, 5), (5, 7)), ((1, 9), (9, 1)), ((2, 4, 6), (6, 3)), ((2, 1, 3, 4), (5, 4, 2)),
                 ((6,), (6, 4)), ((3, 6), (6,))]


def zero_point(rng, dtype, count, per_axis):
    return q8(rng, (count,) if per_axis else (), dtype)


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
@pytest.mark.parametrize("a_dtype", Q8, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("b_dtype", Q8, ids=lambda d: np.dtype(d).name)
def test_matmul_integer_matches_numpy_with_zero_points(shapes, a_dtype, b_dtype, rng):
    a = q8(rng, shapes[0], a_dtype)
    b = q8(rng, shapes[1], b_dtype)
    m = a.shape[-2] if a.ndim >= 2 else 1
    n = b.shape[-1] if b.ndim >= 2 else 1
    a_zero = zero_point(rng, a_dtype, m, per_axis=a.ndim >= 2)
    b_zero = zero_point(rng, b_dtype, n, per_axis=b.ndim >= 2)
    (got,) = run_op("MatMulInteger", [a, b, a_zero, b_zero])
    ref = np.matmul(shifted(a, a_zero, (m, 1)), shifted(b, b_zero, (n,)))
    assert got.dtype == np.int32 and got.shape == ref.shape
    np.testing.assert_array_equal(got, ref)


def test_matmul_integer_without_zero_points_and_many_threads_agree(rng):
    a = q8(rng, (37, 50), np.uint8)
    b = q8(rng, (50, 29), np.int8)
    (one,) = run_op("MatMulInteger", [a, b, None, None], threads=1)
    (many,) = run_op("MatMulInteger", [a, b, None, None], threads=4)
    np.testing.assert_array_equal(one, np.matmul(a.astype(np.int64), b.astype(np.int64)))
    np.testing.assert_array_equal(one, many)


def qlinear_matmul_reference(a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero, y_dtype):
    m = a.shape[-2] if a.ndim >= 2 else 1
    n = b.shape[-1] if b.ndim >= 2 else 1
    acc = np.matmul(shifted(a, a_zero, (m, 1)), shifted(b, b_zero, (n,)))
    a_s = a_scale.reshape((m, 1)) if a_scale.size > 1 else a_scale.reshape(())
    b_s = b_scale.reshape((n,)) if b_scale.size > 1 else b_scale.reshape(())
    multiplier = (a_s * b_s / y_scale).astype(np.float32)
    if a.ndim < 2 and multiplier.ndim == 2:
        multiplier = multiplier[0]
    if b.ndim < 2 and multiplier.ndim >= 1:
        multiplier = multiplier[..., 0]
    return requantize(acc, multiplier, 0 if y_zero is None else y_zero, y_dtype)


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
@pytest.mark.parametrize("dtypes", [(np.uint8, np.uint8, np.uint8), (np.int8, np.int8, np.int8),
                                    (np.uint8, np.int8, np.int8), (np.int8, np.uint8, np.uint8)],
                         ids=lambda d: "-".join(np.dtype(t).name for t in d))
@pytest.mark.parametrize("per_axis", [False, True], ids=["per_tensor", "per_axis"])
def test_qlinear_matmul_requantizes_like_onnx(shapes, dtypes, per_axis, rng):
    a_dtype, b_dtype, y_dtype = dtypes
    a = q8(rng, shapes[0], a_dtype)
    b = q8(rng, shapes[1], b_dtype)
    m = a.shape[-2] if a.ndim >= 2 else 1
    n = b.shape[-1] if b.ndim >= 2 else 1
    a_scale = rng.uniform(0.01, 0.1, (m,) if per_axis else ()).astype(np.float32)
    b_scale = rng.uniform(0.01, 0.1, (n,) if per_axis else ()).astype(np.float32)
    a_zero = zero_point(rng, a_dtype, m, per_axis)
    b_zero = zero_point(rng, b_dtype, n, per_axis)
    y_scale = np.array(rng.uniform(0.5, 2.0), np.float32)
    y_zero = q8(rng, (), y_dtype)
    args = [a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero]
    (got,) = run_op("QLinearMatMul", args)
    ref = qlinear_matmul_reference(*args, y_dtype)
    assert got.dtype == y_dtype and got.shape == ref.shape
    np.testing.assert_array_equal(got, ref)


def test_qlinear_matmul_saturates_and_rounds_half_to_even():
    # acc = a * b with 1-element operands: multiplier 0.5 makes every odd acc a tie.
    a = np.arange(0, 16, dtype=np.uint8).reshape(16, 1)
    b = np.array([[1, 3, 200]], np.uint8)
    one = np.array(1.0, np.float32)
    y_scale = np.array(2.0, np.float32)
    y_zero = np.array(3, np.uint8)
    (got,) = run_op("QLinearMatMul", [a, one, None, b, one, None, y_scale, y_zero])
    acc = a.astype(np.int64) @ b.astype(np.int64)
    ref = np.clip(np.rint(acc / 2.0) + 3, 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(got, ref)
    assert got.max() == 255  # 15 * 200 / 2 saturates


def test_qlinear_matmul_without_y_zero_point_takes_a_dtype(rng):
    a = q8(rng, (4, 3), np.int8)
    b = q8(rng, (3, 2), np.int8)
    s = np.array(0.05, np.float32)
    (got,) = run_op("QLinearMatMul", [a, s, None, b, s, None, np.array(0.1, np.float32), None])
    ref = requantize(a.astype(np.int64) @ b.astype(np.int64), np.float32(s * s / np.float32(0.1)),
                     0, np.int8)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, ref)


def test_matmul_integer_rejects_mismatched_zero_point_dtype(rng):
    a = q8(rng, (2, 3), np.uint8)
    b = q8(rng, (3, 2), np.uint8)
    with pytest.raises(nxe.DtypeMismatchError, match="'MatMulInteger'.*a_zero_point"):
        compile_op("MatMulInteger", [a, b, np.array(1, np.int8), None])


def test_matmul_integer_rejects_inner_dimension_mismatch(rng):
    with pytest.raises(nxe.ShapeMismatchError, match="'MatMulInteger'.*columns"):
        compile_op("MatMulInteger", [q8(rng, (2, 3), np.uint8), q8(rng, (4, 2), np.uint8)])


def test_matmul_integer_rejects_f32_operand(rng):
    with pytest.raises(nxe.DtypeMismatchError, match="'MatMulInteger'"):
        compile_op("MatMulInteger", [np.zeros((2, 3), np.float32), q8(rng, (3, 2), np.uint8)])


def test_qlinear_matmul_rejects_zero_point_of_wrong_length(rng):
    a = q8(rng, (2, 3), np.uint8)
    b = q8(rng, (3, 4), np.uint8)
    s = np.array(1.0, np.float32)
    with pytest.raises(nxe.ShapeMismatchError, match="'QLinearMatMul'.*b_zero_point"):
        compile_op("QLinearMatMul", [a, s, None, b, s, q8(rng, (3,), np.uint8), s, None])
    with pytest.raises(nxe.ShapeMismatchError, match="'QLinearMatMul'.*y_scale"):
        compile_op("QLinearMatMul", [a, s, None, b, s, None, np.ones(2, np.float32), None])


# ---- ConvInteger / QLinearConv ----------------------------------------------------------------

def conv_reference(x, w, strides, dilations, pads, group):
    """Direct int64 convolution of already zero-point-shifted NCHW x and OIHW w, zero padded."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.zeros((n, c, h + pads[0] + pads[2], wd + pads[1] + pads[3]), np.int64)
    xp[:, :, pads[0]:pads[0] + h, pads[1]:pads[1] + wd] = x
    oh = (xp.shape[2] - (kh - 1) * dilations[0] - 1) // strides[0] + 1
    ow = (xp.shape[3] - (kw - 1) * dilations[1] - 1) // strides[1] + 1
    y = np.zeros((n, o, oh, ow), np.int64)
    og = o // group
    for gi in range(group):
        xs = xp[:, gi * cg:(gi + 1) * cg]
        ws = w[gi * og:(gi + 1) * og]
        for ky in range(kh):
            for kx in range(kw):
                y0, x0 = ky * dilations[0], kx * dilations[1]
                patch = xs[:, :, y0:y0 + strides[0] * (oh - 1) + 1:strides[0],
                           x0:x0 + strides[1] * (ow - 1) + 1:strides[1]]
                y[:, gi * og:(gi + 1) * og] += np.einsum("nchw,oc->nohw", patch, ws[:, :, ky, kx])
    return y


CONV_CASES = [
    {"x": (1, 3, 7, 6), "w": (4, 3, 3, 3),
     "strides": [1, 1], "dilations": [1, 1], "pads": [0, 0, 0, 0], "group": 1},
    {"x": (2, 4, 9, 8), "w": (6, 2, 3, 2),
     "strides": [2, 1], "dilations": [1, 2], "pads": [1, 2, 0, 1], "group": 2},
    {"x": (1, 5, 5, 5), "w": (5, 1, 3, 3),
     "strides": [1, 1], "dilations": [1, 1], "pads": [1, 1, 1, 1], "group": 5},
    {"x": (1, 2, 4, 11), "w": (3, 2, 1, 1),
     "strides": [3, 2], "dilations": [1, 1], "pads": [0, 0, 2, 0], "group": 1},
]


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: f"{c['x']}x{c['w']}g{c['group']}")
@pytest.mark.parametrize("x_dtype", Q8, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
@pytest.mark.parametrize("constant_w", [False, True], ids=["w_input", "w_constant"])
def test_conv_integer_matches_numpy(case, x_dtype, per_channel, constant_w, rng):
    w_dtype = np.int8
    x = q8(rng, case["x"], x_dtype)
    w = q8(rng, case["w"], w_dtype)
    o = w.shape[0]
    x_zero = q8(rng, (), x_dtype)
    w_zero = q8(rng, (o,) if per_channel else (), w_dtype)
    attrs = {k: case[k] for k in ("strides", "dilations", "pads", "group")}
    (got,) = run_op("ConvInteger", [x, w, x_zero, w_zero], constants=(1,) if constant_w else (),
                    **attrs)
    ref = conv_reference(shifted(x, x_zero, ()), shifted(w, w_zero, (o, 1, 1, 1)), **attrs)
    assert got.dtype == np.int32 and got.shape == ref.shape
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: f"{c['x']}x{c['w']}g{c['group']}")
@pytest.mark.parametrize("dtypes", [(np.uint8, np.uint8, np.uint8), (np.int8, np.int8, np.int8),
                                    (np.uint8, np.int8, np.uint8)],
                         ids=lambda d: "-".join(np.dtype(t).name for t in d))
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
@pytest.mark.parametrize("constant_w", [False, True], ids=["w_input", "w_constant"])
def test_qlinear_conv_requantizes_like_onnx(case, dtypes, per_channel, constant_w, rng):
    x_dtype, w_dtype, y_dtype = dtypes
    x = q8(rng, case["x"], x_dtype)
    w = q8(rng, case["w"], w_dtype)
    o = w.shape[0]
    x_scale = np.array(rng.uniform(0.01, 0.05), np.float32)
    w_scale = rng.uniform(0.01, 0.05, (o,) if per_channel else ()).astype(np.float32)
    x_zero = q8(rng, (), x_dtype)
    w_zero = q8(rng, (o,) if per_channel else (), w_dtype)
    y_scale = np.array(rng.uniform(0.05, 0.2), np.float32)
    y_zero = q8(rng, (), y_dtype)
    bias = rng.integers(-5000, 5000, size=(o,), dtype=np.int32)
    attrs = {k: case[k] for k in ("strides", "dilations", "pads", "group")}
    (got,) = run_op("QLinearConv", [x, x_scale, x_zero, w, w_scale, w_zero, y_scale, y_zero, bias],
                    constants=(3,) if constant_w else (), **attrs)
    acc = conv_reference(shifted(x, x_zero, ()), shifted(w, w_zero, (o, 1, 1, 1)), **attrs)
    acc = acc + bias.reshape(1, o, 1, 1)
    multiplier = (x_scale * w_scale / y_scale).astype(np.float32)
    if per_channel:
        multiplier = multiplier.reshape(1, o, 1, 1)
    ref = requantize(acc, multiplier, y_zero, y_dtype)
    assert got.dtype == y_dtype and got.shape == ref.shape
    np.testing.assert_array_equal(got, ref)


def test_qlinear_conv_one_and_many_threads_agree(rng):
    x = q8(rng, (2, 3, 17, 15), np.uint8)
    w = q8(rng, (8, 3, 3, 3), np.int8)
    s = np.array(0.02, np.float32)
    args = [x, s, np.array(128, np.uint8), w, s, np.array(0, np.int8), np.array(0.1, np.float32),
            np.array(7, np.uint8), None]
    (one,) = run_op("QLinearConv", args, threads=1, pads=[1, 1, 1, 1])
    (many,) = run_op("QLinearConv", args, threads=4, pads=[1, 1, 1, 1])
    np.testing.assert_array_equal(one, many)
    (packed,) = run_op("QLinearConv", args, threads=4, pads=[1, 1, 1, 1], constants=(3,))
    np.testing.assert_array_equal(one, packed)


@pytest.mark.parametrize("op_type", ["ConvInteger", "QLinearConv"])
def test_quantized_conv_with_constant_weights_runs_the_int8_kernel(op_type, rng):
    """With constant weights a quantized convolution runs the int8 GEMM microkernel this
    process chose (nxe info's int8 entry; the reference kernels at the scalar level), with
    input weights the reference kernels."""
    x = q8(rng, (1, 4, 6, 6), np.uint8)
    w = q8(rng, (8, 4, 3, 3), np.int8)
    s = np.array(0.02, np.float32)
    if op_type == "ConvInteger":
        args, w_index = [x, w], 1
    else:
        args, w_index = [x, s, None, w, s, None, s, None, None], 3
    kernels = {}
    for constants in ((), (w_index,)):
        g, _, feeds = one_op_graph(op_type, args, constants=constants)
        steps = g.compile(threads=1).profile(feeds).runs[0].steps
        kernels[constants] = [step.kernel for step in steps if step.op_type == op_type]
    assert kernels[()] == ["reference"]
    assert kernels[(w_index,)] == [nxe.cpu_info()["kernels"]["int8"]]


def test_qlinear_conv_rejects_bias_of_wrong_length(rng):
    x = q8(rng, (1, 2, 4, 4), np.uint8)
    w = q8(rng, (3, 2, 1, 1), np.uint8)
    s = np.array(1.0, np.float32)
    with pytest.raises(nxe.ShapeMismatchError, match="'QLinearConv'.*bias"):
        compile_op("QLinearConv", [x, s, None, w, s, None, s, None, np.zeros(2, np.int32)])


def test_conv_integer_rejects_group_not_dividing_channels(rng):
    x = q8(rng, (1, 3, 4, 4), np.uint8)
    w = q8(rng, (2, 1, 1, 1), np.uint8)
    with pytest.raises(nxe.ShapeMismatchError, match="'ConvInteger'.*group"):
        compile_op("ConvInteger", [x, w], group=2)


def test_conv_integer_rejects_kernel_larger_than_padded_input(rng):
    x = q8(rng, (1, 1, 2, 2), np.uint8)
    w = q8(rng, (1, 1, 3, 3), np.uint8)
    with pytest.raises(nxe.ShapeMismatchError, match="'ConvInteger'.*smaller than"):
        compile_op("ConvInteger", [x, w])


def test_conv_integer_rejects_bad_strides(rng):
    x = q8(rng, (1, 1, 4, 4), np.uint8)
    w = q8(rng, (1, 1, 1, 1), np.uint8)
    with pytest.raises(nxe.InvalidArgumentError, match="'ConvInteger'.*strides"):
        compile_op("ConvInteger", [x, w], strides=[0, 1])


# ---- DynamicQuantizeLinear --------------------------------------------------------------------

def dynamic_quantize_reference(x):
    lo = np.float32(min(0.0, float(np.min(x))))
    hi = np.float32(max(0.0, float(np.max(x))))
    scale = np.float32(np.float32(1.0) if hi == lo else hi - lo) / np.float32(255)
    zero = np.rint(np.clip(np.float32(0) - lo / scale, 0, 255))
    y = np.clip(np.rint(x / scale) + zero, 0, 255).astype(np.uint8)
    return y, np.float32(scale), np.uint8(zero)


@pytest.mark.parametrize("shape", [(1,), (7,), (3, 5), (2, 3, 4, 5)], ids=str)
@pytest.mark.parametrize("value_range", [(-3.0, 5.0), (0.5, 9.0), (-7.0, -0.25)], ids=str)
def test_dynamic_quantize_linear_matches_onnx_formula(shape, value_range, rng):
    x = rng.uniform(*value_range, size=shape).astype(np.float32)
    y, scale, zero = run_op("DynamicQuantizeLinear", [x])
    ref_y, ref_scale, ref_zero = dynamic_quantize_reference(x)
    assert y.dtype == np.uint8 and scale.dtype == np.float32 and zero.dtype == np.uint8
    assert scale.shape == () and zero.shape == ()
    assert scale == ref_scale and zero == ref_zero
    np.testing.assert_array_equal(y, ref_y)


def test_dynamic_quantize_linear_of_zeros_uses_unit_range():
    y, scale, zero = run_op("DynamicQuantizeLinear", [np.zeros((4,), np.float32)])
    assert scale == np.float32(1.0) / np.float32(255) and zero == 0
    np.testing.assert_array_equal(y, np.zeros(4, np.uint8))


def test_dynamic_quantize_linear_large_input_same_for_any_thread_count(rng):
    x = rng.standard_normal(100_003).astype(np.float32)
    one = run_op("DynamicQuantizeLinear", [x], threads=1)
    many = run_op("DynamicQuantizeLinear", [x], threads=4)
    for a, b in zip(one, many):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(one[0], dynamic_quantize_reference(x)[0])


def test_dynamic_quantize_linear_rejects_integer_input():
    with pytest.raises(nxe.DtypeMismatchError, match="'DynamicQuantizeLinear'"):
        compile_op("DynamicQuantizeLinear", [np.zeros(3, np.int32)])


def test_onnx_qlinear_conv_1d_same_padding_imports_and_matches_reference(rng):
    import nxe.onnx
    from onnx import TensorProto, helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    w = q8(rng, (4, 3, 3), np.int8)
    params = [numpy_helper.from_array(v, n) for v, n in (
        (np.array(0.02, np.float32), "xs"), (np.array(120, np.uint8), "xz"), (w, "w"),
        (np.array(0.025, np.float32), "ws"), (np.array(0, np.int8), "wz"),
        (np.array(0.1, np.float32), "ys"), (np.array(9, np.uint8), "yz"))]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"],
                            auto_pad="SAME_LOWER", strides=[2])
    graph = helper.make_graph(
        [node], "qconv", [helper.make_tensor_value_info("x", TensorProto.UINT8, [2, 3, 10])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], params)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    x = q8(rng, (2, 3, 10), np.uint8)
    got = nxe.onnx.load(model).run(x=x)["y"]
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
