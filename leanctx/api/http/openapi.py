"""``GET /openapi.json``: OpenAPI 3.1, generated from the route table and the msgspec types
of the bodies and answers (``msgspec.json.schema_components``), so it cannot drift from the
routes the server has."""

from __future__ import annotations

import re
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from ... import __version__
from .responses import JSON
from .routes import AGENT, AGENT_OPTIONAL, PUBLIC, RouteSpec
from .state import srv

REF = "#/components/schemas/{name}"


class ErrorBody(msgspec.Struct):
    code: str
    message: str
    details: dict[str, Any] | None = None


class Error(msgspec.Struct):
    error: ErrorBody


def _param(p: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": p.type}
    if p.repeated:
        schema = {"type": "array", "items": schema}
    out: dict[str, Any] = {"name": p.name, "in": p.where, "required": p.required or p.where == "path",
                           "schema": schema}
    if p.description:
        out["description"] = p.description
    if p.repeated:
        out["style"], out["explode"] = "form", True
    return out


def _op_id(r: RouteSpec) -> str:
    """``GET /v1/events/lineage/{position}`` → ``get_v1_events_lineage_position``."""
    return re.sub(r"[^a-z0-9]+", "_", f"{r.method.lower()} {r.path}".lower()).strip("_")


def build(routes: list[RouteSpec], *, secured: bool, mcp: bool) -> dict[str, Any]:
    types: list[Any] = [Error]
    for r in routes:
        for t in (r.body, r.response):
            if t is not None and t not in types:
                types.append(t)
    schemas, components = msgspec.json.schema_components(types, ref_template=REF)
    ref = dict(zip(map(id, types), schemas))
    paths: dict[str, dict[str, Any]] = {}
    for r in routes:
        op: dict[str, Any] = {"summary": r.summary, "tags": [r.tag], "operationId": r.operation_id or _op_id(r)}
        params = [_param(p) for p in r.params]
        if r.auth in (AGENT, AGENT_OPTIONAL):
            params.append({"name": "X-Agent-Token", "in": "header", "required": r.auth == AGENT,
                           "schema": {"type": "string"},
                           "description": "the acting agent's token" + (" (narrows what is shown)"
                                                                         if r.auth == AGENT_OPTIONAL else "")})
        if r.body is not None:
            params += [{"name": "Idempotency-Key", "in": "header", "required": False, "schema": {"type": "string"}},
                       {"name": "X-Session-Id", "in": "header", "required": False, "schema": {"type": "string"}}]
            op["requestBody"] = {"required": True, "content": {"application/json": {"schema": ref[id(r.body)]}}}
        if params:
            op["parameters"] = params
        responses: dict[str, Any] = {}
        if r.sse:
            responses["200"] = {"description": "text/event-stream; `id:` is the log position",
                                "content": {"text/event-stream": {"schema": {"type": "string"}}}}
        elif r.response is not None:
            responses["200"] = {"description": "OK", "content": {"application/json": {"schema": ref[id(r.response)]}}}
        else:
            responses["200"] = {"description": "OK", "content": {r.content_type: {"schema": {}}}}
        err = {"content": {"application/json": {"schema": ref[id(Error)]}}}
        responses["4XX"] = {"description": "refused: the stable code says why", **err}
        op["responses"] = responses
        if r.auth == PUBLIC:
            op["security"] = []
        elif r.auth == AGENT:
            op["security"] = [{"bearer": [], "agentToken": []}] if secured else [{"agentToken": []}]
        op.update(r.extra)
        paths.setdefault(r.path, {})[r.method.lower()] = op
    doc: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "lean-ctx HTTP API", "version": __version__,
                 "description": "The command bus, the log and the projections of lean-ctx over HTTP. Errors are"
                                " {error: {code, message}} with a stable code."},
        "paths": paths,
        "components": {"schemas": components, "securitySchemes": {
            "bearer": {"type": "http", "scheme": "bearer", "description": "the server's token (--token)"},
            "agentToken": {"type": "apiKey", "in": "header", "name": "X-Agent-Token",
                           "description": "from POST /v1/agents/register"},
        }},
    }
    if secured:
        doc["security"] = [{"bearer": []}]
    if mcp:
        doc["x-mcp"] = {"path": "/mcp", "transport": "streamable-http"}
    return doc


async def openapi(request: Request) -> Response:
    st = srv(request)
    doc = request.app.state.openapi
    if doc is None:
        doc = request.app.state.openapi = build(request.app.state.route_specs, secured=st.config.token is not None,
                                                mcp=st.mcp_mounted)
    return JSON(doc)


ROUTES = [RouteSpec("GET", "/openapi.json", openapi, "This document.", "operations")]
