"""Super-resolution through libnxe_sr (include/nxe/nxe_sr.h): upscale images and video frames
held in numpy arrays with a trained model shipped in the package, or any SR model file.

    import nxe.sr
    up = nxe.sr.Upscaler("espcn-x2")
    big = up.upscale(rgb)                         # (H, W, 3) uint8 -> (2H, 2W, 3)
    y, u, v = up.upscale_planes([y, u, v], "yuv420p", matrix="bt709")
"""

from __future__ import annotations

import operator
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ._binding import PACKAGE_DIR, ffi, lib, sr_check, sr_library
from .errors import InvalidArgumentError

_NXE_SR_PTR_PTR = ffi.typeof("nxe_sr **")
_NXE_SR_OPTIONS_PTR = ffi.typeof("nxe_sr_options *")
_NXE_SR_FRAME_PTR = ffi.typeof("nxe_sr_frame *")
_NXE_SR_INFO_PTR = ffi.typeof("nxe_sr_info *")
_NXE_SR_FORMAT_DESC_PTR = ffi.typeof("nxe_sr_format_desc *")
_INT32_T_PTR = ffi.typeof("int32_t *")
_CONST_CHAR_PTR_PTR = ffi.typeof("const char **")
_VOID_PTR = ffi.typeof("void *")


def _enum_words(enum: str, prefix: str) -> dict[str, int]:
    """The constants of a C enum of nxe_sr.h as lower-case words in the order of their values:
    NXE_SR_RANGE_FULL -> "full"."""
    constants = sorted(ffi.typeof(f"enum {enum}").relements.items(), key=lambda c: c[1])
    return {name.removeprefix(prefix).lower(): value for name, value in constants}


MATRICES = _enum_words("nxe_sr_matrix", "NXE_SR_MATRIX_")
RANGES = _enum_words("nxe_sr_range", "NXE_SR_RANGE_")
PRECISIONS = _enum_words("nxe_sr_precision", "NXE_SR_PRECISION_")
_LAYOUTS = {value: word for word, value in _enum_words("nxe_sr_layout", "NXE_SR_LAYOUT_").items()}


@dataclass(frozen=True)
class PixelFormat:
    """A pixel format as libnxe_sr describes it (nxe_sr_format_info): its code and name, how
    its samples lie in planes ("gray", "planar", "semiplanar", "packed"), the bits and numpy
    type of a sample, the subsampling (x, y) of the planes after the first, the samples per
    pixel interleaved in each plane, and for packed RGB the index within a pixel of red,
    green, blue and alpha (None where absent)."""

    code: int
    name: str
    layout: str
    planes: int
    bits: int
    dtype: np.dtype
    chroma: tuple[int, int]
    plane_samples: tuple[int, ...]
    rgba: tuple[int | None, int | None, int | None, int | None]


def _read_formats() -> dict[str, PixelFormat]:
    """Every format libnxe_sr knows: codes from 1 until the library answers NOT_FOUND."""
    sr = sr_library()
    formats = {}
    desc = ffi.new(_NXE_SR_FORMAT_DESC_PTR)
    desc.struct_size = ffi.sizeof("nxe_sr_format_desc")
    code = 1
    while (status := sr.nxe_sr_format_info(code, desc)) != lib.NXE_ERROR_NOT_FOUND:
        sr_check(status)
        name = ffi.string(desc.name).decode()
        formats[name] = PixelFormat(
            code=desc.format, name=name, layout=_LAYOUTS[desc.layout], planes=desc.planes,
            bits=desc.bits, dtype=np.dtype(f"<u{desc.sample_bytes}"),
            chroma=(desc.chroma_x, desc.chroma_y),
            plane_samples=tuple(desc.plane_samples[p] for p in range(desc.planes)),
            rgba=tuple(None if i < 0 else i
                       for i in (desc.red, desc.green, desc.blue, desc.alpha)))
        code += 1
    return formats


FORMATS = _read_formats()


def builtin_models() -> list[str]:
    """Names of the models shipped with the package ("espcn-x2", ...)."""
    sr = sr_library()
    count = ffi.new(_INT32_T_PTR)
    sr_check(sr.nxe_sr_builtin_count(count))
    names = []
    for index in range(count[0]):
        name = ffi.new(_CONST_CHAR_PTR_PTR)
        sr_check(sr.nxe_sr_builtin_name(index, name))
        names.append(ffi.string(name[0]).decode())
    return names


def model_path(model: str | os.PathLike[str]) -> Path:
    """The file a model name opens: a built-in name's file in the package's model folder (or
    NXE_SR_MODEL_DIR), a path as it is."""
    text = os.fspath(model)
    if "/" in text or text.endswith(".nxm"):
        return Path(text)
    if text not in builtin_models():
        raise ValueError(f"no built-in SR model named {text!r}; built in: "
                         f"{', '.join(builtin_models())}")
    folder = os.environ.get("NXE_SR_MODEL_DIR") or PACKAGE_DIR / "sr_models"
    return Path(folder) / f"{text}.nxm"


def sample_image() -> Path:
    """The small photograph shipped for trying a model out (PNG)."""
    return PACKAGE_DIR / "sr_models" / "sample.png"


def pixel_format(format: str) -> PixelFormat:
    """The PixelFormat of a name as FORMATS has it ("yuv420p10"), or as FFmpeg spells it with
    its "le" suffix ("yuv420p10le")."""
    name = str(format).lower()
    if name.endswith("le") and name[:-2] in FORMATS:
        name = name[:-2]
    if name not in FORMATS:
        raise ValueError(f"unknown pixel format {format!r}; known: {', '.join(FORMATS)}")
    return FORMATS[name]


def plane_shapes(format: str, width: int, height: int) -> list[tuple[int, ...]]:
    """numpy shapes of each plane of a ``format`` frame of width x height: (rows, samples)
    for planar data, (rows, pixels, channels) for packed RGB and NV12's interleaved UV."""
    f = pixel_format(format)
    chroma = (-(-height // f.chroma[1]), -(-width // f.chroma[0]))
    shapes = []
    for plane, samples in enumerate(f.plane_samples):
        rows_pixels = (height, width) if plane == 0 else chroma
        shapes.append((*rows_pixels, samples) if samples > 1 else rows_pixels)
    return shapes


def _choice(table: dict[str, int], value: str, what: str) -> int:
    if value not in table:
        raise ValueError(f"unknown {what} {value!r}; expected one of {', '.join(table)}")
    return table[value]


def _int32(value: int, what: str) -> int:
    """An option for an int32 field of nxe_sr_options; the library checks the range it
    allows, this only what the field can hold."""
    number = operator.index(value)
    if not -2**31 <= number < 2**31:
        raise InvalidArgumentError(f"{what} {number} does not fit the library's int32 option; "
                                   f"see nxe_sr.h for its range")
    return number


class Upscaler:
    """An SR session: a model (built-in name or .nxm path) with its options. ``tile`` is the
    largest input tile side (0: the library's default, -1: never tile), ``overlap`` the
    context tiles share (None: the model's receptive radius, which makes tiles exact),
    ``precision`` "fp32", "relax" (bf16 where the CPU has it) or "int8" (the model's int8
    variant, which the ESPCN models ship; others raise nxe.UnsupportedError), ``threads`` 0
    for one per CPU. A new frame size reconfigures the session; no reopening is needed.

    Threads may share one Upscaler: libnxe_sr runs overlapping calls on a session one at a
    time (nxe_sr.h), so each call releases the GIL while it works and gets the result it would
    get alone; ``close`` waits for calls in progress."""

    def __init__(self, model: str | os.PathLike[str] = "espcn-x2", *, threads: int = 0,
                 tile: int = 0, overlap: int | None = None, precision: str = "fp32") -> None:
        self._sr = sr_library()
        options = ffi.new(_NXE_SR_OPTIONS_PTR)
        options.struct_size = ffi.sizeof("nxe_sr_options")
        options.num_threads = _int32(threads, "threads")
        options.tile_size = _int32(tile, "tile")
        options.tile_overlap = (lib.NXE_SR_OVERLAP_DEFAULT if overlap is None
                                else _int32(overlap, "overlap"))
        options.precision = _choice(PRECISIONS, precision, "precision")
        out = ffi.new(_NXE_SR_PTR_PTR)
        sr_check(self._sr.nxe_sr_open(os.fsencode(model), options, out))
        self._handle = ffi.gc(out[0], self._sr.nxe_sr_release)
        self._calls = 0  # calls in progress, under _idle
        self._idle = threading.Condition()

    def close(self) -> None:
        """Releases the session now rather than at garbage collection, once no call on it is
        in progress."""
        with self._idle:
            self._idle.wait_for(lambda: self._calls == 0)
            if self._handle is not None:
                ffi.release(self._handle)
                self._handle = None

    def __enter__(self) -> Upscaler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _session(self) -> Iterator[Any]:
        """The session handle for one call; close() waits until every such call has left."""
        with self._idle:
            if self._handle is None:
                raise ValueError("the Upscaler is closed")
            self._calls += 1
        try:
            yield self._handle
        finally:
            with self._idle:
                self._calls -= 1
                self._idle.notify_all()

    def info(self) -> dict[str, Any]:
        """Scale, channels (1 luma, 3 RGB), receptive radius, the tiling and precision in
        effect, and the counts of frames, tiles and reconfigurations so far, and the bytes copied
        between the session's float planes and the model's tensors (0 while every frame is one
        tile: the planes are bound to the executable in place)."""
        info = ffi.new(_NXE_SR_INFO_PTR)
        info.struct_size = ffi.sizeof("nxe_sr_info")
        with self._session() as session:
            sr_check(self._sr.nxe_sr_get_info(session, info))
        precision = {code: name for name, code in PRECISIONS.items()}
        return {
            "name": ffi.string(info.name).decode(),
            "scale": info.scale,
            "channels": info.channels,
            "receptive_radius": info.receptive_radius,
            "tile_size": info.tile_size,
            "tile_overlap": info.tile_overlap,
            "precision": precision.get(info.precision, str(info.precision)),
            "num_threads": info.num_threads,
            "frames": info.frames,
            "tiles": info.tiles,
            "reconfigurations": info.reconfigurations,
            "bytes_copied_in": info.bytes_copied_in,
            "bytes_copied_out": info.bytes_copied_out,
        }

    @property
    def scale(self) -> int:
        return self.info()["scale"]

    @property
    def channels(self) -> int:
        return self.info()["channels"]

    @property
    def name(self) -> str:
        return self.info()["name"]

    def upscale_planes(self, planes: Sequence[np.ndarray], format: str, *,
                       matrix: str = "bt601", range: str = "limited") -> list[np.ndarray]:
        """Upscales one frame given as its planes (see ``plane_shapes``; packed RGB may also be
        (rows, pixels * channels)) and returns new planes of the same layout, ``scale`` times
        larger. ``matrix`` and ``range`` state the frame's colour (bt601/bt709,
        limited/full)."""
        f = pixel_format(format)
        name, count, channels, dtype = f.name, f.planes, f.plane_samples[0], f.dtype
        if len(planes) != count:
            raise ValueError(f"{name} has {count} planes, got {len(planes)}")
        arrays = [np.asarray(p) for p in planes]
        first = arrays[0]
        if first.ndim < 2:
            raise ValueError(f"plane 0 must be 2-D or 3-D, got shape {first.shape}")
        height = first.shape[0]
        width = first.shape[1] if first.ndim == 3 or channels == 1 else first.shape[1] // channels
        expected = plane_shapes(name, width, height)
        frame_in = ffi.new(_NXE_SR_FRAME_PTR)
        keep = []
        for index, (array, shape) in enumerate(zip(arrays, expected)):
            flat_shape = (shape[0], int(np.prod(shape[1:])))
            if array.dtype != dtype:
                raise TypeError(f"{name} plane {index} must be {np.dtype(dtype).name}, "
                                f"got {array.dtype}")
            if array.shape not in (shape, flat_shape):
                raise ValueError(f"{name} plane {index} of a {width}x{height} frame must have "
                                 f"shape {shape}, got {array.shape}")
            rows = array.reshape(flat_shape) if array.flags.c_contiguous else array
            if rows.ndim == 3 or rows.strides[-1] != rows.itemsize:
                rows = np.ascontiguousarray(rows).reshape(flat_shape)
            keep.append(rows)
            frame_in.data[index] = ffi.cast(_VOID_PTR, rows.ctypes.data)
            frame_in.strides[index] = rows.strides[0]
        scale = self.scale
        outputs = [np.empty(shape, dtype)
                   for shape in plane_shapes(name, width * scale, height * scale)]
        frame_out = ffi.new(_NXE_SR_FRAME_PTR)
        for index, array in enumerate(outputs):
            frame_out.data[index] = ffi.cast(_VOID_PTR, array.ctypes.data)
            frame_out.strides[index] = array.strides[0]
        for frame, (w, h) in ((frame_in, (width, height)),
                              (frame_out, (width * scale, height * scale))):
            frame.struct_size = ffi.sizeof("nxe_sr_frame")
            frame.format = f.code
            frame.width = w
            frame.height = h
            frame.color_matrix = _choice(MATRICES, matrix, "matrix")
            frame.color_range = _choice(RANGES, range, "range")
        with self._session() as session:
            sr_check(self._sr.nxe_sr_process(session, frame_in, frame_out))
        del keep
        return [o.reshape(o.shape[0], -1) if a.ndim == 2 and o.ndim == 3 else o
                for a, o in zip(arrays, outputs)]

    def upscale(self, image: np.ndarray, *, format: str | None = None, matrix: str = "bt601",
                range: str = "limited") -> np.ndarray:
        """Upscales an 8-bit image: (H, W) gray, (H, W, 3) RGB or (H, W, 4) RGBA, unless
        ``format`` names another packed layout (bgr24, bgra). For RGB through a luma model,
        ``matrix`` and ``range`` choose the YCbCr it works in; BT.601 limited is what the
        shipped luma models were trained on."""
        array = np.asarray(image)
        if format is None:
            by_shape = {2: "gray8"} if array.ndim == 2 else {3: "rgb24", 4: "rgba"}
            key = 2 if array.ndim == 2 else (array.shape[2] if array.ndim == 3 else -1)
            if key not in by_shape:
                raise ValueError(f"expected an (H, W), (H, W, 3) or (H, W, 4) image, got shape "
                                 f"{array.shape}")
            format = by_shape[key]
        return self.upscale_planes([array], format, matrix=matrix, range=range)[0]
