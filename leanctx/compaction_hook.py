"""What the PreCompact hook marks lost: the hook's own conversation, and the conversations of the
agents its client runs over MCP.

Claude Code runs the hook as a child (usually through a shell) of the process that is about to
compact; over stdio, the MCP server it spawned registered its agent with that same process as
``pid`` (``leanctx.api.mcp_server``: the client is the server's parent). So the live agents
registered on this host whose ``pid`` is an ancestor of the hook are the client's MCP
conversations, and their registered session is the conversation whose context goes. (An MCP
session reset by the ``context-reset`` prompt already has a new session id of its own: no stub
reaches it for anything sent before.)
"""

from __future__ import annotations

import os
import socket
from typing import Any


def ancestors(pid: int | None = None, limit: int = 32) -> list[int]:
    """The process ids above ``pid`` (default: this process), nearest first, from ``/proc``
    (empty where there is none)."""
    out: list[int] = []
    cur = os.getpid() if pid is None else pid
    for _ in range(limit):
        try:
            with open(f"/proc/{cur}/stat", "rb") as f:
                stat = f.read().decode("utf-8", "replace")
        except OSError:
            break
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        fields = stat[stat.rfind(")") + 2:].split()
        try:
            parent = int(fields[1])
        except (IndexError, ValueError):
            break
        if parent <= 1:
            break
        out.append(parent)
        cur = parent
    return out


def client_conversations(lc: Any, project: str, *, now: float, pids: list[int] | None = None) -> list[tuple[str, str]]:
    """(agent, session) of the live agents of ``project`` registered on this host by a process
    that is an ancestor of this one (``pids``: the ancestors to match, default ``ancestors()``)."""
    from .projections.agents import list_agents

    mine = set(ancestors() if pids is None else pids)
    if not mine:
        return []
    lc.projections.ensure_current(["agents"])
    host = socket.gethostname()
    return [(a.agent_id, a.session_id) for a in list_agents(lc.store.read_connection(), now=now, project_root=project)
            if a.pid in mine and a.host == host and a.session_id and a.status != "left"]
