"""Scaled dot-product attention: nxe's fused ScaledDotProductAttention (and the same attention
written out as MatMul -> Mul -> Softmax -> MatMul in nxe, the form encoders ran before the
fusion) beside torch.nn.functional.scaled_dot_product_attention and onnxruntime (a
MatMul/Softmax/MatMul graph, and its com.microsoft MultiHeadAttention contrib op), fp32, no
mask, self-attention (S = L). nxe runs at each dispatch level the machine has (a fresh process
per level: NXE_ISA is read once), the peers once in this process. Prints medians and the
ratio of nxe's fused op to the best peer; not a test.

    python benchmarks/attention.py [--levels avx512 avx2 scalar] [--threads 2] [--repeats 10]
                                   [--nxe-cap-s 3] [--json out.json]

Relax mode runs the same f32 kernels for attention (nxe.cpu_info() and docs/architecture.md),
so it has no column of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402  (benchmarks/run.py: the timing, the CPU's name and its levels)

# (batch, heads, L, head size)
SHAPES = [(1, 12, 128, 64), (1, 12, 512, 64), (1, 8, 2048, 64), (1, 1, 4096, 64)]


def name_of(shape: tuple[int, int, int, int]) -> str:
    return "x".join(map(str, shape))


def inputs_of(shape: tuple[int, int, int, int]) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(3)]


def nxe_graphs(shape: tuple[int, int, int, int]) -> dict:
    import nxe
    b, h, length, e = shape
    graphs = {}
    for form in ("fused", "written_out"):
        g = nxe.Graph()
        q, k, v = (g.input(name, shape, "f32") for name in "qkv")
        if form == "fused":
            y = g.ScaledDotProductAttention(q, k, v)
        else:
            scores = g.Mul(g.MatMul(q, g.Transpose(k, perm=[0, 1, 3, 2])),
                           g.constant(np.float32(1 / np.sqrt(e))))
            y = g.MatMul(g.Softmax(scores, axis=-1), v)
        g.mark_output(y, name="y")
        graphs[form] = g
    return graphs


def measure_nxe(threads: int, repeats: int, cap_s: float) -> dict:
    """In this process (NXE_ISA already set): median ms per shape, fused and written out, and
    the kernel the fused step ran; a run slower than cap_s seconds is timed once."""
    import nxe
    results = {"isa": nxe.cpu_info()["isa"], "kernels": nxe.cpu_info()["kernels"], "cases": {}}
    for shape in SHAPES:
        feeds = inputs_of(shape)
        figures = {}
        for form, graph in nxe_graphs(shape).items():
            exe = graph.compile(threads=threads)
            if form == "fused":
                figures["kernel"] = next(row["kernel"] for row in exe.profile(*feeds).rows())
            timing = run.time_runs(lambda e=exe, x=feeds: e.run(*x), repeats, cap_s)
            figures[form] = timing.median_ms
        results["cases"][name_of(shape)] = figures
    return results


def measure_peers(threads: int, repeats: int) -> dict:
    """Median ms per shape for each peer, or why it did not run."""
    results: dict[str, dict] = {name_of(shape): {} for shape in SHAPES}
    try:
        import torch
        torch.set_num_threads(threads)
        for shape in SHAPES:
            q, k, v = (torch.from_numpy(a) for a in inputs_of(shape))
            with torch.inference_mode():
                timing = run.time_runs(
                    lambda q=q, k=k, v=v: torch.nn.functional.scaled_dot_product_attention(
                        q, k, v), repeats, None)
            results[name_of(shape)]["torch"] = timing.median_ms
    except ImportError as error:
        for figures in results.values():
            figures["torch"] = f"not installed: {error}"
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError as error:
        for figures in results.values():
            figures["ort_graph"] = figures["ort_mha"] = f"not installed: {error}"
        return results
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    for shape in SHAPES:
        b, h, length, e = shape
        q, k, v = inputs_of(shape)
        graph = helper.make_graph(
            [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["q", "kt"], ["s"]),
             helper.make_node("Mul", ["s", "c"], ["scaled"]),
             helper.make_node("Softmax", ["scaled"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["y"])], "attention",
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(shape)) for n in "qkv"],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))],
            [helper.make_tensor("c", TensorProto.FLOAT, [], [1 / np.sqrt(e)])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        session = ort.InferenceSession(model.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
        feeds = {"q": q, "k": k, "v": v}
        results[name_of(shape)]["ort_graph"] = run.time_runs(
            lambda s=session, f=feeds: s.run(None, f), repeats, None).median_ms
        # The contrib op takes [batch, L, heads * head size].
        flat = [np.ascontiguousarray(a.transpose(0, 2, 1, 3).reshape(b, length, h * e))
                for a in (q, k, v)]
        graph = helper.make_graph(
            [helper.make_node("MultiHeadAttention", ["q", "k", "v"], ["y"], num_heads=h,
                              domain="com.microsoft")], "mha",
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, [b, length, h * e])
             for n in "qkv"],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [b, length, h * e])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                        helper.make_opsetid("com.microsoft", 1)])
        try:
            session = ort.InferenceSession(model.SerializeToString(), options,
                                           providers=["CPUExecutionProvider"])
            feeds = dict(zip("qkv", flat))
            results[name_of(shape)]["ort_mha"] = run.time_runs(
                lambda s=session, f=feeds: s.run(None, f), repeats, None).median_ms
        except Exception as error:  # noqa: BLE001 - a peer that cannot run is reported
            results[name_of(shape)]["ort_mha"] = f"{type(error).__name__}: {error}"[:80]
    return results


def cell(value: object) -> str:
    return f"{value:10.2f}" if isinstance(value, float) else f"{'n/a':>10}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", nargs="+", help="default: every level the machine has")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--nxe-cap-s", type=float, default=3.0,
                        help="a nxe run slower than this is timed once (the scalar level's "
                             "long sequences)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure_nxe(args.threads, args.repeats, args.nxe_cap_s)))
        return 0
    levels = args.levels or list(reversed(run.machine_levels()))
    peers = measure_peers(args.threads, args.repeats)
    print(f"{run._cpu_model()}; {args.threads} thread(s), median of {args.repeats} runs, ms")
    for shape in SHAPES:
        figures = peers[name_of(shape)]
        for peer, label in (("torch", "torch SDPA"), ("ort_graph", "onnxruntime graph"),
                            ("ort_mha", "onnxruntime MHA")):
            if not isinstance(figures[peer], float):
                print(f"  {name_of(shape)} {label}: {figures[peer]}")
    print(f"{'level':7} {'B x H x L x E':15} {'nxe fused':>10} {'written':>10} {'torch':>10} "
          f"{'ort graph':>10} {'ort MHA':>10} {'best peer':>10} {'nxe/peer':>9}  kernel")
    report = {"cpu": run._cpu_model(), "threads": args.threads, "repeats": args.repeats,
              "peers": peers, "levels": {}}
    for level in levels:
        out = subprocess.run(
            [sys.executable, __file__, "--child", "--threads", str(args.threads), "--repeats",
             str(args.repeats), "--nxe-cap-s", str(args.nxe_cap_s)],
            env=dict(os.environ, NXE_ISA=level), check=True, capture_output=True, text=True)
        results = json.loads(out.stdout.splitlines()[-1])
        if results["isa"] != level:
            print(f"{level:7} skipped: this machine runs at most {results['isa']}")
            continue
        report["levels"][level] = results
        for shape in SHAPES:
            name = name_of(shape)
            f, p = results["cases"][name], peers[name]
            times = [t for t in p.values() if isinstance(t, float)]
            best = min(times) if times else None
            ratio = f"{best / f['fused']:8.2f}x" if best else f"{'n/a':>9}"
            print(f"{level:7} {name:15} {cell(f['fused'])} {cell(f['written_out'])} "
                  f"{cell(p.get('torch'))} {cell(p.get('ort_graph'))} {cell(p.get('ort_mha'))} "
                  f"{cell(best)} {ratio}  {f['kernel'] or 'reference rows'}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
