"""``task`` mode: the lines relevant to a task description, with context and enclosing signatures.

Lines are scored by the task's words they share (``terms``: identifier parts, stemmed so that
``processes`` meets ``process``), rarer words weighing more; the best lines are sent with
``context`` lines around them and the declaration lines that enclose them. A definition the task
names (``dedent``; ``compile the path`` names ``compile_path``) is sent whole, at most
``BODY_LINES`` lines of it and ``BODIES_LINES`` of all such bodies together; every line left out
is counted in a gap line (``… 12 lines not shown``) and in the footer. Rows carry the file's own
line numbers."""

from __future__ import annotations

import math
import re
from collections import Counter

from leanctx.context.modes.rendered import Rendered, footer, plural, source_lines
from leanctx.context.symbols import Symbol, extract_symbols

__all__ = ["BODIES_LINES", "BODY_LINES", "mentions", "render_task", "stem", "terms"]

_STOP = set("""
a an and are as at be but by can do does for from get has have how i if in into is it its make
me my need not of on or should so that the their them then there these this to use using was we
what when where which while who why will with would you your add fix bug issue code file function
method class please change update implement make sure also all any some new old one two used
""".split())  # noqa: SIM905 (a word list reads best as text)
_MAX_HITS = 40
BODY_LINES = 80  # a named definition is sent whole up to this many lines (its first lines beyond)
BODIES_LINES = 240  # all named definitions together
_NO_BODY_KINDS = frozenset({"module", "namespace"})  # they enclose the file, not one definition
_SPLIT = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_WORD = re.compile(r"[A-Za-z0-9_]+")
_VOWELS = frozenset("aeiouy")
_KEEP_DOUBLE = frozenset("lsfz")  # call/calling, pass/passed, diff/diffing, buzz/buzzing


def stem(w: str) -> str:
    """A light suffix stripper under which a lower-case word and its plural or inflected forms meet
    (process/processes/processing, status/statuses, wrap/wrapping, parse/parsing, entry/entries,
    cache/cached). Not a linguistic stem: only equality of stems matters.

    In turn: a plural or third-person ``s`` (not of ``ss``, ``us``, ``is``: class, status, basis);
    ``ing``/``ed`` when a vowel and three letters stay (string, need stay whole); a doubled final
    consonant undone (running -> run, but add, call, pass stay); a final ``y`` after a consonant
    as ``i`` (retry/retries); and a final ``e`` (parse, parses -> pars; statuses -> status)."""
    if len(w) <= 3 or not w.isalpha():
        return w
    if w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suf in ("ing", "ed"):
        rest = w[: -len(suf)]
        if w.endswith(suf) and len(rest) >= 3 and _VOWELS & set(rest) and not (suf == "ed" and rest.endswith("e")):
            w = rest
            if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in _VOWELS | _KEEP_DOUBLE:
                w = w[:-1]
            break
    if len(w) >= 3 and w.endswith("y") and w[-2] not in _VOWELS:
        w = w[:-1] + "i"
    if len(w) >= 4 and w.endswith("e"):
        w = w[:-1]
    return w


_STOP_STEMS = frozenset(stem(w) for w in _STOP)  # classes, files, changes: as generic as class, file


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
                if len(q) >= 3 and q not in _STOP and (st := stem(q)) not in _STOP_STEMS:
                    out.add(st)
        if len(whole) >= 3 and whole not in _STOP and whole not in out and not whole.isalpha():
            out.add(whole)  # the identifier itself (``func_77``, ``parse2``): rare, so it ranks first
    return out


def mentions(task: str, text: str) -> bool:
    """Whether some line of ``text`` shares a term with ``task`` (a ``task`` view would show lines)."""
    want = terms(task)
    low = text.lower()
    if not any(t[:-1] in low for t in want):  # a stem less its last letter is a prefix of its word
        return False
    return any(not want.isdisjoint(terms(ln)) for ln in text.splitlines())


def _named(symbols: list[Symbol], want: set[str]) -> list[Symbol]:
    """The definitions the task names, its exact identifiers first: ``dedent`` by its name,
    ``compile_path`` by its parts (compile, path) unless the name has digits (``func_77`` only by
    itself: its part ``func`` names every ``func_N``)."""
    out: list[tuple[bool, Symbol]] = []
    for s in symbols:
        if s.kind in _NO_BODY_KINDS or s.end_line <= s.line:
            continue
        whole = s.name.lower()
        parts = terms(s.name) - {whole}
        if whole in want:
            out.append((True, s))
        elif parts and parts <= want and not any(c.isdigit() for c in s.name):
            out.append((False, s))
    return [s for _, s in sorted(out, key=lambda e: (not e[0], e[1].line))]


def _bodies(named: list[Symbol], keep: set[int], lines: list[str]) -> tuple[str | None, list[int]]:
    """Add the named definitions' lines to ``keep`` within the bounds: the footer's note on them,
    and the (0-based) lines where the definitions sent start."""
    budget = BODIES_LINES
    said: list[str] = []
    starts: list[int] = []
    for s in named:
        end = s.end_line
        while end > s.line and not lines[end - 1].strip():
            end -= 1
        size = end - s.line + 1
        take = min(size, BODY_LINES, budget)
        if take <= 0:
            break
        keep.update(range(s.line - 1, s.line - 1 + take))
        starts.append(s.line - 1)
        budget -= take
        span = f"{s.name} ({s.line}-{end})"
        said.append(f"body of {span}" if take == size else f"first {take} of {size} lines of {span}")
    if not said:
        return None, []
    extra = len(said) - 3
    note = ", ".join(said[:3]) + (f" and {extra} more {'body' if extra == 1 else 'bodies'}" if extra > 0 else "")
    if len(named) > len(said):
        note += f"; {plural(len(named) - len(said), 'more named definition')} over the {BODIES_LINES}-line bound"
    return note, starts


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
        note = f"no line matches the task terms ({', '.join(sorted(want)) or 'none'}); {plural(n, 'line')} not shown"
        body = "\n".join([f"(nothing in {plural(n, 'line')} matches: {task!r})", footer("task", n, note)])
        return Rendered(mode="task", path=path, language=language, text=body, line_count=n,
                        shown_lines=0, omitted_lines=n, omitted=note)
    threshold = max(best * 0.5, min(idf.values(), default=0.0))
    ranked = sorted((i for i, s in enumerate(scores) if s >= threshold), key=lambda i: (-scores[i], i))
    hits = sorted(ranked[: max(8, min(_MAX_HITS, n // 25))])
    keep: set[int] = set()
    for i in hits:
        keep.update(range(max(0, i - context), min(n, i + context + 1)))
    symbols = extract_symbols(path, text, language)
    bodies, starts = _bodies(_named(symbols, want), keep, lines)
    for i in (*hits, *starts):  # enclosing declarations, outermost first
        for s in symbols:
            if s.line - 1 <= i <= s.end_line - 1:
                keep.add(s.line - 1)
    width = len(str(n))
    out: list[str] = []
    prev = -1
    for i in sorted(keep):
        if i > prev + 1:
            out.append(f"… {plural(i - prev - 1, 'line')} not shown")
        out.append(f"{i + 1:>{width}}\t{lines[i]}")
        prev = i
    if prev < n - 1:
        out.append(f"… {plural(n - 1 - prev, 'line')} not shown")
    omitted = n - len(keep)
    matched = sorted({t for i in hits for t in line_terms[i] & want})
    note = " · ".join([f"{plural(len(hits), 'matching line')} for {', '.join(matched)}",
                       *([bodies] if bodies else []), f"{plural(omitted, 'line')} not shown"])
    out.append(footer("task", n, note))
    return Rendered(mode="task", path=path, language=language, text="\n".join(out), line_count=n,
                    shown_lines=len(keep), omitted_lines=omitted, omitted=note if omitted else None)
