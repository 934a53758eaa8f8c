"""grep / rg / ag / git grep: matches grouped per file under a common prefix, capped per file."""

from __future__ import annotations

import os
import re
from collections import defaultdict

from leanctx.context.shell.builder import Builder, cut_marker
from leanctx.context.shell.patterns.common import Ctx

__all__ = ["grep"]

_MATCH = re.compile(r"^(?P<path>[^\s:][^:]*?):(?P<line>\d+):(?P<text>.*)$")
_CONTEXT = re.compile(r"^(?P<path>[^\s:][^:]*?)-(?P<line>\d+)-(?P<text>.*)$")
_MATCH_NOLINE = re.compile(r"^(?P<path>[^\s:][^:]*\.[\w]+):(?P<text>.*)$")
_HEADING_LINE = re.compile(r"^(?P<line>\d+)[:-](?P<text>.*)$")
_BINARY = re.compile(r"^(?:grep: )?(?:Binary file )?(\S+)(?:: binary file matches| matches)$")
_PER_FILE = 5
_TOTAL = 100
_MAX_TEXT = 160
_CLIP_SLACK = 80  # a shorter excess costs less than the marker that would announce it


def _clip(b: Builder, i: int, text: str) -> str:
    """A match's text; a very long one shortened, the rest counted by a marker naming line
    ``i`` (the line counts as omitted: the archive has it whole)."""
    text = text.strip()
    if len(text) <= _MAX_TEXT + _CLIP_SLACK:
        return text
    b.mark_cut(i)
    return text[:_MAX_TEXT] + cut_marker(len(text) - _MAX_TEXT, i + 1, b.frames.get(i, 0))


def grep(b: Builder, ctx: Ctx) -> None:
    files: defaultdict[str, list[tuple[int, str, str]]] = defaultdict(list)  # path -> (idx, lineno, text)
    binaries: list[tuple[int, str]] = []
    current = ""  # rg --heading: a path alone on a line
    heads: dict[str, int] = {}
    for i, line in enumerate(b.lines):
        if not line.strip():
            b.blank(i)
            current = ""
            continue
        if line == "--":
            b.blank(i)
            continue
        if m := _BINARY.match(line):
            binaries.append((i, m.group(1)))
            continue
        m = _MATCH.match(line) or _CONTEXT.match(line)
        if m and not current:
            files[m.group("path")].append((i, m.group("line"), m.group("text")))
            continue
        if current and (h := _HEADING_LINE.match(line)):
            files[current].append((i, h.group("line"), h.group("text")))
            continue
        if m2 := _MATCH_NOLINE.match(line):
            files[m2.group("path")].append((i, "", m2.group("text")))
            continue
        if re.match(r"^[^\s:]+$", line) and i + 1 < b.n and _HEADING_LINE.match(b.lines[i + 1]):
            current = line
            heads[current] = i  # re-emitted with its group
            continue
    groups = {p: m for p, m in files.items() if m}
    if not groups:
        return
    paths = list(groups)
    absolute = [p for p in paths if p.startswith("/")]
    prefix = ""
    if len(paths) > 1 and (len(absolute) == len(paths) or not absolute):
        prefix = os.path.commonpath(paths)
        if prefix in groups:
            prefix = os.path.dirname(prefix)
    if prefix:
        b.note(min(m[0][0] for m in groups.values()) - 0.5, f"under {prefix}/:")
    shown_total = 0
    for path, matches in groups.items():
        rel = os.path.relpath(path, prefix) if prefix else path
        b.must_keep(matches[0][0], rel)
        budget = max(1, min(_PER_FILE, _TOTAL - shown_total))
        shown, extra = matches[:budget], matches[budget:]
        shown_total += len(shown)
        # a capped file says how many of its matches are shown; the lines left out are
        # announced together in one marker at the end (one archive id, not one per file)
        count = f" ({len(shown)} of {len(matches)})" if extra else f" ({len(matches)})" if len(matches) > 1 else ""
        body = [f"  {ln}: {_clip(b, k, t)}" if ln else f"  {_clip(b, k, t)}" for k, ln, t in shown]
        lead = [heads[path]] if path in heads else []
        b.represent([*lead, *(k for k, _, _ in shown)], "\n".join([rel + count, *body]))
        if extra:
            b.omit([k for k, _, _ in extra], "more matches", inline=False)
    if binaries:
        b.represent([i for i, _ in binaries], "binary matches: " + ", ".join(
            os.path.relpath(p, prefix) if prefix and p.startswith(prefix) else p for _, p in binaries
        ))
