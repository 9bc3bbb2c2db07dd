"""The HTTP server (nxe serve) driven by real clients: OpenAI's own package for /v1, httpx for
/v2, /v1/upscale, /metrics and /admin. Every answer is checked against the same input run
directly through nxe; every fault gets a 4xx/5xx with a message, and the server keeps serving."""

from __future__ import annotations

import io
import json
import signal
import socket
import threading
import time

import httpx
import numpy as np
import nxe
import pytest
from nxe import images, sr
from server_testing import (
    ATOL,
    FEATURES,
    RTOL,
    SLOW_WIDTH,
    Reference,
    Server,
    infer_body,
    output_of,
    save_slow_model,
    save_tensor_model,
    write_config,
)

openai = pytest.importorskip("openai")
pytest.importorskip("fastapi")

API_KEY = "test-key-7f3a"
MAX_BODY = 1 << 20
MAX_INPUTS = 4
MAX_LENGTH = 4096


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One server for the tests that do not change it: tensor models a, b, c and espcn-x2,
    an API key and small limits."""
    folder = tmp_path_factory.mktemp("served")
    paths = {name: save_tensor_model(folder / f"{name}.nxm", seed)
             for seed, name in enumerate(("a", "b", "c"))}
    config = write_config(folder / "nxe.toml", {
        "api_key": API_KEY, "max_body_bytes": MAX_BODY, "max_inputs_per_request": MAX_INPUTS,
        "max_input_length": MAX_LENGTH, "max_resident": 2,
    }, [{"name": name, "kind": "tensor", "path": str(path)} for name, path in paths.items()]
       + [{"name": "espcn-x2", "kind": "super_resolution", "path": "espcn-x2"}])
    with Server(config, api_key=API_KEY) as server:
        server.reference = Reference(paths)
        yield server


def openai_client(server, api_key=API_KEY):
    return openai.OpenAI(base_url=server.url + "/v1", api_key=api_key, max_retries=0,
                         timeout=60.0)


def photo(height=23, width=31, channels=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (height, width, channels), dtype=np.uint8)


# ---- OpenAI routes ------------------------------------------------------------------------


def test_openai_client_lists_the_models_with_their_state(served):
    listed = openai_client(served).models.list()
    assert [model.id for model in listed.data] == ["a", "b", "c", "espcn-x2"]
    for model in listed.data:
        assert model.object == "model" and model.owned_by == "nxe"
        assert isinstance(model.created, int) and model.created > 0
        extra = model.model_extra
        assert extra["state"] in ("unloaded", "loading", "resident", "failed")
        assert extra["idle_s"] >= 0 and extra["resident_bytes"] >= 0
    kinds = {model.id: model.model_extra["kind"] for model in listed.data}
    assert kinds == {"a": "tensor", "b": "tensor", "c": "tensor",
                     "espcn-x2": "super_resolution"}
    assert openai_client(served).models.retrieve("b").id == "b"


def test_openai_errors_in_openai_format(served):
    client = openai_client(served)
    with pytest.raises(openai.NotFoundError) as caught:
        client.models.retrieve("no-such-model")
    assert caught.value.body["code"] == "model_not_found"
    assert "no-such-model" in caught.value.body["message"]
    with pytest.raises(openai.NotFoundError):
        client.embeddings.create(model="no-such-model", input="hello")
    with pytest.raises(openai.BadRequestError) as caught:
        client.embeddings.create(model="a", input="hello")
    assert "kind 'tensor'" in caught.value.body["message"]
    assert caught.value.body["code"] == "wrong_model_kind"
    with pytest.raises(openai.NotFoundError):
        client.audio.transcriptions.create(model="nope", file=("a.wav", b"RIFF"))
    with pytest.raises(openai.BadRequestError) as caught:
        client.audio.transcriptions.create(model="espcn-x2", file=("a.wav", b"RIFF"))
    assert "does not serve /v1/audio/transcriptions" in caught.value.body["message"]
    with pytest.raises(openai.BadRequestError) as caught:
        client.embeddings.create(model="a", input=["x"] * (MAX_INPUTS + 1))
    assert "max_inputs_per_request" in caught.value.body["message"]
    with pytest.raises(openai.BadRequestError) as caught:
        client.embeddings.create(model="a", input="x" * (MAX_LENGTH + 1))
    assert "max_input_length" in caught.value.body["message"]


def test_api_key_is_required_everywhere_but_health(served):
    with pytest.raises(openai.AuthenticationError) as caught:
        openai_client(served, api_key="wrong").models.list()
    assert caught.value.body["code"] == "invalid_api_key"
    with httpx.Client(base_url=served.url) as bare:
        for route in ("/v1/models", "/v2", "/v2/models/a", "/metrics", "/admin/models"):
            answer = bare.get(route)
            assert answer.status_code == 401, route
            error = answer.json()["error"]
            message = error if route.startswith("/v2") else error["message"]
            assert "API key" in message
        assert bare.post("/v2/models/a/infer", json=infer_body(np.zeros((1, FEATURES),
                                                                        np.float32))
                         ).status_code == 401
        assert bare.get("/v1/models", headers={"Authorization": "Basic " + API_KEY}
                        ).status_code == 401
        assert bare.get("/v2/health/live").status_code == 200
        assert bare.get("/v2/health/ready").status_code == 200


# ---- Open Inference Protocol --------------------------------------------------------------


def test_v2_infer_answers_what_nxe_computes_for_each_model(served, rng):
    with served.client() as client:
        for name in ("a", "b", "c", "a"):
            x = rng.standard_normal((1, FEATURES)).astype(np.float32)
            answer = client.post(f"/v2/models/{name}/infer", json=infer_body(x))
            assert answer.status_code == 200, answer.text
            body = answer.json()
            assert body["model_name"] == name
            np.testing.assert_allclose(output_of(body), served.reference.run(name, x),
                                       rtol=RTOL, atol=ATOL)
        # nested data, an id and a chosen output
        x = rng.standard_normal((1, FEATURES)).astype(np.float32)
        body = {"id": "req-1", "inputs": [{"name": "x", "shape": [1, FEATURES],
                                           "datatype": "FP32", "data": x.tolist()}],
                "outputs": [{"name": "y"}]}
        answer = client.post("/v2/models/b/infer", json=body).json()
        assert answer["id"] == "req-1"
        np.testing.assert_allclose(output_of(answer), served.reference.run("b", x), rtol=RTOL,
                                   atol=ATOL)


def test_v2_binary_tensor_data_extension(served, rng):
    x = rng.standard_normal((1, FEATURES)).astype(np.float32)
    header = json.dumps({
        "inputs": [{"name": "x", "shape": [1, FEATURES], "datatype": "FP32",
                    "parameters": {"binary_data_size": x.nbytes}}],
        "outputs": [{"name": "y", "parameters": {"binary_data": True}}]}).encode()
    with served.client() as client:
        answer = client.post("/v2/models/c/infer", content=header + x.tobytes(), headers={
            "Inference-Header-Content-Length": str(len(header)),
            "Content-Type": "application/octet-stream"})
    assert answer.status_code == 200, answer.text
    split = int(answer.headers["Inference-Header-Content-Length"])
    described = json.loads(answer.content[:split])
    (out,) = described["outputs"]
    assert out["parameters"]["binary_data_size"] == len(answer.content) - split
    y = np.frombuffer(answer.content[split:], "<f4").reshape(out["shape"])
    np.testing.assert_allclose(y, served.reference.run("c", x), rtol=RTOL, atol=ATOL)


def test_v2_health_and_metadata(served):
    with served.client() as client:
        assert client.get("/v2/health/live").json() == {"live": True}
        assert client.get("/v2").json()["name"] == "nxe"
        meta = client.get("/v2/models/a").json()
        assert meta["name"] == "a" and meta["platform"] == "nxe_tensor"
        assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [1, FEATURES]}]
        assert [each["name"] for each in meta["outputs"]] == ["y"]
        assert client.get("/v2/models/a/ready").json()["ready"] is True
        missing = client.get("/v2/models/zzz")
        assert missing.status_code == 404 and "zzz" in missing.json()["error"]


@pytest.mark.parametrize("body, words", [
    (b"{not json", "not valid JSON"),
    (b'{"inputs": "x"}', "inputs"),
    (b'{"inputs": [{"name": "x", "shape": "1,16", "datatype": "FP32", "data": []}]}', "shape"),
    (b'{"inputs": [{"name": "x", "shape": [1, 16], "datatype": "FP32", "data": ["a"]}]}',
     "needs 16"),
    (json.dumps({"inputs": [{"name": "x", "shape": [1, 16], "datatype": "FP32",
                             "data": ["a"] * 16}]}).encode(), "must be numbers, got strings"),
    (json.dumps({"inputs": [{"name": "x", "shape": [1, 16], "datatype": "FP32",
                             "data": [[1.0] * 3, [1.0]]}]}).encode(), "x"),
    (json.dumps({"inputs": [{"name": "x", "shape": [1, 16], "datatype": "BYTES",
                             "data": ["a"] * 16}]}).encode(), "BYTES"),
    (json.dumps({"inputs": [{"name": "x", "shape": [1, 16], "datatype": "INT8",
                             "data": [300] * 16}]}).encode(), "outside the range"),
    (json.dumps({"inputs": [{"name": "x", "shape": [4, 2048], "datatype": "FP32",
                             "data": [0.0] * 8192}]}).encode(), "max_input_length"),
    (json.dumps({"inputs": [{"name": f"x{i}", "shape": [1], "datatype": "FP32", "data": [0.0]}
                            for i in range(MAX_INPUTS + 1)]}).encode(), "max_inputs_per_request"),
    (json.dumps({"inputs": [{"name": "x", "shape": [1, 8], "datatype": "FP32",
                             "data": [0.0] * 8}]}).encode(), "refused the input"),
    (json.dumps({"inputs": [{"name": "wrong", "shape": [1, 16], "datatype": "FP32",
                             "data": [0.0] * 16}]}).encode(), "refused the input"),
])
def test_v2_bad_requests_are_4xx_with_a_message(served, body, words):
    with served.client() as client:
        answer = client.post("/v2/models/a/infer", content=body,
                             headers={"Content-Type": "application/json"})
        assert 400 <= answer.status_code < 500, answer.text
        message = answer.json()["error"]
        assert isinstance(message, str) and words in message, message
        # and the server still serves
        x = np.ones((1, FEATURES), np.float32)
        assert client.post("/v2/models/a/infer", json=infer_body(x)).status_code == 200


def test_unknown_models_are_404_on_every_route(served):
    x = np.zeros((1, FEATURES), np.float32)
    with served.client() as client:
        answer = client.post("/v2/models/nope/infer", json=infer_body(x))
        assert answer.status_code == 404 and "nope" in answer.json()["error"]
        answer = client.post("/v1/upscale?model=nope", content=images.encode_png(photo()))
        assert answer.status_code == 404
        assert answer.json()["error"]["code"] == "model_not_found"
        assert client.get("/v1/nothing").status_code == 404


# ---- /v1/upscale --------------------------------------------------------------------------


def test_upscale_answers_the_png_nxe_computes(served):
    image = photo()
    expected = sr.Upscaler("espcn-x2").upscale(image)
    with served.client() as client:
        raw = client.post("/v1/upscale?model=espcn-x2", content=images.encode_png(image),
                          headers={"Content-Type": "image/png"})
        assert raw.status_code == 200, raw.text
        assert raw.headers["content-type"] == "image/png"
        np.testing.assert_array_equal(images.decode_image(raw.content), expected)
        form = client.post("/v1/upscale", data={"model": "espcn-x2"},
                           files={"image": ("in.png", images.encode_png(image), "image/png")})
        assert form.status_code == 200, form.text
        np.testing.assert_array_equal(images.decode_image(form.content), expected)
        # curl --data-binary sends a file as application/x-www-form-urlencoded
        curl = client.post("/v1/upscale?model=espcn-x2", content=images.encode_png(image),
                           headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert curl.status_code == 200, curl.text
        np.testing.assert_array_equal(images.decode_image(curl.content), expected)
        rgba = photo(channels=4, seed=3)
        answer = client.post("/v1/upscale?model=espcn-x2", content=images.encode_png(rgba))
        np.testing.assert_array_equal(images.decode_image(answer.content),
                                      sr.Upscaler("espcn-x2").upscale(rgba))


def test_upscale_reads_jpeg_through_pillow(served):
    pil = pytest.importorskip("PIL.Image")
    buffer = io.BytesIO()
    pil.fromarray(photo(seed=5)).save(buffer, "JPEG", quality=90)
    data = buffer.getvalue()
    expected = sr.Upscaler("espcn-x2").upscale(images.decode_image(data))
    with served.client() as client:
        answer = client.post("/v1/upscale?model=espcn-x2", content=data)
    assert answer.status_code == 200, answer.text
    np.testing.assert_array_equal(images.decode_image(answer.content), expected)


def test_upscale_bad_input(served):
    with served.client() as client:
        garbage = client.post("/v1/upscale?model=espcn-x2", content=b"\x89PNG\r\n\x1a\nxxxx")
        assert garbage.status_code == 400 and "image" in garbage.json()["error"]["message"]
        assert client.post("/v1/upscale", content=images.encode_png(photo())
                           ).status_code == 400  # no model named
        wrong_kind = client.post("/v1/upscale?model=a", content=images.encode_png(photo()))
        assert wrong_kind.status_code == 400
        assert "does not serve /v1/upscale" in wrong_kind.json()["error"]["message"]
        # a small file that decodes to more than max_body_bytes is refused from its header
        big = np.zeros((1024, 1024, 3), np.uint8)
        answer = client.post("/v1/upscale?model=espcn-x2", content=images.encode_png(big))
        assert answer.status_code in (400, 413) and "out of range" in answer.text


# ---- limits -------------------------------------------------------------------------------


def test_oversized_bodies_are_413(served):
    with served.client() as client:
        answer = client.post("/v2/models/a/infer", content=b" " * (MAX_BODY + 1),
                             headers={"Content-Type": "application/json"})
        assert answer.status_code == 413
        assert "max_body_bytes" in answer.json()["error"]
        answer = client.post("/v1/upscale?model=espcn-x2", content=b"x" * (MAX_BODY + 1))
        assert answer.status_code == 413
        assert answer.json()["error"]["code"] == "body_too_large"


def test_the_body_limit_holds_while_the_body_is_read(served):
    """A chunked upload (no Content-Length) is refused once it passes max_body_bytes: the
    answer comes before the client has finished sending."""
    with socket.create_connection(("127.0.0.1", served.port), timeout=30) as sock:
        sock.sendall(b"POST /v2/models/a/infer HTTP/1.1\r\nHost: x\r\n"
                     b"Authorization: Bearer " + API_KEY.encode() + b"\r\n"
                     b"Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n")
        chunk = b" " * 65536
        sent = 0
        try:
            while sent <= 2 * MAX_BODY:  # never the final empty chunk: the body never ends
                sock.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = b""
        while b"max_body_bytes" not in answer:
            more = sock.recv(65536)
            if not more:
                break
            answer += more
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"max_body_bytes" in answer


# ---- /metrics and /admin ------------------------------------------------------------------


def _samples(text: str) -> dict:
    from prometheus_client.parser import text_string_to_metric_families

    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_metrics_count_requests_latency_and_residency(served, rng):
    with served.client() as client:
        before = _samples(client.get("/metrics").text)
        for _ in range(3):
            x = rng.standard_normal((1, FEATURES)).astype(np.float32)
            assert client.post("/v2/models/b/infer", json=infer_body(x)).status_code == 200
        client.post("/v2/models/b/infer", content=b"{")
        answer = client.get("/metrics")
    assert answer.headers["content-type"].startswith("text/plain")
    after = _samples(answer.text)
    route = "/v2/models/{name:path}/infer"
    ok = ("nxe_http_requests_total", (("model", "b"), ("route", route), ("status", "200")))
    assert after[ok] - before.get(ok, 0) == 3
    bad = ("nxe_http_requests_total", (("model", "b"), ("route", route), ("status", "400")))
    assert after[bad] - before.get(bad, 0) == 1
    count = ("nxe_http_request_duration_seconds_count", (("model", "b"), ("route", route)))
    assert after[count] - before.get(count, 0) == 4  # every answer is timed
    assert after[("nxe_batch_size_count", (("model", "b"),))] >= 3
    assert ("nxe_queue_depth", ()) in after
    assert after[("nxe_model_state", (("model", "b"), ("state", "resident")))] == 1.0
    assert after[("nxe_model_resident_bytes", (("model", "b"),))] > 0
    assert after[("nxe_model_loads_total", (("model", "b"),))] >= 1
    assert ("nxe_model_evictions_total", (("model", "b"),)) in after


def test_admin_models_reports_every_model_field(served):
    with served.client() as client:
        body = client.get("/admin/models").json()
    fields = {"name", "kind", "state", "idle_s", "keep_alive_s", "resident_bytes", "requests",
              "loads", "evictions", "queued", "last_used", "fingerprint", "error", "path"}
    assert [entry["name"] for entry in body["data"]] == ["a", "b", "c", "espcn-x2"]
    for entry in body["data"]:
        assert fields <= set(entry)
    assert body["stats"]["queue_capacity"] == 512


# ---- faults -------------------------------------------------------------------------------


def _stats(client) -> dict:
    return client.get("/admin/models").json()["stats"]


def _wait_for(condition, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.005)


def test_a_client_that_disconnects_has_its_request_cancelled(tmp_path, rng):
    """Request B waits behind a slow request when its client goes away: the engine drops it
    (a cancelled request: it never runs), the server notes status 499 and keeps serving."""
    slow = save_slow_model(tmp_path / "slow.nxm", seconds=1.5)
    fast = save_tensor_model(tmp_path / "fast.nxm", 11)
    config = write_config(tmp_path / "nxe.toml", {}, [
        {"name": "slow", "kind": "tensor", "path": str(slow)},
        {"name": "fast", "kind": "tensor", "path": str(fast)}])
    x_slow = rng.standard_normal((1, SLOW_WIDTH)).astype(np.float32)
    x = rng.standard_normal((1, FEATURES)).astype(np.float32)
    with Server(config) as server, server.client() as client:
        assert client.post("/v2/models/fast/infer", json=infer_body(x)).status_code == 200
        before = _stats(client)
        answers = []

        def post_slow():
            with server.client() as own:
                answers.append(own.post("/v2/models/slow/infer", json=infer_body(x_slow)))

        thread = threading.Thread(target=post_slow)
        thread.start()
        _wait_for(lambda: _stats(client)["queue_depth"] == 1, "the slow request never ran")
        request = json.dumps(infer_body(x)).encode()
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(b"POST /v2/models/fast/infer HTTP/1.1\r\nHost: x\r\n"
                         b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                         % len(request) + request)
            _wait_for(lambda: _stats(client)["queue_depth"] == 2, "request B never queued")
        thread.join()
        (slow_answer,) = answers
        assert slow_answer.status_code == 200
        np.testing.assert_allclose(output_of(slow_answer.json()),
                                   Reference({"slow": slow}).run("slow", x_slow),
                                   rtol=1e-4, atol=1e-3)
        _wait_for(lambda: _stats(client)["queue_depth"] == 0, "request B never finished")
        after = _stats(client)
        assert after["failed"] - before["failed"] == 1  # B, cancelled
        assert after["completed"] - before["completed"] == 1  # the slow one only
        metrics = _samples(client.get("/metrics").text)
        gone = ("nxe_http_requests_total", (("model", "fast"),
                                            ("route", "/v2/models/{name:path}/infer"),
                                            ("status", "499")))
        assert metrics[gone] == 1
        answer = client.post("/v2/models/fast/infer", json=infer_body(x))
        assert answer.status_code == 200
        np.testing.assert_allclose(output_of(answer.json()), Reference({"fast": fast}).run(
            "fast", x), rtol=RTOL, atol=ATOL)


def test_a_full_queue_answers_429_with_retry_after(tmp_path, rng):
    slow = save_slow_model(tmp_path / "slow.nxm", seconds=0.5)
    config = write_config(tmp_path / "nxe.toml", {"queue_capacity": 1},
                          [{"name": "slow", "kind": "tensor", "path": str(slow)}])
    x = rng.standard_normal((1, SLOW_WIDTH)).astype(np.float32)
    body = json.dumps(infer_body(x)).encode()
    answers = []
    with Server(config) as server:
        def post():
            with server.client() as client:
                answers.append(client.post("/v2/models/slow/infer", content=body))

        threads = [threading.Thread(target=post) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    expected = Reference({"slow": slow}).run("slow", x)
    codes = sorted(answer.status_code for answer in answers)
    assert 200 in codes and 429 in codes and set(codes) <= {200, 429}, codes
    for answer in answers:
        if answer.status_code == 429:
            assert answer.headers["Retry-After"] == "1"
            assert answer.json()["error"].startswith("the server is busy")
        else:
            np.testing.assert_allclose(output_of(answer.json()), expected, rtol=1e-4,
                                       atol=1e-3)


def test_a_model_file_deleted_or_corrupted_fails_that_model_only(tmp_path, rng):
    paths = {name: save_tensor_model(tmp_path / f"{name}.nxm", seed)
             for seed, name in enumerate(("good", "deleted", "corrupted"))}
    config = write_config(tmp_path / "nxe.toml", {}, [
        {"name": name, "kind": "tensor", "path": str(path)} for name, path in paths.items()])
    reference = Reference({"good": paths["good"]})
    with Server(config) as server, server.client() as client:
        paths["deleted"].unlink()
        data = bytearray(paths["corrupted"].read_bytes())
        paths["corrupted"].unlink()  # a new file, not a write into one the server may map
        data[len(data) // 2:] = bytes(len(data) - len(data) // 2)
        paths["corrupted"].write_bytes(bytes(data))
        x = rng.standard_normal((1, FEATURES)).astype(np.float32)
        for name in ("deleted", "corrupted"):
            answer = client.post(f"/v2/models/{name}/infer", json=infer_body(x))
            assert answer.status_code == 503, answer.text
            assert f"model '{name}' is unavailable" in answer.json()["error"]
            info = {entry["name"]: entry for entry in client.get("/admin/models").json()["data"]}
            assert info[name]["state"] == "failed" and info[name]["error"]
            assert info[name]["error"] in answer.json()["error"]
            ready = client.get(f"/v2/models/{name}/ready")
            assert ready.status_code == 503 and ready.json()["ready"] is False
        listed = {m.id: m.model_extra["state"] for m in openai_client(server, "k").models.list()}
        assert listed["deleted"] == listed["corrupted"] == "failed"
        answer = client.post("/v2/models/good/infer", json=infer_body(x))
        assert answer.status_code == 200
        np.testing.assert_allclose(output_of(answer.json()), reference.run("good", x),
                                   rtol=RTOL, atol=ATOL)


def test_reload_keeps_the_old_config_when_the_new_one_is_broken(tmp_path, rng):
    paths = {name: save_tensor_model(tmp_path / f"{name}.nxm", seed)
             for seed, name in enumerate(("a", "b"))}
    models = [{"name": "a", "kind": "tensor", "path": str(paths["a"])}]
    config = write_config(tmp_path / "nxe.toml", {}, models)
    reference = Reference(paths)
    x = rng.standard_normal((1, FEATURES)).astype(np.float32)
    with Server(config) as server, server.client() as client:
        config.write_text(config.read_text() + "\n[[models]]\nname = 'b'\nkind = 3\n")
        answer = client.post("/admin/reload")
        assert answer.status_code == 400
        message = answer.json()["error"]["message"]
        assert "nxe.toml:" in message and "kind" in message, message
        assert [m["id"] for m in client.get("/v1/models").json()["data"]] == ["a"]
        assert client.post("/v2/models/a/infer", json=infer_body(x)).status_code == 200

        write_config(config, {}, models + [{"name": "b", "kind": "tensor",
                                            "path": str(paths["b"])}])
        answer = client.post("/admin/reload")
        assert answer.status_code == 200, answer.text
        assert answer.json()["added"] == ["b"] and answer.json()["unchanged"] == ["a"]
        out = client.post("/v2/models/b/infer", json=infer_body(x)).json()
        np.testing.assert_allclose(output_of(out), reference.run("b", x), rtol=RTOL, atol=ATOL)

        # SIGHUP does the same: b goes away again
        write_config(config, {}, models)
        server.process.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 20
        while [m["id"] for m in client.get("/v1/models").json()["data"]] != ["a"]:
            assert time.monotonic() < deadline, "SIGHUP did not reload the config"
            time.sleep(0.05)
        assert client.post("/v2/models/b/infer", json=infer_body(x)).status_code == 404


def test_eviction_pressure_while_requests_are_in_flight(tmp_path):
    """Three models, one resident at a time, requests for all of them at once: every answer is
    its own model's, and models were evicted to serve them."""
    paths = {name: save_tensor_model(tmp_path / f"{name}.nxm", seed)
             for seed, name in enumerate(("p", "q", "r"))}
    config = write_config(tmp_path / "nxe.toml", {"max_resident": 1}, [
        {"name": name, "kind": "tensor", "path": str(path)} for name, path in paths.items()])
    reference = Reference(paths)
    failures = []

    def client_thread(server, seed):
        rng = np.random.default_rng(seed)
        with server.client() as client:
            for i in range(30):
                name = "pqr"[(seed + i) % 3]
                x = rng.standard_normal((1, FEATURES)).astype(np.float32)
                answer = client.post(f"/v2/models/{name}/infer", json=infer_body(x))
                if answer.status_code != 200:
                    failures.append(answer.text)
                    continue
                try:
                    np.testing.assert_allclose(output_of(answer.json()),
                                               reference.run(name, x), rtol=RTOL, atol=ATOL)
                except AssertionError as error:
                    failures.append(str(error))

    with Server(config) as server:
        threads = [threading.Thread(target=client_thread, args=(server, s)) for s in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        with server.client() as client:
            body = client.get("/admin/models").json()
    assert failures == []
    assert body["stats"]["evictions"] > 0
    assert sum(entry["state"] == "resident" for entry in body["data"]) <= 1
    assert sum(entry["requests"] for entry in body["data"]) == 6 * 30


def test_api_key_from_the_environment(tmp_path):
    path = save_tensor_model(tmp_path / "m.nxm", 1)
    config = write_config(tmp_path / "nxe.toml", {}, [{"name": "m", "kind": "tensor",
                                                       "path": str(path)}])
    with Server(config, env={"NXE_API_KEY": "from-env"}) as server:
        assert httpx.get(server.url + "/v1/models").status_code == 401
        answer = httpx.get(server.url + "/v1/models",
                           headers={"Authorization": "Bearer from-env"})
        assert answer.status_code == 200 and answer.json()["object"] == "list"


def test_a_model_that_fails_at_run_time_answers_422_and_keeps_serving(tmp_path):
    """A lookup model given an index out of its table's range fails in the run (RunError):
    that request is refused with the engine's message, the next one is answered."""
    g = nxe.Graph()
    indices = g.input("i", (1, 4), "i64")
    table = np.arange(10, dtype=np.float32).reshape(10, 1) * np.float32(1.5)
    g.mark_output(g.Gather(g.constant(table, name="table"), indices), name="y")
    path = tmp_path / "lookup.nxm"
    nxe.save_model(g, path)
    config = write_config(tmp_path / "nxe.toml", {}, [{"name": "lookup", "kind": "tensor",
                                                       "path": str(path)}])

    def body(values):
        return {"inputs": [{"name": "i", "shape": [1, 4], "datatype": "INT64", "data": values}]}

    with Server(config) as server, server.client() as client:
        answer = client.post("/v2/models/lookup/infer", json=body([1, 2, 3, 40]))
        assert answer.status_code == 422, answer.text
        assert "outside the valid range" in answer.json()["error"]
        good = [0, 9, 4, 2]
        answer = client.post("/v2/models/lookup/infer", json=body(good))
        assert answer.status_code == 200, answer.text
        with nxe.Model(path) as model:
            expected = model.graph().compile(threads=1).run(
                {"i": np.array([good], np.int64)})["y"]
        np.testing.assert_array_equal(output_of(answer.json()), expected)


def test_a_request_past_its_deadline_answers_504(tmp_path, rng):
    """request_timeout_s is each request's engine deadline: one that waits behind a slow
    request for longer fails with 504."""
    slow = save_slow_model(tmp_path / "slow.nxm", seconds=2.0)
    fast = save_tensor_model(tmp_path / "fast.nxm", 3)
    config = write_config(tmp_path / "nxe.toml", {"request_timeout_s": 0.3}, [
        {"name": "slow", "kind": "tensor", "path": str(slow)},
        {"name": "fast", "kind": "tensor", "path": str(fast)}])
    x = rng.standard_normal((1, FEATURES)).astype(np.float32)
    with Server(config) as server, server.client() as client:
        assert client.post("/v2/models/fast/infer", json=infer_body(x)).status_code == 200
        answers = []

        def post_slow():
            with server.client() as own:
                answers.append(own.post("/v2/models/slow/infer", json=infer_body(
                    np.zeros((1, SLOW_WIDTH), np.float32))))

        thread = threading.Thread(target=post_slow)
        thread.start()
        _wait_for(lambda: _stats(client)["queue_depth"] == 1, "the slow request never ran")
        late = client.post("/v2/models/fast/infer", json=infer_body(x))
        thread.join()
        assert late.status_code == 504, late.text
        assert "deadline" in late.json()["error"]
        assert answers[0].status_code in (200, 504)  # a running tensor model is not stopped
        answer = client.post("/v2/models/fast/infer", json=infer_body(x))
        assert answer.status_code == 200


def test_a_kind_plugs_its_handler_into_a_route(tmp_path, rng, monkeypatch):
    """What the embeddings and speech kinds do: one registration makes a route serve a kind.
    Here /v1/embeddings answers for tensor models from a handler registered by the test, the
    app made with create_app around an nxe.Engine and driven in process by OpenAI's client."""
    import asyncio

    from nxe.config import Config
    from nxe.engine import Engine, ModelSpec
    from nxe.server import create_app, kinds
    from nxe.server.v1 import EMBEDDINGS
    from starlette.responses import JSONResponse

    path = save_tensor_model(tmp_path / "m.nxm", 5)

    def features(text):
        x = np.zeros((1, FEATURES), np.float32)
        codes = np.frombuffer(text.encode()[:FEATURES], np.uint8)
        x[0, :len(codes)] = codes / np.float32(255)
        return x

    async def embed(state, request, model, body):
        vectors = []
        for text in body.texts():
            outputs = await state.infer(model, {"x": features(text)}, request)
            vectors.append(outputs["y"].ravel().tolist())
        return JSONResponse({"object": "list", "model": model, "usage": {
            "prompt_tokens": 0, "total_tokens": 0}, "data": [
            {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]})

    monkeypatch.setitem(kinds.HANDLERS, (EMBEDDINGS, "tensor"), embed)
    config = Config()
    texts = ["hello", "a longer text than sixteen bytes"]
    with Engine() as engine:
        engine.add_model(ModelSpec(name="m", kind="tensor", path=str(path)))
        app = create_app(engine, config)

        async def ask():
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://nxe") as http:
                client = openai.AsyncOpenAI(base_url="http://nxe/v1", api_key="-",
                                            http_client=http)
                return await client.embeddings.create(model="m", input=texts,
                                                      encoding_format="float")

        answer = asyncio.run(ask())
    reference = Reference({"m": path})
    for text, item in zip(texts, answer.data):
        np.testing.assert_allclose(np.float32(item.embedding),
                                   reference.run("m", features(text)).ravel(), rtol=RTOL,
                                   atol=ATOL)
