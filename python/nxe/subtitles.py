"""Transcripts as the formats people use them in: SubRip (.srt) and WebVTT (.vtt) subtitles,
plain text, and the JSON bodies OpenAI's /v1/audio/transcriptions answers (`json`,
`verbose_json`). Every writer takes segments with `start`, `end` (seconds) and `text`
(nxe.Segment, or dicts with those keys).

SubRip: cues numbered from 1, `HH:MM:SS,mmm --> HH:MM:SS,mmm`, the text, a blank line after
each. WebVTT: the `WEBVTT` header and a blank line, then cues `HH:MM:SS.mmm --> HH:MM:SS.mmm`
and their text, a blank line after each. A cue's text never holds a blank line (it would end
the cue) nor `-->` (it would read as a timing line): line breaks inside a segment's text are
kept, empty lines dropped; SubRip's `-->` becomes `->`, and WebVTT escapes `&`, `<` and `>` as
its cue text requires (so `-->` becomes `--&gt;`). Segments whose text is empty are left out
(an empty cue ends at once), and the numbering counts the cues written. Times are rounded to
the millisecond, negative ones written as 0; hours go past 99 when they must.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

# Whisper's language codes and their names, as verbose_json reports the language.
LANGUAGE_NAMES = {
    "en": "english", "zh": "chinese", "de": "german", "es": "spanish", "ru": "russian",
    "ko": "korean", "fr": "french", "ja": "japanese", "pt": "portuguese", "tr": "turkish",
    "pl": "polish", "ca": "catalan", "nl": "dutch", "ar": "arabic", "sv": "swedish",
    "it": "italian", "id": "indonesian", "hi": "hindi", "fi": "finnish", "vi": "vietnamese",
    "he": "hebrew", "uk": "ukrainian", "el": "greek", "ms": "malay", "cs": "czech",
    "ro": "romanian", "da": "danish", "hu": "hungarian", "ta": "tamil", "no": "norwegian",
    "th": "thai", "ur": "urdu", "hr": "croatian", "bg": "bulgarian", "lt": "lithuanian",
    "la": "latin", "mi": "maori", "ml": "malayalam", "cy": "welsh", "sk": "slovak",
    "te": "telugu", "fa": "persian", "lv": "latvian", "bn": "bengali", "sr": "serbian",
    "az": "azerbaijani", "sl": "slovenian", "kn": "kannada", "et": "estonian", "mk": "macedonian",
    "br": "breton", "eu": "basque", "is": "icelandic", "hy": "armenian", "ne": "nepali",
    "mn": "mongolian", "bs": "bosnian", "kk": "kazakh", "sq": "albanian", "sw": "swahili",
    "gl": "galician", "mr": "marathi", "pa": "punjabi", "si": "sinhala", "km": "khmer",
    "sn": "shona", "yo": "yoruba", "so": "somali", "af": "afrikaans", "oc": "occitan",
    "ka": "georgian", "be": "belarusian", "tg": "tajik", "sd": "sindhi", "gu": "gujarati",
    "am": "amharic", "yi": "yiddish", "lo": "lao", "uz": "uzbek", "fo": "faroese",
    "ht": "haitian creole", "ps": "pashto", "tk": "turkmen", "nn": "nynorsk", "mt": "maltese",
    "sa": "sanskrit", "lb": "luxembourgish", "my": "myanmar", "bo": "tibetan", "tl": "tagalog",
    "mg": "malagasy", "as": "assamese", "tt": "tatar", "haw": "hawaiian", "ln": "lingala",
    "ha": "hausa", "ba": "bashkir", "jw": "javanese", "su": "sundanese", "yue": "cantonese",
}


def _field(segment: Any, name: str, default: Any = None) -> Any:
    if isinstance(segment, Mapping):
        return segment.get(name, default)
    return getattr(segment, name, default)


def timestamp(seconds: float, separator: str = ",") -> str:
    """`seconds` as HH:MM:SS,mmm (SubRip; `separator` "." for WebVTT), rounded to the
    millisecond; negative or not-a-number times are 0."""
    if not math.isfinite(seconds) or seconds < 0:
        seconds = 0.0
    millis = int(round(seconds * 1000))
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{separator}{millis:03d}"


def _cue_text(text: str) -> str:
    """The text's non-empty lines, each stripped, joined by single line breaks."""
    lines = [line.strip() for line in str(text).replace("\r\n", "\n").replace("\r", "\n")
             .split("\n")]
    return "\n".join(line for line in lines if line)


def _cues(segments: Iterable[Any]) -> list[tuple[float, float, str]]:
    cues = []
    for segment in segments:
        text = _cue_text(_field(segment, "text", ""))
        if not text:
            continue
        start = float(_field(segment, "start", 0.0))
        end = max(start, float(_field(segment, "end", start)))
        cues.append((start, end, text))
    return cues


def srt(segments: Iterable[Any]) -> str:
    """SubRip subtitles of `segments`."""
    parts = []
    for number, (start, end, text) in enumerate(_cues(segments), 1):
        text = text.replace("-->", "->")
        parts.append(f"{number}\n{timestamp(start)} --> {timestamp(end)}\n{text}\n\n")
    return "".join(parts)


def _vtt_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def vtt(segments: Iterable[Any]) -> str:
    """WebVTT subtitles of `segments`."""
    parts = ["WEBVTT\n\n"]
    for start, end, text in _cues(segments):
        parts.append(f"{timestamp(start, '.')} --> {timestamp(end, '.')}\n"
                     f"{_vtt_escape(text)}\n\n")
    return "".join(parts)


def text(transcription: Any) -> str:
    """OpenAI's `text` answer: the transcript and a line ending."""
    return str(_field(transcription, "text", "")).strip() + "\n"


def _usage(duration: float) -> dict[str, Any]:
    return {"type": "duration", "seconds": int(math.ceil(max(0.0, duration)))}


def json_body(transcription: Any) -> dict[str, Any]:
    """OpenAI's `json` answer: {"text", "usage"} (usage in seconds of audio, rounded up)."""
    return {"text": str(_field(transcription, "text", "")).strip(),
            "usage": _usage(float(_field(transcription, "duration", 0.0)))}


_SEGMENT_KEYS = ("id", "seek", "start", "end", "text", "tokens", "temperature", "avg_logprob",
                 "compression_ratio", "no_speech_prob")


def segment_dict(segment: Any) -> dict[str, Any]:
    """A segment as verbose_json lists it."""
    values = {key: _field(segment, key) for key in _SEGMENT_KEYS}
    values["tokens"] = [int(t) for t in values["tokens"] or []]
    for key in ("start", "end", "temperature", "avg_logprob", "compression_ratio",
                "no_speech_prob"):
        values[key] = float(values[key] or 0.0)
    values["id"] = int(values["id"] or 0)
    values["seek"] = int(values["seek"] or 0)
    values["text"] = str(values["text"] or "")
    return values


def verbose_json_body(transcription: Any, task: str = "transcribe") -> dict[str, Any]:
    """OpenAI's `verbose_json` answer: task, language (its English name, as OpenAI gives it),
    duration, text, segments, usage."""
    code = str(_field(transcription, "language", "") or "")
    duration = float(_field(transcription, "duration", 0.0))
    return {"task": task, "language": LANGUAGE_NAMES.get(code, code), "duration": duration,
            "text": str(_field(transcription, "text", "")).strip(),
            "segments": [segment_dict(s) for s in _field(transcription, "segments", [])],
            "usage": _usage(duration)}


__all__ = ["LANGUAGE_NAMES", "json_body", "segment_dict", "srt", "text", "timestamp",
           "verbose_json_body", "vtt"]
