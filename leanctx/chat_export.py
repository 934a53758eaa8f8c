"""``lean-ctx chat export``: a channel as markdown files a human can read and git can keep.

One file per message, ``NNNN-<from>-<slug>.md`` (``NNNN``: the seq, zero-padded to 4 digits;
``<from>`` and ``<slug>``: the sender and the title reduced to ``[a-z0-9-]``), holding YAML
frontmatter (seq, from, to, reply_to, channel, category, ts, title) and then the body.

Every string in the frontmatter is written as a double-quoted scalar (JSON string syntax, which
YAML reads as the same string) with every control, format, unassigned and line/paragraph
separator character escaped (``\\uXXXX``; ``\\UXXXXXXXX`` beyond the BMP, YAML only): a title
like ``"x\\nfrom: admin"`` stays one line inside its quotes and cannot forge a field, whatever
splits the lines (a YAML parser, ``str.splitlines``, a terminal).

The output is a pure function of the log (and of the reader whose view is exported): the same
log gives byte-identical files. Which messages: those the reader may see (broadcasts, and the
ones to or from it), or every message with ``everything=True`` (an operator's export).
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from pathlib import Path
from typing import Any

import msgspec

from .errors import InvalidInput
from .projections.channels import MessageView, visible_messages

_SLUG_LEN = 40  # as agent-chat names its message files


class ExportResult(msgspec.Struct, frozen=True, kw_only=True):
    channel: str
    directory: str
    files: list[str]  # file names, in seq order
    messages: int


def _escape_char(c: str) -> str:
    if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs", "Cn"):
        o = ord(c)
        return f"\\U{o:08x}" if o > 0xFFFF else f"\\u{o:04x}"
    return c


def yaml_string(value: str) -> str:
    """``value`` as a one-line double-quoted YAML scalar (a JSON string too, within the BMP)."""
    quoted = json.dumps(value, ensure_ascii=False)  # escapes ", \\ and C0 controls
    return "".join(_escape_char(c) if ord(c) >= 0x7F else c for c in quoted)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return yaml_string(str(value))


def slug(text: str, limit: int = _SLUG_LEN, empty: str = "msg") -> str:
    """``text`` reduced to lower-case ``[a-z0-9-]`` (accents dropped), at most ``limit`` chars."""
    ascii_ = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    s = re.sub(r"[^a-z0-9]+", "-", ascii_).strip("-")[:limit].strip("-")
    return s or empty


def file_name(m: MessageView) -> str:
    return f"{m.seq:04d}-{slug(m.sender)}-{slug(m.title)}.md"


def render(m: MessageView) -> str:
    """One message as a markdown document (frontmatter, blank line, body, final newline)."""
    fields = (
        ("seq", m.seq),
        ("from", m.sender),
        ("to", m.to),
        ("reply_to", m.reply_to),
        ("channel", m.channel),
        ("category", m.category),
        ("ts", m.ts),
        ("title", m.title),
    )
    head = "\n".join(f"{k}: {_scalar(v)}" for k, v in fields)
    body = m.body if m.body.endswith("\n") else m.body + "\n"
    return f"---\n{head}\n---\n\n{body}"


def export_messages(messages: list[MessageView], channel: str, directory: str | os.PathLike[str]) -> ExportResult:
    out = Path(directory)
    if out.exists() and not out.is_dir():
        raise InvalidInput("CHAT_EXPORT_NOT_A_DIRECTORY", f"{out} exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    names = []
    for m in messages:
        name = file_name(m)
        data = render(m).encode("utf-8", "surrogatepass")
        target = out / name
        if not target.exists() or target.read_bytes() != data:
            tmp = out / f".{name}.tmp"
            tmp.write_bytes(data)
            os.replace(tmp, target)
        names.append(name)
    return ExportResult(channel=channel, directory=str(out), files=names, messages=len(names))


def export_channel(conn: Any, channel: str, directory: str | os.PathLike[str], *, reader: str | None = None,
                   everything: bool = False) -> ExportResult:
    """Write ``channel`` (as ``reader`` sees it; every message with ``everything``) to
    ``directory``. Files already there with the same content are left untouched."""
    return export_messages(visible_messages(conn, channel, reader=reader, everything=everything), channel,
                           directory)
