"""ONNX converters for convolutions and pooling: Conv, ConvTranspose, MaxPool, AveragePool,
LpPool and their global forms, mapped by spatial rank onto nxe's Conv1d/2d/3d,
ConvTranspose1d/2d/3d, MaxPool1d/2d/3d, AveragePool1d/2d/3d, LpPool1d/2d/3d and Global*Pool."""

from __future__ import annotations

from typing import Any

from .registry import converter

# ONNX auto_pad -> nxe padding attribute.
_PADDING = {"NOTSET": "EXPLICIT", "SAME_UPPER": "SAME", "SAME_LOWER": "SAME_LOWER",
            "VALID": "VALID"}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _spatial_rank(ctx: Any, allowed: tuple[int, ...] = (1, 2, 3)) -> int:
    shape = ctx.shape(0)
    rank = len(shape) - 2
    if rank not in allowed:
        ranks = "/".join(str(r + 2) for r in allowed)
        raise ctx.unsupported(f"input of rank {len(shape)} (nxe takes rank {ranks}: [N, C] "
                              "and 1 to 3 spatial axes)")
    return rank


def _require_dtype(ctx: Any, allowed: tuple[str, ...]) -> None:
    dtype = ctx.dtype(0)
    if dtype not in allowed:
        raise ctx.unsupported(f"input dtype {dtype} (nxe takes {', '.join(allowed)})")


def _ints(ctx: Any, node: Any, name: str, count: int, default: int) -> list[int]:
    values = [int(v) for v in ctx.attr(node, name, [default] * count)]
    if len(values) != count:
        raise ctx.unsupported(f"attribute {name} has {len(values)} values, the input needs "
                              f"{count}")
    return values


def _window_attrs(ctx: Any, node: Any, rank: int) -> dict[str, Any]:
    """strides, dilations, pads and padding shared by Conv and the pools."""
    auto_pad = _text(ctx.attr(node, "auto_pad", "NOTSET"))
    if auto_pad not in _PADDING:
        raise ctx.unsupported(f"auto_pad {auto_pad!r}")
    return {"strides": _ints(ctx, node, "strides", rank, 1),
            "dilations": _ints(ctx, node, "dilations", rank, 1),
            "pads": _ints(ctx, node, "pads", 2 * rank, 0),
            "padding": _PADDING[auto_pad]}


def _check_kernel_shape(ctx: Any, node: Any, kernel: tuple[int, ...]) -> None:
    given = ctx.attr(node, "kernel_shape")
    if given is not None and tuple(int(k) for k in given) != tuple(kernel):
        raise ctx.unsupported(f"kernel_shape {list(given)} differs from the weight's "
                              f"{list(kernel)}")


@converter("Conv")
def convert_conv(ctx: Any, node: Any) -> Any:
    rank = _spatial_rank(ctx)
    _require_dtype(ctx, ("f32",))
    _check_kernel_shape(ctx, node, ctx.shape(1)[2:])
    attrs = _window_attrs(ctx, node, rank)
    attrs["group"] = int(ctx.attr(node, "group", 1))
    op = getattr(ctx.g, f"Conv{rank}d")
    return [op(ctx.input(0), ctx.input(1), ctx.input(2), **attrs)]


def _conv_transpose_pads(ctx: Any, node: Any, rank: int, strides: list[int],
                         dilations: list[int], output_padding: list[int]) -> list[int]:
    """Explicit pads for ConvTranspose, resolving output_shape and SAME auto_pad as the ONNX
    spec does: the total padding is the natural output size minus the requested one."""
    auto_pad = _text(ctx.attr(node, "auto_pad", "NOTSET"))
    if auto_pad not in _PADDING:
        raise ctx.unsupported(f"auto_pad {auto_pad!r}")
    sizes = ctx.shape(0)[2:]
    kernel = ctx.shape(1)[2:]
    output_shape = ctx.attr(node, "output_shape")
    if output_shape is None and auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        output_shape = [sizes[i] * strides[i] for i in range(rank)]
    if output_shape is None:
        return [0] * 2 * rank if auto_pad == "VALID" else _ints(ctx, node, "pads", 2 * rank, 0)
    output_shape = [int(v) for v in output_shape][-rank:]
    if len(output_shape) != rank:
        raise ctx.unsupported(f"output_shape {list(output_shape)} for {rank} spatial axes")
    begins, ends = [], []
    for i in range(rank):
        total = (strides[i] * (sizes[i] - 1) + output_padding[i]
                 + (kernel[i] - 1) * dilations[i] + 1 - output_shape[i])
        small = total // 2
        begin, end = (small, total - small) if auto_pad == "SAME_UPPER" else (total - small, small)
        begins.append(begin)
        ends.append(end)
    return begins + ends


@converter("ConvTranspose")
def convert_conv_transpose(ctx: Any, node: Any) -> Any:
    rank = _spatial_rank(ctx)
    _require_dtype(ctx, ("f32",))
    _check_kernel_shape(ctx, node, ctx.shape(1)[2:])
    strides = _ints(ctx, node, "strides", rank, 1)
    dilations = _ints(ctx, node, "dilations", rank, 1)
    output_padding = _ints(ctx, node, "output_padding", rank, 0)
    pads = _conv_transpose_pads(ctx, node, rank, strides, dilations, output_padding)
    for i in range(rank):
        if pads[i] < 0:
            raise ctx.unsupported(f"an output_shape that needs output before position 0 "
                                  f"(begin pad {pads[i]} on spatial axis {i})")
        if pads[rank + i] < 0:
            # Output past the natural end gets only the bias: that is output_padding.
            output_padding[i] -= pads[rank + i]
            pads[rank + i] = 0
    op = getattr(ctx.g, f"ConvTranspose{rank}d")
    return [op(ctx.input(0), ctx.input(1), ctx.input(2), strides=strides, dilations=dilations,
               pads=pads, output_padding=output_padding,
               group=int(ctx.attr(node, "group", 1)))]


def _pool_attrs(ctx: Any, node: Any, rank: int) -> dict[str, Any]:
    attrs = _window_attrs(ctx, node, rank)
    kernel = ctx.attr(node, "kernel_shape")
    if kernel is None:
        raise ctx.unsupported("no kernel_shape")
    attrs["kernel_shape"] = _ints(ctx, node, "kernel_shape", rank, 1)
    attrs["ceil_mode"] = int(ctx.attr(node, "ceil_mode", 0))
    return attrs


@converter("MaxPool")
def convert_max_pool(ctx: Any, node: Any) -> Any:
    rank = _spatial_rank(ctx)
    _require_dtype(ctx, ("f32", "i8", "u8"))
    if len(node.output) > 1 and node.output[1]:
        raise ctx.unsupported("the Indices output")
    attrs = _pool_attrs(ctx, node, rank)
    return [getattr(ctx.g, f"MaxPool{rank}d")(ctx.input(0), **attrs)]


@converter("AveragePool")
def convert_average_pool(ctx: Any, node: Any) -> Any:
    rank = _spatial_rank(ctx)
    _require_dtype(ctx, ("f32",))
    attrs = _pool_attrs(ctx, node, rank)
    attrs["count_include_pad"] = int(ctx.attr(node, "count_include_pad", 0))
    return [getattr(ctx.g, f"AveragePool{rank}d")(ctx.input(0), **attrs)]


def _norm_order(ctx: Any, node: Any) -> int:
    p = ctx.attr(node, "p", 2)
    if float(p) != int(p):
        raise ctx.unsupported(f"a non-integer norm order p = {p}")
    return int(p)


@converter("LpPool")
def convert_lp_pool(ctx: Any, node: Any) -> Any:
    rank = _spatial_rank(ctx)
    _require_dtype(ctx, ("f32",))
    attrs = _pool_attrs(ctx, node, rank)
    attrs["p"] = _norm_order(ctx, node)
    return [getattr(ctx.g, f"LpPool{rank}d")(ctx.input(0), **attrs)]


def _global_rank(ctx: Any) -> None:
    if len(ctx.shape(0)) < 3:
        raise ctx.unsupported(f"input of rank {len(ctx.shape(0))} (needs [N, C, spatial...])")


@converter("GlobalMaxPool")
def convert_global_max_pool(ctx: Any, node: Any) -> Any:
    _global_rank(ctx)
    _require_dtype(ctx, ("f32", "i8", "u8"))
    return [ctx.g.GlobalMaxPool(ctx.input(0))]


@converter("GlobalAveragePool")
def convert_global_average_pool(ctx: Any, node: Any) -> Any:
    _global_rank(ctx)
    _require_dtype(ctx, ("f32",))
    return [ctx.g.GlobalAveragePool(ctx.input(0))]


@converter("GlobalLpPool")
def convert_global_lp_pool(ctx: Any, node: Any) -> Any:
    _global_rank(ctx)
    _require_dtype(ctx, ("f32",))
    return [ctx.g.GlobalLpPool(ctx.input(0), p=_norm_order(ctx, node))]
