"""``read.record``: decide what each file read sends, and record it.

The operation (``leanctx.ops.read``) has already read, hashed, redacted and rendered every
file outside the write transaction; this handler runs inside it and decides, exactly:

- **stub or content.** The ~20-token stub (``F3=src/app.py [unchanged 120 lines · fresh=true
  to re-read]``; a ``lines:`` view names its lines: ``[unchanged lines 1-30 of 147 · …]``; the
  re-read it names is the caller's surface's, ``RecordRead.surface``: ``fresh=true`` for the
  tool over MCP, HTTP and ``lean-ctx call``, ``--fresh`` for ``lean-ctx read``; ``file.read``
  records its count, never its text) goes
  only to the conversation (agent id + session id, both set) whose
  ``deliveries`` row for (path, mode) holds this very content hash *and* that received this
  content whole in that mode (a non-stub delivery that was not capped: see
  ``leanctx.commands.read_rules``), so a capped answer never makes a later read a stub; never
  with ``fresh`` or ``raw``, never for a mode whose options are not in the key (``task``),
  never to another agent or session, never without a session.
- **diff.** A diff is sent only against a version this conversation holds *in full* (received
  whole in ``full`` mode, or as a diff, never a partial view or a capped answer) that is also
  its latest delivery of the path: the operation renders against the latest delivery; if that
  moved since it looked, or the conversation never received it in full, the full content is
  sent instead, with a note saying why; if the base is this very content, the stub is sent.
- **refs.** ``F1``..``Fn`` per session: the path's existing ref, else the next free number.
- **the cap.** Answers are capped together at ``cap_tokens`` (default 20,000, well under the
  25,000 clients accept): past it the rest of a view is left out, the whole view is in an
  archive (written by the operation beforehand, redacted), and the answer says how many lines
  were sent and where the rest is. The files are answered in order, each within what is left
  once everything later is kept back: every later file's *not-sent line*, and with several
  files the final note and one token per separator between answers (the CLI and the tool join
  the answers with a blank line), and the budget warning's line when this read can reach it.
  So the text sent, joined, stays within the cap. With several files, a file whose answer does
  not fit what is left, or would send none of its view, gets one line instead
  (``F7=src/b.py [aggressive · 147 lines · 877 tokens not sent]``; its view archived, the
  answer's ``archive_id``). Not read, it is recorded as named: mode ``unsent`` (``UNSENT_MODE``:
  no delivery key, so never a stub's or a diff's base; no HOT, no bounce, no raw claimed). The
  last of them is followed by one note: how many were not sent and how to get them (another call,
  or a larger cap: ``CAP_HINTS`` per surface). Every file is sent, stubbed or named as not sent.
  A read of so many files that naming them all does not fit under the cap is refused
  (``READ_CAP_TOO_SMALL``). A single file keeps its capped answer, even one that sends none of
  its view: it names the archive and the ``expand`` call that pages through it.
  ``archive.created`` is emitted the first time the log hears of that archive
  (``leanctx.commands.archives.record_archive``, as shell, search and tree do):
  archives are content-addressed, so a later capped read of the same view, by any agent or
  session, names the same archive and emits nothing more (nor does a second answer of the same
  call naming it). A capped answer records ``sent_lines``, the leading lines of the view it sent
  whole, so the savings projection knows which archive lines the conversation already holds. An
  archive that is not one (id shape, sha256, counts: ``check_archive``) refuses the call with
  ``READ_INVALID_RECORD``. The composition of each answer (header, exact token count, head of a
  capped view, cap notice) is in ``leanctx.commands.read_compose``.
- **scent and budget.** Another agent's active claim is noted inline (``[scent: claimed by
  cursor-dev-1, 4m ago]``); every read deposits HOT on the file (not one named as not sent), and
  a full read that is a *bounce* (a non-stub compressed read — not a ``lines:`` read, which
  sends plain lines — of the same path and content in this conversation at most 3 calls before:
  the savings projection's definition) also deposits STUCK, in the same transaction;
  ``enforce_budget`` refuses the whole call with ``BUDGET_EXCEEDED`` at 100 %; the tokens sent
  are consumed and at >= 80 % the budget's warning line is added to the last answer.

Every answer states its mode, line count and the tokens sent (``sent_tokens`` = the tokenizer
count of exactly the text returned, stub included), and how many secrets were redacted in the
text it sends (not in the rest of the file).
"""

from __future__ import annotations

import re

import msgspec

from ..archive import ArchiveInfo, ArchiveStore
from ..errors import InvalidInput
from ..events.kinds.context import UNSENT_MODE, FileRead
from ..projections.budgets import make_state
from ..projections.deliveries import (
    last_delivery,
    latest_delivery,
    next_ref_number,
    ref_for,
)
from .archives import check_archive, record_archive
from .budgets import consume, enforce_budget
from .bus import Command, CommandContext, handles
from .read_compose import (
    CAP_HINTS,
    cap_note,
    cap_note_reserve,
    compose,
    count_tokens,
    cut_lines,
    not_sent,
    not_sent_line,
    redact_keeping_lines,
    warning_reserve,
)
from .read_rules import DIFF_BASE_MODES, holds_whole, is_bounce
from .scent import claim_note, emit_deposit

__all__ = [
    "DEFAULT_CAP_TOKENS",
    "MAX_CAP_TOKENS",
    "MAX_PATHS",
    "MIN_CAP_TOKENS",
    "REREAD_HINTS",
    "ArchiveInfo",
    "ReadAnswer",
    "ReadFile",
    "ReadView",
    "RecordRead",
    "check_cap",
    "cut_lines",
    "redact_keeping_lines",
    "stub_eligible",
    "stub_text",
]

DEFAULT_ENCODING = "o200k_base"  # = leanctx.context.tokens.DEFAULT_ENCODING (not imported: the CLI starts light)
DEFAULT_CAP_TOKENS = 20_000
MAX_CAP_TOKENS = 24_000  # clients reject tool results past 25,000 tokens; notices need a margin
MIN_CAP_TOKENS = 200
MAX_PATHS = 32
REREAD_HINTS = {"tool": "fresh=true", "cli": "--fresh"}  # per surface: how its caller asks for a re-read
_STUB_MODES = frozenset({"full", "map", "signatures", "aggressive", "entropy"})
_LINES_KEY = re.compile(r"^lines:\d+-\d+(?:,\d+-\d+)*$|^task:[0-9a-f]{12}$")  # keys that name their rendering


class ReadView(msgspec.Struct, frozen=True):
    """One rendering of a file, ready to send."""

    mode: str  # the delivery key: full, map, signatures, aggressive, entropy, lines:1-40, task:<digest>, diff
    label: str  # how the header names it (``auto→signatures``, ``diff vs F3@1a2b3c4d``)
    body: str
    tokens: int  # of ``body``
    cum: list[int] | None = None  # cumulative tokens per body line (set when the view may be capped)
    archive: ArchiveInfo | None = None  # the view, archived (set when it may be capped)
    diff_base: str | None = None  # ``diff``: the content hash it compares with
    notes: list[str] = []  # lines added after the body (why a diff became full content, ...)
    reason: str | None = None  # why ``auto`` chose this mode
    detail: str | None = None  # what the view leaves out (the mode's footer note), for the header


class ReadFile(msgspec.Struct, frozen=True):
    path: str  # project-relative, normalized
    content_hash: str  # sha256 of the file's bytes
    lines: int
    raw_tokens: int  # the whole (redacted) file, as a plain read would have sent it
    redactions: int
    requested_mode: str
    view: ReadView
    alt: ReadView | None = None  # the full content, when ``view`` is a diff whose base may move


class RecordRead(Command, frozen=True):
    name = "read.record"
    files: list[ReadFile]
    fresh: bool = False
    raw: bool = False
    cap_tokens: int = DEFAULT_CAP_TOKENS
    encoding: str = DEFAULT_ENCODING
    archive_root: str | None = None  # where the operation archived capped views
    surface: str = "tool"  # a key of REREAD_HINTS: the stub names that surface's way to re-read


class ReadAnswer(msgspec.Struct, frozen=True):
    """What one path of a read sent."""

    path: str
    text: str  # exactly what the agent receives for this path
    mode: str
    requested_mode: str
    lines: int
    sent_tokens: int
    raw_tokens: int
    content_hash: str
    ref: str | None = None
    stub: bool = False
    fresh: bool = False
    capped: bool = False
    archive_id: str | None = None
    redactions: int = 0
    scent: str | None = None
    budget_warning: str | None = None
    reason: str | None = None


def stub_eligible(mode: str) -> bool:
    """Modes whose key says everything about the rendering (``task:<digest of its text>``)."""
    return mode in _STUB_MODES or bool(_LINES_KEY.match(mode))


def shown_mode(key: str) -> str:
    """The mode an answer names: its delivery key without a task's digest (``task:1a2b…`` → ``task``)."""
    return "task" if key.startswith("task:") else key


def check_cap(cap: object, code: str) -> None:
    """Refuse an answer cap outside ``MIN_CAP_TOKENS``..``MAX_CAP_TOKENS`` with ``code`` (one rule
    for reads and, through ``ops.cap``, shell answers)."""
    if isinstance(cap, bool) or not isinstance(cap, int) or not MIN_CAP_TOKENS <= cap <= MAX_CAP_TOKENS:
        raise InvalidInput(code, f"the answer cap must be between {MIN_CAP_TOKENS} and {MAX_CAP_TOKENS:,} tokens,"
                           f" not {cap!r}")


def stub_text(head: str, lines: int, mode: str = "full", surface: str = "tool") -> str:
    """The stub of an unchanged re-read: what the conversation holds. A ``lines:`` view names its
    lines (``[unchanged lines 1-30 of 147 · …]``); every other view the whole file's line count.
    It ends with the way to re-read of the caller's ``surface`` (``REREAD_HINTS``)."""
    hint = REREAD_HINTS[surface]
    if mode.startswith("lines:"):
        return f"{head} [unchanged lines {mode[6:]} of {lines} · {hint} to re-read]"
    return f"{head} [unchanged {lines} line{'' if lines == 1 else 's'} · {hint} to re-read]"


class _Answer(msgspec.Struct):
    f: ReadFile
    view: ReadView
    text: str
    tokens: int
    ref: str | None
    stub: bool
    capped: bool
    archive: ArchiveInfo | None
    scent: str | None
    warning: str | None = None
    deferred: int | None = None  # a capped answer: tokens of the view left in the archive
    sent_lines: int | None = None  # a capped answer: leading lines of the view sent whole
    unsent: bool = False  # the one line of a file not sent


class _Plan(msgspec.Struct, frozen=True):
    """What one file's answer would be before the cap: its ref, header name, view, stub or not."""

    f: ReadFile
    ref: str | None
    head: str
    view: ReadView
    stub: bool
    scent: str | None


def _diff_refused(ctx: CommandContext, path: str, base: str) -> str | None:
    """Why a diff against ``base`` may not be sent to this conversation (None: it may)."""
    latest = latest_delivery(ctx.conn, ctx.actor, ctx.session_id, path, project=ctx.project)
    if latest is None or latest.content_hash != base:
        return "this conversation read the file again meanwhile"
    if not holds_whole(ctx.conn, ctx.actor, ctx.session_id, path, base, DIFF_BASE_MODES, project=ctx.project):
        return (f"this conversation never received {base[:8]} in full (only a partial view or a capped answer),"
                " so there is nothing to diff against")
    return None


@handles(RecordRead, emits=("file.read", "archive.created", "scent.deposited", "budget.consumed"),
         result=list[ReadAnswer])
def record(ctx: CommandContext, cmd: RecordRead) -> list[ReadAnswer]:
    check_cap(cmd.cap_tokens, "READ_INVALID_CAP")
    if cmd.surface not in REREAD_HINTS:
        raise InvalidInput("READ_INVALID_RECORD", f"surface must be one of {sorted(REREAD_HINTS)}, not {cmd.surface!r}")
    if not cmd.files:
        raise InvalidInput("READ_NO_PATHS", "name at least one file to read")
    budget = enforce_budget(ctx)
    conn = ctx.conn
    agent, session, project = ctx.actor, ctx.session_id, ctx.project
    conv = bool(agent and session)
    archives = ArchiveStore(cmd.archive_root) if cmd.archive_root else None
    next_ref = next_ref_number(conn, session, project=project) if session else 0
    given: dict[str, str] = {}
    if len(cmd.files) > MAX_PATHS:
        raise InvalidInput("READ_TOO_MANY_PATHS", f"read at most {MAX_PATHS} files per call, not {len(cmd.files)}")
    plans: list[_Plan] = []
    for f in cmd.files:  # refs, the view each file would send, stubs: decided before any cap
        ref = given.get(f.path) or ref_for(conn, session, f.path, project=project)
        if ref is None and session:
            ref = f"F{next_ref}"
            next_ref += 1
        if ref is not None:
            given[f.path] = ref
        head = f"{ref}={f.path}" if ref else f.path
        view = f.view
        stub = False
        if view.diff_base is not None:
            why = _diff_refused(ctx, f.path, view.diff_base)
            if why or (cmd.fresh and view.diff_base == f.content_hash) or cmd.raw:
                if f.alt is None:
                    raise InvalidInput("READ_NO_FALLBACK", "a diff view needs its full-content fallback")
                view = f.alt
                if why and not cmd.raw:
                    view = msgspec.structs.replace(view, notes=[*view.notes, f"[diff: {why}; full content sent]"])
            elif view.diff_base == f.content_hash:
                stub = conv
        elif conv and not cmd.fresh and not cmd.raw and stub_eligible(view.mode):
            last = last_delivery(conn, agent, session, f.path, view.mode, project=project)
            stub = (last is not None and last.content_hash == f.content_hash
                    and holds_whole(conn, agent, session, f.path, f.content_hash, (view.mode,), project=project))
        plans.append(_Plan(f, ref, head, view, stub, claim_note(ctx, f.path)))

    # the cap: each answer gets what is left once every later file's not-sent line, the final
    # note, the separators between answers and a budget warning are kept back (see the module doc)
    many = len(plans) > 1
    unsent_tokens = [count_tokens(not_sent_line(p.head, p.view.label, p.f.lines, p.view.tokens), cmd.encoding)
                     for p in plans] if many else [0]
    kept = warning_reserve(agent, budget.limit, budget.used, cmd.cap_tokens, cmd.encoding)
    if many:
        kept += cap_note_reserve(len(plans), cmd.cap_tokens, cmd.surface, cmd.encoding) + len(plans) - 1
        if sum(unsent_tokens) + kept > cmd.cap_tokens:
            raise InvalidInput("READ_CAP_TOO_SMALL",
                               f"naming each of the {len(plans)} files of this read takes"
                               f" {sum(unsent_tokens) + kept:,} tokens, over the {cmd.cap_tokens:,}-token cap:"
                               f" read fewer files per call, or raise the cap ({CAP_HINTS[cmd.surface]})")
    later = sum(unsent_tokens)
    remaining = cmd.cap_tokens
    done: list[_Answer] = []
    for p, own in zip(plans, unsent_tokens, strict=True):
        later -= own
        allowed = max(0, remaining - later - kept)
        f, view, head, ref, scent = p.f, p.view, p.head, p.ref, p.scent
        a: _Answer | None = None
        if p.stub:
            text = stub_text(head, f.lines, view.mode, cmd.surface) + (f"\n{scent}" if scent else "")
            n = count_tokens(text, cmd.encoding)
            if n <= allowed or not many:
                a = _Answer(f, view, text, n, ref, True, False, None, scent)
        else:
            c = compose(cmd, f, view, head, scent, allowed, archives)
            # with several files, an answer past what is left, or one that sends none of its view,
            # gives way to the one line saying it was not sent (its whole view still archived)
            if many and (c.tokens > allowed or (c.capped and c.deferred == view.tokens)):
                c = not_sent(cmd, f, view, head, archives)
            if c.archive is not None:  # the operation's archive, recorded as given: it must be one
                check_archive(c.archive, "READ_INVALID_RECORD")
            a = _Answer(f, view, c.text, c.tokens, ref, False, c.capped, c.archive, None if c.unsent else scent,
                        deferred=c.deferred, sent_lines=c.sent_lines, unsent=c.unsent)
        if a is None:  # a stub past what is left
            c = not_sent(cmd, f, view, head, archives)
            a = _Answer(f, view, c.text, c.tokens, ref, False, True, c.archive, None, deferred=c.deferred,
                        sent_lines=0, unsent=True)
        done.append(a)
        remaining = max(0, remaining - a.tokens)
    unsent = [a for a in done if a.unsent]
    if unsent:  # how to get them, said once, after the last of them
        final = unsent[-1]
        final.text += "\n" + cap_note(len(unsent), len(done), cmd.cap_tokens, cmd.surface)
        final.tokens = count_tokens(final.text, cmd.encoding)

    total = sum(a.tokens for a in done)
    if agent and budget.limit:
        after = make_state(agent, budget.limit, budget.used + total)
        if after.warning_line:
            final = done[-1]
            final.text = f"{final.text}\n[{after.warning_line}]"
            new = count_tokens(final.text, cmd.encoding)
            total += new - final.tokens
            final.tokens = new
            final.warning = after.warning_line

    stuck: set[int] = set()  # the answers that are a bounce: one STUCK each
    if agent:
        compressed: set[tuple[str, str]] = set()  # earlier answers of this very call
        answered: set[str] = set()  # paths a full read of this call already answered (the log's are resolved)
        for i, a in enumerate(done):
            key = (a.f.path, a.f.content_hash)
            if a.unsent or a.stub or a.view.mode.startswith("lines:"):  # not read, a reference, or plain lines
                continue
            if a.view.mode != "full":
                compressed.add(key)
                continue
            if key in compressed or (a.f.path not in answered and is_bounce(ctx, a.f.path, a.f.content_hash)):
                stuck.add(i)
            compressed = {c for c in compressed if c[0] != a.f.path}
            answered.add(a.f.path)

    out: list[ReadAnswer] = []
    for i, a in enumerate(done):
        f = a.f
        lines_view = a.view.mode.startswith("lines:") and not (a.stub or a.unsent)
        ctx.emit(
            f"file:{f.content_hash}",
            FileRead(path=f.path, mode=UNSENT_MODE if a.unsent else a.view.mode, requested_mode=f.requested_mode,
                     content_hash=f.content_hash,
                     lines=f.lines, raw_tokens=f.raw_tokens, sent_tokens=a.tokens, stub=a.stub, fresh=cmd.fresh,
                     ref=a.ref, archive_id=a.archive.archive_id if a.archive else None, redactions=f.redactions,
                     session_id=session, encoding=cmd.encoding,
                     view_tokens=a.view.tokens if a.capped else None, deferred_tokens=a.deferred if a.capped else None,
                     plain_tokens=a.view.tokens if lines_view else None,
                     sent_lines=a.sent_lines if a.capped else None),
        )
        if a.archive is not None:  # once per archive, ever (record_archive skips one already queued)
            record_archive(ctx, a.archive)
        if agent and not a.unsent:  # a file named as not sent was not read
            emit_deposit(ctx, f.path, "HOT")
            if i in stuck:  # a bounce: the compressed read did not serve
                emit_deposit(ctx, f.path, "STUCK")
        out.append(ReadAnswer(
            path=f.path, text=a.text, mode=shown_mode(a.view.mode), requested_mode=f.requested_mode, lines=f.lines,
            sent_tokens=a.tokens, raw_tokens=f.raw_tokens, content_hash=f.content_hash, ref=a.ref, stub=a.stub,
            fresh=cmd.fresh, capped=a.capped, archive_id=a.archive.archive_id if a.archive else None,
            redactions=f.redactions, scent=a.scent, budget_warning=a.warning, reason=a.view.reason,
        ))
    if agent:
        consume(ctx, agent, total, "ctx_read")
    return out
