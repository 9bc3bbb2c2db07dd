"""Many Python threads on one executable, as a threaded server would use it: every answer of
run, run_nocopy (checked again after the other threads have run) and runs from created inputs
matches numpy; run_nocopy views stay until their own thread's next run; create_input serves
threads at once; a Graph built from several threads takes turns. Each test joins its threads
with a timeout, so a deadlock fails instead of hanging."""

import threading
import time

import numpy as np
import nxe
import pytest

THREADS = 8
RUNS = 100          # per thread
POOL_THREADS = 4    # the executable's own workers, which the calling threads contend for
JOIN_TIMEOUT = 120  # seconds for all threads of one test; far above a healthy run
# float32 kernels against float64 numpy; the 3x3 convolutions run Winograd F(4x4, 3x3) by the
# cost model, whose error on these sums (of order 10) reaches a few 1e-5.
RTOL, ATOL = 1e-4, 2e-4


def run_threads(body, count=THREADS):
    """Runs body(i) on `count` daemon threads; re-raises the first error, fails on a hang."""
    errors = []

    def guarded(index):
        try:
            body(index)
        except BaseException as error:  # re-raised on the main thread
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + JOIN_TIMEOUT
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    hung = sum(thread.is_alive() for thread in threads)
    assert hung == 0, f"{hung} of {count} threads still running after {JOIN_TIMEOUT} s"
    if errors:
        raise errors[0]


# -- graphs and their numpy references --------------------------------------------------------

def weights(rng, *shape):
    return (rng.standard_normal(shape) / np.sqrt(shape[-2] if len(shape) > 1 else 1)).astype(
        np.float32)


def matmul_case(rng):
    """x @ W1 -> Relu -> @ W2: packed weights, a folded activation, a transient in the arena."""
    w1, w2 = weights(rng, 32, 24), weights(rng, 24, 16)
    g = nxe.Graph()
    x = g.input("x", (8, 32))
    g.mark_output(g.MatMul(g.Relu(g.MatMul(x, g.constant(w1))), g.constant(w2)), name="y")

    def reference(x):
        return np.maximum(x.astype(np.float64) @ w1, 0) @ w2

    return g, {"x": (8, 32)}, reference


def conv2d(x, w, b=None):
    """NCHW convolution, 3x3, stride 1, one pixel of zero padding, in float64."""
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    y = np.einsum("nchwij,ocij->nohw", windows, w.astype(np.float64))
    return y if b is None else y + b[None, :, None, None]


def conv_case(rng):
    """Conv2d (bias) -> Relu -> Conv2d."""
    w1, b1, w2 = weights(rng, 8, 3, 3, 3), weights(rng, 8), weights(rng, 4, 8, 3, 3)
    g = nxe.Graph()
    x = g.input("x", (1, 3, 16, 16))
    pads = [1, 1, 1, 1]
    h = g.Relu(g.Conv2d(x, g.constant(w1), g.constant(b1), pads=pads))
    g.mark_output(g.Conv2d(h, g.constant(w2), None, pads=pads), name="y")

    def reference(x):
        return conv2d(np.maximum(conv2d(x, w1, b1), 0), w2)

    return g, {"x": (1, 3, 16, 16)}, reference


def batched_matmul_case(rng):
    """a @ b with both operands fed: B is packed into the run's workspace every run."""
    g = nxe.Graph()
    a, b = g.input("a", (4, 16, 32)), g.input("b", (4, 32, 24))
    g.mark_output(g.MatMul(a, b), name="y")

    def reference(a, b):
        return a.astype(np.float64) @ b

    return g, {"a": (4, 16, 32), "b": (4, 32, 24)}, reference


CASES = {"matmul": matmul_case, "conv": conv_case, "batched_matmul": batched_matmul_case}


def samples(rng, shapes, count=16):
    return [{name: rng.standard_normal(shape).astype(np.float32) for name, shape in shapes.items()}
            for _ in range(count)]


# -- one executable, many threads ---------------------------------------------------------------

@pytest.mark.parametrize("case", CASES)
def test_threads_running_one_executable_each_get_their_own_answer(case, rng):
    graph, shapes, reference = CASES[case](rng)
    feeds = samples(rng, shapes)
    expected = [reference(*feed.values()) for feed in feeds]
    # Staging room for one created copy of every input per thread.
    input_bytes = sum(-(-int(np.prod(s)) * 4 // 64) * 64 for s in shapes.values())
    vm = nxe.VirtualMachine(graph.compile_to_binary(), threads=POOL_THREADS,
                            staging_bytes=(THREADS + 2) * input_bytes + (1 << 16))
    alone = [vm.executable.run(feed)["y"] for feed in feeds]
    exe = vm.executable
    before = exe.stats()

    def work(index):
        created = {name: exe.create_input(name) for name in shapes}
        for i in range(RUNS):
            k = (7 * index + i) % len(feeds)
            way = i % 3
            if way == 0:
                y = exe.run(feeds[k])["y"]
            elif way == 1:
                y = exe.run_nocopy(feeds[k])["y"]
                np.testing.assert_array_equal(y, alone[k])
                time.sleep(0)  # let the other threads run into the executable meanwhile
            else:
                for name, array in created.items():
                    array[...] = feeds[k][name]
                y = exe.run(created)["y"]
            # Bit for bit what the executable answers alone, and that is numpy's answer.
            np.testing.assert_array_equal(y, alone[k], err_msg=f"thread {index}, run {i}")
            np.testing.assert_allclose(y, expected[k], rtol=RTOL, atol=ATOL)

    run_threads(work)
    after = exe.stats()
    assert after["runs"] - before["runs"] == THREADS * RUNS
    created_runs = sum(1 for i in range(RUNS) if i % 3 == 2) * THREADS
    assert after["inputs_in_place"] - before["inputs_in_place"] == created_runs * len(shapes)
    vm.close()


def test_run_nocopy_views_survive_other_threads_runs_until_their_own_threads_next(rng):
    graph, shapes, reference = matmul_case(rng)
    vm = nxe.VirtualMachine(graph.compile_to_binary(), threads=POOL_THREADS)
    feeds = samples(rng, shapes, count=4 * 3)
    expected = [reference(feed["x"]) for feed in feeds]
    # Every thread has made its view before any checks one, and checks it after all have.
    made, checked = threading.Barrier(4, timeout=JOIN_TIMEOUT), threading.Barrier(
        4, timeout=JOIN_TIMEOUT)

    def work(index):
        for i in range(200):
            k = (index * 3 + i) % len(feeds)
            view = vm.run_nocopy(feeds[k]["x"])
            made.wait()
            np.testing.assert_allclose(view, expected[k], rtol=RTOL, atol=ATOL,
                                       err_msg=f"thread {index}, run {i}")
            checked.wait()
        # This thread's next run reuses the memory of its last view.
        again = vm.run_nocopy(feeds[index]["x"])
        assert np.shares_memory(view, again)
        np.testing.assert_allclose(view, expected[index], rtol=RTOL, atol=ATOL)

    run_threads(work, count=4)
    vm.close()


def test_inputs_created_on_many_threads_at_once_are_separate_and_run_in_place(rng):
    graph, shapes, reference = matmul_case(rng)
    exe = nxe.VirtualMachine(graph.compile_to_binary(), threads=POOL_THREADS,
                             staging_bytes=1 << 20).executable
    created = [None] * THREADS

    def create(index):
        arrays = [exe.create_input("x") for _ in range(4)]
        for array in arrays:
            array[...] = index
        created[index] = arrays

    run_threads(create)
    arrays = [array for arrays in created for array in arrays]
    for i, a in enumerate(arrays):
        assert not any(np.shares_memory(a, b) for b in arrays[i + 1:])
    for index, thread_arrays in enumerate(created):  # nothing wrote into another's array
        for array in thread_arrays:
            np.testing.assert_array_equal(array, np.full(array.shape, index, np.float32))

    # Made on one thread, filled and run on others, in place.
    feeds = samples(rng, shapes, count=THREADS)
    before = exe.stats()["inputs_in_place"]

    def run_created(index):
        array = created[index][0]
        array[...] = feeds[index]["x"]
        for _ in range(RUNS // 4):
            np.testing.assert_allclose(exe.run(array)["y"], reference(feeds[index]["x"]),
                                       rtol=RTOL, atol=ATOL)

    run_threads(run_created)
    assert exe.stats()["inputs_in_place"] - before == THREADS * (RUNS // 4)


def test_runs_that_write_a_variable_take_turns(rng):
    # state = Relu(x), y = Relu(state): a run sharing the variable would read another's value.
    g = nxe.Graph()
    x = g.input("x", (4096,))
    state = g.variable(np.zeros(4096, np.float32), name="state")
    g.op("Relu", [x], outputs=[state])
    g.mark_output(g.Relu(state), name="y")
    exe = g.compile(threads=POOL_THREADS)

    def work(index):
        for i in range(RUNS // 2):
            value = np.full(4096, index * RUNS + i + 1, np.float32)
            np.testing.assert_array_equal(exe.run(value)["y"], value)
            seen = exe.read_variable("state")
            assert np.all(seen == seen[0]), "a variable read saw half of a run's write"

    run_threads(work)


def test_graph_built_from_several_threads_takes_turns(rng):
    g = nxe.Graph()
    x = g.input("x", (64,))
    offsets = rng.standard_normal((THREADS, 64)).astype(np.float32)

    def build(index):
        y = x
        for _ in range(20):
            y = g.Add(y, g.constant(offsets[index]))
            assert y.shape is None or y.shape == (64,)
        g.mark_output(g.Relu(y), name=f"y{index}")

    run_threads(build)
    exe = g.compile(threads=POOL_THREADS)
    xv = rng.standard_normal(64).astype(np.float32)
    results = exe.run(xv)
    for index in range(THREADS):
        expected = np.maximum(xv.astype(np.float64) + 20 * offsets[index].astype(np.float64), 0)
        np.testing.assert_allclose(results[f"y{index}"], expected, rtol=RTOL, atol=ATOL)
