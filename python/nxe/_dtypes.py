"""nxe dtypes on the Python side: names, C codes and the numpy dtype an array of each has.

The table is the library's: every code below NXE_DTYPE_COUNT is asked for its name
(nxe_dtype_info) and its DLPack kind and width (nxe_dtype_to_dlpack), from which the numpy
dtype follows. bf16 has no numpy dtype of its own: its arrays are np.uint16 holding the raw
bits. Since API 0.2 np.uint16 names u16; bf16 is named "bf16" or given as ml_dtypes.bfloat16
(when that package is installed).
"""

from __future__ import annotations

import sys
from functools import cache
from typing import Any

import numpy as np

from ._binding import check, ffi, lib

# numpy kind of each DLPack type code; bfloat has none, so its arrays hold the raw bits.
_NUMPY_KIND = {lib.NXE_DL_INT: "i", lib.NXE_DL_UINT: "u", lib.NXE_DL_FLOAT: "f",
               lib.NXE_DL_BFLOAT: "u", lib.NXE_DL_BOOL: "b"}


def _c_table() -> tuple[tuple[str, int, np.dtype, bool], ...]:
    """(name, C code, numpy dtype, whether numpy holds raw bits) of every dtype the library
    knows, in code order."""
    name = ffi.new("const char **")
    size = ffi.new("int32_t *")
    dl_code = ffi.new("int32_t *")
    bits = ffi.new("int32_t *")
    table = []
    for code in range(lib.NXE_DTYPE_NONE + 1, lib.NXE_DTYPE_COUNT):
        check(lib.nxe_dtype_info(code, name, size))
        check(lib.nxe_dtype_to_dlpack(code, dl_code, bits))
        numpy_dtype = np.dtype(f"{_NUMPY_KIND[dl_code[0]]}{size[0]}")
        table.append((ffi.string(name[0]).decode(), code, numpy_dtype,
                      dl_code[0] == lib.NXE_DL_BFLOAT))
    return tuple(table)


_TABLE = _c_table()

NAMES = tuple(name for name, _, _, _ in _TABLE)
_CODE_BY_NAME = {name: code for name, code, _, _ in _TABLE}
_NAME_BY_CODE = {code: name for name, code, _, _ in _TABLE}
_NUMPY_BY_CODE = {code: dt for _, code, dt, _ in _TABLE}
# A numpy dtype names the dtype whose values it holds, never one whose raw bits it carries
# (np.uint16 is u16, not bf16).
_CODE_BY_NUMPY = {dt: code for _, code, dt, raw_bits in _TABLE if not raw_bits}


@cache
def _bfloat16() -> np.dtype | None:
    """ml_dtypes.bfloat16 when that package is installed (optional: bf16 is then only a name).
    Imported at first need, not with nxe: loading ml_dtypes takes about a second."""
    try:
        import ml_dtypes
    except ImportError:
        return None
    return np.dtype(ml_dtypes.bfloat16)


def __getattr__(name: str) -> Any:
    # BFLOAT16 is looked up on first use, so that importing nxe does not import ml_dtypes.
    if name == "BFLOAT16":
        return _bfloat16()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def code_of(dtype: str | np.dtype | type) -> int:
    """C code of a dtype given as an nxe name ("f32") or a numpy dtype (np.uint16 means u16,
    ml_dtypes.bfloat16 means bf16)."""
    if isinstance(dtype, str) and dtype in _CODE_BY_NAME:
        return _CODE_BY_NAME[dtype]
    try:
        numpy_dtype = np.dtype(dtype)
    except TypeError:
        numpy_dtype = None
    if numpy_dtype is not None and numpy_dtype in _CODE_BY_NUMPY:
        return _CODE_BY_NUMPY[numpy_dtype]
    # A bfloat16 dtype can only exist once ml_dtypes is imported, so only then is it asked for.
    if numpy_dtype is not None and "ml_dtypes" in sys.modules and numpy_dtype == _bfloat16():
        return lib.NXE_DTYPE_BF16
    raise TypeError(f"{dtype!r} is not an nxe dtype; use one of {', '.join(NAMES)} "
                    "or the matching numpy dtype")


def name_of(code: int) -> str | None:
    """nxe name of a C dtype code; None for NXE_DTYPE_NONE (not yet inferred)."""
    return _NAME_BY_CODE.get(code)


def numpy_of(code: int) -> np.dtype:
    return _NUMPY_BY_CODE[code]
