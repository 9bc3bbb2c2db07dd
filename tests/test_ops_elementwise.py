"""Elementwise op family: Add/Sub/Mul/Div with numpy broadcasting and the f32 activations,
each checked against a numpy reference computed here."""

from __future__ import annotations

import math

import numpy as np
import nxe
import pytest
from op_testing import bf16_bits, bf16_values, build_op, compile_op, run_op

INT_DTYPES = (np.int8, np.uint8, np.int16, np.int32, np.int64)
SIGNED_INT_DTYPES = (np.int8, np.int16, np.int32, np.int64)
BINARY_OPS = ("Add", "Sub", "Mul", "Div")

# Shape pairs covering: equal shapes, odd sizes, one-element operands, size-1 dims on either side,
# missing leading dims, both operands broadcast, and the full rank 6.
BROADCAST_SHAPES = [
    ((7, 13), (7, 13)),
    ((13,), (1,)),
    ((3, 5), (1,)),
    ((2, 3, 1, 5), (4, 1)),
    ((1, 7, 1), (6, 1, 13)),
    ((5, 1), (1, 1)),
    ((2, 1, 3, 1, 2, 1), (1, 4, 1, 3, 1, 5)),
]


def random_array(rng, shape, dtype):
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    return rng.standard_normal(shape).astype(dtype)


def wrap(value, dtype):
    """Reduces a Python int modulo 2^bits into the signed range of dtype."""
    info = np.iinfo(dtype)
    span = int(info.max) - int(info.min) + 1
    return (value - int(info.min)) % span + int(info.min)


def int_reference(op_type, a, b, dtype):
    """Exact integer arithmetic in Python ints, then the documented wrap; Div truncates toward
    zero and gives 0 for a zero divisor."""
    a, b = np.broadcast_arrays(a, b)
    out = []
    for x, y in zip(a.ravel().tolist(), b.ravel().tolist()):
        if op_type == "Add":
            r = x + y
        elif op_type == "Sub":
            r = x - y
        elif op_type == "Mul":
            r = x * y
        elif y == 0:
            r = 0
        else:
            r = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        out.append(wrap(r, dtype))
    return np.array(out, dtype=dtype).reshape(a.shape)


def f32_reference(op_type, a, b):
    with np.errstate(all="ignore"):
        ufunc = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}[op_type]
        return ufunc(a, b)


@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=str)
@pytest.mark.parametrize("op_type", BINARY_OPS)
def test_f32_binary_op_matches_numpy_exactly_under_broadcasting(op_type, shapes, rng):
    # Single-precision +, -, *, / are correctly rounded in both implementations: exact match.
    a = random_array(rng, shapes[0], np.float32)
    b = random_array(rng, shapes[1], np.float32)
    if op_type == "Div":
        b = np.where(np.abs(b) < 0.1, np.float32(0.5), b).astype(np.float32)
    (got,) = run_op(op_type, [a, b])
    ref = f32_reference(op_type, a, b)
    assert got.shape == ref.shape and got.dtype == np.float32
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op_type", BINARY_OPS)
def test_integer_binary_op_matches_wrapping_reference_under_broadcasting(
    op_type, dtype, shapes, rng
):
    # Full-range operands overflow often, so wrap-around is exercised on every case.
    a = random_array(rng, shapes[0], dtype)
    b = random_array(rng, shapes[1], dtype)
    if op_type == "Div":
        b = np.where(rng.random(b.shape) < 0.3, b % 17, b).astype(dtype)  # some small divisors
    (got,) = run_op(op_type, [a, b])
    ref = int_reference(op_type, a, b, dtype)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("dtype", SIGNED_INT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_integer_division_by_zero_gives_zero_and_min_over_minus_one_wraps(dtype):
    info = np.iinfo(dtype)
    a = np.array([info.min, info.min, info.max, 7, -7, 0, -9, 9], dtype=dtype)
    b = np.array([-1, 0, 0, 0, 0, 0, 2, -4], dtype=dtype)
    (got,) = run_op("Div", [a, b])
    np.testing.assert_array_equal(got, int_reference("Div", a, b, dtype))


@pytest.mark.parametrize("dtype", SIGNED_INT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op_type", ("Add", "Sub", "Mul"))
def test_integer_overflow_wraps_around(op_type, dtype):
    info = np.iinfo(dtype)
    a = np.array([info.max, info.min, info.max, info.min, -1], dtype=dtype)
    b = np.array([1, -1, info.max, info.min, info.min], dtype=dtype)
    (got,) = run_op(op_type, [a, b])
    np.testing.assert_array_equal(got, int_reference(op_type, a, b, dtype))


@pytest.mark.parametrize("shapes", BROADCAST_SHAPES[:5], ids=str)
@pytest.mark.parametrize("op_type", BINARY_OPS)
def test_half_precision_binary_op_is_the_f32_result_rounded_once(op_type, shapes, rng):
    # Both operands widen exactly to f32; the f32 result is rounded to nearest even once.
    a32 = random_array(rng, shapes[0], np.float32)
    b32 = random_array(rng, shapes[1], np.float32) + np.float32(3)
    a16, b16 = a32.astype(np.float16), b32.astype(np.float16)
    (got16,) = run_op(op_type, [a16, b16])
    ref16 = f32_reference(op_type, a16.astype(np.float32), b16.astype(np.float32))
    assert got16.dtype == np.float16
    np.testing.assert_array_equal(got16, ref16.astype(np.float16))
    abf, bbf = bf16_bits(a32), bf16_bits(b32)
    (gotbf,) = run_op(op_type, [abf, bbf], dtypes=["bf16", "bf16"])
    refbf = bf16_bits(f32_reference(op_type, bf16_values(abf), bf16_values(bbf)))
    np.testing.assert_array_equal(gotbf, refbf)


def test_f32_division_by_zero_follows_ieee():
    a = np.array([1.0, -1.0, 0.0, np.inf, np.nan], dtype=np.float32)
    b = np.zeros(5, dtype=np.float32)
    (got,) = run_op("Div", [a, b])
    np.testing.assert_array_equal(got, f32_reference("Div", a, b))


def test_constant_operand_broadcasts_like_an_input(rng):
    g = nxe.Graph()
    x = g.input("x", (3, 4, 5), "f32")
    bias = rng.standard_normal((4, 1)).astype(np.float32)
    y = g.Mul(x, g.constant(bias, name="bias"))
    g.mark_output(y, name="y")
    xv = random_array(rng, (3, 4, 5), np.float32)
    got = g.compile(threads=1).run({"x": xv})["y"]
    np.testing.assert_array_equal(got, xv * bias)


@pytest.mark.parametrize(
    "shapes",
    [((3, 129, 257), (3, 129, 257)), ((3, 129, 257), (129, 1)), ((1, 129, 257), (5, 1, 257))],
    ids=str,
)
def test_binary_result_is_identical_for_one_and_two_threads(shapes, rng):
    a = random_array(rng, shapes[0], np.float32)
    b = random_array(rng, shapes[1], np.float32)
    (one,) = run_op("Div", [a, b], threads=1)
    (two,) = run_op("Div", [a, b], threads=2)
    assert np.array_equal(one, two, equal_nan=True)
    ai = random_array(rng, shapes[0], np.int64)
    bi = random_array(rng, shapes[1], np.int64)
    (one_int,) = run_op("Mul", [ai, bi], threads=1)
    (two_int,) = run_op("Mul", [ai, bi], threads=2)
    assert np.array_equal(one_int, two_int)


# ---- activations ------------------------------------------------------------------------

erf64 = np.vectorize(math.erf, otypes=[np.float64])


def sigmoid64(x):
    return 1.0 / (1.0 + np.exp(-x))


ACTIVATIONS = {
    # op type, attributes -> float64 reference
    ("Tanh", ()): np.tanh,
    ("Sigmoid", ()): sigmoid64,
    ("Erf", ()): erf64,
    ("Gelu", ()): lambda x: 0.5 * x * (1.0 + erf64(x / math.sqrt(2.0))),
    ("Gelu", (("approximate", "none"),)): lambda x: 0.5 * x * (1.0 + erf64(x / math.sqrt(2.0))),
    ("Gelu", (("approximate", "tanh"),)): lambda x: 0.5 * x * (
        1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3))
    ),
}


def activation_input(rng, shape):
    x = (rng.standard_normal(shape) * 4.0).astype(np.float32)
    flat = x.reshape(-1)
    edges = np.array([0.0, -0.0, 30.0, -30.0, 100.0, -100.0, 1e-7, -1e-7], dtype=np.float32)
    flat[: min(flat.size, edges.size)] = edges[: flat.size]
    return x


@pytest.mark.parametrize("shape", [(7, 13), (1,), (2, 3, 5)], ids=str)
@pytest.mark.parametrize(
    "case", list(ACTIVATIONS), ids=lambda c: c[0] + "".join(f"-{v}" for _, v in c[1])
)
def test_activation_matches_float64_reference(case, shape, rng):
    # f32 libm results are within a few ulp of the exact value: rtol 1e-5, atol 1e-6.
    op_type, attrs = case
    x = activation_input(rng, shape)
    with np.errstate(over="ignore"):
        ref = ACTIVATIONS[case](x.astype(np.float64))
    (got,) = run_op(op_type, [x], **dict(attrs))
    assert got.shape == x.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_relu_matches_numpy_maximum_and_keeps_nan(rng):
    x = activation_input(rng, (7, 13))
    x[0, 0] = np.nan
    (got,) = run_op("Relu", [x])
    np.testing.assert_array_equal(got, np.maximum(x, np.float32(0)))


@pytest.mark.parametrize("alpha", [None, 0.2, -1.5])
def test_leaky_relu_scales_negative_inputs_by_alpha(alpha, rng):
    x = activation_input(rng, (13, 7))
    attrs = {} if alpha is None else {"alpha": alpha}
    slope = np.float32(0.01 if alpha is None else alpha)
    (got,) = run_op("LeakyRelu", [x], **attrs)
    np.testing.assert_array_equal(got, np.where(x < 0, slope * x, x))


@pytest.mark.parametrize("op_type", ["Gelu", "Sigmoid", "Tanh"])
def test_activation_result_is_identical_for_one_and_two_threads(op_type, rng):
    x = (rng.standard_normal((5, 127, 129)) * 3).astype(np.float32)
    assert np.array_equal(run_op(op_type, [x], threads=1)[0], run_op(op_type, [x], threads=2)[0])


# ---- bad input ----------------------------------------------------------------------------

@pytest.mark.parametrize("op_type", BINARY_OPS)
def test_binary_op_rejects_operands_of_different_dtypes(op_type):
    with pytest.raises(nxe.DtypeMismatchError, match=op_type):
        compile_op(op_type, [((2, 3), "f32"), ((2, 3), "i32")])


@pytest.mark.parametrize("op_type", BINARY_OPS)
def test_binary_op_rejects_shapes_that_do_not_broadcast(op_type):
    with pytest.raises(nxe.ShapeMismatchError, match=op_type):
        compile_op(op_type, [((3, 4), "f32"), ((5,), "f32")])


@pytest.mark.parametrize("op_type", BINARY_OPS)
def test_binary_op_rejects_bool_operands(op_type):
    with pytest.raises(nxe.DtypeMismatchError, match=op_type):
        compile_op(op_type, [((4,), "bool"), ((4,), "bool")])


@pytest.mark.parametrize("op_type", ["Relu", "LeakyRelu", "Tanh", "Sigmoid", "Gelu", "Erf"])
def test_activation_rejects_non_f32_input(op_type):
    with pytest.raises(nxe.DtypeMismatchError, match=op_type):
        compile_op(op_type, [((4,), "i32")])


def test_gelu_rejects_unknown_approximation():
    with pytest.raises(nxe.InvalidArgumentError, match="Gelu.*approximate"):
        compile_op("Gelu", [((4,), "f32")], approximate="fast")


@pytest.mark.parametrize("op_type", [*BINARY_OPS, "Relu", "LeakyRelu", "Tanh", "Sigmoid", "Gelu",
                                     "Erf"])
def test_unknown_attribute_is_rejected(op_type):
    specs = [((4,), "f32")] * (2 if op_type in BINARY_OPS else 1)
    with pytest.raises(nxe.NotFoundError, match=f"{op_type}.*slope"):
        build_op(op_type, specs, slope=1)


# ---- f64 and the wide unsigned dtypes -------------------------------------------------------


@pytest.mark.parametrize("op_type,fn", [("Add", np.add), ("Sub", np.subtract),
                                        ("Mul", np.multiply), ("Div", np.divide)])
def test_f64_arithmetic_matches_numpy_in_double(op_type, fn, rng):
    a = rng.standard_normal((2, 1, 5)) * 1e3
    b = rng.standard_normal((3, 5)) + 2.0**-40
    (got,) = run_op(op_type, [a, b])
    assert got.dtype == np.float64 and got.shape == (2, 3, 5)
    np.testing.assert_array_equal(got, fn(a, b))


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32, np.uint64])
@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Div"])
def test_wide_unsigned_arithmetic_wraps_and_divides_by_zero_to_zero(op_type, dtype, rng):
    info = np.iinfo(dtype)
    a = rng.integers(0, info.max, size=(4, 6), dtype=dtype, endpoint=True)
    b = rng.integers(0, info.max, size=(6,), dtype=dtype, endpoint=True)
    a[0, 0], b[0], b[1] = info.max, 0, 1
    modulus = 1 << info.bits
    fn = {"Add": lambda x, y: (x + y) % modulus, "Sub": lambda x, y: (x - y) % modulus,
          "Mul": lambda x, y: (x * y) % modulus, "Div": lambda x, y: x // y if y else 0}[op_type]
    ref = np.array([[fn(int(x), int(y)) for x, y in zip(row, b)] for row in a], dtype=dtype)
    (got,) = run_op(op_type, [a, b])
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, ref)
