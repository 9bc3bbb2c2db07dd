"""`nxe bake FOLDER -o OUT.nxm`: a Hugging Face / sentence-transformers BERT checkpoint to an
embedding model file, written only when its parity check passes (nxe/bake.py). Prints the
parity and the fingerprint. Exit status: 0 written, 1 the folder could not be baked (missing
or malformed files, another architecture, the parity check refused), 2 a usage error (bad
option values, an existing output without -y, no such folder)."""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from typing import Any


def _usage(message: str) -> int:
    print(f"nxe bake: {message}", file=sys.stderr)
    return 2


def bake_command(args: argparse.Namespace) -> int:
    from . import bake
    from .errors import Error, InvalidArgumentError, NotFoundError

    if not os.path.exists(args.folder):
        return _usage(f"no such folder: '{args.folder}'")
    if not os.path.isdir(args.folder):
        return _usage(f"'{args.folder}' is not a folder")
    if args.threshold is not None and not -1 <= args.threshold <= 1:
        return _usage(f"--threshold must be in [-1, 1], got {args.threshold}")
    if args.max_seq_length is not None and args.max_seq_length < 3:
        return _usage(f"--max-seq-length must be >= 3, got {args.max_seq_length}")
    if os.path.lexists(args.output) and not args.yes:
        return _usage(f"{args.output} already exists; pass -y to overwrite it")
    if args.calibration is not None and not os.path.isfile(args.calibration):
        return _usage(f"no such calibration file: '{args.calibration}'")
    print(f"baking {args.folder} ({args.precision}) ...", file=sys.stderr)
    try:
        report = bake.bake(args.folder, args.output, precision=args.precision,
                           calibration=args.calibration, threshold=args.threshold,
                           max_seq_length=args.max_seq_length, name=args.name,
                           reference=args.reference, overwrite=True)
    except bake.ParityError as error:
        print(f"nxe bake: {error}", file=sys.stderr)
        return 1
    except (InvalidArgumentError, NotFoundError) as error:
        # What the checks above could not see: a file missing inside the folder, an option
        # the checkpoint refuses (--max-seq-length over its positions).
        print(f"nxe bake: {error}", file=sys.stderr)
        return 2 if isinstance(error, InvalidArgumentError) else 1
    except Error as error:
        print(f"nxe bake: {error}", file=sys.stderr)
        return 1
    parity = report.parity
    print(f"wrote        {report.path} ({report.path.stat().st_size / 1e6:.1f} MB, "
          f"{report.seconds:.1f} s)")
    print(f"model        {report.metadata['name']}: {report.metadata['dimensions']} dimensions, "
          f"{report.metadata['pooling']} pooling, "
          f"{'normalized' if report.metadata['normalize'] else 'not normalized'}, "
          f"max_seq_length {report.metadata['max_seq_length']}, {parity['precision']}")
    print(f"parity       worst cosine {parity['min_cosine']:.8f}, mean "
          f"{parity['mean_cosine']:.8f} over {parity['sentences']} sentences against "
          f"{parity['reference']} (threshold {parity['threshold']})")
    print(f"fingerprint  {report.fingerprint}")
    return 0


def add_parser(commands: Any) -> None:
    """Registers `nxe bake` with the command's subparsers."""
    from .cli import RawDescriptionFormatter

    parser = commands.add_parser(
        "bake", help="turn a Hugging Face / sentence-transformers BERT checkpoint folder into "
        "an embedding model file (.nxm), checked against PyTorch",
        formatter_class=RawDescriptionFormatter,
        description=textwrap.fill(
            "Reads FOLDER (config.json, model.safetensors or pytorch_model.bin, tokenizer.json "
            "or vocab.txt, and sentence-transformers' modules.json, pooling config and "
            "sentence_bert_config.json when present), builds the model with its tokenizer, "
            "pooling and normalization, runs it and a reference (sentence-transformers, else "
            "transformers, else a float64 numpy forward pass) on calibration sentences, and "
            "writes OUT only when the worst cosine similarity reaches the threshold "
            "(defaults: fp32 0.9999, bf16 0.999, int8 0.98). Prints the parity and the "
            "file's fingerprint; baking the same inputs again gives the same fingerprint. "
            "Nothing is left at OUT when the bake fails.", 79),
        epilog="examples:\n"
        "  nxe bake all-MiniLM-L6-v2/ -o minilm.nxm\n"
        "  nxe bake all-MiniLM-L6-v2/ -o minilm-int8.nxm --precision int8 "
        "--calibration texts.txt")
    parser.add_argument("folder", metavar="FOLDER", help="the checkpoint folder")
    parser.add_argument("-o", "--output", metavar="OUT.nxm", required=True,
                        help="the model file to write")
    parser.add_argument("--precision", choices=("fp32", "bf16", "int8"), default="fp32",
                        help="fp32; bf16 (weights rounded to bf16, run in relax mode); int8 "
                        "(8-bit weights per channel, activations quantized per token at run "
                        "time)")
    parser.add_argument("--calibration", metavar="FILE",
                        help="sentences to check parity on, one a line (default: the built-in "
                        "set of 70)")
    parser.add_argument("--threshold", type=float, metavar="X",
                        help="the worst cosine similarity allowed (default: per precision)")
    parser.add_argument("--max-seq-length", type=int, metavar="N",
                        help="the token limit, specials included (default: the checkpoint's "
                        "sentence_bert_config.json, else max_position_embeddings)")
    parser.add_argument("--name", help="the model's name in the file (default: the folder's "
                        "name)")
    parser.add_argument("--reference", default="auto",
                        choices=("auto", "sentence-transformers", "transformers", "numpy"),
                        help="what the baked model is compared with")
    parser.add_argument("-y", "--yes", action="store_true",
                        help="overwrite an existing output")
    parser.set_defaults(handler=bake_command)
