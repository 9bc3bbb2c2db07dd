"""Data-movement op family: Gather, Reshape, Transpose, Concat, Split, Slice, Squeeze and
Unsqueeze against numpy references computed here. These ops move values without touching them,
so every comparison is exact."""

from __future__ import annotations

import numpy as np
import pytest

import nxe

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min
DTYPES = ["f32", "f16", "bf16", "i8", "u8", "i16", "i32", "i64", "bool"]


def sample(rng, shape, dtype="f32"):
    """Random values of an nxe dtype as the numpy array nxe exchanges (bf16: raw uint16 bits)."""
    if dtype == "f32":
        return rng.standard_normal(shape).astype(np.float32)
    if dtype == "f16":
        return rng.standard_normal(shape).astype(np.float16)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    numpy_dtype = {"bf16": np.uint16, "i8": np.int8, "u8": np.uint8, "i16": np.int16,
                   "i32": np.int32, "i64": np.int64}[dtype]
    info = np.iinfo(numpy_dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=numpy_dtype, endpoint=True)


def run_op(op_type, arrays, threads=1, num_outputs=None, dtypes=None, **attrs):
    """One-op graph over `arrays` fed as inputs (dtypes: nxe names, default from numpy)."""
    g = nxe.Graph()
    dtypes = dtypes or [a.dtype for a in arrays]
    inputs = [g.input(f"in{i}", a.shape, dt) for i, (a, dt) in enumerate(zip(arrays, dtypes))]
    outputs = g.op(op_type, inputs, num_outputs=num_outputs, **attrs)
    for t in outputs:
        g.mark_output(t)
    result = g.compile(threads=threads).run({f"in{i}": a for i, a in enumerate(arrays)})
    return [result[t.name] for t in outputs]


def compile_op(op_type, specs, num_outputs=None, **attrs):
    """Builds and compiles a one-op graph over input (shape, dtype) specs."""
    g = nxe.Graph()
    inputs = [g.input(f"in{i}", shape, dtype) for i, (shape, dtype) in enumerate(specs)]
    for t in g.op(op_type, inputs, num_outputs=num_outputs, **attrs):
        g.mark_output(t)
    return g.compile(threads=1)


def assert_same(got, ref):
    assert got.shape == ref.shape and got.dtype == ref.dtype
    np.testing.assert_array_equal(got, ref)


# ---- Gather -------------------------------------------------------------------------------

@pytest.mark.parametrize("index_dtype", [np.int32, np.int64], ids=["i32", "i64"])
@pytest.mark.parametrize(
    "data_shape, axis, index_shape",
    [((5, 7, 3), 0, (4,)), ((5, 7, 3), 1, (2, 3)), ((5, 7, 3), 2, (1,)), ((5, 7, 3), -1, (6,)),
     ((13,), 0, (3, 1, 2)), ((2, 1, 7), 1, (5,))],
    ids=str,
)
def test_gather_matches_numpy_take_with_negative_indices(
    data_shape, axis, index_shape, index_dtype, rng
):
    data = sample(rng, data_shape)
    dim = data_shape[axis]
    indices = rng.integers(-dim, dim, size=index_shape).astype(index_dtype)
    (got,) = run_op("Gather", [data, indices], axis=axis)
    assert_same(got, np.take(data, indices, axis=axis))


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_moves_every_dtype(dtype, rng):
    data = sample(rng, (4, 6, 3), dtype)
    indices = np.array([5, -1, 0, 2, 2], dtype=np.int64)
    (got,) = run_op("Gather", [data, indices], dtypes=[dtype, "i64"], axis=1)
    assert_same(got, np.take(data, indices, axis=1))


@pytest.mark.parametrize("bad", [5, -6, 1000, INT64_MIN])
def test_gather_index_out_of_range_fails_the_run_naming_the_index(bad, rng):
    g = nxe.Graph()
    y = g.Gather(g.input("data", (5, 3), "f32"), g.input("indices", (3,), "i64"))
    g.mark_output(y, name="y")
    exe = g.compile(threads=1)
    indices = np.array([0, bad, 1], dtype=np.int64)
    with pytest.raises(nxe.RunError, match=rf"Gather.*{bad}.*\[-5, 4\]"):
        exe.run({"data": sample(rng, (5, 3)), "indices": indices})
    good = np.array([4, -5, 1], dtype=np.int64)
    data = sample(rng, (5, 3))
    assert_same(exe.run({"data": data, "indices": good})["y"], np.take(data, good, axis=0))


def test_gather_result_is_identical_for_one_and_two_threads(rng):
    data = sample(rng, (3, 200, 64))
    indices = rng.integers(-200, 200, size=(300,)).astype(np.int32)
    one = run_op("Gather", [data, indices], threads=1, axis=1)[0]
    two = run_op("Gather", [data, indices], threads=2, axis=1)[0]
    assert np.array_equal(one, two)


def test_gather_rejects_float_indices():
    with pytest.raises(nxe.DtypeMismatchError, match="Gather"):
        compile_op("Gather", [((5, 3), "f32"), ((2,), "f32")])


def test_gather_rejects_axis_out_of_range():
    with pytest.raises(nxe.InvalidArgumentError, match="Gather.*axis"):
        compile_op("Gather", [((5, 3), "f32"), ((2,), "i64")], axis=2)


def test_gather_rejects_output_rank_above_six():
    with pytest.raises(nxe.UnsupportedError, match="Gather.*rank"):
        compile_op("Gather", [((2, 2, 2, 2), "f32"), ((1, 1, 1, 1), "i64")], axis=0)


# ---- Reshape ------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "target",
    [[4, -1], [0, -1], [-1], [2, 0, 2, 2], [24], [1, 1, 24, 1, 1, 1], [0, 0, 4], [3, 8]],
    ids=str,
)
def test_reshape_matches_numpy_with_zero_copying_the_input_dim(target, rng):
    x = sample(rng, (2, 3, 4))
    numpy_target = [x.shape[i] if v == 0 else v for i, v in enumerate(target)]
    (got,) = run_op("Reshape", [x], shape=target)
    assert_same(got, x.reshape(numpy_target))


@pytest.mark.parametrize("dtype", DTYPES)
def test_reshape_moves_every_dtype(dtype, rng):
    x = sample(rng, (3, 5, 2), dtype)
    (got,) = run_op("Reshape", [x], dtypes=[dtype], shape=[5, -1])
    assert_same(got, x.reshape(5, -1))


def test_reshape_allowzero_makes_zero_a_literal_dimension(rng):
    x = sample(rng, (0, 3))
    (got,) = run_op("Reshape", [x], shape=[3, 0], allowzero=1)
    assert_same(got, x.reshape(3, 0))


@pytest.mark.parametrize(
    "attrs, error",
    [({"shape": [-1, -1]}, nxe.InvalidArgumentError),
     ({"shape": [5, -1]}, nxe.ShapeMismatchError),
     ({"shape": [7, 3]}, nxe.ShapeMismatchError),
     ({"shape": [2, 3, 4, 0]}, nxe.InvalidArgumentError),
     ({"shape": [-2, 12]}, nxe.InvalidArgumentError),
     ({"shape": [0, -1], "allowzero": 1}, nxe.InvalidArgumentError),
     ({"shape": [1, 1, 1, 1, 1, 1, 24]}, nxe.UnsupportedError),
     ({}, nxe.InvalidArgumentError)],
    ids=["two-inferred", "not-divisible", "count", "zero-past-rank", "below-minus-one",
         "allowzero-with-inferred", "rank-7", "shape-missing"],
)
def test_reshape_rejects_bad_shapes(attrs, error):
    with pytest.raises(error, match="Reshape"):
        compile_op("Reshape", [((2, 3, 4), "f32")], **attrs)


# ---- Transpose ----------------------------------------------------------------------------

@pytest.mark.parametrize(
    "shape, perm",
    [((2, 3, 5, 7), None), ((2, 3, 5, 7), [0, 2, 1, 3]), ((2, 3, 5, 7), [3, 0, 2, 1]),
     ((7, 13), [1, 0]), ((1, 13, 1), [2, 0, 1]), ((2, 3, 1, 2, 3, 2), [5, 3, 1, 0, 4, 2]),
     ((4, 5), [-1, 0]), ((9,), None)],
    ids=str,
)
def test_transpose_matches_numpy(shape, perm, rng):
    x = sample(rng, shape)
    attrs = {} if perm is None else {"perm": perm}
    (got,) = run_op("Transpose", [x], **attrs)
    assert_same(got, np.transpose(x, perm))


@pytest.mark.parametrize("dtype", DTYPES)
def test_transpose_moves_every_dtype(dtype, rng):
    x = sample(rng, (3, 4, 5), dtype)
    (got,) = run_op("Transpose", [x], dtypes=[dtype], perm=[2, 0, 1])
    assert_same(got, np.transpose(x, (2, 0, 1)))


def test_transpose_result_is_identical_for_one_and_two_threads(rng):
    x = sample(rng, (64, 129, 33))
    one = run_op("Transpose", [x], threads=1, perm=[2, 0, 1])[0]
    two = run_op("Transpose", [x], threads=2, perm=[2, 0, 1])[0]
    assert np.array_equal(one, two)


@pytest.mark.parametrize("perm", [[0, 1], [0, 0, 1], [0, 1, 3]], ids=str)
def test_transpose_rejects_a_perm_that_is_not_a_permutation(perm):
    with pytest.raises(nxe.InvalidArgumentError, match="Transpose"):
        compile_op("Transpose", [((2, 3, 4), "f32")], perm=perm)


# ---- Concat -------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "shapes, axis",
    [([(2, 3, 4), (2, 5, 4), (2, 1, 4)], 1), ([(2, 3, 4), (2, 5, 4)], -2),
     ([(1, 7), (6, 7), (3, 7)], 0), ([(7, 1), (7, 13)], 1), ([(2, 0, 4), (2, 3, 4)], 1),
     ([(13,)], 0)],
    ids=str,
)
def test_concat_matches_numpy(shapes, axis, rng):
    arrays = [sample(rng, s) for s in shapes]
    (got,) = run_op("Concat", arrays, axis=axis)
    assert_same(got, np.concatenate(arrays, axis=axis))


@pytest.mark.parametrize("dtype", DTYPES)
def test_concat_moves_every_dtype(dtype, rng):
    arrays = [sample(rng, (3, n), dtype) for n in (2, 5, 1)]
    (got,) = run_op("Concat", arrays, dtypes=[dtype] * 3, axis=-1)
    assert_same(got, np.concatenate(arrays, axis=-1))


@pytest.mark.parametrize(
    "specs, attrs, error",
    [([((2, 3), "f32"), ((2, 3), "i32")], {"axis": 0}, nxe.DtypeMismatchError),
     ([((2, 3), "f32"), ((3, 3), "f32")], {"axis": 1}, nxe.ShapeMismatchError),
     ([((2, 3), "f32"), ((2, 3, 1), "f32")], {"axis": 0}, nxe.ShapeMismatchError),
     ([((2, 3), "f32"), ((2, 3), "f32")], {"axis": 2}, nxe.InvalidArgumentError),
     ([((2, 3), "f32"), ((2, 3), "f32")], {}, nxe.InvalidArgumentError)],
    ids=["dtype", "shape", "rank", "axis-range", "axis-missing"],
)
def test_concat_rejects_mismatched_inputs(specs, attrs, error):
    with pytest.raises(error, match="Concat"):
        compile_op("Concat", specs, **attrs)


# ---- Split --------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "shape, axis, split, num_outputs",
    [((6, 7), 0, None, 3), ((6, 7), 1, [2, 4, 1], 3), ((6, 7), -1, None, 3),
     ((6, 7), 1, [0, 7], 2), ((13,), 0, None, 1), ((2, 9, 1), 1, None, 2)],
    ids=str,
)
def test_split_matches_numpy(shape, axis, split, num_outputs, rng):
    x = sample(rng, shape)
    dim = shape[axis]
    if split is None:  # equal parts of ceil(dim / n), the last one smaller
        part = -(-dim // num_outputs)
        sizes = [part] * (num_outputs - 1) + [dim - part * (num_outputs - 1)]
    else:
        sizes = split
    attrs = {"axis": axis} if split is None else {"axis": axis, "split": split}
    got = run_op("Split", [x], num_outputs=num_outputs, **attrs)
    refs = np.split(x, np.cumsum(sizes)[:-1], axis=axis)
    assert len(got) == num_outputs
    for g_part, ref in zip(got, refs):
        assert_same(g_part, ref)


@pytest.mark.parametrize("dtype", DTYPES)
def test_split_moves_every_dtype(dtype, rng):
    x = sample(rng, (4, 6), dtype)
    got = run_op("Split", [x], dtypes=[dtype], num_outputs=2, axis=1, split=[1, 5])
    for g_part, ref in zip(got, np.split(x, [1], axis=1)):
        assert_same(g_part, ref)


@pytest.mark.parametrize(
    "shape, num_outputs, attrs",
    [((4, 6), 2, {"axis": 1, "split": [2, 3]}), ((4, 6), 3, {"axis": 1, "split": [2, 4]}),
     ((4, 6), 2, {"axis": 1, "split": [7, -1]}), ((4, 6), 3, {"axis": 0}),
     ((4, 6), 2, {"axis": 2})],
    ids=["sum", "count", "negative", "uneven-empty-part", "axis-range"],
)
def test_split_rejects_bad_sizes(shape, num_outputs, attrs):
    with pytest.raises(nxe.InvalidArgumentError, match="Split"):
        compile_op("Split", [(shape, "f32")], num_outputs=num_outputs, **attrs)


# ---- Slice --------------------------------------------------------------------------------

SLICES = [
    # starts, ends, axes, steps
    ([1], [5], None, None),
    ([2, -3], [100, -1], [0, 1], None),
    ([-1], [INT64_MIN], [1], [-1]),
    ([6, 0], [0, 13], [0, 2], [-2, 3]),
    ([0, 0, 0], [INT64_MAX] * 3, None, [3, 4, 2]),
    ([1], [4], [-1], None),
    ([5], [2], [1], None),
    ([0], [INT64_MAX], [0], [INT64_MAX]),
    ([-1], [INT64_MIN], [2], [INT64_MIN]),
    ([INT64_MAX], [INT64_MIN], [0], [-3]),
    ([-100, 3], [100, -100], [2, 1], [1, -1]),
]


@pytest.mark.parametrize("starts, ends, axes, steps", SLICES, ids=str)
def test_slice_matches_numpy_slicing(starts, ends, axes, steps, rng):
    x = sample(rng, (7, 13, 5))
    index = [slice(None)] * x.ndim
    for i, axis in enumerate(axes if axes is not None else range(len(starts))):
        index[axis] = slice(starts[i], ends[i], steps[i] if steps else 1)
    attrs = {"starts": starts, "ends": ends}
    if axes is not None:
        attrs["axes"] = axes
    if steps is not None:
        attrs["steps"] = steps
    (got,) = run_op("Slice", [x], **attrs)
    assert_same(got, x[tuple(index)])


def test_slice_backwards_from_before_the_start_clamps_to_element_zero(rng):
    # ONNX clamps a negative-step start to [0, n-1]; numpy would give an empty slice here.
    x = sample(rng, (5, 4))
    (got,) = run_op("Slice", [x], starts=[-10], ends=[INT64_MIN], axes=[0], steps=[-1])
    assert_same(got, x[[0]])


@pytest.mark.parametrize("dtype", DTYPES)
def test_slice_moves_every_dtype(dtype, rng):
    x = sample(rng, (6, 7), dtype)
    (got,) = run_op("Slice", [x], dtypes=[dtype], starts=[5, 1], ends=[0, 7], steps=[-2, 2])
    assert_same(got, x[5:0:-2, 1:7:2])


def test_slice_result_is_identical_for_one_and_two_threads(rng):
    x = sample(rng, (40, 300, 30))
    attrs = {"starts": [-1, 3], "ends": [INT64_MIN, 290], "axes": [0, 1], "steps": [-1, 2]}
    one = run_op("Slice", [x], threads=1, **attrs)[0]
    two = run_op("Slice", [x], threads=2, **attrs)[0]
    assert np.array_equal(one, two)


@pytest.mark.parametrize(
    "attrs",
    [{"starts": [0], "ends": [1], "steps": [0]},
     {"starts": [0, 0], "ends": [1]},
     {"starts": [0, 0], "ends": [1, 1], "axes": [1, 1]},
     {"starts": [0], "ends": [1], "axes": [3]},
     {"starts": [0], "ends": [1], "axes": [0], "steps": [1, 1]},
     {"ends": [1]}],
    ids=["zero-step", "lengths", "repeated-axis", "axis-range", "steps-length", "starts-missing"],
)
def test_slice_rejects_bad_attributes(attrs):
    with pytest.raises(nxe.InvalidArgumentError, match="Slice"):
        compile_op("Slice", [((4, 5), "f32")], **attrs)


# ---- Squeeze, Unsqueeze -------------------------------------------------------------------

@pytest.mark.parametrize(
    "shape, axes",
    [((1, 3, 1, 5), None), ((1, 3, 1, 5), [0]), ((1, 3, 1, 5), [-2, 0]), ((3, 5), None),
     ((1, 1), None)],
    ids=str,
)
def test_squeeze_matches_numpy(shape, axes, rng):
    x = sample(rng, shape)
    attrs = {} if axes is None else {"axes": axes}
    (got,) = run_op("Squeeze", [x], **attrs)
    assert_same(got, np.squeeze(x, axis=None if axes is None else tuple(axes)))


@pytest.mark.parametrize(
    "axes, error",
    [([1], nxe.ShapeMismatchError), ([0, 0], nxe.InvalidArgumentError),
     ([4], nxe.InvalidArgumentError)],
    ids=["size-not-one", "repeated", "range"],
)
def test_squeeze_rejects_bad_axes(axes, error):
    with pytest.raises(error, match="Squeeze"):
        compile_op("Squeeze", [((1, 3, 1, 5), "f32")], axes=axes)


@pytest.mark.parametrize(
    "shape, axes",
    [((3, 5), [0]), ((3, 5), [0, 3]), ((3, 5), [-1]), ((3, 5), [1, -1]), ((7,), [0, 1, 2])],
    ids=str,
)
def test_unsqueeze_matches_numpy(shape, axes, rng):
    x = sample(rng, shape)
    (got,) = run_op("Unsqueeze", [x], axes=axes)
    assert_same(got, np.expand_dims(x, axis=tuple(axes)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_squeeze_and_unsqueeze_move_every_dtype(dtype, rng):
    x = sample(rng, (1, 4, 3), dtype)
    assert_same(run_op("Squeeze", [x], dtypes=[dtype])[0], np.squeeze(x))
    assert_same(run_op("Unsqueeze", [x], dtypes=[dtype], axes=[2])[0], np.expand_dims(x, 2))


@pytest.mark.parametrize(
    "shape, attrs, error",
    [((3, 5), {}, nxe.InvalidArgumentError),
     ((3, 5), {"axes": []}, nxe.InvalidArgumentError),
     ((3, 5), {"axes": [0, 0]}, nxe.InvalidArgumentError),
     ((3, 5), {"axes": [3]}, nxe.InvalidArgumentError),
     ((2, 2, 2, 2, 2), {"axes": [0, 1]}, nxe.UnsupportedError)],
    ids=["missing", "empty", "repeated", "range", "rank-7"],
)
def test_unsqueeze_rejects_bad_axes(shape, attrs, error):
    with pytest.raises(error, match="Unsqueeze"):
        compile_op("Unsqueeze", [(shape, "f32")], **attrs)


@pytest.mark.parametrize("op_type", ["Gather", "Reshape", "Transpose", "Concat", "Split", "Slice",
                                     "Squeeze", "Unsqueeze"])
def test_unknown_attribute_is_rejected(op_type):
    g = nxe.Graph()
    x = g.input("x", (4,), "f32")
    with pytest.raises(nxe.NotFoundError, match=f"{op_type}.*stride"):
        g.op(op_type, [x], num_outputs=1, stride=1)
