"""numpy references for the SR frame path (tests/test_sr.py, tests/test_ffmpeg_filter.py):
Keys' cubic upscaling, YUV <-> RGB, box downsampling, quantization, each pixel format's
whole round trip, and the network itself run untiled through the model's own graph. What a
format is (planes, bits, subsampling, channel order) comes from libnxe_sr's one format table,
through nxe.sr.FORMATS."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import nxe
import nxe.sr

CUBIC_A = -0.5  # Keys' a, as MATLAB's imresize


def cubic_weight(x: np.ndarray) -> np.ndarray:
    x = np.abs(x)
    a = CUBIC_A
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x <= 1, near, np.where(x < 2, far, 0.0))


def cubic_matrix(n_in: int, n_out: int, factor: int) -> np.ndarray:
    """[n_out, n_in] weights: x_in = (x_out + 0.5) / factor - 0.5, edge samples repeated."""
    centre = (np.arange(n_out) + 0.5) / factor - 0.5
    base = np.floor(centre)
    m = np.zeros((n_out, n_in))
    for k in range(-1, 3):
        index = np.clip(base + k, 0, n_in - 1).astype(int)
        np.add.at(m, (np.arange(n_out), index), cubic_weight(centre - (base + k)))
    return m


def upscale_cubic(plane: np.ndarray, out_h: int, out_w: int, fx: int, fy: int) -> np.ndarray:
    h, w = plane.shape
    return cubic_matrix(h, out_h, fy) @ plane @ cubic_matrix(w, out_w, fx).T


def downsample_box(plane: np.ndarray, out_h: int, out_w: int, fx: int, fy: int) -> np.ndarray:
    h, w = plane.shape
    out = np.empty((out_h, out_w))
    for y in range(out_h):
        for x in range(out_w):
            out[y, x] = plane[y * fy:min(y * fy + fy, h), x * fx:min(x * fx + fx, w)].mean()
    return out


def coefficients(matrix: str, full: bool, bits: int) -> dict[str, float]:
    kr, kb = (0.2126, 0.0722) if matrix == "bt709" else (0.299, 0.114)
    top = 2**bits - 1
    unit = 2 ** (bits - 8)
    if full:
        y_off, y_scale, c_scale = 0.0, 1.0, 1.0
    else:
        y_off, y_scale, c_scale = 16 * unit / top, 219 * unit / top, 224 * unit / top
    return dict(kr=kr, kb=kb, y_off=y_off, y_scale=y_scale, c_off=2 ** (bits - 1) / top,
                c_scale=c_scale)


def rgb_to_yuv(c: dict[str, float], r, g, b):
    kg = 1 - c["kr"] - c["kb"]
    luma = c["kr"] * r + kg * g + c["kb"] * b
    return (c["y_off"] + c["y_scale"] * luma,
            c["c_off"] + c["c_scale"] * (b - luma) / (2 * (1 - c["kb"])),
            c["c_off"] + c["c_scale"] * (r - luma) / (2 * (1 - c["kr"])))


def yuv_to_rgb(c: dict[str, float], y, u, v):
    kg = 1 - c["kr"] - c["kb"]
    luma = (y - c["y_off"]) / c["y_scale"]
    r = luma + 2 * (1 - c["kr"]) * (v - c["c_off"]) / c["c_scale"]
    b = luma + 2 * (1 - c["kb"]) * (u - c["c_off"]) / c["c_scale"]
    return r, (luma - c["kr"] * r - c["kb"] * b) / kg, b


def quantize(x: np.ndarray, top: int, dtype) -> np.ndarray:
    return np.clip(np.floor(x * top + 0.5), 0, top).astype(dtype)


@lru_cache(maxsize=16)
def _executable(model: str, channels: int, height: int, width: int):
    path = nxe.sr.model_path(model)
    with nxe.Model(path) as m:
        meta = m.metadata
        graph = m.graph()
    graph.find_tensor(meta["input"]).set_shape((1, channels, height, width))
    return graph.compile(), meta["input"], meta["output"]


def network(model: str, planes: np.ndarray) -> np.ndarray:
    """The model's graph, compiled in fp32 for exactly this size and run once, untiled:
    [C, H, W] floats in, [C, sH, sW] out."""
    c, h, w = planes.shape
    exe, name_in, name_out = _executable(model, c, h, w)
    return exe.run({name_in: planes[None].astype(np.float32)})[name_out][0].astype(np.float64)


def upscale_frame(model: str, channels: int, scale: int, planes: list[np.ndarray], fmt: str,
                  matrix: str = "bt601", full: bool = False) -> list[np.ndarray]:
    """What libnxe_sr must produce for one frame, computed in float64 (the network in fp32)."""
    f = nxe.sr.FORMATS[fmt]
    fx, fy = f.chroma
    bits = f.bits
    top = 2**bits - 1
    dtype = f.dtype
    s = scale
    if f.layout == "packed":
        image = planes[0].reshape(planes[0].shape[0], -1, f.plane_samples[0])
        h, w = image.shape[:2]
        ri, gi, bi, ai = f.rgba
        rgb = [image[..., i] / 255.0 for i in (ri, gi, bi)]
        out = np.empty((h * s, w * s, image.shape[2]), np.uint8)
        if channels == 1:
            c = coefficients(matrix, full, 8)
            y, u, v = rgb_to_yuv(c, *rgb)
            y_hr = network(model, y[None])[0]
            u_hr, v_hr = (upscale_cubic(p, h * s, w * s, s, s) for p in (u, v))
            rgb_hr = yuv_to_rgb(c, y_hr, u_hr, v_hr)
        else:
            rgb_hr = network(model, np.stack(rgb))
        for i, p in zip((ri, gi, bi), rgb_hr):
            out[..., i] = quantize(p, 255, np.uint8)
        if ai is not None:
            alpha = upscale_cubic(image[..., ai] / 255.0, h * s, w * s, s, s)
            out[..., ai] = quantize(alpha, 255, np.uint8)
        return [out.reshape(planes[0].shape[0] * s, -1) if planes[0].ndim == 2 else out]

    y = planes[0] / top
    h, w = y.shape
    if f.layout == "semiplanar":
        chroma = [planes[1].reshape(planes[1].shape[0], -1, 2)[..., k] / top for k in (0, 1)]
    else:
        chroma = [p / top for p in planes[1:]]
    ch_out = (-(-h * s // fy), -(-w * s // fx))
    if channels == 1:
        y_out = quantize(network(model, y[None])[0], top, dtype)
        c_out = [quantize(upscale_cubic(p, *ch_out, s, s), top, dtype) for p in chroma]
    else:
        c = coefficients(matrix, full, bits)
        if f.layout == "gray":
            rgb = np.stack([y, y, y])
        else:
            full_chroma = [upscale_cubic(p, h, w, fx, fy) for p in chroma]
            rgb = np.clip(np.stack(yuv_to_rgb(c, y, *full_chroma)), 0, 1)
        rgb_hr = np.clip(network(model, rgb), 0, 1)
        if f.layout == "gray":
            gray = coefficients("bt601", True, 8)
            return [quantize(rgb_to_yuv(gray, *rgb_hr)[0], top, dtype)]
        y_hr, u_hr, v_hr = rgb_to_yuv(c, *rgb_hr)
        y_out = quantize(y_hr, top, dtype)
        c_out = [quantize(downsample_box(p, *ch_out, fx, fy), top, dtype) for p in (u_hr, v_hr)]
    if f.layout == "gray":
        return [y_out]
    if f.layout == "semiplanar":
        uv = np.stack(c_out, axis=-1)
        return [y_out, uv if planes[1].ndim == 3 else uv.reshape(ch_out[0], -1)]
    return [y_out, *c_out]
