"""Speech recognition through nxe's interfaces with Whisper-base named (baked into a temporary
cache on first use): a real `nxe serve` driven by OpenAI's own client and by plain HTTP,
`nxe transcribe`, and nxe.Transcriber on arrays at other sample rates. Every transcript is
checked against the sentence espeak-ng spoke (word error rate, asr_testing.normalize) and
against CTranslate2 running the same weights on the same audio (faster-whisper).

Bounds, stated: WER against the spoken sentence <= MAX_WER (espeak-ng's voice is synthetic;
Whisper-base mishears a word of some clips); against CTranslate2 with the same decoding,
<= MAX_WER_VS_CT2 (the same weights at fp32: at most a word of a sentence may differ by
rounding, most clips are identical)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from asr_testing import (
    SAMPLE_RATE,
    WHISPER_BASE,
    clips,
    espeak_clip,
    long_clip,
    normalize,
    reference_transcribe,
    wer,
    write_wav,
)
from server_testing import Server, write_config

MAX_WER = 0.25
MAX_WER_VS_CT2 = 0.1
# The server's upload limit in these tests: the clips are far below it (a 4 s clip as 16-bit
# WAV is 128 KiB), TOO_BIG is above it.
MAX_BODY = 1 << 20
TOO_BIG = MAX_BODY + 4096
FORMATS = ("json", "text", "srt", "vtt", "verbose_json")


def _env(cache: Path) -> dict[str, str]:
    return dict(os.environ, NXE_CACHE_DIR=str(cache))


@pytest.fixture(scope="module")
def cache(whisper_cache):
    """The session's nxe cache holding whisper-base baked at fp32 (conftest.py)."""
    return whisper_cache[0]


@pytest.fixture(scope="module")
def model_file(cache) -> Path:
    from nxe.bake_whisper import resolve_asr_model

    os.environ["NXE_CACHE_DIR"], saved = str(cache), os.environ.get("NXE_CACHE_DIR")
    try:
        return resolve_asr_model(WHISPER_BASE)  # baked already: found by its key
    finally:
        if saved is None:
            del os.environ["NXE_CACHE_DIR"]
        else:
            os.environ["NXE_CACHE_DIR"] = saved


@pytest.fixture(scope="module")
def wavs(tmp_path_factory):
    """Eight of the test sentences as 16-bit WAV files, with their audio: (sentence, path,
    samples)."""
    folder = tmp_path_factory.mktemp("clips")
    out = []
    for i, (sentence, voice, speed) in enumerate(clips()[:8]):
        audio = espeak_clip(sentence, voice, speed)
        out.append((sentence, write_wav(folder / f"clip{i}.wav", audio), audio))
    return out


@pytest.fixture(scope="module")
def served(tmp_path_factory, cache):
    folder = tmp_path_factory.mktemp("asr-server")
    config = write_config(folder / "nxe.toml", {"max_body_bytes": MAX_BODY,
                                                "request_timeout_s": 600.0}, [])
    with Server(config, env=_env(cache), args=("--model", WHISPER_BASE)) as server:
        yield server


def _client(server):
    openai = pytest.importorskip("openai")
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0,
                         timeout=600.0)


def _check_transcript(sentence: str, text: str, audio: np.ndarray, beam_size: int = 5) -> None:
    assert wer(sentence, text) <= MAX_WER, (sentence, text)
    reference = reference_transcribe(audio, beam_size=beam_size)
    assert wer(reference, text) <= MAX_WER_VS_CT2, (reference, text)


_TIME = r"(\d{2,}):(\d{2}):(\d{2})[,.](\d{3})"


def _cues(body: str, numbered: bool) -> list[tuple[float, float, str]]:
    """The cues of SubRip (numbered) or WebVTT text: (start, end, text)."""
    cues = []
    for index, block in enumerate(b for b in body.strip("\n").split("\n\n") if b):
        lines = block.split("\n")
        if numbered:
            assert lines.pop(0) == str(index + 1)
        match = re.fullmatch(_TIME + " --> " + _TIME, lines.pop(0))
        assert match, block
        h, m, s, ms, h2, m2, s2, ms2 = (int(g) for g in match.groups())
        cues.append((h * 3600 + m * 60 + s + ms / 1000, h2 * 3600 + m2 * 60 + s2 + ms2 / 1000,
                     "\n".join(lines)))
    return cues


# -- the server and OpenAI's client


def test_openai_client_every_response_format(served, wavs):
    sentence, path, audio = wavs[0]
    client = _client(served)
    answers = {}
    for form in FORMATS:
        with open(path, "rb") as stream:
            answers[form] = client.audio.transcriptions.create(
                model=WHISPER_BASE, file=stream, response_format=form)
    text = answers["json"].text
    _check_transcript(sentence, text, audio)
    assert answers["text"].strip() == text
    verbose = answers["verbose_json"]
    assert verbose.text == text
    assert verbose.language == "english"
    assert verbose.duration == pytest.approx(audio.size / SAMPLE_RATE, abs=1e-3)
    assert "".join(s.text for s in verbose.segments).strip() == text
    for segment in verbose.segments:
        assert 0.0 <= segment.start <= segment.end <= verbose.duration + 0.5
    for form, numbered in (("srt", True), ("vtt", False)):
        body = answers[form]
        if form == "vtt":
            assert body.startswith("WEBVTT\n\n")
            body = body[len("WEBVTT\n\n"):]
        cues = _cues(body, numbered)
        assert " ".join(c[2] for c in cues) == " ".join(s.text.strip()
                                                       for s in verbose.segments)
        assert [(c[0], c[1]) for c in cues] == [(pytest.approx(s.start, abs=6e-4),
                                                 pytest.approx(s.end, abs=6e-4))
                                                for s in verbose.segments]


def test_plain_http_form_fields(served, wavs):
    sentence, path, audio = wavs[1]
    data = path.read_bytes()
    with served.client() as http:
        answer = http.post("/v1/audio/transcriptions",
                           data={"model": WHISPER_BASE, "language": "en",
                                 "response_format": "text", "temperature": "0"},
                           files={"file": ("clip.wav", data, "audio/wav")}, timeout=600.0)
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"].startswith("text/plain")
        _check_transcript(sentence, answer.text, audio)
        vtt = http.post("/v1/audio/transcriptions",
                        data={"model": WHISPER_BASE, "response_format": "vtt"},
                        files={"file": ("clip.wav", data)}, timeout=600.0)
        assert vtt.status_code == 200 and vtt.headers["content-type"].startswith("text/vtt")
        # A prompt is accepted and the transcript stays right.
        prompted = http.post("/v1/audio/transcriptions",
                             data={"model": WHISPER_BASE, "prompt": "Weather and travel.",
                                   "temperature": "0.2"},
                             files={"file": ("clip.wav", data)}, timeout=600.0)
        assert prompted.status_code == 200, prompted.text
        assert wer(sentence, prompted.json()["text"]) <= MAX_WER


def _error(answer, status: int, param: str | None = "file") -> str:
    assert answer.status_code == status, answer.text
    body = answer.json()["error"]
    assert set(body) == {"message", "type", "param", "code"}
    assert body["type"] == "invalid_request_error"
    if param is not None:
        assert body["param"] == param
    return body["message"]


def test_bad_uploads_get_clear_4xx(served, wavs, tmp_path):
    with served.client() as http:
        def post(content: bytes, name: str = "clip.wav", **fields):
            return http.post("/v1/audio/transcriptions",
                             data={"model": WHISPER_BASE, **fields},
                             files={"file": (name, content)})

        message = _error(post(b"this is not audio at all, just some text\n" * 20), 400)
        assert "not audio" in message
        assert "empty" in _error(post(b""), 400)
        truncated = wavs[0][1].read_bytes()[:60]  # the header, cut
        message = _error(post(truncated, name="cut.wav"), 400)
        assert "not audio" in message and "cut.wav" in message
        assert "nxe-upload-" not in message  # the temporary file stays the server's
        big = _error(post(b"\0" * TOO_BIG), 413, param=None)
        assert "max_body_bytes" in big
        assert "file" in _error(http.post("/v1/audio/transcriptions",
                                          data={"model": WHISPER_BASE}), 400)
        _error(post(wavs[0][1].read_bytes(), response_format="docx"), 400, param=None)
        _error(post(wavs[0][1].read_bytes(), temperature="7"), 400, param=None)
        missing = http.post("/v1/audio/transcriptions", data={"model": "nope"},
                            files={"file": ("a.wav", wavs[0][1].read_bytes())})
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "model_not_found"
        # The server still answers after all of them.
        good = post(wavs[0][1].read_bytes(), response_format="text")
        assert good.status_code == 200
    openai = pytest.importorskip("openai")
    with pytest.raises(openai.BadRequestError) as caught:
        _client(served).audio.transcriptions.create(model=WHISPER_BASE,
                                                    file=("notes.wav", b"RIFF....garbage"))
    assert caught.value.status_code == 400


def test_unknown_language_is_refused(served, wavs):
    with served.client() as http:
        answer = http.post("/v1/audio/transcriptions",
                           data={"model": WHISPER_BASE, "language": "xx"},
                           files={"file": ("clip.wav", wavs[0][1].read_bytes())})
    assert "xx" in _error(answer, 400, param="language")


def test_concurrent_transcriptions_are_not_mixed_up(served, wavs):
    """Ten requests at once, four at a time: the eight clips, and the first two again. Each
    answer is its own sentence's (within the bound of it, and further from every other
    sentence), and a clip sent twice gets the same text whoever ran beside it."""
    client = _client(served)
    order = list(range(len(wavs))) + [0, 1]

    def transcribe(index: int) -> str:
        _, path, _ = wavs[index]
        with open(path, "rb") as stream:
            return client.audio.transcriptions.create(model=WHISPER_BASE, file=stream).text

    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(transcribe, order))
    sentences = [s for s, _, _ in wavs]
    for own, text in zip(order, answers, strict=True):
        errors = [wer(sentence, text) for sentence in sentences]
        assert errors[own] <= MAX_WER, (sentences[own], text)
        assert errors[own] < min(e for i, e in enumerate(errors) if i != own)
    assert answers[-2:] == answers[:2]


def _stats(http) -> dict:
    return http.get("/admin/models").json()["stats"]


def test_a_client_that_disconnects_has_its_transcription_cancelled(served, wavs, tmp_path):
    """Half a minute of speech (under the upload limit as 16-bit WAV) sent by a client that
    goes away while it runs: the engine request is cancelled (counted failed, not completed)
    and the server keeps serving."""
    audio, _ = long_clip(25.0)
    path = write_wav(tmp_path / "minute.wav", audio)
    assert path.stat().st_size < MAX_BODY - 1000
    boundary = "nxe-test-boundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\n"
            f"{WHISPER_BASE}\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"minute.wav\"\r\nContent-Type: audio/wav\r\n\r\n").encode() + \
        path.read_bytes() + f"\r\n--{boundary}--\r\n".encode()
    with served.client() as http:
        before = _stats(http)
        with socket.create_connection(("127.0.0.1", served.port)) as sock:
            sock.sendall(b"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: x\r\n"
                         b"Content-Type: multipart/form-data; boundary=" + boundary.encode() +
                         b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            deadline = time.monotonic() + 120
            while _stats(http)["queue_depth"] < 1:
                assert time.monotonic() < deadline, "the transcription never started"
                time.sleep(0.01)
        deadline = time.monotonic() + 120
        while _stats(http)["queue_depth"] > 0:
            assert time.monotonic() < deadline, "the cancelled transcription never ended"
            time.sleep(0.05)
        after = _stats(http)
        assert after["failed"] - before["failed"] == 1
        assert after["completed"] == before["completed"]
        metrics = http.get("/metrics").text
        assert re.search(r'nxe_http_requests_total\{[^}]*route="/v1/audio/transcriptions"'
                         r'[^}]*status="499"\} 1\.0', metrics), metrics[-2000:]
        sentence, path_ok, _ = wavs[0]
        answer = http.post("/v1/audio/transcriptions", data={"model": WHISPER_BASE},
                           files={"file": ("clip.wav", path_ok.read_bytes())}, timeout=600.0)
        assert answer.status_code == 200 and wer(sentence, answer.json()["text"]) <= MAX_WER


# -- the command line


def _nxe(args: list[str], cache: Path, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nxe", *args], env=_env(cache),
                          capture_output=True, text=True, timeout=1200, **kw)


def test_cli_prints_the_sentence(cache, wavs):
    for sentence, path, audio in wavs[:3]:
        result = _nxe(["transcribe", str(path), "--model", WHISPER_BASE, "--beam-size", "1",
                       "--temperature", "0", "--language", "en"], cache)
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""  # no progress bar when stderr is not a terminal
        assert wer(sentence, result.stdout) <= MAX_WER, (sentence, result.stdout)
        reference = reference_transcribe(audio, beam_size=1)
        assert wer(reference, result.stdout) <= MAX_WER_VS_CT2, (reference, result.stdout)


def test_cli_writes_subtitles_and_json_whole(cache, wavs, tmp_path):
    sentence, path, _ = wavs[2]
    out = tmp_path / "out"
    out.mkdir()
    for name, numbered in (("clip.srt", True), ("clip.vtt", False)):
        result = _nxe(["transcribe", str(path), "-o", str(out / name), "--progress"], cache)
        assert result.returncode == 0, result.stderr
        assert result.stdout == ""
        assert "clip2.wav" in result.stderr  # the progress lines name the file
        body = (out / name).read_text()
        if not numbered:
            assert body.startswith("WEBVTT\n\n")
            body = body[len("WEBVTT\n\n"):]
        cues = _cues(body, numbered)
        assert cues and wer(sentence, " ".join(c[2] for c in cues)) <= MAX_WER
    result = _nxe(["transcribe", str(path), "--format", "json", "-q"], cache)
    assert result.returncode == 0, result.stderr
    parsed = json.loads(result.stdout)
    assert set(parsed) >= {"text", "language", "duration", "segments"}
    assert parsed["language"] == "en"
    assert wer(sentence, parsed["text"]) <= MAX_WER
    # An existing output is kept unless -y.
    again = _nxe(["transcribe", str(path), "-o", str(out / "clip.srt")], cache)
    assert again.returncode == 2 and "exists" in again.stderr
    assert sorted(p.name for p in out.iterdir()) == ["clip.srt", "clip.vtt"]


def test_cli_refuses_missing_and_non_audio_files(cache, tmp_path):
    missing = _nxe(["transcribe", str(tmp_path / "nope.wav")], cache)
    assert missing.returncode == 2 and "no such file" in missing.stderr
    text = tmp_path / "notes.wav"
    text.write_text("not audio\n" * 100)
    target = tmp_path / "notes.srt"
    bad = _nxe(["transcribe", str(text), "-o", str(target)], cache)
    assert bad.returncode == 1
    assert bad.stderr.startswith("nxe transcribe: ") and "Traceback" not in bad.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.wav"]


def test_cli_interrupted_writes_nothing(cache, tmp_path):
    """Ctrl-C while a minute of speech is transcribed: exit status 130, no output file and no
    temporary file beside it."""
    audio, _ = long_clip(60.0)
    path = write_wav(tmp_path / "minute.wav", audio)
    target = tmp_path / "minute.srt"
    process = subprocess.Popen([sys.executable, "-m", "nxe", "transcribe", str(path), "-o",
                                str(target), "--progress"], env=_env(cache),
                               stderr=subprocess.PIPE, text=True)
    # The first progress line comes once the model has loaded and decoding has begun.
    assert process.stderr.readline()
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "interrupted" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["minute.wav"]


# -- nxe.Transcriber


@pytest.fixture(scope="module")
def transcriber(model_file):
    import nxe

    with nxe.Transcriber(model_file, num_threads=2) as opened:
        yield opened


@pytest.mark.parametrize("rate", [8000, 44100])
def test_transcriber_resamples_arrays(transcriber, wavs, rate):
    soxr = pytest.importorskip("soxr")
    sentence, _, audio = wavs[3]
    resampled = soxr.resample(audio, SAMPLE_RATE, rate, quality="HQ").astype(np.float32)
    result = transcriber.transcribe(resampled, sample_rate=rate, beam_size=1, temperature=0.0,
                                    language="en")
    assert wer(sentence, result.text) <= MAX_WER, (sentence, result.text)
    # int16 samples of the same audio, two channels: the same words.
    pcm = np.round(np.clip(resampled, -1, 1 - 2 ** -15) * 32768).astype(np.int16)
    stereo = transcriber.transcribe(np.stack([pcm, pcm], axis=1), sample_rate=rate,
                                    beam_size=1, temperature=0.0, language="en")
    assert normalize(stereo.text) == normalize(result.text)
    assert result.duration == pytest.approx(audio.size / SAMPLE_RATE, abs=0.01)


def test_transcriber_on_a_file_reports_progress_and_segments(transcriber, wavs):
    sentence, path, audio = wavs[4]
    seen: list[float] = []
    result = transcriber.transcribe(path, progress=seen.append)
    _check_transcript(sentence, result.text, audio)
    assert result.language == "en"
    assert seen and seen[-1] == 1.0 and seen == sorted(seen)
    assert all(0.0 <= f <= 1.0 for f in seen)
    assert result.segments and result.segments[0].start >= 0.0
    assert "".join(s.text for s in result.segments).strip() == result.text
    assert all(s.tokens for s in result.segments)


def test_transcriber_empty_audio_and_bad_input(transcriber, tmp_path):
    import nxe

    empty = transcriber.transcribe(np.zeros(0, np.float32))
    assert (empty.text, empty.segments, empty.duration) == ("", [], 0.0)
    with pytest.raises(nxe.Error):
        transcriber.transcribe(np.zeros((2, 2, 2), np.float32))
    with pytest.raises(nxe.Error):
        transcriber.transcribe(np.array([0.0, np.nan], np.float32))
    with pytest.raises(nxe.Error):
        transcriber.transcribe(np.zeros(16000, np.float32), sample_rate=0)
    with pytest.raises(nxe.Error):
        transcriber.transcribe(np.zeros(16000, np.float32), task="summarize")
    with pytest.raises(nxe.Error):
        transcriber.transcribe(tmp_path / "missing.wav")
    (tmp_path / "text.wav").write_text("hello\n")
    with pytest.raises(nxe.Error):
        transcriber.transcribe(tmp_path / "text.wav")


def test_transcriber_refuses_other_models(tmp_path):
    import nxe
    from server_testing import save_tensor_model

    path = save_tensor_model(tmp_path / "tensor.nxm", 1)
    with pytest.raises(nxe.InvalidArgumentError, match="not a speech recognition model"):
        nxe.Transcriber(path)


def test_threads_do_not_share_state(transcriber, wavs):
    """Two threads on one Transcriber: each gets its own clip's text."""
    results: dict[int, str] = {}

    def run(index: int) -> None:
        results[index] = transcriber.transcribe(wavs[index][2], beam_size=1,
                                                temperature=0.0, language="en").text

    threads = [threading.Thread(target=run, args=(i,)) for i in (5, 6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for index in (5, 6):
        assert wer(wavs[index][0], results[index]) <= MAX_WER


# -- the config kind and `nxe serve --model`


def test_config_kind_asr_takes_a_whisper_name(tmp_path, monkeypatch):
    from nxe.cli_serve import _model_entry
    from nxe.config import ConfigError, parse_config

    monkeypatch.chdir(tmp_path)  # no file named like the model beside the test
    config = parse_config('[[models]]\nname = "speech"\nkind = "asr"\npath = "whisper-base"\n'
                          '[models.options]\nprecision = "int8"\nnum_threads = 2\n')
    (model,) = config.models
    assert (model.kind, model.path, dict(model.options)) == \
        ("asr", "whisper-base", {"precision": "int8", "num_threads": 2})
    with pytest.raises(ConfigError) as caught:
        parse_config('[[models]]\nname = "speech"\nkind = "asr"\npath = "whisper-huge"\n'
                     '[models.options]\nprecision = "fp8"\nbeam = 3\n')
    message = str(caught.value)
    assert "no such file" in message and "precision" in message and "beam" in message
    entry = _model_entry("whisper-base")
    assert (entry.name, entry.kind, entry.path) == ("whisper-base", "asr", "whisper-base")
    named = _model_entry("stt=whisper-base")
    assert (named.name, named.kind) == ("stt", "asr")
