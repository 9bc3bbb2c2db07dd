"""Start-up time of nxe: `import nxe` in a fresh interpreter and the `nxe --help` command, each
the median of N fresh processes, against the targets (import 0.2 s, --help 0.3 s). Unlike the
other benchmarks it checks: it exits 1 when a median is over its target, so a change that
brings a heavy import back to start-up shows. It also lists the optional packages each one
loaded (none should be).

    python benchmarks/startup.py [--runs 15] [--json out.json]

`import nxe` is timed inside the new interpreter (from just before the import to just after),
so the interpreter's own start-up is left out; it is printed beside it. `nxe --help` is timed
from outside, as a user waits for it: the whole process, interpreter start-up included. It
runs the `nxe` script installed beside this Python (else the one on PATH). The targets apply
to the wall-clock medians; the CPU time (user + system) beside them moves less when other work
shares the machine, so it shows what start-up costs on a busy one.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGETS_S = {"import nxe": 0.2, "nxe --help": 0.3}
# Optional packages none of which `import nxe` or `nxe --help` needs.
HEAVY = ("ml_dtypes", "onnx", "onnxruntime", "PIL", "torch", "tqdm", "rich", "scipy", "skimage")

_IMPORT_PROBE = f"""
import sys, time, json
start, cpu = time.perf_counter(), time.process_time()
import nxe
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
heavy = [m for m in {HEAVY!r} if m in sys.modules]
print(json.dumps({{"seconds": seconds, "cpu": cpu, "heavy": heavy}}))
"""

# Runs the command's main() as its script does, then reports what it loaded.
_HELP_PROBE = f"""
import contextlib, io, json, sys
from nxe.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    main(["--help"])
print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))
"""


def nxe_command() -> list[str]:
    beside = Path(sys.executable).with_name("nxe")
    found = str(beside) if beside.is_file() else shutil.which("nxe")
    if found is None:
        sys.exit("startup.py: no `nxe` script beside this Python or on PATH; install the package")
    return [found]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one run of the command."""
    start, cpu = time.perf_counter(), _children_cpu()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start, _children_cpu() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--runs", type=int, default=15, help="fresh processes per measurement")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()

    interpreter, imports, helps, import_cpu, help_cpu = [], [], [], [], []
    for _ in range(args.runs):
        interpreter.append(timed([sys.executable, "-c", "pass"])[0])
        probe = json.loads(subprocess.run([sys.executable, "-c", _IMPORT_PROBE], check=True,
                                          capture_output=True, text=True).stdout)
        imports.append(probe["seconds"])
        import_cpu.append(probe["cpu"])
        wall, cpu = timed([*nxe_command(), "--help"])
        helps.append(wall)
        help_cpu.append(cpu)
    import_heavy = json.loads(subprocess.run([sys.executable, "-c", _IMPORT_PROBE], check=True,
                                             capture_output=True, text=True).stdout)["heavy"]
    help_heavy = json.loads(subprocess.run([sys.executable, "-c", _HELP_PROBE], check=True,
                                           capture_output=True, text=True).stdout)

    medians = {"import nxe": statistics.median(imports), "nxe --help": statistics.median(helps)}
    loaded = {"import nxe": import_heavy, "nxe --help": help_heavy}
    print(f"median of {args.runs} fresh processes "
          f"(the interpreter alone starts in {statistics.median(interpreter):.3f} s)")
    print(f"{'':<12} {'median':>8} {'min':>8} {'CPU':>8} {'target':>8}  "
          "optional packages loaded")
    over = []
    for (what, seconds), samples, cpu in zip(medians.items(), (imports, helps),
                                             (import_cpu, help_cpu)):
        target = TARGETS_S[what]
        verdict = "" if seconds <= target else "  OVER"
        if seconds > target:
            over.append(what)
        print(f"{what:<12} {seconds:>7.3f}s {min(samples):>7.3f}s "
              f"{statistics.median(cpu):>7.3f}s {target:>7.3f}s  "
              f"{', '.join(loaded[what]) or '(none)'}{verdict}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "runs": args.runs, "interpreter_s": interpreter, "import_nxe_s": imports,
            "import_nxe_cpu_s": import_cpu, "nxe_help_s": helps, "nxe_help_cpu_s": help_cpu,
            "targets_s": TARGETS_S, "optional_loaded": loaded}, indent=2))
    if over or any(loaded.values()):
        print(f"over target or loading optional packages: {', '.join(over) or 'see above'}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
