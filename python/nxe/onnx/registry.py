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
# Ops nxe runs only by folding them at import, with why any other node of them cannot run.
_FOLD_ONLY: dict[tuple[str, str], str] = {}
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
            if key in _FOLD_ONLY:
                raise ValueError(f"ONNX op {op_type!r} (domain {domain!r}) is declared "
                                 "fold-only; it cannot also have a converter")
            _CONVERTERS[key] = fn
        return fn

    return register


def fold_only(op_type: str, why: str, domain: str = "") -> None:
    """Declares an ONNX op that nxe runs only when its inputs are known at import, where the
    importer folds it (e.g. an op whose output shape depends on its input values); a node of
    it that does not fold is unsupported, and ``why`` says why in the error."""
    key = (_domain_key(domain), op_type)
    if key in _CONVERTERS:
        raise ValueError(f"ONNX op {op_type!r} (domain {domain!r}) already has a converter: "
                         f"{_CONVERTERS[key].__module__}.{_CONVERTERS[key].__name__}")
    _FOLD_ONLY[key] = why


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


def fold_only_reason(op_type: str, domain: str = "") -> str | None:
    """Why a node of a fold-only op (see fold_only) that does not fold cannot run; None for
    other ops."""
    _load()
    return _FOLD_ONLY.get((_domain_key(domain), op_type))


def supported() -> list[tuple[str, str]]:
    """Every (domain, op type) with a converter, sorted."""
    _load()
    return sorted(_CONVERTERS)
