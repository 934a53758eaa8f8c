"""The generic pass: facts that must survive, and compression of whatever no pattern handled.

Applied to the lines a pattern left pending (or to everything, for unknown commands):
blank lines dropped, progress bars and spinners collapsed, identical consecutive lines folded
with a count, runs of near-identical lines (differing by numbers, hashes, timestamps) reduced
to their first and last line, very long lines shortened, and a long middle elided around the
must-keep lines. Every omission gets a marker with its line count.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Sequence

from leanctx.context.shell.builder import Builder
from leanctx.context.shell.text import is_blank, is_progress, normalize_for_similarity

__all__ = ["FACT_RE", "SUMMARY_RE", "detect_facts", "finish", "shorten"]

FACT_RE = re.compile(
    r"""(?ix)
      \b(?:error|fatal|panic(?:ked)?|exception|traceback|failed|failure|segmentation\ fault)\b
    | ^\s*(?:[\w.]+(?:Error|Exception|Warning)|AssertionError|KeyboardInterrupt)\b
    | \berror\[?[A-Z]*\d*\]?:
    | \b(?:cannot|could\ not|couldn't|unable\ to|not\ found|no\ such\ file|permission\ denied|refused)\b
    """
)
WARN_RE = re.compile(r"\b[Ww]arning:|^\s*[Ww]arn(?:ing)?\b|\[[Ww]arn(?:ing)?\]|\bWARN(?:ING)?\b")
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
MAX_LINE = 400
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


def detect_facts(b: Builder, idxs: Sequence[int] | None = None, *, warnings: bool = True) -> None:
    """Mark error/warning/summary lines as must-keep (the first of each near-identical class)."""
    seen: set[str] = set()
    wanted = None if idxs is None else set(idxs)
    for i in _hit_lines(b.lines, warnings):
        if wanted is not None and i not in wanted:
            continue
        line = b.lines[i]
        if not line.strip() or len(line) > 2000:
            continue
        key = normalize_for_similarity(line)
        if key in seen:
            continue
        seen.add(key)
        b.must_keep(i)


def shorten(line: str, limit: int = MAX_LINE) -> str:
    if len(line) <= limit:
        return line
    return f"{line[:limit]}…[+{len(line) - limit} chars]"


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
    # 2. runs of identical / near-identical consecutive lines
    survivors: list[int] = []
    k = 0
    while k < len(rest):
        j = k
        while j + 1 < len(rest) and rest[j + 1] == rest[j] + 1 and b.lines[rest[j + 1]] == b.lines[rest[k]]:
            j += 1
        if j > k:
            run = rest[k : j + 1]
            b.fold(run, f"{shorten(b.lines[run[0]])}  [×{len(run)}]")
            survivors.append(run[0])
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
            b.omit(run[1:], "same line, later timestamps")
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
            b.omit(run[1:-1], "similar lines")
            survivors.extend([run[0], run[-1]])
            k = j + 1
            continue
        survivors.append(rest[k])
        k += 1
    survivors = b.pending(sorted(set(survivors)))
    # 3. a long middle is elided, must-keep lines excepted
    if len(survivors) > budget:
        middle = survivors[head : len(survivors) - tail]
        b.omit(middle, "middle of output")
    for i in b.pending(survivors):
        b.keep(i, b.lines[i] if i in b.must else shorten(b.lines[i]))
