"""Memory hygiene under churn: graphs built, compiled, run and released, and compiled binaries
loaded from bytes and from a file and released, over many cycles, leave the process's resident
memory (VmRSS) flat after a warm-up. Each cycle holds 64 KiB of weights, so a leak of one copy
per cycle would grow RSS by CYCLES * 64 KiB, four times the stated bound."""

import numpy as np
import nxe
import pytest

WIDTH = 128  # a 128 x 128 f32 weight: 64 KiB per cycle
WARMUP_CYCLES = 50
CYCLES = 1000
RSS_BOUND_BYTES = 16 << 20  # generous for allocator noise, far below a per-cycle leak


def vm_rss_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    pytest.skip("no VmRSS in /proc/self/status on this system")


def build(weight, bias):
    g = nxe.Graph()
    x = g.input("x", (2, WIDTH), "f32")
    w = g.constant(weight, name="w")
    b = g.constant(bias, name="b")
    g.mark_output(g.Relu(g.Add(g.MatMul(x, w), b)), name="y")
    return g


def reference(x, weight, bias):
    return np.maximum(x.astype(np.float64) @ weight + bias, 0.0)


def cycle(rng, binary_path):
    """One build -> compile -> run -> release and two binary loads; each result is checked."""
    weight = rng.standard_normal((WIDTH, WIDTH)).astype(np.float32)
    bias = rng.standard_normal(WIDTH).astype(np.float32)
    x = rng.standard_normal((2, WIDTH)).astype(np.float32)
    expected = reference(x, weight, bias)
    graph = build(weight, bias)
    with graph.compile(threads=1) as exe:
        y = exe.run(x)["y"]
    binary = graph.compile_to_binary(binary_path, threads=1)
    graph.close()
    with nxe.VirtualMachine(binary, threads=1) as vm:
        from_bytes = vm["main"](x)
    with nxe.VirtualMachine(binary_path, threads=1) as vm:
        from_file = vm["main"](x)
    # fp32 sums of 128 products of unit normals: 1e-4 absolute covers their rounding
    for result in (y, from_bytes, from_file):
        np.testing.assert_allclose(result, expected, rtol=0, atol=1e-4)


def test_build_compile_run_release_and_binary_loads_keep_rss_flat(tmp_path):
    rng = np.random.default_rng(0)
    binary_path = tmp_path / "churn.nxb"
    for _ in range(WARMUP_CYCLES):
        cycle(rng, binary_path)
    before = vm_rss_bytes()
    for _ in range(CYCLES):
        cycle(rng, binary_path)
    growth = vm_rss_bytes() - before
    print(f"churn: RSS {before / 2**20:.1f} MiB after {WARMUP_CYCLES} warm-up cycles, "
          f"growth {growth / 2**20:+.2f} MiB over {CYCLES} cycles "
          f"(bound {RSS_BOUND_BYTES / 2**20:.0f} MiB)")
    assert growth < RSS_BOUND_BYTES
