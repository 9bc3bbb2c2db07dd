"""FFmpeg's nxe_sr filter (ffmpeg-filter/) against libnxe_sr called directly: the same testsrc2
frames go through `ffmpeg -vf ...,nxe_sr` and through nxe.sr.Upscaler, and every output frame
must agree within one code. The ffmpeg binary comes from ffmpeg-filter/build.sh."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import nxe
import nxe.sr
import pytest

REPO = Path(__file__).resolve().parents[1]
FFMPEG = Path(os.environ.get("NXE_FFMPEG", REPO / "build" / "ffmpeg" / "ffmpeg"))
# Codes: the filter and the direct call run the same library on the same samples.
TOLERANCE = 1
# The filter's defaults, spelled as nxe.sr.Upscaler's arguments.
LIBRARY_DEFAULTS = {"threads": 0, "tile": 0, "overlap": None, "precision": "fp32"}


@pytest.fixture(scope="module")
def ffmpeg() -> Path:
    """The ffmpeg built with the filter; missing, the module skips unless NXE_REQUIRE_FFMPEG=1."""
    if not (FFMPEG.is_file() and os.access(FFMPEG, os.X_OK)):
        reason = f"no ffmpeg with the nxe_sr filter at {FFMPEG} (build it: ffmpeg-filter/build.sh)"
        if os.environ.get("NXE_REQUIRE_FFMPEG") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return FFMPEG


@dataclass(frozen=True)
class PixelFormat:
    """A pixel format as ffmpeg names it and as nxe.sr names it."""

    ffmpeg: str
    nxe: str

    @property
    def dtype(self) -> np.dtype:
        """The sample type, as libnxe_sr's format table has it."""
        return nxe.sr.FORMATS[self.nxe].dtype

    def plane_shapes(self, width: int, height: int) -> list[tuple[int, int]]:
        """(rows, samples per row) of each plane, as rawvideo packs them."""
        return [(shape[0], math.prod(shape[1:]))
                for shape in nxe.sr.plane_shapes(self.nxe, width, height)]


FORMATS = {
    f.ffmpeg: f
    for f in [
        PixelFormat("gray", "gray8"),
        PixelFormat("yuv420p", "yuv420p"),
        PixelFormat("yuv422p", "yuv422p"),
        PixelFormat("yuv444p", "yuv444p"),
        PixelFormat("yuv420p10le", "yuv420p10"),
        PixelFormat("yuv444p10le", "yuv444p10"),
        PixelFormat("nv12", "nv12"),
        PixelFormat("rgb24", "rgb24"),
        PixelFormat("bgra", "bgra"),
    ]
}

# What the filter reads from a frame's colorspace and color_range, and the setparams values that
# put it there.
COLOUR_PARAMS = {
    ("bt709", "limited"): "colorspace=bt709:range=tv",
    ("bt601", "full"): "colorspace=smpte170m:range=pc",
}


@dataclass(frozen=True)
class Clip:
    """testsrc2 frames in `pixel_format`, labelled with a colour matrix and range."""

    width: int
    height: int
    frames: int
    pixel_format: PixelFormat
    matrix: str = "bt709"
    range: str = "limited"

    def source(self) -> str:
        # testsrc2 rounds its size down to the subsampling of the format it draws in, so it
        # draws RGB and the format filter makes the odd-sized frames.
        return f"testsrc2=size={self.width}x{self.height}:rate=25,format=rgb24"

    def chain(self) -> str:
        params = COLOUR_PARAMS[self.matrix, self.range]
        return f"format={self.pixel_format.ffmpeg},setparams={params}"


def run_ffmpeg(
    ffmpeg: Path,
    source: str,
    chain: str,
    frames: int,
    muxer: str = "rawvideo",
    loglevel: str = "error",
) -> subprocess.CompletedProcess[bytes]:
    """ffmpeg on a lavfi source through `chain`, output to stdout; the finished process."""
    command = [
        str(ffmpeg), "-nostdin", "-hide_banner", "-loglevel", loglevel,
        "-f", "lavfi", "-i", source, "-vf", chain, "-frames:v", str(frames),
        "-fps_mode", "passthrough", "-f", muxer, "-",
    ]  # fmt: skip
    return subprocess.run(
        command, check=False, stdin=subprocess.DEVNULL, capture_output=True, timeout=300
    )


def read_frames(
    ffmpeg: Path, clip: Clip, chain: str, scale: int
) -> list[list[np.ndarray]]:
    """The frames ffmpeg writes for `clip` through `chain`, each as its list of planes."""
    result = run_ffmpeg(ffmpeg, clip.source(), chain, clip.frames)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    fmt = clip.pixel_format
    shapes = fmt.plane_shapes(clip.width * scale, clip.height * scale)
    dtype = fmt.dtype
    frame_bytes = sum(math.prod(shape) for shape in shapes) * dtype.itemsize
    data = result.stdout
    assert len(data) % frame_bytes == 0, (
        f"{len(data)} bytes is no whole number of frames"
    )
    frames = []
    for start in range(0, len(data), frame_bytes):
        planes, offset = [], start
        for shape in shapes:
            count = math.prod(shape)
            planes.append(np.frombuffer(data, dtype, count, offset).reshape(shape))
            offset += count * dtype.itemsize
        frames.append(planes)
    return frames


def test_format_table_agrees_with_ffmpeg_pixel_formats(ffmpeg):
    """libnxe_sr's format table against FFmpeg's own descriptors (`ffmpeg -pix_fmts`): the
    components and bits per pixel of every format the filter maps, from planes, samples per
    pixel, subsampling and bits."""
    listing = subprocess.run([str(ffmpeg), "-hide_banner", "-pix_fmts"], check=True,
                             capture_output=True, text=True, timeout=60).stdout
    described = {}
    for line in listing.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[2].isdigit() and fields[3].isdigit():
            described[fields[1]] = (int(fields[2]), int(fields[3]))
    for pixel_format in FORMATS.values():
        f = nxe.sr.FORMATS[pixel_format.nxe]
        chroma_area = f.chroma[0] * f.chroma[1]
        samples = f.plane_samples[0] + sum(f.plane_samples[1:]) / chroma_area
        assert described[pixel_format.ffmpeg] == (sum(f.plane_samples), f.bits * samples), (
            pixel_format)


def assert_filter_matches_library(
    ffmpeg: Path, clip: Clip, model: str, filter_options: str = "", **library_options
) -> None:
    """Upscales `clip` through the filter with `filter_options` and through an nxe.sr.Upscaler
    with `library_options`; every frame agrees within one code."""
    upscaler = nxe.sr.Upscaler(model, **(LIBRARY_DEFAULTS | library_options))
    options = f"model={model}" + (f":{filter_options}" if filter_options else "")
    inputs = read_frames(ffmpeg, clip, clip.chain(), 1)
    outputs = read_frames(
        ffmpeg, clip, f"{clip.chain()},nxe_sr={options}", upscaler.scale
    )
    assert len(inputs) == clip.frames
    assert len(outputs) == len(inputs)
    for index, (planes_in, planes_out) in enumerate(zip(inputs, outputs)):
        expected = upscaler.upscale_planes(
            planes_in, clip.pixel_format.nxe, matrix=clip.matrix, range=clip.range
        )
        assert len(expected) == len(planes_out)
        for plane, (want, got) in enumerate(zip(expected, planes_out)):
            want = np.asarray(want)
            assert want.size == got.size, f"plane {plane}: {want.shape} for {got.shape}"
            want = want.reshape(got.shape)
            difference = np.abs(want.astype(np.int32) - got.astype(np.int32)).max()
            assert difference <= TOLERANCE, (
                f"frame {index} plane {plane}: off by {difference}"
            )


@pytest.mark.parametrize("pixel_format", FORMATS)
def test_filter_output_equals_library_on_odd_sized_frames(ffmpeg, pixel_format):
    clip = Clip(97, 61, 4, FORMATS[pixel_format])
    assert_filter_matches_library(ffmpeg, clip, "espcn-x2")


@pytest.mark.parametrize("matrix, range_", list(COLOUR_PARAMS))
@pytest.mark.parametrize(
    "model, pixel_format, width, height",
    [("espcn-x2", "rgb24", 97, 61), ("edsr-x2", "yuv420p", 40, 30)],
)
def test_filter_passes_the_frames_colour_to_the_library(
    ffmpeg, model, pixel_format, width, height, matrix, range_
):
    # RGB through a luma model and YUV through an RGB model are converted with the frame's
    # matrix and range, which the filter reads from the frame.
    clip = Clip(width, height, 2, FORMATS[pixel_format], matrix=matrix, range=range_)
    assert_filter_matches_library(ffmpeg, clip, model)


@pytest.mark.parametrize("pixel_format", ["yuv420p", "rgb24"])
def test_filter_runs_an_rgb_model(ffmpeg, pixel_format):
    clip = Clip(40, 30, 2, FORMATS[pixel_format])
    assert_filter_matches_library(ffmpeg, clip, "edsr-x2")


def test_tiled_filter_output_equals_untiled_library(ffmpeg, monkeypatch):
    # Byte for byte with direct convolutions (Winograd's rounding depends on where a frame is
    # cut: tests/test_sr.py); the filter and this process both read the variable.
    monkeypatch.setenv("NXE_WINOGRAD", "off")
    clip = Clip(97, 61, 3, FORMATS["yuv420p"])
    assert_filter_matches_library(
        ffmpeg, clip, "espcn-x2", filter_options="tile=16", tile=-1
    )


def test_filter_overlap_reaches_the_library(ffmpeg):
    # Without overlap, tiles differ from an untiled run; the filter must match the library's
    # own tiles with the same overlap.
    clip = Clip(97, 61, 2, FORMATS["gray"])
    assert_filter_matches_library(
        ffmpeg, clip, "espcn-x2", filter_options="tile=16:overlap=0", tile=16, overlap=0
    )


def test_relaxed_filter_output_equals_relaxed_library(ffmpeg):
    clip = Clip(97, 61, 2, FORMATS["yuv444p"])
    assert_filter_matches_library(
        ffmpeg,
        clip,
        "espcn-x2",
        filter_options="precision=relax:threads=2",
        precision="relax",
        threads=2,
    )


def test_int8_filter_output_equals_int8_library(ffmpeg):
    clip = Clip(97, 61, 2, FORMATS["yuv420p"])
    assert_filter_matches_library(
        ffmpeg,
        clip,
        "espcn-x2",
        filter_options="precision=int8:threads=2",
        precision="int8",
        threads=2,
    )


def test_filter_hands_its_options_to_the_library(ffmpeg):
    # The filter reports the session it opened at the verbose level.
    chain = "format=yuv420p,nxe_sr=model=espcn-x2:tile=16:threads=3:precision=relax"
    result = run_ffmpeg(
        ffmpeg, "testsrc2=size=32x32", chain, 1, muxer="null", loglevel="verbose"
    )
    log = result.stderr.decode(errors="replace")
    assert result.returncode == 0, log
    assert "model espcn-x2: x2 on luma, tile 16, overlap 4, relax, 3 threads" in log


def test_filter_scales_the_size_and_keeps_the_sample_aspect_ratio(ffmpeg):
    result = run_ffmpeg(
        ffmpeg,
        "testsrc2=size=64x48:rate=25:sar=4/3",
        "format=yuv420p,nxe_sr",
        1,
        muxer="yuv4mpegpipe",
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    header = result.stdout.split(b"\n", 1)[0].split()
    assert header[0] == b"YUV4MPEG2"
    assert {b"W128", b"H96", b"A4:3"} <= set(header[1:])


@pytest.mark.parametrize(
    "filter_options, library_options",
    [
        ("model=no-such-model", {"model": "no-such-model"}),
        ("tile=3", {"tile": 3}),
        ("model=edsr-x2:precision=int8", {"model": "edsr-x2", "precision": "int8"}),
        # Overlaps whose double wrapped in int32: opened, then crashed on the first tiled frame.
        ("overlap=1073741824", {"overlap": 2**30}),
        ("overlap=2147483647", {"overlap": 2**31 - 1}),
    ],
)
def test_bad_option_fails_with_the_librarys_message(
    ffmpeg, filter_options, library_options
):
    with pytest.raises(nxe.Error) as error:
        nxe.sr.Upscaler(**({"model": "espcn-x2"} | LIBRARY_DEFAULTS | library_options))
    result = run_ffmpeg(ffmpeg, "testsrc2=size=32x32", f"nxe_sr={filter_options}", 1)
    assert result.returncode != 0
    assert str(error.value) in result.stderr.decode(errors="replace")


def decode_raw(ffmpeg: Path, path: Path, fmt: PixelFormat, width: int, height: int):
    """The frames of a file as planes, decoded by ffmpeg to rawvideo."""
    result = subprocess.run(
        [str(ffmpeg), "-nostdin", "-hide_banner", "-loglevel", "error", "-i", str(path),
         "-f", "rawvideo", "-pix_fmt", fmt.ffmpeg, "-"],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    shapes = fmt.plane_shapes(width, height)
    frame_bytes = sum(math.prod(shape) for shape in shapes)
    data = result.stdout
    assert len(data) % frame_bytes == 0
    frames = []
    for start in range(0, len(data), frame_bytes):
        planes, offset = [], start
        for shape in shapes:
            planes.append(np.frombuffer(data, np.uint8, math.prod(shape), offset).reshape(shape))
            offset += math.prod(shape)
        frames.append(planes)
    return frames


def test_nxe_upscale_takes_other_containers_through_ffmpeg(ffmpeg, tmp_path):
    clip = tmp_path / "in.mkv"
    made = subprocess.run(
        [str(ffmpeg), "-nostdin", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i",
         "testsrc2=size=42x30:rate=25,format=yuv420p", "-frames:v", "3", "-c:v", "rawvideo",
         str(clip)],
        capture_output=True, timeout=300,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr.decode(errors="replace")
    out = tmp_path / "out.mkv"
    result = subprocess.run(
        [sys.executable, "-m", "nxe", "upscale", str(clip), "-o", str(out)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "NXE_FFMPEG": str(ffmpeg)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "through" in result.stdout
    fmt = FORMATS["yuv420p"]
    frames_in = decode_raw(ffmpeg, clip, fmt, 42, 30)
    frames_out = decode_raw(ffmpeg, out, fmt, 84, 60)
    assert len(frames_in) == len(frames_out) == 3
    upscaler = nxe.sr.Upscaler("espcn-x2")
    for planes_in, planes_out in zip(frames_in, frames_out):
        for want, got in zip(upscaler.upscale_planes(planes_in, "yuv420p"), planes_out):
            assert np.abs(want.astype(int) - got.astype(int)).max() <= TOLERANCE


def test_nxe_upscale_without_a_filtered_ffmpeg_says_how_to_get_one(tmp_path):
    (tmp_path / "in.mkv").write_bytes(b"\x1aE\xdf\xa3")  # exists: a missing file is refused first
    result = subprocess.run(
        [sys.executable, "-m", "nxe", "upscale", str(tmp_path / "in.mkv"), "-o",
         str(tmp_path / "out.mkv")],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "NXE_FFMPEG": str(tmp_path / "none"), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert result.returncode == 1
    assert "ffmpeg-filter/build.sh" in result.stderr
