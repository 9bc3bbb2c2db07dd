"""Load time of a compiled binary (.nxb) against compiling in memory, for EDSR-baseline x2 with
random weights, and the size of the object code the load-and-run path needs against the whole
library. A benchmark, not a test: it prints numbers and asserts nothing about them.

    python benchmarks/load_time.py [--build-dir DIR] [--repeats 25] [--json out.json]
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import nxe
from nxe import models
from nxe._binding import check, ffi, lib

REPO = Path(__file__).resolve().parents[1]

# What a program that only loads and runs binaries links: the loader and the executable, the
# container parser the loader reads with, the op table it looks kernels up in, the op run
# functions, the reference kernels and the core. Not the graph builder, the compiler, the
# passes, the model-file reader or writer, or the binary writer.
EXECUTOR_SOURCES = (
    "csrc/runtime/binary_loader.c",
    "csrc/runtime/executable.c",
    "csrc/model/container.c",
    "csrc/graph/registry.c",
    "csrc/core/*",
    "csrc/ops/*",
    "kernels/ref/*",
)


# -- timing -------------------------------------------------------------------------------


def median_seconds(action: Callable[[], Callable[[], None]], repeats: int) -> float:
    """Median wall time of ``action``; the cleanup it returns runs outside the clock."""
    action()()  # warm the page cache and the allocator
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        cleanup = action()
        times.append(time.perf_counter() - start)
        cleanup()
    return statistics.median(times)


def load_file_action(path: Path, verify: bool, threads: int) -> Callable[[], Callable[[], None]]:
    options = ffi.new("nxe_load_options *")
    options.struct_size = ffi.sizeof("nxe_load_options")
    options.num_threads = threads
    options.verify = 1 if verify else 0
    options.allow_recompile = 0
    encoded = os.fsencode(path)
    out = ffi.new("nxe_executable **")

    def action() -> Callable[[], None]:
        check(lib.nxe_executable_load_file(encoded, options, out))
        return lambda: lib.nxe_executable_release(out[0])

    return action


def compile_action(graph: nxe.Graph, threads: int) -> Callable[[], Callable[[], None]]:
    options = ffi.new("nxe_compile_options *")
    options.struct_size = ffi.sizeof("nxe_compile_options")
    options.num_threads = threads
    out = ffi.new("nxe_executable **")

    def action() -> Callable[[], None]:
        # The C call itself, like the load it is compared with: no Python wrapper in the clock.
        check(lib.nxe_graph_compile(graph._handle, options, out))
        return lambda: lib.nxe_executable_release(out[0])

    return action


# -- object code --------------------------------------------------------------------------


def ensure_build(build_dir: Path) -> None:
    """Configures (once) and builds the C library in ``build_dir`` without the Python package."""
    if not (build_dir / "build.ninja").exists():
        subprocess.run(["meson", "setup", str(build_dir), str(REPO), "-Dpython=false",
                        "-Dbuildtype=release"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["ninja", "-C", str(build_dir)], check=True, stdout=subprocess.DEVNULL)


def library_objects(build_dir: Path) -> dict[str, Path]:
    """Source path (relative to the repository) -> object file of libnxe in ``build_dir``.
    Meson names an object after its source path with '/' turned into '_'."""
    sources = sorted(str(p.relative_to(REPO)) for folder in ("csrc", "kernels")
                     for p in (REPO / folder).rglob("*.c"))
    by_mangled = {source.replace("/", "_") + ".o": source for source in sources}
    objects = {}
    for target_dir in build_dir.glob("libnxe*.p"):
        for obj in target_dir.glob("*.o"):
            if obj.name in by_mangled:
                objects[by_mangled[obj.name]] = obj
    if not objects:
        raise SystemExit(f"no libnxe objects under {build_dir}; is it a meson build of nxe?")
    return objects


def elf_sizes(path: Path) -> tuple[int, int, int]:
    """(text, data, bss) of an ELF file, counted as Berkeley `size` does: allocated sections
    that are read-only (code and constants), writable, and without file contents."""
    raw = path.read_bytes()
    if raw[:4] != b"\x7fELF":
        raise ValueError(f"{path} is not an ELF file")
    is64, endian = raw[4] == 2, "<" if raw[5] == 1 else ">"
    word = endian + ("Q" if is64 else "I")
    # e_shoff, e_shentsize and e_shnum; in a section header sh_type, sh_flags and sh_size.
    shoff, = struct.unpack_from(word, raw, 0x28 if is64 else 0x20)
    shentsize, shnum = struct.unpack_from(endian + "HH", raw, 0x3A if is64 else 0x2E)
    flags_at, size_at = (8, 32) if is64 else (8, 20)
    sht_nobits, shf_write, shf_alloc = 8, 0x1, 0x2
    text = data = bss = 0
    for i in range(shnum):
        header = shoff + i * shentsize
        sh_type, = struct.unpack_from(endian + "I", raw, header + 4)
        flags, = struct.unpack_from(word, raw, header + flags_at)
        size, = struct.unpack_from(word, raw, header + size_at)
        if not flags & shf_alloc:
            continue
        if sh_type == sht_nobits:
            bss += size
        elif flags & shf_write:
            data += size
        else:
            text += size
    return text, data, bss


def is_executor_source(source: str) -> bool:
    return any(fnmatch.fnmatchcase(source, pattern) for pattern in EXECUTOR_SOURCES)


def outside_references(objects: dict[str, Path]) -> list[dict[str, str]] | None:
    """Symbols the load-and-run objects use that only other objects define (read with `nm`;
    None when it is missing): what a minimal executor would still have to cut or move."""
    if shutil.which("nm") is None:
        return None
    defined: dict[str, str] = {}
    undefined: dict[str, set[str]] = {}
    for source, obj in objects.items():
        listing = subprocess.run(["nm", "-P", str(obj)], check=True, capture_output=True,
                                 text=True).stdout
        for line in listing.splitlines():
            name, kind = line.split()[:2]
            if kind == "U":
                undefined.setdefault(source, set()).add(name)
            elif kind.isupper():
                defined[name] = source
    return [{"user": source, "symbol": name, "defined_in": defined[name]}
            for source in sorted(objects) if is_executor_source(source)
            for name in sorted(undefined.get(source, ()))
            if name in defined and not is_executor_source(defined[name])]


def object_code_report(build_dir: Path) -> dict:
    objects = library_objects(build_dir)
    rows = []
    for source, obj in sorted(objects.items()):
        text, data, bss = elf_sizes(obj)
        rows.append({"source": source, "text": text, "data": data, "bss": bss,
                     "total": text + data + bss, "executor": is_executor_source(source)})
    libraries = sorted((p for p in build_dir.glob("libnxe.so*") if p.is_file()),
                       key=lambda p: len(p.name))
    library = libraries[0] if libraries else None
    report = {
        "build_dir": str(build_dir),
        "objects": rows,
        "executor_total": sum(r["total"] for r in rows if r["executor"]),
        "all_objects_total": sum(r["total"] for r in rows),
        "outside_references": outside_references(objects),
    }
    if library is not None:
        report["library"] = {"path": str(library), "file_bytes": library.stat().st_size,
                             "loaded_bytes": sum(elf_sizes(library))}
    return report


# -- main ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", type=Path,
                        help="meson build of nxe to read object sizes from (default: one "
                             "made under the temporary directory)")
    parser.add_argument("--repeats", type=int, default=25, help="timed runs per figure (>= 20)")
    parser.add_argument("--height", type=int, default=64)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    if args.repeats < 20:
        parser.error("--repeats must be at least 20")

    weights = models.edsr_random_weights(scale=2, seed=0)
    model = models.edsr_baseline(weights, args.height, args.width, scale=2)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "edsr_baseline_x2.nxb"
        model.graph.compile_to_binary(path, threads=args.threads)
        timings = {
            "load_file_verify_on": median_seconds(
                load_file_action(path, True, args.threads), args.repeats),
            "load_file_verify_off": median_seconds(
                load_file_action(path, False, args.threads), args.repeats),
            "compile_in_memory": median_seconds(
                compile_action(model.graph, args.threads), args.repeats),
        }
        binary_bytes = path.stat().st_size

    build_dir = args.build_dir or Path(tempfile.gettempdir()) / "nxe-load-time-build"
    ensure_build(build_dir)
    code = object_code_report(build_dir)

    print(f"EDSR-baseline x2, input 1x3x{args.height}x{args.width}, {args.threads} thread(s), "
          f"nxe {nxe.version()}")
    print(f"binary: {binary_bytes} bytes ({binary_bytes / 2**20:.2f} MiB)")
    print(f"{'':24}{'median ms':>12}   (of {args.repeats})")
    for name, seconds in timings.items():
        print(f"{name:24}{seconds * 1e3:12.3f}")
    ratio = timings["compile_in_memory"] / timings["load_file_verify_off"]
    print(f"compile / load (verify off): {ratio:.1f}x")
    print()
    print(f"object code in {build_dir} (bytes; * = on the load-and-run path)")
    print(f"  {'source':36}{'text':>9}{'data':>8}{'bss':>8}")
    for row in code["objects"]:
        mark = "*" if row["executor"] else " "
        print(f"{mark} {row['source']:36}{row['text']:9}{row['data']:8}{row['bss']:8}")
    share = code["executor_total"] / code["all_objects_total"]
    print(f"load-and-run path: {code['executor_total']} of {code['all_objects_total']} bytes "
          f"of object code ({share:.0%})")
    if "library" in code:
        lib_info = code["library"]
        print(f"whole library {lib_info['path']}: {lib_info['loaded_bytes']} bytes loaded, "
              f"{lib_info['file_bytes']} bytes on disk")
    outside = code["outside_references"]
    if outside is None:
        print("(nm not found: references leaving the load-and-run objects not listed)")
    elif outside:
        print("the load-and-run objects still reference, elsewhere in the library:")
        by_target: dict[str, set[str]] = {}
        for ref in outside:
            by_target.setdefault(ref["defined_in"], set()).add(ref["symbol"])
        for target, symbols in sorted(by_target.items()):
            print(f"  {target}: {', '.join(sorted(symbols))}")

    if args.json:
        result = {
            "model": "edsr_baseline_x2",
            "input_shape": [1, 3, args.height, args.width],
            "threads": args.threads,
            "repeats": args.repeats,
            "binary_bytes": binary_bytes,
            "median_seconds": timings,
            "object_code": code,
            "nxe_version": nxe.version(),
        }
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
