"""Opens the libnxe.so bundled in this package with cffi (ABI mode) and checks that it is
the library these declarations were generated for. check() (sr_check() for libnxe_sr, which
keeps its own last-error message) is the one path from a C status to a Python exception.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ._cdef import FUNCTIONS
from ._ffi import ffi
from .errors import error_for_status

PACKAGE_DIR = Path(__file__).resolve().parent
LIB_DIR = PACKAGE_DIR / "lib"
INCLUDE_DIR = PACKAGE_DIR / "include"
PKGCONFIG_DIR = LIB_DIR / "pkgconfig"

_SUFFIX = ".dylib" if sys.platform == "darwin" else ".so"
LIBRARY_PATH = LIB_DIR / f"libnxe{_SUFFIX}"
SR_LIBRARY_PATH = LIB_DIR / f"libnxe_sr{_SUFFIX}"
# NXE_LIBRARY points the package at another build of the same version (the sanitizer build
# the test run uses); the version and layout checks below still apply to it.
LIBRARY_PATH = Path(os.environ.get("NXE_LIBRARY") or LIBRARY_PATH)

TENSOR_DESC_SIZE = 80

if not LIBRARY_PATH.is_file():
    raise ImportError(f"nxe: the bundled library {LIBRARY_PATH} is missing; reinstall the package")
# An absolute path: the loader never searches LD_LIBRARY_PATH or the system for it.
lib = ffi.dlopen(str(LIBRARY_PATH))
# cffi resolves a symbol on first use under the lock it also holds while parsing a type; a
# finaliser resolving one while a parse runs the garbage collector would deadlock.
# libnxe exports both tiers of its ABI, nxe.h's stable functions and nxe_experimental.h's, the
# tokenizer's and the audio frontend's.
for _header in ("nxe.h", "nxe_experimental.h", "nxe_tokenizer.h", "nxe_audio.h"):
    for _name in FUNCTIONS[_header]:
        getattr(lib, _name)

if ffi.sizeof("nxe_tensor_desc") != TENSOR_DESC_SIZE:
    raise ImportError(
        f"nxe: nxe_tensor_desc is {ffi.sizeof('nxe_tensor_desc')} bytes in these declarations, "
        f"but the ABI fixes it at {TENSOR_DESC_SIZE}; the binding was generated wrongly"
    )

_loaded_major = lib.nxe_api_version() >> 16
if _loaded_major != lib.NXE_API_VERSION_MAJOR:
    raise ImportError(
        f"nxe: {LIBRARY_PATH} has API major version {_loaded_major}, but this package was built "
        f"for {lib.NXE_API_VERSION_MAJOR}"
    )


def last_error() -> str:
    return ffi.string(lib.nxe_last_error()).decode("utf-8", "replace")


def check(status: int) -> None:
    """Raises the nxe.Error subclass for a failed status, carrying nxe_last_error()."""
    if status != lib.NXE_OK:
        raise error_for_status(status, last_error())


def text(pointer) -> str | None:
    """A C string owned by the library as str (None for NULL)."""
    if pointer == ffi.NULL:
        return None
    return ffi.string(pointer).decode("utf-8", "replace")


_sr_lib = None


def sr_library():
    """libnxe_sr, opened on first use (NXE_SR_LIBRARY overrides its path as NXE_LIBRARY does
    libnxe's); it links the libnxe already open here."""
    global _sr_lib
    if _sr_lib is None:
        path = Path(os.environ.get("NXE_SR_LIBRARY") or SR_LIBRARY_PATH)
        if not path.is_file():
            raise ImportError(f"nxe: the bundled library {path} is missing; reinstall the package")
        library = ffi.dlopen(str(path))
        for name in FUNCTIONS["nxe_sr.h"]:
            getattr(library, name)
        if library.nxe_sr_api_version() >> 16 != lib.NXE_SR_API_VERSION_MAJOR:
            raise ImportError(f"nxe: {path} has another SR API major version than this package")
        _sr_lib = library
    return _sr_lib


def sr_check(status: int) -> None:
    """check() for a libnxe_sr call: the message is nxe_sr_last_error()'s."""
    if status != lib.NXE_OK:
        raise error_for_status(status, text(sr_library().nxe_sr_last_error()) or "")
