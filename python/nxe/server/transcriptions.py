"""POST /v1/audio/transcriptions for models of the engine's `asr` kind: OpenAI's multipart form
(`file`, `model`, `language`, `prompt`, `response_format` json | text | srt | verbose_json |
vtt, `temperature`) and its answers, in the formats nxe.subtitles writes.

The upload is at most max_body_bytes (the gate answers 413 before reading more); its bytes go
to a temporary file (removed at once after) that nxe.audio decodes to 16 kHz mono: WAV, FLAC
and OGG through soundfile, any other container through FFmpeg when it is installed. A file
that is not audio, or is empty, is OpenAI's 400 naming the `file` field; decoded audio longer
than MAX_AUDIO_S is a 413. The whole signal is one engine request; a client that disconnects
meanwhile has it cancelled (nxe.server.bridge). `temperature` 0 (OpenAI's default) means
Whisper's fallback list 0, 0.2, ... 1.0, as OpenAI's API describes it; another value is used
alone."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from starlette.responses import JSONResponse, PlainTextResponse, Response

from .. import errors as nxe_errors
from .. import subtitles
from . import kinds
from .bridge import off_loop
from .errors import ApiError, bad_request

ROUTE = "/v1/audio/transcriptions"
SAMPLE_RATE = 16000
# Decoded audio longer than this is refused (413): 16 kHz float32 samples of three hours are
# 690 MB, held while the request runs.
MAX_AUDIO_S = 3 * 3600
# File name suffixes passed on to the temporary file, so that FFmpeg may guess the container.
_SUFFIX_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def _suffix(filename: str) -> str:
    suffix = Path(filename).suffix.lower()
    if 1 < len(suffix) <= 8 and set(suffix[1:]) <= _SUFFIX_CHARS:
        return suffix
    return ".audio"


def decode_upload(data: bytes, filename: str) -> np.ndarray:
    """16 kHz mono float32 samples of an uploaded audio file's bytes; ApiError 400 when they
    are not audio that can be read."""
    from ..transcriber import audio_samples

    handle, name = tempfile.mkstemp(prefix="nxe-upload-", suffix=_suffix(filename))
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        try:
            return audio_samples(Path(name))
        except (nxe_errors.Error, ValueError, OSError) as error:
            # The message names the upload as the client did, not the temporary file.
            why = str(error).replace(name, filename or "the upload")
            raise ApiError(400, f"the uploaded file is not audio that can be decoded: {why}",
                           param="file", code="invalid_file_format") from None
    finally:
        Path(name).unlink(missing_ok=True)


def _options(body: Any) -> dict[str, str]:
    from ..transcriber import request_options

    temperature = None if body.temperature == 0 else body.temperature
    return request_options(language=body.language or None, prompt=body.prompt or None,
                           temperature=temperature)


def answer(transcription: Any, response_format: str) -> Response:
    """The route's answer to a finished transcription in OpenAI's `response_format`."""
    if response_format == "text":
        return PlainTextResponse(subtitles.text(transcription))
    if response_format == "srt":
        return PlainTextResponse(subtitles.srt(transcription.segments))
    if response_format == "vtt":
        return PlainTextResponse(subtitles.vtt(transcription.segments), media_type="text/vtt")
    if response_format == "verbose_json":
        return JSONResponse(subtitles.verbose_json_body(transcription, transcription.task))
    return JSONResponse(subtitles.json_body(transcription))


async def transcriptions(state: Any, request: Any, model: str, body: Any) -> Response:
    """The kind "asr"'s answer to /v1/audio/transcriptions."""
    from ..transcriber import transcription_from_outputs

    if not body.file:
        raise bad_request("the uploaded file is empty", param="file", code="empty_file")
    samples = await off_loop(len(body.file), decode_upload, body.file, body.filename)
    if samples.size > MAX_AUDIO_S * SAMPLE_RATE:
        raise ApiError(413, f"the audio lasts {samples.size / SAMPLE_RATE:.0f} s, more than "
                       f"this server takes ({MAX_AUDIO_S} s)", param="file",
                       code="audio_too_long")
    try:
        options = _options(body)
    except nxe_errors.Error as error:
        raise bad_request(str(error), code="invalid_request") from None
    try:
        outputs = await state.infer(model, {"pcm": samples}, request, options=options)
    except ApiError as error:
        if error.status == 400 and "language" in error.message and body.language:
            error.param = "language"
        raise
    transcription = await off_loop(samples.nbytes // 64, transcription_from_outputs, outputs)
    return answer(transcription, body.response_format)


kinds.register(ROUTE, "asr", transcriptions)
