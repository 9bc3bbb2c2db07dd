"""Resize against a separable numpy reference written here from the ONNX Resize definition:
every mode, coordinate transformation, nearest rounding, exclude_outside and bad input."""

from __future__ import annotations

import math

import numpy as np
import nxe
import pytest


def source_coordinates(mode, out_size, in_size, scale, roi):
    """Input coordinate of each output position (None where tf_crop_and_resize extrapolates)."""
    x = np.arange(out_size, dtype=np.float64)
    out_real = scale * in_size
    if mode == "align_corners":
        return np.zeros(out_size) if out_real == 1 else x * (in_size - 1) / (out_real - 1)
    if mode == "asymmetric":
        return x / scale
    if mode == "pytorch_half_pixel":
        return np.full(out_size, -0.5) if out_real == 1 else (x + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        offset = in_size / 2 * (1 - out_size / out_real)
        return offset + (x + 0.5) / scale - 0.5
    if mode == "tf_crop_and_resize":
        start, end = roi
        if out_real == 1:
            c = np.full(out_size, (end - start) * (in_size - 1) / 2)
        else:
            c = x * (end - start) * (in_size - 1) / (out_real - 1)
        return c + start * (in_size - 1)
    return (x + 0.5) / scale - 0.5


def weights_1d(coords, in_size, mode, nearest_mode, a, exclude_outside):
    """Dense [out, in] interpolation matrix."""
    w = np.zeros((len(coords), in_size))
    for o, c in enumerate(coords):
        base = math.floor(c)
        r = c - base
        if mode == "nearest":
            if r == 0 or nearest_mode == "floor":
                pick = base
            elif nearest_mode == "ceil":
                pick = base + 1
            elif nearest_mode == "round_prefer_ceil":
                pick = base + (r >= 0.5)
            else:
                pick = base + (r > 0.5)
            taps = [(pick, 1.0)]
        elif mode == "linear":
            taps = [(base, 1 - r), (base + 1, r)]
        else:
            def keys(t):
                t = abs(t)
                if t <= 1:
                    return (a + 2) * t ** 3 - (a + 3) * t ** 2 + 1
                return a * t ** 3 - 5 * a * t ** 2 + 8 * a * t - 4 * a if t < 2 else 0.0
            taps = [(base + i, keys(r - i)) for i in (-1, 0, 1, 2)]
        if exclude_outside and mode != "nearest":
            taps = [(i, v if 0 <= i < in_size else 0.0) for i, v in taps]
            total = sum(v for _, v in taps)
            taps = [(i, v / total) for i, v in taps]
        for i, v in taps:
            w[o, min(max(i, 0), in_size - 1)] += v
    return w


def numpy_resize(x, sizes, scales, mode="nearest", coord="half_pixel",
                 nearest_mode="round_prefer_floor", a=-0.75, exclude_outside=0,
                 extrapolation=0.0, roi=None):
    y = x.astype(np.float64)
    outside = np.zeros(tuple(sizes), dtype=bool)
    for d in range(x.ndim):
        axis_roi = (0.0, 1.0) if roi is None else (roi[d], roi[x.ndim + d])
        if sizes[d] == x.shape[d] and scales[d] == 1 and axis_roi == (0.0, 1.0):
            continue
        coords = source_coordinates(coord, sizes[d], x.shape[d], scales[d], axis_roi)
        if coord == "tf_crop_and_resize":
            bad = (coords < 0) | (coords > x.shape[d] - 1)
            shape = [1] * x.ndim
            shape[d] = sizes[d]
            outside |= bad.reshape(shape)
        w = weights_1d(coords, x.shape[d], mode, nearest_mode, a, exclude_outside)
        y = np.moveaxis(np.tensordot(w, np.moveaxis(y, d, 0), axes=1), 0, d)
    y = np.where(outside, extrapolation, y)
    return y.astype(x.dtype)


def run_resize(x, threads=1, **attrs):
    g = nxe.Graph()
    y = g.Resize(g.input("x", x.shape, x.dtype), **attrs)
    g.mark_output(y, name="y")
    return g.compile(threads=threads).run({"x": x})["y"]


COORDS = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
          "half_pixel_symmetric"]


@pytest.mark.parametrize("coord", COORDS)
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("scales", [[1, 1, 2.0, 3.0], [1, 1, 0.6, 0.5], [1, 1, 1.7, 0.8]],
                         ids=str)
def test_resize_with_scales_matches_reference(scales, mode, coord, rng):
    x = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
    sizes = [math.floor(s * n) for s, n in zip(scales, x.shape)]
    got = run_resize(x, scales=scales, mode=mode, coordinate_transformation_mode=coord)
    ref = numpy_resize(x, sizes, scales, mode, coord)
    assert got.shape == ref.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("coord", COORDS)
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("sizes", [[1, 2, 9, 4], [1, 2, 1, 1], [1, 2, 3, 13]], ids=str)
def test_resize_with_sizes_uses_the_size_ratio_as_scale(sizes, mode, coord, rng):
    x = rng.standard_normal((1, 2, 4, 6)).astype(np.float32)
    scales = [s / n for s, n in zip(sizes, x.shape)]
    got = run_resize(x, sizes=sizes, mode=mode, coordinate_transformation_mode=coord)
    np.testing.assert_allclose(got, numpy_resize(x, sizes, scales, mode, coord), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("nearest_mode", ["round_prefer_floor", "round_prefer_ceil", "floor",
                                          "ceil"])
@pytest.mark.parametrize("coord", ["asymmetric", "half_pixel", "align_corners"])
def test_resize_nearest_modes_pick_the_reference_neighbour(nearest_mode, coord, rng):
    x = rng.standard_normal((3, 8)).astype(np.float32)
    scales = [1.0, 2.5]
    got = run_resize(x, scales=scales, mode="nearest", nearest_mode=nearest_mode,
                     coordinate_transformation_mode=coord)
    ref = numpy_resize(x, [3, 20], scales, "nearest", coord, nearest_mode)
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_resize_exclude_outside_renormalizes_inner_taps(mode, rng):
    x = rng.standard_normal((1, 1, 6, 5)).astype(np.float32)
    scales = [1, 1, 0.7, 1.6]
    sizes = [1, 1, 4, 8]
    got = run_resize(x, scales=scales, mode=mode, exclude_outside=1, cubic_coeff_a=-0.5)
    ref = numpy_resize(x, sizes, scales, mode, a=-0.5, exclude_outside=1)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_resize_tf_crop_and_resize_extrapolates_outside_the_roi(mode, rng):
    x = rng.standard_normal((1, 1, 5, 6)).astype(np.float32)
    roi = [0, 0, 0.2, -0.3, 1, 1, 1.1, 0.8]
    sizes = [1, 1, 4, 5]
    scales = [s / n for s, n in zip(sizes, x.shape)]
    got = run_resize(x, sizes=sizes, roi=roi, mode=mode, extrapolation_value=9.5,
                     coordinate_transformation_mode="tf_crop_and_resize")
    ref = numpy_resize(x, sizes, scales, mode, "tf_crop_and_resize", extrapolation=9.5, roi=roi)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    assert (got == np.float32(9.5)).any()


@pytest.mark.parametrize("dtype", [np.uint8, np.int64, np.float16, np.bool_])
def test_resize_nearest_moves_other_dtypes(dtype, rng):
    x = (rng.integers(0, 100, size=(2, 3, 4)) % (2 if dtype is np.bool_ else 100)).astype(dtype)
    got = run_resize(x, scales=[1.0, 2.0, 1.5], mode="nearest")
    ref = numpy_resize(x.astype(np.float32), [2, 6, 6], [1.0, 2.0, 1.5]).astype(dtype)
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, ref)


def test_resize_result_is_identical_for_one_and_four_threads(rng):
    x = rng.standard_normal((2, 3, 40, 50)).astype(np.float32)
    one = run_resize(x, threads=1, scales=[1, 1, 1.5, 2.3], mode="cubic")
    four = run_resize(x, threads=4, scales=[1, 1, 1.5, 2.3], mode="cubic")
    assert np.array_equal(one, four)


def compile_resize(shape, dtype="f32", **attrs):
    g = nxe.Graph()
    g.mark_output(g.Resize(g.input("x", shape, dtype), **attrs), name="y")
    return g.compile(threads=1)


@pytest.mark.parametrize(
    "attrs, error",
    [({}, nxe.InvalidArgumentError),
     ({"scales": [1.0, 2.0]}, nxe.InvalidArgumentError),
     ({"scales": [1.0, 1.0, 0.0]}, nxe.InvalidArgumentError),
     ({"sizes": [1, 2, 3], "mode": "bilinear"}, nxe.InvalidArgumentError),
     ({"sizes": [1, 2, 3], "coordinate_transformation_mode": "corners"},
      nxe.InvalidArgumentError),
     ({"sizes": [1, 2, 3], "nearest_mode": "round"}, nxe.InvalidArgumentError),
     ({"sizes": [1, 2, 3], "roi": [0.0, 1.0]}, nxe.InvalidArgumentError)],
    ids=str,
)
def test_resize_rejects_bad_attributes(attrs, error):
    with pytest.raises(error, match="Resize"):
        compile_resize((1, 2, 3), **attrs)


def test_resize_linear_rejects_integer_input():
    with pytest.raises(nxe.UnsupportedError, match="Resize.*linear.*u8"):
        compile_resize((1, 2, 3), "u8", scales=[1.0, 1.0, 2.0], mode="linear")


# ---- GridSample -------------------------------------------------------------------------

def grid_reflect(v, lo, hi):
    span = hi - lo
    if lo <= v <= hi:
        return v
    if span <= 0:
        return lo
    distance = lo - v if v < lo else v - hi
    turns = math.floor(distance / span)
    rest = distance - turns * span
    if v < lo:
        return hi - rest if turns % 2 else lo + rest
    return lo + rest if turns % 2 else hi - rest


def grid_axis_taps(g, size, mode, padding, align_corners):
    """(index or None for a padding zero, weight) pairs of one axis, per ONNX GridSample."""
    lo, hi = (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)
    v = (g + 1) / 2 * (size - 1) if align_corners else ((g + 1) * size - 1) / 2
    if mode == "nearest":
        v = float(np.rint(v))
    if v < lo or v > hi:
        if padding == "border":
            v = min(max(v, 0.0), size - 1.0)
        elif padding == "reflection":
            v = grid_reflect(v, lo, hi)

    def index(i):
        if padding == "zeros":
            return i if 0 <= i < size else None
        if padding == "border":
            return min(max(i, 0), size - 1)
        return min(max(int(grid_reflect(float(i), lo, hi)), 0), size - 1)

    if mode == "nearest":
        return [(index(int(v)), 1.0)]
    base = math.floor(v)
    t = v - base
    if mode == "linear":
        return [(index(base), 1 - t), (index(base + 1), t)]
    a = -0.75
    weights = [((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
               ((a + 2) * t - (a + 3)) * t * t + 1,
               ((a + 2) * (1 - t) - (a + 3)) * (1 - t) ** 2 + 1,
               ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a]
    return [(index(base - 1 + k), weights[k]) for k in range(4)]


def numpy_grid_sample(x, grid, mode, padding, align_corners):
    n_batch, channels, *spatial = x.shape
    rank = len(spatial)
    out_spatial = grid.shape[1:-1]
    y = np.zeros((n_batch, channels, *out_spatial), dtype=np.float64)
    for n in range(n_batch):
        for point in np.ndindex(*out_spatial):
            coords = grid[(n, *point)][::-1]  # the grid lists the last axis first
            axes = [grid_axis_taps(float(coords[d]), spatial[d], mode, padding, align_corners)
                    for d in range(rank)]
            total = np.zeros(channels)
            for combo in np.ndindex(*[len(taps) for taps in axes]):
                picked = [axes[d][k] for d, k in enumerate(combo)]
                if any(i is None for i, _ in picked):
                    continue
                weight = math.prod(w for _, w in picked)
                total += weight * x[(n, slice(None), *[i for i, _ in picked])]
            y[(n, slice(None), *point)] = total
    return y


def run_grid_sample(x, grid, threads=1, **attrs):
    g = nxe.Graph()
    y = g.GridSample(g.input("x", x.shape, "f32"), g.input("grid", grid.shape, "f32"), **attrs)
    g.mark_output(y, name="y")
    return g.compile(threads=threads).run({"x": x, "grid": grid})["y"]


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [0, 1])
def test_grid_sample_2d_matches_the_onnx_definition(mode, padding_mode, align_corners, rng):
    x = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
    # Coordinates well past [-1, 1] exercise every padding rule, several reflections deep.
    grid = rng.uniform(-3.2, 3.2, size=(2, 4, 6, 2)).astype(np.float32)
    got = run_grid_sample(x, grid, mode=mode, padding_mode=padding_mode,
                          align_corners=align_corners)
    ref = numpy_grid_sample(x, grid, mode, padding_mode, align_corners)
    assert got.dtype == np.float32 and got.shape == (2, 3, 4, 6)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_3d_and_1d_match_the_onnx_definition(mode, padding_mode, rng):
    x = rng.standard_normal((1, 2, 3, 4, 5)).astype(np.float32)
    grid = rng.uniform(-1.6, 1.6, size=(1, 2, 3, 2, 3)).astype(np.float32)
    got = run_grid_sample(x, grid, mode=mode, padding_mode=padding_mode, align_corners=1)
    np.testing.assert_allclose(got, numpy_grid_sample(x, grid, mode, padding_mode, 1),
                               rtol=1e-4, atol=1e-5)
    x1 = rng.standard_normal((2, 3, 6)).astype(np.float32)
    grid1 = rng.uniform(-1.6, 1.6, size=(2, 5, 1)).astype(np.float32)
    got1 = run_grid_sample(x1, grid1, mode=mode, padding_mode=padding_mode)
    np.testing.assert_allclose(got1, numpy_grid_sample(x1, grid1, mode, padding_mode, 0),
                               rtol=1e-4, atol=1e-5)


def test_grid_sample_defaults_to_linear_zeros_without_aligned_corners(rng):
    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    grid = rng.uniform(-1.3, 1.3, size=(1, 3, 3, 2)).astype(np.float32)
    np.testing.assert_allclose(run_grid_sample(x, grid),
                               numpy_grid_sample(x, grid, "linear", "zeros", 0),
                               rtol=1e-4, atol=1e-5)


def test_grid_sample_nan_and_infinite_coordinates(rng):
    x = rng.standard_normal((1, 2, 3, 3)).astype(np.float32)
    grid = np.array([[[[np.nan, 0.0], [np.inf, 0.0], [-np.inf, 0.5]]]], dtype=np.float32)
    zeros = run_grid_sample(x, grid, padding_mode="zeros")
    assert np.isnan(zeros[0, :, 0, 0]).all()
    assert (zeros[0, :, 0, 1:] == 0).all()
    border = run_grid_sample(x, grid, padding_mode="border", align_corners=1)
    np.testing.assert_allclose(border[0, :, 0, 1], x[0, :, 1, 2], rtol=1e-6)


def test_grid_sample_is_identical_for_one_and_four_threads(rng):
    x = rng.standard_normal((2, 3, 20, 30)).astype(np.float32)
    grid = rng.uniform(-1.2, 1.2, size=(2, 40, 50, 2)).astype(np.float32)
    one = run_grid_sample(x, grid, threads=1, mode="cubic", padding_mode="reflection")
    four = run_grid_sample(x, grid, threads=4, mode="cubic", padding_mode="reflection")
    assert np.array_equal(one, four)


@pytest.mark.parametrize(
    "x_shape, grid_shape, attrs, error",
    [((1, 2, 3, 3), (1, 2, 2, 2), {"mode": "bilinear"}, nxe.InvalidArgumentError),
     ((1, 2, 3, 3), (1, 2, 2, 2), {"padding_mode": "wrap"}, nxe.InvalidArgumentError),
     ((1, 2, 3, 3), (1, 2, 2, 2), {"align_corners": 2}, nxe.InvalidArgumentError),
     ((1, 2, 3, 3), (1, 2, 2, 3), {}, nxe.ShapeMismatchError),
     ((1, 2, 3, 3), (2, 2, 2, 2), {}, nxe.ShapeMismatchError),
     ((1, 2, 3, 3), (1, 2, 2), {}, nxe.ShapeMismatchError),
     ((1, 2), (1, 2), {}, nxe.ShapeMismatchError),
     ((1, 2, 0, 3), (1, 2, 2, 2), {}, nxe.ShapeMismatchError)],
    ids=str,
)
def test_grid_sample_rejects_bad_attributes_and_shapes(x_shape, grid_shape, attrs, error):
    g = nxe.Graph()
    y = g.GridSample(g.input("x", x_shape, "f32"), g.input("grid", grid_shape, "f32"), **attrs)
    g.mark_output(y)
    with pytest.raises(error, match="'GridSample'"):
        g.compile()


def test_grid_sample_rejects_non_f32_input():
    g = nxe.Graph()
    y = g.GridSample(g.input("x", (1, 1, 2, 2), "i32"), g.input("grid", (1, 1, 1, 2), "f32"))
    g.mark_output(y)
    with pytest.raises(nxe.DtypeMismatchError, match="'GridSample'"):
        g.compile()
