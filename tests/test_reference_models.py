"""The reference models (ESPCN, EDSR-baseline, a BERT encoder) against numpy forwards written
here, and the compiled-binary path: graph -> binary -> VirtualMachine -> run must give the
in-memory executable's outputs bit for bit, and run_nocopy must agree with run."""

import math

import numpy as np
import nxe
import pytest
from nxe import models

# float32 engine against a float64 reference: the largest difference may be this fraction
# of the reference's largest magnitude (sums of up to a few thousand products).
RELATIVE_TOL = 1e-4
THREADS = 1


# -- numpy forwards --------------------------------------------------------------------------


def conv_same(x, w, b):
    """Stride-1 'SAME' convolution (odd kernels), NCHW / OIHW, float64."""
    _, _, kh, kw = w.shape
    ph, pw = kh // 2, kw // 2
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    h, wd = x.shape[2], x.shape[3]
    y = np.zeros((x.shape[0], w.shape[0], h, wd))
    for ky in range(kh):
        for kx in range(kw):
            y += np.einsum("nchw,oc->nohw", xp[:, :, ky:ky + h, kx:kx + wd], w[:, :, ky, kx])
    return y + b[None, :, None, None]


def pixel_shuffle(x, r):
    """PyTorch pixel_shuffle (DepthToSpace CRD): channel c*r*r + i*r + j goes to (r*y+i, r*x+j)."""
    n, c, h, w = x.shape
    y = x.reshape(n, c // (r * r), r, r, h, w).transpose(0, 1, 4, 2, 5, 3)
    return y.reshape(n, c // (r * r), h * r, w * r)


def espcn_reference(w, x, scale):
    w = {k: v.astype(np.float64) for k, v in w.items()}
    h = np.tanh(conv_same(x.astype(np.float64), w["conv1.weight"], w["conv1.bias"]))
    h = np.tanh(conv_same(h, w["conv2.weight"], w["conv2.bias"]))
    return pixel_shuffle(conv_same(h, w["conv3.weight"], w["conv3.bias"]), scale)


def edsr_reference(w, x, num_blocks):
    w = {k: v.astype(np.float64) for k, v in w.items()}

    def conv(t, prefix):
        return conv_same(t, w[f"{prefix}.weight"], w[f"{prefix}.bias"])

    head = conv(x.astype(np.float64), "head.0")
    h = head
    for i in range(num_blocks):
        h = h + conv(np.maximum(conv(h, f"body.{i}.body.0"), 0.0), f"body.{i}.body.2")
    h = conv(h, f"body.{num_blocks}") + head
    return conv(pixel_shuffle(conv(h, "tail.0.0"), 2), "tail.1")


def layer_norm(x, scale, bias, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * scale + bias


def gelu_erf(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def bert_reference(w, embeddings, mask, config):
    w = {k: v.astype(np.float64) for k, v in w.items()}
    b, s, hidden = embeddings.shape
    nh, dh = config.heads, config.head_dim
    x = embeddings.astype(np.float64)

    def dense(t, prefix):
        return t @ w[f"{prefix}.weight"].T + w[f"{prefix}.bias"]

    def heads(t):
        return t.reshape(b, s, nh, dh).transpose(0, 2, 1, 3)

    for i in range(config.layers):
        p = f"encoder.layer.{i}"
        a = f"{p}.attention.self"
        q, k, v = (heads(dense(x, f"{a}.{part}")) for part in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(dh) + mask
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = scores / scores.sum(axis=-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, hidden)
        ln = f"{p}.attention.output.LayerNorm"
        x = layer_norm(dense(context, f"{p}.attention.output.dense") + x,
                       w[f"{ln}.weight"], w[f"{ln}.bias"], config.layer_norm_eps)
        inner = gelu_erf(dense(x, f"{p}.intermediate.dense"))
        ln = f"{p}.output.LayerNorm"
        x = layer_norm(dense(inner, f"{p}.output.dense") + x,
                       w[f"{ln}.weight"], w[f"{ln}.bias"], config.layer_norm_eps)
    return x


# -- the cases -------------------------------------------------------------------------------


def espcn_case(rng):
    weights = models.espcn_random_weights(scale=2, seed=1)
    x = rng.uniform(0.0, 1.0, (1, 1, 24, 20)).astype(np.float32)
    return models.espcn(weights, 24, 20, scale=2), [x], espcn_reference(weights, x, 2)


def edsr_case(rng):
    weights = models.edsr_random_weights(scale=2, seed=2)
    x = rng.uniform(0.0, 1.0, (1, 3, 12, 10)).astype(np.float32)
    return models.edsr_baseline(weights, 12, 10, scale=2), [x], edsr_reference(weights, x, 16)


def bert_inputs(rng, config, batch, seq_len):
    embeddings = rng.standard_normal((batch, seq_len, config.hidden)).astype(np.float32)
    mask = np.zeros((batch, 1, 1, seq_len), np.float32)
    mask[-1, ..., seq_len * 3 // 4:] = -10000.0  # padding at the end of the last sequence
    return [embeddings, mask]


def bert_small_case(rng):
    config = models.BertConfig(hidden=64, heads=4, intermediate=256, layers=2)
    weights = models.bert_random_weights(config, seed=3)
    inputs = bert_inputs(rng, config, batch=2, seq_len=16)
    return (models.bert_encoder(weights, 2, 16, config), inputs,
            bert_reference(weights, *inputs, config))


def bert_minilm_layer_case(rng):
    config = models.BertConfig(layers=1)
    weights = models.bert_random_weights(config, seed=4)
    inputs = bert_inputs(rng, config, batch=1, seq_len=16)
    return (models.bert_encoder(weights, 1, 16, config), inputs,
            bert_reference(weights, *inputs, config))


CASES = {
    "espcn_x2": espcn_case,
    "edsr_baseline_x2": edsr_case,
    "bert_2_layers": bert_small_case,
    "bert_minilm_1_layer": bert_minilm_layer_case,
}


class Compiled:
    """A case built once per module: its graph, inputs, reference and in-memory outputs."""

    def __init__(self, make):
        self.model, self.inputs, self.reference = make(np.random.default_rng(20261129))
        self.executable = self.model.graph.compile(threads=THREADS)
        self.output = self.executable.run(*self.inputs)[self.model.output]


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    return Compiled(CASES[request.param])


# -- the tests -------------------------------------------------------------------------------


def test_in_memory_run_matches_the_numpy_reference(case):
    assert case.output.shape == case.reference.shape
    scale = np.abs(case.reference).max()
    assert scale > 0.1  # the model does not collapse to zeros, so the comparison means something
    assert np.abs(case.output - case.reference).max() <= RELATIVE_TOL * scale


def test_binary_loaded_from_a_file_runs_bit_identical_to_in_memory(case, tmp_path):
    path = tmp_path / "model.nxb"
    case.model.graph.compile_to_binary(path, threads=THREADS)
    with nxe.VirtualMachine(path, threads=THREADS) as vm:
        assert vm.info()["loaded"]
        assert [name for name, _, _ in vm.inputs] == list(case.model.inputs)
        output = vm["main"](*case.inputs)
    assert np.array_equal(output, case.output)


def test_binary_loaded_from_bytes_runs_bit_identical_to_in_memory(case):
    data = case.model.graph.compile_to_binary(threads=THREADS)
    with nxe.VirtualMachine(data, threads=THREADS) as vm:
        output = vm["main"](*case.inputs)
    assert np.array_equal(output, case.output)


def test_zero_copy_run_of_the_binary_is_bit_identical_and_copies_nothing_in(case):
    with nxe.VirtualMachine(case.model.graph.compile_to_binary(threads=THREADS),
                            threads=THREADS) as vm:
        staged = [vm.create_input(index_or_name=name) for name in case.model.inputs]
        for array, value in zip(staged, case.inputs):
            array[...] = value
        output = vm.run_nocopy(*staged)
        stats = vm.stats()
        assert np.array_equal(output, case.output)
    assert stats["inputs_in_place"] == len(case.inputs)
    assert stats["inputs_copied"] == stats["bytes_copied_in"] == stats["bytes_copied_out"] == 0


def test_run_nocopy_gives_what_run_gives(case):
    views = case.executable.run_nocopy(*case.inputs)
    assert np.array_equal(views[case.model.output], case.output)


def test_written_binary_is_the_returned_bytes(tmp_path):
    model = models.espcn(models.espcn_random_weights(seed=5), 8, 8)
    path = tmp_path / "espcn.nxb"
    assert model.graph.compile_to_binary(path, threads=THREADS) == path.read_bytes()


def test_binary_keeps_running_after_the_graph_is_gone(tmp_path, rng):
    model = models.espcn(models.espcn_random_weights(seed=6), 8, 6)
    x = rng.uniform(0.0, 1.0, (1, 1, 8, 6)).astype(np.float32)
    expected = model.graph.compile(threads=THREADS).run(x)["upscaled"]
    data = model.graph.compile_to_binary(threads=THREADS)
    model.graph.close()
    with nxe.VirtualMachine(data, threads=THREADS) as vm:
        assert np.array_equal(vm["main"](x), expected)


@pytest.mark.parametrize("make_weights", [
    lambda seed: models.espcn_random_weights(scale=3, seed=seed),
    lambda seed: models.edsr_random_weights(seed=seed, num_blocks=2, features=8),
    lambda seed: models.bert_random_weights(models.BertConfig(32, 2, 64, 1), seed=seed),
], ids=["espcn", "edsr", "bert"])
def test_random_weights_depend_only_on_the_seed(make_weights):
    first, again, other = make_weights(7), make_weights(7), make_weights(8)
    assert first.keys() == again.keys() == other.keys()
    assert all(v.dtype == np.float32 for v in first.values())
    assert all(np.array_equal(first[k], again[k]) for k in first)
    assert not all(np.array_equal(first[k], other[k]) for k in first)


def test_model_input_and_output_shapes_follow_the_arguments():
    espcn = models.espcn(models.espcn_random_weights(scale=3), 10, 7, scale=3, batch=2)
    assert espcn.graph.compile(threads=THREADS).outputs == [("upscaled", (2, 1, 30, 21), "f32")]
    edsr = models.edsr_baseline(models.edsr_random_weights(scale=4, num_blocks=1, features=8),
                                5, 4, scale=4, num_blocks=1, features=8)
    assert edsr.graph.compile(threads=THREADS).outputs == [("upscaled", (1, 3, 20, 16), "f32")]
    config = models.BertConfig(hidden=32, heads=2, intermediate=64, layers=1)
    bert = models.bert_encoder(models.bert_random_weights(config), 3, 5, config)
    exe = bert.graph.compile(threads=THREADS)
    assert exe.inputs == [("embeddings", (3, 5, 32), "f32"),
                          ("attention_mask", (3, 1, 1, 5), "f32")]
    assert exe.outputs == [("hidden_states", (3, 5, 32), "f32")]


def test_missing_weight_is_named():
    weights = models.espcn_random_weights()
    del weights["conv2.bias"]
    with pytest.raises(KeyError, match="conv2.bias"):
        models.espcn(weights, 8, 8)


def test_weight_of_the_wrong_shape_is_named():
    weights = models.espcn_random_weights(scale=2)
    with pytest.raises(ValueError, match=r"conv3.weight.*\[4, 32, 3, 3\]"):
        models.espcn(weights, 8, 8, scale=3)


def test_bert_hidden_size_must_split_into_heads():
    with pytest.raises(ValueError, match="multiple of heads"):
        models.BertConfig(hidden=30, heads=4)


def test_edsr_mean_shift_is_subtracted_from_the_input_and_added_to_the_output(rng):
    weights = models.edsr_random_weights(scale=2, seed=3)
    mean = (0.45, 0.43, 0.40)
    x = rng.uniform(0.0, 1.0, (1, 3, 12, 10)).astype(np.float32)
    built = models.edsr_baseline(weights, 12, 10, scale=2, rgb_mean=mean)
    got = built.graph.compile().run({"rgb": x})["upscaled"]
    shift = np.asarray(mean).reshape(1, 3, 1, 1)
    want = edsr_reference(weights, x - shift, 16) + shift
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def reach(built, channels, size, scale):
    """How far, in input pixels, the outputs a one-pixel change at the centre moves reach. The
    direct convolution computes every output from its receptive field alone; Winograd's
    rounding would reach a few pixels further (its 4x4 tiles)."""
    exe = built.graph.compile(winograd="off")
    x = np.random.default_rng(4).uniform(0.2, 0.8, (1, channels, size, size)).astype(np.float32)
    base = exe.run({built.inputs[0]: x})[built.output]
    x[..., size // 2, size // 2] += 0.5
    moved = np.abs(exe.run({built.inputs[0]: x})[built.output] - base).max(axis=(0, 1)) > 0
    rows, cols = np.nonzero(moved)
    centre = size // 2
    return max(np.abs(rows // scale - centre).max(), np.abs(cols // scale - centre).max())


@pytest.mark.parametrize("arch,scale", [("espcn", 2), ("espcn", 4), ("edsr", 2), ("edsr", 4)])
def test_receptive_radius_bounds_what_one_input_pixel_reaches(arch, scale):
    # EDSR with 2 blocks keeps the frame small; the radius counts blocks like any other conv.
    if arch == "espcn":
        radius, channels = models.espcn_receptive_radius(scale), 1
        size = 4 * radius + 1
        built = models.espcn(models.espcn_random_weights(scale, seed=5), size, size, scale)
    else:
        radius, channels = models.edsr_receptive_radius(scale, num_blocks=2), 3
        size = 4 * radius + 1
        weights = models.edsr_random_weights(scale, seed=5, num_blocks=2)
        built = models.edsr_baseline(weights, size, size, scale, num_blocks=2)
    reached = reach(built, channels, size, scale)
    # Conservative: never short (tiles would differ), at most one pixel per upscaled conv over.
    assert radius - 2 <= reached <= radius
