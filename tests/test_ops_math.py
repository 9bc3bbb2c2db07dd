"""Math op family: unary math and activations, Pow/Min/Max/Mod/BitShift/PRelu, comparisons,
logic and Where, each checked against a numpy or Python reference computed here."""

from __future__ import annotations

import math

import numpy as np
import nxe
import pytest
from op_testing import bf16_bits, bf16_values, build_op, compile_op, run_single

FLOAT_TYPES = ("f16", "bf16")
INT_DTYPES = (np.int8, np.uint8, np.int16, np.int32, np.int64)
NUMERIC = (np.float32, np.float16, *INT_DTYPES)

BROADCAST_SHAPES = [
    ((7, 13), (7, 13)),
    ((3, 5), (1,)),
    ((2, 3, 1, 5), (4, 1)),
    ((1, 7, 1), (6, 1, 13)),
    ((2, 1, 3, 1, 2, 1), (1, 4, 1, 3, 1, 5)),
]


def random_array(rng, shape, dtype, scale=3.0):
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    return (rng.standard_normal(shape) * scale).astype(dtype)


def wrap(values, dtype):
    """Python ints reduced modulo 2^bits into dtype's range."""
    info = np.iinfo(dtype)
    span = int(info.max) - int(info.min) + 1
    return np.array([(v - int(info.min)) % span + int(info.min) for v in values],
                    dtype=dtype)


# ---- unary float math and activations ---------------------------------------------------

def softplus64(x):
    return np.logaddexp(0.0, x)


def sigmoid64(x):
    return 1.0 / (1.0 + np.exp(-x))


SELU_ALPHA, SELU_GAMMA = 1.67326319217681884765625, 1.05070102214813232421875

# op type, attributes -> (float64 reference, input domain)
UNARY = {
    ("Abs", ()): (np.abs, "any"),
    ("Neg", ()): (np.negative, "any"),
    ("Sign", ()): (np.sign, "any"),
    ("Exp", ()): (np.exp, "any"),
    ("Log", ()): (np.log, "positive"),
    ("Sqrt", ()): (np.sqrt, "positive"),
    ("Reciprocal", ()): (np.reciprocal, "any"),
    ("Floor", ()): (np.floor, "any"),
    ("Ceil", ()): (np.ceil, "any"),
    ("Round", ()): (np.round, "halves"),
    ("Sin", ()): (np.sin, "any"),
    ("Cos", ()): (np.cos, "any"),
    ("Tan", ()): (np.tan, "any"),
    ("Asin", ()): (np.arcsin, "unit"),
    ("Acos", ()): (np.arccos, "unit"),
    ("Atan", ()): (np.arctan, "any"),
    ("Sinh", ()): (np.sinh, "any"),
    ("Cosh", ()): (np.cosh, "any"),
    ("Asinh", ()): (np.arcsinh, "any"),
    ("Acosh", ()): (np.arccosh, "above_one"),
    ("Atanh", ()): (np.arctanh, "open_unit"),
    ("Clip", ()): (lambda x: x, "any"),
    ("Clip", (("min", -1.5), ("max", 2.0))): (lambda x: np.minimum(np.maximum(x, -1.5), 2.0),
                                              "any"),
    ("Clip", (("min", 0.0),)): (lambda x: np.maximum(x, 0.0), "any"),
    ("Clip", (("max", 0.5),)): (lambda x: np.minimum(x, 0.5), "any"),
    ("Clip", (("min", 2.0), ("max", 1.0))): (lambda x: np.full_like(x, 1.0), "any"),
    ("Elu", ()): (lambda x: np.where(x >= 0, x, np.expm1(x)), "any"),
    ("Elu", (("alpha", 0.3),)): (lambda x: np.where(x >= 0, x, 0.3 * np.expm1(x)), "any"),
    ("Selu", ()): (lambda x: SELU_GAMMA * np.where(x > 0, x, SELU_ALPHA * np.expm1(x)), "any"),
    ("Selu", (("alpha", 2.0), ("gamma", 0.5))): (
        lambda x: 0.5 * np.where(x > 0, x, 2.0 * np.expm1(x)), "any"),
    ("Celu", ()): (lambda x: np.maximum(0, x) + np.minimum(0, np.expm1(x)), "any"),
    ("Celu", (("alpha", 2.0),)): (
        lambda x: np.maximum(0, x) + np.minimum(0, 2.0 * np.expm1(x / 2.0)), "any"),
    ("HardSigmoid", ()): (lambda x: np.clip(0.2 * x + 0.5, 0, 1), "any"),
    ("HardSigmoid", (("alpha", 0.5), ("beta", 0.25))): (lambda x: np.clip(0.5 * x + 0.25, 0, 1),
                                                        "any"),
    ("HardSwish", ()): (lambda x: x * np.clip(x / 6 + 0.5, 0, 1), "any"),
    ("Swish", ()): (lambda x: x * sigmoid64(x), "any"),
    ("Swish", (("alpha", 1.702),)): (lambda x: x * sigmoid64(1.702 * x), "any"),
    ("Mish", ()): (lambda x: x * np.tanh(softplus64(x)), "any"),
    ("Softplus", ()): (softplus64, "any"),
    ("Softsign", ()): (lambda x: x / (1 + np.abs(x)), "any"),
    ("ThresholdedRelu", ()): (lambda x: np.where(x > 1.0, x, 0.0), "any"),
    ("ThresholdedRelu", (("alpha", -0.5),)): (lambda x: np.where(x > -0.5, x, 0.0), "any"),
}


def unary_input(rng, shape, domain):
    if domain == "positive":
        x = rng.uniform(1e-3, 50.0, shape)
    elif domain == "unit":
        x = rng.uniform(-1.0, 1.0, shape)
    elif domain == "open_unit":
        x = rng.uniform(-0.999, 0.999, shape)
    elif domain == "above_one":
        x = rng.uniform(1.0, 50.0, shape)
    elif domain == "halves":
        x = rng.integers(-20, 20, shape) / 2.0  # exact halves exercise ties to even
    else:
        x = rng.standard_normal(shape) * 4.0
        flat = x.reshape(-1)
        edges = [0.0, -0.0, 30.0, -30.0, 80.0, -80.0, 1e-7, -1e-7]
        flat[: min(flat.size, len(edges))] = edges[: flat.size]
    return x.astype(np.float32)


def unary_id(case):
    return case[0] + "".join(f"-{k}={v}" for k, v in case[1])


@pytest.mark.parametrize("shape", [(7, 13), (1,), (2, 3, 5)], ids=str)
@pytest.mark.parametrize("case", list(UNARY), ids=unary_id)
def test_f32_unary_op_matches_float64_reference(case, shape, rng):
    # f32 libm results are within a few ulp of the exact value: rtol 2e-6 relative, and an
    # absolute 1e-6 where results pass through zero.
    op_type, attrs = case
    ref_fn, domain = UNARY[case]
    x = unary_input(rng, shape, domain)
    with np.errstate(all="ignore"):
        ref = ref_fn(x.astype(np.float64))
    got = run_single(op_type, [x], **dict(attrs))
    assert got.shape == x.shape and got.dtype == np.float32
    with np.errstate(over="ignore"):
        np.testing.assert_allclose(got, ref.astype(np.float32), rtol=4e-6, atol=1e-6)


@pytest.mark.parametrize("op_type", ["Abs", "Neg", "Sign", "Floor", "Ceil", "Round", "Exp",
                                     "Sqrt", "Reciprocal", "Clip"])
def test_unary_op_keeps_nan_and_follows_ieee_at_infinities(op_type):
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], dtype=np.float32)
    with np.errstate(all="ignore"):
        ref = {"Abs": np.abs, "Neg": np.negative, "Sign": np.sign, "Floor": np.floor,
               "Ceil": np.ceil, "Round": np.round, "Exp": np.exp, "Sqrt": np.sqrt,
               "Reciprocal": np.reciprocal, "Clip": lambda v: v}[op_type](x)
    got = run_single(op_type, [x])
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(np.signbit(got[3:]), np.signbit(ref[3:]))


@pytest.mark.parametrize("dtype", FLOAT_TYPES)
@pytest.mark.parametrize("case", list(UNARY), ids=unary_id)
def test_half_precision_unary_op_is_the_f32_result_rounded_once(case, dtype, rng):
    # The half kernels widen exactly, run the f32 kernel (checked above) and round once.
    op_type, attrs = case
    x32 = unary_input(rng, (5, 11), UNARY[case][1])
    if dtype == "f16":
        x = x32.astype(np.float16)
        with np.errstate(over="ignore"):
            ref = run_single(op_type, [x.astype(np.float32)], **dict(attrs)).astype(np.float16)
        got = run_single(op_type, [x], **dict(attrs))
    else:
        x = bf16_bits(x32)
        ref = bf16_bits(run_single(op_type, [bf16_values(x)], **dict(attrs)))
        got = run_single(op_type, [x], dtypes=["bf16"], **dict(attrs))
    np.testing.assert_array_equal(got, ref)


# ---- integer unary ops -------------------------------------------------------------------

@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op_type", ["Abs", "Neg", "Sign"])
def test_integer_unary_op_matches_wrapping_reference(op_type, dtype, rng):
    info = np.iinfo(dtype)
    x = random_array(rng, (9, 7), dtype)
    x.reshape(-1)[:3] = [info.min, info.max, 0]
    values = [int(v) for v in x.reshape(-1)]
    fn = {"Abs": abs, "Neg": lambda v: -v, "Sign": lambda v: (v > 0) - (v < 0)}[op_type]
    ref = wrap([fn(v) for v in values], dtype).reshape(x.shape)
    got = run_single(op_type, [x])
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("bounds", [{}, {"min": -5.0, "max": 100.0}, {"min": 3.5},
                                    {"max": -2.5}, {"min": 10.0, "max": 1.0},
                                    {"min": -1e30, "max": 1e30}], ids=str)
def test_integer_clip_rounds_bounds_inward_and_saturates_them(bounds, dtype, rng):
    info = np.iinfo(dtype)
    x = random_array(rng, (6, 5), dtype)
    lo = math.ceil(bounds["min"]) if "min" in bounds else int(info.min)
    hi = math.floor(bounds["max"]) if "max" in bounds else int(info.max)
    lo, hi = (min(max(v, int(info.min)), int(info.max)) for v in (lo, hi))
    ref = np.array([min(max(int(v), lo), hi) for v in x.reshape(-1)], dtype=dtype)
    got = run_single("Clip", [x], **bounds)
    np.testing.assert_array_equal(got, ref.reshape(x.shape))


# ---- classification and not ----------------------------------------------------------------

SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -1.5, 3.0, -np.nan], dtype=np.float32)


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_isnan_marks_nan_elements(dtype):
    x = {"f32": SPECIALS, "f16": SPECIALS.astype(np.float16), "bf16": bf16_bits(SPECIALS)}[dtype]
    got = run_single("IsNaN", [x], dtypes=[dtype])
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, np.isnan(SPECIALS))


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("flags", [{}, {"detect_negative": 0}, {"detect_positive": 0},
                                   {"detect_negative": 0, "detect_positive": 0}], ids=str)
def test_isinf_marks_infinities_of_the_detected_signs(flags, dtype):
    x = {"f32": SPECIALS, "f16": SPECIALS.astype(np.float16), "bf16": bf16_bits(SPECIALS)}[dtype]
    ref = (np.isposinf(SPECIALS) & bool(flags.get("detect_positive", 1))) | (
        np.isneginf(SPECIALS) & bool(flags.get("detect_negative", 1)))
    np.testing.assert_array_equal(run_single("IsInf", [x], dtypes=[dtype], **flags), ref)


def test_not_negates_bools(rng):
    x = rng.random((4, 9)) < 0.5
    np.testing.assert_array_equal(run_single("Not", [x]), ~x)


# ---- binary math ---------------------------------------------------------------------------

@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=str)
def test_f32_pow_matches_float64_power_under_broadcasting(shapes, rng):
    a = np.abs(random_array(rng, shapes[0], np.float32)) + np.float32(0.1)
    b = random_array(rng, shapes[1], np.float32, scale=2.0)
    got = run_single("Pow", [a, b])
    np.testing.assert_allclose(got, np.power(a.astype(np.float64), b), rtol=1e-5)


def test_f32_pow_of_negative_base_follows_powf():
    a = np.array([-2.0, -2.0, -8.0, 0.0, 0.0, 1.0, np.nan], dtype=np.float32)
    b = np.array([3.0, 0.5, 1 / 3, -1.0, 0.0, np.nan, 0.0], dtype=np.float32)
    with np.errstate(all="ignore"):
        ref = np.power(a, b)
    np.testing.assert_array_equal(run_single("Pow", [a, b]), ref)


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_integer_pow_is_exact_with_wrap_around(dtype, rng):
    a = random_array(rng, (40,), dtype)
    a[:10] = np.arange(10) - (0 if dtype == np.uint8 else 5)
    info = np.iinfo(dtype)
    b = rng.integers(max(int(info.min), -3), 70, size=40).astype(dtype)

    def ipow(x, y):
        if y < 0:
            return 1 if x == 1 else (-1 if y % 2 else 1) if x == -1 else 0
        return x**y

    ref = wrap([ipow(int(x), int(y)) for x, y in zip(a, b)], dtype)
    np.testing.assert_array_equal(run_single("Pow", [a, b]), ref)


@pytest.mark.parametrize("dtype", NUMERIC, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op_type", ["Min", "Max"])
@pytest.mark.parametrize("shapes", BROADCAST_SHAPES[:4], ids=str)
def test_min_max_match_numpy_under_broadcasting(shapes, op_type, dtype, rng):
    a = random_array(rng, shapes[0], dtype)
    b = random_array(rng, shapes[1], dtype)
    if dtype in (np.float32, np.float16):
        a.reshape(-1)[0] = np.nan
    ref = (np.minimum if op_type == "Min" else np.maximum)(a, b)
    np.testing.assert_array_equal(run_single(op_type, [a, b]), ref)


def test_bf16_min_max_select_an_operand(rng):
    a = bf16_bits(random_array(rng, (5, 6), np.float32))
    b = bf16_bits(random_array(rng, (6,), np.float32))
    av, bv = bf16_values(a), bf16_values(b)
    np.testing.assert_array_equal(run_single("Min", [a, b], dtypes=["bf16", "bf16"]),
                                  bf16_bits(np.minimum(av, bv)))
    np.testing.assert_array_equal(run_single("Max", [a, b], dtypes=["bf16", "bf16"]),
                                  bf16_bits(np.maximum(av, bv)))


def mod_float_reference(a, b, fmod):
    with np.errstate(all="ignore"):
        return np.fmod(a, b) if fmod else np.mod(a, b)


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("shapes", BROADCAST_SHAPES[:4], ids=str)
def test_f32_mod_matches_numpy_mod_and_fmod(shapes, fmod, rng):
    a = random_array(rng, shapes[0], np.float32, scale=20.0)
    b = random_array(rng, shapes[1], np.float32, scale=5.0)
    got = run_single("Mod", [a, b], fmod=fmod)
    np.testing.assert_array_equal(got, mod_float_reference(a, b, fmod))


@pytest.mark.parametrize("fmod", [0, 1])
def test_f32_mod_special_values_follow_numpy(fmod):
    a = np.array([0, -0.0, 0, -0.0, -3, 3, -1, 1, np.inf, -np.inf, 1, 1, np.nan, 1, 6, -6],
                 dtype=np.float32)
    b = np.array([-2, 2, 2, -2, np.inf, np.inf, -np.inf, -np.inf, 2, 2, 0, -0.0, 2, np.nan,
                  3, 3], dtype=np.float32)
    got = run_single("Mod", [a, b], fmod=fmod)
    ref = mod_float_reference(a, b, fmod)
    np.testing.assert_array_equal(got, ref)
    finite = ~np.isnan(ref)
    np.testing.assert_array_equal(np.signbit(got[finite]), np.signbit(ref[finite]))


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_integer_mod_matches_python_reference(dtype, fmod, rng):
    a = random_array(rng, (50,), dtype)
    b = random_array(rng, (50,), dtype)
    b[:10] = rng.integers(0, 7, size=10)
    b[10] = 0
    if np.iinfo(dtype).min < 0:
        a[11], b[11] = np.iinfo(dtype).min, -1

    def ref_mod(x, y):
        if y == 0:
            return 0
        if not fmod:
            return x % y
        return (abs(x) % abs(y)) * (-1 if x < 0 else 1)

    ref = np.array([int(ref_mod(int(x), int(y))) for x, y in zip(a, b)], dtype=dtype)
    np.testing.assert_array_equal(run_single("Mod", [a, b], fmod=fmod), ref)


def test_half_precision_mod_is_the_f32_result_rounded_once(rng):
    a = random_array(rng, (6, 7), np.float16, scale=20.0)
    b = random_array(rng, (7,), np.float16, scale=5.0)
    ref = mod_float_reference(a.astype(np.float32), b.astype(np.float32), 0).astype(np.float16)
    np.testing.assert_array_equal(run_single("Mod", [a, b]), ref)


def shift_reference(x, y, bits, left, signed):
    if y < 0 or y >= bits:
        return -1 if (not left and x < 0) else 0
    if left:
        r = (x << y) & ((1 << bits) - 1)
        return r - (1 << bits) if signed and r >= 1 << (bits - 1) else r
    return x >> y  # Python's >> is arithmetic on negative ints


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_bit_shift_matches_reference(dtype, direction, rng):
    info = np.iinfo(dtype)
    bits = info.bits
    a = random_array(rng, (4, 16), dtype)
    b = rng.integers(max(int(info.min), -3), bits + 3, size=(16,)).astype(dtype)
    signed = info.min < 0
    ab, bb = np.broadcast_arrays(a, b)
    ref = np.array([shift_reference(int(x), int(y), bits, direction == "LEFT", signed)
                    for x, y in zip(ab.ravel(), bb.ravel())], dtype=dtype).reshape(ab.shape)
    np.testing.assert_array_equal(run_single("BitShift", [a, b], direction=direction), ref)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int64],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("slope_shape", [(1,), (5, 1, 1), (7,), (2, 5, 3, 7)], ids=str)
def test_prelu_scales_negative_inputs_by_broadcast_slope(slope_shape, dtype, rng):
    x = random_array(rng, (2, 5, 3, 7), dtype)
    if np.issubdtype(dtype, np.integer):
        x = (x % 100).astype(dtype) - dtype(50)
    slope = random_array(rng, slope_shape, dtype)
    if np.issubdtype(dtype, np.integer):
        slope = (slope % 5).astype(dtype)
    ref = np.where(x < 0, (x.astype(np.float64) * slope).astype(dtype), x)
    if dtype == np.float16:
        ref = np.where(x < 0, (x.astype(np.float32) * slope.astype(np.float32)), x).astype(dtype)
    np.testing.assert_array_equal(run_single("PRelu", [x, slope]), ref)


# ---- comparisons, logic, where ---------------------------------------------------------------

COMPARISONS = {"Equal": np.equal, "Less": np.less, "LessOrEqual": np.less_equal,
               "Greater": np.greater, "GreaterOrEqual": np.greater_equal}


@pytest.mark.parametrize("dtype", NUMERIC, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op_type", list(COMPARISONS))
@pytest.mark.parametrize("shapes", BROADCAST_SHAPES[1:4], ids=str)
def test_comparison_matches_numpy_and_gives_bool(shapes, op_type, dtype, rng):
    a = random_array(rng, shapes[0], dtype)
    b = random_array(rng, shapes[1], dtype)
    a.reshape(-1)[: b.size] = b.reshape(-1)[: a.size]  # some equal pairs
    if dtype in (np.float32, np.float16):
        a.reshape(-1)[-1] = np.nan
    got = run_single(op_type, [a, b])
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, COMPARISONS[op_type](a, b))


def test_bf16_comparison_compares_values(rng):
    a = bf16_bits(random_array(rng, (4, 5), np.float32))
    b = bf16_bits(random_array(rng, (5,), np.float32))
    a[0] = b
    for op_type, fn in COMPARISONS.items():
        got = run_single(op_type, [a, b], dtypes=["bf16", "bf16"])
        np.testing.assert_array_equal(got, fn(bf16_values(a), bf16_values(b)))


@pytest.mark.parametrize("op_type", ["Equal", "And", "Or", "Xor"])
@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=str)
def test_bool_logic_matches_numpy(shapes, op_type, rng):
    a = rng.random(shapes[0]) < 0.5
    b = rng.random(shapes[1]) < 0.5
    fn = {"Equal": np.equal, "And": np.logical_and, "Or": np.logical_or,
          "Xor": np.logical_xor}[op_type]
    np.testing.assert_array_equal(run_single(op_type, [a, b]), fn(a, b))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.int64, np.bool_],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4), (3, 4)), ((4,), (3, 1), (1,)),
                                    ((2, 1, 5), (1, 3, 1), (3, 5)),
                                    ((1,), (2, 3, 4), (2, 1, 4))], ids=str)
def test_where_selects_with_three_way_broadcasting(shapes, dtype, rng):
    cond = rng.random(shapes[0]) < 0.5
    if dtype == np.bool_:
        x, y = rng.random(shapes[1]) < 0.5, rng.random(shapes[2]) < 0.5
    else:
        x, y = random_array(rng, shapes[1], dtype), random_array(rng, shapes[2], dtype)
    got = run_single("Where", [cond, x, y])
    np.testing.assert_array_equal(got, np.where(cond, x, y))
    assert got.dtype == np.dtype(dtype)


@pytest.mark.parametrize("op_type", ["Pow", "Mod", "Less", "Where", "Softplus", "Clip"])
def test_result_is_identical_for_one_and_two_threads(op_type, rng):
    a = random_array(rng, (3, 129, 257), np.float32)
    b = random_array(rng, (129, 1), np.float32)
    arrays = {"Where": [a > 0, a, b], "Softplus": [a], "Clip": [a]}.get(op_type, [np.abs(a), b])
    one, two = run_single(op_type, arrays, threads=1), run_single(op_type, arrays, threads=2)
    assert np.array_equal(one, two, equal_nan=True)


# ---- bad input -------------------------------------------------------------------------------

@pytest.mark.parametrize("op_type", ["Exp", "Sin", "Elu", "Softplus", "IsNaN", "Round"])
def test_float_only_op_rejects_integer_input(op_type):
    with pytest.raises(nxe.DtypeMismatchError, match=op_type):
        compile_op(op_type, [((4,), "i32")])


@pytest.mark.parametrize("op_type", ["Abs", "Clip", "Sign", "Pow", "Less", "BitShift"])
def test_numeric_op_rejects_bool_input(op_type):
    arity = 2 if op_type in ("Pow", "Less", "BitShift") else 1
    attrs = {"direction": "LEFT"} if op_type == "BitShift" else {}
    with pytest.raises(nxe.DtypeMismatchError, match=op_type):
        compile_op(op_type, [((4,), "bool")] * arity, **attrs)


@pytest.mark.parametrize("op_type", ["And", "Or", "Xor", "Not"])
def test_logic_op_rejects_non_bool_input(op_type):
    arity = 1 if op_type == "Not" else 2
    with pytest.raises(nxe.DtypeMismatchError, match=op_type):
        compile_op(op_type, [((4,), "f32")] * arity)


@pytest.mark.parametrize("op_type", ["Pow", "Min", "Max", "Mod", "Equal", "Greater", "PRelu"])
def test_binary_op_rejects_mixed_dtypes_and_unbroadcastable_shapes(op_type):
    with pytest.raises(nxe.DtypeMismatchError, match=op_type):
        compile_op(op_type, [((2, 3), "f32"), ((2, 3), "i32")])
    with pytest.raises(nxe.ShapeMismatchError, match=op_type):
        compile_op(op_type, [((3, 4), "f32"), ((5,), "f32")])


def test_bit_shift_rejects_float_operands_and_unknown_direction():
    with pytest.raises(nxe.DtypeMismatchError, match="BitShift"):
        compile_op("BitShift", [((4,), "f32")] * 2, direction="LEFT")
    with pytest.raises(nxe.InvalidArgumentError, match="BitShift.*direction"):
        compile_op("BitShift", [((4,), "u8")] * 2, direction="left")


def test_bit_shift_requires_direction():
    with pytest.raises(nxe.Error, match="BitShift.*direction"):
        compile_op("BitShift", [((4,), "u8")] * 2)


def test_mod_rejects_fmod_other_than_zero_or_one():
    with pytest.raises(nxe.InvalidArgumentError, match="Mod.*fmod"):
        compile_op("Mod", [((4,), "i32")] * 2, fmod=2)


def test_prelu_rejects_slope_that_widens_the_output():
    with pytest.raises(nxe.ShapeMismatchError, match="PRelu.*slope"):
        compile_op("PRelu", [((3,), "f32"), ((2, 3), "f32")])


def test_where_rejects_non_bool_condition_and_mixed_value_dtypes():
    with pytest.raises(nxe.DtypeMismatchError, match="Where"):
        compile_op("Where", [((4,), "f32"), ((4,), "f32"), ((4,), "f32")])
    with pytest.raises(nxe.DtypeMismatchError, match="Where.*X.*Y"):
        compile_op("Where", [((4,), "bool"), ((4,), "f32"), ((4,), "i32")])
    with pytest.raises(nxe.ShapeMismatchError, match="Where"):
        compile_op("Where", [((4,), "bool"), ((3,), "f32"), ((4,), "f32")])


@pytest.mark.parametrize("attrs", [{"min": float("nan")}, {"max": float("nan")}], ids=str)
def test_clip_rejects_nan_bounds(attrs):
    with pytest.raises(nxe.InvalidArgumentError, match="Clip"):
        compile_op("Clip", [((4,), "f32")], **attrs)


def test_celu_rejects_zero_alpha():
    with pytest.raises(nxe.InvalidArgumentError, match="Celu.*alpha"):
        compile_op("Celu", [((4,), "f32")], alpha=0.0)


@pytest.mark.parametrize("op_type", ["Exp", "Clip", "Pow", "Where", "IsInf"])
def test_unknown_attribute_is_rejected(op_type):
    x = ((4,), "f32")
    specs = {"Pow": [x, x], "Where": [((4,), "bool"), x, x]}.get(op_type, [x])
    with pytest.raises(nxe.NotFoundError, match=f"{op_type}.*slope"):
        build_op(op_type, specs, slope=1)


# ---- ONNX converters -------------------------------------------------------------------------

def onnx_model(op_type, input_types, output_type, **attrs):
    """A one-node ONNX model whose inputs are runtime graph inputs of the given ONNX types."""
    from onnx import TensorProto, helper

    names = [f"in{i}" for i in range(len(input_types))]
    node = helper.make_node(op_type, names, ["out"], **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, getattr(TensorProto, t), None)
                      for n, t in zip(names, input_types)],
        [helper.make_tensor_value_info("out", getattr(TensorProto, output_type), None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def run_both(model, feeds):
    """(nxe result, onnxruntime result) of the model's output for `feeds`."""
    import nxe.onnx
    import onnxruntime as ort

    got = nxe.onnx.load(model).run(feeds)["out"]
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return got, session.run(None, feeds)[0]


@pytest.mark.parametrize("op_type", ["Min", "Max", "Sum", "Mean"])
def test_variadic_onnx_ops_chain_binary_ops(op_type, rng):
    arrays = [random_array(rng, s, np.float32) for s in [(3, 4), (4,), (2, 1, 4)]]
    model = onnx_model(op_type, ["FLOAT"] * 3, "FLOAT")
    got, ref = run_both(model, {f"in{i}": a for i, a in enumerate(arrays)})
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=1e-6)


def test_clip_with_runtime_bounds_becomes_max_and_min(rng):
    x = random_array(rng, (5, 6), np.float32)
    model = onnx_model("Clip", ["FLOAT"] * 3, "FLOAT")
    got, ref = run_both(model, {"in0": x, "in1": np.array(-1.0, np.float32),
                                "in2": np.array(0.5, np.float32)})
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("types", [("INT32", "FLOAT", np.int32, np.float32),
                                   ("FLOAT", "INT64", np.float32, np.int64)], ids=str)
def test_pow_with_mixed_base_and_exponent_types_keeps_the_base_type(types, rng):
    base_type, exponent_type, base_dtype, exponent_dtype = types
    base = np.arange(1, 9).astype(base_dtype).reshape(2, 4)
    exponent = np.array([0, 1, 2, 3], dtype=exponent_dtype)
    model = onnx_model("Pow", [base_type, exponent_type], base_type)
    got, ref = run_both(model, {"in0": base, "in1": exponent})
    assert got.dtype == ref.dtype
    np.testing.assert_allclose(got, ref, rtol=1e-6)


# ---- bitwise ops ------------------------------------------------------------------------

BITWISE = {"BitwiseAnd": np.bitwise_and, "BitwiseOr": np.bitwise_or,
           "BitwiseXor": np.bitwise_xor}


@pytest.mark.parametrize("op_type", list(BITWISE))
@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=str)
def test_bitwise_binary_matches_numpy_with_broadcasting(op_type, dtype, shapes, rng):
    a = random_array(rng, shapes[0], dtype)
    b = random_array(rng, shapes[1], dtype)
    got = run_single(op_type, [a, b])
    ref = BITWISE[op_type](a, b)
    assert got.dtype == ref.dtype and got.shape == ref.shape
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(1,), (7, 13), (2, 3, 4, 5), (0, 3)], ids=str)
def test_bitwise_not_matches_numpy_invert(dtype, shape, rng):
    x = random_array(rng, shape, dtype)
    got = run_single("BitwiseNot", [x])
    assert got.dtype == x.dtype and got.shape == x.shape
    np.testing.assert_array_equal(got, np.invert(x))


def test_bitwise_results_are_identical_for_one_and_four_threads(rng):
    a = random_array(rng, (64, 1, 700), np.int32)
    b = random_array(rng, (1, 50, 700), np.int32)
    assert np.array_equal(run_single("BitwiseXor", [a, b], threads=1),
                          run_single("BitwiseXor", [a, b], threads=4))
    x = random_array(rng, (300, 300), np.int16)
    assert np.array_equal(run_single("BitwiseNot", [x], threads=1),
                          run_single("BitwiseNot", [x], threads=4))


@pytest.mark.parametrize("op_type", [*BITWISE, "BitwiseNot"])
@pytest.mark.parametrize("dtype", ["f32", "bool", "f16"])
def test_bitwise_ops_reject_non_integer_dtypes(op_type, dtype):
    specs = [((2, 3), dtype)] * (1 if op_type == "BitwiseNot" else 2)
    with pytest.raises(nxe.DtypeMismatchError, match=f"'{op_type}'"):
        compile_op(op_type, specs)


@pytest.mark.parametrize("op_type", list(BITWISE))
def test_bitwise_binary_rejects_mixed_dtypes_and_unbroadcastable_shapes(op_type):
    with pytest.raises(nxe.DtypeMismatchError, match=f"'{op_type}'.*i32.*i64"):
        compile_op(op_type, [((2, 3), "i32"), ((2, 3), "i64")])
    with pytest.raises(nxe.ShapeMismatchError, match=f"'{op_type}'"):
        compile_op(op_type, [((2, 3), "i32"), ((4,), "i32")])


# ---- f64 and the wide unsigned dtypes -------------------------------------------------------

WIDE_UNSIGNED = (np.uint16, np.uint32, np.uint64)


def unsigned_operands(dtype, rng, shape=(3, 5)):
    """Values spread over the whole range of dtype, with zeros and the maximum mixed in."""
    info = np.iinfo(dtype)
    a = rng.integers(0, info.max, size=shape, dtype=dtype, endpoint=True)
    b = rng.integers(0, info.max, size=shape[-1:], dtype=dtype, endpoint=True)
    a.flat[0], a.flat[1], b[0], b[1] = 0, info.max, 0, 1
    return a, b


@pytest.mark.parametrize("op_type,fn", [("Pow", np.power), ("Min", np.minimum),
                                        ("Max", np.maximum)])
def test_f64_pow_min_max_match_numpy_in_double(op_type, fn, rng):
    a = rng.uniform(0.5, 2.0, size=(4, 1, 3))
    b = rng.uniform(-3.0, 3.0, size=(5, 3))
    got = run_single(op_type, [a, b])
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, fn(a, b), rtol=1e-14, atol=0)


@pytest.mark.parametrize("fmod", [0, 1])
def test_f64_mod_matches_numpy(fmod, rng):
    a = rng.uniform(-50, 50, size=(6, 7))
    b = rng.uniform(-9, 9, size=(7,))
    ref = np.fmod(a, b) if fmod else np.mod(a, b)
    np.testing.assert_allclose(run_single("Mod", [a, b], fmod=fmod), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", WIDE_UNSIGNED)
@pytest.mark.parametrize("op_type", ["Pow", "Min", "Max", "Mod"])
def test_wide_unsigned_binary_ops_match_python_integers(op_type, dtype, rng):
    a, b = unsigned_operands(dtype, rng)
    if op_type == "Pow":
        b = b % 5
    got = run_single(op_type, [a, b], fmod=0) if op_type == "Mod" else run_single(op_type, [a, b])
    bits = np.iinfo(dtype).bits
    fn = {"Pow": lambda x, y: pow(x, y, 1 << bits), "Min": min, "Max": max,
          "Mod": lambda x, y: x % y if y else 0}[op_type]
    ref = np.array([[fn(int(x), int(y)) for x, y in zip(row, b)] for row in a], dtype=dtype)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("dtype", (np.float64, *WIDE_UNSIGNED))
@pytest.mark.parametrize("op_type,fn", [("Equal", np.equal), ("Less", np.less),
                                        ("LessOrEqual", np.less_equal),
                                        ("Greater", np.greater),
                                        ("GreaterOrEqual", np.greater_equal)])
def test_wide_dtype_comparisons_match_numpy(op_type, fn, dtype, rng):
    if dtype == np.float64:
        a = rng.standard_normal((4, 6))
        b = a[1].copy()
        b[:3] += 2.0**-45  # differ from a's row only beyond f32 precision
    else:
        a, b = unsigned_operands(dtype, rng, (4, 6))
        b[2:] = a[1, 2:]
    got = run_single(op_type, [a, b])
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, fn(a, b))


@pytest.mark.parametrize("dtype", WIDE_UNSIGNED)
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_wide_unsigned_bit_shift_drops_bits_and_saturates_to_zero(dtype, direction, rng):
    bits = np.iinfo(dtype).bits
    a, _ = unsigned_operands(dtype, rng, (3, bits + 3))
    b = np.arange(bits + 3, dtype=dtype)
    got = run_single("BitShift", [a, b], direction=direction)
    mask = (1 << bits) - 1
    shift = (lambda x, s: (x << s) & mask) if direction == "LEFT" else (lambda x, s: x >> s)
    ref = np.array([[shift(int(x), int(s)) if s < bits else 0 for x, s in zip(row, b)]
                    for row in a], dtype=dtype)
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("dtype", WIDE_UNSIGNED)
@pytest.mark.parametrize("op_type,fn", [("BitwiseAnd", np.bitwise_and),
                                        ("BitwiseOr", np.bitwise_or),
                                        ("BitwiseXor", np.bitwise_xor)])
def test_wide_unsigned_bitwise_ops_match_numpy(op_type, fn, dtype, rng):
    a, b = unsigned_operands(dtype, rng)
    np.testing.assert_array_equal(run_single(op_type, [a, b]), fn(a, b))


@pytest.mark.parametrize("dtype", (np.float64, *WIDE_UNSIGNED))
def test_where_selects_wide_dtype_values(dtype, rng):
    cond = rng.integers(0, 2, size=(4, 1)).astype(bool)
    x = (rng.standard_normal((4, 5)) * 1e3).astype(dtype)
    y = (rng.standard_normal((5,)) * 1e3).astype(dtype)
    np.testing.assert_array_equal(run_single("Where", [cond, x, y]), np.where(cond, x, y))


def test_wide_unsigned_unary_math_is_still_rejected():
    with pytest.raises(nxe.DtypeMismatchError, match="'Abs'.*u32"):
        compile_op("Abs", [((2,), "u32")])
