"""ONNX conformance: runs the ONNX backend node test cases (generated from the generators in the
installed onnx package) through nxe.onnx and compares with their expected outputs.

    python -m nxe.conformance [--ops Add Conv ...] [--json PATH] [--verbose]

Each case ends passed, failed (wrong values, dtype or shape, or any error that is not a clear
'unsupported'), or unsupported; nothing a case does stops the run.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .errors import Error, UnsupportedError

PASSED = "passed"
FAILED = "failed"
UNSUPPORTED = "unsupported"
OUTCOMES = (PASSED, FAILED, UNSUPPORTED)

# The tolerances of onnx's backend test runner, used where a case states none.
RTOL = 1e-3
ATOL = 1e-7


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def case_op_type(case: Any) -> str:
    """The ONNX op a case tests: its node's type for a one-node model; for expanded (function
    body) cases, the op type whose name the case name starts with."""
    nodes = case.model.graph.node
    if len(nodes) == 1 and not case.name.endswith("_expanded"):
        return nodes[0].op_type
    import onnx.defs

    stem = case.name.removeprefix("test_")
    best = ""
    for schema in onnx.defs.get_all_schemas():
        for candidate in {_snake(schema.name), schema.name.lower()}:
            if (stem == candidate or stem.startswith(candidate + "_")) and \
                    len(candidate) > len(_snake(best)):
                best = schema.name
    return best or (nodes[0].op_type if nodes else "?")


def _tensor(name: str, value: Any) -> np.ndarray:
    """A case's input or expected output as an array: numpy scalars and TensorProtos convert;
    sequences, maps and optionals are not tensors, which nxe does not run."""
    from onnx import TensorProto, numpy_helper

    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, np.generic):
        return np.asarray(value)
    if isinstance(value, TensorProto):
        return numpy_helper.to_array(value)
    raise UnsupportedError(f"unsupported: {name!r} is a {type(value).__name__}, not a tensor")


def _compare(expected: Sequence[Any], actual: dict[str, np.ndarray], names: Sequence[str],
             rtol: float, atol: float) -> None:
    if len(expected) != len(names):
        raise AssertionError(f"{len(names)} outputs for {len(expected)} expected")
    for name, reference in zip(names, expected):
        result = actual[name]
        if result.dtype != reference.dtype:
            raise AssertionError(f"output {name!r}: dtype {result.dtype}, expected "
                                 f"{reference.dtype}")
        if result.shape != reference.shape:
            raise AssertionError(f"output {name!r}: shape {result.shape}, expected "
                                 f"{reference.shape}")
        if reference.dtype.name == "bfloat16":
            # numpy does not treat bfloat16 as a float kind, so NaN would never equal NaN.
            reference, result = reference.astype(np.float32), result.astype(np.float32)
        if reference.dtype.kind in "fc":
            np.testing.assert_allclose(result, reference, rtol=rtol, atol=atol,
                                       err_msg=f"output {name!r}")
        else:
            np.testing.assert_array_equal(result, reference, err_msg=f"output {name!r}")


def _is_unsupported(error: BaseException) -> bool:
    return isinstance(error, UnsupportedError) or (
        isinstance(error, Error) and "unsupported" in str(error).lower())


def run_case(case: Any, threads: int = 1) -> tuple[str, str]:
    """(outcome, message) of one backend test case."""
    from . import onnx as nxe_onnx

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = nxe_onnx.load(case.model, threads=threads)
            names = model.output_names
            for inputs, outputs in case.data_sets:
                fed = list(case.model.graph.input)[:len(inputs)]
                feeds = {v.name: _tensor(v.name, value) for v, value in zip(fed, inputs)}
                actual = model.run(feeds)
                expected = [_tensor(name, value) for name, value in zip(names, outputs)]
                _compare(expected, actual, names, getattr(case, "rtol", RTOL) or RTOL,
                         getattr(case, "atol", ATOL) or ATOL)
    except AssertionError as error:
        return FAILED, str(error).strip().splitlines()[0] if str(error).strip() else "mismatch"
    except Exception as error:  # noqa: BLE001 - a case must never stop the run
        if _is_unsupported(error):
            return UNSUPPORTED, str(error)
        return FAILED, f"error: {type(error).__name__}: {error}"
    return PASSED, ""


def collect(ops: Iterable[str] | None = None) -> list[Any]:
    """The backend node test cases, optionally only those of the given op types."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    if ops:
        wanted = {op.lower() for op in ops}
        cases = [c for c in cases if case_op_type(c).lower() in wanted]
    return sorted(cases, key=lambda c: c.name)


def run_suite(ops: Iterable[str] | None = None, threads: int = 1) -> dict[str, Any]:
    """Runs the cases and returns the report: totals, per-op counts and per-case results."""
    started = time.monotonic()
    results = []
    for case in collect(ops):
        outcome, message = run_case(case, threads=threads)
        results.append({"name": case.name, "op": case_op_type(case), "outcome": outcome,
                        "message": message})
    totals = Counter(r["outcome"] for r in results)
    per_op: dict[str, Counter] = defaultdict(Counter)
    for r in results:
        per_op[r["op"]][r["outcome"]] += 1
    return {
        "total": len(results),
        **{outcome: totals.get(outcome, 0) for outcome in OUTCOMES},
        "errors": sum(1 for r in results if r["message"].startswith("error:")),
        "seconds": round(time.monotonic() - started, 1),
        "per_op": {op: {o: counts.get(o, 0) for o in OUTCOMES}
                   for op, counts in sorted(per_op.items())},
        "cases": results,
    }


def _print_report(report: dict[str, Any], verbose: bool, out: Any) -> None:
    width = max([len(op) for op in report["per_op"]] + [2])
    print(f"{'op':<{width}}  passed  failed  unsupported", file=out)
    for op, counts in report["per_op"].items():
        print(f"{op:<{width}}  {counts[PASSED]:>6}  {counts[FAILED]:>6}  "
              f"{counts[UNSUPPORTED]:>11}", file=out)
    if verbose:
        print(file=out)
        for r in report["cases"]:
            if r["outcome"] != PASSED:
                print(f"{r['outcome']:<11} {r['name']}: {r['message'][:300]}", file=out)
    print(file=out)
    print(f"{report['total']} cases: {report[PASSED]} passed, {report[FAILED]} failed "
          f"({report['errors']} of them errors), {report[UNSUPPORTED]} unsupported "
          f"in {report['seconds']} s", file=out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nxe.conformance",
                                     description="Run the ONNX backend node tests through nxe.")
    parser.add_argument("--ops", nargs="+", metavar="OP",
                        help="only the cases of these ONNX op types")
    parser.add_argument("--json", metavar="PATH", help="write the full report as JSON")
    parser.add_argument("--verbose", action="store_true",
                        help="list every case that did not pass, with its message")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads per executable (0: every CPU)")
    args = parser.parse_args(argv)
    report = run_suite(args.ops, threads=args.threads)
    _print_report(report, args.verbose, sys.stdout)
    if args.json:
        with open(args.json, "w") as file:
            json.dump(report, file, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
