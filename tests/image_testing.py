"""Test pictures for the image and upscaling tests: smooth structure plus noise, so that
resampling errors and channel mix-ups both show."""

from __future__ import annotations

import numpy as np


def textured_picture(h: int, w: int, channels: int = 3, seed: int = 0) -> np.ndarray:
    """uint8 [h, w] (one channel) or [h, w, channels], each channel offset from the last."""
    rng = np.random.default_rng(seed)
    yy, xx = np.meshgrid(np.linspace(0, 1, h), np.linspace(0, 1, w), indexing="ij")
    base = 120 + 90 * np.sin(9 * xx) * np.cos(6 * yy)
    shape = (h, w) if channels == 1 else (h, w, channels)
    if channels > 1:
        base = base[..., None] + 20 * np.arange(channels)
    return np.clip(base + 15 * rng.standard_normal(shape), 0, 255).astype(np.uint8)
