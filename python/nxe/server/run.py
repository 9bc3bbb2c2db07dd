"""run_server: the app on uvicorn, what `nxe serve` runs. Imports uvicorn: nxe.server imports
this module when run_server is first called."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

import uvicorn

from .errors import ApiError

log = logging.getLogger("nxe.server")


def run_server(config: Any, *, host: str | None = None, port: int | None = None,
               api_key: str | None = None) -> int:
    """Serves `config`'s models until SIGINT or SIGTERM; returns the exit status (0, or 1 when
    the server could not start, e.g. its port is taken). host, port and api_key override the
    config's [server] values (api_key also NXE_API_KEY); SIGHUP reloads the config file as
    POST /admin/reload does. The engine is closed when the server stops."""
    from ..config import engine_from_config
    from .app import create_app

    api_key = api_key or config.server.api_key or os.environ.get("NXE_API_KEY") or None
    server_config = dataclasses.replace(
        config.server, host=host or config.server.host,
        port=config.server.port if port is None else port, api_key=api_key)
    config = dataclasses.replace(config, server=server_config)
    engine = engine_from_config(config)
    try:
        app = create_app(engine, config, api_key=api_key)
        server = _Server(app, uvicorn.Config(app, host=server_config.host,
                                             port=server_config.port, access_log=False,
                                             log_level="info", timeout_graceful_shutdown=5))
        with _stop_signals_end_the_server():
            try:
                server.run()  # on uvicorn's choice of loop (uvloop when installed)
            except SystemExit as stop:  # uvicorn exits when it cannot bind
                return stop.code if isinstance(stop.code, int) else 1
        return 0 if server.started else 1
    finally:
        engine.close()


class _Server(uvicorn.Server):
    """uvicorn's server, reloading the config on SIGHUP."""

    def __init__(self, app: Any, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.nxe_app = app
        self.reloading: set[asyncio.Task] = set()

    async def serve(self, sockets: Any = None) -> None:
        if hasattr(signal, "SIGHUP"):
            asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, self._on_hangup)
        await super().serve(sockets)

    def _on_hangup(self) -> None:
        task = asyncio.get_running_loop().create_task(self._reload())
        self.reloading.add(task)  # the loop keeps only weak references to tasks
        task.add_done_callback(self.reloading.discard)

    async def _reload(self) -> None:
        try:
            await self.nxe_app.state.nxe.reload()
        except ApiError as error:
            log.error("SIGHUP: %s", error.message)


@contextlib.contextmanager
def _stop_signals_end_the_server() -> Iterator[None]:
    """uvicorn stops on SIGINT and SIGTERM and then raises the signal again for the handler in
    place before it; a handler that does nothing here makes that stop a clean return (exit 0,
    the engine closed) rather than a death by signal."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stops = (signal.SIGINT, signal.SIGTERM)
    previous = {stop: signal.signal(stop, lambda number, frame: None) for stop in stops}
    try:
        yield
    finally:
        for stop, handler in previous.items():
            signal.signal(stop, handler)
