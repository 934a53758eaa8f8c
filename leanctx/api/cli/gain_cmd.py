"""``lean-ctx gain``: the savings report (tables per dimension, a per-day chart, totals).

Every token on record as sent to an agent counts as sent, a refused context call's error answer
too (``leanctx.projections.savings``: what is not on record, the resume block for one, is not
counted). The tables get a ``deferred`` column when a row has deferred tokens: the raw tokens of capped
reads left in their archive and not expanded since (``SavingsRow.deferred_tokens``), counted
neither as saved nor as sent. The tokenizer note names the encodings that counted, a
correction factor as ``×F`` (``cl100k_base*1.1`` → ``cl100k×1.1``).

When most calls of the report come from short-lived default agents (``local-<pid>``: no
``$LEAN_CTX_AGENT_ID``, a few calls from each fresh shell), a last line says the figures scatter and
to set ``LEAN_CTX_AGENT_ID`` / a session (``scatter`` in ``--json``, else null; see
``leanctx.api.cli.gain_scatter``)."""

from __future__ import annotations

import sys
from typing import Any, List, Optional

import typer

from .app import state
from .common import JSON

DEFAULT_BY = ("tool", "mode", "family")
DEFAULT_CHART_DAYS = 14
BAR_WIDTH = 40
SENT, SAVED, OVER = "█", "░", "▒"
_ENCODING_NAMES = {"o200k_base": "o200k", "cl100k_base": "cl100k"}
EMPTY_MESSAGE = (
    "no savings recorded yet: nothing has been read, run or searched through lean-ctx in this log.\n"
    "Try `lean-ctx read PATH --mode map`, `lean-ctx shell -- git status` or `lean-ctx search QUERY`,\n"
    "then run `lean-ctx gain` again.\n"
)


def _num(n: int) -> str:
    return f"{n:,}"


def _pct(p: float | None) -> str:
    return "-" if p is None else f"{p:.1f}%"


def _encoding_label(spec: str) -> str:
    """``o200k_base`` → ``o200k``; ``cl100k_base*1.1`` → ``cl100k×1.1``."""
    name, star, factor = spec.partition("*")
    short = _ENCODING_NAMES.get(name.strip(), name.strip())
    return f"{short}×{factor.strip()}" if star else short


def tokenizer_note(encodings: list[str]) -> str:
    names = list(dict.fromkeys(_encoding_label(e) for e in encodings)) or ["o200k"]
    return f"{'+'.join(names)}, real token counts"


def _table(title: str, rows: list[Any], totals: Any, dims: list[str]) -> str:
    from .render import table

    deferred = any(r.deferred_tokens for r in [*rows, totals])  # capped reads' rest, neither saved nor sent
    cols = [*dims, "calls", "raw", "sent", "saved", "saved%", *(["deferred"] if deferred else []), "bounces", "wasted"]
    out = []
    for r in [*rows, totals]:
        d = {dim: (r.group.get(dim, "") if r.group else ("total" if i == 0 else "")) for i, dim in enumerate(dims)}
        d.update(calls=_num(r.calls), raw=_num(r.raw_tokens), sent=_num(r.sent_tokens), saved=_num(r.saved_tokens),
                 bounces=_num(r.bounces), wasted=_num(r.wasted_tokens), deferred=_num(r.deferred_tokens))
        d["saved%"] = _pct(r.savings_pct)
        out.append(d)
    for c in cols[len(dims):]:  # right-align the numbers (render.table left-justifies cells)
        w = max(len(c), *(len(d[c]) for d in out))
        for d in out:
            d[c] = d[c].rjust(w)
    return f"{title}\n{table(out, cols)}"


def _bar(raw: int, sent: int, scale: int) -> str:
    """``█`` sent, ``░`` saved (raw beyond sent), ``▒`` sent beyond raw; exactly BAR_WIDTH cells."""
    def cells(v: int) -> int:
        return 0 if v <= 0 or scale <= 0 else max(1, round(BAR_WIDTH * v / scale))

    r, s = cells(raw), cells(sent)
    if sent <= raw:
        s = min(s, r)
        body = SENT * s + SAVED * (r - s)
    else:
        r = min(r, s)
        body = SENT * r + OVER * (s - r)
    return body.ljust(BAR_WIDTH)[:BAR_WIDTH]


def chart(days: list[Any]) -> list[str]:
    """One line per day: the bar, then raw, sent and saved% in fixed-width columns."""
    from ...projections.savings_report import savings_pct
    scale = max([max(d.raw_tokens, d.sent_tokens) for d in days] or [0])
    raw_w = max([len(_num(d.raw_tokens)) for d in days] + [1])
    sent_w = max([len(_num(d.sent_tokens)) for d in days] + [1])
    lines = []
    for d in days:
        if d.calls == 0:
            tail = f"raw {'-'.rjust(raw_w)}  sent {'-'.rjust(sent_w)}  saved {'-':>7}"
        else:
            pct = savings_pct(d.raw_tokens, d.sent_tokens)
            tail = (f"raw {_num(d.raw_tokens).rjust(raw_w)}  sent {_num(d.sent_tokens).rjust(sent_w)}"
                    f"  saved {_pct(pct):>7}")
        lines.append(f"{d.day} │{_bar(d.raw_tokens, d.sent_tokens, scale)}│ {tail}")
    return lines


def _days_between(a: str, b: str) -> int:
    import datetime as dt

    return (dt.date.fromisoformat(b) - dt.date.fromisoformat(a)).days


def _parse_by(values: list[str] | None) -> list[list[str]]:
    """``--by tool --by agent,mode`` → [["tool"], ["agent", "mode"]] (a comma groups by both)."""
    raw = values or list(DEFAULT_BY)
    return [[p.strip() for p in v.split(",") if p.strip()] for v in raw]


def gain_cmd(
    ctx: typer.Context,
    by: Optional[List[str]] = typer.Option(
        None, "--by", help="Group by agent, tool, mode, family, ext or day; repeat for several tables, "
        "comma-join for one table over several (default: tool, then mode, then family)."
    ),
    days: Optional[int] = typer.Option(
        None, "--days", min=1, help="Only the last N UTC days, ending with the day of the last recorded call "
        f"(default: tables over all time, the chart over the last {DEFAULT_CHART_DAYS} days)."
    ),
    agent: Optional[str] = typer.Option(None, "--agent", help="Only this agent's calls."),
    json_: bool = JSON,
) -> None:
    """Token savings measured from the log: tables per dimension, a per-day chart, totals.

    saved = raw − sent, negative when lean-ctx cost more than a plain tool (shown as is, never clamped).

    A bounce (a full read of a file within 3 calls of compressed reads of it; a stub is not one) retracts those reads' savings and counts their tokens as wasted, once per full read; expanding an archive costs the tool whose output was archived; a capped answer's archived rest is deferred, not saved; a refused call's error answer is sent (raw 0; a refused read's mode is error).
    """
    from ...projections import savings as sv

    st = state(ctx)
    as_json = st.want_json(json_)
    groups = _parse_by(by)
    lc = st.open()
    conn = lc.projections.reader("savings")
    end = sv.last_day(conn)
    since = sv.day_range(end, days)[0] if (end and days) else None
    reports = [sv.report(conn, since=since, agent=agent, by=g) for g in groups]  # validates --by
    totals = sv.report(conn, since=since, agent=agent, by=("tool",))
    chart_days: list[Any] = []
    if end is not None:
        n = days or min(DEFAULT_CHART_DAYS, _days_between(sv.first_day(conn, agent=agent) or end, end) + 1)
        chart_days = sv.daily(conn, n, until=end, agent=agent)
    bounced = sv.bounced_files(conn, since=since, agent=agent, limit=10)
    note = tokenizer_note(totals.encodings)
    from .gain_scatter import scatter

    spread = scatter(conn, since=since, agent=agent, total_calls=totals.totals.calls)
    if as_json:
        from .render import emit_json

        emit_json({
            "since": since, "until": end if since else None, "agent": agent, "tokenizer": note,
            "encodings": totals.encodings, "totals": totals.totals, "reports": reports, "daily": chart_days,
            "bounced_files": bounced, "scatter": spread,
        })
        return
    if totals.totals.calls == 0:
        if agent or since:
            scope = (f" by agent {agent}" if agent else "") + (f" in the last {days} days up to {end}" if since else "")
            sys.stdout.write(f"no savings recorded{scope}; run `lean-ctx gain` without filters to see every call.\n")
        else:
            sys.stdout.write(EMPTY_MESSAGE)
        return
    parts = []
    window = f"last {days} days up to {end} (UTC)" if since else "all time"
    who = f", agent {agent}" if agent else ""
    parts.append(f"lean-ctx gain — {window}{who}; saved = raw − sent, negative when lean-ctx cost more\n")
    for g, rep in zip(groups, reports):
        title = "by " + " × ".join(g)
        parts.append(_table(title, rep.rows, rep.totals, g) if rep.rows else f"{title}\n(no calls this applies to)")
        parts.append("")
    if bounced:
        bw = max(len("bounces"), *(len(_num(b.bounces)) for b in bounced))
        ww = max(len("wasted"), *(len(_num(b.wasted_tokens)) for b in bounced))
        rows = [{"path": b.path, "mode": b.mode, "bounces": _num(b.bounces).rjust(bw),
                 "wasted": _num(b.wasted_tokens).rjust(ww)} for b in bounced]
        from .render import table

        parts.append("bounced reads (compressed, then read in full within 3 calls)")
        parts.append(table(rows, ["path", "mode", "bounces", "wasted"]))
        parts.append("")
    if chart_days:
        parts.append(f"per day (UTC): {SENT} sent  {SAVED} saved  {OVER} sent beyond raw")
        parts.extend(chart(chart_days))
        parts.append("")
    t = totals.totals
    parts.append(
        f"total: {_num(t.calls)} calls · raw {_num(t.raw_tokens)} · sent {_num(t.sent_tokens)} · "
        f"saved {_num(t.saved_tokens)} ({_pct(t.savings_pct)}) · {_num(t.bounces)} bounce{'' if t.bounces == 1 else 's'} "
        f"({_num(t.wasted_tokens)} wasted) · "
        + (f"{_num(t.deferred_tokens)} deferred (capped answers' archived rest) · " if t.deferred_tokens else "")
        + note
    )
    if spread is not None:
        parts.append(spread.message)
    sys.stdout.write("\n".join(parts) + "\n")


def attach(app: typer.Typer) -> None:
    app.command("gain")(gain_cmd)
