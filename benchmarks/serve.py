"""The HTTP server (`nxe serve`) under load: requests/s and p50/p99 latency for a small tensor
model (/v2/models/{name}/infer, JSON) and for super-resolution (/v1/upscale, PNG in and out)
at 1, 8 and 32 concurrent clients; the server's overhead over a direct nxe.Engine call for the
small model; and the cost of a model switch, loading a model from .nxb against from .nxm. A
benchmark, not a test: it prints numbers and asserts nothing about them.

    python benchmarks/serve.py [--requests 2000] [--sr-requests 200] [--repeats 25]
                               [--json out.json]

The clients are asyncio tasks with one keep-alive connection each, in this process; the server
is a separate `nxe serve` process. Latencies are wall times seen by the client, so they include
the client's own HTTP work; the health route's latency (no engine work) is printed as that
floor. Figures are medians/percentiles of the stated counts, in milliseconds to 0.01 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np
import nxe
from nxe import images, models
from nxe.engine import Engine, ModelSpec

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402  (benchmarks/run.py: the CPU's name)

FEATURES, OUTPUTS = 16, 8
CONCURRENCY = (1, 8, 32)


def small_model(path: Path) -> Path:
    rng = np.random.default_rng(0)
    g = nxe.Graph()
    x = g.input("x", (1, FEATURES), "f32")
    w = g.constant(rng.standard_normal((FEATURES, OUTPUTS)).astype(np.float32), name="w")
    g.mark_output(g.Tanh(g.MatMul(x, w)), name="y")
    nxe.save_model(g, path)
    return path


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(config: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    process = subprocess.Popen([str(Path(sys.executable).with_name("nxe")), "serve", "--config",
                                str(config), "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    end = time.monotonic() + 60
    while time.monotonic() < end:
        try:
            if httpx.get(url + "/v2/health/live").status_code == 200:
                return process, url
        except httpx.TransportError:
            time.sleep(0.05)
    process.kill()
    raise SystemExit("nxe serve did not start")


async def drive(url: str, route: str, body: bytes, headers: dict, total: int,
                concurrency: int) -> tuple[float, list[float]]:
    """`total` POSTs of `body` from `concurrency` clients; (seconds, latencies in s)."""
    latencies: list[float] = []
    left = [total]

    async def client() -> None:
        async with httpx.AsyncClient(base_url=url, timeout=120.0) as session:
            while left[0] > 0:
                left[0] -= 1
                start = time.perf_counter()
                answer = await session.post(route, content=body, headers=headers)
                latencies.append(time.perf_counter() - start)
                if answer.status_code != 200:
                    raise SystemExit(f"{route}: HTTP {answer.status_code}: {answer.text}")

    start = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    return time.perf_counter() - start, latencies


async def health_floor(url: str, total: int) -> list[float]:
    latencies = []
    async with httpx.AsyncClient(base_url=url) as session:
        for _ in range(total):
            start = time.perf_counter()
            await session.get("/v2/health/live")
            latencies.append(time.perf_counter() - start)
    return latencies


def raw_latencies(url: str, route: str, body: bytes, total: int) -> list[float]:
    """`total` POSTs on one keep-alive connection from a client that is a blocking socket and
    the request's bytes made once: what the server adds, with next to nothing of the
    client's own."""
    host, port = url.removeprefix("http://").split(":")
    request = (f"POST {route} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    latencies = []
    with socket.create_connection((host, int(port))) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buffer = b""
        for _ in range(total):
            start = time.perf_counter()
            sock.sendall(request)
            while b"\r\n\r\n" not in buffer:
                buffer += sock.recv(65536)
            head, _, rest = buffer.partition(b"\r\n\r\n")
            length = int(re.search(rb"content-length: *(\d+)", head, re.IGNORECASE).group(1))
            while len(rest) < length:
                rest += sock.recv(65536)
            buffer = rest[length:]
            latencies.append(time.perf_counter() - start)
            if not head.startswith(b"HTTP/1.1 200"):
                raise SystemExit(f"{route}: {head.splitlines()[0].decode()}")
    return latencies


def direct_latencies(path: Path, total: int, x: np.ndarray) -> list[float]:
    with Engine() as engine:
        engine.add_model(ModelSpec(name="small", kind="tensor", path=str(path)))
        engine.run("small", {"x": x})
        latencies = []
        for _ in range(total):
            start = time.perf_counter()
            engine.run("small", {"x": x})
            latencies.append(time.perf_counter() - start)
    return latencies


def switch_costs(folder: Path, repeats: int, size: int) -> dict[str, float]:
    """Median seconds of Engine.load_model for EDSR-baseline x2 (random weights, input
    size x size) from .nxm (compiled at load) and from .nxb (loaded)."""
    weights = models.edsr_random_weights(scale=2, seed=0)
    graph = models.edsr_baseline(weights, size, size, scale=2).graph
    nxm = folder / "edsr.nxm"
    nxb = folder / "edsr.nxb"
    nxe.save_model(graph, nxm)
    graph.compile_to_binary(nxb)
    costs = {}
    with Engine(max_resident=1) as engine:
        for name, path in (("nxm", nxm), ("nxb", nxb)):
            engine.add_model(ModelSpec(name=name, kind="tensor", path=str(path)))
        for name in ("nxm", "nxb"):
            engine.load_model(name)  # warm the page cache
            times = []
            for _ in range(repeats):
                engine.unload_model(name)
                start = time.perf_counter()
                engine.load_model(name)
                times.append(time.perf_counter() - start)
            costs[name] = statistics.median(times)
        costs["bytes_nxm"] = nxm.stat().st_size
        costs["bytes_nxb"] = nxb.stat().st_size
    return costs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000,
                        help="tensor-model requests per concurrency level")
    parser.add_argument("--sr-requests", type=int, default=200,
                        help="upscale requests per concurrency level")
    parser.add_argument("--sr-size", type=int, default=128, help="side of the square image")
    parser.add_argument("--switch-size", type=int, default=64,
                        help="input side of the EDSR model the switch is measured with")
    parser.add_argument("--repeats", type=int, default=25, help="loads per switch figure")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)

    results: dict = {"nxe": nxe.version(), "cpu": run._cpu_model(), "isa": nxe.cpu_info()["isa"],
                     "rows": []}
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, FEATURES)).astype(np.float32)
    image = rng.integers(0, 256, (args.sr_size, args.sr_size, 3), dtype=np.uint8)
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        small = small_model(folder / "small.nxm")
        config = folder / "nxe.toml"
        config.write_text(f'[[models]]\nname = "small"\nkind = "tensor"\npath = "{small}"\n\n'
                          '[[models]]\nname = "espcn-x2"\nkind = "super_resolution"\n'
                          'path = "espcn-x2"\n')
        process, url = start_server(config)
        try:
            tensor_body = json.dumps({"inputs": [{"name": "x", "shape": [1, FEATURES],
                                                  "datatype": "FP32",
                                                  "data": x.ravel().tolist()}]}).encode()
            png = images.encode_png(image)
            cases = [("tensor (16->8)", "/v2/models/small/infer", tensor_body,
                      {"Content-Type": "application/json"}, args.requests),
                     (f"super_resolution {args.sr_size}x{args.sr_size}",
                      "/v1/upscale?model=espcn-x2", png, {"Content-Type": "image/png"},
                      args.sr_requests)]
            for label, route, body, headers, total in cases:
                asyncio.run(drive(url, route, body, headers, min(total, 50), 1))  # warm up
                for concurrency in CONCURRENCY:
                    seconds, latencies = asyncio.run(drive(url, route, body, headers, total,
                                                           concurrency))
                    results["rows"].append({
                        "model": label, "clients": concurrency, "requests": total,
                        "per_s": total / seconds, "p50_ms": percentile(latencies, 50) * 1e3,
                        "p99_ms": percentile(latencies, 99) * 1e3})
            floor = asyncio.run(health_floor(url, args.requests))
            raw = raw_latencies(url, "/v2/models/small/infer", tensor_body, args.requests)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
        direct = direct_latencies(small, args.requests, x)
        switch = switch_costs(folder, args.repeats, args.switch_size)

    server_p50 = next(row["p50_ms"] for row in results["rows"] if row["clients"] == 1)
    results["direct_p50_ms"] = percentile(direct, 50) * 1e3
    results["health_p50_ms"] = percentile(floor, 50) * 1e3
    results["raw_p50_ms"] = percentile(raw, 50) * 1e3
    results["overhead_p50_ms"] = results["raw_p50_ms"] - results["direct_p50_ms"]
    results["switch"] = switch

    print(f"nxe {results['nxe']} on {os.cpu_count()} CPUs ({results['cpu']}, kernels "
          f"{results['isa']}); latencies in ms (client-side wall time)")
    print(f"{'model':28}{'clients':>8}{'requests':>9}{'req/s':>10}{'p50':>10}{'p99':>10}")
    for row in results["rows"]:
        print(f"{row['model']:28}{row['clients']:8}{row['requests']:9}{row['per_s']:10.1f}"
              f"{row['p50_ms']:10.2f}{row['p99_ms']:10.2f}")
    print(f"small model, 1 client, p50 of {args.requests}: direct nxe.Engine.run "
          f"{results['direct_p50_ms']:.3f} ms; through the server from a raw-socket client "
          f"{results['raw_p50_ms']:.3f} ms, so the server adds {results['overhead_p50_ms']:.3f} "
          f"ms; from the httpx client {server_p50:.2f} ms (its GET /v2/health/live: "
          f"{results['health_p50_ms']:.2f} ms)")
    print(f"model switch, EDSR-baseline x2 at {args.switch_size}x{args.switch_size} (median of "
          f"{args.repeats} Engine.load_model): from .nxm {switch['nxm'] * 1e3:.2f} ms "
          f"({switch['bytes_nxm']} bytes), from .nxb {switch['nxb'] * 1e3:.2f} ms "
          f"({switch['bytes_nxb']} bytes)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
