"""Modes that show source lines as they are: full, lines:N-M, diff."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable

from leanctx.context.errors import ReadInvalidRange
from leanctx.context.modes.rendered import Rendered, footer, plural, source_lines

__all__ = ["diff_texts", "layout_changes", "numbered_ranges", "parse_ranges", "ranges_spec", "render_diff", "render_full", "render_lines"]


def render_full(path: str, text: str, language: str) -> Rendered:
    n = len(source_lines(text))
    return Rendered(mode="full", path=path, language=language, text=text, line_count=n,
                    shown_lines=n, omitted_lines=0)


_RANGE = re.compile(r"^\s*(\d+)\s*(?:(-)\s*(\d*)\s*)?$")


def parse_ranges(spec: str, line_count: int) -> list[tuple[int, int]]:
    """``"1-10,40-50"`` -> merged inclusive ranges; ``N`` alone and ``N-`` (to the end) allowed."""
    if not spec.strip():
        raise ReadInvalidRange("lines mode needs ranges, e.g. lines:1-10 or lines:1-10,40-50.")
    out: list[tuple[int, int]] = []
    for part in spec.split(","):
        m = _RANGE.match(part)
        if not m:
            raise ReadInvalidRange(
                f"{part.strip()!r} is not a line range; write N-M with 1 <= N <= M, e.g. lines:5-20."
            )
        start = int(m.group(1))
        end = start if not m.group(2) else (int(m.group(3)) if m.group(3) else max(line_count, start))
        if start < 1:
            raise ReadInvalidRange(f"line numbers start at 1, got {start}; use a range like 1-{max(1, end)}.")
        if end < start:
            raise ReadInvalidRange(f"range {start}-{end} ends before it starts; write it as {end}-{start}.")
        if start > line_count:
            raise ReadInvalidRange(
                f"range {start}-{end} starts after the end of the file ({line_count} lines); "
                f"ask for lines within 1-{line_count}."
            )
        out.append((start, min(end, line_count)))
    out.sort()
    merged: list[tuple[int, int]] = []
    for s, e in out:
        if merged and s <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


def _gap(a: int, b: int) -> str:
    return f"… line {a} not shown" if a == b else f"… lines {a}-{b} not shown ({b - a + 1} lines)"


def render_lines(path: str, text: str, language: str, spec: str) -> Rendered:
    lines = source_lines(text)
    n = len(lines)
    ranges = parse_ranges(spec, n)
    body, shown, note = numbered_ranges(ranges, lambda k: lines[k - 1], n)
    return Rendered(mode="lines", path=path, language=language, text=body, line_count=n,
                    shown_lines=shown, omitted_lines=n - shown, omitted=note)


def ranges_spec(ranges: list[tuple[int, int]]) -> str:
    """``[(1, 40), (90, 90)]`` → ``1-40,90``."""
    return ",".join(f"{s}-{e}" if s != e else str(s) for s, e in ranges)


def numbered_ranges(ranges: list[tuple[int, int]], line: Callable[[int], str], n: int) -> tuple[str, int, str | None]:
    """A ``lines:`` view of an ``n``-line file: each line of ``ranges`` as ``N<TAB>text``
    (``line(k)``: the text of 1-based line ``k``), the lines between as one gap line, and the
    footer. Returns (text, lines shown, the omission note). Shared by reads that load the file
    and those that stream it (``leanctx.ops.read_huge``), so both views read the same."""
    width = len(str(ranges[-1][1]))
    out: list[str] = []
    prev_end = 0
    shown = 0
    for s, e in ranges:
        if s > prev_end + 1:
            out.append(_gap(prev_end + 1, s - 1))
        out.extend(f"{k:>{width}}\t{line(k)}" for k in range(s, e + 1))
        shown += e - s + 1
        prev_end = e
    if prev_end < n:
        out.append(_gap(prev_end + 1, n))
    omitted = n - shown
    note = f"{plural(omitted, 'line')} not shown" if omitted else None
    out.append(footer(f"lines:{ranges_spec(ranges)}", n, note))
    return "\n".join(out), shown, note


def diff_texts(old: str, new: str, context: int = 1) -> tuple[list[str], int, int, int]:
    """Compact diff lines (``-12 old``, ``+12 new``, `` 11 context``) and counts (+, -, shown ctx)."""
    a, b = source_lines(old), source_lines(new)
    sm = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    out: list[str] = []
    added = removed = ctx_shown = 0
    for group in sm.get_grouped_opcodes(context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ old {i1 + 1}-{i2} → new {j1 + 1}-{j2} @@")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out.extend(f" {b1 + k + 1} {b[b1 + k]}" for k in range(b2 - b1))
                ctx_shown += b2 - b1
                continue
            if tag in {"replace", "delete"}:
                out.extend(f"-{a1 + k + 1} {a[a1 + k]}" for k in range(a2 - a1))
                removed += a2 - a1
            if tag in {"replace", "insert"}:
                out.extend(f"+{b1 + k + 1} {b[b1 + k]}" for k in range(b2 - b1))
                added += b2 - b1
    return out, added, removed, ctx_shown


def _line_ends(text: str) -> list[str]:
    """The end of each line of ``text``: ``"\r\n"``, ``"\n"``, or ``""`` for a last line with none."""
    ends = ["\r\n" if ln.endswith("\r") else "\n" for ln in text.split("\n")[:-1]]
    return [*ends, ""] if text and not text.endswith("\n") else ends


def _ends_style(ends: list[str]) -> str | None:
    crlf = ends.count("\r\n")
    lf = ends.count("\n")
    if crlf and lf:
        return f"mixed ({crlf} CRLF, {lf} LF)"
    return "CRLF" if crlf else "LF" if lf else None


def layout_changes(old: str, new: str) -> list[str]:
    """What changed between ``old`` and ``new`` that a diff of their lines does not show: the
    line endings (``line endings changed: LF -> CRLF``; a file whose endings were mixed before
    and after says on how many lines) and the final newline (``final newline added``)."""
    a, b = _line_ends(old), _line_ends(new)
    out: list[str] = []
    sa, sb = _ends_style(a), _ends_style(b)
    if sa is not None and sb is not None and sa != sb:
        out.append(f"line endings changed: {sa} -> {sb}")
    elif sa is not None and sa == sb and len(a) == len(b):  # the same mix, maybe on other lines
        k = sum(1 for x, y in zip(a, b, strict=True) if x and y and x != y)
        if k:
            out.append(f"line endings changed on {plural(k, 'line')}")
    if old and new and old.endswith("\n") != new.endswith("\n"):
        out.append("final newline added" if new.endswith("\n") else "final newline removed")
    return out


def render_diff(path: str, text: str, language: str, old_text: str, context: int = 1) -> Rendered:
    n = len(source_lines(text))
    old_n = len(source_lines(old_text))
    body, added, removed, ctx = diff_texts(old_text, text, context)
    layout = layout_changes(old_text, text) if old_text != text else []
    if not body:
        if old_text != text and not layout:  # a CR at the very end: the only difference left
            layout = ["only line-end characters differ"]
        note = " · ".join([*layout, "the text of every line is unchanged"]) if layout else "no changes"
        return Rendered(mode="diff", path=path, language=language,
                        text=footer("diff", n, note), line_count=n, shown_lines=0,
                        omitted_lines=n, omitted=f"all {plural(n, 'line')} unchanged")
    unchanged = n - added - ctx
    note = f"+{added} −{removed} (was {plural(old_n, 'line')}) · {unchanged} unchanged {'line' if unchanged == 1 else 'lines'} not shown"
    body.append(footer("diff", n, " · ".join([note, *layout])))
    return Rendered(mode="diff", path=path, language=language, text="\n".join(body), line_count=n,
                    shown_lines=added + ctx, omitted_lines=unchanged,
                    omitted=f"{unchanged} unchanged {'line' if unchanged == 1 else 'lines'}")
