"""/v1/embeddings and `nxe embed` with all-MiniLM-L6-v2 named, baked into a temporary cache on
first use: a real `nxe serve` driven by OpenAI's own client and by plain HTTP, and the command
line, each answer checked against sentence-transformers (fp32, cosine >= 0.9999)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from embedding_testing import (
    MIN_COSINE,
    MODEL,
    SENTENCES,
    cache_env,
    content_ids,
    cosines,
    minilm_folder,
    reference,
    token_counts,
)
from server_testing import Server, write_config

openai = pytest.importorskip("openai")
pytest.importorskip("sentence_transformers")

LONG = " ".join(["token"] * 400)  # 402 tokens: over the model's 256


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    minilm_folder()
    return tmp_path_factory.mktemp("nxe-cache")


@pytest.fixture(scope="module")
def served(tmp_path_factory, cache):
    """`nxe serve` with MiniLM by name twice: from the config (truncating), and from
    --model (refusing long inputs)."""
    folder = tmp_path_factory.mktemp("embed-server")
    config = write_config(folder / "nxe.toml", {}, [
        {"name": "minilm-truncating", "kind": "embedding", "path": MODEL,
         "max_batch_size": 64, "options": {"truncate": True}}])
    with Server(config, env=cache_env(cache), args=("--model", MODEL)) as server:
        yield server


def _client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


def test_openai_client_gets_sentence_transformers_vectors(served):
    answer = _client(served).embeddings.create(model=MODEL, input=SENTENCES)
    got = np.array([item.embedding for item in answer.data])
    assert [item.index for item in answer.data] == list(range(len(SENTENCES)))
    assert cosines(got, reference(SENTENCES)).min() >= MIN_COSINE
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, rtol=1e-5)
    assert answer.usage.prompt_tokens == sum(token_counts(SENTENCES))
    assert answer.model == MODEL


def test_plain_http_float_base64_and_dimensions(served):
    with served.client() as http:
        floats = http.post("/v1/embeddings", json={"model": MODEL, "input": SENTENCES[0],
                                                   "encoding_format": "float"}).json()
        packed = http.post("/v1/embeddings", json={"model": MODEL, "input": SENTENCES[0],
                                                   "encoding_format": "base64"}).json()
        short = http.post("/v1/embeddings", json={"model": MODEL, "input": SENTENCES[:2],
                                                  "dimensions": 64}).json()
    vector = np.array(floats["data"][0]["embedding"], np.float32)
    unpacked = np.frombuffer(base64.b64decode(packed["data"][0]["embedding"]), "<f4")
    np.testing.assert_array_equal(vector, unpacked)
    assert cosines(vector, reference(SENTENCES[:1])[0]) >= MIN_COSINE
    got = np.array([d["embedding"] for d in short["data"]])
    assert got.shape == (2, 64)
    assert cosines(got, reference(SENTENCES[:2], dimensions=64)).min() >= MIN_COSINE
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, rtol=1e-5)


def test_token_id_inputs_equal_their_texts(served):
    texts = SENTENCES[:3]
    ids = [content_ids(text) for text in texts]
    with served.client() as http:
        as_texts = http.post("/v1/embeddings", json={"model": MODEL, "input": texts}).json()
        as_ids = http.post("/v1/embeddings", json={"model": MODEL, "input": ids}).json()
        one = http.post("/v1/embeddings", json={"model": MODEL, "input": ids[0]}).json()
    a = np.array([d["embedding"] for d in as_texts["data"]])
    b = np.array([d["embedding"] for d in as_ids["data"]])
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(one["data"][0]["embedding"], a[0], rtol=1e-5, atol=1e-6)
    assert as_ids["usage"]["prompt_tokens"] == as_texts["usage"]["prompt_tokens"]


def test_over_the_limit_is_400_unless_the_model_truncates(served):
    client = _client(served)
    with pytest.raises(openai.BadRequestError) as caught:
        client.embeddings.create(model=MODEL, input=["fine", LONG])
    body = caught.value.body
    assert body["code"] == "context_length_exceeded"
    assert "input[1]" in body["message"] and "256" in body["message"]
    answer = client.embeddings.create(model="minilm-truncating", input=[LONG])
    cut = reference([LONG])  # sentence-transformers truncates to max_seq_length itself
    assert cosines(np.array(answer.data[0].embedding), cut[0]) >= MIN_COSINE
    assert answer.usage.prompt_tokens == 256


@pytest.mark.parametrize("body, words", [
    ({"input": []}, "empty"),
    ({"input": [[1, 2, 10 ** 9]]}, "vocabulary"),
    ({"input": [[-1]]}, "negative"),
    ({"input": [[]]}, "empty list"),
    ({"input": "x", "dimensions": 100000}, "dimensions"),
    ({"input": "x", "encoding_format": "int8"}, "encoding_format"),
    ({"input": 3}, "input"),
])
def test_bad_inputs_are_400_with_a_message(served, body, words):
    with served.client() as http:
        answer = http.post("/v1/embeddings", json={"model": MODEL, **body})
    assert answer.status_code == 400, answer.text
    assert words in answer.json()["error"]["message"]


def test_non_utf8_bodies_are_refused(served):
    with served.client() as http:
        answer = http.post("/v1/embeddings", content=b'{"model": "x", "input": "\xff\xfe"}',
                           headers={"Content-Type": "application/json"})
    assert answer.status_code == 400


def test_concurrent_clients_each_get_their_own_vectors(served):
    """A bounded load: 6 threads x 5 requests of 1-3 texts each, every answer checked."""
    expected = reference(SENTENCES)
    failures: list[str] = []

    def client_thread(seed: int) -> None:
        rng = np.random.default_rng(seed)
        with served.client() as http:
            for _ in range(5):
                picks = [int(i) for i in rng.choice(len(SENTENCES), rng.integers(1, 4))]
                answer = http.post("/v1/embeddings", json={
                    "model": MODEL, "input": [SENTENCES[i] for i in picks]})
                if answer.status_code != 200:
                    failures.append(answer.text)
                    continue
                got = np.array([d["embedding"] for d in answer.json()["data"]])
                if cosines(got, expected[picks]).min() < MIN_COSINE:
                    failures.append(f"wrong vectors for {picks}")

    threads = [threading.Thread(target=client_thread, args=(seed,)) for seed in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads)
    assert not failures, failures[:3]


# ---- nxe embed -----------------------------------------------------------------------------


def _nxe(*args: str, cache: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    nxe_cli = Path(sys.executable).with_name("nxe")
    return subprocess.run([str(nxe_cli), "embed", *args], input=stdin, capture_output=True,
                          env=cache_env(cache), timeout=600)


def test_embed_arguments_file_and_stdin(cache, tmp_path):
    texts = SENTENCES[:4]
    done = _nxe(*texts, cache=cache)
    assert done.returncode == 0, done.stderr.decode()
    lines = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert [line["index"] for line in lines] == list(range(len(texts)))
    got = np.array([line["embedding"] for line in lines])
    assert cosines(got, reference(texts)).min() >= MIN_COSINE

    source = tmp_path / "texts.txt"
    source.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    out = tmp_path / "vectors.npy"
    done = _nxe("-f", str(source), "-o", str(out), cache=cache)
    assert done.returncode == 0, done.stderr.decode()
    vectors = np.load(out)
    assert vectors.shape == (len(SENTENCES), 384) and vectors.dtype == np.float32
    assert cosines(vectors, reference(SENTENCES)).min() >= MIN_COSINE

    done = _nxe("--dimensions", "32", cache=cache,
                stdin="\n".join(texts).encode("utf-8"))
    assert done.returncode == 0, done.stderr.decode()
    got = np.array([json.loads(line)["embedding"] for line in done.stdout.decode().splitlines()])
    assert got.shape == (len(texts), 32)
    assert cosines(got, reference(texts, dimensions=32)).min() >= MIN_COSINE


def test_embed_refuses_bad_input_and_keeps_files(cache, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\n\xff\xfe broken\n")
    done = _nxe("-f", str(bad), cache=cache)
    assert done.returncode == 2 and b"not UTF-8" in done.stderr

    existing = tmp_path / "keep.npy"
    existing.write_bytes(b"precious")
    done = _nxe("hello", "-o", str(existing), cache=cache)
    assert done.returncode == 2 and b"exists" in done.stderr
    assert existing.read_bytes() == b"precious"

    done = _nxe(LONG, cache=cache)
    assert done.returncode == 1 and b"256" in done.stderr
    done = _nxe(LONG, "--truncate", cache=cache)
    assert done.returncode == 0, done.stderr.decode()

    done = _nxe("hello", "-m", str(tmp_path / "missing.nxm"), cache=cache)
    assert done.returncode == 1 and b"missing.nxm" in done.stderr
    assert not list(tmp_path.glob(".*"))  # no temporary file left behind
