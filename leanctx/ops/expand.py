"""ctx_expand: send back an archived output, whole or a head, tail, line range or the lines
matching a regex (numbered like the omission markers), within a token cap, and record
``archive.expanded``."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import msgspec

from ..archive import ArchiveStore
from ..commands.shell import ExpandArchive
from ..context.secrets import redact
from ..errors import InvalidInput

if TYPE_CHECKING:
    from ..app import LeanCtx

__all__ = ["Expansion", "expand", "parse_line_range"]


class Expansion(msgspec.Struct, frozen=True):
    archive_id: str
    selector: str  # full | head:N | tail:N | lines:A-B | grep:RE
    text: str
    lines: int  # lines of the archive selected
    total_lines: int  # lines in the archive
    sent_tokens: int
    truncated_lines: int = 0  # selected lines left out to stay under max_tokens (stated in text)
    budget_warning: str | None = None


_RANGE = re.compile(r"^\s*(\d+)\s*(?:[-:]\s*(\d+)?\s*)?$")


def parse_line_range(spec: str) -> tuple[int, int | None]:
    """``"A-B"`` → (A, B); ``"A-"`` → (A, None: to the end); ``"A"`` → (A, A). 1-based, inclusive."""
    m = _RANGE.match(spec)
    if not m:
        raise InvalidInput("EXPAND_INVALID_RANGE", f"{spec!r} is not a line range; use A-B (e.g. 120-180), A- or A")
    a = int(m.group(1))
    b = None if (m.group(2) is None and ("-" in spec or ":" in spec)) else int(m.group(2) or a)
    if a < 1 or (b is not None and b < a):
        raise InvalidInput("EXPAND_INVALID_RANGE", f"{spec!r}: lines are numbered from 1 and A must not exceed B")
    return a, b


def _select(lines: list[str], head: int | None, tail: int | None, line_range: str | None,
            grep: str | None) -> tuple[str, list[tuple[int, str]], bool]:
    """(selector, [(1-based number, line)], numbered?)."""
    given = [k for k, v in (("head", head), ("tail", tail), ("lines", line_range), ("grep", grep)) if v is not None]
    if len(given) > 1:
        raise InvalidInput("EXPAND_ONE_SELECTOR", f"use one of --head, --tail, --lines, --grep (got {', '.join(given)})")
    numbered = list(enumerate(lines, 1))
    if head is not None:
        if head < 0:
            raise InvalidInput("EXPAND_INVALID_COUNT", "--head takes a non-negative number of lines")
        return f"head:{head}", numbered[:head], False
    if tail is not None:
        if tail < 0:
            raise InvalidInput("EXPAND_INVALID_COUNT", "--tail takes a non-negative number of lines")
        return f"tail:{tail}", numbered[len(numbered) - tail :] if tail else [], False
    if line_range is not None:
        a, b = parse_line_range(line_range)
        end = len(lines) if b is None else min(b, len(lines))
        return f"lines:{a}-{'' if b is None else b}", numbered[a - 1 : end], True
    if grep is not None:
        try:
            rx = re.compile(grep)
        except re.error as exc:
            raise InvalidInput("EXPAND_INVALID_REGEX", f"--grep {grep!r} is not a valid regular expression: {exc}") from None
        return f"grep:{grep}", [(k, ln) for k, ln in numbered if rx.search(ln)], True
    return "full", numbered, False


def expand(
    lc: "LeanCtx",
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
    """Send back an archive: whole, ``head`` / ``tail`` N lines, a line range ``"A-B"`` or the
    lines matching the regex ``grep``. Line ranges and grep results are numbered ``N:line``
    (the numbers of the omission markers). With ``max_tokens`` the selection is cut at a line
    boundary and the text says which lines were left out and how to get them."""
    from ..context.tokens import count_tokens

    archive_id = archive_id.strip()
    text = ArchiveStore.beside(lc.db).get(archive_id)
    all_lines = text.split("\n")
    if all_lines and all_lines[-1] == "":
        all_lines.pop()
    selector, chosen, numbered = _select(all_lines, head, tail, lines, grep)
    rendered = [f"{k}:{ln}" if numbered else ln for k, ln in chosen]
    truncated = 0
    if max_tokens is not None and rendered:
        if max_tokens < 1:
            raise InvalidInput("EXPAND_INVALID_COUNT", "--max-tokens must be positive")
        budget, kept = max_tokens, []
        for k, line in enumerate(rendered):
            cost = count_tokens(line + "\n", encoding)
            if cost > budget and kept:
                break
            kept.append(line)
            budget -= cost
            if budget <= 0:
                break
        truncated = len(rendered) - len(kept)
        if truncated:
            first = chosen[len(kept)][0]
            last = chosen[-1][0]
            kept.append(f"[… {truncated} more selected lines not sent (over {max_tokens} tokens) · "
                        f"expand {archive_id} --lines {first}-{last}]")
        rendered = kept
    body = "\n".join(rendered)
    if grep is not None and not chosen:
        body = f"[no line of {archive_id} matches {grep!r}]"
    sent = count_tokens(body, encoding)
    red = redact(selector)  # a regex the agent typed could itself hold a secret
    res = lc.bus.dispatch(
        ExpandArchive(archive_id=archive_id, selector=red.text, sent_tokens=sent),
        actor=actor, session_id=session_id, project=project, now=now,
    ).value
    warning = res.budget.warning_line if res.budget is not None else None
    if warning:
        body = f"{body}\n[{warning}]"
    return Expansion(archive_id=archive_id, selector=red.text, text=body, lines=len(chosen),
                     total_lines=len(all_lines), sent_tokens=sent, truncated_lines=truncated, budget_warning=warning)
