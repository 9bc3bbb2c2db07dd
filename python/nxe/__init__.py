"""nxe: an embeddable neural-network inference engine. This package binds its C library.

    g = nxe.Graph()
    x = g.input("x", (2, 3), "f32")
    y = g.Relu(x)
    g.mark_output(y)
    out = g.compile().run({"x": x_value})
"""

from __future__ import annotations

from ._binding import ffi, lib
from ._dtypes import NAMES as DTYPES
from .cpu import cpu_info
from .custom_ops import Context, default_context, register_composed_op, register_op
from .device import Device, cpu_set, device, devices
from .errors import (
    BufferTooSmallError,
    BusyError,
    CancelledError,
    DeadlineError,
    DtypeMismatchError,
    Error,
    FormatError,
    InternalError,
    InvalidArgumentError,
    InvalidGraphError,
    InvalidStateError,
    IoError,
    NotFoundError,
    OutOfMemoryError,
    RunError,
    ShapeMismatchError,
    UnsupportedError,
)
from .executable import Executable
from .graph import Graph, Tensor
from .iobinding import IoBinding
from .limits import Limits
from .log import set_log_callback
from .model import Model, save_model
from .registry import ops
from .vm import VirtualMachine

# The engine's names, from nxe.engine on first use: a program that never makes an Engine does
# not pay for its import.
_ENGINE_NAMES = ("ApplyReport", "Engine", "EngineStats", "ModelInfo", "ModelSpec", "Request",
                 "RequestTiming")


def __getattr__(name: str) -> object:
    from importlib import import_module

    if name in _ENGINE_NAMES:
        return getattr(import_module(".engine", __name__), name)
    if name == "RemoteDevice":  # needs the optional grpcio (the `remote` extra)
        return import_module(".remote", __name__).RemoteDevice
    if name == "Embedder":
        return import_module(".embedder", __name__).Embedder
    if name in ("Transcriber", "Transcription", "Segment"):
        return getattr(import_module(".transcriber", __name__), name)
    if name in ("Tokenizer", "Encoding"):
        return getattr(import_module(".tokenizer", __name__), name)
    # nxe.onnx needs the optional onnx package and takes long to import: loaded on first use.
    # Its names stay out of __all__ so that `from nxe import *` works without onnx.
    if name in ("onnx", "InferenceSession", "SessionOptions"):
        module = import_module(".onnx", __name__)
        return module if name == "onnx" else getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def version() -> str:
    """Version of the loaded library, "MAJOR.MINOR.PATCH"."""
    return ffi.string(lib.nxe_version_string()).decode()


def api_version() -> tuple[int, int]:
    """(major, minor) API version of the loaded library."""
    packed = lib.nxe_api_version()
    return packed >> 16, packed & 0xFFFF


__version__ = version()

__all__ = [
    "DTYPES",
    "ApplyReport",
    "BufferTooSmallError",
    "BusyError",
    "CancelledError",
    "Context",
    "DeadlineError",
    "Device",
    "DtypeMismatchError",
    "Embedder",
    "Encoding",
    "Engine",
    "EngineStats",
    "Error",
    "Executable",
    "FormatError",
    "Graph",
    "InternalError",
    "InvalidArgumentError",
    "InvalidGraphError",
    "InvalidStateError",
    "IoBinding",
    "IoError",
    "Limits",
    "Model",
    "ModelInfo",
    "ModelSpec",
    "NotFoundError",
    "OutOfMemoryError",
    "Request",
    "RequestTiming",
    "RunError",
    "Segment",
    "ShapeMismatchError",
    "Tensor",
    "Tokenizer",
    "Transcriber",
    "Transcription",
    "UnsupportedError",
    "VirtualMachine",
    "api_version",
    "cpu_info",
    "default_context",
    "cpu_set",
    "device",
    "devices",
    "ops",
    "register_composed_op",
    "register_op",
    "save_model",
    "set_log_callback",
    "version",
]
