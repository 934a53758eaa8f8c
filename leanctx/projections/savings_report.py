"""Savings reports: ``GROUP BY`` queries over the ``savings`` projection's ``savings_calls`` rows
(:func:`report`, :func:`daily`, :func:`bounced_files`). The accounting (what ``raw``, ``sent``,
``deferred`` mean per kind of call) is the projection's: ``leanctx.projections.savings``."""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Sequence
from typing import Any

import msgspec

from ..errors import InvalidInput

DIMENSIONS: dict[str, str] = {
    "agent": "agent", "tool": "tool", "mode": "mode", "family": "family", "ext": "ext", "day": "day",
}
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}(T[0-9:.]*Z?)?$")


class SavingsRow(msgspec.Struct, frozen=True):
    """One group of a savings report. ``raw_tokens`` is the plain-tool baseline (each call's at
    most ``PLAIN_RESULT_LIMIT``, 25,000: what a client accepts; bounced reads count 0; a capped
    read counts only the part its answer covered; a ranked search what it sent);
    ``raw_tokens_recorded`` the plain sum of the events' raw, as measured; ``deferred_tokens`` the raw tokens caps left in archives and
    not expanded since (neither saved nor sent)."""

    group: dict[str, str]
    calls: int  # distinct calls (a read of several paths is one call; see the module doc)
    raw_tokens: int
    sent_tokens: int
    saved_tokens: int  # raw_tokens − sent_tokens, negative when lean-ctx cost more
    savings_pct: float | None  # 100 · saved / raw; None when raw is ~0 (see ``savings_pct``)
    bounces: int
    wasted_tokens: int
    expansions: int
    raw_tokens_recorded: int
    deferred_tokens: int = 0


class SavingsReport(msgspec.Struct, frozen=True):
    by: list[str]
    since: str | None
    until: str | None
    agent: str | None
    rows: list[SavingsRow]
    totals: SavingsRow
    encodings: list[str]


class DayRow(msgspec.Struct, frozen=True):
    day: str  # YYYY-MM-DD (UTC)
    calls: int
    raw_tokens: int
    sent_tokens: int
    saved_tokens: int
    bounces: int
    wasted_tokens: int


class BouncedFile(msgspec.Struct, frozen=True):
    path: str
    mode: str
    bounces: int
    wasted_tokens: int


# --- queries ------------------------------------------------------------------------------
def _where(since: str | None, until: str | None, agent: str | None) -> tuple[str, list[Any]]:
    """``since``/``until`` are inclusive: a ``YYYY-MM-DD`` day or a full ISO timestamp."""
    conds, params = ["1 = 1"], []
    for value, op in ((since, ">="), (until, "<=")):
        if value is None:
            continue
        if not isinstance(value, str) or not _TIME.match(value):
            raise InvalidInput("SAVINGS_INVALID_TIME", f"{value!r} is not a day (YYYY-MM-DD) or an ISO timestamp")
        conds.append(f"{'day' if len(value) == 10 else 'ts'} {op} ?")
        params.append(value)
    if agent is not None:
        conds.append("agent = ?")
        params.append(agent)
    return " AND ".join(conds), params


CALL_COUNT = "COUNT(DISTINCT agent || char(0) || session || char(0) || call_index)"  # distinct calls
_AGG = (f"{CALL_COUNT}, COALESCE(SUM(baseline_tokens), 0), COALESCE(SUM(sent_tokens), 0), COALESCE(SUM(bounced), 0),"
        " COALESCE(SUM(wasted_tokens), 0), COALESCE(SUM(expansion), 0), COALESCE(SUM(raw_tokens), 0),"
        " COALESCE(SUM(deferred_tokens), 0)")


PCT_MAX_RATIO = 100  # past sent = 100 × raw, a percentage of raw says nothing (saved tokens do)


def savings_pct(raw: int, sent: int) -> float | None:
    """``100 · (raw − sent) / raw``, rounded to 0.1; None (shown ``-``) when raw is 0 or less, or
    so small next to what was sent (``sent > 100 × raw``: under −9,900 %) that the ratio is
    noise — a group whose raw was retracted by bounces, say (its saved tokens still say it)."""
    if raw <= 0 or sent > PCT_MAX_RATIO * raw:
        return None
    return round(100.0 * (raw - sent) / raw, 1)


def _row(group: dict[str, str], calls: int, raw: int, sent: int, bounces: int, wasted: int, expansions: int,
         recorded: int, deferred: int) -> SavingsRow:
    saved = raw - sent
    pct = savings_pct(raw, sent)
    return SavingsRow(group, calls, raw, sent, saved, pct, bounces, wasted, expansions, recorded, deferred)


def report(conn: Any, *, since: str | None = None, until: str | None = None, agent: str | None = None,
           by: Sequence[str] = ("tool",)) -> SavingsReport:
    """Savings grouped by the dimensions ``by`` (any of agent, tool, mode, family, ext, day).

    Calls a dimension does not apply to (a shell run has no mode, a search no extension) are
    left out of a report grouped by it, and of its totals. Rows: most saved first (days in
    order)."""
    dims = list(by)
    bad = [d for d in dims if d not in DIMENSIONS]
    if bad or not dims or len(set(dims)) != len(dims):
        raise InvalidInput(
            "SAVINGS_INVALID_DIMENSION",
            f"cannot group by {', '.join(map(repr, bad or dims))}; use one or more of {', '.join(DIMENSIONS)}",
        )
    where, params = _where(since, until, agent)
    cols = [DIMENSIONS[d] for d in dims]
    where += "".join(f" AND {c} IS NOT NULL" for c in cols)
    sql = f"SELECT {', '.join(cols)}, {_AGG} FROM savings_calls WHERE {where} GROUP BY {', '.join(cols)}"
    rows = [_row(dict(zip(dims, r[: len(dims)])), *r[len(dims):]) for r in conn.execute(sql, params)]
    if dims == ["day"]:
        rows.sort(key=lambda r: r.group["day"])
    else:
        rows.sort(key=lambda r: (-r.saved_tokens, tuple(r.group.values())))
    tot = conn.execute(f"SELECT {_AGG} FROM savings_calls WHERE {where}", params).fetchone()
    encodings = [r[0] for r in conn.execute(
        f"SELECT DISTINCT encoding FROM savings_calls WHERE {where} AND encoding IS NOT NULL ORDER BY 1", params)]
    return SavingsReport(dims, since, until, agent, rows, _row({}, *tot), encodings)


def last_day(conn: Any, *, agent: str | None = None) -> str | None:
    """The UTC day of the last recorded call (of ``agent``), or None when there is none."""
    if agent is None:
        row = conn.execute("SELECT MAX(day) FROM savings_calls").fetchone()
    else:
        row = conn.execute("SELECT MAX(day) FROM savings_calls WHERE agent = ?", (agent,)).fetchone()
    return row[0] if row else None


def first_day(conn: Any, *, agent: str | None = None) -> str | None:
    where, params = _where(None, None, agent)
    row = conn.execute(f"SELECT MIN(day) FROM savings_calls WHERE {where}", params).fetchone()
    return row[0] if row else None


MAX_DAYS = 36525  # a century of days: a span beyond it is a typo, and would not fit the calendar


def day_range(until: str, days: int) -> list[str]:
    """The ``days`` UTC days ending with ``until`` (inclusive), oldest first."""
    if not 1 <= days <= MAX_DAYS:
        raise InvalidInput("SAVINGS_INVALID_DAYS", f"--days must be between 1 and {MAX_DAYS}, not {days}")
    try:
        end = _dt.date.fromisoformat(until)
    except ValueError:
        raise InvalidInput("SAVINGS_INVALID_TIME", f"{until!r} is not a day (YYYY-MM-DD)") from None
    if (end - _dt.date.min).days < days - 1:
        raise InvalidInput("SAVINGS_INVALID_DAYS", f"{days} days before {until} fall before the year 1")
    return [(end - _dt.timedelta(days=i)).isoformat() for i in range(days - 1, -1, -1)]


def daily(conn: Any, days: int = 14, *, until: str | None = None, agent: str | None = None) -> list[DayRow]:
    """Per UTC day for the ``days`` days ending with ``until`` (default: the day of the last
    recorded call — the log decides, not the clock): raw, sent, saved. Days without calls are
    included with zeros; an empty log gives []."""
    end = until or last_day(conn)
    if end is None:
        return []
    span = day_range(end[:10], days)
    where, params = _where(span[0], span[-1], agent)
    got = {
        r[0]: r for r in conn.execute(
            f"SELECT day, {CALL_COUNT}, SUM(baseline_tokens), SUM(sent_tokens), SUM(bounced), SUM(wasted_tokens)"
            f" FROM savings_calls WHERE {where} GROUP BY day", params)
    }
    out = []
    for d in span:
        _, calls, raw, sent, bounces, wasted = got.get(d, (d, 0, 0, 0, 0, 0))
        out.append(DayRow(d, calls, raw, sent, raw - sent, bounces, wasted))
    return out


def bounced_files(conn: Any, *, since: str | None = None, until: str | None = None, agent: str | None = None,
                  limit: int = 20) -> list[BouncedFile]:
    """Bounces per (file, compressed mode), most first."""
    where, params = _where(since, until, agent)
    sql = (f"SELECT path, mode, COUNT(*), SUM(wasted_tokens) FROM savings_bounces WHERE {where}"
           " GROUP BY path, mode ORDER BY COUNT(*) DESC, SUM(wasted_tokens) DESC, path, mode LIMIT ?")
    return [BouncedFile(*r) for r in conn.execute(sql, [*params, limit])]
