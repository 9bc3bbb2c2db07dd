"""The installed libnxe.so and libnxe_sr.so each export exactly the functions their public
headers (libnxe: nxe.h, nxe_audio.h, nxe_engine.h, nxe_experimental.h and nxe_tokenizer.h;
libnxe_sr: nxe_sr.h) declare with the library's own export macro (NXE_API, NXE_SR_API) and
nothing else, so the ABI is what the headers say."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import nxe
import pytest
from nxe import _binding

REPO = Path(__file__).resolve().parents[1]
PUBLIC_HEADERS = sorted((_binding.INCLUDE_DIR / "nxe").glob("*.h"))


# Each library and the headers that declare its functions: the stable and experimental tiers
# of libnxe's ABI are one library.
LIBRARIES = {
    _binding.LIBRARY_PATH: ("nxe.h", "nxe_audio.h", "nxe_engine.h", "nxe_experimental.h",
                            "nxe_tokenizer.h"),
    _binding.SR_LIBRARY_PATH: ("nxe_sr.h",),
}
LIBRARY_IDS = [path.name for path in LIBRARIES]
EXPORT_MACROS = {"nxe.h": "NXE_API", "nxe_audio.h": "NXE_API", "nxe_engine.h": "NXE_API",
                 "nxe_experimental.h": "NXE_API", "nxe_tokenizer.h": "NXE_API",
                 "nxe_sr.h": "NXE_SR_API"}


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


def library_declared(library):
    """The functions the headers of one library declare."""
    names = set()
    for header in LIBRARIES[library]:
        names |= declared_functions(_binding.INCLUDE_DIR / "nxe" / header)
    return names


def test_installed_headers_are_the_source_headers():
    installed = {h.name: h.read_bytes() for h in PUBLIC_HEADERS}
    source = {h.name: h.read_bytes() for h in sorted((REPO / "include" / "nxe").glob("*.h"))}
    assert installed == source


def test_header_declares_functions():
    # Guards the parser below: an empty set would make the other tests pass vacuously.
    assert "nxe_graph_compile" in all_declared()
    assert "nxe_sr_process" in declared_functions(_binding.INCLUDE_DIR / "nxe" / "nxe_sr.h")
    assert "nxe_cpu_kernels" in declared_functions(
        _binding.INCLUDE_DIR / "nxe" / "nxe_experimental.h")
    assert sorted(h for headers in LIBRARIES.values() for h in headers) == sorted(
        h.name for h in PUBLIC_HEADERS)


def test_experimental_functions_are_not_in_the_stable_header():
    stable = declared_functions(_binding.INCLUDE_DIR / "nxe" / "nxe.h")
    experimental = declared_functions(_binding.INCLUDE_DIR / "nxe" / "nxe_experimental.h")
    assert experimental and not stable & experimental


def test_libnxe_sr_declares_its_functions_with_its_own_macro():
    header = _binding.INCLUDE_DIR / "nxe" / "nxe_sr.h"
    assert declared_functions(header, "NXE_API") == set()
    assert "nxe_sr_last_error" in declared_functions(header)


def test_libnxe_leaves_no_public_way_to_write_its_last_error():
    """libnxe_sr reports through its own nxe_sr_last_error, not by writing libnxe's message."""
    assert not any("set_last_error" in name for name in exported_symbols(_binding.LIBRARY_PATH))


@pytest.mark.parametrize("library", LIBRARIES, ids=LIBRARY_IDS)
def test_library_exports_only_nxe_symbols(library):
    foreign = sorted(name for name in exported_symbols(library) if not name.startswith("nxe_"))
    assert foreign == []


@pytest.mark.parametrize("library", LIBRARIES, ids=LIBRARY_IDS)
def test_every_declared_function_is_exported_as_code(library):
    symbols = exported_symbols(library)
    missing = sorted(name for name in library_declared(library) if symbols.get(name) != "T")
    assert missing == []


@pytest.mark.parametrize("library", LIBRARIES, ids=LIBRARY_IDS)
def test_nothing_is_exported_beyond_the_headers(library):
    extra = sorted(set(exported_symbols(library)) - library_declared(library))
    assert extra == []


# -- tiers and version tags ------------------------------------------------------------------

LIBNXE_HEADERS = LIBRARIES[_binding.LIBRARY_PATH]
SINCE = re.compile(r"\b[Ss]ince (\d+)\.(\d+)\b")


def declarations_with_comments(header: Path):
    """(name, the comment that documents it) for every function, struct, enum and opaque type
    of a header: the comment block right above the declaration, or above the run of
    declarations without blank lines it belongs to."""
    lines = header.read_text().splitlines()
    found = []
    for i, line in enumerate(lines):
        match = (re.match(r"^NXE_API\b[^(]*?\b(nxe_\w+)\s*\(", line)
                 or re.match(r"^typedef struct (nxe_\w+)", line)
                 or re.match(r"^enum (nxe_\w+) \{", line)
                 or re.match(r"^typedef \w+ (nxe_\w+);", line))
        if not match:
            continue
        j = i - 1
        while j >= 0 and lines[j].strip() and not lines[j].rstrip().endswith("*/"):
            j -= 1
        end = j
        while j >= 0 and "/*" not in lines[j]:
            j -= 1
        comment = "\n".join(lines[j:end + 1]) if end >= 0 and lines[end].strip() else ""
        found.append((match.group(1), comment))
    return found


def test_tag_parser_finds_the_declarations():
    # Guards the parser: an empty list would make the tag tests pass vacuously.
    names = {name for header in LIBNXE_HEADERS
             for name, _ in declarations_with_comments(_binding.INCLUDE_DIR / "nxe" / header)}
    assert {"nxe_graph_compile", "nxe_tensor_desc", "nxe_dtype", "nxe_context",
            "nxe_cpu_kernels"} <= names
    assert library_declared(_binding.LIBRARY_PATH) <= names


@pytest.mark.parametrize("header", LIBNXE_HEADERS)
def test_every_public_declaration_says_which_api_version_added_it(header):
    untagged = sorted(name for name, comment in
                      declarations_with_comments(_binding.INCLUDE_DIR / "nxe" / header)
                      if not SINCE.search(comment))
    assert untagged == []


@pytest.mark.parametrize("header", LIBNXE_HEADERS)
def test_version_tags_are_no_later_than_the_api_version(header):
    text = (_binding.INCLUDE_DIR / "nxe" / header).read_text()
    tags = {(int(major), int(minor)) for major, minor in SINCE.findall(text)}
    assert tags and max(tags) <= nxe.api_version()
