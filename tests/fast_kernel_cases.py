"""Cases for tests/test_fast_kernels.py, run in a fresh process per ISA level (NXE_ISA is read
once per process): builds each graph, runs it compiled in memory and loaded from a binary, and
saves the outputs with the inputs and weights they came from.

    NXE_ISA=avx512 python tests/fast_kernel_cases.py OUT.npz
"""

from __future__ import annotations

import json
import sys

import numpy as np
import nxe

# name, kind, shapes and attributes. Conv: (N, C, spatial..., O, kernel, stride, dilation,
# pads, groups), with the op after it ("then") and whether an Add of a residual follows.

def conv_case(name: str, n: int, c: int, size: tuple[int, ...], o: int, k: int, stride: int = 1,
              dilation: int = 1, pad: int = 0, **extra: object) -> dict:
    """One convolution case: batch, channels, spatial size, output channels, kernel size."""
    return {"name": name, "n": n, "c": c, "size": size, "o": o, "k": k, "stride": stride,
            "dilation": dilation, "pad": pad, **extra}


CONV_CASES = [
    conv_case("first_layer_5x5", n=1, c=1, size=(19, 101), o=64, k=5, pad=2),
    conv_case("tails_3x3", n=2, c=3, size=(9, 50), o=5, k=3, pad=1, then="Tanh"),
    conv_case("odd_channels", n=1, c=17, size=(7, 97), o=33, k=3, pad=1, then="Relu",
              residual=True),
    conv_case("stride2", n=1, c=8, size=(11, 41), o=16, k=3, stride=2, pad=1, then="Sigmoid"),
    conv_case("dilation2", n=1, c=6, size=(12, 30), o=7, k=3, dilation=2, pad=2,
              then="LeakyRelu"),
    conv_case("groups", n=1, c=8, size=(10, 26), o=12, k=3, pad=1, groups=4, then="Gelu"),
    conv_case("depthwise", n=1, c=6, size=(8, 53), o=6, k=3, pad=1, groups=6, then="Clip",
              residual=True),
    conv_case("depthwise_multiplier_nhwc", n=2, c=4, size=(9, 17), o=8, k=3, stride=2, pad=1,
              groups=4, layout="NHWC", then="Relu"),
    conv_case("pointwise", n=1, c=40, size=(6, 49), o=9, k=1, residual=True),
    conv_case("edsr_like", n=1, c=64, size=(5, 70), o=64, k=3, pad=1, residual=True,
              then="Relu"),
    conv_case("no_padding", n=1, c=4, size=(9, 60), o=4, k=3, then="Clip"),
    conv_case("nhwc", n=2, c=5, size=(7, 21), o=19, k=3, pad=1, layout="NHWC", then="Relu",
              residual=True),
    conv_case("nhwc_stride2", n=1, c=16, size=(9, 33), o=50, k=3, stride=2, pad=1,
              layout="NHWC"),
    conv_case("conv1d", n=2, c=5, size=(40,), o=7, k=4, stride=3, dilation=2, pad=3),
    conv_case("conv3d", n=1, c=4, size=(4, 5, 6), o=6, k=3, pad=1, groups=2, then="Tanh"),
]

# Dense layers with constant weights: FullyConnected [N, K]; Gemm with its attributes;
# MatMul with a 2-D B under a batched A.
DENSE_CASES = [
    {"name": "fc_tails", "op": "FullyConnected", "m": (3, 7), "k": 33, "n": 50, "bias": True,
     "then": "Gelu"},
    {"name": "fc_square", "op": "FullyConnected", "m": (64,), "k": 384, "n": 384, "bias": True,
     "scale": 0.125, "residual": True},
    {"name": "fc_long_k", "op": "FullyConnected", "m": (5,), "k": 700, "n": 20, "bias": False,
     "then": "Swish"},
    {"name": "gemm_trans", "op": "Gemm", "m": (9,), "k": 30, "n": 61, "transA": 1, "transB": 1,
     "alpha": 0.5, "beta": 2.0, "c": "row", "scale": 3.0},
    {"name": "gemm_scalar_c", "op": "Gemm", "m": (17,), "k": 300, "n": 100, "transA": 0,
     "transB": 0, "alpha": 1.0, "beta": 0.5, "c": "scalar", "then": "Relu"},
    {"name": "gemm_full_c", "op": "Gemm", "m": (6,), "k": 12, "n": 10, "transA": 0, "transB": 0,
     "alpha": 1.0, "beta": 1.0, "c": "full"},
    {"name": "matmul_batched", "op": "MatMul", "m": (2, 3, 11), "k": 45, "n": 70},
    # B computed at run time (attention's operands), its batch broadcast over A's, and the
    # product scaled as attention scales its scores.
    {"name": "matmul_runtime_b", "op": "MatMul", "m": (2, 3, 11), "k": 45, "n": 70,
     "b_input": (3,), "scale": -0.5, "then": "Tanh"},
    {"name": "matmul_runtime_b_square", "op": "MatMul", "m": (4, 64), "k": 64, "n": 64,
     "b_input": (4,), "residual": True},
]

# 8-bit products: A [m..., k] and B [(batch...), k, n] of the given dtypes, zero points per
# tensor ("tensor"), per row of A / column of B ("axis") or absent; QLinearMatMul requantizes to
# y_dtype. An Add after an integer product stays its own step (nothing folds into it).
QUANT_CASES = [
    {"name": "u8_i8_tensor_zero", "op": "MatMulInteger", "m": (7,), "k": 33, "n": 50,
     "a": "u8", "b": "i8", "zero": "tensor", "b_input": False, "add": True},
    {"name": "i8_i8_axis_zero", "op": "MatMulInteger", "m": (2, 9), "k": 70, "n": 49,
     "a": "i8", "b": "i8", "zero": "axis", "b_input": False},
    {"name": "u8_u8_runtime_b", "op": "MatMulInteger", "m": (3, 5), "k": 129, "n": 20,
     "a": "u8", "b": "u8", "zero": "tensor", "b_input": True},
    {"name": "i8_u8_no_zero", "op": "MatMulInteger", "m": (17,), "k": 300, "n": 96,
     "a": "i8", "b": "u8", "zero": None, "b_input": False},
    {"name": "qlinear_u8", "op": "QLinearMatMul", "m": (9,), "k": 64, "n": 60,
     "a": "u8", "b": "i8", "zero": "tensor", "b_input": False, "y": "u8"},
    {"name": "qlinear_i8_axis", "op": "QLinearMatMul", "m": (2, 6), "k": 45, "n": 33,
     "a": "i8", "b": "i8", "zero": "axis", "b_input": True, "y": "i8"},
]

NUMPY_8BIT = {"u8": np.uint8, "i8": np.int8}

ACTIVATIONS = {"Relu": {}, "Tanh": {}, "Sigmoid": {}, "LeakyRelu": {"alpha": 0.1},
               "Gelu": {"approximate": "none"}, "Clip": {"min": -0.5, "max": 0.75},
               "Swish": {"alpha": 1.0}}


def conv_arrays(case: dict, rng: np.random.Generator) -> dict[str, np.ndarray]:
    rank = len(case["size"])
    groups = case.get("groups", 1)
    x = rng.standard_normal((case["n"], case["c"]) + tuple(case["size"])).astype(np.float32)
    w = rng.standard_normal((case["o"], case["c"] // groups) + (case["k"],) * rank)
    w = (w / np.sqrt(case["c"] // groups * case["k"] ** rank)).astype(np.float32)
    b = rng.standard_normal(case["o"]).astype(np.float32)
    return {"x": x, "w": w, "b": b}


def build_conv(case: dict, arrays: dict[str, np.ndarray], out_shape: tuple[int, ...]):
    rank = len(case["size"])
    last = case.get("layout", "NCHW") == "NHWC"
    x, w = arrays["x"], arrays["w"]
    if last:  # the same logical values, channels last
        x = np.ascontiguousarray(np.moveaxis(x, 1, -1))
        w = np.ascontiguousarray(np.moveaxis(w, 1, -1))
    g = nxe.Graph()
    xt = g.input("x", x.shape, "f32")
    op = getattr(g, f"Conv{rank}d")
    attrs = {"strides": [case["stride"]] * rank, "dilations": [case["dilation"]] * rank,
                 "pads": [case["pad"]] * (2 * rank), "group": case.get("groups", 1)}
    if last:
        attrs["layout"] = {1: "NWC", 2: "NHWC", 3: "NDHWC"}[rank]
    y = op(xt, g.constant(w), g.constant(arrays["b"]), **attrs)
    inputs = [x]
    if case.get("residual"):
        r = arrays["residual"] if not last else np.ascontiguousarray(
            np.moveaxis(arrays["residual"], 1, -1))
        y = g.Add(y, g.input("residual", r.shape, "f32"))
        inputs.append(r)
    if case.get("then"):
        y = getattr(g, case["then"])(y, **ACTIVATIONS[case["then"]])
    g.mark_output(y, name="y")
    return g, inputs, last


def dense_arrays(case: dict, rng: np.random.Generator) -> dict[str, np.ndarray]:
    m, k, n = case["m"], case["k"], case["n"]
    a_shape = (k, m[0]) if case.get("transA") else m + (k,)
    if case["op"] == "FullyConnected":
        b_shape = (n, k)
    else:
        b_shape = (n, k) if case.get("transB") else (k, n)
    b_shape = tuple(case.get("b_input", ())) + b_shape
    arrays = {"a": rng.standard_normal(a_shape).astype(np.float32),
              "b": (rng.standard_normal(b_shape) / np.sqrt(k)).astype(np.float32)}
    c = case.get("c")
    if case.get("bias") or c == "row":
        arrays["c"] = rng.standard_normal((n,)).astype(np.float32)
    elif c == "scalar":
        arrays["c"] = rng.standard_normal(()).astype(np.float32)
    elif c == "full":
        arrays["c"] = rng.standard_normal((m[0], n)).astype(np.float32)
    if case.get("residual"):
        arrays["residual"] = rng.standard_normal(m + (n,)).astype(np.float32)
    return arrays


def build_dense(case: dict, arrays: dict[str, np.ndarray]):
    g = nxe.Graph()
    a = g.input("a", arrays["a"].shape, "f32")
    b = (g.input("b", arrays["b"].shape, "f32") if "b_input" in case
         else g.constant(arrays["b"]))
    c = g.constant(arrays["c"]) if "c" in arrays else None
    if case["op"] == "FullyConnected":
        y = g.FullyConnected(a, b, c) if c is not None else g.FullyConnected(a, b)
    elif case["op"] == "Gemm":
        y = g.Gemm(a, b, c, alpha=case["alpha"], beta=case["beta"], transA=case["transA"],
                   transB=case["transB"])
    else:
        y = g.MatMul(a, b)
    inputs = [arrays["a"]] + ([arrays["b"]] if "b_input" in case else [])
    if "scale" in case:  # a product by a constant scalar, as attention scales its scores
        y = g.Mul(y, g.constant(np.float32(case["scale"])))
    if case.get("residual"):
        y = g.Add(y, g.input("residual", arrays["residual"].shape, "f32"))
        inputs.append(arrays["residual"])
    if case.get("then"):
        y = getattr(g, case["then"])(y, **ACTIVATIONS[case["then"]])
    g.mark_output(y, name="y")
    return g, inputs


def quant_arrays(case: dict, rng: np.random.Generator) -> dict[str, np.ndarray]:
    def ints(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
        info = np.iinfo(NUMPY_8BIT[dtype])
        return rng.integers(info.min, info.max + 1, shape, dtype=np.int64).astype(info.dtype)
    m, k, n = case["m"], case["k"], case["n"]
    b_shape = ((m[0],) if case["b_input"] and len(m) > 1 else ()) + (k, n)
    arrays = {"a": ints(case["a"], m + (k,)), "b": ints(case["b"], b_shape)}
    if case["zero"] == "tensor":
        arrays["a_zero"], arrays["b_zero"] = ints(case["a"], ()), ints(case["b"], ())
    elif case["zero"] == "axis":
        arrays["a_zero"], arrays["b_zero"] = ints(case["a"], (m[-1],)), ints(case["b"], (n,))
    if case["op"] == "QLinearMatMul":
        arrays["a_scale"] = rng.uniform(0.01, 0.05, () if case["zero"] != "axis" else (m[-1],))
        arrays["b_scale"] = rng.uniform(0.01, 0.05, () if case["zero"] != "axis" else (n,))
        arrays["a_scale"] = arrays["a_scale"].astype(np.float32)
        arrays["b_scale"] = arrays["b_scale"].astype(np.float32)
        arrays["y_scale"] = np.float32(rng.uniform(0.5, 2.0))
        arrays["y_zero"] = ints(case["y"], ())
    return arrays


def build_quant(case: dict, arrays: dict[str, np.ndarray]):
    g = nxe.Graph()
    a = g.input("a", arrays["a"].shape, case["a"])
    b = (g.input("b", arrays["b"].shape, case["b"]) if case["b_input"]
         else g.constant(arrays["b"]))
    az = g.constant(arrays["a_zero"]) if "a_zero" in arrays else None
    bz = g.constant(arrays["b_zero"]) if "b_zero" in arrays else None
    if case["op"] == "MatMulInteger":
        y = g.MatMulInteger(a, b, az, bz)
    else:
        y = g.QLinearMatMul(a, g.constant(arrays["a_scale"]), az, b,
                            g.constant(arrays["b_scale"]), bz, g.constant(arrays["y_scale"]),
                            g.constant(arrays["y_zero"]))
    if case.get("add"):
        y = g.Add(y, y)
    g.mark_output(y, name="y")
    return g, [arrays["a"]] + ([arrays["b"]] if case["b_input"] else [])


def run_both(graph: nxe.Graph, inputs: list[np.ndarray], relax: bool,
             op_types: frozenset[str] = frozenset()) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The output compiled in memory, and loaded from a compiled binary; and the kernel each
    step of the given op types ran in memory (from a profiled run)."""
    exe = graph.compile(relax=relax)
    compiled = exe.run(*inputs)
    steps = exe.profile(*inputs, warmup=0).runs[0].steps
    kernels = [step.kernel for step in steps if step.op_type in op_types]
    loaded = nxe.VirtualMachine(graph.compile_to_binary(relax=relax))["main"](*inputs)
    return next(iter(compiled.values())), loaded, kernels


def main(out_path: str) -> None:
    folded: list[str] = []
    nxe.set_log_callback(lambda level, message: folded.append(message)
                         if "runs in the epilogue" in message else None, level="debug")
    rng = np.random.default_rng(7)
    saved: dict[str, np.ndarray] = {}
    kernels: dict[str, list[str]] = {}
    for case in CONV_CASES:
        arrays = conv_arrays(case, rng)
        probe, _, _ = build_conv(dict(case, residual=False, then=None), arrays, ())
        out_shape = probe.compile().run(*(
            [np.ascontiguousarray(np.moveaxis(arrays["x"], 1, -1))]
            if case.get("layout") == "NHWC" else [arrays["x"]])).popitem()[1].shape
        if case.get("residual"):
            shape = out_shape if case.get("layout") != "NHWC" else (
                (out_shape[0], out_shape[-1]) + out_shape[1:-1])
            arrays["residual"] = rng.standard_normal(shape).astype(np.float32)
        for relax in (False, True):
            graph, inputs, last = build_conv(case, arrays, out_shape)
            compiled, loaded, _ = run_both(graph, inputs, relax)
            if last:
                compiled, loaded = (np.moveaxis(v, -1, 1) for v in (compiled, loaded))
            key = f"conv/{case['name']}/{int(relax)}"
            saved[key + "/y"], saved[key + "/loaded"] = compiled, loaded
        for name, value in arrays.items():
            saved[f"conv/{case['name']}/{name}"] = value
    for case in DENSE_CASES:
        arrays = dense_arrays(case, rng)
        for relax in (False, True):
            graph, inputs = build_dense(case, arrays)
            compiled, loaded, ran = run_both(graph, inputs, relax, frozenset({case["op"]}))
            key = f"dense/{case['name']}/{int(relax)}"
            saved[key + "/y"], saved[key + "/loaded"] = compiled, loaded
            kernels[key] = ran
        for name, value in arrays.items():
            saved[f"dense/{case['name']}/{name}"] = value
    for case in QUANT_CASES:
        arrays = quant_arrays(case, rng)
        graph, inputs = build_quant(case, arrays)
        compiled, loaded, ran = run_both(graph, inputs, False, frozenset({case["op"]}))
        key = f"quant/{case['name']}"
        saved[key + "/y"], saved[key + "/loaded"] = compiled, loaded
        kernels[key] = ran
        for name, value in arrays.items():
            saved[f"{key}/{name}"] = value
    saved["folded"] = np.array(json.dumps(folded))
    saved["kernels"] = np.array(json.dumps(kernels))
    saved["cpu"] = np.array(json.dumps(nxe.cpu_info()))
    np.savez(out_path, **saved)


if __name__ == "__main__":
    main(sys.argv[1])
