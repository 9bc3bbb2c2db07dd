"""The normalization op family (LayerNorm, Softmax) against numpy references computed here, and
the errors each op gives for bad input."""

import numpy as np
import pytest

import nxe

RNG = np.random.default_rng(20240613)
# Outputs are O(1); the ops accumulate in double, so only the final float32 rounding and
# float32 exp remain.
TOL = {"rtol": 1e-5, "atol": 1e-6}


def run_op(op_type, inputs, *, constants=(), threads=1, **attrs):
    """Runs one op. inputs are arrays (graph inputs) or None (absent); indices listed in
    `constants` become constant tensors instead."""
    g = nxe.Graph()
    tensors, feeds = [], {}
    for i, value in enumerate(inputs):
        if value is None:
            tensors.append(None)
        elif i in constants:
            tensors.append(g.constant(value, name=f"in{i}"))
        else:
            tensors.append(g.input(f"in{i}", value.shape, value.dtype))
            feeds[f"in{i}"] = value
    (y,) = g.op(op_type, tensors, name="under_test", **attrs)
    g.mark_output(y, name="y")
    return g.compile(threads=threads).run(feeds)["y"]


def build(op_type, specs, **attrs):
    """A graph with one op whose inputs are (shape, dtype) specs or None."""
    g = nxe.Graph()
    tensors = [None if s is None else g.input(f"in{i}", s[0], s[1]) for i, s in enumerate(specs)]
    (y,) = g.op(op_type, tensors, name="under_test", **attrs)
    g.mark_output(y)
    return g


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
    y = run_op("LayerNorm", [x, scale, bias], constants=(1, 2), axis=axis)
    assert y.dtype == np.float32 and y.shape == x.shape
    np.testing.assert_allclose(y, layer_norm_reference(x, scale, bias, axis), **TOL)


@pytest.mark.parametrize("epsilon", [0.0, 1e-3, 0.5])
def test_layer_norm_epsilon_is_added_to_the_variance(epsilon):
    x = normal(4, 9, scale=0.1)
    y = run_op("LayerNorm", [x, None, None], epsilon=epsilon)
    np.testing.assert_allclose(y, layer_norm_reference(x, None, None, epsilon=epsilon), **TOL)


def test_layer_norm_is_accurate_for_a_large_mean_and_small_spread():
    # E[x^2] - mean^2 in float32 would lose every digit of the variance here.
    x = normal(5, 64, loc=1.0e4, scale=1.0e-1)
    y = run_op("LayerNorm", [x, None, None], epsilon=0.0)
    np.testing.assert_allclose(y, layer_norm_reference(x, None, None, epsilon=0.0),
                               rtol=1e-4, atol=1e-4)


def test_layer_norm_is_bit_identical_for_one_and_two_threads():
    x, scale, bias = normal(600, 37), normal(37), normal(37)
    one = run_op("LayerNorm", [x, scale, bias], threads=1)
    two = run_op("LayerNorm", [x, scale, bias], threads=2)
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
        build("LayerNorm", specs, axis=axis).compile()
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
        build("LayerNorm", [((4, 5), "f32")], **attrs).compile()
    assert "'LayerNorm'" in str(err.value)


@pytest.mark.parametrize("which", [0, 1, 2])
def test_layer_norm_rejects_non_f32_inputs(which):
    specs = [((4, 5), "f32"), ((5,), "f32"), ((5,), "f32")]
    specs[which] = (specs[which][0], "f16")
    with pytest.raises(nxe.DtypeMismatchError, match="'LayerNorm'.*f16"):
        build("LayerNorm", specs).compile()


def test_layer_norm_rejects_unknown_attribute():
    with pytest.raises(nxe.NotFoundError, match="'LayerNorm'.*'eps'"):
        build("LayerNorm", [((4, 5), "f32")], eps=1e-3)


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
    y = run_op("Softmax", [x], axis=axis)
    assert y.dtype == np.float32 and y.shape == x.shape
    np.testing.assert_allclose(y, softmax_reference(x, axis), **TOL)


def test_softmax_default_axis_is_the_last():
    x = normal(4, 6)
    np.testing.assert_allclose(run_op("Softmax", [x]), softmax_reference(x, -1), **TOL)


def test_softmax_is_stable_for_large_logits():
    # exp(1000) overflows float32 and float64; subtracting the maximum keeps it finite.
    x = normal(3, 11, loc=1000.0, scale=50.0)
    x[0, 0] = -1000.0
    y = run_op("Softmax", [x])
    assert np.all(np.isfinite(y))
    np.testing.assert_allclose(y, softmax_reference(x), **TOL)


@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_is_bit_identical_for_one_and_two_threads(axis):
    x = normal(300, 70)
    one = run_op("Softmax", [x], threads=1, axis=axis)
    two = run_op("Softmax", [x], threads=2, axis=axis)
    assert np.array_equal(one, two)


@pytest.mark.parametrize("shape,attrs,error,match", [
    ((4, 5), {"axis": 2}, nxe.InvalidArgumentError, r"axis 2 is out of range for rank 2"),
    ((4, 5), {"axis": -3}, nxe.InvalidArgumentError, r"axis -3 is out of range"),
    ((), {}, nxe.ShapeMismatchError, r"rank >= 1"),
])
def test_softmax_rejects_bad_input(shape, attrs, error, match):
    with pytest.raises(error, match=match) as err:
        build("Softmax", [(shape, "f32")], **attrs).compile()
    assert "'Softmax'" in str(err.value)


@pytest.mark.parametrize("dtype", ["f16", "bf16", "i32"])
def test_softmax_rejects_non_f32_input(dtype):
    with pytest.raises(nxe.DtypeMismatchError, match=f"'Softmax'.*{dtype}"):
        build("Softmax", [((4, 5), dtype)]).compile()


def test_softmax_rejects_unknown_attribute():
    with pytest.raises(nxe.NotFoundError, match="'Softmax'.*'dim'"):
        build("Softmax", [((4, 5), "f32")], dim=1)
