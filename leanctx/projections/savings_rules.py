"""The savings projection's per-event rules (``leanctx.projections.savings`` documents them):
the plain baseline of a read, a stub and a capped shell answer; what caps defer and
expansions redeem (``savings_deferred``); the derived dimensions (mode, extension, family)."""

from __future__ import annotations

import posixpath
import re
from typing import Any

from ..events.kinds.context import FileRead, ShellRan

NO_EXT = "(none)"
_PATTERN_SPLIT = re.compile(r"[:_.\s/-]")
_UNFAMILIAR = {"", "raw", "generic"}


def read_baseline(ev: FileRead) -> tuple[int, int, int]:
    """(plain baseline, the part of it the answer covered, view tokens it deferred) of a
    non-stub read (see the module doc)."""
    raw = ev.raw_tokens
    base: int | None = raw
    if _norm_mode(ev.mode) == "lines":  # a plain ranged read sends those lines, not the file
        base = ev.plain_tokens
        if base is None and ev.archive_id and ev.view_tokens is not None:
            base = ev.view_tokens  # the lines view is those lines
    if base is None:  # written without the field: what a plain ranged read sends is unknown
        covered = max(0, min(raw, ev.sent_tokens))
        return covered, covered, 0
    base = max(0, base)
    if not ev.archive_id:
        return base, base, 0
    if ev.view_tokens is None or ev.deferred_tokens is None or ev.view_tokens <= 0:
        covered = max(0, min(base, ev.sent_tokens))  # written before the fields: what it covered is unknown
        return base, covered, base - covered
    deferred = min(max(ev.deferred_tokens, 0), ev.view_tokens)
    return base, base * (ev.view_tokens - deferred) // ev.view_tokens, deferred


def capped_shell_baseline(ev: ShellRan) -> tuple[int, int]:
    """(raw tokens a shell answer covered, answer tokens its cap deferred): ``(raw, 0)`` unless
    capped (see the module doc)."""
    raw = ev.raw_tokens
    if not ev.capped_archive_id or ev.answer_tokens is None or ev.deferred_tokens is None or ev.answer_tokens <= 0:
        return raw, 0  # not capped, or written before the fields: today's rule
    deferred = min(max(ev.deferred_tokens, 0), ev.answer_tokens)
    return raw * (ev.answer_tokens - deferred) // ev.answer_tokens, deferred


def _stub_baseline(conn: Any, agent: str, session: str, ev: FileRead) -> int:
    """What a stub stands for: what re-sending the answer it replaces would cost, at most what
    a plain read of it would have (the earlier whole delivery of the same path, mode and
    content in this conversation); unknown → ``min(raw, sent)``, neither saving nor cost."""
    row = conn.execute(
        "SELECT tokens FROM savings_views WHERE agent = ? AND session = ? AND path = ? AND mode = ?"
        " AND content_hash = ?",
        (agent, session, ev.path, ev.mode, ev.content_hash),
    ).fetchone()
    if row is not None:
        return int(row[0])
    return max(0, min(ev.raw_tokens, ev.sent_tokens))


def _defer(conn: Any, archive_id: str, agent: str, session: str, raw_left: int, view_left: int) -> int:
    """Record that a capped answer left ``raw_left`` raw (``view_left`` view) tokens in
    ``archive_id`` for this conversation; returns by how much that changes what is owed.

    What is owed for an archive in a conversation is what the *latest* capped answer naming it
    left there, less what was expanded since — never the sum of every answer: a capped read of
    the same view again (the same archive: archives are content-addressed) defers the same rest
    again, which is one rest to expand, not two. So a repeat defers nothing more (0), a repeat
    with a larger cap owes less (negative: it sent part of what was owed), and after the rest
    was expanded (partly or whole) a new capped answer owes its rest afresh."""
    row = conn.execute(
        "SELECT raw_left FROM savings_deferred WHERE archive_id = ? AND agent = ? AND session = ?",
        (archive_id, agent, session),
    ).fetchone()
    conn.execute(
        "INSERT INTO savings_deferred (archive_id, agent, session, raw_left, view_left)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT(archive_id, agent, session) DO UPDATE SET"
        " raw_left = excluded.raw_left, view_left = excluded.view_left",
        (archive_id, agent, session, raw_left, view_left),
    )
    return raw_left - (int(row[0]) if row else 0)


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
