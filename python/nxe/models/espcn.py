"""ESPCN (Shi et al. 2016, "Real-Time Single Image and Video Super-Resolution Using an
Efficient Sub-Pixel Convolutional Neural Network"): luma in, luma r times larger out.
"""

from __future__ import annotations

import numpy as np

from ..graph import Graph
from ._common import (
    BuiltModel,
    Weights,
    WeightSpec,
    positive,
    random_weights,
    take_weight,
)


def espcn_weight_specs(scale: int = 2) -> list[WeightSpec]:
    """Weights of ESPCN x``scale`` (OIHW), named as in the common PyTorch implementation:
    conv1 5x5 1->64, conv2 3x3 64->32, conv3 3x3 32->scale^2."""
    r2 = positive("scale", scale) ** 2
    return [
        WeightSpec("conv1.weight", (64, 1, 5, 5), 1 * 5 * 5),
        WeightSpec("conv1.bias", (64,), 0),
        WeightSpec("conv2.weight", (32, 64, 3, 3), 64 * 3 * 3),
        WeightSpec("conv2.bias", (32,), 0),
        WeightSpec("conv3.weight", (r2, 32, 3, 3), 32 * 3 * 3),
        WeightSpec("conv3.bias", (r2,), 0),
    ]


def espcn_random_weights(scale: int = 2, seed: int = 0) -> dict[str, np.ndarray]:
    """Deterministic random weights for ESPCN x``scale``: the same seed gives the same arrays."""
    return random_weights(espcn_weight_specs(scale), seed, gain=1.0)


def espcn_receptive_radius(scale: int = 2) -> int:
    """How far, in input (low-resolution) pixels, an output pixel of ESPCN x``scale`` sees: 2
    for the 5x5 conv and 1 for each 3x3 one. All three run at the input resolution, so the
    scale does not change it."""
    positive("scale", scale)
    return 2 + 1 + 1


def espcn(weights: Weights, height: int, width: int, scale: int = 2,
          batch: int = 1) -> BuiltModel:
    """ESPCN x``scale`` for luma frames [batch, 1, height, width] f32 (input "luma"), giving
    [batch, 1, scale*height, scale*width] (output "upscaled"): conv 5x5 + tanh, conv 3x3 + tanh,
    conv 3x3 to scale^2 channels, then pixel shuffle (DepthToSpace, mode CRD). Convolutions
    pad 'SAME' so the frame size is kept."""
    specs = espcn_weight_specs(scale)
    shape = tuple(positive(n, v) for n, v in
                  (("batch", batch), ("channels", 1), ("height", height), ("width", width)))
    g = Graph()
    w = {spec.name: take_weight(g, weights, spec) for spec in specs}
    x = g.input("luma", shape, "f32")
    h = g.Tanh(g.Conv2d(x, w["conv1.weight"], w["conv1.bias"], padding="SAME", name="conv1"),
               name="tanh1")
    h = g.Tanh(g.Conv2d(h, w["conv2.weight"], w["conv2.bias"], padding="SAME", name="conv2"),
               name="tanh2")
    h = g.Conv2d(h, w["conv3.weight"], w["conv3.bias"], padding="SAME", name="conv3")
    y = g.DepthToSpace(h, blocksize=int(scale), mode="CRD", name="pixel_shuffle")
    g.mark_output(y, name="upscaled")
    return BuiltModel(g, ("luma",), "upscaled")
