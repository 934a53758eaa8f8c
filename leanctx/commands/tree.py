"""``tree.record``: record the archive of a capped ``ctx_tree`` answer (``leanctx.ops.tree``).

The listing itself is read from the file system outside the lock and archived beside the log
before this is dispatched; the handler only records, inside the bus's write transaction:
``archive.created`` (``source`` ``"tree"``) on ``archive:<id>`` the first time the log hears of
that archive. Archives are content-addressed, so the same listing capped again is the same
archive: the stream already holds its event and nothing more is emitted (the dispatch's
``tool.called`` record still says the call happened). With the archive on record, an expansion
of it (``archive.expand``) is charged by the savings projection to ``tree``, the tool whose
answer was archived, instead of to ``expand``.

It is dispatched only for a capped answer: a listing that fits appends nothing (from the CLI it
does not even open or create the log). Tree answers are deliberately not in the savings: there
is no ``tree`` context event and no plain tool whose answer a listing could be measured against,
so no ``raw`` / ``sent`` figures are recorded and no budget is consumed; an expansion of a tree
archive therefore counts what it sends as a cost (``saved = −sent``), charged to ``tree``.

Text never enters the log: only the archive's id, sha256 and counts (bytes, lines, tokens in the
caller's encoding), all of the archived text itself.
"""

from __future__ import annotations

import re

import msgspec

from ..errors import InvalidInput
from ..events import NO_STREAM
from ..events.kinds.context import ArchiveCreated
from .bus import Command, CommandContext, handles

_ARCHIVE_ID = re.compile(r"^A[0-9a-f]{16}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class RecordTree(Command, frozen=True):
    name = "tree.record"
    archive_id: str  # "A" + the first 16 hex digits of sha256
    sha256: str  # of the archived listing's UTF-8 bytes
    bytes: int
    lines: int
    tokens: int  # the whole listing, counted with the caller's encoding


class TreeRecorded(msgspec.Struct, frozen=True):
    archive_created: bool  # False: the log already knew this archive


def _count(value: int, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput("TREE_INVALID_RECORD", f"{what} must be a non-negative whole number; got {value!r}")


@handles(RecordTree, emits=("archive.created",), result=TreeRecorded)
def record(ctx: CommandContext, cmd: RecordTree) -> TreeRecorded:
    if not _ARCHIVE_ID.match(cmd.archive_id):
        raise InvalidInput("ARCHIVE_INVALID_ID", f"{cmd.archive_id!r} is not an archive id (like A3f2a9c1b7e4d5f60)")
    if not _SHA256.match(cmd.sha256) or not cmd.sha256.startswith(cmd.archive_id[1:]):
        raise InvalidInput("ARCHIVE_INVALID_ID", f"archive {cmd.archive_id} does not match its sha256")
    for what in ("bytes", "lines", "tokens"):
        _count(getattr(cmd, what), what)
    stream = f"archive:{cmd.archive_id}"
    if ctx.tx.stream_version(stream) != 0:
        return TreeRecorded(archive_created=False)
    ctx.emit(stream, ArchiveCreated(archive_id=cmd.archive_id, source="tree", sha256=cmd.sha256, bytes=cmd.bytes,
                                    lines=cmd.lines, tokens=cmd.tokens), expected_version=NO_STREAM)
    return TreeRecorded(archive_created=True)
