"""Cases for tests/test_winograd.py, run in a fresh process per ISA level (NXE_ISA is read once
per process): each 3x3 convolution is compiled with NXE_WINOGRAD=on (run compiled in memory and
loaded from a binary, whose loader prepares again), and its kernel name is recorded for each
way of choosing (MODES): the environment variable NXE_WINOGRAD=on, off, auto or unset with the
compile option left at "auto", the compile option "on" or "off" with the environment unset or
saying the opposite, relax mode, and binaries compiled with each option.

    NXE_ISA=avx2 python tests/winograd_cases.py OUT.npz
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import nxe

# Stride-1 3x3 convolutions: batch, channels, height, width, output channels, padding, layout,
# bias, the activation after it and whether a residual Add comes before the activation.
CASES = [
    {"name": "tails_bias_tanh", "n": 1, "c": 3, "h": 9, "w": 11, "o": 5, "pad": 1,
     "then": "Tanh"},
    {"name": "odd_channels_no_pad", "n": 2, "c": 17, "h": 7, "w": 30, "o": 33, "pad": 0,
     "then": "Relu", "residual": True},
    {"name": "edsr_like", "n": 1, "c": 64, "h": 13, "w": 50, "o": 64, "pad": 1, "residual": True},
    {"name": "edsr_frame", "n": 1, "c": 64, "h": 32, "w": 64, "o": 64, "pad": 1, "then": "Relu"},
    {"name": "no_bias", "n": 1, "c": 8, "h": 5, "w": 6, "o": 7, "pad": 1, "bias": False},
    {"name": "single_channel", "n": 1, "c": 1, "h": 6, "w": 9, "o": 3, "pad": 1,
     "then": "Sigmoid"},
    {"name": "nhwc_tails", "n": 2, "c": 5, "h": 6, "w": 13, "o": 9, "pad": 1, "layout": "NHWC",
     "then": "Relu", "residual": True},
    {"name": "nhwc_wide", "n": 1, "c": 32, "h": 10, "w": 77, "o": 12, "pad": 1,
     "layout": "NHWC", "then": "Tanh"},
    {"name": "long_reduction", "n": 1, "c": 300, "h": 6, "w": 9, "o": 20, "pad": 1},
]

# name: (NXE_WINOGRAD, compile options)
MODES = {
    "on": ("on", {}),
    "off": ("off", {}),
    "auto": ("auto", {}),
    "unset": (None, {}),
    "option_on": (None, {"winograd": "on"}),
    "option_off": (None, {"winograd": "off"}),
    "option_on_env_off": ("off", {"winograd": "on"}),
    "option_off_env_on": ("on", {"winograd": "off"}),
    "relax_unset": (None, {"relax": True}),
}


def arrays_of(case: dict, rng: np.random.Generator) -> dict[str, np.ndarray]:
    n, c, o = case["n"], case["c"], case["o"]
    out_h, out_w = case["h"] + 2 * case["pad"] - 2, case["w"] + 2 * case["pad"] - 2
    arrays = {"x": rng.standard_normal((n, c, case["h"], case["w"])).astype(np.float32),
              "w": (rng.standard_normal((o, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)}
    if case.get("bias", True):
        arrays["b"] = rng.standard_normal(o).astype(np.float32)
    if case.get("residual"):
        arrays["residual"] = rng.standard_normal((n, o, out_h, out_w)).astype(np.float32)
    return arrays


def build(case: dict, arrays: dict[str, np.ndarray]) -> tuple[nxe.Graph, list[np.ndarray]]:
    last = case.get("layout") == "NHWC"

    def laid_out(v: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(np.moveaxis(v, 1, -1)) if last else v

    g = nxe.Graph()
    x = g.input("x", laid_out(arrays["x"]).shape, "f32")
    bias = [g.constant(arrays["b"])] if "b" in arrays else []
    y = g.Conv2d(x, g.constant(laid_out(arrays["w"])), *bias, pads=[case["pad"]] * 4,
                 layout="NHWC" if last else "NCHW")
    inputs = [laid_out(arrays["x"])]
    if "residual" in arrays:
        y = g.Add(y, g.input("residual", laid_out(arrays["residual"]).shape, "f32"))
        inputs.append(laid_out(arrays["residual"]))
    if case.get("then"):
        y = getattr(g, case["then"])(y)
    g.mark_output(y, name="y")
    return g, inputs


def conv_kernel(exe: nxe.Executable, inputs: list[np.ndarray]) -> str:
    return next(row["kernel"] for row in exe.profile(*inputs).rows() if row["op_type"] == "Conv2d")


def main(out_path: str) -> None:
    rng = np.random.default_rng(15)
    saved: dict[str, np.ndarray] = {}
    kernels: dict[str, dict[str, str]] = {}
    for case in CASES:
        arrays = arrays_of(case, rng)
        graph, inputs = build(case, arrays)
        kernels[case["name"]] = {}
        for mode, (value, options) in MODES.items():
            if value is None:
                os.environ.pop("NXE_WINOGRAD", None)
            else:
                os.environ["NXE_WINOGRAD"] = value
            exe = graph.compile(**options)
            kernels[case["name"]][mode] = conv_kernel(exe, inputs)
            if "winograd" in options:
                # The choice is baked into the binary: the loader's environment does not move it.
                os.environ["NXE_WINOGRAD"] = "off" if options["winograd"] == "on" else "on"
                vm = nxe.VirtualMachine(graph.compile_to_binary(winograd=options["winograd"]))
                kernels[case["name"]][f"{mode}_loaded"] = conv_kernel(vm.executable, inputs)
            if mode != "on":
                continue
            compiled = exe.run(*inputs)["y"]
            loaded = nxe.VirtualMachine(graph.compile_to_binary())["main"](*inputs)
            for key, y in (("y", compiled), ("loaded", loaded)):
                saved[f"{case['name']}/{key}"] = (np.moveaxis(y, -1, 1)
                                                  if case.get("layout") == "NHWC" else y)
        for name, value in arrays.items():
            saved[f"{case['name']}/{name}"] = value
    saved["kernels"] = np.array(json.dumps(kernels))
    saved["cpu"] = np.array(json.dumps(nxe.cpu_info()))
    np.savez(out_path, **saved)


if __name__ == "__main__":
    main(sys.argv[1])
