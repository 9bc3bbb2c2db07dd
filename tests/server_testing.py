"""Helpers of the server tests: small tensor models saved as .nxm files with their direct
nxe references, config files, and a real `nxe serve` process on 127.0.0.1 at a free port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import nxe

FEATURES = 16  # every tensor model maps x: f32 (1, FEATURES) to y: f32 (1, OUTPUTS)
OUTPUTS = 8
# The engine may compile with more threads than the reference; a matrix product's sum order
# can then differ: outputs agree to a few float32 ulps, and models differ by far more.
RTOL, ATOL = 1e-5, 1e-6


def save_tensor_model(path: Path, seed: int) -> Path:
    """y = tanh(x @ w + b) with weights drawn from `seed`: each seed a different model."""
    rng = np.random.default_rng(seed)
    g = nxe.Graph()
    x = g.input("x", (1, FEATURES), "f32")
    w = g.constant(rng.standard_normal((FEATURES, OUTPUTS)).astype(np.float32), name="w")
    b = g.constant(rng.standard_normal((1, OUTPUTS)).astype(np.float32), name="b")
    g.mark_output(g.Tanh(g.Add(g.MatMul(x, w), b)), name="y")
    nxe.save_model(g, path)
    return path


SLOW_WIDTH = 512


def _slow_graph(layers: int) -> nxe.Graph:
    """x: f32 (1, SLOW_WIDTH) spread to a square, `layers` products with one shared matrix,
    and summed back to (1, SLOW_WIDTH): slow to run, small to send and to store."""
    rng = np.random.default_rng(7)
    n = SLOW_WIDTH
    g = nxe.Graph()
    x = g.input("x", (1, n), "f32")
    h = g.Add(x, g.constant(rng.standard_normal((n, n)).astype(np.float32), name="spread"))
    w = g.constant(rng.standard_normal((n, n)).astype(np.float32) / np.float32(n ** 0.5),
                   name="w")
    for _ in range(layers):
        h = g.Tanh(g.MatMul(h, w))
    g.mark_output(g.MatMul(g.constant(np.ones((1, n), np.float32), name="sum"), h), name="y")
    return g


def save_slow_model(path: Path, seconds: float) -> Path:
    """A model whose run takes about `seconds` on this machine, as measured here: long enough
    to hold the engine's worker while a test does something else."""
    probe = _slow_graph(4).compile()
    x = np.zeros((1, SLOW_WIDTH), np.float32)
    probe.run({"x": x})
    start = time.perf_counter()
    probe.run({"x": x})
    per_layer = (time.perf_counter() - start) / 4
    nxe.save_model(_slow_graph(max(4, min(2000, round(seconds / per_layer)))), path)
    return path


class Reference:
    """The model files run directly through nxe (one executable each), for checking answers."""

    def __init__(self, paths: dict[str, Path]) -> None:
        self._executables = {}
        for name, path in paths.items():
            with nxe.Model(path) as model:
                self._executables[name] = model.graph().compile(threads=1)

    def run(self, name: str, x: np.ndarray) -> np.ndarray:
        return self._executables[name].run({"x": x})["y"]


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_config(path: Path, server: dict, models: list[dict]) -> Path:
    lines = ["[server]"] + [f"{k} = {toml_value(v)}" for k, v in server.items()]
    for model in models:
        lines += ["", "[[models]]"]
        lines += [f"{k} = {toml_value(v)}" for k, v in model.items() if k != "options"]
        if model.get("options"):
            lines += ["[models.options]"]
            lines += [f"{k} = {toml_value(v)}" for k, v in model["options"].items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`nxe serve --config CONFIG --port PORT` in a subprocess, ready when /v2/health/live
    answers; stopped with SIGTERM, which must end it cleanly (exit 0)."""

    def __init__(self, config: Path, *, api_key: str | None = None, env: dict | None = None,
                 args: tuple[str, ...] = (), use_config: bool = True):
        """`config` names the config file (and, beside it, the log); with use_config False it
        is not passed (`nxe serve --model ...` with no config file: put those in `args`)."""
        self.config = config
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.api_key = api_key
        self.log = config.with_suffix(".log")
        nxe_cli = Path(sys.executable).with_name("nxe")
        assert nxe_cli.is_file(), f"no nxe executable at {nxe_cli}: pip install the package"
        # The key comes from the config (or `env`), never from the caller's environment.
        environment = {k: v for k, v in os.environ.items() if k != "NXE_API_KEY"}
        environment.update(env or {})
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [str(nxe_cli), "serve", *(("--config", str(config)) if use_config else ()),
                 "--port", str(self.port), *args],
                stdout=log, stderr=subprocess.STDOUT, env=environment)
        self._wait_ready()

    def _wait_ready(self, timeout: float = 60.0) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.process.poll() is not None:
                raise AssertionError(f"nxe serve exited with {self.process.returncode}:\n"
                                     f"{self.log.read_text()}")
            try:
                if httpx.get(self.url + "/v2/health/live", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        self.stop()
        raise AssertionError(f"nxe serve did not answer in {timeout} s:\n{self.log.read_text()}")

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def client(self, **kw) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=self.headers, timeout=60.0, **kw)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc) -> None:
        code = self.stop()
        if exc[0] is None:
            assert code == 0, f"nxe serve exited with {code}:\n{self.log.read_text()}"


def infer_body(x: np.ndarray) -> dict:
    return {"inputs": [{"name": "x", "shape": list(x.shape), "datatype": "FP32",
                        "data": x.ravel().tolist()}]}


def output_of(answer: dict, name: str = "y") -> np.ndarray:
    (out,) = [each for each in answer["outputs"] if each["name"] == name]
    assert out["datatype"] == "FP32"
    return np.asarray(out["data"], np.float32).reshape(out["shape"])
