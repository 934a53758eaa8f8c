"""Recording archives: the checks on an archive's identity and counts, and its
``archive.created`` event, emitted the first time the log hears of it (archives are
content-addressed: the same text archived again is the same archive, on the same stream) —
once per archive, ever: not when the log holds it, nor when this very dispatch already queued
it (two answers of one call naming the same archive record it once). Shared by the commands whose answers keep text out in an archive (read, shell, search, tree)."""

from __future__ import annotations

import re

from ..archive import ArchiveInfo
from ..errors import InvalidInput
from ..events import NO_STREAM
from ..events.kinds.context import ArchiveCreated
from .bus import CommandContext

ARCHIVE_ID = re.compile(r"^A[0-9a-f]{16}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def check_archive_id(archive_id: str) -> None:
    if not ARCHIVE_ID.match(archive_id):
        raise InvalidInput("ARCHIVE_INVALID_ID", f"{archive_id!r} is not an archive id (like A3f2a9c1b7e4d5f60)")


def check_count(value: int, what: str, code: str) -> int:
    """``value`` when it is a non-negative whole number, else ``code``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(code, f"{what} must be a non-negative whole number; got {value!r}")
    return value


def check_archive(info: ArchiveInfo, count_code: str) -> None:
    """An archive id of the right shape, naming its sha256, and counts that can be an archive's
    (``count_code`` for a bad count: the recording command's own code)."""
    check_archive_id(info.archive_id)
    if not _SHA256.match(info.sha256):
        raise InvalidInput("ARCHIVE_INVALID_ID", f"{info.archive_id!r} is not an archive id (like A3f2a9c1b7e4d5f60)")
    if not info.sha256.startswith(info.archive_id[1:]):
        raise InvalidInput("ARCHIVE_INVALID_ID", f"archive {info.archive_id} does not match its sha256")
    for what in ("bytes", "lines", "tokens"):
        check_count(getattr(info, what), f"archive {what}", count_code)


def record_archive(ctx: CommandContext, info: ArchiveInfo) -> bool:
    """Emit ``archive.created`` for ``info`` unless the log already holds it or this dispatch
    already queued it (its events are written only when the handler returns); True when emitted."""
    stream = f"archive:{info.archive_id}"
    if ctx.tx.stream_version(stream) != 0:
        return False
    if any(p.stream == stream and isinstance(p.event, ArchiveCreated) for p in ctx.pending):
        return False
    ctx.emit(stream, ArchiveCreated(archive_id=info.archive_id, source=info.source, sha256=info.sha256,
                                    bytes=info.bytes, lines=info.lines, tokens=info.tokens),
             expected_version=NO_STREAM)
    return True
