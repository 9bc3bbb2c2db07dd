"""Run by test_small_m.py in a child process under NXE_ISA: few-row products (one sentence,
a handful of tokens) on 1, 2 and 3 threads, where the packed GEMM splits B's panels between
threads instead of rows and streams each panel over the whole reduction (the few-row path of
kernels/gemm.h), with fused epilogues: a GELU (an activation run in place on each tile) and a
residual addend. Writes every result and the inputs to the .npz named on the command line."""

from __future__ import annotations

import json
import sys

import numpy as np
import nxe

# Rows below and around each level's microkernel height (6 and 8) and the few-row limit (4 row
# tiles: 24 and 32 rows), widths around its panel width (16 and 48) with ragged last panels,
# reductions short, odd and longer than a block.
ROWS = (1, 2, 3, 5, 7, 8, 9, 13, 16, 24, 25, 32, 33)
SHAPES = ((5, 17), (64, 48), (300, 100), (384, 385))  # (K, N)
THREADS = (1, 2, 3)


def main(out: str) -> None:
    rng = np.random.default_rng(0)
    arrays: dict[str, np.ndarray] = {"cpu": np.array(json.dumps(nxe.cpu_info()))}
    for k, n in SHAPES:
        w = rng.standard_normal((n, k), np.float32)
        b = rng.standard_normal(n, np.float32)
        arrays[f"{k}x{n}/w"], arrays[f"{k}x{n}/b"] = w, b
        for m in ROWS:
            x = rng.standard_normal((1, m, k), np.float32)
            r = rng.standard_normal((1, m, n), np.float32)
            arrays[f"{k}x{n}/{m}/x"], arrays[f"{k}x{n}/{m}/r"] = x, r
            for threads in THREADS:
                g = nxe.Graph()
                t = g.input("x", x.shape, "f32")
                residual = g.input("r", r.shape, "f32")
                fc = g.FullyConnected(t, g.constant(w), g.constant(b))
                g.mark_output(g.Gelu(fc, approximate="none"), name="fc")
                g.mark_output(g.MatMul(t, g.constant(np.ascontiguousarray(w.T))), name="mm")
                summed = g.Add(g.FullyConnected(t, g.constant(w), g.constant(b)), residual)
                g.mark_output(summed, name="res")
                with g.compile(threads=threads) as exe:
                    y = exe.run(x, r)
                for name in ("fc", "mm", "res"):
                    arrays[f"{k}x{n}/{m}/{threads}/{name}"] = y[name]
    np.savez(out, **arrays)


if __name__ == "__main__":
    main(sys.argv[1])
