"""Every kernel level, through the ops that use the packed GEMM: the cases of
fast_kernel_cases.py run in a fresh process per NXE_ISA level this machine can run (scalar is
the reference path; a level above the machine is reported skipped, isa_levels.py), compiled in
memory and loaded from a binary, and are compared with float64 references computed here by
PyTorch.

Tolerances: exact fp32 mode within 1e-5 of the sum of |input| x |weight| over each output's
reduction (f32 rounding of up to a few thousand terms) plus 1e-5; relax mode (bf16 operands,
f32 accumulation) within 8e-3 of that sum plus 1e-4 (two bf16 roundings, 2^-9 each). The
activations after the product are 1-Lipschitz, so the bound carries through them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fast_kernel_cases as cases
from isa_levels import level_params

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module", params=level_params())
def level_results(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param) / "results.npz"
    env = dict(os.environ, NXE_ISA=request.param)
    subprocess.run([sys.executable, str(HERE / "fast_kernel_cases.py"), str(out)], env=env,
                   check=True)
    with np.load(out) as data:
        results = {key: data[key] for key in data.files}
    assert json.loads(str(results["cpu"]))["isa"] == request.param, "ran another level"
    return request.param, results


def activation(name: str | None, y: torch.Tensor) -> torch.Tensor:
    if name is None:
        return y
    if name == "LeakyRelu":
        return torch.nn.functional.leaky_relu(y, cases.ACTIVATIONS[name]["alpha"])
    if name == "Clip":
        return torch.clamp(y, cases.ACTIVATIONS[name]["min"], cases.ACTIVATIONS[name]["max"])
    if name == "Swish":
        return torch.nn.functional.silu(y)
    return {"Relu": torch.relu, "Tanh": torch.tanh, "Sigmoid": torch.sigmoid,
            "Gelu": torch.nn.functional.gelu}[name](y)


def conv_reference(case: dict, data: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    key = f"conv/{case['name']}"
    x = torch.from_numpy(data[f"{key}/x"]).double()
    w = torch.from_numpy(data[f"{key}/w"]).double()
    b = torch.from_numpy(data[f"{key}/b"]).double()
    conv = {1: torch.nn.functional.conv1d, 2: torch.nn.functional.conv2d,
            3: torch.nn.functional.conv3d}[len(case["size"])]
    args = {"stride": case["stride"], "padding": case["pad"], "dilation": case["dilation"],
                "groups": case.get("groups", 1)}
    y = conv(x, w, b, **args)
    bias_shape = (1, -1) + (1,) * (x.dim() - 2)
    magnitude = conv(x.abs(), w.abs(), None, **args) + b.abs().reshape(bias_shape)
    if case.get("residual"):
        residual = torch.from_numpy(data[f"{key}/residual"]).double()
        y = y + residual
        magnitude = magnitude + residual.abs()
    return activation(case.get("then"), y).numpy(), magnitude.numpy()


def dense_reference(case: dict, data: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    key = f"dense/{case['name']}"
    a = torch.from_numpy(data[f"{key}/a"]).double()
    b = torch.from_numpy(data[f"{key}/b"]).double()
    c = torch.from_numpy(data[f"{key}/c"]).double() if f"{key}/c" in data else None
    if case["op"] == "FullyConnected":
        b = b.T
    if case.get("transA"):
        a = a.T
    if case.get("transB"):
        b = b.T
    alpha, beta = case.get("alpha", 1.0), case.get("beta", 1.0)
    y = alpha * (a @ b)
    magnitude = abs(alpha) * (a.abs() @ b.abs())
    if c is not None:
        y = y + beta * c
        magnitude = magnitude + abs(beta) * c.abs()
    if "scale" in case:
        y = case["scale"] * y
        magnitude = abs(case["scale"]) * magnitude
    if case.get("residual"):
        residual = torch.from_numpy(data[f"{key}/residual"]).double()
        y = y + residual
        magnitude = magnitude + residual.abs()
    return activation(case.get("then"), y).numpy(), magnitude.numpy()


def check(level: str, name: str, got: np.ndarray, want: np.ndarray, magnitude: np.ndarray,
          relax: bool) -> None:
    assert got.shape == want.shape, name
    scale, floor = (8e-3, 1e-4) if relax else (1e-5, 1e-5)
    excess = np.abs(got.astype(np.float64) - want) - (scale * magnitude + floor)
    worst = np.unravel_index(np.argmax(excess), excess.shape)
    assert excess.max() <= 0, (
        f"{name} at NXE_ISA={level}, relax={relax}: {got[worst]} vs {want[worst]} at {worst}")


@pytest.mark.parametrize("case", cases.CONV_CASES, ids=lambda c: c["name"])
def test_convolution_matches_float64_reference_at_every_level(level_results, case):
    level, data = level_results
    want, magnitude = conv_reference(case, data)
    for relax in (False, True):
        key = f"conv/{case['name']}/{int(relax)}"
        check(level, key, data[key + "/y"], want, magnitude, relax)
        # The loader prepares the same steps as the compiler: the same bits.
        np.testing.assert_array_equal(data[key + "/loaded"], data[key + "/y"])


@pytest.mark.parametrize("case", cases.DENSE_CASES, ids=lambda c: c["name"])
def test_dense_layers_match_float64_reference_at_every_level(level_results, case):
    level, data = level_results
    want, magnitude = dense_reference(case, data)
    for relax in (False, True):
        key = f"dense/{case['name']}/{int(relax)}"
        check(level, key, data[key + "/y"], want, magnitude, relax)
        np.testing.assert_array_equal(data[key + "/loaded"], data[key + "/y"])


def quant_reference(case: dict, data: dict[str, np.ndarray]) -> np.ndarray:
    """The exact integer product (wrapped to int32), requantized as the op's schema states:
    multiplier a_scale * b_scale / y_scale formed in f32, applied in double, half to even."""
    key = f"quant/{case['name']}"
    a = data[f"{key}/a"].astype(np.int64)
    b = data[f"{key}/b"].astype(np.int64)
    if f"{key}/a_zero" in data:
        az, bz = data[f"{key}/a_zero"].astype(np.int64), data[f"{key}/b_zero"].astype(np.int64)
        a = a - (az[:, None] if az.ndim else az)
        b = b - bz
    acc = (a @ b).astype(np.int32)
    if case["op"] == "MatMulInteger":
        return acc + acc if case.get("add") else acc
    a_scale, b_scale = data[f"{key}/a_scale"], data[f"{key}/b_scale"]
    multiplier = ((a_scale[:, None] if a_scale.ndim else a_scale) * b_scale
                  / data[f"{key}/y_scale"]).astype(np.float32)
    info = np.iinfo(cases.NUMPY_8BIT[case["y"]])
    y = np.rint(acc.astype(np.float64) * multiplier.astype(np.float64))
    y = y + float(data[f"{key}/y_zero"])
    return np.clip(y, info.min, info.max).astype(info.dtype)


@pytest.mark.parametrize("case", cases.QUANT_CASES, ids=lambda c: c["name"])
def test_8bit_products_equal_the_exact_reference_at_every_level(level_results, case):
    level, data = level_results
    key = f"quant/{case['name']}"
    want = quant_reference(case, data)
    np.testing.assert_array_equal(data[key + "/y"], want, err_msg=f"NXE_ISA={level}")
    np.testing.assert_array_equal(data[key + "/loaded"], want, err_msg=f"NXE_ISA={level}")


def test_8bit_products_run_the_levels_int8_kernel(level_results):
    """Every 8-bit product runs the int8 microkernel the level reports: the reference kernels at
    the scalar level only (AVX2 has a kernel of its own)."""
    level, data = level_results
    ran, chosen = json.loads(str(data["kernels"])), json.loads(str(data["cpu"]))["kernels"]
    expected = {"scalar": "reference", "avx2": "u8s8-gemm-4x8-avx2"}.get(level, chosen["int8"])
    assert chosen["int8"] == expected
    for case in cases.QUANT_CASES:
        assert ran[f"quant/{case['name']}"] == [expected], case["name"]


def test_relax_runs_what_the_level_reports(level_results):
    """Relax mode's dense layers run the kernel nxe info names for bf16: on a level without a
    bf16 kernel (avx2, or a CPU without AVX512-BF16) that is the f32 kernel exact mode runs,
    so relax mode is never slower there."""
    level, data = level_results
    ran, chosen = json.loads(str(data["kernels"])), json.loads(str(data["cpu"]))["kernels"]
    if level == "avx2":
        assert chosen["bf16"] == chosen["f32"] == "f32-gemm-6x16-avx2"
    for case in cases.DENSE_CASES:
        exact, relaxed = (ran[f"dense/{case['name']}/{relax}"] for relax in (0, 1))
        assert exact == [chosen["f32"]], case["name"]
        assert relaxed == [chosen["bf16"]], case["name"]


def test_epilogues_are_folded_where_packed_kernels_run(level_results):
    """Where a level has packed kernels, every activation and residual Add that follows a
    convolution or dense layer in the cases runs in that step's epilogue; the scalar level
    folds nothing (its ops run their reference kernels)."""
    level, data = level_results
    folded = json.loads(str(data["folded"]))
    # Each case folds in four executables: fp32 and relax, each compiled and loaded.
    expected = 4 * sum(bool(c.get("then")) + bool(c.get("residual")) + ("scale" in c)
                       for c in cases.CONV_CASES + cases.DENSE_CASES)
    if level == "scalar":
        assert folded == []
    else:
        assert len(folded) == expected, folded
