"""Batch-1 inference costs in isolation: the dense-layer product at few rows and the run loop's
cost per step. A benchmark, not a test: it prints numbers and asserts nothing about them.

    python benchmarks/small_m.py [--rows 1 2 4 8 16 32] [--threads 1 2] [--repeats 200]
                                 [--precisions fp32 relax] [--levels]
                                 [--steps-only | --sweep-only | --encoder]

The sweep times one FullyConnected (constant [N, K] weights and a bias, as in a transformer's
dense layers) for each M = rows of X and (K, N) in (384, 384), (384, 1536), (1536, 384): median
and best microseconds of `repeats` runs, and GFLOP/s (2 M N K over the median). Times are
the step's own, from the executable's profile (median over profiled runs). The step benchmark
times runs of a chain of 256 elementwise Add steps on a [1, 16] tensor (too small to split
between threads) against a chain of one, as the caller sees them: (t(256) - t(1)) / 255 is
what the run loop and a trivial step cost together, the floor under every small step of a
batch-1 model.

--encoder times the MiniLM-shaped encoder of run.py at batch 1 x 16 tokens instead: a run's
median wall time, its steps' median total, and the sum of each step's fastest time; with
NXE_LIBRARY pointing at another build, alternating processes compare two builds.

--levels runs everything once per dispatch level the machine has (NXE_ISA=level, each in a
child process), as benchmarks/run.py --levels does.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

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
    """Median and best microseconds of a run of a chain of `steps` Add steps on [1, 16], as
    the caller sees it (not profiled: profiling reads the clock at every step)."""
    g = nxe.Graph()
    t = g.input("x", (1, 16), "f32")
    one = g.constant(np.ones(16, np.float32), name="one")
    for i in range(steps):
        t = g.Add(t, one, name=f"add{i}")
    g.mark_output(t, name="y")
    executable = g.compile(threads=threads)
    x = np.zeros((1, 16), np.float32)
    for _ in range(max(3, repeats // 10)):
        executable.run(x)
    times = []
    for _ in range(repeats):
        begin = time.perf_counter_ns()
        executable.run(x)
        times.append((time.perf_counter_ns() - begin) / 1e3)
    return statistics.median(times), min(times)


def encoder_ms(threads: int, relax: bool, repeats: int) -> tuple[float, float, float]:
    """The all-MiniLM-L6-v2-shaped encoder of run.py at batch 1 x 16 tokens: median wall
    milliseconds of a run, median of the steps' total inside the library, and the sum over
    steps of each step's fastest time (the run with the cores to itself)."""
    from nxe import models

    config = models.BertConfig()
    built = models.bert_encoder(models.bert_random_weights(config, seed=0), 1, 16, config)
    executable = built.graph.compile(threads=threads, relax=relax)
    rng = np.random.default_rng(1)
    feeds = (rng.standard_normal((1, 16, config.hidden), np.float32),
             np.zeros((1, 1, 1, 16), np.float32))
    profile = executable.profile(*feeds, runs=repeats, warmup=max(3, repeats // 10))
    inside = [(run.steps[-1].start_ns + run.steps[-1].elapsed_ns) / 1e6 for run in profile.runs]
    fastest = sum(min(run.steps[i].elapsed_ns for run in profile.runs)
                  for i in range(len(profile.runs[0].steps))) / 1e6
    return statistics.median(profile.wall_ms), statistics.median(inside), fastest


def report(args: argparse.Namespace) -> None:
    info = nxe.cpu_info()
    kernels = " ".join(f"{p}={k}" for p, k in info["kernels"].items())
    print(f"# {_cpu_model()}: level {info['isa']}, {kernels}", flush=True)
    if args.encoder:
        for relax in (p == "relax" for p in args.precisions):
            for threads in args.threads:
                wall, inside, fastest = encoder_ms(threads, relax, args.repeats)
                print(f"encoder 1x16 {'relax' if relax else 'fp32'}, {threads} thread(s): "
                      f"{wall:.2f} ms a run (median), {inside:.2f} ms inside the library "
                      f"(median), {fastest:.2f} ms summing each step's fastest", flush=True)
        return
    if not args.sweep_only:
        for threads in args.threads:
            one = chain_us(1, threads, args.repeats)
            many = chain_us(256, threads, args.repeats)
            print(f"steps, {threads} thread(s): a run of 1 Add step on [1, 16] takes "
                  f"{one[0]:.1f} us (best {one[1]:.1f}), of 256 steps {many[0]:.1f} us (best "
                  f"{many[1]:.1f}): {(many[0] - one[0]) / 255 * 1e3:.0f} ns a step (best "
                  f"{(many[1] - one[1]) / 255 * 1e3:.0f} ns)", flush=True)
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
    only.add_argument("--encoder", action="store_true",
                      help="time only the MiniLM-shaped encoder at batch 1 x 16 tokens")
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
