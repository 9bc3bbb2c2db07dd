"""`nxe upscale`: images (PNG natively, JPEG with Pillow) and Y4M video through libnxe_sr, other
containers through an ffmpeg built with the nxe_sr filter; one file, several, or a folder, into
a file or a folder; Y4M through pipes with `-`; progress on stderr (nxe/progress.py); PSNR and
SSIM against a reference (luma, border of `scale` cropped).

A user's files are never destroyed or half-written: every check that can fail (options, model
name, inputs, output formats, same-file, existing outputs, the reference) runs before anything
is written, and each output is written to a temporary file beside it and renamed into place only
once complete, so that an error or Ctrl-C leaves what was there before.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, TextIO

from .errors import Error, InvalidArgumentError
from .progress import Progress, Working, plural

# numpy, the image modules and libnxe_sr load when a command runs, not when `nxe` builds its
# parser: `nxe --help` stays quick.
if TYPE_CHECKING:
    import numpy as np

    from . import images

VIDEO_SUFFIXES = {".y4m"}
STDIO = "-"
DEFAULT_FAMILY = "espcn"
DEFAULT_SCALE = 2
# nxe_sr_options.tile_size's range (nxe_sr.h); the header states it in prose only.
MIN_TILE, MAX_TILE = 8, 16384
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for a command stopped by Ctrl-C
EXIT_TERMINATED = 143  # 128 + SIGTERM, as for a command a service manager or `kill` stopped


class Refusal(Exception):
    """A check before any work failed; the message says why in the command's words."""


@dataclass
class Job:
    input: str   # a path, or STDIO
    output: str  # a path, or STDIO
    kind: str    # "image", "video" or "ffmpeg"


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


# ---- options ----

def _families() -> dict[str, dict[int, str]]:
    """Built-in models by family and scale: {"espcn": {2: "espcn-x2", ...}, ...}."""
    from .sr import builtin_models

    families: dict[str, dict[int, str]] = {}
    for name in builtin_models():
        match = re.fullmatch(r"(.+)-x(\d+)", name)
        if match:
            families.setdefault(match[1], {})[int(match[2])] = name
    return families


def resolve_model(model: str | None, scale: int | None) -> str:
    """The built-in name or .nxm path that -m/--model and -s/--scale choose together."""
    from .sr import builtin_models

    families = _families()
    model = model or DEFAULT_FAMILY
    if "/" in model or model.endswith(".nxm"):
        return model  # a file: its scale is checked once it is open
    if model in builtin_models():
        built_in_scale = next(s for f in families.values() for s, n in f.items() if n == model)
        if scale is not None and scale != built_in_scale:
            family = model.rsplit("-x", 1)[0]
            raise Refusal(f"--scale {scale}: --model {model} upscales x{built_in_scale} "
                          f"(for another scale give the family: -m {family} -s {scale})")
        return model
    if model not in families:
        raise Refusal(f"--model {model}: no built-in SR model named {model!r}; built in: "
                      f"{', '.join(builtin_models())}; families: {', '.join(families)} "
                      f"(with -s), or an .nxm file")
    scale = DEFAULT_SCALE if scale is None else scale
    if scale not in families[model]:
        scales = ", ".join(str(s) for s in sorted(families[model]))
        raise Refusal(f"--scale {scale}: {model} comes in scales {scales}")
    return families[model][scale]


def _check_options(args: argparse.Namespace) -> None:
    if args.tile not in (0, -1) and not MIN_TILE <= args.tile <= MAX_TILE:
        raise Refusal(f"--tile {args.tile}: must be {MIN_TILE}..{MAX_TILE}, 0 for the default "
                      f"or -1 for untiled")
    if args.threads < 0:
        raise Refusal(f"--threads {args.threads}: must be 0 (one per CPU) or more")
    if args.scale is not None and args.scale < 1:
        raise Refusal(f"--scale {args.scale}: must be 1 or more")
    if args.overlap is not None and args.overlap < 0:
        raise Refusal(f"--overlap {args.overlap}: must be 0 or more")
    # A tile keeps a pixel of its own (nxe_sr.h); the default tile size depends on the model, so
    # with --tile 0 only the library can check the overlap.
    if args.overlap is not None and args.tile != 0:
        most = ((MAX_TILE if args.tile == -1 else args.tile) - 1) // 2
        if args.overlap > most:
            raise Refusal(f"--overlap {args.overlap}: must be 0..{most} with --tile "
                          f"{args.tile}")


# ---- inputs and outputs ----

def _image_suffixes() -> set[str]:
    from .images import IMAGE_SUFFIXES

    return IMAGE_SUFFIXES


def _kind(suffix: str) -> str:
    if suffix in VIDEO_SUFFIXES:
        return "video"
    return "image" if suffix in _image_suffixes() else "ffmpeg"


def _suffix(path: str) -> str:
    return ".y4m" if path == STDIO else Path(path).suffix.lower()


def _expand_inputs(inputs: list[str]) -> tuple[list[str], bool]:
    """The input files (a folder gives its images and Y4M files, sorted) and whether there is
    more than one source (a folder or several files), which makes the output a folder."""
    from .sr import sample_image

    files, many = [], len(inputs) > 1
    for given in inputs:
        if given == "sample":
            files.append(str(sample_image()))
        elif given == STDIO:
            if len(inputs) > 1:
                raise Refusal("- (standard input) must be the only input")
            files.append(STDIO)
        elif os.path.isdir(given):
            many = True
            found = sorted(str(p) for p in Path(given).iterdir()
                           if p.is_file() and _kind(p.suffix.lower()) != "ffmpeg")
            if not found:
                raise Refusal(f"{given}: no images or Y4M files in this folder")
            files += found
        elif not os.path.exists(given):
            raise Refusal(f"{given}: no such file")
        else:
            files.append(given)
    return files, many


def _plan(inputs: list[str], output: str) -> list[Job]:
    """Pairs each input with its output and checks that each pair can be done."""
    files, many = _expand_inputs(inputs)
    to_folder = many or os.path.isdir(output) or output.endswith(("/", os.sep))
    if to_folder:
        if output == STDIO:
            raise Refusal("-o -: standard output takes one Y4M stream, not several files")
        if os.path.exists(output) and not os.path.isdir(output):
            raise Refusal(f"-o {output}: several inputs need an output folder, and this is a "
                          f"file")
        if STDIO in files:
            raise Refusal("-i -: standard input needs an output file or -o -")
        jobs = [Job(f, os.path.join(output, Path(f).name), _kind(_suffix(f))) for f in files]
        seen: dict[str, str] = {}
        for job in jobs:
            if job.output in seen:
                raise Refusal(f"{seen[job.output]} and {job.input} would both be written to "
                              f"{job.output}")
            seen[job.output] = job.input
    else:
        source, target = files[0], output
        in_suffix, out_suffix = _suffix(source), _suffix(target)
        in_kind, out_kind = _kind(in_suffix), _kind(out_suffix)
        if out_kind != in_kind and "ffmpeg" not in (in_kind, out_kind):
            shown = "standard output (Y4M)" if target == STDIO else f"{target} ({out_kind})"
            what = "a Y4M video" if in_kind == "video" else f"a {in_suffix[1:].upper()} image"
            raise Refusal(f"{source} is {what} and cannot be written as {shown}; give the "
                          f"output a {' or '.join(sorted(_suffixes_of(in_kind)))} suffix")
        if STDIO in (source, target) and "ffmpeg" in (in_kind, out_kind):
            raise Refusal("- (standard input or output) carries Y4M video only")
        jobs = [Job(source, target, "ffmpeg" if "ffmpeg" in (in_kind, out_kind) else in_kind)]
    for job in jobs:
        if job.kind == "ffmpeg" and find_ffmpeg() is None:
            unknown = job.input if _kind(_suffix(job.input)) == "ffmpeg" else job.output
            raise Refusal(f"{unknown}: {_suffix(unknown) or 'suffix-less'} files go through an "
                          f"ffmpeg built with the nxe_sr filter (ffmpeg-filter/build.sh); none "
                          f"was found (set NXE_FFMPEG); nxe reads and writes "
                          f"{', '.join(sorted(_image_suffixes() | VIDEO_SUFFIXES))} itself")
        if job.input != STDIO and job.output != STDIO and _same_file(job.input, job.output):
            raise Refusal(f"{job.output} is the input {job.input}; give another output")
    folder = os.path.dirname(os.path.abspath(output))
    if not to_folder and output != STDIO and not os.path.isdir(folder):
        raise Refusal(f"-o {output}: there is no folder {folder}")
    return jobs


def _shown(path: str, stream: str) -> str:
    return stream if path == STDIO else path


def _suffixes_of(kind: str) -> set[str]:
    return VIDEO_SUFFIXES if kind == "video" else _image_suffixes()


def _same_file(a: str, b: str) -> bool:
    """Whether paths `a` and `b` name one file: the same path, a symbolic or a hard link."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # `b` does not exist yet
        return False


def _confirm_overwrites(jobs: list[Job], args: argparse.Namespace) -> None:
    """Refuses existing outputs unless -y; asks on a terminal as ffmpeg does."""
    for job in jobs:
        if job.output == STDIO or not os.path.lexists(job.output):
            continue
        if os.path.isdir(job.output):
            raise Refusal(f"{job.output} is a folder; name the output file inside it")
        if args.yes:
            continue
        if args.no:
            raise Refusal(f"{job.output} already exists; not overwriting it (-n)")
        if STDIO != job.input and sys.stdin.isatty():
            sys.stderr.write(f"File '{job.output}' already exists. Overwrite? [y/N] ")
            sys.stderr.flush()
            try:
                answer = sys.stdin.readline().strip().lower()
            except EOFError:
                answer = ""
            if answer not in ("y", "yes"):
                raise Refusal(f"{job.output} already exists; not overwriting it")
        else:
            raise Refusal(f"{job.output} already exists; pass -y to overwrite it")


@contextlib.contextmanager
def _atomic(path: str) -> Iterator[str]:
    """A temporary path beside `path` (same suffix, so that writers pick the format from it)
    that becomes `path` only if the block completes; otherwise it is removed. A symbolic
    link at `path` keeps pointing at the new file."""
    target = os.path.realpath(path)
    folder, name = os.path.split(target)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    handle, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=f".part{Path(name).suffix}",
                                         dir=folder)
    try:
        os.close(handle)
        yield temporary
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(temporary)
        raise


# ---- the work ----

def _quality(out: np.ndarray, reference: np.ndarray, scale: int) -> tuple[float, float]:
    from . import metrics

    y_out, y_ref = metrics.luma(out), metrics.luma(reference)
    return metrics.psnr(y_out, y_ref, border=scale), metrics.ssim(y_out, y_ref, border=scale)


class Runner:
    """Upscales the jobs with one Upscaler (opened on first use) and reports on `report`
    (stdout, or stderr when stdout carries the video)."""

    def __init__(self, args: argparse.Namespace, model: str, report: TextIO) -> None:
        self.args, self.model, self.report = args, model, report
        self._up = None

    @property
    def up(self):
        if self._up is None:
            from .sr import Upscaler

            try:
                up = Upscaler(self.model, threads=self.args.threads, tile=self.args.tile,
                              overlap=self.args.overlap, precision=self.args.precision)
            except InvalidArgumentError:
                self._check_tile_fits()
                raise
            if self.args.scale is not None and up.scale != self.args.scale:
                raise Refusal(f"--scale {self.args.scale}: {self.model} upscales x{up.scale}")
            self._up = up
        return self._up

    def _check_tile_fits(self) -> None:
        """Says in the command's words when --tile is too small for the overlap the model
        needs by default (its receptive radius, which the library checks at open)."""
        from .model import Model
        from .sr import model_path

        if self.args.tile <= 0 or self.args.overlap is not None:
            return
        with Model(model_path(self.model), lazy=True) as model:
            radius = model.metadata.get("receptive_radius")
        if isinstance(radius, int) and self.args.tile < 2 * radius + 1:
            raise Refusal(f"--tile {self.args.tile}: {self.model} needs tiles of at least "
                          f"{2 * radius + 1}, as they overlap by its receptive radius {radius} on "
                          f"each side; give a larger --tile or a smaller --overlap")

    def image(self, job: Job, progress: Progress | None) -> None:
        from . import images

        image = images.read_image(job.input)
        h, w = image.shape[:2]
        reference = self._image_reference(w, h)
        up = self.up
        start = time.perf_counter()
        with Working(f"upscaling {job.input} ({w}x{h}) with {up.name}") if progress is None \
                else contextlib.nullcontext():
            out = up.upscale(image, matrix=self.args.matrix)
        elapsed = time.perf_counter() - start
        with _atomic(job.output) as temporary:
            images.write_image(temporary, out)
        self._say(progress, f"{job.input} ({w}x{h}) -> {job.output} ({out.shape[1]}x"
                  f"{out.shape[0]}) with {up.name} in {elapsed:.2f} s")
        if reference is not None:
            psnr, ssim = _quality(out, reference, up.scale)
            self._say(progress, f"against {self.args.reference}: PSNR {psnr:.2f} dB, SSIM "
                      f"{ssim:.4f} (luma, border {up.scale} cropped)")

    def _image_reference(self, width: int, height: int) -> np.ndarray | None:
        from . import images

        if not self.args.reference:
            return None
        reference = images.read_image(self.args.reference)
        self._check_reference_size(reference.shape[1], reference.shape[0], width, height)
        return reference

    def _check_reference_size(self, ref_w: int, ref_h: int, width: int, height: int) -> None:
        scale = self.up.scale
        if (ref_w, ref_h) != (width * scale, height * scale):
            raise Refusal(f"--reference {self.args.reference} is {ref_w}x{ref_h} but the output "
                          f"will be {width * scale}x{height * scale}")

    def video(self, job: Job, progress: Progress | None) -> None:
        import numpy as np

        from . import images, metrics

        with contextlib.ExitStack() as stack:
            if job.input == STDIO:
                source: BinaryIO = sys.stdin.buffer
            else:
                source = stack.enter_context(open(job.input, "rb"))
            header = images.read_y4m_header(source)
            total = (None if job.input == STDIO else
                     images.count_y4m_frames(job.input, source.tell(), header))
            reference_frames = self._video_reference(stack, header, total)
            up = self.up
            if job.output == STDIO:
                sink: BinaryIO = sys.stdout.buffer
            else:
                temporary = stack.enter_context(_atomic(job.output))
                sink = stack.enter_context(open(temporary, "wb"))
            scale = up.scale
            images.write_y4m_header(sink, images.Y4mHeader(
                header.width * scale, header.height * scale, header.format, header.rate,
                header.full_range, header.extra))
            frames = progress or stack.enter_context(
                Progress(total, "frame", _shown(job.input, "stdin")))
            done, scores, start = 0, [], time.perf_counter()
            for planes in images.y4m_frames(source, header):
                out = up.upscale_planes(planes, header.format, matrix=self.args.matrix,
                                        range="full" if header.full_range else "limited")
                images.write_y4m_frame(sink, out)
                if reference_frames is not None:
                    expected = next(reference_frames, None)
                    if expected is None:
                        raise Refusal(f"--reference {self.args.reference} has fewer frames than "
                                      f"{job.input}")
                    peak = 1023.0 if header.format.endswith("10") else 255.0
                    scores.append((metrics.psnr(out[0], expected[0], scale, peak),
                                   metrics.ssim(out[0], expected[0], scale, peak)))
                done += 1
                if progress is None:
                    frames.update()
            sink.flush()
            elapsed = time.perf_counter() - start
            if progress is None:
                frames.close()
        self._say(progress, f"{_shown(job.input, 'stdin')} ({header.width}x{header.height}) -> "
                  f"{_shown(job.output, 'stdout')} "
                  f"({header.width * scale}x{header.height * scale}): {plural(done, 'frame')} "
                  f"with {up.name} in {elapsed:.2f} s, {done / max(elapsed, 1e-9):.1f} fps")
        if scores:
            psnr, ssim = np.mean(scores, axis=0)
            self._say(progress, f"against {self.args.reference}: PSNR {psnr:.2f} dB, SSIM "
                      f"{ssim:.4f} (Y plane, border {scale} cropped, mean of "
                      f"{plural(len(scores), 'frame')})")

    def _video_reference(self, stack: contextlib.ExitStack, header: images.Y4mHeader,
                         total: int | None):
        from . import images

        if not self.args.reference:
            return None
        reference = stack.enter_context(open(self.args.reference, "rb"))
        reference_header = images.read_y4m_header(reference)
        self._check_reference_size(reference_header.width, reference_header.height,
                                   header.width, header.height)
        if reference_header.format != header.format:
            raise Refusal(f"--reference {self.args.reference} is {reference_header.format}, "
                          f"the input {header.format}")
        reference_total = images.count_y4m_frames(self.args.reference, reference.tell(),
                                                  reference_header)
        if None not in (total, reference_total) and reference_total < total:
            raise Refusal(f"--reference {self.args.reference} has "
                          f"{plural(reference_total, 'frame')}, the input {total}")
        return images.y4m_frames(reference, reference_header)

    def ffmpeg(self, job: Job, progress: Progress | None) -> None:
        ffmpeg = find_ffmpeg()
        args = self.args
        options = (f"nxe_sr=model={self.model}:threads={args.threads}:tile={args.tile}"
                   f":overlap={-1 if args.overlap is None else args.overlap}"
                   f":precision={args.precision}")
        # ffmpeg's -stats line rewrites itself with carriage returns: only for a terminal.
        stats = "-stats" if sys.stderr.isatty() and progress is None else "-nostats"
        with _atomic(job.output) as temporary:
            command = [ffmpeg, "-hide_banner", "-loglevel", "error", stats, "-y", "-i",
                       job.input, "-vf", options, "-c:v", args.codec, temporary]
            result = subprocess.run(command)
            if result.returncode:
                raise Refusal(f"ffmpeg failed with status {result.returncode}: "
                              f"{' '.join(command)}")
        self._say(progress, f"{job.input} -> {job.output} through {ffmpeg}")

    def _say(self, progress: Progress | None, text: str) -> None:
        if progress is None:
            print(text, file=self.report, flush=True)
        else:
            progress.write(text, self.report)


class _Terminated(BaseException):
    """SIGTERM, raised where the program is so that the unwinding removes temporary files as
    Ctrl-C's KeyboardInterrupt does."""


def _raise_terminated(signum: int, frame: object) -> None:
    raise _Terminated


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        return _run(args, parser)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    inputs = [*args.inputs, *(args.input or [])]
    if not inputs:
        parser.error("give an input: IN or -i IN")
    try:
        _check_options(args)
        model = resolve_model(args.model, args.scale)
    except Refusal as error:
        parser.error(str(error))
    report = sys.stderr if args.output == STDIO else sys.stdout
    progress = None
    try:
        jobs = _plan(inputs, args.output)
        if args.reference:
            if len(jobs) > 1:
                raise Refusal("--reference works with one input")
            if jobs[0].kind == "ffmpeg":
                raise Refusal("--reference works with images and Y4M video")
            if not os.path.isfile(args.reference):
                raise Refusal(f"--reference {args.reference}: no such file")
            if jobs[0].output != STDIO and _same_file(args.reference, jobs[0].output):
                raise Refusal(f"{jobs[0].output} is the --reference file; give another output")
        _confirm_overwrites(jobs, args)
        runner = Runner(args, model, report)
        if len(jobs) > 1:
            os.makedirs(args.output, exist_ok=True)
            progress = Progress(len(jobs), "file", "upscaling")
        for job in jobs:
            try:
                getattr(runner, job.kind)(job, progress)
            except ValueError as error:
                # Stream readers cannot name the file they read; say which one it was.
                if job.input not in str(error):
                    raise ValueError(f"{_shown(job.input, 'stdin')}: {error}") from error
                raise
            if progress is not None:
                progress.update()
    except KeyboardInterrupt:
        _end_bar(progress)
        print("nxe upscale: interrupted; no output was left", file=sys.stderr)
        return EXIT_INTERRUPTED
    except _Terminated:
        _end_bar(progress)
        print("nxe upscale: terminated; no output was left", file=sys.stderr)
        return EXIT_TERMINATED
    except BrokenPipeError:
        # The reader of -o - went away: nothing more can be written, and Python's own flush of
        # stdout at exit would fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        _end_bar(progress)
        print("nxe upscale: the output pipe was closed", file=sys.stderr)
        return 1
    except (Refusal, Error, OSError, ValueError) as error:
        _end_bar(progress)
        print(f"nxe upscale: {_words(error)}", file=sys.stderr)
        return 1
    _end_bar(progress)
    return 0


def _end_bar(progress: Progress | None) -> None:
    if progress is not None:
        progress.close()


def _words(error: Exception) -> str:
    """An OSError as 'file: reason' rather than '[Errno 2] ...'."""
    if isinstance(error, FileNotFoundError) and error.filename:
        return f"{error.filename}: no such file"
    if isinstance(error, OSError) and error.filename and error.strerror:
        return f"{error.filename}: {error.strerror.lower()}"
    return str(error)


def add_parser(commands) -> None:
    from .cli import RawDescriptionFormatter

    upscale = commands.add_parser(
        "upscale", help="upscale images or video with a super-resolution model",
        formatter_class=RawDescriptionFormatter,
        description=textwrap.fill(
            "Upscales IN into OUT: PNG and JPEG images (JPEG needs Pillow) and Y4M video "
            "natively, other containers through an ffmpeg with the nxe_sr filter. IN may be "
            "'sample' for the photograph shipped with the package, a folder (its images and Y4M "
            "files), several files, or - for Y4M on standard input; OUT is then a folder (created "
            "if missing), or - for Y4M on standard output. The output's suffix is its format. "
            "An existing output is overwritten only with -y (asked about on a terminal); the "
            "output is never the input, and nothing is left behind by a failed or interrupted "
            "run.", 79),
        epilog="examples:\n"
        "  nxe upscale photo.png -o photo-x2.png\n"
        "  nxe upscale -i photos/ -o big/ -m edsr -s 4\n"
        "  nxe upscale -i - -o - < clip.y4m > clip-x2.y4m")
    upscale.add_argument("inputs", nargs="*", metavar="IN", help="input file(s) or folder")
    upscale.add_argument("-i", "--input", action="append", metavar="IN",
                         help="input file or folder (repeatable; - for Y4M on stdin)")
    upscale.add_argument("-o", "--output", metavar="OUT", required=True,
                         help="output file, or folder for several inputs, or - for Y4M on "
                         "stdout")
    upscale.add_argument("-m", "--model", default=DEFAULT_FAMILY,
                         help="a family, whose model -s picks (built-in models are named "
                         "FAMILY-xSCALE, such as espcn-x2; `nxe models` lists them), a built-in "
                         "model's name, or an .nxm file (default: %(default)s)")
    upscale.add_argument("-s", "--scale", type=int, default=None,
                         help=f"which model of the family, by scale (default: {DEFAULT_SCALE} "
                         f"for a family, the model's own for a model)")
    upscale.add_argument("-t", "--tile", type=int, default=0,
                         help=f"largest input tile side, {MIN_TILE}..{MAX_TILE}; 0 = the "
                         "library's default, -1 = untiled (default: %(default)s)")
    upscale.add_argument("-j", "--threads", type=int, default=0,
                         help="worker threads, 0 = one per CPU (default: %(default)s)")
    overwrite = upscale.add_mutually_exclusive_group()
    overwrite.add_argument("-y", "--yes", action="store_true",
                           help="overwrite existing outputs without asking")
    overwrite.add_argument("-n", "--no", action="store_true",
                           help="never overwrite: refuse when an output exists")
    upscale.add_argument("--overlap", type=int, default=None,
                         help="input pixels tiles share (default: the model's receptive radius, "
                         "which makes tiles exact)")
    upscale.add_argument("--precision", choices=("fp32", "relax", "int8"), default="fp32",
                         help="relax lets fp32 work run in bf16 where the CPU has it; int8 "
                         "runs the model's int8 variant (the ESPCN models; within 0.05 dB of "
                         "fp32) (default: %(default)s)")
    upscale.add_argument("--matrix", choices=("bt601", "bt709"), default="bt601",
                         help="YUV matrix of the input, for RGB<->YUV conversion "
                         "(default: %(default)s)")
    upscale.add_argument("--codec", default="rawvideo",
                         help="video encoder for containers written through ffmpeg; rawvideo "
                         "is the one the minimal build of ffmpeg-filter/build.sh has "
                         "(default: %(default)s)")
    upscale.add_argument("--reference", metavar="HR",
                         help="print PSNR and SSIM of the output against this file")
    upscale.set_defaults(handler=functools.partial(run, parser=upscale))
