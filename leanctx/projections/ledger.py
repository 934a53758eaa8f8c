"""The per-agent context ledger: what each agent put into its context and did.

One row per (agent, area, item), where area is:

- ``tool``: ``tool.called`` records of the agent's dispatches (item: the command name):
  calls, errors, total duration;
- ``tokens``: ``budget.consumed`` (item: the tool that spent them): calls and tokens.

It is ready for the context engine's kinds: to fold ``file.read`` (area ``read``, item: the
path), ``cache.*`` (area ``cache``, item: the cache key) and ``knowledge.*`` (area
``knowledge``, item: the key), add the kinds to ``kinds``, a branch in ``apply`` that calls
``_bump(conn, agent, area, item, ts, ...)``, and bump ``version`` (the ledger is then
rebuilt from the log at the next open).

Privacy: the only query, ``ledger_for(conn, caller)``, takes the *caller's* identity and
returns that caller's rows; naming another agent is refused with ``LEDGER_FORBIDDEN``.
There is deliberately no function that reads another agent's ledger.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..errors import CommandError, InvalidInput
from ..events import StoredEvent
from ..events.kinds.budget import BudgetConsumed
from ..events.kinds.tool import ToolCalled
from .base import Projection

ANONYMOUS = "anonymous"


class LedgerEntry(msgspec.Struct, frozen=True):
    area: str  # tool | tokens (later: read | cache | knowledge)
    item: str
    count: int
    errors: int
    duration_ms: float
    tokens: int
    first_ts: str
    last_ts: str


class LedgerView(msgspec.Struct, frozen=True):
    agent_id: str
    entries: list[LedgerEntry]
    calls: int  # tool calls in total
    errors: int
    duration_ms: float
    tokens: int


class Ledger(Projection):
    name = "ledger"
    version = 1
    kinds = frozenset({"tool.called", "budget.consumed"})
    consistency = "eventual"  # nothing decides on it: it catches up before it is read
    tables = {
        "ledger": """CREATE TABLE IF NOT EXISTS ledger (
            agent_id    TEXT NOT NULL,
            area        TEXT NOT NULL,
            item        TEXT NOT NULL,
            count       INTEGER NOT NULL,
            errors      INTEGER NOT NULL,
            duration_ms REAL NOT NULL,
            tokens      INTEGER NOT NULL,
            first_ts    TEXT NOT NULL,
            last_ts     TEXT NOT NULL,
            PRIMARY KEY (agent_id, area, item)
        )""",
    }

    def apply(self, conn: Any, event: StoredEvent) -> None:
        ev = event.data()
        if isinstance(ev, ToolCalled):
            _bump(conn, event.actor or ANONYMOUS, "tool", ev.command, event.ts,
                  errors=1 if ev.outcome == "error" else 0, duration_ms=ev.duration_ms)
        elif isinstance(ev, BudgetConsumed):
            _bump(conn, ev.agent_id, "tokens", ev.tool, event.ts, tokens=ev.tokens)


def _bump(conn: Any, agent_id: str, area: str, item: str, ts: str, *, errors: int = 0, duration_ms: float = 0.0,
          tokens: int = 0) -> None:
    conn.execute(
        "INSERT INTO ledger (agent_id, area, item, count, errors, duration_ms, tokens, first_ts, last_ts)"
        " VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?) ON CONFLICT(agent_id, area, item) DO UPDATE SET"
        " count = count + 1, errors = errors + excluded.errors, duration_ms = duration_ms + excluded.duration_ms,"
        " tokens = tokens + excluded.tokens, last_ts = excluded.last_ts",
        (agent_id, area, item, errors, float(duration_ms), tokens, ts, ts),
    )


def ledger_for(conn: Any, caller: str, *, agent: str | None = None, area: str | None = None) -> LedgerView:
    """The ledger of ``caller`` — the identity of whoever asks, never anyone else's.

    ``agent``, when given, must be the caller (``LEDGER_FORBIDDEN`` otherwise): surfaces that
    accept an agent name pass it here so that asking for another agent's ledger fails loudly.
    """
    if not caller or not caller.strip():
        raise InvalidInput("LEDGER_NO_IDENTITY", "reading a ledger needs the caller's identity ($LEAN_CTX_AGENT_ID)")
    if agent is not None and agent != caller:
        raise CommandError(
            "LEDGER_FORBIDDEN",
            f"{caller} asked for the ledger of {agent}; an agent can only read its own ledger",
            caller=caller,
        )
    sql = ("SELECT area, item, count, errors, duration_ms, tokens, first_ts, last_ts FROM ledger"
           " WHERE agent_id = ?")
    params: list[Any] = [caller]
    if area is not None:
        sql += " AND area = ?"
        params.append(area)
    entries = [LedgerEntry(*r) for r in conn.execute(sql + " ORDER BY area, count DESC, item", params)]
    tools = [e for e in entries if e.area == "tool"]
    return LedgerView(
        caller,
        entries,
        sum(e.count for e in tools),
        sum(e.errors for e in tools),
        round(sum(e.duration_ms for e in tools), 3),
        sum(e.tokens for e in entries),
    )
