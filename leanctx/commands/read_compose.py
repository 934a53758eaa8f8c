"""The text of one ``read.record`` answer (see ``leanctx.commands.read``): its header with the
exact token count of the whole answer, the view's body, and — past the answer cap — the head
of the view that fits, with the notice that names the archive holding the rest; the one line
of a file a read of several files did not send, the note said once after the last of them, and
the tokens the handler keeps back for them and for a budget warning.

Pure text and counts: nothing here reads the log or emits; the handler decides stubs, diffs,
refs and scent, and records what this module composed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from ..archive import ArchiveInfo, ArchiveStore
from ..errors import InvalidInput
from ..projections.budgets import make_state
from .read_rules import secrets_sent

if TYPE_CHECKING:
    from .read import ReadFile, ReadView, RecordRead

__all__ = ["CAP_HINTS", "Composed", "cap_note", "cap_note_reserve", "compose", "count_tokens", "cut_lines",
           "not_sent", "not_sent_line", "redact_keeping_lines", "warning_reserve", "with_count"]

DEFAULT_ENCODING = "o200k_base"  # = leanctx.context.tokens.DEFAULT_ENCODING (not imported: the CLI starts light)
CAP_HINTS = {"tool": "max_tokens", "cli": "--max-tokens"}  # per surface: how its caller raises the answer cap


class Composed(msgspec.Struct, frozen=True):
    """One composed answer: its text and token count; when capped, the archive holding the
    whole view, the view's tokens left out of the answer (``deferred``) and how many of its
    leading lines were sent whole (``sent_lines``; a line cut by characters is not one)."""

    text: str
    tokens: int
    capped: bool = False
    archive: ArchiveInfo | None = None
    deferred: int | None = None
    sent_lines: int | None = None  # capped: how many leading lines of the view were sent whole
    unsent: bool = False  # the one line of a file not sent (several files past the cap)


def redact_keeping_lines(text: str) -> tuple[str, int]:
    """``redact(text)`` with the line structure kept, by the same rules as shell and search
    (``leanctx.ops.files.redact_text``): a private key block becomes ``[REDACTED:private_key]``
    followed by as many newlines as it spanned, and a block with no END line is redacted to the
    end of the text, so line numbers still match the file. Returns (text, number of redactions)."""
    from ..ops.files import redact_text  # imported on first use, like the tokenizer

    return redact_text(text)


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """The tokenizer count (imported on first use: importing commands must not load tiktoken)."""
    from ..context.tokens import count_tokens as count

    return count(text, encoding)


def cut_lines(cum: list[int], budget: int, limit: int | None = None) -> int:
    """How many leading lines (at most ``limit``) fit in ``budget`` tokens (``cum[i]`` = tokens of
    lines 0..i)."""
    lo, hi = 0, len(cum) if limit is None else limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if cum[mid - 1] <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def with_count(make: Callable[[int], str], rest: str, encoding: str) -> tuple[str, int]:
    """``make(n) + rest`` where ``n`` is the token count of the whole text (a fixed point)."""
    r = count_tokens(rest, encoding)
    n = r + count_tokens(make(r + 20), encoding)  # usually exact: one more count confirms it
    text = ""
    for _ in range(6):
        text = make(n) + rest
        m = count_tokens(text, encoding)
        if m == n:
            return text, n
        n = m
    return text, count_tokens(text, encoding)


def header(head: str, label: str, lines: int, extras: list[str]) -> Callable[[int], str]:
    def make(n: int) -> str:
        parts = [label, f"{lines} line{'' if lines == 1 else 's'}", f"{n:,} tokens", *extras]
        return f"{head} [{' · '.join(parts)}]"

    return make


def _cap_notice(cap: int, aid: str, k: int, chars: int, line_len: int, total: int, rest_tokens: int,
                estimated: bool = False) -> str:
    """The notice of a capped answer: what was sent, where the rest is, the call that gets it.
    ``rest_tokens``: what following it will send (``expand``'s ``N:`` prefixes included)."""
    # a long rest is priced from a sample of its lines (``leanctx.ops.followup``)
    rest = f"~{rest_tokens:,} tokens" + (", estimated from a sample" if estimated else "")
    if chars:  # line k + 1 alone did not fit: its first characters are sent
        step = min(line_len, 2 * chars)
        return (f"[capped at {cap:,} tokens: {'lines 1-' + str(k) + ' and ' if k else ''}"
                f"characters 1-{chars:,} of line {k + 1} ({line_len:,} characters) of the {total}-line view"
                f" sent · the view ({rest}) is archived as {aid} · next: lean-ctx expand"
                f" {aid} --lines '{k + 1}[{chars + 1}-{step}]'"
                + (f", then --lines {k + 2}-{total}]" if k + 1 < total else "]"))
    if k:
        return (f"[capped at {cap:,} tokens: lines 1-{k} of the {total}-line view sent · lines"
                f" {k + 1}-{total} ({rest}) archived as {aid} · lean-ctx expand {aid}"
                f" --lines {k + 1}-{total}]")
    return (f"[capped at {cap:,} tokens: not sent · the {total}-line view"
            f" ({rest}) is archived as {aid} · lean-ctx expand {aid} --lines 1-{total}]")


def _plural(n: int, word: str) -> str:
    """``1 line``, ``1200 lines`` (no thousands separator, like the headers' line counts): the
    rule of ``leanctx.context.modes.rendered.plural``, not imported from there because importing
    that package loads every read mode (~12 ms on each command start)."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def not_sent_line(head: str, label: str, lines: int, view_tokens: int) -> str:
    """The answer of a file a read of several files did not send (past its cap): its name, its
    view and what sending it would have cost."""
    return f"{head} [{label} · {_plural(lines, 'line')} · {view_tokens:,} tokens not sent]"


def cap_note(unsent: int, files: int, cap: int, surface: str) -> str:
    """Said once, after the last file not sent: why, and how to get them."""
    return (f"[{unsent} of {_plural(files, 'file')} not sent: past the {cap:,}-token cap · read them in another"
            f" call, or raise the cap ({CAP_HINTS[surface]})]")


def cap_note_reserve(files: int, cap: int, surface: str, encoding: str) -> int:
    """The tokens kept back for ``cap_note`` (and its newline) in a read of ``files`` files."""
    return count_tokens("\n" + cap_note(files, files, cap, surface), encoding) + 2  # + a merge at either end


def warning_reserve(agent: str | None, limit: int, used: int, cap: int, encoding: str) -> int:
    """The tokens kept back for the budget warning line added to the last answer, when this
    read can bring the agent to it (the longest line it could get: the exceeded one)."""
    worst = used + cap
    if not agent or not limit or worst * 5 < limit * 4:
        return 0
    lines = [make_state(agent, limit, u).warning_line for u in {max(worst, limit), min(worst, limit - 1)}]
    return max(count_tokens(f"\n[{ln}]", encoding) for ln in lines if ln) + 2


def _archive_of(cmd: RecordRead, view: ReadView, archives: ArchiveStore | None) -> ArchiveInfo:
    """The archive of a view the answer leaves out, in whole or in part: the operation's, else
    written now (it foresees every view that may be cut, so this is a safety net)."""
    if view.archive is not None:
        return view.archive
    if archives is None:
        raise InvalidInput("READ_CAP_NO_ARCHIVE", "the answer is past the cap and no archive is configured")
    body = view.body.removesuffix("\n")
    aid, digest, _ = archives.put(redact_keeping_lines(view.body)[0] if cmd.raw else view.body)
    return ArchiveInfo(aid, digest, len(view.body.encode("utf-8", "surrogatepass")),
                       len(body.split("\n")) if body else 0, view.tokens, source="read")


def not_sent(cmd: RecordRead, f: ReadFile, view: ReadView, head: str, archives: ArchiveStore | None) -> Composed:
    """The one-line answer of a file not sent: a capped answer that sent none of its view (the
    whole view archived); the handler records it as named, not read (``UNSENT_MODE``)."""
    text = not_sent_line(head, view.label, f.lines, view.tokens)
    return Composed(text, count_tokens(text, cmd.encoding), True, _archive_of(cmd, view, archives), view.tokens, 0,
                    unsent=True)


def compose(cmd: RecordRead, f: ReadFile, view: ReadView, head: str, scent: str | None,
            remaining: int, archives: ArchiveStore | None) -> Composed:
    """The answer for one file, within ``remaining`` tokens (capped past them)."""
    enc = cmd.encoding
    base: list[str] = [view.detail] if view.detail else []

    def extras(sent: str) -> list[str]:
        if cmd.raw:
            return [*base, "raw"]
        k = secrets_sent(sent, f.redactions)  # in the text sent, not in the rest of the file
        return [*base, f"{k} secret{'s' if k != 1 else ''} redacted"] if k else base

    tail = [*view.notes, *([scent] if scent else [])]
    body = view.body.removesuffix("\n")
    rest = "\n" + body if body else ""
    if tail:
        rest += "\n" + "\n".join(tail)
    text, n = with_count(header(head, view.label, f.lines, extras(body)), rest, enc)
    if n <= remaining:
        return Composed(text, n)
    # past the cap: send the head of the view, the whole view is in the archive
    info = _archive_of(cmd, view, archives)
    body_lines = body.split("\n") if body else []
    cum = view.cum
    if cum is None or len(cum) != len(body_lines):
        from ..context.tokens import cumulative_tokens

        cum = cumulative_tokens([ln + "\n" for ln in body_lines], enc)  # as the operation computes it
    total = len(body_lines)

    priced: dict[tuple[int, int], tuple[int, bool]] = {}
    numbered: list[bool] = []

    def follow_up(k: int, chars: int) -> tuple[int, bool]:
        """What the notice's next calls will send, priced once per cut: ``expand`` numbers the
        lines of an archive, except a view whose rows carry their file line numbers already
        (``lines:``), which it sends as they are."""
        if (k, chars) not in priced:
            from ..ops.expand import numbered_view
            from ..ops.followup import lines_rest, plain_cost

            if not numbered:
                numbered.append(numbered_view(body_lines))
            if numbered[0]:
                rest = body_lines[k:]
                c = plain_cost("\n".join([rest[0][chars:], *rest[1:]] if chars and rest else rest), enc)
            else:
                c = lines_rest(body_lines, k, chars, enc)
            priced[(k, chars)] = (c.tokens, c.estimated)
        return priced[(k, chars)]

    def build(k: int, chars: int = 0) -> tuple[str, int]:
        rest_tokens, estimated = follow_up(k, chars)
        notice = _cap_notice(cmd.cap_tokens, info.archive_id, k, chars, len(body_lines[k]) if chars else 0, total,
                             rest_tokens, estimated)
        part = "\n".join([*body_lines[:k], *([body_lines[k][:chars]] if chars else [])])
        r = ("\n" + part if part else "") + "\n" + notice
        if tail:
            r += "\n" + "\n".join(tail)
        return with_count(header(head, view.label, f.lines, [*extras(part), "capped"]), r, enc)

    overhead = count_tokens(build(0)[0], enc)
    budget = max(0, remaining - overhead)
    k = cut_lines(cum, budget)
    chars = 0
    if k < total and (cum[k - 1] if k else 0) < budget // 2 and body_lines[k]:
        # the next line alone is long (a minified file): send what fits of it, cut by characters
        from ..ops.cap import char_prefix

        room = budget - (cum[k - 1] if k else 0) - 80  # the longer notice
        chars = min(len(body_lines[k]) - 1, char_prefix(body_lines[k], max(0, room), enc))
        chars = max(chars, 0)
    text, n = build(k, chars)
    while n > remaining and chars:  # the estimate was short: fewer characters
        chars = max(0, chars - max(64, (n - remaining) * 8))
        text, n = build(k, chars)
    while n > remaining and k > 0:  # the estimate was short: step back
        k = cut_lines(cum, max(0, (cum[k - 1] if k else 0) - (n - remaining) - 1))
        text, n = build(k)
    sent_tokens = (cum[k - 1] if k else 0) + (count_tokens(body_lines[k][:chars], enc) if chars else 0)
    return Composed(text, n, True, info, max(0, view.tokens - sent_tokens), k)
