"""``task`` mode: the lines relevant to a task description, with context and enclosing signatures."""

from __future__ import annotations

import math
import re
from collections import Counter

from leanctx.context.modes.rendered import Rendered, footer, source_lines
from leanctx.context.symbols import extract_symbols

__all__ = ["render_task", "terms"]

_STOP = set("""
a an and are as at be but by can do does for from get has have how i if in into is it its make
me my need not of on or should so that the their them then there these this to use using was we
what when where which while who why will with would you your add fix bug issue code file function
method class please change update implement make sure also all any some new old one two
""".split())
_MAX_HITS = 40
_SPLIT = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_WORD = re.compile(r"[A-Za-z0-9_]+")


def _stem(w: str) -> str:
    for suf in ("ing", "ed", "es", "s"):
        if len(w) > len(suf) + 3 and w.endswith(suf):
            return w[: -len(suf)]
    return w


def terms(text: str) -> set[str]:
    """Lower-cased, stemmed words and identifier parts (``leaseExpiry`` -> lease, expiry), and an
    identifier with digits or underscores whole (``func_77`` -> func, func_77: its parts alone
    would match every ``func_N``)."""
    out: set[str] = set()
    for word in _WORD.findall(text):
        parts = [p.lower() for p in _SPLIT.findall(word)] if not word.isupper() else [word.lower()]
        whole = word.lower()
        for p in {*parts, whole}:
            for q in p.split("_"):
                if len(q) >= 3 and q not in _STOP:
                    out.add(_stem(q))
        if len(whole) >= 3 and whole not in _STOP and whole not in out and not whole.isalpha():
            out.add(whole)  # the identifier itself (``func_77``, ``parse2``): rare, so it ranks first
    return out


def _lines(k: int) -> str:
    return f"{k} line" if k == 1 else f"{k} lines"


def render_task(path: str, text: str, language: str, task: str, context: int = 2) -> Rendered:
    lines = source_lines(text)
    n = len(lines)
    want = terms(task)
    line_terms = [terms(ln) for ln in lines]
    df: Counter[str] = Counter()
    for ts_ in line_terms:
        df.update(ts_ & want)
    idf = {t: math.log(1 + n / (1 + df[t])) for t in want}
    scores = [sum(idf[t] for t in (lt & want)) for lt in line_terms]
    best = max(scores, default=0.0)
    if best <= 0:
        note = f"no line matches the task terms ({', '.join(sorted(want)) or 'none'}); {_lines(n)} not shown"
        body = "\n".join([f"(nothing in {_lines(n)} matches: {task!r})", footer("task", n, note)])
        return Rendered(mode="task", path=path, language=language, text=body, line_count=n,
                        shown_lines=0, omitted_lines=n, omitted=note)
    threshold = max(best * 0.5, min(idf.values(), default=0.0))
    ranked = sorted((i for i, s in enumerate(scores) if s >= threshold), key=lambda i: (-scores[i], i))
    hits = sorted(ranked[: max(8, min(_MAX_HITS, n // 25))])
    keep: set[int] = set()
    for i in hits:
        keep.update(range(max(0, i - context), min(n, i + context + 1)))
    symbols = extract_symbols(path, text, language)
    for i in hits:  # enclosing declarations, outermost first
        for s in symbols:
            if s.line - 1 <= i <= s.end_line - 1:
                keep.add(s.line - 1)
    width = len(str(n))
    out: list[str] = []
    prev = -1
    for i in sorted(keep):
        if i > prev + 1:
            out.append(f"… {_lines(i - prev - 1)} not shown")
        out.append(f"{i + 1:>{width}}\t{lines[i]}")
        prev = i
    if prev < n - 1:
        out.append(f"… {_lines(n - 1 - prev)} not shown")
    omitted = n - len(keep)
    matched = sorted({t for i in hits for t in line_terms[i] & want})
    note = f"{len(hits)} matching {'line' if len(hits) == 1 else 'lines'} for {', '.join(matched)} · {_lines(omitted)} not shown"
    out.append(footer("task", n, note))
    return Rendered(mode="task", path=path, language=language, text="\n".join(out), line_count=n,
                    shown_lines=len(keep), omitted_lines=omitted, omitted=note if omitted else None)
