"""Few-row products at every kernel level (a fresh process per NXE_ISA level, isa_levels.py):
FullyConnected with a fused exact GELU or a fused residual Add and MatMul on a constant B, 1 to
33 rows (across the few-row path's limit), against float64 references, and bit for bit equal on
1, 2 and 3 threads (with few rows the threads split B's panels, each over every row tile).
Tolerance: 1e-5 of the sum of |x| |w| over each output's reduction (plus |bias| and |residual|)
plus 1e-5, for f32 rounding of up to 384 terms; GELU is 1.13-Lipschitz and its vectorized form
is within 1e-6 relative of the exact one, so 2e-5 after it."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import small_m_cases as cases
from isa_levels import level_params

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module", params=level_params())
def results(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param) / "small_m.npz"
    subprocess.run([sys.executable, str(HERE / "small_m_cases.py"), str(out)],
                   env=dict(os.environ, NXE_ISA=request.param), check=True)
    with np.load(out) as data:
        arrays = {key: data[key] for key in data.files}
    assert json.loads(str(arrays["cpu"]))["isa"] == request.param, "ran another level"
    return arrays


def gelu(y: np.ndarray) -> np.ndarray:
    return 0.5 * y * (1.0 + np.vectorize(math.erf)(y / math.sqrt(2.0)))


@pytest.mark.parametrize(("k", "n"), cases.SHAPES)
def test_few_rows_match_float64_on_any_thread_count(results, k: int, n: int) -> None:
    w = results[f"{k}x{n}/w"].astype(np.float64)
    b = results[f"{k}x{n}/b"].astype(np.float64)
    for m in cases.ROWS:
        x = results[f"{k}x{n}/{m}/x"].astype(np.float64)
        product = x @ w.T
        magnitude = np.abs(x) @ np.abs(w).T
        bound = 1e-5 * magnitude + 1e-5
        for threads in cases.THREADS:
            fc = results[f"{k}x{n}/{m}/{threads}/fc"]
            mm = results[f"{k}x{n}/{m}/{threads}/mm"]
            res = results[f"{k}x{n}/{m}/{threads}/res"]
            assert fc.shape == mm.shape == res.shape == (1, m, n)
            mm_error = np.abs(mm - product)
            assert (mm_error <= bound).all(), \
                f"MatMul m={m} threads={threads}: worst excess {(mm_error - bound).max():.3g}"
            fc_bound = 2 * (1e-5 * (magnitude + np.abs(b)) + 1e-5)
            fc_error = np.abs(fc - gelu(product + b))
            assert (fc_error <= fc_bound).all(), \
                f"FC+GELU m={m} threads={threads}: worst excess {(fc_error - fc_bound).max():.3g}"
            r = results[f"{k}x{n}/{m}/r"].astype(np.float64)
            res_bound = 1e-5 * (magnitude + np.abs(b) + np.abs(r)) + 1e-5
            res_error = np.abs(res - (product + b + r))
            assert (res_error <= res_bound).all(), \
                f"FC+residual m={m} threads={threads}: worst excess " \
                f"{(res_error - res_bound).max():.3g}"
            if threads > 1:
                for name, got in (("fc", fc), ("mm", mm), ("res", res)):
                    assert np.array_equal(got, results[f"{k}x{n}/{m}/1/{name}"]), \
                        f"{name} m={m}: {threads} threads differ from 1"
