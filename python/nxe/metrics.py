"""Image quality against a reference, as the super-resolution literature reports it: PSNR and
SSIM on the luma (BT.601 Y of RGB, in 8-bit units) with a border of `scale` pixels cropped.
"""

from __future__ import annotations

import numpy as np


def luma(image: np.ndarray) -> np.ndarray:
    """Y in [16, 235] of 8-bit RGB (BT.601 limited, the SR convention); gray passes through."""
    array = np.asarray(image, np.float64)
    if array.ndim == 2:
        return array
    r, g, b = array[..., 0], array[..., 1], array[..., 2]
    return 16.0 + (65.481 * r + 128.553 * g + 24.966 * b) / 255.0


def _crop(a: np.ndarray, border: int) -> np.ndarray:
    return a[border:a.shape[0] - border, border:a.shape[1] - border] if border else a


def psnr(a: np.ndarray, b: np.ndarray, border: int = 0, peak: float = 255.0) -> float:
    """Peak signal-to-noise ratio in dB of two same-sized planes (inf when equal)."""
    a, b = _crop(np.asarray(a, np.float64), border), _crop(np.asarray(b, np.float64), border)
    if a.shape != b.shape:
        raise ValueError(f"psnr: shapes differ: {a.shape} and {b.shape}")
    mse = np.mean((a - b) ** 2)
    return float("inf") if mse == 0 else float(10 * np.log10(peak * peak / mse))


def _gaussian_blur(a: np.ndarray) -> np.ndarray:
    """The 11x11 Gaussian window (sigma 1.5) of Wang et al., 'valid' region only."""
    x = np.arange(11) - 5
    w = np.exp(-(x * x) / (2 * 1.5 * 1.5))
    w /= w.sum()
    rows = np.apply_along_axis(lambda r: np.convolve(r, w, mode="valid"), 1, a)
    return np.apply_along_axis(lambda c: np.convolve(c, w, mode="valid"), 0, rows)


def ssim(a: np.ndarray, b: np.ndarray, border: int = 0, peak: float = 255.0) -> float:
    """Mean structural similarity (Wang et al. 2004: Gaussian window, K1 0.01, K2 0.03)."""
    a, b = _crop(np.asarray(a, np.float64), border), _crop(np.asarray(b, np.float64), border)
    if a.shape != b.shape:
        raise ValueError(f"ssim: shapes differ: {a.shape} and {b.shape}")
    if min(a.shape) < 11:
        raise ValueError(f"ssim: planes of {a.shape} are smaller than the 11x11 window")
    c1, c2 = (0.01 * peak) ** 2, (0.03 * peak) ** 2
    mu_a, mu_b = _gaussian_blur(a), _gaussian_blur(b)
    var_a = _gaussian_blur(a * a) - mu_a ** 2
    var_b = _gaussian_blur(b * b) - mu_b ** 2
    cov = _gaussian_blur(a * b) - mu_a * mu_b
    s = ((2 * mu_a * mu_b + c1) * (2 * cov + c2)) / ((mu_a ** 2 + mu_b ** 2 + c1) *
                                                     (var_a + var_b + c2))
    return float(s.mean())
