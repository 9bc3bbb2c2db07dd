"""nxe.subtitles: SubRip and WebVTT against openai-whisper's own writers (whisper.utils) on
random segments, and against the formats' rules read back by a strict parser written from the
formats' grammar: numbering, time lines, blank lines, `-->` and escaping in the text; OpenAI's
json and verbose_json bodies."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from nxe import subtitles
from nxe.transcriber import Segment, Transcription

WORDS = ["alpha", "beta", "<b>", "a&b", "x --> y", "café", "tom's", "-->", "1.5", "end."]


def _segments(seed: int, count: int = 12, long: bool = False) -> list[Segment]:
    rng = np.random.default_rng(seed)
    starts = np.cumsum(rng.uniform(0.0, 4000.0 if long else 9.0, count))
    segments = []
    for i, start in enumerate(starts):
        words = rng.choice(WORDS, size=int(rng.integers(1, 6)))
        segments.append(Segment(id=i, start=float(start),
                                end=float(start + rng.uniform(0.0, 7.0)),
                                text=" " + " ".join(words), tokens=[int(t) for t in
                                                                    rng.integers(0, 50000, 3)]))
    return segments


def _whisper(writer_name: str, segments: list[Segment], hours: bool) -> str:
    utils = pytest.importorskip("whisper.utils")
    writer_class = getattr(utils, writer_name)

    class Writer(writer_class):
        always_include_hours = hours

    stream = io.StringIO()
    result = {"segments": [{"start": s.start, "end": s.end, "text": s.text} for s in segments]}
    Writer(".").write_result(result, stream, {"max_line_width": None, "max_line_count": None,
                                              "highlight_words": False})
    return stream.getvalue()


@pytest.mark.parametrize("seed", range(4))
def test_srt_equals_openai_whisper(seed):
    """Whisper's WriteSRT: HH:MM:SS,mmm, cues numbered from 1, '-->' in text as '->'."""
    segments = _segments(seed, long=seed == 3)
    assert subtitles.srt(segments) == _whisper("WriteSRT", segments, hours=True)


@pytest.mark.parametrize("seed", range(3))
def test_vtt_equals_openai_whisper_on_plain_text(seed):
    """Whisper's WriteVTT with hours always shown (nxe always writes them), on texts without
    the characters WebVTT escapes (Whisper's writer does not escape them)."""
    segments = [Segment(id=s.id, start=s.start, end=s.end, text=re.sub(r"[<>&]", "", s.text))
                for s in _segments(seed)]
    assert subtitles.vtt(segments) == _whisper("WriteVTT", segments, hours=True)


_SRT_TIME = r"(\d{2,}):([0-5]\d):([0-5]\d),(\d{3})"
_VTT_TIME = r"(\d{2,}):([0-5]\d):([0-5]\d)\.(\d{3})"


def _seconds(parts: tuple[str, ...]) -> int:
    """Milliseconds of a parsed time."""
    h, m, s, ms = (int(p) for p in parts)
    return ((h * 60 + m) * 60 + s) * 1000 + ms


def _parse_cues(body: str, time_pattern: str, numbered: bool) -> list[tuple[int, int, str]]:
    """Cues of a SubRip/WebVTT body: blocks separated by one blank line, each an optional
    number line (SubRip: required, counting from 1), a time line, then text lines none of
    which is empty or holds '-->'. Raises AssertionError on anything else."""
    assert body.endswith("\n\n") or body == ""
    cues = []
    for index, block in enumerate(body[:-2].split("\n\n") if body else []):
        lines = block.split("\n")
        if numbered:
            assert lines.pop(0) == str(index + 1)
        match = re.fullmatch(time_pattern + " --> " + time_pattern, lines.pop(0))
        assert match, block
        assert lines and all(line.strip() and "-->" not in line for line in lines), block
        cues.append((_seconds(match.groups()[:4]), _seconds(match.groups()[4:]),
                     "\n".join(lines)))
    return cues


def _unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


@pytest.mark.parametrize("seed", range(3))
def test_srt_and_vtt_follow_the_formats(seed):
    segments = _segments(seed, long=seed == 2)
    # Line breaks with blank lines between them, and a segment with no text at all.
    segments[1] = Segment(id=1, start=segments[1].start, end=segments[1].end,
                          text=" first line\n\n  \nsecond --> line ")
    segments[2] = Segment(id=2, start=segments[2].start, end=segments[2].end, text="  ")
    kept = [s for s in segments if s.text.strip()]
    srt_cues = _parse_cues(subtitles.srt(segments), _SRT_TIME, numbered=True)
    body = subtitles.vtt(segments)
    assert body.startswith("WEBVTT\n\n")
    vtt_cues = _parse_cues(body[len("WEBVTT\n\n"):], _VTT_TIME, numbered=False)
    assert len(srt_cues) == len(vtt_cues) == len(kept)
    for segment, srt_cue, vtt_cue in zip(kept, srt_cues, vtt_cues, strict=True):
        times = (round(segment.start * 1000), round(segment.end * 1000))
        assert srt_cue[:2] == vtt_cue[:2] == times
        lines = [line.strip() for line in segment.text.split("\n") if line.strip()]
        assert srt_cue[2] == "\n".join(lines).replace("-->", "->")
        assert _unescape(vtt_cue[2]) == "\n".join(lines)
        assert "<" not in vtt_cue[2] and ">" not in vtt_cue[2]


def test_timestamps_round_clamp_and_pass_99_hours():
    utils = pytest.importorskip("whisper.utils")
    for seconds in [0.0, 0.0004, 0.0005, 59.9996, 3599.9995, 3600.0, 86399.999, 123456.789]:
        assert subtitles.timestamp(seconds) == utils.format_timestamp(seconds, True, ",")
        assert subtitles.timestamp(seconds, ".") == utils.format_timestamp(seconds, True, ".")
    assert subtitles.timestamp(-1.0) == subtitles.timestamp(float("nan")) == \
        utils.format_timestamp(0.0, True, ",")
    # An end before its start is written as the start: a cue never runs backwards.
    cue = _parse_cues(subtitles.srt([Segment(0, 5.0, 4.0, "x")]), _SRT_TIME, True)[0]
    assert cue[0] == cue[1] == 5000


def test_empty_transcription():
    assert subtitles.srt([]) == ""
    assert subtitles.vtt([]) == "WEBVTT\n\n"
    empty = Transcription(text="", language="en", duration=0.0, segments=[])
    assert subtitles.text(empty) == "\n"
    assert subtitles.json_body(empty) == {"text": "", "usage": {"type": "duration",
                                                                "seconds": 0}}


def test_openai_bodies():
    segments = _segments(7, count=3)
    text = "".join(s.text for s in segments).strip()
    result = Transcription(text=text, language="de", duration=12.25, segments=segments)
    assert subtitles.text(result) == text + "\n"
    assert subtitles.json_body(result) == {"text": text, "usage": {"type": "duration",
                                                                   "seconds": 13}}
    verbose = subtitles.verbose_json_body(result)
    assert (verbose["task"], verbose["language"], verbose["duration"], verbose["text"]) == \
        ("transcribe", "german", 12.25, text)
    assert [s["text"] for s in verbose["segments"]] == [s.text for s in segments]
    assert [s["tokens"] for s in verbose["segments"]] == [s.tokens for s in segments]
    assert [(s["id"], s["start"], s["end"]) for s in verbose["segments"]] == \
        [(s.id, s.start, s.end) for s in segments]
    # The OpenAI client reads them into its own types.
    types = pytest.importorskip("openai.types.audio")
    parsed = types.TranscriptionVerbose.model_validate(verbose)
    assert parsed.language == "german" and len(parsed.segments) == 3
    assert types.Transcription.model_validate(subtitles.json_body(result)).text == text


def test_language_names_match_openai_whisper():
    tokenizer = pytest.importorskip("whisper.tokenizer")
    assert subtitles.LANGUAGE_NAMES == tokenizer.LANGUAGES
