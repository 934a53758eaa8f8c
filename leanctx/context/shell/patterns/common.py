"""Pieces shared by the per-command patterns: context, rulers, code frames, tracebacks."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import msgspec

from leanctx.context.shell.builder import Builder
from leanctx.context.shell.dispatch import Command
from leanctx.context.shell.generic import LOCATION_RE

__all__ = [
    "CODE_FRAME_RE",
    "DIAG_HEADER_RE",
    "RULER_RE",
    "Ctx",
    "Pattern",
    "compiler_diagnostics",
    "drop_rulers",
    "group_list",
    "python_traceback",
]


class Ctx(msgspec.Struct, frozen=True):
    cmd: Command
    exit_code: int
    n_stdout: int  # lines [0, n_stdout) came from stdout, the rest from stderr


Pattern = Callable[[Builder, Ctx], None]

RULER_RE = re.compile(r"^\s*([=\-_*~#.─━═]\s?)\1{9,}\s*$|^\s*(?:_ ){10,}_?\s*$")
# rustc/gcc/ruff/tsc code frames: gutter lines, numbered source lines, suggestion diffs
CODE_FRAME_RE = re.compile(r"^\s*(?:\d+\s*)?[|│](?:\s|$)|^\s*\d+\s+[-+~]\s|^\s+[-+~]\s+\S|^\s*\.\.\.\s*$")
LABEL_RE = re.compile(r"[\^~\-]{1,}\s+(\S.*)$")
DIAG_HEADER_RE = re.compile(
    r"^(?:error|warning|note|help)(?:\[[\w:-]+\])?:|^[\w./-]+:\d+:\d+: (?:fatal )?(?:error|warning|note):"
)


def drop_rulers(b: Builder, idxs: Sequence[int] | None = None) -> None:
    """Ruler lines (``=====``, ``-----``, ``_ _ _``) carry no information: count them as blank."""
    for i in b.pending(range(b.n) if idxs is None else idxs):
        if RULER_RE.match(b.lines[i]):
            b.blank(i)


def compiler_diagnostics(b: Builder, idxs: Sequence[int] | None = None) -> None:
    """rustc/clippy/gcc/ruff style diagnostics: keep headers, locations and labels; drop frames."""
    rng = b.pending(range(b.n) if idxs is None else idxs)
    frames: list[int] = []
    notes: list[int] = []
    for i in rng:
        line = b.lines[i]
        s = line.strip()
        if DIAG_HEADER_RE.match(s) or re.match(r"^[A-Z]+\d+ ", s):
            b.must_keep(i)
            b.keep(i)
        elif s.startswith("-->") or s.startswith("::: "):
            loc = s[3:].strip() if s.startswith("-->") else s[4:].strip()
            b.must_keep(i, loc)
            b.keep(i, f"  --> {loc}")
        elif CODE_FRAME_RE.match(line):
            m = LABEL_RE.search(line)
            if m and "|" in line and not re.search(r"\|\s*\d+\s*\|", line):
                label = m.group(1).strip()
                if i in b.must:  # the generic pass marked it: what must survive is the label
                    b.must_keep(i, label)
                b.keep(i, f"    ↳ {label}")
            else:
                frames.append(i)
        elif m := re.match(r"^= help: for further information visit \S+#([\w-]+)$", s):
            b.must_keep(i, m.group(1))
            b.keep(i, f"    lint: {m.group(1)}")
        elif s.startswith("= note:") or s.startswith("= help:") or s.startswith("note: `#["):
            notes.append(i)
        elif re.match(r"^[\w./-]+: In (?:function|member function|constructor) ", s):
            notes.append(i)
    if frames:
        b.omit(frames, "code frames", inline=False)
    if notes:
        b.omit(notes, "notes", inline=False)


_TB_FILE = re.compile(r'^\s*File "([^"]+)", line (\d+)(?:, in (.+))?$')
_TB_EXC = re.compile(r"^\s*(?:[\w.]+(?:Error|Exception|Exit|Interrupt|Warning)|AssertionError)\b.*")


def python_traceback(b: Builder, idxs: Sequence[int] | None = None) -> None:
    """Python tracebacks: keep the ``File ..., line N`` frames and the exception; drop source lines."""
    rng = b.pending(range(b.n) if idxs is None else idxs)
    source: list[int] = []
    headers: list[int] = []
    in_tb = False
    for i in rng:
        line = b.lines[i]
        if line.startswith("Traceback (most recent call last)"):
            in_tb = True
            b.release(i)
            headers.append(i)
            continue
        if not in_tb:
            continue
        m = _TB_FILE.match(line)
        if m:
            path, lineno, fn = m.groups()
            b.must_keep(i, f"{path}:{lineno}")
            b.keep(i, f"  {path}:{lineno}" + (f" in {fn}" if fn else ""))
        elif _TB_EXC.match(line) and not line.startswith(" "):
            b.must_keep(i)
            b.keep(i)
            in_tb = False
        elif line.startswith("    ") or re.match(r"^\s*[\^~]+\s*$", line):
            source.append(i)
        else:
            in_tb = False
    if source:
        b.omit(source, "traceback source lines", inline=False)
    if headers:  # the File/line frames that follow say it is a traceback
        b.omit(headers, "traceback headers", inline=False)


def group_list(items: Sequence[str], per_line: int = 0) -> str:
    """Join short items on one line."""
    return ", ".join(items)


def locations(text: str) -> list[str]:
    return LOCATION_RE.findall(text)
