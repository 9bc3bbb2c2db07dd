"""Generates the cffi declarations of the nxe Python binding from the public C headers.

Runs at build time: the C preprocessor flattens the headers, pycparser parses them and
prints the declarations back, and the headers' integer #define constants are appended.
Nothing here is edited by hand; a new public header only needs adding to the list.

With --ffi-output it also writes cffi's out-of-line ABI module of those declarations: their
parsed form, which the package loads instead of parsing the text at every import (parsing
took about a third of `import nxe`).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

from cffi import FFI
from pycparser import c_ast, c_generator, c_parser

# Fixed-width and size types normally come from <stdint.h>/<stddef.h>, which the headers skip
# under NXE_NO_SYSTEM_HEADERS. They are declared here only so pycparser can parse; cffi
# knows them already, so they are dropped from the output.
PRELUDE_TYPEDEFS = {
    "int8_t": "signed char",
    "uint8_t": "unsigned char",
    "int16_t": "short",
    "uint16_t": "unsigned short",
    "int32_t": "int",
    "uint32_t": "unsigned int",
    "int64_t": "long long",
    "uint64_t": "unsigned long long",
    "size_t": "unsigned long",
}

INTEGER_DEFINE = re.compile(
    r"^\s*#\s*define\s+(NXE_[A-Z0-9_]+)\s+(\(?\s*-?(?:0[xX][0-9a-fA-F]+|\d+)[uUlL]*\s*\)?)\s*(?:/[*/].*)?$"
)


def preprocess(cc: list[str], include_dir: Path, headers: list[Path]) -> str:
    prelude = "".join(f"typedef {c} {name};\n" for name, c in PRELUDE_TYPEDEFS.items())
    includes = "".join(f'#include "{h.resolve()}"\n' for h in headers)
    # Line markers stay in: they tell which header declared each function.
    command = [*cc, "-E", "-x", "c", "-DNXE_NO_SYSTEM_HEADERS", "-DNXE_API=", "-DNXE_SR_API=",
               f"-I{include_dir}", "-"]
    result = subprocess.run(command, input=prelude + includes, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"gen_cdef: preprocessing failed ({' '.join(command)}):\n{result.stderr}")
    return result.stdout


def declarations(preprocessed: str) -> tuple[str, dict[str, list[str]]]:
    """The declarations as C text, and the functions each header declares (by file name)."""
    ast = c_parser.CParser().parse(preprocessed, filename="<nxe headers>")
    generator = c_generator.CGenerator()
    lines = []
    functions: dict[str, list[str]] = {}
    for node in ast.ext:
        if isinstance(node, c_ast.Typedef) and node.name in PRELUDE_TYPEDEFS:
            continue
        lines.append(generator.visit(node) + ";")
        if isinstance(node, c_ast.Decl) and isinstance(node.type, c_ast.FuncDecl):
            functions.setdefault(Path(node.coord.file).name, []).append(node.name)
    return "\n".join(lines), functions


def integer_defines(headers: list[Path]) -> str:
    """`#define NXE_X <integer>` lines, which cffi accepts as integer constants."""
    lines = []
    for header in headers:
        for line in header.read_text().splitlines():
            match = INTEGER_DEFINE.match(line)
            if match:
                value = re.sub(r"[uUlL]+(?=\s*\)?$)", "", match.group(2).strip("() "))
                lines.append(f"#define {match.group(1)} {value}")
    return "\n".join(lines)


def main() -> None:
    argv = sys.argv[1:]
    if "--" not in argv:
        sys.exit("gen_cdef: usage: gen_cdef.py --output F --include-dir D --headers H... -- CC...")
    split = argv.index("--")
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--ffi-output", type=Path,
                        help="also write the parsed declarations as the module nxe._ffi")
    parser.add_argument("--include-dir", type=Path, required=True)
    parser.add_argument("--headers", type=Path, nargs="+", required=True)
    args = parser.parse_args(argv[:split])
    cc = argv[split + 1:] or ["cc"]

    cdef, functions = declarations(preprocess(cc, args.include_dir, args.headers))
    cdef += "\n" + integer_defines(args.headers) + "\n"
    names = tuple(h.name for h in args.headers)
    functions_by_header = {name: tuple(functions.get(name, ())) for name in names}
    args.output.write_text(
        f'"""cffi declarations generated at build time from {", ".join(names)}; do not edit."""\n\n'
        f"HEADERS = {names!r}\n"
        f"# The functions each header declares: each library resolves only its own.\n"
        f"FUNCTIONS = {functions_by_header!r}\n"
        f"CDEF = {cdef!r}\n"
    )
    if args.ffi_output:
        builder = FFI()
        builder.cdef(cdef)
        builder.set_source("nxe._ffi", None)
        builder.emit_python_code(str(args.ffi_output))


if __name__ == "__main__":
    main()
