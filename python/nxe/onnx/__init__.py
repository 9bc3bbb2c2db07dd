"""ONNX import: ``nxe.onnx.load(path)`` maps an ONNX model's nodes to nxe ops and runs it.

    model = nxe.onnx.load("model.onnx")
    outputs = model.run({"input": x})      # {output name: ndarray}
"""

from __future__ import annotations

from ._importer import ConversionContext, OnnxModel, load, unsupported_nodes
from .registry import converter

__all__ = ["ConversionContext", "OnnxModel", "converter", "load", "unsupported_nodes"]
