"""Linters and type checkers: ruff, mypy, flake8/pylint-like ``file:line:col: CODE msg`` output."""

from __future__ import annotations

import re

from leanctx.context.shell.builder import Builder
from leanctx.context.shell.patterns.common import CODE_FRAME_RE, Ctx

__all__ = ["mypy", "ruff"]

_RUFF_HEAD = re.compile(r"^([A-Z]+\d+) (?:\[\*\] )?(.*)$")
_RUFF_LOC = re.compile(r"^\s*-->\s*(\S+:\d+:\d+)$")
_CONCISE = re.compile(r"^\S+:\d+:\d+: [A-Z]+\d+ ")


def ruff(b: Builder, ctx: Ctx) -> None:
    frames: list[int] = []
    helps: list[int] = []
    i = 0
    while i < b.n:
        line = b.lines[i]
        m = _RUFF_HEAD.match(line)
        loc = _RUFF_LOC.match(b.lines[i + 1]) if m and i + 1 < b.n else None
        if m and loc:
            text = f"{loc.group(1)}: {line}"
            b.must_keep(i, line)
            b.must_keep(i + 1, loc.group(1))
            b.represent([i, i + 1], text)
            i += 2
            continue
        if _CONCISE.match(line) or re.match(r"^Found \d+ errors?|^All checks passed", line):
            b.must_keep(i)
            b.keep(i)
        elif line.startswith(("help: ", "note: ")) or re.match(r"^\[\*\] \d+ fixable|^No fixes available", line):
            # how to apply fixes; which diagnostics are fixable is the [*] on their lines
            helps.append(i)
        elif CODE_FRAME_RE.match(line) or re.match(r"^\s*\d*\s*\|", line):
            frames.append(i)
        i += 1
    b.omit(frames, "code frames", inline=False)
    b.omit(helps, "fix hints", inline=False)


_MYPY = re.compile(r"^(\S+?:\d+(?::\d+)?): (error|note|warning): (.*?)(\s+\[[\w-]+\])?$")


def mypy(b: Builder, ctx: Ctx) -> None:
    for i, line in enumerate(b.lines):
        m = _MYPY.match(line)
        if m:
            if m.group(2) != "note":
                b.must_keep(i, m.group(1))
            b.keep(i, f"{m.group(1)}: {m.group(2)}: {m.group(3)}{' ' + m.group(4).strip() if m.group(4) else ''}")
        elif re.match(r"^(?:Found \d+ errors?|Success: no issues)", line):
            b.must_keep(i)
            b.keep(i)
