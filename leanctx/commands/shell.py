"""ctx_shell, compress and expand: the commands that record them.

The effectful part (running the process, redacting, compressing, archiving, reading an
archive) happens in ``leanctx.ops.shell`` *before* these are dispatched; the handlers only
decide and record, inside the bus's write transaction:

- ``shell.record``: a command ran (or captured output was compressed). Emits
  ``archive.created`` on ``archive:<id>`` the first time the log hears of that archive,
  ``shell.ran`` on ``shell:<session or agent>``, and ``budget.consumed`` for the tokens sent.
  It never refuses on budget: the command has already run and its output is spent. A capped
  answer's accounting (``answer_tokens``, ``deferred_tokens``, ``capped_archive_id``) is
  recorded on ``shell.ran`` as given: all three or none, and its archive among those recorded;
  ``line_spans`` (optional, only with them): the lines of that answer sent whole, as runs.
- ``shell.check``: the budget guard of a run, dispatched only when a read-only pre-check
  found the agent's budget exhausted, so that the refusal (``BUDGET_EXCEEDED``) is decided
  under the write lock and recorded in the log like every other refusal.
- ``archive.expand``: part of an archive was sent back. Enforces the budget (an expand is a
  read), emits ``archive.expanded`` on ``archive:<id>`` and ``budget.consumed``. Besides
  ``sent_tokens`` (the whole answer), the operation may give ``text_tokens`` (the archived text
  returned, without ``N:`` prefixes or notices) and ``line_spans`` (the archive lines sent
  whole, as ascending disjoint runs ``[first, last]``, at most ``MAX_LINE_SPANS`` of them): the
  savings projection credits an expansion with them (``SHELL_INVALID_RECORD`` when malformed).

Text never enters the log: only the command line (redacted), counts and archive ids.
``ops.shell`` redacts the command line before dispatching; ``shell.record`` redacts it again,
defensively, before cutting it to ``MAX_COMMAND_CHARS`` (a secret cut in two would no longer
be recognised): text that reaches the log cannot be taken out.
"""

from __future__ import annotations

import msgspec

from ..archive import ArchiveInfo
from ..context.secrets import redact
from ..errors import InvalidInput
from ..events.kinds.context import ArchiveExpanded, ShellRan
from ..projections.budgets import BudgetState, budget_row, make_state
from .archives import check_archive, check_archive_id, check_count, record_archive
from .budgets import consume, enforce_budget
from .bus import Command, CommandContext, handles

__all__ = [
    "ArchiveInfo",
    "CheckShellBudget",
    "ExpandArchive",
    "Expanded",
    "RecordShell",
    "ShellRecorded",
    "stream_of",
]

MAX_COMMAND_CHARS = 2000
MAX_SELECTOR_CHARS = 300
MAX_LINE_SPANS = 256  # runs of lines a record carries; past it the operation gives none (None)


def stream_of(ctx: CommandContext) -> str:
    """Shell runs are recorded per conversation (else per agent)."""
    return f"shell:{ctx.session_id or ctx.actor or 'anonymous'}"


class RecordShell(Command, frozen=True):
    name = "shell.record"
    command: str  # redacted, at most MAX_COMMAND_CHARS
    pattern: str
    exit_code: int
    raw_tokens: int
    sent_tokens: int
    omitted_lines: int = 0
    archive: ArchiveInfo | None = None
    extra_archives: list[ArchiveInfo] = []  # e.g. the whole answer, when it was capped
    duration_ms: float = 0.0
    captured: bool = False
    redactions: int = 0
    encoding: str = "o200k_base"
    # a capped answer (all three, or none): tokens of the whole answer the cap cut, of the part
    # of it not sent, and the archive of that whole answer (one of ``archive``/``extra_archives``)
    answer_tokens: int | None = None
    deferred_tokens: int | None = None
    capped_archive_id: str | None = None
    line_spans: list[list[int]] | None = None  # a capped answer (optional): its lines sent whole, as runs


class CheckShellBudget(Command, frozen=True):
    name = "shell.check"


class ExpandArchive(Command, frozen=True):
    name = "archive.expand"
    archive_id: str
    selector: str  # full | head:N | tail:N | lines:A-B | grep:RE
    sent_tokens: int  # the whole answer, line prefixes and notices included
    encoding: str | None = None
    text_tokens: int | None = None  # the archived text returned, without ``N:`` prefixes or notices
    line_spans: list[list[int]] | None = None  # archive lines sent whole: ascending disjoint [first, last] runs


class ShellRecorded(msgspec.Struct, frozen=True):
    budget: BudgetState | None = None  # the caller's budget after this run (None without an agent)
    archive_created: bool = False


class Expanded(msgspec.Struct, frozen=True):
    budget: BudgetState | None = None


def _count(value: int, what: str) -> int:
    return check_count(value, what, "SHELL_INVALID_RECORD")


def _consume(ctx: CommandContext, tokens: int, tool: str) -> BudgetState | None:
    if not ctx.actor:
        return None
    limit, used, _, _ = budget_row(ctx.conn, ctx.actor)
    consume(ctx, ctx.actor, tokens, tool)
    return make_state(ctx.actor, limit, used + tokens)


def _check_cap_fields(cmd: RecordShell, archives: list[ArchiveInfo]) -> None:
    """A capped run's accounting: all three fields or none, deferred <= answer, and the
    capped answer's archive among those recorded (its rest must be expandable)."""
    given = (cmd.answer_tokens is not None, cmd.deferred_tokens is not None, cmd.capped_archive_id is not None)
    if not any(given):
        if cmd.line_spans is not None:
            raise InvalidInput("SHELL_INVALID_RECORD", "line_spans are recorded only for a capped run")
        return
    if not all(given):
        raise InvalidInput("SHELL_INVALID_RECORD",
                           "a capped run records answer_tokens, deferred_tokens and capped_archive_id together")
    assert cmd.answer_tokens is not None and cmd.deferred_tokens is not None
    answer = _count(cmd.answer_tokens, "answer_tokens")
    if _count(cmd.deferred_tokens, "deferred_tokens") > answer:
        raise InvalidInput("SHELL_INVALID_RECORD",
                           f"deferred_tokens ({cmd.deferred_tokens}) cannot exceed answer_tokens ({answer})")
    _check_spans(cmd.line_spans)
    if cmd.capped_archive_id not in {a.archive_id for a in archives}:
        raise InvalidInput("SHELL_OMISSION_WITHOUT_ARCHIVE",
                           f"the capped answer's archive {cmd.capped_archive_id!r} is not among the archives recorded")


def _check_spans(spans: list[list[int]] | None) -> None:
    """``line_spans`` (of an expansion, or of a capped run): at most ``MAX_LINE_SPANS`` runs
    ``[first, last]`` of lines numbered from 1, ascending and disjoint."""
    if spans is None:
        return
    if len(spans) > MAX_LINE_SPANS:
        raise InvalidInput("SHELL_INVALID_RECORD", f"line_spans holds at most {MAX_LINE_SPANS} runs, not {len(spans)}"
                           " (give none when there are more)")
    after = 0
    for span in spans:
        if (len(span) != 2 or any(isinstance(v, bool) or not isinstance(v, int) for v in span)
                or not after < span[0] <= span[1]):
            raise InvalidInput("SHELL_INVALID_RECORD", f"line_spans must be ascending, disjoint [first, last] runs of"
                               f" lines numbered from 1; got {span!r} after line {after}")
        after = span[1]


@handles(
    RecordShell,
    emits=("archive.created", "shell.ran", "budget.consumed"),
    result=ShellRecorded,
)
def record_shell(ctx: CommandContext, cmd: RecordShell) -> ShellRecorded:
    for what in ("raw_tokens", "sent_tokens", "omitted_lines", "redactions"):
        _count(getattr(cmd, what), what)
    if isinstance(cmd.exit_code, bool) or not -255 <= cmd.exit_code <= 255:
        raise InvalidInput("SHELL_INVALID_RECORD", f"exit_code must be within -255..255; got {cmd.exit_code}")
    if not cmd.pattern or len(cmd.pattern) > 64:
        raise InvalidInput("SHELL_INVALID_RECORD", "pattern must be 1-64 characters")
    if cmd.omitted_lines and cmd.archive is None:
        raise InvalidInput(
            "SHELL_OMISSION_WITHOUT_ARCHIVE", "lines were omitted but no archive was given: nothing may be dropped silently"
        )
    archives = [*([cmd.archive] if cmd.archive is not None else []), *cmd.extra_archives]
    _check_cap_fields(cmd, archives)
    created = False
    for a in archives:
        check_archive(a, "SHELL_INVALID_RECORD")
        if record_archive(ctx, a):
            created = created or a is cmd.archive
    ctx.emit(
        stream_of(ctx),
        ShellRan(
            command=redact(cmd.command).text[:MAX_COMMAND_CHARS],
            pattern=cmd.pattern,
            exit_code=cmd.exit_code,
            raw_tokens=cmd.raw_tokens,
            sent_tokens=cmd.sent_tokens,
            omitted_lines=cmd.omitted_lines,
            archive_id=cmd.archive.archive_id if cmd.archive is not None else None,
            duration_ms=round(max(cmd.duration_ms, 0.0), 3),
            captured=cmd.captured,
            redactions=cmd.redactions,
            session_id=ctx.session_id,
            encoding=cmd.encoding,
            answer_tokens=cmd.answer_tokens,
            deferred_tokens=cmd.deferred_tokens,
            capped_archive_id=cmd.capped_archive_id,
            line_spans=cmd.line_spans,
        ),
    )
    budget = _consume(ctx, cmd.sent_tokens, "ctx_compress" if cmd.captured else "ctx_shell")
    return ShellRecorded(budget=budget, archive_created=created)


@handles(CheckShellBudget, emits=(), result=BudgetState)
def check_shell_budget(ctx: CommandContext, cmd: CheckShellBudget) -> BudgetState:
    return enforce_budget(ctx)


@handles(ExpandArchive, emits=("archive.expanded", "budget.consumed"), result=Expanded)
def expand_archive(ctx: CommandContext, cmd: ExpandArchive) -> Expanded:
    check_archive_id(cmd.archive_id)
    _count(cmd.sent_tokens, "sent_tokens")
    if cmd.text_tokens is not None:
        _count(cmd.text_tokens, "text_tokens")
    _check_spans(cmd.line_spans)
    enforce_budget(ctx)
    ctx.emit(
        f"archive:{cmd.archive_id}",
        ArchiveExpanded(archive_id=cmd.archive_id, selector=cmd.selector[:MAX_SELECTOR_CHARS],
                        sent_tokens=cmd.sent_tokens, session_id=ctx.session_id, encoding=cmd.encoding,
                        text_tokens=cmd.text_tokens, line_spans=cmd.line_spans),
    )
    return Expanded(budget=_consume(ctx, cmd.sent_tokens, "ctx_expand"))
