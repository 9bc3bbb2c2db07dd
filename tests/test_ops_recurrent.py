"""RNN, GRU and LSTM layers against a numpy transcription of the ONNX equations: directions,
layouts, biases, initial states, peepholes, sequence lengths, clipping, custom activations,
linear_before_reset, thread-count independence and bad input."""

from __future__ import annotations

import numpy as np
import nxe
import pytest
from op_testing import run_op

RTOL, ATOL = 1e-4, 1e-5
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


ACTIVATIONS = {
    "Sigmoid": lambda x, a, b: sigmoid(x),
    "Tanh": lambda x, a, b: np.tanh(x),
    "Relu": lambda x, a, b: np.maximum(x, 0),
    "Affine": lambda x, a, b: a * x + b,
    "LeakyRelu": lambda x, a, b: np.where(x >= 0, x, a * x),
    "ThresholdedRelu": lambda x, a, b: np.where(x > a, x, 0),
    "ScaledTanh": lambda x, a, b: a * np.tanh(b * x),
    "HardSigmoid": lambda x, a, b: np.clip(a * x + b, 0, 1),
    "Elu": lambda x, a, b: np.where(x >= 0, x, a * (np.exp(x) - 1)),
    "Softsign": lambda x, a, b: x / (1 + np.abs(x)),
    "Softplus": lambda x, a, b: np.log1p(np.exp(x)),
}
DEFAULT_ALPHA = {"Affine": (1.0, 0.0), "LeakyRelu": (0.01, 0.0), "ThresholdedRelu": (1.0, 0.0),
                 "ScaledTanh": (1.0, 1.0), "HardSigmoid": (0.2, 0.5), "Elu": (1.0, 0.0)}
USES = {"Affine": (1, 1), "LeakyRelu": (1, 0), "ThresholdedRelu": (1, 0), "ScaledTanh": (1, 1),
        "HardSigmoid": (1, 1), "Elu": (1, 0)}


def activation_functions(cell, names, alphas, betas, directions):
    per = {"RNN": 1, "GRU": 2, "LSTM": 3}[cell]
    if not names:
        names = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"],
                 "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[cell]
    if len(names) == per and directions == 2:
        names = names * 2
    fns, ia, ib = [], 0, 0
    for name in names:
        a, b = DEFAULT_ALPHA.get(name, (0.0, 0.0))
        ua, ub = USES.get(name, (0, 0))
        if ua and ia < len(alphas):
            a, ia = alphas[ia], ia + 1
        if ub and ib < len(betas):
            b, ib = betas[ib], ib + 1
        fns.append(lambda x, f=ACTIVATIONS[name], a=a, b=b: f(x, a, b))
    return [fns[d * per:(d + 1) * per] for d in range(directions)]


def reference(cell, x, w, r, b=None, lens=None, h0=None, c0=None, p=None, direction="forward",
              layout=0, clip=0.0, activations="", alphas=(), betas=(), linear_before_reset=0,
              input_forget=0):
    """Per-sequence loop over the ONNX equations in float64. Returns Y, Y_h[, Y_c] in layout 0."""
    if layout:
        x = x.transpose(1, 0, 2)
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
        c0 = None if c0 is None else c0.transpose(1, 0, 2)
    x, w, r = (a.astype(np.float64) for a in (x, w, r))
    steps, batch, _ = x.shape
    dirs, hs = w.shape[0], r.shape[2]
    names = [n for n in activations.split(",") if n]
    fns = activation_functions(cell, names, list(alphas), list(betas), dirs)
    cl = (lambda v: np.clip(v, -clip, clip)) if clip > 0 else (lambda v: v)
    y = np.zeros((steps, dirs, batch, hs))
    yh = np.zeros((dirs, batch, hs))
    yc = np.zeros((dirs, batch, hs))
    for d in range(dirs):
        reverse = direction == "reverse" or d == 1
        wb = np.zeros(GATES[cell] * hs) if b is None else b[d, :GATES[cell] * hs]
        rb = np.zeros(GATES[cell] * hs) if b is None else b[d, GATES[cell] * hs:]
        f = fns[d][0]
        g = fns[d][1] if len(fns[d]) > 1 else None
        hfn = fns[d][2] if len(fns[d]) > 2 else None
        for n in range(batch):
            length = steps if lens is None else int(lens[n])
            h = np.zeros(hs) if h0 is None else h0[d, n].astype(np.float64)
            c = np.zeros(hs) if c0 is None else c0[d, n].astype(np.float64)
            order = range(length - 1, -1, -1) if reverse else range(length)
            for t in order:
                xt = x[t, n]
                gx = w[d] @ xt + wb
                gh = r[d] @ h + rb
                if cell == "RNN":
                    h = f(cl(gx + gh))
                elif cell == "GRU":
                    z = f(cl(gx[:hs] + gh[:hs]))
                    rr = f(cl(gx[hs:2 * hs] + gh[hs:2 * hs]))
                    if linear_before_reset:
                        cand = g(cl(gx[2 * hs:] + rr * gh[2 * hs:]))
                    else:
                        cand = g(cl(gx[2 * hs:] + r[d][2 * hs:] @ (rr * h) + rb[2 * hs:]))
                    h = (1 - z) * cand + z * h
                else:
                    pi, po, pf = (np.zeros(hs),) * 3 if p is None else np.split(p[d], 3)
                    s = gx + gh
                    i = f(cl(s[:hs] + pi * c))
                    fg = 1 - i if input_forget else f(cl(s[2 * hs:3 * hs] + pf * c))
                    c = fg * c + i * g(cl(s[3 * hs:]))
                    o = f(cl(s[hs:2 * hs] + po * c))
                    h = o * hfn(c)
                y[t, d, n] = h
            yh[d, n] = h
            yc[d, n] = c
    outs = [y, yh] + ([yc] if cell == "LSTM" else [])
    if layout:
        outs = [outs[0].transpose(2, 0, 1, 3)] + [o.transpose(1, 0, 2) for o in outs[1:]]
    return outs


def run_layer(cell, arrays, threads=1, **attrs):
    """The layer's outputs; trailing None arrays leave those optional inputs unbound."""
    while arrays and arrays[-1] is None:
        arrays = arrays[:-1]
    return run_op(cell, arrays, threads=threads, **attrs)


def make_inputs(rng, cell, steps, batch, inp, hs, dirs, layout=0, bias=True, h0=True, c0=True,
                peep=False, lens=None):
    gates = GATES[cell]
    xs = (batch, steps, inp) if layout else (steps, batch, inp)
    ss = (batch, dirs, hs) if layout else (dirs, batch, hs)
    arrays = [rng.standard_normal(xs).astype(np.float32),
              (rng.standard_normal((dirs, gates * hs, inp)) * 0.5).astype(np.float32),
              (rng.standard_normal((dirs, gates * hs, hs)) * 0.5).astype(np.float32),
              rng.standard_normal((dirs, 2 * gates * hs)).astype(np.float32) if bias else None,
              None if lens is None else np.array(lens, np.int32),
              rng.standard_normal(ss).astype(np.float32) if h0 else None]
    if cell == "LSTM":
        arrays.append(rng.standard_normal(ss).astype(np.float32) if c0 else None)
        arrays.append(rng.standard_normal((dirs, 3 * hs)).astype(np.float32) if peep else None)
    return arrays


def check(cell, arrays, **attrs):
    got = run_layer(cell, arrays, **attrs)
    ref = reference(cell, *arrays, **{k: v for k, v in attrs.items()
                                      if k not in ("activation_alpha", "activation_beta")},
                    alphas=attrs.get("activation_alpha", ()),
                    betas=attrs.get("activation_beta", ()))
    assert len(got) == len(ref)
    for a, b in zip(got, ref):
        assert a.shape == b.shape and a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)
    return got


@pytest.mark.parametrize("cell", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("layout", [0, 1])
def test_layer_matches_onnx_equations(cell, direction, layout, rng):
    dirs = 2 if direction == "bidirectional" else 1
    arrays = make_inputs(rng, cell, steps=5, batch=3, inp=4, hs=6, dirs=dirs, layout=layout,
                         peep=True)
    check(cell, arrays, direction=direction, layout=layout)


@pytest.mark.parametrize("cell", ["RNN", "GRU", "LSTM"])
def test_layer_defaults_without_optional_inputs(cell, rng):
    arrays = make_inputs(rng, cell, steps=4, batch=2, inp=3, hs=5, dirs=1, bias=False, h0=False,
                         c0=False)
    check(cell, arrays)


@pytest.mark.parametrize("cell", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_sequence_lengths_zero_padded_steps(cell, direction, rng):
    dirs = 2 if direction == "bidirectional" else 1
    arrays = make_inputs(rng, cell, steps=6, batch=4, inp=3, hs=4, dirs=dirs, lens=[6, 3, 0, 1])
    y = check(cell, arrays, direction=direction)[0]
    assert np.all(y[3:, :, 1] == 0) and np.all(y[:, :, 2] == 0)


def test_gru_linear_before_reset(rng):
    arrays = make_inputs(rng, "GRU", steps=5, batch=2, inp=4, hs=7, dirs=2)
    check("GRU", arrays, direction="bidirectional", linear_before_reset=1)


def test_lstm_clip_input_forget_and_peepholes(rng):
    arrays = make_inputs(rng, "LSTM", steps=5, batch=2, inp=4, hs=3, dirs=1, peep=True)
    arrays[0] *= 4
    check("LSTM", arrays, clip=0.8, input_forget=1)


@pytest.mark.parametrize("cell,activations,alpha,beta", [
    ("RNN", "Relu", [], []),
    ("RNN", "LeakyRelu,ScaledTanh", [0.2, 0.7], [1.5]),
    ("GRU", "HardSigmoid,Softsign", [0.3], [0.4]),
    ("LSTM", "Sigmoid,Elu,Softplus", [0.5], []),
    ("LSTM", "HardSigmoid,Affine,ThresholdedRelu", [0.25, 0.5, 0.1], [0.45, 0.2]),
], ids=lambda v: str(v))
def test_custom_activations_with_alpha_and_beta(cell, activations, alpha, beta, rng):
    dirs = 2 if cell == "RNN" and "," in activations else 1
    arrays = make_inputs(rng, cell, steps=4, batch=2, inp=3, hs=4, dirs=dirs)
    check(cell, arrays, direction="bidirectional" if dirs == 2 else "forward",
          activations=activations, activation_alpha=alpha, activation_beta=beta)


def test_one_and_many_threads_agree(rng):
    arrays = make_inputs(rng, "LSTM", steps=7, batch=9, inp=5, hs=8, dirs=2, peep=True)
    one = run_layer("LSTM", arrays, threads=1, direction="bidirectional")
    many = run_layer("LSTM", arrays, threads=4, direction="bidirectional")
    for a, b in zip(one, many):
        np.testing.assert_array_equal(a, b)


def test_rejects_weights_of_wrong_shape(rng):
    arrays = make_inputs(rng, "GRU", steps=3, batch=2, inp=4, hs=5, dirs=1)
    arrays[1] = arrays[1][:, :, :3].copy()
    with pytest.raises(nxe.ShapeMismatchError, match="'GRU'.*W"):
        run_layer("GRU", arrays)


def test_rejects_unknown_activation(rng):
    arrays = make_inputs(rng, "RNN", steps=3, batch=2, inp=4, hs=5, dirs=1)
    with pytest.raises(nxe.UnsupportedError, match="'RNN'.*Swish"):
        run_layer("RNN", arrays, activations="Swish")


def test_rejects_bad_direction(rng):
    arrays = make_inputs(rng, "LSTM", steps=3, batch=2, inp=4, hs=5, dirs=1)
    with pytest.raises(nxe.InvalidArgumentError, match="'LSTM'.*direction"):
        run_layer("LSTM", arrays, direction="sideways")


def test_sequence_length_out_of_range_fails_the_run(rng):
    arrays = make_inputs(rng, "RNN", steps=3, batch=2, inp=4, hs=5, dirs=1, lens=[3, 4])
    with pytest.raises(nxe.RunError, match="'RNN'.*sequence_lens"):
        run_layer("RNN", arrays)


def test_onnx_lstm_with_sequence_lengths_imports_and_matches_onnxruntime(rng):
    import nxe.onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    steps, batch, inp, hs = 5, 3, 4, 6
    w = (rng.standard_normal((2, 4 * hs, inp)) * 0.5).astype(np.float32)
    r = (rng.standard_normal((2, 4 * hs, hs)) * 0.5).astype(np.float32)
    b = rng.standard_normal((2, 8 * hs)).astype(np.float32)
    node = helper.make_node("LSTM", ["x", "w", "r", "b", "lens"], ["y", "y_h", "y_c"],
                            hidden_size=hs, direction="bidirectional")
    graph = helper.make_graph(
        [node], "lstm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [steps, batch, inp]),
         helper.make_tensor_value_info("lens", TensorProto.INT32, [batch])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "y_h", "y_c")],
        [numpy_helper.from_array(a, n) for a, n in ((w, "w"), (r, "r"), (b, "b"))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    x = rng.standard_normal((steps, batch, inp)).astype(np.float32)
    lens = np.array([5, 2, 4], np.int32)
    got = nxe.onnx.load(model).run(x=x, lens=lens)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = session.run(None, {"x": x, "lens": lens})
    for name, ref in zip(("y", "y_h", "y_c"), want):
        np.testing.assert_allclose(got[name], ref, rtol=RTOL, atol=ATOL)
