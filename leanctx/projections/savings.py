"""Token savings, measured from the log: one row per context-engine call, bounces, expansions.

Folds ``file.read``, ``shell.ran``, ``search.ran``, ``archive.expanded``, ``file.edited`` and
``archive.created`` into ``savings_calls`` (one row per context event, with every dimension a
report groups by: agent, tool, mode, command family, file extension, UTC day) and a few
bookkeeping tables. Reports are ``GROUP BY`` queries over those rows (:func:`report`,
:func:`daily`, :func:`bounced_files`).

**Accounting.** ``raw`` is what a plain tool would have sent, ``sent`` what lean-ctx sent, and
``saved = raw − sent`` for every row and every group — negative savings are kept, never
clamped. Per kind:

- ``file.read`` / ``shell.ran`` / ``search.ran``: raw and sent as recorded on the event.
- ``archive.expanded``: raw 0 (the plain tool's baseline is already counted by the call that
  produced the archive), sent as recorded, so ``saved = −sent``. The row is charged to the tool
  (and mode / family / extension / path) of the call whose answer was archived: known from the
  context event that carries the ``archive_id``, else from ``archive.created``'s ``source``,
  else the tool is ``expand``.
- ``file.edited``: raw = sent (a plain edit tool answers about as much): neither a saving nor
  a cost.

**Calls.** A *conversation* is (agent, session id — ``""`` when the event has none). A *call*
is one context-engine tool call of the conversation: consecutive context events of the
conversation that carry the same ``correlation_id`` (the dispatch's tool-call id) are one
call; an event without a correlation id is a call of its own. ``tool.called`` records are not
counted: only calls that produced a context event (read, shell, search, expand, edit) move the
counter, so coordination traffic (heartbeats, chat, locks) never pushes a bounce out of its
window, and refused calls (no context event) do not count.

**Bounce.** A *compressed read* is a ``file.read`` with ``stub`` true or a mode other than
``full``. It *bounces* when, later in the same conversation, a ``file.read`` of the same path
and the same ``content_hash`` with mode ``full`` and ``stub`` false happens at most 3 calls
after it (call index difference 0-3: the same call, or one of the next 3 calls). Requiring the
same content hash means a re-read after the file changed (an edit in between, say) is a new
need, not a bounce. One full read bounces every compressed read of that path still in its
window; a compressed read bounces at most once. A bounced read's savings are retracted and its
tokens counted as waste: its row gets raw 0 (the full read that followed carries the same raw),
so its ``saved`` is ``−sent`` and ``wasted_tokens = sent``. Each bounce is also recorded in
``savings_bounces`` (per file, per mode). Projections never emit: nothing is deposited here.

Rows are a pure function of the events (``day`` is the first 10 characters of ``ts``), so a
replay gives digest-equal tables. The command family of a shell run comes from the engine's
pattern name (``git_status`` → ``git``) or, when the output went raw/generic, from
``leanctx.context.shell`` dispatch on the command line: changing those rules needs a
``version`` bump of this projection.
"""

from __future__ import annotations

import datetime as _dt
import posixpath
import re
from collections.abc import Sequence
from typing import Any

import msgspec

from ..errors import InvalidInput
from ..events import StoredEvent
from ..events.kinds.context import (
    ArchiveCreated,
    ArchiveExpanded,
    FileEdited,
    FileRead,
    SearchRan,
    ShellRan,
)
from .base import Projection

ANONYMOUS = "anonymous"
BOUNCE_WINDOW = 3  # a full read at most this many calls after the compressed one is a bounce
DIMENSIONS: dict[str, str] = {
    "agent": "agent", "tool": "tool", "mode": "mode", "family": "family", "ext": "ext", "day": "day",
}
NO_EXT = "(none)"
_PATTERN_SPLIT = re.compile(r"[:_.\s/-]")
_UNFAMILIAR = {"", "raw", "generic"}
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}(T[0-9:.]*Z?)?$")


class SavingsRow(msgspec.Struct, frozen=True):
    """One group of a savings report. ``raw_tokens`` is the plain-tool baseline (bounced reads
    count 0, see the module doc); ``raw_tokens_recorded`` the plain sum of the events' raw."""

    group: dict[str, str]
    calls: int  # distinct calls (a read of several paths is one call; see the module doc)
    raw_tokens: int
    sent_tokens: int
    saved_tokens: int  # raw_tokens − sent_tokens, negative when lean-ctx cost more
    savings_pct: float | None  # 100 · saved / raw (None when raw is 0)
    bounces: int
    wasted_tokens: int
    expansions: int
    raw_tokens_recorded: int


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


class Savings(Projection):
    name = "savings"
    version = 1
    kinds = frozenset({"file.read", "shell.ran", "search.ran", "archive.expanded", "file.edited", "archive.created"})
    consistency = "eventual"  # nothing decides on it: it catches up before it is read
    tables = {
        "savings_calls": """CREATE TABLE IF NOT EXISTS savings_calls (
            position        INTEGER PRIMARY KEY,
            ts              TEXT NOT NULL,
            day             TEXT NOT NULL,
            agent           TEXT NOT NULL,
            session         TEXT NOT NULL,
            call_index      INTEGER NOT NULL,
            tool            TEXT NOT NULL,
            kind            TEXT NOT NULL,
            mode            TEXT,
            family          TEXT,
            ext             TEXT,
            path            TEXT,
            raw_tokens      INTEGER NOT NULL,
            baseline_tokens INTEGER NOT NULL,
            sent_tokens     INTEGER NOT NULL,
            bounced         INTEGER NOT NULL DEFAULT 0,
            wasted_tokens   INTEGER NOT NULL DEFAULT 0,
            expansion       INTEGER NOT NULL DEFAULT 0,
            encoding        TEXT
        )""",
        "savings_conversations": """CREATE TABLE IF NOT EXISTS savings_conversations (
            agent      TEXT NOT NULL,
            session    TEXT NOT NULL,
            calls      INTEGER NOT NULL,
            last_call  TEXT NOT NULL,
            PRIMARY KEY (agent, session)
        )""",
        "savings_pending": """CREATE TABLE IF NOT EXISTS savings_pending (
            position     INTEGER PRIMARY KEY,
            agent        TEXT NOT NULL,
            session      TEXT NOT NULL,
            path         TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            call_index   INTEGER NOT NULL
        )""",
        "savings_bounces": """CREATE TABLE IF NOT EXISTS savings_bounces (
            position       INTEGER PRIMARY KEY,
            full_position  INTEGER NOT NULL,
            ts             TEXT NOT NULL,
            day            TEXT NOT NULL,
            agent          TEXT NOT NULL,
            session        TEXT NOT NULL,
            path           TEXT NOT NULL,
            mode           TEXT NOT NULL,
            calls_between  INTEGER NOT NULL,
            wasted_tokens  INTEGER NOT NULL
        )""",
        "savings_archives": """CREATE TABLE IF NOT EXISTS savings_archives (
            archive_id TEXT PRIMARY KEY,
            source     TEXT,
            tool       TEXT,
            mode       TEXT,
            family     TEXT,
            ext        TEXT,
            path       TEXT
        )""",
    }
    indexes = (
        "CREATE INDEX IF NOT EXISTS savings_calls_day ON savings_calls (day)",
        "CREATE INDEX IF NOT EXISTS savings_calls_agent ON savings_calls (agent, day)",
        "CREATE INDEX IF NOT EXISTS savings_pending_conv ON savings_pending (agent, session, path)",
    )

    def apply(self, conn: Any, event: StoredEvent) -> None:
        ev = event.data()
        if isinstance(ev, ArchiveCreated):
            conn.execute(
                "INSERT INTO savings_archives (archive_id, source) VALUES (?, ?)"
                " ON CONFLICT(archive_id) DO UPDATE SET source = excluded.source",
                (ev.archive_id, ev.source),
            )
            return
        agent = event.actor or ANONYMOUS
        session = getattr(ev, "session_id", None) or ""
        call = _next_call(conn, agent, session, event.correlation_id or f"#{event.position}")
        row: dict[str, Any] = {"tool": "", "mode": None, "family": None, "ext": None, "path": None,
                               "raw": 0, "baseline": 0, "sent": 0, "expansion": 0, "encoding": None}
        if isinstance(ev, FileRead):
            mode = "stub" if ev.stub else _norm_mode(ev.mode)
            row.update(tool="read", mode=mode, ext=file_ext(ev.path), path=ev.path, raw=ev.raw_tokens,
                       baseline=ev.raw_tokens, sent=ev.sent_tokens, encoding=ev.encoding)
        elif isinstance(ev, ShellRan):
            row.update(tool="shell", family=command_family(ev.pattern, ev.command), raw=ev.raw_tokens,
                       baseline=ev.raw_tokens, sent=ev.sent_tokens, encoding=ev.encoding)
        elif isinstance(ev, SearchRan):
            row.update(tool="search", raw=ev.raw_tokens, baseline=ev.raw_tokens, sent=ev.sent_tokens,
                       encoding=ev.encoding)
        elif isinstance(ev, FileEdited):
            row.update(tool="edit", ext=file_ext(ev.path), path=ev.path, raw=ev.sent_tokens,
                       baseline=ev.sent_tokens, sent=ev.sent_tokens)
        elif isinstance(ev, ArchiveExpanded):
            a = conn.execute(
                "SELECT source, tool, mode, family, ext, path FROM savings_archives WHERE archive_id = ?",
                (ev.archive_id,),
            ).fetchone()
            tool = (a[1] or a[0] or "expand") if a else "expand"
            row.update(tool=tool, sent=ev.sent_tokens, expansion=1)
            if a:
                row.update(mode=a[2], family=a[3], ext=a[4], path=a[5])
        else:  # pragma: no cover - kinds is the filter
            return
        conn.execute(
            "INSERT INTO savings_calls (position, ts, day, agent, session, call_index, tool, kind, mode, family, ext,"
            " path, raw_tokens, baseline_tokens, sent_tokens, expansion, encoding)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (event.position, event.ts, event.ts[:10], agent, session, call, row["tool"], event.kind, row["mode"],
             row["family"], row["ext"], row["path"], row["raw"], row["baseline"], row["sent"], row["expansion"],
             row["encoding"]),
        )
        archive_id = getattr(ev, "archive_id", None)
        if archive_id and not isinstance(ev, ArchiveExpanded):
            conn.execute(
                "INSERT INTO savings_archives (archive_id, tool, mode, family, ext, path) VALUES (?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(archive_id) DO UPDATE SET tool = excluded.tool, mode = excluded.mode,"
                " family = excluded.family, ext = excluded.ext, path = excluded.path",
                (archive_id, row["tool"], row["mode"], row["family"], row["ext"], row["path"]),
            )
        if isinstance(ev, FileRead):
            if ev.stub or row["mode"] != "full":
                conn.execute(
                    "INSERT INTO savings_pending (position, agent, session, path, content_hash, call_index)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (event.position, agent, session, ev.path, ev.content_hash, call),
                )
            else:
                _resolve_bounces(conn, event, agent, session, ev, call)


def _next_call(conn: Any, agent: str, session: str, call_id: str) -> int:
    """The call index of this event in its conversation (see the module doc)."""
    row = conn.execute(
        "SELECT calls, last_call FROM savings_conversations WHERE agent = ? AND session = ?", (agent, session)
    ).fetchone()
    if row is not None and row[1] == call_id:
        return int(row[0])
    calls = (int(row[0]) if row else 0) + 1
    conn.execute(
        "INSERT INTO savings_conversations (agent, session, calls, last_call) VALUES (?, ?, ?, ?)"
        " ON CONFLICT(agent, session) DO UPDATE SET calls = excluded.calls, last_call = excluded.last_call",
        (agent, session, calls, call_id),
    )
    # compressed reads that fell out of every future window can never bounce: forget them
    conn.execute(
        "DELETE FROM savings_pending WHERE agent = ? AND session = ? AND call_index < ?",
        (agent, session, calls - BOUNCE_WINDOW),
    )
    return calls


def _resolve_bounces(conn: Any, event: StoredEvent, agent: str, session: str, ev: FileRead, call: int) -> None:
    pending = conn.execute(
        "SELECT p.position, p.call_index, c.mode, c.sent_tokens, c.ts, c.day FROM savings_pending p"
        " JOIN savings_calls c ON c.position = p.position"
        " WHERE p.agent = ? AND p.session = ? AND p.path = ? AND p.content_hash = ? AND p.call_index >= ?"
        " ORDER BY p.position",
        (agent, session, ev.path, ev.content_hash, call - BOUNCE_WINDOW),
    ).fetchall()
    for pos, idx, mode, sent, ts, day in pending:
        conn.execute(
            "UPDATE savings_calls SET bounced = 1, baseline_tokens = 0, wasted_tokens = sent_tokens WHERE position = ?",
            (pos,),
        )
        conn.execute(
            "INSERT INTO savings_bounces (position, full_position, ts, day, agent, session, path, mode, calls_between,"
            " wasted_tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (pos, event.position, ts, day, agent, session, ev.path, mode, call - idx, sent),
        )
    # the full read answers every earlier compressed read of this path: none can bounce later
    conn.execute("DELETE FROM savings_pending WHERE agent = ? AND session = ? AND path = ?", (agent, session, ev.path))


# --- derived dimensions (pure) ------------------------------------------------------------
def _norm_mode(mode: str) -> str:
    """``lines:10-20,30-40`` → ``lines``; ``Full`` → ``full``."""
    return (mode or "").strip().lower().split(":", 1)[0] or "full"


def file_ext(path: str) -> str:
    """Lower-case extension of the file name (``.py``), ``(none)`` without one (``Makefile``, ``.env``)."""
    name = posixpath.basename((path or "").replace("\\", "/"))
    stem, dot, ext = name.rpartition(".")
    return f".{ext.lower()}" if dot and stem and ext else NO_EXT


def command_family(pattern: str, command: str) -> str:
    """The shell family of a run: the pattern's first word (``git_status`` → ``git``), else, for
    raw or generic output, the family the engine's dispatch gives the command, else ``other``."""
    base = _PATTERN_SPLIT.split((pattern or "").strip().lower(), maxsplit=1)[0]
    if base not in _UNFAMILIAR:
        return base
    from ..context.shell import parse_command
    from ..context.shell.patterns import select

    name, _ = select(parse_command(command or ""), [])
    return name if name not in _UNFAMILIAR else "other"


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
        " COALESCE(SUM(wasted_tokens), 0), COALESCE(SUM(expansion), 0), COALESCE(SUM(raw_tokens), 0)")


def _row(group: dict[str, str], calls: int, raw: int, sent: int, bounces: int, wasted: int, expansions: int,
         recorded: int) -> SavingsRow:
    saved = raw - sent
    pct = round(100.0 * saved / raw, 1) if raw else None
    return SavingsRow(group, calls, raw, sent, saved, pct, bounces, wasted, expansions, recorded)


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


def day_range(until: str, days: int) -> list[str]:
    """The ``days`` UTC days ending with ``until`` (inclusive), oldest first."""
    if days < 1:
        raise InvalidInput("SAVINGS_INVALID_DAYS", f"--days must be at least 1, not {days}")
    try:
        end = _dt.date.fromisoformat(until)
    except ValueError:
        raise InvalidInput("SAVINGS_INVALID_TIME", f"{until!r} is not a day (YYYY-MM-DD)") from None
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
