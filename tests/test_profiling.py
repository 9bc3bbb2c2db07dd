"""Per-step profiles of runs from Python: Executable.profile() returns each run's steps (op,
kernel, shapes, times) in plan order, a table of them and a Chrome trace with one complete event
per step per run; last_profile() reads what a profiled run left; `nxe bench` prints the table
for a model file, a built-in model or an ONNX file."""

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import nxe
import pytest
from nxe import bench

INPUT_SHAPE = (1, 3, 20, 24)
FILTERS = 8
RUNS = 3


def conv_graph():
    """conv1 (3x3, same size) -> relu1 -> conv2 (1x1) -> flip (NCHW to NHWC)"""
    rng = np.random.default_rng(0)
    g = nxe.Graph()
    x = g.input("x", INPUT_SHAPE, "f32")
    w1 = g.constant(rng.standard_normal((FILTERS, INPUT_SHAPE[1], 3, 3)).astype(np.float32))
    w2 = g.constant(rng.standard_normal((4, FILTERS, 1, 1)).astype(np.float32))
    c1 = g.Conv2d(x, w1, pads=[1, 1, 1, 1], name="conv1")
    c2 = g.Conv2d(g.Relu(c1, name="relu1"), w2, name="conv2")
    g.mark_output(g.Transpose(c2, perm=[0, 2, 3, 1], name="flip"), name="y")
    return g


GRAPH_OPS = [("conv1", "Conv2d"), ("relu1", "Relu"), ("conv2", "Conv2d"), ("flip", "Transpose")]


@pytest.fixture
def exe():
    return conv_graph().compile(threads=2)


@pytest.fixture
def x():
    return np.random.default_rng(1).standard_normal(INPUT_SHAPE).astype(np.float32)


def test_profile_has_every_step_of_the_plan_in_order(exe, x):
    profile = exe.profile(x, runs=RUNS)
    num_steps = exe.memory_info()["num_steps"]
    assert len(profile.runs) == RUNS
    for run in profile.runs:
        assert [step.index for step in run.steps] == list(range(num_steps))
        # The graph's ops in graph order, each at most once (an activation may be folded into
        # the step before it); the convolutions and the transpose always run.
        names = [(step.op_name, step.op_type) for step in run.steps]
        assert names == [op for op in GRAPH_OPS if op in names]
        assert {"conv1", "conv2", "flip"} <= {name for name, _ in names}
        # One after another, inside the run as the caller timed it.
        end = 0
        for step in run.steps:
            assert step.start_ns >= end
            end = step.start_ns + step.elapsed_ns
        assert sum(step.elapsed_ns for step in run.steps) <= end <= run.wall_ns


def test_profile_reports_kernels_and_shapes(exe, x):
    steps = {step.op_name: step for step in exe.profile(x).runs[0].steps}
    same_size = (INPUT_SHAPE[0], FILTERS, *INPUT_SHAPE[2:])
    assert steps["conv1"].input_shape == INPUT_SHAPE
    assert steps["conv1"].output_shape == same_size
    assert steps["flip"].output_shape == exe.outputs[0][1]
    assert steps["flip"].input_shape == (same_size[0], 4, *same_size[2:])
    # A convolution runs the machine's f32 GEMM kernel where it has one; a transpose has no
    # prepared kernel.
    assert steps["conv1"].kernel == nxe.cpu_info()["kernels"]["f32"]
    assert steps["flip"].kernel == "reference"


def test_rows_average_the_runs_and_shares_sum_to_one(exe, x):
    profile = exe.profile(x, runs=RUNS, warmup=0)
    rows = profile.rows()
    assert [row["op_name"] for row in rows] == [s.op_name for s in profile.runs[0].steps]
    for i, row in enumerate(rows):
        mean_ms = np.mean([run.steps[i].elapsed_ns for run in profile.runs]) / 1e6
        assert row["ms"] == pytest.approx(mean_ms, rel=1e-9)
    assert sum(row["share"] for row in rows) == pytest.approx(1.0, abs=1e-9)
    table = str(profile).splitlines()
    assert table[0].split()[:4] == ["#", "op", "type", "kernel"]
    # A line per step, then the total.
    assert [line.split()[1] for line in table[1:-1]] == [row["op_name"] for row in rows]
    assert table[-1].split()[0] == "total"


def test_chrome_trace_has_a_complete_event_per_step_per_run(exe, x, tmp_path):
    profile = exe.profile(x, runs=RUNS)
    path = tmp_path / "trace.json"
    profile.to_chrome_trace(path)
    events = json.loads(path.read_text())["traceEvents"]
    for event in events:
        assert {"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"} <= set(event)
        assert event["ph"] == "X"
        assert (event["pid"], event["tid"]) == (os.getpid(), threading.get_native_id())
    nodes = [e for e in events if e["cat"] == "Node"]
    runs = [e for e in events if e["cat"] == "Session"]
    assert len(runs) == RUNS
    assert len(nodes) == RUNS * len(profile.runs[0].steps)
    for number, run in enumerate(profile.runs):
        mine = [e for e in nodes if e["args"]["run"] == number]
        assert [e["name"] for e in mine] == [s.op_name for s in run.steps]
        assert [e["args"]["kernel"] for e in mine] == [s.kernel for s in run.steps]
        for event, step in zip(mine, run.steps):
            assert event["dur"] == pytest.approx(step.elapsed_ns / 1e3, rel=1e-12)
            # Inside its run's event.
            assert runs[number]["ts"] <= event["ts"]
            assert event["ts"] + event["dur"] <= runs[number]["ts"] + runs[number]["dur"] + 1e-3


def test_profiling_is_off_by_default_and_after_profile(exe, x):
    exe.run(x)
    with pytest.raises(nxe.NotFoundError, match="no run has been profiled"):
        exe.last_profile()
    last = exe.profile(x, runs=2).runs[-1].steps
    exe.run(x)  # off again: the kept profile stays
    assert tuple(exe.last_profile()) == last


def test_set_profiling_profiles_the_runs_the_caller_makes(exe, x):
    exe.set_profiling(True)
    with pytest.raises(nxe.NotFoundError):
        exe.last_profile()
    exe.run_nocopy(x)
    steps = exe.last_profile()
    assert len(steps) == exe.memory_info()["num_steps"]
    exe.set_profiling(True)  # already on: the profile stays
    assert exe.last_profile() == steps
    exe.set_profiling(False)


def test_profile_refuses_no_runs(exe, x):
    with pytest.raises(nxe.InvalidArgumentError, match="runs must be >= 1"):
        exe.profile(x, runs=0)


# -- nxe bench ----------------------------------------------------------------------------------


def nxe_command():
    """The installed `nxe` next to this Python, else the package run as a module."""
    script = Path(sys.executable).parent / "nxe"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "nxe"]


def nxe_bench(*args):
    return subprocess.run([*nxe_command(), "bench", *map(str, args)], capture_output=True,
                          text=True, timeout=600)


def table_rows(stdout):
    """The profile table's step rows: (op name, op type, kernel, input, output)."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["#", "op"])
    rows = []
    for line in lines[start + 1:]:
        cells = line.split()
        if not cells or cells[0] == "total":
            break
        rows.append(tuple(cells[1:6]))
    return rows


def expected_steps(model, shapes):
    """The steps of the plan `nxe bench` compiles, profiled here once."""
    exe = bench.open_executable(model, shapes, threads=1)
    return exe.profile(bench.random_inputs(exe, 0), warmup=0).runs[0].steps


def shape_text(shape):
    return "x".join(map(str, shape))


def test_bench_prints_the_profile_of_a_builtin_model(tmp_path):
    trace = tmp_path / "espcn.json"
    result = nxe_bench("espcn-x2", "--runs", RUNS, "--warmup", 1, "--trace", trace)
    assert result.returncode == 0, result.stderr
    steps = expected_steps("espcn-x2", {})
    assert table_rows(result.stdout) == [
        (s.op_name, s.op_type, s.kernel, shape_text(s.input_shape), shape_text(s.output_shape))
        for s in steps]
    median, minimum = map(float, re.search(r"median ([\d.]+) ms, min ([\d.]+) ms",
                                           result.stdout).groups())
    assert 0 < minimum <= median
    events = json.loads(trace.read_text())["traceEvents"]
    assert len([e for e in events if e["cat"] == "Node"]) == RUNS * len(steps)


def test_bench_takes_input_shapes(tmp_path):
    result = nxe_bench("espcn-x2", "--shape", "luma=1x1x24x40", "--runs", 1)
    assert result.returncode == 0, result.stderr
    assert "luma 1x1x24x40 f32" in result.stdout
    rows = table_rows(result.stdout)
    scale = nxe.sr.Upscaler("espcn-x2").scale
    assert rows[0][3] == "1x1x24x40"
    assert rows[-1][4] == f"1x1x{24 * scale}x{40 * scale}"


def test_bench_errors_say_what_is_wrong(tmp_path):
    result = nxe_bench("espcn-x2", "--shape", "luma=1xAx3")
    assert result.returncode == 2 and "NAME=DIMS" in result.stderr
    assert "usage: nxe bench" in result.stderr
    result = nxe_bench(tmp_path / "absent.nxm")
    assert result.returncode == 1 and "no such file" in result.stderr
    result = nxe_bench("espcn-x9")
    assert result.returncode == 1 and "espcn-x2" in result.stderr
    result = nxe_bench("espcn-x2", "--runs", 0)
    assert result.returncode == 1 and "runs must be >= 1" in result.stderr


def test_bench_runs_an_onnx_file_with_symbolic_dimensions(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    weight = np.random.default_rng(2).standard_normal((4, 3, 3, 3)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         helper.make_node("Sigmoid", ["c"], ["y"], name="gate")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, "H", "W"])],
        [numpy_helper.from_array(weight, "w")])
    path = tmp_path / "conv.onnx"
    onnx.save(helper.make_model(graph), os.fspath(path))
    result = nxe_bench(path)
    assert result.returncode == 1 and "--shape x=DIMS" in result.stderr
    result = nxe_bench(path, "--shape", "x=1x3x16x12", "--runs", 2)
    assert result.returncode == 0, result.stderr
    steps = expected_steps(os.fspath(path), {"x": (1, 3, 16, 12)})
    assert [row[:3] for row in table_rows(result.stdout)] == [
        (s.op_name, s.op_type, s.kernel) for s in steps]
