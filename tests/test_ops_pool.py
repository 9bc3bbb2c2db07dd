"""The pool op family (MaxPool, AveragePool, LpPool in 1-3 d, and their global forms) against
numpy references computed here, and the errors each op gives for bad input."""

import itertools

import numpy as np
import nxe
import pytest
from op_testing import build_op, run_single

RNG = np.random.default_rng(20240612)
TOL = {"rtol": 1e-5, "atol": 1e-6}


def uniform(*shape):
    return RNG.uniform(-2.0, 2.0, size=shape).astype(np.float32)


def output_size(size, kernel, stride, dilation, begin, end, ceil_mode):
    span = (kernel - 1) * dilation + 1
    room = size + begin + end - span
    out = (-(-room // stride) if ceil_mode else room // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + begin:
        out -= 1
    return out


def pool_reference(x, kind, kernel_shape, strides=None, pads=None, dilations=None, ceil_mode=0,
                   count_include_pad=0, p=2):
    """Channels-first pooling of any spatial rank in float64: windows gathered tap by tap from
    an input padded with NaN (outside the input) and a mask of the padded range."""
    kernel = kernel_shape
    r = len(kernel)
    strides = strides or [1] * r
    pads = pads or [0] * 2 * r
    dilations = dilations or [1] * r
    sizes = x.shape[2:]
    out = [output_size(sizes[i], kernel[i], strides[i], dilations[i], pads[i], pads[r + i],
                       ceil_mode) for i in range(r)]
    extra = [max(0, (out[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1
                 - sizes[i] - pads[i] - pads[r + i]) for i in range(r)]
    widths = [(pads[i], pads[r + i] + extra[i]) for i in range(r)]
    data = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + widths, constant_values=np.nan)
    in_padded_range = np.pad(np.ones(sizes), [(pads[i], pads[r + i]) for i in range(r)],
                             constant_values=1)
    in_padded_range = np.pad(in_padded_range, [(0, e) for e in extra])
    values, counted = [], []
    for taps in itertools.product(*[range(k) for k in kernel]):
        window = tuple(slice(t * d, t * d + s * (n - 1) + 1, s)
                       for t, d, s, n in zip(taps, dilations, strides, out))
        values.append(data[(Ellipsis,) + window])
        counted.append(in_padded_range[window])
    values = np.stack(values)
    inside = ~np.isnan(values)
    if kind == "max":
        return np.max(np.where(inside, values, -np.inf), axis=0)
    if kind == "lp":
        return np.sum(np.where(inside, np.abs(values), 0.0) ** p, axis=0) ** (1.0 / p)
    total = np.sum(np.where(inside, values, 0.0), axis=0)
    count = np.sum(np.stack(counted), axis=0) if count_include_pad else np.sum(inside, axis=0)
    return total / count


OP = {"max": "MaxPool", "average": "AveragePool", "lp": "LpPool"}
CASES = [
    # x shape, attributes
    ((2, 3, 11), {"kernel_shape": [3]}),
    ((1, 2, 13), {"kernel_shape": [4], "strides": [3], "pads": [2, 1], "dilations": [2]}),
    ((1, 2, 10), {"kernel_shape": [3], "strides": [2], "pads": [1, 1], "ceil_mode": 1}),
    ((2, 3, 7, 9), {"kernel_shape": [3, 2]}),
    ((1, 2, 8, 7), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ((1, 3, 9, 10), {"kernel_shape": [2, 3], "strides": [2, 3], "pads": [1, 0, 0, 2],
                     "ceil_mode": 1}),
    ((1, 2, 9, 8), {"kernel_shape": [3, 2], "dilations": [2, 3], "strides": [1, 2],
                    "pads": [2, 1, 1, 1]}),
    ((1, 2, 5, 4, 6), {"kernel_shape": [2, 2, 3]}),
    ((2, 1, 6, 7, 5), {"kernel_shape": [3, 2, 2], "strides": [2, 2, 1],
                       "pads": [1, 0, 1, 1, 1, 0], "ceil_mode": 1, "dilations": [1, 2, 1]}),
]


@pytest.mark.parametrize("x_shape,attrs", CASES)
@pytest.mark.parametrize("kind", ["max", "average", "lp"])
def test_pool_matches_reference(x_shape, attrs, kind):
    r = len(x_shape) - 2
    x = uniform(*x_shape)
    y = run_single(f"{OP[kind]}{r}d", [x], **attrs)
    ref = pool_reference(x, kind, **attrs)
    assert y.dtype == np.float32 and y.shape == ref.shape
    np.testing.assert_allclose(y, ref, **TOL)


@pytest.mark.parametrize("x_shape,attrs", [c for c in CASES if "pads" in c[1]])
def test_average_pool_count_include_pad_divides_by_the_padded_window(x_shape, attrs):
    r = len(x_shape) - 2
    x = uniform(*x_shape)
    y = run_single(f"AveragePool{r}d", [x], count_include_pad=1, **attrs)
    np.testing.assert_allclose(y, pool_reference(x, "average", count_include_pad=1, **attrs),
                               **TOL)


@pytest.mark.parametrize("p", [1, 3])
def test_lp_pool_orders_other_than_two(p):
    x = uniform(1, 3, 7, 6)
    attrs = {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 1]}
    y = run_single("LpPool2d", [x], p=p, **attrs)
    np.testing.assert_allclose(y, pool_reference(x, "lp", p=p, **attrs), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("padding", ["SAME", "SAME_LOWER", "VALID"])
@pytest.mark.parametrize("kind", ["max", "average"])
def test_pool_same_and_valid_padding(rank, padding, kind):
    sizes, kernel, strides = [7, 6, 5][:rank], [3, 2, 4][:rank], [2, 1, 2][:rank]
    x = uniform(2, 2, *sizes)
    if padding == "VALID":
        pads = [0] * 2 * rank
    else:
        totals = [max(0, (-(-s // t) - 1) * t + k - s) for s, k, t in zip(sizes, kernel, strides)]
        small = [t // 2 for t in totals]
        big = [t - t // 2 for t in totals]
        pads = small + big if padding == "SAME" else big + small
    y = run_single(f"{OP[kind]}{rank}d", [x], kernel_shape=kernel, strides=strides, padding=padding,
                   pads=[5] * 2 * rank)
    np.testing.assert_allclose(y, pool_reference(x, kind, kernel, strides, pads), **TOL)
    if padding != "VALID":
        assert y.shape[2:] == tuple(-(-s // t) for s, t in zip(sizes, strides))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_max_pool_integer_dtypes_are_exact(dtype, rank):
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, size=(2, 3) + (6, 5, 4)[:rank], endpoint=True,
                     dtype=dtype)
    attrs = {"kernel_shape": [3] * rank, "strides": [2] * rank, "pads": [1] * 2 * rank,
             "ceil_mode": 1}
    y = run_single(f"MaxPool{rank}d", [x], **attrs)
    assert y.dtype == dtype
    assert np.array_equal(y, pool_reference(x, "max", **attrs).astype(dtype))


def test_max_pool_propagates_nan():
    x = uniform(1, 1, 6, 6)
    x[0, 0, 1, 4] = np.nan
    y = run_single("MaxPool2d", [x], kernel_shape=[2, 2], strides=[2, 2])
    expected_nan = np.zeros((1, 1, 3, 3), dtype=bool)
    expected_nan[0, 0, 0, 2] = True
    assert np.array_equal(np.isnan(y), expected_nan)
    np.testing.assert_array_equal(y[~expected_nan], pool_reference(x, "max", [2, 2], [2, 2])
                                  [~expected_nan])


@pytest.mark.parametrize("op_type", ["MaxPool2d", "AveragePool2d", "LpPool2d"])
def test_pool_is_bit_identical_for_one_and_three_threads(op_type):
    x = uniform(3, 5, 41, 37)
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1}
    assert np.array_equal(run_single(op_type, [x], threads=1, **attrs),
                          run_single(op_type, [x], threads=3, **attrs))


# ---- Global pooling -----------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(2, 3, 7), (1, 4, 5, 6), (2, 2, 3, 4, 5), (3, 1, 1, 1)])
def test_global_pools_reduce_every_spatial_axis(shape):
    x = uniform(*shape)
    axes = tuple(range(2, x.ndim))
    x64 = x.astype(np.float64)
    cases = [("GlobalMaxPool", {}, np.max(x64, axis=axes, keepdims=True)),
             ("GlobalAveragePool", {}, np.mean(x64, axis=axes, keepdims=True)),
             ("GlobalLpPool", {}, np.sqrt(np.sum(x64 ** 2, axis=axes, keepdims=True))),
             ("GlobalLpPool", {"p": 3},
              np.sum(np.abs(x64) ** 3, axis=axes, keepdims=True) ** (1 / 3))]
    for op_type, attrs, ref in cases:
        y = run_single(op_type, [x], **attrs)
        assert y.shape == ref.shape, op_type
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5, err_msg=op_type)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_global_max_pool_integer_dtypes_are_exact(dtype):
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, size=(2, 5, 3, 7), endpoint=True, dtype=dtype)
    y = run_single("GlobalMaxPool", [x])
    assert y.dtype == dtype and np.array_equal(y, x.max(axis=(2, 3), keepdims=True))


def test_global_average_pool_is_bit_identical_for_one_and_three_threads():
    x = uniform(4, 64, 33, 35)
    assert np.array_equal(run_single("GlobalAveragePool", [x], threads=1),
                          run_single("GlobalAveragePool", [x], threads=3))


# ---- Errors -------------------------------------------------------------------------------


@pytest.mark.parametrize("op_type,shape,dtype,attrs,error,match", [
    ("MaxPool2d", (1, 3, 8), "f32", {"kernel_shape": [2, 2]}, nxe.ShapeMismatchError,
     r"input X must have rank 4 .*\[1, 3, 8\]"),
    ("AveragePool1d", (1, 3, 8, 8), "f32", {"kernel_shape": [2]}, nxe.ShapeMismatchError,
     r"input X must have rank 3"),
    ("MaxPool3d", (1, 3, 4, 0, 4), "f32", {"kernel_shape": [1, 1, 1]}, nxe.ShapeMismatchError,
     r"empty spatial dimension"),
    ("MaxPool2d", (1, 3, 2, 8), "f32", {"kernel_shape": [3, 2]}, nxe.ShapeMismatchError,
     r"height 2 plus pads 0\+0 .*kernel height 3"),
    ("LpPool1d", (1, 3, 5), "f32", {"kernel_shape": [3], "dilations": [3]},
     nxe.ShapeMismatchError, r"width 5 plus pads 0\+0 .*kernel width 7"),
    ("MaxPool2d", (1, 3, 8, 8), "f32", {}, nxe.InvalidArgumentError,
     r"required attribute 'kernel_shape'"),
    ("MaxPool2d", (1, 3, 8, 8), "f32", {"kernel_shape": [2]}, nxe.InvalidArgumentError,
     r"kernel_shape needs 2 values, got 1"),
    ("MaxPool2d", (1, 3, 8, 8), "f32", {"kernel_shape": [2, 0]}, nxe.InvalidArgumentError,
     r"kernel_shape\[1\] must be in \[1, "),
    ("AveragePool2d", (1, 3, 8, 8), "f32", {"kernel_shape": [2, 2], "strides": [0, 1]},
     nxe.InvalidArgumentError, r"strides\[0\] must be in \[1, "),
    ("AveragePool3d", (1, 3, 4, 4, 4), "f32", {"kernel_shape": [2, 2, 2], "pads": [1, 1]},
     nxe.InvalidArgumentError, r"pads needs 6 values, got 2"),
    ("AveragePool2d", (1, 3, 8, 8), "f32", {"kernel_shape": [2, 2], "count_include_pad": 2},
     nxe.InvalidArgumentError, r"count_include_pad must be in \[0, 1\], got 2"),
    ("MaxPool1d", (1, 3, 8), "f32", {"kernel_shape": [2], "ceil_mode": -1},
     nxe.InvalidArgumentError, r"ceil_mode must be in \[0, 1\], got -1"),
    ("MaxPool1d", (1, 3, 8), "f32", {"kernel_shape": [2], "padding": "FULL"},
     nxe.InvalidArgumentError, r"padding must be .*FULL"),
    ("LpPool2d", (1, 3, 8, 8), "f32", {"kernel_shape": [2, 2], "p": 0},
     nxe.InvalidArgumentError, r"p must be in \[1, 64\], got 0"),
    ("GlobalLpPool", (1, 3, 8, 8), "f32", {"p": 65}, nxe.InvalidArgumentError,
     r"p must be in \[1, 64\], got 65"),
    ("GlobalAveragePool", (1, 3), "f32", {}, nxe.ShapeMismatchError,
     r"input X must have rank 3 or more"),
    ("GlobalMaxPool", (1, 3, 4, 0), "f32", {}, nxe.ShapeMismatchError,
     r"empty spatial dimension"),
    ("AveragePool2d", (1, 3, 8, 8), "u8", {"kernel_shape": [2, 2]}, nxe.DtypeMismatchError,
     r"u8"),
    ("MaxPool2d", (1, 3, 8, 8), "i32", {"kernel_shape": [2, 2]}, nxe.DtypeMismatchError,
     r"i32"),
    ("GlobalAveragePool", (1, 3, 8, 8), "i8", {}, nxe.DtypeMismatchError, r"i8"),
    # As onnxruntime: a pad as wide as the kernel would make windows of padding only.
    ("MaxPool2d", (1, 3, 8, 8), "f32", {"kernel_shape": [2, 3], "pads": [0, 3, 0, 0]},
     nxe.InvalidArgumentError, r"axis 1 pads 3 and 0; each must be smaller than the kernel"),
    ("AveragePool1d", (1, 3, 8), "f32", {"kernel_shape": [2], "pads": [0, 5]},
     nxe.InvalidArgumentError, r"axis 0 pads 0 and 5; each must be smaller than the kernel"),
])
def test_pools_reject_bad_input(op_type, shape, dtype, attrs, error, match):
    with pytest.raises(error, match=match) as err:
        build_op(op_type, [(shape, dtype)], **attrs).compile()
    assert f"'{op_type}'" in str(err.value)


def test_pool_rejects_unknown_attribute():
    with pytest.raises(nxe.NotFoundError, match="'MaxPool2d'.*'kernel'"):
        build_op("MaxPool2d", [((1, 3, 8, 8), "f32")], kernel=[2, 2])


# ---- ONNX import (MaxPool, AveragePool, LpPool, Global*Pool) against onnxruntime ----------


def onnx_single_node(op_type, x, outputs=("y",), **attrs):
    from onnx import TensorProto, helper

    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    node = helper.make_node(op_type, ["x"], list(outputs), **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", elem, x.shape)],
        [helper.make_tensor_value_info(name, elem if i == 0 else TensorProto.INT64, None)
         for i, name in enumerate(outputs)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)], ir_version=10)


def onnxruntime_run(model, x):
    import onnxruntime as ort
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


@pytest.mark.parametrize("op_type,shape,attrs", [
    ("MaxPool", (1, 2, 11), {"kernel_shape": [3], "strides": [2], "ceil_mode": 1,
                             "pads": [1, 1]}),
    ("MaxPool", (1, 2, 9, 8), {"kernel_shape": [3, 2], "strides": [2, 1],
                               "auto_pad": "SAME_LOWER"}),
    ("MaxPool", (1, 2, 9, 8), {"kernel_shape": [3, 2], "dilations": [2, 3], "pads": [2, 1, 1, 0]}),
    ("AveragePool", (2, 3, 7, 6), {"kernel_shape": [3, 3], "strides": [2, 2],
                                   "pads": [1, 0, 1, 2], "count_include_pad": 1}),
    ("AveragePool", (1, 2, 4, 5, 6), {"kernel_shape": [2, 3, 2], "auto_pad": "SAME_UPPER",
                                      "strides": [2, 1, 2]}),
    ("LpPool", (1, 3, 6, 7), {"kernel_shape": [2, 3], "p": 3, "strides": [2, 2]}),
    ("GlobalMaxPool", (2, 3, 4, 5), {}),
    ("GlobalAveragePool", (2, 3, 4, 5, 2), {}),
])
def test_onnx_pool_nodes_import_and_match_onnxruntime(op_type, shape, attrs):
    import nxe.onnx

    x = uniform(*shape)
    model = onnx_single_node(op_type, x, **attrs)
    y = nxe.onnx.load(model, threads=1).run({"x": x})["y"]
    np.testing.assert_allclose(y, onnxruntime_run(model, x), rtol=1e-5, atol=1e-5)


def test_onnx_global_lp_pool_imports_with_its_norm_order():
    import nxe.onnx

    x = uniform(2, 3, 9)
    y = nxe.onnx.load(onnx_single_node("GlobalLpPool", x, p=1)).run({"x": x})["y"]
    np.testing.assert_allclose(y, np.abs(x.astype(np.float64)).sum(axis=2, keepdims=True),
                               rtol=1e-5, atol=1e-5)


def test_onnx_max_pool_indices_output_is_reported_unsupported():
    import nxe.onnx

    x = uniform(1, 1, 4, 4)
    model = onnx_single_node("MaxPool", x, outputs=("y", "indices"), kernel_shape=[2, 2])
    with pytest.raises(nxe.UnsupportedError, match="MaxPool.*Indices"):
        nxe.onnx.load(model).run({"x": x})
