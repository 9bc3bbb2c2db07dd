"""Sizes derived from shapes never wrap: a shape rule's output above the per-tensor limit
(NXE_LIMIT_TENSOR_BYTES, 1 TiB) or whose byte count overflows, and a plan whose run needs more
than the per-executable limit (NXE_LIMIT_EXECUTABLE_BYTES, 4 TiB), fail to compile with a
status naming the op and tensor before anything is allocated; and the compiler's passes stay
linear in the graph's size."""

import numpy as np
import nxe
import nxe.onnx
import pytest
from nxe._binding import ffi, lib
from onnx import TensorProto, helper

TENSOR_LIMIT = 1 << 40
EXECUTABLE_LIMIT = 4 << 40


def expand_graph(targets, dtype="f32"):
    """x (1,) expanded to each shape in `targets`, each an output."""
    g = nxe.Graph()
    x = g.input("x", (1,), dtype)
    for i, target in enumerate(targets):
        (y,) = g.op("Expand", [x], name=f"expand{i}", shape=list(target))
        g.mark_output(y, f"y{i}")
    return g


def test_four_expand_outputs_of_2_60_floats_fail_to_compile():
    # Their staging once summed to 2^64 and wrapped to a 128-byte buffer.
    numel = 1 << 60
    g = expand_graph([[numel]] * 4)
    with pytest.raises(nxe.ShapeMismatchError,
                       match=rf"op 'Expand' \('expand0'\): tensor 'y0' \(f32 \[{numel}\]\) takes "
                             rf"{numel * 4} bytes, above the limit of {TENSOR_LIMIT} bytes per "
                             "tensor"):
        g.compile(threads=1)
    with pytest.raises(nxe.ShapeMismatchError, match="above the limit"):
        g.compile_to_binary()


@pytest.mark.parametrize("target", [(1 << 31, 1 << 31, 4), (1 << 31, 1 << 31, 1 << 31)], ids=str)
def test_expand_whose_element_count_overflows_is_refused(target):
    g = expand_graph([target])
    with pytest.raises(nxe.ShapeMismatchError,
                       match=r"op 'Expand' \('expand0'\): broadcast shape \[.*\] has more "
                             "elements than fit in 64 bits"):
        g.compile(threads=1)


def test_empty_expand_whose_other_dimensions_overflow_is_refused():
    # No elements, but the strides of (0, 2^40, 2^40) would still be products that wrap.
    g = expand_graph([(0, 1 << 40, 1 << 40)])
    with pytest.raises(nxe.ShapeMismatchError,
                       match=r"op 'Expand' \('expand0'\): broadcast shape \[0, 1099511627776, "
                             r"1099511627776\] has more elements than fit in 64 bits"):
        g.compile(threads=1)
    g = expand_graph([(0, 1 << 10, 1 << 10)])
    span = (1 << 20) * 4
    g.compile(threads=1, limits=nxe.Limits(max_tensor_bytes=span))
    with pytest.raises(nxe.ShapeMismatchError,
                       match=rf"dimensions span {span} bytes, above the limit of {span - 1}"):
        g.compile(threads=1, limits=nxe.Limits(max_tensor_bytes=span - 1))


def test_broadcast_add_to_an_overflowing_shape_is_refused():
    g = nxe.Graph()
    a = g.input("a", (1 << 31, 1, 1), "f32")
    b = g.input("b", (1, 1 << 31, 4), "f32")
    (y,) = g.op("Add", [a, b], name="add")
    g.mark_output(y)
    with pytest.raises(nxe.ShapeMismatchError, match=r"op 'Add' \('add'\).*more elements than fit"):
        g.compile(threads=1)


def test_broadcast_where_to_an_overflowing_shape_is_refused():
    g = nxe.Graph()
    cond = g.input("cond", (1 << 31, 1, 1), "bool")
    x = g.input("x", (1, 1 << 31, 1), "f32")
    y = g.input("y", (1, 1, 4), "f32")
    (out,) = g.op("Where", [cond, x, y], name="where")
    g.mark_output(out)
    with pytest.raises(nxe.ShapeMismatchError,
                       match=r"op 'Where' \('where'\).*more elements than fit"):
        g.compile(threads=1)


def test_tensor_at_the_limit_compiles_and_one_element_more_does_not():
    # compile_to_binary plans without allocating, so a tensor of exactly the limit can be shown.
    at_limit = TENSOR_LIMIT // 4
    assert len(expand_graph([[at_limit]]).compile_to_binary()) > 0
    with pytest.raises(nxe.ShapeMismatchError, match=rf"takes {TENSOR_LIMIT + 4} bytes"):
        expand_graph([[at_limit + 1]]).compile_to_binary()


def test_declared_input_above_the_limit_is_refused_naming_it():
    g = nxe.Graph()
    x = g.input("big", (TENSOR_LIMIT // 4 + 1,), "f32")
    g.mark_output(g.op("Relu", [x])[0])
    with pytest.raises(nxe.ShapeMismatchError, match=r"tensor 'big' .* above the limit"):
        g.compile(threads=1)


def test_run_above_the_executable_limit_is_refused_before_allocating():
    # Four outputs of exactly the per-tensor limit: their staging alone is the executable limit.
    g = expand_graph([[TENSOR_LIMIT // 4]] * 4)
    with pytest.raises(nxe.OutOfMemoryError,
                       match=rf"compile: a run needs \d+ bytes .* above the limit of "
                             rf"{EXECUTABLE_LIMIT} bytes per executable"):
        g.compile(threads=1)


def test_onnx_expand_to_huge_outputs_fails_cleanly():
    shape = helper.make_tensor("shape", TensorProto.INT64, [1], [1 << 60])
    nodes = [helper.make_node("Expand", ["x", "shape"], [f"y{i}"], name=f"e{i}") for i in range(4)]
    graph = helper.make_graph(
        nodes, "huge", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, None) for i in range(4)],
        [shape])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    loaded = nxe.onnx.load(model.SerializeToString(), threads=1)
    with pytest.raises(nxe.ShapeMismatchError, match="above the limit of .* bytes per tensor"):
        loaded.run(x=np.ones(1, np.float32))


def test_graph_at_the_file_formats_op_limit_builds_saves_opens_and_runs():
    # 65,534 ops (65,535 tensors, the most a file holds being 65,536). A pass quadratic in the
    # op count (ordering once scanned every op for every produced tensor, the memory plan every
    # placed buffer for each new one) takes minutes here; the linear ones take seconds.
    g = nxe.Graph()
    t = g.input("x", (1,), "f32")
    for _ in range(65_534):
        t = g.op("Neg", [t])[0]
    g.mark_output(t, "y")
    x = np.array([3.0], np.float32)
    np.testing.assert_array_equal(g.compile(threads=1).run(x)["y"], x)
    rebuilt = nxe.Model(nxe.save_model(g)).graph()
    with nxe.VirtualMachine(rebuilt.compile_to_binary(threads=1), threads=1) as vm:
        np.testing.assert_array_equal(vm["main"](x), x)


def test_thousands_of_buffers_alive_at_once_plan_in_linear_time_and_reuse_memory():
    # Two wide sections: 2,000 products of x, concatenated, then 2,000 products of that. Every
    # product of a section is alive at once, so greedy placement would look at millions of
    # pairs; the plan reuses slots by size class instead, and the second section's buffers
    # take the first's. Each product has its own factor, so a slot shared by two live buffers
    # shows in the result.
    width, n = 4, 2_000
    g = nxe.Graph()
    x = g.input("x", (width,), "f32")
    first = g.op("Concat", [g.Mul(x, g.constant(np.float32(i + 1))) for i in range(n)],
                 axis=0)[0]
    second = g.op("Concat", [g.Mul(first, g.constant(np.float32(-i))) for i in range(n)],
                  axis=0)[0]
    g.mark_output(second, "y")
    exe = g.compile(threads=1)
    xv = np.arange(1, width + 1, dtype=np.float32)
    want = np.concatenate([np.concatenate([xv * (i + 1) for i in range(n)]) * -j
                           for j in range(n)])
    np.testing.assert_array_equal(exe.run({"x": xv})["y"], want)
    # At most twice, per size class, the bytes alive at once: the second section's products
    # (n of n * width floats) with the first concatenation.
    alive = (n + 1) * n * width * 4
    assert exe.memory_info()["arena_bytes"] <= 2 * alive


# ---- nxe.Limits: each limit at its value and one past -------------------------------------

def relu_chain(length, size=16):
    g = nxe.Graph()
    t = g.input("x", (size,), "f32")
    for i in range(length):
        t = g.op("Relu", [t], name=f"relu{i}")[0]
    g.mark_output(t, "y")
    return g


def test_max_tensor_bytes_at_the_limit_compiles_and_one_byte_less_names_the_tensor():
    g = relu_chain(2)
    exe = g.compile(threads=1, limits=nxe.Limits(max_tensor_bytes=16 * 4))
    x = np.linspace(-1, 1, 16, dtype=np.float32)
    np.testing.assert_array_equal(exe.run(x)["y"], np.maximum(x, 0))
    with pytest.raises(nxe.ShapeMismatchError,
                       match=r"tensor 'x' .* takes 64 bytes, above the limit of 63 bytes per "
                             r"tensor \(raise nxe_limits.max_tensor_bytes\)"):
        g.compile(threads=1, limits=nxe.Limits(max_tensor_bytes=63))


def test_max_arena_bytes_at_a_runs_size_compiles_and_one_byte_less_does_not():
    g = relu_chain(3)
    exe = g.compile(threads=1)
    needed = exe.memory_info()["arena_bytes"] + exe.stats()["staging_bytes"]
    g.compile(threads=1, limits=nxe.Limits(max_arena_bytes=needed))
    with pytest.raises(nxe.OutOfMemoryError,
                       match=rf"a run needs {needed} bytes .* above the limit of {needed - 1} "
                             r"bytes per executable \(raise nxe_limits.max_arena_bytes\)"):
        g.compile(threads=1, limits=nxe.Limits(max_arena_bytes=needed - 1))
    binary = g.compile_to_binary(threads=1)
    nxe.VirtualMachine(binary, threads=1, limits=nxe.Limits(max_arena_bytes=needed)).close()
    with pytest.raises(nxe.OutOfMemoryError, match="max_arena_bytes"):
        nxe.VirtualMachine(binary, threads=1, limits=nxe.Limits(max_arena_bytes=needed - 1))


def test_max_ops_at_the_count_compiles_and_one_less_refuses_graph_model_and_binary():
    g = relu_chain(3)
    g.compile(threads=1, limits=nxe.Limits(max_ops=3))
    message = r"3 ops, above the limit of 2 ops per graph \(raise nxe_limits.max_ops\)"
    with pytest.raises(nxe.InvalidGraphError, match=message):
        g.compile(threads=1, limits=nxe.Limits(max_ops=2))
    model = nxe.save_model(g)
    nxe.Model(model, limits=nxe.Limits(max_ops=3)).close()
    with pytest.raises(nxe.InvalidGraphError, match=message):
        nxe.Model(model, limits=nxe.Limits(max_ops=2))
    binary = g.compile_to_binary(threads=1)
    nxe.VirtualMachine(binary, threads=1, limits=nxe.Limits(max_ops=3)).close()
    with pytest.raises(nxe.InvalidGraphError, match=message):
        nxe.VirtualMachine(binary, threads=1, limits=nxe.Limits(max_ops=2))


def test_graph_limits_refuse_the_op_past_max_ops_and_are_the_compile_default():
    g = nxe.Graph(limits=nxe.Limits(max_ops=2, max_tensor_bytes=15))
    x = g.input("x", (4,), "f32")
    y = g.Relu(x)
    y = g.Relu(y)
    with pytest.raises(nxe.InvalidGraphError,
                       match=r"graph has 2 ops.*raise nxe_limits.max_ops with "
                             r"nxe_context_set_limits"):
        g.Relu(y)
    g.mark_output(y, "y")
    # 4 floats are above the graph's 15 bytes per tensor; limits given to compile come first.
    with pytest.raises(nxe.ShapeMismatchError, match="nxe_limits.max_tensor_bytes"):
        g.compile(threads=1)
    with pytest.raises(nxe.ShapeMismatchError, match="nxe_limits.max_tensor_bytes"):
        g.compile_to_binary(threads=1)
    out = g.compile(threads=1, limits=nxe.Limits()).run({"x": -np.arange(4, dtype=np.float32)})
    np.testing.assert_array_equal(out["y"], np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="negative"):
        nxe.Graph(limits=nxe.Limits(max_ops=-1))
    with pytest.raises(TypeError, match="nxe.Limits"):
        nxe.Graph(limits={"max_ops": 2})


def test_max_file_bytes_at_the_size_opens_and_one_byte_less_is_refused(tmp_path):
    g = relu_chain(1)
    for kind, data in (("model", nxe.save_model(g)), ("binary", g.compile_to_binary(threads=1))):
        path = tmp_path / f"f.{kind}"
        path.write_bytes(data)
        at, below = nxe.Limits(max_file_bytes=len(data)), nxe.Limits(max_file_bytes=len(data) - 1)
        message = (rf"{len(data)} bytes, above the limit of {len(data) - 1} bytes per file "
                   r"\(raise nxe_limits.max_file_bytes\)")
        opener = ((lambda source, limits: nxe.Model(source, limits=limits)) if kind == "model"
                  else (lambda source, limits: nxe.VirtualMachine(source, threads=1,
                                                                  limits=limits)))
        for source in (data, path):
            opener(source, at).close()
            with pytest.raises(nxe.InvalidArgumentError, match=message):
                opener(source, below)


def test_stored_tensor_above_max_tensor_bytes_is_refused_at_open():
    g = nxe.Graph()
    x = g.input("x", (4,), "f32")
    w = g.constant(np.ones(4, np.float32), name="w")
    g.mark_output(g.op("Add", [x, w])[0], "y")
    model = nxe.save_model(g)
    nxe.Model(model, limits=nxe.Limits(max_tensor_bytes=16)).close()
    with pytest.raises(nxe.ShapeMismatchError, match=r"tensor 'w' takes 16 bytes, above the limit"):
        nxe.Model(model, limits=nxe.Limits(max_tensor_bytes=15))


def test_limits_defaults_are_the_headers_and_a_zero_field_means_the_default():
    assert nxe.Limits.DEFAULT_MAX_TENSOR_BYTES == lib.NXE_DEFAULT_MAX_TENSOR_BYTES == TENSOR_LIMIT
    assert nxe.Limits.DEFAULT_MAX_ARENA_BYTES == EXECUTABLE_LIMIT
    numel = TENSOR_LIMIT // 4 + 1
    with pytest.raises(nxe.ShapeMismatchError, match=rf"above the limit of {TENSOR_LIMIT} bytes"):
        expand_graph([[numel]]).compile_to_binary(limits=nxe.Limits())
    with pytest.raises(ValueError, match="negative"):
        relu_chain(1).compile(limits=nxe.Limits(max_ops=-1))


def test_options_of_a_0_4_caller_without_limits_are_accepted():
    # A caller built against 0.4 headers passes the shorter struct_size of each options struct.
    g = relu_chain(1)
    options = ffi.new("nxe_compile_options *")
    options.struct_size = ffi.offsetof("nxe_compile_options", "relax_precision") + 4
    options.num_threads = 1
    out = ffi.new("nxe_executable **")
    assert lib.nxe_graph_compile(g._handle, options, out) == lib.NXE_OK
    lib.nxe_executable_release(out[0])
    options.struct_size -= 1
    assert lib.nxe_graph_compile(g._handle, options, out) == lib.NXE_ERROR_INVALID_ARGUMENT
    data = nxe.save_model(g)
    model_options = ffi.new("nxe_model_options *")
    model_options.struct_size = ffi.offsetof("nxe_model_options", "limits")
    model = ffi.new("nxe_model **")
    assert lib.nxe_model_open_memory(data, len(data), model_options, model) == lib.NXE_OK
    lib.nxe_model_release(model[0])
    binary = g.compile_to_binary(threads=1)
    load_options = ffi.new("nxe_load_options *")
    load_options.struct_size = ffi.offsetof("nxe_load_options", "limits")
    load_options.num_threads = 1
    assert lib.nxe_executable_load_memory(binary, len(binary), load_options, out) == lib.NXE_OK
    lib.nxe_executable_release(out[0])
