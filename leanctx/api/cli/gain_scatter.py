"""The scatter warning of ``lean-ctx gain``: a report made mostly of one-call default agents.

Without ``$LEAN_CTX_AGENT_ID`` a CLI call's agent is ``local-<pid of its parent>``
(``leanctx.identity``), and without ``$LEAN_CTX_SESSION_ID`` / ``--session`` it is a conversation
of its own. A harness that runs each command in a fresh shell (most agent bash tools) so makes
every call a new agent with one call: an expansion never offsets the deferral of the capped
answer it continues, an unchanged re-read never becomes a stub, bounces are never seen, and the
figures scatter over as many agents as calls. When such agents (``local-<digits>``, one call
each) hold more than half of the report's calls, and there are at least ``MIN_AGENTS`` of them,
``gain`` says so in one line (``scatter`` in ``--json``).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

__all__ = ["MIN_AGENTS", "Scatter", "scatter"]

MIN_AGENTS = 3
_DEFAULT_AGENT = re.compile(r"local-\d+")


class Scatter(msgspec.Struct, frozen=True):
    agents: int  # one-call default agents
    calls: int  # their calls (one each)
    total_calls: int  # every call of the report
    message: str


def scatter(conn: Any, *, since: str | None, agent: str | None, total_calls: int) -> Scatter | None:
    """The warning for the report over ``since`` / ``agent``, or None when it does not apply."""
    from ...projections import savings as sv

    if total_calls <= 0:
        return None
    rows = sv.report(conn, since=since, agent=agent, by=("agent",)).rows
    lone = [r for r in rows if r.calls == 1 and _DEFAULT_AGENT.fullmatch(r.group.get("agent", "") or "")]
    n = len(lone)
    if n < MIN_AGENTS or 2 * n <= total_calls:
        return None
    message = (f"note: {n:,} of {total_calls:,} calls came from {n:,} one-call default agents (local-<pid>): without"
               " LEAN_CTX_AGENT_ID each CLI call from a fresh shell is a new agent and conversation, so expansions"
               " never offset deferrals, re-reads never become stubs and these figures scatter; set"
               " LEAN_CTX_AGENT_ID (and LEAN_CTX_SESSION_ID or --session) for the calls of one agent")
    return Scatter(agents=n, calls=n, total_calls=total_calls, message=message)
