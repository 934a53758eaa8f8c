"""Text helpers for terminal output: ANSI escapes, carriage returns, progress bars, repeats."""

from __future__ import annotations

import re

__all__ = [
    "FRAME_SEP",
    "is_blank",
    "is_progress",
    "normalize_for_similarity",
    "redraw_segments",
    "screen_text",
    "squeeze_spaces",
    "strip_ansi",
    "terminal_line",
]

# Shown between the frames of a line redrawn with carriage returns when more than its final
# state is written out (in the archive, and for frames that state a fact in the text).
FRAME_SEP = "␍"

# CSI sequences, OSC sequences (terminated by BEL or ST), and lone two-byte escapes.
_ANSI = re.compile(r"\x1b\[[0-9;?<=>]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_PROGRESS = re.compile(
    r"""(
        [━█▇▆▅▄▃▂▏▎▍▌▋▊▉░▒▓■□]{4,}          # drawn bars
      | \[[=#>\-\s.]{6,}\]                       # [=====>    ]
      | \b\d{1,3}(?:\.\d+)?%\s*(?:\||$|\[|eta|ETA|complete)   # 42% | ...
      | \beta\s+\d+:\d{2}(?::\d{2})?\b          # eta 0:00:01
      | ^\s*[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏⣾⣽⣻⢿⡿⣟⣯⣷|/\\-]\s+\S.*\.\.\.\s*$   # spinner + text...
      | \d+(?:\.\d+)?\s*[kMG]i?B/s\b           # transfer rates
    )""",
    re.VERBOSE,
)
_NUMBERS = re.compile(r"0x[0-9a-fA-F]+|\b[0-9a-f]{7,40}\b|\d+(?:[.:]\d+)*")
_SPACES = re.compile(r"[ \t]{2,}")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def terminal_line(line: str) -> str:
    """What a terminal shows for a line redrawn with carriage returns: the last segment."""
    if "\r" not in line:
        return line
    parts = [p for p in line.split("\r") if p != ""]
    return parts[-1] if parts else ""


def redraw_segments(line: str) -> list[str]:
    """The frames of a line redrawn with carriage returns, ANSI escapes removed: every non-empty
    segment between ``\\r``, the last one being what a terminal shows (a lone trailing ``\\r``,
    as in CRLF output, redraws nothing)."""
    return [strip_ansi(p) for p in line.split("\r") if p != ""]


def screen_text(line: str) -> str:
    """A raw line as the archive keeps it: ANSI escapes removed and, for a line redrawn with
    carriage returns, every frame in order, separated by ``␍`` (nothing dropped)."""
    if "\r" not in line:
        return strip_ansi(line)
    return FRAME_SEP.join(redraw_segments(line))


def is_blank(line: str) -> bool:
    return not line.strip()


def is_progress(line: str) -> bool:
    return bool(_PROGRESS.search(line))


def normalize_for_similarity(line: str) -> str:
    """A key under which lines differing only by numbers, hashes or timestamps compare equal."""
    return _NUMBERS.sub("#", line.strip())


def squeeze_spaces(line: str) -> str:
    """Collapse runs of spaces (table padding) to two spaces, keeping indentation."""
    stripped = line.lstrip(" ")
    indent = line[: len(line) - len(stripped)]
    return indent + _SPACES.sub("  ", stripped).rstrip()
