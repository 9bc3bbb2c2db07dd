"""Image and raw-video files for `nxe upscale`: PNG read and written by nxe itself (zlib from the
standard library, whether or not Pillow is installed), JPEG through Pillow (the `image` extra),
Y4M video streamed frame by frame. Files are untrusted input: one that cannot be read or
written as asked raises ImageFileError (a ValueError) whose message starts with the file's name
(a Y4M stream's name, '<stdin>' for standard input); one that cannot be opened stays an OSError.

What `read_image` and `read_png` return, for every PNG colour type, bit depth and interlace:

- gray (1, 2, 4, 8, 16 bits) -> (H, W); RGB -> (H, W, 3); gray+alpha and RGBA -> (H, W, 4),
  gray repeated in R, G and B; palette -> (H, W, 3), or (H, W, 4) with a tRNS chunk; gray or RGB
  with a tRNS colour key -> (H, W, 4), alpha zero where a pixel equals the key. Alpha is kept
  wherever the file has it.
- dtype uint8. Gray of 1, 2 and 4 bits scales exactly to 0..255 (v * 255 / (2**bits - 1));
  16-bit samples round to 8 bits as to_uint8 does, (x * 255 + 32767) // 65535. With
  keep_16bit=True a 16-bit PNG comes back as uint16 instead (alpha too, 65535 opaque).
- JPEG (Pillow) -> (H, W) or (H, W, 3) uint8, turned upright by its EXIF orientation tag.

`nxe upscale` reads with the defaults: libnxe_sr takes 8-bit frames, so a 16-bit PNG is
upscaled from its rounded 8-bit samples and written as an 8-bit PNG.
"""

from __future__ import annotations

import io
import itertools
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAX_PIXELS = 1 << 28  # refuse images that would need more than a few GiB to decode
IMAGE_EXTRA = "pip install 'nxe[image]'"


class ImageFileError(ValueError):
    """A file that cannot be read or written as asked; the message starts with its name."""


def _pillow(path: str | Path, doing: str):
    """Pillow's Image module, or ImageFileError naming the extra that installs it."""
    try:
        from PIL import Image
    except ImportError:
        raise ImageFileError(f"{path}: {doing} JPEG files needs Pillow: {IMAGE_EXTRA}") from None
    return Image


def to_uint8(array: np.ndarray) -> np.ndarray:
    """uint8 as is; uint16 rounded to the nearest 8-bit value, (x * 255 + 32767) // 65535."""
    array = np.asarray(array)
    if array.dtype == np.uint8:
        return array
    if array.dtype != np.uint16:
        raise ValueError(f"expected uint8 or uint16 samples, got {array.dtype}")
    return ((array.astype(np.uint32) * 255 + 32767) // 65535).astype(np.uint8)


# ---- PNG ----

_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}  # colour type -> samples per pixel
_DEPTHS = {0: (1, 2, 4, 8, 16), 2: (8, 16), 3: (1, 2, 4, 8), 4: (8, 16), 6: (8, 16)}
_TRNS_BYTES = {0: 2, 2: 6}  # tRNS colour key sizes; palette tRNS holds one alpha per entry
# Adam7: (first column, first row, column step, row step) of each of the seven passes.
_ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
          (0, 1, 1, 2))


class _Corrupt(Exception):
    """A decoding failure inside the PNG decoder; read_png adds the file's name."""


def _unfilter_band(line: np.ndarray, kinds: np.ndarray, prior: np.ndarray,
                   out: np.ndarray) -> None:
    """Reconstructs `rows` rows of `pixels` pixels (line: (rows, pixels, bpp) filtered bytes)
    below the row `prior`. A pixel needs its left, upper and upper-left neighbours, so the
    pixels on one anti-diagonal are independent: they are computed together, one numpy step
    per anti-diagonal instead of one Python step per pixel. The band is stored skewed, pixel
    (Y, X) at skew[Y + X, Y] (Y = 0 the prior row, X = 0 the zero column left of the image),
    which makes each anti-diagonal and its neighbours contiguous slices."""
    rows, pixels, bpp = line.shape
    # int16, so the predictors' sums and differences need no conversion on each step
    skew = np.zeros((rows + pixels + 1, rows + 1, bpp), np.int16)
    skew[1:pixels + 1, 0] = prior
    for y in range(rows):
        skew[y + 2:y + 2 + pixels, y + 1] = line[y]
    # One 0/1 column per filter type that occurs: the predictor is the sum of each type's
    # prediction times its column (much faster than np.choose on short diagonals).
    uses = {kind: np.concatenate([[0], kinds == kind]).astype(np.int16)[:, None]
            for kind in (1, 2, 3, 4) if (kinds == kind).any()}
    for diagonal in range(2, rows + pixels + 1):
        lo, hi = max(1, diagonal - pixels), min(rows, diagonal - 1) + 1
        left = skew[diagonal - 1, lo:hi]
        up = skew[diagonal - 1, lo - 1:hi - 1]
        target = skew[diagonal, lo:hi]
        if 1 in uses:
            target += left * uses[1][lo:hi]
        if 2 in uses:
            target += up * uses[2][lo:hi]
        if 3 in uses:
            target += ((left + up) >> 1) * uses[3][lo:hi]
        if 4 in uses:
            upper_left = skew[diagonal - 2, lo - 1:hi - 1]
            to_left, to_up = np.abs(up - upper_left), np.abs(left - upper_left)
            to_upper_left = np.abs(left + up - 2 * upper_left)
            target += np.where((to_left <= to_up) & (to_left <= to_upper_left), left,
                               np.where(to_up <= to_upper_left, up, upper_left)) * uses[4][lo:hi]
        target &= 0xFF
    for y in range(rows):
        out[y] = skew[y + 2:y + 2 + pixels, y + 1]


def _unfilter(filtered: np.ndarray, bpp: int) -> np.ndarray:
    """Undoes the row filters (None, Sub, Up, Average, Paeth) of one image or Adam7 pass:
    (rows, 1 + row bytes) in, (rows, row bytes) out."""
    kinds = filtered[:, 0]
    bad = np.flatnonzero(kinds > 4)
    if bad.size:
        raise _Corrupt(f"row {bad[0]} has unknown filter type {kinds[bad[0]]}")
    height, row_bytes = filtered.shape[0], filtered.shape[1] - 1
    pixels = row_bytes // bpp
    line = filtered[:, 1:].reshape(height, pixels, bpp)
    out = np.empty_like(line)
    # Bands as tall as the image is wide (1024 rows at least) bound the skewed copy by about
    # twice the band's pixels and the steps by about the rows plus the columns.
    band = min(height, max(pixels, 1024))
    prior = np.zeros((pixels, bpp), np.uint8)
    for top in range(0, height, band):
        rows = slice(top, min(height, top + band))
        _unfilter_band(line[rows], kinds[rows], prior, out[rows])
        prior = out[rows.stop - 1]
    return out.reshape(height, row_bytes)


def _samples(rows: np.ndarray, width: int, depth: int, channels: int) -> np.ndarray:
    """Unfiltered rows as (h, w, channels) samples: uint8 up to 8 bits, uint16 at 16."""
    height = rows.shape[0]
    if depth == 16:
        return rows.view(">u2").reshape(height, width, channels).astype(np.uint16)
    if depth == 8:
        return rows.reshape(height, width, channels)
    shifts = np.arange(8 - depth, -1, -depth, dtype=np.uint8)
    values = (rows[:, :, None] >> shifts) & ((1 << depth) - 1)
    return values.reshape(height, -1)[:, :width, None]


def _parse_png(data: bytes) -> tuple[tuple, np.ndarray | None, bytes | None, bytes]:
    """(IHDR fields, palette, tRNS body, joined IDAT data), every chunk's CRC checked."""
    if not data.startswith(PNG_SIGNATURE):
        raise _Corrupt("not a PNG file")
    pos, header, palette, transparency, compressed = 8, None, None, None, []
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if pos + 12 + length > len(data):
            raise _Corrupt(f"truncated PNG chunk {kind!r}")
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(kind + body) != crc:
            raise _Corrupt(f"PNG chunk {kind!r} fails its CRC")
        pos += 12 + length
        if header is None and kind != b"IHDR":
            raise _Corrupt(f"PNG chunk {kind!r} before IHDR")
        if kind == b"IHDR":
            if length != 13 or header is not None:
                raise _Corrupt("malformed or repeated IHDR")
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            if length % 3 or not 0 < length <= 768 or palette is not None or compressed:
                raise _Corrupt(f"malformed PLTE of {length} bytes")
            palette = np.frombuffer(body, np.uint8).reshape(-1, 3)
        elif kind == b"tRNS":
            transparency = body
        elif kind == b"IDAT":
            compressed.append(body)
        elif kind == b"IEND":
            break
    else:
        if compressed:
            raise _Corrupt("truncated: the file ends before IEND")
    if not compressed:
        raise _Corrupt("PNG without IHDR or image data")
    return header, palette, transparency, b"".join(compressed)


def _passes(width: int, height: int, interlace: int) -> list[tuple[int, int, int, int]]:
    """(first column, first row, column step, row step) of each pass that holds pixels."""
    if not interlace:
        return [(0, 0, 1, 1)]
    return [(x0, y0, dx, dy) for x0, y0, dx, dy in _ADAM7 if width > x0 and height > y0]


def _decode_png(data: bytes, keep_16bit: bool, max_pixels: int) -> np.ndarray:
    header, palette, transparency, compressed = _parse_png(data)
    width, height, depth, color, compression, filtering, interlace = header
    if color not in _CHANNELS or depth not in _DEPTHS[color]:
        raise _Corrupt(f"PNG colour type {color} at bit depth {depth} is not supported")
    if compression or filtering or interlace > 1:
        raise _Corrupt(f"unknown PNG compression {compression}, filter method {filtering} or "
                       f"interlace method {interlace}")
    if not 0 < width * height <= max_pixels:
        raise _Corrupt(f"PNG of {width}x{height} pixels is out of range (at most {max_pixels})")
    channels = _CHANNELS[color]
    if color == 3 and palette is None:
        raise _Corrupt("palette PNG without PLTE")
    if transparency is not None:
        expected = _TRNS_BYTES.get(color)
        if color in (4, 6) or (expected is not None and len(transparency) != expected) or \
                (color == 3 and len(transparency) > len(palette)):
            raise _Corrupt(f"tRNS of {len(transparency)} bytes does not fit colour type "
                           f"{color}")
    bits = depth * channels
    passes = [(x0, y0, dx, dy, (width - x0 + dx - 1) // dx, (height - y0 + dy - 1) // dy)
              for x0, y0, dx, dy in _passes(width, height, interlace)]
    sizes = [h * ((w * bits + 7) // 8 + 1) for *_, w, h in passes]
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(compressed, sum(sizes) + 1)
    except zlib.error as error:
        raise _Corrupt(f"PNG image data does not decompress: {error}") from error
    if len(raw) != sum(sizes):
        raise _Corrupt(f"PNG image data is {len(raw)} bytes, expected {sum(sizes)}")
    samples = np.empty((height, width, channels), np.uint16 if depth == 16 else np.uint8)
    offset = 0
    for (x0, y0, dx, dy, w, h), size in zip(passes, sizes):
        filtered = np.frombuffer(raw, np.uint8, size, offset).reshape(h, -1)
        offset += size
        rows = _unfilter(filtered, max(1, bits // 8))
        samples[y0::dy, x0::dx] = _samples(rows, w, depth, channels)
    return _to_contract(samples, color, depth, palette, transparency, keep_16bit)


def _to_contract(samples: np.ndarray, color: int, depth: int, palette: np.ndarray | None,
                 transparency: bytes | None, keep_16bit: bool) -> np.ndarray:
    """Decoded samples as the module docstring says read_png returns them."""
    if color == 3:
        indices = samples[..., 0]
        if indices.max() >= len(palette):
            raise _Corrupt(f"palette index {indices.max()} out of range ({len(palette)} "
                           f"entries)")
        if transparency is None:
            return palette[indices]
        alpha = np.full(len(palette), 255, np.uint8)
        alpha[:len(transparency)] = np.frombuffer(transparency, np.uint8)
        return np.dstack([palette[indices], alpha[indices]])
    top = (1 << depth) - 1
    if transparency is not None:
        key = np.frombuffer(transparency, ">u2")
        alpha = np.where((samples == key).all(axis=2), 0, top).astype(samples.dtype)
        samples = np.dstack([samples, alpha])
    if depth < 8:
        samples = samples * np.uint8(255 // top)
    elif depth == 16 and not keep_16bit:
        samples = to_uint8(samples)
    if samples.shape[2] == 1:
        return samples[..., 0].copy()
    if samples.shape[2] == 2:  # gray + alpha
        gray, alpha = samples[..., 0], samples[..., 1]
        return np.dstack([gray, gray, gray, alpha])
    return np.ascontiguousarray(samples)


def read_png(path: str | Path, *, keep_16bit: bool = False) -> np.ndarray:
    """A PNG file as the module docstring says: uint8 (H, W), (H, W, 3) or (H, W, 4); uint16
    for 16-bit files when keep_16bit is set."""
    return _png_from_bytes(Path(path).read_bytes(), path, keep_16bit, MAX_PIXELS)


def _png_from_bytes(data: bytes, name: str | Path, keep_16bit: bool,
                    max_pixels: int) -> np.ndarray:
    try:
        return _decode_png(data, keep_16bit, max_pixels)
    except _Corrupt as error:
        raise ImageFileError(f"{name}: cannot decode the image: {error}") from None


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def write_png(path: str | Path, image: np.ndarray) -> None:
    """Writes a uint8 or uint16 (H, W), (H, W, 3) or (H, W, 4) array as an 8- or 16-bit gray,
    RGB or RGBA PNG; rows use the Up filter."""
    Path(path).write_bytes(encode_png(image, path))


def encode_png(image: np.ndarray, name: str | Path = "<image>") -> bytes:
    """The bytes of the PNG file write_png writes; `name` starts the message of an
    ImageFileError for an array PNG cannot hold."""
    array = np.asarray(image)
    if array.dtype not in (np.uint8, np.uint16) or array.ndim not in (2, 3) or \
            (array.ndim == 3 and array.shape[2] not in (3, 4)) or 0 in array.shape:
        raise ImageFileError(f"{name}: PNG takes uint8 or uint16 (H, W), (H, W, 3) or (H, W, 4) "
                             f"arrays, got {array.dtype} {array.shape}")
    height, width = array.shape[:2]
    color = {2: 0, 3: 2, 4: 6}[array.ndim if array.ndim == 2 else array.shape[2]]
    depth = array.dtype.itemsize * 8
    rows = array.astype(array.dtype.newbyteorder(">")).reshape(height, -1).view(np.uint8)
    filtered = np.empty((height, rows.shape[1] + 1), np.uint8)
    filtered[:, 0] = 2
    filtered[0, 1:] = rows[0]
    filtered[1:, 1:] = rows[1:] - rows[:-1]  # uint8 arithmetic wraps modulo 256, as Up needs
    return (PNG_SIGNATURE + _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, color,
                                                          0, 0, 0))
            + _chunk(b"IDAT", zlib.compress(filtered.tobytes(), 6)) + _chunk(b"IEND", b""))


# ---- any image ----

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg"}
JPEG_SUFFIXES = {".jpg", ".jpeg"}
JPEG_START = b"\xff\xd8"  # the start-of-image marker


def _jpeg_from_bytes(data: bytes, name: str | Path, max_pixels: int) -> np.ndarray:
    image_module = _pillow(name, "reading")
    from PIL import ImageOps

    # Pillow reports a corrupt file through many exception types that vary with the plugin and
    # its version (OSError, SyntaxError, EOFError, struct.error, zlib.error, ...); the reader's
    # contract is ImageFileError with the reason. A file that cannot be opened stays an
    # OSError. Pillow's own pixel limit (DecompressionBombError) and MAX_PIXELS refuse headers
    # claiming huge images before anything is allocated.
    try:
        with image_module.open(io.BytesIO(data), formats=["JPEG"]) as image:
            width, height = image.size
            if width * height > max_pixels:
                raise ValueError(f"JPEG of {width}x{height} pixels is out of range (at most "
                                 f"{max_pixels})")
            upright = ImageOps.exif_transpose(image)
            return np.asarray(upright if upright.mode == "L" else upright.convert("RGB"))
    except Exception as error:
        raise ImageFileError(f"{name}: cannot decode the image: {type(error).__name__}: "
                             f"{error}") from error


def read_image(path: str | Path, *, keep_16bit: bool = False) -> np.ndarray:
    """A PNG or JPEG file as the module docstring says. The first bytes tell the format, so
    a misnamed file still reads; a file that is neither is reported as the format its suffix
    names (PNG for any suffix but .jpg and .jpeg)."""
    data = Path(path).read_bytes()
    is_jpeg = data.startswith(JPEG_START) or (
        not data.startswith(PNG_SIGNATURE) and Path(path).suffix.lower() in JPEG_SUFFIXES)
    if is_jpeg:
        return _jpeg_from_bytes(data, path, MAX_PIXELS)
    return _png_from_bytes(data, path, keep_16bit, MAX_PIXELS)


def decode_image(data: bytes, name: str = "<image>", *, max_pixels: int = MAX_PIXELS) -> np.ndarray:
    """PNG or JPEG bytes (the first bytes tell which) as read_image returns them, 8-bit; an
    image of more than `max_pixels` pixels is refused from its header, before it is decoded.
    Errors are ImageFileErrors whose message starts with `name`."""
    if data.startswith(JPEG_START):
        return _jpeg_from_bytes(data, name, max_pixels)
    return _png_from_bytes(data, name, False, max_pixels)


def write_image(path: str | Path, image: np.ndarray) -> None:
    """PNG (uint8 or uint16) by nxe, JPEG (uint8 at quality 95, alpha dropped as JPEG has
    none) through Pillow; the suffix chooses, and other suffixes are refused."""
    suffix = Path(path).suffix.lower()
    if suffix == ".png":
        write_png(path, image)
        return
    if suffix not in JPEG_SUFFIXES:
        raise ImageFileError(f"{path}: cannot write {suffix or 'suffix-less'} files; images are "
                             f"written as {', '.join(sorted(IMAGE_SUFFIXES))}")
    image_module = _pillow(path, "writing")
    array = np.asarray(image)
    if array.dtype != np.uint8 or array.ndim not in (2, 3) or \
            (array.ndim == 3 and array.shape[2] not in (3, 4)) or 0 in array.shape:
        raise ImageFileError(f"{path}: JPEG takes uint8 (H, W), (H, W, 3) or (H, W, 4) arrays, "
                             f"got {array.dtype} {array.shape}")
    if array.ndim == 3 and array.shape[2] == 4:
        array = array[..., :3]
    image_module.fromarray(np.ascontiguousarray(array)).save(path, "JPEG", quality=95)


# ---- Y4M ----

Y4M_MAGIC = b"YUV4MPEG2 "
_Y4M_FORMATS = {"420jpeg": "yuv420p", "420paldv": "yuv420p", "420mpeg2": "yuv420p",
                "420": "yuv420p", "422": "yuv422p", "444": "yuv444p", "mono": "gray8",
                "420p10": "yuv420p10", "422p10": "yuv422p10", "444p10": "yuv444p10"}
_Y4M_TAGS = {"yuv420p": "420jpeg", "yuv422p": "422", "yuv444p": "444", "gray8": "mono",
             "yuv420p10": "420p10", "yuv422p10": "422p10", "yuv444p10": "444p10"}


@dataclass
class Y4mHeader:
    width: int
    height: int
    format: str
    rate: str = "25:1"
    full_range: bool = False
    extra: tuple[str, ...] = ()


def _y4m_error(stream: BinaryIO, reason: str) -> ImageFileError:
    """The error for a bad Y4M stream, named as the stream's file is (stdin: '<stdin>')."""
    name = getattr(stream, "name", None)
    return ImageFileError(f"{name if isinstance(name, str) else 'Y4M stream'}: Y4M: {reason}")


def _read_line(stream: BinaryIO, limit: int = 4096) -> bytes:
    line = stream.readline(limit)
    if line and not line.endswith(b"\n"):
        raise _y4m_error(stream, "header line too long or truncated")
    return line


def _y4m_side(stream: BinaryIO, token: str) -> int:
    if not (token[1:].isascii() and token[1:].isdigit()):
        raise _y4m_error(stream, f"bad frame size {token}")
    return int(token[1:])


def read_y4m_header(stream: BinaryIO) -> Y4mHeader:
    line = _read_line(stream)
    if not line.startswith(Y4M_MAGIC):
        raise _y4m_error(stream, "not a Y4M stream (no YUV4MPEG2 header)")
    width = height = None
    fmt, rate, full, extra = "yuv420p", "25:1", False, []
    for token in line[len(Y4M_MAGIC):].decode("ascii", "replace").split():
        key, value = token[0], token[1:]
        if key == "W":
            width = _y4m_side(stream, token)
        elif key == "H":
            height = _y4m_side(stream, token)
        elif key == "C":
            if value not in _Y4M_FORMATS:
                raise _y4m_error(stream, f"colour space C{value} is not supported; supported: "
                                         f"{', '.join(_Y4M_FORMATS)}")
            fmt = _Y4M_FORMATS[value]
        elif key == "F":
            rate = value
        elif token.startswith("XCOLORRANGE="):
            full = token.split("=", 1)[1].upper() == "FULL"
        elif key in "IAX":
            extra.append(token)
    if not width or not height or width < 1 or height < 1 or width * height > MAX_PIXELS:
        raise _y4m_error(stream, f"bad frame size W{width} H{height}")
    return Y4mHeader(width, height, fmt, rate, full, tuple(extra))


def write_y4m_header(stream: BinaryIO, header: Y4mHeader) -> None:
    tokens = [f"W{header.width}", f"H{header.height}", f"F{header.rate}",
              *(t for t in header.extra if not t.startswith("XCOLORRANGE=")),
              f"C{_Y4M_TAGS[header.format]}",
              f"XCOLORRANGE={'FULL' if header.full_range else 'LIMITED'}"]
    stream.write(Y4M_MAGIC + " ".join(tokens).encode() + b"\n")


def y4m_frames(stream: BinaryIO, header: Y4mHeader) -> Iterator[list[np.ndarray]]:
    """The frames' planes, one frame at a time, until the stream ends."""
    from .sr import plane_shapes

    shapes = plane_shapes(header.format, header.width, header.height)
    dtype = np.uint16 if header.format.endswith("10") else np.uint8
    sizes = [int(np.prod(s)) * np.dtype(dtype).itemsize for s in shapes]
    for index in itertools.count():
        line = _read_line(stream)
        if not line:
            return
        if not line.startswith(b"FRAME"):
            raise _y4m_error(stream, f"expected a FRAME marker before frame {index}")
        planes = []
        for shape, size in zip(shapes, sizes):
            data = stream.read(size)
            if len(data) != size:
                raise _y4m_error(stream, f"truncated frame {index}")
            planes.append(np.frombuffer(data, dtype if dtype == np.uint8 else "<u2")
                          .astype(dtype).reshape(shape))
        yield planes


def write_y4m_frame(stream: BinaryIO, planes: list[np.ndarray]) -> None:
    stream.write(b"FRAME\n")
    for plane in planes:
        stream.write(np.ascontiguousarray(plane, plane.dtype.newbyteorder("<")
                                          if plane.dtype.itemsize > 1 else None).tobytes())


def count_y4m_frames(path: str | Path, header_bytes: int, header: Y4mHeader) -> int | None:
    """Frames in a Y4M file without parameters on FRAME lines, from its size; None if unsure."""
    from .sr import plane_shapes

    itemsize = 2 if header.format.endswith("10") else 1
    frame = 6 + sum(int(np.prod(s)) for s in plane_shapes(header.format, header.width,
                                                           header.height)) * itemsize
    body = Path(path).stat().st_size - header_bytes
    return body // frame if body % frame == 0 else None
