"""nxe.Tokenizer: the library's text tokenizer (include/nxe/nxe_tokenizer.h), which turns text
into the token ids, attention masks and offsets a BERT-family (WordPiece) or GPT-2/Whisper
(byte-level BPE) model takes, and ids back into text, equal to the `tokenizers` package's for
the tokenizer.json files it accepts.

    tok = nxe.Tokenizer.from_json("tokenizer.json")
    enc = tok.encode("Hello world")          # enc.ids, enc.attention_mask, enc.offsets
    batch = tok.encode_batch(["a", "b c"], padding=True)
    text = tok.decode(enc.ids, skip_special_tokens=True)

Offsets are in characters of the text (Python string indices), as `tokenizers` gives them; the
C library counts bytes of the UTF-8 text and this module converts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._binding import check, ffi, lib
from .errors import InvalidArgumentError


@dataclass(frozen=True)
class Encoding:
    """One encoded text: each list holds one entry per token, padding included."""

    ids: list[int]
    attention_mask: list[int]
    type_ids: list[int]
    special_tokens_mask: list[int]
    offsets: list[tuple[int, int]]  # [start, end) characters of the text; (0, 0) for specials
    num_tokens: int  # tokens before padding
    truncated: int  # tokens cut by truncation

    def __len__(self) -> int:
        return len(self.ids)


def _utf8(text: str | bytes) -> bytes:
    if isinstance(text, bytes):
        return text
    if not isinstance(text, str):
        raise TypeError(f"nxe.Tokenizer: a text must be str or bytes, not {type(text).__name__}")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidArgumentError(f"nxe.Tokenizer: the text is not valid Unicode ({e})") from None


def _char_index(data: bytes) -> np.ndarray:
    """For each byte offset 0..len(data), the index of the character starting there."""
    starts = (np.frombuffer(data, dtype=np.uint8) & 0xC0) != 0x80
    index = np.empty(len(data) + 1, dtype=np.int64)
    index[0] = 0
    np.cumsum(starts, out=index[1:])
    # index[o] counts the characters starting before o: the index of the one starting at o.
    return index


def _padding(padding: bool | str | int | None) -> int:
    if padding is None or padding is False:
        return 0
    if padding is True or padding == "longest":
        return -1
    if isinstance(padding, int) and not isinstance(padding, bool) and padding > 0:
        return padding
    raise InvalidArgumentError(
        f"nxe.Tokenizer: padding must be False, True, 'longest' or a positive length, not "
        f"{padding!r}")


class Tokenizer:
    """A WordPiece or byte-level BPE tokenizer made from a Hugging Face tokenizer.json, or a
    WordPiece one from a vocab.txt. Immutable: any number of threads may use one at once."""

    def __init__(self, handle) -> None:
        self._handle = ffi.gc(handle, lib.nxe_tokenizer_release)
        info = ffi.new("nxe_tokenizer_info *")
        info.struct_size = ffi.sizeof("nxe_tokenizer_info")
        check(lib.nxe_tokenizer_get_info(self._handle, info))
        self.vocab_size: int = info.vocab_size  # ids are in [0, vocab_size), added tokens too
        self.pad_id: int = info.pad_id
        self.unk_id: int | None = info.unk_id if info.unk_id >= 0 else None
        self.max_length: int | None = info.max_length or None  # tokenizer.json's truncation
        self.num_special_tokens: int = info.num_special

    @classmethod
    def from_json(cls, source: str | bytes | os.PathLike) -> Tokenizer:
        """From a tokenizer.json: its text (a str starting with '{', or bytes) or its path."""
        if isinstance(source, str) and source.lstrip().startswith("{"):
            data = source.encode("utf-8")
        elif isinstance(source, bytes):
            data = source
        else:
            data = Path(source).read_bytes()
        out = ffi.new("nxe_tokenizer **")
        check(lib.nxe_tokenizer_create(data, len(data), out))
        return cls(out[0])

    @classmethod
    def from_vocab(cls, path: str | os.PathLike, lowercase: bool = True,
                   max_input_chars_per_word: int = 100) -> Tokenizer:
        """From a BERT vocab.txt (one token a line) with BERT's normalizer and template."""
        data = Path(path).read_bytes()
        options = ffi.new("nxe_tokenizer_vocab_options *")
        options.struct_size = ffi.sizeof("nxe_tokenizer_vocab_options")
        options.lowercase = 1 if lowercase else 0
        options.max_input_chars_per_word = max_input_chars_per_word
        names = [ffi.new("char[]", t.encode()) for t in
                 ("[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]")]
        (options.unk_token, options.cls_token, options.sep_token, options.pad_token,
         options.mask_token) = names
        out = ffi.new("nxe_tokenizer **")
        check(lib.nxe_tokenizer_create_from_vocab(data, len(data), options, out))
        return cls(out[0])

    def token_to_id(self, token: str) -> int | None:
        """The id of a token (exact: added tokens, then the vocabulary, whose byte-level BPE
        tokens are spelled in the byte-level alphabet, e.g. "Ġthe"), None when neither has it."""
        found = lib.nxe_tokenizer_token_to_id(self._handle, token.encode("utf-8"))
        return None if found < 0 else found

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        """The text of token ids as `tokenizers`' decode gives it (invalid UTF-8 from partial
        byte-level tokens becomes U+FFFD); skip_special_tokens leaves out special added tokens.
        An id that names no token raises InvalidArgumentError."""
        values = np.asarray(ids)
        if values.ndim != 1 or (values.size and values.dtype.kind not in "iu"):
            raise InvalidArgumentError(
                f"nxe.Tokenizer.decode: ids must be a sequence of integers, not {ids!r:.80}")
        if values.size and (values.min() < -2**31 or values.max() >= 2**31):
            raise InvalidArgumentError("nxe.Tokenizer.decode: an id outside int32's range")
        array = np.ascontiguousarray(values, dtype=np.int32)
        pointer = ffi.from_buffer("int32_t[]", array) if array.size else ffi.NULL
        flags = lib.NXE_DECODE_SKIP_SPECIAL if skip_special_tokens else 0
        length = ffi.new("size_t *")
        capacity = 4 * 64 * int(array.size) + 64  # enough for nearly every text: one call
        while True:
            out = ffi.new("char[]", capacity)
            status = lib.nxe_tokenizer_decode(self._handle, pointer, array.size, flags, out,
                                              capacity, length)
            if status == lib.NXE_ERROR_BUFFER_TOO_SMALL and length[0] > capacity:
                capacity = length[0]
                continue
            check(status)
            return ffi.unpack(out, length[0]).decode("utf-8")

    def _options(self, add_special_tokens: bool, max_length: int | None, pad_to: int):
        if max_length is not None and (not isinstance(max_length, int) or max_length == 0
                                       or max_length < -1):
            raise InvalidArgumentError(
                f"nxe.Tokenizer: max_length must be None, -1 (no truncation) or positive, not "
                f"{max_length!r}")
        options = ffi.new("nxe_tokenizer_options *")
        options.struct_size = ffi.sizeof("nxe_tokenizer_options")
        options.add_special_tokens = 1 if add_special_tokens else 0
        options.max_length = 0 if max_length is None else max_length
        options.pad_to = pad_to
        return options

    @staticmethod
    def _take(encoding, data: bytes) -> Encoding:
        try:
            n = encoding.length
            offsets = np.frombuffer(ffi.buffer(encoding.offsets, 16 * n), dtype=np.int64)
            chars = _char_index(data)[offsets].reshape(n, 2) if n else offsets.reshape(0, 2)
            return Encoding(
                ids=list(ffi.unpack(encoding.ids, n)),
                attention_mask=list(ffi.unpack(encoding.attention_mask, n)),
                type_ids=list(ffi.unpack(encoding.type_ids, n)),
                special_tokens_mask=list(ffi.unpack(encoding.special_mask, n)),
                offsets=list(zip(chars[:, 0].tolist(), chars[:, 1].tolist())),
                num_tokens=encoding.num_tokens,
                truncated=encoding.truncated,
            )
        finally:
            lib.nxe_encoding_release(encoding)

    def encode(self, text: str | bytes, add_special_tokens: bool = True,
               max_length: int | None = None, padding: bool | str | int | None = None,
               ) -> Encoding:
        """Encodes one text. max_length: None for tokenizer.json's truncation, -1 for none, or
        the most tokens kept (specials included); padding: a length to pad to."""
        data = _utf8(text)
        options = self._options(add_special_tokens, max_length,
                                _padding(padding) if padding not in (True, "longest") else 0)
        out = ffi.new("nxe_encoding **")
        check(lib.nxe_tokenizer_encode(self._handle, data, len(data), options, out))
        return self._take(out[0], data)

    def encode_batch(self, texts: list[str | bytes], add_special_tokens: bool = True,
                     max_length: int | None = None, padding: bool | str | int | None = None,
                     ) -> list[Encoding]:
        """Encodes texts at once; padding True or 'longest' pads to the longest of them."""
        if isinstance(texts, (str, bytes)):
            raise TypeError("nxe.Tokenizer.encode_batch: texts must be a list, not one text")
        datas = [_utf8(t) for t in texts]
        options = self._options(add_special_tokens, max_length, _padding(padding))
        count = len(datas)
        buffers = [ffi.from_buffer(d) for d in datas]
        pointers = ffi.new("char *[]", buffers) if count else ffi.NULL
        sizes = ffi.new("size_t[]", [len(d) for d in datas]) if count else ffi.NULL
        out = ffi.new("nxe_encoding *[]", max(count, 1))
        check(lib.nxe_tokenizer_encode_batch(self._handle, pointers, sizes, count, options, out))
        return [self._take(out[i], datas[i]) for i in range(count)]
