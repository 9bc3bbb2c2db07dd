"""Errors the server answers, in the format of the protocol the route belongs to.

Routes raise ApiError; the app turns it into OpenAI's error object on /v1 and /admin
({"error": {"message", "type", "param", "code"}}) and into the Open Inference Protocol's
({"error": "..."}) on /v2. Engine failures map onto HTTP statuses here and only here.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse

from .. import errors as nxe_errors

RETRY_AFTER_S = 1  # what a 429 asks the client to wait: the queue drains in well under that


class ApiError(Exception):
    """An answer other than success: HTTP status, message and OpenAI's type/param/code."""

    def __init__(self, status: int, message: str, *, type: str = "invalid_request_error",
                 param: str | None = None, code: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code
        self.headers = headers or {}


def bad_request(message: str, *, param: str | None = None, code: str | None = None) -> ApiError:
    return ApiError(400, message, param=param, code=code)


def model_not_found(name: str) -> ApiError:
    return ApiError(404, f"The model '{name}' does not exist", param="model",
                    code="model_not_found")


def busy(message: str) -> ApiError:
    return ApiError(429, message, type="rate_limit_error", code="rate_limit_exceeded",
                    headers={"Retry-After": str(RETRY_AFTER_S)})


def is_v2(path: str) -> bool:
    return path == "/v2" or path.startswith("/v2/")


def error_body(path: str, error: ApiError) -> dict[str, Any]:
    if is_v2(path):
        return {"error": error.message}
    return {"error": {"message": error.message, "type": error.type, "param": error.param,
                      "code": error.code}}


def error_response(path: str, error: ApiError) -> JSONResponse:
    return JSONResponse(error_body(path, error), status_code=error.status, headers=error.headers)


def from_submission(error: nxe_errors.Error, model: str) -> ApiError:
    """The answer to a submission the engine refused."""
    if isinstance(error, nxe_errors.BusyError):
        return busy(f"the server is busy: {error}")
    if isinstance(error, nxe_errors.NotFoundError):
        return model_not_found(model)
    if isinstance(error, nxe_errors.InvalidStateError):
        return ApiError(503, f"the server is stopping: {error}", type="server_error",
                        code="stopping")
    return from_engine(error, model)


def from_engine(error: nxe_errors.Error, model: str, model_error: str = "") -> ApiError:
    """The answer to a request the engine failed. `model_error` is the model's load error when
    the model is in state failed: the request failed because the model could not load."""
    message = str(error)
    if isinstance(error, nxe_errors.BusyError):  # evict_policy "none" and no room
        return busy(f"the server is busy: {message}")
    if isinstance(error, nxe_errors.DeadlineError):
        return ApiError(504, f"the request for model '{model}' passed its deadline: {message}",
                        type="timeout_error", code="deadline_exceeded")
    if isinstance(error, nxe_errors.CancelledError):
        return ApiError(503, f"the request for model '{model}' was cancelled: {message}",
                        type="server_error", code="cancelled")
    if model_error:
        return ApiError(503, f"model '{model}' is unavailable: {model_error}", type="server_error",
                        code="model_failed")
    if isinstance(error, nxe_errors.OutOfMemoryError):
        return ApiError(503, f"model '{model}' cannot run: {message}", type="server_error",
                        code="model_failed")
    # A request naming an input the model lacks fails with NotFoundError: the input's fault.
    if isinstance(error, (nxe_errors.InvalidArgumentError, nxe_errors.ShapeMismatchError,
                          nxe_errors.DtypeMismatchError, nxe_errors.UnsupportedError,
                          nxe_errors.NotFoundError)):
        return bad_request(f"model '{model}' refused the input: {message}", code="invalid_input")
    if isinstance(error, nxe_errors.RunError):
        return ApiError(422, f"model '{model}' failed on this input: {message}",
                        code="model_run_failed")
    return ApiError(500, f"model '{model}' failed: {message}", type="server_error",
                    code="model_error")
