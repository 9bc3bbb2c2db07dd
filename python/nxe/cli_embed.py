"""`nxe embed`: texts to embedding vectors with a baked model (`nxe bake`) or a known model's
name. Texts come from the arguments, from a file (one text a line) or from stdin; vectors go
out as JSON lines (stdout or a .jsonl file) or as one .npy array."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_MODEL = "all-MiniLM-L6-v2"


class _Refused(Exception):
    """What the command refuses to do, said in one line (exit status 2)."""


def _read_lines(source: str) -> list[str]:
    """The texts of a file or of stdin ("-"): one a line, without the line ending; an empty
    line is an empty text, a final line ending adds none."""
    try:
        if source == "-":
            data = sys.stdin.buffer.read()
        else:
            data = Path(source).read_bytes()
    except OSError as error:
        raise _Refused(f"cannot read {source}: {error.strerror or error}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        where = "stdin" if source == "-" else source
        raise _Refused(f"{where} is not UTF-8 text (byte {error.start})") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n") if text else []


def _texts(args: argparse.Namespace) -> list[str]:
    if args.text and args.file:
        raise _Refused("give texts as arguments or with --file, not both")
    if args.file:
        return [line.removesuffix("\r") for line in _read_lines(args.file)]
    if args.text:
        return list(args.text)
    if sys.stdin.isatty():
        raise _Refused("no texts: give them as arguments, with --file, or on stdin")
    return [line.removesuffix("\r") for line in _read_lines("-")]


def _output_format(args: argparse.Namespace) -> str:
    if args.format:
        return args.format
    if args.output and args.output != "-" and args.output.lower().endswith(".npy"):
        return "npy"
    return "jsonl"


def _write(args: argparse.Namespace, vectors: np.ndarray, form: str) -> None:
    """Writes the vectors: to stdout, or to a temporary file beside the output renamed into
    place when complete, so that a failure leaves no partial file."""
    if not args.output or args.output == "-":
        if form == "npy":
            if sys.stdout.isatty():
                raise _Refused("will not write binary .npy data to a terminal: use -o FILE")
            np.save(sys.stdout.buffer, vectors)
            sys.stdout.buffer.flush()
        else:
            for index, row in enumerate(vectors):
                sys.stdout.write(json.dumps({"index": index, "embedding": row.tolist()}) + "\n")
        return
    target = Path(args.output)
    if target.exists() and not args.yes:
        raise _Refused(f"{target} exists: -y overwrites it")
    if target.is_dir():
        raise _Refused(f"{target} is a directory")
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
    try:
        with os.fdopen(handle, "wb") as stream:
            if form == "npy":
                np.save(stream, vectors)
            else:
                for index, row in enumerate(vectors):
                    line = json.dumps({"index": index, "embedding": row.tolist()}) + "\n"
                    stream.write(line.encode("utf-8"))
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _embed(args: argparse.Namespace) -> int:
    from .errors import Error

    try:
        texts = _texts(args)
        form = _output_format(args)
        from .embedder import Embedder

        embedder = Embedder(args.model, precision=args.precision, num_threads=args.threads)
        try:
            progress = args.progress if args.progress is not None else bool(args.file)
            vectors = embedder.encode(texts, batch_size=args.batch_size,
                                      normalize_embeddings=not args.no_normalize,
                                      show_progress_bar=progress, dimensions=args.dimensions,
                                      truncate=args.truncate)
        finally:
            embedder.close()
        _write(args, np.asarray(vectors, np.float32).reshape(len(texts), -1), form)
    except _Refused as error:
        print(f"nxe embed: {error}", file=sys.stderr)
        return 2
    except (Error, ValueError, TypeError, OSError, ImportError) as error:
        print(f"nxe embed: {error}", file=sys.stderr)
        return 1
    return 0


def add_parser(commands: Any) -> None:
    """Registers `nxe embed` with the command's subparsers."""
    embed = commands.add_parser(
        "embed", help="turn texts into embedding vectors (all-MiniLM-L6-v2 by default)",
        description="Embed texts given as arguments, one a line in --file, or one a line on "
        "stdin. Prints JSON lines ({\"index\", \"embedding\"}) or writes them, or one float32 "
        ".npy array [texts, dimensions], to -o.")
    embed.add_argument("text", nargs="*", help="texts to embed")
    embed.add_argument("-f", "--file", help="a UTF-8 file of texts, one a line ('-': stdin)")
    embed.add_argument("-m", "--model", default=DEFAULT_MODEL,
                       help=f"a baked model (.nxm) or a known model's name (default: "
                       f"{DEFAULT_MODEL}, baked into the cache on first use)")
    embed.add_argument("-o", "--output", help="the output file (.npy or .jsonl; default: "
                       "JSON lines on stdout)")
    embed.add_argument("--format", choices=("jsonl", "npy"),
                       help="the output format (default: from -o's suffix, else jsonl)")
    embed.add_argument("--precision", choices=("fp32", "bf16", "int8"), default=None,
                       help="which bake of a named model (default fp32)")
    embed.add_argument("--dimensions", type=int, help="keep the first N dimensions "
                       "(Matryoshka truncation), renormalized")
    embed.add_argument("--no-normalize", action="store_true",
                       help="leave the vectors unnormalized")
    embed.add_argument("--truncate", action="store_true",
                       help="cut texts over the model's token limit instead of failing")
    embed.add_argument("-b", "--batch-size", type=int, default=32, help="texts per batch (32)")
    embed.add_argument("-j", "--threads", type=int, default=None,
                       help="worker threads (default: every core)")
    embed.add_argument("-y", "--yes", action="store_true", help="overwrite an existing output")
    embed.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                       help="a progress bar on stderr (default: for --file)")
    embed.set_defaults(handler=_embed)
