"""The shipped SR models beat bicubic on every evaluation image (scikit-image's astronaut,
chelsea and camera, kept out of training by tools/train_sr.py): PSNR on BT.601 Y with a border
of `scale` pixels cropped, the models run through libnxe_sr as users run them. The low
resolution images are made as in training: antialiased bicubic downscaling (PyTorch), 8-bit."""

from __future__ import annotations

import numpy as np
import nxe.sr
import pytest
import skimage.data
import sr_reference as ref
import torch
from nxe import metrics
from torch.nn import functional

EVAL_IMAGES = ("astronaut", "chelsea", "camera")


def degrade(hr: np.ndarray, scale: int) -> np.ndarray:
    x = torch.from_numpy(hr.transpose(2, 0, 1).astype(np.float32) / 255.0)[None]
    lr = functional.interpolate(x, size=(hr.shape[0] // scale, hr.shape[1] // scale),
                                mode="bicubic", antialias=True, align_corners=False)
    lr = torch.round(lr.clamp(0, 1) * 255.0)[0].numpy().transpose(1, 2, 0)
    return np.ascontiguousarray(lr.astype(np.uint8))


def eval_pair(name: str, scale: int) -> tuple[np.ndarray, np.ndarray]:
    image = getattr(skimage.data, name)()
    if image.ndim == 2:
        image = np.repeat(image[..., None], 3, axis=2)
    h, w = image.shape[0] // scale * scale, image.shape[1] // scale * scale
    hr = np.ascontiguousarray(image[:h, :w, :3])
    return hr, degrade(hr, scale)


@pytest.mark.parametrize("model", nxe.sr.builtin_models())
def test_model_beats_bicubic_on_every_evaluation_image(model):
    up = nxe.sr.Upscaler(model)
    scale = up.scale
    results = []
    for name in EVAL_IMAGES:
        hr, lr = eval_pair(name, scale)
        hr_y = metrics.luma(hr)
        lr_y = np.round(metrics.luma(lr)).astype(np.uint8)
        bicubic = np.clip(np.round(ref.upscale_cubic(lr_y.astype(np.float64), *hr_y.shape,
                                                     scale, scale)), 0, 255)
        if up.channels == 1:
            out_y = up.upscale_planes([lr_y], "gray8")[0]
        else:
            out_y = metrics.luma(up.upscale(lr))
        ours = metrics.psnr(out_y, hr_y, border=scale)
        baseline = metrics.psnr(bicubic, hr_y, border=scale)
        results.append((name, ours, baseline))
    print(model, [(n, round(o, 2), round(b, 2)) for n, o, b in results])
    for name, ours, baseline in results:
        assert ours > baseline, f"{model} on {name}: {ours:.2f} dB, bicubic {baseline:.2f} dB"
