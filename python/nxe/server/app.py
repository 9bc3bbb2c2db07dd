"""The server's ASGI app: create_app(engine, config) builds it around an open nxe.Engine."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import errors as nxe_errors
from . import bridge
from .errors import ApiError, bad_request, error_response, model_not_found
from .gate import MODEL_KEY, Gate
from .metrics import Metrics

log = logging.getLogger("nxe.server")

# [server] keys that shape the engine or the listening socket: a reload cannot change them.
RESTART_KEYS = ("host", "port", "queue_capacity", "max_resident", "max_resident_bytes",
                "idle_unload_s", "sweep_interval_s", "evict_policy", "num_threads")


class ServerState:
    """What the routes share: the engine, the config in force, the metrics."""

    def __init__(self, engine: Any, config: Any, overrides: Mapping[str, Any]) -> None:
        self.engine = engine
        self.overrides = dict(overrides)  # command-line values that win over every config read
        self.config = self._with_overrides(config)
        self.metrics = Metrics(engine)
        self.started = int(time.time())
        self.created: dict[str, int] = {}  # model name -> when it first appeared
        self._note_models()
        self._reload_lock: asyncio.Lock | None = None

    def _with_overrides(self, config: Any) -> Any:
        values = {key: value for key, value in self.overrides.items() if value is not None}
        if not values:
            return config
        return dataclasses.replace(config, server=dataclasses.replace(config.server, **values))

    def _note_models(self) -> None:
        now = int(time.time())
        for info in self.engine.models():
            self.created.setdefault(info.name, now)

    # ---- requests ----

    def find_model(self, name: str, request: Request) -> Any:
        """The ModelInfo of `name` (404 if the engine has no such model); notes the name for the
        request's metrics."""
        try:
            info = self.engine.model_info(name)
        except (nxe_errors.NotFoundError, nxe_errors.InvalidArgumentError):
            raise model_not_found(name) from None
        request.scope[MODEL_KEY] = name
        return info

    async def infer(self, model: str, inputs: Mapping[str, np.ndarray], request: Request, *,
                    options: Mapping[str, str] | None = None) -> dict[str, np.ndarray]:
        """Runs one request on the engine without blocking the loop; cancelled if the client
        goes away."""
        timeout = self.config.server.request_timeout_s
        finished = await bridge.run(self.engine, model, inputs, receive=request.receive,
                                    deadline_s=timeout if timeout > 0 else None, options=options)
        self.metrics.observe_run(model, finished.timing)
        return bridge.outputs(self.engine, model, finished)

    def check_input_count(self, count: int) -> None:
        limit = self.config.server.max_inputs_per_request
        if count > limit:
            raise bad_request(f"the request has {count} inputs, more than max_inputs_per_request "
                              f"({limit})", code="too_many_inputs")

    def check_input_length(self, name: str, length: int, unit: str) -> None:
        limit = self.config.server.max_input_length
        if length > limit:
            raise bad_request(f"input '{name}' has {length} {unit}, more than max_input_length "
                              f"({limit})", code="input_too_long")

    # ---- reload ----

    async def reload(self) -> dict[str, Any]:
        """Re-reads the config file and reconciles the engine with its models. A config that
        does not load or apply changes nothing and raises ApiError 400 with the reason. Keys
        that need a restart keep their old values and are listed in `restart_required`."""
        from ..config import ConfigError, load_config

        path = self.config.path
        if path is None:
            raise bad_request("the server was started without a config file: nothing to reload",
                              code="no_config")
        if self._reload_lock is None:
            self._reload_lock = asyncio.Lock()
        async with self._reload_lock:
            try:
                new = self._with_overrides(await asyncio.to_thread(load_config, path))
                extra = self.config.command_line
                new = dataclasses.replace(new, models=[*new.models, *extra], command_line=extra)
            except (ConfigError, OSError) as error:
                raise bad_request(f"the config was not reloaded: {error}",
                                  code="invalid_config") from None
            before = self._applied()
            try:
                await asyncio.to_thread(self.engine.apply,
                                        [model.model_spec() for model in new.models])
            except nxe_errors.Error as error:
                raise bad_request(f"the config was not reloaded: {path}: {error}",
                                  code="invalid_config") from None
            old_server, old_models = self.config.server, self.config.models
            restart = [key for key in RESTART_KEYS
                       if getattr(new.server, key) != getattr(old_server, key)]
            kept = {key: getattr(old_server, key) for key in restart}
            self.config = dataclasses.replace(new, server=dataclasses.replace(new.server, **kept))
            self._note_models()
            result = _changes(before, self._applied(), old_models, new.models)
        result["restart_required"] = restart
        log.info("reloaded %s: %s", path, result)
        return result

    def _applied(self) -> dict[str, str]:
        """Model name -> fingerprint of its file as last applied."""
        return {info.name: info.fingerprint for info in self.engine.models()}


def _changes(before: dict[str, str], after: dict[str, str], old_models: list[Any],
             new_models: list[Any]) -> dict[str, list[str]]:
    """The names a reload added, reloaded (spec or file changed), removed and left alone."""
    old_specs = {model.name: model for model in old_models}
    result: dict[str, list[str]] = {"added": [], "reloaded": [], "removed": [], "unchanged": []}
    for model in new_models:
        name = model.name
        if name not in before:
            result["added"].append(name)
        elif old_specs.get(name) != model or before[name] != after.get(name):
            result["reloaded"].append(name)
        else:
            result["unchanged"].append(name)
    result["removed"] = [name for name in before if name not in after]
    return result


async def _api_error(request: Request, error: ApiError) -> Any:
    return error_response(request.url.path, error)


async def _status_error(request: Request, error: StarletteHTTPException) -> Any:
    code = {404: "not_found", 405: "method_not_allowed"}.get(error.status_code)
    return error_response(request.url.path, ApiError(error.status_code, str(error.detail),
                                                     code=code, headers=error.headers))


async def _validation_error(request: Request, error: RequestValidationError) -> Any:
    parts = [f"{'.'.join(str(p) for p in each['loc'])}: {each['msg']}"
             for each in error.errors()[:5]]
    return error_response(request.url.path, ApiError(422, "invalid request: " + "; ".join(parts),
                                                     code="invalid_request"))


async def _internal_error(request: Request, error: Exception) -> Any:
    log.exception("internal error answering %s", request.url.path)
    return error_response(request.url.path, ApiError(
        500, f"internal error: {type(error).__name__}: {error}", type="server_error"))


def create_app(engine: Any, config: Any, *, api_key: str | None = None) -> FastAPI:
    """The server's app around `engine` (an open nxe.Engine, which stays the caller's to close)
    with the [server] settings of `config` (nxe.config.Config). `api_key`, when given, wins
    over the config's, also after a reload."""
    # embeddings and transcriptions register their kinds
    from . import admin, embeddings, transcriptions, v1, v2  # noqa: F401

    app = FastAPI(title="nxe", version=_version(), docs_url=None, redoc_url=None,
                  openapi_url=None)
    state = ServerState(engine, config, {"api_key": api_key})
    app.state.nxe = state
    # Handlers are coroutines: Starlette runs plain functions on a worker thread.
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(StarletteHTTPException, _status_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(Exception, _internal_error)
    app.include_router(v1.router)
    app.include_router(v2.router)
    app.include_router(admin.router)
    app.add_middleware(Gate, state=state)
    return app


def _version() -> str:
    from .. import __version__

    return __version__
