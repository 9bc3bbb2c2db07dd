# ONNX import: small models built with onnx.helper, run through nxe.onnx and compared with
# onnxruntime on the same model: folding, shape chains, dynamic batch, error reporting, outputs
# that are constants or inputs, and the converters for nxe's basic ops.
from __future__ import annotations

import numpy as np
import nxe
import nxe.onnx
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_testing import onnxruntime_outputs as _reference
from onnx_testing import value_info as _vi

RTOL = 1e-5
ATOL = 1e-6


def _model(nodes, inputs, outputs, initializers=(), opset=17, domains=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs,
                              [numpy_helper.from_array(v, n) for n, v in initializers])
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8 if opset <= 17 else 10
    return model


def _check(model, feeds, rtol=RTOL, atol=ATOL):
    expected = _reference(model, feeds)
    actual = nxe.onnx.load(model, threads=1).run(feeds)
    assert list(actual) == list(expected)
    for name, reference in expected.items():
        assert actual[name].dtype == reference.dtype, name
        assert actual[name].shape == reference.shape, name
        np.testing.assert_allclose(actual[name], reference, rtol=rtol, atol=atol, err_msg=name)
    return actual


def _rng():
    return np.random.default_rng(7)


def test_initializer_only_subgraph_is_folded_into_one_constant():
    rng = _rng()
    w1, w2, w3 = (rng.standard_normal((3, 5)).astype(np.float32) for _ in range(3))
    nodes = [helper.make_node("Add", ["w1", "w2"], ["s"]),
             helper.make_node("Mul", ["s", "w3"], ["c"]),
             helper.make_node("Add", ["x", "c"], ["y"])]
    model = _model(nodes, [_vi("x", shape=[3, 5])], [_vi("y")],
                   [("w1", w1), ("w2", w2), ("w3", w3)])
    feeds = {"x": rng.standard_normal((3, 5)).astype(np.float32)}
    _check(model, feeds)
    compiled = nxe.onnx.load(model).compile_for(feeds)
    assert (compiled.folded_nodes, compiled.converted_nodes) == (2, 1)
    assert compiled.executable.memory_info()["num_steps"] == 1


def test_shape_gather_reshape_chain_on_a_runtime_input_folds_with_static_shapes():
    rng = _rng()
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
             helper.make_node("Concat", ["n1", "minus_one"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    inits = [("zero", np.array(0, np.int64)), ("axes", np.array([0], np.int64)),
             ("minus_one", np.array([-1], np.int64))]
    model = _model(nodes, [_vi("x", shape=["N", 3, 4])], [_vi("y")], inits)
    feeds = {"x": rng.standard_normal((2, 3, 4)).astype(np.float32)}
    assert _check(model, feeds)["y"].shape == (2, 12)
    compiled = nxe.onnx.load(model).compile_for(feeds)
    assert (compiled.folded_nodes, compiled.converted_nodes) == (4, 1)


def test_dynamic_batch_compiles_once_per_input_shape():
    rng = _rng()
    w = rng.standard_normal((4, 6)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("Tanh", ["h"], ["y"])]
    model = _model(nodes, [_vi("x", shape=["batch", 4])], [_vi("y", shape=["batch", 6])],
                   [("w", w)])
    imported = nxe.onnx.load(model, threads=1)
    for batch in (1, 3, 1, 3):
        x = rng.standard_normal((batch, 4)).astype(np.float32)
        np.testing.assert_allclose(imported.run(x)["y"], _reference(model, {"x": x})["y"],
                                   rtol=RTOL, atol=ATOL)
    assert imported.compiled_count == 2


def test_every_unsupported_node_is_reported_at_once():
    nodes = [helper.make_node("Frobnicate", ["x"], ["a"], name="first", domain="com.example"),
             helper.make_node("Relu", ["a"], ["b"], name="fine"),
             helper.make_node("Twiddle", ["b"], ["y"], name="second", domain="com.example")]
    model = _model(nodes, [_vi("x", shape=[2])], [_vi("y")], domains=["com.example"])
    imported = nxe.onnx.load(model)
    with pytest.raises(nxe.UnsupportedError) as info:
        imported.run(np.zeros(2, np.float32))
    message = str(info.value)
    for part in ("Frobnicate", "'first'", "Twiddle", "'second'"):
        assert part in message
    assert "Relu" not in message
    assert imported.unsupported_nodes() == [("com.example.Frobnicate", "first"),
                                            ("com.example.Twiddle", "second")]


def test_outputs_may_be_constants_inputs_or_one_tensor_twice():
    rng = _rng()
    constant = helper.make_tensor("k", TensorProto.INT64, [3], [4, 5, 6])
    nodes = [helper.make_node("Constant", [], ["k"], value=constant),
             helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Identity", ["r"], ["r2"])]
    outputs = [_vi("k", TensorProto.INT64), _vi("x"), _vi("r"), _vi("r2")]
    model = _model(nodes, [_vi("x", shape=[2, 3])], outputs)
    actual = _check(model, {"x": rng.standard_normal((2, 3)).astype(np.float32)})
    assert actual["k"].dtype == np.int64


def test_parameter_inputs_are_specialized_per_value():
    rng = _rng()
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"])]
    model = _model(nodes, [_vi("x", shape=[2, 6]), _vi("shape", TensorProto.INT64, [2])],
                   [_vi("y")])
    imported = nxe.onnx.load(model)
    x = rng.standard_normal((2, 6)).astype(np.float32)
    for target in ([3, 4], [4, 3], [3, 4]):
        shape = np.array(target, np.int64)
        np.testing.assert_array_equal(imported.run(x, shape)["y"], x.reshape(target))
    assert imported.compiled_count == 2


def test_an_input_dtype_nxe_lacks_is_unsupported():
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    model = _model(nodes, [_vi("x", TensorProto.COMPLEX64, [2])],
                   [_vi("y", TensorProto.COMPLEX64)])
    with pytest.raises(nxe.UnsupportedError, match="complex64"):
        nxe.onnx.load(model).run(np.zeros(2, np.complex64))


def test_a_wrong_feed_is_rejected():
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", shape=[2])], [_vi("y")])
    imported = nxe.onnx.load(model)
    with pytest.raises(nxe.InvalidArgumentError, match=r"missing model input\(s\) \['x'\]"):
        imported.run({})
    with pytest.raises(nxe.InvalidArgumentError, match=r"unknown model input\(s\) \['z'\]"):
        imported.run({"x": np.zeros(2, np.float32), "z": np.zeros(2, np.float32)})
    with pytest.raises(nxe.InvalidArgumentError, match="takes 1 inputs, got 2 positionally"):
        imported.run(np.zeros(2, np.float32), np.zeros(2, np.float32))


def test_load_reads_files_and_bytes(tmp_path):
    model = _model([helper.make_node("Sigmoid", ["x"], ["y"])], [_vi("x", shape=[3])],
                   [_vi("y")])
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    x = np.array([-1.0, 0.0, 2.0], np.float32)
    for source in (path, str(path), model.SerializeToString()):
        np.testing.assert_allclose(nxe.onnx.load(source).run(x)["y"], 1 / (1 + np.exp(-x)),
                                   rtol=RTOL, atol=ATOL)


def test_an_old_opset_is_refused_clearly():
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", shape=[2])],
                   [_vi("y")], opset=5)
    with pytest.raises(nxe.UnsupportedError, match="opset 5"):
        nxe.onnx.load(model)


# -- converters for the basic ops, each against onnxruntime --------------------------------

def _single(op, inputs, attrs=None, initializers=(), opset=17, outputs=("y",)):
    """A one-node model whose runtime inputs are given as {name: array}."""
    names = list(inputs) + [n for n, _ in initializers]
    node = helper.make_node(op, names, list(outputs), **(attrs or {}))
    vis = [_vi(n, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
           for n, v in inputs.items()]
    model = _model([node], vis, [helper.make_empty_tensor_value_info(o) for o in outputs],
                   initializers, opset)
    # Output types come from ONNX inference, as an exporter would write them.
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    del model.graph.output[:]
    model.graph.output.extend(inferred.graph.output)
    return model


def _f32(*shape):
    return _rng().standard_normal(shape).astype(np.float32)


CASES = {
    "add_broadcast": lambda: _single("Add", {"a": _f32(2, 3, 4), "b": _f32(4)}),
    "sub_i64": lambda: _single("Sub", {"a": np.arange(-6, 6, dtype=np.int64).reshape(3, 4),
                                       "b": np.array([7, -3, 0, 2], np.int64)}),
    "mul_f16": lambda: _single("Mul", {"a": _f32(3, 5).astype(np.float16),
                                       "b": _f32(3, 5).astype(np.float16)}),
    "add_i8_wraps": lambda: _single("Add", {"a": np.array([120, -120, 5], np.int8),
                                            "b": np.array([10, -10, 5], np.int8)}),
    "div_i32_truncates": lambda: _single("Div", {"a": np.array([7, -7, 9, -9], np.int32),
                                                 "b": np.array([2, 2, -4, -4], np.int32)}),
    "div_f32": lambda: _single("Div", {"a": _f32(4, 3)},
                               initializers=[("b", np.float32([1.5, -2.0, 4.0]))]),
    "relu": lambda: _single("Relu", {"x": _f32(2, 7)}),
    "leaky_relu": lambda: _single("LeakyRelu", {"x": _f32(2, 7)}, {"alpha": 0.2}),
    "tanh": lambda: _single("Tanh", {"x": _f32(5)}),
    "sigmoid_f16": lambda: _single("Sigmoid", {"x": _f32(5).astype(np.float16)}),
    "erf": lambda: _single("Erf", {"x": _f32(3, 3)}),
    "gelu_tanh": lambda: _single("Gelu", {"x": _f32(9)}, {"approximate": "tanh"}, opset=20),
    "matmul_batched": lambda: _single("MatMul", {"a": _f32(2, 3, 4), "b": _f32(4, 5)}),
    "matmul_1d": lambda: _single("MatMul", {"a": _f32(4), "b": _f32(4, 5)}),
    "gemm_trans": lambda: _single("Gemm", {"a": _f32(4, 3)},
                                  {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0},
                                  [("b", _f32(5, 4)), ("c", _f32(5))]),
    "identity": lambda: _single("Identity", {"x": _f32(3)}),
    "dropout_with_mask": lambda: _single("Dropout", {"x": _f32(2, 3)},
                                         outputs=("y", "mask")),
    "cast_f32_to_i32": lambda: _single("Cast", {"x": np.float32([-2.7, 0.5, 3.9])},
                                       {"to": TensorProto.INT32}),
    "cast_i64_to_f16": lambda: _single("Cast", {"x": np.arange(5, dtype=np.int64)},
                                       {"to": TensorProto.FLOAT16}),
    "castlike": lambda: _single("CastLike", {"x": _f32(4)},
                                initializers=[("like", np.zeros(1, np.int64))]),
    "quantize_u8": lambda: _single("QuantizeLinear", {"x": _f32(2, 6) * 3},
                                   initializers=[("s", np.float32(0.05)),
                                                 ("z", np.uint8(128))]),
    "quantize_i8_per_axis": lambda: _single(
        "QuantizeLinear", {"x": _f32(2, 3, 2)}, {"axis": 1},
        [("s", np.float32([0.01, 0.02, 0.05])), ("z", np.zeros(3, np.int8))]),
    "dequantize_per_axis": lambda: _single(
        "DequantizeLinear", {"x": np.arange(-12, 12, dtype=np.int8).reshape(2, 3, 4)},
        {"axis": 1}, [("s", np.float32([0.1, 0.2, 0.3])), ("z", np.int8([1, -2, 0]))]),
    "dequantize_blocked": lambda: _single(
        "DequantizeLinear", {"x": np.arange(-6, 6, dtype=np.int8).reshape(2, 6)},
        {"axis": 1, "block_size": 4}, [("s", np.float32([[0.5, 0.25], [2.0, 1.0]])),
                                       ("z", np.int8([[1, -1], [0, 3]]))], opset=21),
    "reshape_zero_and_minus_one": lambda: _single(
        "Reshape", {"x": _f32(2, 3, 4)}, initializers=[("s", np.array([0, -1], np.int64))]),
    "transpose_default": lambda: _single("Transpose", {"x": _f32(2, 3, 4)}),
    "transpose_perm": lambda: _single("Transpose", {"x": _f32(2, 3, 4)}, {"perm": [1, 2, 0]}),
    "concat_negative_axis": lambda: _single("Concat", {"a": _f32(2, 3), "b": _f32(2, 1)},
                                            {"axis": -1}),
    "split_uneven": lambda: _single("Split", {"x": _f32(7, 2)},
                                    initializers=[("s", np.array([2, 5], np.int64))],
                                    outputs=("y0", "y1")),
    "split_equal_opset11": lambda: _single("Split", {"x": _f32(2, 6)}, {"axis": 1},
                                           opset=11, outputs=("y0", "y1", "y2")),
    "slice_negative_step": lambda: _single(
        "Slice", {"x": _f32(5, 6)},
        initializers=[("st", np.array([-1, 1], np.int64)), ("en", np.array([-100, 5], np.int64)),
                      ("ax", np.array([0, 1], np.int64)), ("sp", np.array([-2, 2], np.int64))]),
    "squeeze_all": lambda: _single("Squeeze", {"x": _f32(1, 3, 1, 2)}),
    "unsqueeze": lambda: _single("Unsqueeze", {"x": _f32(3, 2)},
                                 initializers=[("a", np.array([0, -1], np.int64))]),
    "gather_negative_indices": lambda: _single(
        "Gather", {"x": _f32(4, 5)}, {"axis": 1},
        initializers=[("i", np.array([[0, -1], [2, -5]], np.int64))]),
    "gather_runtime_indices": lambda: _single(
        "Gather", {"x": _f32(6, 2), "i": np.array([5, 0, 3], np.int32)}),
    "depth_to_space_dcr": lambda: _single("DepthToSpace", {"x": _f32(1, 8, 2, 3)},
                                          {"blocksize": 2}),
    "depth_to_space_crd": lambda: _single("DepthToSpace", {"x": _f32(2, 8, 2, 2)},
                                          {"blocksize": 2, "mode": "CRD"}),
    "softmax_opset13": lambda: _single("Softmax", {"x": _f32(2, 3, 4)}, {"axis": 1}),
    "softmax_opset11_coerces_to_2d": lambda: _single("Softmax", {"x": _f32(2, 3, 4)},
                                                     {"axis": 1}, opset=11),
    "layer_norm": lambda: _single("LayerNormalization", {"x": _f32(2, 3, 4)},
                                  {"axis": -2, "epsilon": 1e-3},
                                  [("scale", _f32(3, 4)), ("bias", _f32(3, 4))]),
    "layer_norm_broadcast_scale": lambda: _single("LayerNormalization", {"x": _f32(2, 5)},
                                                  initializers=[("scale", _f32(5))]),
    "reduce_sum_axes_input": lambda: _single(
        "ReduceSum", {"x": _f32(2, 3, 4)}, {"keepdims": 0},
        initializers=[("axes", np.array([0, -1], np.int64))]),
    "reduce_sum_i64_all": lambda: _single("ReduceSum",
                                          {"x": np.arange(24, dtype=np.int64).reshape(2, 3, 4)}),
    "reduce_mean_opset17": lambda: _single("ReduceMean", {"x": _f32(3, 4)}, {"axes": [1]}),
    "reduce_mean_opset18": lambda: _single("ReduceMean", {"x": _f32(3, 4, 2)}, opset=18,
                                           initializers=[("axes", np.array([1], np.int64))]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_basic_converter_matches_onnxruntime(case):
    model = CASES[case]()
    inputs = {vi.name: None for vi in model.graph.input}
    rng = _rng()
    feeds = {}
    for vi in model.graph.input:
        elem = vi.type.tensor_type.elem_type
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(elem)
        if dtype.kind == "f":
            feeds[vi.name] = (rng.standard_normal(shape) * 2).astype(dtype)
        else:
            info = np.iinfo(dtype)
            low, high = max(info.min, -100), min(info.max, 100)
            feeds[vi.name] = rng.integers(low, high, shape).astype(dtype)
    if case == "gather_runtime_indices":
        feeds["i"] = np.array([5, 0, -3], np.int32)
    if case.startswith("div_i32"):
        feeds["b"][feeds["b"] == 0] = 3
    assert inputs.keys() == feeds.keys()
    tolerance = {"rtol": 1e-3, "atol": 1e-3} if "f16" in case else {}
    _check(model, feeds, **tolerance)


def test_a_converter_rejection_names_the_node():
    model = _single("Gelu", {"x": _f32(3)}, {"approximate": "cubic"}, opset=20)
    with pytest.raises(nxe.UnsupportedError, match="Gelu node.*approximate"):
        nxe.onnx.load(model).run(_f32(3))


def test_a_runtime_reshape_target_is_unsupported_with_a_reason():
    # The target comes from float data, which the importer does not specialize on.
    nodes = [helper.make_node("Cast", ["s"], ["s2"], to=TensorProto.INT64),
             helper.make_node("Reshape", ["x", "s2"], ["y"])]
    model = _model(nodes, [_vi("x", shape=[2, 6]), _vi("s", TensorProto.FLOAT, [2])],
                   [_vi("y")])
    with pytest.raises(nxe.UnsupportedError) as info:
        nxe.onnx.load(model).run(_f32(2, 6), np.array([3, 4], np.float32))
    assert "unsupported" in str(info.value)


def test_an_integer_input_that_reaches_a_parameter_is_specialized():
    # t -> Sub(x's shape) -> Concat -> Pad's pads: t is needed at import, so its value joins
    # the compile key, and its other use (a data output) folds.
    nodes = [helper.make_node("Shape", ["x"], ["xs"]),
             helper.make_node("Sub", ["t", "xs"], ["grow"]),
             helper.make_node("Concat", ["zero", "grow"], ["pads"], axis=0),
             helper.make_node("Pad", ["x", "pads"], ["y"]),
             helper.make_node("Neg", ["t"], ["t2"]),
             helper.make_node("Cast", ["t2"], ["z"], to=TensorProto.FLOAT)]
    model = _model(nodes, [_vi("x", shape=[2, 3]), _vi("t", TensorProto.INT64, [2])],
                   [_vi("y"), _vi("z")], [("zero", np.zeros(2, np.int64))])
    assert nxe.onnx.load(model).parameter_inputs == {"t"}
    imported = nxe.onnx.load(model, threads=1)
    x = _f32(2, 3)
    for target in ([2, 3], [3, 5], [2, 3]):
        t = np.array(target, np.int64)
        out = imported.run(x, t)
        expected = _reference(model, {"x": x, "t": t})
        for name in ("y", "z"):
            assert out[name].dtype == expected[name].dtype
            np.testing.assert_array_equal(out[name], expected[name])
    assert imported.compiled_count == 2


# -- opsets -----------------------------------------------------------------------------------

def test_an_opset_1_model_of_ops_unchanged_since_is_imported():
    model = _model([helper.make_node("Not", ["x"], ["y"])], [_vi("x", TensorProto.BOOL, [3, 4])],
                   [_vi("y", TensorProto.BOOL)], opset=1)
    model.ir_version = 3
    x = _rng().integers(0, 2, (3, 4)).astype(bool)
    np.testing.assert_array_equal(nxe.onnx.load(model).run(x)["y"], np.logical_not(x))


def test_an_old_model_without_opset_imports_means_opset_1():
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", shape=[2])], [_vi("y")])
    del model.opset_import[:]
    model.ir_version = 2
    with pytest.raises(nxe.UnsupportedError, match="opset 1;.*changed: Relu"):
        nxe.onnx.load(model)


def test_a_model_without_a_default_opset_reports_its_nodes():
    node = helper.make_node("Binarizer", ["x"], ["y"], domain="ai.onnx.ml")
    graph = helper.make_graph([node], "g", [_vi("x", shape=[2])], [_vi("y")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("ai.onnx.ml", 1)])
    with pytest.raises(nxe.UnsupportedError, match="no nxe converter: ai.onnx.ml.Binarizer"):
        nxe.onnx.load(model).run(_f32(2))
    stray = helper.make_node("Relu", ["x"], ["y"])
    graph = helper.make_graph([stray], "g", [_vi("x", shape=[2])], [_vi("y")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("ai.onnx.ml", 1)])
    with pytest.raises(nxe.UnsupportedError, match="no default ONNX opset.*Relu node"):
        nxe.onnx.load(model)


# -- importer compositions: runtime Pad value, EyeLike, Shrink, CenterCropPad, If --------------

def _pad_model(x_elem, shape, pads, axes=None, mode="constant"):
    names = ["x", "pads", "cv"] + (["axes"] if axes is not None else [])
    inits = [("pads", np.array(pads, np.int64))]
    if axes is not None:
        inits.append(("axes", np.array(axes, np.int64)))
    node = helper.make_node("Pad", names, ["y"], mode=mode)
    return _model([node], [_vi("x", x_elem, shape), _vi("cv", x_elem, [])], [_vi("y", x_elem)],
                  inits, opset=18)


@pytest.mark.parametrize("dtype,pads,axes,mode", [
    (np.float32, [1, 0, 2, 3], None, "constant"),
    (np.float32, [0, -1, 2, 1], None, "constant"),
    (np.int32, [2, 1], [-1], "constant"),
    (np.float16, [1, 1, 1, 1], None, "constant"),
    (np.float32, [1, 2, 1, 0], None, "reflect"),
])
def test_pad_with_a_runtime_fill_value_matches_onnxruntime(dtype, pads, axes, mode):
    model = _pad_model(helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), [3, 4], pads, axes, mode)
    rng = _rng()
    x = (rng.standard_normal((3, 4)) * 10).astype(dtype)
    for cv in (dtype(-7), dtype(5)):
        _check(model, {"x": x, "cv": np.array(cv, dtype)})


def test_pad_with_a_runtime_non_finite_fill_value_is_exact():
    model = _pad_model(TensorProto.FLOAT, [2, 3], [0, 1, 1, 0])
    x = _f32(2, 3)
    for cv in (np.inf, -np.inf, np.nan):
        _check(model, {"x": x, "cv": np.array(cv, np.float32)})


@pytest.mark.parametrize("shape,k,dtype", [((3, 5), 0, None), ((4, 4), 2, TensorProto.INT32),
                                           ((5, 3), -1, TensorProto.FLOAT16),
                                           ((2, 6), 9, None), ((3, 3), -1, TensorProto.BOOL)])
def test_eye_like_folds_to_a_constant(shape, k, dtype):
    attrs = {"k": k} if dtype is None else {"k": k, "dtype": dtype}
    nodes = [helper.make_node("EyeLike", ["x"], ["e"], **attrs),
             helper.make_node("Neg", ["x"], ["y"])]
    out_elem = TensorProto.INT64 if dtype is None else dtype
    model = _model(nodes, [_vi("x", TensorProto.INT64, list(shape))],
                   [_vi("e", out_elem), _vi("y", TensorProto.INT64)])
    x = np.arange(np.prod(shape), dtype=np.int64).reshape(shape)
    imported = nxe.onnx.load(model)
    out = imported.run(x)
    expected = np.eye(*shape, k=k, dtype=helper.tensor_dtype_to_np_dtype(out_elem))
    assert out["e"].dtype == expected.dtype
    np.testing.assert_array_equal(out["e"], expected)
    np.testing.assert_array_equal(out["y"], -x)
    assert ("e", "value") in [source[:2] for source in imported.compile_for({"x": x}).sources]


@pytest.mark.parametrize("dtype,lambd,bias", [
    (np.float32, 0.5, 0.0), (np.float32, 1.5, 1.5), (np.float16, 0.7, 0.2),
    (np.int32, 2.0, 1.0), (np.int64, 1.5, 3.0), (np.int8, 0.5, 2.0), (np.uint8, 3.0, 5.0)])
def test_shrink_matches_onnxruntime(dtype, lambd, bias):
    rng = _rng()
    if np.dtype(dtype).kind == "f":
        x = (rng.standard_normal((3, 7)) * 3).astype(dtype)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(max(info.min, -9), min(info.max, 9), (3, 7)).astype(dtype)
    model = _single("Shrink", {"x": x}, {"lambd": lambd, "bias": bias})
    tolerance = {"rtol": 1e-3, "atol": 1e-3} if dtype == np.float16 else {}
    _check(model, {"x": x}, **tolerance)


def test_shrink_with_a_fractional_bias_on_integers_is_unsupported():
    x = np.arange(6, dtype=np.int32)
    model = _single("Shrink", {"x": x}, {"lambd": 1.0, "bias": 0.5})
    with pytest.raises(nxe.UnsupportedError, match="Shrink node.*bias=0.5"):
        nxe.onnx.load(model).run(x)


@pytest.mark.parametrize("in_shape,target,axes", [
    ((5, 7), [3, 4], None), ((4, 6), [7, 9], None), ((5, 6), [8, 3], None),
    ((3, 10, 9), [6, 13], [1, 2]), ((10, 9, 3), [6, 13], [-3, -2]), ((4, 5), [4, 5], None)])
def test_center_crop_pad_matches_onnxruntime(in_shape, target, axes):
    attrs = {} if axes is None else {"axes": axes}
    node = helper.make_node("CenterCropPad", ["x", "shape"], ["y"], **attrs)
    model = _model([node], [_vi("x", shape=list(in_shape)),
                            _vi("shape", TensorProto.INT64, [len(target)])], [_vi("y")],
                   opset=18)
    _check(model, {"x": _f32(*in_shape), "shape": np.array(target, np.int64)})


def _if_model(cond_nodes, cond_inputs):
    then_graph = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [],
                                   [_vi("t", shape=[2, 3])])
    two = numpy_helper.from_array(np.full((1, 3), 2.0, np.float32), "two")
    else_graph = helper.make_graph([helper.make_node("Mul", ["x", "two"], ["e"])], "else", [],
                                   [_vi("e", shape=[2, 3])], [two])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then_graph, else_branch=else_graph)
    return _model(cond_nodes + [node], [_vi("x", shape=[2, 3])] + cond_inputs, [_vi("y")])


def test_if_with_a_condition_given_as_an_input_inlines_the_taken_branch():
    model = _if_model([], [_vi("c", TensorProto.BOOL, [])])
    imported = nxe.onnx.load(model, threads=1)
    x = _f32(2, 3)
    for c in (True, False, True):
        feeds = {"x": x, "c": np.array(c)}
        expected = _reference(model, feeds)["y"]
        np.testing.assert_allclose(imported.run(feeds)["y"], expected, rtol=RTOL, atol=ATOL)
    assert imported.compiled_count == 2


def test_if_with_a_condition_folded_from_shapes_is_inlined():
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("ReduceSum", ["s"], ["n"], keepdims=0),
             helper.make_node("Greater", ["n", "four"], ["c"])]
    model = _if_model(nodes, [])
    model.graph.initializer.append(numpy_helper.from_array(np.array(4, np.int64), "four"))
    _check(model, {"x": _f32(2, 3)})


def test_if_with_a_runtime_condition_is_unsupported():
    nodes = [helper.make_node("ReduceSum", ["x"], ["n"], keepdims=0),
             helper.make_node("Greater", ["n", "zero"], ["c"])]
    model = _if_model(nodes, [])
    model.graph.initializer.append(numpy_helper.from_array(np.array(0, np.float32), "zero"))
    with pytest.raises(nxe.UnsupportedError, match="If node.*only known at run time"):
        nxe.onnx.load(model).run(_f32(2, 3))


def test_nodes_without_converters_inside_an_if_are_reported():
    then_graph = helper.make_graph([helper.make_node("Foo", ["x"], ["t"], domain="x.y")],
                                   "then", [], [_vi("t", shape=[2])])
    else_graph = helper.make_graph([helper.make_node("Relu", ["x"], ["e"])], "else", [],
                                   [_vi("e", shape=[2])])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then_graph, else_branch=else_graph)
    model = _model([node], [_vi("x", shape=[2]), _vi("c", TensorProto.BOOL, [])], [_vi("y")],
                   domains=["x.y"])
    assert nxe.onnx.unsupported_nodes(model) == [("x.y.Foo", "")]
    np.testing.assert_array_equal(nxe.onnx.load(model).run(np.array([-1, 2], np.float32),
                                                           np.array(False))["y"], [0, 2])
    with pytest.raises(nxe.UnsupportedError, match="x.y.Foo"):
        nxe.onnx.load(model).run(np.array([-1, 2], np.float32), np.array(True))


# ---- bf16 and f64 through MatMul, Gemm, Einsum and Attention (widened to f32 or kept f64) ----

def _bf16(*shape):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    return _rng().standard_normal(shape).astype(ml_dtypes.bfloat16)


def _check_evaluator(model, feeds, rtol, atol):
    from onnx.reference import ReferenceEvaluator
    expected = ReferenceEvaluator(model).run(None, feeds)
    actual = list(nxe.onnx.load(model, threads=1).run(feeds).values())
    for got, want in zip(actual, expected, strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=rtol, atol=atol)


@pytest.mark.parametrize("op, attrs, shapes", [
    ("MatMul", {}, [(2, 3, 5), (5, 4)]),
    ("Gemm", {"transB": 1, "alpha": 0.5}, [(3, 5), (4, 5), (4,)]),
    ("Einsum", {"equation": "bij,bjk->bik"}, [(2, 3, 5), (2, 5, 4)]),
    ("Einsum", {"equation": "ij->ji"}, [(3, 5)]),
    ("Einsum", {"equation": "ij->i"}, [(3, 7)]),
])
def test_bf16_is_computed_in_f32_and_rounded_once(op, attrs, shapes):
    feeds = {f"x{i}": _bf16(*s) for i, s in enumerate(shapes)}
    model = _single(op, feeds, attrs, opset=18)
    # The reference rounds per step in bf16; nxe rounds once, so allow one bf16 step.
    _check_evaluator(model, feeds, rtol=1.6e-2, atol=1e-2)


@pytest.mark.parametrize("equation, shapes", [
    ("bij,bjk->bik", [(2, 3, 5), (2, 5, 4)]), ("i,i", [(7,), (7,)]), ("ij->", [(3, 4)]),
    ("ij,kj->ik", [(3, 6), (4, 6)]),
])
def test_f64_einsum_stays_f64(equation, shapes):
    feeds = {f"x{i}": _rng().standard_normal(s) for i, s in enumerate(shapes)}
    model = _single("Einsum", feeds, {"equation": equation})
    _check_evaluator(model, feeds, rtol=1e-12, atol=1e-12)


def test_bf16_attention_matches_f32_attention_rounded():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    feeds = {n: _bf16(2, 3, 4, 8) for n in ("q", "k", "v")}
    model = _single("Attention", feeds, {"is_causal": 1}, opset=23)
    got = nxe.onnx.load(model, threads=1).run(feeds)["y"]
    wide = {n: v.astype(np.float32) for n, v in feeds.items()}
    want = nxe.onnx.load(_single("Attention", wide, {"is_causal": 1}, opset=23),
                         threads=1).run(wide)["y"]
    assert got.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got, want.astype(ml_dtypes.bfloat16))


def test_an_imported_model_saves_as_a_model_file_that_runs_without_onnx(tmp_path):
    rng = _rng()
    w = rng.standard_normal((4, 6)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("Add", ["h", "b"], ["a"]),
             helper.make_node("Relu", ["a"], ["y"])]
    model = _model(nodes, [_vi("x", shape=["batch", 4])], [_vi("y", shape=["batch", 6])],
                   [("w", w), ("b", b)])
    x = rng.standard_normal((5, 4)).astype(np.float32)
    written = nxe.onnx.load(model).save_model(tmp_path / "m.nxm", {"x": x},
                                              metadata={"name": "scorer"})
    assert (tmp_path / "m.nxm").read_bytes() == written
    with nxe.Model(tmp_path / "m.nxm") as saved:
        assert saved.metadata["source"] == "onnx" and saved.metadata["name"] == "scorer"
        graph = saved.graph()
    actual = graph.compile().run({"x": x})["y"]
    np.testing.assert_allclose(actual, _reference(model, {"x": x})["y"], rtol=RTOL, atol=ATOL)


def test_saving_refuses_outputs_a_model_file_cannot_compute(tmp_path):
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Relu", ["x"], ["y"])]
    model = _model(nodes, [_vi("x", shape=[2, 3])],
                   [_vi("s", TensorProto.INT64), _vi("y")])
    with pytest.raises(nxe.UnsupportedError, match="output 's' is computed at import"):
        nxe.onnx.load(model).save_model(tmp_path / "m.nxm",
                                        {"x": np.zeros((2, 3), np.float32)})
    assert not (tmp_path / "m.nxm").exists()
