"""EDSR-baseline (Lim et al. 2017, "Enhanced Deep Residual Networks for Single Image
Super-Resolution"): RGB in, RGB `scale` times larger out; 16 residual blocks of 64 features.
"""

from __future__ import annotations

import numpy as np

from ..graph import Graph, Tensor
from ._common import (
    BuiltModel,
    Weights,
    WeightSpec,
    positive,
    random_weights,
    take_weight,
)


def _upsampler_convs(scale: int, features: int) -> list[tuple[str, int, int]]:
    """(weight prefix, output channels, pixel-shuffle factor) of each upsampler stage: x2^n
    takes n stages of conv to 4*features + shuffle 2, x3 one of conv to 9*features + shuffle 3
    (the EDSR Upsampler, whose stages sit at indices 0, 2, ... of tail.0)."""
    if scale == 3:
        return [("tail.0.0", 9 * features, 3)]
    stages = scale.bit_length() - 1
    if scale < 2 or scale != 1 << stages:
        raise ValueError(f"EDSR scale must be 2, 3 or a power of two, got {scale}")
    return [(f"tail.0.{2 * i}", 4 * features, 2) for i in range(stages)]


def edsr_weight_specs(scale: int = 2, num_blocks: int = 16,
                      features: int = 64) -> list[WeightSpec]:
    """Weights of EDSR (OIHW, all 3x3), named as in the reference implementation: head.0,
    body.<i>.body.0 and body.<i>.body.2 per residual block, body.<num_blocks> after the body,
    the upsampler convs tail.0.<2k>, and tail.1 to RGB."""
    scale = positive("scale", scale)
    blocks = positive("num_blocks", num_blocks)
    f = positive("features", features)
    specs: list[WeightSpec] = []

    def conv(prefix: str, cin: int, cout: int) -> None:
        specs.append(WeightSpec(f"{prefix}.weight", (cout, cin, 3, 3), cin * 9))
        specs.append(WeightSpec(f"{prefix}.bias", (cout,), 0))

    conv("head.0", 3, f)
    for i in range(blocks):
        conv(f"body.{i}.body.0", f, f)
        conv(f"body.{i}.body.2", f, f)
    conv(f"body.{blocks}", f, f)
    for prefix, channels, _ in _upsampler_convs(scale, f):
        conv(prefix, f, channels)
    conv("tail.1", f, 3)
    return specs


def edsr_random_weights(scale: int = 2, seed: int = 0, num_blocks: int = 16,
                        features: int = 64) -> dict[str, np.ndarray]:
    """Deterministic random weights for EDSR; kernels are scaled down (gain 0.5) so that
    sixteen unscaled residual additions keep activations of order one."""
    return random_weights(edsr_weight_specs(scale, num_blocks, features), seed, gain=0.5)


def edsr_receptive_radius(scale: int = 2, num_blocks: int = 16) -> int:
    """How far, in input (low-resolution) pixels, an output pixel of EDSR x``scale`` sees,
    rounded up: 1 for each 3x3 conv, including those after a pixel shuffle, whose reach of one
    upscaled pixel is counted as a whole input pixel. That is the head, two per residual
    block, the conv after the body, each upsampler stage and the tail: 36 for x2, 37 for x4."""
    stages = len(_upsampler_convs(positive("scale", scale), 1))
    return 1 + 2 * positive("num_blocks", num_blocks) + 1 + stages + 1


def edsr_baseline(weights: Weights, height: int, width: int, scale: int = 2, batch: int = 1,
                  num_blocks: int = 16, features: int = 64,
                  rgb_mean: tuple[float, float, float] | None = None) -> BuiltModel:
    """EDSR-baseline x``scale`` for RGB images [batch, 3, height, width] f32 (input "rgb"),
    giving [batch, 3, scale*height, scale*width] (output "upscaled"). Head conv 3->features;
    ``num_blocks`` residual blocks conv-ReLU-conv added back with residual scaling 1; a conv
    after the body with a skip from the head; the upsampler (conv + pixel shuffle, mode CRD);
    a tail conv to RGB. Every conv is 3x3 with 'SAME' padding. With ``rgb_mean`` (per channel,
    in the input's units) the graph subtracts it from the input and adds it back to the
    output, as the original's MeanShift layers do; without it that is left to the caller."""
    specs = edsr_weight_specs(scale, num_blocks, features)
    shape = tuple(positive(n, v) for n, v in
                  (("batch", batch), ("channels", 3), ("height", height), ("width", width)))
    g = Graph()
    w = {spec.name: take_weight(g, weights, spec) for spec in specs}

    def conv(x: Tensor, prefix: str) -> Tensor:
        return g.Conv2d(x, w[f"{prefix}.weight"], w[f"{prefix}.bias"], padding="SAME",
                        name=prefix)

    x = g.input("rgb", shape, "f32")
    mean = None
    if rgb_mean is not None:
        mean = g.constant(np.asarray(rgb_mean, np.float32).reshape(1, 3, 1, 1), name="rgb_mean")
        x = g.Sub(x, mean, name="sub_mean")
    head = conv(x, "head.0")
    h = head
    for i in range(num_blocks):
        inner = g.Relu(conv(h, f"body.{i}.body.0"), name=f"body.{i}.body.1")
        h = g.Add(conv(inner, f"body.{i}.body.2"), h, name=f"body.{i}.residual")
    h = g.Add(conv(h, f"body.{num_blocks}"), head, name="global_skip")
    for prefix, _, factor in _upsampler_convs(int(scale), int(features)):
        h = g.DepthToSpace(conv(h, prefix), blocksize=factor, mode="CRD",
                           name=f"{prefix}.shuffle")
    y = conv(h, "tail.1")
    if mean is not None:
        y = g.Add(y, mean, name="add_mean")
    g.mark_output(y, name="upscaled")
    return BuiltModel(g, ("rgb",), "upscaled")
