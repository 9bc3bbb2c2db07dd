"""A reader of CTranslate2's model file (model.bin), written from its documented layout; it
does not import ctranslate2.

All integers are little-endian. The file is:

    u32 binary_version                      (5 or 6 are read here)
    string spec_name                        ("WhisperSpec", ...)
    u32 spec_revision
    u32 num_variables
    num_variables times:
        string name                         ("encoder/conv1/weight", ...)
        u8 rank, then rank times u32 dim
        u8 dtype                            (0 float32, 1 int8, 2 int16, 3 int32, 4 float16,
                                             5 bfloat16)
        u32 num_bytes, then num_bytes of data (row-major)
    u32 num_aliases
    num_aliases times: string alias, string target (a variable's name)

where a string is a u16 length (NUL included) and that many bytes, the last being NUL.
Quantized weights (int8, int16) come with a float32 "<name>_scale" variable: the real weight
is the integer one divided by its scale (one scale per output row, or one for the tensor).

A model may be split into files read in order as one stream (model.bin.part1, part2, ...:
how the Whisper-base packages ship it); nothing is concatenated on disk. Every count, length
and size is checked against what is left in the stream before anything is allocated, so a
truncated or hostile file gives nxe.FormatError naming the problem and its offset.

    model = read_model_bin("whisper-base/")            # a folder, a file or a list of parts
    print(model.spec, model.revision, len(model.variables))
    weight = model.float32("encoder/conv1/weight")     # dequantized, float32
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .errors import FormatError, NotFoundError, UnsupportedError

BINARY_VERSIONS = (5, 6)
DTYPES = ("float32", "int8", "int16", "int32", "float16", "bfloat16")
_ITEM_SIZE = {"float32": 4, "int8": 1, "int16": 2, "int32": 4, "float16": 2, "bfloat16": 2}
MAX_RANK = 8
# A dimension or element count this large is not a model's (and would overflow the sizes
# other readers compute).
MAX_DIM = 1 << 31
MAX_ELEMENTS = 1 << 40
# The smallest variable record: a 2-byte length and 1-byte name, rank, dtype and u32 size.
_MIN_RECORD = 2 + 1 + 1 + 1 + 4
_MIN_ALIAS = 2 * (2 + 1)
# Names are paths of identifiers: letters, digits, '_', '.', '-' and '/'.
_NAME = re.compile(r"[A-Za-z0-9_./-]+")


@dataclass(frozen=True)
class Variable:
    """One variable: its name, shape, dtype (one of DTYPES), and where its data lies in the
    stream (``offset``, ``num_bytes``)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    offset: int
    num_bytes: int


class _Stream:
    """Several files read in order as one stream of bytes, with offsets counted from the
    start of the first."""

    def __init__(self, paths: Sequence[Path]) -> None:
        self.paths = list(paths)
        self.sizes = []
        for path in self.paths:
            try:
                self.sizes.append(path.stat().st_size)
            except FileNotFoundError:
                raise NotFoundError(f"'{path}' is missing") from None
            except OSError as error:
                raise FormatError(f"{path}: cannot read it: {error.strerror or error}") from None
        self.size = sum(self.sizes)
        self.position = 0

    def left(self) -> int:
        return self.size - self.position

    def read_into(self, offset: int, out: memoryview) -> None:
        """Fills ``out`` with the bytes at ``offset`` (which the caller checked are there)."""
        done = 0
        start = 0
        for path, size in zip(self.paths, self.sizes):
            end = start + size
            if offset + done < end and done < len(out):
                local = offset + done - start
                count = min(end - (offset + done), len(out) - done)
                try:
                    with open(path, "rb") as file:
                        file.seek(local)
                        got = file.readinto(out[done:done + count])
                except OSError as error:
                    raise FormatError(f"{path}: cannot read it: {error.strerror or error}"
                                      ) from None
                if got != count:
                    raise FormatError(f"{path}: the file changed while it was read (offset "
                                      f"{offset + done})")
                done += count
            start = end
        if done != len(out):
            raise FormatError(f"model.bin: {len(out) - done} bytes missing at offset "
                              f"{offset + done}")

    def take(self, count: int, what: str) -> bytes:
        if count > self.left():
            raise FormatError(f"model.bin is truncated: {what} needs {count} bytes at offset "
                              f"{self.position}, {self.left()} left")
        buffer = bytearray(count)
        self.read_into(self.position, memoryview(buffer))
        self.position += count
        return bytes(buffer)

    def u8(self, what: str) -> int:
        return self.take(1, what)[0]

    def u16(self, what: str) -> int:
        return int(struct.unpack("<H", self.take(2, what))[0])

    def u32(self, what: str) -> int:
        return int(struct.unpack("<I", self.take(4, what))[0])

    def string(self, what: str) -> str:
        at = self.position
        length = self.u16(f"the length of {what}")
        if length < 1:
            raise FormatError(f"model.bin: {what} at offset {at} has length 0 (no NUL)")
        raw = self.take(length, what)
        if raw[-1] != 0 or 0 in raw[:-1]:
            raise FormatError(f"model.bin: {what} at offset {at} is not one NUL-terminated "
                              "string")
        try:
            return raw[:-1].decode("utf-8")
        except UnicodeDecodeError:
            raise FormatError(f"model.bin: {what} at offset {at} is not UTF-8") from None


class CTranslate2Model:
    """What read_model_bin found: ``binary_version``, ``spec`` (the spec's name, e.g.
    "WhisperSpec"), ``revision``, ``variables`` (name -> Variable, in file order) and
    ``aliases`` (alias -> the name of the variable it stands for). Data is read on demand."""

    def __init__(self, stream: _Stream, binary_version: int, spec: str, revision: int,
                 variables: dict[str, Variable], aliases: dict[str, str]) -> None:
        self._stream = stream
        self.binary_version = binary_version
        self.spec = spec
        self.revision = revision
        self.variables = variables
        self.aliases = aliases

    @property
    def paths(self) -> list[Path]:
        """The files read, in order."""
        return list(self._stream.paths)

    def names(self) -> list[str]:
        """Variable names then alias names."""
        return list(self.variables) + list(self.aliases)

    def __contains__(self, name: object) -> bool:
        return name in self.variables or name in self.aliases

    def variable(self, name: str) -> Variable:
        """The variable ``name`` (an alias resolved); NotFoundError when there is none."""
        target = self.aliases.get(name, name)
        if target not in self.variables:
            raise NotFoundError(f"model.bin has no variable '{name}'")
        return self.variables[target]

    def array(self, name: str) -> np.ndarray:
        """The variable's data in its own dtype (bfloat16 widened to float32), a new array."""
        var = self.variable(name)
        buffer = np.empty(var.num_bytes, np.uint8)
        self._stream.read_into(var.offset, memoryview(buffer))
        if var.dtype == "bfloat16":
            bits = buffer.view("<u2").astype(np.uint32) << np.uint32(16)
            return bits.view(np.float32).reshape(var.shape)
        dtype = np.dtype(var.dtype).newbyteorder("<")
        return buffer.view(dtype).astype(np.dtype(var.dtype)).reshape(var.shape)

    def float32(self, name: str) -> np.ndarray:
        """The variable as float32 values: floats converted, int8/int16 weights divided by
        their "<name>_scale" (per row or one value), int32 and scale-less integers cast."""
        var = self.variable(name)
        data = self.array(name)
        if var.dtype not in ("int8", "int16"):
            return data.astype(np.float32)
        scale_name = f"{name}_scale"
        if scale_name not in self:
            return data.astype(np.float32)
        scale = self.array(scale_name).astype(np.float32)
        if scale.size == 1:
            scale = scale.reshape(())
        elif data.ndim >= 1 and scale.shape == (data.shape[0],):
            scale = scale.reshape((data.shape[0],) + (1,) * (data.ndim - 1))
        else:
            raise FormatError(f"model.bin: '{scale_name}' has shape {list(scale.shape)}, which "
                              f"does not scale '{name}' {list(data.shape)}")
        if not np.all(np.isfinite(scale)) or np.any(scale == 0):
            raise FormatError(f"model.bin: '{scale_name}' holds zero or non-finite scales")
        return (data.astype(np.float32) / scale).astype(np.float32)

    def scalar(self, name: str) -> float | int:
        """A rank-0 (or one-element) variable's value."""
        data = self.array(name)
        if data.size != 1:
            raise FormatError(f"model.bin: '{name}' has {data.size} values, not one")
        return data.reshape(()).item()


def model_bin_parts(source: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]
                    ) -> list[Path]:
    """The files making up a model: a folder's model.bin, else its model.bin.part1, part2, ...
    (consecutive, from 1); a file as it is; a list of files in its order."""
    if not isinstance(source, (str, os.PathLike)):
        parts = [Path(p) for p in source]
        if not parts:
            raise NotFoundError("no model.bin files given")
        return parts
    path = Path(source)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise NotFoundError(f"no such file or folder: '{path}'")
    if (path / "model.bin").is_file():
        return [path / "model.bin"]
    parts = []
    while (path / f"model.bin.part{len(parts) + 1}").is_file():
        parts.append(path / f"model.bin.part{len(parts) + 1}")
    if not parts:
        raise NotFoundError(f"'{path}' has no model.bin (nor model.bin.part1, ...)")
    if any(path.glob("model.bin.part*")) and len(list(path.glob("model.bin.part*"))) != len(
            parts):
        raise FormatError(f"'{path}': the model.bin.partN files are not numbered 1, 2, ... "
                          "without a gap")
    return parts


def read_model_bin(source: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]
                   ) -> CTranslate2Model:
    """Reads the header, the variable table and the aliases of a CTranslate2 model (see the
    module's docstring for what ``source`` may be). The data is not read until asked for.

    Raises nxe.FormatError for a malformed file (truncated, a bad dtype, rank, dimension,
    size or name, duplicate names, an alias to nothing, bytes left over), nxe.UnsupportedError
    for another binary version, nxe.NotFoundError for missing files."""
    stream = _Stream(model_bin_parts(source))
    version = stream.u32("the binary version")
    if version not in BINARY_VERSIONS:
        raise UnsupportedError(f"model.bin has binary version {version}; nxe reads versions "
                               f"{', '.join(map(str, BINARY_VERSIONS))}")
    spec = stream.string("the spec name")
    revision = stream.u32("the spec revision")
    at = stream.position
    count = stream.u32("the number of variables")
    if count > stream.left() // _MIN_RECORD:
        raise FormatError(f"model.bin: {count} variables (offset {at}) cannot fit in the "
                          f"{stream.left()} bytes left")
    variables: dict[str, Variable] = {}
    for index in range(count):
        at = stream.position
        name = stream.string(f"the name of variable {index}")
        if not _NAME.fullmatch(name):
            raise FormatError(f"model.bin: variable {index} at offset {at} has the name "
                              f"{name[:80]!r}, not a variable path")
        if name in variables:
            raise FormatError(f"model.bin: variable '{name}' at offset {at} appears twice")
        rank = stream.u8(f"the rank of '{name}'")
        if rank > MAX_RANK:
            raise FormatError(f"model.bin: '{name}' (offset {at}) has rank {rank}, more than "
                              f"{MAX_RANK}")
        shape = tuple(stream.u32(f"dimension {d} of '{name}'") for d in range(rank))
        elements = 1
        for dim in shape:
            if dim >= MAX_DIM:
                raise FormatError(f"model.bin: '{name}' (offset {at}) has dimension {dim}")
            elements *= dim
        if elements > MAX_ELEMENTS:
            raise FormatError(f"model.bin: '{name}' (offset {at}) has {elements} elements")
        code_at = stream.position
        code = stream.u8(f"the dtype of '{name}'")
        if code >= len(DTYPES):
            raise FormatError(f"model.bin: '{name}' has dtype code {code} at offset {code_at} "
                              f"(known: 0..{len(DTYPES) - 1})")
        dtype = DTYPES[code]
        size_at = stream.position
        num_bytes = stream.u32(f"the size of '{name}'")
        if num_bytes != elements * _ITEM_SIZE[dtype]:
            raise FormatError(f"model.bin: '{name}' {list(shape)} {dtype} needs "
                              f"{elements * _ITEM_SIZE[dtype]} bytes, the file says "
                              f"{num_bytes} (offset {size_at})")
        if num_bytes > stream.left():
            raise FormatError(f"model.bin is truncated: '{name}' needs {num_bytes} bytes at "
                              f"offset {stream.position}, {stream.left()} left")
        variables[name] = Variable(name, shape, dtype, stream.position, num_bytes)
        stream.position += num_bytes
    at = stream.position
    count = stream.u32("the number of aliases")
    if count > stream.left() // _MIN_ALIAS:
        raise FormatError(f"model.bin: {count} aliases (offset {at}) cannot fit in the "
                          f"{stream.left()} bytes left")
    aliases: dict[str, str] = {}
    for index in range(count):
        at = stream.position
        alias = stream.string(f"alias {index}")
        target = stream.string(f"the target of alias {index}")
        if not _NAME.fullmatch(alias) or alias in variables or alias in aliases:
            raise FormatError(f"model.bin: alias {alias[:80]!r} at offset {at} is not a new "
                              "variable path")
        if target not in variables:
            raise FormatError(f"model.bin: alias '{alias}' at offset {at} names "
                              f"{target[:80]!r}, which is no variable")
        aliases[alias] = target
    if stream.left():
        raise FormatError(f"model.bin: {stream.left()} bytes after the aliases (offset "
                          f"{stream.position})")
    return CTranslate2Model(stream, version, spec, revision, variables, aliases)


# -- Whisper -------------------------------------------------------------------------------

# CTranslate2's Activation enum value of exact (erf) GELU.
_GELU = 3


def _layer_count(model: CTranslate2Model, prefix: str) -> int:
    count = 0
    while f"{prefix}/layer_{count}/ffn/linear_0/weight" in model:
        count += 1
    return count


def whisper_weights(model: CTranslate2Model) -> tuple[Any, dict[str, np.ndarray]]:
    """The WhisperConfig and the float32 weights (named as nxe.models.whisper names them,
    Hugging Face's WhisperModel names) of a CTranslate2 "WhisperSpec" model. The fused
    projections are split: self_attention/linear_0 [3d, d] into q, k, v; the decoder's
    cross-attention (attention/) linear_1 [2d, d] into k, v. Keys have no bias in Whisper:
    the converter's zero key biases are dropped (a key bias adds one constant per query to
    every score, which softmax removes). The output projection must be the token embedding
    (CTranslate2 stores it as an alias).

    Raises nxe.UnsupportedError for another spec or settings Whisper does not have,
    nxe.FormatError for missing or misshapen variables."""
    from .models.whisper import WhisperConfig, whisper_weight_specs

    if model.spec != "WhisperSpec":
        raise UnsupportedError(f"model.bin holds a {model.spec!r}, not a WhisperSpec")

    def flag(name: str, expected: int) -> None:
        if name in model and int(model.scalar(name)) != expected:
            raise UnsupportedError(f"model.bin: '{name}' is {model.scalar(name)}, nxe's "
                                   f"Whisper needs {expected}")

    flag("decoder/activation", _GELU)
    flag("decoder/pre_norm", 1)
    flag("decoder/scale_embeddings", 0)
    flag("decoder/alibi", 0)
    for name in ("encoder/conv1/weight", "encoder/position_encodings/encodings",
                 "decoder/embeddings/weight", "decoder/position_encodings/encodings",
                 "encoder/num_heads", "decoder/num_heads"):
        if name not in model:
            raise FormatError(f"model.bin: '{name}' is missing: not a Whisper model")
    conv1 = model.variable("encoder/conv1/weight").shape
    audio_positions = model.variable("encoder/position_encodings/encodings").shape
    embeddings = model.variable("decoder/embeddings/weight").shape
    text_positions = model.variable("decoder/position_encodings/encodings").shape
    if len(conv1) != 3 or len(audio_positions) != 2 or len(embeddings) != 2 or len(
            text_positions) != 2:
        raise FormatError("model.bin: the convolution, embedding or position tables have the "
                          "wrong rank")
    try:
        config = WhisperConfig(
            n_mels=conv1[1], n_audio_ctx=audio_positions[0], n_audio_state=audio_positions[1],
            n_audio_head=int(model.scalar("encoder/num_heads")),
            n_audio_layer=_layer_count(model, "encoder"), n_vocab=embeddings[0],
            n_text_ctx=text_positions[0], n_text_state=embeddings[1],
            n_text_head=int(model.scalar("decoder/num_heads")),
            n_text_layer=_layer_count(model, "decoder"))
    except ValueError as error:
        raise FormatError(f"model.bin: not a valid Whisper configuration: {error}") from None
    if "decoder/projection/weight" in model and model.aliases.get(
            "decoder/projection/weight") != "decoder/embeddings/weight":
        projection = model.float32("decoder/projection/weight")
        if not np.array_equal(projection, model.float32("decoder/embeddings/weight")):
            raise UnsupportedError("model.bin: the output projection is not the token "
                                   "embedding (Whisper ties them)")

    weights: dict[str, np.ndarray] = {}

    def get(name: str) -> np.ndarray:
        if name not in model:
            raise FormatError(f"model.bin: '{name}' is missing")
        return model.float32(name)

    def linear(source: str, target: str, bias: bool = True) -> None:
        weights[f"{target}.weight"] = get(f"{source}/weight")
        if bias:
            weights[f"{target}.bias"] = get(f"{source}/bias")

    def norm(source: str, target: str) -> None:
        weights[f"{target}.weight"] = get(f"{source}/gamma")
        weights[f"{target}.bias"] = get(f"{source}/beta")

    def split(source: str, targets: Sequence[str]) -> None:
        weight, bias = get(f"{source}/weight"), get(f"{source}/bias")
        n = len(targets)
        if weight.ndim != 2 or weight.shape[0] % n or bias.shape != (weight.shape[0],):
            raise FormatError(f"model.bin: '{source}' {list(weight.shape)} is not {n} fused "
                              "projections")
        size = weight.shape[0] // n
        for index, target in enumerate(targets):
            weights[f"{target}.weight"] = weight[index * size:(index + 1) * size].copy()
            if not target.endswith("k_proj"):
                weights[f"{target}.bias"] = bias[index * size:(index + 1) * size].copy()

    def ffn(source: str, target: str) -> None:
        linear(f"{source}/ffn/linear_0", f"{target}.fc1")
        linear(f"{source}/ffn/linear_1", f"{target}.fc2")
        norm(f"{source}/ffn/layer_norm", f"{target}.final_layer_norm")

    for name in ("conv1", "conv2"):
        linear(f"encoder/{name}", f"encoder.{name}")
    weights["encoder.embed_positions.weight"] = get("encoder/position_encodings/encodings")
    for i in range(config.n_audio_layer):
        source, target = f"encoder/layer_{i}", f"encoder.layers.{i}"
        split(f"{source}/self_attention/linear_0",
              [f"{target}.self_attn.{p}_proj" for p in "qkv"])
        linear(f"{source}/self_attention/linear_1", f"{target}.self_attn.out_proj")
        norm(f"{source}/self_attention/layer_norm", f"{target}.self_attn_layer_norm")
        ffn(source, target)
    norm("encoder/layer_norm", "encoder.layer_norm")
    weights["decoder.embed_tokens.weight"] = get("decoder/embeddings/weight")
    weights["decoder.embed_positions.weight"] = get("decoder/position_encodings/encodings")
    for i in range(config.n_text_layer):
        source, target = f"decoder/layer_{i}", f"decoder.layers.{i}"
        split(f"{source}/self_attention/linear_0",
              [f"{target}.self_attn.{p}_proj" for p in "qkv"])
        linear(f"{source}/self_attention/linear_1", f"{target}.self_attn.out_proj")
        norm(f"{source}/self_attention/layer_norm", f"{target}.self_attn_layer_norm")
        linear(f"{source}/attention/linear_0", f"{target}.encoder_attn.q_proj")
        split(f"{source}/attention/linear_1",
              [f"{target}.encoder_attn.k_proj", f"{target}.encoder_attn.v_proj"])
        linear(f"{source}/attention/linear_2", f"{target}.encoder_attn.out_proj")
        norm(f"{source}/attention/layer_norm", f"{target}.encoder_attn_layer_norm")
        ffn(source, target)
    norm("decoder/layer_norm", "decoder.layer_norm")
    for spec in whisper_weight_specs(config):
        if spec.name not in weights:
            raise FormatError(f"model.bin: nothing gives the weight {spec.name}")
        if weights[spec.name].shape != spec.shape:
            raise FormatError(f"model.bin: {spec.name} has shape "
                              f"{list(weights[spec.name].shape)}, expected {list(spec.shape)}")
        if not np.all(np.isfinite(weights[spec.name])):
            raise FormatError(f"model.bin: {spec.name} holds non-finite values")
    return config, weights


__all__ = ["BINARY_VERSIONS", "DTYPES", "CTranslate2Model", "Variable", "model_bin_parts",
           "read_model_bin", "whisper_weights"]
