"""POST /v1/embeddings for models of the engine's `embedding` kind: OpenAI's request (one text,
texts, token ids or lists of token ids; `encoding_format` float or base64; `dimensions`) and
its answer, with `usage.prompt_tokens` counted by the model's tokenizer.

Every input is its own engine request, all submitted at once: the engine batches them (by
token count, with requests of other clients), and the answer lists them in input order. An
input over the model's length limit fails the whole request with OpenAI's 400, unless the
model's `truncate` option is on (then it is cut to the limit, as the engine does it)."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import numpy as np
from starlette.responses import JSONResponse, Response

from . import kinds
from .errors import ApiError, bad_request

ROUTE = "/v1/embeddings"
# Token ids cross to the engine as int64; OpenAI's ids are non-negative integers, and the kind
# checks each against the model's vocabulary.
_ID_LIMIT = 1 << 62
# What the kind says of an input over the model's limit (OpenAI's code for it follows).
_LIMIT_MESSAGE = "more than the model's limit"


def _engine_inputs(item: str | list[int], index: int) -> dict[str, np.ndarray]:
    if isinstance(item, str):
        return {"text": np.frombuffer(item.encode("utf-8", "surrogatepass"), np.uint8)}
    if not item:
        raise bad_request(f"input[{index}] is an empty list of token ids", param="input",
                          code="invalid_input")
    if any(not 0 <= token < _ID_LIMIT for token in item):
        raise bad_request(f"input[{index}] holds a negative or huge token id", param="input",
                          code="invalid_input")
    return {"input_ids": np.asarray(item, np.int64)}


def _encoded(vector: np.ndarray, encoding_format: str) -> Any:
    if encoding_format == "base64":
        # OpenAI's base64 is the little-endian float32 bytes of the vector.
        return base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
    return vector.tolist()


async def embeddings(state: Any, request: Any, model: str, body: Any) -> Response:
    """The kind "embedding"'s answer to /v1/embeddings."""
    items = body.texts()
    if not items:
        raise bad_request("'input' is empty: give a text, texts or token ids", param="input",
                          code="invalid_input")
    options = {} if body.dimensions is None else {"dimensions": str(body.dimensions)}
    inputs = [_engine_inputs(item, index) for index, item in enumerate(items)]
    runs = [asyncio.ensure_future(state.infer(model, each, request, options=options))
            for each in inputs]
    try:
        outputs = await asyncio.gather(*runs)
    except ApiError as error:
        for run in runs:
            run.cancel()
        if len(items) > 1 and error.status == 400:
            failed = next(i for i, run in enumerate(runs)
                          if run.done() and not run.cancelled() and run.exception() is error)
            error.message = f"input[{failed}]: {error.message}"
        error.param = error.param or "input"
        if _LIMIT_MESSAGE in error.message:
            error.code = "context_length_exceeded"
        raise
    data = [{"object": "embedding", "index": index,
             "embedding": _encoded(output["embedding"], body.encoding_format)}
            for index, output in enumerate(outputs)]
    tokens = sum(int(output["tokens"].reshape(-1)[0]) for output in outputs)
    return JSONResponse({"object": "list", "data": data, "model": model,
                         "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})


kinds.register(ROUTE, "embedding", embeddings)
