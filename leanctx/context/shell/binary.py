"""Binary runs in a command's output: found, counted, escaped for the archive (pure).

A command's output is text decoded as UTF-8; bytes that are not UTF-8 arrive either as lone
surrogates U+DC80–U+DCFF (``surrogateescape``: ``ops.process`` decodes that way, so the exact
bytes survive) or as U+FFFD (text decoded earlier, e.g. captured output given to ``compress``).

*Non-text* characters are those, NUL and the other C0 controls a terminal does not use (BEL,
backspace, tab, newline, VT, form feed, carriage return and ESC are text), DEL and the C1
controls. A **binary run** is a stretch of output from a non-text character to a non-text
character, in which no ``GAP`` consecutive text characters occur (so text between two blobs
shorter than that goes with them), that holds at least ``MIN_NON_TEXT`` non-text characters
making at least ``MIN_SHARE`` of it. Text with a few stray bytes (a Latin-1 ``café`` in UTF-8
output, NUL-separated ``find -print0`` paths) is not binary; ``head -c 3000 /dev/urandom`` is.
Reads decide per file (a NUL in the first 8 KiB, ``ops.files.is_binary``); an output is decided
per run, because text and binary interleave in one stream (``printf 'ok\\n'; cat blob``).

:func:`plain` is the text as a plain decode shows it (every undecodable byte a U+FFFD, the form
everything but the archive works on); :func:`escaped` writes each binary run as a Python bytes
literal would (``\\x89PNG\\r\\n``: printable ASCII as is, ``\\\\``, ``\\t``, ``\\r``, every other
byte ``\\xNN``), newlines kept as line breaks so that line ``k`` stays line ``k``.
"""

from __future__ import annotations

import re

import msgspec

__all__ = ["GAP", "MIN_NON_TEXT", "MIN_SHARE", "Run", "escaped", "find_runs", "plain"]

GAP = 24  # this many text characters in a row end a binary run
MIN_NON_TEXT = 32  # fewer non-text characters are shown as they are
MIN_SHARE = 0.3  # of the run's characters

_NON_TEXT = "\\x00-\\x06\\x0e-\\x1a\\x1c-\\x1f\\x7f-\\x9f\\udc80-\\udcff\\ufffd"
_NON_TEXT_RE = re.compile(f"[{_NON_TEXT}]")
_RUN_RE = re.compile(f"[{_NON_TEXT}](?:[^{_NON_TEXT}]{{0,{GAP - 1}}}[{_NON_TEXT}])*")
_SURROGATE = re.compile("[\udc80-\udcff]")

# byte (as a latin-1 character) -> how a binary run shows it in the archive
_ESCAPE = {b: (chr(b) if 0x20 <= b < 0x7F else f"\\x{b:02x}") for b in range(256)}
_ESCAPE.update({0x5C: "\\\\", 0x09: "\\t", 0x0D: "\\r", 0x0A: "\n"})


class Run(msgspec.Struct, frozen=True):
    """A binary run: ``text[start:end]``, ``bytes`` long in the original output."""

    start: int
    end: int
    bytes: int


def _bytes_of(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def find_runs(text: str) -> list[Run]:
    """The binary runs of ``text`` (see the module doc), in order."""
    if not _NON_TEXT_RE.search(text):
        return []
    out = []
    for m in _RUN_RE.finditer(text):
        span = m.group()
        if len(span) < MIN_NON_TEXT:
            continue
        non_text = len(span) - len(_NON_TEXT_RE.sub("", span))
        if non_text >= MIN_NON_TEXT and non_text >= MIN_SHARE * len(span):
            out.append(Run(m.start(), m.end(), len(_bytes_of(span))))
    return out


def plain(text: str) -> str:
    """``text`` with each byte that is not UTF-8 shown as U+FFFD (as a plain decode shows it)."""
    if not _SURROGATE.search(text):
        return text
    return _bytes_of(text).decode("utf-8", "replace")


def escape_run(text: str) -> str:
    """A binary run written out byte by byte (see the module doc)."""
    return _bytes_of(text).decode("latin-1").translate(_ESCAPE)


def escaped(text: str, runs: list[Run] | None = None) -> str:
    """``text`` with its binary runs escaped and the rest :func:`plain`."""
    runs = find_runs(text) if runs is None else runs
    if not runs:
        return plain(text)
    out, pos = [], 0
    for r in runs:
        out.append(plain(text[pos:r.start]))
        out.append(escape_run(text[r.start:r.end]))
        pos = r.end
    out.append(plain(text[pos:]))
    return "".join(out)
