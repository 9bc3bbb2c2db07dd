"""The conv op family (Conv2d, DepthToSpace) against numpy references computed here, and the
errors each op gives for bad input."""

import numpy as np
import pytest

import nxe

RNG = np.random.default_rng(20240611)
# float32 sums of up to a few hundred products of values in [-1, 1], against a float64 reference.
TOL = {"rtol": 1e-5, "atol": 1e-5}


def run_op(op_type, inputs, *, constants=(), threads=1, **attrs):
    """Runs one op. inputs are arrays (graph inputs) or None (absent); indices listed in
    `constants` become constant tensors instead."""
    g = nxe.Graph()
    tensors, feeds = [], {}
    for i, value in enumerate(inputs):
        if value is None:
            tensors.append(None)
        elif i in constants:
            tensors.append(g.constant(value, name=f"in{i}"))
        else:
            tensors.append(g.input(f"in{i}", value.shape, value.dtype))
            feeds[f"in{i}"] = value
    (y,) = g.op(op_type, tensors, name="under_test", **attrs)
    g.mark_output(y, name="y")
    return g.compile(threads=threads).run(feeds)["y"]


def build(op_type, specs, **attrs):
    """A graph with one op whose inputs are (shape, dtype) specs or None."""
    g = nxe.Graph()
    tensors = [None if s is None else g.input(f"in{i}", s[0], s[1]) for i, s in enumerate(specs)]
    (y,) = g.op(op_type, tensors, name="under_test", **attrs)
    g.mark_output(y)
    return g


def uniform(*shape):
    return RNG.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def same_upper_pads(size, kernel, stride, dilation):
    """(begin, end) padding of ONNX SAME_UPPER: output = ceil(size / stride)."""
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - size)
    return total // 2, total - total // 2


def conv2d_reference(x, w, b, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), group=1):
    """NCHW / OIHW convolution in float64 via shifted slices of the padded input."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    sh, sw = strides
    dh, dw = dilations
    top, left, bottom, right = pads
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    oh = (h + top + bottom - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + left + right - dw * (kw - 1) - 1) // sw + 1
    og = o // group
    y = np.zeros((n, o, oh, ow))
    for gi in range(group):
        xs = xp[:, gi * cg:(gi + 1) * cg]
        ws = w[gi * og:(gi + 1) * og].astype(np.float64)
        for ky in range(kh):
            for kx in range(kw):
                patch = xs[:, :, ky * dh:ky * dh + sh * (oh - 1) + 1:sh,
                           kx * dw:kx * dw + sw * (ow - 1) + 1:sw]
                y[:, gi * og:(gi + 1) * og] += np.einsum("nchw,oc->nohw", patch, ws[:, :, ky, kx])
    if b is not None:
        y += b.astype(np.float64)[None, :, None, None]
    return y


def to_nhwc(a):
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1))


def to_nchw(a):
    return np.ascontiguousarray(a.transpose(0, 3, 1, 2))


# ---- Conv2d -------------------------------------------------------------------------------


CONV_CASES = [
    # x shape, w shape, attributes
    ((1, 1, 5, 5), (1, 1, 3, 3), {}),
    ((2, 3, 7, 13), (5, 3, 3, 2), {"strides": [2, 1], "dilations": [1, 2], "pads": [1, 0, 2, 1]}),
    ((1, 4, 9, 8), (6, 2, 3, 3), {"group": 2, "pads": [1, 1, 1, 1]}),
    ((2, 2, 6, 7), (3, 2, 1, 1), {"strides": [3, 2]}),
    ((1, 3, 13, 7), (4, 3, 5, 3), {"strides": [2, 3], "pads": [2, 1, 0, 3], "dilations": [2, 1]}),
    ((1, 2, 4, 4), (3, 2, 3, 3), {"pads": [5, 0, 0, 6]}),  # pads wider than the kernel
]


@pytest.mark.parametrize("x_shape,w_shape,attrs", CONV_CASES)
@pytest.mark.parametrize("with_bias", [False, True])
def test_conv2d_nchw_matches_reference(x_shape, w_shape, attrs, with_bias):
    x, w = uniform(*x_shape), uniform(*w_shape)
    b = uniform(w_shape[0]) if with_bias else None
    y = run_op("Conv2d", [x, w, b], constants=(1, 2), **attrs)
    ref = conv2d_reference(x, w, b, attrs.get("strides", (1, 1)), attrs.get("pads", (0,) * 4),
                           attrs.get("dilations", (1, 1)), attrs.get("group", 1))
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, ref, **TOL)


@pytest.mark.parametrize("x_shape,w_shape,attrs", CONV_CASES)
def test_conv2d_nhwc_matches_reference_with_ohwi_weights(x_shape, w_shape, attrs):
    x, w, b = uniform(*x_shape), uniform(*w_shape), uniform(w_shape[0])
    y = run_op("Conv2d", [to_nhwc(x), np.ascontiguousarray(w.transpose(0, 2, 3, 1)), b],
               layout="NHWC", **attrs)
    ref = conv2d_reference(x, w, b, attrs.get("strides", (1, 1)), attrs.get("pads", (0,) * 4),
                           attrs.get("dilations", (1, 1)), attrs.get("group", 1))
    np.testing.assert_allclose(to_nchw(y), ref, **TOL)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("multiplier", [1, 2])
def test_conv2d_depthwise_when_group_equals_channels(layout, multiplier):
    c = 7
    x, w, b = uniform(2, c, 9, 6), uniform(c * multiplier, 1, 3, 3), uniform(c * multiplier)
    attrs = {"group": c, "pads": [1, 1, 1, 1], "strides": [2, 1]}
    if layout == "NHWC":
        y = to_nchw(run_op("Conv2d", [to_nhwc(x), to_nhwc(w), b], layout="NHWC", **attrs))
    else:
        y = run_op("Conv2d", [x, w, b], **attrs)
    np.testing.assert_allclose(y, conv2d_reference(x, w, b, (2, 1), (1, 1, 1, 1), group=c), **TOL)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("size,kernel,stride,dilation",
                         [((7, 13), (3, 2), (1, 1), (1, 1)), ((7, 13), (3, 4), (2, 3), (1, 2)),
                          ((1, 5), (3, 3), (1, 2), (2, 1)), ((8, 9), (1, 1), (3, 2), (1, 1))])
def test_conv2d_same_padding_puts_odd_pad_at_bottom_right(layout, size, kernel, stride, dilation):
    x, w, b = uniform(2, 3, *size), uniform(4, 3, *kernel), uniform(4)
    pad_h = same_upper_pads(size[0], kernel[0], stride[0], dilation[0])
    pad_w = same_upper_pads(size[1], kernel[1], stride[1], dilation[1])
    attrs = {"padding": "SAME", "strides": list(stride), "dilations": list(dilation),
             "pads": [9, 9, 9, 9]}  # ignored with SAME
    if layout == "NHWC":
        y = to_nchw(run_op("Conv2d", [to_nhwc(x), to_nhwc(w), b], layout="NHWC", **attrs))
    else:
        y = run_op("Conv2d", [x, w, b], **attrs)
    ref = conv2d_reference(x, w, b, stride, (pad_h[0], pad_w[0], pad_h[1], pad_w[1]), dilation)
    assert y.shape[2:] == (-(-size[0] // stride[0]), -(-size[1] // stride[1]))
    np.testing.assert_allclose(y, ref, **TOL)


def test_conv2d_valid_padding_ignores_pads():
    x, w = uniform(1, 2, 7, 13), uniform(3, 2, 3, 5)
    y = run_op("Conv2d", [x, w, None], padding="VALID", pads=[2, 2, 2, 2], strides=[2, 2])
    np.testing.assert_allclose(y, conv2d_reference(x, w, None, (2, 2)), **TOL)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_conv2d_is_bit_identical_for_one_and_two_threads(layout):
    x, w, b = uniform(2, 8, 33, 31), uniform(16, 4, 3, 3), uniform(16)
    if layout == "NHWC":
        x, w = to_nhwc(x), to_nhwc(w)
    attrs = {"group": 2, "pads": [1, 1, 1, 1], "layout": layout}
    one = run_op("Conv2d", [x, w, b], threads=1, **attrs)
    two = run_op("Conv2d", [x, w, b], threads=2, **attrs)
    assert np.array_equal(one, two)


@pytest.mark.parametrize("x_shape,w_shape,b_shape,attrs,match", [
    ((1, 3, 8), (4, 3, 3, 3), None, {}, r"input X must have rank 4.*\[1, 3, 8\]"),
    ((1, 3, 8, 8), (4, 3, 3), None, {}, r"weight W must have rank 4"),
    ((1, 3, 8, 8), (4, 2, 3, 3), None, {}, r"weight W \[4, 2, 3, 3\] has 2 input channels"),
    ((1, 6, 8, 8), (4, 2, 3, 3), None, {"group": 4}, r"6 channels.*group 4"),
    ((1, 6, 8, 8), (4, 3, 3, 3), None, {"group": 3}, r"4 output channels.*group 3"),
    ((1, 3, 8, 8), (4, 3, 3, 3), (3,), {}, r"bias B must have shape \[4\]"),
    ((1, 3, 8, 8), (4, 3, 3, 3), (1, 4), {}, r"bias B must have shape \[4\]"),
    ((1, 3, 2, 8), (4, 3, 3, 3), None, {}, r"height 2 plus pads 0\+0.*kernel height 3"),
    ((1, 3, 8, 8), (4, 3, 3, 3), None, {"dilations": [1, 4]}, r"kernel width 9"),
    ((1, 3, 8, 8), (4, 8, 8, 3), None, {"layout": "NHWC"}, r"input channels"),
    ((1, 3, 0, 8), (4, 3, 1, 1), None, {}, r"empty spatial dimension"),
    ((1, 3, 8, 8), (4, 3, 0, 3), None, {}, r"empty kernel"),
    ((1, 3, 8, 8), (4, 3, 1, 1), None, {"pads": [2**31 - 1] * 4}, r"more elements than int64"),
])
def test_conv2d_rejects_mismatched_shapes(x_shape, w_shape, b_shape, attrs, match):
    specs = [(x_shape, "f32"), (w_shape, "f32"), None if b_shape is None else (b_shape, "f32")]
    with pytest.raises(nxe.ShapeMismatchError, match=match) as err:
        build("Conv2d", specs, **attrs).compile()
    assert "'Conv2d'" in str(err.value)


@pytest.mark.parametrize("attrs,match", [
    ({"strides": [0, 1]}, r"strides\[0\] must be in \[1, "),
    ({"strides": [1]}, r"strides needs 2 values, got 1"),
    ({"dilations": [1, -2]}, r"dilations\[1\]"),
    ({"pads": [0, 0, -1, 0]}, r"pads\[2\] must be in \[0, "),
    ({"pads": [1, 1]}, r"pads needs 4 values, got 2"),
    ({"padding": "SAME_LOWER"}, r"padding must be .*SAME_LOWER"),
    ({"layout": "NCWH"}, r"layout must be .*NCWH"),
    ({"group": 0}, r"group must be in \[1, "),
])
def test_conv2d_rejects_bad_attribute_values(attrs, match):
    specs = [((1, 4, 8, 8), "f32"), ((4, 4, 3, 3), "f32"), None]
    with pytest.raises(nxe.InvalidArgumentError, match=match) as err:
        build("Conv2d", specs, **attrs).compile()
    assert "'Conv2d'" in str(err.value)


@pytest.mark.parametrize("which", [0, 1, 2])
def test_conv2d_rejects_non_f32_inputs(which):
    specs = [((1, 3, 8, 8), "f32"), ((4, 3, 3, 3), "f32"), ((4,), "f32")]
    specs[which] = (specs[which][0], "i32")
    with pytest.raises(nxe.DtypeMismatchError, match="'Conv2d'.*i32"):
        build("Conv2d", specs).compile()


def test_conv2d_rejects_unknown_attribute():
    with pytest.raises(nxe.NotFoundError, match="'Conv2d'.*'stride'"):
        build("Conv2d", [((1, 3, 8, 8), "f32"), ((4, 3, 3, 3), "f32")], stride=[1, 1])


# ---- DepthToSpace -------------------------------------------------------------------------


def depth_to_space_reference(x, block, mode):
    """NCHW depth-to-space from the reshape/transpose definition in the ONNX spec."""
    n, c, h, w = x.shape
    if mode == "DCR":
        t = x.reshape(n, block, block, c // (block * block), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        t = x.reshape(n, c // (block * block), block, block, h, w).transpose(0, 1, 4, 2, 5, 3)
    return t.reshape(n, c // (block * block), h * block, w * block)


DTYPES = {
    "f32": np.float32, "f16": np.float16, "bf16": np.uint16, "i8": np.int8, "u8": np.uint8,
    "i16": np.int16, "i32": np.int32, "i64": np.int64, "bool": np.bool_,
}


def random_of(dtype, shape):
    if dtype == np.bool_:
        return RNG.integers(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return RNG.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)
    return RNG.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_depth_to_space_moves_every_dtype_exactly(dtype, mode, layout):
    x = random_of(DTYPES[dtype], (2, 12, 3, 5))
    g = nxe.Graph()
    feed = to_nhwc(x) if layout == "NHWC" else x
    t = g.input("x", feed.shape, dtype)
    g.mark_output(g.DepthToSpace(t, blocksize=2, mode=mode, layout=layout), name="y")
    y = g.compile(threads=1).run({"x": feed})["y"]
    ref = depth_to_space_reference(x, 2, mode)
    assert y.dtype == x.dtype
    assert np.array_equal(to_nchw(y) if layout == "NHWC" else y, ref)


@pytest.mark.parametrize("block,shape", [(1, (1, 5, 7, 3)), (3, (1, 18, 1, 4)), (2, (3, 4, 13, 1))])
def test_depth_to_space_odd_shapes_and_block_one(block, shape):
    x = uniform(*shape)
    for mode in ("DCR", "CRD"):
        y = run_op("DepthToSpace", [x], blocksize=block, mode=mode)
        assert np.array_equal(y, depth_to_space_reference(x, block, mode))


def test_depth_to_space_crd_is_pixel_shuffle_of_channel_blocks():
    # PyTorch pixel_shuffle: out[n, c, h*r + i, w*r + j] = in[n, c*r*r + i*r + j, h, w].
    r = 3
    x = uniform(2, 2 * r * r, 4, 5)
    y = run_op("DepthToSpace", [x], blocksize=r, mode="CRD")
    ref = np.empty_like(y)
    for i in range(r):
        for j in range(r):
            ref[:, :, i::r, j::r] = x[:, i * r + j::r * r]
    assert np.array_equal(y, ref)


def test_depth_to_space_is_bit_identical_for_one_and_two_threads():
    x = uniform(2, 16, 40, 33)
    one = run_op("DepthToSpace", [x], threads=1, blocksize=2)
    two = run_op("DepthToSpace", [x], threads=2, blocksize=2)
    assert np.array_equal(one, two)


@pytest.mark.parametrize("shape,attrs,error,match", [
    ((1, 12, 4, 4), {"blocksize": 3}, nxe.ShapeMismatchError, r"12 channels.*blocksize\^2 = 9"),
    ((12, 4, 4), {"blocksize": 2}, nxe.ShapeMismatchError, r"input X must have rank 4"),
    ((1, 12, 4, 4), {"blocksize": 0}, nxe.InvalidArgumentError, r"blocksize must be in \[1, "),
    ((1, 12, 4, 4), {"blocksize": 2, "mode": "RDC"}, nxe.InvalidArgumentError, r"mode.*RDC"),
    ((1, 12, 4, 4), {"blocksize": 2, "layout": "CHWN"}, nxe.InvalidArgumentError, r"layout"),
    ((1, 12, 4, 4), {}, nxe.InvalidArgumentError, r"required attribute 'blocksize'"),
])
def test_depth_to_space_rejects_bad_input(shape, attrs, error, match):
    with pytest.raises(error, match=match) as err:
        build("DepthToSpace", [(shape, "f32")], **attrs).compile()
    assert "'DepthToSpace'" in str(err.value)


def test_depth_to_space_rejects_unknown_attribute():
    with pytest.raises(nxe.NotFoundError, match="'DepthToSpace'.*'block_size'"):
        build("DepthToSpace", [((1, 4, 2, 2), "f32")], block_size=2)
