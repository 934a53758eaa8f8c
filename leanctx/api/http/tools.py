"""Every tool of the registry over HTTP: ``POST /v1/tools/{name}`` (body = the tool's args).

The route is derived from ``leanctx/api/registry.py``, so a tool family added there is reachable
over HTTP with no change here (the MCP server serves the same table). The tool runs as the agent
of the ``X-Agent-Token``, in the conversation of ``X-Session-Id``, in the server's project. Calls
that run commands or write files (``ctx_shell``, ``ctx_edit``, ``ctx_handoff create out=``, and
``ctx_call`` naming one of them) follow the server's exec policy, like the dedicated routes in
``context.py``: the caller carries it and the registry refuses them (``403 HTTP_EXEC_DISABLED``,
``registry.ExecDisabled``), as it does over ``/mcp``.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ..registry import Caller, call, get
from .bodies import json_body
from .responses import JSON
from .routes import AGENT, Param, RouteSpec
from .security import require_agent
from .state import session_of, srv


async def run_tool(request: Request) -> Response:
    st = srv(request)
    agent = require_agent(request, st.tokens)
    name = request.path_params["name"]
    tool = get(name)  # TOOL_UNKNOWN (404-class) for a name the registry does not hold
    body: Any = await json_body(request, st.config.max_body_bytes)
    caller = Caller(agent_id=agent, session_id=session_of(request), project=str(st.project_root),
                    allow_exec=st.config.exec_allowed())
    return JSON(await st.run(call, st.lc, caller, tool.name, body))


ROUTES = [
    RouteSpec(
        "POST", "/v1/tools/{name}", run_tool,
        "Call any tool of the registry (ctx_read, ctx_agent, ctx_task, ...) with its arguments as the body.",
        "tools", auth=AGENT,
        params=(Param("name", where="path", required=True, description="The tool's name, e.g. ctx_read."),),
        operation_id="call_tool",
    ),
]
