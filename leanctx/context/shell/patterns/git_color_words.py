"""Colour word diffs told apart before their colours are stripped.

``git diff --color-words`` and ``--word-diff=color`` (and ``git show``/``git log -p`` with them)
mark the removed words and the added words of a line with colours only (``color.diff.old``,
red, and ``color.diff.new``, green, by default); once the ANSI escapes are stripped the old and
the new words run together (``returna + b + a``). :func:`color_word_marks` rewrites the
coloured segments of such hunks as git's own plain word-diff markers, ``[-removed-]`` and
``{+added+}`` (what ``--word-diff=plain`` prints, byte for byte), and says so in the command
it returns, so that :mod:`git_diff` compresses them as a plain word diff. It reads the raw lines, escapes and all,
and is run on them before the escapes are stripped.

Which colour is which slot is told by its hue (a red one is ``old``, a green one ``new``, with
any attributes: ``red bold``, 256 colours, ``#ff0000``); a colour of another hue is told by
where it stands, when the context is uncoloured (text outside any colour in the hunks): git
writes the removed words before the added ones, so of two colours met side by side the first
is ``old``. A third colour, beside a red and a green one, is the context's
(``color.diff.context``). When the colours cannot be told apart for certain, nothing is
rewritten (the output is compressed as a colour word diff whose colours are gone: every line
kept). Only the hunks of a word diff are touched: the file and commit headers, a coloured line
diff (``+``/``-`` prefixes) and any other command's output are left as they are. Told by the
flags (``--color-words``, ``--word-diff=color``), every hunk is a word diff's; told by the
content, an output is one only when none of its hunks reads as a unified one (git writes one
form throughout: a line diff with one hunk misread must not be read as a word diff).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from itertools import pairwise

import msgspec

from leanctx.context.shell.dispatch import Command
from leanctx.context.shell.patterns.git_diff import (
    detect_word,
    is_boundary,
    unified_end,
    word_mode,
)
from leanctx.context.shell.text import strip_ansi, terminal_line

__all__ = ["color_word_marks"]

_SGR = re.compile(r"\x1b\[([0-9;:]*)m")
_MARKS = {"old": ("[-", "-]"), "new": ("{+", "+}")}

Segment = tuple[str | None, str]  # (the SGR parameters of the colour, None outside any; text)


def color_word_marks(cmd: Command, lines: Sequence[str]) -> tuple[Command, list[str]]:
    """``lines`` (raw, ANSI escapes in them) with the coloured words of a colour word diff of
    ``git diff``/``show``/``log`` written as ``[-…-]``/``{+…+}``, and the command as that output
    reads: ``--word-diff=plain`` added to its arguments (the content cannot say it: a file may
    hold such marks). Any other output, and its command, unchanged."""
    out = list(lines)
    if cmd.tool != "git" or cmd.sub not in {"diff", "show", "log"}:
        return cmd, out
    mode = word_mode(cmd.args)
    if mode in {"plain", "porcelain"} or not any("\x1b[" in x for x in lines):
        return cmd, out
    if not mode and _first_hunk_unified(lines) is not False:  # no hunk, or a line diff's: done cheaply
        return cmd, out
    shown = [_shown(x) for x in lines]
    hunks = [h for h, t in enumerate(shown) if t.startswith("@@ ")]
    if not mode and (detect_word(shown) != "color" or any(unified_end(shown, h) is not None for h in hunks)):
        return cmd, out  # a line diff (in part: a misread hunk), or a coloured plain or porcelain word diff
    body = [k for h in hunks for k in range(h + 1, _hunk_end(shown, h))]
    segments = {k: _segments(lines[k]) for k in body if "\x1b[" in lines[k]}
    roles = _roles(segments.values())
    if not roles:
        return cmd, out
    for k, segs in segments.items():
        if any(key in roles for key, _ in segs):
            out[k] = _render(segs, roles)
    return msgspec.structs.replace(cmd, args=[*cmd.args, "--word-diff=plain"]), out


def _shown(line: str) -> str:
    """A raw line as the patterns read it."""
    return strip_ansi(terminal_line(line)).rstrip()


def _first_hunk_unified(lines: Sequence[str]) -> bool | None:
    """Whether the first hunk of an output reads as a unified one (``None``: no hunk), reading
    only that hunk and the line after it (a long coloured line diff is not read twice)."""
    h = next((k for k, x in enumerate(lines) if "@@ " in x and _shown(x).startswith("@@ ")), None)
    if h is None:
        return None
    end = h + 1
    while end < len(lines) and not is_boundary(_shown(lines[end])):
        end += 1
    return unified_end([_shown(x) for x in lines[h : end + 1]], 0) is not None


def _hunk_end(shown: Sequence[str], h: int) -> int:
    k = h + 1
    while k < len(shown) and not is_boundary(shown[k]):
        k += 1
    return k


def _segments(line: str) -> list[Segment]:
    """The text of a raw line in runs of one colour (other escapes dropped, empty runs skipped)."""
    segs: list[Segment] = []
    key: str | None = None
    for i, part in enumerate(_SGR.split(line)):  # text, parameters, text, ...
        if i % 2:
            key = None if part in {"", "0"} else part  # git writes a colour in one escape
        elif part:
            text = strip_ansi(part) if "\x1b" in part else part
            if text:
                segs.append((key, text))
    return segs


def _hue(key: str) -> str:
    """``red``, ``green`` or ``""``: the hue of an SGR colour (the foreground's, else the
    background's), whatever its attributes; 8, 16, 256 and 24-bit colours."""
    p = [int(x) if x.isdigit() else -1 for x in re.split("[;:]", key)]
    fg = bg = ""
    i = 0
    while i < len(p):
        c, hue = p[i], ""
        if 30 <= c <= 37 or 90 <= c <= 97 or 40 <= c <= 47 or 100 <= c <= 107:
            hue = {1: "red", 2: "green"}.get(c % 10, "")
        elif c in {38, 48} and i + 2 < len(p) and p[i + 1] == 5:
            hue, i = _hue256(p[i + 2]), i + 2
        elif c in {38, 48} and i + 4 < len(p) and p[i + 1] == 2:
            hue, i = _rgb_hue(*p[i + 2 : i + 5]), i + 4
        if c in {38, 39} or 30 <= c <= 37 or 90 <= c <= 97:
            fg = hue
        elif c in {48, 49} or 40 <= c <= 47 or 100 <= c <= 107:
            bg = hue
        i += 1
    return fg or bg


def _hue256(n: int) -> str:
    if 0 <= n < 16:
        return {1: "red", 2: "green"}.get(n % 8, "")
    if 16 <= n < 232:
        n -= 16
        return _rgb_hue(n // 36, n // 6 % 6, n % 6)
    return ""  # the greys


def _rgb_hue(r: int, g: int, b: int) -> str:
    return "red" if r > max(g, b) else "green" if g > max(r, b) else ""


def _roles(lines: Iterable[list[Segment]]) -> dict[str, str]:
    """Each colour of the hunks -> ``old``, ``new`` or ``context``; ``{}`` when there is none or
    they cannot be told apart for certain."""
    keys: set[str] = set()
    pairs: set[tuple[str, str]] = set()  # colours written side by side, in order
    plain_context = False  # text outside any colour: the context is uncoloured
    for segs in lines:
        for (a, _), (b, _) in pairwise(segs):
            if a is not None and b is not None and a != b:
                pairs.add((a, b))
        for key, text in segs:
            if key is None:
                plain_context = plain_context or bool(text.strip())
            else:
                keys.add(key)
    red = [k for k in keys if _hue(k) == "red"]
    green = [k for k in keys if _hue(k) == "green"]
    if len(red) > 1 or len(green) > 1:
        return {}
    roles = {**{k: "old" for k in red}, **{k: "new" for k in green}}
    rest = keys - set(roles)
    if rest and not plain_context:  # the context may be coloured: only a third colour beside red and green is
        if not (red and green and len(rest) == 1):
            return {}
        roles[rest.pop()] = "context"
    elif rest:  # the context is uncoloured: two colours at most, the first of a side-by-side pair old
        if len(keys) > 2 or len(pairs) != 1:
            return {}
        (a, b), = pairs
        if roles.get(a, "old") != "old" or roles.get(b, "new") != "new":
            return {}
        roles.update({a: "old", b: "new"})
    return roles


def _render(segs: list[Segment], roles: dict[str, str]) -> str:
    """A line's segments as plain word-diff text: each run of removed or added words between
    its markers, runs of one role joined (as git writes them)."""
    parts: list[tuple[str, str]] = []
    for key, text in segs:
        role = roles.get(key, "context") if key is not None else "context"
        if parts and parts[-1][0] == role:
            parts[-1] = (role, parts[-1][1] + text)
        else:
            parts.append((role, text))
    return "".join(t if r == "context" else f"{_MARKS[r][0]}{t}{_MARKS[r][1]}" for r, t in parts)
