"""The f32 GEMM kernels of every dispatch level (NXE_ISA=scalar, avx2, ...) on a sweep of
MatMul and Gemm shapes: odd M, N and K (1, 7, 17, 33, 65 and a few wider ones, so every
register tile, the narrow tiles, the masked column tail and the cache blocks of 256 columns by
256 rows of b all run), transposed operands (strided a and b) and alpha/beta with C broadcast
along either axis. Each level runs in a process
of its own (the level is chosen once per process) and is compared with a float64 numpy result;
within one level, threads=1 and threads=2 must agree bit for bit. A level above this machine is
reported skipped with the reason (isa_levels.py).

Every product here has its operands computed at run time (graph inputs), so B is packed at
every run wherever a level has a packed kernel, and C reaches the epilogue as a bias broadcast
through its strides."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from isa_levels import level_params

SIZES = [1, 7, 17, 33, 65]
# float32 sums of K products: the error grows about like sqrt(K) units of float32 rounding in
# the sum of |terms|. Stated bound, per element:
#   |y - y64| <= RTOL * sqrt(K) * (|alpha| * (|A| @ |B|) + |beta| * |C|) + ATOL
RTOL = 1e-5
ATOL = 1e-6


def cases():
    """(name, op, arrays, attrs) for the whole sweep; arrays are float32, fixed seed."""
    rng = np.random.default_rng(20261130)

    def u(*shape):
        return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)

    out = []
    for m in SIZES:
        for n in SIZES:
            for k in (1, 17, 65):
                out.append((f"matmul_{m}x{n}x{k}", "MatMul", [u(m, k), u(k, n)], {}))
    for m, n, k in [(33, 200, 150), (65, 129, 7), (9, 64, 300), (5, 16, 33), (4, 8, 1),
                    (9, 300, 520), (6, 513, 257)]:
        out.append((f"matmul_{m}x{n}x{k}", "MatMul", [u(m, k), u(k, n)], {}))
    out.append(("matmul_batched_3x17x65x33", "MatMul", [u(3, 17, 33), u(3, 33, 65)], {}))
    for m, n, k in [(7, 17, 33), (65, 33, 17), (1, 65, 7), (17, 1, 65), (33, 70, 65),
                    (9, 300, 270)]:
        for trans_a in (0, 1):
            for trans_b in (0, 1):
                a = u(k, m) if trans_a else u(m, k)
                b = u(n, k) if trans_b else u(k, n)
                for c_name, c_shape in [("none", None), ("full", (m, n)), ("row", (n,)),
                                        ("column", (m, 1)), ("scalar", (1,))]:
                    arrays = [a, b] if c_shape is None else [a, b, u(*c_shape)]
                    attrs = {"transA": trans_a, "transB": trans_b, "alpha": 0.75, "beta": -1.5}
                    out.append((f"gemm_{m}x{n}x{k}_ta{trans_a}_tb{trans_b}_c{c_name}", "Gemm",
                                arrays, attrs))
    out.append(("gemm_alpha1_33x65x17", "Gemm", [u(33, 17), u(17, 65), u(65)],
                {"alpha": 1.0, "beta": 1.0}))
    return out


def reference(op, arrays, attrs):
    a, b = (x.astype(np.float64) for x in arrays[:2])
    if op == "MatMul":
        return a @ b, np.abs(a) @ np.abs(b), a.shape[-1]
    alpha, beta = attrs["alpha"], attrs["beta"]
    a = a.T if attrs.get("transA", 0) else a
    b = b.T if attrs.get("transB", 0) else b
    y, scale = alpha * (a @ b), abs(alpha) * (np.abs(a) @ np.abs(b))
    if len(arrays) == 3:
        c = arrays[2].astype(np.float64)
        y, scale = y + beta * c, scale + abs(beta) * np.abs(c)
    return y, scale, a.shape[1]


CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import nxe

    data = np.load(sys.argv[1])
    spec = json.loads(open(sys.argv[2]).read())
    results = {}
    for name, op, count, attrs in spec:
        arrays = [data[f"{name}/{i}"] for i in range(count)]
        g = nxe.Graph()
        tensors = [g.input(f"in{i}", x.shape, x.dtype) for i, x in enumerate(arrays)]
        (y,) = g.op(op, tensors, name="under_test", **attrs)
        g.mark_output(y, name="y")
        feeds = {f"in{i}": x for i, x in enumerate(arrays)}
        for threads in (1, 2):
            results[f"{name}/t{threads}"] = g.compile(threads=threads).run(feeds)["y"]
    np.savez(sys.argv[3], **results)
    print(json.dumps(nxe.cpu_info()))
""")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """The sweep inputs on disk, shared by the per-ISA processes."""
    folder = tmp_path_factory.mktemp("gemm_sweep")
    all_cases = cases()
    arrays = {f"{name}/{i}": x for name, _, xs, _ in all_cases for i, x in enumerate(xs)}
    np.savez(folder / "inputs.npz", **arrays)
    spec = [[name, op, len(xs), attrs] for name, op, xs, attrs in all_cases]
    (folder / "spec.json").write_text(json.dumps(spec))
    return folder, all_cases


@pytest.mark.parametrize("isa", level_params())
def test_gemm_sweep_against_float64(sweep, isa):
    folder, all_cases = sweep
    env = dict(os.environ, NXE_ISA=isa)
    result_path = folder / f"out_{isa}.npz"
    run = subprocess.run([sys.executable, "-c", CHILD, str(folder / "inputs.npz"),
                          str(folder / "spec.json"), str(result_path)],
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    info = json.loads(run.stdout.strip().splitlines()[-1])
    assert info["isa"] == isa, f"asked for {isa}, ran {info['isa']}: {info['reason']}"
    out = np.load(result_path)
    failures = []
    for name, op, arrays, attrs in all_cases:
        one, two = out[f"{name}/t1"], out[f"{name}/t2"]
        assert one.dtype == np.float32
        if not np.array_equal(one.view(np.uint32), two.view(np.uint32)):
            failures.append(f"{name}: threads=1 and threads=2 differ")
        want, scale, k = reference(op, arrays, attrs)
        assert one.shape == want.shape, name
        bound = RTOL * np.sqrt(max(k, 1)) * scale + ATOL
        err = np.abs(one.astype(np.float64) - want)
        if not np.all(err <= bound):
            worst = np.unravel_index(np.argmax(err - bound), err.shape)
            failures.append(f"{name}: error {err[worst]:.3g} > bound {bound[worst]:.3g} at "
                            f"{worst}")
    assert not failures, f"NXE_ISA={isa} (chose {info['isa']}): " + "; ".join(failures[:10])
