# The ONNX backend node test cases through nxe.onnx: the pass count must not drop below the
# committed baseline, and every case that does not pass must end in a clear 'unsupported'
# rather than an internal error.
from __future__ import annotations

import json
from pathlib import Path

import pytest
from nxe import conformance

BASELINE = Path(__file__).with_name("conformance_baseline.json")


@pytest.fixture(scope="module")
def report():
    return conformance.run_suite(threads=1)


def test_pass_count_does_not_drop_below_the_baseline(report):
    baseline = json.loads(BASELINE.read_text())["passed"]
    assert report["passed"] >= baseline, (
        f"{report['passed']} conformance cases pass, the baseline is {baseline}")


def test_no_case_ends_in_an_internal_error(report):
    errors = [f"{c['name']}: {c['message']}" for c in report["cases"]
              if c["message"].startswith("error:")]
    assert errors == []


def test_every_case_is_counted_once(report):
    assert report["total"] == len(report["cases"]) == (
        report["passed"] + report["failed"] + report["unsupported"])
    assert report["total"] > 1000


def test_unsupported_cases_say_why(report):
    for case in report["cases"]:
        if case["outcome"] == "unsupported":
            assert "unsupported" in case["message"].lower(), case["name"]
