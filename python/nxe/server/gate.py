"""The ASGI middleware every HTTP request passes: the API key, the body-size limit (enforced
while the body is read, so an oversized upload is refused after max_body_bytes bytes, not
after it was all buffered) and the request's metrics. Plain ASGI rather than Starlette's
BaseHTTPMiddleware: it adds no task or stream per request, and the route still sees the
connection's own receive (the bridge watches it for a disconnect)."""

from __future__ import annotations

import hmac
import time
from typing import Any

from .errors import ApiError, error_response

# The routes a load balancer probes without credentials.
OPEN_PATHS = frozenset({"/v2/health/live", "/v2/health/ready"})
MODEL_KEY = "nxe.model"  # the scope key where a route notes the model a request named


class BodyTooLarge(ApiError):
    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is larger than max_body_bytes ({limit} bytes)",
                         code="body_too_large")


def _header(scope: dict[str, Any], name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return value
    return None


def _authorized(scope: dict[str, Any], api_key: str) -> ApiError | None:
    value = _header(scope, b"authorization")
    if value is None:
        return ApiError(401, "missing API key: send 'Authorization: Bearer <key>'",
                        code="missing_api_key")
    scheme, _, token = value.partition(b" ")
    if scheme.lower() != b"bearer" or not hmac.compare_digest(token.strip(), api_key.encode()):
        return ApiError(401, "incorrect API key", code="invalid_api_key")
    return None


class Gate:
    def __init__(self, app: Any, state: Any) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        path = scope["path"]
        status = 500
        settings = self.state.config.server

        async def send_noting_status(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            refusal = None
            if settings.api_key and path not in OPEN_PATHS:
                refusal = _authorized(scope, settings.api_key)
            length = _header(scope, b"content-length")
            if refusal is None and length is not None and length.isdigit() and \
                    int(length) > settings.max_body_bytes:
                refusal = BodyTooLarge(settings.max_body_bytes)
            if refusal is not None:
                await error_response(path, refusal)(scope, receive, send_noting_status)
                return
            await self.app(scope, _limited(receive, settings.max_body_bytes), send_noting_status)
        finally:
            route = scope.get("route")
            self.state.metrics.observe(route.path if route is not None else "unmatched",
                                       scope.get(MODEL_KEY, ""), status,
                                       time.perf_counter() - start)


def _limited(receive: Any, limit: int) -> Any:
    """receive, raising BodyTooLarge as soon as the body passes `limit` bytes."""
    received = 0

    async def receive_limited() -> dict[str, Any]:
        nonlocal received
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                raise BodyTooLarge(limit)
        return message

    return receive_limited
