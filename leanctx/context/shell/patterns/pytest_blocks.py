"""pytest's failure blocks and warnings summary, in every ``--tb`` style.

A block opens with a ``___ title ___`` header (``_ title _`` when the title is wider than the
terminal). What it holds depends on the style:

* ``long``/``auto``: source lines, the failing line (``>``), ``E`` lines (the exception and the
  assertion explanation), and a ``path:N: ExcName`` location per frame;
* ``short``: a ``path:N: in function`` location per frame, its source line, ``E`` lines;
* ``line`` (no headers): the ``E`` message, its next lines indented by 4, then
  ``/abs/path:N: message``;
* ``native``: a Python traceback (``File "...", line N, in f`` frames, then the exception and
  every line of its message).

Kept: the headers, the locations and project frames (relative to pytest's rootdir), the ``E``
lines (up to ``E_MAX`` per run, the first one a fact), the exception messages, a doctest's
expected and actual output; pytest's own words ("ImportError while importing test module ...")
go to the generic pass. Omitted and announced: source lines, the frame's variables
(``a = 1, b = 0``), the short-form and native frames of installed code (site-packages, the
standard library) except the one that raised, pytest-xdist's worker lines.

Warnings summary: every ``  path:N: Category: message`` line is a fact (relative to rootdir);
the source line under it and the ids of the tests that emitted it are omitted and announced.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from leanctx.context.shell.builder import Builder
from leanctx.context.shell.patterns.common import TB_FILE_RE

__all__ = ["E_MAX", "FailureBlocks", "WarningsSummary", "sep_title"]

E_MAX = 12  # E lines kept per run; the rest is "assertion detail"

# pytest's separator lines: "fill title fill" with the same fill on both sides (plus one extra
# char on the right when the width is odd) across the terminal; a title too wide for it gets one
# char of fill ("_ test_x[a-long-id] _")
_SEP = {ch: re.compile(rf"^({re.escape(ch)}+) (.+?) ({re.escape(ch)}+)$") for ch in "=_-"}
_SEP_MIN_WIDTH = 40  # a line with less fill than 3 chars is that long (a narrow terminal's width)


def sep_title(line: str, ch: str) -> str | None:
    """The title of a pytest separator line made of ``ch`` (``=== FAILURES ===``), else ``None``."""
    m = _SEP[ch].match(line)
    if not m:
        return None
    left, right = len(m.group(1)), len(m.group(3))
    if min(left, right) >= 3 or (right - left in (0, 1) and len(line) >= _SEP_MIN_WIDTH):
        return m.group(2)
    return None


_RULER = re.compile(r"^(?:_ ){5,}_?\s*$")
# a frame's location: "path:N: ExcName" (long), "path:N: in function" (short),
# "/abs/path:N: message" (line); a path of a .py file or a "<frozen ...>"-like pseudo-file
_LOCATION = re.compile(r"^((?:[\w./\\~+-]+\.py|<[\w .-]+>):\d+):(?: (.*))?$")
_WORKER = re.compile(r"^\[gw\d+\] ")
_VARIABLES = re.compile(r"^\w+ +=(?: |$)")  # "a = 1, b = 0" (arguments), "total      = 3" (--showlocals)
_DOCTEST = re.compile(r"^(?:Expected:|Got:|Got nothing)$")
_CHAINED = re.compile(r"^(?:During handling of the above exception|The above exception was the direct cause)")
_XPASS = re.compile(r"^\[XPASS\(strict\)\] ")
# pytest explains an assertion with "+  where X = f(Y)" lines nested by two spaces per level;
# the first level says what the compared values are, deeper ones how those were computed
_NESTED_WHERE = re.compile(r"^\s*\+ {3,}(?:where|and)\b")
# pytest's notes on what it left out of a diff (with a count, mostly): omitted and announced
_HINT = re.compile(
    r"^\s*(?:Omitting \d+ identical items?, use -vv? to show"
    r"|\.\.\.Full output truncated(?: \(\d+ lines? hidden\))?, use '-vv?' to show)\s*$"
)
# the same words in every run (no count in them): pytest's fixed advice
_FIXED_HINT = re.compile(r"^\s*Use -vv? to get (?:more|the full) diff\s*$")
_BLOCK_PREFIX = re.compile(r"^(?:ERROR at (?:setup|teardown|call) of |ERROR collecting |\[doctest\] )")
# installed code: a frame there is pytest's, pluggy's or a library's machinery
_LIBRARY = re.compile(r"/(?:site|dist)-packages/|/lib/python\d[\d.]*/|^<")


class FailureBlocks:
    """Reads the lines of the ERRORS and FAILURES sections (call :meth:`line` for each non-blank
    one, :meth:`end_section` when a section ends), then :meth:`finish` omits what it announced."""

    def __init__(self, b: Builder, relative: Callable[[str], str]) -> None:
        self.b = b
        self.relative = relative
        self.blocks: set[str] = set()  # tests with a failure/error block
        self.source: list[int] = []
        self.e_extra: list[int] = []
        self.hints: list[int] = []
        self.fixed: list[int] = []
        self.nested: list[int] = []
        self.workers: list[int] = []
        self.library: list[int] = []
        self.tb_headers: list[int] = []
        self.variables: list[int] = []
        self.doc_values: int | None = None  # values kept after a doctest's "Expected:" or "Got:"
        # frames: (line, path, text, fact, traceback, may be omitted as a library frame)
        self.frames: list[tuple[int, str, str, str, int, bool]] = []
        self.tb = 0  # the traceback being read, numbered
        self.captured = False  # inside a "Captured stdout call" (etc.) part of a block
        self.e_run = False  # the last line read belongs to a run of E lines (or their next lines)
        self.e_count = 0
        self.e_base = 0  # indentation of the run's first line
        self.e_first = ""  # the run's first line (the exception), stripped
        self.native = False  # reading a native traceback's frames
        self.in_exc = False  # reading a native traceback's exception message

    def _put(self, i: int, text: str) -> None:
        self.b.rewrite(i, self.relative(text))

    def end_section(self) -> None:
        self.e_run = self.native = self.in_exc = self.captured = False
        self.doc_values = None
        self.tb += 1

    def line(self, i: int, line: str) -> None:
        b = self.b
        if _RULER.match(line):
            b.blank(i)
            return
        title = sep_title(line, "_")
        if title is not None:
            b.must_keep(i, title)
            b.keep(i, f"__ {title} __")
            self.blocks.add(_BLOCK_PREFIX.sub("", title))
            self.end_section()
            return
        if (title := sep_title(line, "-")) is not None:
            b.keep(i, f"-- {title} --")
            self.captured = title.startswith("Captured")
            self.e_run = self.native = self.in_exc = False
            return
        if self.captured:  # captured stdout/stderr/log of the test: output, left to the generic pass
            return
        if _WORKER.match(line):
            self.workers.append(i)
            return
        if line == "Traceback (most recent call last):":
            if i + 1 < b.n and TB_FILE_RE.match(b.lines[i + 1]):
                self.tb_headers.append(i)  # said again by the frames below it
            else:
                b.keep(i)
            self.native, self.in_exc, self.e_run = True, False, False
            self.tb += 1
            return
        m = TB_FILE_RE.match(line)
        if m:
            path, lineno, fn = m.groups()
            loc = f"{self.relative(path)}:{lineno}"
            self.frames.append((i, path, f"  {loc}" + (f" in {fn}" if fn else ""), loc, self.tb, True))
            self.native, self.in_exc = True, False
            return
        if self.in_exc:  # every line of a native traceback's exception message
            self._e_line(i, line, "")
            return
        if self.native and (line.startswith("    ") or re.match(r"^\s*[\^~]+\s*$", line)):
            b.release(i)
            self.source.append(i)
            return
        if self.native and not line.startswith("E "):
            self.in_exc, self.e_run = True, False  # the exception, after the frames
            self._e_line(i, line, "")
            return
        self.native = False
        if self.doc_values is not None and line.startswith("    "):  # a doctest's expected or actual output
            if self.doc_values < E_MAX:
                b.keep(i)
            else:
                self.e_extra.append(i)
            self.doc_values += 1
            return
        self.doc_values = None
        if line.startswith(">"):  # the failing source line: its indentation says nothing
            self._put(i, "> " + line[1:].strip())
            self.e_run = False
        elif line.startswith("E ") or line == "E":
            self._e_line(i, line[1:], "E ")
        elif self.e_run and line.startswith("    "):  # --tb=line: the message's next lines
            self._e_line(i, line[1:], "  ")
        elif lm := _LOCATION.match(line.rstrip()):
            self._location(i, lm.group(1), lm.group(2) or "")
        elif _XPASS.match(line):  # why a test that passed failed
            b.must_keep(i)
            b.keep(i)
        elif _DOCTEST.match(line):
            b.keep(i)
            self.doc_values = 0
            self.e_run = False
        elif line.startswith("    ") or re.match(r"^\s*[\^~]+\s*$", line):
            b.release(i)  # source lines: code, even when a word in it looks like an error
            self.source.append(i)
            self.e_run = False
        elif _VARIABLES.match(line):  # the values of the frame's arguments, or its locals
            b.release(i)
            self.variables.append(i)
            self.e_run = False
        else:  # pytest's words ("ImportError while importing test module ..."): the generic pass's
            if _CHAINED.match(line):
                self.tb += 1
            self.e_run = False

    def _e_line(self, i: int, body: str, prefix: str) -> None:
        """A line of an exception message: ``body`` is the line without its ``E`` (or, for
        the next lines of a message pytest does not prefix, with one space less)."""
        b = self.b
        if not self.e_run:
            self.e_run, self.e_count = True, 0
        indent = len(body) - len(body.lstrip(" "))
        if _FIXED_HINT.match(body):
            self.fixed.append(i)
        elif _HINT.match(body):
            self.hints.append(i)
        elif not body.strip():
            b.blank(i)
        elif _NESTED_WHERE.match(body):  # how a sub-expression of a sub-expression was computed
            self.nested.append(i)
        elif self.e_count < E_MAX:
            if self.e_count == 0:
                self.e_base = indent
                self.e_first = body.strip()
                b.must_keep(i, self.e_first)
            self._put(i, prefix + body[min(indent, self.e_base):])  # source indentation dropped, nesting kept
            self.e_count += 1
        else:
            self.e_extra.append(i)

    def _location(self, i: int, loc: str, rest: str) -> None:
        """``path:N: ExcName`` (long), ``path:N: in f`` (short), ``/abs/path:N: message`` (line)."""
        after_e, self.e_run = self.e_run, False
        if rest.startswith("in "):  # a frame of a short traceback: a library's may be omitted
            text = self.relative(f"{loc}: {rest}")
            self.frames.append((i, loc, text, text, self.tb, True))
            return
        if not rest or re.fullmatch(r"[\w.]+", rest):
            text = f"{loc}: {rest}".rstrip(": ")
        elif after_e and rest == self.e_first:  # --tb=line: the message, stated just above
            exc = re.match(r"^([\w.]+): ", rest)
            text = f"{loc}: {exc.group(1)}" if exc else loc
        else:
            text = f"{loc}: {rest}"
        text = self.relative(text)
        self.frames.append((i, loc, text, text, self.tb, False))

    def finish(self) -> None:
        b = self.b
        last = {tb: i for i, *_, tb, _ in self.frames}  # the frame that raised, in each traceback
        for i, path, text, fact, tb, optional in self.frames:
            if optional and _LIBRARY.search(path) and last[tb] != i:
                b.release(i)
                self.library.append(i)
            else:
                b.must_keep(i, fact)
                b.rewrite(i, text)
        b.omit(self.variables, "frame variables", inline=False)
        b.omit(self.nested, "nested where lines", inline=False)
        b.omit(self.library, "library frames", inline=False)
        b.omit(self.source, "traceback source", inline=False)
        b.omit(self.e_extra, "assertion detail", inline=False)
        b.omit(self.hints, "-vv hints", inline=False)
        b.omit(self.workers, "xdist worker lines", inline=False)
        b.boilerplate(self.fixed)
        b.boilerplate(self.tb_headers)


_WARN_LOCATION = re.compile(r"^  (\S[^:]*:\d+: [\w.]+: .*)$")
_WARN_SOURCE = re.compile(r"^    \S")
_NODEID = re.compile(r"^\S+::\S")


class WarningsSummary:
    """Reads the lines of the warnings summary (:meth:`line` for each non-blank one)."""

    def __init__(self, b: Builder, relative: Callable[[str], str]) -> None:
        self.b = b
        self.relative = relative
        self.source: list[int] = []
        self.tests: list[int] = []
        self.in_record = False  # after a "path:N: Category: message" line

    def line(self, i: int, line: str) -> None:
        if m := _WARN_LOCATION.match(line):
            text = self.relative(m.group(1))
            self.b.must_keep(i, text)
            self.b.rewrite(i, "  " + text)
            self.in_record = True
        elif self.in_record and _WARN_SOURCE.match(line):  # the line of code that warned
            self.b.release(i)  # code, even when a word in it looks like a warning
            self.source.append(i)
        elif _NODEID.match(line):  # a test that emitted the warning below
            self.b.release(i)
            self.tests.append(i)
            self.in_record = False
        elif not line.startswith(" "):
            self.in_record = False
        # anything else (a message's next lines, "path: N warnings"): left to the generic pass

    def finish(self) -> None:
        self.b.omit(self.source, "warning source", inline=False)
        self.b.omit(self.tests, "warning test ids", inline=False)
