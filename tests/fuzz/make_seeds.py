"""Writes small valid model files, compiled binaries, SR model metadata, SR frame descriptions,
image files and graph descriptions as seed corpora for the fuzzers:
python tests/fuzz/make_seeds.py OUT_DIR  ->  OUT_DIR/model/*.nxm, OUT_DIR/binary/*.nxb,
OUT_DIR/sr_metadata/*.json (the shipped SR models' metadata), OUT_DIR/sr_frames/* (inputs of
fuzz_sr_frames.c), OUT_DIR/images/*.png|jpg|y4m (inputs of tools/fuzz_images.py),
OUT_DIR/graph/* (one byte string per registered op for tests/fuzz/fuzz_graph.c),
OUT_DIR/tokenizer/* (small WordPiece and byte-level BPE tokenizer.json files, 0xFF 0x00, a text:
tests/fuzz/fuzz_tokenizer.c)"""

import io
import json
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
import nxe
import nxe.sr


def seed_graphs():
    rng = np.random.default_rng(0)
    g = nxe.Graph()
    x = g.input("x", (1, 2, 5, 4), "f32")
    w = g.constant(rng.standard_normal((3, 2, 3, 3)).astype(np.float32), name="w")
    b = g.constant(rng.standard_normal(3).astype(np.float32), name="b")
    y = g.Relu(g.Conv2d(x, w, b, pads=[1, 1, 1, 1]))
    g.mark_output(g.DepthToSpace(g.Concat(y, y, y, y, axis=1), blocksize=2, mode="CRD"), name="y")
    yield "conv", g

    g = nxe.Graph()
    x = g.input("x", (2, 3, 8), "f32")
    w = g.constant(rng.standard_normal((8, 8)).astype(np.float32), name="w")
    h = g.LayerNorm(g.MatMul(x, w), g.constant(np.ones(8, np.float32), name="s"), None)
    g.mark_output(g.Softmax(g.Gelu(h), axis=-1), name="y")
    q = g.tensor(name="q", dtype="u8", kind="output")
    q.set_quant_asymmetric(0.05, 128)
    g.op("QuantizeLinear", [h], outputs=[q])
    yield "matmul", g

    g = nxe.Graph()
    x = g.input("x", (4,), "f32")
    state = g.variable(np.zeros(4, np.float32), name="state")
    g.mark_output(g.Add(x, state), name="y")
    yield "variable", g


# ---- SR frames: the byte layout fuzz_sr_frames.c decodes ----

SIDES = [1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 13, 16, 17, 24, 25]  # its small sides, in order
TILES = [0, -1, 8, 9, 10, 12, 16, 24]
OVERLAPS = [-1, 0, 1, 2, 3, 4, 5, 7]
EXTREME_SIDE = {"int32_max": 244, "int32_min": 245, "past_limit": 243}  # selectors >= 240
PLANES = {code: 1 if code == 1 or code >= 9 else 2 if code == 8 else 3 for code in range(1, 13)}


def pick(table, value, escape):
    """The selector byte for a table value, or the escape byte and the value as 8 bytes."""
    if value in table:
        return bytes([table.index(value)])
    return bytes([escape]) + struct.pack(">q", value)


def sr_frame_seed(fmt: int, width, height, *, tile=10, overlap=-1, precision=0, strides=b"",
                  out_strides=b"", matrix=0, colour_range=0, out_size=b"\x00") -> bytes:
    """Options, an input frame of format code `fmt`, its output (stride mode bytes per plane:
    0 exact, 8 + pad padded, 10 + pad bottom-up, 13 + index an extreme, 14 + 8 bytes any)."""
    def side(v):
        return bytes([EXTREME_SIDE[v]]) if isinstance(v, str) else bytes([SIDES.index(v)])

    return (pick(TILES, tile, 224) + pick(OVERLAPS, overlap, 224) + bytes([precision])
            + bytes([fmt - 1]) + side(width) + side(height) + bytes([matrix, colour_range])
            + (strides or bytes(PLANES.get(fmt, 0))) + b"\x00" + out_size
            + bytes([matrix, colour_range]) + (out_strides or bytes(PLANES.get(fmt, 0)))
            + b"\x2a" + bytes(32))


def sr_frame_seeds():
    for fmt in range(1, 13):
        yield f"f{fmt}-13x9-tiled", sr_frame_seed(fmt, 13, 9)
        yield f"f{fmt}-5x3-untiled", sr_frame_seed(fmt, 5, 3, tile=-1, matrix=1, colour_range=1)
        yield f"f{fmt}-17x11-relax", sr_frame_seed(fmt, 17, 11, tile=12, overlap=4, precision=1)
        planes = PLANES[fmt]
        yield f"f{fmt}-padded-bottom-up", sr_frame_seed(
            fmt, 11, 7, strides=b"\x08\x05\x0a\x03\x0a\x07"[:2 * planes],
            out_strides=b"\x0a\x01\x08\x02\x0a\x00"[:2 * planes])
    yield "overlap-2^30", sr_frame_seed(2, 25, 9, overlap=1 << 30)
    yield "overlap-2^31-1", sr_frame_seed(2, 25, 9, overlap=(1 << 31) - 1)
    yield "tile-int32-max", sr_frame_seed(1, 9, 9, tile=(1 << 31) - 1)
    yield "width-int32-max", sr_frame_seed(1, "int32_max", 4)
    yield "height-int32-min", sr_frame_seed(1, 4, "int32_min")
    yield "side-past-limit", sr_frame_seed(9, "past_limit", 2)
    yield "stride-int64-max", sr_frame_seed(1, 4, 4, strides=b"\x0d\x00")
    yield "stride-minus-int64-max", sr_frame_seed(1, 4, 4, strides=b"\x0d\x02")
    yield "stride-product-overflows", sr_frame_seed(
        2, 9, 9, strides=b"\x0e" + struct.pack(">q", 1 << 61) + b"\x00\x00")
    yield "output-too-wide", sr_frame_seed(2, 9, 9, out_size=b"\xf1")


# ---- images: PNG of each colour type, depth and row filter, JPEG, Y4M of each colour space ----

def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def png_bytes(rows: list[bytes], width: int, height: int, depth: int, color: int, bpp: int,
              extra: list[tuple[bytes, bytes]] = ()) -> bytes:
    """A PNG whose rows cycle through the five filter types (row y uses filter y % 5)."""
    def chunk(kind, body):
        crc = struct.pack(">I", zlib.crc32(kind + body))
        return struct.pack(">I", len(body)) + kind + body + crc

    raw, prior = bytearray(), bytes(len(rows[0]))
    for y, row in enumerate(rows):
        kind = y % 5
        out = bytearray([kind])
        for x, value in enumerate(row):
            left = row[x - bpp] if x >= bpp else 0
            up = prior[x]
            upper_left = prior[x - bpp] if x >= bpp else 0
            predictor = [0, left, up, (left + up) >> 1, _paeth(left, up, upper_left)][kind]
            out.append((value - predictor) & 0xFF)
        raw += out
        prior = row
    header = struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + b"".join(chunk(kind, body) for kind, body in extra)
            + chunk(b"IDAT", zlib.compress(bytes(raw))) + chunk(b"IEND", b""))


def image_seeds():
    rng = np.random.default_rng(1)
    for color, channels in ((0, 1), (2, 3), (4, 2), (6, 4)):
        for depth in (8, 16):
            width, height = 7, 6
            data = rng.integers(0, 256, (height, width * channels * depth // 8), np.uint8)
            yield (f"png-c{color}-d{depth}.png",
                   png_bytes([r.tobytes() for r in data], width, height, depth, color,
                             channels * depth // 8))
    for depth in (1, 2, 4, 8):
        width, height = 9, 5
        row_bytes = (width * depth + 7) // 8
        data = rng.integers(0, 256, (height, row_bytes), np.uint8)
        palette = rng.integers(0, 256, 3 << depth, np.uint8).tobytes()
        extra = [(b"PLTE", palette), (b"tRNS", bytes([0, 128, 255]))]
        yield (f"png-palette-d{depth}.png",
               png_bytes([r.tobytes() for r in data], width, height, depth, 3, 1, extra))
    from PIL import Image

    for mode, shape in (("L", (8, 8)), ("RGB", (9, 17, 3))):
        buffer = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, shape, np.uint8)).save(buffer, "JPEG", quality=80)
        yield f"jpeg-{mode.lower()}.jpg", buffer.getvalue()
    buffer = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (16, 16, 3), np.uint8)).save(buffer, "JPEG",
                                                                      progressive=True)
    yield "jpeg-progressive.jpg", buffer.getvalue()
    from nxe import images

    for tag, fmt in (("420jpeg", "yuv420p"), ("422", "yuv422p"), ("444", "yuv444p"),
                     ("mono", "gray8"), ("420p10", "yuv420p10"), ("444p10", "yuv444p10")):
        stream = io.BytesIO()
        header = images.Y4mHeader(5, 3, fmt, "30000:1001", tag == "444", ("Ip", "A1:1"))
        images.write_y4m_header(stream, header)
        top = 1023 if fmt.endswith("10") else 255
        dtype = np.uint16 if fmt.endswith("10") else np.uint8
        for _ in range(2):
            images.write_y4m_frame(stream, [rng.integers(0, top + 1, shape).astype(dtype)
                                            for shape in nxe.sr.plane_shapes(fmt, 5, 3)])
        yield f"y4m-{tag}.y4m", stream.getvalue()


def write_graph_seeds(out_dir: str) -> None:
    """One seed per registered op: fuzz_graph.c reads a byte for the op count (0: one op), four
    big-endian bytes choosing the op by registry index, then the op's attributes, inputs and
    outputs from bytes that are random here and mutated by the fuzzer."""
    graph_dir = Path(out_dir, "graph")
    graph_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for index, schema in enumerate(nxe.ops()):
        rest = rng.integers(0, 256, 96, dtype=np.uint8).tobytes()
        (graph_dir / schema["name"]).write_bytes(bytes([0]) + index.to_bytes(4, "big") + rest)


def tokenizer_seeds():
    """Small WordPiece tokenizer.json files in the layout the `tokenizers` package writes, each
    followed by a text that exercises a component."""
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words = ["hello", "world", "un", "##aff", "##able", "a", "##b", "cafe", "\u4e2d", ".", ",",
             "i", "##\u0307", "\u00df", "!", "##s"]
    vocab = {token: i for i, token in enumerate(specials + words)}
    added = [{"id": i, "content": t, "single_word": False, "lstrip": t == "[MASK]",
              "rstrip": t == "[MASK]", "normalized": False, "special": True}
             for i, t in enumerate(specials)]
    added.append({"id": len(vocab), "content": "Hello World", "single_word": False,
                  "lstrip": False, "rstrip": True, "normalized": True, "special": False})
    template = {"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                           {"Sequence": {"id": "A", "type_id": 0}},
                           {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                "special_tokens": {t: {"id": t, "ids": [vocab[t]], "tokens": [t]}
                                   for t in ("[CLS]", "[SEP]")}}
    texts = ["Hello, world! unaffable Caf\u00e9 \u4e2d\u6587 [MASK] stra\u00dfe \u0130",
             "a\u0301\u0323b \u200b\x00\x7f \U0001F600 [CLS][SEP]", "", "x" * 150]
    for name, lowercase, processor, truncation in (
            ("uncased", True, template, {"max_length": 8, "strategy": "LongestFirst",
                                         "stride": 0, "direction": "Right"}),
            ("cased", False, {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
             None),
            ("plain", True, None, {"max_length": 5, "direction": "Left"})):
        tokenizer = {"version": "1.0", "truncation": truncation, "padding": None,
                     "added_tokens": added,
                     "normalizer": {"type": "BertNormalizer", "clean_text": True,
                                    "handle_chinese_chars": True, "strip_accents": None,
                                    "lowercase": lowercase},
                     "pre_tokenizer": {"type": "BertPreTokenizer"}, "post_processor": processor,
                     "decoder": None,
                     "model": {"type": "WordPiece", "unk_token": "[UNK]",
                               "continuing_subword_prefix": "##",
                               "max_input_chars_per_word": 100, "vocab": vocab}}
        for k, text in enumerate(texts):
            yield f"{name}-{k}", (json.dumps(tokenizer).encode() + b"\xff\x00"
                                  + text.encode("utf-8"))


def byte_level_alphabet() -> list[str]:
    """GPT-2's byte-level characters in byte order: printable Latin-1 bytes stand for
    themselves, the others for 256 + their rank among them."""
    printable = [b for b in range(256) if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or b >= 0xAE]
    others = [b for b in range(256) if b not in printable]
    return [chr(b) if b in printable else chr(256 + others.index(b)) for b in range(256)]


def bpe_tokenizer_seeds():
    """Small byte-level BPE tokenizer.json files (Whisper-like with a template, GPT-2-like with
    a prefix space and offset trimming, one whose vocabulary lacks some bytes and has an
    unknown token), each followed by a text that exercises the split pattern."""
    alphabet = byte_level_alphabet()
    words = ["he", "ll", "hell", "hello", "\u0120hello", "\u0120w", "or", "\u0120wor", "ld",
             "\u0120world", "'s", "\u0120\u0120", "\u010a\u010a"]
    merges = [("h", "e"), ("l", "l"), ("he", "ll"), ("hell", "o"), ("\u0120", "hello"),
              ("\u0120", "w"), ("o", "r"), ("\u0120w", "or"), ("l", "d"), ("\u0120wor", "ld"),
              ("'", "s"), ("\u0120", "\u0120"), ("\u010a", "\u010a")]
    specials = ["<|endoftext|>", "<|en|>"]
    texts = ["hello world, it's   hello\n\n 123 h\u00e9llo \U0001F600<|en|>x<|endoftext|>",
             "  lead and trail  \n", "", "don't've 'S 're \u3000\t\u00a0", "a" * 300]
    level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
             "use_regex": True}
    template = {"type": "TemplateProcessing",
                "single": [{"Sequence": {"id": "A", "type_id": 0}},
                           {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}],
                "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                         {"Sequence": {"id": "B", "type_id": 1}}],
                "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [270],
                                                     "tokens": ["<|endoftext|>"]}}}
    for name, skip, processor, model in (
            ("whisper", 0, template, {}),
            ("gpt2", 0, dict(level, add_prefix_space=True), {"ignore_merges": True}),
            ("unknown", 9, None, {"unk_token": "<unk>", "fuse_unk": True})):
        vocab = {c: i for i, c in enumerate(alphabet) if i >= skip}
        vocab.update({w: 256 + i for i, w in enumerate(words + ["<unk>"])})
        added = [{"id": 270 + i, "content": t, "single_word": False, "lstrip": False,
                  "rstrip": False, "normalized": False, "special": True}
                 for i, t in enumerate(specials)]
        body = {"type": "BPE", "dropout": None, "unk_token": None,
                "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": False,
                "vocab": vocab,
                "merges": [f"{a} {b}" for a, b in merges] if name != "gpt2" else merges}
        body.update(model)
        tokenizer = {"version": "1.0", "truncation": None, "padding": None,
                     "added_tokens": added, "normalizer": None,
                     "pre_tokenizer": dict(level, add_prefix_space=name == "gpt2",
                                           use_regex=name != "unknown"),
                     "post_processor": processor, "decoder": level, "model": body}
        for k, text in enumerate(texts):
            yield f"bpe-{name}-{k}", (json.dumps(tokenizer).encode() + b"\xff\x00"
                                      + text.encode("utf-8"))


def main(out_dir: str) -> None:
    model_dir = Path(out_dir, "model")
    binary_dir = Path(out_dir, "binary")
    model_dir.mkdir(parents=True, exist_ok=True)
    binary_dir.mkdir(parents=True, exist_ok=True)
    for name, graph in seed_graphs():
        nxe.save_model(graph, model_dir / f"{name}.nxm", metadata={"seed": name})
        graph.compile_to_binary(binary_dir / f"{name}.nxb", threads=1)
    metadata_dir = Path(out_dir, "sr_metadata")
    metadata_dir.mkdir(parents=True, exist_ok=True)
    for name in nxe.sr.builtin_models():
        with nxe.Model(nxe.sr.model_path(name)) as model:
            text = json.dumps(model.metadata, sort_keys=True, separators=(",", ":"))
        (metadata_dir / f"{name}.json").write_text(text)
    for kind, seeds in (("sr_frames", sr_frame_seeds()), ("images", image_seeds())):
        folder = Path(out_dir, kind)
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in seeds:
            (folder / name).write_bytes(data)
    write_graph_seeds(out_dir)
    tokenizer_dir = Path(out_dir, "tokenizer")
    tokenizer_dir.mkdir(parents=True, exist_ok=True)
    for name, data in (*tokenizer_seeds(), *bpe_tokenizer_seeds()):
        (tokenizer_dir / name).write_bytes(data)


if __name__ == "__main__":
    main(sys.argv[1])
