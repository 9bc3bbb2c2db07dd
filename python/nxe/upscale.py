"""`nxe upscale`: images (PNG natively, JPEG with Pillow) and Y4M video through libnxe_sr, other
containers through an ffmpeg built with the nxe_sr filter; a progress line with frames per
second for video; PSNR and SSIM against a reference (luma, border of `scale` cropped).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TextIO

import numpy as np

from . import images, metrics
from .errors import Error

VIDEO_SUFFIXES = {".y4m"}


def find_ffmpeg() -> str | None:
    """An ffmpeg that has the nxe_sr filter: NXE_FFMPEG, else `ffmpeg` on PATH if it has one."""
    candidates = [os.environ.get("NXE_FFMPEG"), shutil.which("ffmpeg")]
    for candidate in filter(None, candidates):
        try:
            filters = subprocess.run([candidate, "-hide_banner", "-filters"], capture_output=True,
                                     text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        if " nxe_sr " in filters:
            return candidate
    return None


class Progress:
    """One status line on stderr: frames done (of total when known) and frames per second."""

    def __init__(self, total: int | None, stream: TextIO = sys.stderr) -> None:
        self.total, self.stream, self.start, self.done = total, stream, time.perf_counter(), 0

    def step(self) -> None:
        self.done += 1
        fps = self.done / max(time.perf_counter() - self.start, 1e-9)
        if self.total:
            filled = int(30 * self.done / self.total)
            bar = f"[{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total}"
        else:
            bar = f"{self.done} frames"
        self.stream.write(f"\r{bar} {fps:.1f} fps")
        self.stream.flush()

    def finish(self) -> float:
        elapsed = time.perf_counter() - self.start
        self.stream.write("\n")
        return self.done / max(elapsed, 1e-9)


def _quality(out: np.ndarray, reference: np.ndarray, scale: int) -> tuple[float, float]:
    y_out, y_ref = metrics.luma(out), metrics.luma(reference)
    if y_out.shape != y_ref.shape:
        raise ValueError(f"the reference is {y_ref.shape[1]}x{y_ref.shape[0]} but the output is "
                         f"{y_out.shape[1]}x{y_out.shape[0]}")
    return metrics.psnr(y_out, y_ref, border=scale), metrics.ssim(y_out, y_ref, border=scale)


def _upscale_image(up, args: argparse.Namespace) -> None:
    image = images.read_image(args.input)
    start = time.perf_counter()
    out = up.upscale(image, matrix=args.matrix)
    elapsed = (time.perf_counter() - start) * 1e3
    images.write_image(args.output, out)
    h, w = image.shape[:2]
    print(f"{args.input} ({w}x{h}) -> {args.output} ({out.shape[1]}x{out.shape[0]}) with "
          f"{up.name} in {elapsed:.1f} ms")
    if args.reference:
        reference = images.read_image(args.reference)
        psnr, ssim = _quality(out, reference, up.scale)
        print(f"against {args.reference}: PSNR {psnr:.2f} dB, SSIM {ssim:.4f} "
              f"(luma, border {up.scale} cropped)")


def _upscale_y4m(up, args: argparse.Namespace) -> None:
    scale = up.scale
    with open(args.input, "rb") as source, open(args.output, "wb") as sink:
        header = images.read_y4m_header(source)
        total = images.count_y4m_frames(args.input, source.tell(), header)
        images.write_y4m_header(sink, images.Y4mHeader(
            header.width * scale, header.height * scale, header.format, header.rate,
            header.full_range, header.extra))
        reference_frames = None
        if args.reference:
            reference_file = open(args.reference, "rb")
            reference_header = images.read_y4m_header(reference_file)
            reference_frames = images.y4m_frames(reference_file, reference_header)
        progress = Progress(total)
        scores = []
        for planes in images.y4m_frames(source, header):
            out = up.upscale_planes(planes, header.format, matrix=args.matrix,
                                    range="full" if header.full_range else "limited")
            images.write_y4m_frame(sink, out)
            if reference_frames is not None:
                expected = next(reference_frames, None)
                if expected is None:
                    raise ValueError(f"{args.reference} has fewer frames than {args.input}")
                peak = 1023.0 if header.format.endswith("10") else 255.0
                scores.append((metrics.psnr(out[0], expected[0], scale, peak),
                               metrics.ssim(out[0], expected[0], scale, peak)))
            progress.step()
        fps = progress.finish()
    print(f"{args.input} ({header.width}x{header.height}) -> {args.output} "
          f"({header.width * scale}x{header.height * scale}): {progress.done} frames with "
          f"{up.name}, {fps:.1f} fps")
    if scores:
        psnr, ssim = np.mean(scores, axis=0)
        print(f"against {args.reference}: PSNR {psnr:.2f} dB, SSIM {ssim:.4f} "
              f"(Y plane, border {scale} cropped, mean of {len(scores)} frames)")


def _upscale_ffmpeg(args: argparse.Namespace) -> None:
    ffmpeg = find_ffmpeg()
    suffix = Path(args.input).suffix
    if ffmpeg is None:
        raise ValueError(f"{args.input}: {suffix or 'this'} files go through an ffmpeg built with "
                         f"the nxe_sr filter (ffmpeg-filter/build.sh); none was found (set "
                         f"NXE_FFMPEG)")
    if args.reference:
        raise ValueError("--reference works with images and Y4M video")
    options = (f"nxe_sr=model={args.model}:threads={args.threads}:tile={args.tile}"
               f":overlap={-1 if args.overlap is None else args.overlap}"
               f":precision={args.precision}")
    command = [ffmpeg, "-hide_banner", "-loglevel", "error", "-stats", "-y", "-i", args.input,
               "-vf", options, "-c:v", args.codec, args.output]
    result = subprocess.run(command)
    if result.returncode:
        raise ValueError(f"ffmpeg failed with status {result.returncode}: {' '.join(command)}")
    print(f"{args.input} -> {args.output} through {ffmpeg}")


def run(args: argparse.Namespace) -> int:
    from .sr import Upscaler, sample_image

    if args.input == "sample":
        args.input = str(sample_image())
    suffix = Path(args.input).suffix.lower()
    try:
        if suffix not in images.IMAGE_SUFFIXES | VIDEO_SUFFIXES:
            _upscale_ffmpeg(args)
            return 0
        up = Upscaler(args.model, threads=args.threads, tile=args.tile, overlap=args.overlap,
                      precision=args.precision)
        if suffix in VIDEO_SUFFIXES:
            _upscale_y4m(up, args)
        else:
            _upscale_image(up, args)
    except (Error, OSError, ValueError) as error:
        print(f"nxe upscale: {error}", file=sys.stderr)
        return 1
    return 0


def add_parser(commands) -> None:
    from .sr import builtin_models

    upscale = commands.add_parser(
        "upscale", help="upscale an image or video with a super-resolution model",
        description="Upscales IN into OUT: PNG and JPEG images (JPEG needs Pillow) and Y4M video "
        "natively, other containers through an ffmpeg with the nxe_sr filter. IN may be "
        "'sample' for the photograph shipped with the package.")
    upscale.add_argument("input", metavar="IN", help="input file, or 'sample'")
    upscale.add_argument("-o", "--output", metavar="OUT", required=True, help="output file")
    upscale.add_argument("--model", default="espcn-x2",
                         help=f"built-in model ({', '.join(builtin_models())}) or .nxm "
                         "path (default espcn-x2)")
    upscale.add_argument("--threads", type=int, default=0, help="worker threads, 0 = one per CPU")
    upscale.add_argument("--tile", type=int, default=0,
                         help="largest input tile side; 0 = the library's default, -1 = untiled")
    upscale.add_argument("--overlap", type=int, default=None,
                         help="input pixels tiles share; default the model's receptive radius, "
                         "which makes tiles exact")
    upscale.add_argument("--precision", choices=("fp32", "relax"), default="fp32",
                         help="relax lets fp32 work run in bf16 (faster where the CPU has it)")
    upscale.add_argument("--matrix", choices=("bt601", "bt709"), default="bt601",
                         help="YUV matrix of the input (for RGB<->YUV conversion)")
    upscale.add_argument("--codec", default="rawvideo",
                         help="video encoder for containers written through ffmpeg (default "
                         "rawvideo, the one the minimal build of ffmpeg-filter/build.sh has)")
    upscale.add_argument("--reference", metavar="HR",
                         help="print PSNR and SSIM of the output against this file")
    upscale.set_defaults(handler=run)
