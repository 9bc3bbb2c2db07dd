"""Data-movement op family: Gather, Reshape, Transpose, Concat, Split, Slice, Squeeze, Unsqueeze,
Pad, Tile, Expand, SpaceToDepth, GatherElements, ScatterElements, GatherND, ScatterND, OneHot,
Trilu and BitCast against numpy references computed here. Moves are exact, so every comparison
is exact."""

from __future__ import annotations

import numpy as np
import nxe
import pytest
from op_testing import build_op, compile_op, dtype_code, numpy_dtype, run_op

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min
DTYPES = nxe.DTYPES


def sample(rng, shape, dtype="f32"):
    """Random values of an nxe dtype as the numpy array nxe exchanges (bf16: raw uint16 bits)."""
    if dtype == "f32":
        return rng.standard_normal(shape).astype(np.float32)
    if dtype == "f16":
        return rng.standard_normal(shape).astype(np.float16)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype == "f64":
        return rng.standard_normal(shape) * 1e200
    integers = numpy_dtype(dtype)
    info = np.iinfo(integers)
    return rng.integers(info.min, info.max, size=shape, dtype=integers, endpoint=True)


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
     ((9,), None)],
    ids=str,
)
def test_transpose_matches_numpy(shape, perm, rng):
    x = sample(rng, shape)
    attrs = {} if perm is None else {"perm": perm}
    (got,) = run_op("Transpose", [x], **attrs)
    assert_same(got, np.transpose(x, perm))


@pytest.mark.parametrize("perm", [[-1, 0], [1, -2]], ids=str)
def test_transpose_rejects_negative_perm_entries_like_onnxruntime(perm):
    with pytest.raises(nxe.InvalidArgumentError, match=r"Transpose.*'perm'\[\d\] is -\d"):
        compile_op("Transpose", [((4, 5), "f32")], perm=perm)


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
    with pytest.raises(nxe.NotFoundError, match=f"{op_type}.*stride"):
        build_op(op_type, [((4,), "f32")], num_outputs=1, stride=1)


# ---- Pad and Tile -------------------------------------------------------------------------

def numpy_pad(x, pads, mode, value):
    """np.pad with ONNX pads (all begins, then all ends; negative crops)."""
    r = x.ndim
    before, after = pads[:r], pads[r:]
    grown = [(max(b, 0), max(a, 0)) for b, a in zip(before, after)]
    kwargs = {"constant_values": value} if mode == "constant" else {}
    y = np.pad(x, grown, mode=mode, **kwargs)
    crop = tuple(slice(-min(b, 0), y.shape[d] + min(a, 0))
                 for d, (b, a) in enumerate(zip(before, after)))
    return y[crop]


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
@pytest.mark.parametrize(
    "shape, pads",
    [((3, 4), [1, 2, 3, 0]), ((2, 3, 5), [0, 1, 4, 1, 0, 6]), ((5,), [7, 9]),
     ((4, 6), [-1, 2, 0, -3]), ((1, 3, 1, 4), [0, 0, 2, 1, 1, 2, 0, 3])],
    ids=str,
)
def test_pad_matches_numpy_in_every_mode(shape, pads, mode, rng):
    x = sample(rng, shape)
    rank = len(shape)
    if mode == "reflect" and any(max(pads[d], pads[d + rank]) >= shape[d] for d in range(rank)):
        # onnxruntime's rule: reflection mirrors once, so each pad is shorter than its axis
        # (numpy would reflect again).
        with pytest.raises(nxe.InvalidArgumentError, match="reflect pads must be smaller"):
            run_op("Pad", [x], pads=pads, mode=mode, value=2.5)
        return
    (got,) = run_op("Pad", [x], pads=pads, mode=mode, value=2.5)
    assert_same(got, numpy_pad(x, pads, mode, np.float32(2.5)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["constant", "reflect"])
def test_pad_moves_every_dtype(dtype, mode, rng):
    x = sample(rng, (3, 4), dtype)
    (got,) = run_op("Pad", [x], dtypes=[dtype], pads=[1, 2, 2, 1], mode=mode, value=1.0)
    fill = np.array(1.0).astype(x.dtype) if dtype != "bf16" else np.uint16(0x3F80)
    assert_same(got, numpy_pad(x, [1, 2, 2, 1], mode, fill))


def test_pad_constant_value_converts_to_integers_exactly(rng):
    x = sample(rng, (2, 3), "i64")
    (got,) = run_op("Pad", [x], pads=[0, 1, 0, 1], value=-123456789.0)
    assert_same(got, numpy_pad(x, [0, 1, 0, 1], "constant", np.int64(-123456789)))


def test_pad_result_is_identical_for_one_and_two_threads(rng):
    x = sample(rng, (40, 50, 30))
    one = run_op("Pad", [x], threads=1, pads=[2, 3, 4, 5, 6, 7], mode="reflect")[0]
    two = run_op("Pad", [x], threads=2, pads=[2, 3, 4, 5, 6, 7], mode="reflect")[0]
    assert np.array_equal(one, two)


@pytest.mark.parametrize(
    "attrs, error",
    [({"pads": [1, 1]}, nxe.InvalidArgumentError),
     ({"pads": [0, 0, 0, 0], "mode": "mirror"}, nxe.InvalidArgumentError),
     ({"pads": [-4, 0, 0, 0]}, nxe.InvalidArgumentError)],
    ids=str,
)
def test_pad_rejects_bad_attributes(attrs, error):
    with pytest.raises(error, match="Pad"):
        compile_op("Pad", [((3, 4), "f32")], **attrs)


def test_pad_rejects_repeating_an_empty_axis():
    with pytest.raises(nxe.InvalidArgumentError, match="Pad.*empty"):
        compile_op("Pad", [((0, 4), "f32")], pads=[1, 0, 1, 0], mode="edge")


@pytest.mark.parametrize(
    "shape, repeats", [((3, 4), [2, 3]), ((2, 1, 5), [1, 4, 2]), ((7,), [3]), ((2, 3), [0, 2])],
    ids=str,
)
def test_tile_matches_numpy(shape, repeats, rng):
    x = sample(rng, shape)
    (got,) = run_op("Tile", [x], repeats=repeats)
    assert_same(got, np.tile(x, repeats))


@pytest.mark.parametrize("dtype", DTYPES)
def test_tile_moves_every_dtype(dtype, rng):
    x = sample(rng, (2, 3), dtype)
    (got,) = run_op("Tile", [x], dtypes=[dtype], repeats=[3, 2])
    assert_same(got, np.tile(x, [3, 2]))


def test_tile_rejects_wrong_repeat_count_and_negative_repeats():
    with pytest.raises(nxe.InvalidArgumentError, match="Tile.*repeats"):
        compile_op("Tile", [((3, 4), "f32")], repeats=[2])
    with pytest.raises(nxe.InvalidArgumentError, match="Tile.*repeats"):
        compile_op("Tile", [((3, 4), "f32")], repeats=[2, -1])


# ---- Expand and SpaceToDepth --------------------------------------------------------------

@pytest.mark.parametrize(
    "shape, target",
    [((3, 1), [3, 4]), ((1,), [2, 3, 5]), ((2, 1, 4), [2, 5, 1]), ((4,), [1]), ((0, 1), [0, 4])],
    ids=str,
)
def test_expand_broadcasts_both_ways_like_numpy(shape, target, rng):
    x = sample(rng, shape)
    out_shape = np.broadcast_shapes(shape, tuple(target))
    (got,) = run_op("Expand", [x], shape=target)
    assert_same(got, np.broadcast_to(x, out_shape).copy())


@pytest.mark.parametrize("dtype", DTYPES)
def test_expand_moves_every_dtype(dtype, rng):
    x = sample(rng, (1, 3), dtype)
    (got,) = run_op("Expand", [x], dtypes=[dtype], shape=[4, 3])
    assert_same(got, np.broadcast_to(x, (4, 3)).copy())


def test_expand_rejects_shapes_that_do_not_broadcast():
    with pytest.raises(nxe.ShapeMismatchError, match="Expand"):
        compile_op("Expand", [((3, 2), "f32")], shape=[4, 2, 5])


def numpy_space_to_depth(x, b, mode):
    n, c, h, w = x.shape
    order = (0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4)
    y = x.reshape(n, c, h // b, b, w // b, b).transpose(order)
    return y.reshape(n, c * b * b, h // b, w // b)


@pytest.mark.parametrize("shape, block", [((1, 3, 4, 6), 2), ((2, 2, 9, 3), 3), ((1, 1, 2, 2), 1)],
                         ids=str)
@pytest.mark.parametrize("dtype", ["f32", "u8", "i64"])
@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_space_to_depth_matches_numpy(shape, block, dtype, mode, rng):
    x = sample(rng, shape, dtype)
    (got,) = run_op("SpaceToDepth", [x], blocksize=block, mode=mode)
    assert_same(got, numpy_space_to_depth(x, block, mode))


def test_space_to_depth_rejects_a_block_that_does_not_divide():
    with pytest.raises(nxe.InvalidArgumentError, match="SpaceToDepth.*blocksize"):
        compile_op("SpaceToDepth", [((1, 3, 4, 6), "f32")], blocksize=4)
    with pytest.raises(nxe.ShapeMismatchError, match="SpaceToDepth.*rank"):
        compile_op("SpaceToDepth", [((3, 4, 6), "f32")], blocksize=2)
    with pytest.raises(nxe.InvalidArgumentError, match="SpaceToDepth.*mode"):
        compile_op("SpaceToDepth", [((1, 3, 4, 6), "f32")], blocksize=2, mode="RCD")


# ---- GatherElements and ScatterElements ---------------------------------------------------

@pytest.mark.parametrize("index_dtype", [np.int32, np.int64], ids=["i32", "i64"])
@pytest.mark.parametrize(
    "data_shape, index_shape, axis",
    [((4, 5), (3, 5), 0), ((4, 5), (4, 7), 1), ((3, 4, 5), (2, 3, 5), -1), ((6,), (9,), 0)],
    ids=str,
)
def test_gather_elements_matches_take_along_axis(data_shape, index_shape, axis, index_dtype, rng):
    data = sample(rng, data_shape)
    dim = data_shape[axis]
    indices = rng.integers(-dim, dim, size=index_shape).astype(index_dtype)
    (got,) = run_op("GatherElements", [data, indices], axis=axis)
    crop = tuple(slice(0, n) for n in index_shape)
    crop = crop[:axis % len(data_shape)] + (slice(None),) + crop[axis % len(data_shape) + 1:]
    ref = np.take_along_axis(data[crop], np.where(indices < 0, indices + dim, indices), axis=axis)
    assert_same(got, ref)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_elements_moves_every_dtype(dtype, rng):
    data = sample(rng, (3, 4), dtype)
    indices = rng.integers(0, 3, size=(3, 4))
    (got,) = run_op("GatherElements", [data, indices], dtypes=[dtype, "i64"], axis=0)
    assert_same(got, np.take_along_axis(data, indices, axis=0))


def test_gather_elements_index_out_of_range_fails_the_run(rng):
    g = nxe.Graph()
    y = g.GatherElements(g.input("data", (3, 4), "f32"), g.input("indices", (3, 4), "i64"),
                         axis=1)
    g.mark_output(y, name="y")
    exe = g.compile(threads=1)
    indices = np.zeros((3, 4), np.int64)
    indices[1, 2] = 4
    with pytest.raises(nxe.RunError, match=r"GatherElements.*\b6\b.*4.*\[-4, 3\]"):
        exe.run({"data": sample(rng, (3, 4)), "indices": indices})


def test_gather_elements_rejects_mismatched_ranks():
    with pytest.raises(nxe.ShapeMismatchError, match="GatherElements.*rank"):
        compile_op("GatherElements", [((3, 4), "f32"), ((3,), "i64")])


def numpy_scatter_elements(data, indices, updates, axis, reduction):
    out = data.copy()
    axis %= data.ndim
    combine = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}
    for idx in np.ndindex(*indices.shape):
        target = list(idx)
        target[axis] = indices[idx] % data.shape[axis]
        target = tuple(target)
        out[target] = updates[idx] if reduction == "none" else \
            combine[reduction](out[target], updates[idx])
    return out


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("dtype", ["f32", "i32", "i64", "u8", "f16"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_elements_applies_updates_in_index_order(axis, dtype, reduction, rng):
    data = sample(rng, (4, 5), dtype) if dtype in ("f32", "f16") else \
        rng.integers(-9, 9, size=(4, 5)).astype({"i32": np.int32, "i64": np.int64,
                                                 "u8": np.uint8}[dtype])
    dim = data.shape[axis]
    indices = rng.integers(-dim, dim, size=(3, 4)).astype(np.int64)
    updates = sample(rng, (3, 4), dtype) if dtype in ("f32", "f16") else \
        rng.integers(-9, 9, size=(3, 4)).astype(data.dtype)
    (got,) = run_op("ScatterElements", [data, indices, updates], axis=axis, reduction=reduction)
    ref = numpy_scatter_elements(data, indices, updates, axis, reduction)
    assert got.shape == ref.shape and got.dtype == ref.dtype
    if dtype == "f16":
        np.testing.assert_allclose(got.astype(np.float32), ref.astype(np.float32), rtol=2e-3)
    else:
        np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter_elements_replaces_in_every_dtype(dtype, rng):
    data = sample(rng, (3, 4), dtype)
    updates = sample(rng, (2, 4), dtype)
    indices = np.array([[2, 0, 1, 2], [0, 1, 2, 1]], np.int32)
    (got,) = run_op("ScatterElements", [data, indices, updates], dtypes=[dtype, "i32", dtype])
    assert_same(got, numpy_scatter_elements(data, indices, updates, 0, "none"))


def test_scatter_elements_rejects_reductions_on_bool_and_unknown_names():
    specs = [((3, 4), "bool"), ((3, 4), "i64"), ((3, 4), "bool")]
    with pytest.raises(nxe.UnsupportedError, match="ScatterElements.*bool"):
        compile_op("ScatterElements", specs, reduction="add")
    with pytest.raises(nxe.InvalidArgumentError, match="ScatterElements.*reduction"):
        compile_op("ScatterElements", [((3, 4), "f32"), ((3, 4), "i64"), ((3, 4), "f32")],
                   reduction="sum")


@pytest.mark.parametrize("op_type", ["ScatterElements", "ScatterND"])
@pytest.mark.parametrize("dtype", ["f64", "u16", "u32", "u64"])
def test_scatter_reductions_are_not_implemented_for_the_api_0_2_dtypes(op_type, dtype):
    index_shape = (3, 4) if op_type == "ScatterElements" else (3, 1)
    update_shape = (3, 4)
    specs = [((3, 4), dtype), (index_shape, "i64"), (update_shape, dtype)]
    with pytest.raises(nxe.UnsupportedError, match=f"{op_type}.*reduction 'max'.*{dtype}"):
        compile_op(op_type, specs, reduction="max")


def test_scatter_elements_rejects_updates_of_another_shape():
    with pytest.raises(nxe.ShapeMismatchError, match="ScatterElements.*updates"):
        compile_op("ScatterElements", [((3, 4), "f32"), ((3, 4), "i64"), ((3, 3), "f32")])


def test_scatter_elements_index_out_of_range_fails_the_run(rng):
    g = nxe.Graph()
    y = g.ScatterElements(g.input("data", (3, 4), "f32"), g.input("indices", (1, 4), "i64"),
                          g.input("updates", (1, 4), "f32"))
    g.mark_output(y, name="y")
    exe = g.compile(threads=1)
    with pytest.raises(nxe.RunError, match=r"ScatterElements.*-4"):
        exe.run({"data": sample(rng, (3, 4)), "indices": np.array([[0, 1, -4, 2]]),
                 "updates": sample(rng, (1, 4))})


# ---- GatherND and ScatterND ---------------------------------------------------------------

def numpy_gather_nd(data, indices, batch_dims):
    batch_shape = indices.shape[:batch_dims]
    out = []
    flat_data = data.reshape((-1,) + data.shape[batch_dims:])
    flat_idx = indices.reshape((-1,) + indices.shape[batch_dims:])
    for b in range(flat_data.shape[0]):
        d, idx = flat_data[b], flat_idx[b]
        picked = [d[tuple(t)] for t in idx.reshape(-1, idx.shape[-1])]
        out.append(np.array(picked).reshape(idx.shape[:-1] + d.shape[idx.shape[-1]:]))
    return np.array(out).reshape(batch_shape + out[0].shape)


@pytest.mark.parametrize(
    "data_shape, index_shape, batch_dims",
    [((4, 5), (3, 2), 0), ((4, 5, 6), (2, 3, 1), 0), ((4, 5, 6), (7, 3), 0),
     ((3, 4, 5), (3, 2, 1), 1), ((2, 3, 4, 5), (2, 3, 6, 1), 2), ((3, 4, 5), (3, 2), 1)],
    ids=str,
)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64], ids=["i32", "i64"])
def test_gather_nd_matches_numpy_with_batch_dims(data_shape, index_shape, batch_dims,
                                                  index_dtype, rng):
    data = sample(rng, data_shape)
    k = index_shape[-1]
    dims = np.array(data_shape[batch_dims:batch_dims + k])
    indices = (rng.integers(0, 1 << 30, size=index_shape) % dims -
               rng.integers(0, 2, size=index_shape) * dims).astype(index_dtype)
    (got,) = run_op("GatherND", [data, indices], batch_dims=batch_dims)
    assert_same(got, numpy_gather_nd(data, indices, batch_dims))


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_nd_moves_every_dtype(dtype, rng):
    data = sample(rng, (3, 4, 2), dtype)
    indices = np.array([[2, 1], [0, 3], [1, -1]], np.int64)
    (got,) = run_op("GatherND", [data, indices], dtypes=[dtype, "i64"])
    assert_same(got, numpy_gather_nd(data, indices, 0))


def test_gather_nd_rejects_bad_tuples_and_batch_dims():
    with pytest.raises(nxe.ShapeMismatchError, match="GatherND.*tuples"):
        compile_op("GatherND", [((3, 4), "f32"), ((2, 3), "i64")])
    with pytest.raises(nxe.InvalidArgumentError, match="GatherND.*batch_dims"):
        compile_op("GatherND", [((3, 4), "f32"), ((3, 1), "i64")], batch_dims=2)
    with pytest.raises(nxe.ShapeMismatchError, match="GatherND.*batch axis"):
        compile_op("GatherND", [((3, 4), "f32"), ((2, 1), "i64")], batch_dims=1)


def test_gather_nd_index_out_of_range_fails_the_run(rng):
    g = nxe.Graph()
    y = g.GatherND(g.input("data", (3, 4), "f32"), g.input("indices", (2, 2), "i64"))
    g.mark_output(y, name="y")
    exe = g.compile(threads=1)
    with pytest.raises(nxe.RunError, match=r"GatherND.*\[-4, 3\].*component 1"):
        exe.run({"data": sample(rng, (3, 4)), "indices": np.array([[0, 1], [2, 4]])})


def numpy_scatter_nd(data, indices, updates, reduction):
    out = data.copy()
    combine = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}
    k = indices.shape[-1]
    flat_idx = indices.reshape(-1, k)
    flat_upd = updates.reshape((-1,) + data.shape[k:])
    for t, u in zip(flat_idx, flat_upd):
        key = tuple(t)
        out[key] = u if reduction == "none" else combine[reduction](out[key], u)
    return out


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize(
    "data_shape, index_shape",
    [((4, 5), (3, 2)), ((4, 5, 6), (2, 3, 1)), ((8,), (5, 1)), ((3, 4, 5), (2, 2))],
    ids=str,
)
def test_scatter_nd_matches_numpy_with_duplicates_in_order(data_shape, index_shape, reduction,
                                                           rng):
    data = sample(rng, data_shape)
    k = index_shape[-1]
    indices = (rng.integers(0, 1 << 30, size=index_shape) %
               np.array(data_shape[:k])).astype(np.int64)
    updates = sample(rng, index_shape[:-1] + data_shape[k:])
    (got,) = run_op("ScatterND", [data, indices, updates], reduction=reduction)
    assert_same(got, numpy_scatter_nd(data, indices, updates, reduction))


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter_nd_replaces_in_every_dtype(dtype, rng):
    data = sample(rng, (3, 4), dtype)
    indices = np.array([[2], [0]], np.int32)
    updates = sample(rng, (2, 4), dtype)
    (got,) = run_op("ScatterND", [data, indices, updates], dtypes=[dtype, "i32", dtype])
    assert_same(got, numpy_scatter_nd(data, indices, updates, "none"))


def test_scatter_nd_rejects_updates_of_the_wrong_shape():
    with pytest.raises(nxe.ShapeMismatchError, match="ScatterND.*updates"):
        compile_op("ScatterND", [((3, 4), "f32"), ((2, 1), "i64"), ((2, 3), "f32")])


# ---- OneHot and Trilu ---------------------------------------------------------------------

@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("dtype", ["f32", "i64", "u8", "bool"])
def test_one_hot_matches_numpy_with_negative_and_out_of_range_indices(axis, dtype, rng):
    depth = 5
    indices = rng.integers(-7, 7, size=(3, 4)).astype(np.int64)
    (got,) = run_op("OneHot", [indices], depth=depth, axis=axis, on_value=3.0, off_value=0.0,
                    dtype=dtype)
    numpy_dtype = {"f32": np.float32, "i64": np.int64, "u8": np.uint8, "bool": np.bool_}[dtype]
    normalized = np.where(indices < 0, indices + depth, indices)
    hot = normalized[..., None] == np.arange(depth)
    ref = np.moveaxis(np.where(hot, 3, 0).astype(numpy_dtype), -1, axis % 3)
    assert_same(got, ref)


def test_one_hot_rejects_bad_depth_and_dtype():
    with pytest.raises(nxe.InvalidArgumentError, match="OneHot.*depth"):
        compile_op("OneHot", [((3,), "i64")], depth=0)
    with pytest.raises(nxe.InvalidArgumentError, match="OneHot.*dtype"):
        compile_op("OneHot", [((3,), "i64")], depth=3, dtype="f128")


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [0, 1, -2, 7, -9])
@pytest.mark.parametrize("shape", [(4, 6), (2, 5, 3), (1, 1)], ids=str)
def test_trilu_matches_numpy_triu_and_tril(shape, k, upper, rng):
    x = sample(rng, shape)
    (got,) = run_op("Trilu", [x], upper=upper, k=k)
    assert_same(got, np.triu(x, k) if upper else np.tril(x, k))


@pytest.mark.parametrize("dtype", DTYPES)
def test_trilu_moves_every_dtype(dtype, rng):
    x = sample(rng, (3, 4), dtype)
    (got,) = run_op("Trilu", [x], dtypes=[dtype], upper=1, k=1)
    assert_same(got, np.triu(x, 1))


def test_trilu_rejects_rank_one():
    with pytest.raises(nxe.ShapeMismatchError, match="Trilu.*rank"):
        compile_op("Trilu", [((4,), "f32")])


@pytest.mark.parametrize("op_type, attrs", [("OneHot", {"depth": 7}), ("Trilu", {}),
                                            ("Tile", {"repeats": [3, 2]}),
                                            ("Pad", {"pads": [1, 1, 1, 1]})])
def test_new_ops_give_identical_results_for_one_and_three_threads(op_type, attrs, rng):
    x = rng.integers(0, 7, size=(300, 70)).astype(np.int64) if op_type == "OneHot" else \
        sample(rng, (300, 70))
    one = run_op(op_type, [x], threads=1, **attrs)[0]
    three = run_op(op_type, [x], threads=3, **attrs)[0]
    assert np.array_equal(one, three)


# ---- Einsum through the ONNX importer (mapped onto ReduceSum, Transpose, Reshape, MatMul) ----

@pytest.mark.parametrize(
    "equation, shapes",
    [("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ij,jk->ik", [(3, 4), (4, 6)]),
     ("ij->ji", [(3, 5)]), ("bhid,bhjd->bhij", [(2, 3, 4, 5), (2, 3, 6, 5)]),
     ("ij->i", [(4, 7)]), ("i,i", [(6,), (6,)]), ("ij,kj->ikj", [(2, 3), (4, 3)]),
     ("abc,cd", [(2, 3, 4), (4, 5)]), ("ijk->", [(2, 3, 4)])],
    ids=str,
)
def test_einsum_converter_matches_numpy_einsum(equation, shapes, rng):
    import nxe.onnx as nxe_onnx
    import onnx
    from onnx import TensorProto, helper
    names = [f"x{i}" for i in range(len(shapes))]
    ref = np.einsum(equation, *[np.zeros(s, np.float32) for s in shapes])
    graph = helper.make_graph(
        [helper.make_node("Einsum", names, ["y"], equation=equation)], "einsum",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in zip(names, shapes)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ref.shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    arrays = [sample(rng, s) for s in shapes]
    got = nxe_onnx.load(model).run(*arrays)["y"]
    np.testing.assert_allclose(got, np.einsum(equation, *arrays), rtol=1e-5, atol=1e-5)


def test_einsum_converter_reports_diagonals_as_unsupported():
    import nxe.onnx as nxe_onnx
    import onnx
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Einsum", ["x"], ["y"], equation="ii->i")], "einsum",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, (3, 3))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (3,))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    with pytest.raises(nxe.UnsupportedError, match="Einsum.*diagonal"):
        nxe_onnx.load(model).run(sample(np.random.default_rng(0), (3, 3)))


# ---- ReverseSequence ----------------------------------------------------------------------

def reverse_sequence_reference(x, lens, batch_axis, time_axis):
    y = x.copy()
    for b, length in enumerate(lens):
        index = [slice(None)] * x.ndim
        index[batch_axis] = b
        index[time_axis] = slice(0, length)
        y[tuple(index)] = np.flip(x[tuple(index)], axis=0)
    return y


@pytest.mark.parametrize("dtype", ["f32", "bf16", "i8", "i16", "i64", "bool"])
@pytest.mark.parametrize("shape, batch_axis, time_axis",
                         [((5, 4), 1, 0), ((4, 5), 0, 1), ((6, 3, 2, 3), 1, 0),
                          ((3, 7, 5), 0, 1)], ids=str)
def test_reverse_sequence_matches_numpy(dtype, shape, batch_axis, time_axis, rng):
    x = sample(rng, shape, dtype)
    time = shape[time_axis]
    lens = rng.integers(0, time, size=shape[batch_axis], endpoint=True).astype(np.int64)
    lens[0] = time
    (got,) = run_op("ReverseSequence", [x, lens], dtypes=[dtype, "i64"],
                    batch_axis=batch_axis, time_axis=time_axis)
    assert_same(got, reverse_sequence_reference(x, lens, batch_axis, time_axis))


def test_reverse_sequence_defaults_to_time_major(rng):
    x = sample(rng, (4, 3, 2))
    lens = np.array([4, 2, 1], dtype=np.int64)
    (got,) = run_op("ReverseSequence", [x, lens])
    assert_same(got, reverse_sequence_reference(x, lens, 1, 0))


def test_reverse_sequence_is_identical_for_one_and_four_threads(rng):
    x = sample(rng, (300, 64, 40))
    lens = rng.integers(0, 300, size=64, endpoint=True).astype(np.int64)
    (one,) = run_op("ReverseSequence", [x, lens], threads=1)
    (four,) = run_op("ReverseSequence", [x, lens], threads=4)
    assert_same(one, four)


@pytest.mark.parametrize("bad", [-1, 6])
def test_reverse_sequence_length_out_of_range_fails_the_run_naming_it(bad, rng):
    x = sample(rng, (5, 3))
    lens = np.array([2, bad, 1], dtype=np.int64)
    with pytest.raises(nxe.RunError, match=rf"'ReverseSequence'.*element 1 is {bad}.*\[0, 5\]"):
        run_op("ReverseSequence", [x, lens])


@pytest.mark.parametrize(
    "specs, attrs, error",
    [([((5, 3), "f32"), ((3,), "i64")], {"batch_axis": 0, "time_axis": 0},
      nxe.InvalidArgumentError),
     ([((5, 3, 2), "f32"), ((3,), "i64")], {"batch_axis": 2, "time_axis": 0},
      nxe.InvalidArgumentError),
     ([((5, 3), "f32"), ((5,), "i64")], {}, nxe.ShapeMismatchError),
     ([((5, 3), "f32"), ((3, 1), "i64")], {}, nxe.ShapeMismatchError),
     ([((5,), "f32"), ((5,), "i64")], {}, nxe.ShapeMismatchError),
     ([((5, 3), "f32"), ((3,), "i32")], {}, nxe.DtypeMismatchError)],
    ids=str,
)
def test_reverse_sequence_rejects_bad_input(specs, attrs, error):
    with pytest.raises(error, match="'ReverseSequence'"):
        compile_op("ReverseSequence", specs, **attrs)


# ---- BitCast ----------------------------------------------------------------------------------



BIT_CAST_PAIRS = [(a, b) for a in DTYPES for b in DTYPES
                  if numpy_dtype(a).itemsize == numpy_dtype(b).itemsize
                  and (b != "bool" or a == "bool")]


@pytest.mark.parametrize("source, target", BIT_CAST_PAIRS, ids=str)
def test_bit_cast_matches_numpy_view_for_every_same_size_pair(source, target, rng):
    x = sample(rng, (3, 5), source)
    (got,) = run_op("BitCast", [x], dtypes=[source], to=dtype_code(target))
    assert_same(got, x.view(numpy_dtype(target)))


@pytest.mark.parametrize("shape", [(), (1,), (7,), (2, 3, 4), (0, 3)], ids=str)
def test_bit_cast_keeps_odd_shapes(shape, rng):
    x = sample(rng, shape, "f32")
    (got,) = run_op("BitCast", [x], to=dtype_code("i32"))
    assert_same(got, x.view(np.int32))


@pytest.mark.parametrize("source, target", [("f32", "i64"), ("i8", "f16"), ("f64", "u32")],
                         ids=str)
def test_bit_cast_rejects_different_element_sizes(source, target):
    with pytest.raises(nxe.UnsupportedError, match=rf"BitCast.*{source}.*{target}"):
        compile_op("BitCast", [((4,), source)], to=dtype_code(target))


def test_bit_cast_rejects_bytes_to_bool():
    with pytest.raises(nxe.UnsupportedError, match="BitCast.*u8.*bool"):
        compile_op("BitCast", [((4,), "u8")], to=dtype_code("bool"))


@pytest.mark.parametrize("to", [0, 99, -1], ids=str)
def test_bit_cast_rejects_a_to_that_is_not_a_dtype(to):
    with pytest.raises(nxe.InvalidArgumentError, match=rf"BitCast.*'to'.*{to}"):
        compile_op("BitCast", [((4,), "f32")], to=to)


def _bit_cast_model(in_type, to_type, shape):
    from onnx import helper
    graph = helper.make_graph(
        [helper.make_node("BitCast", ["x"], ["y"], to=to_type)], "bit_cast",
        [helper.make_tensor_value_info("x", in_type, shape)],
        [helper.make_tensor_value_info("y", to_type, shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 26)])


@pytest.mark.parametrize("source, target", [("f32", "i32"), ("u16", "i16"), ("f64", "u64"),
                                            ("bool", "u8")], ids=str)
def test_bit_cast_converter_matches_numpy_view(source, target, rng):
    import nxe.onnx as nxe_onnx
    from onnx import helper
    x = sample(rng, (2, 5), source)
    model = _bit_cast_model(helper.np_dtype_to_tensor_dtype(numpy_dtype(source)),
                            helper.np_dtype_to_tensor_dtype(numpy_dtype(target)), (2, 5))
    got = nxe_onnx.load(model).run(x)["y"]
    assert_same(got, x.view(numpy_dtype(target)))


def test_bit_cast_converter_reports_a_size_change_as_unsupported(rng):
    import nxe.onnx as nxe_onnx
    from onnx import TensorProto
    model = _bit_cast_model(TensorProto.FLOAT, TensorProto.INT64, (4,))
    with pytest.raises(nxe.UnsupportedError, match="BitCast.*f32.*i64"):
        nxe_onnx.load(model).run(sample(rng, (4,)))
