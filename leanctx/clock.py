"""Timestamps.

The log stores UTC timestamps as fixed-width ISO-8601 text
(``2026-11-30T15:22:14.123456Z``), so text order is time order and the file stays
readable with any SQLite client. Code that computes with time uses epoch seconds.
Only commands read the clock; projections take ``now`` as an argument.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

_FMT = "%Y-%m-%dT%H:%M:%S.%fZ"


def now() -> float:
    """Epoch seconds (the one place lean-ctx reads the wall clock)."""
    return time.time()


def iso(epoch: float | None = None) -> str:
    """Epoch seconds → fixed-width UTC ISO text."""
    t = now() if epoch is None else epoch
    return datetime.fromtimestamp(t, tz=timezone.utc).strftime(_FMT)


def parse(ts: str) -> float:
    """Fixed-width UTC ISO text → epoch seconds."""
    return datetime.strptime(ts, _FMT).replace(tzinfo=timezone.utc).timestamp()
