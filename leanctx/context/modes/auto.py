"""``auto``: pick a mode from the file's size and type and an optional intent, and say why."""

from __future__ import annotations

import re

from leanctx.context.langs import CODE_LANGUAGES, DATA_LANGUAGES
from leanctx.context.modes.rendered import source_lines
from leanctx.context.symbols import uses_tree_sitter

__all__ = ["SMALL_LINES", "choose_mode"]

SMALL_LINES = 120
SMALL_CHARS = 6000
LARGE_LINES = 800

_INTENTS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(diff|changed?|changes|what changed|since)\b", re.I), "diff"),
    (re.compile(r"\b(edit|modify|rewrite|refactor|patch|apply|replace|rename)\b", re.I), "full"),
    (re.compile(r"\b(overview|structure|outline|architecture|map|layout|skim|explore)\b", re.I), "map"),
    (re.compile(r"\b(api|interface|signatures?|types?|declarations?|exports?)\b", re.I), "signatures"),
]


def choose_mode(path: str, text: str, language: str, intent: str | None, has_old: bool) -> tuple[str, str]:
    """(mode, reason)."""
    n = len(source_lines(text))
    size = f"{n} lines"
    if intent:
        for rx, mode in _INTENTS:
            if rx.search(intent):
                if mode == "diff" and not has_old:
                    continue
                if mode == "full" and n > LARGE_LINES:
                    return "task", f"intent {intent!r} asks to edit, but the file is large ({size}): relevant lines"
                return mode, f"intent {intent!r} matches {mode!r} ({size})"
        if n > SMALL_LINES:
            return "task", f"intent given and the file is not small ({size}): lines relevant to it"
    if n <= SMALL_LINES and len(text) <= SMALL_CHARS:
        return "full", f"small file ({size})"
    if language in DATA_LANGUAGES:
        return "entropy", f"{language} data of {size}: repeated and low-information lines dropped"
    if uses_tree_sitter(language) or language in CODE_LANGUAGES:
        if n > LARGE_LINES:
            return "map", f"large {language} file ({size}): dependencies and outline"
        return "signatures", f"{language} source of {size}: declarations without bodies"
    return "aggressive", f"{language} text of {size}: blank lines and comments dropped"
