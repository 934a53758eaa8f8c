"""``ctx_gain``: the token savings measured from the log (``leanctx.projections.savings``)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta

from ..registry import Caller, tool


class GainArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    by: Annotated[list[str], Meta(description="agent|tool|mode|family|ext|day")] = msgspec.field(
        default_factory=lambda: ["tool"])
    days: int | None = None
    agent: Annotated[str | None, Meta(description="an agent id, or me")] = None


def _row(label: str, r: Any) -> str:
    pct = "-" if r.savings_pct is None else f"{r.savings_pct:.1f}%"
    bounces = f", {r.bounces} bounce{'s' if r.bounces != 1 else ''} ({r.wasted_tokens:,} wasted)" if r.bounces else ""
    return (f"{label}: {r.calls} calls, raw {r.raw_tokens:,} → sent {r.sent_tokens:,}, "
            f"saved {r.saved_tokens:,} ({pct}){bounces}")


@tool("ctx_gain", category="metrics", args=GainArgs, description="""
Token savings measured from the log (saved = raw − sent), grouped by the given dimensions.""")
def ctx_gain(lc: Any, caller: Caller, a: GainArgs) -> dict[str, Any]:
    from ...projections import savings as sv

    conn = lc.projections.reader("savings")
    agent = caller.agent_id if a.agent == "me" else a.agent
    end = sv.last_day(conn)
    since = sv.day_range(end, a.days)[0] if (end and a.days) else None
    rep = sv.report(conn, since=since, agent=agent, by=a.by or ["tool"])
    lines = [_row(" × ".join(str(v) for v in r.group.values()), r) for r in rep.rows]
    lines.append(_row("total", rep.totals))
    return {"text": "\n".join(lines), "report": rep}
