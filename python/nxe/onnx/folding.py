"""Import-time evaluation, in numpy and to the ONNX specification, of the nodes onnx's
reference evaluator cannot fold: it has no DequantizeLinear before opset 19 (the bias of every
QDQ model onnxruntime's quantizer writes at opset 13 to 18), and its GatherElements goes
through np.choose, which takes at most 32 choices, and then through a fallback that reshapes
wrongly (PyTorch's BERT embeddings gather 16 token-type ids from a buffer of 512). Every other
folded node goes to the reference evaluator (see OnnxModel.evaluate_node).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx

from ..errors import InvalidGraphError

Evaluator = Callable[[onnx.NodeProto, list[Any]], list[np.ndarray]]


def _attr(node: onnx.NodeProto, name: str, default: Any) -> Any:
    for attribute in node.attribute:
        if attribute.name == name:
            return onnx.helper.get_attribute_value(attribute)
    return default


def _axis(node: onnx.NodeProto, rank: int, default: int) -> int:
    axis = int(_attr(node, "axis", default))
    if not -rank <= axis < rank:
        raise InvalidGraphError(f"invalid model: {node.op_type} node {node.name!r}: axis "
                                f"{axis} for an input of rank {rank}")
    return axis % rank


def _gather_elements(node: onnx.NodeProto, inputs: list[Any]) -> list[np.ndarray]:
    data, indices = np.asarray(inputs[0]), np.asarray(inputs[1])
    if data.ndim != indices.ndim or data.ndim == 0:
        raise InvalidGraphError(f"invalid model: GatherElements node {node.name!r}: data of "
                                f"rank {data.ndim} and indices of rank {indices.ndim}")
    axis = _axis(node, data.ndim, 0)
    size = data.shape[axis]
    if indices.size and (indices.min() < -size or indices.max() >= size):
        raise InvalidGraphError(f"invalid model: GatherElements node {node.name!r}: an index "
                                f"outside [-{size}, {size - 1}]")
    for i, (d, n) in enumerate(zip(data.shape, indices.shape)):
        if i != axis and n > d:
            raise InvalidGraphError(f"invalid model: GatherElements node {node.name!r}: "
                                    f"indices dimension {i} is {n}, data's is {d}")
    # Outside the gathered axis the indices may be smaller than the data: its leading part.
    window = tuple(slice(None) if i == axis else slice(0, n)
                   for i, n in enumerate(indices.shape))
    positions = np.where(indices < 0, indices + size, indices).astype(np.intp)
    return [np.take_along_axis(data[window], positions, axis=axis)]


_DEQUANTIZE_INPUTS = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int32))


def _dequantize_linear(node: onnx.NodeProto, inputs: list[Any]) -> list[np.ndarray]:
    """DequantizeLinear-10 and -13: y = (x - zero_point) * scale in f32, per tensor or (13)
    along ``axis`` with a 1-D scale; the difference is formed in integers, as onnxruntime does."""
    x, scale = np.asarray(inputs[0]), np.asarray(inputs[1])
    zero_point = np.asarray(inputs[2]) if len(inputs) > 2 and inputs[2] is not None else None
    where = f"invalid model: DequantizeLinear node {node.name!r}"
    if x.dtype not in _DEQUANTIZE_INPUTS or scale.dtype != np.float32:
        raise InvalidGraphError(f"{where}: x of dtype {x.dtype} with a scale of dtype "
                                f"{scale.dtype} (int8, uint8 or int32 with float32)")
    if zero_point is not None and (zero_point.dtype != x.dtype
                                   or zero_point.size != scale.size):
        raise InvalidGraphError(f"{where}: the zero point's dtype or size differs from x's "
                                "dtype or the scale's size")
    if scale.ndim > 1:
        raise InvalidGraphError(f"{where}: a scale of rank {scale.ndim} (DequantizeLinear "
                                "before opset 19 takes a scalar or 1-D scale)")
    shape = ()
    # One value is per tensor, as a scalar or 1-D: onnxruntime's quantizer writes a per-tensor
    # bias scale as [1], and the bias is 1-D, where the default axis 1 does not exist.
    if scale.size != 1:
        axis = _axis(node, x.ndim, 1)
        if scale.size != x.shape[axis]:
            raise InvalidGraphError(f"{where}: {scale.size} scales for axis {axis} of size "
                                    f"{x.shape[axis]}")
        shape = tuple(-1 if i == axis else 1 for i in range(x.ndim))
    shifted = x.astype(np.int64)
    if zero_point is not None:
        shifted = shifted - zero_point.astype(np.int64).reshape(shape)
    return [shifted.astype(np.int32).astype(np.float32) * scale.reshape(shape)]


def evaluator_for(node: onnx.NodeProto, opset: int) -> Evaluator | None:
    """The numpy evaluator of ``node`` (in a model of default-domain ``opset``), or None when
    the reference evaluator folds it."""
    if node.domain not in ("", "ai.onnx"):
        return None
    if node.op_type == "GatherElements":
        return _gather_elements
    if node.op_type == "DequantizeLinear" and opset < 19:
        return _dequantize_linear
    return None
