"""The int8 variants of the ESPCN models (nxe.sr_quantize, precision "int8" in libnxe_sr):
PSNR within 0.05 dB of fp32 on every evaluation image, the integer path against a numpy
reference of the same quantized graph, tiles equal to whole frames, the variant found beside
a model given by path, and int8 asked of models and files that cannot give it."""

from __future__ import annotations

import shutil

import numpy as np
import nxe
import nxe.sr
import pytest
from nxe import metrics
from nxe.sr_quantize import (
    ACTIVATION_ZERO_POINT,
    INPUT_STEP,
    espcn_int8,
    espcn_int8_from_model,
    quantize_weights,
)
from test_sr_quality import EVAL_IMAGES, eval_pair

INT8_MODELS = ("espcn-x2", "espcn-x3", "espcn-x4")
# The bound: int8 loses at most this much PSNR against fp32 on an evaluation image.
PSNR_BUDGET_DB = 0.05


def int8_path(model: str):
    return nxe.sr.model_path(model).with_name(f"{model}-int8.nxm")


def luma_frame(h: int, w: int, seed: int) -> np.ndarray:
    """8-bit luma with edges, texture and flat areas."""
    rng = np.random.default_rng(seed)
    yy, xx = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    base = 128 + 70 * np.sin(xx / 3.0) * np.cos(yy / 5.0) + 40 * (xx > w // 2)
    return np.clip(np.round(base + 12 * rng.standard_normal((h, w))), 16, 235).astype(np.uint8)


@pytest.mark.parametrize("model", INT8_MODELS)
def test_int8_psnr_is_within_budget_of_fp32_on_every_evaluation_image(model):
    fp32 = nxe.sr.Upscaler(model)
    int8 = nxe.sr.Upscaler(model, precision="int8")
    assert int8.info()["precision"] == "int8" and int8.info()["name"] == model
    scale = fp32.scale
    for name in EVAL_IMAGES:
        hr, lr = eval_pair(name, scale)
        hr_y = metrics.luma(hr)
        lr_y = np.round(metrics.luma(lr)).astype(np.uint8)
        exact = metrics.psnr(fp32.upscale_planes([lr_y], "gray8")[0], hr_y, border=scale)
        quantized = metrics.psnr(int8.upscale_planes([lr_y], "gray8")[0], hr_y, border=scale)
        print(f"{model} {name}: fp32 {exact:.4f} dB, int8 {quantized:.4f} dB, "
              f"{quantized - exact:+.4f}")
        assert quantized >= exact - PSNR_BUDGET_DB, (name, exact, quantized)


def conv_same(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Exact integer 'SAME' convolution of [C, H, W] by OIHW, zero padded, in int64."""
    k = weight.shape[-1]
    pad = k // 2
    h, w = x.shape[1:]
    padded = np.pad(x.astype(np.int64), ((0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((weight.shape[0], h * w), np.int64)
    for dy in range(k):
        for dx in range(k):
            window = padded[:, dy:dy + h, dx:dx + w].reshape(x.shape[0], -1)
            out += weight[:, :, dy, dx].astype(np.int64) @ window
    return out.reshape(-1, h, w)


def dequantized(acc: np.ndarray, scales: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """DequantizeLinear of the int32 accumulator, then the bias, in f32 as the graph does."""
    return (acc.astype(np.float32) * scales[:, None, None]) + bias[:, None, None]


def quantized_tanh(y: np.ndarray, step: np.ndarray) -> np.ndarray:
    t = np.tanh(y) / step[:, None, None]
    return np.clip(np.round(t) + ACTIVATION_ZERO_POINT, 0, 255).astype(np.uint8)


@pytest.mark.parametrize("model", INT8_MODELS)
def test_int8_graph_matches_an_integer_reference(model):
    """Each layer of the shipped int8 graph against numpy fed the graph's own input codes:
    the accumulators are exact integers, so the codes may differ only where an f32 tanh lands
    on a rounding edge (at most 1, in under 0.1% of samples), and the last layer, which has no
    tanh, equals the reference to f32 rounding."""
    with nxe.Model(int8_path(model)) as file:
        params = espcn_int8_from_model(file)
        assert file.metadata["precision"] == "int8"
    h, w = 37, 53
    luma = luma_frame(h, w, seed=1)
    built = espcn_int8(params, h, w)
    for name in ("tanh1_q", "tanh2_q", "conv3.biased"):
        built.graph.mark_output(built.graph.find_tensor(name))
    got = built.graph.compile(threads=2).run(luma[None, None] * np.float32(INPUT_STEP))
    inputs = [luma[None], got["tanh1_q"][0], got["tanh2_q"][0]]
    zero = [0, ACTIVATION_ZERO_POINT, ACTIVATION_ZERO_POINT]
    for i in range(3):
        acc = conv_same(inputs[i].astype(np.int64) - zero[i], params.weights[i])
        y = dequantized(acc, params.accumulator_scales[i], params.biases[i])
        if i < 2:
            want = quantized_tanh(y, params.steps[i])
            diff = np.abs(got[f"tanh{i + 1}_q"][0].astype(int) - want)
            assert diff.max() <= 1 and np.mean(diff) < 1e-3, (i, diff.max(), np.mean(diff))
        else:
            np.testing.assert_allclose(got["conv3.biased"][0], y, rtol=0, atol=1e-6)
    # The library's int8 session runs this graph: its 8-bit output is the graph's, rounded.
    upscaled = nxe.sr.Upscaler(model, precision="int8").upscale_planes([luma], "gray8")[0]
    want = np.clip(np.round(got["upscaled"][0, 0] * 255), 0, 255)
    assert np.abs(upscaled.astype(int) - want).max() <= 1
    assert np.mean(upscaled != want) < 1e-3


def test_weight_rounding_keeps_kernel_sums_and_stays_within_a_step():
    rng = np.random.default_rng(3)
    weight = rng.standard_normal((8, 5, 3, 3)).astype(np.float32)
    weight[2] = 0.0  # an all-zero channel keeps a usable scale
    values, scales = quantize_weights(weight)
    assert values.dtype == np.int8 and scales.shape == (8,) and np.all(scales > 0)
    units = weight / scales[:, None, None, None]
    assert np.abs(values - units).max() <= 1.0
    np.testing.assert_array_equal(values.sum(axis=(2, 3)),
                                  np.round(units.sum(axis=(2, 3))).astype(int))
    assert np.abs(values).max() == 127


@pytest.mark.parametrize("tile,size", [(16, (61, 47)), (9, (30, 29))])
def test_int8_tiles_equal_the_whole_frame(tile, size):
    """Quantization is static (fixed steps, no ranges measured at run time) and every op is
    per pixel or a convolution inside the receptive radius, so tiles give the untiled frame."""
    w, h = size
    luma = luma_frame(h, w, seed=2)
    whole = nxe.sr.Upscaler("espcn-x2", tile=-1, precision="int8").upscale_planes([luma],
                                                                                  "gray8")
    tiled = nxe.sr.Upscaler("espcn-x2", tile=tile, precision="int8")
    parts = tiled.upscale_planes([luma], "gray8")
    assert tiled.info()["tiles"] > 2
    np.testing.assert_array_equal(whole[0], parts[0])


@pytest.mark.parametrize("model", ["edsr-x2", "edsr-x4"])
def test_int8_of_a_model_without_a_variant_is_unsupported(model):
    with pytest.raises(nxe.UnsupportedError, match=f"'{model}' has no int8 variant"):
        nxe.sr.Upscaler(model, precision="int8")


def test_int8_file_opens_only_as_int8_and_a_path_finds_its_variant(tmp_path):
    for name in ("espcn-x2.nxm", "espcn-x2-int8.nxm"):
        shutil.copy(nxe.sr.model_path("espcn-x2").with_name(name), tmp_path / name)
    luma = luma_frame(20, 24, seed=5)
    want = nxe.sr.Upscaler("espcn-x2", precision="int8").upscale_planes([luma], "gray8")[0]
    for path in (tmp_path / "espcn-x2.nxm", tmp_path / "espcn-x2-int8.nxm"):
        up = nxe.sr.Upscaler(str(path), precision="int8")
        np.testing.assert_array_equal(up.upscale_planes([luma], "gray8")[0], want)
    for precision in ("fp32", "relax"):
        with pytest.raises(nxe.InvalidArgumentError, match="is an int8 model"):
            nxe.sr.Upscaler(str(tmp_path / "espcn-x2-int8.nxm"), precision=precision)
    # A file in the variant's place that is not int8 is refused, not run as int8.
    shutil.copy(tmp_path / "espcn-x2.nxm", tmp_path / "espcn-x2-int8.nxm")
    with pytest.raises(nxe.FormatError, match="lacks the metadata \"precision\": \"int8\""):
        nxe.sr.Upscaler(str(tmp_path / "espcn-x2.nxm"), precision="int8")
    (tmp_path / "espcn-x2-int8.nxm").unlink()
    with pytest.raises(nxe.UnsupportedError, match="no int8 variant.*espcn-x2-int8.nxm"):
        nxe.sr.Upscaler(str(tmp_path / "espcn-x2.nxm"), precision="int8")


def test_int8_variants_record_their_calibration_and_fp32_twin():
    for model in INT8_MODELS:
        with nxe.Model(nxe.sr.model_path(model)) as fp32, nxe.Model(int8_path(model)) as int8:
            assert int8.metadata == dict(fp32.metadata, precision="int8",
                                         fp32_fingerprint=fp32.fingerprint)
            assert set(int8.annotations["psnr_y_db"]) == set(EVAL_IMAGES)
            assert int8_path(model).stat().st_size < 64 * 1024
