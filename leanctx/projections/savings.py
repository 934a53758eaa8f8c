"""Token savings, measured from the log: one row per context-engine call, bounces, expansions.

Folds ``file.read``, ``shell.ran``, ``search.ran``, ``archive.expanded``, ``file.edited`` and
``archive.created`` into ``savings_calls`` (one row per context event, with every dimension a
report groups by: agent, tool, mode, command family, file extension, UTC day) and a few
bookkeeping tables. Reports are ``GROUP BY`` queries over those rows (:func:`report`,
:func:`daily`, :func:`bounced_files`, in ``leanctx.projections.savings_report`` and
re-exported here); the per-event rules (baselines, deferral, dimensions) are in
``leanctx.projections.savings_rules``.

**Accounting.** ``raw`` is what a plain tool would have sent, ``sent`` what lean-ctx sent, and
``saved = raw − sent`` for every row and every group — negative savings are kept, never
clamped. **No call's raw exceeds ``PLAIN_RESULT_LIMIT``** (25,000 tokens, in
``savings_rules``): clients reject tool results past it, so no plain tool's answer to one call
is larger (``seq 1 30000`` through a plain shell is refused or cut, not 89,000 tokens read).
Every kind's baseline below is capped at it, per row; the events keep their ``raw_tokens`` as
measured (``raw_tokens_recorded`` in reports). Per kind:

- ``file.read``: raw is what a plain read of what was asked would have sent: the whole file
  (``raw_tokens``) for every mode that reads the whole file (full, map, signatures, diff,
  aggressive, entropy, task: they compress the file), but for a ``lines:`` read only those
  lines, as a plain ranged read sends them: the event's ``plain_tokens`` (the lines view's
  body; a capped ``lines:`` read without it: its ``view_tokens``, the view being those lines).
  A ``lines:`` read without either (written before the field) counts ``min(raw, sent)``:
  neither a saving nor a cost, since what a plain ranged read would have sent is unknown.
- a **stub** (``stub`` true: ``[unchanged N lines]``) counts what it stands for: what
  re-sending the answer it replaces would have cost, at most what a plain read of it would
  have — ``min(raw, sent)`` of the earlier whole (uncapped, non-stub) delivery of the same path,
  mode key (``lines:1-10``, ``map``, ...) and content hash in the conversation
  (``savings_views``). So a stub of a full read saves the file, a stub of a 10-line view saves
  those 10 lines, a stub of a map saves the map. Without such a delivery on record: ``min(raw,
  sent)``.
- ``shell.ran``: raw and sent as recorded on the event, except for a capped answer (below).
- ``search.ran``: a ``regex`` search counts its raw as recorded (the uncapped ``path:line:``
  listing a plain grep sends). ``bm25``, ``semantic`` and ``fused`` searches have no plain
  equivalent — their raw is lean-ctx's own ranked listing, not anything a plain tool would
  send — so their raw is what was sent: neither a saving nor a cost (``PLAIN_SEARCH_METHODS``).
- a **capped read** (a ``file.read`` with an ``archive_id``): a cap defers content to an
  archive, it does not compress it, so only the part of the baseline the answer covered is raw:
  ``baseline × (view_tokens − deferred_tokens) / view_tokens`` (integer division; for a ``full``
  read, where the view is the file, that is ``raw − deferred_tokens``); the rest of the baseline
  is what the read defers. An event without those fields (written before them) counts
  ``min(baseline, sent)``: neither a saving nor a cost, since what it covered is unknown.
- **a deferral is owed once per archive and conversation.** What is owed for an archive in a
  conversation (``savings_deferred``) is the rest the *latest* capped answer naming it left
  there, less what was expanded since — not the sum over answers: reading the same capped view
  twice (the same content, so the same archive) leaves one rest to expand, not two. A row's
  ``deferred_tokens`` is the change in what is owed: the first capped read of an archive owes
  its rest, a repeat owes nothing more (0; with a larger cap, less: negative, it sent part of
  what was owed), and once the rest was expanded, partly or whole, a new capped answer owes its
  rest afresh (a re-read is a new need, as a plain tool would send the file again). Each row
  still counts as raw the part of the baseline its own answer covered.
- a **capped shell answer** (a ``shell.ran`` with ``capped_archive_id``, ``answer_tokens`` and
  ``deferred_tokens``): likewise ``raw × (answer_tokens − deferred_tokens) / answer_tokens`` is
  raw, the rest deferred (owed to ``capped_archive_id``, the archive the cap notice names, once
  per conversation as above). A ``--raw`` run cut by the cap thus saves about nothing. Events
  without the fields count their whole raw (as before them).
- ``archive.expanded``: raw 0 (the plain tool's baseline is already counted by the call that
  produced the archive), sent as recorded, so ``saved = −sent`` — except that expanding what a
  cap deferred *in the same conversation* gets its raw back: up to the deferred tokens still
  owed for that archive (``savings_deferred``, per archive and conversation; a view that
  compressed the file scales them back to raw), the expansion's raw is what it delivered of
  them, and its ``deferred_tokens`` are negative by as much. So a capped read (or shell run)
  plus the expansion of its rest saves what the plain tool would have. What an expansion
  delivered is the archived text it returned: ``text_tokens`` (without the ``N:`` line
  prefixes and notices, at most ``sent_tokens``), else — events without the field —
  ``sent_tokens`` (prefixes included: a partial expansion then redeems up to 5-15 % more than
  the text it returned; bounded, as redemptions never exceed what was deferred).
  **Lines the conversation already holds are a cost, not a redemption.** ``savings_deferred``
  keeps, per archive and conversation, the archive lines it holds (``held``, runs): the lines
  the latest capped answer sent whole (a read's ``sent_lines``; a capped shell answer's
  ``line_spans`` when recorded), plus the lines expansions sent since. An expansion with
  ``line_spans`` (the archive lines it sent whole) redeems only its share of lines not held
  (``delivered × new lines / its lines``; a character range of one line, no whole line, counts
  whole) and holds them from then on; one without them redeems nothing when every line its
  ``selector`` names (``lines:A-B``, ``lines:L[..]``, ``head``, ``tail``, ``full``) is held —
  whatever it sent is a repeat — and otherwise as much as it delivered (``grep``, or a selection
  reaching past what is held: what it sent is unknown). So re-expanding what a capped read
  already sent is a cost. The row is charged to the tool
  (and mode / family / extension / path) of the call whose answer was archived: known from the
  context event that carries the ``archive_id`` (or ``capped_archive_id``), else from
  ``archive.created``'s ``source``, else the tool is ``expand``.
- ``file.edited``: raw = sent (a plain edit tool answers about as much): neither a saving nor
  a cost.
- a **refused context call** (a ``tool.called`` error of a command a context tool dispatches,
  ``savings_rules.REFUSAL_TOOLS``: a budget refusal, a refused edit, ...): its error answer is
  sent — ``CODE: message`` as recorded, in the conversation's encoding (``savings_rules.refusal``)
  — raw 0 (no plain answer is on record), charged to its tool (a read's mode ``error``).
  Refusals before any dispatch (a path not found, invalid arguments), a multi-path read's
  failed entries and the resume block the MCP server appends are on no event: not counted.
- a file a read of several files only **named as not sent** (past its cap: a ``file.read`` of
  mode ``unsent``, ``UNSENT_MODE``) was not read: raw 0 (recorded raw too), nothing deferred,
  sent its one line; it is no compressed read and never bounces.

``deferred_tokens`` summed over rows (of a conversation, or all): raw tokens still sitting in
archives, neither sent nor saved — each archive's rest counted once per conversation.

**Calls.** A *conversation* is (agent, session id — ``""`` when the event has none). A *call*
is one context-engine tool call of the conversation: consecutive context events of the
conversation that carry the same ``correlation_id`` (the dispatch's tool-call id) are one
call; an event without a correlation id is a call of its own. ``tool.called`` records are not
counted: only calls that produced a context event (read, shell, search, expand, edit) move the
counter, so coordination traffic (heartbeats, chat, locks) never pushes a bounce out of its
window, nor do refused calls (a refused context call is a call of its own in ``calls``, with
call index −position).

**Bounce.** A *compressed read* is a non-stub ``file.read`` with a mode other than ``full``,
``lines:`` and ``unsent`` (a file named as not sent: nothing was read, nor is it a full
read). A stub is not one: it sent ~20 tokens of reference to an answer the conversation holds, not a compressed view, so it neither bounces nor is bounced; nor is a
``lines:`` read: it sent those lines as a plain ranged read does (its raw is those lines, not
the file), so a full read after it is a new need, not the undoing of a compression. A full, non-stub ``file.read`` of the
same path and the same ``content_hash`` later in the same conversation, at most 3 calls after a
compressed read (call index difference 0-3: the same call, or one of the next 3), is **one
bounce**, however many compressed reads of the path are in its window — exactly the reads
``leanctx.commands.read_rules.is_bounce`` deposits one STUCK for. Requiring the same content
hash means a re-read after the file changed (an edit in between, say) is a new need, not a
bounce. Every compressed read of that path in the window has its savings retracted and its
tokens counted as waste: its row gets raw 0 (the full read that followed carries the plain
read's raw), so its ``saved`` is ``−sent`` and ``wasted_tokens = sent`` (each read once: the
full read answers them all, none can bounce again). The bounce itself (``bounced`` = 1) is
charged to the closest of them (the last before the full read) and recorded once in
``savings_bounces`` with that read's mode and the waste of all of them. Projections never
emit: nothing is deposited here.

Rows are a pure function of the events (``day`` is the first 10 characters of ``ts``), so a
replay gives digest-equal tables. The command family of a shell run comes from the engine's
pattern name (``git_status`` → ``git``) or, when the output went raw/generic, from
``leanctx.context.shell`` dispatch on the command line: changing those rules needs a
``version`` bump of this projection.
"""

from __future__ import annotations

from typing import Any

from ..events import StoredEvent
from ..events.kinds.context import (
    UNSENT_MODE,
    ArchiveCreated,
    ArchiveExpanded,
    FileEdited,
    FileRead,
    SearchRan,
    ShellRan,
)
from ..events.kinds.tool import ToolCalled
from .base import Projection
from .savings_bounces import BOUNCE_WINDOW, next_call, resolve_bounces  # noqa: F401 - read_rules reads the window
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
    savings_pct,
)
from .savings_rules import (  # noqa: F401 - re-exported: savings.file_ext(...)
    NO_EXT,
    PLAIN_RESULT_LIMIT,
    PLAIN_SEARCH_METHODS,
    _defer,
    _norm_mode,
    _stub_baseline,
    capped_shell_baseline,
    command_family,
    file_ext,
    read_baseline,
    redeem_expansion,
    refusal,
    search_baseline,
)

ANONYMOUS = "anonymous"


class Savings(Projection):
    name = "savings"
    version = 7  # 2: capped reads count only the part they covered (deferred_tokens, savings_deferred)
    # 3: capped shell answers likewise; one bounce per full read, stubs never bounce; stubs count
    #    the view they stand for (savings_views), ``lines:`` reads the plain text of those lines
    # 4: an archive's deferral is owed once per conversation (the latest capped answer's rest)
    # 5: baselines capped at PLAIN_RESULT_LIMIT; ranked searches claim nothing; expansions redeem
    #    text_tokens, never lines the conversation holds (savings_deferred.held); ``lines:`` reads
    #    never bounce; an expansion that completes the held lines redeems all that is owed
    # 6: a file named as not sent (mode ``unsent``) claims no raw, defers nothing, never bounces
    # 7: a refused context call's error answer is sent (``tool.called`` errors)
    kinds = frozenset({"file.read", "shell.ran", "search.ran", "archive.expanded", "file.edited", "archive.created",
                       "tool.called"})
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
            held       TEXT NOT NULL DEFAULT '[]',
            PRIMARY KEY (archive_id, agent, session)
        )""",
        "savings_views": """CREATE TABLE IF NOT EXISTS savings_views (
            agent        TEXT NOT NULL,
            session      TEXT NOT NULL,
            path         TEXT NOT NULL,
            mode         TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            tokens       INTEGER NOT NULL,
            PRIMARY KEY (agent, session, path, mode, content_hash)
        )""",
        "savings_archives": """CREATE TABLE IF NOT EXISTS savings_archives (
            archive_id TEXT PRIMARY KEY,
            source     TEXT,
            lines      INTEGER,
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
                "INSERT INTO savings_archives (archive_id, source, lines) VALUES (?, ?, ?)"
                " ON CONFLICT(archive_id) DO UPDATE SET source = excluded.source, lines = excluded.lines",
                (ev.archive_id, ev.source, ev.lines),
            )
            return
        agent = event.actor or ANONYMOUS
        session = getattr(ev, "session_id", None) or ""
        row: dict[str, Any] = {"tool": "", "mode": None, "family": None, "ext": None, "path": None,
                               "raw": 0, "baseline": 0, "sent": 0, "expansion": 0, "encoding": None, "deferred": 0}
        if isinstance(ev, ToolCalled):
            if (answer := refusal(conn, ev, agent, session)) is None:
                return  # a success (its context events count), or no context call's refusal
            row.update(zip(("tool", "mode", "sent", "encoding"), answer, strict=True))
            call = -event.position  # a call of its own that moves no bounce window (module doc)
        else:
            call = next_call(conn, agent, session, event.correlation_id or f"#{event.position}")
        if isinstance(ev, FileRead):
            mode = "stub" if ev.stub else _norm_mode(ev.mode)
            if ev.stub:
                base = covered = _stub_baseline(conn, agent, session, ev)
                view_left = 0
            elif mode == UNSENT_MODE:  # named, not sent: not a read
                base = covered = view_left = 0
            else:
                base, covered, view_left = read_baseline(ev)
            row.update(tool="read", mode=mode, ext=file_ext(ev.path), path=ev.path,
                       raw=0 if mode == UNSENT_MODE else ev.raw_tokens,
                       baseline=covered, sent=ev.sent_tokens, encoding=ev.encoding, deferred=base - covered)
            if ev.archive_id and row["deferred"] > 0:  # owed once per archive and conversation
                held = [[1, ev.sent_lines]] if ev.sent_lines else []
                row["deferred"] = _defer(conn, ev.archive_id, agent, session, row["deferred"], view_left, held)
            if not ev.stub and not ev.archive_id and mode != UNSENT_MODE:  # what a later stub of this answer stands for
                conn.execute(
                    "INSERT INTO savings_views (agent, session, path, mode, content_hash, tokens)"
                    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(agent, session, path, mode, content_hash)"
                    " DO UPDATE SET tokens = excluded.tokens",
                    (agent, session, ev.path, ev.mode, ev.content_hash, max(0, min(covered, ev.sent_tokens))),
                )
        elif isinstance(ev, ShellRan):
            covered, view_left = capped_shell_baseline(ev)
            row.update(tool="shell", family=command_family(ev.pattern, ev.command), raw=ev.raw_tokens,
                       baseline=covered, sent=ev.sent_tokens, encoding=ev.encoding,
                       deferred=ev.raw_tokens - covered)
            if ev.capped_archive_id and row["deferred"] > 0:  # likewise
                row["deferred"] = _defer(conn, ev.capped_archive_id, agent, session, row["deferred"], view_left,
                                         ev.line_spans)
        elif isinstance(ev, SearchRan):
            row.update(tool="search", raw=ev.raw_tokens, baseline=search_baseline(ev), sent=ev.sent_tokens,
                       encoding=ev.encoding)
        elif isinstance(ev, FileEdited):
            row.update(tool="edit", ext=file_ext(ev.path), path=ev.path, raw=ev.sent_tokens,
                       baseline=ev.sent_tokens, sent=ev.sent_tokens)
        elif isinstance(ev, ArchiveExpanded):
            a = conn.execute(
                "SELECT source, tool, mode, family, ext, path, lines FROM savings_archives WHERE archive_id = ?",
                (ev.archive_id,),
            ).fetchone()
            tool = (a[1] or a[0] or "expand") if a else "expand"
            back = redeem_expansion(conn, ev, agent, session, a[6] if a else None)
            row.update(tool=tool, sent=ev.sent_tokens, expansion=1, baseline=back, deferred=-back)
            if a:
                row.update(mode=a[2], family=a[3], ext=a[4], path=a[5])
        elif not isinstance(ev, ToolCalled):  # pragma: no cover - kinds is the filter
            return
        row["baseline"] = min(row["baseline"], PLAIN_RESULT_LIMIT)  # no plain answer is larger
        conn.execute(
            "INSERT INTO savings_calls (position, ts, day, agent, session, call_index, tool, kind, mode, family, ext,"
            " path, raw_tokens, baseline_tokens, sent_tokens, expansion, encoding, deferred_tokens)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (event.position, event.ts, event.ts[:10], agent, session, call, row["tool"], event.kind, row["mode"],
             row["family"], row["ext"], row["path"], row["raw"], row["baseline"], row["sent"], row["expansion"],
             row["encoding"], row["deferred"]),
        )
        ids = [] if isinstance(ev, ArchiveExpanded) else [getattr(ev, "archive_id", None)]
        if isinstance(ev, ShellRan) and ev.capped_archive_id != ev.archive_id:
            ids.append(ev.capped_archive_id)
        for archive_id in filter(None, ids):
            conn.execute(
                "INSERT INTO savings_archives (archive_id, tool, mode, family, ext, path) VALUES (?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(archive_id) DO UPDATE SET tool = excluded.tool, mode = excluded.mode,"
                " family = excluded.family, ext = excluded.ext, path = excluded.path",
                (archive_id, row["tool"], row["mode"], row["family"], row["ext"], row["path"]),
            )
        if isinstance(ev, FileRead) and not ev.stub:  # a stub is not a compressed read: it never bounces
            if row["mode"] == "full":
                resolve_bounces(conn, event, agent, session, ev, call)
            elif row["mode"] not in ("lines", UNSENT_MODE):  # nor is a ``lines:`` read (plain lines): never bounced
                conn.execute(
                    "INSERT INTO savings_pending (position, agent, session, path, content_hash, call_index)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (event.position, agent, session, ev.path, ev.content_hash, call),
                )
