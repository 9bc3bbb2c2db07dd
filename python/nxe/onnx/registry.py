"""Registry of ONNX-node converters: ``@converter("OpType")`` maps an ONNX op type (and domain)
to the function that turns such a node into nxe ops. Converters live in the ops_*.py modules,
which are imported here on first lookup so their decorators run.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

Converter = Callable[[Any, Any], Any]

# Modules whose @converter decorators fill the table; one per op family owner.
CONVERTER_MODULES = (
    "ops_basic",
    "ops_math",
    "ops_reduce_norm",
    "ops_data",
    "ops_conv_pool",
    "ops_sequence_quant",
    "ops_loss",
)

_CONVERTERS: dict[tuple[str, str], Converter] = {}
_loaded = False


def _domain_key(domain: str) -> str:
    # "" and "ai.onnx" name the same default domain.
    return "" if domain in ("", "ai.onnx") else domain


def converter(*op_types: str, domain: str = "") -> Callable[[Converter], Converter]:
    """Registers the decorated function as the converter of each ONNX op type given.

    The function is called as ``fn(ctx, node)`` and returns one value per ONNX output:
    an nxe.Tensor, or a numpy array when the output is known at import.
    """
    if not op_types:
        raise TypeError("converter() needs at least one ONNX op type")

    def register(fn: Converter) -> Converter:
        for op_type in op_types:
            key = (_domain_key(domain), op_type)
            if key in _CONVERTERS and _CONVERTERS[key] is not fn:
                raise ValueError(f"ONNX op {op_type!r} (domain {domain!r}) already has a "
                                 f"converter: {_CONVERTERS[key].__module__}."
                                 f"{_CONVERTERS[key].__name__}")
            _CONVERTERS[key] = fn
        return fn

    return register


def _load() -> None:
    global _loaded
    if _loaded:
        return
    for module in CONVERTER_MODULES:
        importlib.import_module(f"{__package__}.{module}")
    _loaded = True


def find(op_type: str, domain: str = "") -> Converter | None:
    """The converter of an ONNX op type, or None when there is none."""
    _load()
    return _CONVERTERS.get((_domain_key(domain), op_type))


def supported() -> list[tuple[str, str]]:
    """Every (domain, op type) with a converter, sorted."""
    _load()
    return sorted(_CONVERTERS)
