"""nxe dtypes on the Python side: names, C codes and the numpy dtype an array of each has.

bf16 has no numpy dtype of its own: its arrays are np.uint16 holding the raw bits. Since
API 0.2 np.uint16 names u16; bf16 is named "bf16" or given as ml_dtypes.bfloat16 (when that
package is installed).
"""

from __future__ import annotations

import numpy as np

from ._binding import lib

# name, C code, numpy dtype
_TABLE = (
    ("f32", lib.NXE_DTYPE_F32, np.dtype(np.float32)),
    ("f16", lib.NXE_DTYPE_F16, np.dtype(np.float16)),
    ("bf16", lib.NXE_DTYPE_BF16, np.dtype(np.uint16)),
    ("i8", lib.NXE_DTYPE_I8, np.dtype(np.int8)),
    ("u8", lib.NXE_DTYPE_U8, np.dtype(np.uint8)),
    ("i16", lib.NXE_DTYPE_I16, np.dtype(np.int16)),
    ("i32", lib.NXE_DTYPE_I32, np.dtype(np.int32)),
    ("i64", lib.NXE_DTYPE_I64, np.dtype(np.int64)),
    ("bool", lib.NXE_DTYPE_BOOL, np.dtype(np.bool_)),
    ("f64", lib.NXE_DTYPE_F64, np.dtype(np.float64)),
    ("u16", lib.NXE_DTYPE_U16, np.dtype(np.uint16)),
    ("u32", lib.NXE_DTYPE_U32, np.dtype(np.uint32)),
    ("u64", lib.NXE_DTYPE_U64, np.dtype(np.uint64)),
)

NAMES = tuple(name for name, _, _ in _TABLE)
_CODE_BY_NAME = {name: code for name, code, _ in _TABLE}
_NAME_BY_CODE = {code: name for name, code, _ in _TABLE}
_NUMPY_BY_CODE = {code: dt for _, code, dt in _TABLE}
# np.uint16 is u16 (the later entry wins over bf16's raw bits).
_CODE_BY_NUMPY = {dt: code for _, code, dt in _TABLE}
try:
    import ml_dtypes

    BFLOAT16: np.dtype | None = np.dtype(ml_dtypes.bfloat16)
    _CODE_BY_NUMPY[BFLOAT16] = lib.NXE_DTYPE_BF16
except ImportError:  # optional: bf16 then only by name
    BFLOAT16 = None


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
    raise TypeError(f"{dtype!r} is not an nxe dtype; use one of {', '.join(NAMES)} "
                    "or the matching numpy dtype")


def name_of(code: int) -> str | None:
    """nxe name of a C dtype code; None for NXE_DTYPE_NONE (not yet inferred)."""
    return _NAME_BY_CODE.get(code)


def numpy_of(code: int) -> np.dtype:
    return _NUMPY_BY_CODE[code]
