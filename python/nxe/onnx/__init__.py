"""ONNX import: ``nxe.onnx.load(path)`` maps an ONNX model's nodes to nxe ops and runs it.

    model = nxe.onnx.load("model.onnx")
    outputs = model.run({"input": x})      # {output name: ndarray}

``nxe.onnx.InferenceSession`` (also ``nxe.InferenceSession``) runs the same models through an
onnxruntime-shaped API.
"""

from __future__ import annotations

try:
    import onnx  # noqa: F401 - only to name the extra when it is missing
except ModuleNotFoundError as error:
    if error.name != "onnx":
        raise
    raise ImportError("nxe.onnx needs the onnx package: pip install 'nxe[onnx]'") from error

from ._importer import ConversionContext, OnnxModel, load, unsupported_nodes
from .registry import converter
from .session import InferenceSession, IOBinding, NodeArg, SessionOptions

__all__ = ["ConversionContext", "IOBinding", "InferenceSession", "NodeArg", "OnnxModel",
           "SessionOptions", "converter", "load", "unsupported_nodes"]
