"""benchmarks/run.py's bookkeeping, without timing anything: the best-peer ratios, which
levels --levels runs, and the PyTorch bf16 rows skipped on a CPU without native bf16."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import nxe
import pytest

RUN_PY = Path(__file__).resolve().parents[1] / "benchmarks" / "run.py"


@pytest.fixture(scope="module")
def run() -> object:
    spec = importlib.util.spec_from_file_location("bench_run", RUN_PY)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = module
    spec.loader.exec_module(module)
    return module


def entry(case: str, engine: str, precision: str, ms: float | None) -> dict:
    row = {"case": case, "engine": engine, "precision": precision}
    if ms is None:
        row["unavailable"] = "skipped"
    else:
        row["median_ms"] = ms
    return row


def test_best_peer_is_the_fastest_of_the_same_precision(run: object) -> None:
    report = [entry("c", "nxe", "fp32", 4.0), entry("c", "nxe", "bf16", 2.0),
              entry("c", "onnxruntime", "fp32", 6.0), entry("c", "torch", "fp32", 5.0),
              entry("c", "torch eager", "bf16", None), entry("c", "torch.compile", "bf16", 3.0),
              entry("d", "nxe", "fp32", 1.0)]
    summary = {(e["case"], e["precision"]): e for e in run.best_peers(report)}
    assert set(summary) == {("c", "fp32"), ("c", "bf16"), ("d", "fp32")}
    fp32 = summary[("c", "fp32")]
    assert (fp32["best_peer"], fp32["best_peer_ms"]) == ("torch", 5.0)
    assert fp32["ratio"] == pytest.approx(5.0 / 4.0)
    bf16 = summary[("c", "bf16")]
    assert (bf16["best_peer"], bf16["ratio"]) == ("torch.compile", pytest.approx(3.0 / 2.0))
    assert summary[("d", "fp32")]["best_peer"] is None
    assert summary[("d", "fp32")]["ratio"] is None


def test_levels_are_those_the_machine_runs(run: object) -> None:
    levels = run.machine_levels()
    order = ["scalar", "avx2", "avx512", "amx"]
    assert levels[0] == "scalar"
    assert levels == sorted(levels, key=order.index)
    # The top level with kernels of its own is this machine's (amx runs avx512's row).
    top = nxe.cpu_info()["isa"]
    assert levels[-1] == ("avx512" if top == "amx" else top)


@pytest.mark.parametrize(("flags", "skipped"), [
    ({"avx2", "fma"}, True), ({"avx2", "avx512f", "avx512_bf16"}, False),
    ({"avx2", "amx_bf16"}, False), (set(), False)])
def test_torch_bf16_needs_native_bf16(run: object, monkeypatch: pytest.MonkeyPatch,
                                      flags: set[str], skipped: bool) -> None:
    monkeypatch.setattr(run, "cpu_flags", lambda: flags)
    reason = run.native_bf16_reason()
    assert bool(reason) == skipped
    if skipped:
        assert "AVX512-BF16" in reason
