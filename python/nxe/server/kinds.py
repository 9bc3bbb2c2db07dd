"""Which model kinds serve which route. A kind's handler for a route is one registration:

    register("/v1/embeddings", "embedding", embeddings_handler)

The route parses its request (pydantic), finds the model, and hands the request to the handler
registered for the model's kind; a model of a kind that has none answers 400 ("kind ... does
not serve this route"). The /v2 inference route serves every kind whose requests are named
tensors; kinds may describe their tensors for /v2/models/{name} with `describe`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.responses import Response

from .errors import ApiError

# handler(state, request, model, body) -> Response: the app's ServerState (its infer() runs a
# request on the engine), the Starlette request, the model's name and the parsed body.
Handler = Callable[[Any, Any, str, Any], Awaitable[Response]]


@dataclass(frozen=True)
class TensorSpec:
    name: str
    datatype: str  # the Open Inference Protocol's name: FP32, UINT8, ...
    shape: tuple[int, ...]  # -1 where any size goes


# A kind's tensors for /v2/models/{name}: describe(spec) -> (inputs, outputs).
Describer = Callable[[Any], tuple[list[TensorSpec], list[TensorSpec]]]


# (route, kind) -> handler, and kind -> describer: filled by register and register_describer.
HANDLERS: dict[tuple[str, str], Handler] = {}
DESCRIBERS: dict[str, Describer] = {}


def register(route: str, kind: str, handler: Handler) -> None:
    """Makes models of `kind` answer `route` through `handler`; a second registration of the
    same pair replaces the first."""
    HANDLERS[(route, kind)] = handler


def register_describer(kind: str, describer: Describer) -> None:
    DESCRIBERS[kind] = describer


def handler_for(route: str, model: str, kind: str) -> Handler:
    handler = HANDLERS.get((route, kind))
    if handler is None:
        raise ApiError(400, f"model '{model}' is of kind '{kind}', which does not serve {route}",
                       param="model", code="wrong_model_kind")
    return handler


def describer_for(kind: str) -> Describer | None:
    return DESCRIBERS.get(kind)
