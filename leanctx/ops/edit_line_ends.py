"""Line ends for ``ctx_edit`` (``leanctx.ops.edit``): the old text as the agent saw it, the new
text with the file's own line ends.

Reads show CR-only line ends (old Mac files: a CR not followed by LF) as LF
(``leanctx.ops.read_load.decode``), so an agent copies an old text spanning lines with ``\\n``
where the file has ``\\r``. Before the edit is dispatched:

- **old**: when it does not occur in the file as given but does in the text reads show (the same
  ``decode``), it becomes the file's own characters at that place (CR-only ends and LF are one
  character each, so the places are the same). That is done only when the two texts have their
  occurrences at the same places, so the handler's one-occurrence rule and ``replace_all``
  count what the agent saw. When they do not (a file mixing CR-only and LF ends, where the old
  text shows several times, written with different line ends), the edit is refused with
  ``EDIT_AMBIGUOUS`` before it is dispatched (so it is not in the log, but it leaves its STUCK
  mark like the handler's refusals).
- **new**: in a file whose line ends are all CR-only, or all CRLF, each bare ``\\n`` of the new
  text becomes that line end, so the file keeps one kind of line end. Other files (LF, mixed)
  get the new text as given.

Nothing else changes: the handler (``leanctx.commands.edit``) replaces the matched characters
only, so every other byte of the file stays as it was. CRLF is shown as it is by reads, so an
old text for a CRLF file carries ``\\r\\n`` already and is used as given.
"""

from __future__ import annotations

import re

from ..errors import CommandError
from .read_load import decode

_BARE_LF = re.compile(r"(?<!\r)\n")
_MAX_PLACES = 1000  # occurrences compared (the handler reports at most as many)


def _places(text: str, part: str) -> list[int]:
    out: list[int] = []
    i = text.find(part)
    while i >= 0 and len(out) < _MAX_PLACES:
        out.append(i)
        i = text.find(part, i + 1)
    return out


def _line_end(raw: str, cr_only: int) -> str | None:
    """The file's one kind of line end: ``\\r`` (all CR-only), ``\\r\\n`` (all CRLF), else None."""
    crlf = raw.count("\r\n")
    if cr_only and "\n" not in raw:
        return "\r"
    if crlf and not cr_only and raw.count("\n") == crlf:
        return "\r\n"
    return None


def fit(data: bytes, old: str, new: str, *, path: str = "the file") -> tuple[str, str]:
    """``(old, new)`` for a file holding ``data`` (see the module doc); unchanged when the file
    has no CR, is not UTF-8 text, or nothing needs fitting. ``path`` names the file in a refusal."""
    if b"\r" not in data or b"\0" in data[:8192]:
        return old, new
    try:
        raw = data.decode("utf-8")
    except UnicodeDecodeError:
        return old, new  # the handler refuses it (EDIT_NOT_TEXT)
    shown, _bad, cr_only = decode(data)
    seen = _places(shown, old) if cr_only and old else []
    if seen and _places(raw, old) != seen:
        mine = raw[seen[0]:seen[0] + len(old)]  # CR-only ends and LF are one character each
        if _places(raw, mine) != seen:
            n = len(seen)
            raise CommandError(
                "EDIT_AMBIGUOUS",
                f"the old text occurs {n}{'+' if n >= _MAX_PLACES else ''} times in {path} as reads show it (CR-only"
                " line ends shown as LF), written with different line ends in the file; include surrounding lines"
                " so it occurs once (--all replaces occurrences only when they are written alike)",
                path=path, occurrences=n,
            )
        old = mine
    end = _line_end(raw, cr_only)
    if end is not None and "\n" in new:
        new = _BARE_LF.sub(end, new)
    return old, new


def fit_file(path: str, old: str, new: str, *, shown: str = "the file") -> tuple[str, str]:
    """:func:`fit` for the file at ``path``, read as the edit handler reads it
    (``commands.edit.read_file_bytes``); anything it cannot read is left to the handler, which
    refuses it."""
    from ..commands.edit import read_file_bytes
    from ..errors import LeanCtxError

    try:
        data = read_file_bytes(path, shown)
    except (LeanCtxError, OSError, ValueError):
        return old, new
    return fit(data, old, new, path=shown)
