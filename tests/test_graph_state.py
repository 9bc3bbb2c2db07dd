"""In-graph state: ops that write VARIABLE tensors they (or other ops) read. An update such as
s = Add(s, x) reads the value the run started with and lands after every reader of it; the value
is kept across runs, read, written and reset from the host, survives a compiled binary, and
concurrent runs each see a whole update. References are numpy; float tolerances are stated where
the kernels' summation order may differ from numpy's."""

from __future__ import annotations

import threading

import numpy as np
import nxe
import pytest
from nxe._binding import check, ffi, lib

RTOL, ATOL = 1e-5, 1e-6  # f32 products of a few terms; tanh within 4e-7 (docs: vmath)


def accumulator(initial):
    """s = Add(s, x): y = 2 * (s as the run found it)."""
    g = nxe.Graph()
    x = g.input("x", initial.shape)
    s = g.variable(initial, name="s")
    g.op("Add", [s, x], outputs=[s], name="accumulate")
    g.mark_output(g.Mul(s, g.constant(np.full(initial.shape, 2, np.float32))), name="y")
    return g


def test_accumulator_keeps_its_sum_over_runs(rng):
    initial = rng.standard_normal(5).astype(np.float32)
    exe = accumulator(initial).compile(threads=1)
    state = initial.copy()
    for _ in range(6):
        xv = rng.standard_normal(5).astype(np.float32)
        y = exe.run({"x": xv})["y"]
        np.testing.assert_array_equal(y, 2 * state)  # readers see the value the run started with
        state = state + xv
        np.testing.assert_array_equal(exe.read_variable("s"), state)


def rnn_graph(w, u, h0, with_assign):
    """h = tanh(h W^T + x U^T). With Assign, the new state is also the output; without, the
    Tanh writes the variable itself and the output reads the state the run started with."""
    g = nxe.Graph()
    x = g.input("x", (1, u.shape[1]))
    h = g.variable(h0, name="h")
    pre = g.Add(g.MatMul(h, g.constant(w.T.copy())), g.MatMul(x, g.constant(u.T.copy())))
    if with_assign:
        new = g.Tanh(pre)
        g.op("Assign", [new], outputs=[h], name="store")
        g.mark_output(new, name="y")
    else:
        g.op("Tanh", [pre], outputs=[h], name="step")
        g.mark_output(g.Mul(h, g.constant(np.ones_like(h0))), name="y")
    return g


@pytest.mark.parametrize("with_assign", [True, False])
def test_rnn_state_is_kept_across_runs(rng, with_assign):
    w = rng.standard_normal((6, 6)).astype(np.float32) * 0.5
    u = rng.standard_normal((6, 3)).astype(np.float32)
    h0 = rng.standard_normal((1, 6)).astype(np.float32)
    exe = rnn_graph(w, u, h0, with_assign).compile(threads=1)
    h = h0.astype(np.float64)
    for _ in range(5):
        xv = rng.standard_normal((1, 3)).astype(np.float32)
        before = h
        h = np.tanh(h @ w.T.astype(np.float64) + xv.astype(np.float64) @ u.T.astype(np.float64))
        y = exe.run({"x": xv})["y"]
        np.testing.assert_allclose(y, h if with_assign else before, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(exe.read_variable("h"), h, rtol=RTOL, atol=ATOL)


def kv_cache_graph(steps, dim):
    """cache[pos] = k (ScatterND on the variable), then scores = q cache^T over the new cache."""
    g = nxe.Graph()
    k = g.input("k", (1, dim))
    q = g.input("q", (1, dim))
    pos = g.input("pos", (1, 1), "i64")
    cache = g.variable(np.zeros((steps, dim), np.float32), name="cache")
    written = g.op("ScatterND", [cache, pos, k], name="append")[0]
    g.op("Assign", [written], outputs=[cache], name="store")
    g.mark_output(g.MatMul(q, g.op("Transpose", [written], perm=[1, 0])[0]), name="scores")
    return g


def run_kv_steps(run, read, rng, steps, dim):
    cache = np.zeros((steps, dim), np.float32)
    for step in range(steps):
        kv = rng.standard_normal((1, dim)).astype(np.float32)
        qv = rng.standard_normal((1, dim)).astype(np.float32)
        scores = run({"k": kv, "q": qv, "pos": np.array([[step]], np.int64)})
        cache[step] = kv[0]
        np.testing.assert_allclose(scores, qv.astype(np.float64) @ cache.T.astype(np.float64),
                                   rtol=RTOL, atol=ATOL)
        np.testing.assert_array_equal(read(), cache)
    return cache


def test_kv_cache_append_over_steps_and_reset(rng):
    steps, dim = 7, 8
    exe = kv_cache_graph(steps, dim).compile(threads=1)
    run_kv_steps(lambda feeds: exe.run(feeds)["scores"], lambda: exe.read_variable("cache"),
                 rng, steps, dim)
    exe.reset_variable("cache")
    np.testing.assert_array_equal(exe.read_variable("cache"), np.zeros((steps, dim)))
    # a second sequence from the reset cache gives the same answers as the first from new
    run_kv_steps(lambda feeds: exe.run(feeds)["scores"], lambda: exe.read_variable("cache"),
                 rng, steps, dim)


def test_kv_cache_append_writes_the_cache_in_place(rng):
    steps, dim = 7, 8
    exe = kv_cache_graph(steps, dim).compile(threads=1)
    # ScatterND's result lives in the cache's storage: the arena holds only the transposed
    # cache and the scores (a copy of the cache there would make it twice the cache's size)
    assert exe.memory_info()["arena_bytes"] < 2 * steps * dim * 4
    run_kv_steps(lambda feeds: exe.run(feeds)["scores"], lambda: exe.read_variable("cache"),
                 rng, steps, dim)


@pytest.mark.parametrize("direct", [True, False])
def test_readers_of_the_old_cache_beside_an_append(rng, direct):
    # 'old' reads the cache as the run found it while the append writes it: directly (the
    # ScatterND bound to the variable) or through Assign (then the in-place append is not
    # allowed, as a reader of the old value follows it or may).
    steps, dim = 4, 3
    g = nxe.Graph()
    k = g.input("k", (1, dim))
    pos = g.input("pos", (1, 1), "i64")
    cache = g.variable(np.zeros((steps, dim), np.float32), name="cache")
    if direct:
        g.op("ScatterND", [cache, pos, k], outputs=[cache], name="append")
    else:
        written = g.op("ScatterND", [cache, pos, k], name="append")[0]
        g.op("Assign", [written], outputs=[cache], name="store")
        g.mark_output(g.Mul(written, g.constant(np.ones((steps, dim), np.float32))), name="new")
    g.mark_output(g.Mul(cache, g.constant(np.ones((steps, dim), np.float32))), name="old")
    exe = g.compile(threads=1)
    reference = np.zeros((steps, dim), np.float32)
    for step in range(steps):
        kv = rng.standard_normal((1, dim)).astype(np.float32)
        out = exe.run({"k": kv, "pos": np.array([[step]], np.int64)})
        np.testing.assert_array_equal(out["old"], reference)
        reference[step] = kv[0]
        if not direct:
            np.testing.assert_array_equal(out["new"], reference)
        np.testing.assert_array_equal(exe.read_variable("cache"), reference)
    # an index out of range fails the run and leaves the cache as it was
    with pytest.raises(nxe.RunError):
        exe.run({"k": np.ones((1, dim), np.float32), "pos": np.array([[steps]], np.int64)})
    np.testing.assert_array_equal(exe.read_variable("cache"), reference)


def test_reset_one_variable_or_all_and_write_between_runs(rng):
    initial = rng.standard_normal(4).astype(np.float32)
    g = accumulator(initial)
    other = g.variable(np.arange(4, dtype=np.float32), name="other")
    g.op("Add", [other, g.find_tensor("x")], outputs=[other], name="other_acc")
    exe = g.compile(threads=1)
    xv = np.ones(4, np.float32)
    exe.run({"x": xv})
    exe.run({"x": xv})
    exe.reset_variable("s")
    np.testing.assert_array_equal(exe.read_variable("s"), initial)
    np.testing.assert_array_equal(exe.read_variable("other"), np.arange(4) + 2)
    exe.write_variable("s", np.full(4, 10, np.float32))
    np.testing.assert_array_equal(exe.run({"x": xv})["y"], np.full(4, 20, np.float32))
    np.testing.assert_array_equal(exe.read_variable("s"), np.full(4, 11, np.float32))
    exe.reset_variable()
    np.testing.assert_array_equal(exe.read_variable("s"), initial)
    np.testing.assert_array_equal(exe.read_variable("other"), np.arange(4, dtype=np.float32))


def loaded_variable(exe, name, shape):
    """A loaded executable's variable through the C call (the loaded Executable is not told
    its variables' shapes)."""
    value = np.zeros(shape, np.float32)
    desc = ffi.new("nxe_tensor_desc *")
    code, bits = ffi.new("int32_t *"), ffi.new("int32_t *")
    check(lib.nxe_dtype_to_dlpack(lib.NXE_DTYPE_F32, code, bits))
    desc.data = ffi.cast("void *", value.ctypes.data)
    desc.data_size = value.nbytes
    desc.ndim = value.ndim
    desc.dtype_code, desc.dtype_bits = code[0], bits[0]
    for i, d in enumerate(shape):
        desc.shape[i] = d
    check(lib.nxe_executable_read_variable(exe._handle, name.encode(), desc))
    return value


def test_updates_survive_a_compiled_binary(rng):
    steps, dim = 5, 4
    data = kv_cache_graph(steps, dim).compile_to_binary(threads=1)
    with nxe.VirtualMachine(data, threads=1) as vm:
        exe = vm.executable

        def run(feeds):
            return exe.run(feeds)["scores"]

        def read():
            return loaded_variable(exe, "cache", (steps, dim))

        run_kv_steps(run, read, rng, steps, dim)
        exe.reset_variable()
        np.testing.assert_array_equal(read(), np.zeros((steps, dim)))
        run_kv_steps(run, read, rng, steps, dim)
    initial = rng.standard_normal(3).astype(np.float32)
    with nxe.VirtualMachine(accumulator(initial).compile_to_binary(threads=1), threads=1) as vm:
        xv = rng.standard_normal(3).astype(np.float32)
        np.testing.assert_array_equal(vm.executable.run(xv)["y"], 2 * initial)
        np.testing.assert_array_equal(vm.executable.run(xv)["y"], 2 * (initial + xv))
        vm.executable.reset_variable("s")
        np.testing.assert_array_equal(loaded_variable(vm.executable, "s", (3,)), initial)


def test_updates_survive_a_model_file(rng):
    w = rng.standard_normal((4, 4)).astype(np.float32) * 0.5
    u = rng.standard_normal((4, 2)).astype(np.float32)
    h0 = rng.standard_normal((1, 4)).astype(np.float32)
    with nxe.Model(nxe.save_model(rnn_graph(w, u, h0, with_assign=True))) as model:
        exe = model.graph().compile(threads=1)
    h = h0.astype(np.float64)
    for _ in range(3):
        xv = rng.standard_normal((1, 2)).astype(np.float32)
        h = np.tanh(h @ w.T.astype(np.float64) + xv.astype(np.float64) @ u.T.astype(np.float64))
        np.testing.assert_allclose(exe.run({"x": xv})["y"], h, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(exe.read_variable("h"), h, rtol=RTOL, atol=ATOL)


def test_concurrent_updates_each_take_the_whole_variable(rng):
    exe = accumulator(np.zeros(2048, np.float32)).compile(threads=2)
    runs, threads = 25, 4
    errors = []

    def work():
        try:
            for _ in range(runs):
                y = exe.run({"x": np.ones(2048, np.float32)})["y"]
                assert np.all(y == y[0]), "a run saw half of another run's update"
        except Exception as error:  # noqa: BLE001 - reported by the main thread
            errors.append(error)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not errors, errors
    np.testing.assert_array_equal(exe.read_variable("s"), np.full(2048, runs * threads))


def test_two_writers_of_one_variable_are_refused():
    g = nxe.Graph()
    x = g.input("x", (3,))
    s = g.variable(np.zeros(3, np.float32), name="s")
    g.op("Add", [s, x], outputs=[s], name="first")
    with pytest.raises(nxe.InvalidGraphError, match="'s' is already produced by op 'Add' "
                       "\\('first'\\); op 'second' cannot produce it too"):
        g.op("Mul", [s, x], outputs=[s], name="second")


def test_a_reader_depending_on_the_update_is_a_clear_error():
    # Split writes s (an update: it depends on s) and t; 'late' reads s and t, so it would
    # have to run both before the write (it reads s's old value) and after it (it reads t).
    g = nxe.Graph()
    x = g.input("x", (2,))
    s = g.variable(np.zeros(2, np.float32), name="s")
    t = g.tensor("t", "f32")
    both = g.op("Concat", [g.Add(s, x), x], axis=0)[0]
    g.op("Split", [both], outputs=[s, t], name="split", axis=0)
    g.mark_output(g.op("Add", [s, t], name="late")[0], name="y")
    with pytest.raises(nxe.InvalidGraphError, match="updates variable 's' \\(by 'split'\\)"):
        g.compile(threads=1)


def test_unknown_names_and_null_arguments_are_clear_statuses(rng):
    exe = accumulator(np.zeros(3, np.float32)).compile(threads=1)
    assert lib.nxe_executable_reset_variable(ffi.NULL, b"s") == lib.NXE_ERROR_INVALID_ARGUMENT
    assert lib.nxe_executable_reset_variable(ffi.NULL, ffi.NULL) == lib.NXE_ERROR_INVALID_ARGUMENT
    with pytest.raises(nxe.NotFoundError, match="no variable named 'nope'"):
        exe.reset_variable("nope")
    with pytest.raises(nxe.NotFoundError):
        exe.read_variable("x")  # an input, not a variable
    exe.reset_variable()  # every variable: fine with or without runs
    np.testing.assert_array_equal(exe.read_variable("s"), np.zeros(3))
