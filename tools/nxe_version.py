"""Prints the library version, MAJOR.MINOR.PATCH, from the macros of include/nxe/nxe.h.

meson.build's project() runs it: the header is the one place the version is written, so the
project, the shared library, pkg-config and the Python package all carry the API version.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

PARTS = ("NXE_API_VERSION_MAJOR", "NXE_API_VERSION_MINOR", "NXE_VERSION_PATCH")


def header_version(header: Path) -> str:
    text = header.read_text()
    numbers = []
    for name in PARTS:
        match = re.search(rf"^#define {name} (\d+)\s*$", text, re.M)
        if match is None:
            sys.exit(f"nxe_version: {header} defines no {name}")
        numbers.append(match.group(1))
    return ".".join(numbers)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("nxe_version: usage: nxe_version.py include/nxe/nxe.h")
    print(header_version(Path(sys.argv[1])))
