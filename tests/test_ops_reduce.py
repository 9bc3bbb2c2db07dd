"""The reduce op family (ReduceSum, ReduceMean) against numpy references computed here, and the
errors each op gives for bad input."""

import numpy as np
import pytest

import nxe

RNG = np.random.default_rng(20240614)
# Floating sums accumulate in double: only the final rounding to float32 remains.
TOL = {"rtol": 1e-6, "atol": 1e-6}


def run_op(op_type, x, *, threads=1, **attrs):
    g = nxe.Graph()
    t = g.input("x", x.shape, x.dtype)
    (y,) = g.op(op_type, [t], name="under_test", **attrs)
    g.mark_output(y, name="y")
    return g.compile(threads=threads).run({"x": x})["y"]


def build(op_type, shape, dtype="f32", **attrs):
    g = nxe.Graph()
    t = g.input("x", shape, dtype)
    (y,) = g.op(op_type, [t], name="under_test", **attrs)
    g.mark_output(y)
    return g


def numpy_axes(axes, ndim):
    """nxe's axes (empty = all) as a numpy axis tuple."""
    return tuple(range(ndim)) if not axes else tuple(a % ndim for a in axes)


AXES_CASES = [
    ((7, 13), []), ((7, 13), [0]), ((7, 13), [-1]), ((7, 13), [1, 0]),
    ((2, 3, 13), [1]), ((2, 3, 13), [0, 2]), ((2, 3, 13), [-1, -3]), ((2, 3, 13), [0, 1]),
    ((3, 1, 5, 2), [1]), ((3, 1, 5, 2), [1, 3]), ((2, 3, 1, 4, 5, 2), [0, 2, 3, 5]),
    ((13,), [0]), ((1,), []),
]


@pytest.mark.parametrize("shape,axes", AXES_CASES)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_sum_f32_matches_numpy(shape, axes, keepdims):
    x = np.asarray(RNG.standard_normal(shape), dtype=np.float32)
    y = run_op("ReduceSum", x, axes=axes, keepdims=keepdims)
    ref = np.sum(x.astype(np.float64), axis=numpy_axes(axes, x.ndim), keepdims=bool(keepdims))
    assert y.dtype == np.float32 and y.shape == ref.shape
    np.testing.assert_allclose(y, ref, **TOL)


@pytest.mark.parametrize("shape,axes", AXES_CASES)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_mean_matches_numpy(shape, axes, keepdims):
    x = np.asarray(RNG.standard_normal(shape), dtype=np.float32)
    y = run_op("ReduceMean", x, axes=axes, keepdims=keepdims)
    ref = np.mean(x.astype(np.float64), axis=numpy_axes(axes, x.ndim), keepdims=bool(keepdims))
    assert y.dtype == np.float32 and y.shape == ref.shape
    np.testing.assert_allclose(y, ref, **TOL)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("shape,axes", AXES_CASES[:8])
def test_reduce_sum_integers_match_numpy_exactly(dtype, shape, axes):
    x = np.asarray(RNG.integers(-1000, 1000, size=shape, dtype=dtype))
    y = run_op("ReduceSum", x, axes=axes, keepdims=0)
    ref = np.sum(x, axis=numpy_axes(axes, x.ndim), dtype=dtype)
    assert y.dtype == dtype
    assert np.array_equal(y, ref)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_reduce_sum_integers_wrap_around_like_numpy(dtype):
    info = np.iinfo(dtype)
    x = np.array([[info.max, 1, 5], [info.min, -1, -7], [info.max, info.max, info.max]], dtype)
    y = run_op("ReduceSum", x, axes=[1], keepdims=0)
    assert np.array_equal(y, np.sum(x, axis=1, dtype=dtype))


def test_reduce_defaults_keep_dims_and_reduce_everything():
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    y = run_op("ReduceSum", x)
    assert y.shape == (1, 1, 1)
    np.testing.assert_allclose(y, np.sum(x.astype(np.float64), keepdims=True), **TOL)


def test_reduce_of_an_empty_axis_gives_zero_sum_and_nan_mean():
    x = np.zeros((3, 0, 2), np.float32)
    assert np.array_equal(run_op("ReduceSum", x, axes=[1], keepdims=0), np.zeros((3, 2)))
    assert np.all(np.isnan(run_op("ReduceMean", x, axes=[1], keepdims=0)))


@pytest.mark.parametrize("op_type", ["ReduceSum", "ReduceMean"])
@pytest.mark.parametrize("axes", [[1], [0, 2], []])
def test_reduce_is_bit_identical_for_one_and_two_threads(op_type, axes):
    x = RNG.standard_normal((40, 30, 60)).astype(np.float32)
    one = run_op(op_type, x, threads=1, axes=axes)
    two = run_op(op_type, x, threads=2, axes=axes)
    assert np.array_equal(one, two)


@pytest.mark.parametrize("op_type", ["ReduceSum", "ReduceMean"])
@pytest.mark.parametrize("attrs,match", [
    ({"axes": [3]}, r"axis 3 is out of range for rank 3"),
    ({"axes": [-4]}, r"axis -4 is out of range"),
    ({"axes": [0, -3]}, r"axes names dimension 0 twice"),
    ({"keepdims": 2}, r"keepdims must be 0 or 1, got 2"),
])
def test_reduce_rejects_bad_attribute_values(op_type, attrs, match):
    with pytest.raises(nxe.InvalidArgumentError, match=match) as err:
        build(op_type, (2, 3, 4), **attrs).compile()
    assert f"'{op_type}'" in str(err.value)


@pytest.mark.parametrize("op_type,dtype", [("ReduceSum", "f16"), ("ReduceSum", "u8"),
                                           ("ReduceSum", "bool"), ("ReduceMean", "i32"),
                                           ("ReduceMean", "i64")])
def test_reduce_rejects_unsupported_dtypes(op_type, dtype):
    with pytest.raises(nxe.DtypeMismatchError, match=f"'{op_type}'.*{dtype}"):
        build(op_type, (2, 3), dtype).compile()


@pytest.mark.parametrize("op_type", ["ReduceSum", "ReduceMean"])
def test_reduce_rejects_unknown_attribute(op_type):
    with pytest.raises(nxe.NotFoundError, match=f"'{op_type}'.*'axis'"):
        build(op_type, (2, 3), axis=1)
