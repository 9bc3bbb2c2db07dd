"""Custom ops registered from Python (cffi callbacks) and from C, used by graphs, compiled
binaries and the ONNX importer; composed ops built from built-in ops. References are numpy."""

import shutil
import subprocess

import cffi
import numpy as np
import nxe
import pytest
from nxe import _binding
from nxe._binding import ffi

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

# f32 kernels against float64 numpy on values of magnitude < 10
TOL = dict(rtol=1e-5, atol=1e-6)


def same_as_input(inputs, attrs):
    shape, dtype, _ = inputs[0]
    return [(shape, dtype)]


def two_like_input(inputs, attrs):
    shape, dtype, _ = inputs[0]
    return [(shape, dtype), (shape, dtype)]


def swish(inputs, attrs):
    x = inputs[0].astype(np.float64)
    return [attrs["scale"] * x / (1 + np.exp(-attrs["beta"] * x))]


def swish_ref(x, beta, scale):
    x = x.astype(np.float64)
    return scale * x / (1 + np.exp(-beta * x))


def split_sign(inputs, attrs):
    x = inputs[0]
    return [np.maximum(x, 0), np.minimum(x, 0)]


@pytest.fixture
def ctx():
    context = nxe.Context()
    context.register_op("py.ScaledSwish", same_as_input, swish, num_inputs=1,
                        attrs={"beta": 1.0, "scale": ("float", None)}, domain="py.domain",
                        onnx_op_type="ScaledSwish")
    context.register_op("py.SplitSign", two_like_input, split_sign, num_inputs=1, num_outputs=2,
                        domain="py.domain", onnx_op_type="SplitSign")
    yield context
    context.close()


def swish_graph(context):
    g = nxe.Graph(context=context)
    x = g.input("x", (3, 17))
    s, = g.op("py.ScaledSwish", [x], beta=1.5, scale=0.5)
    pos, neg = g.op("py.SplitSign", [s])
    g.mark_output(pos, "pos")
    g.mark_output(neg, "neg")
    return g


def test_python_ops_in_a_graph_match_numpy(ctx, rng):
    x = rng.standard_normal((3, 17)).astype(np.float32) * 4
    out = swish_graph(ctx).compile().run(x)
    s = swish_ref(x, 1.5, 0.5)
    np.testing.assert_allclose(out["pos"], np.maximum(s, 0), **TOL)
    np.testing.assert_allclose(out["neg"], np.minimum(s, 0), **TOL)


def test_binary_loads_with_the_context_and_names_the_op_without_it(ctx, rng):
    binary = swish_graph(ctx).compile_to_binary()
    with pytest.raises(nxe.NotFoundError, match="py.ScaledSwish"):
        nxe.VirtualMachine(binary)
    other = nxe.Context()
    other.register_op("py.SplitSign", two_like_input, split_sign, num_inputs=1, num_outputs=2)
    with pytest.raises(nxe.NotFoundError, match="py.ScaledSwish"):
        nxe.VirtualMachine(binary, context=other)
    other.register_op("py.ScaledSwish", same_as_input, swish, num_inputs=1,
                      attrs={"beta": 1.0, "scale": ("float", None)})
    x = rng.standard_normal((3, 17)).astype(np.float32)
    with nxe.VirtualMachine(binary, context=other) as vm:
        other.close()  # the executable keeps the ops it uses
        out = vm.executable.run(x)
    s = swish_ref(x, 1.5, 0.5)
    np.testing.assert_allclose(out["pos"], np.maximum(s, 0), **TOL)
    np.testing.assert_allclose(out["neg"], np.minimum(s, 0), **TOL)


def test_callback_failures_become_statuses_with_their_messages(rng):
    ctx = nxe.Context()

    def compute(inputs, attrs):
        if np.isnan(inputs[0]).any():
            raise ValueError("NaN in the input")
        return [inputs[0] * 2]

    def bad_rank(inputs, attrs):
        return [((1,) * 7, "f32")]

    def refuse(inputs, attrs):
        raise nxe.ShapeMismatchError("no shape suits this op")

    ctx.register_op("py.Double", same_as_input, compute, num_inputs=1)
    ctx.register_op("py.BadRank", bad_rank, compute, num_inputs=1)
    ctx.register_op("py.Refuse", refuse, compute, num_inputs=1)
    ctx.register_op("py.BadDtype", lambda i, a: [((2,), "no-such-dtype")], compute,
                    num_inputs=1)

    def graph(op_type):
        g = nxe.Graph(context=ctx)
        y, = g.op(op_type, [g.input("x", (2,))])
        g.mark_output(y, "y")
        return g

    exe = graph("py.Double").compile()
    x = np.array([1.0, 2.0], np.float32)
    np.testing.assert_array_equal(exe.run(x)["y"], x * 2)
    with pytest.raises(nxe.RunError, match="ValueError: NaN in the input"):
        exe.run(np.array([1.0, np.nan], np.float32))
    with pytest.raises(nxe.ShapeMismatchError, match="rank 7"):
        graph("py.BadRank").compile()
    with pytest.raises(nxe.ShapeMismatchError, match="no shape suits this op"):
        graph("py.Refuse").compile()
    with pytest.raises(nxe.Error, match="no-such-dtype"):
        graph("py.BadDtype").compile()
    with pytest.raises(nxe.InvalidStateError, match="already registered"):
        ctx.register_op("py.Double", same_as_input, compute, num_inputs=1)
    with pytest.raises(nxe.InvalidStateError, match="built-in"):
        ctx.register_op("Relu", same_as_input, compute, num_inputs=1)


def test_prepare_runs_once_per_executable_and_compute_gets_its_result(rng):
    ctx = nxe.Context()
    prepared = []

    def prepare(inputs, attrs):
        assert inputs[0] is None  # not a constant
        packed = np.ascontiguousarray(inputs[1].T) * attrs["gain"]  # the weights, packed once
        prepared.append(packed)
        return packed

    def compute(inputs, attrs, packed):
        return [inputs[0] @ packed]

    def infer(inputs, attrs):
        (rows, _), dtype, _ = inputs[0]
        return [((rows, inputs[1][0][0]), dtype)]

    ctx.register_op("py.ScaledMatMul", infer, compute, num_inputs=2, attrs={"gain": 1.0},
                    prepare=prepare)
    g = nxe.Graph(context=ctx)
    w = rng.standard_normal((5, 3)).astype(np.float32)
    y, = g.op("py.ScaledMatMul", [g.input("x", (4, 3)), g.constant(w)], gain=2.0)
    g.mark_output(y, "y")
    exe = g.compile()
    x = rng.standard_normal((4, 3)).astype(np.float32)
    for _ in range(3):
        np.testing.assert_allclose(exe.run(x)["y"], x.astype(np.float64) @ (2 * w.T), **TOL)
    assert len(prepared) == 1
    with nxe.VirtualMachine(g.compile_to_binary(), context=ctx) as vm:
        np.testing.assert_allclose(vm.executable.run(x)["y"], x.astype(np.float64) @ (2 * w.T),
                                   **TOL)
    assert len(prepared) == 2


def test_default_context_ops_reach_every_graph(rng):
    nxe.register_op("py.DefaultTriple", same_as_input, lambda i, a: [i[0] * 3], num_inputs=1)
    g = nxe.Graph()
    y, = g.op("py.DefaultTriple", [g.input("x", (4,))])
    g.mark_output(y, "y")
    x = rng.standard_normal(4).astype(np.float32)
    np.testing.assert_allclose(g.compile().run(x)["y"], x * 3, **TOL)


# -- ONNX ----------------------------------------------------------------------------------

def custom_domain_model():
    """x -> ScaledSwish (domain py.domain, beta and scale attributes) -> Add(b) -> y, and
    SplitSign giving two more outputs."""
    nodes = [
        helper.make_node("ScaledSwish", ["x"], ["s"], domain="py.domain", beta=0.75, scale=2.0),
        helper.make_node("Add", ["s", "b"], ["y"]),
        helper.make_node("SplitSign", ["y"], ["pos", "neg"], domain="py.domain"),
    ]
    b = np.linspace(-1, 1, 6, dtype=np.float32)
    graph = helper.make_graph(
        nodes, "custom", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 6]) for n in ("pos", "neg")],
        initializer=[onnx.numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("py.domain", 1)])
    return model, b


def test_onnx_custom_domain_nodes_run_python_ops(ctx, rng):
    model, b = custom_domain_model()
    x = rng.standard_normal((2, 6)).astype(np.float32)
    out = nxe.onnx.load(model, context=ctx).run({"x": x})
    y = swish_ref(x, 0.75, 2.0) + b
    np.testing.assert_allclose(out["pos"], np.maximum(y, 0), **TOL)
    np.testing.assert_allclose(out["neg"], np.minimum(y, 0), **TOL)
    # Without the context no op answers to the custom domain.
    assert [op for op, _ in nxe.onnx.load(model).unsupported_nodes()] == [
        "py.domain.ScaledSwish", "py.domain.SplitSign"]


C_OP = r"""
#include <math.h>
#include <string.h>
#include <nxe/nxe.h>

static nxe_status infer(const nxe_custom_call *call, const nxe_custom_tensor *in, int32_t n_in,
                        nxe_custom_tensor *out, int32_t n_out)
{
    (void)call, (void)n_in;
    for (int32_t i = 0; i < n_out; i++) {
        out[i].dtype = in[0].dtype;
        out[i].ndim = in[0].ndim;
        memcpy(out[i].shape, in[0].shape, sizeof out[i].shape);
    }
    return NXE_OK;
}

typedef struct { const float *x; float *y; float beta, scale; } loop_arg;

static void body(void *arg, int64_t begin, int64_t end)
{
    const loop_arg *a = arg;
    for (int64_t i = begin; i < end; i++)
        a->y[i] = a->scale * a->x[i] / (1.0f + expf(-a->beta * a->x[i]));
}

static nxe_status compute(const nxe_custom_call *call, const nxe_custom_tensor *in,
                          int32_t n_in, nxe_custom_tensor *out, int32_t n_out)
{
    (void)n_in, (void)n_out;
    double beta, scale;
    nxe_status status = nxe_custom_attr_float(call->attrs, "beta", &beta);
    if (status == NXE_OK)
        status = nxe_custom_attr_float(call->attrs, "scale", &scale);
    if (status != NXE_OK)
        return status;
    loop_arg a = {in[0].data, out[0].data, (float)beta, (float)scale};
    return nxe_custom_parallel_for(call, (int64_t)(in[0].data_size / sizeof(float)), 2, body, &a);
}

static const nxe_op_attr_info attrs[] = {{"beta", "", NXE_ATTR_FLOAT, "1.0"},
                                         {"scale", "", NXE_ATTR_FLOAT, "1.0"}};

nxe_status register_c_swish(nxe_context *ctx)
{
    nxe_custom_op op = NXE_CUSTOM_OP_INIT;
    op.name = "c.ScaledSwish";
    op.domain = "py.domain";
    op.onnx_op_type = "ScaledSwish";
    op.num_inputs = 1;
    op.num_outputs = 1;
    op.attrs = attrs;
    op.num_attrs = 2;
    op.infer = infer;
    op.compute = compute;
    return nxe_context_register_op(ctx, &op);
}
"""


def test_onnx_custom_domain_node_runs_an_op_registered_from_c(tmp_path, rng):
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.fail("no C compiler on PATH")
    source = tmp_path / "c_swish.c"
    source.write_text(C_OP)
    library = tmp_path / "libc_swish.so"
    subprocess.run([compiler, "-std=c11", "-Wall", "-Werror", "-shared", "-fPIC", "-O1",
                    f"-I{_binding.INCLUDE_DIR}", str(source), "-o", str(library),
                    # the library this process runs (NXE_LIBRARY may name another build)
                    f"-L{_binding.LIBRARY_PATH.parent}",
                    f"-Wl,-rpath,{_binding.LIBRARY_PATH.parent}", "-lnxe", "-lm"],
                   check=True, capture_output=True)
    c_ffi = cffi.FFI()
    c_ffi.cdef("int32_t register_c_swish(void *ctx);")
    c_lib = c_ffi.dlopen(str(library))
    ctx = nxe.Context()
    assert c_lib.register_c_swish(c_ffi.cast("void *", ffi.cast("uintptr_t", ctx._handle))) == 0
    ctx.register_op("py.SplitSign", two_like_input, split_sign, num_inputs=1, num_outputs=2,
                    domain="py.domain", onnx_op_type="SplitSign")
    assert ctx.onnx_op("py.domain", "ScaledSwish") == "c.ScaledSwish"
    model, b = custom_domain_model()
    x = rng.standard_normal((2, 6)).astype(np.float32)
    out = nxe.onnx.load(model, context=ctx).run({"x": x})
    y = swish_ref(x, 0.75, 2.0) + b
    np.testing.assert_allclose(out["pos"], np.maximum(y, 0), **TOL)
    np.testing.assert_allclose(out["neg"], np.minimum(y, 0), **TOL)


# -- composed ops ----------------------------------------------------------------------------

def gelu_tanh_body(context):
    """y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))"""
    g = nxe.Graph(context=context)
    x = g.input("x", (4,))

    def op(op_type, *inputs):
        return g.op(op_type, list(inputs))[0]

    def const(value):
        return g.constant(np.float32(value))

    x3 = op("Mul", op("Mul", x, x), x)
    inner = op("Mul", op("Add", x, op("Mul", x3, const(0.044715))), const(0.7978845608))
    y = op("Mul", op("Mul", x, const(0.5)), op("Add", op("Tanh", inner), const(1.0)))
    g.mark_output(y, "y")
    return g


def layer_norm_body(context, width):
    """(x - mean) / sqrt(var + eps) * gamma + beta over the last axis, gamma and beta inside."""
    g = nxe.Graph(context=context)
    x = g.input("x", (1, width))

    def op(op_type, *inputs, **attrs):
        return g.op(op_type, list(inputs), **attrs)[0]

    mean = op("ReduceMean", x, axes=[-1], keepdims=1)
    centered = op("Sub", x, mean)
    var = op("ReduceMean", op("Mul", centered, centered), axes=[-1], keepdims=1)
    normed = op("Div", centered, op("Sqrt", op("Add", var, g.constant(np.float32(1e-5)))))
    gamma = np.linspace(0.5, 1.5, width, dtype=np.float32)
    beta = np.linspace(-0.2, 0.2, width, dtype=np.float32)
    y = op("Add", op("Mul", normed, g.constant(gamma)), g.constant(beta))
    g.mark_output(y, "y")
    return g, gamma, beta


def test_composed_ops_match_numpy(rng):
    ctx = nxe.Context()
    ctx.register_composed_op("py.GeluTanh", gelu_tanh_body(ctx))
    body, gamma, beta = layer_norm_body(ctx, 8)
    ctx.register_composed_op("py.LayerNorm8", body, domain="py.domain")
    g = nxe.Graph(context=ctx)
    x = g.input("x", (5, 8))
    h, = g.op("py.LayerNorm8", [x])
    y, = g.op("py.GeluTanh", [h])
    g.mark_output(y, "y")
    exe = g.compile()
    assert y.shape == (5, 8)
    xs = rng.standard_normal((5, 8)).astype(np.float32) * 3
    x64 = xs.astype(np.float64)
    mean = x64.mean(-1, keepdims=True)
    var = ((x64 - mean) ** 2).mean(-1, keepdims=True)
    h_ref = (x64 - mean) / np.sqrt(var + 1e-5) * gamma + beta
    y_ref = 0.5 * h_ref * (1 + np.tanh(np.sqrt(2 / np.pi) * (h_ref + 0.044715 * h_ref ** 3)))
    np.testing.assert_allclose(exe.run(xs)["y"], y_ref, rtol=1e-5, atol=1e-5)
    # The binary holds the expanded body: it loads without the context.
    with nxe.VirtualMachine(g.compile_to_binary()) as vm:
        np.testing.assert_allclose(vm.executable.run(xs)["y"], y_ref, rtol=1e-5, atol=1e-5)
