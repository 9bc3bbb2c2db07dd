"""`nxe upscale` as a user runs it: the installed `nxe` executable in a temporary folder, each
case checked on disk afterwards. Users' files are never destroyed or half-written (same-file
refusal, -y/-n/asking, format mismatches, failures and Ctrl-C leaving nothing), the upscaler
conventions (-i/-o/-s/-m/-t/-j, folders, pipes), and progress that reads right on a terminal
(a pseudo-terminal here) and in a log."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import numpy as np
import nxe.sr
import pytest
from image_testing import textured_picture
from nxe import images
from PIL import Image

NXE = Path(sys.executable).with_name("nxe")
TIMEOUT_S = 600


def picture(h=30, w=44, channels=3, seed=0):
    return textured_picture(h, w, channels, seed)


@pytest.fixture(scope="module", autouse=True)
def installed_nxe():
    assert NXE.is_file(), f"no nxe executable at {NXE}: install the package (pip install .)"


def run_nxe(*args, cwd, stdin=None, env=None, text=True):
    return subprocess.run([str(NXE), *map(str, args)], cwd=cwd, input=stdin,
                          capture_output=True, text=text, timeout=TIMEOUT_S,
                          env={**os.environ, **(env or {})})


def on_terminal(*args, cwd, answer=None, env=None):
    """Runs nxe with stdin, stdout and stderr on a pseudo-terminal 100 columns wide, answering
    `answer` to an overwrite question; returns the status and all it wrote, with output
    post-processing off so that every carriage return is the program's own."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    attributes = termios.tcgetattr(slave)
    attributes[1] &= ~termios.OPOST
    termios.tcsetattr(slave, termios.TCSANOW, attributes)
    process = subprocess.Popen([str(NXE), *map(str, args)], cwd=cwd, stdin=slave, stdout=slave,
                               stderr=slave, env={**os.environ, **(env or {})})
    os.close(slave)
    output, deadline = b"", time.monotonic() + TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            output += chunk
            if answer is not None and b"Overwrite? [y/N] " in output:
                os.write(master, answer)
                answer = None
        status = process.wait(timeout=TIMEOUT_S)
    finally:
        os.close(master)
    return status, output.decode()


def write_clip(path, frames, width=40, height=24, truncate_last=False):
    """A yuv420p Y4M clip of `frames` random frames; returns the frames' planes."""
    rng = np.random.default_rng(frames)
    clip = [[rng.integers(0, 256, shape, dtype=np.uint8)
             for shape in nxe.sr.plane_shapes("yuv420p", width, height)] for _ in range(frames)]
    with open(path, "wb") as f:
        images.write_y4m_header(f, images.Y4mHeader(width, height, "yuv420p"))
        for planes in clip:
            images.write_y4m_frame(f, planes)
        if truncate_last:
            f.truncate(f.tell() - 10)
    return clip


def read_clip(path):
    with open(path, "rb") as f:
        header = images.read_y4m_header(f)
        return header, list(images.y4m_frames(f, header))


def names(folder):
    return sorted(p.name for p in Path(folder).iterdir())


def snapshot(folder):
    """Every file's bytes, to show that a refused run changed nothing."""
    return {p.name: p.read_bytes() for p in Path(folder).iterdir() if p.is_file()}


# ---- never destroy or half-write a user's file ----

@pytest.mark.parametrize("suffix", [".png", ".y4m"])
def test_an_output_that_is_the_input_is_refused(tmp_path, suffix):
    if suffix == ".png":
        images.write_png(tmp_path / "in.png", picture())
    else:
        write_clip(tmp_path / "in.y4m", 2)
    source = f"in{suffix}"
    os.symlink(source, tmp_path / f"link{suffix}")
    os.link(tmp_path / source, tmp_path / f"hard{suffix}")
    before = snapshot(tmp_path)
    for output in (source, f"./{source}", f"link{suffix}", f"hard{suffix}",
                   str(tmp_path / source)):
        result = run_nxe("upscale", source, "-o", output, "-y", cwd=tmp_path)
        assert result.returncode == 1, output
        assert f"{output} is the input {source}" in result.stderr
        assert "Traceback" not in result.stderr
        assert snapshot(tmp_path) == before, output  # nothing truncated, nothing added


def test_an_existing_output_needs_y_and_n_refuses(tmp_path):
    images.write_png(tmp_path / "in.png", picture())
    (tmp_path / "out.png").write_bytes(b"keep me")
    for extra in ([], ["-n"]):
        result = run_nxe("upscale", "in.png", "-o", "out.png", *extra, cwd=tmp_path)
        assert result.returncode == 1
        assert ("pass -y to overwrite it" if not extra else "not overwriting it (-n)") in \
            result.stderr
        assert (tmp_path / "out.png").read_bytes() == b"keep me"
        assert names(tmp_path) == ["in.png", "out.png"]
    result = run_nxe("upscale", "in.png", "-o", "out.png", "-y", "-n", cwd=tmp_path)
    assert result.returncode == 2 and "not allowed with" in result.stderr
    os.chmod(tmp_path / "out.png", 0o640)
    result = run_nxe("upscale", "in.png", "-o", "out.png", "-y", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    np.testing.assert_array_equal(images.read_png(tmp_path / "out.png"),
                                  nxe.sr.Upscaler("espcn-x2").upscale(picture()))
    assert os.stat(tmp_path / "out.png").st_mode & 0o777 == 0o640  # the file's mode is kept
    assert names(tmp_path) == ["in.png", "out.png"]


def test_a_terminal_is_asked_before_overwriting(tmp_path):
    images.write_png(tmp_path / "in.png", picture())
    (tmp_path / "out.png").write_bytes(b"keep me")
    status, output = on_terminal("upscale", "in.png", "-o", "out.png", cwd=tmp_path,
                                 answer=b"n\n")
    assert "File 'out.png' already exists. Overwrite? [y/N] " in output
    assert status == 1 and (tmp_path / "out.png").read_bytes() == b"keep me"
    status, output = on_terminal("upscale", "in.png", "-o", "out.png", cwd=tmp_path,
                                 answer=b"y\n")
    assert status == 0, output
    assert images.read_png(tmp_path / "out.png").shape == (60, 88, 3)
    assert names(tmp_path) == ["in.png", "out.png"]


def test_the_output_suffix_must_match_what_is_written(tmp_path):
    write_clip(tmp_path / "clip.y4m", 2)
    images.write_png(tmp_path / "in.png", picture())
    before = snapshot(tmp_path)
    result = run_nxe("upscale", "clip.y4m", "-o", "clip.png", cwd=tmp_path)
    assert result.returncode == 1
    assert "clip.y4m is a Y4M video and cannot be written as clip.png (image); give the output " \
        "a .y4m suffix" in result.stderr
    result = run_nxe("upscale", "in.png", "-o", "in.y4m", cwd=tmp_path)
    assert result.returncode == 1 and "in.png is a PNG image" in result.stderr
    result = run_nxe("upscale", "in.png", "-o", "-", cwd=tmp_path)
    assert result.returncode == 1 and "standard output (Y4M)" in result.stderr
    assert snapshot(tmp_path) == before


def test_unknown_suffixes_without_ffmpeg_and_missing_inputs(tmp_path):
    (tmp_path / "clip.mkv").write_bytes(b"\x1aE\xdf\xa3")
    images.write_png(tmp_path / "in.png", picture())
    before = snapshot(tmp_path)
    no_ffmpeg = {"NXE_FFMPEG": str(tmp_path / "none"), "PATH": str(NXE.parent)}
    for source, output in (("clip.mkv", "out.mkv"), ("in.png", "out.webp")):
        result = run_nxe("upscale", source, "-o", output, cwd=tmp_path, env=no_ffmpeg)
        assert result.returncode == 1
        unknown = Path(output).suffix if source == "in.png" else ".mkv"
        assert f"{unknown} files go through an ffmpeg built with the nxe_sr filter" in \
            result.stderr
    for missing in ("absent.png", "absent.mp4", "absent.y4m", "absent"):
        result = run_nxe("upscale", missing, "-o", "out.png", cwd=tmp_path)
        assert result.returncode == 1 and f"{missing}: no such file" in result.stderr
    result = run_nxe("upscale", "in.png", "-o", "nowhere/out.png", cwd=tmp_path)
    assert result.returncode == 1
    folder = Path(os.path.realpath(tmp_path)) / "nowhere"  # as the command's cwd names it
    assert f"-o nowhere/out.png: there is no folder {folder}" in result.stderr
    assert snapshot(tmp_path) == before


def test_a_bad_reference_is_refused_before_anything_is_written(tmp_path):
    images.write_png(tmp_path / "in.png", picture())
    images.write_png(tmp_path / "small.png", picture())  # not 2x the input
    write_clip(tmp_path / "clip.y4m", 3)
    write_clip(tmp_path / "short.y4m", 2, width=80, height=48)  # fewer frames than the clip
    before = snapshot(tmp_path)
    cases = [("in.png", "out.png", "absent.png", "--reference absent.png: no such file"),
             ("in.png", "out.png", "small.png", "is 44x30 but the output will be 88x60"),
             ("clip.y4m", "out.y4m", "short.y4m", "has 2 frames, the input 3"),
             ("in.png", "out.png", "out.png", "out.png: no such file")]
    for source, output, reference, words in cases:
        result = run_nxe("upscale", source, "-o", output, "--reference", reference, cwd=tmp_path)
        assert result.returncode == 1 and words in result.stderr, result.stderr
    assert snapshot(tmp_path) == before
    (tmp_path / "out.png").write_bytes(b"keep me")
    result = run_nxe("upscale", "in.png", "-o", "out.png", "--reference", "out.png", "-y",
                 cwd=tmp_path)
    assert result.returncode == 1 and "out.png is the --reference file" in result.stderr
    assert (tmp_path / "out.png").read_bytes() == b"keep me"


def test_a_failure_midway_leaves_no_partial_output(tmp_path):
    write_clip(tmp_path / "cut.y4m", 5, truncate_last=True)
    (tmp_path / "out.y4m").write_bytes(b"the previous output")
    result = run_nxe("upscale", "cut.y4m", "-o", "out.y4m", "-y", cwd=tmp_path)
    assert result.returncode == 1 and "cut.y4m: Y4M: truncated frame" in result.stderr
    assert "cut.y4m: 4 frames, " in result.stderr  # four were written before the failure
    assert (tmp_path / "out.y4m").read_bytes() == b"the previous output"
    assert names(tmp_path) == ["cut.y4m", "out.y4m"]  # and the temporary file is gone


@pytest.mark.parametrize("stop,code,said", [(signal.SIGINT, 130, "interrupted"),
                                             (signal.SIGTERM, 143, "terminated")])
def test_ctrl_c_or_sigterm_exits_128_plus_the_signal_and_leaves_no_file(tmp_path, stop, code,
                                                                        said):
    frames = 300
    write_clip(tmp_path / "long.y4m", frames, width=160, height=120)
    process = subprocess.Popen([str(NXE), "upscale", "long.y4m", "-o", "out.y4m", "-j", "1"],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        started = process.stderr.readline()
        assert re.match(rf"long\.y4m: 1/{frames} frames", started), started
        # While it runs, the output is only a temporary file beside the final name.
        during = names(tmp_path)
        process.send_signal(stop)
        stdout, stderr = process.communicate(timeout=TIMEOUT_S)
    finally:
        process.kill()
    assert len(during) == 2 and re.fullmatch(r"\.out\.y4m\..*\.part\.y4m", during[0]), during
    assert process.returncode == code, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    assert stderr.splitlines()[-1] == f"nxe upscale: {said}; no output was left"
    assert names(tmp_path) == ["long.y4m"]
    assert stdout == ""


# ---- conventions: -i/-o, -s/-m, -t/-j, folders, pipes, messages ----

def test_scale_chooses_the_model_of_the_family(tmp_path):
    image = picture(12, 10)
    images.write_png(tmp_path / "in.png", image)
    result = run_nxe("upscale", "-i", "in.png", "-o", "x4.png", "-m", "edsr", "-s", "4",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "with edsr-x4" in result.stdout
    np.testing.assert_array_equal(images.read_png(tmp_path / "x4.png"),
                                  nxe.sr.Upscaler("edsr-x4").upscale(image))
    result = run_nxe("upscale", "in.png", "--output", "x3.png", "--scale", "3", "-t", "16",
                     "-j", "1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    np.testing.assert_array_equal(images.read_png(tmp_path / "x3.png"),
                                  nxe.sr.Upscaler("espcn-x3").upscale(image))
    result = run_nxe("upscale", "in.png", "-o", "x.png", "-m", str(nxe.sr.model_path("espcn-x4")),
                 "-s", "2", cwd=tmp_path)
    assert result.returncode == 1 and "upscales x4" in result.stderr
    # espcn-x3's tiles overlap by its receptive radius, 4: a tile of 8 keeps nothing its own.
    result = run_nxe("upscale", "in.png", "-o", "x.png", "-s", "3", "-t", "8", cwd=tmp_path)
    assert result.returncode == 1
    assert "--tile 8: espcn-x3 needs tiles of at least 9" in result.stderr
    assert names(tmp_path) == ["in.png", "x3.png", "x4.png"]


@pytest.mark.parametrize("options,words", [
    (["-m", "edsr", "-s", "3"], "--scale 3: edsr comes in scales 2, 4"),
    (["-m", "espcn-x3", "-s", "2"], "--scale 2: --model espcn-x3 upscales x3"),
    (["-m", "nosuch"], "--model nosuch: no built-in SR model named 'nosuch'"),
    (["-t", "3"], "--tile 3: must be 8..16384, 0 for the default or -1 for untiled"),
    (["--tile", "16385"], "--tile 16385: must be 8..16384"),
    (["-j", "-1"], "--threads -1: must be 0 (one per CPU) or more"),
    (["--overlap", "-2"], "--overlap -2: must be 0 or more"),
    (["-t", "16", "--overlap", "8"], "--overlap 8: must be 0..7 with --tile 16"),
])
def test_option_errors_speak_the_cli_words(tmp_path, options, words):
    images.write_png(tmp_path / "in.png", picture())
    result = run_nxe("upscale", "in.png", "-o", "out.png", *options, cwd=tmp_path)
    assert result.returncode == 2
    assert f"nxe upscale: error: {words}" in result.stderr
    assert "usage: nxe upscale" in result.stderr and "nxe_sr" not in result.stderr
    assert names(tmp_path) == ["in.png"]


def test_help_shows_the_defaults(tmp_path):
    result = run_nxe("upscale", "--help", cwd=tmp_path)
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    for words in ("-m MODEL, --model MODEL", "(default: espcn)", "-s SCALE, --scale SCALE",
                  "-t TILE, --tile TILE", "-j THREADS, --threads THREADS", "(default: fp32)",
                  "-i IN, --input IN", "-y, --yes", "-n, --no"):
        assert words in text, words


def test_a_folder_in_and_a_folder_out_with_one_progress_bar(tmp_path):
    source = tmp_path / "photos"
    source.mkdir()
    pictures = {"a.png": picture(seed=1), "c.png": picture(channels=4, seed=3)}
    for name, image in pictures.items():
        images.write_png(source / name, image)
    Image.fromarray(picture(seed=2)).save(source / "b.jpg", quality=95)
    write_clip(source / "d.y4m", 2)
    (source / "notes.txt").write_text("not an image")
    result = run_nxe("upscale", "-i", "photos", "-o", "big", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert names(tmp_path / "big") == ["a.png", "b.jpg", "c.png", "d.y4m"]
    up = nxe.sr.Upscaler("espcn-x2")
    for name, image in pictures.items():
        np.testing.assert_array_equal(images.read_png(tmp_path / "big" / name), up.upscale(image))
    assert Image.open(tmp_path / "big" / "b.jpg").size == (88, 60)
    assert read_clip(tmp_path / "big" / "d.y4m")[0].width == 80
    progress = [line for line in result.stderr.splitlines() if "/4 files" in line]
    assert progress[-1].startswith("upscaling: 4/4 files")
    assert "\r" not in result.stderr
    # Again: every output exists, so nothing is done without -y; several files in works too.
    before = snapshot(tmp_path / "big")
    result = run_nxe("upscale", "photos/a.png", "photos/c.png", "-o", "big", cwd=tmp_path)
    assert result.returncode == 1 and "big/a.png already exists" in result.stderr
    assert snapshot(tmp_path / "big") == before
    result = run_nxe("upscale", "-i", "photos/a.png", "-i", "photos/c.png", "-o", "two/",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert names(tmp_path / "two") == ["a.png", "c.png"]
    result = run_nxe("upscale", "photos", "-o", "photos", "-y", cwd=tmp_path)
    assert result.returncode == 1 and "is the input" in result.stderr


def test_y4m_through_pipes(tmp_path):
    clip = write_clip(tmp_path / "clip.y4m", 3)
    data = (tmp_path / "clip.y4m").read_bytes()
    result = run_nxe("upscale", "-i", "-", "-o", "-", cwd=tmp_path, stdin=data, text=False)
    assert result.returncode == 0, result.stderr
    (tmp_path / "out.y4m").write_bytes(result.stdout)
    header, frames = read_clip(tmp_path / "out.y4m")
    assert (header.width, header.height, len(frames)) == (80, 48, 3)
    up = nxe.sr.Upscaler("espcn-x2")
    for planes, got in zip(clip, frames, strict=True):
        for want, plane in zip(up.upscale_planes(planes, "yuv420p"), got, strict=True):
            np.testing.assert_array_equal(plane, want)
    stderr = result.stderr.decode()
    assert "stdin: 3 frames" in stderr and "3 frames with espcn-x2" in stderr
    result = run_nxe("upscale", "-", "-o", "piped.y4m", cwd=tmp_path, stdin=data, text=False)
    assert result.returncode == 0, result.stderr
    assert read_clip(tmp_path / "piped.y4m")[0].width == 80
    assert b"stdin (40x24) -> piped.y4m (80x48): 3 frames" in result.stdout


# ---- progress ----

@pytest.mark.parametrize("frames", [1, 3])
def test_progress_in_a_log_is_plain_lines_with_plural_forms(tmp_path, frames):
    write_clip(tmp_path / "clip.y4m", frames)
    result = run_nxe("upscale", "clip.y4m", "-o", "out.y4m", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "\r" not in result.stderr and "\r" not in result.stdout
    noun = "frame" if frames == 1 else "frames"
    assert result.stderr.splitlines()[-1].startswith(f"clip.y4m: {frames}/{frames} {noun}, ")
    assert f": {frames} {noun} with espcn-x2 in " in result.stdout


def test_progress_on_a_terminal_is_a_bar_with_eta(tmp_path):
    write_clip(tmp_path / "clip.y4m", 4)
    status, output = on_terminal("upscale", "clip.y4m", "-o", "out.y4m", cwd=tmp_path)
    assert status == 0, output
    bars = output.split("\r")
    # The whole bar: nothing after the rate (a stray postfix would show there).
    done = r"clip\.y4m: +100%\|.*\| 4/4 \[\d\d:\d\d<\d\d:\d\d, +[\d.]+frame/s\](\n|$)"
    assert any(re.match(done, bar) for bar in bars), output
    assert "\n" + "clip.y4m (40x24) -> out.y4m (80x48): 4 frames" in output


def test_without_tqdm_a_terminal_gets_plain_lines(tmp_path):
    blocker = tmp_path / "blocked"
    blocker.mkdir()
    (blocker / "tqdm.py").write_text("raise ImportError('tqdm is not installed')\n")
    work = tmp_path / "work"
    work.mkdir()
    write_clip(work / "clip.y4m", 2)
    status, output = on_terminal("upscale", "clip.y4m", "-o", "out.y4m", cwd=work,
                                 env={"PYTHONPATH": str(blocker)})
    assert status == 0, output
    assert "\r" not in output and "clip.y4m: 2/2 frames, " in output


def test_an_error_after_a_bar_starts_on_its_own_line(tmp_path):
    write_clip(tmp_path / "cut.y4m", 3, truncate_last=True)  # so its frame count is unknown
    status, output = on_terminal("upscale", "cut.y4m", "-o", "out.y4m", cwd=tmp_path)
    assert status == 1
    assert re.search(r"\rcut\.y4m, 2 frames \[[^\n]*\]\nnxe upscale: cut\.y4m: Y4M: truncated "
                     r"frame \d+\n$", output), output
    assert names(tmp_path) == ["cut.y4m"]


def test_a_slow_image_says_it_is_working(tmp_path):
    images.write_png(tmp_path / "in.png", picture(150, 200))
    result = run_nxe("upscale", "in.png", "-o", "out.png", "-m", "edsr", "-j", "1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    seconds = float(re.search(r"with edsr-x2 in ([\d.]+) s", result.stdout)[1])
    working = "upscaling in.png (200x150) with edsr-x2 ...\n"
    # The line comes after 0.5 s; near that, either is right (start-up and timer jitter).
    if seconds > 0.7:
        assert working in result.stderr
    elif seconds < 0.3:
        assert working not in result.stderr
    assert "\r" not in result.stderr
