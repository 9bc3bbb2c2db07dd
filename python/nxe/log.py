"""Routes the library's log messages to a Python callable."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._binding import check, ffi, lib

LEVELS = {
    "error": lib.NXE_LOG_ERROR,
    "warning": lib.NXE_LOG_WARNING,
    "info": lib.NXE_LOG_INFO,
    "debug": lib.NXE_LOG_DEBUG,
}

# The C library keeps a pointer to the callback, and a thread that is logging while it is
# replaced may still call the previous one: both stay alive.
_callbacks: list[Any] = [ffi.NULL, ffi.NULL]


def set_log_callback(fn: Callable[[int, str], None] | None, level: int | str = "warning") -> None:
    """Sends library messages up to ``level`` (error, warning, info, debug or its number) to
    ``fn(level, message)``, from whichever thread logs. ``None`` silences the library."""
    if isinstance(level, str):
        if level not in LEVELS:
            raise ValueError(f"log level {level!r} is not one of {', '.join(LEVELS)}")
        level = LEVELS[level]
    if fn is None:
        callback = ffi.NULL
    else:
        # An exception raised by fn cannot cross into C: cffi reports it and returns.
        def deliver(user_data: Any, message_level: int, message: Any) -> None:
            fn(int(message_level), ffi.string(message).decode("utf-8", "replace"))

        callback = ffi.callback("nxe_log_fn", deliver)
    check(lib.nxe_set_log_callback(callback, ffi.NULL, level))
    _callbacks[:] = [_callbacks[1], callback]
