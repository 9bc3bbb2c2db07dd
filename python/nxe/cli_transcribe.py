"""`nxe transcribe`: speech in an audio file to text, SubRip or WebVTT subtitles, or JSON (the
transcript with its segments), with a baked Whisper model (`nxe bake`) or a known model's name
(whisper-base, baked into the cache on first use). Prints to stdout, or writes -o FILE
complete or not at all (a temporary file beside it, renamed into place at the end)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

DEFAULT_MODEL = "whisper-base"
FORMATS = ("text", "srt", "vtt", "json")
_SUFFIX_FORMATS = {".txt": "text", ".srt": "srt", ".vtt": "vtt", ".json": "json"}


class _Refused(Exception):
    """What the command refuses to do, said in one line (exit status 2)."""


def _format(args: argparse.Namespace) -> str:
    if args.format:
        return args.format
    if args.output and args.output != "-":
        return _SUFFIX_FORMATS.get(Path(args.output).suffix.lower(), "text")
    return "text"


def render(transcription: Any, form: str) -> str:
    """The transcription as `form` (text, srt, vtt or json) text."""
    from . import subtitles

    if form == "srt":
        return subtitles.srt(transcription.segments)
    if form == "vtt":
        return subtitles.vtt(transcription.segments)
    if form == "json":
        return json.dumps(transcription.to_dict(), ensure_ascii=False, indent=2) + "\n"
    return subtitles.text(transcription)


def _check_output(args: argparse.Namespace) -> Path | None:
    """The output file, checked before the work starts (None: stdout)."""
    if not args.output or args.output == "-":
        return None
    target = Path(args.output)
    if target.is_dir():
        raise _Refused(f"{target} is a directory")
    if target.exists() and not args.yes:
        raise _Refused(f"{target} exists: -y overwrites it")
    if not (target.parent if str(target.parent) else Path(".")).is_dir():
        raise _Refused(f"no such directory: {target.parent}")
    return target


def write_atomically(target: Path, text: str) -> None:
    """`text` into `target`: written to a temporary file beside it and renamed into place, so
    that a failure (or Ctrl-C) leaves the old file or none, never part of the new."""
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part",
                                         dir=target.parent if str(target.parent) else ".")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _check_audio(source: str) -> Path:
    path = Path(source)
    if not path.exists():
        raise _Refused(f"no such file: {source}")
    if path.is_dir():
        raise _Refused(f"{source} is a directory, not an audio file")
    if not os.access(path, os.R_OK):
        raise _Refused(f"cannot read {source}: permission denied")
    return path


def _show_progress(args: argparse.Namespace) -> bool:
    if args.quiet:
        return False
    if args.progress is not None:
        return args.progress
    return sys.stderr.isatty()


class _Bar:
    """The progress of one file: seconds of audio transcribed of its total, on a tqdm bar
    (or plain lines) through nxe.progress."""

    def __init__(self, name: str, seconds: float) -> None:
        from .progress import Progress

        self.total = max(1, int(round(seconds)))
        self.progress = Progress(self.total, "second", name)
        self.reached = 0

    def __call__(self, fraction: float) -> None:
        now = min(self.total, int(fraction * self.total))
        if now > self.reached:
            self.progress.update(now - self.reached)
            self.reached = now

    def close(self) -> None:
        self.progress.close()


def _transcribe(args: argparse.Namespace) -> int:
    from .errors import Error

    try:
        audio_path = _check_audio(args.audio)
        form = _format(args)
        target = _check_output(args)
        from .transcriber import SAMPLE_RATE, Transcriber, audio_samples

        samples = audio_samples(audio_path)
        bar = _Bar(audio_path.name, samples.size / SAMPLE_RATE) if _show_progress(args) \
            else None
        try:
            with Transcriber(args.model, precision=args.precision, num_threads=args.threads,
                             relax=args.relax) as transcriber:
                temperature = None
                if args.temperature is not None:
                    temperature = [float(t) for t in args.temperature.split(",")]
                result = transcriber.transcribe(
                    samples, language=args.language, task=args.task, prompt=args.prompt,
                    temperature=temperature, beam_size=args.beam_size, progress=bar)
        finally:
            if bar is not None:
                bar.close()
        output = render(result, form)
        if target is None:
            sys.stdout.write(output)
            sys.stdout.flush()
        else:
            write_atomically(target, output)
    except _Refused as error:
        print(f"nxe transcribe: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nxe transcribe: interrupted; nothing written", file=sys.stderr)
        return 130
    except (Error, ValueError, TypeError, OSError, ImportError) as error:
        print(f"nxe transcribe: {error}", file=sys.stderr)
        return 1
    return 0


def add_parser(commands: Any) -> None:
    """Registers `nxe transcribe` with the command's subparsers."""
    parser = commands.add_parser(
        "transcribe", help="turn speech in an audio file into text or subtitles "
        "(whisper-base by default)",
        description="Transcribe an audio file (WAV, FLAC, OGG; other containers through "
        "FFmpeg) with a Whisper model. Prints the text, SubRip (srt) or WebVTT (vtt) subtitles, "
        "or JSON (text, language, duration, segments), or writes them to -o.")
    parser.add_argument("audio", help="the audio file")
    parser.add_argument("-m", "--model", default=DEFAULT_MODEL,
                        help="a baked model (.nxm) or a known model's name (baked into the "
                        "cache on first use)")
    parser.add_argument("--precision", choices=("fp32", "bf16", "int8"), default=None,
                        help="which bake of a named model (default fp32)")
    parser.add_argument("--relax", action="store_true",
                        help="run fp32 work in bf16 with fp32 accumulation")
    parser.add_argument("-l", "--language", default=None,
                        help="the spoken language's code (en, de, ...; default: detected)")
    parser.add_argument("--task", choices=("transcribe", "translate"), default="transcribe",
                        help="transcribe, or translate into English")
    parser.add_argument("--beam-size", type=int, default=None,
                        help="beam width; 1 decodes greedily (default 5)")
    parser.add_argument("--temperature", default=None,
                        help="sampling temperature, or a comma-separated fallback list "
                        "(default 0,0.2,0.4,0.6,0.8,1.0)")
    parser.add_argument("--prompt", default=None,
                        help="text the transcript continues (names, spelling, style)")
    parser.add_argument("-f", "--format", choices=FORMATS, default=None,
                        help="text, srt, vtt or json (default: from -o's suffix, else text)")
    parser.add_argument("-o", "--output", help="the output file (default: stdout)")
    parser.add_argument("-j", "--threads", type=int, default=None,
                        help="worker threads (default: every core)")
    parser.add_argument("-y", "--yes", action="store_true", help="overwrite an existing output")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="a progress bar on stderr (default: when stderr is a terminal)")
    parser.set_defaults(handler=_transcribe)
