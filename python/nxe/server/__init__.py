"""The HTTP server of `nxe serve`: OpenAI-compatible routes, the Open Inference Protocol (KServe
v2), /v1/upscale, Prometheus metrics and administration, around one nxe.Engine.

    from nxe.config import load_config
    from nxe.server import run_server
    run_server(load_config("nxe.toml"))

It needs the `serve` extra (FastAPI, uvicorn, prometheus_client, python-multipart):
pip install 'nxe[serve]'.
"""

from __future__ import annotations

from typing import Any

SERVE_EXTRA = "pip install 'nxe[serve]'"


def run_server(config: Any, *, host: str | None = None, port: int | None = None,
               api_key: str | None = None) -> int:
    """Serves `config`'s models until SIGINT or SIGTERM (see nxe.server.run.run_server)."""
    try:
        from .run import run_server as run
    except ImportError as error:
        raise ImportError(f"the server needs {error.name}: {SERVE_EXTRA}") from None
    return run(config, host=host, port=port, api_key=api_key)


def create_app(engine: Any, config: Any, *, api_key: str | None = None) -> Any:
    """The server's FastAPI app around an open nxe.Engine (see nxe.server.app.create_app)."""
    try:
        from .app import create_app as create
    except ImportError as error:
        raise ImportError(f"the server needs {error.name}: {SERVE_EXTRA}") from None
    return create(engine, config, api_key=api_key)


__all__ = ["create_app", "run_server"]
