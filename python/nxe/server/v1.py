"""The OpenAI-compatible routes (/v1): the model list, and the routes whose work depends on the
model's kind (embeddings, transcriptions, upscaling), dispatched through nxe.server.kinds."""

from __future__ import annotations

import numpy as np
from fastapi import APIRouter, Request
from starlette.datastructures import UploadFile
from starlette.responses import JSONResponse, Response

from .. import images
from . import kinds
from .bridge import off_loop
from .errors import ApiError, bad_request
from .schemas import (
    EmbeddingsRequest,
    ModelCard,
    ModelList,
    TranscriptionRequest,
    parse_json,
    validate,
)

router = APIRouter()

EMBEDDINGS = "/v1/embeddings"
TRANSCRIPTIONS = "/v1/audio/transcriptions"
UPSCALE = "/v1/upscale"


def _card(state, info) -> ModelCard:
    return ModelCard(id=info.name, created=state.created.get(info.name, state.started),
                     kind=info.kind, state=info.state, idle_s=info.idle_s,
                     resident_bytes=info.resident_bytes)


@router.get("/v1/models")
async def list_models(request: Request) -> JSONResponse:
    state = request.app.state.nxe
    cards = [_card(state, info) for info in state.engine.models()]
    return JSONResponse(ModelList(data=cards).model_dump())


@router.get("/v1/models/{name:path}")
async def retrieve_model(name: str, request: Request) -> JSONResponse:
    state = request.app.state.nxe
    return JSONResponse(_card(state, state.find_model(name, request)).model_dump())


@router.post(EMBEDDINGS)
async def embeddings(request: Request) -> Response:
    state = request.app.state.nxe
    body = parse_json(await request.body(), EmbeddingsRequest)
    texts = body.texts()
    state.check_input_count(len(texts))
    for index, text in enumerate(texts):
        state.check_input_length(f"input[{index}]", len(text),
                                 "characters" if isinstance(text, str) else "tokens")
    info = state.find_model(body.model, request)
    handler = kinds.handler_for(EMBEDDINGS, body.model, info.kind)
    return await handler(state, request, body.model, body)


async def _form(request: Request) -> dict[str, object]:
    """A multipart (or urlencoded) form's fields; file fields as UploadFile."""
    try:
        form = await request.form(max_files=4, max_fields=32)
    except AssertionError as error:  # Starlette's answer when python-multipart is missing
        raise ApiError(500, str(error), type="server_error") from None
    return dict(form.multi_items())


@router.post(TRANSCRIPTIONS)
async def transcriptions(request: Request) -> Response:
    state = request.app.state.nxe
    fields = await _form(request)
    upload = fields.pop("file", None)
    if not isinstance(upload, UploadFile):
        raise bad_request("the form needs the audio file in its 'file' field", param="file")
    fields["file"] = await upload.read()
    fields["filename"] = upload.filename or ""
    body = validate(fields, TranscriptionRequest)
    info = state.find_model(body.model, request)
    handler = kinds.handler_for(TRANSCRIPTIONS, body.model, info.kind)
    return await handler(state, request, body.model, body)


@router.post(UPSCALE)
async def upscale(request: Request) -> Response:
    """An image (PNG or JPEG) in, the upscaled image as PNG out. The image is the body itself
    (model in the query: /v1/upscale?model=espcn-x2) or a multipart form's 'image' (or 'file')
    field beside a 'model' field."""
    state = request.app.state.nxe
    model = request.query_params.get("model")
    content_type = request.headers.get("content-type", "")
    # Only multipart is a form: `curl --data-binary @photo.png` labels the raw image
    # application/x-www-form-urlencoded.
    if content_type.startswith("multipart/form-data"):
        fields = await _form(request)
        upload = fields.get("image", fields.get("file"))
        if not isinstance(upload, UploadFile):
            raise bad_request("the form needs the image file in its 'image' field",
                              param="image")
        data = await upload.read()
        field_model = fields.get("model")
        if field_model is not None and not isinstance(field_model, str):
            raise bad_request("'model' must be a text field", param="model")
        model = field_model or model
    else:
        data = await request.body()
    if not model:
        raise bad_request("name the model: ?model=... or a 'model' form field", param="model")
    if not data:
        raise bad_request("the request holds no image", param="image")
    info = state.find_model(model, request)
    return await kinds.handler_for(UPSCALE, model, info.kind)(state, request, model, data)


def _decode(data: bytes, max_bytes: int) -> np.ndarray:
    """The upload as uint8 RGB or RGBA; gray images are repeated in R, G and B. The decoded
    image may hold max_body_bytes bytes, checked from the header before decoding."""
    image = images.decode_image(data, "image", max_pixels=max(1, max_bytes // 3))
    if image.ndim == 2:
        image = np.repeat(image[:, :, None], 3, axis=2)
    if image.nbytes > max_bytes:
        raise ApiError(413, f"the image decodes to {image.nbytes} bytes, more than "
                       f"max_body_bytes ({max_bytes})", code="image_too_large")
    return image


async def super_resolution(state, request: Request, model: str, data: bytes) -> Response:
    """/v1/upscale for the super_resolution kind."""
    try:
        image = await off_loop(len(data), _decode, data, state.config.server.max_body_bytes)
    except images.ImageFileError as error:
        raise bad_request(str(error), param="image", code="invalid_image") from None
    outputs = await state.infer(model, {"image": image}, request)
    upscaled = outputs["image"]
    png = await off_loop(upscaled.nbytes, images.encode_png, upscaled)
    return Response(png, media_type="image/png")


kinds.register(UPSCALE, "super_resolution", super_resolution)
