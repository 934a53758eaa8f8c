"""The route table: every route is declared once, with what OpenAPI needs to describe it.

Each module exposes ``ROUTES: list[RouteSpec]``; ``app`` builds Starlette routes from them and
``openapi`` the document, so the two never disagree.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

Endpoint = Callable[[Request], Awaitable[Response]]

# who may call a route
PUBLIC = "public"  # no credentials at all (/health)
SERVER = "server"  # the bearer token when the server has one
AGENT = "agent"  # the bearer token (if any) and the acting agent's X-Agent-Token
AGENT_OPTIONAL = "agent-optional"  # X-Agent-Token narrows what is shown (directed events) when sent


@dataclass(frozen=True)
class Param:
    name: str
    where: str = "query"  # query | path | header
    type: str = "string"  # string | integer | number | boolean
    description: str = ""
    required: bool = False
    repeated: bool = False


@dataclass(frozen=True)
class RouteSpec:
    method: str
    path: str
    endpoint: Endpoint
    summary: str
    tag: str
    auth: str = SERVER
    body: Any = None  # a msgspec type for the JSON body
    response: Any = None  # a msgspec type for a 200 JSON answer
    params: tuple[Param, ...] = ()
    sse: bool = False
    content_type: str = "application/json"
    operation_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
