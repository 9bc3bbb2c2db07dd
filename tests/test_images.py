"""nxe.images reads every PNG colour type, bit depth, transparency and interlace to the same
array whether or not Pillow is installed, turns JPEGs upright by their EXIF orientation, reads
back what it writes, and names the file in every decode error.

The PNGs are written here, independently of the reader: by Pillow where it can write the kind,
and chunk by chunk (zlib, struct, a filter type drawn per row, the Adam7 pass pattern as the
PNG specification draws it) for every kind. Each PNG test reads with Pillow importable and
with Pillow made absent (its modules set to None in sys.modules, so `import PIL` fails)."""

from __future__ import annotations

import contextlib
import importlib
import io
import struct
import sys
import zlib

import numpy as np
import pytest
from nxe import images
from PIL import Image

SIGNATURE = b"\x89PNG\r\n\x1a\n"
GRAY, RGB, PALETTE, GRAY_ALPHA, RGBA = 0, 2, 3, 4, 6
CHANNELS = {GRAY: 1, RGB: 3, PALETTE: 1, GRAY_ALPHA: 2, RGBA: 4}
# The Adam7 pass of each pixel of an 8x8 block, as the PNG specification draws it.
ADAM7 = np.array([[1, 6, 4, 6, 2, 6, 4, 6], [7] * 8, [5, 6, 5, 6, 5, 6, 5, 6], [7] * 8,
                  [3, 6, 4, 6, 3, 6, 4, 6], [7] * 8, [5, 6, 5, 6, 5, 6, 5, 6], [7] * 8])


@pytest.fixture(params=["with Pillow", "without Pillow"])
def reading(request, monkeypatch):
    """A context in which nxe.images runs with Pillow importable, or (the second run) with
    every import of it failing; the test writes its files with Pillow outside it."""
    @contextlib.contextmanager
    def context():
        if request.param == "with Pillow":
            yield request.param
            return
        with monkeypatch.context() as patch:
            for name in [m for m in sys.modules if m == "PIL" or m.startswith("PIL.")]:
                patch.setitem(sys.modules, name, None)
            patch.setitem(sys.modules, "PIL", None)
            with pytest.raises(ImportError):
                importlib.import_module("PIL.Image")
            yield request.param
    return context


# ---- an independent PNG encoder ----

def chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def pack_row(row: np.ndarray, depth: int) -> bytes:
    """One row of samples (pixels x channels) as the PNG's bytes: big-endian 16-bit words,
    bytes, or sub-byte samples packed from the high bit, the last byte padded with zeros."""
    values = [int(v) for v in row.reshape(-1)]
    if depth == 16:
        return b"".join(v.to_bytes(2, "big") for v in values)
    if depth == 8:
        return bytes(values)
    bits = "".join(format(v, f"0{depth}b") for v in values)
    bits += "0" * (-len(bits) % 8)
    return bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits), 8))


def paeth(left: int, up: int, upper_left: int) -> int:
    estimate = left + up - upper_left
    distances = [abs(estimate - left), abs(estimate - up), abs(estimate - upper_left)]
    return [left, up, upper_left][distances.index(min(distances))]


def filter_rows(rows: list[bytes], bpp: int, rng: np.random.Generator) -> bytes:
    """Each row behind a filter type drawn at random, computed byte by byte."""
    out, prior = bytearray(), bytes(len(rows[0]))
    for row in rows:
        kind = int(rng.integers(0, 5))
        out.append(kind)
        for x, value in enumerate(row):
            left = row[x - bpp] if x >= bpp else 0
            upper_left = prior[x - bpp] if x >= bpp else 0
            predictor = [0, left, prior[x], (left + prior[x]) // 2,
                         paeth(left, prior[x], upper_left)][kind]
            out.append((value - predictor) % 256)
        prior = row
    return bytes(out)


def adam7_passes(height: int, width: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The rows and columns of each non-empty pass, in pass order."""
    pattern = ADAM7[np.arange(height)[:, None] % 8, np.arange(width)[None, :] % 8]
    passes = []
    for number in range(1, 8):
        mask = pattern == number
        rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
        if rows.size and cols.size:
            assert mask[np.ix_(rows, cols)].all() and mask.sum() == rows.size * cols.size
            passes.append((rows, cols))
    return passes


def encode_png(samples: np.ndarray, depth: int, color: int, *, palette: bytes | None = None,
               transparency: bytes | None = None, interlace: bool = False,
               seed: int = 0) -> bytes:
    """samples: (H, W, channels) integers at `depth` bits (palette indices for PALETTE)."""
    height, width, channels = samples.shape
    assert channels == CHANNELS[color]
    rng = np.random.default_rng(seed)
    bpp = max(1, channels * depth // 8)
    parts = ([(np.arange(height), np.arange(width))] if not interlace
             else adam7_passes(height, width))
    data = b"".join(filter_rows([pack_row(r, depth) for r in samples[np.ix_(rows, cols)]],
                                bpp, rng) for rows, cols in parts)
    compressed = zlib.compress(data, 9)
    third = len(compressed) // 3 + 1  # several IDAT chunks, as large files have
    body = SIGNATURE + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, color, 0,
                                                  0, int(interlace)))
    if palette is not None:
        body += chunk(b"PLTE", palette)
    if transparency is not None:
        body += chunk(b"tRNS", transparency)
    body += b"".join(chunk(b"IDAT", compressed[i:i + third])
                     for i in range(0, len(compressed), third))
    return body + chunk(b"IEND", b"")


# ---- what the contract (nxe.images' docstring) says each file reads as ----

def to_8_bits(values: np.ndarray, depth: int) -> np.ndarray:
    """Samples of `depth` bits scaled to 0..255, 16-bit ones to the nearest (no value of
    x * 255 / 65535 lies half-way between two integers)."""
    return np.rint(np.asarray(values, np.float64) * 255 / (2 ** depth - 1)).astype(np.uint8)


def expected_pixels(samples, depth, color, palette=None, transparency=None, keep_16bit=False):
    if color == PALETTE:
        table = np.frombuffer(palette, np.uint8).reshape(-1, 3)
        rgb = table[samples[..., 0]]
        if transparency is None:
            return rgb
        alpha = np.full(len(table), 255, np.uint8)
        alpha[:len(transparency)] = list(transparency)
        return np.dstack([rgb, alpha[samples[..., 0]]])
    top = 2 ** depth - 1
    if transparency is not None:
        key = [int.from_bytes(transparency[i:i + 2], "big") for i in range(0, len(transparency),
                                                                           2)]
        samples = np.dstack([samples, np.where((samples == key).all(axis=2), 0, top)])
    if keep_16bit and depth == 16:
        out = samples.astype(np.uint16)
    else:
        out = to_8_bits(samples, depth)
    if out.shape[2] == 1:
        return out[..., 0]
    if out.shape[2] == 2:
        return np.dstack([out[..., 0]] * 3 + [out[..., 1]])
    return out


def test_16_bit_samples_round_to_the_nearest_8_bit_value():
    every = np.arange(65536, dtype=np.uint16)
    np.testing.assert_array_equal(images.to_uint8(every), np.rint(every / 257))
    eight = np.arange(256, dtype=np.uint8)
    assert images.to_uint8(eight) is eight
    with pytest.raises(ValueError, match="expected uint8 or uint16 samples, got float32"):
        images.to_uint8(np.zeros(3, np.float32))


# ---- every colour type, bit depth, transparency and interlace ----

KINDS = ([(GRAY, d) for d in (1, 2, 4, 8, 16)] + [(RGB, d) for d in (8, 16)]
         + [(PALETTE, d) for d in (1, 2, 4, 8)] + [(GRAY_ALPHA, d) for d in (8, 16)]
         + [(RGBA, d) for d in (8, 16)])
SIZES = [(11, 13), (1, 1), (3, 2), (9, 17)]  # (3, 2) and (1, 1) leave Adam7 passes empty


def random_png(color, depth, size, with_transparency, interlace, seed):
    """(file bytes, samples, palette, transparency) of a random image; the colour key of a
    tRNS chunk is a colour the image holds, so that some pixels turn transparent."""
    rng = np.random.default_rng(seed)
    height, width = size
    if color == PALETTE:
        entries = int(rng.integers(1, 2 ** depth + 1))
        samples = rng.integers(0, entries, (height, width, 1))
        palette = rng.integers(0, 256, 3 * entries, np.uint8).tobytes()
        transparency = (rng.integers(0, 256, int(rng.integers(1, entries + 1)), np.uint8)
                        .tobytes() if with_transparency else None)
    else:
        samples = rng.integers(0, 2 ** depth, (height, width, CHANNELS[color]))
        palette = None
        transparency = None
        if with_transparency:
            samples[0, 0] = samples[-1, -1]
            transparency = b"".join(int(v).to_bytes(2, "big") for v in samples[0, 0])
    data = encode_png(samples, depth, color, palette=palette, transparency=transparency,
                      interlace=interlace, seed=seed)
    return data, samples, palette, transparency


CASES = [(color, depth, size, trns, interlace)
         for color, depth in KINDS for size in SIZES for interlace in (False, True)
         for trns in ((False, True) if color in (GRAY, RGB, PALETTE) else (False,))]


@pytest.mark.parametrize("color,depth,size,with_transparency,interlace", CASES)
def test_every_png_kind_reads_as_the_contract_says(tmp_path, reading, color, depth, size,
                                                   with_transparency, interlace):
    seed = hash((color, depth, size, with_transparency, interlace)) % 2**32
    data, samples, palette, transparency = random_png(color, depth, size, with_transparency,
                                                      interlace, seed)
    path = tmp_path / "image.png"
    path.write_bytes(data)
    want = expected_pixels(samples, depth, color, palette, transparency)
    want_16 = expected_pixels(samples, depth, color, palette, transparency, keep_16bit=True)
    with reading():
        read = [images.read_png(path), images.read_image(path)]
        read_16 = [images.read_png(path, keep_16bit=True),
                   images.read_image(path, keep_16bit=True)]
    for got in read:
        assert got.dtype == np.uint8 and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    for got in read_16:
        assert got.dtype == want_16.dtype == (np.uint16 if depth == 16 else np.uint8)
        np.testing.assert_array_equal(got, want_16)
        np.testing.assert_array_equal(images.to_uint8(got), want)


@pytest.mark.parametrize("color", [GRAY, RGB, PALETTE, RGBA])
@pytest.mark.parametrize("shape", [(2100, 3), (3, 700), (300, 290)])  # bands of 1024 rows
def test_pngs_taller_or_wider_than_a_decoding_band_read_whole(tmp_path, reading, color,
                                                             shape):
    data, samples, palette, _ = random_png(color, 8, shape, False, False, seed=sum(shape))
    path = tmp_path / "big.png"
    path.write_bytes(data)
    with reading():
        got = images.read_image(path)
    np.testing.assert_array_equal(got, expected_pixels(samples, 8, color, palette))


def ihdr(path) -> tuple[int, int, int]:
    """(bit depth, colour type, interlace) of a PNG file, to check what Pillow wrote."""
    data = path.read_bytes()
    assert data[12:16] == b"IHDR"
    return data[24], data[25], data[28]


def pillow_cases(rng):
    """(Pillow image, save options, (depth, colour type), expected array) for each PNG kind
    Pillow writes; the expectations come from the arrays handed to Pillow."""
    gray = rng.integers(0, 256, (9, 14), np.uint8)
    rgb = rng.integers(0, 256, (9, 14, 3), np.uint8)
    rgba = rng.integers(0, 256, (9, 14, 4), np.uint8)
    deep = rng.integers(0, 65536, (9, 14), np.uint16)
    bits = rng.integers(0, 2, (9, 14)).astype(bool)
    gray_alpha = rng.integers(0, 256, (9, 14, 2), np.uint8)
    yield (Image.fromarray(gray), {}, (8, GRAY), gray)
    yield (Image.fromarray(bits), {}, (1, GRAY), np.where(bits, 255, 0).astype(np.uint8))
    yield (Image.fromarray(deep), {}, (16, GRAY), to_8_bits(deep, 16))
    yield (Image.fromarray(rgb), {}, (8, RGB), rgb)
    yield (Image.fromarray(rgba), {}, (8, RGBA), rgba)
    yield (Image.fromarray(gray_alpha, "LA"), {}, (8, GRAY_ALPHA),
           np.dstack([gray_alpha[..., 0]] * 3 + [gray_alpha[..., 1]]))
    key = int(gray[2, 3])
    yield (Image.fromarray(gray), {"transparency": key}, (8, GRAY),
           np.dstack([gray] * 3 + [np.where(gray == key, 0, 255).astype(np.uint8)]))
    color_key = tuple(int(v) for v in rgb[4, 5])
    yield (Image.fromarray(rgb), {"transparency": color_key}, (8, RGB),
           np.dstack([rgb, np.where((rgb == color_key).all(axis=2), 0, 255).astype(np.uint8)]))
    for depth in (1, 2, 4, 8):
        entries = 2 ** depth
        indices = rng.integers(0, entries, (9, 14)).astype(np.uint8)
        table = rng.integers(0, 256, (entries, 3), np.uint8)
        alpha = rng.integers(0, 256, entries, np.uint8)
        image = Image.fromarray(indices, "P")
        image.putpalette(table.reshape(-1).tolist())
        yield (image, {"bits": depth, "transparency": alpha.tobytes()}, (depth, PALETTE),
               np.dstack([table[indices], alpha[indices]]))
        yield (image, {"bits": depth}, (depth, PALETTE), table[indices])


def test_pngs_pillow_writes_read_the_same_with_and_without_pillow(tmp_path, reading):
    for number, (image, options, kind, want) in enumerate(pillow_cases(
            np.random.default_rng(7))):
        path = tmp_path / f"pillow{number}.png"
        image.save(path, **options)
        assert ihdr(path)[:2] == kind, (number, options)
        with reading():
            got = images.read_image(path)
        assert got.dtype == np.uint8 and got.shape == want.shape, (number, options)
        np.testing.assert_array_equal(got, want, err_msg=f"{kind} {options}")


# ---- JPEG ----

def upright(array: np.ndarray, orientation: int) -> np.ndarray:
    """The stored pixels as EXIF orientation `orientation` says to show them: 2 mirrors left
    to right, 3 turns 180 degrees, 4 mirrors top to bottom, 5 mirrors left to right and turns
    270 degrees clockwise, 6 turns 90 clockwise, 7 mirrors and turns 90 clockwise, 8 turns
    270 clockwise."""
    clockwise = {1: (False, 0), 2: (True, 0), 3: (False, 2), 4: (True, 2), 5: (True, 3),
                 6: (False, 1), 7: (True, 1), 8: (False, 3)}
    mirror, quarter_turns = clockwise[orientation]
    return np.rot90(array[:, ::-1] if mirror else array, -quarter_turns)


def smooth_photo(height: int, width: int, channels: int) -> np.ndarray:
    yy, xx = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")
    planes = [40 + 3 * xx + yy, 200 - 2 * yy + xx // 2, 90 + xx + 2 * yy][:channels]
    return np.clip(np.dstack(planes), 0, 255).astype(np.uint8).squeeze()


@pytest.mark.parametrize("orientation", range(1, 9))
@pytest.mark.parametrize("channels", [1, 3])
def test_jpeg_is_turned_upright_by_its_exif_orientation(tmp_path, orientation, channels):
    path = tmp_path / "photo.jpg"
    exif = Image.Exif()
    exif[0x0112] = orientation
    Image.fromarray(smooth_photo(24, 40, channels)).save(path, quality=95, exif=exif)
    with Image.open(path) as stored:
        assert stored.getexif()[0x0112] == orientation
        pixels = np.asarray(stored)  # as stored: Pillow's open() does not turn images
    got = images.read_image(path)
    assert got.dtype == np.uint8 and got.ndim == (2 if channels == 1 else 3)
    np.testing.assert_array_equal(got, upright(pixels, orientation))
    assert got.shape[:2] == ((24, 40) if orientation < 5 else (40, 24))


def test_jpeg_without_pillow_names_the_extra_to_install(tmp_path, monkeypatch):
    path, out = tmp_path / "photo.jpg", tmp_path / "out.jpeg"
    Image.fromarray(smooth_photo(8, 8, 3)).save(path)
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(images.ImageFileError) as info:
        images.read_image(path)
    assert str(info.value) == f"{path}: reading JPEG files needs Pillow: pip install 'nxe[image]'"
    with pytest.raises(images.ImageFileError) as info:
        images.write_image(out, smooth_photo(8, 8, 3))
    assert str(info.value) == f"{out}: writing JPEG files needs Pillow: pip install 'nxe[image]'"
    assert not out.exists()


def test_files_are_told_apart_by_their_bytes_not_their_suffix(tmp_path, reading):
    data, samples, _, _ = random_png(RGB, 8, (5, 6), False, False, seed=3)
    (tmp_path / "png.jpg").write_bytes(data)
    Image.fromarray(smooth_photo(8, 8, 1)).save(tmp_path / "jpeg.png", "JPEG", quality=95)
    with reading() as pillow:
        np.testing.assert_array_equal(images.read_image(tmp_path / "png.jpg"),
                                      expected_pixels(samples, 8, RGB))
        if pillow == "with Pillow":
            assert images.read_image(tmp_path / "jpeg.png").shape == (8, 8)
        else:
            with pytest.raises(images.ImageFileError, match="jpeg.png: reading JPEG files"):
                images.read_image(tmp_path / "jpeg.png")


# ---- round trips ----

@pytest.mark.parametrize("shape", [(6, 9), (6, 9, 3), (6, 9, 4)])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_png_round_trip(tmp_path, reading, shape, dtype):
    array = np.random.default_rng(5).integers(0, np.iinfo(dtype).max + 1, shape, dtype)
    path = tmp_path / "round.png"
    with reading():
        images.write_image(path, array)
        kept, rounded = images.read_image(path, keep_16bit=True), images.read_image(path)
    np.testing.assert_array_equal(kept, array)
    np.testing.assert_array_equal(rounded, array if dtype == np.uint8 else to_8_bits(array, 16))


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_written_pngs_decode_by_hand(tmp_path, dtype):
    """The writer's bytes, undone here without nxe: one IHDR, Up-filtered rows in IDAT."""
    array = np.random.default_rng(6).integers(0, np.iinfo(dtype).max + 1, (5, 7, 3), dtype)
    images.write_png(tmp_path / "w.png", array)
    data = (tmp_path / "w.png").read_bytes()
    width, height, depth, color = struct.unpack(">IIBB", data[16:26])
    assert (width, height, depth, color) == (7, 5, 8 * np.dtype(dtype).itemsize, RGB)
    start = data.index(b"IDAT") + 4
    length = struct.unpack(">I", data[start - 8:start - 4])[0]
    rows = np.frombuffer(zlib.decompress(data[start:start + length]), np.uint8).reshape(5, -1)
    assert (rows[:, 0] == 2).all()  # Up
    unfiltered = np.cumsum(rows[:, 1:], axis=0, dtype=np.uint8)  # modulo 256
    np.testing.assert_array_equal(unfiltered.view(np.dtype(dtype).newbyteorder(">"))
                                  .reshape(array.shape), array)


@pytest.mark.parametrize("channels", [1, 3, 4])
@pytest.mark.parametrize("suffix", [".jpg", ".jpeg"])
def test_jpeg_round_trip(tmp_path, channels, suffix):
    array = smooth_photo(16, 24, min(channels, 3))
    if channels == 4:
        array = np.dstack([array, np.full((16, 24), 99, np.uint8)])
    path = tmp_path / f"round{suffix}"
    images.write_image(path, array)
    got = images.read_image(path)
    want = array[..., :3] if array.ndim == 3 else array  # JPEG has no alpha
    assert got.shape == want.shape and got.dtype == np.uint8
    # Quality 95 on a smooth image: every sample within 6 of the original.
    assert np.abs(got.astype(int) - want).max() <= 6


@pytest.mark.parametrize("name,array,words", [
    ("float.png", np.zeros((4, 4), np.float32), "PNG takes uint8 or uint16"),
    ("two.png", np.zeros((4, 4, 2), np.uint8), "PNG takes"),
    ("empty.png", np.zeros((0, 4), np.uint8), "PNG takes"),
    ("deep.jpg", np.zeros((4, 4), np.uint16), "JPEG takes uint8"),
    ("other.bmp", np.zeros((4, 4), np.uint8), "cannot write .bmp files"),
    ("none", np.zeros((4, 4), np.uint8), "cannot write suffix-less files"),
])
def test_what_cannot_be_written_is_refused_with_the_file_name(tmp_path, name, array, words):
    with pytest.raises(images.ImageFileError, match=words) as info:
        images.write_image(tmp_path / name, array)
    assert str(info.value).startswith(str(tmp_path / name))
    assert not (tmp_path / name).exists()


# ---- decode errors name the file ----

def good_png() -> bytes:
    return random_png(PALETTE, 4, (6, 7), True, True, seed=11)[0]


def chunk_offsets(data: bytes) -> dict[bytes, int]:
    offsets, pos = {}, 8
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        offsets.setdefault(kind, pos)
        pos += 12 + length
    return offsets


def with_ihdr(**fields) -> bytes:
    """A 7x6 8-bit gray PNG with valid image data and IHDR fields replaced."""
    names = ("width", "height", "depth", "color", "compression", "filtering", "interlace")
    values = dict(zip(names, (7, 6, 8, GRAY, 0, 0, 0))) | fields
    return (SIGNATURE + chunk(b"IHDR", struct.pack(">IIBBBBB", *[values[n] for n in names]))
            + chunk(b"IDAT", zlib.compress(bytes(6 * 8))) + chunk(b"IEND", b""))


def gray_png_with_rows(raw: bytes, transparency: bytes | None = None) -> bytes:
    """A 4x3 8-bit gray PNG whose IDAT holds `raw` (15 bytes when whole)."""
    extra = chunk(b"tRNS", transparency) if transparency is not None else b""
    return (SIGNATURE + chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 3, 8, GRAY, 0, 0, 0))
            + extra + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def palette_png(indices: list[int], palette: bytes, transparency: bytes | None = None) -> bytes:
    extra = chunk(b"PLTE", palette) if palette else b""
    if transparency is not None:
        extra += chunk(b"tRNS", transparency)
    raw = b"".join(bytes([0, i]) for i in indices)
    return (SIGNATURE + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, len(indices), 8, PALETTE, 0,
                                                   0, 0))
            + extra + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def corrupt_pngs():
    data = good_png()
    offsets = chunk_offsets(data)
    flip = offsets[b"IDAT"] + 10
    yield "empty", b"", "not a PNG file"
    yield "gif", b"GIF89a" + data[6:], "not a PNG file"
    yield "idat crc", data[:flip] + bytes([data[flip] ^ 1]) + data[flip + 1:], "fails its CRC"
    yield "no iend", data[:offsets[b"IEND"]], "ends before IEND"
    yield "no idat", data[:offsets[b"IDAT"]] + chunk(b"IEND", b""), "without IHDR or image"
    yield "chunk first", SIGNATURE + chunk(b"gAMA", bytes(4)) + data[8:], "before IHDR"
    yield "depth 3", with_ihdr(depth=3), "bit depth 3 is not supported"
    yield "colour 5", with_ihdr(color=5), "colour type 5"
    yield "16-bit palette", with_ihdr(depth=16, color=PALETTE), "colour type 3 at bit depth 16"
    yield "width 0", with_ihdr(width=0), "0x6 pixels is out of range"
    yield "huge", with_ihdr(width=1 << 20, height=1 << 20), "out of range"
    yield "interlace 2", with_ihdr(interlace=2), "interlace method 2"
    yield "compression 1", with_ihdr(compression=1), "compression 1"
    yield "short data", gray_png_with_rows(bytes(14)), "image data is 14 bytes, expected 15"
    yield "long data", gray_png_with_rows(bytes(16)), "expected 15"
    yield "filter 5", gray_png_with_rows(bytes(5) + b"\x05" + bytes(9)), "unknown filter type 5"
    yield "no palette", palette_png([0, 1], b""), "palette PNG without PLTE"
    yield "index", palette_png([0, 2], bytes(6)), "palette index 2 out of range"
    yield "long trns", palette_png([0, 1], bytes(6), bytes(3)), "tRNS of 3 bytes"
    yield "gray trns", gray_png_with_rows(bytes(15), bytes(6)), "tRNS of 6 bytes"
    yield "plte 4", palette_png([0], bytes(4)), "malformed PLTE"
    bad_zlib = (SIGNATURE + data[8:offsets[b"IDAT"]] + chunk(b"IDAT", b"\x78\x9c\x07\x00")
                + chunk(b"IEND", b""))
    yield "bad zlib", bad_zlib, "does not decompress"


@pytest.mark.parametrize("case,data,words", list(corrupt_pngs()))
def test_corrupt_pngs_raise_image_file_errors_naming_the_file(tmp_path, reading, case, data,
                                                              words):
    path = tmp_path / f"{case.replace(' ', '_')}.png"
    path.write_bytes(data)
    for read in (images.read_png, images.read_image):
        with reading(), pytest.raises(images.ImageFileError, match=words) as info:
            read(path)
        assert isinstance(info.value, ValueError)
        assert str(info.value).startswith(f"{path}: cannot decode the image: ")


def test_every_truncation_of_a_png_names_the_file(tmp_path, reading):
    data = good_png()
    path = tmp_path / "cut.png"
    for length in range(len(data)):
        path.write_bytes(data[:length])
        with reading(), pytest.raises(images.ImageFileError) as info:
            images.read_image(path)
        assert str(info.value).startswith(f"{path}: "), length


def jpeg_bytes() -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(smooth_photo(32, 48, 3)).save(buffer, "JPEG", quality=90)
    return buffer.getvalue()


@pytest.mark.parametrize("case", ["header only", "half", "garbage", "gif", "bad marker"])
def test_corrupt_jpegs_raise_image_file_errors_naming_the_file(tmp_path, case):
    data = jpeg_bytes()
    body = {"header only": data[:200], "half": data[:len(data) // 2],
            "garbage": data[:2] + bytes(100), "gif": b"GIF87a" + bytes(20),
            "bad marker": data[:2] + b"\xff\x01" + data[4:]}[case]
    path = tmp_path / f"{case.replace(' ', '_')}.jpg"
    path.write_bytes(body)
    with pytest.raises(images.ImageFileError, match="cannot decode the image") as info:
        images.read_image(path)
    assert str(info.value).startswith(f"{path}: ")


@pytest.mark.parametrize("text,words", [
    (b"P6\n", "not a Y4M stream"),
    (b"YUV4MPEG2 W10 H0\n", "bad frame size"),
    (b"YUV4MPEG2 Wten H4\n", "bad frame size Wten"),
    (b"YUV4MPEG2 W10 H10 C411\n", "C411 is not supported"),
    (b"YUV4MPEG2 W4 H4", "header line too long or truncated"),
    (b"YUV4MPEG2 W4 H4 C420jpeg\nFRAME\n" + bytes(24) + b"FRAME\n" + bytes(5),
     "truncated frame 1"),
    (b"YUV4MPEG2 W4 H4 C420jpeg\nFRAMX\n", "expected a FRAME marker before frame 0"),
])
def test_corrupt_y4m_files_raise_image_file_errors_naming_the_file(tmp_path, text, words):
    path = tmp_path / "clip.y4m"
    path.write_bytes(text)
    with open(path, "rb") as stream:
        with pytest.raises(images.ImageFileError, match=words) as info:
            header = images.read_y4m_header(stream)
            list(images.y4m_frames(stream, header))
    assert str(info.value).startswith(f"{path}: Y4M: ")
