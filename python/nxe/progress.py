"""Progress on stderr for the `nxe` command: a tqdm bar with rate and ETA on a terminal, plain
periodic lines (no carriage returns) when stderr is a log or a pipe, or when tqdm (the `cli`
extra) is not installed. Messages written while a bar is shown go through `write`, which keeps
them on lines of their own."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO

# Plain lines are written at most this often (the first and the last always), so that a log
# gets a line every few seconds rather than one per frame.
PLAIN_INTERVAL_S = 2.0
# A single call that ends sooner shows nothing; one that takes longer shows that it is working.
WORKING_DELAY_S = 0.5


def plural(count: int, noun: str) -> str:
    """'1 frame', '2 frames', '0 frames'."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def duration(seconds: float) -> str:
    """0:07, 1:02:03: minutes and seconds, hours when there are any."""
    whole = int(seconds + 0.5)
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def _tqdm(stream: TextIO) -> Any:
    """tqdm's class when it is installed and `stream` is a terminal, else None."""
    if not stream.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


class Progress:
    """Counts `unit`s (singular noun: "frame", "file") done of `total` (None when unknown)."""

    def __init__(self, total: int | None, unit: str, desc: str,
                 stream: TextIO | None = None) -> None:
        self.total, self.unit, self.desc = total, unit, desc
        self.stream = sys.stderr if stream is None else stream
        self.done = 0
        self.start = time.perf_counter()
        self._printed_at: float | None = None  # when the last plain line was written
        self._printed_done = 0
        tqdm = _tqdm(self.stream)
        # Without a total, tqdm would show "2frame": the count goes in the postfix instead
        # ("clip.y4m, 2 frames [00:01, 2.00frame/s]").
        bar_format = None if total is not None else "{desc}{postfix} [{elapsed}, {rate_fmt}]"
        self._bar = None if tqdm is None else tqdm(
            total=total, unit=unit, desc=desc, file=self.stream, dynamic_ncols=True,
            bar_format=bar_format, postfix=None if total is not None else plural(0, unit))

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def update(self, count: int = 1) -> None:
        self.done += count
        if self._bar is not None:
            if self.total is None:
                self._bar.set_postfix_str(plural(self.done, self.unit), refresh=False)
            self._bar.update(count)
            return
        now = time.perf_counter()
        if (self._printed_at is None or now - self._printed_at >= PLAIN_INTERVAL_S
                or self.done == self.total):
            self._print_line(now)

    def _print_line(self, now: float) -> None:
        elapsed = max(now - self.start, 1e-9)
        rate = self.done / elapsed
        if self.total is None:
            text = f"{self.desc}: {plural(self.done, self.unit)}, {rate:.1f} {self.unit}s/s"
        else:
            noun = self.unit if self.total == 1 else f"{self.unit}s"
            text = (f"{self.desc}: {self.done}/{self.total} {noun}, {rate:.1f} {self.unit}s/s, "
                    f"{duration(elapsed)} elapsed")
            if self.done < self.total and rate > 0:
                text += f", ETA {duration((self.total - self.done) / rate)}"
        self.stream.write(text + "\n")
        self.stream.flush()
        self._printed_at, self._printed_done = now, self.done

    def write(self, text: str, file: TextIO) -> None:
        """Writes a line to `file` (stdout or stderr) without breaking the bar."""
        if self._bar is not None:
            self._bar.write(text, file=file)
        else:
            print(text, file=file, flush=True)

    def close(self) -> None:
        """Ends the bar's line, so that what is written next starts a line of its own; in
        plain mode writes the count reached if the last line did not show it."""
        if self._bar is not None:
            self._bar.close()
        elif self.done != self._printed_done:
            self._print_line(time.perf_counter())
        self._bar, self._printed_done = None, self.done


class Working:
    """For one long call that cannot report its progress (an image upscaled in one library
    call): after WORKING_DELAY_S shows `desc` with the time elapsed, a ticking indeterminate bar
    on a terminal, one line otherwise. The caller reports the total time."""

    def __init__(self, desc: str, stream: TextIO | None = None) -> None:
        self.desc = desc
        self.stream = sys.stderr if stream is None else stream
        self._done = threading.Event()
        self.start = time.perf_counter()
        self._thread = threading.Thread(target=self._show, daemon=True)

    def __enter__(self) -> Working:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    def _show(self) -> None:
        if self._done.wait(WORKING_DELAY_S):
            return
        tqdm = _tqdm(self.stream)
        if tqdm is None:
            self.stream.write(f"{self.desc} ...\n")
            self.stream.flush()
            return
        bar = tqdm(total=None, desc=self.desc, file=self.stream, bar_format="{desc}{postfix}")
        while True:
            bar.set_postfix_str(f"{duration(time.perf_counter() - self.start)} elapsed")
            if self._done.wait(0.5):
                break
        bar.close()
