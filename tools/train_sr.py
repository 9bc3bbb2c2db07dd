"""Trains the super-resolution models of models/sr/ with PyTorch on the CPU (ESPCN x2/x3/x4 on
BT.601 luma, EDSR-baseline x2/x4 on RGB), bakes each into an nxe model file and measures it
against bicubic. It uses only the photographs bundled with scikit-image and is not run in CI.

    python tools/train_sr.py espcn-x2 --minutes 6 --threads 1 --out models/sr/
    python tools/train_sr.py edsr-x4 --iterations 907 --init-from models/sr/edsr-x2.nxm \\
        --out models/sr/
    python tools/train_sr.py --evaluate models/sr/      # the PSNR table of the .nxm files
    python tools/train_sr.py --quantize models/sr/      # the int8 variants of the ESPCN files
    python tools/train_sr.py --sample models/sr/sample.png

A run is deterministic given its seed and iteration count. ``--minutes`` derives the count
from the speed of the first iterations, prints it and stores it in the model's annotations;
``--iterations`` with that count repeats the run exactly.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import nxe
import skimage
import skimage.data
import torch
from export_onnx import Espcn, ResBlock
from nxe.models.edsr import edsr_baseline, edsr_receptive_radius
from nxe.models.espcn import espcn, espcn_receptive_radius
from nxe.sr_quantize import calibrate_espcn, espcn_int8
from PIL import Image
from torch import nn
from torch.nn import functional

# Kept out of training; the PSNR table is measured on them.
EVAL_IMAGES = ("astronaut", "chelsea", "camera")
# The other photographs bundled in the wheel. Left out: cat (chelsea again), clock (motion
# blurred), microaneurysms (102 x 102) and the drawings, charts and synthetic images.
TRAIN_IMAGES = ("coffee", "rocket", "motorcycle_left", "motorcycle_right", "hubble_deep_field",
                "retina", "immunohistochemistry", "grass", "gravel", "brick", "moon", "coins",
                "page", "text", "cell")

NOMINAL_SIZE = 64  # the input height and width the shipped graphs are built at
WARMUP_ITERATIONS = 50  # linear learning-rate warm-up, the same whatever the run's length
LOG_EVERY = 100


class Recipe(NamedTuple):
    """How one model is trained: architecture, scale, low-resolution patch side, batch,
    Adam learning rate and loss."""

    arch: str
    scale: int
    patch: int
    batch: int
    learning_rate: float
    loss: str


RECIPES = {
    "espcn-x2": Recipe("espcn", 2, 48, 16, 1e-3, "mse"),
    "espcn-x3": Recipe("espcn", 3, 32, 16, 1e-3, "mse"),
    "espcn-x4": Recipe("espcn", 4, 24, 16, 1e-3, "mse"),
    "edsr-x2": Recipe("edsr-baseline", 2, 24, 16, 2e-4, "l1"),
    "edsr-x4": Recipe("edsr-baseline", 4, 24, 16, 2e-4, "l1"),
}


# -- images, colour and degradation ----------------------------------------------------------


def load_rgb(name: str) -> np.ndarray:
    """A bundled photograph as uint8 [H, W, 3]; grayscale ones repeat their one channel."""
    if name in ("motorcycle_left", "motorcycle_right"):
        left, right, _ = skimage.data.stereo_motorcycle()
        image = left if name == "motorcycle_left" else right
    else:
        image = getattr(skimage.data, name)()
    if image.ndim == 2:
        image = np.repeat(image[:, :, None], 3, axis=2)
    return np.ascontiguousarray(image[:, :, :3])


def to_tensor(image: np.ndarray, scale: int) -> torch.Tensor:
    """uint8 [H, W, 3] as float [1, 3, H', W'] in [0, 1], cropped to a multiple of ``scale``."""
    height = image.shape[0] // scale * scale
    width = image.shape[1] // scale * scale
    array = image[:height, :width].transpose(2, 0, 1).astype(np.float32) / 255.0
    return torch.from_numpy(np.ascontiguousarray(array))[None]


def quantize(x: torch.Tensor) -> torch.Tensor:
    """Clamped to [0, 1] and rounded to 8 bits, as stored in an image."""
    return torch.round(x.clamp(0.0, 1.0) * 255.0) / 255.0


def downscale(hr: torch.Tensor, scale: int) -> torch.Tensor:
    """The degradation: antialiased bicubic downscaling by ``scale``, then 8-bit rounding."""
    size = (hr.shape[-2] // scale, hr.shape[-1] // scale)
    lr = functional.interpolate(hr, size=size, mode="bicubic", antialias=True,
                                align_corners=False)
    return quantize(lr)


def luma(rgb: torch.Tensor) -> torch.Tensor:
    """BT.601 limited-range Y of [N, 3, H, W] RGB in [0, 1], as [N, 1, H, W] in [0, 1]."""
    r, g, b = rgb[:, 0:1], rgb[:, 1:2], rgb[:, 2:3]
    return (16.0 + 65.481 * r + 128.553 * g + 24.966 * b) / 255.0


# -- bicubic baseline and PSNR ---------------------------------------------------------------


def keys_cubic(distance: np.ndarray, a: float = -0.5) -> np.ndarray:
    """Keys' cubic convolution kernel at ``distance`` (in input pixels)."""
    t = np.abs(distance)
    near = ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0
    far = ((a * t - 5.0 * a) * t + 8.0 * a) * t - 4.0 * a
    return np.where(t <= 1.0, near, np.where(t < 2.0, far, 0.0))


def bicubic_upscale(image: np.ndarray, scale: int) -> np.ndarray:
    """[H, W] float upscaled ``scale`` times with Keys' cubic (a = -0.5), half-pixel centres
    and clamped edge samples, one axis after the other."""
    result = image.astype(np.float64)
    for axis in (0, 1):
        size = result.shape[axis]
        position = (np.arange(size * scale) + 0.5) / scale - 0.5
        taps = np.floor(position)[:, None] + np.arange(-1, 3)[None, :]
        weights = keys_cubic(position[:, None] - taps)
        indices = np.clip(taps, 0, size - 1).astype(np.intp)
        moved = np.moveaxis(result, axis, 0)
        upscaled = np.einsum("ok,ok...->o...", weights, moved[indices])
        result = np.moveaxis(upscaled, 0, axis)
    return result


def psnr(output_y: np.ndarray, reference_y: np.ndarray, border: int) -> float:
    """PSNR in dB of Y planes in [0, 1] on the 8-bit scale, ``border`` pixels cropped."""
    inner = (slice(border, -border), slice(border, -border))
    error = (output_y[inner] - reference_y[inner]) * 255.0
    return float(10.0 * np.log10(255.0 ** 2 / np.mean(error.astype(np.float64) ** 2)))


class EvalImage(NamedTuple):
    """An evaluation image at one scale: the high-resolution Y (the reference), the degraded
    RGB and its 8-bit Y (what the RGB and the luma models get)."""

    hr_y: np.ndarray
    lr_rgb: torch.Tensor
    lr_y: torch.Tensor


def eval_image(name: str, scale: int) -> EvalImage:
    hr = to_tensor(load_rgb(name), scale)
    lr = downscale(hr, scale)
    return EvalImage(luma(hr)[0, 0].numpy(), lr, quantize(luma(lr)))


def output_y(output: np.ndarray) -> np.ndarray:
    """The Y plane, rounded to 8 bits, that a model's [1, C, H, W] output scores on: a luma
    output is rounded itself, an RGB one is rounded and then converted."""
    rounded = quantize(torch.from_numpy(np.ascontiguousarray(output, dtype=np.float32)))
    return (luma(rounded) if rounded.shape[1] == 3 else rounded)[0, 0].numpy()


def bicubic_psnr(image: EvalImage, scale: int) -> float:
    upscaled = bicubic_upscale(image.lr_y[0, 0].numpy(), scale)
    return psnr(output_y(upscaled[None, None]), image.hr_y, scale)


# -- PyTorch models --------------------------------------------------------------------------


class Edsr(nn.Module):
    """EDSR-baseline (Lim et al. 2017) x``scale``: a mean shift, head conv 3->64, 16 residual
    blocks, a conv with a skip from the head, one conv + pixel shuffle 2 per factor of two,
    tail conv 64->3, the mean added back. Parameter names match nxe.models.edsr_baseline."""

    def __init__(self, scale: int, rgb_mean: tuple[float, float, float], num_blocks: int = 16,
                 features: int = 64) -> None:
        super().__init__()
        stages = scale.bit_length() - 1
        if scale < 2 or scale != 1 << stages:
            raise ValueError(f"Edsr: scale must be a power of two, got {scale}")
        self.register_buffer("rgb_mean", torch.tensor(rgb_mean).reshape(1, 3, 1, 1),
                             persistent=False)
        self.head = nn.Sequential(nn.Conv2d(3, features, 3, padding=1))
        self.body = nn.Sequential(*[ResBlock(features) for _ in range(num_blocks)],
                                  nn.Conv2d(features, features, 3, padding=1))
        upsampler: list[nn.Module] = []
        for _ in range(stages):
            upsampler += [nn.Conv2d(features, 4 * features, 3, padding=1), nn.PixelShuffle(2)]
        self.tail = nn.Sequential(nn.Sequential(*upsampler),
                                  nn.Conv2d(features, 3, 3, padding=1))

    def forward(self, rgb: torch.Tensor) -> torch.Tensor:
        head = self.head(rgb - self.rgb_mean)
        return self.tail(self.body(head) + head) + self.rgb_mean


def upsample_phase_kernels() -> torch.Tensor:
    """[4, 3, 3] kernels that, followed by pixel shuffle 2, upscale a plane bilinearly with
    half-pixel centres: sub-pixel (i, j) lies a quarter pixel from its input pixel."""
    taps = torch.tensor([[0.25, 0.75, 0.0], [0.0, 0.75, 0.25]])
    return torch.stack([torch.outer(taps[i], taps[j]) for i in range(2) for j in range(2)])


def set_bilinear_upsampler(conv: nn.Conv2d, channels: int) -> None:
    """Makes the first ``channels`` planes of an upsampler stage (conv to 4 * features, then
    pixel shuffle 2) the bilinear upscaling of the same input planes."""
    with torch.no_grad():
        for c in range(channels):
            conv.weight[4 * c:4 * c + 4] = 0.0
            conv.weight[4 * c:4 * c + 4, c] = upsample_phase_kernels()
            conv.bias[4 * c:4 * c + 4] = 0.0


def set_identity(conv: nn.Conv2d, channels: int) -> None:
    """Makes the first ``channels`` outputs of a 3x3 conv copy the same input channels."""
    with torch.no_grad():
        conv.weight[:channels] = 0.0
        conv.bias[:channels] = 0.0
        for c in range(channels):
            conv.weight[c, c, 1, 1] = 1.0


def start_as_bilinear(model: Edsr) -> None:
    """Initialises EDSR so that it begins as bilinear upscaling: the head passes RGB through
    its first three features, every residual branch and the conv after the body start at
    zero (so the blocks are identities, as in zero-initialised residual networks), the
    upsampler interpolates those features and the tail reads them back. Short CPU training
    then refines an interpolator instead of first learning to copy the image."""
    set_identity(model.head[0], 3)
    with torch.no_grad():
        for block in model.body[:-1]:
            block.body[2].weight.zero_()
            block.body[2].bias.zero_()
        model.body[-1].weight.zero_()
        model.body[-1].bias.zero_()
    for stage in model.tail[0][0::2]:
        set_bilinear_upsampler(stage, 3)
    set_identity(model.tail[1], 3)


def load_weights(model: nn.Module, path: Path) -> list[str]:
    """Copies every parameter of ``model`` that the model file holds under the same name;
    returns the names it does not hold. The x4 upsampler's second stage, which an x2 file
    lacks, starts as bilinear upscaling of every feature."""
    state = model.state_dict()
    missing = []
    with nxe.Model(path) as source:
        stored = {t["name"] for t in source.tensors}
        with torch.no_grad():
            for name, parameter in state.items():
                if name in stored:
                    parameter.copy_(torch.from_numpy(np.array(source.tensor(name))))
                else:
                    missing.append(name)
    if isinstance(model, Edsr) and "tail.0.2.weight" in missing:
        set_bilinear_upsampler(model.tail[0][2], model.tail[0][2].in_channels)
    return missing


# -- training --------------------------------------------------------------------------------


class TrainingPair(NamedTuple):
    lr: torch.Tensor  # [C, h, w]
    hr: torch.Tensor  # [C, scale*h, scale*w]


def training_pairs(recipe: Recipe) -> list[TrainingPair]:
    """Every training image degraded once, whole, so that patches carry no border effects of
    the downscaling; luma models get the Y planes (the input rounded to 8 bits)."""
    pairs = []
    for name in TRAIN_IMAGES:
        hr = to_tensor(load_rgb(name), recipe.scale)
        lr = downscale(hr, recipe.scale)
        if recipe.arch == "espcn":
            hr, lr = luma(hr), quantize(luma(lr))
        pairs.append(TrainingPair(lr[0], hr[0]))
    return pairs


def training_mean() -> tuple[float, float, float]:
    """The mean RGB over every pixel of the training images, in [0, 1]."""
    total = np.zeros(3)
    count = 0
    for name in TRAIN_IMAGES:
        image = load_rgb(name).reshape(-1, 3).astype(np.float64) / 255.0
        total += image.sum(axis=0)
        count += image.shape[0]
    return tuple(float(v) for v in np.round(total / count, 6))


def sample_batch(pairs: list[TrainingPair], recipe: Recipe,
                 rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """``recipe.batch`` aligned LR/HR patches: an image drawn uniformly, a random position,
    one of the eight flips and rotations by 90 degrees."""
    lrs, hrs = [], []
    p, s = recipe.patch, recipe.scale
    for _ in range(recipe.batch):
        pair = pairs[rng.integers(len(pairs))]
        y = int(rng.integers(pair.lr.shape[1] - p + 1))
        x = int(rng.integers(pair.lr.shape[2] - p + 1))
        lr = pair.lr[:, y:y + p, x:x + p]
        hr = pair.hr[:, s * y:s * (y + p), s * x:s * (x + p)]
        turns, flip = int(rng.integers(4)), bool(rng.integers(2))
        lr, hr = torch.rot90(lr, turns, (1, 2)), torch.rot90(hr, turns, (1, 2))
        if flip:
            lr, hr = lr.flip(2), hr.flip(2)
        lrs.append(lr)
        hrs.append(hr)
    return torch.stack(lrs), torch.stack(hrs)


def learning_rate(base: float, iteration: int, iterations: int) -> float:
    """Linear warm-up over WARMUP_ITERATIONS, then cosine decay to 1% of ``base``."""
    if iteration < WARMUP_ITERATIONS:
        return base * (iteration + 1) / WARMUP_ITERATIONS
    progress = (iteration - WARMUP_ITERATIONS) / max(1, iterations - WARMUP_ITERATIONS)
    return base * (0.01 + 0.99 * 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0))))


def train(model: nn.Module, recipe: Recipe, seed: int, iterations: int | None,
          minutes: float | None) -> tuple[int, float]:
    """Trains ``model`` with Adam; returns the iterations run and the minutes they took.
    Without ``iterations`` the count is fixed after the warm-up from its speed, so that the
    whole run fits ``minutes``."""
    pairs = training_pairs(recipe)
    rng = np.random.default_rng(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=recipe.learning_rate)
    loss_of = functional.mse_loss if recipe.loss == "mse" else functional.l1_loss
    model.train()
    start = time.perf_counter()
    timed_from = start
    running, iteration = 0.0, 0
    while iterations is None or iteration < iterations:
        if iteration == 5:
            timed_from = time.perf_counter()
        if iterations is None and iteration == WARMUP_ITERATIONS:
            seconds = (time.perf_counter() - timed_from) / (WARMUP_ITERATIONS - 5)
            left = minutes * 60.0 - (time.perf_counter() - start)
            iterations = WARMUP_ITERATIONS + max(0, int(left / seconds))
            print(f"{seconds:.3f} s per iteration: {iterations} iterations "
                  f"(--iterations {iterations} repeats this run)", flush=True)
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(recipe.learning_rate, iteration,
                                        iterations or WARMUP_ITERATIONS)
        lr, hr = sample_batch(pairs, recipe, rng)
        loss = loss_of(model(lr), hr)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        running += loss.item()
        iteration += 1
        if iteration % LOG_EVERY == 0:
            elapsed = (time.perf_counter() - start) / 60.0
            print(f"iteration {iteration}/{iterations}: loss {running / LOG_EVERY:.6f}, "
                  f"{elapsed:.1f} min", flush=True)
            running = 0.0
    model.eval()
    return iteration, (time.perf_counter() - start) / 60.0


# -- baking and measuring --------------------------------------------------------------------


def build_graph(arch: str, weights: dict[str, np.ndarray], scale: int, height: int,
                width: int, rgb_mean: tuple[float, float, float] | None) -> nxe.models.BuiltModel:
    if arch == "espcn":
        return espcn(weights, height, width, scale=scale)
    return edsr_baseline(weights, height, width, scale=scale, rgb_mean=rgb_mean)


class ShippedModel(NamedTuple):
    """A model file's architecture, scale, weights and mean, enough to rebuild its graph at
    any size."""

    name: str
    arch: str
    scale: int
    weights: dict[str, np.ndarray]
    rgb_mean: tuple[float, float, float] | None

    def run(self, image: EvalImage, threads: int) -> np.ndarray:
        """The model on a whole evaluation image through nxe, its graph rebuilt at that size."""
        x = image.lr_y if self.arch == "espcn" else image.lr_rgb
        built = build_graph(self.arch, self.weights, self.scale, x.shape[2], x.shape[3],
                            self.rgb_mean)
        return built.graph.compile(threads=threads).run(x.numpy())[built.output]


def open_shipped(path: Path) -> ShippedModel:
    with nxe.Model(path) as model:
        meta = model.metadata
        weights = {t["name"]: np.array(model.tensor(t["name"])) for t in model.tensors}
    mean = weights.pop("rgb_mean", None)
    rgb_mean = None if mean is None else tuple(float(v) for v in mean.reshape(3))
    return ShippedModel(meta["name"], meta["arch"], int(meta["scale"]), weights, rgb_mean)


def metadata(name: str, recipe: Recipe) -> dict[str, Any]:
    espcn_model = recipe.arch == "espcn"
    radius = (espcn_receptive_radius(recipe.scale) if espcn_model
              else edsr_receptive_radius(recipe.scale))
    meta: dict[str, Any] = {
        "task": "super_resolution", "name": name, "arch": recipe.arch, "scale": recipe.scale,
        "channels": 1 if espcn_model else 3, "input": "luma" if espcn_model else "rgb",
        "output": "upscaled", "receptive_radius": radius,
    }
    if espcn_model:
        meta["luma"] = "bt601-limited"
    return meta


def measure(shipped: ShippedModel, torch_model: nn.Module,
            threads: int) -> tuple[dict[str, dict[str, float]], float]:
    """PSNR of the baked model (run by nxe) and of bicubic on each evaluation image, and the
    largest difference between nxe's and PyTorch's outputs over those images."""
    results: dict[str, dict[str, float]] = {}
    largest = 0.0
    for name in EVAL_IMAGES:
        image = eval_image(name, shipped.scale)
        output = shipped.run(image, threads)
        with torch.no_grad():
            x = image.lr_y if shipped.arch == "espcn" else image.lr_rgb
            reference = torch_model(x).numpy()
        largest = max(largest, float(np.abs(output - reference).max()))
        results[name] = {"model": round(psnr(output_y(output), image.hr_y, shipped.scale), 4),
                         "bicubic": round(bicubic_psnr(image, shipped.scale), 4)}
    return results, largest


def bake(name: str, recipe: Recipe, model: nn.Module, path: Path, training: dict[str, Any],
         threads: int) -> dict[str, Any]:
    """Writes the model file (built at the nominal size), then reopens it and measures it;
    the file is written again with the measurements in its annotations, which leave the
    fingerprint as it was."""
    weights = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    rgb_mean = tuple(model.rgb_mean.reshape(3).tolist()) if isinstance(model, Edsr) else None
    built = build_graph(recipe.arch, weights, recipe.scale, NOMINAL_SIZE, NOMINAL_SIZE, rgb_mean)
    meta = metadata(name, recipe)
    annotations: dict[str, Any] = {"training": training}
    nxe.save_model(built.graph, path, metadata=meta, annotations=annotations)
    results, largest = measure(open_shipped(path), model, threads)
    annotations["psnr_y_db"] = results
    annotations["parity"] = {"max_abs_diff_vs_pytorch": float(f"{largest:.3g}"),
                             "images": list(EVAL_IMAGES), "at": "full image size"}
    nxe.save_model(built.graph, path, metadata=meta, annotations=annotations)
    return annotations


def make_model(recipe: Recipe) -> nn.Module:
    if recipe.arch == "espcn":
        return Espcn(recipe.scale)
    model = Edsr(recipe.scale, training_mean())
    start_as_bilinear(model)
    return model


def train_and_bake(name: str, out: Path, seed: int, iterations: int | None,
                   minutes: float | None, threads: int, init_from: Path | None) -> None:
    recipe = RECIPES[name]
    torch.manual_seed(seed)
    model = make_model(recipe)
    previous = None
    if init_from is not None:
        with nxe.Model(init_from) as source:
            previous = {"file": init_from.name, "fingerprint": source.fingerprint,
                        "training": source.annotations.get("training")}
        missing = load_weights(model, init_from)
        print(f"initialised from {init_from}; not in it: {missing or 'nothing'}", flush=True)
    done, took = train(model, recipe, seed, iterations, minutes)
    training = {
        "data": {"source": f"scikit-image {skimage.__version__} skimage.data",
                 "train_images": list(TRAIN_IMAGES), "eval_images_held_out": list(EVAL_IMAGES),
                 "degradation": "antialiased bicubic downscale (torch interpolate), 8-bit",
                 "augmentation": "random aligned crops, flips, rotations by 90 degrees"},
        "iterations": done, "minutes": round(took, 2), "seed": seed, "threads": threads,
        "loss": recipe.loss, "optimizer": "adam", "learning_rate": recipe.learning_rate,
        "schedule": f"linear warm-up {WARMUP_ITERATIONS} iterations, cosine to 1%",
        "batch": recipe.batch, "lr_patch": recipe.patch, "torch": torch.__version__,
        "initialised_from": previous,
    }
    if recipe.arch == "edsr-baseline":
        training["rgb_mean"] = [round(v, 6) for v in model.rgb_mean.reshape(3).tolist()]
        if previous is None:
            training["init"] = "bilinear upscaling (zero residual branches)"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.nxm"
    annotations = bake(name, recipe, model, path, training, threads)
    print(f"wrote {path}: {done} iterations in {took:.1f} min; "
          f"parity {annotations['parity']['max_abs_diff_vs_pytorch']:.3g}", flush=True)
    for image, scores in annotations["psnr_y_db"].items():
        print(f"  {image}: {scores['model']:.2f} dB (bicubic {scores['bicubic']:.2f})")


# -- the table and the sample ----------------------------------------------------------------


def fp32_model_files(folder: Path) -> list[Path]:
    """The trained models in ``folder``: every .nxm but the int8 variants."""
    paths = []
    for path in sorted(folder.glob("*.nxm")):
        with nxe.Model(path) as model:
            if model.metadata.get("precision") != "int8":
                paths.append(path)
    return paths


def evaluate(folder: Path, threads: int) -> str:
    """The markdown PSNR table (Y, dB) of every fp32 .nxm in ``folder`` against bicubic."""
    shipped = [open_shipped(path) for path in fp32_model_files(folder)]
    scales = sorted({m.scale for m in shipped})
    lines = ["| image | scale | bicubic | ESPCN | EDSR |", "|---|---|---|---|---|"]
    for name in EVAL_IMAGES:
        for scale in scales:
            image = eval_image(name, scale)
            cells = [f"{bicubic_psnr(image, scale):.2f}"]
            for arch in ("espcn", "edsr-baseline"):
                found = [m for m in shipped if m.scale == scale and m.arch == arch]
                score = (psnr(output_y(found[0].run(image, threads)), image.hr_y, scale)
                         if found else None)
                cells.append("-" if score is None else f"{score:.2f}")
            lines.append(f"| {name} | x{scale} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# -- int8 variants ---------------------------------------------------------------------------


def calibration_frames(scale: int) -> list[np.ndarray]:
    """The 8-bit luma of every training photograph, degraded whole as in training: what the
    int8 variants' activation ranges are measured on (the evaluation images stay out)."""
    frames = []
    for name in TRAIN_IMAGES:
        lr = downscale(to_tensor(load_rgb(name), scale), scale)
        frames.append(quantize(luma(lr))[0, 0].numpy())
    return frames


def quantize_folder(folder: Path, threads: int) -> None:
    """Writes ``<name>-int8.nxm`` beside every ESPCN file in ``folder``: calibrated on the
    training photographs (nxe.sr_quantize), built at the nominal size, with the PSNR of both
    precisions on each evaluation image in its annotations. The files depend only on the fp32
    weights and the photographs, so running this again rewrites them byte for byte."""
    for path in fp32_model_files(folder):
        shipped = open_shipped(path)
        if shipped.arch != "espcn":
            continue
        params = calibrate_espcn(shipped.weights, shipped.scale,
                                 calibration_frames(shipped.scale))
        with nxe.Model(path) as fp32:
            meta = dict(fp32.metadata, precision="int8", fp32_fingerprint=fp32.fingerprint)
        results = {}
        for name in EVAL_IMAGES:
            image = eval_image(name, shipped.scale)
            x = image.lr_y.numpy()
            int8 = espcn_int8(params, x.shape[2], x.shape[3])
            output = int8.graph.compile(threads=threads).run(x)[int8.output]
            fp32_db = psnr(output_y(shipped.run(image, threads)), image.hr_y, shipped.scale)
            int8_db = psnr(output_y(output), image.hr_y, shipped.scale)
            results[name] = {"fp32": round(fp32_db, 4), "int8": round(int8_db, 4),
                             "difference": round(int8_db - fp32_db, 4)}
        annotations = {
            "calibration": {
                "frames": [f"{name} (whole, degraded x{shipped.scale}, luma)"
                           for name in TRAIN_IMAGES],
                "activations": "u8 per channel, step = largest |tanh| / 127, zero point 128",
                "weights": "s8 per output channel, symmetric, kernel sums kept",
                "accumulation": "int32 (ConvInteger), tanh and bias in f32"},
            "psnr_y_db": results,
        }
        out = folder / f"{shipped.name}-int8.nxm"
        built = espcn_int8(params, NOMINAL_SIZE, NOMINAL_SIZE)
        nxe.save_model(built.graph, out, metadata=meta, annotations=annotations)
        worst = min(r["difference"] for r in results.values())
        print(f"wrote {out} ({out.stat().st_size} bytes); int8 - fp32 PSNR, worst image: "
              f"{worst:+.4f} dB", flush=True)
        for name, scores in results.items():
            print(f"  {name}: fp32 {scores['fp32']:.4f} dB, int8 {scores['int8']:.4f} dB")


def write_sample(path: Path) -> None:
    """chelsea downscaled x2 the way the training data is degraded, as an 8-bit RGB PNG."""
    lr = downscale(to_tensor(load_rgb("chelsea"), 2), 2)
    pixels = torch.round(lr[0] * 255.0).to(torch.uint8).permute(1, 2, 0).numpy()
    Image.fromarray(np.ascontiguousarray(pixels), "RGB").save(path, optimize=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", nargs="?", choices=sorted(RECIPES))
    parser.add_argument("--evaluate", type=Path, metavar="DIR",
                        help="print the PSNR table of the .nxm files in DIR")
    parser.add_argument("--quantize", type=Path, metavar="DIR",
                        help="write the int8 variant of each ESPCN .nxm in DIR beside it")
    parser.add_argument("--sample", type=Path, metavar="PNG",
                        help="write the x2-downscaled sample image")
    parser.add_argument("--out", type=Path, default=Path("models/sr"))
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--minutes", type=float)
    length.add_argument("--iterations", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--init-from", type=Path, metavar="NXM",
                        help="start from the weights of a model file (to continue, or x4 "
                             "from x2)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.evaluate is not None:
        print(evaluate(args.evaluate, args.threads))
    elif args.quantize is not None:
        quantize_folder(args.quantize, args.threads)
    elif args.sample is not None:
        write_sample(args.sample)
    elif args.model is not None:
        if args.minutes is None and args.iterations is None:
            parser.error("give --minutes or --iterations")
        train_and_bake(args.model, args.out, args.seed, args.iterations, args.minutes,
                       args.threads, args.init_from)
    else:
        parser.error("give a model, --evaluate, --quantize or --sample")
    return 0


if __name__ == "__main__":
    sys.exit(main())
