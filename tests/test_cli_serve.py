"""The engine's commands as a user runs them (the installed `nxe`): `nxe config check|show`
beside the build flags, `nxe serve` refusing a bad config and handing a good one to the
server, and `nxe reload` / `nxe models` against a real HTTP server started here on a free
loopback port, or none."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import nxe.sr
import pytest
from nxe import _binding
from nxe.cli_models import _size
from nxe.config import MASKED, ConfigError, load_config, parse_config

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "nxe.toml"
NXE = Path(sys.executable).with_name("nxe")


def nxe_cli(*args, env=None, cwd=None):
    """Runs the installed command; ``env`` adds to the environment, less NXE_CONFIG and
    NXE_API_KEY unless it sets them."""
    base = {k: v for k, v in os.environ.items() if k not in ("NXE_CONFIG", "NXE_API_KEY")}
    return subprocess.run([str(NXE), *map(str, args)], capture_output=True, text=True,
                          timeout=600, env={**base, **(env or {})}, cwd=cwd)


def free_port():
    """A loopback port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def folder(tmp_path):
    """A config folder with a model file and a config naming it and a built-in model."""
    shutil.copy(nxe.sr.model_path("espcn-x2"), tmp_path / "m.nxm")
    return tmp_path


def write_config(folder, port=None, api_key=None, name="nxe.toml"):
    server = "[server]\n"
    if port is not None:
        server += f"port = {port}\n"
    if api_key is not None:
        server += f'api_key = "{api_key}"\n'
    text = server + """
[[models]]
name = "scorer"
kind = "tensor"
path = "m.nxm"
keep_alive_s = -1

[[models]]
name = "up"
kind = "super_resolution"
path = "espcn-x2"
"""
    path = folder / name
    path.write_text(text)
    return path


# -- nxe config ----------------------------------------------------------------------------


def test_config_check_accepts_the_example_config():
    result = nxe_cli("config", "check", "--config", EXAMPLE)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"ok: {len(load_config(EXAMPLE).models)} models\n"


def test_config_takes_its_file_from_nxe_config_else_the_working_directory(folder):
    path = write_config(folder)
    other = folder / "sub"
    other.mkdir()
    by_env = nxe_cli("config", "check", env={"NXE_CONFIG": str(path)}, cwd=other)
    by_cwd = nxe_cli("config", "check", cwd=folder)
    for result in (by_env, by_cwd):
        assert (result.returncode, result.stdout) == (0, "ok: 2 models\n"), result.stderr
    # --config wins over NXE_CONFIG.
    broken = folder / "broken.toml"
    broken.write_text("[server]\nport = -1\n")
    result = nxe_cli("config", "check", "--config", broken, env={"NXE_CONFIG": str(path)})
    assert result.returncode == 1
    missing = nxe_cli("config", "check", cwd=other)
    assert missing.returncode == 1
    assert missing.stderr == "nxe.toml: no such config file\n"


def test_config_check_prints_every_error_with_its_line(folder):
    text = ('[server]\nport = "x"\nevict_policy = "fifo"\n\n[[models]]\nname = "a b"\n'
            'kind = "tensor"\npath = "gone.nxm"\n')
    path = folder / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    result = nxe_cli("config", "check", "--config", path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == caught.value.errors
    assert [line.split(":")[1] for line in caught.value.errors] == ["2", "3", "6", "8"]


def test_config_show_prints_the_effective_config_with_the_key_masked(folder):
    path = write_config(folder, api_key="top-secret")
    result = nxe_cli("config", "show", "--config", path)
    assert result.returncode == 0, result.stderr
    config = load_config(path)
    assert result.stdout == config.to_toml()
    assert "top-secret" not in result.stdout and MASKED in result.stdout
    shown = parse_config(result.stdout, path)
    assert shown.models == config.models
    # The key from the environment is masked the same way.
    result = nxe_cli("config", "show", "--config", write_config(folder),
                     env={"NXE_API_KEY": "env-secret"})
    assert "env-secret" not in result.stdout and MASKED in result.stdout


def test_config_show_refuses_a_bad_config(folder):
    path = folder / "bad.toml"
    path.write_text("[server]\nport = 1\n[server]\n")
    result = nxe_cli("config", "show", "--config", path)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith(f"{path}:3: ")


def test_config_keeps_printing_build_flags():
    result = nxe_cli("config", "--cflags", "--libs")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == f"-I{_binding.INCLUDE_DIR}"
    assert f"-L{_binding.LIB_DIR}" in result.stdout.split()


@pytest.mark.parametrize("args,words", [
    (("config",), "give show or check"),
    (("config", "show", "--cflags"), "a command of their own"),
    (("config", "--libs", "--config", "x.toml"), "--config goes with show or check"),
])
def test_config_mixing_flags_and_actions_is_a_usage_error(args, words):
    result = nxe_cli(*args)
    assert result.returncode == 2
    assert words in result.stderr and result.stdout == ""


def test_config_rejects_an_unknown_action():
    result = nxe_cli("config", "validate")
    assert result.returncode == 2
    assert result.stderr.startswith("usage: nxe config")


# -- nxe serve -----------------------------------------------------------------------------


def test_serve_refuses_a_bad_config_with_its_errors(folder):
    path = folder / "bad.toml"
    path.write_text('[[models]]\nname = "m"\nkind = "x"\npath = "m.nxm"\n')
    result = nxe_cli("serve", "--config", path)
    assert result.returncode == 2
    assert result.stderr == f"{path}:3: models[0].kind: unknown kind 'x' (known: tensor, " \
        "super_resolution, embedding, asr)\n"


FAKE_SERVER = """
import json, os, sys, types
import nxe.errors
server = types.ModuleType("nxe.server")
def run_server(config, *, host=None, port=None, api_key=None):
    if os.environ.get("FAKE_RAISE") == "import":
        raise ImportError("the server needs uvicorn and FastAPI: pip install 'nxe[serve]'")
    if os.environ.get("FAKE_RAISE") == "engine":
        raise nxe.errors.IoError("scorer: cannot read m.nxm")
    print(json.dumps({"path": str(config.path), "models": [m.name for m in config.models],
                      "host": host, "port": port, "api_key": api_key}))
    return 7
server.run_server = run_server
sys.modules["nxe.server"] = server
from nxe.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_serve_hands_the_config_and_the_overrides_to_the_server(folder):
    path = write_config(folder)
    result = subprocess.run(
        [sys.executable, "-c", FAKE_SERVER, "serve", "--config", str(path), "--host", "0.0.0.0",
         "--port", "9123", "--api-key", "k"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 7, result.stderr  # the server's exit status
    assert json.loads(result.stdout) == {"path": str(path.resolve()),
                                         "models": ["scorer", "up"], "host": "0.0.0.0",
                                         "port": 9123, "api_key": "k"}
    result = subprocess.run([sys.executable, "-c", FAKE_SERVER, "serve", "--config", str(path)],
                            capture_output=True, text=True, timeout=600)
    assert json.loads(result.stdout)["host"] is None  # the config's own


@pytest.mark.parametrize("fault,words", [
    ("import", "nxe serve: the server needs uvicorn and FastAPI: pip install 'nxe[serve]'\n"),
    ("engine", "nxe serve: scorer: cannot read m.nxm\n"),
])
def test_serve_reports_a_server_that_cannot_start_in_a_line(folder, fault, words):
    path = write_config(folder)
    result = subprocess.run([sys.executable, "-c", FAKE_SERVER, "serve", "--config", str(path)],
                            capture_output=True, text=True, timeout=600,
                            env={**os.environ, "FAKE_RAISE": fault})
    assert result.returncode == 1
    assert result.stderr == words


# -- a server for nxe reload and nxe models ------------------------------------------------


class FakeServer:
    """An HTTP server on a free loopback port answering each (method, route) with the
    (status, JSON body) given, and recording the requests it got."""

    def __init__(self, answers):
        self.answers = answers
        self.requests = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                outer.requests.append((self.command, self.path,
                                       self.headers.get("Authorization")))
                status, body = outer.answers.get((self.command, self.path),
                                                 (404, {"detail": "Not Found"}))
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = answer

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


# -- nxe reload ----------------------------------------------------------------------------


def test_reload_posts_to_the_server_the_config_names_with_its_key(folder):
    report = {"added": ["new"], "reloaded": ["scorer"], "removed": [], "unchanged": ["up"]}
    with FakeServer({("POST", "/admin/reload"): (200, report)}) as server:
        path = write_config(folder, port=server.port, api_key="k1")
        result = nxe_cli("reload", "--config", path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "reloaded: added new; reloaded scorer; unchanged up\n"
    assert server.requests == [("POST", "/admin/reload", "Bearer k1")]


def test_reload_reports_a_config_the_server_refuses(folder):
    error = {"error": {"message": "nxe.toml:3: server.port: expected an integer, got 'x'\n"
                                  "nxe.toml:9: models[0].kind: unknown kind 'y'",
                       "type": "invalid_request_error"}}
    with FakeServer({("POST", "/admin/reload"): (400, error)}) as server:
        path = write_config(folder, port=server.port)
        result = nxe_cli("reload", "--config", path, env={"NXE_API_KEY": "k2"})
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert "refused the reload (HTTP 400); it keeps the config it has" in lines[0]
    assert lines[1:] == ["  " + line for line in error["error"]["message"].splitlines()]
    # Without a key in the file, NXE_API_KEY is the key.
    assert server.requests == [("POST", "/admin/reload", "Bearer k2")]


def test_reload_says_so_when_no_server_answers(folder):
    port = free_port()
    path = write_config(folder, port=port)
    result = nxe_cli("reload", "--config", path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith(f"nxe reload: no server answers at http://127.0.0.1:{port}")
    assert "Traceback" not in result.stderr


def test_reload_takes_the_address_from_its_options(folder):
    with FakeServer({("POST", "/admin/reload"): (200, {"added": []})}) as server:
        path = write_config(folder, port=free_port())
        result = nxe_cli("reload", "--config", path, "--port", server.port, "--api-key", "k3")
    assert (result.returncode, result.stdout) == (0, "reloaded: no change\n"), result.stderr
    assert server.requests == [("POST", "/admin/reload", "Bearer k3")]


# -- nxe models with a config --------------------------------------------------------------


def table_rows(stdout):
    """The table's cells: columns are two or more spaces apart."""
    lines = stdout.splitlines()
    assert lines[0].split() == ["NAME", "KIND", "STATE", "RESIDENT", "IDLE", "REQUESTS", "PATH"]
    return [re.split(r"\s{2,}", line.strip()) for line in lines[1:]]


def test_models_lists_the_running_servers_models_and_their_state(folder):
    scorer = str(folder / "m.nxm")
    state = {"models": [
        {"name": "scorer", "kind": "tensor", "state": "resident", "resident_bytes": 2_500_000,
         "idle_s": 1.25, "requests": 12, "path": scorer, "error": ""},
        {"name": "up", "kind": "super_resolution", "state": "failed", "resident_bytes": 0,
         "idle_s": 0.0, "requests": 3, "path": "espcn-x2", "error": "up: corrupt file"},
    ]}
    with FakeServer({("GET", "/admin/models"): (200, state)}) as server:
        path = write_config(folder, port=server.port, api_key="k4")
        result = nxe_cli("models", "--config", path)
        as_json = nxe_cli("models", "--config", path, "--json")
    assert result.returncode == 0, result.stderr
    assert table_rows(result.stdout) == [
        ["scorer", "tensor", "resident", _size(2_500_000), f"{1.25:.1f}s", "12", scorer],
        ["up", "super_resolution", "failed", _size(0), f"{0:.1f}s", "3", "espcn-x2"],
    ]
    assert result.stderr == "nxe models: up: up: corrupt file\n"
    rows = json.loads(as_json.stdout)
    assert [{k: row[k] for k in ("name", "kind", "state", "resident_bytes", "idle_s",
                                 "requests", "path")} for row in rows] == \
        [{k: entry[k] for k in ("name", "kind", "state", "resident_bytes", "idle_s",
                                "requests", "path")} for entry in state["models"]]
    assert set(server.requests) == {("GET", "/admin/models", "Bearer k4")}


def test_models_falls_back_to_the_openai_list_completed_from_the_config(folder):
    listing = {"object": "list", "data": [
        {"id": "scorer", "object": "model", "created": 0, "owned_by": "nxe",
         "state": "unloaded", "idle_s": 0.0, "resident_bytes": 0},
    ]}
    with FakeServer({("GET", "/v1/models"): (200, listing)}) as server:
        path = write_config(folder, port=server.port)
        result = nxe_cli("models", "--config", path)
    assert result.returncode == 0, result.stderr
    assert table_rows(result.stdout) == [
        ["scorer", "tensor", "unloaded", _size(0), f"{0:.1f}s", "-", str(folder / "m.nxm")]]
    assert [route for _, route, _ in server.requests] == ["/admin/models", "/v1/models"]


def test_models_lists_the_config_when_no_server_answers(folder):
    port = free_port()
    path = write_config(folder, port=port)
    result = nxe_cli("models", "--config", path)
    assert result.returncode == 0, result.stderr
    assert table_rows(result.stdout) == [
        ["scorer", "tensor", "not running", "-", "-", "-", str(folder / "m.nxm")],
        ["up", "super_resolution", "not running", "-", "-", "-", "espcn-x2"]]
    assert result.stderr.startswith(f"nxe models: no server answers at http://127.0.0.1:{port} ")
    assert result.stderr.endswith(f"; listing {path}'s models\n")
    # The config from NXE_CONFIG, or ./nxe.toml, is used the same way; --dir lists a folder.
    assert nxe_cli("models", env={"NXE_CONFIG": str(path)}).stdout == result.stdout
    assert nxe_cli("models", cwd=folder).stdout == result.stdout
    by_dir = nxe_cli("models", "--dir", folder, "--json", cwd=folder)
    assert [row["name"] for row in json.loads(by_dir.stdout)][-1] == "m"


def test_models_reports_a_server_that_refuses(folder):
    refusal = {"error": {"message": "invalid API key", "type": "invalid_request_error"}}
    with FakeServer({("GET", "/admin/models"): (401, refusal)}) as server:
        path = write_config(folder, port=server.port, api_key="wrong")
        result = nxe_cli("models", "--config", path)
    assert result.returncode == 1
    assert result.stderr == (f"nxe models: the server at http://127.0.0.1:{server.port} "
                             "answered HTTP 401: invalid API key\n")


def test_reload_sends_nothing_for_a_config_with_errors(folder):
    with FakeServer({}) as server:
        path = write_config(folder, port=server.port)
        path.write_text(path.read_text().replace('kind = "tensor"', 'kind = "x"'))
        result = nxe_cli("reload", "--config", path)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"{path}:") and "unknown kind 'x'" in lines[0]
    assert lines[1] == "nxe reload: nothing sent: the server keeps the config it has"
    assert server.requests == []


# -- against nxe serve ---------------------------------------------------------------------


def wait_until_live(process, url, log, timeout=60.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert process.poll() is None, f"nxe serve exited:\n{log.read_text()}"
        try:
            with urllib.request.urlopen(url + "/v2/health/live", timeout=1.0) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"nxe serve did not answer in {timeout} s:\n{log.read_text()}")


def test_models_and_reload_against_nxe_serve(folder):
    for module in ("nxe.server", "fastapi", "uvicorn"):
        pytest.importorskip(module, reason="nxe serve needs the server and the serve extra")
    port = free_port()
    path = write_config(folder, port=port, api_key="real-key")
    log = folder / "serve.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([str(NXE), "serve", "--config", str(path)], stdout=out,
                                   stderr=subprocess.STDOUT,
                                   env={k: v for k, v in os.environ.items()
                                        if k not in ("NXE_CONFIG", "NXE_API_KEY")})
    try:
        wait_until_live(process, f"http://127.0.0.1:{port}", log)
        before = nxe_cli("models", "--config", path)
        assert before.returncode == 0, before.stderr
        rows = table_rows(before.stdout)
        config = load_config(path)
        assert [row[0] for row in rows] == [model.name for model in config.models]
        for row, model in zip(rows, config.models):
            assert row[1] == model.kind and row[-1] == model.path
            assert row[2] in ("unloaded", "loading", "resident")  # a state from the server

        # Another model in the file: the server adds it and keeps the others.
        with open(path, "a") as more:
            more.write('\n[[models]]\nname = "up4"\nkind = "super_resolution"\n'
                       'path = "edsr-x4"\n')
        reloaded = nxe_cli("reload", "--config", path)
        assert reloaded.returncode == 0, reloaded.stderr
        assert reloaded.stdout.startswith("reloaded: added up4;")
        after = table_rows(nxe_cli("models", "--config", path).stdout)
        assert [row[0] for row in after] == ["scorer", "up", "up4"]

        # A model file the server cannot find: it refuses, and keeps the three.
        with open(path, "a") as more:
            more.write('\n[[models]]\nname = "gone"\nkind = "tensor"\npath = "gone.nxm"\n')
        refused = nxe_cli("reload", "--config", path)
        assert refused.returncode == 1
        assert "refused the reload (HTTP 400)" in refused.stderr
        assert f"{path.resolve()}:" in refused.stderr and "models[3].path: no such file" \
            in refused.stderr
        kept = nxe_cli("models", "--config", path, "--json")
        assert [row["name"] for row in json.loads(kept.stdout)] == ["scorer", "up", "up4"]
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
    assert code == 0, log.read_text()
    stopped = nxe_cli("models", "--config", path)
    assert stopped.returncode == 0
    assert {row[2] for row in table_rows(stopped.stdout)} == {"not running"}
