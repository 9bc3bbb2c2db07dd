"""Graphs the graph fuzzer (tests/fuzz/fuzz_graph.c) found crashing the compiler, each reduced to
the op and shapes at fault: every one must now fail with a shape error (naming the op where an
op is at fault), and the same op on shapes that fit must still compile and compute what numpy
computes."""

import numpy as np
import nxe
import pytest

INT64_MAX = 2**63 - 1


# The largest per-tensor limit: the checks behind the default limit are reached.
UNLIMITED_TENSORS = nxe.Limits(max_tensor_bytes=2**64 - 1)

def test_expand_whose_output_overflows_int64_is_a_shape_error():
    # The fuzzer's graph: Expand of a [15] input to [INT64_MAX, 1] broadcasts to
    # [INT64_MAX, 15], whose element count (about 1.4e20) overflowed while the rule built its view.
    g = nxe.Graph()
    x = g.input("x", (15,), "f32")
    g.mark_output(g.Expand(x, shape=[INT64_MAX, 1], name="wide"), name="y")
    with pytest.raises(nxe.ShapeMismatchError, match="wide.*more elements than fit in 64 bits"):
        g.compile(threads=1)


@pytest.mark.parametrize("op", ["Add", "Where"])
def test_broadcast_whose_output_overflows_int64_is_a_shape_error(op):
    # Each operand fits, [2^32, 1] and [1, 2^32]; their broadcast has 2^64 elements.
    g = nxe.Graph()
    a = g.input("a", (2**32, 1), "f32")
    b = g.input("b", (1, 2**32), "f32")
    if op == "Where":
        cond = g.input("c", (1, 1), "bool")
        y = g.Where(cond, a, b, name="wide")
    else:
        y = g.Add(a, b, name="wide")
    g.mark_output(y, name="y")
    with pytest.raises(nxe.ShapeMismatchError, match="wide.*more elements than fit in 64 bits"):
        g.compile(threads=1)


def test_expand_that_fits_still_computes_numpys_broadcast():
    g = nxe.Graph()
    x = g.input("x", (3,), "f32")
    g.mark_output(g.Expand(x, shape=[2, 1]), name="y")
    data = np.arange(3, dtype=np.float32)
    with g.compile(threads=1) as exe:
        np.testing.assert_array_equal(exe.run(data)["y"], np.broadcast_to(data, (2, 3)))


@pytest.mark.parametrize("shape", [(0, 12, 2**60), (12, 2**60, 0), (12, 0, 2**60)])
def test_empty_tensor_whose_other_dims_overflow_is_refused_in_any_order(shape):
    # The fuzzer's graph: Add of a [0, 12, 2^60] input; with zero elements it passed the size
    # check, then the rule's strides (12 * 2^60) overflowed. Its reordering [12, 2^60, 0] was
    # already refused; now every order is.
    g = nxe.Graph()
    with pytest.raises(nxe.ShapeMismatchError, match="too large"):
        g.input("x", shape, "f32")


def test_empty_tensor_with_dims_that_fit_still_compiles_and_runs():
    g = nxe.Graph()
    x = g.input("x", (0, 12, 5), "f32")
    g.mark_output(g.Add(x, g.constant(np.ones(5, np.float32), name="one")), name="y")
    with g.compile(threads=1) as exe:
        y = exe.run(np.zeros((0, 12, 5), np.float32))["y"]
    assert y.shape == (0, 12, 5)


def test_fully_connected_whose_packed_weights_overflow_is_an_out_of_memory_error():
    # The fuzzer's graph: FullyConnected(x, x) with x of [1, 2^63 / 3] f32. The tensor's byte
    # size fits in size_t, but packing W for the kernels rounds it up to whole panels, and that
    # size overflowed while the compiler prepared the step.
    g = nxe.Graph()
    x = g.input("x", (1, INT64_MAX // 3), "f32")
    g.mark_output(g.FullyConnected(x, x), name="y")
    # The per-tensor limit refuses x first by default; lifted, the packing check must hold.
    with pytest.raises(nxe.OutOfMemoryError, match="does not fit in memory once packed"):
        g.compile(threads=1, limits=UNLIMITED_TENSORS)


def test_fully_connected_that_fits_still_computes_numpys_product():
    rng = np.random.default_rng(0)
    g = nxe.Graph()
    x = g.input("x", (3, 7), "f32")
    w = rng.standard_normal((5, 7)).astype(np.float32)
    g.mark_output(g.FullyConnected(x, g.constant(w, name="w")), name="y")
    data = rng.standard_normal((3, 7)).astype(np.float32)
    with g.compile(threads=1) as exe:
        # fp32 sums of 7 products of unit normals: 1e-5 covers their rounding
        np.testing.assert_allclose(exe.run(data)["y"], data @ w.T, rtol=0, atol=1e-5)


def test_matmul_of_a_constant_with_no_batches_packs_nothing():
    # The fuzzer's graph: MatMul(w, w) for a constant w of [0, 16, 16]. Its empty batch made B
    # look shared by every batch, and packing it read a 16 x 16 matrix from no data (a heap
    # over-read that the sanitizer pass of .ci/run reports). The output is empty, as numpy's.
    w = np.zeros((0, 16, 16), np.float32)
    g = nxe.Graph()
    c = g.constant(w, name="w")
    g.mark_output(g.MatMul(c, c), name="y")
    with g.compile(threads=1) as exe:
        y = exe.run()["y"]
    assert y.shape == (w @ w).shape


@pytest.mark.parametrize("op, attrs", [("CumProd", {"axis": 0}), ("CumSum", {"axis": 0}),
                                       ("LRN", {"size": 3})])
def test_op_over_an_empty_input_with_a_huge_dim_returns_at_once(op, attrs):
    # The fuzzer's graphs: CumProd, then LRN, of a [0, 1, 2^60] input. Nothing is to be
    # computed, yet the runs walked 2^60 empty lanes (a hang); a step whose outputs are all
    # empty is now skipped. The output is empty, as numpy's would be.
    g = nxe.Graph()
    x = g.input("x", (0, 1, 2**60), "f32")
    g.mark_output(getattr(g, op)(x, **attrs), name="y")
    # The per-tensor limit refuses such strides by default; lifted, the run must still return.
    with g.compile(threads=1, limits=UNLIMITED_TENSORS) as exe:
        y = exe.run(np.empty((0, 1, 2**60), np.float32))["y"]
    assert y.shape == (0, 1, 2**60)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_of_an_infinite_coordinate_on_a_one_pixel_axis_is_defined(padding_mode):
    # The fuzzer's graph: GridSample with align_corners over a 1 x 1 input and an infinite grid
    # coordinate: inf * (size - 1) made the sample position NaN, converted to an integer
    # (undefined behaviour, which the sanitizer pass of .ci/run reports). Every output stays
    # finite: the position is bounded like any far one.
    g = nxe.Graph()
    x = g.input("x", (1, 1, 1, 1), "f32")
    grid = g.input("grid", (1, 1, 2, 2), "f32")
    g.mark_output(g.GridSample(x, grid, align_corners=1, padding_mode=padding_mode), name="y")
    coords = np.array([[[[np.inf, 0.0], [-np.inf, np.inf]]]], np.float32)
    with g.compile(threads=1) as exe:
        y = exe.run(np.ones((1, 1, 1, 1), np.float32), coords)["y"]
    assert y.shape == (1, 1, 1, 2) and np.isfinite(y).all()
