"""The reduce op family (the Reduce* ops, ArgMax, ArgMin, TopK, CumSum) against numpy
references computed here, and the errors each op gives for bad input."""

import numpy as np
import nxe
import pytest
from op_testing import build_op, run_single

RNG = np.random.default_rng(20240614)
# Floating sums accumulate in double: only the final rounding to float32 remains.
TOL = {"rtol": 1e-6, "atol": 1e-6}


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
    y = run_single("ReduceSum", [x], axes=axes, keepdims=keepdims)
    ref = np.sum(x.astype(np.float64), axis=numpy_axes(axes, x.ndim), keepdims=bool(keepdims))
    assert y.dtype == np.float32 and y.shape == ref.shape
    np.testing.assert_allclose(y, ref, **TOL)


@pytest.mark.parametrize("shape,axes", AXES_CASES)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_mean_matches_numpy(shape, axes, keepdims):
    x = np.asarray(RNG.standard_normal(shape), dtype=np.float32)
    y = run_single("ReduceMean", [x], axes=axes, keepdims=keepdims)
    ref = np.mean(x.astype(np.float64), axis=numpy_axes(axes, x.ndim), keepdims=bool(keepdims))
    assert y.dtype == np.float32 and y.shape == ref.shape
    np.testing.assert_allclose(y, ref, **TOL)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("shape,axes", AXES_CASES[:8])
def test_reduce_sum_integers_match_numpy_exactly(dtype, shape, axes):
    x = np.asarray(RNG.integers(-1000, 1000, size=shape, dtype=dtype))
    y = run_single("ReduceSum", [x], axes=axes, keepdims=0)
    ref = np.sum(x, axis=numpy_axes(axes, x.ndim), dtype=dtype)
    assert y.dtype == dtype
    assert np.array_equal(y, ref)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_reduce_sum_integers_wrap_around_like_numpy(dtype):
    info = np.iinfo(dtype)
    x = np.array([[info.max, 1, 5], [info.min, -1, -7], [info.max, info.max, info.max]], dtype)
    y = run_single("ReduceSum", [x], axes=[1], keepdims=0)
    assert np.array_equal(y, np.sum(x, axis=1, dtype=dtype))


def test_reduce_defaults_keep_dims_and_reduce_everything():
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    y = run_single("ReduceSum", [x])
    assert y.shape == (1, 1, 1)
    np.testing.assert_allclose(y, np.sum(x.astype(np.float64), keepdims=True), **TOL)


def test_reduce_of_an_empty_axis_gives_zero_sum_and_nan_mean():
    x = np.zeros((3, 0, 2), np.float32)
    assert np.array_equal(run_single("ReduceSum", [x], axes=[1], keepdims=0), np.zeros((3, 2)))
    assert np.all(np.isnan(run_single("ReduceMean", [x], axes=[1], keepdims=0)))


@pytest.mark.parametrize("op_type", ["ReduceSum", "ReduceMean"])
@pytest.mark.parametrize("axes", [[1], [0, 2], []])
def test_reduce_is_bit_identical_for_one_and_two_threads(op_type, axes):
    x = RNG.standard_normal((40, 30, 60)).astype(np.float32)
    one = run_single(op_type, [x], threads=1, axes=axes)
    two = run_single(op_type, [x], threads=2, axes=axes)
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
        build_op(op_type, [((2, 3, 4), "f32")], **attrs).compile()
    assert f"'{op_type}'" in str(err.value)


@pytest.mark.parametrize("op_type,dtype", [("ReduceSum", "f16"), ("ReduceSum", "u8"),
                                           ("ReduceSum", "bool"), ("ReduceMean", "i32"),
                                           ("ReduceMean", "i64")])
def test_reduce_rejects_unsupported_dtypes(op_type, dtype):
    with pytest.raises(nxe.DtypeMismatchError, match=f"'{op_type}'.*{dtype}"):
        build_op(op_type, [((2, 3), dtype)]).compile()


@pytest.mark.parametrize("op_type", ["ReduceSum", "ReduceMean"])
def test_reduce_rejects_unknown_attribute(op_type):
    with pytest.raises(nxe.NotFoundError, match=f"'{op_type}'.*'axis'"):
        build_op(op_type, [((2, 3), "f32")], axis=1)


# ---- the other reductions -------------------------------------------------------------------


def float_reference(op_type, x, axes, keepdims):
    """numpy reference in double for the floating reductions."""
    x = x.astype(np.float64)
    kw = {"axis": axes, "keepdims": keepdims}
    if op_type == "ReduceMax":
        return np.max(x, initial=-np.inf, **kw)
    if op_type == "ReduceMin":
        return np.min(x, initial=np.inf, **kw)
    if op_type == "ReduceProd":
        return np.prod(x, **kw)
    if op_type == "ReduceL1":
        return np.sum(np.abs(x), **kw)
    if op_type == "ReduceL2":
        return np.sqrt(np.sum(x * x, **kw))
    if op_type == "ReduceSumSquare":
        return np.sum(x * x, **kw)
    if op_type == "ReduceLogSum":
        with np.errstate(divide="ignore"):
            return np.log(np.sum(x, **kw))
    if op_type == "ReduceLogSumExp":
        m = np.max(x, initial=-np.inf, axis=axes, keepdims=True)
        safe = np.where(np.isfinite(m), m, 0.0)
        with np.errstate(divide="ignore"):
            out = np.log(np.sum(np.exp(x - safe), axis=axes, keepdims=True)) + safe
        return out if keepdims else np.squeeze(out, axis=axes)
    raise AssertionError(op_type)


FLOAT_REDUCTIONS = ["ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                    "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"]


def reduction_input(op_type, shape):
    if op_type == "ReduceProd":
        # Factors near 1 keep products of many elements inside float32.
        return RNG.uniform(0.5, 1.5, size=shape).astype(np.float32)
    if op_type == "ReduceLogSum":
        return RNG.uniform(0.1, 2.0, size=shape).astype(np.float32)
    return RNG.standard_normal(shape).astype(np.float32) * 3


@pytest.mark.parametrize("op_type", FLOAT_REDUCTIONS)
@pytest.mark.parametrize("shape,axes", AXES_CASES)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_float_reductions_match_numpy(op_type, shape, axes, keepdims):
    x = reduction_input(op_type, shape)
    y = run_single(op_type, [x], axes=axes, keepdims=keepdims)
    ref = float_reference(op_type, x, numpy_axes(axes, x.ndim), bool(keepdims))
    assert y.dtype == np.float32 and y.shape == ref.shape
    np.testing.assert_allclose(y, ref, rtol=2e-6, atol=1e-6)


INT_REDUCTIONS = {
    "ReduceMax": lambda x, ax, dt: np.max(x, axis=ax),
    "ReduceMin": lambda x, ax, dt: np.min(x, axis=ax),
    "ReduceProd": lambda x, ax, dt: np.prod(x, axis=ax, dtype=dt),
    "ReduceL1": lambda x, ax, dt: np.sum(np.abs(x), axis=ax, dtype=dt),
    "ReduceSumSquare": lambda x, ax, dt: np.sum(x * x, axis=ax, dtype=dt),
}


@pytest.mark.parametrize("op_type", sorted(INT_REDUCTIONS))
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("shape,axes", AXES_CASES[:8])
def test_integer_reductions_match_numpy_exactly(op_type, dtype, shape, axes):
    x = np.asarray(RNG.integers(-9, 10, size=shape, dtype=dtype))
    y = run_single(op_type, [x], axes=axes, keepdims=0)
    ref = INT_REDUCTIONS[op_type](x, numpy_axes(axes, x.ndim), dtype)
    assert y.dtype == dtype
    assert np.array_equal(y, ref)


@pytest.mark.parametrize("op_type", ["ReduceProd", "ReduceL1", "ReduceSumSquare"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_reductions_wrap_around_like_numpy(op_type, dtype):
    info = np.iinfo(dtype)
    x = np.array([[info.max, 3, 5], [info.min, -1, 7], [info.max // 2, info.min, 11]], dtype)
    y = run_single(op_type, [x], axes=[1], keepdims=0)
    with np.errstate(over="ignore"):
        ref = INT_REDUCTIONS[op_type](x, 1, dtype)
    assert np.array_equal(y, ref)


@pytest.mark.parametrize("axes", [[0], [1], []])
def test_bool_max_is_any_and_min_is_all(axes):
    x = RNG.integers(0, 2, size=(5, 7)).astype(bool)
    x[0] = True
    x[1] = False
    ax = numpy_axes(axes, 2)
    assert np.array_equal(run_single("ReduceMax", [x], axes=axes, keepdims=0), np.any(x, axis=ax))
    assert np.array_equal(run_single("ReduceMin", [x], axes=axes, keepdims=0), np.all(x, axis=ax))


@pytest.mark.parametrize("op_type,identity", [
    ("ReduceMax", -np.inf), ("ReduceMin", np.inf), ("ReduceProd", 1.0), ("ReduceL1", 0.0),
    ("ReduceL2", 0.0), ("ReduceSumSquare", 0.0), ("ReduceLogSum", -np.inf),
    ("ReduceLogSumExp", -np.inf),
])
def test_float_reduction_of_an_empty_set_gives_the_identity(op_type, identity):
    y = run_single(op_type, [np.zeros((3, 0, 2), np.float32)], axes=[1], keepdims=1)
    assert y.shape == (3, 1, 2)
    assert np.array_equal(y, np.full((3, 1, 2), identity, np.float32))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_and_bool_reductions_of_an_empty_set(dtype):
    info = np.iinfo(dtype)
    x = np.zeros((0, 4), dtype)
    assert np.array_equal(run_single("ReduceMax", [x], axes=[0], keepdims=0), np.full(4, info.min))
    assert np.array_equal(run_single("ReduceMin", [x], axes=[0], keepdims=0), np.full(4, info.max))
    assert np.array_equal(run_single("ReduceProd", [x], axes=[0], keepdims=0), np.ones(4, dtype))
    b = np.zeros((0, 4), bool)
    assert np.array_equal(run_single("ReduceMax", [b], axes=[0], keepdims=0), np.zeros(4, bool))
    assert np.array_equal(run_single("ReduceMin", [b], axes=[0], keepdims=0), np.ones(4, bool))


@pytest.mark.parametrize("op_type", ["ReduceMax", "ReduceMin", "ReduceLogSumExp"])
def test_reductions_propagate_nan(op_type):
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    x[1, 3] = np.nan
    y = run_single(op_type, [x], axes=[1], keepdims=0)
    assert np.isnan(y[1]) and not np.any(np.isnan(np.delete(y, 1)))


def test_reduce_log_sum_exp_is_stable_for_large_and_infinite_inputs():
    x = RNG.normal(1000.0, 30.0, size=(3, 9)).astype(np.float32)
    x[2] = -np.inf
    x[1, 4] = np.inf
    y = run_single("ReduceLogSumExp", [x], axes=[1], keepdims=0)
    assert y[1] == np.inf and y[2] == -np.inf
    np.testing.assert_allclose(y[0], float_reference("ReduceLogSumExp", x[:1], (1,), False)[0],
                               rtol=1e-6)


@pytest.mark.parametrize("op_type", FLOAT_REDUCTIONS)
def test_reductions_are_bit_identical_for_one_and_two_threads(op_type):
    x = np.abs(RNG.standard_normal((40, 30, 60)).astype(np.float32)) + 0.5
    assert np.array_equal(run_single(op_type, [x], threads=1, axes=[1]),
                          run_single(op_type, [x], threads=2, axes=[1]))


@pytest.mark.parametrize("op_type,dtype", [
    ("ReduceL2", "i32"), ("ReduceLogSum", "i64"), ("ReduceLogSumExp", "i32"),
    ("ReduceMax", "f16"), ("ReduceProd", "bool"), ("ReduceL1", "u8"), ("ReduceSumSquare", "bool"),
])
def test_reductions_reject_unsupported_dtypes(op_type, dtype):
    with pytest.raises(nxe.DtypeMismatchError, match=f"'{op_type}'.*{dtype}"):
        build_op(op_type, [((2, 3), dtype)]).compile()


@pytest.mark.parametrize("op_type", FLOAT_REDUCTIONS)
def test_reductions_reject_bad_axes(op_type):
    with pytest.raises(nxe.InvalidArgumentError, match=r"axes names dimension 1 twice") as err:
        build_op(op_type, [((2, 3, 4), "f32")], axes=[1, -2]).compile()
    assert f"'{op_type}'" in str(err.value)


# ---- ArgMax, ArgMin -------------------------------------------------------------------------


def arg_reference(op_type, x, axis, keepdims, last):
    fn = np.argmax if op_type == "ArgMax" else np.argmin
    if last:
        flipped = np.flip(x, axis)
        idx = x.shape[axis] - 1 - fn(flipped, axis=axis)
    else:
        idx = fn(x, axis=axis)
    return np.expand_dims(idx, axis) if keepdims else idx


@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64])
@pytest.mark.parametrize("shape,axis", [((7, 13), 0), ((7, 13), -1), ((2, 3, 5), 1),
                                        ((13,), 0), ((3, 1, 4), 1), ((2, 3, 1, 4, 5, 2), 4)])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_extremes_match_numpy_including_ties(op_type, dtype, shape, axis, keepdims, last):
    x = RNG.integers(-3, 4, size=shape).astype(dtype)  # few values: many ties
    y = run_single(op_type, [x], axis=axis, keepdims=keepdims, select_last_index=last)
    ref = arg_reference(op_type, x, axis % len(shape), keepdims, last)
    assert y.dtype == np.int64 and y.shape == ref.shape
    assert np.array_equal(y, ref)


@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin"])
def test_arg_extremes_default_to_axis_0_with_kept_dims(op_type):
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    assert np.array_equal(run_single(op_type, [x]), arg_reference(op_type, x, 0, 1, 0))


@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_extremes_pick_nan_like_numpy(op_type, last):
    x = RNG.standard_normal((3, 8)).astype(np.float32)
    x[0, 2] = x[0, 5] = np.nan
    y = run_single(op_type, [x], axis=1, keepdims=0, select_last_index=last)
    assert np.array_equal(y, arg_reference(op_type, x, 1, 0, last))
    assert y[0] == (5 if last else 2)


@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("shape,attrs,error,match", [
    ((2, 3), {"axis": 2}, nxe.InvalidArgumentError, r"axis 2 is out of range for rank 2"),
    ((2, 3), {"keepdims": 2}, nxe.InvalidArgumentError, r"keepdims must be 0 or 1, got 2"),
    ((2, 3), {"select_last_index": -1}, nxe.InvalidArgumentError, r"select_last_index must be"),
    ((2, 0), {"axis": 1}, nxe.ShapeMismatchError, r"axis 1 of input X \[2, 0\] is empty"),
    ((), {}, nxe.ShapeMismatchError, r"rank >= 1"),
])
def test_arg_extremes_reject_bad_input(op_type, shape, attrs, error, match):
    with pytest.raises(error, match=match) as err:
        build_op(op_type, [(shape, "f32")], **attrs).compile()
    assert f"'{op_type}'" in str(err.value)


def test_arg_max_rejects_bool():
    with pytest.raises(nxe.DtypeMismatchError, match="'ArgMax'.*bool"):
        build_op("ArgMax", [((2, 3), "bool")]).compile()


# ---- TopK -----------------------------------------------------------------------------------


def run_top_k(x, threads=1, **attrs):
    g = nxe.Graph()
    t = g.input("x", x.shape, x.dtype)
    values, indices = g.op("TopK", [t], name="under_test", **attrs)
    g.mark_output(values, name="values")
    g.mark_output(indices, name="indices")
    out = g.compile(threads=threads).run({"x": x})
    return out["values"], out["indices"]


def top_k_reference(x, k, axis, largest):
    """Stable order: best value first, equal values by lower index, NaN above every number.
    np.lexsort sorts by its last key first."""
    position = np.indices(x.shape)[axis]
    nan = np.isnan(x) if np.issubdtype(x.dtype, np.floating) else np.zeros(x.shape, bool)
    key = np.where(nan, 0, x).astype(np.float64)
    if largest:
        order = np.lexsort((position, -key, ~nan), axis=axis)
    else:
        order = np.lexsort((position, key, nan), axis=axis)
    idx = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, idx, axis=axis), idx


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64])
@pytest.mark.parametrize("shape,axis,k", [((7, 13), -1, 4), ((7, 13), 0, 7), ((2, 9, 3), 1, 1),
                                          ((2, 9, 3), 1, 0), ((20,), 0, 20),
                                          ((3, 1, 5, 4), 2, 3)])
@pytest.mark.parametrize("largest", [0, 1])
def test_top_k_matches_a_stable_sort(dtype, shape, axis, k, largest):
    x = RNG.integers(-4, 5, size=shape).astype(dtype)  # many ties
    values, indices = run_top_k(x, k=k, axis=axis, largest=largest)
    ref_values, ref_indices = top_k_reference(x, k, axis % len(shape), largest)
    assert values.dtype == dtype and indices.dtype == np.int64
    assert np.array_equal(values, ref_values)
    assert np.array_equal(indices, ref_indices)


@pytest.mark.parametrize("largest", [0, 1])
def test_top_k_orders_nan_above_every_number(largest):
    x = RNG.standard_normal((3, 10)).astype(np.float32)
    x[0, [1, 6]] = np.nan
    values, indices = run_top_k(x, k=10, largest=largest)
    ref_values, ref_indices = top_k_reference(x, 10, 1, largest)
    assert np.array_equal(indices, ref_indices)
    np.testing.assert_array_equal(values, ref_values)


def test_top_k_defaults_to_the_largest_along_the_last_axis():
    x = RNG.standard_normal((4, 11)).astype(np.float32)
    values, indices = run_top_k(x, k=3)
    ref_values, ref_indices = top_k_reference(x, 3, 1, 1)
    assert np.array_equal(values, ref_values) and np.array_equal(indices, ref_indices)


def test_top_k_is_identical_for_one_and_two_threads():
    x = RNG.standard_normal((300, 200)).astype(np.float32)
    one = run_top_k(x, threads=1, k=17)
    two = run_top_k(x, threads=2, k=17)
    assert np.array_equal(one[0], two[0]) and np.array_equal(one[1], two[1])


@pytest.mark.parametrize("attrs,error,match", [
    ({"k": 6}, nxe.InvalidArgumentError, r"k must be in \[0, 5\].*got 6"),
    ({"k": -1}, nxe.InvalidArgumentError, r"k must be in \[0, 5\].*got -1"),
    ({"k": 1, "axis": 2}, nxe.InvalidArgumentError, r"axis 2 is out of range"),
    ({"k": 1, "largest": 3}, nxe.InvalidArgumentError, r"largest must be 0 or 1"),
    ({"k": 1, "sorted": 2}, nxe.InvalidArgumentError, r"sorted must be 0 or 1"),
    ({}, nxe.Error, r"'k'"),
])
def test_top_k_rejects_bad_attributes(attrs, error, match):
    g = nxe.Graph()
    t = g.input("x", (3, 5), "f32")
    values, indices = g.op("TopK", [t], name="under_test", **attrs)
    g.mark_output(values)
    g.mark_output(indices)
    with pytest.raises(error, match=match) as err:
        g.compile()
    assert "'TopK'" in str(err.value)


# ---- CumSum ---------------------------------------------------------------------------------


def scan_reference(scan, identity, x, axis, exclusive, reverse, dtype):
    """numpy's running `scan` (np.cumsum, np.cumprod) with ONNX's exclusive and reverse: an
    exclusive scan starts from `identity` and drops the last element."""
    if reverse:
        x = np.flip(x, axis)
    y = scan(x, axis=axis, dtype=dtype)
    if exclusive:
        y = np.concatenate([np.full_like(np.take(y, [0], axis=axis), identity),
                            np.take(y, np.arange(x.shape[axis] - 1), axis=axis)], axis=axis)
    return np.flip(y, axis) if reverse else y


def cumsum_reference(x, axis, exclusive, reverse, dtype):
    return scan_reference(np.cumsum, 0, x, axis, exclusive, reverse, dtype)


@pytest.mark.parametrize("shape,axis", [((7, 13), 0), ((7, 13), -1), ((2, 3, 5), 1), ((13,), 0),
                                        ((3, 1, 4), 1), ((4, 0, 2), 2)])
@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_cumsum_f32_matches_numpy(shape, axis, exclusive, reverse):
    x = RNG.standard_normal(shape).astype(np.float32)
    y = run_single("CumSum", [x], axis=axis, exclusive=exclusive, reverse=reverse)
    ref = cumsum_reference(x.astype(np.float64), axis % len(shape), exclusive, reverse,
                           np.float64)
    assert y.dtype == np.float32 and y.shape == x.shape
    np.testing.assert_allclose(y, ref, **TOL)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_cumsum_integers_match_numpy_and_wrap(dtype, exclusive, reverse):
    info = np.iinfo(dtype)
    x = RNG.integers(-100, 100, size=(5, 6)).astype(dtype)
    x[2, 1:3] = info.max
    y = run_single("CumSum", [x], axis=1, exclusive=exclusive, reverse=reverse)
    with np.errstate(over="ignore"):
        ref = cumsum_reference(x, 1, exclusive, reverse, dtype)
    assert y.dtype == dtype and np.array_equal(y, ref)


def test_cumsum_is_bit_identical_for_one_and_two_threads():
    x = RNG.standard_normal((300, 200)).astype(np.float32)
    assert np.array_equal(run_single("CumSum", [x], threads=1, axis=0),
                          run_single("CumSum", [x], threads=2, axis=0))


@pytest.mark.parametrize("shape,attrs,error,match", [
    ((2, 3), {"axis": -3}, nxe.InvalidArgumentError, r"axis -3 is out of range"),
    ((2, 3), {"exclusive": 2}, nxe.InvalidArgumentError, r"exclusive must be 0 or 1"),
    ((2, 3), {"reverse": -1}, nxe.InvalidArgumentError, r"reverse must be 0 or 1"),
    ((), {}, nxe.ShapeMismatchError, r"rank >= 1"),
])
def test_cumsum_rejects_bad_input(shape, attrs, error, match):
    with pytest.raises(error, match=match) as err:
        build_op("CumSum", [(shape, "f32")], **attrs).compile()
    assert "'CumSum'" in str(err.value)


@pytest.mark.parametrize("op_type,dtype", [("CumSum", "bool"), ("TopK", "u8"), ("CumSum", "f16")])
def test_axis_ops_reject_unsupported_dtypes(op_type, dtype):
    g = nxe.Graph()
    t = g.input("x", (2, 3), dtype)
    outs = g.op(op_type, [t], name="under_test", **({"k": 1} if op_type == "TopK" else {}))
    for o in outs:
        g.mark_output(o)
    with pytest.raises(nxe.DtypeMismatchError, match=f"'{op_type}'.*{dtype}"):
        g.compile()


# ---- CumProd --------------------------------------------------------------------------------


def cumprod_reference(x, axis, exclusive, reverse, dtype):
    return scan_reference(np.cumprod, 1, x, axis, exclusive, reverse, dtype)


@pytest.mark.parametrize("shape,axis", [((7, 13), 0), ((7, 13), -1), ((2, 3, 5), 1), ((13,), 0),
                                        ((3, 1, 4), 1), ((4, 0, 2), 2)])
@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_cumprod_f32_matches_numpy(shape, axis, exclusive, reverse):
    # Factors near 1 keep long products finite and comparable.
    x = (1.0 + 0.3 * RNG.standard_normal(shape)).astype(np.float32)
    y = run_single("CumProd", [x], axis=axis, exclusive=exclusive, reverse=reverse)
    ref = cumprod_reference(x.astype(np.float64), axis % len(shape), exclusive, reverse,
                            np.float64)
    assert y.dtype == np.float32 and y.shape == x.shape
    np.testing.assert_allclose(y, ref, **TOL)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_cumprod_integers_match_numpy_and_wrap(dtype, exclusive, reverse):
    x = RNG.integers(-9, 10, size=(5, 30)).astype(dtype)
    y = run_single("CumProd", [x], axis=1, exclusive=exclusive, reverse=reverse)
    with np.errstate(over="ignore"):
        ref = cumprod_reference(x, 1, exclusive, reverse, dtype)
    assert y.dtype == dtype and np.array_equal(y, ref)


def test_cumprod_defaults_to_an_inclusive_forward_product_along_axis_0():
    x = (1.0 + 0.2 * RNG.standard_normal((4, 3))).astype(np.float32)
    np.testing.assert_allclose(run_single("CumProd", [x]), np.cumprod(x.astype(np.float64), axis=0),
                               **TOL)


def test_cumprod_is_bit_identical_for_one_and_two_threads():
    x = (1.0 + 0.01 * RNG.standard_normal((300, 200))).astype(np.float32)
    assert np.array_equal(run_single("CumProd", [x], threads=1, axis=0),
                          run_single("CumProd", [x], threads=2, axis=0))


@pytest.mark.parametrize("shape,dtype,attrs,error,match", [
    ((2, 3), "f32", {"axis": 2}, nxe.InvalidArgumentError, r"axis 2 is out of range"),
    ((2, 3), "f32", {"exclusive": 3}, nxe.InvalidArgumentError, r"exclusive must be 0 or 1"),
    ((2, 3), "f32", {"reverse": 2}, nxe.InvalidArgumentError, r"reverse must be 0 or 1"),
    ((), "f32", {}, nxe.ShapeMismatchError, r"rank >= 1"),
    ((2, 3), "u8", {}, nxe.DtypeMismatchError, r"u8"),
])
def test_cumprod_rejects_bad_input(shape, dtype, attrs, error, match):
    with pytest.raises(error, match=match) as err:
        build_op("CumProd", [(shape, dtype)], **attrs).compile()
    assert "'CumProd'" in str(err.value)


# ---- f64 ------------------------------------------------------------------------------------


@pytest.mark.parametrize("op_type", ["ReduceSum", "ReduceMean", *FLOAT_REDUCTIONS])
@pytest.mark.parametrize("axes,keepdims", [([1], 1), ([0, 2], 0), ([], 1)])
def test_f64_reductions_match_numpy_in_double(op_type, axes, keepdims):
    x = reduction_input(op_type, (3, 4, 5)).astype(np.float64) + RNG.uniform(0, 1e-9, (3, 4, 5))
    y = run_single(op_type, [x], axes=axes, keepdims=keepdims)
    na = numpy_axes(axes, x.ndim)
    if op_type in ("ReduceSum", "ReduceMean"):
        fn = np.sum if op_type == "ReduceSum" else np.mean
        ref = fn(x, axis=na, keepdims=bool(keepdims))
    else:
        ref = float_reference(op_type, x, na, bool(keepdims))
    assert y.dtype == np.float64 and y.shape == np.shape(ref)
    np.testing.assert_allclose(y, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("op_type,reference", [("CumSum", cumsum_reference),
                                               ("CumProd", cumprod_reference)])
@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_f64_scans_match_numpy_in_double(op_type, reference, exclusive, reverse):
    x = RNG.uniform(0.5, 1.5, size=(3, 7, 2))
    y = run_single(op_type, [x], axis=1, exclusive=exclusive, reverse=reverse)
    assert y.dtype == np.float64 and y.shape == x.shape
    np.testing.assert_allclose(y, reference(x, 1, exclusive, reverse, np.float64),
                               rtol=1e-13, atol=0)


@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin"])
def test_f64_arg_extremes_tell_apart_values_equal_in_f32(op_type):
    x = np.array([[1.0, 1.0 + 2.0**-40, 1.0 - 2.0**-40, 0.5]])
    y = run_single(op_type, [x], axis=1, keepdims=0)
    ref = np.argmax(x, axis=1) if op_type == "ArgMax" else np.argmin(x, axis=1)
    np.testing.assert_array_equal(y, ref)


def test_f64_top_k_matches_a_stable_sort():
    x = RNG.standard_normal((4, 9))
    g = nxe.Graph()
    t = g.input("x", x.shape, x.dtype)
    values, indices = g.op("TopK", [t], k=3, axis=1)
    g.mark_output(values, name="v")
    g.mark_output(indices, name="i")
    out = g.compile().run({"x": x})
    order = np.argsort(-x, axis=1, kind="stable")[:, :3]
    assert out["v"].dtype == np.float64
    np.testing.assert_array_equal(out["i"], order)
    np.testing.assert_array_equal(out["v"], np.take_along_axis(x, order, axis=1))
