"""The `nxe` command: what a C program needs to build against this installation, the op
reference, the README's example, what a model file holds, what the CPU offers, and upscaling
images and video (nxe/upscale.py)."""

from __future__ import annotations

import argparse
import json
import runpy
import sys
import textwrap
from typing import Any

from ._binding import INCLUDE_DIR, LIB_DIR, PACKAGE_DIR, PKGCONFIG_DIR


def _config(args: argparse.Namespace) -> int:
    words = []
    if args.prefix:
        words.append(str(PACKAGE_DIR))
    if args.pkgconfig_path:
        words.append(str(PKGCONFIG_DIR))
    if args.cflags:
        words.append(f"-I{INCLUDE_DIR}")
    if args.libs:
        # The rpath lets the program find libnxe.so here without LD_LIBRARY_PATH.
        words.append(f"-L{LIB_DIR} -Wl,-rpath,{LIB_DIR} -lnxe")
    if not words:
        print("nxe config: give at least one of --cflags, --libs, --pkgconfig-path, --prefix",
              file=sys.stderr)
        return 2
    print(" ".join(words))
    return 0


def _ops(args: argparse.Namespace) -> int:
    from . import registry

    if args.markdown:
        sys.stdout.write(registry.markdown())
        return 0
    for entry in registry.ops():
        print(f"{entry['name']:<24} {entry['summary']}")
    return 0


def _example(args: argparse.Namespace) -> int:
    runpy.run_module("nxe.example", run_name="__main__")
    return 0


def _format_quant(quant: dict[str, Any]) -> str:
    kind = quant["type"]
    if kind == "asymmetric":
        return f"asymmetric(scale={quant['scale']:.6g}, zero_point={quant['zero_point']})"
    if kind == "per_channel":
        return f"per_channel(axis={quant['axis']}, {len(quant['scales'])} scales)"
    if kind == "dynamic_fixed_point":
        return f"dynamic_fixed_point({quant['fractional_length']})"
    return kind


def _model_info(args: argparse.Namespace) -> int:
    from .errors import Error
    from .model import Model

    try:
        with Model(args.file, lazy=args.lazy) as model:
            tensors = model.tensors
            report = {
                "file": args.file,
                "format_version": "{}.{}".format(*model.format_version),
                "fingerprint": model.fingerprint,
                "metadata": model.metadata,
                "annotations": model.annotations,
                "tensors": [dict(t, shape=list(t["shape"])) for t in tensors],
            }
    except (Error, OSError) as error:
        print(f"nxe model info: {error}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
        return 0
    print(f"file:         {report['file']}")
    print(f"format:       {report['format_version']}")
    print(f"fingerprint:  {report['fingerprint']}")
    for key in ("metadata", "annotations"):
        compact = json.dumps(report[key], sort_keys=True, ensure_ascii=False)
        if len(compact) <= 100:
            print(f"{key + ':':<13} {compact}")
        else:
            print(f"{key}:")
            print(textwrap.indent(json.dumps(report[key], indent=2, sort_keys=True,
                                             ensure_ascii=False), "  "))
    total = sum(t["nbytes"] for t in tensors)
    print(f"tensors:      {len(tensors)} stored, {total} bytes")
    rows = [("name", "kind", "dtype", "shape", "quant", "bytes")]
    rows += [(t["name"], t["kind"], t["dtype"], "[" + ", ".join(map(str, t["shape"])) + "]",
              _format_quant(t["quant"]), str(t["nbytes"])) for t in tensors]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:-1], widths)]
        print("  " + "  ".join(cells + [row[-1].rjust(widths[-1])]))
    return 0


def _info(args: argparse.Namespace) -> int:
    from . import api_version, cpu_info, version

    cpu = cpu_info()
    report = {"version": version(), "api_version": "{}.{}".format(*api_version()), **cpu}
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
        return 0
    print(f"nxe:          {report['version']}")
    print(f"API:          {report['api_version']}")
    print(f"CPU features: {' '.join(cpu['features']) or '(none)'}")
    print(f"ISA:          {cpu['isa']}")
    print(f"why:          {cpu['reason']}")
    print("kernels:      " + ", ".join(f"{precision} {name}"
                                       for precision, name in cpu["kernels"].items()))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="nxe", description="nxe inference engine")
    commands = parser.add_subparsers(dest="command", required=True)

    config = commands.add_parser("config", help="flags to compile and link C code against nxe")
    config.add_argument("--cflags", action="store_true", help="compiler flags (include path)")
    config.add_argument("--libs", action="store_true", help="linker flags, rpath included")
    config.add_argument("--pkgconfig-path", action="store_true",
                        help="the folder holding nxe.pc, for PKG_CONFIG_PATH")
    config.add_argument("--prefix", action="store_true", help="where the package is installed")
    config.set_defaults(handler=_config)

    ops = commands.add_parser("ops", help="list the registered op types")
    ops.add_argument("--markdown", action="store_true", help="print the full op reference")
    ops.set_defaults(handler=_ops)

    example = commands.add_parser("example", help="run the README's Python example")
    example.set_defaults(handler=_example)

    info = commands.add_parser(
        "info", help="library and API version, the CPU features nxe can use, and the ISA level "
        "its kernels run at, with the reason (NXE_ISA caps it)")
    info.add_argument("--json", action="store_true", help="print one JSON object instead")
    info.set_defaults(handler=_info)

    model = commands.add_parser("model", help="inspect model files (.nxm)")
    model_commands = model.add_subparsers(dest="model_command", required=True)
    info = model_commands.add_parser(
        "info", help="print a model file's format version, fingerprint, metadata, annotations "
        "and stored tensors (after verifying it)")
    info.add_argument("file", help="the .nxm file")
    info.add_argument("--json", action="store_true", help="print one JSON object instead")
    info.add_argument("--lazy", action="store_true",
                      help="skip the tensor-data checksum and the fingerprint recomputation")
    info.set_defaults(handler=_model_info)

    from .upscale import add_parser as add_upscale_parser

    add_upscale_parser(commands)
    from .bench import add_parser as add_bench_parser
    add_bench_parser(commands)

    args = parser.parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
