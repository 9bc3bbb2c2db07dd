"""The bridge from the engine's worker thread to asyncio.

A request is submitted with a completion callback; the callback runs on the engine's worker
thread and only hands the finished request to the event loop (loop.call_soon_threadsafe), so
the loop never waits on engine work and the worker never waits on the loop. While the request
is in the engine the route also watches its connection: a client that goes away has its request
cancelled in the engine (a queued request is dropped before it runs).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .. import errors as nxe_errors
from .errors import ApiError, from_engine, from_submission

CLIENT_GONE = 499  # nginx's status for a client that closed the connection before the answer
# Work on more bytes than this (parsing, decoding, encoding) runs on a worker thread, so the
# loop keeps answering others; less costs less inline than the hand-over to a thread.
INLINE_BYTES = 1 << 16


async def off_loop(size: int, function: Callable[..., Any], *args: Any) -> Any:
    """function(*args), on a worker thread when `size` bytes make it long."""
    if size <= INLINE_BYTES:
        return function(*args)
    return await asyncio.to_thread(function, *args)


def _hand_over(loop: asyncio.AbstractEventLoop, future: asyncio.Future, request: Any) -> None:
    """On the worker thread: resolves `future` on its loop. A loop already closed (the server
    stopping) has nobody left to answer."""
    try:
        loop.call_soon_threadsafe(_resolve, future, request)
    except RuntimeError:
        pass


def _resolve(future: asyncio.Future, request: Any) -> None:
    if not future.done():
        future.set_result(request)


async def run(engine: Any, model: str, inputs: Mapping[str, np.ndarray], *, receive: Any = None,
              deadline_s: float | None = None, options: Mapping[str, str] | None = None) -> Any:
    """Submits a request and waits for it without blocking the loop; returns the finished
    request (outputs not yet read). `receive` is the ASGI receive of the route's connection,
    to notice a client that goes away. Engine failures raise ApiError."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    try:
        request = engine.submit(model, inputs, deadline_s=deadline_s, options=options,
                                callback=lambda finished: _hand_over(loop, future, finished))
    except nxe_errors.Error as error:
        raise from_submission(error, model) from None
    watcher = None
    if receive is not None:
        watcher = loop.create_task(_resolve_when_gone(receive, future))
    try:
        finished = await future
    except asyncio.CancelledError:
        request.release()
        raise
    finally:
        if watcher is not None:
            watcher.cancel()
    if finished is None:
        request.release()  # cancels it: a queued request never runs
        raise ApiError(CLIENT_GONE, "the client closed the connection", code="client_closed")
    return finished


async def _resolve_when_gone(receive: Any, future: asyncio.Future) -> None:
    """Resolves `future` with None when the client closes the connection first."""
    while (await receive())["type"] != "http.disconnect":
        pass
    if not future.done():
        future.set_result(None)


def outputs(engine: Any, model: str, request: Any) -> dict[str, np.ndarray]:
    """The outputs of a finished request, or the ApiError of its failure; releases the
    request."""
    try:
        return request.outputs()
    except nxe_errors.Error as error:
        raise from_engine(error, model, _load_error(engine, model)) from None
    finally:
        request.release()


def _load_error(engine: Any, model: str) -> str:
    """The model's load error when it is in state failed, else ""."""
    try:
        info = engine.model_info(model)
    except nxe_errors.Error:
        return ""
    return info.error if info.state == "failed" else ""
