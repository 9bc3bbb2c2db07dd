"""A reader of the safetensors format (Hugging Face's weight files), in numpy, that trusts
nothing in the file.

The format: an 8-byte little-endian header length N, N bytes of JSON (an object mapping each
tensor's name to {"dtype", "shape", "data_offsets": [begin, end]}, offsets relative to the
byte after the header, plus an optional "__metadata__" object of strings), then the data.
``read_safetensors`` checks the header length against the file, the JSON, every entry's dtype,
shape and offsets (inside the data, the byte count the shape and dtype give, no two tensors
overlapping) before it makes any array; each array is a read-only view of the mapped file
(f32), or a float32 copy converted from F16 or BF16. Every failure is an nxe.FormatError
naming the file and what is wrong with it.
"""

from __future__ import annotations

import json
import mmap
import os
from typing import Any

import numpy as np

from .errors import FormatError, IoError

# The header may not be larger than this (the format's own readers refuse headers over
# 100 MB); a real model's header is a few hundred kilobytes.
MAX_HEADER_BYTES = 100 * 1000 * 1000

# The dtypes weights come in. Integer tensors (BERT checkpoints carry an I64 "position_ids"
# buffer) are validated the same way but not converted: the reader returns them as they are.
_FLOAT_DTYPES = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": np.dtype("<u2")}
_OTHER_DTYPES = {"F64": np.dtype("<f8"), "I64": np.dtype("<i8"), "I32": np.dtype("<i4"),
                 "I16": np.dtype("<i2"), "I8": np.dtype("i1"), "U8": np.dtype("u1"),
                 "BOOL": np.dtype("?")}


def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    """bf16 values given as uint16 bits, widened exactly to float32."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _problem(path: str, words: str) -> FormatError:
    return FormatError(f"{path}: not a valid safetensors file: {words}")


def _check_entry(path: str, name: str, entry: Any, data_size: int) -> tuple[np.dtype, str,
                                                                              tuple[int, ...],
                                                                              int, int]:
    if not isinstance(entry, dict):
        raise _problem(path, f"the entry of tensor {name!r} is not a JSON object")
    unknown = sorted(set(entry) - {"dtype", "shape", "data_offsets"})
    if unknown or len(entry) != 3:
        raise _problem(path, f"tensor {name!r} must have exactly dtype, shape and data_offsets"
                       f" (has {sorted(entry)})")
    kind = entry["dtype"]
    if not isinstance(kind, str) or kind not in {**_FLOAT_DTYPES, **_OTHER_DTYPES}:
        raise _problem(path, f"tensor {name!r} has unsupported dtype {kind!r} (weights must be "
                       "F32, F16 or BF16)")
    dtype = {**_FLOAT_DTYPES, **_OTHER_DTYPES}[kind]
    shape = entry["shape"]
    if (not isinstance(shape, list) or len(shape) > 8
            or not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**40
                       for d in shape)):
        raise _problem(path, f"tensor {name!r} has an invalid shape {shape!r}")
    offsets = entry["data_offsets"]
    if (not isinstance(offsets, list) or len(offsets) != 2
            or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)):
        raise _problem(path, f"tensor {name!r} has invalid data_offsets {offsets!r}")
    begin, end = offsets
    if not 0 <= begin <= end <= data_size:
        raise _problem(path, f"tensor {name!r}: data_offsets [{begin}, {end}] are outside the "
                       f"{data_size} data bytes after the header")
    count = 1
    for d in shape:
        count *= d
    if count * dtype.itemsize != end - begin:
        raise _problem(path, f"tensor {name!r}: shape {shape} of {kind} needs "
                       f"{count * dtype.itemsize} bytes, data_offsets give {end - begin}")
    return dtype, kind, tuple(shape), begin, end


def read_safetensors(path: str | os.PathLike[str]) -> tuple[dict[str, np.ndarray],
                                                            dict[str, str]]:
    """The tensors of a .safetensors file by name (F32 as read-only views of the mapped file,
    F16 and BF16 converted to float32, other dtypes as stored) and its "__metadata__"
    strings. Raises nxe.FormatError for a malformed file, nxe.IoError for an unreadable one."""
    where = os.fspath(path)
    try:
        with open(where, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            if size < 8:
                raise _problem(where, f"the file has {size} bytes, fewer than the 8-byte "
                               "header length")
            # An empty mapping is not allowed; size >= 8 here.
            mapped = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as error:
        raise IoError(f"{where}: cannot read: {error.strerror or error}") from None
    header_size = int.from_bytes(mapped[:8], "little")
    if header_size < 2 or header_size > min(MAX_HEADER_BYTES, size - 8):
        raise _problem(where, f"the header length {header_size} does not fit the file "
                       f"({size} bytes; at most {MAX_HEADER_BYTES} header bytes)")
    try:
        header = json.loads(bytes(mapped[8:8 + header_size]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise _problem(where, f"the header is not valid JSON: {error}") from None
    if not isinstance(header, dict):
        raise _problem(where, f"the header is JSON {type(header).__name__}, not an object")
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                 for k, v in metadata.items()):
        raise _problem(where, "__metadata__ must be an object of strings")
    data_start = 8 + header_size
    data_size = size - data_start
    entries = {name: _check_entry(where, name, entry, data_size)
               for name, entry in header.items()}
    spans = sorted((begin, end, name) for name, (_, _, _, begin, end) in entries.items()
                   if end > begin)
    for (_, end_a, name_a), (begin_b, _, name_b) in zip(spans, spans[1:]):
        if begin_b < end_a:
            raise _problem(where, f"tensors {name_a!r} and {name_b!r} overlap")
    tensors: dict[str, np.ndarray] = {}
    for name, (dtype, kind, shape, begin, end) in entries.items():
        count = (end - begin) // dtype.itemsize
        array = np.frombuffer(mapped, dtype=dtype, count=count,
                              offset=data_start + begin).reshape(shape)
        if kind == "F16":
            array = array.astype(np.float32)
        elif kind == "BF16":
            array = bf16_to_f32(array)
        tensors[name] = array
    return tensors, dict(metadata)


__all__ = ["MAX_HEADER_BYTES", "bf16_to_f32", "read_safetensors"]
