"""The savings tables over time, for the dashboard: raw and sent tokens per time bucket (the
bucket chosen so that at most ~60 points cover the log's whole span), and a key that changes
exactly when a savings row is added (so a view computed from these tables can be kept)."""

from __future__ import annotations

from typing import Any

import msgspec

from ..clock import parse
from .savings import CALL_COUNT

MAX_SERIES_POINTS = 60
BUCKETS = (1, 5, 15, 60, 300, 900, 3600, 6 * 3600, 86400, 7 * 86400)  # seconds


class SeriesPoint(msgspec.Struct, frozen=True):
    t: float  # bucket start, seconds since the epoch
    calls: int
    raw_tokens: int
    sent_tokens: int


def bucket_for(span: float) -> int:
    """The smallest bucket (seconds) that covers ``span`` seconds in at most ~60 points."""
    for b in BUCKETS:
        if span / b <= MAX_SERIES_POINTS:
            return b
    return BUCKETS[-1]


def savings_series(conn: Any) -> tuple[int, list[SeriesPoint]]:
    """Calls, raw and sent tokens per time bucket, the bucket chosen so at most ~60 points cover
    the log's whole span (1 s up to a week). Aggregated by SQLite (the bucket of a row is
    computed in the query), so a refresh does not bring every row into Python. ``calls``
    counts distinct calls like the reports do (a read of several files is one call)."""
    lo, hi = conn.execute("SELECT MIN(ts), MAX(ts) FROM savings_calls").fetchone()
    if lo is None:
        return BUCKETS[0], []
    size = bucket_for(parse(hi) - parse(lo))
    # whole seconds suffice (a bucket is a whole number of seconds: the fraction never moves a
    # row to another bucket); CALL_COUNT is the reports' count of distinct calls
    rows = conn.execute(
        f"SELECT CAST(strftime('%s', ts) AS INTEGER) / ?1 * ?1 AS t, {CALL_COUNT},"
        " SUM(baseline_tokens), SUM(sent_tokens) FROM savings_calls GROUP BY t ORDER BY t",
        (size,),
    )
    return size, [SeriesPoint(t, c, r, s) for t, c, r, s in rows]


def content_key(conn: Any) -> tuple[int, str]:
    """Identifies the savings tables' contents: rows are only ever added (a bounce updates an
    earlier row in the same apply that adds the full read's row), so the last row's position,
    with the hash of the event at that position (a replaced log has other hashes), changes
    exactly when they do."""
    row = conn.execute(
        "SELECT c.position, e.hash FROM (SELECT MAX(position) AS position FROM savings_calls) c"
        " LEFT JOIN events e ON e.position = c.position"
    ).fetchone()
    return (row[0] or 0, row[1] or "") if row else (0, "")
