"""Token budgets: each agent's limit (``agent_token_budget``, 0 = unlimited) and the tokens it
used since its last reset, in total and per tool.

``check_budget(conn, agent_id)`` is what read commands consult (through
``leanctx.commands.budgets.enforce_budget``): at 80 % the state carries a warning line to add
to tool responses; at 100 % reads are refused with ``BUDGET_EXCEEDED``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..events import StoredEvent
from ..events.kinds.budget import BudgetConsumed, BudgetRaised, BudgetReset, BudgetSet
from .base import Projection

WARNING_RATIO = 0.8  # at or above: a warning line on tool responses
# at or above 1.0 (used >= limit): reads are refused with BUDGET_EXCEEDED


class BudgetState(msgspec.Struct, frozen=True):
    limit: int  # agent_token_budget; 0 = unlimited
    used: int  # tokens used since the last reset
    ratio: float  # used / limit (0.0 when unlimited)
    level: str  # ok | warning | exceeded
    warning_line: str | None = None  # for tool responses, at warning and exceeded
    agent_id: str = ""

    @property
    def remaining(self) -> int | None:
        return None if self.limit == 0 else max(0, self.limit - self.used)


class ToolUsage(msgspec.Struct, frozen=True):
    tool: str
    tokens: int
    calls: int


class BudgetView(msgspec.Struct, frozen=True):
    agent_id: str
    agent_token_budget: int
    used: int
    remaining: int | None
    ratio: float
    level: str
    warning_line: str | None
    consumed_total: int  # every token ever recorded, across resets
    resets: int
    by_tool: list[ToolUsage]


class Budgets(Projection):
    name = "budgets"
    version = 1
    kinds = frozenset({"budget.set", "budget.raised", "budget.reset", "budget.consumed"})
    tables = {
        "budgets": """CREATE TABLE IF NOT EXISTS budgets (
            agent_id       TEXT PRIMARY KEY,
            token_limit    INTEGER NOT NULL,
            used           INTEGER NOT NULL,
            consumed_total INTEGER NOT NULL,
            resets         INTEGER NOT NULL,
            updated_at     TEXT NOT NULL
        )""",
        "budget_usage": """CREATE TABLE IF NOT EXISTS budget_usage (
            agent_id TEXT NOT NULL,
            tool     TEXT NOT NULL,
            tokens   INTEGER NOT NULL,
            calls    INTEGER NOT NULL,
            PRIMARY KEY (agent_id, tool)
        )""",
    }

    def _ensure(self, conn: Any, agent_id: str, ts: str) -> None:
        conn.execute(
            "INSERT INTO budgets (agent_id, token_limit, used, consumed_total, resets, updated_at)"
            " VALUES (?, 0, 0, 0, 0, ?) ON CONFLICT(agent_id) DO UPDATE SET updated_at = excluded.updated_at",
            (agent_id, ts),
        )

    def apply(self, conn: Any, event: StoredEvent) -> None:
        ev = event.data()
        if isinstance(ev, (BudgetSet, BudgetRaised)):
            self._ensure(conn, ev.agent_id, event.ts)
            conn.execute("UPDATE budgets SET token_limit = ? WHERE agent_id = ?", (ev.limit, ev.agent_id))
        elif isinstance(ev, BudgetReset):
            self._ensure(conn, ev.agent_id, event.ts)
            conn.execute("UPDATE budgets SET used = 0, resets = resets + 1 WHERE agent_id = ?", (ev.agent_id,))
            conn.execute("DELETE FROM budget_usage WHERE agent_id = ?", (ev.agent_id,))
        elif isinstance(ev, BudgetConsumed):
            self._ensure(conn, ev.agent_id, event.ts)
            conn.execute(
                "UPDATE budgets SET used = used + ?, consumed_total = consumed_total + ? WHERE agent_id = ?",
                (ev.tokens, ev.tokens, ev.agent_id),
            )
            conn.execute(
                "INSERT INTO budget_usage (agent_id, tool, tokens, calls) VALUES (?, ?, ?, 1)"
                " ON CONFLICT(agent_id, tool) DO UPDATE SET tokens = tokens + excluded.tokens, calls = calls + 1",
                (ev.agent_id, ev.tool, ev.tokens),
            )


def make_state(agent_id: str, limit: int, used: int) -> BudgetState:
    """The budget state of ``used`` tokens against ``limit`` (0 = unlimited)."""
    if limit <= 0:
        return BudgetState(0, used, 0.0, "ok", None, agent_id)
    ratio = round(used / limit, 4)
    if used >= limit:
        level = "exceeded"
        line = (f"token budget exceeded: {agent_id} used {used} of {limit} tokens ({used * 100 // limit}%);"
                f" reads are refused until it is raised or reset (`lean-ctx agent budget {agent_id} --raise N`"
                " or `--reset`)")
    elif used * 5 >= limit * 4:  # >= 80 %, in integers
        level = "warning"
        line = (f"token budget warning: {agent_id} used {used} of {limit} tokens ({used * 100 // limit}%);"
                " reads are refused at 100%")
    else:
        level, line = "ok", None
    return BudgetState(limit, used, ratio, level, line, agent_id)


def budget_row(conn: Any, agent_id: str) -> tuple[int, int, int, int]:
    """(limit, used, consumed_total, resets); zeros for an agent without a budget."""
    row = conn.execute(
        "SELECT token_limit, used, consumed_total, resets FROM budgets WHERE agent_id = ?", (agent_id,)
    ).fetchone()
    return (row[0], row[1], row[2], row[3]) if row else (0, 0, 0, 0)


def check_budget(conn: Any, agent_id: str) -> BudgetState:
    """``agent_id``'s budget now: level ok | warning (>= 80 %) | exceeded (>= 100 %)."""
    limit, used, _, _ = budget_row(conn, agent_id)
    return make_state(agent_id, limit, used)


def budget_view(conn: Any, agent_id: str) -> BudgetView:
    limit, used, total, resets = budget_row(conn, agent_id)
    st = make_state(agent_id, limit, used)
    tools = [
        ToolUsage(*r)
        for r in conn.execute(
            "SELECT tool, tokens, calls FROM budget_usage WHERE agent_id = ? ORDER BY tokens DESC, tool", (agent_id,)
        )
    ]
    return BudgetView(agent_id, limit, used, st.remaining, st.ratio, st.level, st.warning_line, total, resets, tools)
