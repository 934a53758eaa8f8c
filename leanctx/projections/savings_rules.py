"""The savings projection's per-event rules (``leanctx.projections.savings`` documents them):
the plain baseline of a read, a stub, a search and a capped shell answer, and its ceiling
(``PLAIN_RESULT_LIMIT``); what caps defer and expansions redeem (``savings_deferred``, with
the archive lines the conversation holds); the error answer of a refused context call
(``refusal``); the derived dimensions (mode, extension, family)."""

from __future__ import annotations

import json
import posixpath
import re
from typing import Any

from ..events.kinds.context import ArchiveExpanded, FileRead, SearchRan, ShellRan
from ..events.kinds.tool import ToolCalled

# Clients reject tool results over 25,000 tokens (``leanctx.commands.read``'s caps stay under
# it): no plain tool's answer to one call is larger, so no call's baseline is either.
PLAIN_RESULT_LIMIT = 25_000
PLAIN_SEARCH_METHODS = frozenset({"regex"})  # searches a plain tool (grep -rn) answers too
NO_EXT = "(none)"
Spans = list[list[int]]  # runs [first, last] of lines, 1-based, inclusive, ascending, disjoint
_PATTERN_SPLIT = re.compile(r"[:_.\s/-]")
_UNFAMILIAR = {"", "raw", "generic"}
# the commands a context tool call dispatches, whose refusal (a ``tool.called`` error) is the
# answer the agent reads, and the tool it is charged to (coordination refusals are not the
# context engine's; an internal dispatch's, a heartbeat's, reaches no agent)
REFUSAL_TOOLS = {"read.record": "read", "shell.check": "shell", "shell.record": "shell", "search.record": "search",
                 "archive.expand": "expand", "file.edit": "edit", "tree.record": "tree"}
ERROR_MODE = "error"  # the mode of a refused read (a multi-path read's failed entry has it too)


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


def search_baseline(ev: SearchRan) -> int:
    """A regex search: its raw as recorded (the uncapped grep-style listing a plain tool sends);
    bm25, semantic and fused searches have no plain equivalent (their listing is lean-ctx's
    own ranking): the baseline is what was sent, neither a saving nor a cost."""
    return max(0, ev.raw_tokens if ev.method in PLAIN_SEARCH_METHODS else ev.sent_tokens)


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


def _defer(conn: Any, archive_id: str, agent: str, session: str, raw_left: int, view_left: int,
           held: Spans | None = None) -> int:
    """Record that a capped answer left ``raw_left`` raw (``view_left`` view) tokens in
    ``archive_id`` for this conversation; returns by how much that changes what is owed.

    What is owed for an archive in a conversation is what the *latest* capped answer naming it
    left there, less what was expanded since — never the sum of every answer: a capped read of
    the same view again (the same archive: archives are content-addressed) defers the same rest
    again, which is one rest to expand, not two. So a repeat defers nothing more (0), a repeat
    with a larger cap owes less (negative: it sent part of what was owed), and after the rest
    was expanded (partly or whole) a new capped answer owes its rest afresh. ``held``: the
    archive lines that answer sent whole (what the conversation holds of it now; [] unknown)."""
    row = conn.execute(
        "SELECT raw_left FROM savings_deferred WHERE archive_id = ? AND agent = ? AND session = ?",
        (archive_id, agent, session),
    ).fetchone()
    conn.execute(
        "INSERT INTO savings_deferred (archive_id, agent, session, raw_left, view_left, held)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(archive_id, agent, session) DO UPDATE SET"
        " raw_left = excluded.raw_left, view_left = excluded.view_left, held = excluded.held",
        (archive_id, agent, session, raw_left, view_left, json.dumps(held or [])),
    )
    return raw_left - (int(row[0]) if row else 0)


def redeem_expansion(conn: Any, ev: ArchiveExpanded, agent: str, session: str, archive_lines: int | None) -> int:
    """The raw tokens an expansion gets back from what caps deferred into its archive in this
    conversation (and take them off what is still owed): what it delivered of the archived
    text (``text_tokens``, else ``sent_tokens``), less its share of lines the conversation
    already holds (by line count: ``line_spans``; without them, nothing when the selector's
    lines are all held), at most what is owed; the lines it sent are held from then on. An
    expansion after which the conversation holds every line of the archive redeems all that is
    owed (the rest was delivered; token counts of joined lines differ from the cap's by a few)."""
    row = conn.execute(
        "SELECT raw_left, view_left, held FROM savings_deferred WHERE archive_id = ? AND agent = ? AND session = ?",
        (ev.archive_id, agent, session),
    ).fetchone()
    if row is None:
        return 0
    raw_left, view_left, held = int(row[0]), int(row[1]), json.loads(row[2])
    sent = ev.sent_tokens if ev.text_tokens is None else min(ev.text_tokens, ev.sent_tokens)
    if ev.line_spans is not None:
        n = span_lines(ev.line_spans)
        if n:
            sent = sent * (n - overlap_lines(ev.line_spans, held)) // n
        held = merge_spans(held, ev.line_spans)
        if archive_lines and span_lines(held) >= archive_lines and overlap_lines([[1, archive_lines]], held) \
                == archive_lines:
            sent = view_left  # the conversation now holds every line: nothing of the rest is owed any more
    else:
        guess = selector_spans(ev.selector, archive_lines)
        if guess and overlap_lines(guess, held) == span_lines(guess):
            sent = 0  # every line it selected was already sent: whatever it sent is a repeat
    used = max(0, min(sent, view_left))
    back = raw_left if used >= view_left else raw_left * used // view_left
    if used >= view_left:
        conn.execute("DELETE FROM savings_deferred WHERE archive_id = ? AND agent = ? AND session = ?",
                     (ev.archive_id, agent, session))
    else:
        conn.execute(
            "UPDATE savings_deferred SET raw_left = ?, view_left = ?, held = ? WHERE archive_id = ? AND agent = ?"
            " AND session = ?",
            (raw_left - back, view_left - used, json.dumps(held), ev.archive_id, agent, session),
        )
    return back


def refusal(conn: Any, ev: ToolCalled, agent: str, session: str) -> tuple[str, str | None, int, str] | None:
    """(tool, mode, tokens sent, encoding) of a refused context call's error answer — the
    ``CODE: message`` text an MCP tool error carries, as recorded (the bus keeps 500 characters
    of the message: a longer one counts what was kept), counted in the encoding of the
    conversation's latest context row (``o200k_base`` before any) — or None: a success (its
    context events count) or no context command's refusal."""
    tool = REFUSAL_TOOLS.get(ev.command)
    if ev.outcome != "error" or tool is None:
        return None
    from ..context.tokens import DEFAULT_ENCODING, count_tokens

    row = conn.execute(
        "SELECT encoding FROM savings_calls WHERE agent = ? AND session = ? AND encoding IS NOT NULL"
        " ORDER BY position DESC LIMIT 1", (agent, session),
    ).fetchone()
    encoding = row[0] if row else DEFAULT_ENCODING
    text = f"{ev.error_code or 'ERROR'}: {ev.error_message or ''}"
    try:
        sent = count_tokens(text, encoding)
    except ValueError:  # an encoding spec not known here: the default counts (a projection never fails on it)
        encoding = DEFAULT_ENCODING
        sent = count_tokens(text, encoding)
    return tool, ERROR_MODE if tool == "read" else None, sent, encoding


# --- line runs (pure) ---------------------------------------------------------------------
def span_lines(spans: Spans) -> int:
    return sum(max(0, b - a + 1) for a, b in spans)


def merge_spans(a: Spans, b: Spans) -> Spans:
    """The union of two sets of runs, as ascending disjoint runs (adjacent runs joined)."""
    out: Spans = []
    for first, last in sorted([*a, *b]):
        if out and first <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], last)
        else:
            out.append([first, last])
    return out


def overlap_lines(spans: Spans, held: Spans) -> int:
    """How many lines of ``spans`` are in ``held``."""
    return sum(max(0, min(b, d) - max(a, c) + 1) for a, b in spans for c, d in held)


_SELECTOR = re.compile(r"^(?:(head|tail):(\d+)|lines:(\d+)(?:\[[^\]]*\]|-(\d*))?|(full))$")


def selector_spans(selector: str, total: int | None) -> Spans | None:
    """The archive lines an expansion's ``selector`` asked for (``lines:100-200`` → [[100, 200]],
    ``lines:7[1-80]`` → [[7, 7]], ``head:N``, ``tail:N`` and ``full`` with the archive's line
    count ``total``); None when it cannot say (``grep``, a count not known)."""
    m = _SELECTOR.match(selector or "")
    if m is None:
        return None
    kind, n, a, b, full = m.groups()
    if kind == "head":
        return [[1, int(n) if total is None else min(int(n), total)]] if int(n) else None
    if a is not None:
        if b == "":
            return [[int(a), total]] if total is not None and int(a) <= total else None
        return [[int(a), int(b) if b else int(a)]] if not b or int(b) >= int(a) else None
    if total is None or total < 1:
        return None
    if full:
        return [[1, total]]
    return [[max(1, total - int(n) + 1), total]] if int(n) else None


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
