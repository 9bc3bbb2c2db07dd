"""The normalization op family (LayerNorm, Softmax) against numpy references computed here, and
the errors each op gives for bad input."""

import numpy as np
import nxe
import pytest
from op_testing import build_op, run_single

RNG = np.random.default_rng(20240613)
# Outputs are O(1); the ops accumulate in double, so only the final float32 rounding and
# float32 exp remain.
TOL = {"rtol": 1e-5, "atol": 1e-6}


def normal(*shape, loc=0.0, scale=1.0):
    return RNG.normal(loc, scale, size=shape).astype(np.float32)


# ---- LayerNorm ----------------------------------------------------------------------------


def layer_norm_reference(x, scale, bias, axis=-1, epsilon=1e-5):
    x = x.astype(np.float64)
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(variance + epsilon)
    if scale is not None:
        y = y * scale.astype(np.float64)
    if bias is not None:
        y = y + bias.astype(np.float64)
    return y


@pytest.mark.parametrize("shape,axis", [
    ((7, 13), -1), ((7, 13), 0), ((7, 13), 1), ((2, 3, 13), 1), ((2, 3, 13), -2),
    ((13,), 0), ((1, 1), -1), ((3, 1, 5, 2), 2),
])
@pytest.mark.parametrize("with_scale,with_bias", [(False, False), (True, False), (False, True),
                                                  (True, True)])
def test_layer_norm_matches_reference(shape, axis, with_scale, with_bias):
    x = normal(*shape)
    normalized = shape[axis % len(shape):]
    scale = normal(*normalized) if with_scale else None
    bias = normal(*normalized) if with_bias else None
    y = run_single("LayerNorm", [x, scale, bias], constants=(1, 2), axis=axis)
    assert y.dtype == np.float32 and y.shape == x.shape
    np.testing.assert_allclose(y, layer_norm_reference(x, scale, bias, axis), **TOL)


@pytest.mark.parametrize("epsilon", [0.0, 1e-3, 0.5])
def test_layer_norm_epsilon_is_added_to_the_variance(epsilon):
    x = normal(4, 9, scale=0.1)
    y = run_single("LayerNorm", [x, None, None], epsilon=epsilon)
    np.testing.assert_allclose(y, layer_norm_reference(x, None, None, epsilon=epsilon), **TOL)


def test_layer_norm_is_accurate_for_a_large_mean_and_small_spread():
    # E[x^2] - mean^2 in float32 would lose every digit of the variance here.
    x = normal(5, 64, loc=1.0e4, scale=1.0e-1)
    y = run_single("LayerNorm", [x, None, None], epsilon=0.0)
    np.testing.assert_allclose(y, layer_norm_reference(x, None, None, epsilon=0.0),
                               rtol=1e-4, atol=1e-4)


def test_layer_norm_is_bit_identical_for_one_and_two_threads():
    x, scale, bias = normal(600, 37), normal(37), normal(37)
    one = run_single("LayerNorm", [x, scale, bias], threads=1)
    two = run_single("LayerNorm", [x, scale, bias], threads=2)
    assert np.array_equal(one, two)


@pytest.mark.parametrize("x_shape,scale_shape,bias_shape,axis,match", [
    ((7, 13), (7,), None, -1, r"input Scale must have the normalized shape \[13\] of X, got \[7\]"),
    ((7, 13), None, (13,), 0, r"input B must have the normalized shape \[7, 13\]"),
    ((2, 7, 13), (1, 13), None, -1, r"Scale .*\[13\].*got \[1, 13\]"),
    ((), None, None, -1, r"rank >= 1"),
])
def test_layer_norm_rejects_mismatched_shapes(x_shape, scale_shape, bias_shape, axis, match):
    specs = [(x_shape, "f32"), None if scale_shape is None else (scale_shape, "f32"),
             None if bias_shape is None else (bias_shape, "f32")]
    with pytest.raises(nxe.ShapeMismatchError, match=match) as err:
        build_op("LayerNorm", specs, axis=axis).compile()
    assert "'LayerNorm'" in str(err.value)


@pytest.mark.parametrize("attrs,match", [
    ({"axis": 2}, r"axis 2 is out of range for rank 2"),
    ({"axis": -3}, r"axis -3 is out of range"),
    ({"epsilon": -1e-5}, r"epsilon must be finite and >= 0"),
    ({"epsilon": float("nan")}, r"epsilon must be finite"),
    ({"epsilon": float("inf")}, r"epsilon must be finite"),
])
def test_layer_norm_rejects_bad_attribute_values(attrs, match):
    with pytest.raises(nxe.InvalidArgumentError, match=match) as err:
        build_op("LayerNorm", [((4, 5), "f32")], **attrs).compile()
    assert "'LayerNorm'" in str(err.value)


@pytest.mark.parametrize("which", [0, 1, 2])
def test_layer_norm_rejects_non_f32_inputs(which):
    specs = [((4, 5), "f32"), ((5,), "f32"), ((5,), "f32")]
    specs[which] = (specs[which][0], "f16")
    with pytest.raises(nxe.DtypeMismatchError, match="'LayerNorm'.*f16"):
        build_op("LayerNorm", specs).compile()


def test_layer_norm_rejects_unknown_attribute():
    with pytest.raises(nxe.NotFoundError, match="'LayerNorm'.*'eps'"):
        build_op("LayerNorm", [((4, 5), "f32")], eps=1e-3)


# ---- Softmax ------------------------------------------------------------------------------


def softmax_reference(x, axis=-1):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("shape,axis", [
    ((7, 13), -1), ((7, 13), 0), ((3, 7, 13), 1), ((3, 7, 13), 0), ((3, 7, 13), -1),
    ((13,), 0), ((1,), 0), ((5, 1), -1), ((2, 3, 1, 4, 5, 2), 3),
])
def test_softmax_matches_reference(shape, axis):
    x = normal(*shape, scale=3.0)
    y = run_single("Softmax", [x], axis=axis)
    assert y.dtype == np.float32 and y.shape == x.shape
    np.testing.assert_allclose(y, softmax_reference(x, axis), **TOL)


def test_softmax_default_axis_is_the_last():
    x = normal(4, 6)
    np.testing.assert_allclose(run_single("Softmax", [x]), softmax_reference(x, -1), **TOL)


def test_softmax_is_stable_for_large_logits():
    # exp(1000) overflows float32 and float64; subtracting the maximum keeps it finite.
    x = normal(3, 11, loc=1000.0, scale=50.0)
    x[0, 0] = -1000.0
    y = run_single("Softmax", [x])
    assert np.all(np.isfinite(y))
    np.testing.assert_allclose(y, softmax_reference(x), **TOL)


@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_is_bit_identical_for_one_and_two_threads(axis):
    x = normal(300, 70)
    one = run_single("Softmax", [x], threads=1, axis=axis)
    two = run_single("Softmax", [x], threads=2, axis=axis)
    assert np.array_equal(one, two)


@pytest.mark.parametrize("shape,attrs,error,match", [
    ((4, 5), {"axis": 2}, nxe.InvalidArgumentError, r"axis 2 is out of range for rank 2"),
    ((4, 5), {"axis": -3}, nxe.InvalidArgumentError, r"axis -3 is out of range"),
    ((), {}, nxe.ShapeMismatchError, r"rank >= 1"),
])
def test_softmax_rejects_bad_input(shape, attrs, error, match):
    with pytest.raises(error, match=match) as err:
        build_op("Softmax", [(shape, "f32")], **attrs).compile()
    assert "'Softmax'" in str(err.value)


@pytest.mark.parametrize("dtype", ["f16", "bf16", "i32"])
def test_softmax_rejects_non_f32_input(dtype):
    with pytest.raises(nxe.DtypeMismatchError, match=f"'Softmax'.*{dtype}"):
        build_op("Softmax", [((4, 5), dtype)]).compile()


def test_softmax_rejects_unknown_attribute():
    with pytest.raises(nxe.NotFoundError, match="'Softmax'.*'dim'"):
        build_op("Softmax", [((4, 5), "f32")], dim=1)


# ---- LogSoftmax, Hardmax, LpNorm ------------------------------------------------------------


def log_softmax_reference(x, axis=-1):
    x = x.astype(np.float64)
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


LANE_CASES = [((7, 13), -1), ((7, 13), 0), ((3, 7, 13), 1), ((13,), 0), ((1,), 0), ((5, 1), -1),
              ((2, 3, 1, 4, 5, 2), 3)]


@pytest.mark.parametrize("shape,axis", LANE_CASES)
def test_log_softmax_matches_reference(shape, axis):
    x = normal(*shape, scale=3.0)
    y = run_single("LogSoftmax", [x], axis=axis)
    assert y.dtype == np.float32 and y.shape == x.shape
    np.testing.assert_allclose(y, log_softmax_reference(x, axis), **TOL)


def test_log_softmax_is_stable_for_large_logits():
    x = normal(3, 11, loc=1000.0, scale=50.0)
    y = run_single("LogSoftmax", [x])
    assert np.all(np.isfinite(y))
    np.testing.assert_allclose(y, log_softmax_reference(x), rtol=1e-5, atol=1e-4)


def hardmax_reference(x, axis):
    idx = np.expand_dims(np.argmax(x, axis=axis), axis)
    y = np.zeros_like(x)
    np.put_along_axis(y, idx, 1.0, axis=axis)
    return y


@pytest.mark.parametrize("shape,axis", LANE_CASES)
def test_hardmax_marks_the_first_largest_element(shape, axis):
    x = RNG.integers(-2, 3, size=shape).astype(np.float32)  # many ties
    y = run_single("Hardmax", [x], axis=axis)
    assert y.dtype == np.float32
    assert np.array_equal(y, hardmax_reference(x, axis))


def test_hardmax_counts_nan_as_the_largest():
    x = normal(2, 6)
    x[0, 3] = np.nan
    assert np.array_equal(run_single("Hardmax", [x]), hardmax_reference(x, -1))


def lp_norm_reference(x, axis, p):
    x = x.astype(np.float64)
    norm = np.sum(np.abs(x) ** p, axis=axis, keepdims=True) ** (1.0 / p)
    return np.divide(x, norm, out=np.zeros_like(x), where=norm != 0)


@pytest.mark.parametrize("shape,axis", LANE_CASES)
@pytest.mark.parametrize("p", [1, 2])
def test_lp_norm_matches_reference(shape, axis, p):
    x = normal(*shape)
    y = run_single("LpNorm", [x], axis=axis, p=p)
    np.testing.assert_allclose(y, lp_norm_reference(x, axis, p), **TOL)


def test_lp_norm_defaults_to_l2_on_the_last_axis_and_keeps_zero_lanes_zero():
    x = normal(4, 6)
    x[2] = 0.0
    y = run_single("LpNorm", [x])
    assert np.array_equal(y[2], np.zeros(6, np.float32))
    np.testing.assert_allclose(y, lp_norm_reference(x, -1, 2), **TOL)


@pytest.mark.parametrize("op_type", ["LogSoftmax", "Hardmax", "LpNorm"])
def test_lane_ops_are_bit_identical_for_one_and_two_threads(op_type):
    x = normal(300, 70)
    assert np.array_equal(run_single(op_type, [x], threads=1, axis=0),
                          run_single(op_type, [x], threads=2, axis=0))


@pytest.mark.parametrize("op_type", ["LogSoftmax", "Hardmax", "LpNorm"])
@pytest.mark.parametrize("shape,attrs,error,match", [
    ((4, 5), {"axis": 2}, nxe.InvalidArgumentError, r"axis 2 is out of range for rank 2"),
    ((), {}, nxe.ShapeMismatchError, r"rank >= 1"),
])
def test_lane_ops_reject_bad_input(op_type, shape, attrs, error, match):
    with pytest.raises(error, match=match) as err:
        build_op(op_type, [(shape, "f32")], **attrs).compile()
    assert f"'{op_type}'" in str(err.value)


@pytest.mark.parametrize("p", [0, 3, -2])
def test_lp_norm_rejects_other_norms(p):
    with pytest.raises(nxe.InvalidArgumentError, match=f"'LpNorm'.*p must be 1 or 2, got {p}"):
        build_op("LpNorm", [((4, 5), "f32")], p=p).compile()


# ---- BatchNorm, InstanceNorm, GroupNorm -----------------------------------------------------


def channel_shape(x):
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)


def batch_norm_reference(x, scale, bias, mean, var, epsilon=1e-5):
    s = channel_shape(x)
    x64 = x.astype(np.float64)
    return ((x64 - mean.reshape(s)) / np.sqrt(var.reshape(s).astype(np.float64) + epsilon)
            * scale.reshape(s) + bias.reshape(s))


def group_norm_reference(x, scale, bias, groups, epsilon=1e-5):
    g = x.astype(np.float64).reshape(x.shape[0], groups, -1)
    mean = g.mean(axis=-1, keepdims=True)
    var = ((g - mean) ** 2).mean(axis=-1, keepdims=True)
    y = ((g - mean) / np.sqrt(var + epsilon)).reshape(x.shape)
    s = channel_shape(x)
    return y * scale.reshape(s) + bias.reshape(s)


NCX_SHAPES = [(2, 3), (2, 3, 7), (1, 4, 5, 6), (3, 2, 2, 3, 4), (2, 1, 9, 1)]


@pytest.mark.parametrize("shape", NCX_SHAPES)
@pytest.mark.parametrize("epsilon", [1e-5, 0.3])
def test_batch_norm_matches_reference(shape, epsilon):
    c = shape[1]
    x, scale, bias, mean = normal(*shape), normal(c), normal(c), normal(c)
    var = RNG.uniform(0.1, 2.0, size=c).astype(np.float32)
    y = run_single("BatchNorm", [x, scale, bias, mean, var], constants=(1, 2, 3, 4),
                   epsilon=epsilon)
    assert y.dtype == np.float32 and y.shape == x.shape
    np.testing.assert_allclose(y, batch_norm_reference(x, scale, bias, mean, var, epsilon), **TOL)


@pytest.mark.parametrize("shape", NCX_SHAPES)
def test_instance_norm_matches_reference(shape):
    c = shape[1]
    x, scale, bias = normal(*shape, loc=2.0), normal(c), normal(c)
    y = run_single("InstanceNorm", [x, scale, bias], constants=(1, 2), epsilon=1e-3)
    np.testing.assert_allclose(y, group_norm_reference(x, scale, bias, c, 1e-3), **TOL)


@pytest.mark.parametrize("shape,groups", [((2, 6, 5), 1), ((2, 6, 5), 2), ((2, 6, 5), 3),
                                          ((2, 6, 5), 6), ((1, 4, 3, 3), 2), ((3, 8), 4)])
def test_group_norm_matches_reference(shape, groups):
    c = shape[1]
    x, scale, bias = normal(*shape), normal(c), normal(c)
    y = run_single("GroupNorm", [x, scale, bias], constants=(1, 2), num_groups=groups)
    np.testing.assert_allclose(y, group_norm_reference(x, scale, bias, groups), **TOL)


@pytest.mark.parametrize("op_type,inputs", [("BatchNorm", 5), ("InstanceNorm", 3),
                                            ("GroupNorm", 3)])
def test_channel_norms_are_bit_identical_for_one_and_two_threads(op_type, inputs):
    x = normal(4, 8, 40, 50)
    params = [normal(8) if i != 4 else np.full(8, 0.5, np.float32) for i in range(1, inputs)]
    attrs = {"num_groups": 4} if op_type == "GroupNorm" else {}
    one = run_single(op_type, [x, *params], threads=1, **attrs)
    two = run_single(op_type, [x, *params], threads=2, **attrs)
    assert np.array_equal(one, two)


@pytest.mark.parametrize("op_type,inputs", [("BatchNorm", 5), ("InstanceNorm", 3),
                                            ("GroupNorm", 3)])
@pytest.mark.parametrize("bad", ["rank", "channels"])
def test_channel_norms_reject_mismatched_shapes(op_type, inputs, bad):
    specs = [((2, 3, 4), "f32")] + [((3,), "f32")] * (inputs - 1)
    if bad == "rank":
        specs[0] = ((3,), "f32")
        match = r"input X must have rank >= 2"
    else:
        specs[inputs - 1] = ((4,), "f32")
        match = r"must have shape \[3\] \(the channels of X\), got \[4\]"
    attrs = {"num_groups": 1} if op_type == "GroupNorm" else {}
    with pytest.raises(nxe.ShapeMismatchError, match=match) as err:
        build_op(op_type, specs, **attrs).compile()
    assert f"'{op_type}'" in str(err.value)


@pytest.mark.parametrize("op_type", ["BatchNorm", "InstanceNorm", "GroupNorm"])
def test_channel_norms_reject_bad_epsilon(op_type):
    n = 5 if op_type == "BatchNorm" else 3
    specs = [((2, 4, 3), "f32")] + [((4,), "f32")] * (n - 1)
    attrs = {"num_groups": 2} if op_type == "GroupNorm" else {}
    with pytest.raises(nxe.InvalidArgumentError, match=f"'{op_type}'.*epsilon must be finite"):
        build_op(op_type, specs, epsilon=-1.0, **attrs).compile()


@pytest.mark.parametrize("groups", [0, 3, -2])
def test_group_norm_rejects_groups_that_do_not_divide_the_channels(groups):
    specs = [((2, 4, 3), "f32"), ((4,), "f32"), ((4,), "f32")]
    with pytest.raises(nxe.InvalidArgumentError,
                       match="'GroupNorm'.*num_groups must be >= 1 and divide the 4 channels"):
        build_op("GroupNorm", specs, num_groups=groups).compile()


def test_batch_norm_rejects_non_f32_statistics():
    specs = [((2, 4, 3), "f32")] + [((4,), "f32")] * 3 + [((4,), "i32")]
    with pytest.raises(nxe.DtypeMismatchError, match="'BatchNorm'.*i32"):
        build_op("BatchNorm", specs).compile()


# ---- RMSNorm --------------------------------------------------------------------------------


def rms_norm_reference(x, scale, axis=-1, epsilon=1e-5):
    x64 = x.astype(np.float64)
    axes = tuple(range(axis % x.ndim, x.ndim))
    y = x64 / np.sqrt((x64 ** 2).mean(axis=axes, keepdims=True) + epsilon)
    return y if scale is None else y * scale


@pytest.mark.parametrize("shape,axis", [((7, 13), -1), ((7, 13), 0), ((2, 3, 13), 1),
                                        ((13,), 0), ((3, 1, 5, 2), 2)])
@pytest.mark.parametrize("with_scale", [False, True])
@pytest.mark.parametrize("epsilon", [1e-5, 0.25])
def test_rms_norm_matches_reference(shape, axis, with_scale, epsilon):
    x = normal(*shape)
    scale = normal(*shape[axis % len(shape):]) if with_scale else None
    y = run_single("RMSNorm", [x, scale], constants=(1,), axis=axis, epsilon=epsilon)
    np.testing.assert_allclose(y, rms_norm_reference(x, scale, axis, epsilon), **TOL)


def test_rms_norm_is_bit_identical_for_one_and_two_threads():
    x, scale = normal(600, 37), normal(37)
    assert np.array_equal(run_single("RMSNorm", [x, scale], threads=1),
                          run_single("RMSNorm", [x, scale], threads=2))


@pytest.mark.parametrize("specs,attrs,error,match", [
    ([((7, 13), "f32"), ((7,), "f32")], {}, nxe.ShapeMismatchError,
     r"Scale must have the normalized shape \[13\] of X, got \[7\]"),
    ([((), "f32")], {}, nxe.ShapeMismatchError, r"rank >= 1"),
    ([((4, 5), "f32")], {"axis": 2}, nxe.InvalidArgumentError, r"axis 2 is out of range"),
    ([((4, 5), "f32")], {"epsilon": float("nan")}, nxe.InvalidArgumentError,
     r"epsilon must be finite"),
])
def test_rms_norm_rejects_bad_input(specs, attrs, error, match):
    with pytest.raises(error, match=match) as err:
        build_op("RMSNorm", specs, **attrs).compile()
    assert "'RMSNorm'" in str(err.value)


# ---- LRN ------------------------------------------------------------------------------------


def lrn_reference(x, size, alpha=1e-4, beta=0.75, bias=1.0):
    x64 = x.astype(np.float64)
    c = x.shape[1]
    squares = np.zeros_like(x64)
    for ch in range(c):
        lo = max(0, ch - (size - 1) // 2)
        hi = min(c - 1, ch + (size - 1) - (size - 1) // 2)
        squares[:, ch] = (x64[:, lo:hi + 1] ** 2).sum(axis=1)
    return x64 / (bias + alpha / size * squares) ** beta


@pytest.mark.parametrize("shape", [(2, 7, 3, 4), (1, 1, 5), (2, 5), (1, 9, 2, 2, 2)])
@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 11])
def test_lrn_matches_reference(shape, size):
    x = normal(*shape, scale=4.0)
    y = run_single("LRN", [x], size=size, alpha=0.05, beta=0.6, bias=2.0)
    np.testing.assert_allclose(y, lrn_reference(x, size, 0.05, 0.6, 2.0), **TOL)


def test_lrn_defaults_follow_the_schema():
    x = normal(2, 6, 3, 3, scale=10.0)
    np.testing.assert_allclose(run_single("LRN", [x], size=3), lrn_reference(x, 3), **TOL)


def test_lrn_is_bit_identical_for_one_and_two_threads():
    x = normal(4, 16, 30, 30)
    assert np.array_equal(run_single("LRN", [x], threads=1, size=5),
                          run_single("LRN", [x], threads=2, size=5))


@pytest.mark.parametrize("shape,attrs,error,match", [
    ((2, 3, 4), {"size": 0}, nxe.InvalidArgumentError, r"size must be >= 1, got 0"),
    ((2, 3, 4), {"size": 3, "beta": float("inf")}, nxe.InvalidArgumentError, r"must be finite"),
    ((3,), {"size": 3}, nxe.ShapeMismatchError, r"rank >= 2"),
    ((2, 3, 4), {}, nxe.Error, r"'size'"),
])
def test_lrn_rejects_bad_input(shape, attrs, error, match):
    with pytest.raises(error, match=match) as err:
        build_op("LRN", [(shape, "f32")], **attrs).compile()
    assert "'LRN'" in str(err.value)
