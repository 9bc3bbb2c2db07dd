"""nxe, onnxruntime and PyTorch side by side in one process, on the cases the fast-kernel work is
measured by: GEMM 2048^3, ESPCN x2, EDSR-baseline x2, an all-MiniLM-L6-v2-shaped encoder and a
QDQ int8 CNN (onnxruntime's static quantization of a 3-layer conv stack, run by both engines).
A benchmark, not a test: it prints numbers and asserts nothing about them.

    python benchmarks/run.py [--cases gemm espcn_960x540 ...] [--repeats N] [--json out.json]
                             [--quick] [--threads T] [--nxe-cap-s 10] [--levels]

--levels runs every case once per dispatch level the machine has (NXE_ISA=level, each in a
child process) and prints each level's table and then nxe against its best peer per level.

Needs the `bench` extra (torch, onnx, onnxruntime); a missing peer is reported, not fatal.
FLOPs are counted analytically: 2*M*N*K per GEMM, 2*Cout*Cin*kh*kw*Hout*Wout per convolution,
2*in*out per token per dense layer and 2*2*seq*seq*head_dim per head for attention; bias,
activations, normalization and softmax are not counted. GFLOP/s = counted FLOPs / median time.
"""

from __future__ import annotations

import argparse
import datetime
import io
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# numpy's BLAS threads spin after any call and would take cycles from every engine timed here;
# nothing timed uses them.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import nxe
from nxe import models

HERE = Path(__file__).resolve().parent


# -- the machine's peak -------------------------------------------------------------------


def measure_peak(threads: int) -> dict[str, Any]:
    """Compiles benchmarks/peak.c with the system C compiler and runs it on ``threads`` threads:
    {"fp32_fma": {"isa", "gops"} (the widest FMA), "fp32_fma_avx2", "int8_avx2" (the AVX2
    level's units), "avx512_bf16", "avx512_vnni_int8", "amx_bf16", "amx_int8"}; a figure that
    cannot be measured has gops None and a reason."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    missing = {"isa": None, "gops": None}
    if compiler is None:
        reason = "no C compiler (cc) to build benchmarks/peak.c"
        return {k: {**missing, "reason": reason} for k in
                ("fp32_fma", "fp32_fma_avx2", "int8_avx2", "avx512_bf16", "avx512_vnni_int8",
                 "amx_bf16", "amx_int8")}
    with tempfile.TemporaryDirectory() as folder:
        exe = Path(folder) / "peak"
        subprocess.run([compiler, "-std=c11", "-O2", "-pthread", str(HERE / "peak.c"), "-o",
                        str(exe)], check=True)
        result = subprocess.run([str(exe), str(threads), "0.3"], check=True,
                                capture_output=True, text=True)
    return json.loads(result.stdout)


# -- timing -------------------------------------------------------------------------------


@dataclass
class Timing:
    median_ms: float | None
    runs: int
    note: str = ""


def time_runs(run: Callable[[], Any], repeats: int, cap_s: float | None) -> Timing:
    """Median of ``repeats`` timed runs after one warm-up run. With ``cap_s``, a warm-up slower
    than that is itself the one figure (1 run), and the repeats stop once ``cap_s`` * 3 is
    spent; the note says so."""
    start = time.perf_counter()
    run()
    first = time.perf_counter() - start
    if cap_s is not None and first > cap_s:
        return Timing(first * 1e3, 1, f"1 run: one run takes {first:.1f} s > cap {cap_s:g} s")
    times: list[float] = []
    budget = None if cap_s is None else cap_s * 3
    spent = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
        spent += times[-1]
        if budget is not None and spent > budget and len(times) >= 3:
            break
    note = "" if len(times) == repeats else f"{len(times)} runs: time cap {budget:g} s"
    return Timing(statistics.median(times) * 1e3, len(times), note)


# -- cases --------------------------------------------------------------------------------


@dataclass
class Case:
    """One workload: its name, description, counted FLOPs (or integer ops) and inputs."""

    name: str
    description: str
    flops: float
    kind: str  # "gemm", "espcn", "edsr", "bert", "qdq"
    params: dict[str, int] = field(default_factory=dict)


def conv_flops(cin: int, cout: int, k: int, h: int, w: int) -> float:
    return 2.0 * cout * cin * k * k * h * w


def espcn_flops(h: int, w: int, scale: int = 2) -> float:
    return (conv_flops(1, 64, 5, h, w) + conv_flops(64, 32, 3, h, w)
            + conv_flops(32, scale * scale, 3, h, w))


def edsr_flops(h: int, w: int, blocks: int = 16, features: int = 64) -> float:
    body = (2 * blocks + 1) * conv_flops(features, features, 3, h, w)
    upsample = conv_flops(features, 4 * features, 3, h, w)
    return (conv_flops(3, features, 3, h, w) + body + upsample
            + conv_flops(features, 3, 3, 2 * h, 2 * w))


def bert_flops(batch: int, seq: int, config: models.BertConfig) -> float:
    tokens = batch * seq
    h, f = config.hidden, config.intermediate
    dense = 2.0 * tokens * (4 * h * h + 2 * h * f)
    attention = 2.0 * 2 * batch * config.heads * seq * seq * config.head_dim
    return config.layers * (dense + attention)


# qdq_cnn: (input, output) channels of its 3x3 convolutions.
QDQ_CNN_LAYERS = ((32, 64), (64, 64), (64, 32))


def qdq_cnn_models(case: Case) -> tuple[bytes, bytes, np.ndarray]:
    """qdq_cnn's fp32 ONNX model (exported from PyTorch), the same model quantized by
    onnxruntime.quantization.quantize_static in QDQ format (per-channel s8 weights, u8
    activations, calibrated on 8 random frames), and the input frame; made once per case."""
    if case.name in _QDQ_MODELS:
        return _QDQ_MODELS[case.name]
    import torch
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    torch.manual_seed(0)
    layers: list[Any] = []
    for cin, cout in QDQ_CNN_LAYERS:
        layers += [torch.nn.Conv2d(cin, cout, 3, padding=1), torch.nn.ReLU()]
    module = torch.nn.Sequential(*layers[:-1]).eval()
    shape = (1, QDQ_CNN_LAYERS[0][0], case.params["h"], case.params["w"])
    rng = np.random.default_rng(1)
    frames = [rng.standard_normal(shape).astype(np.float32) for _ in range(9)]

    class Frames(CalibrationDataReader):
        def __init__(self) -> None:
            self.left = iter(frames[1:])

        def get_next(self) -> dict[str, np.ndarray] | None:
            frame = next(self.left, None)
            return None if frame is None else {"x": frame}

    with tempfile.TemporaryDirectory() as folder:
        fp32_path, int8_path = Path(folder) / "cnn.onnx", Path(folder) / "cnn-int8.onnx"
        with torch.no_grad():
            torch.onnx.export(module, torch.from_numpy(frames[0]), str(fp32_path),
                              input_names=["x"], output_names=["y"], opset_version=17,
                              dynamo=False)
        quantize_static(str(fp32_path), str(int8_path), Frames(), quant_format=QuantFormat.QDQ,
                        per_channel=True, activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8)
        _QDQ_MODELS[case.name] = (fp32_path.read_bytes(), int8_path.read_bytes(), frames[0])
    return _QDQ_MODELS[case.name]


_QDQ_MODELS: dict[str, tuple[bytes, bytes, np.ndarray]] = {}


def make_cases(quick: bool) -> list[Case]:
    n = 512 if quick else 2048
    sizes = {
        "espcn_960x540": (270, 480) if quick else (540, 960),
        "espcn_640x360": (90, 160) if quick else (360, 640),
        "edsr_320x180": (45, 80) if quick else (180, 320),
    }
    bert_shapes = {"minilm_b32x128": (4, 32) if quick else (32, 128),
                   "minilm_b1x16": (1, 16)}
    cases = [Case("gemm_2048", f"GEMM {n}x{n}x{n}", 2.0 * n ** 3, "gemm", {"n": n})]
    for name, (h, w) in sizes.items():
        kind = name.split("_")[0]
        flops = espcn_flops(h, w) if kind == "espcn" else edsr_flops(h, w)
        title = "ESPCN x2" if kind == "espcn" else "EDSR-baseline x2"
        cases.append(Case(name, f"{title} {w}x{h}", flops, kind, {"h": h, "w": w}))
    h, w = (64, 64) if quick else (192, 192)
    cases.append(Case("qdq_cnn", f"QDQ int8 conv 3x3 32->64->64->32 (ReLU) {w}x{h}",
                      sum(conv_flops(cin, cout, 3, h, w) for cin, cout in QDQ_CNN_LAYERS),
                      "qdq", {"h": h, "w": w}))
    config = models.BertConfig()
    for name, (b, s) in bert_shapes.items():
        cases.append(Case(name, f"all-MiniLM-L6-v2 shape, batch {b} x {s} tokens",
                          bert_flops(b, s, config), "bert", {"batch": b, "seq": s}))
    return cases


# -- the same models in PyTorch -----------------------------------------------------------


def torch_module(case: Case, weights: dict[str, np.ndarray] | None = None,
                 ) -> tuple[Any, tuple[Any, ...]]:
    """The PyTorch module with ``weights`` (by default nxe's random weights), and its fp32
    example inputs."""
    import torch
    from torch import nn

    rng = np.random.default_rng(1)
    if case.kind == "espcn":
        weights = weights or models.espcn_random_weights(scale=2, seed=0)

        class Espcn(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.conv1 = nn.Conv2d(1, 64, 5, padding=2)
                self.conv2 = nn.Conv2d(64, 32, 3, padding=1)
                self.conv3 = nn.Conv2d(32, 4, 3, padding=1)

            def forward(self, x: Any) -> Any:
                x = torch.tanh(self.conv1(x))
                x = torch.tanh(self.conv2(x))
                return torch.pixel_shuffle(self.conv3(x), 2)

        module = Espcn()
        x = rng.standard_normal((1, 1, case.params["h"], case.params["w"]), np.float32)
        inputs: tuple[Any, ...] = (torch.from_numpy(x),)
    elif case.kind == "edsr":
        weights = weights or models.edsr_random_weights(scale=2, seed=0)

        class Edsr(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                def conv(cin: int, cout: int) -> nn.Conv2d:
                    return nn.Conv2d(cin, cout, 3, padding=1)

                self.head = nn.ModuleList([conv(3, 64)])
                blocks = [nn.Module() for _ in range(16)]
                for block in blocks:
                    block.body = nn.ModuleList([conv(64, 64), nn.ReLU(), conv(64, 64)])
                self.body = nn.ModuleList([*blocks, conv(64, 64)])
                self.tail = nn.ModuleList([nn.ModuleList([conv(64, 256)]), conv(64, 3)])

            def forward(self, x: Any) -> Any:
                head = self.head[0](x)
                h = head
                for block in self.body[:16]:
                    h = block.body[2](torch.relu(block.body[0](h))) + h
                h = self.body[16](h) + head
                h = torch.pixel_shuffle(self.tail[0][0](h), 2)
                return self.tail[1](h)

        module = Edsr()
        x = rng.standard_normal((1, 3, case.params["h"], case.params["w"]), np.float32)
        inputs = (torch.from_numpy(x),)
    else:
        config = models.BertConfig()
        weights = weights or models.bert_random_weights(config, seed=0)
        module = _torch_bert(config)
        b, s = case.params["batch"], case.params["seq"]
        x = rng.standard_normal((b, s, config.hidden), np.float32)
        mask = np.zeros((b, 1, 1, s), np.float32)
        inputs = (torch.from_numpy(x), torch.from_numpy(mask))
    state = {name: torch.from_numpy(np.ascontiguousarray(value))
             for name, value in weights.items()}
    module.load_state_dict(state, strict=True)
    return module.eval(), inputs


def _torch_bert(config: models.BertConfig) -> Any:
    import torch
    from torch import nn

    h, heads, f = config.hidden, config.heads, config.intermediate

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.self = nn.Module()
            self.self.query, self.self.key, self.self.value = (nn.Linear(h, h) for _ in range(3))
            self.output = nn.Module()
            self.output.dense = nn.Linear(h, h)
            self.output.LayerNorm = nn.LayerNorm(h, eps=config.layer_norm_eps)

        def forward(self, x: Any, mask: Any) -> Any:
            b, s, _ = x.shape

            def split(t: Any) -> Any:
                return t.view(b, s, heads, h // heads).transpose(1, 2)

            q, k, v = (split(layer(x)) for layer in
                       (self.self.query, self.self.key, self.self.value))
            scores = q @ k.transpose(-1, -2) * (1.0 / (h // heads) ** 0.5) + mask
            context = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, s, h)
            return self.output.LayerNorm(self.output.dense(context) + x)

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attention = Attention()
            self.intermediate = nn.Module()
            self.intermediate.dense = nn.Linear(h, f)
            self.output = nn.Module()
            self.output.dense = nn.Linear(f, h)
            self.output.LayerNorm = nn.LayerNorm(h, eps=config.layer_norm_eps)

        def forward(self, x: Any, mask: Any) -> Any:
            a = self.attention(x, mask)
            inner = torch.nn.functional.gelu(self.intermediate.dense(a))
            return self.output.LayerNorm(self.output.dense(inner) + a)

    class Bert(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = nn.Module()
            self.encoder.layer = nn.ModuleList([Layer() for _ in range(config.layers)])

        def forward(self, x: Any, mask: Any) -> Any:
            for layer in self.encoder.layer:
                x = layer(x, mask)
            return x

    return Bert()


# -- engines ------------------------------------------------------------------------------


@dataclass
class Row:
    case: str
    engine: str
    precision: str
    timing: Timing | None = None
    unavailable: str = ""  # the reason, when the engine cannot run this case


def nxe_model(case: Case) -> tuple[nxe.Graph, list[np.ndarray]]:
    """The case's nxe graph and its inputs."""
    if case.kind == "gemm":
        n = case.params["n"]
        g = nxe.Graph()
        a = g.input("a", (n, n), "f32")
        b = g.input("b", (n, n), "f32")
        g.mark_output(g.MatMul(a, b), name="c")
        rng = np.random.default_rng(0)
        feeds = [rng.standard_normal((n, n), np.float32) for _ in range(2)]
        model_graph = g
    elif case.kind == "espcn":
        built = models.espcn(models.espcn_random_weights(scale=2, seed=0), case.params["h"],
                             case.params["w"], scale=2)
        model_graph = built.graph
        feeds = [np.random.default_rng(1).standard_normal(
            (1, 1, case.params["h"], case.params["w"]), np.float32)]
    elif case.kind == "edsr":
        built = models.edsr_baseline(models.edsr_random_weights(scale=2, seed=0),
                                     case.params["h"], case.params["w"], scale=2)
        model_graph = built.graph
        feeds = [np.random.default_rng(1).standard_normal(
            (1, 3, case.params["h"], case.params["w"]), np.float32)]
    else:
        config = models.BertConfig()
        b, s = case.params["batch"], case.params["seq"]
        built = models.bert_encoder(models.bert_random_weights(config, seed=0), b, s, config)
        model_graph = built.graph
        feeds = [np.random.default_rng(1).standard_normal((b, s, config.hidden), np.float32),
                 np.zeros((b, 1, 1, s), np.float32)]
    return model_graph, feeds


def nxe_rows(case: Case, threads: int, repeats: int, cap_s: float) -> list[Row]:
    if case.kind == "qdq":
        # Both files through nxe's ONNX importer: the QDQ pairs become QLinearConv.
        import nxe.onnx as nxe_onnx

        rows = []
        for precision, model_bytes in zip(("fp32", "int8"), qdq_cnn_models(case)[:2]):
            model = nxe_onnx.load(model_bytes, threads=threads)
            feeds = {"x": qdq_cnn_models(case)[2]}
            rows.append(Row(case.name, "nxe", precision,
                            time_runs(lambda m=model, f=feeds: m.run(f), repeats, cap_s)))
        return rows
    model_graph, feeds = nxe_model(case)
    rows = []
    # relax: fp32 graphs run their GEMMs and convolutions on bf16 operands with f32
    # accumulation where the CPU has a bf16 kernel (nxe.cpu_info() says which).
    for precision, relax in (("fp32", False), ("bf16", True)):
        executable = model_graph.compile(threads=threads, relax=relax)
        rows.append(Row(case.name, "nxe", precision,
                        time_runs(lambda e=executable: e.run(*feeds), repeats, cap_s)))
    if case.kind == "gemm":
        # int8: MatMulInteger on s8 x s8 with int32 results, as the peers' int8 rows.
        n = case.params["n"]
        g = nxe.Graph()
        a = g.input("a", (n, n), "i8")
        b = g.input("b", (n, n), "i8")
        g.mark_output(g.MatMulInteger(a, b), name="c")
        rng = np.random.default_rng(0)
        int_feeds = [rng.integers(-128, 128, (n, n), dtype=np.int8) for _ in range(2)]
        executable = g.compile(threads=threads)
        rows.append(Row(case.name, "nxe", "int8",
                        time_runs(lambda: executable.run(*int_feeds), repeats, cap_s)))
    return rows


def onnxruntime_rows(case: Case, threads: int, repeats: int) -> list[Row]:
    try:
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError as error:
        return [Row(case.name, "onnxruntime", "fp32", unavailable=f"not installed: {error}")]
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1

    def session(model_bytes: bytes) -> Any:
        return ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])

    rows = []
    if case.kind == "qdq":
        fp32_bytes, int8_bytes, frame = qdq_cnn_models(case)
        for precision, model_bytes in (("fp32", fp32_bytes), ("int8", int8_bytes)):
            sess = session(model_bytes)
            rows.append(Row(case.name, "onnxruntime", precision,
                            time_runs(lambda s=sess: s.run(None, {"x": frame}), repeats, None)))
        return rows
    if case.kind == "gemm":
        n = case.params["n"]
        rng = np.random.default_rng(0)
        for precision, op, dtype, np_dtype in (
                ("fp32", "MatMul", TensorProto.FLOAT, np.float32),
                ("int8", "MatMulInteger", TensorProto.INT8, np.int8)):
            out_type = TensorProto.FLOAT if op == "MatMul" else TensorProto.INT32
            graph = helper.make_graph(
                [helper.make_node(op, ["a", "b"], ["c"])], "gemm",
                [helper.make_tensor_value_info(x, dtype, [n, n]) for x in ("a", "b")],
                [helper.make_tensor_value_info("c", out_type, [n, n])])
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
            sess = session(model.SerializeToString())
            if np_dtype is np.int8:
                feeds = {x: rng.integers(-128, 128, (n, n), dtype=np.int8) for x in ("a", "b")}
            else:
                feeds = {x: rng.standard_normal((n, n), np.float32) for x in ("a", "b")}
            rows.append(Row(case.name, "onnxruntime", precision,
                            time_runs(lambda s=sess, f=feeds: s.run(None, f), repeats, None)))
        rows.insert(1, Row(case.name, "onnxruntime", "bf16",
                           unavailable="the CPU execution provider has no bf16 MatMul"))
        return rows
    try:
        import torch
    except ImportError as error:
        return [Row(case.name, "onnxruntime", "fp32",
                    unavailable=f"the ONNX model is exported from PyTorch: {error}")]
    module, inputs = torch_module(case)
    names = ["luma"] if case.kind == "espcn" else ["rgb"] if case.kind == "edsr" else \
        ["embeddings", "attention_mask"]
    buffer = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(module, inputs, buffer, input_names=names, output_names=["out"],
                          opset_version=17, dynamo=False)
    onnx.checker.check_model(buffer.getvalue())
    sess = session(buffer.getvalue())
    feeds = {name: t.numpy() for name, t in zip(names, inputs)}
    rows.append(Row(case.name, "onnxruntime", "fp32",
                    time_runs(lambda: sess.run(None, feeds), repeats, None)))
    return rows


def cpu_flags() -> set[str]:
    """The CPU's feature flags as Linux names them (/proc/cpuinfo), whatever level nxe is capped
    at; empty where there is no /proc/cpuinfo."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def native_bf16_reason() -> str:
    """Why PyTorch's bf16 cannot run natively here ("" when it can): without AVX512-BF16 or
    AMX-BF16 its CPU kernels fall back to a scalar path that takes minutes on these cases."""
    flags = cpu_flags()
    if not flags or flags & {"avx512_bf16", "amx_bf16"}:
        return ""
    return ("skipped: no AVX512-BF16 or AMX-BF16 on this CPU, PyTorch's bf16 would run its "
            "scalar fallback")


def torch_rows(case: Case, threads: int, repeats: int, skip_compile: str) -> list[Row]:
    """``skip_compile``: why torch.compile is not timed, "" to time it."""
    try:
        import torch
    except ImportError as error:
        return [Row(case.name, "torch", "fp32", unavailable=f"not installed: {error}")]
    torch.set_num_threads(threads)
    if case.kind == "qdq":
        return [Row(case.name, "torch", "int8", unavailable="the case compares the ONNX engines "
                    "on one QDQ file")]
    rows = []
    no_bf16 = native_bf16_reason()
    if case.kind == "gemm":
        n = case.params["n"]
        gen = torch.Generator().manual_seed(0)
        a32, b32 = (torch.randn(n, n, generator=gen) for _ in range(2))
        a16, b16 = a32.bfloat16(), b32.bfloat16()
        a8, b8 = (torch.randint(-128, 128, (n, n), dtype=torch.int8, generator=gen)
                  for _ in range(2))
        with torch.no_grad():
            rows.append(Row(case.name, "torch", "fp32", time_runs(lambda: a32 @ b32, repeats,
                                                                   None)))
            rows.append(Row(case.name, "torch", "bf16", unavailable=no_bf16) if no_bf16 else
                        Row(case.name, "torch", "bf16", time_runs(lambda: a16 @ b16, repeats,
                                                                  None)))
            try:
                rows.append(Row(case.name, "torch", "int8",
                                time_runs(lambda: torch._int_mm(a8, b8), repeats, None)))
            except RuntimeError as error:
                rows.append(Row(case.name, "torch", "int8",
                                unavailable=f"torch._int_mm: {str(error).splitlines()[0]}"))
        return rows
    module, inputs = torch_module(case)
    conv = case.kind in ("espcn", "edsr")
    with torch.inference_mode():
        rows.append(Row(case.name, "torch", "fp32",
                        time_runs(lambda: module(*inputs), repeats, None)))
        if no_bf16:
            rows.append(Row(case.name, "torch eager", "bf16", unavailable=no_bf16))
            rows.append(Row(case.name, "torch.compile", "bf16", unavailable=no_bf16))
            return rows
        layout = torch.channels_last if conv else torch.contiguous_format
        module16 = module.to(torch.bfloat16).to(memory_format=layout)
        inputs16 = tuple(t.to(torch.bfloat16).contiguous(memory_format=layout) if t.dim() == 4
                         and conv else t.to(torch.bfloat16) for t in inputs)
        label = "torch eager" + (" channels_last" if conv else "")
        rows.append(Row(case.name, label, "bf16",
                        time_runs(lambda: module16(*inputs16), repeats, None)))
        if skip_compile:
            rows.append(Row(case.name, "torch.compile", "bf16", unavailable=skip_compile))
        else:
            try:
                compiled = torch.compile(module16)
                rows.append(Row(case.name, "torch.compile", "bf16",
                                time_runs(lambda: compiled(*inputs16), repeats, None)))
            except Exception as error:  # noqa: BLE001 - any compile failure is reported
                first = str(error).strip().splitlines()[0] if str(error).strip() else ""
                rows.append(Row(case.name, "torch.compile", "bf16",
                                unavailable=f"{type(error).__name__}: {first}"[:120]))
    return rows


# -- report -------------------------------------------------------------------------------


PEAK_FOR_PRECISION = {
    "fp32": ("fp32_fma",),
    "bf16": ("amx_bf16", "avx512_bf16"),
    "int8": ("amx_int8", "avx512_vnni_int8"),
}


# The units nxe's kernels run on at each dispatch level, first choice first: a level without
# the unit (AVX-512 without BF16) runs the next one's kernels. The scalar level runs the
# reference kernels, which have no peak to speak of.
PEAK_FOR_LEVEL = {
    "scalar": {"fp32": (), "bf16": (), "int8": ()},
    "avx2": {"fp32": ("fp32_fma_avx2",), "bf16": ("fp32_fma_avx2",), "int8": ("int8_avx2",)},
    "avx512": {"fp32": ("fp32_fma",), "bf16": ("avx512_bf16", "fp32_fma"),
               "int8": ("avx512_vnni_int8", "int8_avx2")},
    "amx": {"fp32": ("fp32_fma",), "bf16": ("amx_bf16", "avx512_bf16", "fp32_fma"),
            "int8": ("amx_int8", "avx512_vnni_int8", "int8_avx2")},
}


def peak_for(precision: str, peak: dict[str, Any],
             level: str | None = None) -> tuple[float | None, str]:
    """(GOP/s, name) of the peak a row is measured against: for nxe at a dispatch ``level``,
    the unit that level's kernels use; for a peer (``level`` None), the fastest unit the
    machine has for that precision (AMX, else AVX512-BF16 / AVX512-VNNI dot products);
    (None, "") when none was measured."""
    names = PEAK_FOR_LEVEL.get(level, {}).get(precision, ()) if level else \
        PEAK_FOR_PRECISION[precision]
    for name in names:
        if peak.get(name, {}).get("gops"):
            return peak[name]["gops"], name
    return None, ""


def merge_peaks(*measurements: dict[str, Any]) -> dict[str, Any]:
    """The best of several peak measurements, figure by figure: other load on the machine only
    ever lowers a measured peak."""
    merged = dict(measurements[0])
    for other in measurements[1:]:
        for name, figure in other.items():
            if isinstance(figure, dict) and figure.get("gops") and (
                    not merged[name].get("gops") or figure["gops"] > merged[name]["gops"]):
                merged[name] = figure
    return merged


def build_report(cases: list[Case], rows: list[Row], peak: dict[str, Any],
                 level: str) -> list[dict]:
    by_case = {c.name: c for c in cases}
    nxe_ms = {(r.case, r.precision): r.timing.median_ms for r in rows
              if r.engine == "nxe" and r.timing}
    report = []
    for r in rows:
        entry: dict[str, Any] = {"case": r.case, "description": by_case[r.case].description,
                                 "engine": r.engine, "precision": r.precision,
                                 "counted_gflop": by_case[r.case].flops / 1e9}
        if r.timing is None:
            entry["unavailable"] = r.unavailable
        else:
            ms = r.timing.median_ms
            gops = by_case[r.case].flops / (ms * 1e-3) / 1e9
            peak_gops, peak_name = peak_for(r.precision, peak,
                                            level if r.engine == "nxe" else None)
            entry.update({"median_ms": ms, "runs": r.timing.runs, "note": r.timing.note,
                          "gops": gops, "peak": peak_name or None,
                          "percent_of_peak": 100.0 * gops / peak_gops if peak_gops else None})
            if r.engine != "nxe":
                # How many times faster nxe is than this row: < 1 means nxe is slower.
                for precision in ("fp32", "bf16", "int8"):
                    if (r.case, precision) in nxe_ms:
                        entry[f"nxe_{precision}_speedup"] = ms / nxe_ms[(r.case, precision)]
        report.append(entry)
    return report


def print_report(report: list[dict], peak: dict[str, Any], header: str) -> None:
    print(header)
    for name, figure in peak.items():
        if name == "threads":
            continue
        text = (f"{figure['gops']:.0f} GOP/s ({figure['isa']})" if figure["gops"]
                else f"n/a ({figure['reason']})")
        print(f"  peak {name:17} {text}")
    print()
    columns = (f"{'case':16}{'engine':28}{'prec':6}{'median ms':>12}{'runs':>6}"
               f"{'GOP/s':>9}{'% peak':>8} {'of peak':17}{'nxe fp32 x':>11}{'nxe bf16 x':>11}"
               f"{'nxe int8 x':>11}")
    print(columns)
    print("-" * len(columns))
    for e in report:
        head = f"{e['case']:16}{e['engine']:28}{e['precision']:6}"
        if "unavailable" in e:
            print(f"{head}{'n/a':>12}  {e['unavailable']}")
            continue
        percent = (f"{e['percent_of_peak']:7.1f}%" if e["percent_of_peak"] is not None
                   else f"{'n/a':>8}")
        speedups = "".join(f"{e[key]:10.3g}x" if key in e else f"{'':11}"
                           for key in ("nxe_fp32_speedup", "nxe_bf16_speedup", "nxe_int8_speedup"))
        print(f"{head}{e['median_ms']:12.2f}{e['runs']:6}{e['gops']:9.1f}{percent} "
              f"{e['peak'] or '':17}{speedups}  {e['note']}")
    print()
    print("GOP/s: counted FLOPs (int8: multiply-adds x2) / median time. % peak: of the measured "
          "peak named in 'of peak'.")
    print("nxe fp32 x / bf16 x / int8 x: the peer's median / nxe's median in exact fp32, in relax "
          "mode (bf16 operands, f32 accumulation) and in int8; above 1, nxe is faster.")


def best_peers(report: list[dict]) -> list[dict]:
    """Per case and precision nxe ran: nxe's median and the fastest peer's in that precision
    (nxe's relax mode against the peers' bf16), and peer / nxe (above 1, nxe is faster)."""
    summary = []
    for case in dict.fromkeys(e["case"] for e in report):
        rows = [e for e in report if e["case"] == case and "median_ms" in e]
        for precision in ("fp32", "bf16", "int8"):
            ours = [e for e in rows if e["engine"] == "nxe" and e["precision"] == precision]
            peers = [e for e in rows if e["engine"] != "nxe" and e["precision"] == precision]
            if not ours:
                continue
            best = min(peers, key=lambda e: e["median_ms"]) if peers else None
            summary.append({
                "case": case, "precision": precision, "nxe_ms": ours[0]["median_ms"],
                "nxe_percent_of_peak": ours[0].get("percent_of_peak"),
                "nxe_peak": ours[0].get("peak"),
                "best_peer": best["engine"] if best else None,
                "best_peer_ms": best["median_ms"] if best else None,
                "ratio": best["median_ms"] / ours[0]["median_ms"] if best else None})
    return summary


def print_best_peers(summaries: dict[str, list[dict]],
                     peaks: dict[str, dict[str, Any]]) -> None:
    """One table: for each case and precision, nxe's median at each level, its share of that
    level's peak and the ratio to the best peer of that level's run; then each level's peaks."""
    levels = list(summaries)
    print("nxe against the best peer of the same precision, per dispatch level (peer ms / nxe ms:"
          " above 1, nxe is faster; ratios from one run each; % pk: of the level's peak below)")
    head = f"{'case':16}{'prec':6}" + "".join(f"{level + ' ms':>12}{'% pk':>6}{'x best':>8}"
                                                 for level in levels) + \
        f"  best peer at {levels[-1]}"
    print(head)
    print("-" * len(head))
    keys = list(dict.fromkeys((e["case"], e["precision"]) for s in summaries.values() for e in s))
    for case, precision in keys:
        line = f"{case:16}{precision:6}"
        peer = ""  # the last level's: peers do not follow NXE_ISA, only the load varies
        for level in levels:
            entry = next((e for e in summaries[level] if (e["case"], e["precision"]) ==
                          (case, precision)), None)
            if entry is None:
                line += f"{'':>26}"
                continue
            ratio = f"{entry['ratio']:7.2f}x" if entry["ratio"] else f"{'n/a':>8}"
            share = entry.get("nxe_percent_of_peak")
            line += f"{entry['nxe_ms']:12.2f}" + (f"{share:5.0f}%" if share else f"{'':>6}") + \
                ratio
            if entry["best_peer"]:
                peer = f"{entry['best_peer']} {entry['best_peer_ms']:.2f} ms"
        print(f"{line}  {peer}")
    print("peak per level (GOP/s, measured by benchmarks/peak.c in each level's run):")
    for level in levels:
        figures = []
        for precision in ("fp32", "bf16", "int8"):
            gops, name = peak_for(precision, peaks[level], level)
            figures.append(f"{precision} {gops:.0f} ({name})" if gops else f"{precision} n/a")
        print(f"  {level:8}" + ", ".join(figures))
    print()


def machine_levels() -> list[str]:
    """The dispatch levels this machine runs, lowest first, up to this process's level (an
    NXE_ISA cap on the run caps them), leaving out a level whose kernels are a lower level's
    (amx runs the avx512 row until it has tile kernels of its own); each is asked of nxe in a
    child process under NXE_ISA."""
    order = ["scalar", "avx2", "avx512", "amx"]
    levels, seen = [], []
    for level in order[:order.index(nxe.cpu_info()["isa"]) + 1]:
        env = {**os.environ, "NXE_ISA": level}
        info = json.loads(subprocess.run(
            [sys.executable, "-c", "import json, nxe; print(json.dumps(nxe.cpu_info()))"],
            env=env, check=True, capture_output=True, text=True).stdout)
        if info["isa"] != level:
            break
        if info["kernels"] not in seen or level == "scalar":
            levels.append(level)
            seen.append(info["kernels"])
    return levels


def run_levels(argv: list[str], json_path: Path | None) -> int:
    """This script once per level in a child process (NXE_ISA=level) with the other options;
    each prints its own table, then the best-peer ratios of all levels together."""
    levels = machine_levels()
    own = [a for a in argv if a != "--levels"]
    if "--json" in own:
        index = own.index("--json")
        del own[index:index + 2]
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        for level in levels:
            out = Path(folder) / f"{level}.json"
            print(f"== dispatch level {level} (NXE_ISA={level}) ==", flush=True)
            subprocess.run([sys.executable, str(Path(__file__).resolve()), *own, "--json",
                            str(out)], env={**os.environ, "NXE_ISA": level}, check=True)
            results[level] = json.loads(out.read_text())
            print(flush=True)
    print_best_peers({level: r["best_peers"] for level, r in results.items()},
                     {level: r["peak"] for level, r in results.items()})
    if json_path:
        json_path.write_text(json.dumps({"levels": results}, indent=2) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    all_cases = [c.name for c in make_cases(quick=False)]
    parser.add_argument("--cases", nargs="+", choices=all_cases, default=all_cases)
    parser.add_argument("--repeats", type=int, help="timed runs per figure (default 10)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--quick", action="store_true",
                        help="smaller sizes (GEMM 512^3, frames and batches a quarter or less), "
                             "5 repeats unless --repeats is given, no torch.compile: a run of "
                             "minutes")
    parser.add_argument("--levels", action="store_true",
                        help="run every case at each dispatch level the machine has (NXE_ISA), "
                             "one child process per level")
    parser.add_argument("--nxe-cap-s", type=float, default=10.0,
                        help="a nxe run slower than this is timed once")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    if args.repeats is None:
        args.repeats = 5 if args.quick else 10
    if args.repeats < 1 or args.threads < 1:
        parser.error("--repeats and --threads must be at least 1")
    if args.levels:
        return run_levels(sys.argv[1:] if argv is None else argv, args.json)
    skip_compile = ("skipped: --no-compile" if args.no_compile else
                    "skipped: --quick (compiling takes minutes)" if args.quick else "")

    before = measure_peak(args.threads)
    cases = [c for c in make_cases(args.quick) if c.name in args.cases]
    rows: list[Row] = []
    for case in cases:
        print(f"running {case.name}: {case.description} ...", file=sys.stderr, flush=True)
        rows += nxe_rows(case, args.threads, args.repeats, args.nxe_cap_s)
        rows += onnxruntime_rows(case, args.threads, args.repeats)
        rows += torch_rows(case, args.threads, args.repeats, skip_compile)
    peak = merge_peaks(before, measure_peak(args.threads))
    info = nxe.cpu_info()
    report = build_report(cases, rows, peak, info["isa"])
    versions = {"nxe": nxe.version()}
    for module in ("onnxruntime", "torch", "onnx"):
        try:
            versions[module] = __import__(module).__version__
        except ImportError:
            versions[module] = None
    machine = f"{platform.machine()}, {platform.processor() or _cpu_model()}, " \
              f"{os.cpu_count()} CPUs"
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    kernels = ", ".join(dict.fromkeys(k for k in info["kernels"].values() if k))
    level = f"nxe dispatch level {info['isa']} ({kernels})"
    header = (f"{stamp}  {machine}; {args.threads} thread(s), {args.repeats} repeats"
              f"{', --quick sizes' if args.quick else ''}\n{level}\n"
              + ", ".join(f"{k} {v}" for k, v in versions.items()))
    print_report(report, peak, header)
    summary = best_peers(report)
    print()
    print_best_peers({info["isa"]: summary}, {info["isa"]: peak})
    if args.json:
        args.json.write_text(json.dumps({"date": stamp, "machine": machine, "level": info["isa"],
                                         "kernels": info["kernels"],
                                         "threads": args.threads, "repeats": args.repeats,
                                         "quick": args.quick, "versions": versions,
                                         "peak": peak, "results": report,
                                         "best_peers": summary}, indent=2) + "\n")
    return 0


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


if __name__ == "__main__":
    sys.exit(main())
