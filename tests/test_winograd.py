"""Winograd F(4x4, 3x3) convolutions (kernels/portable/winograd.c) against float64 references
at every level with packed kernels (the scalar level runs the reference convolution; the
kernel tests sweep the scalar-level copy of the driver), and how the path is chosen.

The error bound (kernels/gemm.h, docs/architecture.md): to first order in u = 2^-24, each
output of the product is within (C + 20) u times the Winograd expression evaluated on absolute
values, |A^T| (sum over c of (|G| |g| |G^T|) * (|B^T| |d| |B|)) |A|, computed here in float64
from the same tiles. The bias and residual adds and the 1-Lipschitz activations after it add
a rounding of the result each, and the vectorized activations their stated 4e-7."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import nxe
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import winograd_cases as cases
from isa_levels import level_params

HERE = Path(__file__).resolve().parent
U = 2.0 ** -24

# Lavin and Gray's F(4x4, 3x3) matrices, points 0, +-1, +-2 and infinity.
BT = np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
               [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], dtype=float)
G = np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6],
              [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]])
AT = np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0],
               [0, 1, -1, 8, -8, 1]], dtype=float)


@pytest.fixture(scope="module", params=level_params(["avx2", "avx512"]))
def level_results(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param) / "results.npz"
    env = dict(os.environ, NXE_ISA=request.param)
    subprocess.run([sys.executable, str(HERE / "winograd_cases.py"), str(out)], env=env,
                   check=True)
    with np.load(out) as data:
        results = {key: data[key] for key in data.files}
    assert json.loads(str(results["cpu"]))["isa"] == request.param, "ran another level"
    return request.param, results


def winograd_magnitude(x: np.ndarray, w: np.ndarray, pad: int, out_h: int,
                       out_w: int) -> np.ndarray:
    """The Winograd expression on absolute values, per output: [N, O, out_h, out_w]."""
    rows, cols = -(-out_h // 4), -(-out_w // 4)
    padded = np.zeros(x.shape[:2] + (4 * rows + 2, 4 * cols + 2))
    h, w_in = x.shape[2:]
    padded[:, :, pad:pad + h, pad:pad + w_in] = np.abs(x)[:, :, :4 * rows + 2 - pad,
                                                           :4 * cols + 2 - pad]
    tiles = np.lib.stride_tricks.sliding_window_view(padded, (6, 6), axis=(2, 3))[:, :, ::4, ::4]
    v = np.einsum("rp,nctupq,sq->ncturs", abs(BT), tiles, abs(BT))
    u = np.einsum("rk,ockl,sl->ocrs", abs(G), np.abs(w.astype(float)), abs(G))
    m = np.einsum("ocrs,ncturs->noturs", u, v)
    y = np.einsum("ir,noturs,js->notuij", abs(AT), m, abs(AT))
    y = y.transpose(0, 1, 2, 4, 3, 5).reshape(y.shape[0], y.shape[1], 4 * rows, 4 * cols)
    return y[:, :, :out_h, :out_w]


def reference(case: dict, data: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The float64 result, and the tolerance of each output from the bound above."""
    name = case["name"]
    x = torch.from_numpy(data[f"{name}/x"]).double()
    w = torch.from_numpy(data[f"{name}/w"]).double()
    b = torch.from_numpy(data[f"{name}/b"]).double() if f"{name}/b" in data else None
    conv = torch.nn.functional.conv2d(x, w, b, padding=case["pad"])
    product = conv - (b.view(1, -1, 1, 1) if b is not None else 0)
    pre = conv.clone()
    if f"{name}/residual" in data:
        pre += torch.from_numpy(data[f"{name}/residual"]).double()
    then = case.get("then")
    want = {None: lambda v: v, "Relu": torch.relu, "Tanh": torch.tanh,
            "Sigmoid": torch.sigmoid}[then](pre).numpy()
    magnitude = winograd_magnitude(data[f"{name}/x"], data[f"{name}/w"], case["pad"],
                                   *conv.shape[2:])
    rounding = np.abs(product.numpy()) + np.abs(conv.numpy()) + np.abs(pre.numpy())
    tolerance = (case["c"] + 20) * U * magnitude + 2 * U * rounding + (4e-7 if then else 0.0)
    return want, tolerance


@pytest.mark.parametrize("case", cases.CASES, ids=lambda case: case["name"])
def test_winograd_matches_float64_within_its_error_bound(level_results, case):
    level, data = level_results
    want, tolerance = reference(case, data)
    for key in ("y", "loaded"):
        got = data[f"{case['name']}/{key}"].astype(np.float64)
        error = np.abs(got - want)
        worst = np.unravel_index(np.argmax(error / tolerance), error.shape)
        assert np.all(error <= tolerance), (
            f"{case['name']} ({key}) at NXE_ISA={level}: {got[worst]} vs {want[worst]} at "
            f"{worst}, error {error[worst]:.3g} > bound {tolerance[worst]:.3g}")


def test_winograd_runs_when_asked_and_the_cost_model_keeps_small_layers_direct(level_results):
    level, data = level_results
    kernels = json.loads(str(data["kernels"]))
    winograd = f"winograd-f4x4-3x3-{level}+f32-gemm-"
    for name, chosen in kernels.items():
        for mode in ("on", "option_on", "option_on_env_off", "option_on_loaded",
                     "option_on_env_off_loaded"):
            assert chosen[mode].startswith(winograd), (name, mode, chosen)
        for mode in ("off", "option_off", "option_off_env_on", "option_off_loaded",
                     "option_off_env_on_loaded"):
            assert not chosen[mode].startswith("winograd"), (name, mode, chosen)
        # Unset, the cost model chooses.
        assert chosen["unset"] == chosen["auto"], (name, chosen)
    # Many channels on a wide image pay for the transforms; a few channels do not.
    assert kernels["edsr_like"]["auto"].startswith(winograd), kernels["edsr_like"]
    for name in ("tails_bias_tanh", "single_channel", "no_bias"):
        assert not kernels[name]["auto"].startswith("winograd"), (name, kernels[name])
    # Relax mode chooses Winograd (in f32) wherever exact mode does.
    for name, chosen in kernels.items():
        assert chosen["relax_unset"].startswith(winograd) == chosen["unset"].startswith(
            winograd), (name, chosen)


def test_unknown_winograd_mode_is_refused():
    g = nxe.Graph()
    g.mark_output(g.Relu(g.input("x", (2, 3), "f32")), name="y")
    with pytest.raises(ValueError, match="winograd='fast'"):
        g.compile(winograd="fast")


def test_bound_constant_of_the_documentation():
    """The bound per tap in kernels/gemm.h: the Winograd expression on absolute values is at
    most (88/3)^2 = 860.4 times |w| times the largest |x| of the tile, over all taps."""
    per_tap = np.einsum("ie,ek,ep->ikp", abs(AT), abs(G), abs(BT)).sum(axis=2)
    assert per_tap.max() == pytest.approx(88 / 3)
    assert per_tap.max() ** 2 <= 861
