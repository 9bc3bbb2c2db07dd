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


def test_nxe_is_measured_against_its_level_s_peak_and_peers_against_the_machine_s(
        run: object) -> None:
    peak = {"fp32_fma": {"gops": 200.0}, "fp32_fma_avx2": {"gops": 100.0},
            "int8_avx2": {"gops": 150.0}, "avx512_bf16": {"gops": None},
            "avx512_vnni_int8": {"gops": 800.0}, "amx_bf16": {"gops": None},
            "amx_int8": {"gops": None}}
    assert run.peak_for("fp32", peak, "avx2") == (100.0, "fp32_fma_avx2")
    assert run.peak_for("bf16", peak, "avx2") == (100.0, "fp32_fma_avx2")  # f32 kernels
    assert run.peak_for("int8", peak, "avx2") == (150.0, "int8_avx2")
    assert run.peak_for("fp32", peak, "avx512") == (200.0, "fp32_fma")
    # Without AVX512-BF16 the avx512 level's relax mode runs the f32 kernels.
    assert run.peak_for("bf16", peak, "avx512") == (200.0, "fp32_fma")
    assert run.peak_for("int8", peak, "avx512") == (800.0, "avx512_vnni_int8")
    assert run.peak_for("fp32", peak, "scalar") == (None, "")
    assert run.peak_for("int8", peak) == (800.0, "avx512_vnni_int8")
    case = run.Case("c", "a case", 1e9, "gemm")
    rows = [run.Row("c", "nxe", "fp32", run.Timing(10.0, 3)),
            run.Row("c", "onnxruntime", "fp32", run.Timing(20.0, 3))]
    report = {e["engine"]: e for e in run.build_report([case], rows, peak, "avx2")}
    assert report["nxe"]["peak"] == "fp32_fma_avx2"
    assert report["nxe"]["percent_of_peak"] == pytest.approx(100.0)  # 100 GOP/s of 100
    assert report["onnxruntime"]["peak"] == "fp32_fma"
    assert report["onnxruntime"]["nxe_fp32_speedup"] == pytest.approx(2.0)


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
