"""Cast op family: Cast between all thirteen dtypes (bit-exact f16/bf16 rounding, saturating
float-to-int, wrapping int-to-int), QuantizeLinear and DequantizeLinear, each against a
reference computed here with numpy or exact Python integers."""

from __future__ import annotations

import math

import numpy as np
import nxe
import pytest
from nxe._binding import lib
from op_testing import bf16_bits, bf16_values, build_op

DTYPES = nxe.DTYPES
# The header's enum nxe_dtype, by the names the library gives its values.
CODES = {name: getattr(lib, f"NXE_DTYPE_{name.upper()}") for name in DTYPES}
FLOATS = {"f32", "f16", "bf16", "f64"}
INTS = {"i8": np.int8, "u8": np.uint8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
        "u16": np.uint16, "u32": np.uint32, "u64": np.uint64}
NUMPY = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16, "bool": np.bool_,
         "f64": np.float64, **INTS}


# ---- references ----------------------------------------------------------------------------

def f32_bits(x):
    return np.asarray(x, dtype=np.float32).view(np.uint32)


def round_int_to_bits(value, significant_bits):
    """An integer rounded to `significant_bits` significant bits, nearest even (exact)."""
    magnitude = abs(value)
    shift = magnitude.bit_length() - significant_bits
    if shift <= 0:
        return value
    quotient, rest = divmod(magnitude, 1 << shift)
    half = 1 << (shift - 1)
    if rest > half or (rest == half and quotient & 1):
        quotient += 1
    return math.copysign(quotient << shift, value)


def round_float_to_bits(v, significant_bits, min_exponent):
    """A finite float rounded once to `significant_bits` significant bits, nearest even, with
    quanta no finer than 2^min_exponent (subnormals); scaling by powers of two is exact."""
    if v == 0 or math.isinf(v) or math.isnan(v):
        return v
    quantum = max(math.frexp(v)[1] - significant_bits, min_exponent)
    return math.ldexp(round(math.ldexp(v, -quantum)), quantum)


def exact_values(x, src):
    """Source elements as exact Python numbers (float for float dtypes, int otherwise)."""
    if src == "bf16":
        return bf16_values(x).astype(np.float64).ravel().tolist()
    if src in FLOATS:
        return x.astype(np.float64).ravel().tolist()
    return [int(v) for v in x.ravel().tolist()]


def to_int(v, dtype):
    info = np.iinfo(dtype)
    lo, hi = int(info.min), int(info.max)
    if isinstance(v, float):  # truncate toward zero, saturate, NaN -> 0
        if math.isnan(v):
            return 0
        if math.isinf(v):
            return hi if v > 0 else lo
        return min(max(math.trunc(v), lo), hi)
    return (v - lo) % (hi - lo + 1) + lo  # keep the low bits


def reference_cast(x, src, dst):
    """Cast as documented in the Cast schema, returned as the numpy array nxe gives back."""
    if src == dst:
        return x.copy()
    if dst == "bool":
        return np.array([v != 0 for v in exact_values(x, src)], dtype=np.bool_).reshape(x.shape)
    if dst in INTS:
        values = [to_int(v, INTS[dst]) for v in exact_values(x, src)]
        return np.array(values, dtype=INTS[dst]).reshape(x.shape)
    if dst == "f64":  # exact from everything but 64-bit integers, which Python rounds once
        return np.array([float(v) for v in exact_values(x, src)],
                        dtype=np.float64).reshape(x.shape)
    if src == "f64":
        values = x.ravel().tolist()
        with np.errstate(over="ignore"):
            if dst == "f32":
                return x.astype(np.float32)
            if dst == "f16":
                return np.array([round_float_to_bits(v, 11, -24) for v in values]
                                ).astype(np.float16).reshape(x.shape)
            rounded = [round_float_to_bits(v, 8, -133) for v in values]
            return bf16_bits(np.array(rounded).astype(np.float32)).reshape(x.shape)
    if src in FLOATS:  # f16 and bf16 are exact in f32, so this rounds once
        as_f32 = bf16_values(x) if src == "bf16" else x.astype(np.float32)
        if dst == "f32":
            return as_f32
        if dst == "f16":
            with np.errstate(over="ignore"):
                return as_f32.astype(np.float16)
        return bf16_bits(as_f32)
    ints = exact_values(x, src)
    if dst == "f32":
        return np.array([round_int_to_bits(v, 24) for v in ints],
                        dtype=np.float64).astype(np.float32).reshape(x.shape)
    if dst == "f16":
        rounded = [round_int_to_bits(v, 11) for v in ints]
        with np.errstate(over="ignore"):
            return np.array(rounded, dtype=np.float64).astype(np.float16).reshape(x.shape)
    rounded = [round_int_to_bits(v, 8) for v in ints]
    return bf16_bits(np.array(rounded, dtype=np.float32)).reshape(x.shape)


def assert_same_values(got, ref, dtype):
    """Bit equality; NaNs only need to be NaN (payloads are not specified)."""
    assert got.shape == ref.shape and got.dtype == ref.dtype
    if dtype in FLOATS:
        as_float = bf16_values if dtype == "bf16" else (lambda a: a)
        got_nan, ref_nan = np.isnan(as_float(got)), np.isnan(as_float(ref))
        np.testing.assert_array_equal(got_nan, ref_nan)
        got, ref = got[~got_nan], ref[~ref_nan]
        if dtype != "bf16":
            bits = {"f32": np.uint32, "f16": np.uint16, "f64": np.uint64}[dtype]
            got, ref = got.view(bits), ref.view(bits)
    np.testing.assert_array_equal(got, ref)


def sample(rng, dtype, n=64):
    """Random values plus the edges that matter for conversions out of `dtype`."""
    if dtype in FLOATS:
        edges = [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 127.9, -128.9,
                 255.9, 256.0, -1.0, 32767.6, -32769.0, 65504.0, 65519.0, 65520.0, 2.0**31,
                 -(2.0**31) - 256, 2.0**63, -(2.0**63), 1e30, -1e30, 6e-8, 3e-8, 1e-40]
        values = np.concatenate([edges, rng.standard_normal(n) * 10.0 ** rng.integers(-8, 12, n)])
        if dtype == "f64":  # values a rounding through f32 would get wrong, and the f64 range
            close = [1.0 + 2.0**-11 + 2.0**-40, 1.0 + 2.0**-8 + 2.0**-40, 3e38, 3.4e38, 1e300,
                     -1e300, 2.0**64, 2.0**64 - 2048, 1e-300, 5e-324, 65519.99, 65520.0,
                     2.0**-25 + 2.0**-60, 1.0 + 2.0**-24 + 2.0**-50]
            return np.concatenate([values, close, rng.standard_normal(n) * 1e50])
        f32 = values.astype(np.float32)
        if dtype == "f32":
            return f32
        if dtype == "f16":
            with np.errstate(over="ignore"):
                return f32.astype(np.float16)
        return bf16_bits(f32)
    if dtype == "bool":
        return rng.random(n) < 0.5
    info = np.iinfo(INTS[dtype])
    edges = [int(info.min), int(info.max), 0, 1, -1 if info.min < 0 else 2, 255, 256, 65519,
             65520, 16777217, 33554435, 2**53 + 1, 2**63 + 2**40 + 1, 2**64 - 1025]
    edges = np.array([e for e in edges if info.min <= e <= info.max], dtype=INTS[dtype])
    return np.concatenate([edges, rng.integers(info.min, info.max, n, INTS[dtype], endpoint=True)])


def run_cast(x, src, to, threads=1):
    g = nxe.Graph()
    y = g.Cast(g.input("x", x.shape, src), to=CODES[to])
    g.mark_output(y, name="y")
    return g.compile(threads=threads).run({"x": x})["y"]


def compile_graph(g):
    return g.compile(threads=1)


# ---- Cast -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dst", DTYPES)
@pytest.mark.parametrize("src", DTYPES)
def test_cast_matches_reference_for_every_dtype_pair(src, dst, rng):
    x = sample(rng, src)
    got = run_cast(x, src, dst)
    assert_same_values(got, reference_cast(x, src, dst), dst)


def test_cast_f32_to_f16_matches_numpy_bit_for_bit(rng):
    # Random bit patterns cover every exponent; f16 midpoints +-1 ulp cover each tie.
    random_bits = rng.integers(0, 2**32, 100_000, dtype=np.uint64).astype(np.uint32)
    halves = np.arange(0x7C00, dtype=np.uint16).view(np.float16).astype(np.float32)
    midpoints = f32_bits(halves).astype(np.int64) + (1 << 12)
    ties = np.concatenate([midpoints - 1, midpoints, midpoints + 1]).astype(np.uint32)
    x = np.concatenate([random_bits, ties]).view(np.float32)
    x = np.concatenate([x, -x])
    with np.errstate(over="ignore"):
        ref = x.astype(np.float16)
    assert_same_values(run_cast(x, "f32", "f16"), ref, "f16")


def test_cast_f16_to_f32_is_exact_for_all_65536_values():
    x = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    assert_same_values(run_cast(x, "f16", "f32"), x.astype(np.float32), "f32")


def test_cast_f32_to_bf16_rounds_half_to_even_and_keeps_nan(rng):
    random_bits = rng.integers(0, 2**32, 100_000, dtype=np.uint64).astype(np.uint32)
    ties = (rng.integers(0, 2**16, 1000, dtype=np.uint64) << 16 | 0x8000).astype(np.uint32)
    x = np.concatenate([random_bits, ties]).view(np.float32)
    assert_same_values(run_cast(x, "f32", "bf16"), bf16_bits(x), "bf16")


@pytest.mark.parametrize("src", ["i32", "i64"])
def test_cast_integer_to_bf16_rounds_once_from_the_exact_value(src, rng):
    # 2^24 + 2^16 + 1 style values round differently when they go through f32 first.
    info = np.iinfo(INTS[src])
    tricky = [(1 << 24) + (1 << 16) + 1, (1 << 30) + (1 << 22) + 1, -((1 << 24) + (1 << 16) + 1)]
    x = np.concatenate([np.array(tricky, dtype=INTS[src]),
                        rng.integers(info.min, info.max, 2000, INTS[src], endpoint=True)])
    assert_same_values(run_cast(x, src, "bf16"), reference_cast(x, src, "bf16"), "bf16")


def test_cast_result_is_identical_for_one_and_two_threads(rng):
    x = (rng.standard_normal((7, 200, 101)) * 1e4).astype(np.float32)
    for dst in ("f16", "bf16", "i8"):
        one = run_cast(x, "f32", dst, threads=1)
        assert np.array_equal(one, run_cast(x, "f32", dst, threads=2))


@pytest.mark.parametrize("to", [0, 14, -1, 1000])
def test_cast_rejects_a_target_that_is_not_a_dtype(to):
    g = nxe.Graph()
    g.mark_output(g.Cast(g.input("x", (3,), "f32"), to=to))
    with pytest.raises(nxe.InvalidArgumentError, match="Cast.*'to'"):
        compile_graph(g)


def test_cast_requires_the_to_attribute():
    g = nxe.Graph()
    g.mark_output(g.op("Cast", [g.input("x", (3,), "f32")])[0])
    with pytest.raises(nxe.InvalidArgumentError, match="Cast.*'to'"):
        compile_graph(g)


@pytest.mark.parametrize("op_type", ["Cast", "QuantizeLinear", "DequantizeLinear"])
def test_unknown_attribute_is_rejected(op_type):
    with pytest.raises(nxe.NotFoundError, match=f"{op_type}.*axis"):
        build_op(op_type, [((4,), "f32")], axis=1)


# ---- QuantizeLinear -------------------------------------------------------------------------

QMIN = {"u8": 0, "i8": -128}
QMAX = {"u8": 255, "i8": 127}


def quantize_reference(x, scale, zero_point, dtype):
    """saturate(round_half_even(x / scale) + zero_point), NaN -> zero point, in f32."""
    with np.errstate(all="ignore"):
        q = np.rint(x / scale) + np.float32(zero_point)
    q = np.where(np.isnan(q), np.float32(zero_point), q)
    return np.clip(q, QMIN[dtype], QMAX[dtype]).astype(NUMPY[dtype])


def run_quantize(x, dtype, set_quant, threads=1):
    g = nxe.Graph()
    xt = g.input("x", x.shape, "f32")
    q = g.tensor(name="q", dtype=dtype, kind="output")
    set_quant(q)
    g.op("QuantizeLinear", [xt], outputs=[q])
    return g.compile(threads=threads).run({"x": x})["q"]


def quantize_input(rng, shape, spread):
    x = (rng.standard_normal(shape) * spread).astype(np.float32)
    flat = x.reshape(-1)
    edges = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 0.0], dtype=np.float32)
    flat[: edges.size] = edges
    return x


@pytest.mark.parametrize("dtype, zero_point", [("u8", 128), ("u8", 0), ("i8", -3), ("i8", 127)])
def test_quantize_asymmetric_matches_reference(dtype, zero_point, rng):
    scale = np.float32(0.05)
    x = quantize_input(rng, (7, 13), 5.0)
    got = run_quantize(x, dtype, lambda q: q.set_quant_asymmetric(float(scale), zero_point))
    np.testing.assert_array_equal(got, quantize_reference(x, scale, zero_point, dtype))


@pytest.mark.parametrize("dtype", ["u8", "i8"])
def test_quantize_rounds_ties_to_even(dtype):
    x = np.arange(-20.5, 21.0, 0.5, dtype=np.float32)
    got = run_quantize(x, dtype, lambda q: q.set_quant_asymmetric(1.0, 10))
    np.testing.assert_array_equal(got, quantize_reference(x, np.float32(1.0), 10, dtype))


@pytest.mark.parametrize("dtype", ["u8", "i8"])
@pytest.mark.parametrize("shape, axis", [((3, 4, 5), 1), ((6, 7), 0), ((2, 3, 13), 2)], ids=str)
def test_quantize_per_channel_uses_one_scale_per_index_of_the_axis(shape, axis, dtype, rng):
    scales = (rng.random(shape[axis]) * 0.1 + 0.01).astype(np.float32)
    x = quantize_input(rng, shape, 3.0)
    got = run_quantize(x, dtype, lambda q: q.set_quant_per_channel(axis, scales.tolist()))
    view = [1] * len(shape)
    view[axis] = shape[axis]
    np.testing.assert_array_equal(got, quantize_reference(x, scales.reshape(view), 0, dtype))


@pytest.mark.parametrize("fractional_length", [4, 0, -2])
def test_quantize_dynamic_fixed_point_scales_by_a_power_of_two(fractional_length, rng):
    x = quantize_input(rng, (5, 9), 4.0)
    got = run_quantize(x, "i8", lambda q: q.set_quant_dynamic_fixed_point(fractional_length))
    scale = np.float32(2.0**-fractional_length)
    np.testing.assert_array_equal(got, quantize_reference(x, scale, 0, "i8"))


def test_quantize_result_is_identical_for_one_and_two_threads(rng):
    x = quantize_input(rng, (16, 64, 70), 2.0)
    scales = (rng.random(64) * 0.1 + 0.01).tolist()
    one = run_quantize(x, "i8", lambda q: q.set_quant_per_channel(1, scales), threads=1)
    two = run_quantize(x, "i8", lambda q: q.set_quant_per_channel(1, scales), threads=2)
    assert np.array_equal(one, two)


def quantize_graph(dtype, set_quant=None, x_dtype="f32"):
    g = nxe.Graph()
    xt = g.input("x", (4, 3), x_dtype)
    q = g.tensor(name="q", dtype=dtype, kind="output")
    if set_quant:
        set_quant(q)
    g.op("QuantizeLinear", [xt], outputs=[q])
    return g


@pytest.mark.parametrize(
    "dtype, set_quant, x_dtype, error, message",
    [(None, None, "f32", nxe.InvalidArgumentError, "u8 or i8"),
     ("i32", lambda q: q.set_quant_asymmetric(0.1, 0), "f32", nxe.DtypeMismatchError, "u8 or i8"),
     ("u8", None, "f32", nxe.InvalidArgumentError, "quantization"),
     ("i8", lambda q: q.set_quant_per_channel(1, [0.1, 0.2]), "f32", nxe.ShapeMismatchError,
      "scales"),
     ("u8", lambda q: q.set_quant_asymmetric(0.1, 0), "i32", nxe.DtypeMismatchError, "")],
    ids=["undeclared-dtype", "i32-output", "no-quant", "channel-count", "int-input"],
)
def test_quantize_rejects_bad_declarations(dtype, set_quant, x_dtype, error, message):
    g = quantize_graph(dtype, set_quant, x_dtype)
    with pytest.raises(error, match=f"QuantizeLinear.*{message}"):
        compile_graph(g)


# ---- DequantizeLinear -----------------------------------------------------------------------

def run_dequantize(q, dtype, set_quant, threads=1):
    g = nxe.Graph()
    xt = g.input("x", q.shape, dtype)
    set_quant(xt)
    y = g.DequantizeLinear(xt)
    g.mark_output(y, name="y")
    return g.compile(threads=threads).run({"x": q})["y"]


def random_ints(rng, shape, dtype):
    info = np.iinfo(INTS[dtype])
    return rng.integers(info.min, info.max, size=shape, dtype=INTS[dtype], endpoint=True)


@pytest.mark.parametrize("dtype, zero_point", [("u8", 128), ("i8", -5), ("i32", 1000), ("i32", 0)])
def test_dequantize_asymmetric_matches_reference(dtype, zero_point, rng):
    scale = np.float32(0.037)
    q = random_ints(rng, (7, 13), dtype)
    got = run_dequantize(q, dtype, lambda t: t.set_quant_asymmetric(float(scale), zero_point))
    ref = (q.astype(np.int64) - zero_point).astype(np.float32) * scale
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("dtype", ["u8", "i8", "i32"])
@pytest.mark.parametrize("shape, axis", [((4, 3, 5), 0), ((2, 13), 1)], ids=str)
def test_dequantize_per_channel_multiplies_by_the_channel_scale(shape, axis, dtype, rng):
    scales = (rng.random(shape[axis]) * 0.1 + 0.01).astype(np.float32)
    q = random_ints(rng, shape, dtype)
    got = run_dequantize(q, dtype, lambda t: t.set_quant_per_channel(axis, scales.tolist()))
    view = [1] * len(shape)
    view[axis] = shape[axis]
    np.testing.assert_array_equal(got, q.astype(np.float32) * scales.reshape(view))


def test_dequantize_dynamic_fixed_point_scales_by_a_power_of_two(rng):
    q = random_ints(rng, (5, 6), "i32")
    got = run_dequantize(q, "i32", lambda t: t.set_quant_dynamic_fixed_point(7))
    np.testing.assert_array_equal(got, q.astype(np.float32) * np.float32(2.0**-7))


def test_dequantize_inverts_quantize_within_half_a_step(rng):
    scale, zero_point = np.float32(0.02), 100
    x = (rng.random((9, 11)) * 4.0 - 2.0).astype(np.float32)
    g = nxe.Graph()
    q = g.tensor(name="q", dtype="u8", kind="transient")
    q.set_quant_asymmetric(float(scale), zero_point)
    g.op("QuantizeLinear", [g.input("x", x.shape, "f32")], outputs=[q])
    g.mark_output(g.DequantizeLinear(q), name="y")
    got = g.compile(threads=1).run({"x": x})["y"]
    np.testing.assert_allclose(got, x, rtol=0, atol=float(scale) / 2 * 1.001)


def test_dequantize_result_is_identical_for_one_and_two_threads(rng):
    q = random_ints(rng, (16, 64, 70), "i8")
    scales = (rng.random(70) * 0.1 + 0.01).tolist()
    one = run_dequantize(q, "i8", lambda t: t.set_quant_per_channel(2, scales), threads=1)
    two = run_dequantize(q, "i8", lambda t: t.set_quant_per_channel(2, scales), threads=2)
    assert np.array_equal(one, two)


def test_dequantize_rejects_an_input_without_quantization():
    g = nxe.Graph()
    g.mark_output(g.DequantizeLinear(g.input("x", (4,), "u8")))
    with pytest.raises(nxe.InvalidArgumentError, match="DequantizeLinear.*quantization"):
        compile_graph(g)


def test_dequantize_rejects_a_float_input():
    g = nxe.Graph()
    g.mark_output(g.DequantizeLinear(g.input("x", (4,), "f32")))
    with pytest.raises(nxe.DtypeMismatchError, match="DequantizeLinear"):
        compile_graph(g)


def test_a_zero_point_outside_the_dtype_is_refused_when_set():
    # A declared u8 / i8 tensor refuses it at the setter (the rules of QuantizeLinear and
    # DequantizeLinear check it again at compile, for tensors whose dtype is inferred).
    g = nxe.Graph()
    x = g.input("x", (4,), "i8")
    with pytest.raises(nxe.InvalidArgumentError, match="'x'.*zero point 200"):
        x.set_quant_asymmetric(0.5, 200)
    q = g.tensor(name="q", dtype="u8", kind="output")
    with pytest.raises(nxe.InvalidArgumentError, match="'q'.*zero point 300"):
        q.set_quant_asymmetric(0.1, 300)
