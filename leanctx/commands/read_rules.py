"""What ``read.record`` decides with beyond the answer at hand (see ``leanctx.commands.read``).

- **Whole deliveries.** A conversation (agent id + session id) *holds* a content hash of a path
  in a mode when one of its ``file.read`` events delivered it whole in that mode: not a stub and
  not capped (the event carries an ``archive_id`` exactly when its answer was capped and the
  rest archived; a file a read only named as not sent is recorded with mode ``unsent``, which
  no delivery key matches). Read from the log inside the command's transaction, through the
  ``file:<content hash>`` stream every read event is appended to (an indexed lookup).
- **Diff bases.** A diff may only be computed against a version the conversation holds *in
  full*: delivered whole in ``full`` mode (raw included), or as a ``diff`` (a diff is only sent
  against a base held in full, so base plus hunks is the whole new text). Partial views
  (``lines:``, ``map``, ``signatures``, ``aggressive``, ``entropy``, ``task``) and capped
  answers never are.
- **Bounces.** The savings projection's definition (``leanctx.projections.savings``): a full,
  non-stub read bounces when the same conversation (agent, session id or ``""``) made a
  compressed read (a non-stub read in a mode other than ``full`` and ``unsent``: a stub is a
  reference, not a view, and never bounces; a file named as not sent was not read) of the same
  path and content hash at most ``BOUNCE_WINDOW`` calls before it, with no full read of that
  path in between. The handler asks that projection itself, brought current inside the
  transaction, so the STUCK deposit and the savings report count exactly the same bounces.
- **Secrets sent.** The header counts the redaction markers in the text actually sent (at most
  the file's own count, so a file that merely contains marker-like text is not reported as
  redacted).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from ..events.codec import decode_payload
from ..events.kinds.context import UNSENT_MODE, FileRead
from ..projections.savings import BOUNCE_WINDOW
from ..projections.savings import _norm_mode as savings_mode

DIFF_BASE_MODES = frozenset({"full", "diff"})  # deliveries that leave the conversation holding the whole text
_MARKER = re.compile(r"\[REDACTED:[a-z_]+\]")


def _reads(conn: Any, agent: str, content_hash: str) -> Any:
    """This agent's ``file.read`` events of one content hash, newest first."""
    return conn.execute(
        "SELECT schema_version, payload, project FROM events WHERE stream = ? AND kind = 'file.read' AND actor = ?"
        " ORDER BY version DESC",
        (f"file:{content_hash}", agent),
    )


def holds_whole(conn: Any, agent: str | None, session: str | None, path: str, content_hash: str,
                modes: Collection[str], *, project: str | None = None) -> bool:
    """Whether this conversation received ``content_hash`` of ``path`` whole (not a stub, not
    capped) in one of ``modes``. False without both an agent and a session."""
    if not (agent and session):
        return False
    for sv, payload, proj in _reads(conn, agent, content_hash):
        if (proj or "") != (project or ""):
            continue
        ev = decode_payload("file.read", sv, payload)
        if (isinstance(ev, FileRead) and ev.path == path and ev.session_id == session and ev.mode in modes
                and not ev.stub and ev.archive_id is None):
            return True
    return False


def _compressed_read_on_record(conn: Any, agent: str, session: str, path: str, content_hash: str) -> bool:
    """Cheap necessary condition of a bounce: the log holds a compressed read of this path and
    content by this conversation at all."""
    for sv, payload, _ in _reads(conn, agent, content_hash):
        ev = decode_payload("file.read", sv, payload)
        if (isinstance(ev, FileRead) and ev.path == path and (ev.session_id or "") == session
                and not ev.stub and savings_mode(ev.mode) not in ("full", UNSENT_MODE)):
            return True
    return False


def is_bounce(ctx: Any, path: str, content_hash: str) -> bool:
    """Whether a full, non-stub read of ``path`` at ``content_hash`` by ``ctx``'s conversation,
    in this call, is a bounce (see the module doc). Brings the savings projection current
    inside ``ctx``'s transaction first."""
    agent = ctx.actor
    if not agent:
        return False
    session = ctx.session_id or ""
    conn = ctx.conn
    if not _compressed_read_on_record(conn, agent, session, path, content_hash):
        return False
    projections = ctx.projections
    savings = projections.all.get("savings")
    if savings is None:  # a store wired without the savings projection counts no bounces
        return False
    projections.catch_up_in(ctx.tx, savings)
    row = conn.execute(
        "SELECT calls, last_call FROM savings_conversations WHERE agent = ? AND session = ?", (agent, session)
    ).fetchone()
    if row is not None and row[1] == ctx.correlation_id:
        call = int(row[0])
    else:
        call = (int(row[0]) if row else 0) + 1
    hit = conn.execute(
        "SELECT 1 FROM savings_pending WHERE agent = ? AND session = ? AND path = ? AND content_hash = ?"
        " AND call_index >= ? LIMIT 1",
        (agent, session, path, content_hash, call - BOUNCE_WINDOW),
    ).fetchone()
    return hit is not None


def secrets_sent(text: str, file_count: int) -> int:
    """How many redacted secrets ``text`` (what is sent) shows, at most ``file_count``."""
    if not file_count or "[REDACTED:" not in text:
        return 0
    return min(file_count, len(_MARKER.findall(text)))
