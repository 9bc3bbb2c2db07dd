"""Convolution stacks run depth-first (csrc/transform/bands.c) with NXE_DEPTH_FIRST=on:
consecutive 2-D convolutions run band by band of output rows, each adding the rows the next one
reads, instead of layer by layer (the default). Every row is computed once by the same code, so the
results must equal the layer-by-layer run bit for bit: with direct and Winograd convolutions,
residuals fused from earlier in the stack, heights that are not a multiple of a band or of
Winograd's 4-row tiles, chains broken by convolutions that cannot run by rows, compiled in
memory and loaded from a binary. At the scalar level no step is prepared and nothing runs
depth-first."""

from __future__ import annotations

import numpy as np
import nxe
import pytest
from nxe import models

DEPTH_FIRST = nxe.cpu_info()["isa"] != "scalar"


def conv(g, x, rng, cin, cout, k=3, pad=1, **kw):
    w = g.constant((rng.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k))
                   .astype(np.float32))
    b = g.constant(rng.standard_normal(cout).astype(np.float32) * 0.1)
    return g.Conv2d(x, w, b, pads=[pad] * 4, **kw)


def stack(h, w, seed=0):
    """5x5 head, 3x3 body with a residual block (its sum read two convolutions later), a
    strided conv that breaks the chain, then another chain: [1, 24, h, w] -> [1, 8, ~h/2, ~w/2]."""
    rng = np.random.default_rng(seed)
    g = nxe.Graph()
    x = g.input("x", (1, 3, h, w), "f32")
    a = g.Relu(conv(g, x, rng, 3, 24, k=5, pad=2))
    r = g.Relu(conv(g, a, rng, 24, 24))
    r = g.Add(conv(g, r, rng, 24, 24), a)
    t = g.Tanh(conv(g, r, rng, 24, 16))
    s = conv(g, t, rng, 16, 16, strides=[2, 2])
    u = g.Relu(conv(g, s, rng, 16, 16))
    g.mark_output(conv(g, u, rng, 16, 8, k=1, pad=0), name="y")
    return g


def runs(graph, feed, monkeypatch, **options):
    out = {}
    for mode in ("off", "on"):
        monkeypatch.setenv("NXE_DEPTH_FIRST", mode)
        exe = graph.compile(threads=2, **options)
        loaded = nxe.VirtualMachine(graph.compile_to_binary(**options)).executable
        out[mode] = (exe, exe.run(feed)["y"], loaded.run(feed)["y"])
    return out


@pytest.mark.parametrize("winograd", ["off", "on"])
@pytest.mark.parametrize("h,w", [(37, 29), (64, 48), (5, 7), (130, 21)])
def test_depth_first_equals_layer_by_layer(h, w, winograd, monkeypatch):
    g = stack(h, w)
    feed = {"x": np.random.default_rng(1).standard_normal((1, 3, h, w)).astype(np.float32)}
    out = runs(g, feed, monkeypatch, winograd=winograd)
    _, reference, reference_loaded = out["off"]
    _, got, got_loaded = out["on"]
    np.testing.assert_array_equal(reference_loaded, reference)
    np.testing.assert_array_equal(got, reference)
    np.testing.assert_array_equal(got_loaded, reference)


def step_spans(exe, feed):
    rows = exe.profile(feed).runs[0].steps
    return [(s.op_type, s.start_ns, s.start_ns + s.elapsed_ns) for s in rows]


def test_the_steps_of_a_stack_interleave(monkeypatch):
    """A band run starts the second convolution before the first has finished; layer by layer,
    every step starts after the one before it ends."""
    h, w = 256, 64
    g = stack(h, w)
    feed = {"x": np.random.default_rng(2).standard_normal((1, 3, h, w)).astype(np.float32)}
    out = runs(g, feed, monkeypatch)
    for mode, (exe, _, _) in out.items():
        spans = [s for s in step_spans(exe, feed) if s[0] == "Conv2d"]
        overlapping = spans[1][1] < spans[0][2]
        assert overlapping == (mode == "on" and DEPTH_FIRST), (mode, spans[:2])
        if mode == "off":
            assert all(b[1] >= a[2] for a, b in zip(spans, spans[1:])), spans


def test_a_band_run_keeps_every_tensor_of_the_chain_alive(monkeypatch):
    """The arena plans for the interleaving: a layer-by-layer plan may reuse the first
    convolution's output for the third's; a band run cannot, as both are in use throughout."""
    h, w = 256, 64
    g = stack(h, w)
    off = runs(g, {"x": np.zeros((1, 3, h, w), np.float32)}, monkeypatch)
    arena = {mode: exe.memory_info()["arena_bytes"] for mode, (exe, _, _) in off.items()}
    monkeypatch.delenv("NXE_DEPTH_FIRST")
    arena["unset"] = g.compile(threads=2).memory_info()["arena_bytes"]
    assert arena["unset"] == arena["off"], arena  # layer by layer unless asked
    if DEPTH_FIRST:
        assert arena["on"] > arena["off"], arena
    else:
        assert arena["on"] == arena["off"], arena


@pytest.mark.parametrize("arch", ["espcn", "edsr"])
def test_super_resolution_networks_run_depth_first_unchanged(arch, monkeypatch):
    h, w = 45, 61
    if arch == "espcn":
        built = models.espcn(models.espcn_random_weights(2, seed=3), h, w, 2)
        channels = 1
    else:
        built = models.edsr_baseline(models.edsr_random_weights(2, seed=3, num_blocks=3), h, w,
                                     2, num_blocks=3)
        channels = 3
    x = np.random.default_rng(4).uniform(0, 1, (1, channels, h, w)).astype(np.float32)
    results = {}
    for mode in ("off", "on"):
        monkeypatch.setenv("NXE_DEPTH_FIRST", mode)
        results[mode] = built.graph.compile(threads=2).run({built.inputs[0]: x})[built.output]
    np.testing.assert_array_equal(results["on"], results["off"])
