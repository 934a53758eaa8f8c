"""Every tool of the registry over HTTP: ``POST /v1/tools/{name}`` (body = the tool's args).

The route is derived from ``leanctx/api/registry.py``, so a tool family added there is reachable
over HTTP with no change here (the MCP server serves the same table). The tool runs as the agent
of the ``X-Agent-Token``, in the conversation of ``X-Session-Id``, in the server's project. Tools
that run commands or write files (``ctx_shell``, ``ctx_edit``) follow the server's exec policy,
like their dedicated routes in ``context.py``.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ..registry import Caller, call, get
from .bodies import json_body
from .responses import JSON, HttpError
from .routes import AGENT, Param, RouteSpec
from .security import require_agent
from .state import session_of, srv

EXEC_TOOLS = frozenset({"ctx_shell", "ctx_edit"})


async def run_tool(request: Request) -> Response:
    st = srv(request)
    agent = require_agent(request, st.tokens)
    name = request.path_params["name"]
    tool = get(name)  # TOOL_UNKNOWN (404-class) for a name the registry does not hold
    if tool.name in EXEC_TOOLS and not st.config.exec_allowed():
        raise HttpError(403, "HTTP_EXEC_DISABLED",
                        f"{name} runs commands or writes files, which this server does not allow "
                        "(start it with --allow-exec)")
    body: Any = await json_body(request, st.config.max_body_bytes)
    caller = Caller(agent_id=agent, session_id=session_of(request), project=str(st.project_root))
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
