"""The C sources are layered and every #include points down (docs/architecture.md, "Layers"):
public headers < kernels < core < text < audio < ops < graph < transform < model < runtime <
engine < sr. A file may include its own layer and the layers below it, never one above;
libnxe_sr stands on the public headers and its pixel kernels only. The test reads the sources of
this checkout."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Lowest first. A header resolves the way the build's include path does: beside the including
# file, then include/, csrc/, kernels/ (meson.build: nxe_include_dirs).
LAYERS = ["include", "kernels", "core", "text", "audio", "ops", "graph", "transform", "model",
          "runtime", "engine", "sr"]
INCLUDE_DIRS = ["include", "csrc", "kernels"]
# What libnxe_sr may include besides itself: it uses libnxe through the public ABI only.
SR_MAY_INCLUDE = {"include", "kernels", "sr"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path: Path, root: Path) -> str:
    """The layer a source file belongs to, from its folder."""
    parts = path.relative_to(root).parts
    if parts[0] in ("include", "kernels"):
        return parts[0]
    assert parts[0] == "csrc" and parts[1] in LAYERS, f"{path} is in no known layer"
    return parts[1]


GENERATED = re.compile(r"configure_file\([^)]*output\s*:\s*'([^']+)'")


def generated_here(candidate: Path) -> bool:
    """Whether the meson.build beside `candidate` generates it into the build tree."""
    build_file = candidate.parent / "meson.build"
    return build_file.is_file() and candidate.name in GENERATED.findall(build_file.read_text())


def resolve(name: str, including: Path, root: Path) -> Path:
    for folder in [including.parent] + [root / d for d in INCLUDE_DIRS]:
        candidate = folder / name
        if candidate.is_file() or generated_here(candidate):
            return candidate
    raise AssertionError(f"{including.relative_to(root)} includes '{name}', which no include "
                         "folder holds")


def sources(root: Path):
    for folder in ("csrc", "kernels", "include"):
        yield from sorted(p for p in (root / folder).rglob("*") if p.suffix in (".c", ".h"))


def upward_includes(root: Path):
    """(including file, included file, why) for every include that breaks the layering."""
    found = []
    for path in sources(root):
        own = layer_of(path, root)
        for name in INCLUDE.findall(path.read_text(errors="replace")):
            target = resolve(name, path, root)
            other = layer_of(target, root)
            pair = (path.relative_to(root).as_posix(), target.relative_to(root).as_posix())
            if own == "sr" and other not in SR_MAY_INCLUDE:
                found.append(pair + ("libnxe_sr includes libnxe's internals",))
            elif LAYERS.index(other) > LAYERS.index(own):
                found.append(pair + (f"{own} includes {other}, a layer above it",))
    return found


def test_no_include_points_to_a_higher_layer():
    found = upward_includes(REPO)
    assert not found, "\n".join(f"{a} -> {b}: {why}" for a, b, why in found)


def test_the_loader_and_the_ops_see_no_graph_header():
    """The binary loader builds executables from nodes, not graph-builder structs, and op rules
    read nodes: neither reaches csrc/graph, directly or through the headers they include."""
    def reached(path: Path, seen: set) -> set:
        for name in INCLUDE.findall(path.read_text()):
            target = resolve(name, path, REPO)
            if target not in seen:
                seen.add(target)
                reached(target, seen)
        return seen

    roots = [REPO / "csrc/runtime/binary_loader.c"] + sorted((REPO / "csrc/ops").glob("*.[ch]"))
    for path in roots:
        graph = [p for p in reached(path, set()) if layer_of(p, REPO) == "graph"]
        assert not graph, f"{path.relative_to(REPO)} reaches {graph}"


DECLARED = re.compile(
    r"^[A-Za-z_][\w \t*]*?\b(nxe_\w+)\s*\([^;{]*?\)\s*(?:NXE_PRINTF\([^)]*\))?\s*;", re.M)
DEFINED = re.compile(r"^[A-Za-z_][\w \t*]*?\b(nxe_\w+)\s*\([^;{]*?\)\s*\{", re.M)


def without_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)


def misplaced_definitions(root: Path):
    """(function, declaring header, defining file) where an internal header of one layer declares
    a function that another layer defines: a call that looks downward but runs upward."""
    defined_in = {}
    for path in sources(root):
        if path.suffix == ".c":
            for name in DEFINED.findall(without_comments(path.read_text(errors="replace"))):
                defined_in[name] = path
    found = []
    for path in sources(root):
        if path.suffix != ".h" or layer_of(path, root) == "include":
            continue
        for name in DECLARED.findall(without_comments(path.read_text(errors="replace"))):
            where = defined_in.get(name)
            if where and layer_of(where, root) != layer_of(path, root):
                found.append((name, path.relative_to(root).as_posix(),
                              where.relative_to(root).as_posix()))
    return found


def test_each_layer_defines_what_its_headers_declare():
    found = misplaced_definitions(REPO)
    assert not found, "\n".join(f"{name}: declared in {h}, defined in {c}" for name, h, c in found)


def test_the_check_finds_an_upward_include(tmp_path):
    """The rule itself: a core file that includes an ops header is reported, a downward include
    and a sibling include are not."""
    for folder in ("include/nxe", "kernels", "csrc/core", "csrc/ops", "csrc/sr"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "include/nxe/nxe.h").write_text("")
    (tmp_path / "kernels/gemm.h").write_text('#include "nxe/nxe.h"\n')
    (tmp_path / "csrc/ops/op_def.h").write_text('#include "core/core.h"\n#include "gemm.h"\n')
    (tmp_path / "csrc/core/core.h").write_text('#include "nxe/nxe.h"\n')
    (tmp_path / "csrc/core/bad.c").write_text('#include "core.h"\n#include "ops/op_def.h"\n')
    (tmp_path / "csrc/sr/sr.c").write_text('#include "gemm.h"\n#include "core/core.h"\n')
    assert sorted(upward_includes(tmp_path)) == [
        ("csrc/core/bad.c", "csrc/ops/op_def.h", "core includes ops, a layer above it"),
        ("csrc/sr/sr.c", "csrc/core/core.h", "libnxe_sr includes libnxe's internals"),
    ]
