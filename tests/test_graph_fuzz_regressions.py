"""Graphs the graph fuzzer (tests/fuzz/fuzz_graph.c) found crashing the compiler, each reduced to
the op and shapes at fault: every one must now fail to compile with a status naming the op, and
the same op on a shape that fits must still compile and compute what numpy computes."""

import numpy as np
import nxe
import pytest

INT64_MAX = 2**63 - 1


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
