"""`nxe serve`, `nxe reload`, `nxe config show|check` and `nxe models` with a config: the
engine's config file (nxe/config.py) and the running server it names, reached over HTTP with
the standard library. The server itself (nxe.server) is imported only by `nxe serve`."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .progress import plural

# How long a command waits for the server: it is on this machine or near it, and a reload
# re-reads the config and fingerprints the model files before answering.
_CONNECT_TIMEOUT_S = 5.0
_RELOAD_TIMEOUT_S = 120.0

CONFIG_HELP = "the config file (default: $NXE_CONFIG, else ./nxe.toml)"


class NoServer(Exception):
    """No server answers at the address a config names."""


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any  # the JSON the server sent, else its text


def _load(args: argparse.Namespace, command: str, check_files: bool) -> Any:
    """The config the command names, or None after printing each of its errors."""
    from .config import ConfigError, default_config_path, load_config

    try:
        return load_config(default_config_path(args.config), check_files=check_files)
    except ConfigError as error:
        # Each line starts with the file and line it is about, as a compiler's do.
        for line in error.errors:
            print(line, file=sys.stderr)
    except ImportError as error:
        print(f"nxe {command}: {error}", file=sys.stderr)
    return None


# -- talking to a running server -----------------------------------------------------------


def server_url(host: str, port: int) -> str:
    """The address to reach a server listening on host:port from this machine: one bound to
    every interface answers on loopback."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def call_server(url: str, method: str, route: str, api_key: str | None,
                timeout: float = _CONNECT_TIMEOUT_S) -> Answer:
    """Sends one request; an HTTP error status is an Answer too. Raises NoServer when
    nothing answers at `url`."""
    import urllib.error
    import urllib.request

    headers = {"Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    data = b"{}" if method == "POST" else None
    if data is not None:
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url + route, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read()
    except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
        reason = getattr(error, "reason", error)
        raise NoServer(f"no server answers at {url} ({reason})") from None
    text = raw.decode("utf-8", "replace")
    try:
        return Answer(status, json.loads(text))
    except ValueError:
        return Answer(status, text)


def error_message(answer: Answer) -> str:
    """What a failed answer says: the message of an OpenAI-style error body, a `detail`, or
    the body itself."""
    body = answer.body
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and "message" in error:
            return str(error["message"])
        for key in ("error", "detail", "message"):
            if isinstance(body.get(key), str):
                return body[key]
    return body if isinstance(body, str) and body else f"HTTP {answer.status}"


def _target(args: argparse.Namespace, config: Any) -> tuple[str, str | None]:
    host = getattr(args, "host", None) or config.server.host
    port = getattr(args, "port", None) or config.server.port
    api_key = getattr(args, "api_key", None) or config.server.api_key
    return server_url(host, port), api_key


# -- nxe serve -----------------------------------------------------------------------------


def _model_entry(spec: str) -> Any:
    """The ModelConfig of one `--model [NAME=]MODEL`: MODEL a model file (its kind from its
    metadata's task), a known embedding or speech model's name or a built-in SR model's
    name."""
    from .config import ModelConfig, _is_builtin_model, _is_model_name, is_asr_model_name

    name, sep, target = spec.partition("=")
    if not sep or "/" in name or os.sep in name:
        name, target = "", spec
    path = Path(target).expanduser()
    if path.is_file():
        from .model import Model

        with Model(path) as model:
            task = model.metadata.get("task")
        kind = {"embedding": "embedding", "super_resolution": "super_resolution",
                "asr": "asr"}.get(task if isinstance(task, str) else "", "tensor")
        return ModelConfig(name=name or path.stem, kind=kind, path=str(path.resolve()))
    if _is_model_name(target):
        return ModelConfig(name=name or target.rsplit("/", 1)[-1], kind="embedding",
                           path=target)
    if is_asr_model_name(target):
        return ModelConfig(name=name or target.rsplit("/", 1)[-1], kind="asr", path=target)
    if _is_builtin_model(target):
        return ModelConfig(name=name or target, kind="super_resolution", path=target)
    raise ValueError(f"--model {spec}: no such file, and not a known model's name")


def _serve_config(args: argparse.Namespace) -> Any:
    """The config `nxe serve` runs: the config file (none needed with --model) plus the
    --model entries, which a reload keeps. None after printing why not."""
    from .config import CONFIG_VARIABLE, DEFAULT_CONFIG_NAME, Config

    given = args.config or os.environ.get(CONFIG_VARIABLE) or Path(DEFAULT_CONFIG_NAME).is_file()
    if args.model and not given:
        config = Config()
    else:
        config = _load(args, "serve", check_files=True)
        if config is None:
            return None
    try:
        extra = tuple(_model_entry(spec) for spec in args.model or ())
    except (ValueError, OSError) as error:
        print(f"nxe serve: {error}", file=sys.stderr)
        return None
    except Exception as error:  # a file that is not an nxe model
        print(f"nxe serve: {error}", file=sys.stderr)
        return None
    names = [model.name for model in config.models] + [model.name for model in extra]
    taken = sorted({name for name in names if names.count(name) > 1})
    if taken:
        print(f"nxe serve: model name {taken[0]!r} is given twice (NAME=MODEL names one)",
              file=sys.stderr)
        return None
    return dataclasses.replace(config, models=[*config.models, *extra], command_line=extra)


def _serve(args: argparse.Namespace) -> int:
    config = _serve_config(args)
    if config is None:
        return 2
    from .errors import Error

    try:
        from .server import run_server

        return run_server(config, host=args.host, port=args.port, api_key=args.api_key)
    except ImportError as error:
        # The server's packages are an extra; the message names it.
        print(f"nxe serve: {error}", file=sys.stderr)
    except Error as error:
        # The engine refused the models (a file it cannot read): nothing was served.
        print(f"nxe serve: {error}", file=sys.stderr)
    return 1


# -- nxe reload ----------------------------------------------------------------------------


def _report_words(report: dict[str, Any]) -> str:
    """The server's reconciliation report in a line: what was added, reloaded, removed."""
    parts = []
    for key in ("added", "reloaded", "removed", "unchanged"):
        names = report.get(key)
        if isinstance(names, list) and names:
            parts.append(f"{key} {', '.join(map(str, names))}")
    return "; ".join(parts) or "no change"


def _reload(args: argparse.Namespace) -> int:
    config = _load(args, "reload", check_files=False)
    if config is None:
        print("nxe reload: nothing sent: the server keeps the config it has", file=sys.stderr)
        return 1
    url, api_key = _target(args, config)
    try:
        answer = call_server(url, "POST", "/admin/reload", api_key, timeout=_RELOAD_TIMEOUT_S)
    except NoServer as error:
        print(f"nxe reload: {error}; start one with `nxe serve --config {config.path}`",
              file=sys.stderr)
        return 1
    if answer.status != 200:
        # A config the server refuses: it keeps the one in force and says why, line by line.
        print(f"nxe reload: the server at {url} refused the reload (HTTP {answer.status}); it "
              "keeps the config it has:", file=sys.stderr)
        for line in error_message(answer).splitlines():
            print(f"  {line}", file=sys.stderr)
        return 1
    body = answer.body
    print(f"reloaded: {_report_words(body) if isinstance(body, dict) else body}")
    return 0


# -- nxe config show|check -----------------------------------------------------------------


def config_command(args: argparse.Namespace) -> int:
    """`nxe config show` and `nxe config check`; exit 1 with every error of a bad config."""
    config = _load(args, f"config {args.action}", check_files=True)
    if config is None:
        return 1
    if args.action == "show":
        sys.stdout.write(config.to_toml())
    else:
        print(f"ok: {plural(len(config.models), 'model')}")
    return 0


# -- nxe models with a config --------------------------------------------------------------


@dataclass
class EngineRow:
    """A model of the engine as `nxe models --config` lists it."""

    name: str
    kind: str | None
    state: str
    resident_bytes: int | None
    idle_s: float | None
    requests: int | None
    path: str | None
    error: str | None = None


def _entries(body: Any) -> list[dict[str, Any]]:
    """The model entries of /admin/models or /v1/models: a list, or one under "models" or
    "data" (the OpenAI list format)."""
    if isinstance(body, dict):
        body = body.get("models", body.get("data"))
    if not isinstance(body, list):
        return []
    return [entry for entry in body if isinstance(entry, dict)]


def _number(value: Any) -> Any:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def server_rows(url: str, api_key: str | None, config: Any) -> list[EngineRow]:
    """The models a running server holds, with their state: GET /admin/models, else the
    OpenAI list (/v1/models) completed from the config. Raises NoServer, or RuntimeError when
    the server refuses."""
    answer = call_server(url, "GET", "/admin/models", api_key)
    if answer.status == 404:
        answer = call_server(url, "GET", "/v1/models", api_key)
    if answer.status != 200:
        raise RuntimeError(f"the server at {url} answered HTTP {answer.status}: "
                           f"{error_message(answer)}")
    configured = {model.name: model for model in config.models}
    rows = []
    for entry in _entries(answer.body):
        name = str(entry.get("name", entry.get("id", "")))
        model = configured.get(name)
        rows.append(EngineRow(
            name=name, kind=entry.get("kind", model.kind if model else None),
            state=str(entry.get("state", "-")),
            resident_bytes=_number(entry.get("resident_bytes")),
            idle_s=_number(entry.get("idle_s")), requests=_number(entry.get("requests")),
            path=entry.get("path", model.path if model else None),
            error=entry.get("error") or None))
    return rows


def config_rows(config: Any) -> list[EngineRow]:
    """The config's models, for when no server runs."""
    return [EngineRow(name=model.name, kind=model.kind, state="not running",
                      resident_bytes=None, idle_s=None, requests=None, path=model.path)
            for model in config.models]


def engine_models(args: argparse.Namespace) -> int:
    """`nxe models` with a config: the running server's models and their state, else the
    config's."""
    from .cli_models import _size, _table

    config = _load(args, "models", check_files=False)
    if config is None:
        return 1
    url, api_key = _target(args, config)
    try:
        rows = server_rows(url, api_key, config)
    except NoServer as error:
        print(f"nxe models: {error}; listing {config.path}'s models", file=sys.stderr)
        rows = config_rows(config)
    except RuntimeError as error:
        print(f"nxe models: {error}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps([row.__dict__ for row in rows], indent=2))
    else:
        table = [("NAME", "KIND", "STATE", "RESIDENT", "IDLE", "REQUESTS", "PATH")]
        table += [(row.name, row.kind or "-", row.state,
                   "-" if row.resident_bytes is None else _size(row.resident_bytes),
                   "-" if row.idle_s is None else f"{row.idle_s:.1f}s",
                   "-" if row.requests is None else str(row.requests), row.path or "-")
                  for row in rows]
        print(_table(table, right={3, 4, 5}))
    for row in rows:
        if row.error:
            print(f"nxe models: {row.name}: {row.error}", file=sys.stderr)
    return 0


def uses_config(args: argparse.Namespace) -> bool:
    """Whether `nxe models` lists an engine's models: a config given (--config, $NXE_CONFIG)
    or ./nxe.toml present, and no models folder given with --dir."""
    from .config import CONFIG_VARIABLE, DEFAULT_CONFIG_NAME

    if args.config:
        return True
    if args.dir:
        return False
    return bool(os.environ.get(CONFIG_VARIABLE)) or Path(DEFAULT_CONFIG_NAME).is_file()


# -- registration --------------------------------------------------------------------------


def _server_arguments(parser: argparse.ArgumentParser, verb: str) -> None:
    parser.add_argument("--config", help=CONFIG_HELP)
    parser.add_argument("--host", help=f"the address to {verb} (default: the config's)")
    parser.add_argument("--port", type=int, help=f"the port to {verb} (default: the config's)")
    parser.add_argument("--api-key", help="the bearer token (default: the config's, else "
                        "$NXE_API_KEY)")


def add_parser(commands: Any) -> None:
    """Registers `nxe serve` and `nxe reload` with the command's subparsers."""
    serve = commands.add_parser(
        "serve", help="serve the config's models over HTTP (OpenAI and KServe v2 APIs)",
        description="Validate the config, then serve its models: OpenAI-compatible routes "
        "(/v1/*), the Open Inference Protocol (/v2/*), /v1/upscale and /metrics. SIGHUP or "
        "`nxe reload` re-reads the config.")
    _server_arguments(serve, "listen on")
    serve.add_argument("--model", action="append", metavar="[NAME=]MODEL",
                       help="serve this model too (repeatable; no config file needed): a model "
                       "file, or a known model's name such as all-MiniLM-L6-v2 or whisper-base "
                       "(baked into the cache on first use); NAME defaults to the file's stem "
                       "or the name")
    serve.set_defaults(handler=_serve)

    reload = commands.add_parser(
        "reload", help="make the running server re-read its config and reconcile its models",
        description="POST /admin/reload to the server the config names: it re-reads its "
        "config and adds, reloads and removes models to match; a config it refuses leaves the "
        "one in force, and the errors are printed.")
    _server_arguments(reload, "reach")
    reload.set_defaults(handler=_reload)
