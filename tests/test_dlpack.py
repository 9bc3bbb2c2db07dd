"""Array interchange in and out of Executable runs: inputs that offer only DLPack
(``__dlpack__``/``__dlpack_device__``, as PyTorch, JAX and CuPy-on-CPU tensors do) are read
where they lie, a non-contiguous one is copied once into C order as a numpy array would be,
other devices and dtypes numpy cannot hold are refused with a message naming the input; objects
numpy reads (``__array_interface__``, ``__array__``) still work; outputs go out through
np.from_dlpack and torch.from_dlpack."""

import numpy as np
import nxe
import pytest

torch = pytest.importorskip("torch")

SHAPE = (3, 5)
EXACT = {"rtol": 0, "atol": 0}  # the same inputs give bit-identical outputs


class DLPackOnly:
    """Offers an array through DLPack and nothing else."""

    def __init__(self, array, device=None):
        self._array = array
        self._device = device

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._device or self._array.__dlpack_device__()


class InterfaceOnly:
    def __init__(self, array):
        self.__array_interface__ = array.__array_interface__
        self._array = array


class ArrayOnly:
    def __init__(self, array):
        self._array = array

    def __array__(self, dtype=None, copy=None):
        return self._array


@pytest.fixture
def exe():
    """y = tanh(x) * 3 + b"""
    g = nxe.Graph()
    x = g.input("x", SHAPE, "f32")
    b = g.constant(np.linspace(-1, 1, 15, dtype=np.float32).reshape(SHAPE), name="b")
    g.mark_output(g.Add(g.Mul(g.Tanh(x), g.constant(np.float32(3), name="three")), b), name="y")
    return g.compile(threads=1)


@pytest.fixture
def x():
    return np.random.default_rng(3).standard_normal(SHAPE).astype(np.float32)


def test_from_dlpack_shares_the_wrapped_memory(x):
    # The premise of reading DLPack inputs in place.
    assert np.from_dlpack(DLPackOnly(x)).ctypes.data == x.ctypes.data


@pytest.mark.parametrize("wrap", [DLPackOnly, torch.from_numpy, InterfaceOnly, ArrayOnly],
                         ids=["dlpack-only", "torch", "array-interface", "array"])
@pytest.mark.parametrize("method", ["run", "run_nocopy"])
def test_inputs_that_numpy_or_dlpack_reads_give_the_numpy_result(exe, x, wrap, method):
    expected = exe.run(x)["y"].copy()
    np.testing.assert_allclose(getattr(exe, method)(wrap(x))["y"], expected, **EXACT)
    np.testing.assert_allclose(getattr(exe, method)({"x": wrap(x)})["y"], expected, **EXACT)


@pytest.mark.parametrize("wrap", [DLPackOnly, torch.from_dlpack], ids=["dlpack-only", "torch"])
def test_dlpack_input_in_staging_memory_is_used_in_place(exe, x, wrap):
    staged = exe.create_input("x")
    staged[...] = x
    before = exe.stats()
    result = exe.run(wrap(staged))["y"]
    after = exe.stats()
    # Read where it lies: no copy on the way to the library (the library's statistics count an
    # input outside the staging buffer as copied), and the same answer.
    assert after["inputs_in_place"] == before["inputs_in_place"] + 1
    assert after["inputs_copied"] == before["inputs_copied"]
    np.testing.assert_allclose(result, exe.run(x)["y"], **EXACT)


def test_non_contiguous_dlpack_input_is_copied_into_c_order(exe):
    wide = torch.randn(SHAPE[0], 2 * SHAPE[1], generator=torch.Generator().manual_seed(1))
    strided = wide[:, ::2]
    assert not strided.is_contiguous()
    np.testing.assert_allclose(exe.run(strided)["y"],
                               exe.run(np.ascontiguousarray(strided.numpy()))["y"], **EXACT)
    np.testing.assert_allclose(exe.run(DLPackOnly(strided))["y"],
                               exe.run(strided.contiguous().numpy())["y"], **EXACT)


def test_dlpack_input_on_another_device_is_refused_naming_it(exe, x):
    with pytest.raises(nxe.InvalidArgumentError, match=r"input 'x'.*cuda:1.*CPU"):
        exe.run(DLPackOnly(x, device=(2, 1)))
    with pytest.raises(nxe.InvalidArgumentError, match=r"input 'x'.*DLPack device type 99"):
        exe.run_nocopy(DLPackOnly(x, device=(99, 0)))


def test_dlpack_input_of_another_dtype_is_refused_naming_it(exe, x):
    # A dtype numpy cannot hold, and one it holds that is not the input's: no silent cast.
    with pytest.raises(nxe.DtypeMismatchError, match=r"input 'x' \(expected f32\).*DLPack"):
        exe.run(DLPackOnly(torch.from_numpy(x).to(torch.bfloat16)))
    with pytest.raises(nxe.DtypeMismatchError, match=r"input 'x': expected f32.*float64"):
        exe.run(torch.from_numpy(x.astype(np.float64)))
    with pytest.raises(nxe.ShapeMismatchError, match=r"input 'x'"):
        exe.run(torch.from_numpy(x[:2]))


def test_dlpack_export_refused_by_the_producer_is_an_nxe_error(exe, x):
    with pytest.raises(nxe.InvalidArgumentError, match=r"input 'x'.*detach"):
        exe.run(torch.from_numpy(x).requires_grad_())


def test_outputs_go_out_through_dlpack(exe, x):
    owned = exe.run(x)["y"]
    expected = owned.copy()
    for consumer in (np.from_dlpack, torch.from_dlpack):
        taken = consumer(owned)
        np.testing.assert_allclose(np.asarray(taken), expected, **EXACT)
    assert torch.from_dlpack(owned).data_ptr() == owned.ctypes.data
    view = exe.run_nocopy(x)["y"]
    tensor = torch.from_dlpack(view)
    assert tensor.data_ptr() == view.ctypes.data == np.from_dlpack(view).ctypes.data
    np.testing.assert_allclose(tensor.numpy(), expected, **EXACT)
    # And back in: a run_nocopy result fed to another run through DLPack.
    np.testing.assert_allclose(exe.run(DLPackOnly(view))["y"], exe.run(expected)["y"], **EXACT)
