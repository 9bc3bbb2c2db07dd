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
