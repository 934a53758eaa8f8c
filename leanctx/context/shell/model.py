"""Result types of shell-output compression (they cross into the event log and the API)."""

from __future__ import annotations

import msgspec

__all__ = ["ARCHIVE_PLACEHOLDER", "Compressed", "Omission", "fill_archive"]

# Every omission marker in a compressed text ends with ``· expand {archive}]``; the caller
# archives the full output and substitutes the archive id with :func:`fill_archive`.
ARCHIVE_PLACEHOLDER = "{archive}"
_MARKER_TAIL = f"· expand {ARCHIVE_PLACEHOLDER}]"


class Omission(msgspec.Struct, frozen=True):
    """Lines of the raw output left out of the compressed text.

    ``ranges`` are inclusive 1-based line ranges of the *raw text* (stdout lines first, then
    stderr lines; see :func:`leanctx.context.shell.raw_text`). ``count`` is the number of lines.
    """

    reason: str
    count: int
    ranges: list[tuple[int, int]]


class Compressed(msgspec.Struct, frozen=True):
    """A shell command's output as it is sent to the agent, with honest accounting.

    ``raw_lines == kept_lines + folded_lines + omitted_lines + blank_lines`` always holds:
    kept lines appear in ``text`` (possibly rewritten more compactly), folded lines are exact
    or near repeats represented by a count, omitted lines are announced by a marker stating
    their number (a line shown only in part, a very long line shortened in its middle or a
    redrawn line whose progress frames were dropped, counts as omitted: its marker states the
    characters or frames left out; the archive has the line whole), and blank lines (empty,
    rulers such as ``=====``, or a tool's fixed advice text such as git's ``(use "git add
    <file>..." ...)``: the same words in every run) carry no information.
    """

    text: str
    pattern: str
    exit_code: int
    raw_tokens: int
    sent_tokens: int
    raw_lines: int
    kept_lines: int
    folded_lines: int
    omitted_lines: int
    blank_lines: int
    omissions: list[Omission]
    must_keep: list[str]

    @property
    def saved_tokens(self) -> int:
        return self.raw_tokens - self.sent_tokens

    @property
    def savings(self) -> float:
        """Fraction of tokens saved (0.0 when the raw text was sent)."""
        return 0.0 if self.raw_tokens == 0 else self.saved_tokens / self.raw_tokens


def fill_archive(text: str, archive_id: str) -> str:
    """Put ``archive_id`` into every omission marker of a compressed text (and nowhere else)."""
    return text.replace(_MARKER_TAIL, f"· expand {archive_id}]")
