"""What the ONNX import tests share: value infos for hand-built graphs, and onnxruntime's
outputs for a model, the reference nxe's import is compared with."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
from onnx import ModelProto, TensorProto, helper


def value_info(name: str, elem: int = TensorProto.FLOAT, shape=None):
    """A graph input or output: `shape` None leaves it unknown, entries may be names."""
    return helper.make_tensor_value_info(name, elem, shape)


def onnxruntime_outputs(model: ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The model's outputs by name, run by onnxruntime's CPU provider."""
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds)))


def onnxruntime_run(path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The model file at ``path`` run by onnxruntime's CPU provider on one thread."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)
