"""Pieces shared by the per-command patterns: context, rulers, code frames, tracebacks."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence

import msgspec

from leanctx.context.shell.builder import Builder
from leanctx.context.shell.dispatch import Command

__all__ = [
    "CODE_FRAME_RE",
    "DIAG_HEADER_RE",
    "RULER_RE",
    "TB_FILE_RE",
    "Ctx",
    "Pattern",
    "common_dir",
    "compiler_diagnostics",
    "drop_rulers",
    "python_traceback",
    "shared_dir",
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


def _is_header(s: str) -> bool:
    return bool(DIAG_HEADER_RE.match(s) or re.match(r"^[A-Z]+\d+ ", s))


def compiler_diagnostics(b: Builder, idxs: Sequence[int] | None = None) -> None:
    """rustc/clippy/gcc/ruff style diagnostics: keep headers, locations and labels; drop frames.

    A header with the ``-->`` location right below it and the lint named by its ``= help: for
    further information visit ...#lint`` line becomes one line, ``src/lib.rs:6:21: warning: x
    [lint]`` (the form gcc, ruff and mypy print)."""
    rng = b.pending(range(b.n) if idxs is None else idxs)
    frames: list[int] = []
    notes: list[int] = []
    header = -1  # the diagnostic header of the block being read
    merged: dict[int, list[int]] = {}  # header -> [location line, lint line]
    loc_of: dict[int, str] = {}
    lint_of: dict[int, str] = {}
    for i in rng:
        line = b.lines[i]
        s = line.strip()
        if _is_header(s):
            b.must_keep(i)
            header = i
        elif s.startswith("-->") or s.startswith("::: "):
            loc = s[3:].strip() if s.startswith("-->") else s[4:].strip()
            b.must_keep(i, loc)
            if s.startswith("-->") and header == i - 1:
                loc_of[header] = loc
                merged.setdefault(header, []).append(i)
            else:
                b.keep(i, f"  --> {loc}")
        elif CODE_FRAME_RE.match(line):
            m = LABEL_RE.search(line)
            # labels sit on gutter lines ("   |     ^^^ label"); numbered lines are source code
            # (a closure's |x| or a suggestion's "6 - old line" is not a label)
            if m and re.match(r"^\s*[|│]", line):
                label = m.group(1).strip()
                if i in b.must:  # the generic pass marked it: what must survive is the label
                    b.must_keep(i, label)
                b.keep(i, f"    ↳ {label}")
            else:
                frames.append(i)
        elif m := re.match(r"^= help: for further information visit \S+#([\w-]+)$", s):
            b.must_keep(i, m.group(1))
            if header in loc_of and header not in lint_of:
                lint_of[header] = m.group(1)
                merged[header].append(i)
            else:
                b.keep(i, f"    lint: {m.group(1)}")
        elif s.startswith("= note:") or s.startswith("= help:") or s.startswith("note: `#["):
            notes.append(i)
        elif re.match(r"^[\w./-]+: In (?:function|member function|constructor) ", s):
            notes.append(i)
    for i in rng:
        if i in merged:
            lint = f" [{lint_of[i]}]" if i in lint_of else ""
            b.represent([i, *merged[i]], f"{loc_of[i]}: {b.lines[i].strip()}{lint}")
        elif i in b.must and b.is_pending(i) and _is_header(b.lines[i].strip()):
            b.keep(i)
    if frames:
        b.omit(frames, "code frames", inline=False)
    if notes:
        b.omit(notes, "notes", inline=False)


TB_FILE_RE = re.compile(r'^\s*File "([^"]+)", line (\d+)(?:, in (.+))?$')
_TB_EXC = re.compile(r"^\s*(?:[\w.]+(?:Error|Exception|Exit|Interrupt|Warning)|AssertionError)\b.*")


def python_traceback(b: Builder, idxs: Sequence[int] | None = None) -> None:
    """Python tracebacks: keep the ``File ..., line N`` frames and the exception; drop source lines."""
    rng = b.pending(range(b.n) if idxs is None else idxs)
    source: list[int] = []
    headers: list[int] = []
    in_tb = False
    short = shared_dir(b, [i for i in rng if TB_FILE_RE.match(b.lines[i])])
    for i in rng:
        line = b.lines[i]
        if line.rstrip() == "Traceback (most recent call last):":
            in_tb = True
            # fixed text, said again by the File/line frames that follow it (when they do: a
            # header followed by anything else, such as a doctest's "...", is kept)
            if i + 1 < b.n and TB_FILE_RE.match(b.lines[i + 1]):
                headers.append(i)
            continue
        if not in_tb:
            continue
        m = TB_FILE_RE.match(line)
        if m:
            path, lineno, fn = m.groups()
            path = short(path)
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
        b.omit(source, "traceback source", inline=False)
    b.boilerplate(headers)


_ABS_PATH = re.compile(r"(?<![\w.~/-])/(?:[\w.@+-]+/)+[\w.@+-]+")
ABBREV = "…/"


def common_dir(texts: Sequence[str], min_uses: int = 3) -> str:
    """The directory shared by every absolute path in ``texts`` (with a trailing ``/``), when
    it is used at least ``min_uses`` times and is long enough that writing it once pays off;
    else ``""``. Tools that print absolute locations (tracebacks, node's test runner) repeat the
    project directory on every line."""
    paths = [m.group(0) for t in texts for m in _ABS_PATH.finditer(t)]
    if len(paths) < min_uses:
        return ""
    prefix = os.path.commonpath([os.path.dirname(p) for p in paths])
    if prefix.count("/") < 2 or len(prefix) < 12:
        return ""
    return prefix.rstrip("/") + "/"


def shared_dir(b: Builder, idxs: Sequence[int]) -> Callable[[str], str]:
    """The directory the absolute paths of lines ``idxs`` share (:func:`common_dir`), written
    once: ``[…/ = prefix]`` is announced before the first of those lines that uses it, and the
    function returned writes a text with the prefix abbreviated (unchanged when there is none)."""
    prefix = common_dir([b.lines[i] for i in idxs])
    if not prefix:
        return lambda text: text
    first = next((i for i in idxs if prefix in b.lines[i]), idxs[0])
    b.note(first - 0.5, f"[{ABBREV} = {prefix}]")
    return lambda text: text.replace(prefix, ABBREV)
