"""The scatter warning of ``lean-ctx gain``: a report made mostly of short-lived default agents.

Without ``$LEAN_CTX_AGENT_ID`` a CLI call's agent is ``local-<pid of its parent>``
(``leanctx.identity``), and without ``$LEAN_CTX_SESSION_ID`` / ``--session`` it is a conversation
of its own. A harness that runs each command in a fresh shell (most agent bash tools) so makes
every call a new agent with one call: an expansion never offsets the deferral of the capped
answer it continues, an unchanged re-read never becomes a stub, bounces are never seen, and the
figures scatter over as many agents as shells. A shell may run a few calls (``bash -c "lean-ctx
read a; lean-ctx read b"``): its agent is then short-lived, not one-call, and scatters as much.
When such agents (``local-<digits>``, at most ``MAX_SHORT_CALLS`` calls each) hold more than half
of the report's calls, and there are at least ``MIN_AGENTS`` of them, ``gain`` says so in one line
(``scatter`` in ``--json``: ``agents``, their ``calls``, ``total_calls``, ``message``).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

__all__ = ["MAX_SHORT_CALLS", "MIN_AGENTS", "Scatter", "scatter"]

MIN_AGENTS = 3
MAX_SHORT_CALLS = 5  # a default agent with at most this many calls is short-lived (a shell's few commands)
_DEFAULT_AGENT = re.compile(r"local-\d+")


class Scatter(msgspec.Struct, frozen=True):
    agents: int  # short-lived default agents
    calls: int  # their calls
    total_calls: int  # every call of the report
    message: str


def scatter(conn: Any, *, since: str | None, agent: str | None, total_calls: int) -> Scatter | None:
    """The warning for the report over ``since`` / ``agent``, or None when it does not apply."""
    from ...projections import savings as sv

    if total_calls <= 0:
        return None
    rows = sv.report(conn, since=since, agent=agent, by=("agent",)).rows
    short = [r for r in rows if 0 < r.calls <= MAX_SHORT_CALLS
             and _DEFAULT_AGENT.fullmatch(r.group.get("agent", "") or "")]
    n, calls = len(short), sum(r.calls for r in short)
    if n < MIN_AGENTS or 2 * calls <= total_calls:
        return None
    most = max(r.calls for r in short)
    who = ("one-call default agents" if most == 1 else
           f"short-lived default agents ({most} calls at most each)")
    message = (f"note: {calls:,} of {total_calls:,} calls came from {n:,} {who} (local-<pid>): without"
               " LEAN_CTX_AGENT_ID the CLI calls of each fresh shell are a new agent and conversation, so expansions"
               " never offset deferrals, re-reads never become stubs and these figures scatter; set"
               " LEAN_CTX_AGENT_ID (and LEAN_CTX_SESSION_ID or --session) for the calls of one agent")
    return Scatter(agents=n, calls=calls, total_calls=total_calls, message=message)
