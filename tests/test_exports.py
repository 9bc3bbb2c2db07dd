"""The installed libnxe.so exports exactly the NXE_API functions of the public headers and
nothing else, so the ABI is what the headers say."""

import re
import subprocess
from pathlib import Path

from nxe import _binding

REPO = Path(__file__).resolve().parents[1]
PUBLIC_HEADERS = sorted((_binding.INCLUDE_DIR / "nxe").glob("*.h"))


def exported_symbols():
    """name -> nm symbol type for every defined dynamic symbol of the installed library."""
    result = subprocess.run(["nm", "-D", "--defined-only", str(_binding.LIBRARY_PATH)],
                            capture_output=True, text=True, check=True)
    symbols = {}
    for line in result.stdout.splitlines():
        fields = line.split()
        if len(fields) == 3:
            symbols[fields[2].split("@")[0]] = fields[1]
    return symbols


def declared_functions(header: Path):
    """Names of the NXE_API functions a header declares, read from its text."""
    text = header.read_text()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"^\s*#.*$", " ", text, flags=re.M)
    return set(re.findall(r"\bNXE_API\b[^;{}]*?\b(nxe_\w+)\s*\(", text))


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


def test_library_exports_only_nxe_symbols():
    foreign = sorted(name for name in exported_symbols() if not name.startswith("nxe_"))
    assert foreign == []


def test_every_declared_function_is_exported_as_code():
    symbols = exported_symbols()
    missing = sorted(name for name in all_declared() if symbols.get(name) != "T")
    assert missing == []


def test_nothing_is_exported_beyond_the_headers():
    extra = sorted(set(exported_symbols()) - all_declared())
    assert extra == []
