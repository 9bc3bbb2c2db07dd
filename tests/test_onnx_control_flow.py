"""ONNX import of Scan and Loop, which the importer unrolls: results against numpy loops, the
scan axes and directions, Scan-8's batch axis, outer-scope reads, and the unsupported cases."""

import numpy as np
import nxe
import nxe.onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_testing import value_info as _vi

F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, opset, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    return model


def _scan_body(outer_name):
    """State s, scan input x: s' = s * 0.5 + x + outer; outputs s' and s' - x."""
    half = numpy_helper.from_array(np.array(0.5, np.float32), "half")
    nodes = [
        helper.make_node("Mul", ["s", "half"], ["m"]),
        helper.make_node("Add", ["m", "x"], ["a"]),
        helper.make_node("Add", ["a", outer_name], ["s_out"]),
        helper.make_node("Sub", ["s_out", "x"], ["y"]),
    ]
    return helper.make_graph(nodes, "body", [_vi("s"), _vi("x")], [_vi("s_out"), _vi("y")],
                             initializer=[half])


def _scan_reference(s, xs, outer):
    ys = []
    for x in xs:
        s = s * np.float32(0.5) + x + outer
        ys.append(s - x)
    return s, ys


@pytest.mark.parametrize("in_axis,in_dir,out_axis,out_dir", [
    (0, 0, 0, 0), (1, 1, 0, 0), (-1, 0, 1, 1), (1, 0, -1, 0)])
def test_scan_axes_and_directions_match_a_numpy_loop(in_axis, in_dir, out_axis, out_dir):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    s0 = rng.standard_normal((4,) if in_axis % 2 == 1 else (3,)).astype(np.float32)
    outer = rng.standard_normal(s0.shape).astype(np.float32)
    node = helper.make_node("Scan", ["s0", "x"], ["s_final", "ys"], body=_scan_body("outer"),
                            num_scan_inputs=1, scan_input_axes=[in_axis],
                            scan_input_directions=[in_dir], scan_output_axes=[out_axis],
                            scan_output_directions=[out_dir])
    # The body reads "outer", a runtime value of the enclosing graph, through an Identity.
    nodes = [helper.make_node("Identity", ["outer_in"], ["outer"]), node]
    model = _model(nodes, [_vi("s0"), _vi("x"), _vi("outer_in")],
                   [_vi("s_final"), _vi("ys")], 11)
    result = nxe.onnx.load(model).run({"s0": s0, "x": x, "outer_in": outer})

    steps = np.moveaxis(x, in_axis, 0)
    steps = steps[::-1] if in_dir else steps
    s, ys = _scan_reference(s0, list(steps), outer)
    ys = ys[::-1] if out_dir else ys
    np.testing.assert_allclose(result["s_final"], s, rtol=1e-5)
    np.testing.assert_allclose(result["ys"], np.stack(ys, axis=out_axis), rtol=1e-5)


def test_scan8_scans_each_batch_element_and_honours_directions():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)
    s0 = rng.standard_normal((2, 3)).astype(np.float32)
    outer = rng.standard_normal((3,)).astype(np.float32)
    node = helper.make_node("Scan", ["", "s0", "x"], ["s_final", "ys"],
                            body=_scan_body("outer"), num_scan_inputs=1, directions=[1])
    model = _model([node], [_vi("s0"), _vi("x")], [_vi("s_final"), _vi("ys")], 8,
                   [numpy_helper.from_array(outer, "outer")])
    result = nxe.onnx.load(model).run({"s0": s0, "x": x})
    finals, stacks = [], []
    for b in range(2):
        s, ys = _scan_reference(s0[b], list(x[b][::-1]), outer)
        finals.append(s)
        stacks.append(np.stack(ys))
    np.testing.assert_allclose(result["s_final"], np.stack(finals), rtol=1e-5)
    np.testing.assert_allclose(result["ys"], np.stack(stacks), rtol=1e-5)


def test_scan_with_mismatched_sequence_lengths_is_unsupported():
    body = helper.make_graph([helper.make_node("Add", ["a", "b"], ["c"])], "body",
                             [_vi("a"), _vi("b")], [_vi("c")])
    node = helper.make_node("Scan", ["x", "z"], ["y"], body=body, num_scan_inputs=2,
                            name="the_scan")
    model = _model([node], [_vi("x"), _vi("z")], [_vi("y")], 11)
    with pytest.raises(nxe.UnsupportedError, match="the_scan.*sequence lengths 3 and 4"):
        nxe.onnx.load(model).run({"x": np.zeros((3, 2), np.float32),
                                  "z": np.zeros((4, 2), np.float32)})


def _loop_body():
    """Carried v: v' = v * 2 + iteration; stops once iteration + 1 >= stop (an outer
    initializer); scan output v' + 1."""
    nodes = [
        helper.make_node("Cast", ["i"], ["i_f"], to=F),
        helper.make_node("Mul", ["v", "two"], ["v2"]),
        helper.make_node("Add", ["v2", "i_f"], ["v_out"]),
        helper.make_node("Add", ["v_out", "one_f"], ["scan"]),
        helper.make_node("Add", ["i", "one"], ["next_i"]),
        helper.make_node("Less", ["next_i", "stop"], ["cond_out"]),
    ]
    inits = [numpy_helper.from_array(np.array(2, np.float32), "two"),
             numpy_helper.from_array(np.array(1, np.float32), "one_f"),
             numpy_helper.from_array(np.array(1, np.int64), "one")]
    return helper.make_graph(nodes, "body", [_vi("i", TensorProto.INT64, []),
                                             _vi("c", TensorProto.BOOL, []), _vi("v")],
                             [_vi("cond_out", TensorProto.BOOL, []), _vi("v_out"),
                              _vi("scan")], initializer=inits)


@pytest.mark.parametrize("trip,stop", [(3, 10), (6, 4), (1, 10)])
def test_loop_with_known_trip_count_and_condition_matches_a_numpy_loop(trip, stop):
    rng = np.random.default_rng(5)
    v0 = rng.standard_normal((2, 3)).astype(np.float32)
    node = helper.make_node("Loop", ["trip", "cond", "v0"], ["v_final", "scans"],
                            body=_loop_body())
    model = _model([node], [_vi("trip", TensorProto.INT64, []),
                            _vi("cond", TensorProto.BOOL, []), _vi("v0")],
                   [_vi("v_final"), _vi("scans")], 13,
                   [numpy_helper.from_array(np.array(stop, np.int64), "stop")])
    loaded = nxe.onnx.load(model)
    result = loaded.run({"trip": np.array(trip, np.int64), "cond": np.array(True), "v0": v0})
    v, scans = v0, []
    for i in range(trip):
        v = v * np.float32(2) + np.float32(i)
        scans.append(v + np.float32(1))
        if not i + 1 < stop:
            break
    np.testing.assert_allclose(result["v_final"], v, rtol=1e-6)
    np.testing.assert_allclose(result["scans"], np.stack(scans), rtol=1e-6)


def test_loop_whose_condition_is_only_known_at_run_time_is_unsupported():
    body = helper.make_graph(
        [helper.make_node("ReduceSum", ["v"], ["total"], keepdims=0),
         helper.make_node("Less", ["total", "limit"], ["cond_out"]),
         helper.make_node("Add", ["v", "v"], ["v_out"])],
        "body", [_vi("i", TensorProto.INT64, []), _vi("c", TensorProto.BOOL, []), _vi("v")],
        [_vi("cond_out", TensorProto.BOOL, []), _vi("v_out")],
        initializer=[numpy_helper.from_array(np.array(100, np.float32), "limit")])
    node = helper.make_node("Loop", ["trip", "", "v0"], ["v_final"], body=body,
                            name="the_loop")
    model = _model([node], [_vi("v0")], [_vi("v_final")], 13,
                   [numpy_helper.from_array(np.array(5, np.int64), "trip")])
    with pytest.raises(nxe.UnsupportedError, match="the_loop.*condition is only known"):
        nxe.onnx.load(model).run({"v0": np.ones((2,), np.float32)})


def test_unsupported_nodes_looks_inside_scan_bodies():
    body = helper.make_graph([helper.make_node("NoSuchOp", ["a", "b"], ["c"], name="inner")],
                             "body", [_vi("a"), _vi("b")], [_vi("c")])
    node = helper.make_node("Scan", ["x", "z"], ["y"], body=body, num_scan_inputs=2)
    model = _model([node], [_vi("x"), _vi("z")], [_vi("y")], 11)
    assert nxe.onnx.unsupported_nodes(model) == [("NoSuchOp", "inner")]
