"""Graph-level behaviour of the compiler: validation messages, the memory plan, variables,
thread pools and executables that outlive their graph."""

import numpy as np
import nxe
import pytest


def relu_chain(length, shape=(64, 64)):
    g = nxe.Graph()
    t = g.input("x", shape, "f32")
    for i in range(length):
        t = g.Relu(t, name=f"relu{i}")
    g.mark_output(t)
    return g


def test_cycle_is_reported_with_the_ops_on_it():
    g = nxe.Graph()
    x = g.input("x", (4,), "f32")
    a = g.tensor(name="a", dtype="f32", kind="transient")
    b = g.tensor(name="b", dtype="f32", kind="transient")
    y = g.tensor(name="y", dtype="f32", kind="output")
    g.op("Add", [x, b], outputs=[a], name="first")
    g.op("Relu", [a], outputs=[b], name="second")
    g.op("Relu", [a], outputs=[y], name="third")
    with pytest.raises(nxe.InvalidGraphError, match="cycle") as err:
        g.compile()
    assert "'first'" in str(err.value) and "'second'" in str(err.value)


def test_self_loop_is_a_cycle():
    g = nxe.Graph()
    x = g.input("x", (4,), "f32")
    a = g.tensor(name="a", dtype="f32", kind="transient")
    y = g.tensor(name="y", dtype="f32", kind="output")
    g.op("Add", [x, a], outputs=[a], name="loop")
    g.op("Relu", [a], outputs=[y])
    with pytest.raises(nxe.InvalidGraphError, match="cycle.*'loop'"):
        g.compile()


def test_consumed_tensor_without_producer_names_tensor_and_op():
    g = nxe.Graph()
    x = g.input("x", (3,), "f32")
    orphan = g.tensor(name="orphan", dtype="f32", kind="transient", shape=(3,))
    g.mark_output(g.Add(x, orphan, name="adder"))
    with pytest.raises(nxe.InvalidGraphError, match="'orphan'.*'adder'"):
        g.compile()


def test_unconsumed_input_is_rejected():
    g = nxe.Graph()
    x = g.input("x", (3,), "f32")
    g.input("unused", (3,), "f32")
    g.mark_output(g.Relu(x))
    with pytest.raises(nxe.InvalidGraphError, match="'unused' is not consumed"):
        g.compile()


def test_output_without_producer_is_rejected():
    g = nxe.Graph()
    x = g.input("x", (3,), "f32")
    g.mark_output(g.Relu(x))
    g.tensor(name="dangling", dtype="f32", kind="output", shape=(3,))
    with pytest.raises(nxe.InvalidGraphError, match="'dangling' is not produced"):
        g.compile()


def test_graph_without_outputs_is_rejected():
    g = nxe.Graph()
    x = g.input("x", (3,), "f32")
    g.Relu(x)
    with pytest.raises(nxe.InvalidGraphError, match="no OUTPUT"):
        g.compile()


def test_tensor_produced_by_two_ops_is_rejected_at_binding():
    g = nxe.Graph()
    x = g.input("x", (3,), "f32")
    y = g.tensor(name="y", dtype="f32", kind="output")
    g.op("Relu", [x], outputs=[y], name="one")
    with pytest.raises(nxe.InvalidGraphError,
                       match="'y' is already produced by op 'Relu' \\('one'\\)"):
        g.op("Tanh", [x], outputs=[y], name="two")


def test_input_tensor_cannot_be_produced():
    g = nxe.Graph()
    x = g.input("x", (3,), "f32")
    z = g.input("z", (3,), "f32")
    with pytest.raises(nxe.InvalidGraphError, match="'z' is an INPUT"):
        g.op("Relu", [x], outputs=[z])


def test_declared_shape_that_contradicts_inference_is_rejected():
    g = nxe.Graph()
    x = g.input("x", (2, 3), "f32")
    y = g.tensor(name="y", dtype="f32", kind="output", shape=(3, 2))
    g.op("Relu", [x], outputs=[y], name="r")
    with pytest.raises(nxe.ShapeMismatchError, match="\\[2, 3\\].*'y'.*\\[3, 2\\]"):
        g.compile()


def test_declared_dtype_that_contradicts_inference_is_rejected():
    g = nxe.Graph()
    x = g.input("x", (2, 3), "f32")
    y = g.tensor(name="y", dtype="i32", kind="output")
    g.op("Relu", [x], outputs=[y])
    with pytest.raises(nxe.DtypeMismatchError, match="'y'.*i32"):
        g.compile()


def test_input_dtype_outside_schema_names_op_input_and_accepted_dtypes():
    g = nxe.Graph()
    x = g.input("x", (2, 3), "i8")
    g.mark_output(g.Tanh(x, name="t"))
    with pytest.raises(nxe.DtypeMismatchError, match="'Tanh' \\('t'\\).*'x'.*i8.*accepted: f32"):
        g.compile()


def test_partially_declared_shapes_are_completed_by_inference():
    g = nxe.Graph()
    x = g.input("x", (2, 5), "f32")
    y = g.tensor(name="y", dtype="f32", kind="output", shape=(2, None))
    g.op("Relu", [x], outputs=[y])
    g.compile()
    assert y.shape == (2, 5) and y.dtype == "f32"


def test_rank_above_six_is_rejected():
    g = nxe.Graph()
    with pytest.raises(nxe.InvalidArgumentError, match="rank 7"):
        g.input("x", (1,) * 7, "f32")


def test_negative_input_dimension_is_rejected():
    g = nxe.Graph()
    with pytest.raises(nxe.ShapeMismatchError, match="dimension"):
        g.input("x", (2, None), "f32")


def test_duplicate_tensor_name_is_rejected():
    g = nxe.Graph()
    g.input("x", (2,), "f32")
    with pytest.raises(nxe.InvalidArgumentError, match="already has a tensor named 'x'"):
        g.input("x", (2,), "f32")


def test_unknown_op_type_is_not_found():
    g = nxe.Graph()
    x = g.input("x", (2,), "f32")
    with pytest.raises(nxe.NotFoundError, match="no op type 'Frobnicate'"):
        g.op("Frobnicate", [x])


def test_chain_of_transients_shares_two_buffers():
    length = 6
    g = relu_chain(length)
    exe = g.compile(threads=1)
    info = exe.memory_info()
    one = 64 * 64 * 4
    # length-1 transients between the input and the output; a chain needs only the pair
    # that is alive at any one step
    assert info["transient_bytes"] == (length - 1) * one
    assert info["arena_bytes"] == 2 * one
    assert info["num_steps"] == length
    x = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    out = exe.run({"x": x})
    np.testing.assert_array_equal(next(iter(out.values())), np.maximum(x, 0))


def test_diamond_keeps_both_branches_alive_and_computes_correctly():
    rng = np.random.default_rng(1)
    g = nxe.Graph()
    x = g.input("x", (16, 16), "f32")
    left = g.Relu(x)
    right = g.Tanh(x)
    mixed = g.Mul(g.Add(left, right), g.Sigmoid(right))
    g.mark_output(mixed, name="y")
    exe = g.compile()
    info = exe.memory_info()
    assert 0 < info["arena_bytes"] < info["transient_bytes"]
    xv = rng.standard_normal((16, 16)).astype(np.float32)
    left_ref = np.maximum(xv, 0)
    right_ref = np.tanh(xv)
    ref = (left_ref + right_ref) * (1 / (1 + np.exp(-right_ref)))
    np.testing.assert_allclose(exe.run({"x": xv})["y"], ref, rtol=1e-5, atol=1e-6)


def test_variable_keeps_state_across_runs_and_can_be_rewritten():
    g = nxe.Graph()
    x = g.input("x", (3,), "f32")
    state = g.variable(np.zeros(3, np.float32), name="state")
    g.mark_output(g.Add(x, state), name="y")
    exe = g.compile()
    xv = np.array([1, 2, 3], np.float32)
    np.testing.assert_array_equal(exe.run({"x": xv})["y"], xv)
    new_state = np.array([10, 20, 30], np.float32)
    exe.write_variable("state", new_state)
    np.testing.assert_array_equal(exe.read_variable("state"), new_state)
    np.testing.assert_array_equal(exe.run({"x": xv})["y"], xv + new_state)


def test_variable_written_by_an_op_is_kept_after_the_run():
    g = nxe.Graph()
    x = g.input("x", (3,), "f32")
    total = g.variable(np.zeros(3, np.float32), name="total")
    g.op("Relu", [x], outputs=[total])
    g.mark_output(g.Tanh(total), name="y")
    exe = g.compile()
    xv = np.array([-1, 0.5, 2], np.float32)
    exe.run({"x": xv})
    np.testing.assert_array_equal(exe.read_variable("total"), np.maximum(xv, 0))


def test_executable_outlives_its_graph():
    g = relu_chain(2, (4,))
    exe = g.compile()
    g.close()
    xv = np.array([-1, 2, -3, 4], np.float32)
    np.testing.assert_array_equal(next(iter(exe.run({"x": xv}).values())), np.maximum(xv, 0))


def test_graph_can_be_compiled_twice_with_different_thread_counts():
    g = relu_chain(3, (1000,))
    xv = np.random.default_rng(2).standard_normal(1000).astype(np.float32)
    one = g.compile(threads=1)
    two = g.compile(threads=2)
    assert one.memory_info()["num_threads"] == 1
    assert two.memory_info()["num_threads"] == 2
    a = next(iter(one.run({"x": xv}).values()))
    b = next(iter(two.run({"x": xv}).values()))
    np.testing.assert_array_equal(a, b)


def test_negative_thread_count_is_rejected():
    g = relu_chain(1, (4,))
    with pytest.raises(nxe.InvalidArgumentError, match="num_threads"):
        g.compile(threads=-1)


def test_unused_intermediate_is_logged_as_a_warning():
    messages = []
    nxe.set_log_callback(lambda level, message: messages.append((level, message)), "warning")
    try:
        g = nxe.Graph()
        x = g.input("x", (3,), "f32")
        g.Tanh(x, name="wasted")
        g.mark_output(g.Relu(x))
        g.compile()
    finally:
        nxe.set_log_callback(None)
    assert any("never used" in message for _, message in messages)


def two_entry_points():
    """One graph holding two independent computations that share a constant and a variable:
    ya = relu(a + c) + v and yb = b * c, with an op whose second output is unused."""
    g = nxe.Graph()
    a = g.input("a", (2, 3), "f32")
    b = g.input("b", (2, 3), "f32")
    c = g.constant(np.arange(6, dtype=np.float32).reshape(2, 3) - 2, name="c")
    v = g.variable(np.full((2, 3), 0.5, np.float32), name="v")
    first, second = g.Split(g.Add(a, c, name="a_plus_c"), axis=0, split=[1, 1], num_outputs=2,
                            name="halves")
    joined = g.Concat(first, second, axis=0, name="joined")
    g.mark_output(g.Add(g.Relu(joined, name="relu"), v, name="plus_v"), name="ya")
    g.mark_output(g.Mul(b, c, name="times_c"), name="yb")
    g.constant(np.ones(4, np.float32), name="unused")
    return g


def test_keep_outputs_compiles_each_entry_point_alone():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 2, 3), dtype=np.float32)
    c = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    whole = two_entry_points().compile().run({"a": a, "b": b})
    np.testing.assert_array_equal(whole["ya"], np.maximum(a + c, 0) + 0.5)
    np.testing.assert_array_equal(whole["yb"], b * c)

    g = two_entry_points()
    g.keep_outputs(["yb"])
    exe = g.compile()
    assert [d[0] for d in exe.inputs] == ["b"]
    assert [d[0] for d in exe.outputs] == ["yb"]
    np.testing.assert_array_equal(exe.run({"b": b})["yb"], whole["yb"])
    for dropped in ("a", "a_plus_c", "plus_v", "ya", "v", "unused"):
        with pytest.raises(nxe.NotFoundError):
            g.find_tensor(dropped)

    g = two_entry_points()
    g.keep_outputs(["ya"])
    exe = g.compile()
    assert [d[0] for d in exe.inputs] == ["a"]
    np.testing.assert_array_equal(exe.run({"a": a})["ya"], whole["ya"])
    # the variable it still uses is kept, readable and writable by name
    exe.write_variable("v", np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(exe.run({"a": a})["ya"], np.maximum(a + c, 0))


def test_keep_outputs_keeps_both_and_checks_names():
    g = two_entry_points()
    g.keep_outputs(["ya", "yb"])
    assert sorted(d[0] for d in g.compile().outputs) == ["ya", "yb"]
    g = two_entry_points()
    with pytest.raises(nxe.NotFoundError, match="'nope'"):
        g.keep_outputs(["nope"])
    with pytest.raises(nxe.InvalidGraphError, match="'a'.*not an OUTPUT"):
        g.keep_outputs(["a"])
    with pytest.raises(nxe.InvalidArgumentError, match="count"):
        g.keep_outputs([])
    with pytest.raises(TypeError):
        g.keep_outputs("ya")
    # a failed call changed nothing
    assert sorted(d[0] for d in g.compile().outputs) == ["ya", "yb"]


def test_keep_outputs_on_a_model_file_keeps_an_unnamed_output_of_a_kept_op(tmp_path):
    g = nxe.Graph()
    x = g.input("x", (4, 2), "f32")
    top, bottom = g.Split(x, axis=0, split=[2, 2], num_outputs=2, name="split")
    g.mark_output(g.Relu(top, name="relu"), name="y")
    g.mark_output(bottom, name="rest")
    g.mark_output(g.Neg(x, name="neg"), name="z")
    nxe.save_model(g, tmp_path / "m.nxm")
    with nxe.Model(tmp_path / "m.nxm") as model:
        built = model.graph()
    built.keep_outputs(["y"])
    exe = built.compile()
    x = np.arange(8, dtype=np.float32).reshape(4, 2) - 4
    assert [d[0] for d in exe.outputs] == ["y"]
    np.testing.assert_array_equal(exe.run({"x": x})["y"], np.maximum(x[:2], 0))
