"""Convolution stacks depth-first (band by band) against layer by layer (NXE_DEPTH_FIRST=off)
for ESPCN x2 960x540 and 640x360 and EDSR-baseline x2 320x180, with the default convolution
choice (Winograd by the cost model), at each ISA level given (a fresh process per level:
NXE_ISA is read once). The two executables run alternately in one process, so that load on
the machine falls on both alike; the results are the same bit for bit, which is checked.
Prints medians; not a test.

    python benchmarks/depth_first.py [--levels avx512 avx2] [--threads 2] [--repeats 10]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402  (benchmarks/run.py: the cases and their builders)

CASES = ["espcn_960x540", "espcn_640x360", "edsr_320x180"]


def measure(threads: int, repeats: int) -> dict:
    """In this process (NXE_ISA already set): per case, the median ms of each way, alternating
    runs after one warm-up each."""
    import numpy as np
    import nxe
    results = {"isa": nxe.cpu_info()["isa"], "cases": {}}
    for case in (c for c in run.make_cases(quick=False) if c.name in CASES):
        graph, feeds = run.nxe_model(case)
        executables = {}
        for mode in ("off", "on"):
            os.environ["NXE_DEPTH_FIRST"] = mode
            executables[mode] = graph.compile(threads=threads)
        outputs = {mode: exe.run(*feeds) for mode, exe in executables.items()}
        same = all(np.array_equal(outputs["off"][k], outputs["on"][k]) for k in outputs["off"])
        times: dict[str, list[float]] = {mode: [] for mode in executables}
        for _ in range(repeats):
            for mode, exe in executables.items():
                begin = time.perf_counter()
                exe.run(*feeds)
                times[mode].append((time.perf_counter() - begin) * 1e3)
        results["cases"][case.name] = {
            **{mode: statistics.median(t) for mode, t in times.items()},
            "same": same,
            "arena_mb": {mode: exe.memory_info()["arena_bytes"] / 2**20
                         for mode, exe in executables.items()}}
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", nargs="+", default=["avx512", "avx2"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.threads, args.repeats)))
        return 0
    print(f"{run._cpu_model()}; {args.threads} thread(s), median of {args.repeats} alternating "
          f"runs, fp32")
    print(f"{'level':8} {'case':15} {'layers ms':>10} {'bands ms':>10} {'ratio':>7} "
          f"{'arena MB':>15}  same bits")
    for level in args.levels:
        out = subprocess.run(
            [sys.executable, __file__, "--child", "--threads", str(args.threads),
             "--repeats", str(args.repeats)],
            env=dict(os.environ, NXE_ISA=level), check=True, capture_output=True, text=True)
        results = json.loads(out.stdout.splitlines()[-1])
        if results["isa"] != level:
            print(f"{level:8} skipped: this machine runs at most {results['isa']}")
            continue
        for name, f in results["cases"].items():
            arena = f"{f['arena_mb']['off']:.0f} -> {f['arena_mb']['on']:.0f}"
            print(f"{level:8} {name:15} {f['off']:10.1f} {f['on']:10.1f} "
                  f"{f['off'] / f['on']:6.2f}x {arena:>15}  {f['same']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
