"""The matmul op family (MatMul, Gemm, FullyConnected) against numpy references computed here,
and the errors each op gives for bad input."""

import numpy as np
import nxe
import pytest
from op_testing import build_op, run_single

RNG = np.random.default_rng(20240612)
# float32 dot products of up to ~100 terms in [-1, 1], against a float64 reference.
TOL = {"rtol": 1e-5, "atol": 1e-5}


def uniform(*shape):
    return RNG.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def f64(a):
    return a.astype(np.float64)


# ---- MatMul -------------------------------------------------------------------------------


@pytest.mark.parametrize("a_shape,b_shape", [
    ((7, 13), (13, 5)),
    ((1, 1), (1, 1)),
    ((13,), (13, 5)),            # 1-D A: a row, dropped from the result
    ((7, 13), (13,)),            # 1-D B: a column, dropped from the result
    ((13,), (13,)),              # both: a scalar
    ((3, 7, 13), (3, 13, 5)),
    ((4, 7, 13), (13, 5)),       # B broadcast over the batch
    ((7, 13), (2, 13, 5)),       # A broadcast over the batch
    ((2, 1, 7, 13), (3, 13, 5)),  # batch dims broadcast both ways
    ((2, 3, 1, 2, 7, 3), (1, 3, 4, 1, 3, 5)),  # rank 6
    ((13,), (2, 3, 13, 5)),
    ((2, 3, 7, 13), (13,)),
    ((0, 7, 13), (13, 5)),       # empty batch
    ((7, 0), (0, 5)),            # empty inner dimension: zeros
])
def test_matmul_matches_numpy_matmul(a_shape, b_shape):
    a, b = uniform(*a_shape), uniform(*b_shape)
    y = run_single("MatMul", [a, b])
    ref = np.matmul(f64(a), f64(b))
    assert y.dtype == np.float32
    assert y.shape == ref.shape
    np.testing.assert_allclose(y, ref, **TOL)


def test_matmul_with_constant_weights():
    a, b = uniform(5, 7, 13), uniform(13, 11)
    np.testing.assert_allclose(run_single("MatMul", [a, b], constants=(1,)), f64(a) @ f64(b), **TOL)


def test_matmul_is_bit_identical_for_one_and_two_threads():
    a, b = uniform(3, 1, 67, 96), uniform(2, 96, 45)
    one = run_single("MatMul", [a, b], threads=1)
    two = run_single("MatMul", [a, b], threads=2)
    assert np.array_equal(one, two)


@pytest.mark.parametrize("a_shape,b_shape,match", [
    ((7, 13), (12, 5), r"A \[7, 13\] has 13 columns but B \[12, 5\] has 12 rows"),
    ((13,), (7,), r"13 columns.*7 rows"),
    ((2, 7, 13), (3, 13, 5), r"\[2\] and \[3\] do not broadcast"),
    ((), (3, 4), r"rank >= 1"),
    ((3, 4), (), r"rank >= 1"),
])
def test_matmul_rejects_mismatched_shapes(a_shape, b_shape, match):
    with pytest.raises(nxe.ShapeMismatchError, match=match) as err:
        build_op("MatMul", [(a_shape, "f32"), (b_shape, "f32")]).compile()
    assert "'MatMul'" in str(err.value)


@pytest.mark.parametrize("dtypes", [("i32", "f32"), ("f32", "f16"), ("i64", "i64")])
def test_matmul_rejects_non_f32_inputs(dtypes):
    with pytest.raises(nxe.DtypeMismatchError, match="'MatMul'"):
        build_op("MatMul", [((2, 3), dtypes[0]), ((3, 4), dtypes[1])]).compile()


def test_matmul_rejects_any_attribute():
    with pytest.raises(nxe.NotFoundError, match="'MatMul'.*'transA'"):
        build_op("MatMul", [((2, 3), "f32"), ((3, 4), "f32")], transA=1)


# ---- Gemm ---------------------------------------------------------------------------------


def gemm_reference(a, b, c, alpha=1.0, beta=1.0, trans_a=0, trans_b=0):
    a, b = f64(a), f64(b)
    y = alpha * ((a.T if trans_a else a) @ (b.T if trans_b else b))
    return y if c is None else y + beta * f64(c)


@pytest.mark.parametrize("trans_a", [0, 1])
@pytest.mark.parametrize("trans_b", [0, 1])
def test_gemm_transposes_operands(trans_a, trans_b):
    m, k, n = 7, 13, 5
    a = uniform(k, m) if trans_a else uniform(m, k)
    b = uniform(n, k) if trans_b else uniform(k, n)
    c = uniform(m, n)
    y = run_single("Gemm", [a, b, c], transA=trans_a, transB=trans_b)
    np.testing.assert_allclose(y, gemm_reference(a, b, c, trans_a=trans_a, trans_b=trans_b), **TOL)


@pytest.mark.parametrize("c_shape", [None, (), (1,), (5,), (1, 5), (7, 1), (1, 1), (7, 5)])
def test_gemm_broadcasts_c_to_the_output(c_shape):
    a, b = uniform(7, 13), uniform(13, 5)
    c = None if c_shape is None else uniform(*c_shape)
    y = run_single("Gemm", [a, b, c], constants=(2,), alpha=0.5, beta=-2.0)
    assert y.shape == (7, 5)
    np.testing.assert_allclose(y, gemm_reference(a, b, c, 0.5, -2.0), **TOL)


@pytest.mark.parametrize("alpha,beta", [(1.0, 1.0), (2.5, 0.0), (0.0, 3.0), (-1.25, 0.75)])
def test_gemm_scales_product_and_addend(alpha, beta):
    a, b, c = uniform(4, 13), uniform(5, 13), uniform(4, 5)
    y = run_single("Gemm", [a, b, c], alpha=alpha, beta=beta, transB=1)
    np.testing.assert_allclose(y, gemm_reference(a, b, c, alpha, beta, trans_b=1), **TOL)


def test_gemm_without_c_ignores_beta():
    a, b = uniform(1, 13), uniform(13, 1)
    y = run_single("Gemm", [a, b, None], alpha=3.0, beta=100.0)
    np.testing.assert_allclose(y, gemm_reference(a, b, None, 3.0), **TOL)


@pytest.mark.parametrize("trans_b", [0, 1])
def test_gemm_is_bit_identical_for_one_and_two_threads(trans_b):
    a, c = uniform(130, 64), uniform(1, 48)
    b = uniform(48, 64) if trans_b else uniform(64, 48)
    one = run_single("Gemm", [a, b, c], threads=1, transB=trans_b, alpha=0.7)
    two = run_single("Gemm", [a, b, c], threads=2, transB=trans_b, alpha=0.7)
    assert np.array_equal(one, two)


@pytest.mark.parametrize("shapes,attrs,match", [
    (((2, 7, 13), (13, 5), None), {}, r"rank 2.*A \[2, 7, 13\]"),
    (((7, 13), (13,), None), {}, r"rank 2.*B \[13\]"),
    (((7, 13), (12, 5), None), {}, r"A \[7, 13\] \(transA=0\) gives K = 13.*gives K = 12"),
    (((7, 13), (13, 5), None), {"transA": 1}, r"transA=1\) gives K = 7"),
    (((7, 13), (13, 5), (3, 5)), {}, r"C \[3, 5\] does not broadcast to the output \[7, 5\]"),
    (((7, 13), (13, 5), (7,)), {}, r"C \[7\] does not broadcast"),
    (((7, 13), (13, 5), (1, 7, 5)), {}, r"C \[1, 7, 5\] does not broadcast"),
])
def test_gemm_rejects_mismatched_shapes(shapes, attrs, match):
    specs = [None if s is None else (s, "f32") for s in shapes]
    with pytest.raises(nxe.ShapeMismatchError, match=match) as err:
        build_op("Gemm", specs, **attrs).compile()
    assert "'Gemm'" in str(err.value)


@pytest.mark.parametrize("attrs,match", [({"transA": 2}, r"transA must be 0 or 1, got 2"),
                                         ({"transB": -1}, r"transB must be 0 or 1, got -1")])
def test_gemm_rejects_bad_transpose_flags(attrs, match):
    with pytest.raises(nxe.InvalidArgumentError, match=match) as err:
        build_op("Gemm", [((3, 3), "f32"), ((3, 3), "f32")], **attrs).compile()
    assert "'Gemm'" in str(err.value)


def test_gemm_rejects_non_f32_addend():
    with pytest.raises(nxe.DtypeMismatchError, match="'Gemm'.*'C'"):
        build_op("Gemm", [((3, 3), "f32"), ((3, 3), "f32"), ((3,), "i32")]).compile()


def test_gemm_rejects_unknown_attribute():
    with pytest.raises(nxe.NotFoundError, match="'Gemm'.*'gamma'"):
        build_op("Gemm", [((3, 3), "f32"), ((3, 3), "f32")], gamma=1.0)


# ---- FullyConnected -----------------------------------------------------------------------


@pytest.mark.parametrize("x_shape", [(7, 13), (13,), (2, 3, 13), (1, 1), (0, 13)])
@pytest.mark.parametrize("with_bias", [False, True])
def test_fully_connected_is_x_times_w_transposed_plus_bias(x_shape, with_bias):
    k, n = x_shape[-1], 5
    x, w = uniform(*x_shape), uniform(n, k)
    b = uniform(n) if with_bias else None
    y = run_single("FullyConnected", [x, w, b], constants=(1, 2))
    ref = f64(x) @ f64(w).T + (0.0 if b is None else f64(b))
    assert y.shape == x_shape[:-1] + (n,)
    np.testing.assert_allclose(y, ref, **TOL)


def test_fully_connected_is_bit_identical_for_one_and_two_threads():
    x, w, b = uniform(4, 50, 96), uniform(33, 96), uniform(33)
    one = run_single("FullyConnected", [x, w, b], threads=1)
    two = run_single("FullyConnected", [x, w, b], threads=2)
    assert np.array_equal(one, two)


@pytest.mark.parametrize("shapes,match", [
    (((7, 13), (5, 12), None), r"weight W \[5, 12\] must have K = 13 columns.*X \[7, 13\]"),
    (((7, 13), (13,), None), r"weight W must have rank 2"),
    (((7, 13), (5, 13), (13,)), r"bias B must have shape \[5\]"),
    (((7, 13), (5, 13), (1, 5)), r"bias B must have shape \[5\]"),
    (((), (5, 1), None), r"input X must have rank >= 1"),
])
def test_fully_connected_rejects_mismatched_shapes(shapes, match):
    specs = [None if s is None else (s, "f32") for s in shapes]
    with pytest.raises(nxe.ShapeMismatchError, match=match) as err:
        build_op("FullyConnected", specs).compile()
    assert "'FullyConnected'" in str(err.value)


def test_fully_connected_rejects_non_f32_weights():
    with pytest.raises(nxe.DtypeMismatchError, match="'FullyConnected'.*'W'"):
        build_op("FullyConnected", [((2, 3), "f32"), ((4, 3), "i8")]).compile()


def test_fully_connected_rejects_unknown_attribute():
    with pytest.raises(nxe.NotFoundError, match="'FullyConnected'.*'units'"):
        build_op("FullyConnected", [((2, 3), "f32"), ((4, 3), "f32")], units=4)
