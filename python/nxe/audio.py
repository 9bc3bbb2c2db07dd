"""nxe.audio: audio files to mono float samples, and the log-mel spectrogram speech models read
(Whisper's), computed by the library (include/nxe/nxe_audio.h).

    samples = nxe.audio.load("speech.flac")             # float32 mono at 16 kHz
    mel = nxe.audio.log_mel_spectrogram(samples)         # [80, frames], Whisper's values
    for block in nxe.audio.blocks("two_hours.ogg"):      # 30 s at a time, bounded memory
        ...

Files are decoded by soundfile (libsndfile: WAV, FLAC, OGG and the other formats it reads) and
resampled by soxr, both from the `asr` extra; any other container goes through FFmpeg when one
is found (`NXE_FFMPEG`, else `ffmpeg` on PATH), which then also resamples. Files are untrusted
input: a missing one raises NotFoundError, one that is not audio, truncated or without an
audio stream FormatError, each message starting with the file's name.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ._binding import check, ffi, lib
from .errors import (
    FormatError,
    InvalidArgumentError,
    IoError,
    NotFoundError,
    UnsupportedError,
)

SAMPLE_RATE = 16000
N_FFT = 400
HOP_LENGTH = 160
N_MELS = 80
CHUNK_SAMPLES = 30 * SAMPLE_RATE  # Whisper's window: 30 s, 3000 frames
ASR_EXTRA = "pip install 'nxe[asr]'"
# Samples decoded per read of a file, before resampling (bounded memory for any file length).
_READ_FRAMES = 1 << 16
# Most channels and the highest rate accepted: beyond are hostile headers, not audio.
_MAX_RATE = 1 << 20


# -- the spectrogram ---------------------------------------------------------------------------

def _hz_to_mel(freq: np.ndarray) -> np.ndarray:
    """Slaney's mel scale (librosa's default): linear below 1 kHz, logarithmic above."""
    freq = np.asarray(freq, dtype=np.float64)
    f_sp = 200.0 / 3
    min_log_hz, min_log_mel, logstep = 1000.0, 1000.0 / f_sp, np.log(6.4) / 27.0
    mels = freq / f_sp
    log_part = freq >= min_log_hz
    mels[log_part] = min_log_mel + np.log(freq[log_part] / min_log_hz) / logstep
    return mels


def _mel_to_hz(mels: np.ndarray) -> np.ndarray:
    mels = np.asarray(mels, dtype=np.float64)
    f_sp = 200.0 / 3
    min_log_hz, min_log_mel, logstep = 1000.0, 1000.0 / f_sp, np.log(6.4) / 27.0
    freqs = f_sp * mels
    log_part = mels >= min_log_mel
    freqs[log_part] = min_log_hz * np.exp(logstep * (mels[log_part] - min_log_mel))
    return freqs


@functools.lru_cache(maxsize=8)
def _mel_filters(n_mels: int, n_fft: int, sample_rate: int) -> np.ndarray:
    fft_freqs = np.linspace(0.0, sample_rate / 2, n_fft // 2 + 1)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(np.array([0.0]))[0],
                                   _hz_to_mel(np.array([sample_rate / 2]))[0], n_mels + 2))
    widths = np.diff(edges)
    ramps = edges[:, None] - fft_freqs[None, :]
    weights = np.zeros((n_mels, n_fft // 2 + 1), dtype=np.float32)
    for i in range(n_mels):
        rising = -ramps[i] / widths[i]
        falling = ramps[i + 2] / widths[i + 1]
        weights[i] = np.maximum(0.0, np.minimum(rising, falling))
    # Slaney's normalization: each triangle has unit area over its width in Hz.
    weights *= (2.0 / (edges[2:n_mels + 2] - edges[:n_mels]))[:, None]
    weights.setflags(write=False)
    return weights


def mel_filters(n_mels: int = N_MELS, n_fft: int = N_FFT,
                sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """The mel filter bank [n_mels, n_fft // 2 + 1] float32 (read-only): triangles on Slaney's
    mel scale from 0 Hz to sample_rate / 2, each normalized to unit area (librosa's
    `filters.mel` defaults, which openai-whisper ships precomputed), computed here."""
    for name, value, low, high in (("n_mels", n_mels, 1, 4096), ("n_fft", n_fft, 2, 65536),
                                   ("sample_rate", sample_rate, 1, _MAX_RATE)):
        if not isinstance(value, (int, np.integer)) or not low <= value <= high:
            raise InvalidArgumentError(f"mel_filters: {name} is {value!r}, not an integer in "
                                       f"[{low}, {high}]")
    return _mel_filters(int(n_mels), int(n_fft), int(sample_rate))


def _as_samples(samples, where: str) -> np.ndarray:
    array = np.asarray(samples)
    if array.ndim != 1:
        raise InvalidArgumentError(f"{where}: samples must be one-dimensional (mono), got shape "
                                   f"{array.shape}")
    if array.dtype.kind not in "fiu":
        raise InvalidArgumentError(f"{where}: samples must be numbers, got {array.dtype}")
    return np.ascontiguousarray(array, dtype=np.float32)


def _as_filters(filters, n_fft: int) -> np.ndarray:
    filters = mel_filters(n_fft=n_fft) if filters is None else filters
    filters = np.ascontiguousarray(filters, dtype=np.float32)
    if filters.ndim != 2 or filters.shape[1] != n_fft // 2 + 1:
        raise InvalidArgumentError(f"log_mel_spectrogram: filters must be [n_mels, "
                                   f"{n_fft // 2 + 1}], got shape {filters.shape}")
    return filters


def log10_mel(samples, first_frame: int, num_frames: int, filters=None, *, n_fft: int = N_FFT,
              hop_length: int = HOP_LENGTH) -> tuple[np.ndarray, float]:
    """log10(max(mel power, 1e-10)) of frames [first_frame, first_frame + num_frames) of
    `samples` (nxe_audio_log10_mel: frame f centred on sample f * hop_length, zeros past the
    end, reflection before the start), as [n_mels, num_frames] float32, and its largest value.
    Windows of one signal computed this way equal the slices of the whole."""
    samples = _as_samples(samples, "log10_mel")
    filters = _as_filters(filters, n_fft)
    out = np.empty((filters.shape[0], max(int(num_frames), 0)), dtype=np.float32)
    spec = ffi.new("nxe_mel_spec *", {"struct_size": ffi.sizeof("nxe_mel_spec"),
                                      "n_fft": n_fft, "hop_length": hop_length,
                                      "n_mels": filters.shape[0],
                                      "filters": ffi.from_buffer("float[]", filters)})
    max_value = ffi.new("float *")
    check(lib.nxe_audio_log10_mel(spec, ffi.from_buffer("float[]", samples), samples.size,
                                  first_frame, num_frames, ffi.from_buffer("float[]", out),
                                  max_value))
    return out, float(max_value[0])


def whisper_scale(values: np.ndarray, max_value: float) -> np.ndarray:
    """Whisper's scaling of log10 mel values, in place on a float32 C-contiguous array (and
    returned): (max(x, max_value - 8) + 4) / 4."""
    if not (isinstance(values, np.ndarray) and values.dtype == np.float32
            and values.flags.c_contiguous and values.flags.writeable):
        raise InvalidArgumentError("whisper_scale: values must be a writable C-contiguous "
                                   "float32 array")
    check(lib.nxe_audio_whisper_scale(ffi.from_buffer("float[]", values), values.size,
                                      max_value))
    return values


def log_mel_spectrogram(samples, filters=None, padding: int = CHUNK_SAMPLES) -> np.ndarray:
    """Whisper's log-mel spectrogram of 16 kHz mono `samples` after `padding` zeros:
    [n_mels, (len + padding) // 160] float32, equal to openai-whisper's
    `log_mel_spectrogram(samples, padding=padding)` (tests/test_audio.py states the bound).
    `filters` defaults to mel_filters()."""
    samples = _as_samples(samples, "log_mel_spectrogram")
    if not isinstance(padding, (int, np.integer)) or padding < 0:
        raise InvalidArgumentError(f"log_mel_spectrogram: padding is {padding!r}, not an "
                                   "integer >= 0")
    length = samples.size + int(padding)
    reflect = N_FFT // 2
    if int(padding) <= reflect < length:
        # The right edge is then inside the reach of the last frames: torch.stft reflects the
        # padded signal there, where the library reads zeros; give it the reflection.
        padded = np.zeros(length + reflect, dtype=np.float32)
        padded[:samples.size] = samples
        padded[length:] = padded[length - 2:length - 2 - reflect:-1]
        samples = padded
    values, max_value = log10_mel(samples, 0, length // HOP_LENGTH, filters)
    return whisper_scale(values, max_value)


# -- files -------------------------------------------------------------------------------------

def _check_rate(sample_rate) -> int:
    if not isinstance(sample_rate, (int, np.integer)) or not 1 <= sample_rate <= _MAX_RATE:
        raise InvalidArgumentError(f"sample_rate is {sample_rate!r}, not an integer in "
                                   f"[1, {_MAX_RATE}]")
    return int(sample_rate)


def _check_file(path) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidArgumentError(f"an audio file is a path, not {type(path).__name__}")
    path = Path(path)
    try:
        if path.is_dir():
            raise InvalidArgumentError(f"{path}: is a folder, not an audio file")
        with open(path, "rb"):
            pass
    except FileNotFoundError:
        raise NotFoundError(f"{path}: no such file") from None
    except OSError as e:
        raise IoError(f"{path}: cannot be read ({e.strerror or e})") from None
    return path


def find_ffmpeg() -> str | None:
    """The FFmpeg the package decodes other containers with: NXE_FFMPEG (which must name an
    executable), else `ffmpeg` on PATH, else None."""
    configured = os.environ.get("NXE_FFMPEG")
    if configured:
        found = shutil.which(configured)
        if not found:
            raise NotFoundError(f"NXE_FFMPEG is {configured!r}, which is no executable")
        return found
    return shutil.which("ffmpeg")


def _soundfile():
    try:
        import soundfile
    except ImportError:
        return None
    return soundfile


def _resampler(rate: int, sample_rate: int, path: Path):
    """A function of (block, last) -> resampled block, soxr's stream resampler (None when the
    rates are equal)."""
    if rate == sample_rate:
        return None
    try:
        import soxr
    except ImportError:
        raise UnsupportedError(f"{path}: resampling {rate} Hz to {sample_rate} Hz needs soxr: "
                               f"{ASR_EXTRA}") from None
    stream = soxr.ResampleStream(rate, sample_rate, 1, dtype="float32")
    return lambda block, last: stream.resample_chunk(block, last=last)


_WAV_DATA_SIZE = re.compile(r"^data\s*:\s*(\d+)\s*\(should be (\d+)\)", re.M)


def _truncation(info: str) -> str | None:
    """What libsndfile's log of opening a file says is missing from it, if anything."""
    match = _WAV_DATA_SIZE.search(info)
    # Streamed WAVs carry a placeholder size (0 or all ones), not a truncation.
    if match and int(match.group(2)) < int(match.group(1)) < 0x7FFFFFFF:
        return (f"its header gives {match.group(1)} bytes of samples, the file holds "
                f"{match.group(2)}")
    if "lacks an end-of-stream bit" in info:
        return "its last Ogg page is not the end of the stream"
    return None


def _soundfile_blocks(soundfile, handle, path: Path) -> Iterator[np.ndarray]:
    """Mono float32 blocks of an open SoundFile at its own rate."""
    if handle.channels < 1 or handle.samplerate < 1 or handle.samplerate > _MAX_RATE:
        raise FormatError(f"{path}: {handle.channels} channels at {handle.samplerate} Hz is not "
                          "audio this reader takes")
    why = _truncation(handle.extra_info)
    if why:
        raise FormatError(f"{path}: truncated audio file ({why})")
    total = 0
    try:
        while True:
            block = handle.read(_READ_FRAMES, dtype="float32", always_2d=True)
            if block.shape[0] == 0:
                break
            total += block.shape[0]
            yield block.mean(axis=1, dtype=np.float32) if block.shape[1] > 1 else block[:, 0]
    except soundfile.LibsndfileError as e:
        raise FormatError(f"{path}: the audio data is corrupt ({e.error_string})") from None
    if handle.frames > 0 and total < handle.frames and handle.seekable():
        raise FormatError(f"{path}: truncated audio file (its header gives {handle.frames} "
                          f"frames, the file holds {total})")


def _ffmpeg_error(path: Path, ffmpeg: str, stderr: str) -> Exception:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    tail = "; ".join(lines[-3:]) or "no message"
    if "No such file or directory" in stderr:
        return NotFoundError(f"{path}: no such file")
    if ("does not contain any stream" in stderr or "matches no streams" in stderr
            or "Output file is empty" in stderr):
        return FormatError(f"{path}: has no audio stream")
    if any(text in stderr for text in ("Unknown encoder", "No such filter", "Unknown format",
                                       "not a suitable output format", "not found for input")):
        return UnsupportedError(f"{path}: {ffmpeg} cannot decode audio to float samples (a "
                                f"build without the parts it needs: {tail})")
    return FormatError(f"{path}: not an audio file FFmpeg can decode ({tail})")


def _wav_stream_channels(stream, path: Path) -> int:
    """Reads the header of the WAV stream FFmpeg writes (float samples, any number of chunks
    before `data`, whose size is a placeholder on a pipe) up to its samples; the channels."""
    def exactly(count: int) -> bytes:
        data = stream.read(count)
        if len(data) != count:
            raise EOFError
        return data

    channels = 0
    if exactly(12)[8:12] != b"WAVE":
        raise FormatError(f"{path}: FFmpeg wrote no WAV stream")
    for _ in range(64):
        chunk = exactly(8)
        size = int.from_bytes(chunk[4:8], "little")
        if chunk[:4] == b"data":
            break
        if size > 1 << 20:
            raise FormatError(f"{path}: FFmpeg wrote a WAV header chunk of {size} bytes")
        body = exactly(size + size % 2)
        if chunk[:4] == b"fmt " and size >= 16:
            channels = int.from_bytes(body[2:4], "little")
    else:
        raise FormatError(f"{path}: FFmpeg wrote a WAV stream without samples")
    if channels < 1:
        raise FormatError(f"{path}: FFmpeg wrote a WAV stream without channels")
    return channels


def _ffmpeg_blocks(ffmpeg: str, path: Path, sample_rate: int) -> Iterator[np.ndarray]:
    """Mono float32 blocks at sample_rate decoded and resampled by FFmpeg. The channels come
    as they are, in a WAV stream of float samples, and are averaged here as the soundfile path
    averages them (FFmpeg's own downmix to mono weighs stereo by 1/sqrt(2), not 1/2)."""
    command = [ffmpeg, "-nostdin", "-hide_banner", "-loglevel", "error", "-i", str(path),
               "-map", "0:a:0", "-vn", "-ar", str(sample_rate), "-c:a", "pcm_f32le",
               "-bitexact", "-f", "wav", "-"]
    # FFmpeg's messages go to a file: a pipe that nobody reads could fill and stall it.
    with tempfile.TemporaryFile() as errors:
        try:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=errors)
        except OSError as e:
            raise UnsupportedError(f"{path}: cannot run {ffmpeg} ({e.strerror or e})") from None
        status = None
        try:
            try:
                channels = _wav_stream_channels(process.stdout, path)
            except EOFError:
                channels = 0  # FFmpeg failed before writing: its status and message say why
            if channels:
                frame_bytes = 4 * channels
                pending = b""
                while True:
                    data = process.stdout.read(frame_bytes * _READ_FRAMES)
                    if not data:
                        break
                    data = pending + data
                    usable = len(data) - len(data) % frame_bytes
                    pending = data[usable:]
                    if usable:
                        block = np.frombuffer(data[:usable], dtype="<f4").reshape(-1, channels)
                        yield (block.mean(axis=1, dtype=np.float32) if channels > 1
                               else block[:, 0].astype(np.float32))
            process.stdout.close()
            status = process.wait()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        errors.seek(0)
        message = errors.read().decode("utf-8", "replace")
        if status != 0 or not channels:
            raise _ffmpeg_error(path, ffmpeg, message)


def _rebatch(pieces: Iterator[np.ndarray], size: int) -> Iterator[np.ndarray]:
    """Blocks of exactly `size` samples from pieces of any length; the last may be shorter."""
    held: list[np.ndarray] = []
    count = 0
    for piece in pieces:
        held.append(piece)
        count += piece.size
        while count >= size:
            joined = np.concatenate(held)
            yield joined[:size]
            rest = joined[size:]
            held, count = ([rest] if rest.size else []), rest.size
    if count:
        yield np.concatenate(held)


def _decoded(path: Path, sample_rate: int) -> Iterator[np.ndarray]:
    """Mono float32 pieces of a file at sample_rate, of whatever lengths decoding gives."""
    soundfile = _soundfile()
    handle = None
    if soundfile is not None:
        try:
            handle = soundfile.SoundFile(str(path))
        except soundfile.LibsndfileError as e:
            not_read = f"not an audio file soundfile reads ({e.error_string})"
        except (RuntimeError, TypeError, ValueError) as e:
            raise FormatError(f"{path}: not an audio file soundfile reads ({e})") from None
    if handle is None:
        # FFmpeg is looked for only now: a file soundfile reads never needs it.
        ffmpeg = find_ffmpeg()
        if ffmpeg is None and soundfile is None:
            raise UnsupportedError(f"{path}: reading audio files needs soundfile: {ASR_EXTRA} "
                                   "(or FFmpeg: set NXE_FFMPEG or put ffmpeg on PATH)")
        if ffmpeg is None:
            raise FormatError(f"{path}: {not_read}; other containers need FFmpeg (set "
                              "NXE_FFMPEG or put ffmpeg on PATH)")
        yield from _ffmpeg_blocks(ffmpeg, path, sample_rate)
        return
    with handle:
        resample = _resampler(handle.samplerate, sample_rate, path)
        for block in _soundfile_blocks(soundfile, handle, path):
            yield block if resample is None else resample(block, False)
        if resample is not None:
            yield resample(np.zeros(0, dtype=np.float32), True)


def blocks(path: str | os.PathLike, sample_rate: int = SAMPLE_RATE,
           block_seconds: float = 30.0) -> Iterator[np.ndarray]:
    """The file as float32 mono blocks of block_seconds at sample_rate (the last one shorter),
    decoded and resampled as it is read: memory stays bounded whatever the file's length. The
    checks of load() apply; a truncated file raises when its end is reached."""
    sample_rate = _check_rate(sample_rate)
    if not isinstance(block_seconds, (int, float)) or not 0 < block_seconds <= 24 * 3600:
        raise InvalidArgumentError(f"block_seconds is {block_seconds!r}, not a number of "
                                   "seconds in (0, 86400]")
    size = max(1, int(round(block_seconds * sample_rate)))
    path = _check_file(path)
    return _rebatch(_decoded(path, sample_rate), size)


def load(path: str | os.PathLike, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """An audio file as float32 mono samples at sample_rate: channels averaged, resampled by
    soxr (or FFmpeg's resampler for files only FFmpeg reads). NotFoundError for a missing file,
    FormatError for one that is not audio, truncated or holds no audio stream,
    UnsupportedError when what it needs (the `asr` extra, FFmpeg) is not installed."""
    sample_rate = _check_rate(sample_rate)
    path = _check_file(path)
    pieces = [piece for piece in _decoded(path, sample_rate) if piece.size]
    if not pieces:
        return np.zeros(0, dtype=np.float32)
    return np.ascontiguousarray(np.concatenate(pieces), dtype=np.float32)
