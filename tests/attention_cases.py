"""Cases for tests/test_attention_levels.py, run in a fresh process per ISA level (NXE_ISA is
read once per process): ScaledDotProductAttention over shapes that leave tails in every block
(query rows and keys of the fused driver, the microkernels' rows and columns), with every mask
kind, causal frontiers, soft-capping, grouped key/value heads and keys given transposed; each
run on one thread and on three, with the kernel the step ran recorded.

    NXE_ISA=avx2 python tests/attention_cases.py OUT.npz
"""

from __future__ import annotations

import json
import sys

import numpy as np
import nxe

# q, k and v shapes (k as the op takes it), the mask's shape and kind, and the attributes.
CASES = [
    {"name": "one_query_row", "q": (1, 2, 1, 5), "k": (1, 2, 7, 5), "v": (1, 2, 7, 3)},
    {"name": "rank2_exact_blocks", "q": (48, 8), "k": (96, 8), "v": (96, 8)},
    {"name": "rank3_tails", "q": (3, 49, 17), "k": (3, 97, 17), "v": (3, 97, 9)},
    {"name": "additive_mask_tails", "q": (2, 3, 50, 16), "k": (2, 3, 101, 16),
     "v": (2, 3, 101, 20), "mask": (2, 1, 50, 101), "mask_kind": "f32"},
    {"name": "key_mask_like_bert", "q": (2, 12, 16, 32), "k": (2, 12, 16, 32),
     "v": (2, 12, 16, 32), "mask": (2, 1, 1, 16), "mask_kind": "padding"},
    {"name": "bool_mask_empty_rows", "q": (1, 2, 97, 33), "k": (1, 2, 200, 33),
     "v": (1, 2, 200, 49), "mask": (1, 1, 97, 200), "mask_kind": "bool"},
    {"name": "causal_bottom_right", "q": (1, 2, 100, 8), "k": (1, 2, 130, 8),
     "v": (1, 2, 130, 8), "attrs": {"causal": 1, "causal_offset": 30}},
    {"name": "causal_rows_without_keys", "q": (2, 70, 12), "k": (2, 60, 12), "v": (2, 60, 7),
     "attrs": {"causal": 1, "causal_offset": -5}},
    {"name": "scale_and_softcap", "q": (2, 4, 60, 24), "k": (2, 4, 96, 24),
     "v": (2, 4, 96, 24), "attrs": {"scale": 0.9, "softcap": 3.0}, "spread": 3.0},
    {"name": "grouped_heads_causal", "q": (1, 8, 49, 64), "k": (1, 2, 97, 64),
     "v": (1, 2, 97, 64), "attrs": {"causal": 1, "causal_offset": 48}},
    {"name": "transposed_keys_masked", "q": (2, 3, 50, 16), "k": (2, 3, 16, 101),
     "v": (2, 3, 101, 20), "mask": (50, 101), "mask_kind": "f32",
     "attrs": {"transposed_keys": 1}},
    {"name": "transposed_keys_grouped", "q": (1, 4, 33, 8), "k": (1, 2, 8, 250),
     "v": (1, 2, 250, 5), "attrs": {"transposed_keys": 1, "causal": 1, "causal_offset": 200}},
    {"name": "large_scores", "q": (1, 2, 20, 8), "k": (1, 2, 300, 8), "v": (1, 2, 300, 4),
     "attrs": {"scale": 1.0}, "spread": 30.0},
]


def arrays_of(case: dict, rng: np.random.Generator) -> dict[str, np.ndarray]:
    spread = case.get("spread", 1.0)
    arrays = {name: (rng.standard_normal(case[name]) * (spread if name != "v" else 1.0)
                     ).astype(np.float32) for name in ("q", "k", "v")}
    kind = case.get("mask_kind")
    if kind == "f32":
        mask = rng.standard_normal(case["mask"]).astype(np.float32)
        mask[..., 3] = -np.inf  # key 3 removed everywhere
        mask[..., 1, :] = -np.inf  # query row 1 sees no key: zeros
        arrays["mask"] = mask
    elif kind == "padding":
        # What an encoder's padding mask is: 0 for tokens, the f32 minimum for padding.
        keep = np.arange(case["mask"][-1]) < np.array([16, 9])[:, None, None, None]
        arrays["mask"] = np.where(keep, 0.0, np.finfo(np.float32).min).astype(np.float32)
    elif kind == "bool":
        mask = rng.random(case["mask"]) < 0.7
        mask[..., 5, :] = False  # a query row with no key
        mask[..., 144:] = False  # the driver's second block of keys, all removed
        arrays["mask"] = mask
    return arrays


def build(case: dict, arrays: dict[str, np.ndarray]) -> tuple[nxe.Graph, list[np.ndarray]]:
    g = nxe.Graph()
    names = ["q", "k", "v"] + (["mask"] if "mask" in arrays else [])
    inputs = [g.input(name, arrays[name].shape,
                      "bool" if arrays[name].dtype == bool else "f32") for name in names]
    g.mark_output(g.ScaledDotProductAttention(*inputs, **case.get("attrs", {})), name="y")
    return g, [arrays[name] for name in names]


def main(out_path: str) -> None:
    rng = np.random.default_rng(1502)
    saved: dict[str, np.ndarray] = {}
    kernels: dict[str, str] = {}
    for case in CASES:
        arrays = arrays_of(case, rng)
        graph, inputs = build(case, arrays)
        one = graph.compile(threads=1)
        kernels[case["name"]] = next(row["kernel"] for row in one.profile(*inputs).rows()
                                     if row["op_type"] == "ScaledDotProductAttention")
        saved[f"{case['name']}/y"] = one.run(*inputs)["y"]
        saved[f"{case['name']}/y_threads"] = graph.compile(threads=3).run(*inputs)["y"]
        for name, value in arrays.items():
            saved[f"{case['name']}/{name}"] = value
    saved["kernels"] = np.array(json.dumps(kernels))
    saved["cpu"] = np.array(json.dumps(nxe.cpu_info()))
    np.savez(out_path, **saved)


if __name__ == "__main__":
    main(sys.argv[1])
