"""Administration (/admin, OpenAI's error format) and the Prometheus scrape (/metrics)."""

from __future__ import annotations

import dataclasses

from fastapi import APIRouter, Request
from starlette.responses import JSONResponse, Response

router = APIRouter()


@router.get("/admin/models")
async def admin_models(request: Request) -> JSONResponse:
    """Every field the engine reports of every model (and its file), and the engine's
    counts."""
    state = request.app.state.nxe
    paths = {model.name: model.path for model in state.config.models}
    entries = [{**dataclasses.asdict(info), "path": paths.get(info.name)}
               for info in state.engine.models()]
    return JSONResponse({"object": "list", "data": entries,
                         "stats": dataclasses.asdict(state.engine.stats())})


@router.post("/admin/reload")
async def admin_reload(request: Request) -> JSONResponse:
    """Re-reads the config file and reconciles the models (what SIGHUP does)."""
    return JSONResponse(await request.app.state.nxe.reload())


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    state = request.app.state.nxe
    return Response(state.metrics.render(), media_type=state.metrics.content_type)
