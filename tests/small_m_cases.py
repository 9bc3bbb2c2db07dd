"""Run by test_small_m.py in a child process under NXE_ISA: few-row products (one sentence,
a handful of tokens) on 1, 2 and 3 threads, where the packed GEMM splits B's panels between
threads instead of rows, with a fused GELU epilogue (an activation run in place on each tile).
Writes every result and the inputs to the .npz named on the command line."""

from __future__ import annotations

import json
import sys

import numpy as np
import nxe

# Rows below and around each level's microkernel height (6 and 8), widths around its panel
# width (16 and 48) with ragged last panels, reductions short, odd and longer than a block.
ROWS = (1, 2, 3, 5, 7, 8, 9, 13, 16)
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
            arrays[f"{k}x{n}/{m}/x"] = x
            for threads in THREADS:
                g = nxe.Graph()
                t = g.input("x", x.shape, "f32")
                fc = g.FullyConnected(t, g.constant(w), g.constant(b))
                g.mark_output(g.Gelu(fc, approximate="none"), name="fc")
                g.mark_output(g.MatMul(t, g.constant(np.ascontiguousarray(w.T))), name="mm")
                with g.compile(threads=threads) as exe:
                    y = exe.run(x)
                arrays[f"{k}x{n}/{m}/{threads}/fc"] = y["fc"]
                arrays[f"{k}x{n}/{m}/{threads}/mm"] = y["mm"]
    np.savez(out, **arrays)


if __name__ == "__main__":
    main(sys.argv[1])
