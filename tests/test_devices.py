"""Devices: the CPU, its NUMA nodes and core sets as the C table lists them, the compile and
load options choosing one (worker threads pinned to its cores, read back from
/proc/self/task/*/status), bad device handles refused, and `nxe info` listing them."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import nxe
import pytest
from nxe import cli
from nxe._binding import ffi, lib

LINUX = sys.platform.startswith("linux")
pytestmark = pytest.mark.skipif(not LINUX, reason="the device table reads Linux's /sys and "
                                "pinning is Linux-only (elsewhere it is documented as ignored)")


def allowed_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def parse_list(text: str) -> list[int]:
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        cpus.extend(range(int(first), int(last or first) + 1))
    return cpus


def numa_nodes() -> dict[int, list[int]]:
    """node -> its CPUs this process may use, from /sys; {0: every allowed CPU} without it."""
    root = Path("/sys/devices/system/node")
    allowed = set(allowed_cpus())
    nodes: dict[int, list[int]] = {}
    if (root / "online").exists():
        for node in parse_list((root / "online").read_text()):
            path = root / f"node{node}" / "cpulist"
            if path.exists():
                cpus = [c for c in parse_list(path.read_text()) if c in allowed]
                if cpus:
                    nodes[node] = cpus
    return nodes or {0: sorted(allowed)}


def small_graph():
    g = nxe.Graph()
    x = g.input("x", (64, 64), "f32")
    w = g.constant(np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32), "w")
    g.mark_output(g.Relu(g.MatMul(x, w)), "y")
    return g


def task_affinities() -> dict[str, str]:
    """thread id -> Cpus_allowed_list of every thread of this process."""
    result = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            status = (task / "status").read_text()
        except OSError:  # the thread ended meanwhile
            continue
        for line in status.splitlines():
            if line.startswith("Cpus_allowed_list:"):
                result[task.name] = line.split(":", 1)[1].strip()
    return result


def new_thread_affinities(before: dict[str, str]) -> list[list[int]]:
    return [parse_list(v) for k, v in task_affinities().items() if k not in before]


def test_the_table_lists_the_cpu_and_each_numa_node():
    devices = nxe.devices()
    assert devices[0].name == "cpu" and devices[0].kind == "cpu"
    assert list(devices[0].cores) == allowed_cpus()
    assert devices[0].numa_node == -1
    isa = nxe.cpu_info()["isa"]
    nodes = numa_nodes()
    listed = {d.numa_node: d for d in devices if d.name.startswith("cpu:numa")}
    assert sorted(listed) == sorted(nodes)
    for node, cpus in nodes.items():
        assert listed[node].name == f"cpu:numa{node}"
        assert list(listed[node].cores) == cpus
        assert listed[node].num_cores == len(cpus)
    assert all(d.isa == isa for d in devices if d.kind == "cpu")
    assert nxe.device("cpu") == devices[0]


def test_core_sets_by_list_and_by_name():
    cpus = allowed_cpus()
    chosen = cpus[-1:] if len(cpus) == 1 else [cpus[-1], cpus[0]]
    device = nxe.cpu_set(chosen)
    assert list(device.cores) == sorted(chosen)
    assert device.name.startswith("cpu:cores") and device.numa_node == -1
    assert nxe.cpu_set(list(reversed(chosen))) == device  # one device per set
    assert nxe.device(device.name) == device
    assert device in nxe.devices()
    by_name = nxe.device(f"cpu:cores{cpus[0]}")
    assert list(by_name.cores) == [cpus[0]]


@pytest.mark.parametrize("cores", [[-1], [1023], [0, 0], []])
def test_core_sets_the_machine_lacks_are_refused(cores):
    if cores == [1023] and 1023 in allowed_cpus():
        pytest.fail("this test needs a machine without CPU 1023")
    with pytest.raises(nxe.InvalidArgumentError):
        nxe.cpu_set(cores)


@pytest.mark.parametrize("name,error", [("cpu:cores1023", nxe.InvalidArgumentError),
                                        ("cpu:coresx", nxe.InvalidArgumentError),
                                        ("cpu:cores", nxe.InvalidArgumentError),
                                        ("gpu", nxe.NotFoundError),
                                        ("remote:nowhere:1", nxe.NotFoundError)])
def test_bad_device_names(name, error):
    with pytest.raises(error):
        nxe.device(name)


def test_c_calls_refuse_null_and_foreign_handles():
    assert lib.nxe_device_count(ffi.NULL) == lib.NXE_ERROR_INVALID_ARGUMENT
    out = ffi.new("const nxe_device **")
    count = ffi.new("int32_t *")
    assert lib.nxe_device_count(count) == lib.NXE_OK
    assert lib.nxe_device_get(count[0], out) == lib.NXE_ERROR_NOT_FOUND and out[0] == ffi.NULL
    assert lib.nxe_device_get(-1, out) == lib.NXE_ERROR_NOT_FOUND
    foreign = ffi.cast("const nxe_device *", ffi.new("char[256]"))
    info = ffi.new("nxe_device_info *")
    info.struct_size = ffi.sizeof("nxe_device_info")
    assert lib.nxe_device_get_info(foreign, info) == lib.NXE_ERROR_INVALID_ARGUMENT
    assert "not one the library handed out" in nxe._binding.last_error()
    info.struct_size = 4
    assert lib.nxe_device_get(0, out) == lib.NXE_OK
    assert lib.nxe_device_get_info(out[0], info) == lib.NXE_ERROR_INVALID_ARGUMENT

    # A foreign device in the compile and load options.
    g = small_graph()
    options = ffi.new("nxe_compile_options *")
    options.struct_size = ffi.sizeof("nxe_compile_options")
    options.device = foreign
    exe = ffi.new("nxe_executable **")
    assert lib.nxe_graph_compile(g._handle, options, exe) == lib.NXE_ERROR_INVALID_ARGUMENT
    assert exe[0] == ffi.NULL
    binary = g.compile_to_binary()
    load = ffi.new("nxe_load_options *")
    load.struct_size = ffi.sizeof("nxe_load_options")
    load.verify = 1
    load.device = foreign
    data = ffi.from_buffer(binary)
    assert lib.nxe_executable_load_memory(data, len(data), load, exe) == \
        lib.NXE_ERROR_INVALID_ARGUMENT
    assert exe[0] == ffi.NULL
    with pytest.raises(TypeError):
        g.compile(device=3)


def test_compile_pins_the_workers_to_the_device_cores(rng):
    cpus = allowed_cpus()
    core = cpus[-1]
    g = small_graph()
    x = rng.standard_normal((64, 64)).astype(np.float32)
    reference = g.compile(threads=1).run(x)["y"]

    before = task_affinities()
    exe = g.compile(device=nxe.cpu_set([core]), threads=3)
    workers = new_thread_affinities(before)
    assert len(workers) == 2 and all(w == [core] for w in workers)
    np.testing.assert_allclose(exe.run(x)["y"], reference, rtol=1e-5, atol=1e-5)
    assert exe.memory_info()["num_threads"] == 3

    # threads 0: the device's core count.
    before = task_affinities()
    whole = g.compile(device="cpu")
    workers = new_thread_affinities(before)
    assert whole.memory_info()["num_threads"] == len(cpus)
    assert len(workers) == len(cpus) - 1 and all(w == cpus for w in workers)
    one = g.compile(device=nxe.cpu_set([core]))
    assert one.memory_info()["num_threads"] == 1
    np.testing.assert_allclose(one.run(x)["y"], reference, rtol=1e-5, atol=1e-5)
    del exe, whole, one


def test_load_pins_the_workers_too(rng):
    core = allowed_cpus()[0]
    g = small_graph()
    binary = g.compile_to_binary()
    x = rng.standard_normal((64, 64)).astype(np.float32)
    before = task_affinities()
    vm = nxe.VirtualMachine(binary, threads=2, device=nxe.cpu_set([core]))
    assert new_thread_affinities(before) == [[core]]
    np.testing.assert_allclose(vm["main"](x), g.compile(threads=1).run(x)["y"], rtol=1e-5,
                               atol=1e-5)
    vm.close()


def test_nxe_info_lists_the_devices(capsys):
    assert cli.main(["info", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    names = [d["name"] for d in report["devices"]]
    assert names == [d.name for d in nxe.devices()]
    assert report["devices"][0]["cores"] == allowed_cpus()
    assert cli.main(["info"]) == 0
    text = capsys.readouterr().out
    assert "devices:" in text and "cpu:numa" in text
