"""nxe.Embedder: sentence embeddings from a baked embedding model (.nxm) through the engine's
"embedding" kind, with sentence-transformers' encode() shape and meaning.

    embedder = nxe.Embedder("all-MiniLM-L6-v2")        # or a path to a .nxm
    vectors = embedder.encode(["first text", "second text"])   # float32 [2, 384]

Each sentence is one engine request (its UTF-8 bytes as the input "text"); the engine batches
the queued requests, the kind sorts each batch by length, pads it to length buckets, runs the
compiled encoder and pools. encode() submits in windows below the engine's queue capacity, so
any number of sentences goes through, and waits for them in order.
"""

from __future__ import annotations

import json
import os
import sys
from collections import deque
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .engine import Engine, ModelSpec, Request
from .errors import Error, InvalidArgumentError
from .model import Model

# The model's name inside the Embedder's own engine.
_MODEL = "embedding"
# Requests in flight at once: under the engine's default queue capacity (512).
_WINDOW = 256


def _resolve(model: str | os.PathLike[str], precision: str | None) -> Path:
    """A .nxm path as is; anything else through nxe.bake.resolve_embedding_model (a known
    name baked once into the user cache) when the bake module is installed."""
    path = Path(os.fspath(model))
    if path.suffix == ".nxm" or path.is_file():
        if not path.is_file():
            raise FileNotFoundError(f"nxe.Embedder: no model file '{path}'")
        return path
    try:
        from .bake import resolve_embedding_model
    except ImportError:
        raise FileNotFoundError(f"nxe.Embedder: '{model}' is not a model file, and this "
                                "installation cannot bake models by name") from None
    return Path(resolve_embedding_model(os.fspath(model), precision=precision or "fp32"))


def _text_input(index: int, sentence: object) -> np.ndarray:
    if not isinstance(sentence, str):
        raise TypeError(f"sentences[{index}] is {type(sentence).__name__}, expected str")
    try:
        data = sentence.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InvalidArgumentError(f"sentences[{index}] is not valid Unicode text: "
                                   f"{error}") from None
    return np.frombuffer(data, np.uint8)


class Embedder:
    """Embeds text with a baked embedding model: ``model`` is a .nxm path or a name that
    nxe.bake.resolve_embedding_model knows (baked once into the user cache, with
    ``precision`` "fp32", "bf16" or "int8"). ``num_threads``: compute threads (None: one per
    CPU); ``relax``: fp32 work in bf16 with fp32 accumulation; ``max_seq_length``: a token
    limit below the model's; ``batch_size``: requests the engine hands the kind at once
    (it sorts them by length and runs them in padded sub-batches).

    A context manager; ``close()`` releases the engine and the model."""

    def __init__(self, model: str | os.PathLike[str], *, precision: str | None = None,
                 num_threads: int | None = None, relax: bool = False,
                 max_seq_length: int | None = None, batch_size: int = 32) -> None:
        self.path = _resolve(model, precision)
        with Model(self.path, lazy=True) as opened:
            metadata = opened.metadata
        if metadata.get("task") != "embedding":
            raise InvalidArgumentError(f"nxe.Embedder: '{self.path}' is not an embedding model "
                                       f"(its metadata's task is {metadata.get('task')!r})")
        self.metadata = metadata
        self.name = str(metadata.get("name", self.path.stem))
        self.dimensions = int(metadata["dimensions"])
        self.max_seq_length = int(max_seq_length or metadata["max_seq_length"])
        self.normalize = bool(metadata.get("normalize", False))
        self._tokenizer: Any = None
        self._options: dict[str, Any] = {"relax": relax}
        if num_threads is not None:
            self._options["num_threads"] = num_threads
        if max_seq_length is not None:
            self._options["max_seq_length"] = max_seq_length
        self._batch_size = self._check_batch_size(batch_size)
        self._engine = Engine(num_threads=num_threads or 0)
        try:
            self._engine.add_model(self._spec(self._batch_size))
            self._engine.load_model(_MODEL)
        except BaseException:
            self._engine.close()
            raise

    @staticmethod
    def _check_batch_size(batch_size: int) -> int:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidArgumentError(f"batch_size is {batch_size!r}; expected an integer >= 1")
        return batch_size

    def _spec(self, batch_size: int) -> ModelSpec:
        return ModelSpec(name=_MODEL, kind="embedding", path=str(self.path),
                         options=self._options, keep_alive_s=-1, max_batch_size=batch_size)

    @property
    def engine(self) -> Engine:
        """The Embedder's own engine (one model, named "embedding")."""
        return self._engine

    def close(self) -> None:
        self._engine.close()

    def __enter__(self) -> Embedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<nxe.Embedder {self.name} dim={self.dimensions} '{self.path}'>"

    # -- encoding

    def encode(self, sentences: str | Sequence[str], batch_size: int = 32,
               normalize_embeddings: bool = True, show_progress_bar: bool | None = None,
               dimensions: int | None = None, truncate: bool = True) -> np.ndarray:
        """Embeds one sentence (-> float32 [dim]) or a list (-> float32 [n, dim]), as
        sentence-transformers' encode does. ``normalize_embeddings``: unit length (after
        truncation); ``dimensions``: keep the first ones (Matryoshka); ``truncate``: cut
        inputs past the model's token limit, as sentence-transformers does (False: raise
        InvalidArgumentError naming the sentence instead);
        ``show_progress_bar``: a tqdm bar when tqdm is installed (None: when stderr is a
        terminal and there is more than one batch)."""
        return self.encode_with_tokens(sentences, batch_size=batch_size,
                                       normalize_embeddings=normalize_embeddings,
                                       show_progress_bar=show_progress_bar,
                                       dimensions=dimensions, truncate=truncate)[0]

    def encode_with_tokens(self, sentences: str | Sequence[str], batch_size: int = 32,
                           normalize_embeddings: bool = True,
                           show_progress_bar: bool | None = None, dimensions: int | None = None,
                           truncate: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """encode(), and the tokens each sentence counted (specials included, after
        truncation): int64 [n] (a scalar for one str)."""
        single = isinstance(sentences, str)
        items = [sentences] if single else sentences
        if not isinstance(items, Iterable):
            raise TypeError(f"sentences must be a str or a list of str, got "
                            f"{type(sentences).__name__}")
        items = list(items)
        inputs = [_text_input(i, s) for i, s in enumerate(items)]
        dims = self.dimensions if dimensions is None else dimensions
        if isinstance(dims, bool) or not isinstance(dims, int) or not 1 <= dims <= self.dimensions:
            raise InvalidArgumentError(f"dimensions is {dimensions!r}; expected 1 to "
                                       f"{self.dimensions}")
        batch_size = self._check_batch_size(batch_size)
        if batch_size != self._batch_size:
            self._engine.replace_model(self._spec(batch_size))
            self._batch_size = batch_size
        options = {"normalize": "true" if normalize_embeddings else "false",
                   "truncate": "true" if truncate else "false", "dimensions": str(dims)}
        embeddings = np.empty((len(items), dims), np.float32)
        tokens = np.zeros(len(items), np.int64)
        if show_progress_bar is None:
            show_progress_bar = len(items) > batch_size and sys.stderr.isatty()
        bar = _progress_bar(len(items)) if show_progress_bar else None
        # Longest first, as sentence-transformers does: neighbours in the queue batch together
        # with little padding. Results go back to the caller's order.
        order = sorted(range(len(items)), key=lambda i: -inputs[i].size)
        pending: deque[tuple[int, Request]] = deque()
        try:
            for index in order:
                if len(pending) >= _WINDOW:
                    self._collect(pending.popleft(), embeddings, tokens, bar)
                pending.append((index, self._engine.submit(_MODEL, {"text": inputs[index]},
                                                           options=options)))
            while pending:
                self._collect(pending.popleft(), embeddings, tokens, bar)
        finally:
            for _, request in pending:
                request.release()  # cancels what has not run
            if bar is not None:
                bar.close()
        if single:
            return embeddings[0], tokens[0]
        return embeddings, tokens

    @staticmethod
    def _collect(entry: tuple[int, Request], embeddings: np.ndarray, tokens: np.ndarray,
                 bar: Any) -> None:
        index, request = entry
        try:
            request.wait()
            try:
                outputs = request.outputs()
            except Error as error:
                raise type(error)(f"sentences[{index}]: {error}", error.status) from None
        finally:
            request.release()
        embeddings[index] = outputs["embedding"]
        tokens[index] = outputs["tokens"][0]
        if bar is not None:
            bar.update(1)

    @property
    def tokenizer(self) -> Any:
        """The model's tokenizer (nxe.Tokenizer), made from the file's metadata on first use."""
        if self._tokenizer is None:
            from .tokenizer import Tokenizer

            spec = self.metadata.get("tokenizer")
            if isinstance(spec, dict) and "vocab_txt" in spec:
                import tempfile

                with tempfile.TemporaryDirectory() as folder:
                    vocab = Path(folder) / "vocab.txt"
                    vocab.write_text(spec["vocab_txt"], encoding="utf-8")
                    self._tokenizer = Tokenizer.from_vocab(
                        vocab, lowercase=bool(spec.get("lowercase", True)))
            else:
                self._tokenizer = Tokenizer.from_json(json.dumps(spec))
        return self._tokenizer

    def count_tokens(self, sentences: str | Sequence[str], truncate: bool = False) -> Any:
        """Tokens each sentence counts as the model runs it (specials included; at most
        max_seq_length with ``truncate``): an int for one str, else a list. What
        usage.prompt_tokens reports; tokenizes without running the model."""
        single = isinstance(sentences, str)
        items = [sentences] if single else list(sentences)
        counts = []
        for i, sentence in enumerate(items):
            _text_input(i, sentence)  # the same checks as encode
            n = len(self.tokenizer.encode(sentence, max_length=-1).ids)
            counts.append(min(n, self.max_seq_length) if truncate else n)
        return counts[0] if single else counts


def _progress_bar(total: int) -> Any:
    """A tqdm bar on stderr when tqdm is installed, else None (no progress shown)."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="sentence", desc="Embedding", file=sys.stderr)


__all__ = ["Embedder"]
