"""Read modes: render a file for an agent at the level of detail it needs.

``read(path, text, mode)`` with mode one of ``full``, ``map``, ``signatures``, ``lines:N-M[,A-B]``,
``diff`` (needs ``old_text``), ``aggressive``, ``entropy``, ``task`` (needs ``task``) and ``auto``
(uses ``intent`` if given). Every result states its mode and the file's line count, and every
omission is stated with the number of lines left out.
"""

from __future__ import annotations

import msgspec

from leanctx.context.errors import ReadInvalidMode, ReadMissingInput
from leanctx.context.langs import detect_language
from leanctx.context.modes.auto import choose_mode
from leanctx.context.modes.basic import (
    diff_texts,
    parse_ranges,
    render_diff,
    render_full,
    render_lines,
)
from leanctx.context.modes.entropy import render_entropy
from leanctx.context.modes.outline import render_map, render_signatures
from leanctx.context.modes.rendered import Rendered, source_lines
from leanctx.context.modes.strip import render_aggressive, strip_comments
from leanctx.context.modes.task import render_task

__all__ = [
    "MODES",
    "Rendered",
    "diff_texts",
    "parse_ranges",
    "read",
    "source_lines",
    "strip_comments",
]

MODES = ("full", "map", "signatures", "lines", "diff", "aggressive", "entropy", "task", "auto")


def read(
    path: str,
    text: str,
    mode: str = "full",
    *,
    task: str | None = None,
    old_text: str | None = None,
    intent: str | None = None,
    language: str | None = None,
) -> Rendered:
    """Render ``text`` (the content of ``path``) in ``mode``; see the module docstring."""
    lang = language or detect_language(path, text)
    name, _, arg = mode.strip().partition(":")
    name = name.lower()
    if name not in MODES:
        raise ReadInvalidMode(f"unknown read mode {mode!r}; use one of {', '.join(MODES)} (lines as lines:N-M).")
    if arg and name != "lines":
        raise ReadInvalidMode(f"mode {name!r} takes no argument; use {name} alone, or lines:N-M for line ranges.")
    requested = mode.strip()
    reason: str | None = None
    if name == "auto":
        name, reason = choose_mode(path, text, lang, intent or task, old_text is not None)
        if name == "task" and not task:
            task = intent
    if name == "full":
        r = render_full(path, text, lang)
    elif name == "lines":
        if not arg:
            raise ReadInvalidMode("lines mode needs ranges: use lines:N-M or lines:N-M,A-B.")
        r = render_lines(path, text, lang, arg)
    elif name == "diff":
        if old_text is None:
            raise ReadMissingInput("diff mode compares with a previous version: pass old_text.")
        r = render_diff(path, text, lang, old_text)
    elif name == "map":
        r = render_map(path, text, lang)
    elif name == "signatures":
        r = render_signatures(path, text, lang)
    elif name == "aggressive":
        r = render_aggressive(path, text, lang)
    elif name == "entropy":
        r = render_entropy(path, text, lang)
    else:  # task
        if not task or not task.strip():
            raise ReadMissingInput("task mode selects lines relevant to a task: pass task='what you are doing'.")
        r = render_task(path, text, lang, task)
    if reason is not None and name in ("map", "signatures") and r.shown_lines == 0:
        r = render_full(path, text, lang)
        reason = f"{reason}; the {name} view was empty (no declarations found), so the file is sent in full"
    return msgspec.structs.replace(r, reason=reason, requested=requested)
