"""Speech recognition, end to end (audio samples in, transcript out): nxe.Transcriber with
Whisper-base baked at fp32 (also run in relax mode) and int8, beside CTranslate2 (through
faster-whisper, what people run on a CPU today) at float32 and int8 on the same weights (the
packages' CTranslate2 model.bin), in one process, on the same audio. Prints, per clip and
decoding (greedy, beam 5), each column's median time to the whole transcript over the
repeats, its real-time factor (time / audio length: lower is faster), the speed of each nxe
column against CTranslate2 of its precision class, and each column's word error rate against
the text spoken; not a test.

    python benchmarks/asr.py [--threads 2] [--lengths 30 300] [--repeats 3] [--json out.json]

The clips are the speech tests' sentences (tests/asr_testing.py) spoken by espeak-ng at
several voices and speeds, one after another with 0.4 s of silence between, cut at the first
sentence boundary past 30 s and 5 min. Every column decodes alike: language forced to English,
temperature 0 without fallback, timestamps on, previous text as the next window's prompt,
no voice-activity filter. Precision classes: fp32 (nxe fp32 against CTranslate2 float32),
reduced (nxe relax: CTranslate2 has no bf16 on a CPU without AVX-512 BF16, so it is shown
against float32) and int8 (nxe int8 against CTranslate2 int8: int8 weights, float32
activations quantized on the fly).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
import asr_testing  # noqa: E402  (tests/asr_testing.py: the clips, CTranslate2's folder, WER)
import run  # noqa: E402  (benchmarks/run.py: the CPU's name)

MODEL = "whisper-base"
SAMPLE_RATE = 16000
DECODES = {"greedy": 1, "beam 5": 5}
CLASSES = {"nxe fp32": "ct2 fp32", "nxe relax": "ct2 fp32", "nxe int8": "ct2 int8"}
PRECISION = {"nxe fp32": "fp32 weights, fp32 compute",
             "nxe relax": "fp32 weights, bf16 products with fp32 accumulation",
             "nxe int8": "int8 weights, int8 products",
             "ct2 fp32": "CTranslate2 compute_type float32",
             "ct2 int8": "CTranslate2 compute_type int8 (int8 weights and products)"}

Transcribe = Callable[[np.ndarray, int], str]


def nxe_columns(threads: int, wanted: set[str]) -> dict[str, Transcribe | str]:
    import nxe
    from nxe.bake_whisper import resolve_asr_model

    columns: dict[str, Transcribe | str] = {}
    for name, precision, relax in (("nxe fp32", "fp32", False), ("nxe relax", "fp32", True),
                                   ("nxe int8", "int8", False)):
        if name not in wanted:
            continue
        try:
            transcriber = nxe.Transcriber(resolve_asr_model(MODEL, precision=precision),
                                          num_threads=threads, relax=relax)
        except Exception as error:  # noqa: BLE001 - a column that cannot run says why
            columns[name] = f"unavailable: {type(error).__name__}: {error}"
            continue

        def transcribe(audio: np.ndarray, beam: int, t: Any = transcriber) -> str:
            return t.transcribe(audio, language="en", temperature=0.0, beam_size=beam).text
        columns[name] = transcribe
    return columns


def ct2_columns(threads: int, wanted: set[str]) -> dict[str, Transcribe | str]:
    columns: dict[str, Transcribe | str] = {}
    for name, compute_type in (("ct2 fp32", "float32"), ("ct2 int8", "int8")):
        if name not in wanted:
            continue
        try:
            model = asr_testing.reference_model(compute_type, threads)
        except Exception as error:  # noqa: BLE001
            columns[name] = f"unavailable: {type(error).__name__}: {error}"
            continue

        def transcribe(audio: np.ndarray, beam: int, m: Any = model) -> str:
            segments, _ = m.transcribe(audio, language="en", beam_size=beam, temperature=0.0,
                                       vad_filter=False, condition_on_previous_text=True)
            return "".join(s.text for s in segments).strip()
        columns[name] = transcribe
    return columns


def measure(transcribe: Transcribe, audio: np.ndarray, beam: int, repeats: int,
            ) -> tuple[float, str]:
    """The median seconds of `repeats` runs (after one warm-up on the first 5 s) and the
    transcript of the last."""
    transcribe(audio[:5 * SAMPLE_RATE], beam)
    times = []
    text = ""
    for _ in range(repeats):
        start = time.perf_counter()
        text = transcribe(audio, beam)
        times.append(time.perf_counter() - start)
    return statistics.median(times), text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--lengths", type=float, nargs="+", default=[30.0, 300.0],
                        help="clip lengths in seconds (default 30 and 300)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--decodes", nargs="+", choices=list(DECODES), default=list(DECODES))
    parser.add_argument("--columns", nargs="+", choices=list(PRECISION),
                        default=list(PRECISION), help="the columns to run (default: all)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    wanted = set(args.columns)
    columns = {**nxe_columns(args.threads, wanted), **ct2_columns(args.threads, wanted)}
    clips = [asr_testing.long_clip(length) for length in args.lengths]
    print(f"{run._cpu_model()}; {args.threads} thread(s); {MODEL}; medians of "
          f"{args.repeats}; RTF = processing time / audio time (lower is faster)")
    for name in columns:
        print(f"  {name:10} {PRECISION[name]}")
    results: list[dict[str, Any]] = []
    for (audio, spoken), length in zip(clips, args.lengths, strict=True):
        seconds = audio.size / SAMPLE_RATE
        for decode in args.decodes:
            beam = DECODES[decode]
            print(f"\nclip {seconds:.1f} s ({len(spoken.split())} words), {decode}")
            print(f"{'column':10} {'seconds':>9} {'RTF':>7} {'WER %':>6} "
                  f"{'speed vs CTranslate2 of its class':>34}")
            rows: dict[str, dict[str, Any]] = {}
            for name, transcribe in columns.items():
                if isinstance(transcribe, str):
                    rows[name] = {"error": transcribe}
                    continue
                took, text = measure(transcribe, audio, beam, args.repeats)
                rows[name] = {"seconds": took, "rtf": took / seconds,
                              "wer": asr_testing.wer(spoken, text), "text": text}
            for name, row in rows.items():
                if "error" in row:
                    print(f"{name:10} {row['error']}")
                    continue
                peer = rows.get(CLASSES.get(name, ""), {})
                ratio = ""
                if "seconds" in peer:
                    row["vs_ct2"] = peer["seconds"] / row["seconds"]
                    ratio = f"{row['vs_ct2']:.2f}x {CLASSES[name]}"
                print(f"{name:10} {row['seconds']:9.2f} {row['rtf']:7.3f} "
                      f"{100 * row['wer']:6.1f} {ratio:>34}")
            results.append({"clip_s": seconds, "length": length, "decode": decode,
                            "columns": rows})
    if args.json:
        args.json.write_text(json.dumps({"cpu": run._cpu_model(), "threads": args.threads,
                                         "repeats": args.repeats, "precision": PRECISION,
                                         "results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
