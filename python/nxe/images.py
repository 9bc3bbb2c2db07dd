"""Image and raw-video files for `nxe upscale`: PNG read and written by nxe itself (zlib from the
standard library), JPEG through Pillow (the `image` extra), and Y4M video streamed frame by
frame. Where Pillow is installed it also reads PNG, much faster than the pure-Python unfilter
loop here, which stays as the reader of the core install. Files are untrusted input: malformed
ones raise ValueError with the reason, never anything worse.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAX_PIXELS = 1 << 28  # refuse images that would need more than a few GiB to decode


def _pillow():
    try:
        from PIL import Image
    except ImportError:
        return None
    return Image


# ---- PNG ----

def _unfilter(data: bytes, width: int, height: int, bpp: int, row_bytes: int) -> np.ndarray:
    """Undoes the per-row filters (None, Sub, Up, Average, Paeth) of a non-interlaced image."""
    if len(data) != height * (row_bytes + 1):
        raise ValueError(f"PNG: image data is {len(data)} bytes, expected "
                         f"{height * (row_bytes + 1)}")
    rows = np.frombuffer(data, np.uint8).reshape(height, row_bytes + 1)
    out = np.zeros((height, row_bytes), np.uint8)
    prior = np.zeros(row_bytes, np.int32)
    for y in range(height):
        kind = rows[y, 0]
        line = rows[y, 1:].astype(np.int32)
        if kind == 0:
            recon = line
        elif kind == 1:
            recon = np.cumsum(line.reshape(-1, bpp), axis=0).reshape(-1) & 0xFF
        elif kind == 2:
            recon = (line + prior) & 0xFF
        elif kind in (3, 4):
            recon = np.empty(row_bytes, np.int32)
            left = np.zeros(bpp, np.int32)
            upper_left = np.zeros(bpp, np.int32)
            for x in range(0, row_bytes, bpp):
                up = prior[x:x + bpp]
                if kind == 3:
                    predictor = (left + up) >> 1
                else:
                    p = left + up - upper_left
                    pa, pb, pc = np.abs(p - left), np.abs(p - up), np.abs(p - upper_left)
                    predictor = np.where((pa <= pb) & (pa <= pc), left,
                                         np.where(pb <= pc, up, upper_left))
                left = (line[x:x + bpp] + predictor) & 0xFF
                recon[x:x + bpp] = left
                upper_left = up
        else:
            raise ValueError(f"PNG: row {y} has unknown filter type {kind}")
        out[y] = recon
        prior = recon
    return out


def read_png(path: str | Path) -> np.ndarray:
    """An 8-bit (H, W), (H, W, 3) or (H, W, 4) array; 16-bit samples keep their high byte,
    gray+alpha becomes RGBA, palettes expand (with tRNS alpha)."""
    data = Path(path).read_bytes()
    if not data.startswith(PNG_SIGNATURE):
        raise ValueError(f"{path}: not a PNG file")
    pos, header, palette, transparency, compressed = 8, None, None, None, []
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if len(body) != length or pos + 12 + length > len(data):
            raise ValueError(f"{path}: truncated PNG chunk {kind!r}")
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(kind + body) != crc:
            raise ValueError(f"{path}: PNG chunk {kind!r} fails its CRC")
        pos += 12 + length
        if kind == b"IHDR":
            if length != 13:
                raise ValueError(f"{path}: malformed IHDR")
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            palette = np.frombuffer(body, np.uint8).reshape(-1, 3)
        elif kind == b"tRNS":
            transparency = np.frombuffer(body, np.uint8)
        elif kind == b"IDAT":
            compressed.append(body)
        elif kind == b"IEND":
            break
    if header is None or not compressed:
        raise ValueError(f"{path}: PNG without IHDR or image data")
    width, height, depth, color, _, _, interlace = header
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}.get(color)
    if channels is None or depth not in ((8, 16) if color != 3 else (1, 2, 4, 8)):
        raise ValueError(f"{path}: PNG colour type {color} at bit depth {depth} is not supported")
    if interlace:
        raise ValueError(f"{path}: interlaced PNG is not supported")
    if not 0 < width * height <= MAX_PIXELS:
        raise ValueError(f"{path}: PNG of {width}x{height} pixels is out of range")
    bits = channels * depth
    row_bytes = (width * bits + 7) // 8
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(b"".join(compressed), height * (row_bytes + 1) + 1)
    except zlib.error as error:
        raise ValueError(f"{path}: PNG image data does not decompress: {error}") from error
    rows = _unfilter(raw, width, height, max(1, bits // 8), row_bytes)
    if color == 3:
        if palette is None:
            raise ValueError(f"{path}: palette PNG without PLTE")
        indices = np.unpackbits(rows, axis=1)[:, :width * depth] if depth < 8 else rows
        if depth < 8:
            weights = 1 << np.arange(depth - 1, -1, -1)
            indices = (indices.reshape(height, width, depth) * weights).sum(axis=2)
        indices = indices.astype(np.intp)
        if indices.max() >= len(palette):
            raise ValueError(f"{path}: palette index out of range")
        rgb = palette[indices]
        if transparency is None:
            return rgb
        alpha = np.full(len(palette), 255, np.uint8)
        alpha[:min(len(transparency), len(palette))] = transparency[:len(palette)]
        return np.dstack([rgb, alpha[indices]])
    samples = rows.reshape(height, width, channels * depth // 8)
    if depth == 16:
        samples = samples[..., 0::2]
    if color == 0:
        return samples[..., 0].copy()
    if color == 4:
        gray, alpha = samples[..., 0], samples[..., 1]
        return np.dstack([gray, gray, gray, alpha])
    return np.ascontiguousarray(samples)


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def write_png(path: str | Path, image: np.ndarray) -> None:
    """Writes an 8-bit (H, W), (H, W, 3) or (H, W, 4) array; rows use the Up filter."""
    array = np.asarray(image)
    if array.dtype != np.uint8 or array.ndim not in (2, 3) or \
            (array.ndim == 3 and array.shape[2] not in (3, 4)):
        raise ValueError(f"PNG: expected uint8 (H, W), (H, W, 3) or (H, W, 4), got "
                         f"{array.dtype} {array.shape}")
    height, width = array.shape[:2]
    color = {2: 0, 3: 2, 4: 6}[array.ndim if array.ndim == 2 else array.shape[2]]
    rows = array.reshape(height, -1).astype(np.int16)
    filtered = np.empty((height, rows.shape[1] + 1), np.uint8)
    filtered[:, 0] = 2
    filtered[0, 1:] = rows[0]
    filtered[1:, 1:] = (rows[1:] - rows[:-1]) & 0xFF
    body = (PNG_SIGNATURE + _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, color, 0,
                                                          0, 0))
            + _chunk(b"IDAT", zlib.compress(filtered.tobytes(), 6)) + _chunk(b"IEND", b""))
    Path(path).write_bytes(body)


# ---- any image ----

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg"}


def read_image(path: str | Path) -> np.ndarray:
    """PNG natively, JPEG through Pillow; an 8-bit (H, W), (H, W, 3) or (H, W, 4) array."""
    suffix = Path(path).suffix.lower()
    image_module = _pillow()
    if suffix == ".png" and image_module is None:
        return read_png(path)
    if image_module is None:
        raise ValueError(f"{path}: reading {suffix} files needs Pillow: pip install 'nxe[image]'")
    # Pillow reports a corrupt file through many exception types that vary with the plugin and
    # its version (OSError, SyntaxError, EOFError, struct.error, zlib.error, ...); the reader's
    # contract is ValueError with the reason. A file that cannot be opened stays an OSError.
    # Pillow's own pixel limit (DecompressionBombError) refuses headers claiming huge images
    # before anything is allocated.
    with open(path, "rb") as stream:
        try:
            with image_module.open(stream) as image:
                mode = image.mode if image.mode in ("L", "RGB", "RGBA") else "RGB"
                return np.asarray(image.convert(mode))
        except Exception as error:
            raise ValueError(f"{path}: cannot decode the image: {type(error).__name__}: "
                             f"{error}") from error


def write_image(path: str | Path, image: np.ndarray) -> None:
    suffix = Path(path).suffix.lower()
    if suffix == ".png":
        write_png(path, image)
        return
    image_module = _pillow()
    if image_module is None:
        raise ValueError(f"{path}: writing {suffix} files needs Pillow: pip install 'nxe[image]'")
    array = np.asarray(image)
    if array.ndim == 3 and array.shape[2] == 4:
        array = array[..., :3]  # JPEG has no alpha
    image_module.fromarray(array).save(path, quality=95)


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


def _read_line(stream: BinaryIO, limit: int = 4096) -> bytes:
    line = stream.readline(limit)
    if line and not line.endswith(b"\n"):
        raise ValueError("Y4M: header line too long or truncated")
    return line


def read_y4m_header(stream: BinaryIO) -> Y4mHeader:
    line = _read_line(stream)
    if not line.startswith(Y4M_MAGIC):
        raise ValueError("not a Y4M stream (no YUV4MPEG2 header)")
    width = height = None
    fmt, rate, full, extra = "yuv420p", "25:1", False, []
    for token in line[len(Y4M_MAGIC):].decode("ascii", "replace").split():
        key, value = token[0], token[1:]
        if key == "W":
            width = int(value)
        elif key == "H":
            height = int(value)
        elif key == "C":
            if value not in _Y4M_FORMATS:
                raise ValueError(f"Y4M: colour space C{value} is not supported; supported: "
                                 f"{', '.join(_Y4M_FORMATS)}")
            fmt = _Y4M_FORMATS[value]
        elif key == "F":
            rate = value
        elif token.startswith("XCOLORRANGE="):
            full = token.split("=", 1)[1].upper() == "FULL"
        elif key in "IAX":
            extra.append(token)
    if not width or not height or width < 1 or height < 1 or width * height > MAX_PIXELS:
        raise ValueError(f"Y4M: bad frame size W{width} H{height}")
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
    while True:
        line = _read_line(stream)
        if not line:
            return
        if not line.startswith(b"FRAME"):
            raise ValueError("Y4M: expected a FRAME marker")
        planes = []
        for shape, size in zip(shapes, sizes):
            data = stream.read(size)
            if len(data) != size:
                raise ValueError("Y4M: truncated frame")
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
