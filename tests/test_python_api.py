"""The Python binding: import-time checks, errors carrying the C message, op methods
generated from the registry, tensors, executables on numpy arrays, variables, logging,
the op reference, the CLI and the README example."""

import gc
import inspect
import os
import re
import runpy
import shlex
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import cffi
import numpy as np
import nxe
import pytest
from nxe import _binding, _cdef, _dtypes, errors, registry
from nxe._binding import ffi, lib

REPO = Path(__file__).resolve().parents[1]
NUMPY_DTYPES = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16, "i8": np.int8,
                "u8": np.uint8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
                "bool": np.bool_, "f64": np.float64, "u16": np.uint16, "u32": np.uint32,
                "u64": np.uint64}


def schema(op_type):
    return next(op for op in nxe.ops() if op["name"] == op_type)


def random_array(rng, shape, dtype):
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(np.bool_)
    numpy_dtype = np.dtype(NUMPY_DTYPES[dtype])
    if numpy_dtype.kind == "f":
        return rng.standard_normal(shape).astype(numpy_dtype)
    info = np.iinfo(numpy_dtype)
    return rng.integers(info.min, info.max, shape, dtype=numpy_dtype, endpoint=True)


def run_single(build, feeds):
    """Compiles the graph `build(g)` returns the output of, and runs it once."""
    g = nxe.Graph()
    y = build(g)
    g.mark_output(y, name="y")
    return g.compile(threads=1).run(feeds)["y"]


# -- import-time checks and versions ---------------------------------------------------------


def test_descriptor_declaration_is_the_80_byte_abi_struct():
    assert ffi.sizeof("nxe_tensor_desc") == _binding.TENSOR_DESC_SIZE == 80
    assert ffi.offsetof("nxe_tensor_desc", "shape") == 32


def test_api_version_is_the_header_version():
    assert nxe.api_version() == (lib.NXE_API_VERSION_MAJOR, lib.NXE_API_VERSION_MINOR)


def test_library_version_is_the_package_version():
    assert nxe.version() == nxe.__version__ == metadata.version("nxe")


def test_library_version_is_the_api_version_and_the_header_patch():
    major, minor = nxe.api_version()
    assert nxe.__version__ == f"{major}.{minor}.{lib.NXE_VERSION_PATCH}"


def test_build_takes_the_version_from_the_source_header():
    result = subprocess.run([sys.executable, str(REPO / "tools" / "nxe_version.py"),
                             str(REPO / "include" / "nxe" / "nxe.h")],
                            capture_output=True, text=True, check=True)
    assert result.stdout.strip() == nxe.__version__


def test_library_is_loaded_from_inside_the_package():
    assert _binding.LIBRARY_PATH.parent.parent == Path(nxe.__file__).resolve().parent


def test_generated_declarations_cover_every_public_function():
    header = (_binding.INCLUDE_DIR / "nxe" / "nxe.h").read_text()
    declared = set(re.findall(r"^NXE_API\b[^;]*?\b(nxe_\w+)\s*\(", header, re.M))
    assert "nxe_executable_run" in declared
    assert sorted(name for name in declared if not hasattr(lib, name)) == []


def test_installed_declarations_are_generated_from_the_source_headers(tmp_path):
    assert sorted(_cdef.HEADERS) == sorted(h.name for h in (REPO / "include" / "nxe").glob("*.h"))
    output = tmp_path / "_cdef.py"
    subprocess.run([sys.executable, str(REPO / "tools" / "gen_cdef.py"), "--output", str(output),
                    "--include-dir", str(REPO / "include"),
                    "--headers", *[str(REPO / "include" / "nxe" / h) for h in _cdef.HEADERS], "--",
                    *shlex.split(os.environ.get("CC", "cc"))],
                   check=True)
    namespace = runpy.run_path(str(output))
    assert namespace["CDEF"] == _cdef.CDEF
    fresh = cffi.FFI()
    fresh.cdef(namespace["CDEF"])
    assert fresh.sizeof("nxe_tensor_desc") == 80


def test_integer_defines_of_the_header_are_constants():
    header = (_binding.INCLUDE_DIR / "nxe" / "nxe.h").read_text()
    for name, value in re.findall(r"^#define (NXE_[A-Z0-9_]+) (\d+)\s*$", header, re.M):
        assert getattr(lib, name) == int(value)


# -- errors ----------------------------------------------------------------------------------


def test_every_status_code_maps_to_the_exception_named_after_it():
    renamed = {"NXE_ERROR_IO": "IoError", "NXE_ERROR_RUNTIME": "RunError"}
    for status in range(1, lib.NXE_ERROR_INTERNAL + 1):
        c_name = ffi.string(lib.nxe_status_name(status)).decode()
        words = c_name.removeprefix("NXE_ERROR_").split("_")
        class_name = renamed.get(c_name, "".join(w.capitalize() for w in words) + "Error")
        error = errors.error_for_status(status, "message")
        assert type(error) is getattr(nxe, class_name)
        assert isinstance(error, nxe.Error) and error.status == status and str(error) == "message"


def test_unknown_status_code_becomes_the_base_error():
    error = errors.error_for_status(1000, "from a newer library")
    assert type(error) is nxe.Error and error.status == 1000


def test_failed_c_call_raises_with_the_c_message():
    g = nxe.Graph()
    with pytest.raises(nxe.NotFoundError) as caught:
        g.op("NoSuchOp", [])
    assert caught.value.status == lib.NXE_ERROR_NOT_FOUND
    assert str(caught.value) == ffi.string(lib.nxe_last_error()).decode()
    assert "'NoSuchOp'" in str(caught.value)


# -- op methods generated from the registry --------------------------------------------------


def test_every_registered_op_is_a_graph_method_with_its_schema_signature():
    for op in nxe.ops():
        method = getattr(nxe.Graph, op["name"])
        params = list(inspect.signature(method).parameters.values())[1:]
        inputs = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
        assert [p.name.rstrip("_") for p in inputs] == [i["name"] for i in op["inputs"]]
        for param, spec in zip(inputs, op["inputs"]):
            assert (param.kind is param.VAR_POSITIONAL) == spec["variadic"]
            if spec["optional"]:
                assert param.default is None
        keywords = {p.name.rstrip("_"): p for p in params if p.kind is p.KEYWORD_ONLY}
        for attr in op["attrs"]:
            expected = inspect.Parameter.empty if attr["required"] else attr["default"]
            assert keywords[attr["name"]].default == expected
        assert "name" in keywords
        variadic_output = op["outputs"][-1]["variadic"]
        assert ("num_outputs" in keywords) == variadic_output
        assert op["summary"] in method.__doc__


def test_registry_listing_matches_the_c_registry():
    count = ffi.new("int32_t *")
    assert lib.nxe_op_registry_count(count) == 0
    info = ffi.new("const nxe_op_info **")
    names = []
    for i in range(count[0]):
        assert lib.nxe_op_registry_get(i, info) == 0
        names.append(ffi.string(info[0].name).decode())
    assert [op["name"] for op in nxe.ops()] == names
    assert len(set(names)) == len(names)


def test_omitted_attribute_takes_the_schema_default_and_a_set_one_is_used(rng):
    x = rng.standard_normal((4, 5)).astype(np.float32)
    default_alpha = next(a["default"] for a in schema("LeakyRelu")["attrs"] if a["name"] == "alpha")
    omitted = run_single(lambda g: g.LeakyRelu(g.input("x", x.shape)), {"x": x})
    np.testing.assert_allclose(omitted, np.where(x > 0, x, np.float32(default_alpha) * x),
                               rtol=1e-6, atol=0)
    alpha = 0.25
    assert alpha != default_alpha
    explicit = run_single(lambda g: g.LeakyRelu(g.input("x", x.shape), alpha=alpha), {"x": x})
    np.testing.assert_allclose(explicit, np.where(x > 0, x, np.float32(alpha) * x),
                               rtol=1e-6, atol=0)


def test_attribute_of_the_wrong_python_type_is_a_type_error():
    g = nxe.Graph()
    x = g.input("x", (3,))
    with pytest.raises(TypeError, match="alpha"):
        g.LeakyRelu(x, alpha="steep")
    with pytest.raises(TypeError, match="axis"):
        g.Softmax(x, axis=1.5)


def test_attribute_the_schema_lacks_is_rejected_by_the_library():
    g = nxe.Graph()
    x = g.input("x", (3,))
    with pytest.raises(nxe.NotFoundError, match="'bogus'"):
        g.op("Relu", [x], bogus=1)
    with pytest.raises(TypeError, match="bogus"):
        g.Relu(x, bogus=1)


def test_variadic_input_takes_any_number_of_tensors(rng):
    parts = [rng.standard_normal((2, n)).astype(np.float32) for n in (1, 3, 2)]

    def build(g):
        return g.Concat(*[g.input(f"p{i}", p.shape) for i, p in enumerate(parts)], axis=1)

    y = run_single(build, {f"p{i}": p for i, p in enumerate(parts)})
    np.testing.assert_array_equal(y, np.concatenate(parts, axis=1))


def test_variadic_output_returns_num_outputs_tensors(rng):
    x = rng.standard_normal((2, 6)).astype(np.float32)
    g = nxe.Graph()
    parts = g.Split(g.input("x", x.shape), axis=1, num_outputs=3, name="split")
    assert isinstance(parts, tuple) and len(parts) == 3
    assert [p.name for p in parts] == ["split:0", "split:1", "split:2"]
    for p in parts:
        g.mark_output(p)
    result = g.compile(threads=1).run(x)
    for name, expected in zip(["split:0", "split:1", "split:2"], np.split(x, 3, axis=1)):
        np.testing.assert_array_equal(result[name], expected)


def test_variadic_output_without_num_outputs_is_a_type_error():
    g = nxe.Graph()
    x = g.input("x", (2, 6))
    with pytest.raises(TypeError, match="num_outputs"):
        g.Split(x, axis=1)
    with pytest.raises(TypeError, match="num_outputs"):
        g.op("Split", [x], axis=1)


def test_optional_input_left_as_none_is_absent(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    c = rng.standard_normal((3, 5)).astype(np.float32)
    without = run_single(lambda g: g.Gemm(g.input("a", a.shape), g.input("b", b.shape)),
                         {"a": a, "b": b})
    with_c = run_single(lambda g: g.Gemm(g.input("a", a.shape), g.input("b", b.shape),
                                         g.input("c", c.shape)), {"a": a, "b": b, "c": c})
    np.testing.assert_allclose(without, a @ b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(with_c, a @ b + c, rtol=1e-5, atol=1e-6)


def test_generic_op_binds_predeclared_output_tensors(rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    g = nxe.Graph()
    y = g.tensor(name="y", dtype="f32", kind="output")
    outputs = g.op("Relu", [g.input("x", x.shape)], outputs=[y])
    assert outputs == [y]
    np.testing.assert_array_equal(g.compile(threads=1).run(x)["y"], np.maximum(x, 0))


# -- tensors ---------------------------------------------------------------------------------


def test_op_output_is_transient_and_uninferred_until_marked_and_compiled():
    g = nxe.Graph()
    x = g.input("x", (2, 3), "f32")
    y = g.Relu(x, name="relu")
    assert (y.name, y.kind, y.dtype, y.shape) == ("relu", "transient", None, None)
    g.mark_output(y)
    assert y.kind == "output"
    g.compile(threads=1)
    assert (y.dtype, y.shape) == ("f32", (2, 3))
    assert (x.name, x.kind, x.dtype, x.shape) == ("x", "input", "f32", (2, 3))


def test_output_key_may_not_reuse_a_name():
    g = nxe.Graph()
    x = g.input("x", (3,))
    g.mark_output(g.Relu(x), name="y")
    with pytest.raises(nxe.InvalidArgumentError, match="already has a tensor named 'y'"):
        g.mark_output(g.Tanh(x), name="y")
    with pytest.raises(nxe.InvalidArgumentError, match="already has a tensor named 'x'"):
        g.mark_output(g.Sigmoid(x), name="x")


def test_output_name_is_the_tensor_name_in_c():
    g = nxe.Graph()
    x = g.input("x", (3,))
    y = g.Relu(x)
    g.mark_output(y, name="activation")
    assert y.name == "activation"
    assert g.find_tensor("activation") == y


def test_rejected_attribute_leaves_no_half_built_op():
    g = nxe.Graph()
    x = g.input("x", (3,))
    with pytest.raises(nxe.NotFoundError, match="no attribute 'slope'"):
        g.op("LeakyRelu", [x], name="bad", slope=0.2)
    g.mark_output(g.LeakyRelu(x, alpha=0.2), name="y")
    xv = np.array([-1.0, 0.0, 2.0], np.float32)
    out = g.compile().run({"x": xv})["y"]
    np.testing.assert_allclose(out, np.where(xv > 0, xv, np.float32(0.2) * xv), rtol=1e-6)


def test_rank_zero_tensors_stay_rank_zero(rng):
    g = nxe.Graph()
    c = g.constant(np.float32(2.5), name="c")
    assert (c.shape, c.dtype, c.kind) == ((), "f32", "constant")
    x = g.input("x", ())
    g.mark_output(g.Add(x, c), name="y")
    exe = g.compile(threads=1)
    assert exe.inputs == [("x", (), "f32")] and exe.outputs == [("y", (), "f32")]
    value = np.float32(rng.standard_normal())
    y = exe.run(np.array(value))["y"]
    assert y.shape == () and y == value + np.float32(2.5)


def test_declared_tensor_may_leave_dims_unknown():
    g = nxe.Graph()
    t = g.tensor(name="t", dtype="f16", kind="output", shape=(None, 4))
    assert (t.dtype, t.shape, t.kind) == ("f16", (None, 4), "output")
    assert g.find_tensor("t") == t


def test_constant_takes_the_array_dtype_or_converts_to_the_given_one():
    g = nxe.Graph()
    assert g.constant(np.zeros(3, np.int16)).dtype == "i16"
    assert g.constant(np.zeros(3, np.uint16)).dtype == "u16"
    assert g.constant(np.zeros(3, np.uint16), dtype="bf16").dtype == "bf16"
    assert g.constant(np.zeros(3)).dtype == "f64"
    assert g.constant(np.zeros(3, np.uint64)).dtype == "u64"
    assert g.constant([1.0, 2.0], dtype="f32").dtype == "f32"
    with pytest.raises(TypeError, match="complex128"):
        g.constant(np.zeros(3, np.complex128))


def test_ml_dtypes_bfloat16_arrays_are_bf16(rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    values = rng.standard_normal((2, 3)).astype(ml_dtypes.bfloat16)
    g = nxe.Graph()
    c = g.constant(values)
    assert c.dtype == "bf16"
    g.mark_output(g.Transpose(c, perm=[1, 0]))
    (got,) = g.compile().run({}).values()
    assert got.dtype == np.uint16
    np.testing.assert_array_equal(got, values.view(np.uint16).T)


def test_quantization_setters_report_back_through_quant():
    g = nxe.Graph()
    t = g.constant(np.zeros((3, 2), np.int8), name="w")
    assert t.quant == {"type": "none"}
    scale, zero_point = np.float32(0.375), -7
    t.set_quant_asymmetric(scale, zero_point)
    assert t.quant == {"type": "asymmetric", "scale": scale, "zero_point": zero_point}
    scales = np.array([0.5, 0.25, 0.125], np.float32)
    t.set_quant_per_channel(0, scales)
    assert t.quant == {"type": "per_channel", "axis": 0, "scales": scales.tolist()}
    t.set_quant_dynamic_fixed_point(5)
    assert t.quant == {"type": "dynamic_fixed_point", "fractional_length": 5}


def test_bad_quantization_raises_the_library_error():
    g = nxe.Graph()
    t = g.constant(np.zeros((3, 2), np.int8), name="w")
    with pytest.raises(nxe.InvalidArgumentError, match="'w'"):
        t.set_quant_asymmetric(-1.0, 0)
    with pytest.raises(nxe.ShapeMismatchError, match="'w'"):
        t.set_quant_per_channel(1, [0.5, 0.5, 0.5])


def test_tensor_keeps_its_graph_alive():
    def make():
        g = nxe.Graph()
        return g.input("kept", (1,))

    tensor = make()
    gc.collect()
    assert tensor.name == "kept" and tensor.graph is not None


def test_mistakes_python_catches_leave_the_graph_unchanged(rng):
    g, other = nxe.Graph(), nxe.Graph()
    x = g.input("x", (3,))
    with pytest.raises(ValueError, match="another graph"):
        g.Add(x, other.input("x", (3,)))
    with pytest.raises(TypeError, match="alpha"):
        g.LeakyRelu(x, alpha=[1.0])
    with pytest.raises(TypeError, match="num_outputs"):
        g.Split(x)
    g.mark_output(g.Relu(x), name="y")
    exe = g.compile(threads=1)
    assert exe.memory_info()["num_steps"] == 1
    value = rng.standard_normal(3).astype(np.float32)
    np.testing.assert_array_equal(exe.run(value)["y"], np.maximum(value, 0))


def test_closed_graph_refuses_further_use():
    g = nxe.Graph()
    x = g.input("x", (3,))
    g.close()
    with pytest.raises(nxe.InvalidStateError):
        g.Relu(x)
    with pytest.raises(nxe.InvalidStateError):
        _ = x.shape


# -- executables -----------------------------------------------------------------------------


def add_relu_executable(shape=(2, 3), threads=1):
    g = nxe.Graph()
    x = g.input("x", shape, "f32")
    b = g.input("b", shape, "f32")
    g.mark_output(g.Relu(g.Add(x, b)), name="y")
    return g.compile(threads=threads)


def test_executable_describes_inputs_and_outputs():
    exe = add_relu_executable()
    assert exe.inputs == [("x", (2, 3), "f32"), ("b", (2, 3), "f32")]
    assert exe.outputs == [("y", (2, 3), "f32")]


def test_run_accepts_a_feed_dict_or_positional_arrays(rng):
    exe = add_relu_executable()
    x, b = (rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2))
    expected = np.maximum(x + b, 0)
    np.testing.assert_array_equal(exe.run({"x": x, "b": b})["y"], expected)
    np.testing.assert_array_equal(exe.run(x, b)["y"], expected)


def test_each_run_returns_new_arrays(rng):
    exe = add_relu_executable()
    x, b = (rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2))
    first = exe.run(x, b)["y"]
    kept = first.copy()
    exe.run(x + 10, b)
    np.testing.assert_array_equal(first, kept)


def test_strided_input_is_made_contiguous(rng):
    exe = add_relu_executable()
    wide = rng.standard_normal((2, 6)).astype(np.float32)
    x = wide[:, ::2]
    b = np.asfortranarray(rng.standard_normal((2, 3)).astype(np.float32))
    np.testing.assert_array_equal(exe.run(x, b)["y"], np.maximum(x + b, 0))


def test_run_names_the_input_at_fault():
    exe = add_relu_executable()
    good = np.zeros((2, 3), np.float32)
    with pytest.raises(nxe.DtypeMismatchError, match="'b'.*float64"):
        exe.run(good, np.zeros((2, 3)))
    with pytest.raises(nxe.ShapeMismatchError, match=r"'x'.*\[2, 3\].*\[3, 2\]"):
        exe.run(np.zeros((3, 2), np.float32), good)
    with pytest.raises(nxe.InvalidArgumentError, match="'b'"):
        exe.run({"x": good})
    with pytest.raises(nxe.InvalidArgumentError, match="'z'"):
        exe.run({"x": good, "b": good, "z": good})
    with pytest.raises(nxe.InvalidArgumentError, match="2 inputs"):
        exe.run(good)


def test_python_dtypes_are_the_librarys_enum():
    header_codes = {getattr(lib, name) for name in dir(lib) if name.startswith("NXE_DTYPE_")}
    header_codes -= {lib.NXE_DTYPE_NONE, lib.NXE_DTYPE_COUNT}
    assert header_codes == set(range(1, lib.NXE_DTYPE_COUNT))
    name, size = ffi.new("const char **"), ffi.new("int32_t *")
    for code in header_codes:
        _binding.check(lib.nxe_dtype_info(code, name, size))
        dtype = ffi.string(name[0]).decode()
        assert getattr(lib, f"NXE_DTYPE_{dtype.upper()}") == code
        assert dtype in nxe.DTYPES
        assert _dtypes.numpy_of(code).itemsize == size[0]
    assert len(nxe.DTYPES) == len(header_codes)


@pytest.mark.parametrize("dtype", nxe.DTYPES)
def test_every_dtype_crosses_with_its_numpy_dtype(rng, dtype):
    x = random_array(rng, (2, 3), dtype)
    assert x.dtype == NUMPY_DTYPES[dtype]
    y = run_single(lambda g: g.Transpose(g.input("x", x.shape, dtype), perm=[1, 0]), {"x": x})
    assert y.dtype == NUMPY_DTYPES[dtype]
    np.testing.assert_array_equal(y, x.T)


@pytest.mark.parametrize("elem, dtype", [("DOUBLE", np.float64), ("UINT16", np.uint16),
                                         ("UINT32", np.uint32), ("UINT64", np.uint64),
                                         ("BFLOAT16", "bfloat16")])
def test_onnx_models_exchange_every_dtype_with_their_numpy_types(rng, elem, dtype):
    pytest.importorskip("onnx")
    ml_dtypes = pytest.importorskip("ml_dtypes")
    import nxe.onnx
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    dtype = np.dtype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    elem = getattr(TensorProto, elem)
    graph = helper.make_graph(
        [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
         helper.make_node("Cast", ["t"], ["y"], to=TensorProto.DOUBLE),
         helper.make_node("Cast", ["y"], ["z"], to=elem)],
        "g", [helper.make_tensor_value_info("x", elem, [2, 3])],
        [helper.make_tensor_value_info("t", elem, [3, 2]),
         helper.make_tensor_value_info("y", TensorProto.DOUBLE, [3, 2]),
         helper.make_tensor_value_info("z", elem, [3, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    if dtype.kind in "ui":
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, (2, 3), dtype=dtype, endpoint=True)
    else:
        x = (rng.standard_normal((2, 3)) * 1e3).astype(dtype)
    got = nxe.onnx.load(model).run({"x": x})
    expected = ReferenceEvaluator(model).run(None, {"x": x})
    for name, ref in zip(["t", "y", "z"], expected):
        assert got[name].dtype == ref.dtype and got[name].shape == ref.shape
        np.testing.assert_array_equal(got[name], ref)


def test_memory_info_reports_threads_and_steps():
    exe = add_relu_executable(threads=2)
    info = exe.memory_info()
    assert info["num_threads"] == 2 and info["num_steps"] == 2
    assert set(info) == {"arena_bytes", "transient_bytes", "constant_bytes", "num_threads",
                         "num_steps"}


def test_executable_outlives_its_graph(rng):
    g = nxe.Graph()
    x = g.input("x", (4,))
    g.mark_output(g.Tanh(x), name="y")
    exe = g.compile(threads=1)
    g.close()
    del g, x
    gc.collect()
    value = rng.standard_normal(4).astype(np.float32)
    np.testing.assert_allclose(exe.run(value)["y"], np.tanh(value), rtol=1e-5, atol=1e-6)


def test_closed_executable_refuses_to_run():
    with add_relu_executable() as exe:
        pass
    with pytest.raises(nxe.InvalidStateError):
        exe.run(np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32))
    exe.close()


def test_variable_is_read_written_and_used_between_runs(rng):
    initial = rng.standard_normal((2, 3)).astype(np.float32)
    g = nxe.Graph()
    x = g.input("x", (2, 3))
    v = g.variable(initial, name="v")
    g.mark_output(g.Add(x, v), name="y")
    exe = g.compile(threads=1)
    np.testing.assert_array_equal(exe.read_variable("v"), initial)
    x_value = rng.standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_array_equal(exe.run(x_value)["y"], x_value + initial)
    replacement = rng.standard_normal((2, 3)).astype(np.float32)
    exe.write_variable("v", replacement)
    np.testing.assert_array_equal(exe.read_variable("v"), replacement)
    np.testing.assert_array_equal(exe.run(x_value)["y"], x_value + replacement)
    with pytest.raises(nxe.NotFoundError, match="'w'"):
        exe.read_variable("w")
    with pytest.raises(nxe.ShapeMismatchError, match="'v'"):
        exe.write_variable("v", np.zeros((3, 2), np.float32))


# -- logging ---------------------------------------------------------------------------------


def test_log_callback_receives_warnings_until_silenced():
    messages = []
    nxe.set_log_callback(lambda level, message: messages.append((level, message)), "warning")
    try:
        g = nxe.Graph()
        x = g.input("x", (3,))
        g.Tanh(x, name="dangling")
        g.mark_output(g.Relu(x), name="y")
        g.compile(threads=1)
    finally:
        nxe.set_log_callback(None)
    assert any(level == lib.NXE_LOG_WARNING and "dangling" in message
               for level, message in messages)
    count = len(messages)
    g.compile(threads=1)
    assert len(messages) == count


def test_log_level_must_be_known():
    with pytest.raises(ValueError, match="loud"):
        nxe.set_log_callback(print, "loud")
    with pytest.raises(nxe.InvalidArgumentError, match="max_level"):
        nxe.set_log_callback(print, 9)


# -- op reference, CLI, README ---------------------------------------------------------------


def test_committed_op_reference_is_the_generated_one():
    assert (REPO / "docs" / "ops.md").read_text() == registry.markdown()


def test_op_reference_has_a_section_per_op():
    sections = re.findall(r"^## (\S+)$", registry.markdown(), re.M)
    assert sections == [op["name"] for op in nxe.ops()]


def nxe_cli(*args):
    result = subprocess.run([sys.executable, "-m", "nxe", *args], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_cli_prints_the_op_reference_and_list():
    assert nxe_cli("ops", "--markdown") == registry.markdown()
    listed = [line.split()[0] for line in nxe_cli("ops").splitlines()]
    assert listed == [op["name"] for op in nxe.ops()]


def test_cli_config_prints_paths_of_the_installed_package():
    assert nxe_cli("config", "--prefix").strip() == str(_binding.PACKAGE_DIR)
    assert nxe_cli("config", "--cflags").strip() == f"-I{_binding.INCLUDE_DIR}"
    pkgconfig = Path(nxe_cli("config", "--pkgconfig-path").strip())
    assert (pkgconfig / "nxe.pc").is_file()
    libs = nxe_cli("config", "--libs").split()
    assert f"-L{_binding.LIB_DIR}" in libs and f"-Wl,-rpath,{_binding.LIB_DIR}" in libs
    assert (_binding.INCLUDE_DIR / "nxe" / "nxe.h").is_file()


def test_readme_python_example_is_the_packaged_example():
    readme = (REPO / "README.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", readme, re.S | re.M)
    source = (_binding.PACKAGE_DIR / "example.py").read_text()
    assert sum(source.endswith(block) for block in blocks) == 1


def test_example_computes_relu_of_x_plus_b(capsys):
    namespace = runpy.run_module("nxe.example", run_name="__main__")
    printed = capsys.readouterr().out
    expected = np.maximum(namespace["x_value"] + namespace["b_value"], 0)
    y = namespace["exe"].run({"x": namespace["x_value"]})["y"]
    np.testing.assert_array_equal(y, expected)
    assert printed == f"{y}\n"
    assert nxe_cli("example") == printed
