"""`nxe bench MODEL`: times a model on random inputs and prints where a run spends its time.

MODEL is a model file (.nxm), a built-in SR model name (espcn-x2, ...) or an ONNX file (with
the onnx extra). Inputs take the shapes the model declares; --shape sets or overrides one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from typing import Any

import numpy as np

from . import _dtypes
from .errors import Error, InvalidArgumentError
from .executable import Executable


def parse_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """``NAME=1x3x64x64`` as (name, shape); argparse's type for --shape."""
    name, sep, dims = text.rpartition("=")
    try:
        shape = tuple(int(d) for d in dims.split("x")) if dims else ()
    except ValueError:
        shape = None
    if not sep or not name or not shape or any(d < 0 for d in shape):
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected NAME=DIMS with DIMS like 1x3x64x64")
    return name, shape


def random_inputs(exe: Executable, seed: int) -> dict[str, np.ndarray]:
    """An array per input of the executable: floats from a standard normal distribution,
    integers and booleans zero (a random index could point outside what it indexes)."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, shape, dtype in exe.inputs:
        numpy_dtype = _dtypes.numpy_of(_dtypes.code_of(dtype))
        if np.issubdtype(numpy_dtype, np.integer) or numpy_dtype == np.bool_:
            feeds[name] = np.zeros(shape, numpy_dtype)
        else:
            feeds[name] = rng.standard_normal(shape, dtype=np.float32).astype(numpy_dtype)
    return feeds


def _shape_text(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape)) or "scalar"


def _compile_model_file(path: str, shapes: dict[str, tuple[int, ...]], threads: int,
                        relax: bool) -> Executable:
    from .model import Model

    with Model(path) as model, model.graph() as graph:
        for name, shape in shapes.items():
            graph.find_tensor(name).set_shape(shape)
        try:
            return graph.compile(threads=threads, relax=relax)
        except Error as error:
            raise type(error)(f"{error} (an input without a fixed shape needs --shape "
                              "NAME=DIMS)") from error


def _onnx_dims(name: str, value_info: Any, shapes: dict[str, tuple[int, ...]]
               ) -> tuple[int, ...]:
    if name in shapes:
        return shapes[name]
    dims = value_info.type.tensor_type.shape.dim
    if any(not d.HasField("dim_value") for d in dims):
        declared = "x".join(d.dim_param or "?" if not d.HasField("dim_value") else
                            str(d.dim_value) for d in dims)
        raise InvalidArgumentError(f"input {name!r} has the symbolic shape {declared}: give "
                                   f"it with --shape {name}=DIMS")
    return tuple(int(d.dim_value) for d in dims)


def _compile_onnx(path: str, shapes: dict[str, tuple[int, ...]], threads: int,
                  seed: int) -> Executable:
    try:
        from onnx import helper
    except ImportError as error:
        raise InvalidArgumentError("ONNX models need the onnx extra: pip install 'nxe[onnx]'"
                                   ) from error
    from . import onnx as nxe_onnx

    model = nxe_onnx.load(path, threads=threads)
    graph = model.proto.graph
    initialized = {init.name for init in graph.initializer}
    declared = [v for v in graph.input if v.name not in initialized]
    unknown = sorted(set(shapes) - {v.name for v in declared})
    if unknown:
        raise InvalidArgumentError(f"--shape: the model has no input {', '.join(unknown)}; "
                                   f"inputs are {[v.name for v in declared]}")
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in declared:
        dtype = helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
        shape = _onnx_dims(value.name, value, shapes)
        feeds[value.name] = (np.zeros(shape, dtype) if not np.issubdtype(dtype, np.floating)
                             else rng.standard_normal(shape).astype(dtype))
    executable = model.compile_for(feeds).executable
    if executable is None:
        raise InvalidArgumentError(f"{path}: every output folds to a constant; nothing runs")
    return executable


def open_executable(model: str, shapes: dict[str, tuple[int, ...]], threads: int = 0,
                    relax: bool = False, seed: int = 0) -> Executable:
    """The executable `nxe bench` times: a built-in SR model name, a .nxm file or, with the
    onnx extra, a .onnx file, compiled for the declared input shapes with ``shapes`` applied."""
    if model.endswith(".onnx"):
        if relax:
            raise InvalidArgumentError("--precision relax applies to .nxm and built-in models")
        return _compile_onnx(model, shapes, threads, seed)
    from .sr import model_path

    path = model_path(model)
    if not path.is_file():
        raise InvalidArgumentError(f"{model}: no such file")
    return _compile_model_file(os.fspath(path), shapes, threads, relax)


def run(args: argparse.Namespace) -> int:
    shapes = dict(args.shape)
    try:
        exe = open_executable(args.model, shapes, threads=args.threads,
                              relax=args.precision == "relax", seed=args.seed)
        with exe:
            feeds = random_inputs(exe, args.seed)
            profile = exe.profile(feeds, runs=args.runs, warmup=args.warmup)
            if args.trace:
                profile.to_chrome_trace(args.trace)
    except (Error, OSError, ValueError) as error:
        print(f"nxe bench: {error}", file=sys.stderr)
        return 1
    described = ", ".join(f"{name} {_shape_text(shape)} {dtype}" for name, shape, dtype in
                          exe.inputs)
    wall = profile.wall_ms
    print(f"model:   {args.model}")
    print(f"inputs:  {described}")
    print(f"runs:    {args.runs} after {args.warmup} warm-up: median {statistics.median(wall):.3f}"
          f" ms, min {min(wall):.3f} ms")
    print()
    print(profile.table())
    if args.trace:
        print(f"\nchrome trace: {args.trace}")
    return 0


def add_parser(commands: Any) -> None:
    from .sr import builtin_models

    bench = commands.add_parser(
        "bench", help="time a model on random inputs and print its per-step profile",
        description="Runs MODEL on random inputs of its declared shapes (floats from a "
        "standard normal distribution, integers zero): warm-up runs, then timed runs with "
        "per-step profiling. Prints the median and minimum run time and a table of the steps "
        "(op, kernel, shapes, mean ms, share).")
    bench.add_argument("model", metavar="MODEL",
                       help=f"a .nxm model file, a built-in model ({', '.join(builtin_models())})"
                       " or a .onnx file (needs the onnx extra)")
    bench.add_argument("--shape", metavar="NAME=DIMS", type=parse_shape, action="append",
                       default=[], help="shape of input NAME, e.g. luma=1x1x256x256; needed for "
                       "inputs without a fixed shape (repeatable)")
    bench.add_argument("--runs", type=int, default=20, help="timed runs (default 20)")
    bench.add_argument("--warmup", type=int, default=3, help="untimed runs first (default 3)")
    bench.add_argument("--threads", type=int, default=0,
                       help="worker threads, 0 = one per CPU (default 0)")
    bench.add_argument("--precision", choices=("fp32", "relax"), default="fp32",
                       help="relax lets fp32 work run in bf16 (default fp32)")
    bench.add_argument("--seed", type=int, default=0, help="random input seed (default 0)")
    bench.add_argument("--trace", metavar="OUT.json",
                       help="also write the timed runs as a Chrome trace (chrome://tracing, "
                       "Perfetto)")
    bench.set_defaults(handler=run)
