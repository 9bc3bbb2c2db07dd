"""What the op suites share: one-op graphs over numpy inputs, built, compiled and run once, and
the bf16 rounding their references use. Not a test module; the op suites import it."""

from __future__ import annotations

import numpy as np
import nxe
from nxe import _dtypes


def one_op_graph(op_type, inputs, *, constants=(), dtypes=None, num_outputs=None,
                 **attrs):
    """A graph with one op, named "under_test", whose outputs are marked.

    `inputs` are, in schema order, numpy arrays (fed as graph inputs "in<i>"), (shape, dtype)
    specs (declared only) or None (an optional input left absent); an array whose index is in
    `constants` becomes a constant tensor instead. `dtypes`, one nxe dtype name per input,
    overrides the arrays' own (e.g. "bf16" for uint16 bit patterns). Returns the graph, its
    output tensors and the feeds a run needs.
    """
    g = nxe.Graph()
    tensors, feeds = [], {}
    for i, value in enumerate(inputs):
        if value is None:
            tensors.append(None)
        elif isinstance(value, tuple):
            shape, spec_dtype = value
            tensors.append(g.input(f"in{i}", shape, spec_dtype))
        elif i in constants:
            tensors.append(g.constant(value, name=f"in{i}"))
        else:
            dtype = dtypes[i] if dtypes else value.dtype
            tensors.append(g.input(f"in{i}", value.shape, dtype))
            feeds[f"in{i}"] = value
    outputs = g.op(op_type, tensors, num_outputs=num_outputs, name="under_test", **attrs)
    for t in outputs:
        g.mark_output(t)
    return g, outputs, feeds


def build_op(op_type, inputs, **kwargs):
    """The uncompiled graph of one_op_graph, for tests of what compiling rejects."""
    return one_op_graph(op_type, inputs, **kwargs)[0]


def compile_op(op_type, inputs, **kwargs):
    """The one-op graph compiled for one thread."""
    return build_op(op_type, inputs, **kwargs).compile(threads=1)


def run_op(op_type, inputs, *, threads=1, **kwargs):
    """Runs the one-op graph once on `threads` threads; returns its outputs as a list."""
    g, outputs, feeds = one_op_graph(op_type, inputs, **kwargs)
    result = g.compile(threads=threads).run(feeds)
    return [result[t.name] for t in outputs]


def run_single(op_type, inputs, **kwargs):
    """run_op for an op with one output: that output."""
    (y,) = run_op(op_type, inputs, **kwargs)
    return y


def bf16_bits(x):
    """f32 values rounded to bf16 (nearest, ties to even) as uint16 bit patterns; NaN stays a
    (quiet) NaN."""
    x = np.asarray(x, dtype=np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return np.where(np.isnan(x), (bits >> 16) | 0x40, rounded).astype(np.uint16)


def bf16_values(bits):
    """The f32 values of bf16 bit patterns (exact)."""
    return (np.asarray(bits, dtype=np.uint32) << 16).view(np.float32)


def numpy_dtype(name):
    """The numpy dtype of the arrays nxe exchanges for dtype `name` (bf16: raw uint16 bits), as
    the library's table gives it."""
    return _dtypes.numpy_of(_dtypes.code_of(name))


def dtype_code(name):
    """The C code (enum nxe_dtype) of the dtype named `name`, as attributes such as Cast's `to`
    take it."""
    return _dtypes.code_of(name)
