"""The audio frontend (include/nxe/nxe_audio.h, nxe.audio): Whisper's log-mel spectrogram
against openai-whisper's own `log_mel_spectrogram` on speech spoken by espeak-ng, noise, tones,
silence and awkward lengths; windows against slices of the whole; the mel filter bank against
the one openai-whisper ships; audio files written by soundfile against soundfile + soxr; bad
files and bad arguments.

The bound. nxe and openai-whisper (torch.stft) both run the FFT in float32; each is compared
with a float64 reference computed here (numpy's rfft on the same frames), and nxe must be
within twice openai-whisper's own distance to it (+1e-6). On the signals below both distances
stay under 5e-5 in Whisper's scaled units (values span about [-1.5, 2.5]; float32 rounding of a
400-point FFT is ~1e-6 of a frame's energy, and bins down to 8 decades below the loudest are
kept), so nxe and openai-whisper agree within 1e-4 everywhere.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import nxe
import nxe.audio
import pytest

soundfile = pytest.importorskip("soundfile", reason="the asr extra (soundfile) is not installed")
soxr = pytest.importorskip("soxr", reason="the asr extra (soxr) is not installed")
whisper_audio = pytest.importorskip("whisper.audio", reason="openai-whisper is not installed")
import torch  # noqa: E402  (openai-whisper brings it)

REPO = Path(__file__).resolve().parents[1]
BOUND_TO_WHISPER = 1e-4


# -- references --------------------------------------------------------------------------------

def whisper_log_mel(samples: np.ndarray, padding: int = 480000) -> np.ndarray:
    return whisper_audio.log_mel_spectrogram(torch.from_numpy(samples), padding=padding).numpy()


def float64_log_mel(samples: np.ndarray, padding: int = 480000) -> np.ndarray:
    """Whisper's definition in float64: zeros appended, reflect padding of n_fft / 2 on both
    sides of the padded signal, periodic Hann, |rfft|^2, the shipped filters, log10, scaling."""
    x = np.concatenate([samples.astype(np.float64), np.zeros(padding)])
    frames = x.size // 160
    padded = np.pad(x, (200, 200), mode="reflect")
    index = np.arange(frames)[:, None] * 160 + np.arange(400)[None, :]
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 400)
    power = np.abs(np.fft.rfft(padded[index] * window, axis=1)) ** 2
    filters = whisper_audio.mel_filters("cpu", 80).numpy().astype(np.float64)
    log_spec = np.log10(np.maximum(filters @ power.T, 1e-10))
    return (np.maximum(log_spec, log_spec.max() - 8.0) + 4.0) / 4.0


def assert_whisper_equal(samples: np.ndarray, padding: int = 480000) -> None:
    ours = nxe.audio.log_mel_spectrogram(samples, padding=padding)
    theirs = whisper_log_mel(samples, padding)
    exact = float64_log_mel(samples, padding)
    assert ours.shape == theirs.shape == (80, (samples.size + padding) // 160)
    assert ours.dtype == np.float32
    our_error = np.abs(ours - exact).max()
    their_error = np.abs(theirs - exact).max()
    assert our_error <= 2 * their_error + 1e-6, (our_error, their_error)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=BOUND_TO_WHISPER)


# -- test audio --------------------------------------------------------------------------------

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Speech recognition turns sound into text, one window of thirty seconds at a time.",
]
VOICES = [("en", 175), ("en-us+f3", 140), ("en+m3", 230)]


def espeak(text: str, voice: str, speed: int, path: Path) -> np.ndarray:
    """`text` spoken by espeak-ng as 16 kHz mono float32 (its 22050 Hz resampled by soxr)."""
    if not shutil.which("espeak-ng"):
        pytest.fail("espeak-ng is not installed (apt-get install espeak-ng; .ci/run does)")
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(path), text],
                   check=True, capture_output=True, timeout=60)
    samples, rate = soundfile.read(path, dtype="float32")
    assert samples.ndim == 1 and samples.size > rate // 2
    return soxr.resample(samples, rate, 16000).astype(np.float32)


@pytest.fixture(scope="module")
def speech(tmp_path_factory) -> dict[str, np.ndarray]:
    folder = tmp_path_factory.mktemp("speech")
    clips = {}
    for i, text in enumerate(SENTENCES):
        for voice, speed in VOICES:
            clips[f"{i}-{voice}-{speed}"] = espeak(text, voice, speed, folder / f"{i}.wav")
    return clips


def tone(freq: float, seconds: float, amplitude: float = 0.5) -> np.ndarray:
    t = np.arange(int(16000 * seconds)) / 16000
    return (amplitude * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def signals() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(17)
    t = np.arange(3 * 16000) / 16000
    return {
        "noise": (0.3 * rng.standard_normal(40000)).astype(np.float32),
        "uniform-full-scale": rng.uniform(-1, 1, 20000).astype(np.float32),
        "quiet-noise": (1e-4 * rng.standard_normal(20000)).astype(np.float32),
        "tone-440": tone(440, 3),
        "tone-on-a-bin": tone(1000, 3),
        "tone-near-nyquist": tone(7999, 2),
        "chirp": (0.5 * np.sin(2 * np.pi * (50 + 2000 * t) * t)).astype(np.float32),
        "impulse": np.eye(1, 20000, 5000, dtype=np.float32)[0],
        "silence": np.zeros(32000, dtype=np.float32),
        "dc": np.full(10000, 0.25, dtype=np.float32),
    }


# -- the spectrogram ---------------------------------------------------------------------------

def test_log_mel_equals_whisper_on_espeak_speech(speech):
    for clip in speech.values():
        assert_whisper_equal(clip)


def test_log_mel_equals_whisper_on_noise_mixed_speech(speech):
    rng = np.random.default_rng(3)
    for clip in speech.values():
        noisy = (clip + 0.05 * rng.standard_normal(clip.size)).astype(np.float32)
        assert_whisper_equal(noisy)


@pytest.mark.parametrize("name", list(signals()))
def test_log_mel_equals_whisper_on_synthetic_signals(name):
    assert_whisper_equal(signals()[name])


@pytest.mark.parametrize("length", [0, 1, 2, 150, 199, 200, 201, 399, 400, 401, 16001, 16159,
                                    480000, 480000 + 161, 1000003])
def test_log_mel_equals_whisper_at_awkward_lengths(length):
    """Shorter than a frame, around n_fft / 2 (the reflection's reach), not a multiple of the
    hop, exactly 30 s, over it."""
    samples = (0.2 * np.random.default_rng(length).standard_normal(length)).astype(np.float32)
    assert_whisper_equal(samples)


@pytest.mark.parametrize("padding", [0, 1, 100, 199, 200, 201, 1000])
def test_log_mel_equals_whisper_with_other_padding(padding):
    """Padding under n_fft / 2 + 1 leaves the right edge within a frame: torch.stft reflects the
    padded signal there, which log_mel_spectrogram reproduces."""
    samples = (0.2 * np.random.default_rng(padding).standard_normal(16123)).astype(np.float32)
    assert_whisper_equal(samples, padding)


def test_whisper_frames_are_what_the_c_function_computes():
    samples = signals()["chirp"]
    values, max_value = nxe.audio.log10_mel(samples, 0, (samples.size + 480000) // 160)
    assert max_value == values.max()
    np.testing.assert_array_equal(nxe.audio.whisper_scale(values, max_value),
                                  nxe.audio.log_mel_spectrogram(samples))


def test_windows_equal_slices_of_the_whole():
    """Frames [s, s + 3000) of a long signal, computed alone, are the whole's columns: a 30 s
    window of a long file needs only that window's samples' neighbourhood."""
    rng = np.random.default_rng(5)
    samples = np.concatenate([signals()["chirp"], (0.1 * rng.standard_normal(16000 * 70)),
                              tone(300, 5)]).astype(np.float32)
    total = (samples.size + 480000) // 160
    whole, whole_max = nxe.audio.log10_mel(samples, 0, total)
    maxima = []
    for start in [0, 1, 1234, 3000, 9999, total - 3000, total - 10]:
        count = min(3000, total - start)
        window, window_max = nxe.audio.log10_mel(samples, start, count)
        np.testing.assert_array_equal(window, whole[:, start:start + count])
        assert window_max == window.max()
        maxima.append(window_max)
    assert max(maxima) <= whole_max
    # And the scaled windows are slices of openai-whisper's spectrogram of the whole.
    scaled = nxe.audio.whisper_scale(whole[:, 6000:9000].copy(), whole_max)
    np.testing.assert_allclose(scaled, whisper_log_mel(samples)[:, 6000:9000], rtol=0,
                               atol=BOUND_TO_WHISPER)


def test_windows_read_only_the_samples_around_them():
    samples = (0.3 * np.random.default_rng(6).standard_normal(16000 * 10)).astype(np.float32)
    start, count = 400, 300
    first, last = start * 160 - 200, (start + count - 1) * 160 + 200
    clipped = np.zeros_like(samples)
    clipped[first:last] = samples[first:last]
    np.testing.assert_array_equal(nxe.audio.log10_mel(clipped, start, count)[0],
                                  nxe.audio.log10_mel(samples, start, count)[0])


def test_whisper_scale_is_whispers_formula():
    values = np.random.default_rng(7).uniform(-10, 3, 12345).astype(np.float32)
    expected = (np.maximum(values, np.float32(2.5) - np.float32(8.0)) + np.float32(4.0)) / 4
    np.testing.assert_array_equal(nxe.audio.whisper_scale(values.copy(), 2.5), expected)


def test_empty_frame_range_gives_the_floor():
    values, max_value = nxe.audio.log10_mel(np.zeros(10, np.float32), 5, 0)
    assert values.shape == (80, 0)
    assert max_value == np.log10(np.float32(1e-10), dtype=np.float32)


def test_other_fft_sizes_equal_a_direct_dft():
    """Any n_fft works (radix 2, 3, 4, 5 and prime factors through the direct butterfly)."""
    rng = np.random.default_rng(8)
    samples = (0.3 * rng.standard_normal(3000)).astype(np.float32)
    for n_fft, hop in [(2, 1), (3, 2), (7, 3), (64, 16), (90, 30), (121, 40), (400, 160),
                       (512, 128), (2 * 97, 50), (1001, 200)]:
        bins = n_fft // 2 + 1
        filters = rng.uniform(0, 1, (5, bins)).astype(np.float32)
        frames = samples.size // hop + 1
        ours, _ = nxe.audio.log10_mel(samples, 0, frames, filters, n_fft=n_fft, hop_length=hop)
        x = np.concatenate([samples.astype(np.float64), np.zeros(n_fft)])
        padded = np.concatenate([x[1:n_fft // 2 + 1][::-1], x])
        window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n_fft) / n_fft)
        index = np.arange(frames)[:, None] * hop + np.arange(n_fft)[None, :]
        power = np.abs(np.fft.rfft(padded[index] * window, axis=1)) ** 2
        expected = np.log10(np.maximum(filters.astype(np.float64) @ power.T, 1e-10))
        np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-5, err_msg=f"n_fft {n_fft}")


# -- the filter bank ---------------------------------------------------------------------------

@pytest.mark.parametrize("n_mels", [80, 128])
def test_mel_filters_equal_the_ones_whisper_ships(n_mels):
    shipped = whisper_audio.mel_filters("cpu", n_mels).numpy()
    ours = nxe.audio.mel_filters(n_mels)
    assert ours.dtype == np.float32 and ours.shape == shipped.shape == (n_mels, 201)
    np.testing.assert_allclose(ours, shipped, rtol=1e-6, atol=1e-9)


def test_mel_filters_refuse_bad_sizes():
    for kwargs in [{"n_mels": 0}, {"n_fft": 1}, {"sample_rate": -1}, {"n_mels": 2.5}]:
        with pytest.raises(nxe.InvalidArgumentError):
            nxe.audio.mel_filters(**kwargs)


# -- bad arguments -----------------------------------------------------------------------------

def test_log_mel_refuses_bad_python_arguments():
    with pytest.raises(nxe.InvalidArgumentError, match="one-dimensional"):
        nxe.audio.log_mel_spectrogram(np.zeros((2, 100), np.float32))
    with pytest.raises(nxe.InvalidArgumentError, match="padding"):
        nxe.audio.log_mel_spectrogram(np.zeros(100, np.float32), padding=-1)
    with pytest.raises(nxe.InvalidArgumentError, match="filters"):
        nxe.audio.log_mel_spectrogram(np.zeros(100, np.float32), filters=np.zeros((80, 200)))
    with pytest.raises(nxe.InvalidArgumentError, match="numbers"):
        nxe.audio.log_mel_spectrogram(np.array(["a", "b"]))
    with pytest.raises(nxe.InvalidArgumentError, match=r"samples\[1234\] is not finite"):
        nxe.audio.log_mel_spectrogram(np.where(np.arange(5000) == 1234, np.nan, 0.0))


def c_call(spec=None, samples=None, num_samples=100, first_frame=0, num_frames=2, out=True,
           max_out=True, **spec_fields):
    """nxe_audio_log10_mel through the binding with one argument spoiled; returns the status,
    the output buffer (filled with 7.0 before the call) and *max_out."""
    from nxe._binding import ffi, lib

    filters = np.ones((80, 201), np.float32)
    fields = {"struct_size": ffi.sizeof("nxe_mel_spec"), "n_fft": 400, "hop_length": 160,
              "n_mels": 80, "filters": ffi.from_buffer("float[]", filters)}
    fields.update(spec_fields)
    c_spec = ffi.NULL if isinstance(spec, str) else ffi.new("nxe_mel_spec *", fields)
    data = np.ones(1000, np.float32) if samples is None or isinstance(samples, str) else samples
    c_samples = ffi.NULL if isinstance(samples, str) else ffi.from_buffer("float[]", data)
    buffer = np.full(80 * 4, 7.0, np.float32)
    c_out = ffi.from_buffer("float[]", buffer) if out else ffi.NULL
    c_max = ffi.new("float *", 3.0) if max_out else ffi.NULL
    status = lib.nxe_audio_log10_mel(c_spec, c_samples, num_samples, first_frame, num_frames,
                                     c_out, c_max)
    return status, buffer, (c_max[0] if max_out else None)


BAD_C_ARGUMENTS = [
    ({"spec": "null"}, "spec is NULL"),
    ({"struct_size": 8}, "struct_size"),
    ({"n_fft": 1}, "n_fft is 1"),
    ({"n_fft": 65537}, "n_fft is 65537"),
    ({"hop_length": 0}, "hop_length is 0"),
    ({"hop_length": 401}, "hop_length is 401"),
    ({"n_mels": 0}, "n_mels is 0"),
    ({"n_mels": 5000}, "n_mels is 5000"),
    ({"filters": None}, "filters is NULL"),
    ({"samples": "null"}, "samples is NULL"),
    ({"num_samples": -1}, "must not be negative"),
    ({"first_frame": -3}, "must not be negative"),
    ({"num_frames": -1}, "must not be negative"),
    ({"out": False}, "out is NULL"),
    ({"first_frame": 2**62}, "overflow"),
    ({"num_frames": 2**62}, "overflow"),
    ({"samples": np.array([0, 1, np.nan, 2], np.float32), "num_samples": 4}, r"samples\[2\]"),
    ({"samples": np.array([np.inf] + [0] * 999, np.float32)}, r"samples\[0\]"),
]


@pytest.mark.parametrize(("spoiled", "message"), BAD_C_ARGUMENTS,
                         ids=[m.replace(" ", "-") for _, m in BAD_C_ARGUMENTS])
def test_c_function_refuses_bad_arguments(spoiled, message):
    from nxe._binding import ffi, last_error, lib

    if spoiled.get("filters", 0) is None:
        spoiled = {"filters": ffi.NULL}
    status, buffer, max_value = c_call(**spoiled)
    assert status == lib.NXE_ERROR_INVALID_ARGUMENT
    assert "nxe_audio_log10_mel" in last_error()
    assert re.search(message, last_error()), last_error()
    assert (buffer == 7.0).all(), "the output was written on failure"
    assert max_value == 0.0


def test_c_function_accepts_the_edge_cases():
    from nxe._binding import ffi, lib

    status, buffer, max_value = c_call(samples="null", num_samples=0, num_frames=4)
    assert status == lib.NXE_OK and max_value == buffer.max()
    status, _, _ = c_call(num_frames=0, out=False, max_out=False)
    assert status == lib.NXE_OK
    status, buffer, _ = c_call(max_out=False)
    assert status == lib.NXE_OK and (buffer[:160] != 7.0).all()
    # A NaN beyond every frame's reach is not read, so not refused.
    samples = np.ones(1000, np.float32)
    samples[999] = np.nan
    status, _, _ = c_call(samples=samples, num_samples=1000, num_frames=2)
    assert status == lib.NXE_OK
    assert ffi.sizeof("nxe_mel_spec") >= 24


def test_whisper_scale_refuses_bad_arguments():
    from nxe._binding import ffi, last_error, lib

    values = np.zeros(4, np.float32)
    pointer = ffi.from_buffer("float[]", values)
    assert lib.nxe_audio_whisper_scale(ffi.NULL, 4, 0.0) == lib.NXE_ERROR_INVALID_ARGUMENT
    assert "values is NULL" in last_error()
    assert lib.nxe_audio_whisper_scale(pointer, -1, 0.0) == lib.NXE_ERROR_INVALID_ARGUMENT
    assert "negative" in last_error()
    for bad in (float("nan"), float("inf"), float("-inf")):
        assert lib.nxe_audio_whisper_scale(pointer, 4, bad) == lib.NXE_ERROR_INVALID_ARGUMENT
        assert "not finite" in last_error()
    assert (values == 0).all()
    assert lib.nxe_audio_whisper_scale(ffi.NULL, 0, 0.0) == lib.NXE_OK


# -- files -------------------------------------------------------------------------------------

def stereo_test_signal(rate: int, seconds: float = 2.5) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    rng = np.random.default_rng(rate)
    left = 0.3 * np.sin(2 * np.pi * 440 * t) + 0.01 * rng.standard_normal(t.size)
    right = 0.2 * np.sin(2 * np.pi * 1234 * t) + 0.01 * rng.standard_normal(t.size)
    return np.stack([left, right], axis=1)


FILES = [("WAV", "PCM_16", 44100, 2), ("WAV", "FLOAT", 16000, 1), ("WAV", "PCM_24", 8000, 2),
         ("FLAC", "PCM_16", 22050, 1), ("FLAC", "PCM_24", 48000, 2), ("OGG", "VORBIS", 44100, 2),
         ("OGG", "VORBIS", 16000, 1)]


@pytest.fixture
def no_ffmpeg(monkeypatch):
    """The soundfile path alone: no FFmpeg to fall back on."""
    monkeypatch.delenv("NXE_FFMPEG", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")


@pytest.mark.parametrize(("fmt", "subtype", "rate", "channels"), FILES,
                         ids=[f"{f}-{s}-{r}-{c}ch" for f, s, r, c in FILES])
def test_load_equals_soundfile_and_soxr(tmp_path, no_ffmpeg, fmt, subtype, rate, channels):
    path = tmp_path / f"clip.{fmt.lower()}"
    soundfile.write(path, stereo_test_signal(rate)[:, :channels], rate, format=fmt,
                    subtype=subtype)
    decoded, file_rate = soundfile.read(path, dtype="float32", always_2d=True)
    assert file_rate == rate
    expected = decoded.mean(axis=1, dtype=np.float32)
    if rate != 16000:
        expected = soxr.resample(expected, rate, 16000)
    loaded = nxe.audio.load(path)
    assert loaded.dtype == np.float32 and loaded.ndim == 1
    # soxr's stream resampler, fed in blocks, gives what its one-call resampler gives.
    np.testing.assert_allclose(loaded, expected, rtol=0, atol=1e-6)
    at_8k = nxe.audio.load(str(path), sample_rate=8000)
    assert abs(at_8k.size - loaded.size / 2) <= 1


def test_blocks_are_load_cut_in_pieces(tmp_path, no_ffmpeg):
    path = tmp_path / "long.flac"
    soundfile.write(path, stereo_test_signal(44100, seconds=7.3), 44100, subtype="PCM_16")
    whole = nxe.audio.load(path)
    pieces = list(nxe.audio.blocks(path, 16000, block_seconds=2.0))
    assert [p.size for p in pieces[:-1]] == [32000] * (len(pieces) - 1)
    assert 0 < pieces[-1].size <= 32000
    np.testing.assert_array_equal(np.concatenate(pieces), whole)


def test_load_of_an_empty_file_is_empty(tmp_path, no_ffmpeg):
    path = tmp_path / "empty.wav"
    soundfile.write(path, np.zeros((0, 1), np.float32), 16000)
    assert nxe.audio.load(path).shape == (0,)


def truncated(tmp_path: Path, fmt: str, subtype: str) -> Path:
    whole = tmp_path / f"whole.{fmt.lower()}"
    soundfile.write(whole, stereo_test_signal(44100), 44100, format=fmt, subtype=subtype)
    data = whole.read_bytes()
    path = tmp_path / f"truncated.{fmt.lower()}"
    path.write_bytes(data[:len(data) // 2])
    return path


@pytest.mark.parametrize(("fmt", "subtype"), [("WAV", "PCM_16"), ("FLAC", "PCM_16"),
                                              ("OGG", "VORBIS"), ("MP3", "MPEG_LAYER_III")])
def test_truncated_files_raise_format_errors(tmp_path, no_ffmpeg, fmt, subtype):
    if fmt not in soundfile.available_formats():
        pytest.fail(f"this libsndfile writes no {fmt}")
    path = truncated(tmp_path, fmt, subtype)
    with pytest.raises(nxe.FormatError, match=f"^{path}: "):
        nxe.audio.load(path)
    with pytest.raises(nxe.FormatError):
        list(nxe.audio.blocks(path))


def test_files_that_are_not_audio_raise_format_errors(tmp_path, no_ffmpeg):
    garbage = tmp_path / "garbage.wav"
    garbage.write_bytes(b"RIFF\x10\x00\x00\x00WAVEfmt " + bytes(range(256)) * 4)
    text = tmp_path / "notes.txt"
    text.write_text("not audio at all\n")
    empty = tmp_path / "zero.ogg"
    empty.write_bytes(b"")
    for path in (garbage, text, empty):
        with pytest.raises(nxe.FormatError, match="not an audio file"):
            nxe.audio.load(path)


@pytest.mark.parametrize(("fmt", "subtype"), [("WAV", "PCM_16"), ("FLAC", "PCM_16"),
                                              ("OGG", "VORBIS")])
def test_corrupted_files_load_or_raise_nxe_errors(tmp_path, no_ffmpeg, fmt, subtype):
    """Files with bytes overwritten at random (headers included): each loads as float32 mono or
    raises an nxe error, never anything else."""
    whole = tmp_path / f"whole.{fmt.lower()}"
    soundfile.write(whole, stereo_test_signal(22050, seconds=0.5), 22050, format=fmt,
                    subtype=subtype)
    data = np.frombuffer(whole.read_bytes(), np.uint8)
    rng = np.random.default_rng(len(data))
    path = tmp_path / f"corrupt.{fmt.lower()}"
    outcomes = set()
    for trial in range(60):
        corrupt = data.copy()
        # Half the trials hit the first 64 bytes, where the headers are.
        span = 64 if trial % 2 == 0 else len(data)
        where = rng.integers(0, span, size=rng.integers(1, 8))
        corrupt[where] = rng.integers(0, 256, size=where.size)
        path.write_bytes(corrupt.tobytes())
        try:
            samples = nxe.audio.load(path)
        except nxe.Error as e:
            assert str(e).startswith(str(path)), str(e)
            outcomes.add(type(e).__name__)
            continue
        assert samples.dtype == np.float32 and samples.ndim == 1
        outcomes.add("loaded")
    assert "loaded" in outcomes or "FormatError" in outcomes


def test_missing_files_and_folders_are_refused(tmp_path, no_ffmpeg):
    with pytest.raises(nxe.NotFoundError, match="no such file"):
        nxe.audio.load(tmp_path / "missing.wav")
    with pytest.raises(nxe.NotFoundError):
        nxe.audio.blocks(tmp_path / "missing.wav")
    with pytest.raises(nxe.InvalidArgumentError, match="folder"):
        nxe.audio.load(tmp_path)
    with pytest.raises(nxe.InvalidArgumentError):
        nxe.audio.load(12)


def test_bad_rates_and_block_lengths_are_refused(tmp_path):
    path = tmp_path / "a.wav"
    soundfile.write(path, np.zeros(100, np.float32), 16000)
    for rate in (0, -16000, 16000.5, "16000"):
        with pytest.raises(nxe.InvalidArgumentError, match="sample_rate"):
            nxe.audio.load(path, sample_rate=rate)
    for seconds in (0, -1, float("nan"), "30"):
        with pytest.raises(nxe.InvalidArgumentError, match="block_seconds"):
            nxe.audio.blocks(path, block_seconds=seconds)


def test_nxe_ffmpeg_naming_no_program_is_refused_when_needed(tmp_path, monkeypatch):
    monkeypatch.setenv("NXE_FFMPEG", str(tmp_path / "no-ffmpeg"))
    wav = tmp_path / "a.wav"
    soundfile.write(wav, np.zeros(100, np.float32), 16000)
    assert nxe.audio.load(wav).size == 100  # soundfile reads it: FFmpeg is not looked for
    other = tmp_path / "a.m4a"
    other.write_bytes(bytes(range(256)) * 8)
    with pytest.raises(nxe.NotFoundError, match="NXE_FFMPEG"):
        nxe.audio.load(other)


# -- FFmpeg ------------------------------------------------------------------------------------

FFMPEG = Path(os.environ.get("NXE_FFMPEG", REPO / "build" / "ffmpeg" / "ffmpeg"))


@pytest.fixture
def ffmpeg(monkeypatch) -> Path:
    """The project's FFmpeg (ffmpeg-filter/build.sh); missing, the test skips unless
    NXE_REQUIRE_FFMPEG=1."""
    if not (FFMPEG.is_file() and os.access(FFMPEG, os.X_OK)):
        reason = f"no ffmpeg at {FFMPEG} (build it: ffmpeg-filter/build.sh)"
        if os.environ.get("NXE_REQUIRE_FFMPEG") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    monkeypatch.setenv("NXE_FFMPEG", str(FFMPEG))
    return FFMPEG


def ffmpeg_convert(ffmpeg: Path, source: Path, target: Path, *args: str) -> Path:
    subprocess.run([str(ffmpeg), "-nostdin", "-loglevel", "error", "-y", "-i", str(source),
                    *args, str(target)], check=True, capture_output=True, timeout=120)
    return target


def test_ffmpeg_decodes_containers_soundfile_does_not_read(tmp_path, ffmpeg):
    stereo = stereo_test_signal(16000).astype(np.float32)
    samples = stereo.mean(axis=1, dtype=np.float32)  # channels averaged as soundfile's path does
    wav = tmp_path / "clip.wav"
    soundfile.write(wav, stereo, 16000, subtype="FLOAT")
    mka = ffmpeg_convert(ffmpeg, wav, tmp_path / "clip.mka", "-c:a", "pcm_f32le", "-f",
                         "matroska")
    with pytest.raises(soundfile.LibsndfileError):
        soundfile.read(mka)
    np.testing.assert_array_equal(nxe.audio.load(mka), samples)
    np.testing.assert_array_equal(np.concatenate(list(nxe.audio.blocks(mka, 16000, 0.5))),
                                  samples)
    # Another rate: FFmpeg's resampler, close to soxr's (both band-limited, 2 s of 44.1 kHz).
    wav44 = tmp_path / "clip44.wav"
    soundfile.write(wav44, stereo_test_signal(44100), 44100, subtype="FLOAT")
    mka44 = ffmpeg_convert(ffmpeg, wav44, tmp_path / "clip44.mka", "-c:a", "pcm_f32le", "-f",
                           "matroska")
    ours = nxe.audio.load(mka44)
    reference = soxr.resample(stereo_test_signal(44100).mean(axis=1).astype(np.float32),
                              44100, 16000)
    assert abs(ours.size - reference.size) <= 2
    n = min(ours.size, reference.size)
    assert np.abs(ours[1000:n - 1000] - reference[1000:n - 1000]).max() < 0.01


def test_ffmpeg_errors_are_nxe_errors(tmp_path, ffmpeg):
    garbage = tmp_path / "garbage.m4a"
    garbage.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(nxe.FormatError, match="^" + str(garbage)):
        nxe.audio.load(garbage)
    video = tmp_path / "video.nut"
    subprocess.run([str(ffmpeg), "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i",
                    "testsrc2=size=64x64:rate=5:duration=1", "-c:v", "rawvideo", str(video)],
                   check=True, capture_output=True, timeout=120)
    with pytest.raises(nxe.FormatError, match="no audio stream"):
        nxe.audio.load(video)
