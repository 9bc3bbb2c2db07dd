"""Fuzzes every entry point of untrusted bytes for a bounded number of executions and prints,
per entry point, the executions, the final coverage, the findings (crash, leak, timeout and
out-of-memory files) and the time taken. Exits non-zero on any finding. Coverage is libFuzzer's
for the C harnesses (cov: edges, ft: features) and traced Python lines for the Python ones
(images: cov lines of images.py, ft lines plus line pairs; onnx: cov lines of the importer).

It builds the libFuzzer harnesses of tests/fuzz with clang (ASan+UBSan, `meson setup
build/fuzz -Dfuzz=true`), writes their seeds with tests/fuzz/make_seeds.py (which needs the
nxe package installed), then runs each entry point in turn. Each entry point has its own run
count for CI (the default) and for --long (10^6). An entry point whose harness is not in this
checkout is skipped with its reason; --require-all turns a skip into a failure.

    python tools/fuzz.py                      # CI: 10^5 executions per libFuzzer harness
    python tools/fuzz.py --long               # 10^6 executions each
    python tools/fuzz.py --runs 1000 graph    # one entry point, 1,000 executions
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# libFuzzer's own report files; anything of these in an entry point's artifact folder is a
# finding.
FINDING_PREFIXES = ("crash-", "leak-", "timeout-", "oom-", "slow-unit-")


@dataclass(frozen=True)
class EntryPoint:
    name: str
    harness: str  # the file (relative to the root) that must be in the checkout
    ci_runs: int
    long_runs: int
    libfuzzer_target: str | None = None  # ninja target under the build folder
    seeds: str | None = None  # folder under the seed folder
    max_len: int = 65536
    asan_options: str = ""  # added to ASAN_OPTIONS for this entry point
    python_args: tuple[str, ...] = ()  # a Python harness: its arguments after the script

    def command(self, runs: int, build: Path, seeds: Path, artifacts: Path) -> list[str]:
        if self.libfuzzer_target:
            corpus = build / "corpus" / self.name
            corpus.mkdir(parents=True, exist_ok=True)
            # New inputs go to the first folder (kept between runs), the seeds stay as written.
            return [str(build / self.libfuzzer_target), f"-runs={runs}",
                    f"-max_len={self.max_len}", "-timeout=10", "-print_final_stats=1",
                    f"-artifact_prefix={artifacts}/", str(corpus), str(seeds / self.seeds)]
        arguments = [arg.format(runs=runs, seeds=seeds) for arg in self.python_args]
        return [sys.executable, str(ROOT / self.harness), *arguments,
                "--findings", str(artifacts / "findings")]


# One row per entry point. The Python harnesses run about a thousand times slower per input
# than the C ones, so CI gives them fewer executions.
ENTRY_POINTS = (
    EntryPoint("model", "tests/fuzz/fuzz_model.c", 100_000, 1_000_000,
               libfuzzer_target="tests/fuzz/fuzz_model", seeds="model"),
    EntryPoint("binary", "tests/fuzz/fuzz_binary.c", 100_000, 1_000_000,
               libfuzzer_target="tests/fuzz/fuzz_binary", seeds="binary"),
    EntryPoint("sr_metadata", "tests/fuzz/fuzz_sr_metadata.c", 100_000, 1_000_000,
               libfuzzer_target="tests/fuzz/fuzz_sr_metadata", seeds="sr_metadata"),
    # A tokenizer.json, 0xFF 0x00, then a text: both creation and encoding.
    EntryPoint("tokenizer", "tests/fuzz/fuzz_tokenizer.c", 100_000, 1_000_000,
               libfuzzer_target="tests/fuzz/fuzz_tokenizer", seeds="tokenizer", max_len=16384),
    # Graphs of huge tensors compile to executables that reserve huge staging buffers; ASan
    # writes shadow memory for all of one when it is freed. Refusing allocations above 64 MiB
    # keeps the fuzzer's memory flat and sends those compiles down their out-of-memory paths.
    EntryPoint("graph", "tests/fuzz/fuzz_graph.c", 100_000, 1_000_000,
               libfuzzer_target="tests/fuzz/fuzz_graph", seeds="graph", max_len=4096,
               asan_options="max_allocation_size_mb=64"),
    # Each input upscales real frames (100-200 a second under ASan on 2 cores): CI runs a
    # fifth of the other C rows' count.
    EntryPoint("sr_frames", "tests/fuzz/fuzz_sr_frames.c", 20_000, 1_000_000,
               libfuzzer_target="tests/fuzz/fuzz_sr_frames", seeds="sr_frames", max_len=256),
    EntryPoint("images", "tools/fuzz_images.py", 20_000, 1_000_000,
               python_args=("--runs", "{runs}", "--seeds", "{seeds}/images")),
    EntryPoint("onnx", "tools/fuzz_onnx.py", 5_000, 1_000_000,
               python_args=("--runs", "{runs}")),
)


@dataclass
class Result:
    entry: EntryPoint
    runs: int
    executions: str = "-"
    cov: str = "-"
    ft: str = "-"
    findings: list[str] | None = None
    seconds: float = 0.0
    skipped: str | None = None


def build_harnesses(build: Path, targets: list[str]) -> None:
    if not shutil.which("clang"):
        sys.exit("fuzz.py: clang is needed for the libFuzzer harnesses (with its compiler-rt)")
    if not (build / "build.ninja").exists():
        subprocess.run(["meson", "setup", str(build), "-Dpython=false", "-Dfuzz=true",
                        "-Dbuildtype=debugoptimized"], cwd=ROOT, check=True,
                       env={**os.environ, "CC": "clang"}, stdout=subprocess.DEVNULL)
    subprocess.run(["ninja", "-C", str(build), *targets], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)


def make_seeds(seeds: Path) -> None:
    subprocess.run([sys.executable, str(ROOT / "tests/fuzz/make_seeds.py"), str(seeds)],
                   cwd=ROOT, check=True)


def parse_log(text: str, result: Result) -> None:
    """Executions and coverage from the final statistics: libFuzzer's (cov: edges, ft:
    features), fuzz_images.py's (lines of images.py, lines plus line pairs) and
    fuzz_onnx.py's (lines of the importer package)."""
    executed = re.findall(r"stat::number_of_executed_units:\s*(\d+)", text)
    executed += re.findall(r"^fuzz_images: (\d+) executions", text, re.M)
    executed += re.findall(r"^executions: (\d+) in ", text, re.M)
    if executed:
        result.executions = executed[-1]
    coverage = re.findall(r"cov: (\d+) ft: (\d+)", text)
    coverage += [(lines, str(int(lines) + int(pairs)))
                 for lines, pairs in re.findall(r"^#\d+ lines: (\d+) pairs: (\d+)", text, re.M)]
    coverage += [(lines, "-") for lines in re.findall(r"importer lines reached: (\d+)", text)]
    if coverage:
        result.cov, result.ft = coverage[-1]


def run_entry(entry: EntryPoint, runs: int, build: Path, seeds: Path) -> Result:
    result = Result(entry, runs)
    artifacts = build / "artifacts" / entry.name
    shutil.rmtree(artifacts, ignore_errors=True)
    artifacts.mkdir(parents=True)
    log_path = build / "logs" / f"{entry.name}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ,
           "ASAN_OPTIONS": ":".join(filter(None, ("allocator_may_return_null=1",
                                                  entry.asan_options))),
           "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"}
    start = time.monotonic()
    with open(log_path, "w") as log:
        # A Python harness runs in its artifact folder, where atheris writes its crash files.
        process = subprocess.run(entry.command(runs, build, seeds, artifacts), cwd=artifacts,
                                 env=env, stdout=log, stderr=subprocess.STDOUT)
    result.seconds = time.monotonic() - start
    parse_log(log_path.read_text(errors="replace"), result)
    result.findings = sorted(p.name for p in artifacts.iterdir()
                             if p.name.startswith(FINDING_PREFIXES))
    # A Python harness saves each finding's input (with a .txt beside it) under findings/.
    if (artifacts / "findings").is_dir():
        result.findings += sorted(f"findings/{p.name}" for p in (artifacts / "findings").iterdir()
                                  if p.suffix != ".txt")
    if process.returncode != 0 and not result.findings:
        result.findings = [f"exit status {process.returncode}, see {log_path}"]
    if result.findings:
        tail = log_path.read_text(errors="replace").splitlines()[-60:]
        print("\n".join(tail), file=sys.stderr)
    return result


def print_table(results: list[Result], long: bool) -> None:
    print(f"\n{'entry point':<12} {'CI/long runs':>17} {'runs':>9} {'executions':>10} "
          f"{'cov':>6} {'ft':>7} {'findings':>8} {'time':>8}")
    for r in results:
        counts = f"{r.entry.ci_runs:,}/{r.entry.long_runs:,}"
        if r.skipped:
            print(f"{r.entry.name:<12} {counts:>17}  skipped: {r.skipped}")
            continue
        findings = len(r.findings or [])
        print(f"{r.entry.name:<12} {counts:>17} {r.runs:>9,} {r.executions:>10} {r.cov:>6} "
              f"{r.ft:>7} {findings:>8} {r.seconds:>7.0f}s")
        for name in r.findings or []:
            print(f"{'':<12}   finding: {name}")
    print(f"({'--long' if long else 'CI'} counts; artifacts and logs under the build folder)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("entry_points", nargs="*", metavar="ENTRY_POINT",
                        help="entry points to run (default: all): "
                             + ", ".join(e.name for e in ENTRY_POINTS))
    parser.add_argument("--long", action="store_true",
                        help="each entry point's long count (10^6) instead of its CI count")
    parser.add_argument("--runs", type=int, help="this many executions for every entry point")
    parser.add_argument("--require-all", action="store_true",
                        help="fail when an entry point's harness is not in this checkout")
    parser.add_argument("--build-dir", type=Path, default=ROOT / "build" / "fuzz",
                        help="the libFuzzer build folder (default: build/fuzz)")
    args = parser.parse_args(argv)

    known = {e.name: e for e in ENTRY_POINTS}
    unknown = [name for name in args.entry_points if name not in known]
    if unknown:
        parser.error(f"unknown entry point(s) {', '.join(unknown)}; known: {', '.join(known)}")
    selected = [known[n] for n in args.entry_points] if args.entry_points else list(ENTRY_POINTS)

    build = args.build_dir.resolve()
    present = [e for e in selected if (ROOT / e.harness).exists()]
    targets = [e.libfuzzer_target for e in present if e.libfuzzer_target]
    if targets:
        build_harnesses(build, targets)
    seeds = build / "seeds"
    make_seeds(seeds)

    results = []
    for entry in selected:
        runs = args.runs or (entry.long_runs if args.long else entry.ci_runs)
        if entry not in present:
            results.append(Result(entry, runs, skipped=f"{entry.harness} is not in this checkout"))
            print(f"{entry.name}: skipped, {entry.harness} is not in this checkout", flush=True)
            continue
        print(f"{entry.name}: {runs:,} executions ...", flush=True)
        results.append(run_entry(entry, runs, build, seeds))
    print_table(results, args.long)

    failed = [r.entry.name for r in results if r.findings]
    skipped = [r.entry.name for r in results if r.skipped]
    if failed:
        print(f"fuzz.py: findings in {', '.join(failed)}", file=sys.stderr)
        return 1
    if skipped and args.require_all:
        print(f"fuzz.py: --require-all and no harness for {', '.join(skipped)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
