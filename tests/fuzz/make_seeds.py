"""Writes small valid model files, compiled binaries and SR model metadata as seed corpora for
the fuzzers: python tests/fuzz/make_seeds.py OUT_DIR  ->  OUT_DIR/model/*.nxm,
OUT_DIR/binary/*.nxb, OUT_DIR/sr_metadata/*.json (the shipped SR models' metadata),
OUT_DIR/graph/* (one byte string per registered op for tests/fuzz/fuzz_graph.c)"""

import json
import sys
from pathlib import Path

import numpy as np
import nxe
import nxe.sr


def seed_graphs():
    rng = np.random.default_rng(0)
    g = nxe.Graph()
    x = g.input("x", (1, 2, 5, 4), "f32")
    w = g.constant(rng.standard_normal((3, 2, 3, 3)).astype(np.float32), name="w")
    b = g.constant(rng.standard_normal(3).astype(np.float32), name="b")
    y = g.Relu(g.Conv2d(x, w, b, pads=[1, 1, 1, 1]))
    g.mark_output(g.DepthToSpace(g.Concat(y, y, y, y, axis=1), blocksize=2, mode="CRD"), name="y")
    yield "conv", g

    g = nxe.Graph()
    x = g.input("x", (2, 3, 8), "f32")
    w = g.constant(rng.standard_normal((8, 8)).astype(np.float32), name="w")
    h = g.LayerNorm(g.MatMul(x, w), g.constant(np.ones(8, np.float32), name="s"), None)
    g.mark_output(g.Softmax(g.Gelu(h), axis=-1), name="y")
    q = g.tensor(name="q", dtype="u8", kind="output")
    q.set_quant_asymmetric(0.05, 128)
    g.op("QuantizeLinear", [h], outputs=[q])
    yield "matmul", g

    g = nxe.Graph()
    x = g.input("x", (4,), "f32")
    state = g.variable(np.zeros(4, np.float32), name="state")
    g.mark_output(g.Add(x, state), name="y")
    yield "variable", g


def write_graph_seeds(out_dir: str) -> None:
    """One seed per registered op: fuzz_graph.c reads a byte for the op count (0: one op), four
    big-endian bytes choosing the op by registry index, then the op's attributes, inputs and
    outputs from bytes that are random here and mutated by the fuzzer."""
    graph_dir = Path(out_dir, "graph")
    graph_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for index, schema in enumerate(nxe.ops()):
        rest = rng.integers(0, 256, 96, dtype=np.uint8).tobytes()
        (graph_dir / schema["name"]).write_bytes(bytes([0]) + index.to_bytes(4, "big") + rest)


def main(out_dir: str) -> None:
    model_dir = Path(out_dir, "model")
    binary_dir = Path(out_dir, "binary")
    model_dir.mkdir(parents=True, exist_ok=True)
    binary_dir.mkdir(parents=True, exist_ok=True)
    for name, graph in seed_graphs():
        nxe.save_model(graph, model_dir / f"{name}.nxm", metadata={"seed": name})
        graph.compile_to_binary(binary_dir / f"{name}.nxb", threads=1)
    metadata_dir = Path(out_dir, "sr_metadata")
    metadata_dir.mkdir(parents=True, exist_ok=True)
    for name in nxe.sr.builtin_models():
        with nxe.Model(nxe.sr.model_path(name)) as model:
            text = json.dumps(model.metadata, sort_keys=True, separators=(",", ":"))
        (metadata_dir / f"{name}.json").write_text(text)
    write_graph_seeds(out_dir)


if __name__ == "__main__":
    main(sys.argv[1])
