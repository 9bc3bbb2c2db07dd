"""`nxe models` and `nxe model info`: which models there are and what one holds.
(`nxe models` with an engine's config lists that engine's models instead: nxe/cli_serve.py.)

The listing is one table of rows gathered from sources: the SR models built into the package,
then the model files (.nxm) and compiled binaries (.nxb) installed in a models folder
(NXE_MODEL_DIR or --dir). Another kind of model is another function in SOURCES yielding rows.
`nxe model info` takes a file or a name from that table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

MODEL_DIR_VARIABLE = "NXE_MODEL_DIR"
SUFFIXES = (".nxm", ".nxb")
# A model's metadata "task" in the listing's word for it.
_KINDS = {"super_resolution": "sr"}


@dataclass
class Row:
    """One model of the listing. kind and scale come from the model's metadata (for a binary,
    from the listed model file it was compiled from, found by fingerprint); None where
    unknown."""

    name: str
    kind: str | None
    scale: int | None
    format: str  # "nxm" or "nxb"
    bytes: int
    fingerprint: str
    source: str  # "built-in" or "installed"
    path: str


class Problem(Exception):
    """A model that cannot be listed or described: the message is for the user as it is."""


def error_words(error: BaseException, path: Path) -> str:
    """A library error about a file in the CLI's words: without the C function's name it
    starts with, and naming the file (which most messages do already)."""
    words = re.sub(r"^nxe_\w+: ", "", str(error))
    return words if str(path) in words else f"{path}: {words}"


# -- reading one file ----------------------------------------------------------------------


def _existing(path: Path) -> Path:
    if not path.exists():
        raise Problem(f"no such file: '{path}'")
    if path.is_dir():
        raise Problem(f"'{path}' is a directory, not a model file")
    return path


def _kind(metadata: dict[str, Any]) -> str | None:
    task = metadata.get("task")
    return _KINDS.get(task, task) if isinstance(task, str) else None


def _model_row(path: Path, name: str, source: str) -> Row:
    from .errors import Error
    from .model import Model

    try:
        with Model(_existing(path), lazy=True) as model:
            metadata, fingerprint = model.metadata, model.fingerprint
    except Error as error:
        raise Problem(error_words(error, path)) from None
    scale = metadata.get("scale")
    return Row(name=name, kind=_kind(metadata), scale=scale if isinstance(scale, int) else None,
               format="nxm", bytes=path.stat().st_size, fingerprint=fingerprint, source=source,
               path=str(path))


def _open_binary(path: Path, verify: bool) -> Any:
    from .errors import Error
    from .vm import VirtualMachine

    try:
        return VirtualMachine(_existing(path), verify=verify)
    except Error as error:
        raise Problem(error_words(error, path)) from None


def _binary_row(path: Path, name: str, source: str) -> Row:
    with _open_binary(path, verify=False) as vm:
        fingerprint = vm.info()["fingerprint"]
    return Row(name=name, kind=None, scale=None, format="nxb", bytes=path.stat().st_size,
               fingerprint=fingerprint, source=source, path=str(path))


def _row(path: Path, name: str, source: str) -> Row | Problem:
    read = _binary_row if path.suffix == ".nxb" else _model_row
    try:
        return read(path, name, source)
    except Problem as problem:
        return problem


# -- sources -------------------------------------------------------------------------------


# A source yields a Row per model, or a Problem for one it cannot read (a file that is not a
# readable model, a missing folder), which the listing reports without stopping.


def builtin_sr_models(model_dir: Path | None) -> Iterator[Row | Problem]:
    """The SR models shipped with the package (nxe.sr.builtin_models)."""
    from . import sr

    for name in sr.builtin_models():
        yield _row(sr.model_path(name), name, "built-in")


def installed_models(model_dir: Path | None) -> Iterator[Row | Problem]:
    """The .nxm and .nxb files directly in the models folder, by name."""
    if model_dir is None:
        return
    if not model_dir.is_dir():
        yield Problem(f"no such models folder: '{model_dir}' (from --dir or "
                      f"{MODEL_DIR_VARIABLE})")
        return
    for path in sorted(model_dir.iterdir()):
        if path.suffix in SUFFIXES and path.is_file():
            yield _row(path, path.stem, "installed")


SOURCES: tuple[Callable[[Path | None], Iterator[Row | Problem]], ...] = (
    builtin_sr_models, installed_models)


def model_rows(model_dir: Path | None) -> tuple[list[Row], list[str]]:
    """Every source's rows in order, and the problems met, which are left out of the rows."""
    rows: list[Row] = []
    problems: list[str] = []
    for source in SOURCES:
        for item in source(model_dir):
            if isinstance(item, Problem):
                problems.append(str(item))
            else:
                rows.append(item)
    # A binary records the fingerprint of the model it was compiled from: a listed model file
    # with that fingerprint tells its kind and scale.
    by_fingerprint = {row.fingerprint: row for row in rows if row.format == "nxm"}
    for row in rows:
        origin = by_fingerprint.get(row.fingerprint)
        if row.format == "nxb" and origin is not None:
            row.kind, row.scale = origin.kind, origin.scale
    return rows, problems


def model_dir_of(args: argparse.Namespace) -> Path | None:
    folder = args.dir or os.environ.get(MODEL_DIR_VARIABLE)
    return Path(folder) if folder else None


# -- nxe models ----------------------------------------------------------------------------


def _size(count: int) -> str:
    for unit, step in (("MB", 10**6), ("kB", 10**3)):
        if count >= step:
            return f"{count / step:.1f} {unit}"
    return f"{count} B"


def _table(rows: list[tuple[str, ...]], right: set[int]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [cell.rjust(width) if i in right else cell.ljust(width)
                 for i, (cell, width) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _models(args: argparse.Namespace) -> int:
    from . import cli_serve

    if cli_serve.uses_config(args):
        return cli_serve.engine_models(args)
    rows, problems = model_rows(model_dir_of(args))
    if args.json:
        print(json.dumps([asdict(row) for row in rows], indent=2))
    else:
        table = [("NAME", "KIND", "SCALE", "FORMAT", "SIZE", "FINGERPRINT", "SOURCE")]
        table += [(row.name, row.kind or "-", f"x{row.scale}" if row.scale else "-", row.format,
                   _size(row.bytes), row.fingerprint[:16],
                   row.source if row.source == "built-in" else row.path) for row in rows]
        print(_table(table, right={4}))
    for problem in problems:
        print(f"nxe models: {problem}", file=sys.stderr)
    return 1 if problems else 0


# -- nxe model info ------------------------------------------------------------------------


def _format_quant(quant: dict[str, Any]) -> str:
    kind = quant["type"]
    if kind == "asymmetric":
        return f"asymmetric(scale={quant['scale']:.6g}, zero_point={quant['zero_point']})"
    if kind == "per_channel":
        return f"per_channel(axis={quant['axis']}, {len(quant['scales'])} scales)"
    if kind == "dynamic_fixed_point":
        return f"dynamic_fixed_point({quant['fractional_length']})"
    return kind


def resolve(name: str, model_dir: Path | None) -> Path:
    """The file `nxe model info NAME` describes: NAME itself when it exists or looks like a
    path, else a built-in model of that name, else NAME.nxm or NAME.nxb in the models
    folder."""
    path = Path(name)
    if path.exists() or os.sep in name or path.suffix in SUFFIXES:
        return _existing(path)
    from . import sr

    if name in sr.builtin_models():
        return sr.model_path(name)
    for suffix in SUFFIXES:
        if model_dir is not None and (model_dir / f"{name}{suffix}").is_file():
            return model_dir / f"{name}{suffix}"
    raise Problem(f"no such file or model: '{name}' (built-in models: "
                  f"{', '.join(sr.builtin_models())}; `nxe models` lists them all)")


def _model_report(path: Path, lazy: bool) -> dict[str, Any]:
    from .errors import Error
    from .model import Model

    try:
        with Model(path, lazy=lazy) as model:
            return {
                "file": str(path),
                "format": "nxm",
                "format_version": "{}.{}".format(*model.format_version),
                "fingerprint": model.fingerprint,
                "metadata": model.metadata,
                "annotations": model.annotations,
                "tensors": [dict(t, shape=list(t["shape"])) for t in model.tensors],
            }
    except Error as error:
        raise Problem(error_words(error, path)) from None


def _tokenizer_summary(tokenizer: Any) -> Any:
    """An embedding model's tokenizer (the whole tokenizer.json, or a vocab.txt) in a few
    words for the text report; --json prints it whole."""
    if not isinstance(tokenizer, dict):
        return tokenizer
    if "vocab_txt" in tokenizer:
        count = len(str(tokenizer["vocab_txt"]).splitlines())
        return f"vocab.txt, {count} tokens, lowercase {tokenizer.get('lowercase')}"
    model = tokenizer.get("model") if isinstance(tokenizer.get("model"), dict) else {}
    vocab = model.get("vocab")
    size = len(vocab) if isinstance(vocab, dict) else "?"
    return f"tokenizer.json, {model.get('type', '?')}, {size} tokens"


def _parity_line(annotations: dict[str, Any]) -> str | None:
    parity = annotations.get("parity")
    if not isinstance(parity, dict):
        return None
    try:
        return (f"parity:       worst cosine {float(parity['min_cosine']):.8f}, mean "
                f"{float(parity['mean_cosine']):.8f} over {parity['sentences']} sentences "
                f"against {parity['reference']} ({parity['precision']}, threshold "
                f"{parity['threshold']})")
    except (KeyError, TypeError, ValueError):
        return None


def _model_report_text(report: dict[str, Any]) -> str:
    lines = [f"file:         {report['file']}",
             f"format:       {report['format_version']}",
             f"fingerprint:  {report['fingerprint']}"]
    parity = _parity_line(report["annotations"])
    if parity is not None:
        lines.append(parity)
    for key in ("metadata", "annotations"):
        value = report[key]
        if key == "metadata" and value.get("task") == "embedding" and "tokenizer" in value:
            value = dict(value, tokenizer=_tokenizer_summary(value["tokenizer"]))
        compact = json.dumps(value, sort_keys=True, ensure_ascii=False)
        if len(compact) <= 100:
            lines.append(f"{key + ':':<13} {compact}")
        else:
            lines.append(f"{key}:")
            lines.append(textwrap.indent(json.dumps(value, indent=2, sort_keys=True,
                                                    ensure_ascii=False), "  "))
    tensors = report["tensors"]
    total = sum(t["nbytes"] for t in tensors)
    lines.append(f"tensors:      {len(tensors)} stored, {total} bytes")
    rows = [("name", "kind", "dtype", "shape", "quant", "bytes")]
    rows += [(t["name"], t["kind"], t["dtype"], "[" + ", ".join(map(str, t["shape"])) + "]",
              _format_quant(t["quant"]), str(t["nbytes"])) for t in tensors]
    lines.append(textwrap.indent(_table(rows, right={5}), "  "))
    return "\n".join(lines)


def _binary_report(path: Path, lazy: bool, model_dir: Path | None) -> dict[str, Any]:
    with _open_binary(path, verify=not lazy) as vm:
        info = vm.info()
        inputs, outputs = vm.inputs, vm.outputs
    # The binary records the fingerprint of the model file it was compiled from, which names
    # that file when a listed one has it; the model it embeds (the graph, saved again, which
    # nxe.Model opens in the binary's place) is described too.
    rows, _ = model_rows(model_dir)
    origin = next((row for row in rows
                   if row.format == "nxm" and row.fingerprint == info["fingerprint"]), None)
    return {
        "file": str(path),
        "format": "nxb",
        "fingerprint": info["fingerprint"],
        "isa": info["isa"],
        "kernel_abi": info["kernel_abi"],
        "recompiled": info["recompiled"],
        "constants": info["num_constants"],
        "inputs": [{"name": n, "shape": list(s), "dtype": d} for n, s, d in inputs],
        "outputs": [{"name": n, "shape": list(s), "dtype": d} for n, s, d in outputs],
        "model": {"embedded": _model_report(path, lazy),
                  "same_as": None if origin is None else origin.path},
    }


def _print_binary_report(report: dict[str, Any]) -> None:
    print(f"file:         {report['file']}")
    print("format:       compiled binary (.nxb)")
    print(f"fingerprint:  {report['fingerprint']} (of the model it was compiled from)")
    recompiled = ("; this CPU lacks it, so it was recompiled from the embedded model"
                  if report["recompiled"] else "")
    print(f"ISA:          {report['isa']}, kernel ABI {report['kernel_abi']}{recompiled}")
    print(f"constants:    {report['constants']} buffers")
    for key in ("inputs", "outputs"):
        for index, io in enumerate(report[key]):
            label = f"{key}:" if index == 0 else ""
            print(f"{label:<13} {io['name']} [{', '.join(map(str, io['shape']))}] {io['dtype']}")
    same = report["model"]["same_as"]
    print("model:        embedded in the binary"
          + (f"; compiled from {same}" if same else ""))
    embedded = dict(report["model"]["embedded"],
                    file=f"{report['file']}, its EMBEDDED_MODEL section")
    print(textwrap.indent(_model_report_text(embedded), "  "))


def _model_info(args: argparse.Namespace) -> int:
    model_dir = model_dir_of(args)
    try:
        path = resolve(args.file, model_dir)
        binary = path.suffix == ".nxb"
        report = (_binary_report(path, args.lazy, model_dir) if binary
                  else _model_report(path, args.lazy))
    except Problem as problem:
        print(f"nxe model info: {problem}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
    elif binary:
        _print_binary_report(report)
    else:
        print(_model_report_text(report))
    return 0


def add_parsers(commands: Any) -> None:
    """Registers `nxe models` and `nxe model info` with the command's subparsers."""
    dir_help = f"a models folder of .nxm and .nxb files (default: ${MODEL_DIR_VARIABLE})"
    models = commands.add_parser(
        "models", help="list the built-in models and those installed in a models folder, with "
        "kind, scale, size and fingerprint; with a config, the engine's models and their state",
        description="List the built-in models and the .nxm/.nxb files of a models folder "
        f"(--dir, else ${MODEL_DIR_VARIABLE}). With an engine's config (--config, "
        "$NXE_CONFIG, or ./nxe.toml when there is one, unless --dir is given), list the "
        "engine's models and their state instead: from the server the config names, or from "
        "the config when no server answers.")
    models.add_argument("--dir", help=dir_help)
    models.add_argument("--config", help="an engine's config file (default: $NXE_CONFIG, else "
                        "./nxe.toml when there is one)")
    models.add_argument("--json", action="store_true", help="print a JSON list instead")
    models.set_defaults(handler=_models)

    model = commands.add_parser("model", help="inspect a model (.nxm) or compiled binary (.nxb)")
    model_commands = model.add_subparsers(dest="model_command", metavar="COMMAND",
                                          required=True)
    info = model_commands.add_parser(
        "info", help="what a model file or compiled binary holds (after verifying it)",
        description="Print a model file's format version, fingerprint, metadata, annotations "
        "and stored tensors, or a compiled binary's fingerprint, ISA, inputs and outputs, after "
        "verifying the file.")
    info.add_argument("file", metavar="FILE_OR_NAME",
                      help="a .nxm or .nxb file, a built-in model's name (espcn-x2) or the name "
                      "of a model in the models folder")
    info.add_argument("--dir", help=dir_help)
    info.add_argument("--json", action="store_true", help="print one JSON object instead")
    info.add_argument("--lazy", action="store_true",
                      help="skip the tensor-data checksum and the fingerprint recomputation "
                      "(a binary's section checksums)")
    info.set_defaults(handler=_model_info)
