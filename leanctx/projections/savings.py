"""Token savings, measured from the log: one row per context-engine call, bounces, expansions.

Folds ``file.read``, ``shell.ran``, ``search.ran``, ``archive.expanded``, ``file.edited`` and
``archive.created`` into ``savings_calls`` (one row per context event, with every dimension a
report groups by: agent, tool, mode, command family, file extension, UTC day) and a few
bookkeeping tables. Reports are ``GROUP BY`` queries over those rows (:func:`report`,
:func:`daily`, :func:`bounced_files`, in ``leanctx.projections.savings_report`` and
re-exported here).

**Accounting.** ``raw`` is what a plain tool would have sent, ``sent`` what lean-ctx sent, and
``saved = raw − sent`` for every row and every group — negative savings are kept, never
clamped. Per kind:

- ``file.read`` / ``shell.ran`` / ``search.ran``: raw and sent as recorded on the event, except
  for a capped read (below).
- a **capped read** (a ``file.read`` with an ``archive_id``): a cap defers content to an
  archive, it does not compress it, so only the part of the file the answer covered is raw:
  ``raw × (view_tokens − deferred_tokens) / view_tokens`` (integer division; for a ``full``
  read, where the view is the file, that is ``raw − deferred_tokens``); the rest of the raw is
  the row's ``deferred_tokens``. An event without those fields (written before them) counts
  ``min(raw, sent)``: neither a saving nor a cost, since what it covered is unknown.
- ``archive.expanded``: raw 0 (the plain tool's baseline is already counted by the call that
  produced the archive), sent as recorded, so ``saved = −sent`` — except that expanding what a
  cap deferred *in the same conversation* gets its raw back: up to the deferred tokens still
  owed for that archive (``savings_deferred``, per archive and conversation; a view that
  compressed the file scales them back to raw), the expansion's raw is what it delivered of
  them, and its ``deferred_tokens`` are negative by as much. So a capped read plus the
  expansion of its rest saves what reading the file whole would have, and re-expanding what
  was already sent is a cost. The row is charged to the tool
  (and mode / family / extension / path) of the call whose answer was archived: known from the
  context event that carries the ``archive_id``, else from ``archive.created``'s ``source``,
  else the tool is ``expand``.
- ``file.edited``: raw = sent (a plain edit tool answers about as much): neither a saving nor
  a cost.

``deferred_tokens`` summed over rows: raw tokens still sitting in archives, neither sent nor
saved.

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

import posixpath
import re
from typing import Any

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
from .savings_report import (  # noqa: F401 - the queries, re-exported: savings.report(...)
    CALL_COUNT,
    DIMENSIONS,
    BouncedFile,
    DayRow,
    SavingsReport,
    SavingsRow,
    bounced_files,
    daily,
    day_range,
    first_day,
    last_day,
    report,
)

ANONYMOUS = "anonymous"
BOUNCE_WINDOW = 3  # a full read at most this many calls after the compressed one is a bounce
NO_EXT = "(none)"
_PATTERN_SPLIT = re.compile(r"[:_.\s/-]")
_UNFAMILIAR = {"", "raw", "generic"}


class Savings(Projection):
    name = "savings"
    version = 2  # 2: capped reads count only the part they covered (deferred_tokens, savings_deferred)
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
            encoding        TEXT,
            deferred_tokens INTEGER NOT NULL DEFAULT 0
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
        "savings_deferred": """CREATE TABLE IF NOT EXISTS savings_deferred (
            archive_id TEXT NOT NULL,
            agent      TEXT NOT NULL,
            session    TEXT NOT NULL,
            raw_left   INTEGER NOT NULL,
            view_left  INTEGER NOT NULL,
            PRIMARY KEY (archive_id, agent, session)
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
                               "raw": 0, "baseline": 0, "sent": 0, "expansion": 0, "encoding": None, "deferred": 0}
        if isinstance(ev, FileRead):
            mode = "stub" if ev.stub else _norm_mode(ev.mode)
            covered, view_left = capped_read_baseline(ev)
            row.update(tool="read", mode=mode, ext=file_ext(ev.path), path=ev.path, raw=ev.raw_tokens,
                       baseline=covered, sent=ev.sent_tokens, encoding=ev.encoding,
                       deferred=ev.raw_tokens - covered)
            if ev.archive_id and row["deferred"] > 0:
                conn.execute(
                    "INSERT INTO savings_deferred (archive_id, agent, session, raw_left, view_left)"
                    " VALUES (?, ?, ?, ?, ?) ON CONFLICT(archive_id, agent, session) DO UPDATE SET"
                    " raw_left = raw_left + excluded.raw_left, view_left = view_left + excluded.view_left",
                    (ev.archive_id, agent, session, row["deferred"], view_left),
                )
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
            back = _redeem_deferred(conn, ev.archive_id, agent, session, ev.sent_tokens)
            row.update(tool=tool, sent=ev.sent_tokens, expansion=1, baseline=back, deferred=-back)
            if a:
                row.update(mode=a[2], family=a[3], ext=a[4], path=a[5])
        else:  # pragma: no cover - kinds is the filter
            return
        conn.execute(
            "INSERT INTO savings_calls (position, ts, day, agent, session, call_index, tool, kind, mode, family, ext,"
            " path, raw_tokens, baseline_tokens, sent_tokens, expansion, encoding, deferred_tokens)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (event.position, event.ts, event.ts[:10], agent, session, call, row["tool"], event.kind, row["mode"],
             row["family"], row["ext"], row["path"], row["raw"], row["baseline"], row["sent"], row["expansion"],
             row["encoding"], row["deferred"]),
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


def capped_read_baseline(ev: FileRead) -> tuple[int, int]:
    """(raw tokens the answer covered, view tokens it deferred) of a read (see the module doc):
    ``(raw, 0)`` unless capped."""
    raw = ev.raw_tokens
    if not ev.archive_id or ev.stub:
        return raw, 0
    if ev.view_tokens is None or ev.deferred_tokens is None or ev.view_tokens <= 0:
        covered = max(0, min(raw, ev.sent_tokens))  # written before the fields: what it covered is unknown
        return covered, raw - covered
    deferred = min(max(ev.deferred_tokens, 0), ev.view_tokens)
    return raw * (ev.view_tokens - deferred) // ev.view_tokens, deferred


def _redeem_deferred(conn: Any, archive_id: str, agent: str, session: str, sent: int) -> int:
    """The raw tokens an expansion of ``sent`` tokens gets back from what caps deferred into
    ``archive_id`` in this conversation (and take them off what is still owed)."""
    row = conn.execute(
        "SELECT raw_left, view_left FROM savings_deferred WHERE archive_id = ? AND agent = ? AND session = ?",
        (archive_id, agent, session),
    ).fetchone()
    if row is None or sent <= 0:
        return 0
    raw_left, view_left = int(row[0]), int(row[1])
    used = min(sent, view_left)
    back = raw_left if used >= view_left else raw_left * used // view_left
    if used >= view_left:
        conn.execute("DELETE FROM savings_deferred WHERE archive_id = ? AND agent = ? AND session = ?",
                     (archive_id, agent, session))
    else:
        conn.execute(
            "UPDATE savings_deferred SET raw_left = ?, view_left = ? WHERE archive_id = ? AND agent = ? AND session = ?",
            (raw_left - back, view_left - used, archive_id, agent, session),
        )
    return back


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
