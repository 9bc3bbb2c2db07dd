"""The fused attention driver (kernels/portable/attention.c) at every ISA level this machine
runs, against the float64 softmax reference: the cases of attention_cases.py run in a child
process per level, and must match within RTOL/ATOL, give the same bits on one thread and on
three, and run the level's fused kernel (the scalar level runs the reference rows). Then a
long sequence, whose score matrix alone would be 64 MiB, compiled under a memory limit a
quarter of that."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import attention_cases as cases
import numpy as np
import nxe
import pytest
from isa_levels import level_params
from test_ops_attention import reference

HERE = Path(__file__).resolve().parent
# f32 products of up to 64 terms and f32 running sums against float64; the weights' exp is
# within a few ulp (kernels/portable/vmath.h).
RTOL, ATOL = 2e-5, 2e-6


@pytest.fixture(scope="module", params=level_params(["scalar", "avx2", "avx512"]))
def level_results(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param) / "results.npz"
    env = dict(os.environ, NXE_ISA=request.param)
    subprocess.run([sys.executable, str(HERE / "attention_cases.py"), str(out)], env=env,
                   check=True)
    with np.load(out) as data:
        results = {key: data[key] for key in data.files}
    assert json.loads(str(results["cpu"]))["isa"] == request.param, "ran another level"
    return request.param, results


def case_reference(case: dict, data: dict[str, np.ndarray]) -> np.ndarray:
    name, attrs = case["name"], dict(case.get("attrs", {}))
    k = data[f"{name}/k"]
    if attrs.pop("transposed_keys", 0):
        k = np.swapaxes(k, -1, -2)
    return reference(data[f"{name}/q"], k, data[f"{name}/v"], data.get(f"{name}/mask"),
                     **attrs)


@pytest.mark.parametrize("case", cases.CASES, ids=lambda case: case["name"])
def test_attention_matches_float64_at_each_level(level_results, case):
    level, data = level_results
    name = case["name"]
    got, want = data[f"{name}/y"], case_reference(case, data)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=f"NXE_ISA={level}")
    np.testing.assert_array_equal(data[f"{name}/y_threads"], got)


def test_attention_runs_the_fused_driver_above_scalar(level_results):
    level, data = level_results
    kernels = json.loads(str(data["kernels"]))
    for name, kernel in kernels.items():
        if level == "scalar":
            assert not kernel.startswith("f32-attention"), name
        else:
            assert kernel.startswith("f32-attention-f32-gemm-"), (name, kernel)
            assert kernel.endswith(level), (name, kernel)


def attention_graph(length: int, head: int, limit: int, fused: bool) -> nxe.Graph:
    g = nxe.Graph(limits=nxe.Limits(max_arena_bytes=limit))
    q, k, v = (g.input(name, (1, 1, length, head), "f32") for name in "qkv")
    if fused:
        y = g.ScaledDotProductAttention(q, k, v)
    else:
        scores = g.Mul(g.MatMul(q, g.Transpose(k, perm=[0, 1, 3, 2])),
                       g.constant(np.float32(1 / np.sqrt(head))))
        y = g.MatMul(g.Softmax(scores, axis=-1), v)
    g.mark_output(y, name="y")
    return g


def test_long_sequence_runs_without_the_score_matrix(rng):
    length, head = 4096, 64
    scores_bytes = length * length * 4
    limit = scores_bytes // 4  # inputs, output, workspace and arena together
    with pytest.raises(nxe.OutOfMemoryError):
        attention_graph(length, head, limit, fused=False).compile(threads=2)
    exe = attention_graph(length, head, limit, fused=True).compile(threads=2)
    q, k, v = (rng.standard_normal((1, 1, length, head)).astype(np.float32) for _ in "qkv")
    got = exe.run(q, k, v)["y"]
    rows = np.r_[0:3, 1000:1003, length - 3:length]  # the reference on a few rows is enough
    want = reference(q[:, :, rows], k, v)
    np.testing.assert_allclose(got[:, :, rows], want, rtol=RTOL, atol=ATOL)
    assert exe.memory_info()["arena_bytes"] < scores_bytes // 16
