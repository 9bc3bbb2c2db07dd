"""The layout pass (csrc/transform/layout.c): channels-last models (NHWC activations, OHWI
weights, or channels-first ops between Transposes as tf2onnx exports them) compile to plans
that run channels first, with Transpose steps only at the graph's edges.

Each channels-last model here is the NHWC twin of a channels-first one built with the same
weights (permuted with numpy): the ESPCN and EDSR reference models of
tests/test_reference_models.py and a small CNN with every layout-aware op. After the pass both
run the same channels-first kernels on the same numbers, so outputs must agree to within
TOLERANCE of the output's largest magnitude (they are in fact equal bit for bit today; the
tolerance leaves room for a kernel choice that differs by shape)."""

import numpy as np
import nxe
import pytest
from nxe import models

TOLERANCE = 1e-6
THREADS = 1
TO_NHWC = (0, 2, 3, 1)
TO_NCHW = (0, 3, 1, 2)


def plan_types(executable, *inputs):
    """The op types of the plan's steps, in order, from a profiled run; prints the plan."""
    profile = executable.profile(*inputs, runs=1, warmup=0)
    print(profile.table())
    return [row["op_type"] for row in profile.rows()]


def assert_close(got, want):
    assert got.shape == want.shape
    scale = np.abs(want).max()
    assert scale > 0.01  # the model does not collapse to zeros
    assert np.abs(got - want).max() <= TOLERANCE * scale


def ohwi(w):
    return np.ascontiguousarray(w.transpose(0, 2, 3, 1))


# -- NHWC twins of the reference models ------------------------------------------------------


def espcn_nhwc(weights, height, width, scale=2):
    g = nxe.Graph()
    x = g.input("luma", (1, height, width, 1), "f32")
    h = x
    for i, act in ((1, True), (2, True), (3, False)):
        w = g.constant(ohwi(weights[f"conv{i}.weight"]), name=f"conv{i}.weight")
        b = g.constant(weights[f"conv{i}.bias"], name=f"conv{i}.bias")
        h = g.Conv2d(h, w, b, padding="SAME", layout="NHWC", name=f"conv{i}")
        if act:
            h = g.Tanh(h, name=f"tanh{i}")
    y = g.DepthToSpace(h, blocksize=scale, mode="CRD", layout="NHWC", name="pixel_shuffle")
    g.mark_output(y, name="upscaled")
    return g


def edsr_nhwc(weights, height, width, num_blocks, rgb_mean):
    g = nxe.Graph()

    def conv(t, prefix):
        w = g.constant(ohwi(weights[f"{prefix}.weight"]), name=f"{prefix}.weight")
        b = g.constant(weights[f"{prefix}.bias"], name=f"{prefix}.bias")
        return g.Conv2d(t, w, b, padding="SAME", layout="NHWC", name=prefix)

    x = g.input("rgb", (1, height, width, 3), "f32")
    mean = g.constant(np.asarray(rgb_mean, np.float32), name="rgb_mean")  # [3]: broadcast
    x = g.Sub(x, mean, name="sub_mean")
    head = conv(x, "head.0")
    h = head
    for i in range(num_blocks):
        inner = g.Relu(conv(h, f"body.{i}.body.0"), name=f"body.{i}.body.1")
        h = g.Add(conv(inner, f"body.{i}.body.2"), h, name=f"body.{i}.residual")
    h = g.Add(conv(h, f"body.{num_blocks}"), head, name="global_skip")
    h = g.DepthToSpace(conv(h, "tail.0.0"), blocksize=2, mode="CRD", layout="NHWC",
                       name="tail.0.0.shuffle")
    y = g.Add(conv(h, "tail.1"), mean, name="add_mean")
    g.mark_output(y, name="upscaled")
    return g


@pytest.fixture(scope="module")
def espcn_pair():
    weights = models.espcn_random_weights(scale=2, seed=1)
    x = np.random.default_rng(7).uniform(0.0, 1.0, (1, 1, 24, 20)).astype(np.float32)
    nchw = models.espcn(weights, 24, 20, scale=2).graph.compile(threads=THREADS)
    return espcn_nhwc(weights, 24, 20), x, nchw.run(x)["upscaled"]


def test_nhwc_espcn_equals_nchw_with_transposes_only_at_the_edges(espcn_pair):
    graph, x, want = espcn_pair
    exe = graph.compile(threads=THREADS)
    x_nhwc = np.ascontiguousarray(x.transpose(TO_NHWC))
    got = exe.run(x_nhwc)["upscaled"]
    assert_close(got.transpose(TO_NCHW), want)
    types = plan_types(exe, x_nhwc)
    assert types == ["Transpose", "Conv2d", "Conv2d", "Conv2d", "DepthToSpace", "Transpose"]


def test_nhwc_espcn_through_a_binary(espcn_pair, tmp_path):
    graph, x, want = espcn_pair
    x_nhwc = np.ascontiguousarray(x.transpose(TO_NHWC))
    expected = graph.compile(threads=THREADS).run(x_nhwc)["upscaled"]
    path = tmp_path / "espcn_nhwc.nxb"
    graph.compile_to_binary(path, threads=THREADS)
    with nxe.VirtualMachine(path, threads=THREADS) as vm:
        assert vm.inputs == [("luma", (1, 24, 20, 1), "f32")]
        got = vm["main"](x_nhwc)
        # The binary holds the rewritten plan: the loader runs it as it is.
        types = plan_types(vm.executable, x_nhwc)
    assert np.array_equal(got, expected)
    assert types == ["Transpose", "Conv2d", "Conv2d", "Conv2d", "DepthToSpace", "Transpose"]


def test_nhwc_edsr_equals_nchw(rng):
    mean = (0.45, 0.43, 0.40)
    weights = models.edsr_random_weights(scale=2, seed=2)
    x = rng.uniform(0.0, 1.0, (1, 3, 12, 10)).astype(np.float32)
    nchw = models.edsr_baseline(weights, 12, 10, scale=2, rgb_mean=mean)
    want = nchw.graph.compile(threads=THREADS).run(x)["upscaled"]
    graph = edsr_nhwc(weights, 12, 10, 16, mean)
    exe = graph.compile(threads=THREADS)
    x_nhwc = np.ascontiguousarray(x.transpose(TO_NHWC))
    got = exe.run(x_nhwc)["upscaled"]
    assert_close(got.transpose(TO_NCHW), want)
    # The mean is read in both layouts: the binary holds it once more, permuted.
    with nxe.VirtualMachine(graph.compile_to_binary(threads=THREADS), threads=THREADS) as vm:
        assert np.array_equal(vm["main"](x_nhwc), got)
    types = plan_types(exe, x_nhwc)
    # One Transpose in, on the input itself (the mean is taken off channels first, the [3]
    # constant permuted to [1, 3, 1, 1]); one out, after the mean is added back.
    assert types[:2] == ["Transpose", "Sub"] and types[-1] == "Transpose"
    assert types.count("Transpose") == 2
    assert types.count("Conv2d") == 2 * 16 + 4


# -- the Transpose sandwiches converters write ------------------------------------------------


def test_transpose_sandwiches_cancel(rng):
    """NHWC in and out, every channels-first conv between Transpose(0,3,1,2) and
    Transpose(0,2,3,1), elementwise ops in NHWC between them (as tf2onnx exports)."""
    w1 = rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3
    w2 = rng.standard_normal((4, 8, 3, 3)).astype(np.float32) * 0.3
    bias = rng.standard_normal(8).astype(np.float32)
    g = nxe.Graph()
    x = g.input("x", (1, 10, 9, 3), "f32")
    h = g.Transpose(x, perm=list(TO_NCHW), name="t1")
    h = g.Conv2d(h, g.constant(w1, name="w1"), padding="SAME", name="conv1")
    h = g.Transpose(h, perm=list(TO_NHWC), name="t2")
    h = g.Relu(g.Add(h, g.constant(bias, name="bias"), name="add_bias"), name="relu")
    h = g.Transpose(h, perm=list(TO_NCHW), name="t3")
    h = g.Conv2d(h, g.constant(w2, name="w2"), padding="SAME", name="conv2")
    y = g.Transpose(h, perm=list(TO_NHWC), name="t4")
    g.mark_output(y, name="y")
    exe = g.compile(threads=THREADS)
    xv = rng.standard_normal((1, 10, 9, 3)).astype(np.float32)
    got = exe.run(xv)["y"]

    ref = nxe.Graph()
    rx = ref.input("x", (1, 3, 10, 9), "f32")
    r = ref.Conv2d(rx, ref.constant(w1, name="w1"), padding="SAME", name="conv1")
    r = ref.Relu(ref.Add(r, ref.constant(bias.reshape(1, 8, 1, 1), name="bias"), name="add"),
                 name="relu")
    r = ref.Conv2d(r, ref.constant(w2, name="w2"), padding="SAME", name="conv2")
    ref.mark_output(r, name="y")
    want = ref.compile(threads=THREADS).run(np.ascontiguousarray(xv.transpose(TO_NCHW)))["y"]
    assert_close(got, want.transpose(TO_NHWC))
    types = plan_types(exe, xv)
    assert types[0] == "Transpose" and types[-1] == "Transpose"
    assert types.count("Transpose") == 2


def test_an_onnx_model_exported_channels_last_by_tf2onnx_runs_without_inner_transposes(rng):
    """The ONNX graph tf2onnx writes for a Keras NHWC CNN: Transpose -> Conv -> Transpose
    around every conv, MaxPool and BatchNormalization, the activations and the residual Add in
    NHWC between them; compared with onnxruntime running the same file."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from onnx_testing import onnxruntime_outputs

    def sandwich(op, inputs, output, **attrs):
        return [helper.make_node("Transpose", [inputs[0]], [f"{output}_nchw_in"],
                                 perm=list(TO_NCHW)),
                helper.make_node(op, [f"{output}_nchw_in", *inputs[1:]], [f"{output}_nchw"],
                                 **attrs),
                helper.make_node("Transpose", [f"{output}_nchw"], [output], perm=list(TO_NHWC))]

    weights = {"w1": rng.standard_normal((8, 3, 3, 3)) * 0.4, "b1": rng.standard_normal(8) * 0.1,
               "w2": rng.standard_normal((8, 8, 3, 3)) * 0.2, "b2": rng.standard_normal(8) * 0.1,
               "scale": rng.uniform(0.5, 1.5, 8), "shift": rng.standard_normal(8) * 0.1,
               "mean": rng.standard_normal(8) * 0.1, "var": rng.uniform(0.5, 1.5, 8)}
    nodes = (sandwich("Conv", ["x", "w1", "b1"], "c1", pads=[1, 1, 1, 1])
             + [helper.make_node("Relu", ["c1"], ["r1"])]
             + sandwich("Conv", ["r1", "w2", "b2"], "c2", pads=[1, 1, 1, 1])
             + [helper.make_node("Add", ["c2", "r1"], ["sum"])]
             + sandwich("BatchNormalization", ["sum", "scale", "shift", "mean", "var"], "bn")
             + sandwich("MaxPool", ["bn"], "y", kernel_shape=[2, 2], strides=[2, 2]))
    graph = helper.make_graph(
        nodes, "tf2onnx_like",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 12, 10, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 5, 8])],
        [numpy_helper.from_array(v.astype(np.float32), n) for n, v in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    feeds = {"x": rng.standard_normal((1, 12, 10, 3)).astype(np.float32)}
    compiled = nxe.onnx.load(model, threads=THREADS).compile_for(feeds)
    got = compiled.executable.run(feeds)["y"]
    want = onnxruntime_outputs(model, feeds)["y"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    types = plan_types(compiled.executable, feeds["x"])
    assert types.count("Transpose") == 2
    assert types[0] == "Transpose" and types[-1] == "Transpose"


def test_a_transpose_between_two_layouts_stays_when_a_public_op_reads_it(rng):
    """A channels-last region feeding a Reshape: the Reshape reads the public layout, so one
    Transpose is added before it, and nothing else."""
    w = rng.standard_normal((4, 3, 3, 2)).astype(np.float32)  # OHWI
    g = nxe.Graph()
    x = g.input("x", (1, 5, 6, 2), "f32")
    h = g.Conv2d(x, g.constant(w, name="w"), padding="SAME", layout="NHWC", name="conv")
    y = g.Reshape(g.Relu(h, name="relu"), shape=[1, -1], name="flatten")
    g.mark_output(y, name="y")
    exe = g.compile(threads=THREADS)
    xv = rng.standard_normal((1, 5, 6, 2)).astype(np.float32)
    got = exe.run(xv)["y"]
    xp = np.pad(xv.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    want = np.zeros((1, 5, 6, 4))
    for ky in range(3):
        for kx in range(3):
            want += np.einsum("nhwc,oc->nhwo", xp[:, ky:ky + 5, kx:kx + 6], w[:, ky, kx, :])
    assert_close(got, np.maximum(want, 0).reshape(1, -1))
    # The Relu runs in the convolution's epilogue.
    assert plan_types(exe, xv) == ["Transpose", "Conv2d", "Transpose", "Reshape"]


# -- every layout-aware op, NHWC against NCHW ------------------------------------------------


def small_cnn(layout, weights):
    """conv 3x3 -> BatchNorm -> Relu -> MaxPool 2x2 -> depthwise 3x3 -> InstanceNorm -> Resize
    x2 -> Concat with an AveragePool'd and resized branch over channels -> + bias ->
    GlobalAveragePool and the activation map itself as outputs."""
    last = layout == "NHWC"
    g = nxe.Graph()
    shape = (1, 16, 12, 3)
    x = g.input("x", shape if last else (1, 3, 16, 12), "f32")

    def const(name, array):
        return g.constant(np.ascontiguousarray(array), name=name)

    def w(name):
        return const(name, ohwi(weights[name]) if last else weights[name])

    h = g.Conv2d(x, w("conv.w"), const("conv.b", weights["conv.b"]), padding="SAME",
                 layout=layout, name="conv")
    h = g.BatchNorm(h, *(const(f"bn.{k}", weights[f"bn.{k}"]) for k in
                         ("scale", "bias", "mean", "var")), layout=layout, name="bn")
    h = g.Relu(h, name="relu")
    h = g.MaxPool2d(h, kernel_shape=[2, 2], strides=[2, 2], layout=layout, name="pool")
    d = g.Conv2d(h, w("dw.w"), padding="SAME", group=8, layout=layout, name="depthwise")
    d = g.InstanceNorm(d, const("in.scale", weights["in.scale"]),
                       const("in.bias", weights["in.bias"]), layout=layout, name="inorm")
    scales = [1.0, 2.0, 2.0, 1.0] if last else [1.0, 1.0, 2.0, 2.0]
    d = g.Resize(d, scales=scales, mode="linear", name="up")
    a = g.AveragePool2d(x, kernel_shape=[2, 2], strides=[2, 2], layout=layout, name="avg")
    a = g.Resize(a, scales=scales, mode="nearest", name="up_avg")
    c = g.Concat(d, a, axis=3 if last else 1, name="concat")
    bias = weights["bias"].reshape(11) if last else weights["bias"].reshape(11, 1, 1)
    c = g.Add(c, const("bias", bias), name="add_bias")
    pooled = g.GlobalAveragePool(c, layout=layout, name="gap")
    g.mark_output(pooled, name="pooled")
    g.mark_output(c, name="features")
    return g


def small_cnn_weights(rng):
    return {
        "conv.w": rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.4,
        "conv.b": rng.standard_normal(8).astype(np.float32) * 0.1,
        "bn.scale": rng.uniform(0.5, 1.5, 8).astype(np.float32),
        "bn.bias": rng.standard_normal(8).astype(np.float32) * 0.1,
        "bn.mean": rng.standard_normal(8).astype(np.float32) * 0.1,
        "bn.var": rng.uniform(0.5, 1.5, 8).astype(np.float32),
        "dw.w": rng.standard_normal((8, 1, 3, 3)).astype(np.float32) * 0.4,
        "in.scale": rng.uniform(0.5, 1.5, 8).astype(np.float32),
        "in.bias": rng.standard_normal(8).astype(np.float32) * 0.1,
        "bias": rng.standard_normal(11).astype(np.float32),
    }


def test_nhwc_small_cnn_equals_nchw(rng, tmp_path):
    weights = small_cnn_weights(rng)
    x = rng.standard_normal((1, 3, 16, 12)).astype(np.float32)
    x_nhwc = np.ascontiguousarray(x.transpose(TO_NHWC))
    want = small_cnn("NCHW", weights).compile(threads=THREADS).run(x)
    graph = small_cnn("NHWC", weights)
    exe = graph.compile(threads=THREADS)
    got = exe.run(x_nhwc)
    assert_close(got["features"].transpose(TO_NCHW), want["features"])
    assert_close(got["pooled"].transpose(TO_NCHW), want["pooled"])
    types = plan_types(exe, x_nhwc)
    # One Transpose for the input (read by the conv and the average pool), one per output.
    assert types.count("Transpose") == 3
    assert types[0] == "Transpose"
    data = graph.compile_to_binary(threads=THREADS)
    with nxe.VirtualMachine(data, threads=THREADS) as vm:
        loaded = vm.executable.run(x_nhwc)
        assert plan_types(vm.executable, x_nhwc) == types
    for name in ("features", "pooled"):
        assert np.array_equal(loaded[name], got[name])


def classifier(layout, w, x_shape):
    """TFLite's classifier shape: explicit Pad, VALID conv, Softmax over channels, mean over
    the spatial axes without keeping them ([N, C] out), as a MobileNet ends."""
    last = layout == "NHWC"
    g = nxe.Graph()
    x = g.input("x", x_shape, "f32")
    pads = [0, 1, 2, 0, 0, 1, 2, 0] if last else [0, 0, 1, 2, 0, 0, 1, 2]
    h = g.Pad(x, pads=pads, mode="reflect", name="pad")
    h = g.Conv2d(h, g.constant(np.ascontiguousarray(ohwi(w) if last else w), name="w"),
                 layout=layout, name="conv")
    h = g.Softmax(h, axis=-1 if last else 1, name="softmax")
    h = g.ReduceMean(h, axes=[1, 2] if last else [2, 3], keepdims=0, name="mean")
    g.mark_output(h, name="probabilities")
    return g


def test_pad_softmax_and_reductions_stay_inside_a_channels_first_region(rng):
    w = rng.standard_normal((5, 3, 3, 3)).astype(np.float32)
    x = rng.standard_normal((2, 3, 9, 7)).astype(np.float32)
    want = classifier("NCHW", w, x.shape).compile(threads=THREADS).run(x)["probabilities"]
    exe = classifier("NHWC", w, (2, 9, 7, 3)).compile(threads=THREADS)
    x_nhwc = np.ascontiguousarray(x.transpose(TO_NHWC))
    got = exe.run(x_nhwc)["probabilities"]
    assert_close(got, want)
    # The mean's [N, C] output is public as it is: one Transpose, at the input.
    assert plan_types(exe, x_nhwc) == ["Transpose", "Pad", "Conv2d", "Softmax", "ReduceMean"]


def test_the_user_graph_keeps_its_layout_after_compiling(espcn_pair):
    graph, x, _ = espcn_pair
    graph.compile(threads=THREADS)
    again = graph.compile(threads=THREADS)
    x_nhwc = np.ascontiguousarray(x.transpose(TO_NHWC))
    assert again.inputs == [("luma", (1, 24, 20, 1), "f32")]
    assert again.outputs == [("upscaled", (1, 48, 40, 1), "f32")]
    assert again.run(x_nhwc)["upscaled"].shape == (1, 48, 40, 1)


# -- bad input ---------------------------------------------------------------------------------


def test_an_unknown_layout_is_refused():
    g = nxe.Graph()
    x = g.input("x", (1, 4, 4, 2), "f32")
    g.mark_output(g.MaxPool2d(x, kernel_shape=[2, 2], layout="NHCW", name="pool"), name="y")
    with pytest.raises(nxe.InvalidArgumentError, match="layout"):
        g.compile()


def test_nhwc_needs_rank_4():
    g = nxe.Graph()
    x = g.input("x", (1, 4, 2), "f32")
    g.mark_output(g.BatchNorm(x, *(g.constant(np.ones(2, np.float32), name=f"p{i}")
                                   for i in range(4)), layout="NHWC", name="bn"), name="y")
    with pytest.raises(nxe.ShapeMismatchError, match="rank 4"):
        g.compile()
