"""The server under load: 8 concurrent clients x 2,000 requests each over 4 models, at most 2
of them resident, so that models are evicted and reloaded all the time. Every answer is checked
against the same input run directly through nxe: none lost, none mixed up (the answer's id and
values are its own request's), no error but 429s (retried)."""

from __future__ import annotations

import asyncio
import json
import time

import numpy as np
import pytest
from server_testing import ATOL, FEATURES, RTOL, Reference, Server, save_tensor_model, write_config

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

CLIENTS = 8
REQUESTS = 2000  # per client
MODELS = ("m0", "m1", "m2", "m3")
RUN_LENGTH = 4  # a client asks one model this many times in a row, then draws another


async def _client(url: str, index: int, reference: Reference, tally: dict) -> None:
    rng = np.random.default_rng(1000 + index)
    async with httpx.AsyncClient(base_url=url, timeout=60.0) as client:
        name = MODELS[0]
        for i in range(REQUESTS):
            if i % RUN_LENGTH == 0:
                name = MODELS[int(rng.integers(len(MODELS)))]
            x = rng.standard_normal((1, FEATURES)).astype(np.float32)
            ident = f"{index}-{i}"
            body = json.dumps({"id": ident, "inputs": [
                {"name": "x", "shape": [1, FEATURES], "datatype": "FP32",
                 "data": x.ravel().tolist()}]})
            while True:
                answer = await client.post(f"/v2/models/{name}/infer", content=body,
                                           headers={"Content-Type": "application/json"})
                if answer.status_code != 429:
                    break
                tally["busy"] += 1
                await asyncio.sleep(0.01)
            if answer.status_code != 200:
                tally["errors"].append(f"{ident} {name}: {answer.status_code} {answer.text}")
                continue
            result = answer.json()
            (out,) = result["outputs"]
            y = np.asarray(out["data"], np.float32).reshape(out["shape"])
            expected = reference.run(name, x)
            if result["id"] != ident or result["model_name"] != name or \
                    y.shape != expected.shape or \
                    not np.allclose(y, expected, rtol=RTOL, atol=ATOL):
                tally["mixed"].append(f"{ident} {name}: {result}")
            tally["answered"] += 1


async def _drive(url: str, reference: Reference) -> dict:
    tally = {"answered": 0, "busy": 0, "errors": [], "mixed": []}
    await asyncio.gather(*(_client(url, i, reference, tally) for i in range(CLIENTS)))
    return tally


def test_load_with_evictions_loses_and_mixes_up_nothing(tmp_path):
    paths = {name: save_tensor_model(tmp_path / f"{name}.nxm", 100 + i)
             for i, name in enumerate(MODELS)}
    config = write_config(tmp_path / "nxe.toml", {"max_resident": 2}, [
        {"name": name, "kind": "tensor", "path": str(path)} for name, path in paths.items()])
    reference = Reference(paths)
    with Server(config) as server:
        start = time.perf_counter()
        tally = asyncio.run(_drive(server.url, reference))
        elapsed = time.perf_counter() - start
        body = httpx.get(server.url + "/admin/models").json()
    total = CLIENTS * REQUESTS
    print(f"\n{total} requests in {elapsed:.1f} s ({total / elapsed:.0f}/s), "
          f"{tally['busy']} answered 429 and retried, "
          f"{body['stats']['evictions']} evictions, {body['stats']['loads']} loads")
    assert tally["errors"] == []
    assert tally["mixed"] == []
    assert tally["answered"] == total
    assert body["stats"]["completed"] == total
    assert sum(entry["requests"] for entry in body["data"]) == total
    assert body["stats"]["evictions"] > 0
    assert body["stats"]["resident_models"] <= 2
