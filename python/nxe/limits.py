"""nxe.Limits: what compiling a graph, loading a binary or opening a model file may take
(the C library's nxe_limits), so that hostile or careless input fails with an nxe.Error
instead of exhausting the process."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

from ._binding import ffi, lib


@dataclass(frozen=True)
class Limits:
    """Each field 0 means the library's default: 1 TiB per tensor
    (``max_tensor_bytes``; beyond it ShapeMismatchError), 4 TiB for one run's arena plus
    staging (``max_arena_bytes``; OutOfMemoryError), 4 TiB per file or bytes image opened
    (``max_file_bytes``; InvalidArgumentError) and 2**24 ops per graph (``max_ops``;
    InvalidGraphError). Each error names the limit and the field that raises it."""

    max_tensor_bytes: int = 0
    max_arena_bytes: int = 0
    max_file_bytes: int = 0
    max_ops: int = 0

    DEFAULT_MAX_TENSOR_BYTES = lib.NXE_DEFAULT_MAX_TENSOR_BYTES
    DEFAULT_MAX_ARENA_BYTES = lib.NXE_DEFAULT_MAX_ARENA_BYTES
    DEFAULT_MAX_FILE_BYTES = lib.NXE_DEFAULT_MAX_FILE_BYTES
    DEFAULT_MAX_OPS = lib.NXE_DEFAULT_MAX_OPS


def c_limits(limits: Limits | None) -> Any:
    """An nxe_limits for an options struct (ffi.NULL for None); the caller keeps the returned
    object alive for as long as the options are used."""
    if limits is None:
        return ffi.NULL
    if not isinstance(limits, Limits):
        raise TypeError(f"limits: expected nxe.Limits, got {type(limits).__name__}")
    out = ffi.new("nxe_limits *")
    out.struct_size = ffi.sizeof("nxe_limits")
    for field in ("max_tensor_bytes", "max_arena_bytes", "max_file_bytes", "max_ops"):
        value = operator.index(getattr(limits, field))
        if value < 0:
            raise ValueError(f"limits.{field} is negative: {value}")
        setattr(out, field, value)
    return out
