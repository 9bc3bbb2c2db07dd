"""The installed libnxe.so and libnxe_sr.so each export exactly the functions their public
header (nxe.h, nxe_sr.h) declares with the library's own export macro (NXE_API, NXE_SR_API) and
nothing else, so the ABI is what the headers say."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from nxe import _binding

REPO = Path(__file__).resolve().parents[1]
PUBLIC_HEADERS = sorted((_binding.INCLUDE_DIR / "nxe").glob("*.h"))


LIBRARIES = {"nxe.h": _binding.LIBRARY_PATH, "nxe_sr.h": _binding.SR_LIBRARY_PATH}
EXPORT_MACROS = {"nxe.h": "NXE_API", "nxe_sr.h": "NXE_SR_API"}


def exported_symbols(library=_binding.LIBRARY_PATH):
    """name -> nm symbol type for every defined dynamic symbol of an installed library."""
    result = subprocess.run(["nm", "-D", "--defined-only", str(library)],
                            capture_output=True, text=True, check=True)
    symbols = {}
    for line in result.stdout.splitlines():
        fields = line.split()
        if len(fields) == 3:
            symbols[fields[2].split("@")[0]] = fields[1]
    return symbols


def declared_functions(header: Path, macro: str | None = None):
    """Names of the functions a header declares with `macro` (its library's export macro
    unless given), read from its text."""
    text = header.read_text()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"^\s*#.*$", " ", text, flags=re.M)
    macro = macro or EXPORT_MACROS[header.name]
    return set(re.findall(rf"\b{macro}\b[^;{{}}]*?\b(nxe_\w+)\s*\(", text))


def all_declared():
    names = set()
    for header in PUBLIC_HEADERS:
        names |= declared_functions(header)
    return names


def test_installed_headers_are_the_source_headers():
    installed = {h.name: h.read_bytes() for h in PUBLIC_HEADERS}
    source = {h.name: h.read_bytes() for h in sorted((REPO / "include" / "nxe").glob("*.h"))}
    assert installed == source


def test_header_declares_functions():
    # Guards the parser below: an empty set would make the other tests pass vacuously.
    assert "nxe_graph_compile" in all_declared()
    assert "nxe_sr_process" in declared_functions(_binding.INCLUDE_DIR / "nxe" / "nxe_sr.h")
    assert sorted(LIBRARIES) == sorted(h.name for h in PUBLIC_HEADERS)


def test_libnxe_sr_declares_its_functions_with_its_own_macro():
    header = _binding.INCLUDE_DIR / "nxe" / "nxe_sr.h"
    assert declared_functions(header, "NXE_API") == set()
    assert "nxe_sr_last_error" in declared_functions(header)


def test_libnxe_leaves_no_public_way_to_write_its_last_error():
    """libnxe_sr reports through its own nxe_sr_last_error, not by writing libnxe's message."""
    assert not any("set_last_error" in name for name in exported_symbols(_binding.LIBRARY_PATH))


@pytest.mark.parametrize("header", sorted(LIBRARIES))
def test_library_exports_only_nxe_symbols(header):
    foreign = sorted(name for name in exported_symbols(LIBRARIES[header])
                     if not name.startswith("nxe_"))
    assert foreign == []


@pytest.mark.parametrize("header", sorted(LIBRARIES))
def test_every_declared_function_is_exported_as_code(header):
    symbols = exported_symbols(LIBRARIES[header])
    declared = declared_functions(_binding.INCLUDE_DIR / "nxe" / header)
    missing = sorted(name for name in declared if symbols.get(name) != "T")
    assert missing == []


@pytest.mark.parametrize("header", sorted(LIBRARIES))
def test_nothing_is_exported_beyond_the_header(header):
    declared = declared_functions(_binding.INCLUDE_DIR / "nxe" / header)
    extra = sorted(set(exported_symbols(LIBRARIES[header])) - declared)
    assert extra == []
