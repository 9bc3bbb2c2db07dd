"""Winograd F(4x4, 3x3) on and off (NXE_WINOGRAD) for ESPCN x2 640x360 and EDSR-baseline x2
320x180, at each ISA level given (a fresh process per level: NXE_ISA is read once), beside
onnxruntime fp32 timed in the same process. Prints medians; not a test.

    python benchmarks/winograd.py [--levels avx512 avx2] [--threads 2] [--repeats 10]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402  (benchmarks/run.py: the cases, their builders and the timing)

CASES = ["espcn_640x360", "edsr_320x180"]


def measure(level: str, threads: int, repeats: int) -> dict:
    """In this process (NXE_ISA already set): median ms per case for off, on, the cost model's
    choice and onnxruntime, and how many convolutions ran Winograd in each."""
    import nxe
    results = {"isa": nxe.cpu_info()["isa"], "cases": {}}
    for case in (c for c in run.make_cases(quick=False) if c.name in CASES):
        graph, feeds = run.nxe_model(case)
        figures: dict[str, object] = {}
        for mode in ("off", "on", "auto"):
            os.environ["NXE_WINOGRAD"] = mode
            exe = graph.compile(threads=threads)
            kernels = [row["kernel"] for row in exe.profile(*feeds).rows()
                       if row["op_type"] == "Conv2d"]
            timing = run.time_runs(lambda e=exe, x=feeds: e.run(*x), repeats, None)
            figures[mode] = timing.median_ms
            figures[f"{mode}_winograd_layers"] = sum(k.startswith("winograd") for k in kernels)
            figures["conv_layers"] = len(kernels)
        ort = run.onnxruntime_rows(case, threads, repeats)[0]
        figures["onnxruntime"] = ort.timing.median_ms if ort.timing else ort.unavailable
        results["cases"][case.name] = figures
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", nargs="+", default=["avx512", "avx2"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.threads, args.repeats)))
        return 0
    print(f"{run._cpu_model()}; {args.threads} thread(s), median of {args.repeats} runs")
    print(f"{'level':8} {'case':15} {'off ms':>9} {'on ms':>9} {'off/on':>7} {'auto ms':>9} "
          f"{'ort ms':>9} {'ort/on':>7}  Winograd layers (auto)")
    for level in args.levels:
        out = subprocess.run(
            [sys.executable, __file__, "--child", level, "--threads", str(args.threads),
             "--repeats", str(args.repeats)],
            env=dict(os.environ, NXE_ISA=level), check=True, capture_output=True, text=True)
        results = json.loads(out.stdout.splitlines()[-1])
        if results["isa"] != level:
            print(f"{level:8} skipped: this machine runs at most {results['isa']}")
            continue
        for name, f in results["cases"].items():
            ort = f["onnxruntime"]
            ort_text = f"{ort:9.1f} {ort / f['on']:7.2f}" if isinstance(ort, float) else ort
            print(f"{level:8} {name:15} {f['off']:9.1f} {f['on']:9.1f} "
                  f"{f['off'] / f['on']:6.2f}x {f['auto']:9.1f} {ort_text}  "
                  f"{f['auto_winograd_layers']} of {f['conv_layers']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
