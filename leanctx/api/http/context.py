"""Context actions over HTTP (read, search, tree, expand, shell, edit) and the summary.

They run the same operations as the CLI and MCP (``leanctx/ops``), as the agent of the
``X-Agent-Token``, always in the **server's** project root (an agent's registered project root
names its registry group, never where files are read): paths are jailed there by the
operations. Secrets are redacted (``raw`` reads are not served over HTTP).

``shell`` runs a command and ``edit`` writes a file, so they are served only when the server
allows it (``allow_exec``: by default on a loopback bind, off beyond it; ``--allow-exec`` /
``--no-exec``); otherwise ``403 HTTP_EXEC_DISABLED``. Whoever holds the bearer token of a
server with exec allowed can run commands as the server's user: the same power as the MCP
tools mounted at ``/mcp``. ``shell`` shares the MCP tool's rules (``leanctx.api.tools.context``):
the default and maximum timeout, ``env`` (``NAME=VALUE`` items, ``SHELL_INVALID_ENV``) and the
``cwd`` jail (``SHELL_CWD_OUTSIDE_PROJECT``) and ``SHELL_EMPTY_COMMAND`` for nothing to run (a
blank string, an empty argv or one whose program is empty).

Bodies are read as the MCP tools' arguments are: a field unknown (a typo such as
``max_token``), missing or of the wrong type is ``422 INVALID_ARGUMENT`` naming it, and the
refusals of the operations are theirs (``max_tokens`` 0: ``READ_INVALID_CAP`` for read,
``EXPAND_INVALID_COUNT`` for expand, as on every surface). ``tree`` has the defaults of
``ctx_tree`` and ``lean-ctx tree`` (``ops.tree``: depth 2, 40 entries per folder); its answer
is capped as a whole JSON answer (entries included, like ``lean-ctx tree --json``) and a capped
listing is archived whole (``archive_id``, and the notice names the ``expand`` that continues it)
and recorded as the agent (``tree.record``: ``archive.created`` with source ``tree``).

Token counts (read, search, tree, expand, shell) use ``$LEAN_CTX_MODEL`` of the server's environment
(a model name or an encoding spec; default ``o200k_base``), as for any caller without an MCP
session; the events record it in their ``encoding`` field.

``GET /v1/context/summary``: savings totals (the ``gain`` report), agents by status, open
tasks, and the log's head.
"""

from __future__ import annotations

from typing import Any, Union

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from ...errors import InvalidInput
from ...ops.tree import DEFAULT_DEPTH as TREE_DEFAULT_DEPTH
from ...ops.tree import DEFAULT_MAX_ENTRIES as TREE_DEFAULT_MAX_ENTRIES
from ...projections.agents import list_agents, status_counts
from ...projections.savings import SavingsRow, report
from ...projections.tasks import STATUSES, TERMINAL, list_tasks
from ..tools.context import (
    DEFAULT_SHELL_TIMEOUT,
    MAX_SHELL_TIMEOUT,  # noqa: F401 - the limit HTTP applies, re-exported beside the default
    check_shell_target,
    check_shell_timeout,
    encoding_of,
    env_pairs,
    shell_cwd,
)
from .bodies import json_body
from .responses import JSON, HttpError
from .routes import AGENT, RouteSpec
from .security import require_agent
from .state import ServerState, session_of, srv


class _Body(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    pass


class ReadBody(_Body):
    paths: Union[list[str], str]
    mode: str = "auto"
    fresh: bool = False
    task: str | None = None
    intent: str | None = None
    max_tokens: int | None = None


class SearchBody(_Body):
    query: str
    method: str = "auto"
    limit: int = 20
    glob: str | None = None


class TreeBody(_Body):
    path: str | None = None
    depth: int = TREE_DEFAULT_DEPTH
    max_entries: int = TREE_DEFAULT_MAX_ENTRIES


class ExpandBody(_Body):
    archive_id: str
    head: int | None = None
    tail: int | None = None
    lines: str | None = None
    grep: str | None = None
    max_tokens: int | None = None


class ShellBody(_Body):
    command: Union[list[str], str]  # an argv, or a string run with bash -c
    cwd: str | None = None  # inside the project (default: its root)
    timeout: float = DEFAULT_SHELL_TIMEOUT
    env: list[str] = []  # NAME=VALUE added to the environment the command inherits
    raw: bool = False  # uncompressed (secrets still redacted)
    max_tokens: int | None = None  # the answer cap (default 20,000; SHELL_INVALID_CAP outside its range)


class EditBody(_Body):
    path: str
    old: str
    new: str
    replace_all: bool = False
    allow_unread: bool = False


def _convert(body: dict[str, Any], body_type: type, route: str) -> Any:
    """The body as ``body_type``, converted as ``/v1/tools`` converts a tool's arguments
    (numbers and booleans given as strings are taken); a field unknown, missing or of the wrong
    type is ``422 INVALID_ARGUMENT`` naming it, as for ``/v1/tools`` and MCP."""
    try:
        return msgspec.convert(body, body_type, strict=False)
    except msgspec.ValidationError as exc:
        raise InvalidInput("INVALID_ARGUMENT", f"{route}: {exc}; see its body in /openapi.json") from None
    except (RecursionError, OverflowError, ValueError, TypeError) as exc:
        raise InvalidInput("INVALID_ARGUMENT", f"{route}: the body does not fit ({exc}); see /openapi.json") from None


async def _prepare(request: Request, body_type: type) -> tuple[ServerState, str, str | None, Any]:
    st = srv(request)
    agent = require_agent(request, st.tokens)
    body: Any = _convert(await json_body(request, st.config.max_body_bytes), body_type, request.url.path)
    return st, agent, session_of(request), body


async def read(request: Request) -> Response:
    from ...ops.read import read_files

    st, agent, session, b = await _prepare(request, ReadBody)
    paths = [b.paths] if isinstance(b.paths, str) else b.paths
    answers = await st.run(read_files, st.lc, paths, mode=b.mode, fresh=b.fresh, task=b.task, intent=b.intent,
                           raw=False, actor=agent, session_id=session, project=st.project_root, now=st.now(),
                           cap_tokens=b.max_tokens, encoding=encoding_of())
    return JSON({"files": answers})


async def search(request: Request) -> Response:
    from ...ops.search import search as run_search

    st, agent, session, b = await _prepare(request, SearchBody)
    ans = await st.run(run_search, st.lc, st.project_root, b.query, method=b.method, limit=b.limit, glob=b.glob,
                       actor=agent, session_id=session, now=st.now(), encoding=encoding_of())
    return JSON(ans)


async def tree(request: Request) -> Response:
    from ...ops.tree import archived_tree

    st, agent, session, b = await _prepare(request, TreeBody)
    lc = st.lc
    return JSON(await st.run(archived_tree, lc.db, st.project_root, b.path, depth=b.depth,
                             max_entries=b.max_entries, encoding=encoding_of(), as_json=True,
                             open_log=lambda: lc, actor=agent, session_id=session, project=st.project_root,
                             now=st.now()))


async def expand(request: Request) -> Response:
    from ...ops.shell import expand as run_expand

    st, agent, session, b = await _prepare(request, ExpandBody)
    return JSON(await st.run(run_expand, st.lc, b.archive_id, head=b.head, tail=b.tail, lines=b.lines, grep=b.grep,
                             max_tokens=b.max_tokens, actor=agent, session_id=session, project=st.project_root,
                             now=st.now(), encoding=encoding_of()))


def _exec_guard(st: ServerState) -> None:
    if not st.config.exec_allowed():
        raise HttpError(403, "HTTP_EXEC_DISABLED",
                        "this server does not run commands or edit files for remote callers; start it with"
                        " --allow-exec to serve shell and edit")


async def shell(request: Request) -> Response:
    from ...ops.shell import run_shell

    st = srv(request)
    _exec_guard(st)
    st, agent, session, b = await _prepare(request, ShellBody)
    command = check_shell_target(b.command)
    check_shell_timeout(b.timeout)
    env = env_pairs(b.env)
    cwd = shell_cwd(st.project_root, b.cwd)
    r = await st.run(run_shell, st.lc, command, cwd=cwd, timeout=b.timeout, env_passthrough=env, raw=b.raw,
                     actor=agent, session_id=session, project=st.project_root, now=st.now(),
                     encoding=encoding_of(), **({"cap_tokens": b.max_tokens} if b.max_tokens is not None else {}))
    return JSON({f: getattr(r, f) for f in r.__struct_fields__} | {"saved_tokens": r.saved_tokens})


async def edit(request: Request) -> Response:
    from ...ops.edit import edit_file

    st = srv(request)
    _exec_guard(st)
    st, agent, session, b = await _prepare(request, EditBody)
    return JSON(await st.run(edit_file, st.lc, st.project_root, b.path, b.old, b.new, replace_all=b.replace_all,
                             allow_unread=b.allow_unread, actor=agent, session_id=session, now=st.now()))


# --- summary ----------------------------------------------------------------------------------

class Summary(msgspec.Struct, kw_only=True):
    project_root: str
    head: int  # the log's last position
    savings: SavingsRow  # totals of the `lean-ctx gain` report
    savings_by_tool: list[SavingsRow]
    agents: dict[str, int]  # by status (active, idle, stale) and total
    open_tasks: int  # tasks neither done nor cancelled
    tasks: dict[str, int]  # by status


def summarize(st: ServerState) -> Summary:
    now = st.now()
    conn = st.reader("savings", "agents", "tasks")
    rep = report(conn, by=("tool",))
    agents = status_counts(list_agents(conn, now=now))
    tasks = {s: 0 for s in STATUSES}
    for t in list_tasks(conn, now=now):
        tasks[t.status] = tasks.get(t.status, 0) + 1
    open_tasks = sum(n for s, n in tasks.items() if s not in TERMINAL)
    return Summary(project_root=st.project_root, head=st.lc.store.head().position, savings=rep.totals,
                   savings_by_tool=rep.rows, agents=agents, open_tasks=open_tasks, tasks=tasks)


async def summary(request: Request) -> Response:
    st = srv(request)
    return JSON(await st.run(summarize, st))


TAG = "context"
ROUTES = [
    RouteSpec("GET", "/v1/context/summary", summary, "Savings totals, agents by status, open tasks, head.", TAG,
              response=Summary),
    RouteSpec("POST", "/v1/context/read", read, "Read files compressed (ctx_read).", TAG, auth=AGENT, body=ReadBody),
    RouteSpec("POST", "/v1/context/search", search, "Search the project (ctx_search).", TAG, auth=AGENT,
              body=SearchBody),
    RouteSpec("POST", "/v1/context/tree", tree, "The project's tree with folder counts (ctx_tree).", TAG, auth=AGENT,
              body=TreeBody),
    RouteSpec("POST", "/v1/context/expand", expand, "Expand an archive (ctx_expand).", TAG, auth=AGENT,
              body=ExpandBody),
    RouteSpec("POST", "/v1/context/shell", shell, "Run a command, compressed (ctx_shell); needs allow_exec.", TAG,
              auth=AGENT, body=ShellBody, extra={"x-requires": "allow_exec"}),
    RouteSpec("POST", "/v1/context/edit", edit, "Edit a file (ctx_edit); needs allow_exec.", TAG, auth=AGENT,
              body=EditBody, extra={"x-requires": "allow_exec"}),
]
