"""The op registry as Python data, read once from the C library, and the op reference
(docs/ops.md) generated from it. The C schemas are the only source of truth.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

from . import _dtypes
from ._binding import check, ffi, lib, text

ATTR_TYPES = {
    lib.NXE_ATTR_INT: "int",
    lib.NXE_ATTR_FLOAT: "float",
    lib.NXE_ATTR_STRING: "string",
    lib.NXE_ATTR_INTS: "ints",
    lib.NXE_ATTR_FLOATS: "floats",
}


def _dtype_names(mask: int) -> list[str]:
    return [name for name in _dtypes.NAMES if mask & (1 << _dtypes._CODE_BY_NAME[name])]


def _params(params, count: int) -> list[dict[str, Any]]:
    return [
        {
            "name": text(params[i].name),
            "doc": text(params[i].doc) or "",
            "dtypes": _dtype_names(params[i].dtypes),
            "optional": bool(params[i].optional),
            "variadic": bool(params[i].variadic),
        }
        for i in range(count)
    ]


def _attrs(attrs, count: int) -> list[dict[str, Any]]:
    result = []
    for i in range(count):
        default = text(attrs[i].default_value)
        result.append(
            {
                "name": text(attrs[i].name),
                "doc": text(attrs[i].doc) or "",
                "type": ATTR_TYPES.get(attrs[i].type, f"unknown({attrs[i].type})"),
                "required": default is None,
                "default": None if default is None else json.loads(default),
            }
        )
    return result


def _op_dict(info) -> dict[str, Any]:
    return {
        "name": text(info.name),
        "summary": text(info.summary) or "",
        "inputs": _params(info.inputs, info.num_inputs),
        "outputs": _params(info.outputs, info.num_outputs),
        "attrs": _attrs(info.attrs, info.num_attrs),
    }


@cache
def _registry() -> tuple[dict[str, Any], ...]:
    count = ffi.new("int32_t *")
    check(lib.nxe_op_registry_count(count))
    entries = []
    info = ffi.new("const nxe_op_info **")
    for index in range(count[0]):
        check(lib.nxe_op_registry_get(index, info))
        entries.append(_op_dict(info[0]))
    return tuple(entries)


def ops() -> list[dict[str, Any]]:
    """Every registered op type with its inputs, outputs and attributes, in registry order.

    Each entry: ``name``, ``summary``, ``inputs``/``outputs`` (``name``, ``doc``, ``dtypes``,
    ``optional``, ``variadic``) and ``attrs`` (``name``, ``doc``, ``type`` one of int, float,
    string, ints, floats, ``required``, ``default`` decoded from the schema's JSON).
    """
    return copy.deepcopy(list(_registry()))


def find(op_type: str) -> dict[str, Any] | None:
    """The schema of one op type, or None when it is not registered."""
    for entry in _registry():
        if entry["name"] == op_type:
            return entry
    return None


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def _param_line(param: dict[str, Any]) -> str:
    notes = []
    if param["optional"]:
        notes.append("optional")
    if param["variadic"]:
        notes.append("variadic")
    note = f" ({', '.join(notes)})" if notes else ""
    dtypes = ", ".join(param["dtypes"])
    return f"| `{param['name']}`{note} | {dtypes} | {_cell(param['doc'])} |"


def markdown() -> str:
    """The op reference in Markdown, as committed in docs/ops.md."""
    lines = [
        "# nxe op reference",
        "",
        "Generated from the op registry by `nxe ops --markdown`; do not edit by hand.",
        "",
    ]
    for entry in _registry():
        lines += [f"## {entry['name']}", ""]
        if entry["summary"]:
            lines += [entry["summary"].strip(), ""]
        for title, params in (("Inputs", entry["inputs"]), ("Outputs", entry["outputs"])):
            if not params:
                continue
            lines += [f"**{title}**", "", "| name | dtypes | description |", "| --- | --- | --- |"]
            lines += [_param_line(p) for p in params]
            lines.append("")
        if entry["attrs"]:
            lines += ["**Attributes**", "", "| name | type | default | description |",
                      "| --- | --- | --- | --- |"]
            for attr in entry["attrs"]:
                default = "required" if attr["required"] else f"`{json.dumps(attr['default'])}`"
                cells = [f"`{attr['name']}`", attr["type"], _cell(default), _cell(attr["doc"])]
                lines.append(f"| {' | '.join(cells)} |")
            lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"
