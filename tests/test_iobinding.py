"""Bound caller memory from Python (nxe.IoBinding, nxe_binding in nxe.h): bound runs read the
caller's input arrays in place and write straight into the caller's output arrays, equal to an
ordinary run and to numpy, with the run statistics showing no byte copied; outputs that later
steps read, variables, prepared (packed-weight) convolutions, bindings on several threads, and
every refusal (dtype, shape, strides, read-only, misaligned, overlapping, unbound). libnxe_sr
binds its planes for a frame that is one tile: its copy counts are zero there, and the result
equals the tiled path's. Tolerances: float32 results of the same kernels on the same data are
compared exactly; against numpy, rtol = atol = 1e-5."""

from __future__ import annotations

import threading

import numpy as np
import nxe
import nxe.sr
import pytest
from nxe.iobinding import aligned_empty

THREADS = 1


def chain_graph():
    """h = tanh(x) is an output that a later step reads: y = h * w + b."""
    g = nxe.Graph()
    x = g.input("x", (3, 5), "f32")
    w = g.input("w", (5,), "f32")
    b = g.constant(np.linspace(-1, 1, 15, dtype=np.float32).reshape(3, 5), name="b")
    h = g.Tanh(x)
    g.mark_output(h, name="h")
    g.mark_output(g.Add(g.Mul(h, w), b), name="y")
    return g


def chain_reference(x, w):
    b = np.linspace(-1, 1, 15, dtype=np.float32).reshape(3, 5)
    h = np.tanh(x)
    return h, h * w + b


def random(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.fixture
def exe():
    return chain_graph().compile(threads=THREADS)


def test_bound_run_writes_the_callers_arrays_and_copies_nothing(exe, rng):
    x, w = random(rng, (3, 5)), random(rng, (5,))
    h_out, y_out = aligned_empty((3, 5), np.float32), aligned_empty((3, 5), np.float32)
    binding = exe.bind([x, w], {"h": h_out, "y": y_out})
    before = exe.stats()
    results = binding.run()
    after = exe.stats()
    assert results["h"] is h_out and results["y"] is y_out
    h_want, y_want = chain_reference(x, w)
    np.testing.assert_allclose(h_out, h_want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y_out, y_want, rtol=1e-5, atol=1e-5)
    plain = exe.run(x, w)
    np.testing.assert_array_equal(y_out, plain["y"])
    np.testing.assert_array_equal(h_out, plain["h"])
    assert after["runs"] == before["runs"] + 1
    assert after["inputs_in_place"] == before["inputs_in_place"] + 2
    assert after["inputs_copied"] == before["inputs_copied"]
    assert after["bytes_copied_in"] == before["bytes_copied_in"]
    assert after["bytes_copied_out"] == before["bytes_copied_out"]


def test_inputs_are_read_in_place_on_every_run(exe, rng):
    x, w = random(rng, (3, 5)), random(rng, (5,))
    binding = exe.bind([x, w])
    binding.run()
    x[...] = random(rng, (3, 5))  # refilled in place: the next run sees it
    y = binding.run()["y"]
    np.testing.assert_allclose(y, chain_reference(x, w)[1], rtol=1e-5, atol=1e-5)
    assert y.ctypes.data % 64 == 0  # outputs the binding allocates are 64-byte aligned


def test_unaligned_but_element_aligned_arrays_are_accepted(exe, rng):
    raw = np.zeros(3 * 5 + 1, np.float32)
    x = raw[1:].reshape(3, 5)  # 4 bytes past a 64-byte boundary
    x[...] = random(rng, (3, 5))
    w = random(rng, (5,))
    y = exe.bind([x, w]).run()["y"]
    np.testing.assert_allclose(y, chain_reference(x, w)[1], rtol=1e-5, atol=1e-5)


def test_one_array_may_feed_several_inputs():
    g = nxe.Graph()
    a = g.input("a", (8,), "f32")
    c = g.input("c", (8,), "f32")
    g.mark_output(g.Mul(a, c), name="y")
    exe = g.compile(threads=THREADS)
    v = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(exe.bind([v, v]).run()["y"], v * v)


def test_conv_with_packed_weights_runs_bound(rng):
    g = nxe.Graph()
    x = g.input("x", (1, 3, 12, 10), "f32")
    weights = random(rng, (8, 3, 3, 3))
    bias = random(rng, (8,))
    y = g.Relu(g.Conv2d(x, g.constant(weights), g.constant(bias), pads=[1, 1, 1, 1]))
    g.mark_output(g.Conv2d(y, g.constant(random(rng, (4, 8, 1, 1))), None), name="y")
    exe = g.compile(threads=2)
    xv = random(rng, (1, 3, 12, 10))
    want = exe.run(xv)["y"]
    got = exe.bind([xv]).run()["y"]
    np.testing.assert_array_equal(got, want)


def test_variables_stay_in_the_executable():
    g = nxe.Graph()
    x = g.input("x", (3,), "f32")
    state = g.variable(np.array([1, 2, 3], np.float32), name="state")
    g.mark_output(g.Add(x, state), name="y")
    exe = g.compile(threads=THREADS)
    xv = np.array([10, 20, 30], np.float32)
    binding = exe.bind([xv])
    np.testing.assert_array_equal(binding.run()["y"], xv + [1, 2, 3])
    exe.write_variable("state", np.array([5, 5, 5], np.float32))
    np.testing.assert_array_equal(binding.run()["y"], xv + 5)


def test_run_nocopy_results_survive_a_bound_run(exe, rng):
    x, w = random(rng, (3, 5)), random(rng, (5,))
    kept = exe.run_nocopy(x, w)["y"]
    snapshot = kept.copy()
    exe.bind([random(rng, (3, 5)), random(rng, (5,))]).run()
    np.testing.assert_array_equal(kept, snapshot)


def test_bindings_on_several_threads(exe, rng):
    feeds = [(random(rng, (3, 5)), random(rng, (5,))) for _ in range(4)]
    errors = []

    def work(x, w):
        try:
            binding = exe.bind([x, w])
            for _ in range(50):
                y = binding.run()["y"]
                np.testing.assert_allclose(y, chain_reference(x, w)[1], rtol=1e-5, atol=1e-5)
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=feed) for feed in feeds]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


# -- refusals ---------------------------------------------------------------------------------


def test_wrong_dtype_shape_strides_and_read_only_are_refused(exe):
    binding = nxe.IoBinding(exe)
    with pytest.raises(nxe.DtypeMismatchError, match="'x' is f32"):
        binding.bind_input("x", np.zeros((3, 5), np.float64))
    with pytest.raises(nxe.ShapeMismatchError, match=r"\[3, 5\].*\[5, 3\]"):
        binding.bind_input(0, np.zeros((5, 3), np.float32))
    with pytest.raises(nxe.InvalidArgumentError, match="not C-contiguous"):
        binding.bind_input(0, np.zeros((5, 3), np.float32).T)
    read_only = np.zeros((3, 5), np.float32)
    read_only.flags.writeable = False
    binding.bind_input(0, read_only)  # inputs are only read
    with pytest.raises(nxe.InvalidArgumentError, match="read-only"):
        binding.bind_output("y", read_only)
    with pytest.raises(nxe.InvalidArgumentError, match="numpy array"):
        binding.bind_input(1, [1, 2, 3, 4, 5])
    with pytest.raises(nxe.NotFoundError):
        binding.bind_output(2)
    with pytest.raises(nxe.NotFoundError, match="no input named 'z'"):
        binding.bind_input("z", np.zeros(5, np.float32))


def test_misaligned_array_is_refused_by_the_library(exe):
    raw = np.zeros(3 * 5 * 4 + 1, np.uint8)
    x = raw[1:].view(np.float32).reshape(3, 5)  # 1 byte off: not aligned to f32
    with pytest.raises(nxe.InvalidArgumentError, match="not aligned to its 4-byte elements"):
        exe.bind().bind_input(0, x)


def test_overlapping_outputs_and_inputs_are_refused(exe):
    binding = nxe.IoBinding(exe)
    block = aligned_empty((2, 3, 5), np.float32)
    binding.bind_output("h", block[0])
    with pytest.raises(nxe.InvalidArgumentError, match="overlaps the buffer bound to output 0"):
        binding.bind_output("y", block[0])
    x = block[1]
    binding.bind_input("x", x)
    with pytest.raises(nxe.InvalidArgumentError, match="overlaps the buffer bound to input 0"):
        binding.bind_output("y", x)
    with pytest.raises(nxe.InvalidArgumentError, match="overlaps the buffer bound to output 0"):
        binding.bind_input("x", block[0])
    # Rebinding an output to its own memory again is not an overlap.
    binding.bind_output("h", block[0])


def test_run_with_something_unbound_is_refused(exe, rng):
    binding = nxe.IoBinding(exe)
    binding.bind_input(0, random(rng, (3, 5)))
    binding.bind_output("h")
    binding.bind_output("y")
    with pytest.raises(nxe.InvalidStateError, match="input 1 is not bound"):
        binding.run()
    binding.bind_input(1, random(rng, (5,)))
    binding.run()
    binding.clear()
    with pytest.raises(nxe.InvalidStateError, match="input 0 is not bound"):
        binding.run()
    binding.close()
    with pytest.raises(nxe.InvalidStateError, match="closed"):
        binding.run()


def test_binding_outlives_a_closed_executable(rng):
    exe = chain_graph().compile(threads=THREADS)
    x, w = random(rng, (3, 5)), random(rng, (5,))
    binding = exe.bind([x, w])
    exe.close()
    np.testing.assert_allclose(binding.run()["y"], chain_reference(x, w)[1], rtol=1e-5,
                               atol=1e-5)


# -- libnxe_sr ----------------------------------------------------------------------------------


def sr_frame(w, h, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(16, 236, size=shape, dtype=np.uint8)
            for shape in nxe.sr.plane_shapes("yuv420p", w, h)]


@pytest.mark.parametrize("model,tile,size", [("espcn-x2", 16, (61, 47)),
                                             ("edsr-x2", 80, (130, 85))])
def test_sr_whole_frame_copies_nothing_and_equals_the_tiled_path(model, tile, size,
                                                                   monkeypatch):
    """Direct convolutions (Winograd off): tiles with the default overlap equal the whole frame
    byte for byte (as tests/test_sr.py shows), so the bound whole-frame path must too."""
    monkeypatch.setenv("NXE_WINOGRAD", "off")
    w, h = size
    planes = sr_frame(w, h)
    whole = nxe.sr.Upscaler(model, tile=-1, threads=THREADS)
    got = whole.upscale_planes(planes, "yuv420p")
    info = whole.info()
    assert info["tiles"] == 1
    assert info["bytes_copied_in"] == 0 and info["bytes_copied_out"] == 0
    tiled = nxe.sr.Upscaler(model, tile=tile, threads=THREADS)
    want = tiled.upscale_planes(planes, "yuv420p")
    tiled_info = tiled.info()
    assert tiled_info["tiles"] > 1
    # The tiled path copies every tile in (overlaps included) and every output pixel out once.
    channels, scale = info["channels"], info["scale"]
    assert tiled_info["bytes_copied_in"] > 4 * channels * w * h
    assert tiled_info["bytes_copied_out"] == 4 * channels * w * h * scale * scale
    for g, want_plane in zip(got, want):
        np.testing.assert_array_equal(g, want_plane)
