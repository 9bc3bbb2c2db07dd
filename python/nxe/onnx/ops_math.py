"""ONNX converters for the math op family: unary math and activations, Clip, PRelu, Pow,
Min/Max/Sum/Mean (variadic in ONNX: chained binary ops), Mod, BitShift, comparisons, logic,
Where, IsNaN and IsInf. Each maps onto the nxe op of the same meaning; nothing is approximated.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _dtypes
from .. import registry as op_registry
from ..graph import Tensor
from .registry import converter

FLOAT_DTYPES = ("f32", "f16", "bf16")


def _require(ctx: Any, op_type: str, dtype: str, index: int = 0) -> None:
    """Raises ctx.unsupported unless nxe's op_type takes dtype at input `index`."""
    schema = op_registry.find(op_type)
    if schema is None or dtype not in schema["inputs"][index]["dtypes"]:
        raise ctx.unsupported(f"nxe's {op_type} does not take {dtype}")


def _cast(ctx: Any, tensor: Tensor, dtype: str) -> Tensor:
    return ctx.g.Cast(tensor, to=_dtypes.code_of(dtype))


def _float_attr(ctx: Any, node: Any, name: str, default: float) -> float:
    return float(ctx.attr(node, name, default))


# ---- unary ------------------------------------------------------------------------------------

_PLAIN_UNARY = (
    "Abs", "Neg", "Sign", "Exp", "Log", "Sqrt", "Reciprocal", "Floor", "Ceil", "Round", "Sin",
    "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
    "HardSwish", "Mish", "Softplus", "Softsign", "IsNaN", "Not",
)

# ONNX op type -> {attribute: ONNX default}; nxe's ops take the same attribute names.
_UNARY_WITH_ATTRS = {
    "Elu": {"alpha": 1.0},
    "Selu": {"alpha": 1.67326319217681884765625, "gamma": 1.05070102214813232421875},
    "Celu": {"alpha": 1.0},
    "HardSigmoid": {"alpha": 0.2, "beta": 0.5},
    "ThresholdedRelu": {"alpha": 1.0},
    "Swish": {"alpha": 1.0},
}


@converter(*_PLAIN_UNARY)
def convert_unary(ctx: Any, node: Any) -> list[Tensor]:
    _require(ctx, node.op_type, ctx.dtype(0))
    return [getattr(ctx.g, node.op_type)(ctx.input(0))]


@converter(*_UNARY_WITH_ATTRS)
def convert_unary_with_attrs(ctx: Any, node: Any) -> list[Tensor]:
    _require(ctx, node.op_type, ctx.dtype(0))
    attrs = {name: _float_attr(ctx, node, name, default)
             for name, default in _UNARY_WITH_ATTRS[node.op_type].items()}
    return [getattr(ctx.g, node.op_type)(ctx.input(0), **attrs)]


@converter("IsInf")
def convert_isinf(ctx: Any, node: Any) -> list[Tensor]:
    _require(ctx, "IsInf", ctx.dtype(0))
    return [ctx.g.IsInf(ctx.input(0),
                        detect_negative=int(ctx.attr(node, "detect_negative", 1)),
                        detect_positive=int(ctx.attr(node, "detect_positive", 1)))]


@converter("Clip")
def convert_clip(ctx: Any, node: Any) -> list[Tensor]:
    dtype = ctx.dtype(0)
    _require(ctx, "Clip", dtype)
    x = ctx.input(0)
    attrs: dict[str, float] = {}
    if ctx.opset < 11:
        attrs["min"] = _float_attr(ctx, node, "min", -3.4028234663852886e38)
        attrs["max"] = _float_attr(ctx, node, "max", 3.4028234663852886e38)
        return [ctx.g.Clip(x, **attrs)]
    # Bounds known at import become attributes; one only known at run time becomes Max/Min
    # with the bound tensor (same result: both propagate NaN from X).
    runtime = []
    for index, name in ((1, "min"), (2, "max")):
        if not ctx.has_input(index):
            continue
        value = ctx.const(index)
        if value is None:
            runtime.append((name, ctx.input(index)))
            continue
        value = np.asarray(value)
        if value.size != 1:
            raise ctx.unsupported(f"'{name}' bound with {value.size} elements")
        attrs[name] = float(value.reshape(()))
    y = ctx.g.Clip(x, **attrs) if attrs or not runtime else x
    for name, bound in runtime:
        if ctx.shape(1 if name == "min" else 2) not in ((), (1,)):
            raise ctx.unsupported(f"'{name}' bound that is not a scalar")
        y = ctx.g.Max(y, bound) if name == "min" else ctx.g.Min(y, bound)
    return [y]


# ---- binary -----------------------------------------------------------------------------------

def _same_dtype_binary(ctx: Any, op_type: str, **attrs: Any) -> list[Tensor]:
    dtype = ctx.dtype(0)
    if ctx.dtype(1) != dtype:
        raise ctx.unsupported(f"operands of dtypes {dtype} and {ctx.dtype(1)}")
    _require(ctx, op_type, dtype)
    return [getattr(ctx.g, op_type)(ctx.input(0), ctx.input(1), **attrs)]


@converter("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor",
           "PRelu")
def convert_binary(ctx: Any, node: Any) -> list[Tensor]:
    return _same_dtype_binary(ctx, node.op_type)


@converter("Mod")
def convert_mod(ctx: Any, node: Any) -> list[Tensor]:
    return _same_dtype_binary(ctx, "Mod", fmod=int(ctx.attr(node, "fmod", 0)))


@converter("BitShift")
def convert_bit_shift(ctx: Any, node: Any) -> list[Tensor]:
    direction = ctx.attr(node, "direction")
    if isinstance(direction, bytes):
        direction = direction.decode()
    if direction not in ("LEFT", "RIGHT"):
        raise ctx.unsupported(f"direction={direction!r}")
    return _same_dtype_binary(ctx, "BitShift", direction=direction)


@converter("Pow")
def convert_pow(ctx: Any, node: Any) -> list[Tensor]:
    # ONNX lets the exponent's type differ from the base's; the result has the base's type.
    base_dtype, exponent_dtype = ctx.dtype(0), ctx.dtype(1)
    base, exponent = ctx.input(0), ctx.input(1)
    if base_dtype == exponent_dtype:
        _require(ctx, "Pow", base_dtype)
        return [ctx.g.Pow(base, exponent)]
    if base_dtype in FLOAT_DTYPES:
        # An integer exponent is exact in the base's float type for the magnitudes powers of
        # floats can take without overflowing anyway.
        return [ctx.g.Pow(base, _cast(ctx, exponent, base_dtype))]
    if exponent_dtype in FLOAT_DTYPES:
        # Integer base, float exponent: the float power, truncated to the base's type as
        # numpy's astype does (the Cast saturates where numpy's would be undefined).
        _require(ctx, "Cast", base_dtype)
        power = ctx.g.Pow(_cast(ctx, base, "f32"), _cast(ctx, exponent, "f32"))
        return [_cast(ctx, power, base_dtype)]
    # Two integer types: the exponent converts to the base's type (values that matter fit).
    return [ctx.g.Pow(base, _cast(ctx, exponent, base_dtype))]


def _variadic_inputs(ctx: Any, op_type: str) -> list[Tensor]:
    inputs = [i for i in range(ctx.num_inputs) if ctx.has_input(i)]
    if not inputs:
        raise ctx.unsupported("no inputs")
    dtype = ctx.dtype(inputs[0])
    for i in inputs:
        if ctx.dtype(i) != dtype:
            raise ctx.unsupported(f"inputs of dtypes {dtype} and {ctx.dtype(i)}")
    _require(ctx, op_type, dtype)
    return [ctx.input(i) for i in inputs]


def _chain(ctx: Any, op_type: str, tensors: list[Tensor]) -> Tensor:
    """tensors[0] op tensors[1] op ...; a single input is its own result."""
    result = tensors[0]
    for tensor in tensors[1:]:
        result = getattr(ctx.g, op_type)(result, tensor)
    return result


@converter("Min", "Max")
def convert_min_max(ctx: Any, node: Any) -> list[Tensor]:
    return [_chain(ctx, node.op_type, _variadic_inputs(ctx, node.op_type))]


@converter("Sum")
def convert_sum(ctx: Any, node: Any) -> list[Tensor]:
    tensors = _variadic_inputs(ctx, "Add")
    return [_chain(ctx, "Add", tensors)]


@converter("Mean")
def convert_mean(ctx: Any, node: Any) -> list[Tensor]:
    tensors = _variadic_inputs(ctx, "Add")
    dtype = ctx.dtype(0)
    if dtype not in FLOAT_DTYPES:
        raise ctx.unsupported(f"Mean of {dtype}")
    total = _chain(ctx, "Add", tensors)
    if len(tensors) == 1:
        return [total]
    count = np.array(len(tensors), dtype=np.float32)
    if dtype == "f32":
        return [ctx.g.Div(total, ctx.constant(count))]
    return [_cast(ctx, ctx.g.Div(_cast(ctx, total, "f32"), ctx.constant(count)), dtype)]


@converter("Where")
def convert_where(ctx: Any, node: Any) -> list[Tensor]:
    if ctx.dtype(0) != "bool":
        raise ctx.unsupported(f"condition of dtype {ctx.dtype(0)}")
    if ctx.dtype(1) != ctx.dtype(2):
        raise ctx.unsupported(f"values of dtypes {ctx.dtype(1)} and {ctx.dtype(2)}")
    return [ctx.g.Where(ctx.input(0), ctx.input(1), ctx.input(2))]


# ---- bitwise ----------------------------------------------------------------------------------

@converter("BitwiseAnd", "BitwiseOr", "BitwiseXor")
def convert_bitwise_binary(ctx: Any, node: Any) -> list[Tensor]:
    return _same_dtype_binary(ctx, node.op_type)


@converter("BitwiseNot")
def convert_bitwise_not(ctx: Any, node: Any) -> list[Tensor]:
    _require(ctx, "BitwiseNot", ctx.dtype(0))
    return [ctx.g.BitwiseNot(ctx.input(0))]
