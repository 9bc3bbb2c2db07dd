"""Exceptions raised by nxe: one class per C status code, all carrying the library's message.

The mapping from status to class lives here and only here; the binding's check() uses it.
"""

from __future__ import annotations


class Error(Exception):
    """A failed nxe call. ``status`` is the C status code, ``str(error)`` the C message."""

    status: int = -1

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status

    @property
    def message(self) -> str:
        return str(self)


class InvalidArgumentError(Error):
    """NULL where a value is needed, or a value out of range."""

    status = 1


class OutOfMemoryError(Error):
    status = 2


class InvalidGraphError(Error):
    """Cycles, unbound or doubly-bound tensors, unknown ops."""

    status = 3


class ShapeMismatchError(Error):
    status = 4


class DtypeMismatchError(Error):
    status = 5


class UnsupportedError(Error):
    """A valid request this build or op cannot do."""

    status = 6


class NotFoundError(Error):
    """No such op type, attribute, tensor or index."""

    status = 7


class InvalidStateError(Error):
    """A call out of order, e.g. editing a compiled or closed object."""

    status = 8


class BufferTooSmallError(Error):
    status = 9


class IoError(Error):
    status = 10


class FormatError(Error):
    """A malformed or corrupted file."""

    status = 11


class RunError(Error):
    """A data-dependent failure during a run (an index out of range)."""

    status = 12


class InternalError(Error):
    status = 13


class BusyError(Error):
    """A queue or budget is full now: try again later (the engine's bounded queue, a model that
    residency cannot make room for under evict_policy "none")."""

    status = 14


class DeadlineError(Error):
    """A request's deadline passed before it finished."""

    status = 15


class CancelledError(Error):
    """The request was cancelled, by its caller or by the engine shutting down."""

    status = 16


_BY_STATUS: dict[int, type[Error]] = {
    cls.status: cls
    for cls in (
        InvalidArgumentError,
        OutOfMemoryError,
        InvalidGraphError,
        ShapeMismatchError,
        DtypeMismatchError,
        UnsupportedError,
        NotFoundError,
        InvalidStateError,
        BufferTooSmallError,
        IoError,
        FormatError,
        RunError,
        InternalError,
        BusyError,
        DeadlineError,
        CancelledError,
    )
}


def error_for_status(status: int, message: str) -> Error:
    """The exception for a C status; codes this version does not know become plain Error."""
    cls = _BY_STATUS.get(status, Error)
    return cls(message or f"nxe call failed with status {status}", status)


__all__ = [
    "Error",
    "InvalidArgumentError",
    "OutOfMemoryError",
    "InvalidGraphError",
    "ShapeMismatchError",
    "DtypeMismatchError",
    "UnsupportedError",
    "NotFoundError",
    "InvalidStateError",
    "BufferTooSmallError",
    "IoError",
    "FormatError",
    "RunError",
    "InternalError",
    "BusyError",
    "DeadlineError",
    "CancelledError",
    "error_for_status",
]
