"""``auto``: pick a mode from the file's size and type and an intent, and say why.

The intent is the caller's per-call ``intent`` (or its ``task``); when a read gives neither,
the read operation (``leanctx.ops.read``) passes the task of the caller's session instead
(``lean-ctx session task``), and the reason names where the intent came from (``intent_label``).
The reason always names the intent when one was given, even when it matched no mode, and it
starts with the intent's label exactly when the intent decided the mode.

A small file (at most ``SMALL_LINES`` lines and ``SMALL_CHARS`` characters) is sent whole
whatever the intent: an outline of it (``map``, ``signatures``) would leave out the bodies where
the bug is, to save a few hundred tokens. The one exception is ``diff``, whose base is a version
this conversation already received. An intent that picks ``task`` (an edit of a large file, or
an intent that names no mode) must share a term with some line of the file (``mentions``);
otherwise the task view would show nothing, and the mode is chosen as if no intent was given.

Minified or generated code (lines averaging over ``DENSE_LINE_CHARS`` characters) has no
outline worth sending: ``full`` (capped by the read like any answer, the rest archived). And
when the structural view ``auto`` picked comes out empty (no declarations found: a script of
top-level statements), ``read`` sends the file in full instead and the reason says so; an
empty outline is not a saving.

Data is sent as what it can lose and keep its meaning: a log its repeated and low-information
lines (``entropy``), YAML, TOML, INI and XML their comments (``aggressive``: their grammar knows
them), and JSON, CSV, lock files, markdown and plain text nothing (``full``, capped): every line
of them carries structure or content (``entropy`` once dropped closing braces, repeated keys and
code fences there).
"""

from __future__ import annotations

import re

from leanctx.context.langs import CODE_LANGUAGES, DATA_LANGUAGES
from leanctx.context.modes.rendered import plural, source_lines
from leanctx.context.modes.task import mentions
from leanctx.context.symbols import uses_tree_sitter

__all__ = ["SESSION_TASK", "SMALL_LINES", "choose_mode", "intent_label"]

SMALL_LINES = 120
SMALL_CHARS = 6000
LARGE_LINES = 800
DENSE_LINE_CHARS = 300  # average characters per line above which code is minified or generated
SESSION_TASK = "the session's task"  # ``intent_label`` source of an intent taken from the session

_INTENTS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(diff|changed?|changes|what changed|since)\b", re.IGNORECASE), "diff"),
    (re.compile(r"\b(edit|modify|rewrite|refactor|patch|apply|replace|rename)\b", re.IGNORECASE), "full"),
    (re.compile(r"\b(overview|structure|outline|architecture|map|layout|skim|explore)\b", re.IGNORECASE), "map"),
    (re.compile(r"\b(api|interface|signatures?|types?|declarations?|exports?)\b", re.IGNORECASE), "signatures"),
]


# data whose comments can go without changing it (its grammar knows them: ``modes.comments``);
# JSON, CSV, lock files, prose and markdown have nothing to drop that is not content
_COMMENTED_DATA = frozenset({"yaml", "toml", "ini", "xml"})

# a fix needs bodies: such an intent never asks for an outline ("fix the type error" is no request
# for types); it gets the lines relevant to it, like an intent that names no mode
_FIXING = re.compile(r"\b(fix(es|ing)?|bugs?|debug(ging)?|broken|crash(es|ing)?|fails?|failing)\b", re.IGNORECASE)


def intent_label(intent: str, source: str = "intent") -> str:
    """How a reason names an intent: ``intent 'x'``, or ``the session's task 'x'``."""
    return f"{source} {intent!r}"


def choose_mode(path: str, text: str, language: str, intent: str | None, has_old: bool,
                *, source: str = "intent") -> tuple[str, str]:
    """(mode, reason). ``source`` says where ``intent`` came from (see ``intent_label``)."""
    n = len(source_lines(text))
    size = plural(n, "line")
    small = n <= SMALL_LINES and len(text) <= SMALL_CHARS
    said = ""
    if intent:
        label = intent_label(intent, source)
        fixing = _FIXING.search(intent) is not None
        for rx, mode in _INTENTS:
            if not rx.search(intent) or (mode == "diff" and not has_old) or (fixing and mode in ("map", "signatures")):
                continue
            if mode in ("map", "signatures") and small:  # an outline of a small file loses its bodies
                said = f"; {label} matches {mode!r}, but a small file is sent whole"
            elif mode == "full" and n > LARGE_LINES:
                if mentions(intent, text):
                    return "task", f"{label} asks to edit, but the file is large ({size}): relevant lines"
                said = f"; {label} asks to edit, but matches no line of the file"
            else:
                return mode, f"{label} matches {mode!r} ({size})"
            break
        else:
            if n <= SMALL_LINES:
                said = f"; {label} names no mode"
            elif mentions(intent, text):
                return "task", f"{label} given and the file is not small ({size}): lines relevant to it"
            else:
                said = f"; {label} matches no line of the file"
    if small:
        return "full", f"small file ({size}){said}"
    width = len(text) // max(n, 1)
    if width > DENSE_LINE_CHARS and language not in DATA_LANGUAGES:
        return "full", (f"{language} of {size} averaging {width:,} characters a line (minified or generated): "
                        f"no outline to give{said}")
    if language in DATA_LANGUAGES:  # what a data file can lose and keep its meaning
        if language == "log":
            return "entropy", f"log of {size}: repeated and low-information lines dropped{said}"
        if language in _COMMENTED_DATA:
            return "aggressive", f"{language} data of {size}: comments and blank lines dropped{said}"
        return "full", f"{language} of {size}: every line carries structure or content{said}"
    if uses_tree_sitter(language) or language in CODE_LANGUAGES:
        if n > LARGE_LINES:
            return "map", f"large {language} file ({size}): dependencies and outline{said}"
        return "signatures", f"{language} source of {size}: declarations without bodies{said}"
    return "aggressive", f"{language} text of {size}: blank lines and comments dropped{said}"
