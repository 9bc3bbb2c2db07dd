"""nxe.Transcriber: speech to text with a baked Whisper model (.nxm) through the engine's "asr"
kind.

    transcriber = nxe.Transcriber("whisper-base")         # or a path to a .nxm
    result = transcriber.transcribe("talk.flac")           # or a float array (16 kHz mono)
    print(result.text)
    for segment in result.segments:
        print(f"{segment.start:.2f}-{segment.end:.2f} {segment.text}")

A file is decoded by nxe.audio.load (soundfile for WAV/FLAC/OGG, FFmpeg for the rest),
resampled to 16 kHz mono; an array at another rate is resampled with soxr. The whole signal is
one engine request (input "pcm"); the kind cuts it into 30-second windows itself and reports
its progress, which ``transcribe(progress=...)`` hands to a callback while it waits.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .engine import Engine, ModelSpec, Request
from .errors import InvalidArgumentError, NotFoundError
from .model import Model

SAMPLE_RATE = 16000
DEFAULT_MODEL = "whisper-base"
TASKS = ("transcribe", "translate")
# The model's name inside the Transcriber's own engine.
_MODEL = "asr"
# How often transcribe() looks at the request's progress while it waits, in seconds.
_POLL_S = 0.1


@dataclass(frozen=True)
class Segment:
    """A stretch of the transcript: `start` and `end` in seconds from the audio's start, its
    `text` (with Whisper's leading space), the `tokens` that spell it, and the decoder's
    measures of it (the temperature it was decoded at, its mean token log-probability, the
    compression ratio of its text and the probability that the window held no speech)."""

    id: int
    start: float
    end: float
    text: str
    tokens: list[int] = field(default_factory=list)
    seek: int = 0
    temperature: float = 0.0
    avg_logprob: float = 0.0
    compression_ratio: float = 0.0
    no_speech_prob: float = 0.0

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> Segment:
        return cls(id=int(values.get("id", 0)), start=float(values.get("start", 0.0)),
                   end=float(values.get("end", 0.0)), text=str(values.get("text", "")),
                   tokens=[int(t) for t in values.get("tokens", [])],
                   seek=int(values.get("seek", 0)),
                   temperature=float(values.get("temperature", 0.0)),
                   avg_logprob=float(values.get("avg_logprob", 0.0)),
                   compression_ratio=float(values.get("compression_ratio", 0.0)),
                   no_speech_prob=float(values.get("no_speech_prob", 0.0)))

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "seek": self.seek, "start": self.start, "end": self.end,
                "text": self.text, "tokens": list(self.tokens), "temperature": self.temperature,
                "avg_logprob": self.avg_logprob, "compression_ratio": self.compression_ratio,
                "no_speech_prob": self.no_speech_prob}


@dataclass(frozen=True)
class Transcription:
    """What transcribe() returns: the whole `text` (the segments' texts joined, stripped), the
    `language` code (given or detected), the audio's `duration` in seconds and its
    `segments`."""

    text: str
    language: str
    duration: float
    segments: list[Segment] = field(default_factory=list)
    task: str = "transcribe"

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "language": self.language, "duration": self.duration,
                "text": self.text, "segments": [s.to_dict() for s in self.segments]}


def _resolve(model: str | os.PathLike[str], precision: str | None) -> Path:
    """A .nxm path as is; anything else through nxe.bake_whisper.resolve_asr_model (a known
    name, or a Whisper checkpoint folder, baked once into the user cache)."""
    path = Path(os.fspath(model))
    if path.suffix == ".nxm" or path.is_file():
        if not path.is_file():
            raise FileNotFoundError(f"nxe.Transcriber: no model file '{path}'")
        return path
    try:
        from .bake_whisper import resolve_asr_model
    except ImportError:
        raise FileNotFoundError(f"nxe.Transcriber: '{model}' is not a model file, and this "
                                "installation cannot bake Whisper models by name") from None
    return Path(resolve_asr_model(os.fspath(model), precision=precision or "fp32"))


def _resample(samples: np.ndarray, rate: int) -> np.ndarray:
    if rate == SAMPLE_RATE or samples.size == 0:
        return samples
    try:
        import soxr
    except ImportError:
        raise InvalidArgumentError(f"audio at {rate} Hz needs resampling to {SAMPLE_RATE} Hz, "
                                   "which needs the soxr package: pip install 'nxe[asr]'"
                                   ) from None
    return np.asarray(soxr.resample(samples, rate, SAMPLE_RATE, quality="HQ"), np.float32)


def _load_file(path: Path) -> np.ndarray:
    """16 kHz mono float32 samples of an audio file: nxe.audio.load when this installation
    has it, else soundfile (WAV, FLAC, OGG) and soxr."""
    if not path.exists():
        raise NotFoundError(f"no such audio file: '{path}'")
    if path.is_dir():
        raise InvalidArgumentError(f"'{path}' is a directory, not an audio file")
    try:
        from .audio import load
    except ImportError:
        load = None
    if load is not None:
        return np.asarray(load(path, sample_rate=SAMPLE_RATE), np.float32)
    try:
        import soundfile
    except ImportError:
        raise InvalidArgumentError("reading audio files needs the soundfile package: pip "
                                   "install 'nxe[asr]'") from None
    try:
        data, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
    except (RuntimeError, soundfile.LibsndfileError) as error:
        raise InvalidArgumentError(f"'{path}' is not an audio file that can be read: "
                                   f"{error}") from None
    return _resample(data.mean(axis=1, dtype=np.float32), rate)


def audio_samples(source: str | os.PathLike[str] | np.ndarray | Sequence[float],
                  sample_rate: int | None = None) -> np.ndarray:
    """16 kHz mono float32 samples of `source`: an audio file's path, or an array of samples
    at `sample_rate` (default 16,000 Hz) resampled with soxr when another. An array is mono
    [n] or [n, channels] (as soundfile reads; the channels are averaged); integer samples are
    scaled to [-1, 1) by their type's range."""
    if isinstance(source, (str, os.PathLike)):
        if sample_rate is not None:
            raise InvalidArgumentError("sample_rate is for arrays: a file's own rate is read "
                                       "from it")
        return _load_file(Path(os.fspath(source)))
    if isinstance(source, (bytes, bytearray, memoryview)):
        raise InvalidArgumentError("give an audio file's path or an array of samples, not "
                                   "bytes")
    samples = np.asarray(source)
    if samples.dtype.kind in "iu":
        info = np.iinfo(samples.dtype)
        offset = 0 if samples.dtype.kind == "i" else (int(info.max) + 1) / 2
        samples = (samples.astype(np.float64) - offset) / ((int(info.max) + 1) - offset)
    elif samples.dtype.kind != "f":
        raise InvalidArgumentError(f"audio samples must be numbers, got dtype {samples.dtype}")
    if samples.ndim == 2:
        samples = samples.mean(axis=1)
    elif samples.ndim != 1:
        raise InvalidArgumentError(f"audio samples must be [n] or [n, channels], got shape "
                                   f"{samples.shape}")
    samples = np.ascontiguousarray(samples, np.float32)
    if samples.size and not np.isfinite(samples).all():
        raise InvalidArgumentError("the audio holds NaN or infinite samples")
    rate = SAMPLE_RATE if sample_rate is None else sample_rate
    if isinstance(rate, bool) or not isinstance(rate, (int, np.integer)) or rate <= 0:
        raise InvalidArgumentError(f"sample_rate is {sample_rate!r}; expected a positive "
                                   "integer (Hz)")
    return _resample(samples, int(rate))


def _temperatures(temperature: float | Sequence[float] | None) -> str | None:
    if temperature is None:
        return None
    values = [temperature] if isinstance(temperature, (int, float)) else list(temperature)
    if not values or any(isinstance(t, bool) or not isinstance(t, (int, float)) or
                         not 0.0 <= float(t) <= 1.0 for t in values):
        raise InvalidArgumentError(f"temperature is {temperature!r}; expected a number from 0 "
                                   "to 1, or a list of them (the fallback order)")
    return ",".join(repr(float(t)) for t in values)


def request_options(*, language: str | None = None, task: str = "transcribe",
                    prompt: str | None = None, temperature: float | Sequence[float] | None = None,
                    beam_size: int | None = None, **extra: Any) -> dict[str, str]:
    """The asr kind's request options for these arguments (the kind's defaults where None).
    `extra` passes further options of the kind as they are (best_of, patience, ...)."""
    if task not in TASKS:
        raise InvalidArgumentError(f"task is {task!r}; expected one of {', '.join(TASKS)}")
    options: dict[str, str] = {"task": task}
    if language is not None:
        if not isinstance(language, str) or not language:
            raise InvalidArgumentError(f"language is {language!r}; expected a code such as "
                                       "'en', or 'auto'")
        options["language"] = language
    if prompt:
        options["prompt"] = str(prompt)
    temperatures = _temperatures(temperature)
    if temperatures is not None:
        options["temperature"] = temperatures
    if beam_size is not None:
        if isinstance(beam_size, bool) or not isinstance(beam_size, int) or beam_size < 1:
            raise InvalidArgumentError(f"beam_size is {beam_size!r}; expected an integer >= 1")
        options["beam_size"] = str(beam_size)
    for key, value in extra.items():
        if value is not None:
            options[key] = ("true" if value else "false") if isinstance(value, bool) else \
                str(value)
    return options


def _text(outputs: Mapping[str, np.ndarray], name: str) -> str:
    value = outputs.get(name)
    return "" if value is None else np.asarray(value, np.uint8).tobytes().decode("utf-8",
                                                                                "replace")


def transcription_from_outputs(outputs: Mapping[str, np.ndarray], task: str = "transcribe",
                               ) -> Transcription:
    """The Transcription of an asr request's outputs (text, language, segments, duration)."""
    segments_json = _text(outputs, "segments")
    segments = [Segment.from_dict(s) for s in json.loads(segments_json or "[]")]
    duration = outputs.get("duration")
    return Transcription(text=_text(outputs, "text").strip(),
                         language=_text(outputs, "language"),
                         duration=float(np.asarray(duration).reshape(-1)[0])
                         if duration is not None else 0.0,
                         segments=segments, task=task)


def _progress_of(request: Request) -> float | None:
    try:
        return float(request.progress)  # type: ignore[attr-defined]
    except (AttributeError, TypeError, ValueError):
        return None


def wait_with_progress(request: Request, progress: Callable[[float], Any] | None) -> None:
    """Waits for `request`; while it runs, calls `progress(fraction)` (0 to 1) whenever the
    request's progress moves, and with 1.0 once it has finished."""
    if progress is None:
        request.wait()
        return
    last = -1.0
    while not request.wait(_POLL_S):
        fraction = _progress_of(request)
        if fraction is not None and fraction > last:
            last = fraction
            progress(min(1.0, max(0.0, fraction)))
    progress(1.0)


class Transcriber:
    """Transcribes speech with a baked Whisper model: ``model`` is a .nxm path or a name that
    nxe.bake_whisper.resolve_asr_model knows ("whisper-base", baked once into the user cache
    with ``precision`` "fp32", "bf16" or "int8"). ``num_threads``: compute threads (None: one
    per CPU); ``relax``: fp32 work in bf16 with fp32 accumulation (a bf16 bake runs relaxed
    whatever this says).

    A context manager; ``close()`` releases the engine and the model."""

    def __init__(self, model: str | os.PathLike[str] = DEFAULT_MODEL, *,
                 precision: str | None = None, num_threads: int | None = None,
                 relax: bool = False) -> None:
        self.path = _resolve(model, precision)
        with Model(self.path, lazy=True) as opened:
            metadata = opened.metadata
        if metadata.get("task") != "asr":
            raise InvalidArgumentError(f"nxe.Transcriber: '{self.path}' is not a speech "
                                       f"recognition model (its metadata's task is "
                                       f"{metadata.get('task')!r})")
        self.metadata = metadata
        self.name = str(metadata.get("name", self.path.stem))
        self.precision = str(metadata.get("precision", "fp32"))
        self.multilingual = bool(metadata.get("multilingual", True))
        options: dict[str, Any] = {}
        if relax:
            options["relax"] = True
        if num_threads is not None:
            options["num_threads"] = num_threads
        self._engine = Engine(num_threads=num_threads or 0)
        try:
            self._engine.add_model(ModelSpec(name=_MODEL, kind="asr", path=str(self.path),
                                             options=options, keep_alive_s=-1))
            self._engine.load_model(_MODEL)
        except BaseException:
            self._engine.close()
            raise

    @property
    def engine(self) -> Engine:
        """The Transcriber's own engine (one model, named "asr")."""
        return self._engine

    @property
    def languages(self) -> list[str]:
        """The language codes the model knows."""
        return [str(code) for code, _ in self.metadata.get("languages", [])]

    def close(self) -> None:
        self._engine.close()

    def __enter__(self) -> Transcriber:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<nxe.Transcriber {self.name} {self.precision} '{self.path}'>"

    def submit(self, samples: np.ndarray, options: Mapping[str, str] | None = None) -> Request:
        """Queues 16 kHz mono float32 `samples` (see audio_samples) and returns the request."""
        return self._engine.submit(_MODEL, {"pcm": np.ascontiguousarray(samples, np.float32)},
                                   options=options)

    def transcribe(self, audio: str | os.PathLike[str] | np.ndarray | Sequence[float], *,
                   language: str | None = None, task: str = "transcribe",
                   prompt: str | None = None, temperature: float | Sequence[float] | None = None,
                   beam_size: int | None = None, sample_rate: int | None = None,
                   progress: Callable[[float], Any] | None = None,
                   **options: Any) -> Transcription:
        """Transcribes `audio`: a file's path, or samples at `sample_rate` (16 kHz when None).
        ``language``: a code ("en"), or None/"auto" to detect it; ``task``: "transcribe", or
        "translate" (to English); ``prompt``: text the first window continues (names,
        spelling); ``temperature``: one value, or the fallback list (None: the kind's 0, 0.2,
        ... 1.0); ``beam_size``: 1 for greedy (None: 5); ``progress(fraction)``: called while
        the audio is decoded, and with 1.0 at the end. Further keyword ``options`` go to the
        kind as they are (best_of, patience, condition_on_previous_text, ...).

        Ctrl-C (KeyboardInterrupt) while waiting cancels the request."""
        samples = audio_samples(audio, sample_rate)
        engine_options = request_options(language=language, task=task, prompt=prompt,
                                         temperature=temperature, beam_size=beam_size,
                                         **options)
        request = self.submit(samples, engine_options)
        started = time.perf_counter()
        try:
            wait_with_progress(request, progress)
            outputs = request.outputs()
        finally:
            request.release()  # cancels a request still running (an exception while waiting)
        self.last_seconds = time.perf_counter() - started
        return transcription_from_outputs(outputs, task)


__all__ = ["Segment", "Transcriber", "Transcription", "audio_samples"]
