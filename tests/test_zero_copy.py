"""Zero-copy I/O from Python: inputs created in the staging buffer are used in place (the run
statistics prove it), run() hands out owned arrays while run_nocopy() hands out views of the
result buffer, DLPack shares that memory, and nxe.VirtualMachine wraps a compiled binary."""

import gc

import numpy as np
import nxe
import pytest

THREADS = 1
ALIGNMENT = 64


def tanh_graph(shape=(2, 3)):
    """y = tanh(x) + b, b a constant; small enough to reason about byte counts."""
    g = nxe.Graph()
    x = g.input("x", shape, "f32")
    b = g.constant(np.linspace(-1.0, 1.0, int(np.prod(shape)), dtype=np.float32).reshape(shape),
                   name="b")
    g.mark_output(g.Add(g.Tanh(x), b), name="y")
    return g


def tanh_reference(x, shape=(2, 3)):
    b = np.linspace(-1.0, 1.0, int(np.prod(shape)), dtype=np.float32).reshape(shape)
    return np.tanh(x) + b


def two_input_graph():
    """y = a * c + d: inputs of different shapes, and two of the same."""
    g = nxe.Graph()
    a = g.input("a", (4, 8), "f32")
    c = g.input("c", (8,), "f32")
    d = g.input("d", (8,), "f32")
    g.mark_output(g.Add(g.Mul(a, c), d), name="y")
    return g


@pytest.fixture
def exe():
    return tanh_graph().compile(threads=THREADS)


@pytest.fixture
def binary():
    return tanh_graph().compile_to_binary(threads=THREADS)


def random_x(rng, shape=(2, 3)):
    return rng.standard_normal(shape).astype(np.float32)


def assert_close(actual, expected):
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-6)


# -- inputs: copied or used in place ----------------------------------------------------------


def test_created_input_is_used_in_place_without_copying(exe, rng):
    x = random_x(rng)
    staged = exe.create_input()
    staged[...] = x
    before = exe.stats()
    y = exe.run(staged)["y"]
    after = exe.stats()
    assert_close(y, tanh_reference(x))
    assert after["runs"] == before["runs"] + 1
    assert after["inputs_in_place"] == before["inputs_in_place"] + 1
    assert after["inputs_copied"] == before["inputs_copied"]
    assert after["bytes_copied_in"] == before["bytes_copied_in"]


def test_plain_numpy_input_is_copied_into_staging(exe, rng):
    x = random_x(rng)
    before = exe.stats()
    exe.run(x)
    after = exe.stats()
    assert after["inputs_copied"] == before["inputs_copied"] + 1
    assert after["bytes_copied_in"] == before["bytes_copied_in"] + x.nbytes
    assert after["inputs_in_place"] == before["inputs_in_place"]


def test_created_input_is_aligned_writable_and_shaped_like_the_input(exe):
    staged = exe.create_input("x")
    assert staged.shape == (2, 3) and staged.dtype == np.float32
    assert staged.flags.writeable and staged.flags.c_contiguous
    assert staged.ctypes.data % ALIGNMENT == 0


def test_input_is_chosen_by_shape_dtype_name_or_index(rng):
    exe = two_input_graph().compile(threads=THREADS)
    a = exe.create_input(shape=(4, 8), dtype="f32")
    c = exe.create_input("c")
    d = exe.create_input(2)
    assert (a.shape, c.shape, d.shape) == ((4, 8), (8,), (8,))
    assert len({a.ctypes.data, c.ctypes.data, d.ctypes.data}) == 3
    a[...], c[...], d[...] = random_x(rng, (4, 8)), random_x(rng, (8,)), random_x(rng, (8,))
    expected = a * c + d
    y = exe.run(a, c, d)["y"]
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)
    assert exe.stats()["inputs_in_place"] == 3


def test_input_matching_no_or_several_inputs_is_refused():
    exe = two_input_graph().compile(threads=THREADS)
    with pytest.raises(nxe.NotFoundError, match=r"no input has shape \[9\]"):
        exe.create_input(shape=(9,))
    with pytest.raises(nxe.InvalidArgumentError, match="several inputs.*'c', 'd'"):
        exe.create_input(shape=(8,), dtype="f32")
    with pytest.raises(nxe.NotFoundError, match="no input named 'e'"):
        exe.create_input("e")
    with pytest.raises(nxe.NotFoundError, match="index 3 out of range"):
        exe.create_input(3)
    with pytest.raises(TypeError, match="not both"):
        exe.create_input("a", shape=(4, 8))


def test_staging_overflow_names_the_capacity_and_reset_frees_it(exe):
    created = []
    with pytest.raises(nxe.BufferTooSmallError, match="capacity"):
        for _ in range(1000):
            created.append(exe.create_input())
    stats = exe.stats()
    assert created and stats["staging_used"] <= stats["staging_bytes"]
    exe.reset_staging()
    assert exe.stats()["staging_used"] < stats["staging_used"]
    exe.create_input()


# -- outputs: owned copies and views ----------------------------------------------------------


def test_run_outputs_are_owned_and_survive_later_runs(exe, rng):
    x1, x2 = random_x(rng), random_x(rng)
    first = exe.run(x1)["y"]
    kept = first.copy()
    exe.run(x2)
    exe.run_nocopy(x2)
    assert np.array_equal(first, kept)
    assert first.flags.owndata
    assert exe.stats()["bytes_copied_out"] == 2 * first.nbytes


def test_run_nocopy_views_show_the_latest_results(exe, rng):
    x1, x2 = random_x(rng), random_x(rng)
    before = exe.stats()["bytes_copied_out"]
    view = exe.run_nocopy(x1)["y"]
    assert_close(view, tanh_reference(x1))
    exe.run_nocopy(x2)
    assert_close(view, tanh_reference(x2))
    assert exe.stats()["bytes_copied_out"] == before
    owned = exe.run(x1)["y"]
    assert not np.shares_memory(owned, view)


def test_run_nocopy_views_keep_the_executable_memory_alive(rng):
    x = random_x(rng)
    exe = tanh_graph().compile(threads=THREADS)
    view = exe.run_nocopy(x)["y"]
    staged = exe.create_input()
    exe.close()
    del exe
    gc.collect()
    assert_close(view, tanh_reference(x))
    staged[...] = 1.0
    assert np.all(staged == 1.0)


def test_closed_executable_refuses_zero_copy_calls(exe, rng):
    exe.close()
    for call in (exe.create_input, exe.stats, exe.info, exe.reset_staging,
                 lambda: exe.run_nocopy(random_x(rng))):
        with pytest.raises(nxe.InvalidStateError, match="closed"):
            call()


# -- DLPack --------------------------------------------------------------------------------


def test_numpy_takes_run_nocopy_outputs_through_dlpack_without_a_copy(exe, rng):
    view = exe.run_nocopy(random_x(rng))["y"]
    taken = np.from_dlpack(view)
    assert np.shares_memory(taken, view)
    assert np.array_equal(taken, view)


def test_numpy_takes_created_inputs_through_dlpack_without_a_copy(exe):
    staged = exe.create_input()
    assert np.shares_memory(np.from_dlpack(staged), staged)


def test_torch_takes_run_nocopy_outputs_through_dlpack_without_a_copy(exe, rng):
    import torch
    view = exe.run_nocopy(random_x(rng))["y"]
    tensor = torch.from_dlpack(view)
    assert tensor.data_ptr() == view.ctypes.data
    assert np.array_equal(tensor.numpy(), view)


# -- VirtualMachine ------------------------------------------------------------------------


def test_vm_main_returns_owned_outputs_like_the_executable(binary, exe, rng):
    x = random_x(rng)
    with nxe.VirtualMachine(binary, threads=THREADS) as vm:
        y = vm["main"](x)
        assert isinstance(y, np.ndarray) and y.flags.owndata
        assert np.array_equal(y, exe.run(x)["y"])
        assert vm.inputs == exe.inputs and vm.outputs == exe.outputs


def test_vm_with_several_outputs_returns_a_tuple_in_output_order(rng):
    g = nxe.Graph()
    x = g.input("x", (5,), "f32")
    g.mark_output(g.Relu(x), name="relu")
    g.mark_output(g.Tanh(x), name="tanh")
    value = random_x(rng, (5,))
    with nxe.VirtualMachine(g.compile_to_binary(threads=THREADS), threads=THREADS) as vm:
        relu, tanh = vm["main"](value)
        views = vm.run_nocopy(value)
    np.testing.assert_array_equal(relu, np.maximum(value, 0))
    assert_close(tanh, np.tanh(value))
    assert isinstance(views, tuple) and np.array_equal(views[1], tanh)


def test_vm_created_input_skips_the_copy(tmp_path, rng):
    path = tmp_path / "tanh.nxb"
    tanh_graph().compile_to_binary(path, threads=THREADS)
    x = random_x(rng)
    with nxe.VirtualMachine(path, threads=THREADS) as vm:
        staged = vm.create_input((2, 3), "f32")
        staged[...] = x
        view = vm.run_nocopy(staged)
        stats = vm.stats()
        assert_close(view, tanh_reference(x))
        assert (stats["inputs_in_place"], stats["inputs_copied"], stats["bytes_copied_in"]) == \
            (1, 0, 0)


def test_vm_staging_capacity_is_the_one_asked_for(binary):
    with nxe.VirtualMachine(binary, threads=THREADS) as vm:
        larger = vm.stats()["staging_bytes"] + 64 * 1024
    with nxe.VirtualMachine(binary, threads=THREADS, staging_bytes=larger) as vm:
        assert vm.stats()["staging_bytes"] == larger


def test_vm_reports_it_was_loaded_and_the_model_fingerprint(binary, tmp_path):
    path = tmp_path / "tanh.nxb"
    path.write_bytes(binary)
    with nxe.VirtualMachine(binary) as from_bytes, nxe.VirtualMachine(path) as from_file:
        info = from_bytes.info()
        assert info["loaded"] and not info["recompiled"]
        assert len(info["fingerprint"]) == 64 and int(info["fingerprint"], 16) != 0
        assert info["isa"] and info["kernel_abi"] > 0
        assert from_file.info() == info


def test_in_memory_executable_reports_it_was_not_loaded(exe):
    assert not exe.info()["loaded"]


def test_vm_context_manager_closes_it(binary, rng):
    with nxe.VirtualMachine(binary) as vm:
        main = vm["main"]
    assert vm.closed
    with pytest.raises(nxe.InvalidStateError, match="closed"):
        main(random_x(rng))
    with pytest.raises(nxe.InvalidStateError, match="closed"):
        vm.stats()
    vm.close()


def test_vm_has_only_the_main_function(binary):
    with nxe.VirtualMachine(binary) as vm, pytest.raises(KeyError, match="'other'.*only 'main'"):
        vm["other"]


def test_vm_refuses_what_is_not_a_binary(tmp_path):
    with pytest.raises(TypeError, match="path or the binary's bytes"):
        nxe.VirtualMachine(42)
    with pytest.raises(nxe.IoError):
        nxe.VirtualMachine(tmp_path / "missing.nxb")
    with pytest.raises(nxe.FormatError):
        nxe.VirtualMachine(b"not a compiled binary at all" * 8)
