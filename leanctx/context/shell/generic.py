"""The generic pass: facts that must survive, and compression of whatever no pattern handled.

Facts (:func:`detect_facts`): every error or warning line that names a location
(``path.ext:N``, ``path.ext(N,M)``, ``File "...", line N``) is must-keep (a Python exception
or warning named after a location too: ``x.py:29: RuntimeWarning: ...``), whatever its
neighbours (only a repeat of the same line with a later timestamp is not); of the other
error/warning/summary lines, the first of each near-identical class is.

Applied to the lines a pattern left pending (or to everything, for unknown commands):
blank lines dropped, progress bars and spinners collapsed, identical consecutive lines folded
with a count, runs of near-identical lines (differing by numbers, hashes, timestamps) reduced
to their first and last line, very long lines shortened in their middle (head and tail kept,
with the location and the start of the message of a fact line; the marker inside the line
counts the characters left out and names the line in the archive), and a long middle elided
around the must-keep lines. Every omission gets a marker with its line count.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Sequence

from leanctx.context.shell.builder import Builder, cut_marker
from leanctx.context.shell.text import is_blank, is_progress, normalize_for_similarity

__all__ = ["FACT_RE", "LOCATION_RE", "SUMMARY_RE", "WARN_RE", "cut_line", "detect_facts", "finish", "is_fact"]

FACT_RE = re.compile(
    r"""(?ix)
      \b(?:error|fatal|panic(?:ked)?|exception|traceback|failed|failure|segmentation\ fault)\b
    | ^\s*(?:[\w.]+(?:Error|Exception|Warning)|AssertionError|KeyboardInterrupt)\b
    | (?-i:\b[A-Z]\w*(?:Error|Exception)):\ # a Python exception after a location: "x.py:9: ValueError: bad"
    | \berror\[?[A-Z]*\d*\]?:
    | \b(?:cannot|could\ not|couldn't|unable\ to|not\ found|no\ such\ file|permission\ denied|refused)\b
    """
)
# "warning:", "WARN", and a Python warning's category ("x.py:29: RuntimeWarning: ...")
WARN_RE = re.compile(r"\b[Ww]arning:|\b[A-Z]\w*Warning:|^\s*[Ww]arn(?:ing)?\b|\[[Ww]arn(?:ing)?\]|\bWARN(?:ING)?\b")
SUMMARY_RE = re.compile(
    r"""(?ix)
      \b\d+\ (?:passed|failed|errors?|warnings?|problems?|tests?|skipped|failures?)\b
    | \bfound\ \d+\b | \btest\ result:
    | ^(?:ok|FAIL)\s+\S+\s+\(?[\d.]+m?s\)?$ | ^(?:PASS|FAIL|OK)$ | \bran\ \d+\ tests?\b | ^FAILED\ \(
    | \bsuccessfully\b | \bfinished\b | \bdone\b.*\b(?:in|ms|s)\b
    """
)

_TIMESTAMP = re.compile(
    r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"  # ISO 8601
    r"|\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"  # 15:32:24.470279 (klog, syslog, most loggers)
)
# A place in a file: ``src/a.c:12``, ``./x/y.test.ts:3:7``, ``/abs/f.py:9``, ``Foo.cs(12,5)``,
# ``File "x.py", line 3``, ``Makefile:12``. Matches start at a word boundary of a path (the
# look-behind), so a long token is scanned once.
LOCATION_RE = re.compile(
    r"""(?x)
      (?<![\w.~@+/-])(?:~|\.{1,2})?/?(?:[\w.@+-]+/)*
      (?:[\w.@+-]*[\w@+-]\.[A-Za-z][\w+-]{0,11}|(?:GNU)?[Mm]akefile|Dockerfile|Containerfile|Jenkinsfile)
      (?::\d+|\(\d+(?:,\d+)?\))
    | \bFile\ "[^"\n]+",\ line\ \d+
    """
)
# A line is shortened when it is longer than its head and tail by more than this: below it, the
# marker would cost about as much as what it leaves out.
CUT_SLACK = 200
LINE_HEAD, LINE_TAIL = 300, 150  # characters shown of a long line
FACT_HEAD, FACT_TAIL = 800, 400  # of a long must-keep line (and a window around its location)
HEAD = 25
TAIL = 25
BUDGET = 70


# Every line FACT_RE, SUMMARY_RE or WARN_RE matches contains one of these (lower-cased):
# a cheap first scan over the whole text, confirmed line by line with the real regexes.
_KEYWORDS = re.compile(
    r"error|fatal|panic|exception|traceback|fail|segmentation|cannot|could|unable|not found|no such|permission"
    r"|refused|warn|pass|skip|test|problem|found|ran |success|finish|done|interrupt|^ok",
    re.M,
)


def _hit_lines(lines: Sequence[str], warnings: bool) -> list[int]:
    """Indices of the lines a fact regex matches. Large outputs have hundreds of thousands of
    lines: one keyword scan of the joined text finds the candidates, the regexes confirm."""
    low = "\n".join(lines).lower()  # lower() never adds or removes a newline
    ends = list(itertools.accumulate(len(x) + 1 for x in low.split("\n")))  # offset after each line's newline
    candidates = sorted({bisect.bisect_right(ends, m.start()) for m in _KEYWORDS.finditer(low)})
    out = []
    for i in candidates:
        line = lines[i]
        if FACT_RE.search(line) or SUMMARY_RE.search(line) or (warnings and WARN_RE.search(line)):
            out.append(i)
    return out


def is_fact(text: str, warnings: bool = True) -> bool:
    """Whether ``text`` states an error, a warning or a place in a file."""
    return bool(FACT_RE.search(text) or (warnings and WARN_RE.search(text)) or LOCATION_RE.search(text))


def detect_facts(b: Builder, idxs: Sequence[int] | None = None, *, warnings: bool = True) -> None:
    """Mark fact lines as must-keep: every error/warning line with a location (a repeat of one
    with only its timestamp changed excepted: the timestamp pass announces those), and the
    first line of each near-identical class of the other error/warning/summary lines."""
    seen: set[str] = set()
    wanted = None if idxs is None else set(idxs)
    for i in _hit_lines(b.lines, warnings):
        if wanted is not None and i not in wanted:
            continue
        line = b.lines[i]
        if not line.strip():
            continue
        if (FACT_RE.search(line) or (warnings and WARN_RE.search(line))) and LOCATION_RE.search(line):
            key = "\0" + _TIMESTAMP.sub("#", line)  # each place and message is its own fact
        elif len(line) > 2000:
            continue
        else:
            key = normalize_for_similarity(line)
        if key in seen:
            continue
        seen.add(key)
        b.must_keep(i)


def _needs_cut(line: str, must: bool) -> bool:
    return len(line) > (FACT_HEAD + FACT_TAIL if must else LINE_HEAD + LINE_TAIL) + CUT_SLACK


def cut_line(line: str, lineno: int, frames: int = 0, must: bool = False) -> tuple[str, str] | None:
    """``line`` (raw line ``lineno``, 1-based) shortened in its middle: its head and tail, and
    for a must-keep line a window around its first location and its first error/warning word;
    each gap is a :func:`cut_marker`. Returns ``(text, fact)``: ``fact`` is a part of the text
    that states the line (its location, else the start of the line); ``None`` when the windows
    cover the whole line."""
    head, tail = (FACT_HEAD, FACT_TAIL) if must else (LINE_HEAD, LINE_TAIL)
    n = len(line)
    spans = [(0, head), (n - tail, n)]
    loc = LOCATION_RE.search(line)
    loc_start = 0
    if loc:  # the end of a path is what names it (and a path may be very long)
        loc_start = max(loc.start(), loc.end() - 200)
        spans.append((loc_start - 150, loc.end() + 250))
    if must and (word := FACT_RE.search(line) or WARN_RE.search(line)):
        spans.append((word.start() - 100, word.end() + 250))
    merged: list[list[int]] = []
    for a, z in sorted((max(0, a), min(n, z)) for a, z in spans):
        if merged and a <= merged[-1][1] + CUT_SLACK:  # a gap worth less than a marker is shown
            merged[-1][1] = max(merged[-1][1], z)
        else:
            merged.append([a, z])
    if len(merged) == 1 and merged[0] == [0, n]:
        return None
    parts: list[str] = []
    pos = 0
    for a, z in merged:  # the head starts at 0: every gap has shown text before it
        if a > pos:
            parts.append(cut_marker(a - pos, lineno, frames))
            frames = 0  # stated once, in the first marker
        parts.append(line[a:z])
        pos = z
    fact = line[loc_start : loc.end()] if loc else line[:80].strip()
    return "".join(parts), fact


def _long(b: Builder, i: int) -> tuple[str, str] | None:
    """Pending line ``i`` shortened (:func:`cut_line`) when it is very long, else ``None``."""
    line = b.lines[i]
    must = i in b.must
    return cut_line(line, i + 1, b.frames.get(i, 0), must) if _needs_cut(line, must) else None


def _keep(b: Builder, i: int) -> None:
    """Keep pending line ``i``: whole, or shortened when it is very long."""
    got = _long(b, i)
    if got is None:
        b.keep(i)
        return
    text, fact = got
    if i in b.must:
        b.must_keep(i, fact)
    b.keep_cut(i, text)


def finish(
    b: Builder,
    idxs: Sequence[int] | None = None,
    *,
    budget: int = BUDGET,
    head: int = HEAD,
    tail: int = TAIL,
) -> None:
    """Compress the pending lines among ``idxs`` (default: all) and keep the rest."""
    todo = b.pending(range(b.n) if idxs is None else idxs)
    # 1. blank lines and progress bars
    rest: list[int] = []
    progress: list[int] = []
    for i in todo:
        line = b.lines[i]
        if is_blank(line):
            b.blank(i)
        elif i not in b.must and is_progress(line):
            progress.append(i)
        else:
            rest.append(i)
    if progress:
        b.omit(progress, "progress", inline=False)
    # 2. runs of identical / near-identical consecutive lines (must-keep lines stay pending:
    # they are kept below, shortened when very long)
    survivors: list[int] = []
    k = 0
    while k < len(rest):
        j = k
        while j + 1 < len(rest) and rest[j + 1] == rest[j] + 1 and b.lines[rest[j + 1]] == b.lines[rest[k]]:
            j += 1
        if j > k:
            run = rest[k : j + 1]
            got = _long(b, run[0])
            if got is not None and run[0] in b.must:
                b.must_keep(run[0], got[1])
            b.fold(run, f"{b.lines[run[0]] if got is None else got[0]}  [×{len(run)}]", cut=got is not None)
            k = j + 1
            continue
        # the same line written again and again, only its timestamp changing (retry loops,
        # client-side error logs): the first one is shown, the later ones are announced
        when = _TIMESTAMP.sub("#", b.lines[rest[k]])
        j = k
        while j + 1 < len(rest) and rest[j + 1] == rest[j] + 1 and _TIMESTAMP.sub("#", b.lines[rest[j + 1]]) == when:
            j += 1
        if j > k and when != b.lines[rest[k]]:
            run = rest[k : j + 1]
            _omit_others(b, run[1:], "same line, later timestamps", survivors)
            survivors.append(run[0])
            k = j + 1
            continue
        key = normalize_for_similarity(b.lines[rest[k]])
        j = k
        while (
            j + 1 < len(rest)
            and rest[j + 1] == rest[j] + 1
            and normalize_for_similarity(b.lines[rest[j + 1]]) == key
        ):
            j += 1
        if j - k + 1 >= 4:
            run = rest[k : j + 1]
            _omit_others(b, run[1:-1], "similar lines", survivors)
            survivors.extend([run[0], run[-1]])
            k = j + 1
            continue
        survivors.append(rest[k])
        k += 1
    survivors = b.pending(sorted(set(survivors)))
    # 3. a long middle is elided, must-keep lines excepted
    if len(survivors) > budget:
        middle = survivors[head : len(survivors) - tail]
        b.omit([i for i in middle if i not in b.must], "middle of output")
    for i in b.pending(survivors):
        _keep(b, i)


def _omit_others(b: Builder, idxs: Sequence[int], reason: str, survivors: list[int]) -> None:
    """Omit the lines ``idxs`` that are not must-keep; those stay pending, among ``survivors``."""
    survivors.extend(i for i in idxs if i in b.must)
    b.omit([i for i in idxs if i not in b.must], reason)
