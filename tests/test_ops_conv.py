"""The conv op family (Conv1d/2d/3d, ConvTranspose1d/2d/3d, DepthToSpace) against numpy
references computed here, and the errors each op gives for bad input."""

import itertools

import numpy as np
import nxe
import pytest
from op_testing import build_op, run_single

RNG = np.random.default_rng(20240611)
# float32 sums of up to a few hundred products of values in [-1, 1], against a float64 reference.
TOL = {"rtol": 1e-5, "atol": 1e-5}


def uniform(*shape):
    return RNG.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def same_upper_pads(size, kernel, stride, dilation):
    """(begin, end) padding of ONNX SAME_UPPER: output = ceil(size / stride)."""
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - size)
    return total // 2, total - total // 2


def conv2d_reference(x, w, b, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), group=1):
    """NCHW / OIHW convolution in float64 via shifted slices of the padded input."""
    n, _, h, wd = x.shape
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
    y = run_single("Conv2d", [x, w, b], constants=(1, 2), **attrs)
    ref = conv2d_reference(x, w, b, attrs.get("strides", (1, 1)), attrs.get("pads", (0,) * 4),
                           attrs.get("dilations", (1, 1)), attrs.get("group", 1))
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, ref, **TOL)


@pytest.mark.parametrize("x_shape,w_shape,attrs", CONV_CASES)
def test_conv2d_nhwc_matches_reference_with_ohwi_weights(x_shape, w_shape, attrs):
    x, w, b = uniform(*x_shape), uniform(*w_shape), uniform(w_shape[0])
    y = run_single("Conv2d", [to_nhwc(x), np.ascontiguousarray(w.transpose(0, 2, 3, 1)), b],
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
        y = to_nchw(run_single("Conv2d", [to_nhwc(x), to_nhwc(w), b], layout="NHWC", **attrs))
    else:
        y = run_single("Conv2d", [x, w, b], **attrs)
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
        y = to_nchw(run_single("Conv2d", [to_nhwc(x), to_nhwc(w), b], layout="NHWC", **attrs))
    else:
        y = run_single("Conv2d", [x, w, b], **attrs)
    ref = conv2d_reference(x, w, b, stride, (pad_h[0], pad_w[0], pad_h[1], pad_w[1]), dilation)
    assert y.shape[2:] == (-(-size[0] // stride[0]), -(-size[1] // stride[1]))
    np.testing.assert_allclose(y, ref, **TOL)


def test_conv2d_valid_padding_ignores_pads():
    x, w = uniform(1, 2, 7, 13), uniform(3, 2, 3, 5)
    y = run_single("Conv2d", [x, w, None], padding="VALID", pads=[2, 2, 2, 2], strides=[2, 2])
    np.testing.assert_allclose(y, conv2d_reference(x, w, None, (2, 2)), **TOL)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_conv2d_is_bit_identical_for_one_and_two_threads(layout):
    x, w, b = uniform(2, 8, 33, 31), uniform(16, 4, 3, 3), uniform(16)
    if layout == "NHWC":
        x, w = to_nhwc(x), to_nhwc(w)
    attrs = {"group": 2, "pads": [1, 1, 1, 1], "layout": layout}
    one = run_single("Conv2d", [x, w, b], threads=1, **attrs)
    two = run_single("Conv2d", [x, w, b], threads=2, **attrs)
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
        build_op("Conv2d", specs, **attrs).compile()
    assert "'Conv2d'" in str(err.value)


@pytest.mark.parametrize("attrs,match", [
    ({"strides": [0, 1]}, r"strides\[0\] must be in \[1, "),
    ({"strides": [1]}, r"strides needs 2 values, got 1"),
    ({"dilations": [1, -2]}, r"dilations\[1\]"),
    ({"pads": [0, 0, -1, 0]}, r"pads\[2\] must be in \[0, "),
    ({"pads": [1, 1]}, r"pads needs 4 values, got 2"),
    ({"padding": "SAME_MIDDLE"}, r"padding must be .*SAME_MIDDLE"),
    ({"layout": "NCWH"}, r"layout must be .*NCWH"),
    ({"group": 0}, r"group must be in \[1, "),
])
def test_conv2d_rejects_bad_attribute_values(attrs, match):
    specs = [((1, 4, 8, 8), "f32"), ((4, 4, 3, 3), "f32"), None]
    with pytest.raises(nxe.InvalidArgumentError, match=match) as err:
        build_op("Conv2d", specs, **attrs).compile()
    assert "'Conv2d'" in str(err.value)


@pytest.mark.parametrize("which", [0, 1, 2])
def test_conv2d_rejects_non_f32_inputs(which):
    specs = [((1, 3, 8, 8), "f32"), ((4, 3, 3, 3), "f32"), ((4,), "f32")]
    specs[which] = (specs[which][0], "i32")
    with pytest.raises(nxe.DtypeMismatchError, match="'Conv2d'.*i32"):
        build_op("Conv2d", specs).compile()


def test_conv2d_rejects_unknown_attribute():
    with pytest.raises(nxe.NotFoundError, match="'Conv2d'.*'stride'"):
        build_op("Conv2d", [((1, 3, 8, 8), "f32"), ((4, 3, 3, 3), "f32")], stride=[1, 1])


# ---- Conv1d, Conv3d and SAME_LOWER ---------------------------------------------------------


def conv_reference(x, w, b, strides, pads, dilations, group=1):
    """Channels-first convolution of any spatial rank in float64, one kernel tap at a time."""
    r = x.ndim - 2
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(pads[i], pads[r + i]) for i in range(r)])
    out = [(xp.shape[2 + i] - dilations[i] * (w.shape[2 + i] - 1) - 1) // strides[i] + 1
           for i in range(r)]
    o, cg = w.shape[:2]
    og = o // group
    y = np.zeros((x.shape[0], o, *out))
    for gi in range(group):
        xs = xp[:, gi * cg:(gi + 1) * cg]
        ws = w[gi * og:(gi + 1) * og].astype(np.float64)
        for taps in itertools.product(*[range(k) for k in w.shape[2:]]):
            window = tuple(slice(t * d, t * d + s * (n - 1) + 1, s)
                           for t, d, s, n in zip(taps, dilations, strides, out))
            y[:, gi * og:(gi + 1) * og] += np.einsum("nc...,oc->no...", xs[(Ellipsis,) + window],
                                                     ws[(Ellipsis,) + taps])
    if b is not None:
        y += b.astype(np.float64).reshape((1, o) + (1,) * r)
    return y


def channels_last(a):
    return np.ascontiguousarray(np.moveaxis(a, 1, -1))


def channels_first(a):
    return np.ascontiguousarray(np.moveaxis(a, -1, 1))


LAYOUTS = {1: ("NCW", "NWC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}
CONV_ND_CASES = [
    # x shape, w shape, attributes
    ((1, 1, 9), (1, 1, 3), {}),
    ((2, 3, 17), (4, 3, 4), {"strides": [3], "dilations": [2], "pads": [2, 1]}),
    ((1, 6, 11), (9, 2, 3), {"group": 3, "pads": [1, 4]}),
    ((1, 2, 4, 5, 6), (3, 2, 2, 3, 3), {}),
    ((2, 4, 5, 7, 4), (6, 2, 3, 2, 3),
     {"group": 2, "strides": [2, 1, 3], "dilations": [1, 2, 1], "pads": [1, 0, 2, 2, 1, 0]}),
    ((1, 3, 3, 3, 3), (2, 3, 1, 1, 1), {"pads": [0, 1, 2, 1, 0, 0]}),
]


@pytest.mark.parametrize("x_shape,w_shape,attrs", CONV_ND_CASES)
@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("last", [False, True])
def test_conv1d_and_conv3d_match_reference(x_shape, w_shape, attrs, with_bias, last):
    r = len(x_shape) - 2
    x, w = uniform(*x_shape), uniform(*w_shape)
    b = uniform(w_shape[0]) if with_bias else None
    ref = conv_reference(x, w, b, attrs.get("strides", [1] * r), attrs.get("pads", [0] * 2 * r),
                         attrs.get("dilations", [1] * r), attrs.get("group", 1))
    if last:
        y = channels_first(run_single(f"Conv{r}d", [channels_last(x), channels_last(w), b],
                                      layout=LAYOUTS[r][1], **attrs))
    else:
        y = run_single(f"Conv{r}d", [x, w, b], constants=(1, 2), **attrs)
    assert y.dtype == np.float32 and y.shape == ref.shape
    np.testing.assert_allclose(y, ref, **TOL)


@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("padding", ["SAME", "SAME_LOWER"])
@pytest.mark.parametrize("last", [False, True])
def test_conv_same_padding_puts_odd_pad_at_the_chosen_end(rank, padding, last):
    sizes, kernels, strides, dilations = [7, 5, 6][:rank], [4, 2, 3][:rank], [2, 1, 3][:rank], \
        [1, 2, 1][:rank]
    x, w, b = uniform(2, 3, *sizes), uniform(4, 3, *kernels), uniform(4)
    pairs = [same_upper_pads(*args) for args in zip(sizes, kernels, strides, dilations)]
    if padding == "SAME_LOWER":
        pairs = [(end, begin) for begin, end in pairs]
    pads = [p[0] for p in pairs] + [p[1] for p in pairs]
    attrs = {"padding": padding, "strides": strides, "dilations": dilations, "pads": [7] * 2 * rank}
    if last:
        y = channels_first(run_single(f"Conv{rank}d", [channels_last(x), channels_last(w), b],
                                      layout=LAYOUTS[rank][1], **attrs))
    else:
        y = run_single(f"Conv{rank}d", [x, w, b], **attrs)
    assert y.shape[2:] == tuple(-(-s // t) for s, t in zip(sizes, strides))
    np.testing.assert_allclose(y, conv_reference(x, w, b, strides, pads, dilations), **TOL)


@pytest.mark.parametrize("op_type,x_shape,w_shape", [
    ("Conv1d", (2, 6, 301), (8, 3, 5)), ("Conv3d", (2, 4, 9, 17, 15), (8, 2, 3, 3, 3))])
@pytest.mark.parametrize("last", [False, True])
def test_conv1d_and_conv3d_are_bit_identical_for_one_and_three_threads(op_type, x_shape, w_shape,
                                                                       last):
    x, w, b = uniform(*x_shape), uniform(*w_shape), uniform(w_shape[0])
    r = len(x_shape) - 2
    if last:
        x, w = channels_last(x), channels_last(w)
    attrs = {"group": 2, "pads": [1] * 2 * r, "layout": LAYOUTS[r][last]}
    one = run_single(op_type, [x, w, b], threads=1, **attrs)
    three = run_single(op_type, [x, w, b], threads=3, **attrs)
    assert np.array_equal(one, three)


@pytest.mark.parametrize("op_type,specs,attrs,error,match", [
    ("Conv1d", [((1, 3, 8, 8), "f32"), ((4, 3, 3), "f32")], {}, nxe.ShapeMismatchError,
     r"input X must have rank 3 \(NCW\)"),
    ("Conv1d", [((1, 8, 3), "f32"), ((4, 3, 3, 1), "f32")], {"layout": "NWC"},
     nxe.ShapeMismatchError, r"weight W must have rank 3 \(OWI\)"),
    ("Conv3d", [((1, 3, 4, 4), "f32"), ((4, 3, 1, 1, 1), "f32")], {}, nxe.ShapeMismatchError,
     r"input X must have rank 5 \(NCDHW\)"),
    ("Conv3d", [((1, 3, 2, 8, 8), "f32"), ((4, 3, 3, 1, 1), "f32")], {},
     nxe.ShapeMismatchError, r"depth 2 plus pads 0\+0.*kernel depth 3"),
    ("Conv1d", [((1, 3, 2), "f32"), ((4, 3, 2), "f32")], {"dilations": [2]},
     nxe.ShapeMismatchError, r"width 2 plus pads 0\+0.*kernel width 3"),
    ("Conv3d", [((1, 4, 2, 2, 2), "f32"), ((4, 3, 1, 1, 1), "f32")], {},
     nxe.ShapeMismatchError, r"3 input channels per group"),
    ("Conv1d", [((1, 3, 8), "f32"), ((4, 3, 3), "f32"), ((3,), "f32")], {},
     nxe.ShapeMismatchError, r"bias B must have shape \[4\]"),
    ("Conv1d", [((1, 3, 8), "f32"), ((4, 3, 3), "f32")], {"layout": "NCHW"},
     nxe.InvalidArgumentError, r"layout must be \"NCW\" or \"NWC\", got \"NCHW\""),
    ("Conv3d", [((1, 3, 4, 4, 4), "f32"), ((4, 3, 1, 1, 1), "f32")], {"layout": "NCHW"},
     nxe.InvalidArgumentError, r"layout must be \"NCDHW\" or \"NDHWC\""),
    ("Conv1d", [((1, 3, 8), "f32"), ((4, 3, 3), "f32")], {"strides": [1, 1]},
     nxe.InvalidArgumentError, r"strides needs 1 values, got 2"),
    ("Conv3d", [((1, 3, 4, 4, 4), "f32"), ((4, 3, 1, 1, 1), "f32")], {"pads": [0, 0, 0, 0]},
     nxe.InvalidArgumentError, r"pads needs 6 values, got 4"),
    ("Conv3d", [((1, 3, 4, 4, 4), "f32"), ((4, 3, 1, 1, 1), "f32")], {"dilations": [1, 0, 1]},
     nxe.InvalidArgumentError, r"dilations\[1\] must be in \[1, "),
    ("Conv1d", [((1, 3, 8), "f32"), ((4, 3, 3), "i32")], {}, nxe.DtypeMismatchError, r"i32"),
])
def test_conv1d_and_conv3d_reject_bad_input(op_type, specs, attrs, error, match):
    with pytest.raises(error, match=match) as err:
        build_op(op_type, specs, **attrs).compile()
    assert f"'{op_type}'" in str(err.value)


# ---- ConvTranspose1d/2d/3d ----------------------------------------------------------------


def conv_transpose_reference(x, w, b, strides, pads, dilations, output_padding, group=1):
    """Channels-first transposed convolution in float64 by scattering every tap into an
    uncropped output, then cutting the pads."""
    r = x.ndim - 2
    n, c = x.shape[:2]
    og = w.shape[1]
    full = [(x.shape[2 + i] - 1) * strides[i] + (w.shape[2 + i] - 1) * dilations[i] + 1 +
            output_padding[i] for i in range(r)]
    y = np.zeros((n, og * group, *full))
    cg = c // group
    for gi in range(group):
        xs = x[:, gi * cg:(gi + 1) * cg].astype(np.float64)
        ws = w[gi * cg:(gi + 1) * cg].astype(np.float64)
        for taps in itertools.product(*[range(k) for k in w.shape[2:]]):
            window = tuple(slice(t * d, t * d + s * (m - 1) + 1, s)
                           for t, d, s, m in zip(taps, dilations, strides, x.shape[2:]))
            y[(slice(None), slice(gi * og, (gi + 1) * og)) + window] += np.einsum(
                "nc...,co->no...", xs, ws[(Ellipsis,) + taps])
    if b is not None:
        y += b.astype(np.float64).reshape((1, -1) + (1,) * r)
    crop = tuple(slice(pads[i], full[i] - pads[r + i]) for i in range(r))
    return y[(slice(None), slice(None)) + crop]


CONV_TRANSPOSE_CASES = [
    # x shape, w shape, attributes
    ((1, 1, 5), (1, 1, 3), {}),
    ((2, 4, 7), (4, 3, 4), {"strides": [3], "dilations": [2], "pads": [2, 1],
                            "output_padding": [2]}),
    ((1, 6, 5), (6, 2, 3), {"group": 3, "strides": [2], "pads": [0, 3]}),
    ((1, 1, 3, 3), (1, 2, 3, 3), {}),
    ((2, 4, 5, 4), (4, 3, 3, 2),
     {"strides": [2, 3], "pads": [1, 0, 2, 1], "output_padding": [1, 2], "dilations": [2, 1]}),
    ((1, 4, 3, 5), (4, 1, 2, 2), {"group": 4, "strides": [2, 2]}),  # depthwise
    ((1, 2, 3, 2, 4), (2, 3, 2, 3, 2), {"strides": [2, 1, 3], "pads": [1, 0, 0, 0, 1, 1],
                                        "output_padding": [1, 0, 2]}),
]


@pytest.mark.parametrize("x_shape,w_shape,attrs", CONV_TRANSPOSE_CASES)
@pytest.mark.parametrize("with_bias", [False, True])
def test_conv_transpose_matches_reference(x_shape, w_shape, attrs, with_bias):
    r = len(x_shape) - 2
    group = attrs.get("group", 1)
    x, w = uniform(*x_shape), uniform(*w_shape)
    b = uniform(w_shape[1] * group) if with_bias else None
    y = run_single(f"ConvTranspose{r}d", [x, w, b], constants=(1, 2), **attrs)
    ref = conv_transpose_reference(
        x, w, b, attrs.get("strides", [1] * r), attrs.get("pads", [0] * 2 * r),
        attrs.get("dilations", [1] * r), attrs.get("output_padding", [0] * r), group)
    assert y.dtype == np.float32 and y.shape == ref.shape
    np.testing.assert_allclose(y, ref, **TOL)


def test_conv_transpose_output_padding_wider_than_the_reach_gets_only_bias():
    x, w, b = uniform(1, 2, 3), uniform(2, 3, 2), uniform(3)
    y = run_single("ConvTranspose1d", [x, w, b], strides=[2], output_padding=[4])
    assert y.shape == (1, 3, 10)
    np.testing.assert_array_equal(y[..., 6:], np.broadcast_to(b[None, :, None], (1, 3, 4)))
    np.testing.assert_allclose(
        y, conv_transpose_reference(x, w, b, [2], [0, 0], [1], [4]), **TOL)


@pytest.mark.parametrize("op_type,x_shape,w_shape", [
    ("ConvTranspose1d", (2, 4, 200), (4, 3, 5)),
    ("ConvTranspose2d", (2, 4, 21, 23), (4, 3, 3, 3)),
    ("ConvTranspose3d", (1, 4, 6, 9, 8), (4, 2, 2, 3, 3))])
def test_conv_transpose_is_bit_identical_for_one_and_three_threads(op_type, x_shape, w_shape):
    x, w, b = uniform(*x_shape), uniform(*w_shape), uniform(w_shape[1] * 2)
    r = len(x_shape) - 2
    attrs = {"group": 2, "strides": [2] * r, "pads": [1] * 2 * r}
    one = run_single(op_type, [x, w, b], threads=1, **attrs)
    three = run_single(op_type, [x, w, b], threads=3, **attrs)
    assert np.array_equal(one, three)


@pytest.mark.parametrize("op_type,specs,attrs,error,match", [
    ("ConvTranspose2d", [((1, 3, 4), "f32"), ((3, 2, 3, 3), "f32")], {},
     nxe.ShapeMismatchError, r"input X must have rank 4 \(NCHW\)"),
    ("ConvTranspose1d", [((1, 3, 4), "f32"), ((3, 2, 3, 3), "f32")], {},
     nxe.ShapeMismatchError, r"weight W must have rank 3"),
    ("ConvTranspose2d", [((1, 3, 4, 4), "f32"), ((2, 2, 3, 3), "f32")], {},
     nxe.ShapeMismatchError, r"must have the 3 channels of input X"),
    ("ConvTranspose2d", [((1, 4, 4, 4), "f32"), ((4, 2, 3, 3), "f32")], {"group": 3},
     nxe.ShapeMismatchError, r"4 channels, not a positive multiple of group 3"),
    ("ConvTranspose1d", [((1, 4, 4), "f32"), ((4, 2, 3), "f32"), ((2,), "f32")], {"group": 2},
     nxe.ShapeMismatchError, r"bias B must have shape \[4\]"),
    ("ConvTranspose1d", [((1, 4, 2), "f32"), ((4, 2, 2), "f32")], {"pads": [2, 1]},
     nxe.ShapeMismatchError, r"pads 2\+1 along width leave no output.*extent is 3"),
    ("ConvTranspose3d", [((1, 4, 2, 2, 0), "f32"), ((4, 2, 2, 2, 2), "f32")], {},
     nxe.ShapeMismatchError, r"empty spatial dimension"),
    ("ConvTranspose2d", [((1, 3, 4, 4), "f32"), ((3, 2, 3, 3), "f32")],
     {"output_padding": [1]}, nxe.InvalidArgumentError, r"output_padding needs 2 values"),
    ("ConvTranspose2d", [((1, 3, 4, 4), "f32"), ((3, 2, 3, 3), "f32")],
     {"output_padding": [0, -1]}, nxe.InvalidArgumentError, r"output_padding\[1\] must be in"),
    ("ConvTranspose2d", [((1, 3, 4, 4), "f32"), ((3, 2, 3, 3), "f32")], {"strides": [0, 1]},
     nxe.InvalidArgumentError, r"strides\[0\] must be in \[1, "),
    ("ConvTranspose2d", [((1, 3, 4, 4), "f32"), ((3, 2, 3, 3), "f16")], {},
     nxe.DtypeMismatchError, r"f16"),
])
def test_conv_transpose_rejects_bad_input(op_type, specs, attrs, error, match):
    with pytest.raises(error, match=match) as err:
        build_op(op_type, specs, **attrs).compile()
    assert f"'{op_type}'" in str(err.value)


# ---- ONNX import (Conv, ConvTranspose) against onnxruntime --------------------------------


def onnx_conv_model(op_type, x, w, b, **attrs):
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(w, "w")] + ([numpy_helper.from_array(b, "b")] if b is not None
                                                 else [])
    node = helper.make_node(op_type, ["x", "w"] + (["b"] if b is not None else []), ["y"],
                            **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)], ir_version=10)


@pytest.mark.parametrize("op_type,x_shape,w_shape,attrs", [
    ("Conv", (1, 4, 19), (6, 2, 4), {"group": 2, "auto_pad": "SAME_LOWER", "strides": [2]}),
    ("Conv", (2, 3, 8, 9), (4, 3, 3, 2), {"auto_pad": "SAME_UPPER", "strides": [2, 3]}),
    ("Conv", (1, 2, 5, 6, 7), (3, 2, 3, 2, 3),
     {"pads": [1, 0, 2, 0, 1, 1], "dilations": [1, 2, 1]}),
    ("Conv", (1, 2, 7, 7), (3, 2, 3, 3), {"auto_pad": "VALID", "strides": [2, 2]}),
    ("ConvTranspose", (1, 3, 6), (3, 2, 3), {"strides": [2], "output_shape": [14]}),
    ("ConvTranspose", (1, 2, 4, 5), (2, 3, 3, 3),
     {"strides": [2, 3], "output_shape": [8, 14], "auto_pad": "SAME_UPPER"}),
    ("ConvTranspose", (1, 2, 4, 5), (2, 3, 3, 2), {"strides": [2, 2], "auto_pad": "SAME_LOWER"}),
    ("ConvTranspose", (1, 4, 3, 4), (4, 1, 2, 3),
     {"group": 2, "pads": [1, 0, 0, 1], "output_padding": [1, 1], "strides": [2, 2]}),
    ("ConvTranspose", (1, 2, 3, 2, 3), (2, 2, 2, 2, 2), {"strides": [2, 1, 2]}),
])
def test_onnx_conv_nodes_import_and_match_onnxruntime(op_type, x_shape, w_shape, attrs):
    import nxe.onnx
    import onnxruntime as ort

    x, w = uniform(*x_shape), uniform(*w_shape)
    channels = w_shape[0] if op_type == "Conv" else w_shape[1] * attrs.get("group", 1)
    b = uniform(channels)
    model = onnx_conv_model(op_type, x, w, b, **attrs)
    y = nxe.onnx.load(model, threads=1).run({"x": x})["y"]
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(y, session.run(None, {"x": x})[0], **TOL)


def test_onnx_conv_of_unsupported_rank_is_reported():
    import nxe.onnx

    x, w = uniform(1, 1, 2, 2, 2, 2), uniform(1, 1, 1, 1, 1, 1)
    with pytest.raises(nxe.UnsupportedError, match="Conv node.*rank 6"):
        nxe.onnx.load(onnx_conv_model("Conv", x, w, None)).run({"x": x})


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
        y = run_single("DepthToSpace", [x], blocksize=block, mode=mode)
        assert np.array_equal(y, depth_to_space_reference(x, block, mode))


def test_depth_to_space_crd_is_pixel_shuffle_of_channel_blocks():
    # PyTorch pixel_shuffle: out[n, c, h*r + i, w*r + j] = in[n, c*r*r + i*r + j, h, w].
    r = 3
    x = uniform(2, 2 * r * r, 4, 5)
    y = run_single("DepthToSpace", [x], blocksize=r, mode="CRD")
    ref = np.empty_like(y)
    for i in range(r):
        for j in range(r):
            ref[:, :, i::r, j::r] = x[:, i * r + j::r * r]
    assert np.array_equal(y, ref)


def test_depth_to_space_is_bit_identical_for_one_and_two_threads():
    x = uniform(2, 16, 40, 33)
    one = run_single("DepthToSpace", [x], threads=1, blocksize=2)
    two = run_single("DepthToSpace", [x], threads=2, blocksize=2)
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
        build_op("DepthToSpace", [(shape, "f32")], **attrs).compile()
    assert "'DepthToSpace'" in str(err.value)


def test_depth_to_space_rejects_unknown_attribute():
    with pytest.raises(nxe.NotFoundError, match="'DepthToSpace'.*'block_size'"):
        build_op("DepthToSpace", [((1, 4, 2, 2), "f32")], block_size=2)
