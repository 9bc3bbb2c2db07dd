"""The Open Inference Protocol (KServe v2, Triton's REST API): health, server and model
metadata, and inference on named tensors for every model whose kind takes tensors. Tensors come
as JSON (`data` flat or nested, row-major) or, with the binary tensor data extension, as raw
little-endian bytes after a JSON header of Inference-Header-Content-Length bytes."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import numpy as np
from fastapi import APIRouter, Request
from starlette.responses import JSONResponse, Response

from .. import Model
from .. import errors as nxe_errors
from . import kinds
from .bridge import off_loop
from .errors import ApiError, bad_request
from .schemas import InferInput, InferRequest, parse_json

router = APIRouter()

HEADER_LENGTH = "inference-header-content-length"
# Open Inference Protocol datatypes and their numpy dtypes; BYTES (strings) and BF16 (no numpy
# type) are refused with a message.
DATATYPES = {"BOOL": np.dtype(np.bool_), "UINT8": np.dtype(np.uint8),
             "UINT16": np.dtype(np.uint16), "UINT32": np.dtype(np.uint32),
             "UINT64": np.dtype(np.uint64), "INT8": np.dtype(np.int8),
             "INT16": np.dtype(np.int16), "INT32": np.dtype(np.int32),
             "INT64": np.dtype(np.int64), "FP16": np.dtype(np.float16),
             "FP32": np.dtype(np.float32), "FP64": np.dtype(np.float64)}
_NAMES = {dtype: name for name, dtype in DATATYPES.items()}
# numpy kinds of the JSON values each datatype kind accepts: no strings, no floats for ints.
_ACCEPTS = {"b": "b", "u": "bui", "i": "bui", "f": "buif"}


def _datatype_of_nxe(name: str) -> str:
    """'f32' -> 'FP32', 'i64' -> 'INT64', 'u8' -> 'UINT8', 'bool' -> 'BOOL', 'bf16' -> 'BF16'."""
    if name in ("bool", "bf16"):
        return name.upper()
    prefix = {"f": "FP", "i": "INT", "u": "UINT"}.get(name[0])
    return f"{prefix}{name[1:]}" if prefix else name.upper()


@router.get("/v2/health/live")
async def live() -> JSONResponse:
    return JSONResponse({"live": True})


@router.get("/v2/health/ready")
async def ready(request: Request) -> JSONResponse:
    """Ready when the engine answers; models load on demand, so none needs to be resident."""
    request.app.state.nxe.engine.stats()
    return JSONResponse({"ready": True})


@router.get("/v2")
async def server_metadata(request: Request) -> JSONResponse:
    from .. import __version__

    return JSONResponse({"name": "nxe", "version": __version__,
                         "extensions": ["binary_tensor_data"]})


@router.get("/v2/models/{name:path}/ready")
async def model_ready(name: str, request: Request) -> JSONResponse:
    """200 unless the model's last load failed (503 then, with the reason)."""
    info = request.app.state.nxe.find_model(name, request)
    if info.state == "failed":
        return JSONResponse({"name": name, "ready": False, "error": info.error},
                            status_code=503)
    return JSONResponse({"name": name, "ready": True, "state": info.state})


@router.get("/v2/models/{name:path}/versions/{version}")
async def model_version_metadata(name: str, version: str, request: Request) -> JSONResponse:
    return await model_metadata(name, request)


@router.get("/v2/models/{name:path}")
async def model_metadata(name: str, request: Request) -> JSONResponse:
    state = request.app.state.nxe
    info = state.find_model(name, request)
    describe = kinds.describer_for(info.kind)
    inputs: list[kinds.TensorSpec] = []
    outputs: list[kinds.TensorSpec] = []
    if describe is not None:
        spec = next((each for each in state.config.models if each.name == name), None)
        if spec is not None:
            try:
                inputs, outputs = await asyncio.to_thread(_described, describe, spec,
                                                          info.fingerprint)
            except (nxe_errors.Error, OSError) as error:
                raise ApiError(503, f"model '{name}' cannot be described: {error}") from None
    return JSONResponse({
        "name": name, "versions": ["1"], "platform": f"nxe_{info.kind}",
        "inputs": [_tensor_json(each) for each in inputs],
        "outputs": [_tensor_json(each) for each in outputs],
    })


def _tensor_json(spec: kinds.TensorSpec) -> dict[str, Any]:
    return {"name": spec.name, "datatype": spec.datatype, "shape": list(spec.shape)}


_described_cache: dict[tuple[str, str, str], tuple[list, list]] = {}


def _described(describe: kinds.Describer, spec: Any, fingerprint: str) -> tuple[list, list]:
    """describe(spec), once per model file (the fingerprint tells when it changed)."""
    key = (spec.kind, str(spec.path), fingerprint)
    if key not in _described_cache:
        _described_cache[key] = describe(spec)
    return _described_cache[key]


def _describe_tensor_model(spec: Any) -> tuple[list[kinds.TensorSpec], list[kinds.TensorSpec]]:
    """A tensor model's inputs and outputs as its compiled graph declares them."""
    with Model(spec.path) as model:
        graph = model.graph()
    executable = graph.compile(threads=1)

    def specs(ios: list) -> list[kinds.TensorSpec]:
        return [kinds.TensorSpec(name, _datatype_of_nxe(dtype),
                                 tuple(-1 if d is None or d < 0 else int(d) for d in shape))
                for name, shape, dtype in ios]

    try:
        return specs(executable.inputs), specs(executable.outputs)
    finally:
        executable.close()


def _describe_super_resolution(spec: Any) -> tuple[list[kinds.TensorSpec], list[kinds.TensorSpec]]:
    image = kinds.TensorSpec("image", "UINT8", (-1, -1, -1))
    return [image], [image]


kinds.register_describer("tensor", _describe_tensor_model)
kinds.register_describer("super_resolution", _describe_super_resolution)


# ---- inference ----


def _split_body(body: bytes, header_length: str | None) -> tuple[bytes, bytes]:
    if header_length is None:
        return body, b""
    if not header_length.isdigit() or int(header_length) > len(body):
        raise bad_request(f"Inference-Header-Content-Length {header_length!r} does not fit a "
                          f"body of {len(body)} bytes")
    split = int(header_length)
    return body[:split], body[split:]


def _input_array(tensor: InferInput, binary: memoryview | None, state: Any) -> np.ndarray:
    dtype = DATATYPES.get(tensor.datatype)
    if dtype is None:
        raise bad_request(f"input '{tensor.name}': datatype {tensor.datatype!r} is not served; "
                          f"use one of {', '.join(DATATYPES)}")
    if any(d < 0 for d in tensor.shape):
        raise bad_request(f"input '{tensor.name}': shape {tensor.shape} has a negative size")
    count = math.prod(tensor.shape)
    state.check_input_length(tensor.name, count, "elements")
    if binary is not None:
        if len(binary) != count * dtype.itemsize:
            raise bad_request(f"input '{tensor.name}': {len(binary)} bytes of binary data, "
                              f"shape {tensor.shape} of {tensor.datatype} needs "
                              f"{count * dtype.itemsize}")
        return np.frombuffer(binary, dtype.newbyteorder("<")).astype(dtype).reshape(tensor.shape)
    if tensor.data is None:
        raise bad_request(f"input '{tensor.name}' has no data")
    try:
        values = np.asarray(tensor.data)
    except ValueError as error:  # ragged nesting
        raise bad_request(f"input '{tensor.name}': data is not a tensor: {error}") from None
    if values.size != count:
        raise bad_request(f"input '{tensor.name}': {values.size} values, shape {tensor.shape} "
                          f"needs {count}")
    if values.size and values.dtype.kind not in _ACCEPTS[dtype.kind]:
        raise bad_request(f"input '{tensor.name}': {tensor.datatype} data must be "
                          f"{'booleans' if dtype.kind == 'b' else 'numbers'}, got "
                          f"{_json_kind(values)}")
    if values.size and dtype.kind in "ui":
        info = np.iinfo(dtype)
        if values.min() < info.min or values.max() > info.max:
            raise bad_request(f"input '{tensor.name}': values outside the range of "
                              f"{tensor.datatype}")
    return values.astype(dtype).reshape(tensor.shape)


def _json_kind(values: np.ndarray) -> str:
    return {"U": "strings", "S": "strings", "O": "mixed values", "f": "non-integers",
            "b": "booleans"}.get(values.dtype.kind, str(values.dtype))


def _inputs(request_body: InferRequest, binary: bytes, state: Any) -> dict[str, np.ndarray]:
    state.check_input_count(len(request_body.inputs))
    arrays: dict[str, np.ndarray] = {}
    offset = 0
    view = memoryview(binary)
    for tensor in request_body.inputs:
        if tensor.name in arrays:
            raise bad_request(f"input '{tensor.name}' is given twice")
        size = tensor.parameters.get("binary_data_size")
        chunk = None
        if size is not None:
            if not isinstance(size, int) or isinstance(size, bool) or size < 0 or \
                    offset + size > len(binary):
                raise bad_request(f"input '{tensor.name}': binary_data_size {size!r} does not "
                                  f"fit the {len(binary) - offset} bytes left")
            chunk = view[offset:offset + size]
            offset += size
        arrays[tensor.name] = _input_array(tensor, chunk, state)
    if offset != len(binary):
        raise bad_request(f"{len(binary) - offset} bytes of binary data belong to no input")
    return arrays


def _answer(name: str, body: InferRequest, outputs: dict[str, np.ndarray]) -> Response:
    wanted = body.outputs
    if wanted is None:
        chosen = [(each, {}) for each in outputs]
    else:
        chosen = [(each.name, each.parameters) for each in wanted]
        for each, _ in chosen:
            if each not in outputs:
                raise bad_request(f"model '{name}' has no output '{each}'; it has "
                                  f"{', '.join(outputs)}")
    binary_default = bool(body.parameters.get("binary_data_output", False))
    described = []
    blobs = []
    for each, parameters in chosen:
        array = outputs[each]
        datatype = _NAMES.get(array.dtype)
        if datatype is None:
            raise ApiError(500, f"output '{each}' has dtype {array.dtype}, which the protocol "
                           "cannot carry", type="server_error")
        entry: dict[str, Any] = {"name": each, "datatype": datatype, "shape": list(array.shape)}
        if parameters.get("binary_data", binary_default):
            blob = np.ascontiguousarray(array, array.dtype.newbyteorder("<")).tobytes()
            entry["parameters"] = {"binary_data_size": len(blob)}
            blobs.append(blob)
        else:
            entry["data"] = array.ravel().tolist()
        described.append(entry)
    result: dict[str, Any] = {"model_name": name, "model_version": "1", "outputs": described}
    if body.id is not None:
        result["id"] = body.id
    header = json.dumps(result, separators=(",", ":")).encode()
    if not blobs:
        return Response(header, media_type="application/json")
    return Response(header + b"".join(blobs), media_type="application/octet-stream",
                    headers={"Inference-Header-Content-Length": str(len(header))})


@router.post("/v2/models/{name:path}/versions/{version}/infer")
async def infer_version(name: str, version: str, request: Request) -> Response:
    return await infer(name, request)


@router.post("/v2/models/{name:path}/infer")
async def infer(name: str, request: Request) -> Response:
    state = request.app.state.nxe
    raw = await request.body()
    state.find_model(name, request)
    body, inputs = await off_loop(len(raw), _parse, raw, request.headers.get(HEADER_LENGTH),
                                  state)
    outputs = await state.infer(name, inputs, request)
    size = sum(array.nbytes for array in outputs.values())
    return await off_loop(size * 4, _answer, name, body, outputs)  # JSON text: ~4x the bytes


def _parse(raw: bytes, header_length: str | None,
           state: Any) -> tuple[InferRequest, dict[str, np.ndarray]]:
    header, binary = _split_body(raw, header_length)
    body = parse_json(header, InferRequest)
    return body, _inputs(body, binary, state)

