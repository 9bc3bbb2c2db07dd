"""Int8 variants of the ESPCN super-resolution models: calibration and the integer graph.

The int8 graph keeps every convolution's multiply-adds in 8-bit integers with exact int32
accumulation (ConvInteger, u8 activations, s8 weights per output channel) and runs each tanh
in f32 between a DequantizeLinear of the accumulator and a QuantizeLinear of the result:

    luma -> QuantizeLinear(1/255) -> ConvInteger 5x5 -> DequantizeLinear -> +bias -> Tanh
         -> / step -> QuantizeLinear(u8, zero point 128) -> ConvInteger 3x3 -> ... -> Tanh
         -> / step -> QuantizeLinear -> ConvInteger 3x3 -> DequantizeLinear -> +bias
         -> DepthToSpace -> upscaled

Why this form (PSNR change against fp32 on chelsea x2, the most sensitive evaluation image;
tools/train_sr.py --quantize measures the shipped form on all of them):

- No integer op computes tanh, so a QLinearConv chain has to round each pre-activation to
  8 bits and then tanh of it again: -0.50 dB with min/max ranges, -0.17 dB with 99.99th
  percentiles. Keeping the accumulator exact until tanh leaves one 8-bit rounding per layer:
  -0.10 dB with the same per-tensor ranges.
- Weights are rounded to nearest, then the rounding of each (output, input) kernel is nudged
  so that its integer sum is the rounded sum of the real one: the kernel's response to a flat
  area, which most of an image is, keeps its value (-0.066 dB).
- Activations get a step per channel (the tanh outputs of different channels reach 0.3 to
  0.9): channel c is divided by its step before the per-tensor QuantizeLinear, and the step is
  folded into the next convolution's weights, which are then quantized per output channel
  (-0.031 dB).

Steps come from the largest |tanh| each channel reaches over the calibration frames (the
training photographs; the evaluation images stay out): tanh bounds the range, and clipping
at the 99.999th percentile made the worst image worse. The calibration forward pass runs in
float64 with numpy, so the steps depend on the weights and frames only.

Only numpy and nxe are needed; the calibration frames come from the caller.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from .graph import Graph
from .model import Model
from .models._common import BuiltModel, positive

# A quantized tanh output is round(t / step) + 128, so it covers [-128, 127] steps.
ACTIVATION_ZERO_POINT = 128
ACTIVATION_LEVELS = 127  # the calibrated largest |t| maps to this many steps
INPUT_STEP = 1.0 / 255.0  # 8-bit luma, exactly what the frames hold


def quantize_weights(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """OIHW f32 weights as s8 values and one f32 scale per output channel (largest |w| to
    127, symmetric, zero point 0), each (o, i) kernel's integer sum kept at the rounded sum of
    its real values by moving the roundings that were closest to the other way."""
    w = np.asarray(weight, dtype=np.float64)
    largest = np.abs(w).reshape(w.shape[0], -1).max(axis=1)
    scales = np.where(largest > 0, largest / 127.0, 1.0).astype(np.float32)
    units = w / scales.astype(np.float64)[:, None, None, None]
    rounded = np.round(units)
    flat_units = units.reshape(w.shape[0] * w.shape[1], -1)
    flat = rounded.reshape(flat_units.shape)
    for k in range(flat.shape[0]):
        need = int(np.round(flat_units[k].sum()) - flat[k].sum())
        if need == 0:
            continue
        residual = flat_units[k] - flat[k]
        # The largest residuals in the direction of the shortfall move first; a stable sort
        # keeps the choice deterministic among ties.
        order = np.argsort(-residual * np.sign(need), kind="stable")
        flat[k, order[:abs(need)]] += np.sign(need)
    values = np.clip(flat.reshape(w.shape), -127, 127).astype(np.int8)
    return values, scales


@dataclass(frozen=True)
class EspcnInt8:
    """What the int8 ESPCN graph is built from: per layer the s8 weights, the scale of each
    output channel's accumulator (input step x weight scale) and the f32 bias; per tanh layer
    the step of each channel of its quantized output."""

    scale: int
    weights: tuple[np.ndarray, np.ndarray, np.ndarray]
    accumulator_scales: tuple[np.ndarray, np.ndarray, np.ndarray]
    biases: tuple[np.ndarray, np.ndarray, np.ndarray]
    steps: tuple[np.ndarray, np.ndarray]

    def tensors(self) -> dict[str, np.ndarray]:
        """The constants by the names the graph and the model file give them; per-channel
        values broadcast as [1, C, 1, 1]. The accumulator scales live in the quantization
        of the accumulators instead."""
        out: dict[str, np.ndarray] = {}
        for i in range(3):
            out[f"conv{i + 1}.weight_q"] = self.weights[i]
            out[f"conv{i + 1}.bias"] = self.biases[i].reshape(1, -1, 1, 1)
        for i in range(2):
            out[f"tanh{i + 1}.step"] = self.steps[i].reshape(1, -1, 1, 1)
        return out


def _conv_same_f64(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """[C, H, W] convolved 'SAME' (zero padded) with OIHW weights, in float64, one matrix
    product per kernel tap."""
    k = weight.shape[-1]
    pad = k // 2
    h, w = x.shape[1:]
    padded = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    out = np.empty((weight.shape[0], h * w))
    out[:] = bias[:, None]
    for dy in range(k):
        for dx in range(k):
            window = padded[:, dy:dy + h, dx:dx + w].reshape(x.shape[0], -1)
            out += weight[:, :, dy, dx] @ window
    return out.reshape(-1, h, w)


def _espcn_tanh_outputs(weights: Mapping[str, np.ndarray],
                        luma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two tanh activations of ESPCN on a 2-D luma frame, in float64 with numpy: the
    ranges then depend on the weights and the frames only, not on which kernels run them."""
    def layer(x: np.ndarray, i: int) -> np.ndarray:
        return _conv_same_f64(x, np.asarray(weights[f"conv{i}.weight"], np.float64),
                              np.asarray(weights[f"conv{i}.bias"], np.float64))
    t1 = np.tanh(layer(luma[None].astype(np.float64), 1))
    return t1, np.tanh(layer(t1, 2))


def calibrate_espcn(weights: Mapping[str, np.ndarray], scale: int,
                    frames: Iterable[np.ndarray]) -> EspcnInt8:
    """Runs ESPCN x``scale`` over ``frames`` (2-D luma arrays in [0, 1], any size) in
    float64, takes each tanh channel's largest |value| as its range and quantizes the
    network: the steps, the s8 weights with the steps folded in, and the scales."""
    positive("scale", scale)
    largest = [np.zeros(64), np.zeros(32)]
    count = 0
    for frame in frames:
        luma = np.asarray(frame, dtype=np.float32)
        if luma.ndim != 2:
            raise ValueError(f"calibrate_espcn: a frame must be 2-D luma, got shape {luma.shape}")
        for i, t in enumerate(_espcn_tanh_outputs(weights, luma)):
            largest[i] = np.maximum(largest[i], np.abs(t).max(axis=(1, 2)))
        count += 1
    if count == 0:
        raise ValueError("calibrate_espcn: no calibration frames")
    # A channel that never moves keeps any step; 1/127 maps |t| <= 1 into range.
    steps = tuple(np.where(m > 0, m / ACTIVATION_LEVELS, 1.0 / ACTIVATION_LEVELS)
                  .astype(np.float32) for m in largest)
    q, acc, biases = [], [], []
    for i in range(3):
        w = np.asarray(weights[f"conv{i + 1}.weight"], dtype=np.float32)
        # Input channel c of a later layer holds t_c / step_c: its weights take the step.
        step_in = (np.float32(INPUT_STEP) if i == 0
                   else steps[i - 1].astype(np.float64)[None, :, None, None])
        values, w_scales = quantize_weights(w * step_in if i else w)
        q.append(values)
        acc.append((w_scales * np.float32(INPUT_STEP) if i == 0 else w_scales)
                   .astype(np.float32))
        biases.append(np.asarray(weights[f"conv{i + 1}.bias"], dtype=np.float32).copy())
    return EspcnInt8(scale, (q[0], q[1], q[2]), (acc[0], acc[1], acc[2]),
                     (biases[0], biases[1], biases[2]), (steps[0], steps[1]))


def espcn_int8_from_model(model: Model) -> EspcnInt8:
    """The parameters back from an int8 ESPCN model file that ``espcn_int8`` built: the
    stored arrays, and the accumulator scales from the quantization of the graph's
    accumulators."""
    graph = model.graph()
    try:
        def values(name: str) -> np.ndarray:
            return np.asarray(model.tensor(name)).reshape(-1)

        def scales(layer: str) -> np.ndarray:
            quant = graph.find_tensor(f"{layer}.accumulator").quant
            return np.asarray(quant["scales"], dtype=np.float32)

        layers = ("conv1", "conv2", "conv3")
        return EspcnInt8(
            int(model.metadata["scale"]),
            tuple(np.asarray(model.tensor(f"{n}.weight_q")) for n in layers),  # type: ignore
            tuple(scales(n) for n in layers),  # type: ignore[arg-type]
            tuple(values(f"{n}.bias") for n in layers),  # type: ignore[arg-type]
            (values("tanh1.step"), values("tanh2.step")))
    finally:
        graph.close()


def espcn_int8(params: EspcnInt8, height: int, width: int, batch: int = 1) -> BuiltModel:
    """The int8 ESPCN graph for [batch, 1, height, width] f32 luma in [0, 1] (input "luma"),
    giving f32 [batch, 1, scale*height, scale*width] (output "upscaled"), as the module's
    docstring draws it. Fully convolutional: the input's shape may be changed afterwards."""
    shape = tuple(positive(n, v) for n, v in
                  (("batch", batch), ("height", height), ("width", width)))
    g = Graph()
    constants = {name: g.constant(value, name=name) for name, value in params.tensors().items()}
    x = g.input("luma", (shape[0], 1, shape[1], shape[2]), "f32")
    codes = g.tensor("luma_q", dtype="u8")
    codes.set_quant_asymmetric(INPUT_STEP, 0)
    (h,) = g.op("QuantizeLinear", [x], outputs=[codes], name="quantize_input")
    zero_points = [g.constant(np.array(0, np.uint8), name="input_zero_point"),
                   g.constant(np.array(ACTIVATION_ZERO_POINT, np.uint8),
                              name="activation_zero_point")]
    for i in range(3):
        layer = f"conv{i + 1}"
        weight = params.weights[i]
        accumulator = g.tensor(f"{layer}.accumulator", dtype="i32")
        accumulator.set_quant_per_channel(
            1, [float(s) for s in params.accumulator_scales[i]])
        pad = weight.shape[-1] // 2
        g.op("ConvInteger", [h, constants[f"{layer}.weight_q"], zero_points[min(i, 1)], None],
             outputs=[accumulator], name=layer, pads=[pad, pad, pad, pad])
        y = g.Add(g.op("DequantizeLinear", [accumulator], name=f"{layer}.dequantize")[0],
                  constants[f"{layer}.bias"], name=f"{layer}.biased")
        if i == 2:
            break
        t = g.Tanh(y, name=f"tanh{i + 1}")
        quantized = g.tensor(f"tanh{i + 1}_q", dtype="u8")
        quantized.set_quant_asymmetric(1.0, ACTIVATION_ZERO_POINT)
        in_steps = g.Div(t, constants[f"tanh{i + 1}.step"], name=f"tanh{i + 1}.in_steps")
        (h,) = g.op("QuantizeLinear", [in_steps], outputs=[quantized],
                    name=f"tanh{i + 1}.quantize")
    out = g.DepthToSpace(y, blocksize=params.scale, mode="CRD", name="pixel_shuffle")
    g.mark_output(out, name="upscaled")
    return BuiltModel(g, ("luma",), "upscaled")
