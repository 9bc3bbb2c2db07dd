"""Batch-1 inference costs in isolation: the dense-layer product at few rows and the run loop's
cost per step. A benchmark, not a test: it prints numbers and asserts nothing about them.

    python benchmarks/small_m.py [--rows 1 2 4 8 16 32] [--threads 1 2] [--repeats 200]
                                 [--precisions fp32 relax] [--levels]
                                 [--steps-only | --sweep-only]

The sweep times one FullyConnected (constant [N, K] weights and a bias, as in a transformer's
dense layers) for each M = rows of X and (K, N) in (384, 384), (384, 1536), (1536, 384): median
and best microseconds of `repeats` runs, and GFLOP/s (2 M N K over the median). Times are
the step's own, from the executable's profile (median over profiled runs). The step benchmark
times a chain of 256 elementwise Add steps on a [1, 16] tensor (too small to split between
threads): inside the library, and as the caller sees it against a chain of one step; either
way per step is what the run loop and a trivial step cost together, the floor under every
small step of a batch-1 model.

--levels runs everything once per dispatch level the machine has (NXE_ISA=level, each in a
child process), as benchmarks/run.py --levels does.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

import numpy as np
import nxe
from run import _cpu_model, machine_levels  # benchmarks/run.py, beside this file

SHAPES = ((384, 384), (384, 1536), (1536, 384))


def step_times_us(executable: nxe.Executable, feed: np.ndarray, repeats: int
                  ) -> tuple[list[float], list[float]]:
    """Per profiled run: the steps' total time inside the library and the wall time the
    caller saw (the Python call and staging included), microseconds."""
    profile = executable.profile(feed, runs=repeats, warmup=max(3, repeats // 10))
    inside = [(run.steps[-1].start_ns + run.steps[-1].elapsed_ns) / 1e3 for run in profile.runs]
    return inside, [run.wall_ns / 1e3 for run in profile.runs]


def dense_us(m: int, k: int, n: int, threads: int, relax: bool, repeats: int
             ) -> tuple[float, float]:
    """Median and best microseconds of the FullyConnected step [m, k] x [n, k]^T + bias."""
    rng = np.random.default_rng(0)
    g = nxe.Graph()
    x = g.input("x", (m, k), "f32")
    w = g.constant(rng.standard_normal((n, k), np.float32) / np.float32(k ** 0.5), name="w")
    b = g.constant(rng.standard_normal(n).astype(np.float32), name="b")
    g.mark_output(g.FullyConnected(x, w, b), name="y")
    executable = g.compile(threads=threads, relax=relax)
    inside, _ = step_times_us(executable, rng.standard_normal((m, k), np.float32), repeats)
    return statistics.median(inside), min(inside)


def chain_us(steps: int, threads: int, repeats: int) -> tuple[float, float]:
    """Median microseconds of a chain of `steps` Add steps on [1, 16]: inside the library, and
    as the caller sees it."""
    g = nxe.Graph()
    t = g.input("x", (1, 16), "f32")
    one = g.constant(np.ones(16, np.float32), name="one")
    for i in range(steps):
        t = g.Add(t, one, name=f"add{i}")
    g.mark_output(t, name="y")
    executable = g.compile(threads=threads)
    inside, wall = step_times_us(executable, np.zeros((1, 16), np.float32), repeats)
    return statistics.median(inside), statistics.median(wall)


def report(args: argparse.Namespace) -> None:
    info = nxe.cpu_info()
    kernels = " ".join(f"{p}={k}" for p, k in info["kernels"].items())
    print(f"# {_cpu_model()}: level {info['isa']}, {kernels}", flush=True)
    if not args.sweep_only:
        for threads in args.threads:
            one_inside, one_wall = chain_us(1, threads, args.repeats)
            inside, wall = chain_us(256, threads, args.repeats)
            print(f"steps, {threads} thread(s): 256 Add steps on [1, 16] take {inside:.1f} us "
                  f"inside the library, {inside / 256 * 1e3:.0f} ns a step (profiling's clock "
                  f"read included); a run of 1 step takes {one_wall:.1f} us as Python sees it, "
                  f"of 256 steps {wall:.1f} us: {(wall - one_wall) / 255 * 1e3:.0f} ns a step",
                  flush=True)
    if args.steps_only:
        return
    print("| precision | threads | K | N | M | median us | best us | GFLOP/s (median) |")
    print("|---|---|---|---|---|---|---|---|")
    for relax in (p == "relax" for p in args.precisions):
        for threads in args.threads:
            for k, n in SHAPES:
                for m in args.rows:
                    median, best = dense_us(m, k, n, threads, relax, args.repeats)
                    print(f"| {'relax' if relax else 'fp32'} | {threads} | {k} | {n} | {m} "
                          f"| {median:.1f} | {best:.1f} | {2.0 * m * n * k / median / 1e3:.1f} |",
                          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 2, 4, 8, 12, 16, 24, 32])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--precisions", nargs="+", choices=("fp32", "relax"),
                        default=["fp32", "relax"])
    parser.add_argument("--levels", action="store_true",
                        help="run once per dispatch level the machine has")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--steps-only", action="store_true")
    only.add_argument("--sweep-only", action="store_true")
    args = parser.parse_args()
    if not args.levels:
        report(args)
        return
    forwarded = [a for a in sys.argv[1:] if a != "--levels"]
    for level in machine_levels():
        subprocess.run([sys.executable, __file__, *forwarded],
                       env={**os.environ, "NXE_ISA": level}, check=True)


if __name__ == "__main__":
    main()
