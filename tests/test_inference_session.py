"""nxe.InferenceSession against onnxruntime on the same models: metadata (name, shape with
symbolic dims, type), outputs, output selection, the I/O binding path, options and providers,
the refusals of bad feeds (each naming the input), nxe.onnx.unsupported_nodes agreeing with
what runs, and nxe.onnx loading lazily with a clear error when onnx is missing."""

import importlib.util
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import nxe
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

# fp32 against fp32 on outputs of order one: bounds on every element.
RTOL = 1e-5
ATOL = 1e-5
# The exported ESPCN's output (of order one) against onnxruntime, as tests/test_onnx_real_models.py.
SR_ATOL = 1e-4

OPSET = 17


def _model(nodes, inputs, outputs, initializers=(), domains=(), **metadata):
    graph = helper.make_graph(nodes, "graph", inputs, outputs, list(initializers))
    opsets = [helper.make_opsetid("", OPSET)] + [helper.make_opsetid(d, 1) for d in domains]
    model = helper.make_model(graph, opset_imports=opsets, **metadata)
    model.ir_version = 8
    return model


def _init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def conv_net():
    """Two convolutions with a symbolic batch and spatial size; one output declared, two not
    (their shapes come from inference, one with dims inference cannot name)."""
    rng = np.random.default_rng(1)
    image = helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, "H", "W"])
    features = helper.make_tensor_value_info("features", TensorProto.FLOAT, ["N", 4, "H", "W"])
    strided = helper.make_tensor_value_info("strided", TensorProto.FLOAT, None)
    pooled = helper.make_tensor_value_info("pooled", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Conv", ["image", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["features"]),
             helper.make_node("Conv", ["features", "w2"], ["strided"], strides=[2, 2]),
             helper.make_node("GlobalAveragePool", ["strided"], ["pooled"])]
    weights = [_init("w1", rng.standard_normal((4, 3, 3, 3), np.float32) * 0.3),
               _init("b1", rng.standard_normal(4, np.float32) * 0.1),
               _init("w2", rng.standard_normal((2, 4, 3, 3), np.float32) * 0.3)]
    model = _model(nodes, [image], [features, strided, pooled], weights,
                   producer_name="test-producer",
                   doc_string="a small conv net", model_version=7)
    model.graph.doc_string = "the graph"
    model.domain = "org.example"
    helper.set_model_props(model, {"author": "nobody", "license": "none"})
    return model, lambda rng, batch=2: {"image": rng.random((batch, 3, 9, 10), np.float32)}


def token_model():
    """int64 token ids -> Gather from an embedding -> mean over the sequence -> MatMul."""
    rng = np.random.default_rng(2)
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "seq"])
    out = helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", 5])
    nodes = [helper.make_node("Gather", ["table", "ids"], ["rows"]),
             helper.make_node("ReduceMean", ["rows"], ["mean"], axes=[1], keepdims=0),
             helper.make_node("MatMul", ["mean", "proj"], ["embedding"])]
    weights = [_init("table", rng.standard_normal((11, 8), np.float32)),
               _init("proj", rng.standard_normal((8, 5), np.float32))]
    return (_model(nodes, [ids], [out], weights),
            lambda rng, batch=2: {"ids": rng.integers(0, 11, (batch, 6), dtype=np.int64)})


def multi_output_model():
    """Several outputs of several types; a dimension that is neither fixed nor named."""
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, None])
    outputs = [helper.make_tensor_value_info("sum", TensorProto.FLOAT, [2, 3]),
               helper.make_tensor_value_info("product", TensorProto.FLOAT, [2, 3]),
               helper.make_tensor_value_info("rounded", TensorProto.INT32, [2, 3]),
               helper.make_tensor_value_info("positive", TensorProto.BOOL, [2, 3])]
    nodes = [helper.make_node("Add", ["a", "b"], ["sum"]),
             helper.make_node("Mul", ["a", "b"], ["product"]),
             helper.make_node("Cast", ["sum"], ["rounded"], to=TensorProto.INT32),
             helper.make_node("Greater", ["product", "zero"], ["positive"])]
    return (_model(nodes, [a, b], outputs, [_init("zero", np.float32(0))]),
            lambda rng, batch=None: {"a": (rng.random((2, 3), np.float32) - 0.5) * 8,
                                     "b": (rng.random((2, 3), np.float32) - 0.5) * 8})


def _export_module():
    """tools/export_onnx.py, which exports the real models of tests/test_onnx_real_models.py."""
    script = Path(__file__).resolve().parents[1] / "tools" / "export_onnx.py"
    spec = importlib.util.spec_from_file_location("export_onnx_for_sessions", script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


export_onnx = _export_module()


def espcn_model(tmp_path_factory):
    """The ESPCN x2 of tools/export_onnx.py, exported by PyTorch with a dynamic batch."""
    path = export_onnx.export_espcn(tmp_path_factory.mktemp("espcn") / "espcn.onnx")
    return path.read_bytes(), lambda rng, batch=1: export_onnx.sample_inputs("espcn", batch)


SMALL_MODELS = {"conv": conv_net, "tokens": token_model, "multi": multi_output_model}


@pytest.fixture(scope="module", params=[*SMALL_MODELS, "espcn"])
def model(request, tmp_path_factory):
    """(serialized model, inputs maker) of each model."""
    if request.param == "espcn":
        return espcn_model(tmp_path_factory)
    proto, make_inputs = SMALL_MODELS[request.param]()
    return proto.SerializeToString(), make_inputs


def _ort(serialized):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    return onnxruntime.InferenceSession(serialized, options,
                                        providers=["CPUExecutionProvider"])


def _nxe(serialized, threads=1):
    options = nxe.SessionOptions()
    options.intra_op_num_threads = threads
    return nxe.InferenceSession(serialized, options, providers=["CPUExecutionProvider"])


def _meta(args):
    return [(a.name, a.shape, a.type) for a in args]


def _assert_same(got, expected):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        if e.dtype.kind == "f":
            np.testing.assert_allclose(g, e, rtol=RTOL, atol=ATOL)
        else:
            np.testing.assert_array_equal(g, e)


# ---- metadata -----------------------------------------------------------------------------

def test_inputs_and_outputs_are_described_as_onnxruntime_describes_them(model):
    serialized, _ = model
    session, reference = _nxe(serialized), _ort(serialized)
    assert _meta(session.get_inputs()) == _meta(reference.get_inputs())
    assert _meta(session.get_outputs()) == _meta(reference.get_outputs())


def test_symbolic_fixed_and_unnamed_dims_are_given_as_declared():
    session = _nxe(conv_net()[0].SerializeToString())
    assert _meta(session.get_inputs()) == [("image", ["N", 3, "H", "W"], "tensor(float)")]
    assert [o.shape for o in session.get_outputs()] == [["N", 4, "H", "W"], ["N", 2, None, None],
                                                        ["N", 2, 1, 1]]
    session = _nxe(multi_output_model()[0].SerializeToString())
    assert _meta(session.get_inputs()) == [("a", [2, 3], "tensor(float)"),
                                           ("b", [2, None], "tensor(float)")]
    assert [o.type for o in session.get_outputs()] == ["tensor(float)", "tensor(float)",
                                                       "tensor(int32)", "tensor(bool)"]
    assert _meta(_nxe(token_model()[0].SerializeToString()).get_inputs()) == [
        ("ids", ["batch", "seq"], "tensor(int64)")]


def test_model_metadata_is_onnxruntimes():
    serialized = conv_net()[0].SerializeToString()
    got, expected = _nxe(serialized).get_modelmeta(), _ort(serialized).get_modelmeta()
    for field in ("producer_name", "graph_name", "domain", "description", "graph_description",
                  "version", "custom_metadata_map"):
        assert getattr(got, field) == getattr(expected, field), field
    assert got.custom_metadata_map == {"author": "nobody", "license": "none"}


# ---- running ------------------------------------------------------------------------------

def test_outputs_match_onnxruntime(model):
    serialized, make_inputs = model
    session, reference = _nxe(serialized), _ort(serialized)
    rng = np.random.default_rng(0)
    for batch in (1, 3):
        feeds = make_inputs(rng, batch)
        got, expected = session.run(None, feeds), reference.run(None, feeds)
        if [o.name for o in session.get_outputs()] == ["upscaled"]:
            np.testing.assert_allclose(got[0], expected[0], rtol=0, atol=SR_ATOL)
        else:
            _assert_same(got, expected)


def test_output_names_choose_and_order_the_results():
    serialized, make_inputs = multi_output_model()
    serialized = serialized.SerializeToString()
    session, reference = _nxe(serialized), _ort(serialized)
    feeds = make_inputs(np.random.default_rng(3))
    everything = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    for names in (["positive", "sum"], ["product"], ["rounded", "product", "sum"]):
        got = session.run(names, feeds)
        _assert_same(got, reference.run(names, feeds))
        _assert_same(got, [everything[n] for n in names])


def test_threads_come_from_intra_op_num_threads():
    serialized, make_inputs = conv_net()
    serialized = serialized.SerializeToString()
    feeds = make_inputs(np.random.default_rng(4))
    one, two = _nxe(serialized, threads=1), _nxe(serialized, threads=2)
    assert one._model.threads == 1 and two._model.threads == 2
    for got, expected in zip(two.run(None, feeds), one.run(None, feeds)):
        np.testing.assert_array_equal(got, expected)  # nxe's results do not depend on threads
    assert nxe.InferenceSession(serialized)._model.threads == 0  # 0: every online CPU


def test_one_session_runs_from_several_threads_at_once():
    serialized, make_inputs = conv_net()
    session = _nxe(serialized.SerializeToString())
    rng = np.random.default_rng(10)
    # Four batch sizes, so the threads also compile concurrently.
    feeds = [make_inputs(rng, batch) for batch in (1, 2, 3, 4) for _ in range(2)]
    expected = [_ort(serialized.SerializeToString()).run(None, f) for f in feeds]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda f: session.run(None, f), feeds))
    for g, e in zip(got, expected):
        _assert_same(g, e)


@pytest.mark.parametrize("providers", [None, ["CPUExecutionProvider"], ["NxeExecutionProvider"],
                                       [("CPUExecutionProvider", {})],
                                       ["NxeExecutionProvider", "CPUExecutionProvider"]])
def test_accepted_providers(providers):
    serialized = multi_output_model()[0].SerializeToString()
    session = nxe.InferenceSession(serialized, providers=providers)
    names = [p[0] if isinstance(p, tuple) else p for p in providers or ["CPUExecutionProvider"]]
    assert session.get_providers() == names


def test_a_path_and_a_model_proto_load_as_bytes_do(tmp_path):
    proto, make_inputs = token_model()
    path = tmp_path / "tokens.onnx"
    path.write_bytes(proto.SerializeToString())
    feeds = make_inputs(np.random.default_rng(5))
    expected = _ort(proto.SerializeToString()).run(None, feeds)
    for source in (path, str(path), proto):
        _assert_same(nxe.InferenceSession(source).run(None, feeds), expected)


class _DLPackOnly:
    """An array offered only through DLPack, as a tensor of another framework is."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_feeds_may_be_objects_offering_only_dlpack():
    serialized, make_inputs = multi_output_model()
    serialized = serialized.SerializeToString()
    feeds = make_inputs(np.random.default_rng(9))
    expected = _ort(serialized).run(None, feeds)
    session = _nxe(serialized)
    _assert_same(session.run(None, {"a": _DLPackOnly(feeds["a"]), "b": feeds["b"]}), expected)
    binding = session.io_binding()
    binding.bind_input("a", _DLPackOnly(feeds["a"]))
    binding.bind_input("b", feeds["b"])
    binding.bind_output("positive")
    session.run_with_iobinding(binding)
    _assert_same(binding.get_outputs(), expected[3:])
    # A list is taken as numpy takes it: Python floats are float64, refused as onnxruntime does.
    with pytest.raises(nxe.DtypeMismatchError, match="input 'a': dtype float64"):
        session.run(None, {"a": feeds["a"].tolist(), "b": feeds["b"]})


def test_minilm_runs_through_the_session_as_through_onnxruntime(tmp_path):
    # A PyTorch export full of Constant, Shape and Gather nodes, all folded or converted.
    path = export_onnx.export_minilm(tmp_path / "minilm.onnx")
    assert nxe.onnx.unsupported_nodes(path) == []
    session, reference = _nxe(path.read_bytes()), _ort(path.read_bytes())
    assert _meta(session.get_inputs()) == _meta(reference.get_inputs())
    assert _meta(session.get_outputs()) == _meta(reference.get_outputs())
    feeds = export_onnx.sample_inputs("minilm", 1)
    [got], [expected] = session.run(None, feeds), reference.run(None, feeds)
    assert got.shape == expected.shape == (1, 384)
    # The bound of tests/test_onnx_real_models.py on these unit-length embeddings.
    assert export_onnx.cosine_rows(got, expected).min() >= 0.99999


# ---- I/O binding --------------------------------------------------------------------------

def test_io_binding_gives_onnxruntimes_results_without_copying_out():
    serialized, make_inputs = conv_net()
    serialized = serialized.SerializeToString()
    session, reference = _nxe(serialized), _ort(serialized)
    rng = np.random.default_rng(6)
    image = make_inputs(rng)["image"]

    binding = session.io_binding()
    binding.bind_input("image", image)
    binding.bind_output("pooled")
    binding.bind_output("features")
    session.run_with_iobinding(binding)
    views = binding.get_outputs()

    ort_binding = reference.io_binding()
    ort_binding.bind_cpu_input("image", image)
    ort_binding.bind_output("pooled")
    ort_binding.bind_output("features")
    reference.run_with_iobinding(ort_binding)
    _assert_same(views, ort_binding.copy_outputs_to_cpu())

    copies = binding.copy_outputs_to_cpu()
    _assert_same(copies, views)
    assert all(c.flags.owndata and not np.shares_memory(c, v) for c, v in zip(copies, views))

    # The bound input is read at each run; the outputs land in the same result buffer.
    image[...] = make_inputs(rng)["image"]
    session.run_with_iobinding(binding)
    again = binding.get_outputs()
    assert all(np.shares_memory(a, v) for a, v in zip(again, views))
    _assert_same(again, reference.run(["pooled", "features"], {"image": image}))
    assert not np.allclose(copies[0], again[0])  # the copies kept the first run's values


def test_bind_cpu_input_is_bind_input_and_clearing_unbinds():
    serialized, make_inputs = multi_output_model()
    session = _nxe(serialized.SerializeToString())
    feeds = make_inputs(np.random.default_rng(7))
    binding = session.io_binding()
    binding.bind_cpu_input("a", feeds["a"])
    binding.bind_input("b", feeds["b"])
    binding.bind_output("sum")
    session.run_with_iobinding(binding)
    _assert_same(binding.copy_outputs_to_cpu(), session.run(["sum"], feeds))
    binding.clear_binding_outputs()
    assert binding.get_outputs() == []
    with pytest.raises(nxe.InvalidArgumentError, match="no output bound"):
        session.run_with_iobinding(binding)
    binding.bind_output("rounded")
    binding.clear_binding_inputs()
    with pytest.raises(nxe.InvalidArgumentError, match=r"input 'a', 'b' not fed"):
        session.run_with_iobinding(binding)


def test_io_binding_refusals():
    serialized = conv_net()[0].SerializeToString()
    session, other = _nxe(serialized), _nxe(serialized)
    binding = session.io_binding()
    with pytest.raises(nxe.InvalidArgumentError, match="bind_input: no input named 'x'"):
        binding.bind_input("x", np.zeros((1, 3, 4, 4), np.float32))
    with pytest.raises(nxe.ShapeMismatchError, match="input 'image': dimension 1 is 2, "
                                                     "expected 3"):
        binding.bind_input("image", np.zeros((1, 2, 4, 4), np.float32))
    with pytest.raises(nxe.InvalidArgumentError, match="bind_output: no output named 'y'"):
        binding.bind_output("y")
    with pytest.raises(nxe.UnsupportedError, match="'cuda'"):
        binding.bind_output("pooled", "cuda")
    binding.bind_input("image", np.zeros((1, 3, 4, 4), np.float32))
    binding.bind_output("pooled")
    with pytest.raises(nxe.InvalidArgumentError, match="not made by this session"):
        other.run_with_iobinding(binding)


# ---- refusals -----------------------------------------------------------------------------

def _conv_feeds(shape=(1, 3, 5, 5), dtype=np.float32):
    return {"image": np.zeros(shape, dtype)}


FEED_ERRORS = [
    # (model, feeds, nxe error, message)
    ("conv", {}, nxe.InvalidArgumentError, "run: input 'image' not fed"),
    ("conv", {**_conv_feeds(), "mask": np.zeros(3, np.float32)}, nxe.InvalidArgumentError,
     r"run: no input named 'mask'; inputs are \['image'\]"),
    ("conv", _conv_feeds((1, 3, 5)), nxe.ShapeMismatchError,
     r"input 'image': rank 3, expected 4 \(\[N, 3, H, W\]\)"),
    ("conv", _conv_feeds((1, 4, 5, 5)), nxe.ShapeMismatchError,
     "input 'image': dimension 1 is 4, expected 3"),
    ("conv", _conv_feeds(dtype=np.float64), nxe.DtypeMismatchError,
     "input 'image': dtype float64, expected float32"),
    ("tokens", {"ids": np.zeros((1, 4), np.float32)}, nxe.DtypeMismatchError,
     "input 'ids': dtype float32, expected int64"),
    ("tokens", {"ids": np.zeros(4, np.int64)}, nxe.ShapeMismatchError,
     r"input 'ids': rank 1, expected 2 \(\[batch, seq\]\)"),
    ("multi", {"a": np.zeros((2, 3), np.float32), "b": np.zeros((3, 3), np.float32)},
     nxe.ShapeMismatchError, "input 'b': dimension 0 is 3, expected 2"),
    ("multi", {"a": np.zeros((2, 3), np.float32), "b": np.zeros((2, 3, 1), np.float32)},
     nxe.ShapeMismatchError, r"input 'b': rank 3, expected 2 \(\[2, \?\]\)"),
]


@pytest.mark.parametrize("name, feeds, error, message", FEED_ERRORS)
def test_a_bad_feed_names_the_input_and_what_was_expected(name, feeds, error, message):
    serialized = SMALL_MODELS[name]()[0].SerializeToString()
    with pytest.raises(error, match=f"^{message}"):
        _nxe(serialized).run(None, feeds)
    with pytest.raises((ValueError, onnxruntime.capi.onnxruntime_pybind11_state.Fail,
                        onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument)):
        _ort(serialized).run(None, feeds)  # onnxruntime refuses the same feed


def test_feeds_are_checked_before_anything_is_compiled():
    # The model cannot be compiled (NonZero of a run-time value), yet each bad feed gets its
    # own message first, and a good one reaches the compile and its refusal.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.INT64, [2, None])
    serialized = _model([helper.make_node("NonZero", ["x"], ["y"], name="nz")], [x],
                        [y]).SerializeToString()
    session = _nxe(serialized)
    with pytest.raises(nxe.ShapeMismatchError, match="input 'x': dimension 0 is 3"):
        session.run(None, {"x": np.ones((3, 3), np.float32)})
    with pytest.raises(nxe.DtypeMismatchError, match="input 'x': dtype int32"):
        session.run(None, {"x": np.ones((2, 3), np.int32)})
    with pytest.raises(nxe.UnsupportedError, match="NonZero node 'nz'"):
        session.run(None, {"x": np.ones((2, 3), np.float32)})
    assert _ort(serialized).run(None, {"x": np.ones((2, 3), np.float32)})[0].shape == (2, 6)


def test_an_invalid_model_is_refused_when_the_session_is_made():
    # Relu has no attributes; onnxruntime refuses the model on loading too.
    node = helper.make_node("Relu", ["x"], ["y"], alpha=0.5)
    serialized = _model([node], [_vi("x")], [_vi("y")]).SerializeToString()
    with pytest.raises(nxe.InvalidGraphError, match="alpha"):
        nxe.InferenceSession(serialized)
    with pytest.raises(onnxruntime.capi.onnxruntime_pybind11_state.InvalidGraph):
        _ort(serialized)


def test_unknown_output_names_and_feeds_that_are_not_a_dict():
    serialized, make_inputs = multi_output_model()
    session = _nxe(serialized.SerializeToString())
    feeds = make_inputs(np.random.default_rng(8))
    with pytest.raises(nxe.InvalidArgumentError,
                       match=r"run: no output named 'nope'; outputs are \['sum', 'product', "
                             r"'rounded', 'positive'\]"):
        session.run(["sum", "nope"], feeds)
    with pytest.raises(nxe.InvalidArgumentError, match="output_names is a string"):
        session.run("sum", feeds)
    with pytest.raises(nxe.InvalidArgumentError, match="input_feed must be a dict"):
        session.run(None, [feeds["a"], feeds["b"]])


@pytest.mark.parametrize("providers", [["CUDAExecutionProvider"],
                                       ["CUDAExecutionProvider", "CPUExecutionProvider"], []])
def test_other_providers_are_refused_naming_the_accepted_ones(providers):
    serialized = multi_output_model()[0].SerializeToString()
    with pytest.raises(ValueError, match=r"\['NxeExecutionProvider', 'CPUExecutionProvider'\]"):
        nxe.InferenceSession(serialized, providers=providers)


def test_provider_options_are_refused():
    serialized = multi_output_model()[0].SerializeToString()
    with pytest.raises(ValueError, match="no provider options"):
        nxe.InferenceSession(serialized, providers=[("CPUExecutionProvider", {"arena": "0"})])


def test_session_options_that_would_be_ignored_harmfully_are_refused():
    serialized = multi_output_model()[0].SerializeToString()
    options = nxe.SessionOptions()
    options.inter_op_num_threads = 4  # harmless: accepted and ignored
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.enable_mem_pattern = False
    nxe.InferenceSession(serialized, options)
    for field, value, error in (("enable_profiling", True, nxe.UnsupportedError),
                                ("optimized_model_filepath", "out.onnx", nxe.UnsupportedError),
                                ("intra_op_num_threads", -1, nxe.InvalidArgumentError),
                                ("intra_op_num_threads", 1.5, nxe.InvalidArgumentError)):
        options = nxe.SessionOptions()
        setattr(options, field, value)
        with pytest.raises(error, match=f"SessionOptions.{field}"):
            nxe.InferenceSession(serialized, options)
    with pytest.raises(AttributeError):
        nxe.SessionOptions().no_such_option = 1


# ---- unsupported_nodes agrees with what runs ----------------------------------------------

def _vi(name, elem=TensorProto.FLOAT, shape=(2, 3)):
    return helper.make_tensor_value_info(name, elem, None if shape is None else list(shape))


def _constant(name, array):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
        np.asarray(array), name), name=f"make_{name}")


def _coverage_models():
    """(label, model, feeds): models that run and models that do not."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    feeds = {"x": x}
    models = [
        ("constant", _model([_constant("k", np.full((2, 3), 2, np.float32)),
                             helper.make_node("Add", ["x", "k"], ["y"], name="add")],
                            [_vi("x")], [_vi("y")]), feeds),
        ("non_zero_of_an_input", _model([helper.make_node("NonZero", ["x"], ["y"], name="nz")],
                                        [_vi("x")], [_vi("y", TensorProto.INT64, None)]),
         feeds),
        ("non_zero_of_a_constant", _model(
            [_constant("k", np.array([0, 1, 0, 2], np.float32)),
             helper.make_node("NonZero", ["k"], ["nz_out"], name="nz"),
             helper.make_node("Cast", ["nz_out"], ["nzf"], to=TensorProto.FLOAT),
             helper.make_node("ReduceSum", ["nzf"], ["s"], keepdims=0),
             helper.make_node("Mul", ["x", "s"], ["y"])],
            [_vi("x")], [_vi("y")]), feeds),
        ("shape_to_constant_of_shape", _model(
            [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("ConstantOfShape", ["shape"], ["ones"],
                              value=numpy_helper.from_array(np.ones(1, np.float32))),
             helper.make_node("Add", ["x", "ones"], ["y"])],
            [_vi("x")], [_vi("y")]), feeds),
        ("range_of_run_time_values", _model(
            [helper.make_node("ReduceMax", ["x"], ["top"], keepdims=0),
             helper.make_node("Range", ["zero", "top", "one"], ["y"], name="range")],
            [_vi("x")], [_vi("y", shape=None)],
            [_init("zero", np.float32(0)), _init("one", np.float32(1))]), feeds),
        ("unknown_op", _model([helper.make_node("Frobnicate", ["x"], ["y"], name="frob",
                                                domain="com.example")],
                              [_vi("x")], [_vi("y")], domains=["com.example"]), feeds),
        ("run_time_if", _model(
            [helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
             helper.make_node("Greater", ["total", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"], name="branch",
                              then_branch=helper.make_graph(
                                  [helper.make_node("Relu", ["x"], ["t"])], "then", [],
                                  [_vi("t")]),
                              else_branch=helper.make_graph(
                                  [helper.make_node("Neg", ["x"], ["e"])], "else", [],
                                  [_vi("e")]))],
            [_vi("x")], [_vi("y")], [_init("zero", np.float32(0))]), feeds),
    ]
    return models


def _runs(model, feeds):
    try:
        nxe.onnx.load(model).run(feeds)
    except nxe.UnsupportedError:
        return False
    return True


@pytest.mark.parametrize("label, model, feeds", _coverage_models(),
                         ids=[m[0] for m in _coverage_models()])
def test_unsupported_nodes_is_empty_exactly_when_the_model_runs(label, model, feeds):
    listed = nxe.onnx.unsupported_nodes(model)
    assert (listed == []) == _runs(model, feeds), listed
    expected = {"constant": [], "non_zero_of_an_input": [("NonZero", "nz")],
                "non_zero_of_a_constant": [], "shape_to_constant_of_shape": [],
                "range_of_run_time_values": [("Range", "range")],
                "unknown_op": [("com.example.Frobnicate", "frob")],
                "run_time_if": [("If", "branch")]}
    assert listed == expected[label]


def test_a_fold_only_node_that_does_not_fold_says_why():
    model = _model([helper.make_node("NonZero", ["x"], ["y"], name="nz")], [_vi("x")],
                   [_vi("y", TensorProto.INT64, None)])
    with pytest.raises(nxe.UnsupportedError,
                       match=r"NonZero node 'nz' \(the output shape depends on the input "
                             "values"):
        nxe.onnx.load(model).run({"x": np.ones((2, 3), np.float32)})


def test_an_op_is_either_fold_only_or_converted():
    from nxe.onnx import registry

    assert registry.find("NonZero") is None and registry.fold_only_reason("NonZero")
    with pytest.raises(ValueError, match="'NonZero'.*fold-only"):
        registry.converter("NonZero")(lambda ctx, node: None)
    with pytest.raises(ValueError, match="'Relu'.*already has a converter"):
        registry.fold_only("Relu", "never")
    assert registry.find("NonZero") is None and registry.find("Relu") is not None
    assert registry.fold_only_reason("Relu") is None


# ---- lazy import --------------------------------------------------------------------------

def _python(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, cwd="/")


def test_nxe_onnx_is_imported_on_first_use():
    result = _python(
        "import sys, nxe\n"
        "assert 'onnx' not in sys.modules and 'nxe.onnx' not in sys.modules\n"
        "import onnx\n"
        "assert nxe.onnx.load is not None and 'nxe.onnx' in sys.modules\n"
        "assert nxe.InferenceSession is nxe.onnx.InferenceSession\n"
        "assert nxe.SessionOptions is nxe.onnx.SessionOptions\n"
        "from nxe import *\n")
    assert result.returncode == 0, result.stderr


def test_a_missing_onnx_names_the_extra_to_install():
    result = _python(
        "import sys\n"
        "sys.modules['onnx'] = None\n"
        "import nxe\n"
        "from nxe import *\n"
        "for name in ('onnx', 'InferenceSession', 'SessionOptions'):\n"
        "    try:\n"
        "        getattr(nxe, name)\n"
        "    except ImportError as error:\n"
        "        print(error)\n"
        "    else:\n"
        "        raise SystemExit(name + ' imported without onnx')\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "nxe.onnx needs the onnx package: pip install 'nxe[onnx]'"] * 3
