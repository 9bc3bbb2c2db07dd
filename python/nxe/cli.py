"""The `nxe` command: what a C program needs to build against this installation, the op
reference, and the README's example."""

from __future__ import annotations

import argparse
import runpy
import sys

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

    args = parser.parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
