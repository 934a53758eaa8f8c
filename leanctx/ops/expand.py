"""ctx_expand: send back an archived output, whole or a head, tail, line range or the lines
matching a regex (numbered like the omission markers), within the answer cap, and record
``archive.expanded`` with the tokens actually sent (the budget warning line the expansion brings
included, ``ops.budget_line``).

Selectors (one at a time): ``head`` / ``tail`` N lines (N >= 1), ``lines`` ``"A-B"`` (``"A-"``
to the end, ``"A"`` one line; numbered ``N:line``), ``grep`` a regex (matching lines,
numbered), or nothing (the whole archive). ``lines`` also addresses characters of one line:
``"L[A-B]"`` (or ``"L[A-]"``) sends characters A..B of line L as they are (1-based,
inclusive), for lines too long to send whole (a minified file is one line).

The cap: every answer is at most the read cap (``ops.cap``: 20,000 tokens, ``max_tokens``
lowers it, at least ``MIN_CAP_TOKENS`` (200) and at most 24,000). Past it, the answer ends with
a notice saying how many selected lines were not sent, about how many tokens following it will
cost (``~N tokens not sent``: the rows as the ``--lines`` answers send them, ``N:`` prefixes
included, and the rest of a line cut by characters as it is; ``leanctx.ops.followup``), and
the call that continues from the first line not sent (``--lines N-M``); a first line too long
for the cap is cut by characters (a prefix of it is always sent, so following notices always
makes progress) and the notice names the ``--lines 'L[A-B]'`` call for the rest of it.

The archived view of a read whose lines carry their numbers (``lines:`` and ``task`` views:
``N<TAB>line`` rows between ``… lines A-B not shown`` gaps and a ``[…]`` footer; see
``numbered_view``) is sent as it is: its rows are not numbered again (``N:`` would double the
numbers, ~15 % more tokens, and mix the view's line numbers with the file's). Selectors and
``--lines A-B`` still count the archive's (the view's) lines, as the cap notices do; a notice
also names the file lines its follow-up holds (``… not sent (file lines 154-400) · next: …
--lines 56-304``).

Chains through a huge archive stay linear: an answer counts its lines only as far as the cap
reaches (``cap_lines`` with ``rest``), and a rest longer than ``followup.EXACT_CHARS`` is
estimated from a sample of its rows (the notice then says ``estimated from a sample of
them``), so each answer costs about its own size, not that of everything after it.

Chains: an answer to ``L[A-B]`` that stops short of the end of line L (sent whole, or cut) ends
with a notice naming the next character range (``line 1 goes on to char 358,732 · next: …
--lines '1[169635-254398]'``), so following the notices one after another recovers a line of
any length exactly. A line of at most ``SHORT_LINE_TOKENS`` tokens, which no answer ever cuts,
is sliced without that notice (``13[1-8]`` sends just those 8 characters). A range that ends
line L when lines follow it names them (``--lines L+1-N``). Line selections (``head``,
``lines A-B``) answered whole are sent as asked, with no notice.

Refusals (``InvalidInput``, exit 2 on the CLI, a tool error on MCP): ``EXPAND_INVALID_RANGE``
(malformed, or starting after the end of the archive or of the line), ``EXPAND_EMPTY_RANGE``
(``head`` / ``tail`` 0: nothing selected), ``EXPAND_ONE_SELECTOR``, ``EXPAND_INVALID_COUNT``
(a count, or ``max_tokens``, that is not a positive whole number), ``EXPAND_INVALID_CAP``
(``max_tokens`` below ``MIN_CAP_TOKENS``: too small to send anything with its notice),
``EXPAND_INVALID_REGEX``; ``ARCHIVE_NOT_FOUND`` / ``ARCHIVE_INVALID_ID`` from the store.
Messages name the selectors neutrally (``head 0 selects nothing``): the same text serves the CLI
flags and the MCP arguments.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from ..archive import ArchiveStore
from ..commands.shell import MAX_LINE_SPANS, ExpandArchive
from ..context.secrets import redact
from ..errors import InvalidInput
from .budget_line import sent_with_warning, with_warning
from .cap import (
    ANSWER_CAP_TOKENS,
    MAX_CAP_TOKENS,
    MIN_CAP_TOKENS,
    Cut,
    cap_lines,
    char_prefix,
)
from .followup import Cost, number_chars, numbered_cost, plain_cost

if TYPE_CHECKING:
    from ..app import LeanCtx

__all__ = ["SHORT_LINE_TOKENS", "Expansion", "expand", "numbered_view", "parse_line_range"]

SHORT_LINE_TOKENS = 32  # a line this short is never cut by an answer: slicing it needs no "goes on" notice
_NOTICE_RESERVE = 100  # tokens kept for the notice when sizing the next character range


class Expansion(msgspec.Struct, frozen=True):
    archive_id: str
    selector: str  # full | head:N | tail:N | lines:A-B | lines:L[A-B] | grep:RE
    text: str
    lines: int  # lines of the archive selected
    total_lines: int  # lines in the archive
    sent_tokens: int
    truncated_lines: int = 0  # selected lines not sent whole, to stay under the cap (stated in text)
    budget_warning: str | None = None
    capped: bool = False  # the selection was over the cap: the text ends with what to ask next
    cap_tokens: int = ANSWER_CAP_TOKENS


_RANGE = re.compile(r"^\s*(\d+)\s*(?:[-:]\s*(\d+)?\s*)?$")
_FILE_ROW = re.compile(r" *(\d+)\t")  # a row of a numbered view (``render_lines``: right-aligned number, a tab)


def numbered_view(lines: list[str]) -> bool:
    """True when ``lines`` (an archive) is a read view whose rows carry their file line numbers:
    every line is a ``N<TAB>…`` row (numbers ascending), a gap (``… …``) or a bracketed
    header / footer (``[…]``), and there is at least one row."""
    last = 0
    for ln in lines:
        m = _FILE_ROW.match(ln)
        if m is not None:
            k = int(m.group(1))
            if k <= last:
                return False
            last = k
        elif not (ln.startswith("… ") or (ln.startswith("[") and ln.endswith("]"))):
            return False
    return last > 0


def _file_lines(rows: list[tuple[int, str]]) -> str:
    """`` (file lines A-B)``: the file line numbers of a numbered view's rows, or "" when none."""
    nums = [int(m.group(1)) for _, t in rows if (m := _FILE_ROW.match(t)) is not None]
    if not nums:
        return ""
    return f" (file line {nums[0]})" if nums[0] == nums[-1] else f" (file lines {nums[0]}-{nums[-1]})"
_CHARS = re.compile(r"^\s*(\d+)\s*\[\s*(\d+)\s*(?:-\s*(\d+)?\s*)?\]\s*$")


def parse_line_range(spec: str) -> tuple[int, int | None]:
    """``"A-B"`` → (A, B); ``"A-"`` → (A, None: to the end); ``"A"`` → (A, A). 1-based, inclusive."""
    m = _RANGE.match(spec)
    if not m:
        raise InvalidInput("EXPAND_INVALID_RANGE", f"{spec!r} is not a line range; use A-B (e.g. 120-180), A- or A,"
                           " or L[A-B] for characters A-B of line L")
    a = int(m.group(1))
    b = None if (m.group(2) is None and ("-" in spec or ":" in spec)) else int(m.group(2) or a)
    if a < 1 or (b is not None and b < a):
        raise InvalidInput("EXPAND_INVALID_RANGE", f"{spec!r}: lines are numbered from 1 and A must not exceed B")
    return a, b


def _parse_chars(spec: str) -> tuple[int, int, int | None] | None:
    """``"L[A-B]"`` → (L, A, B); ``"L[A-]"`` → (L, A, None); ``"L[A]"`` → (L, A, A); else None."""
    m = _CHARS.match(spec)
    if not m:
        return None
    line, a = int(m.group(1)), int(m.group(2))
    has_dash = "-" in spec[spec.index("["):]
    b = int(m.group(3)) if m.group(3) else (None if has_dash else a)
    if line < 1 or a < 1 or (b is not None and b < a):
        raise InvalidInput("EXPAND_INVALID_RANGE", f"{spec!r}: lines and characters are numbered from 1 and A must"
                           " not exceed B (L[A-B])")
    return line, a, b


def _past_end(spec: str, archive_id: str, total: int, verb: str = "starts") -> InvalidInput:
    return InvalidInput("EXPAND_INVALID_RANGE", f"{spec} {verb} after the end of archive {archive_id} ({total:,} line"
                        f"{'s' if total != 1 else ''}); ask for lines within 1-{total}", lines=total)


def _select(archive_id: str, lines: list[str], head: int | None, tail: int | None, line_range: str | None,
            grep: str | None) -> tuple[str, list[tuple[int, str]], bool, int]:
    """(selector, [(1-based number, line)], numbered?, first character: 0 unless L[A-B])."""
    given = [k for k, v in (("head", head), ("tail", tail), ("lines", line_range), ("grep", grep)) if v is not None]
    if len(given) > 1:
        raise InvalidInput("EXPAND_ONE_SELECTOR", f"use one selector of head, tail, lines, grep (got"
                           f" {', '.join(given)})")
    numbered = list(enumerate(lines, 1))
    for name, n in (("head", head), ("tail", tail)):
        if n is None:
            continue
        if n < 0:
            raise InvalidInput("EXPAND_INVALID_COUNT", f"{name} takes a positive number of lines")
        if n == 0:
            raise InvalidInput("EXPAND_EMPTY_RANGE", f"{name} 0 selects nothing; ask for at least 1 line (archive"
                               f" {archive_id} has {len(lines):,})", lines=len(lines))
        return (f"head:{n}", numbered[:n], False, 0) if name == "head" else (
            f"tail:{n}", numbered[len(numbered) - n:], False, 0)
    if line_range is not None:
        chars = _parse_chars(line_range)
        if chars is not None:
            k, a, b = chars
            if k > len(lines):
                raise _past_end(f"line {k}", archive_id, len(lines), "is")
            line = lines[k - 1]
            if a > len(line):
                raise InvalidInput("EXPAND_INVALID_RANGE", f"line {k} of archive {archive_id} has {len(line):,}"
                                   f" characters; ask for characters within 1-{len(line)}", characters=len(line))
            end = len(line) if b is None else min(b, len(line))
            return f"lines:{k}[{a}-{'' if b is None else b}]", [(k, line[a - 1:end])], False, a
        a, b = parse_line_range(line_range)
        if a > len(lines):
            raise _past_end(f"range {a}-{'' if b is None else b}", archive_id, len(lines))
        end = len(lines) if b is None else min(b, len(lines))
        return f"lines:{a}-{'' if b is None else b}", numbered[a - 1: end], True, 0
    if grep is not None:
        try:
            rx = re.compile(grep)
        except re.error as exc:
            raise InvalidInput("EXPAND_INVALID_REGEX", f"grep {grep!r} is not a valid regular expression: {exc}") from None
        return f"grep:{grep}", [(k, ln) for k, ln in numbered if rx.search(ln)], True, 0
    return "full", numbered, False, 0


def _notice(archive_id: str, all_lines: list[str], chosen: list[tuple[int, str]], rendered: list[str], cap: int,
            grep: bool, first_char: int, view: bool = False) -> Callable[[Cut], str]:
    """The cap notice of an expansion: what was not sent, and the call that continues."""
    call = f"lean-ctx expand {archive_id}"

    def line_chars(k: int) -> int:
        return len(all_lines[k - 1])

    def make(cut: Cut) -> str:
        parts: list[str] = []
        if cut.chars:
            k, text = chosen[cut.head]
            offset = len(rendered[cut.head]) - len(text)  # the "N:" prefix of a numbered line
            sent = max(0, cut.chars - offset)
            start = first_char or 1
            nxt = start + sent
            stop = start + len(text) - 1  # the last character selected
            step = max(sent, 1)
            span = f"characters {start:,}-{nxt - 1:,}" if sent else "no character"
            parts.append(f"line {k} ({line_chars(k):,} characters) cut: {span} sent · next: {call} --lines"
                         f" '{k}[{nxt}-{min(stop, nxt + step - 1)}]'"
                         + (f" (the range asked for ends at {stop:,})" if stop < line_chars(k) else ""))
            after = cut.unsent - 1
            if after > 0:
                first, last = chosen[cut.head + 1][0], chosen[cut.last_unsent - 1][0]
                files = _file_lines(chosen[cut.head + 1:cut.last_unsent]) if view else ""
                parts.append(f"{after} more selected line{'s' if after != 1 else ''} not sent{files} · then: {call}"
                             f" --lines {first}-{last}")
        else:
            first, last = chosen[cut.head][0], chosen[cut.last_unsent - 1][0]
            then = f"{call} --lines {first}-{last}"
            if grep:
                then = f"narrow the regex, or {then} (every line from the next match on)"
            files = _file_lines(chosen[cut.head:cut.last_unsent]) if view else ""
            parts.append(f"{cut.unsent} more selected line{'s' if cut.unsent != 1 else ''} not sent{files} · next:"
                         f" {then}")
        how = ", estimated from a sample of them" if cut.estimated else ""
        return (f"[… {' · '.join(parts)} (~{cut.rest_tokens:,} tokens not sent{how}; answers are capped at"
                f" {cap:,} tokens)]")

    return make


def _rest(chosen: list[tuple[int, str]], rendered: list[str], numbered: bool, first_char: int,
          encoding: str, view: bool = False) -> Callable[[int, int], Cost]:
    """What following a cut's notice costs (``leanctx.ops.followup``): the rest of a line cut
    by characters as it is (``L[A-B]`` answers), then the lines not sent numbered ``N:line``
    (``--lines`` answers number them, whatever this answer did)."""

    def rest(head: int, chars: int) -> Cost:
        cost = Cost(0)
        if first_char:  # characters of one line: the rest goes on in character ranges, as it is
            return plain_cost(chosen[0][1][chars:], encoding)
        if chars:
            text = chosen[head][1]
            sent = max(0, chars - (len(rendered[head]) - len(text)))  # less the "N:" prefix of a numbered line
            cost = plain_cost(text[sent:], encoding)
            head += 1
        rows = len(chosen) - head
        if rows <= 0:
            return cost
        if view:  # a numbered view's rows are sent as they are, by every answer
            return cost + plain_cost("\n".join(rendered[head:]) + "\n", encoding)
        size = sum(map(len, rendered[head:])) + rows  # with their newlines
        if not numbered:  # contiguous lines (whole, head, tail): their "N:" prefixes are still to come
            size += number_chars(chosen[head][0], chosen[-1][0]) + rows
        return cost + numbered_cost(chosen[head:], encoding, size)

    return rest


def _goes_on(archive_id: str, all_lines: list[str], chosen: list[tuple[int, str]], first_char: int, cap: int,
             encoding: str) -> str | None:
    """The notice of a character range ``L[A-B]`` sent whole: short of the end of line L, how
    long the line is and the next range (sized to fit an answer of this cap); at its end, the
    lines after L (when there are any); None for a short line or the archive's last characters."""
    if not first_char or not chosen:
        return None
    from ..context.tokens import count_tokens

    k, text = chosen[0]
    line = all_lines[k - 1]
    end = first_char + len(text) - 1  # the last character selected
    if count_tokens(line[: 64 * (SHORT_LINE_TOKENS + 1)], encoding) <= SHORT_LINE_TOKENS:
        return None
    if end >= len(line):  # the line is done: the archive may go on after it
        total = len(all_lines)
        return None if k >= total else (f"[… line {k} ends here; the archive goes on to line {total:,} · next:"
                                         f" lean-ctx expand {archive_id} --lines {k + 1}-{total}]")
    step = max(1, char_prefix(line[end:], max(1, cap - _NOTICE_RESERVE), encoding))
    last = min(len(line), end + step)
    return (f"[… line {k} goes on to char {len(line):,} · next: lean-ctx expand {archive_id} --lines"
            f" '{k}[{end + 1}-{last}]' ({len(line) - end:,} characters not sent)]")


def _delivered(chosen: list[tuple[int, str]], rendered: list[str], cut: Cut | None, first_char: int,
               encoding: str) -> tuple[int, list[list[int]] | None]:
    """What the answer delivered of the archive, for the savings: the tokens of the archived text
    it returned (without ``N:`` prefixes or notices) and the archive lines it sent whole, as
    ascending runs ``[first, last]`` (``None`` for a part of one line, ``L[A-B]``, which the
    savings judge by its selector, and past ``MAX_LINE_SPANS`` runs)."""
    from ..context.tokens import count_tokens

    whole = chosen if cut is None else chosen[:cut.head] + (chosen[len(chosen) - cut.tail:] if cut.tail else [])
    texts = [text for _, text in whole]
    if cut is not None and cut.chars:  # the first characters of the line the cap cut, less its prefix
        k, text = chosen[cut.head]
        texts.insert(cut.head, text[:max(0, cut.chars - (len(rendered[cut.head]) - len(text)))])
    tokens = count_tokens("\n".join(texts), encoding) if texts else 0
    if first_char:
        return tokens, None
    spans: list[list[int]] = []
    for k, _ in whole:
        if spans and spans[-1][1] == k - 1:
            spans[-1][1] = k
        elif spans and k <= spans[-1][1]:
            continue  # lines come ascending; a repeat is already counted
        else:
            spans.append([k, k])
    return tokens, (spans if len(spans) <= MAX_LINE_SPANS else None)


def expand(
    lc: LeanCtx,
    archive_id: str,
    head: int | None = None,
    tail: int | None = None,
    lines: str | None = None,
    grep: str | None = None,
    *,
    max_tokens: int | None = None,
    actor: str | None = None,
    session_id: str | None = None,
    project: str | None = None,
    now: float | None = None,
    encoding: str = "o200k_base",
) -> Expansion:
    """Send back an archive: whole, ``head`` / ``tail`` N lines, a line range ``"A-B"`` (or the
    characters of one line, ``"L[A-B]"``) or the lines matching the regex ``grep``. Line
    ranges and grep results are numbered ``N:line`` (the numbers of the omission markers). The
    answer is at most ``max_tokens`` (default and ceiling: the answer cap) tokens; past it the
    text says which lines were left out and the call that gets them."""
    from ..context.tokens import count_tokens

    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1):
        raise InvalidInput("EXPAND_INVALID_COUNT", "max_tokens must be a positive whole number")
    if max_tokens is not None and max_tokens < MIN_CAP_TOKENS:
        raise InvalidInput("EXPAND_INVALID_CAP", f"the answer cap must be between {MIN_CAP_TOKENS} and"
                           f" {MAX_CAP_TOKENS:,} tokens, not {max_tokens} (a smaller one has no room for the"
                           " notice and what it continues)", min=MIN_CAP_TOKENS, max=MAX_CAP_TOKENS)
    cap = ANSWER_CAP_TOKENS if max_tokens is None else min(max_tokens, MAX_CAP_TOKENS)
    archive_id = archive_id.strip()
    text = ArchiveStore.beside(lc.db).get(archive_id)
    all_lines = text.split("\n")
    if all_lines and all_lines[-1] == "":
        all_lines.pop()
    selector, chosen, numbered, first_char = _select(archive_id, all_lines, head, tail, lines, grep)
    view = not first_char and numbered_view(all_lines)
    if view:  # its rows carry their numbers already
        numbered = False
    rendered = [f"{k}:{ln}" if numbered else ln for k, ln in chosen]
    truncated = 0
    capped = False
    cut: Cut | None = None
    if grep is not None and not chosen:
        body = f"[no line of {archive_id} matches {grep!r}]"
    else:
        goes_on = _goes_on(archive_id, all_lines, chosen, first_char, cap, encoding)
        room = cap - (count_tokens("\n" + goes_on, encoding) if goes_on else 0)
        body, cut = cap_lines(rendered, room, _notice(archive_id, all_lines, chosen, rendered, cap, grep is not None,
                                                       first_char, view), encoding=encoding,
                              rest=_rest(chosen, rendered, numbered, first_char, encoding, view))
        if cut is not None:
            truncated, capped = cut.unsent, True
        elif goes_on:
            body = f"{body}\n{goes_on}"
    sent = cut.text_tokens if cut is not None else count_tokens(body, encoding)  # the cap counted its text already
    sent = sent_with_warning(lc, actor, body, sent, encoding)  # and the budget warning line it brings
    text_tokens, spans = _delivered(chosen, rendered, cut, first_char, encoding)
    red = redact(selector)  # a regex the agent typed could itself hold a secret
    res = lc.bus.dispatch(
        ExpandArchive(archive_id=archive_id, selector=red.text, sent_tokens=sent, encoding=encoding,
                      text_tokens=text_tokens, line_spans=spans),
        actor=actor, session_id=session_id, project=project, now=now,
    ).value
    warning = res.budget.warning_line if res.budget is not None else None
    return Expansion(archive_id=archive_id, selector=red.text, text=with_warning(body, warning), lines=len(chosen),
                     total_lines=len(all_lines), sent_tokens=sent, truncated_lines=truncated, budget_warning=warning,
                     capped=capped, cap_tokens=cap)
