"""``file.edit``: replace old text with new text in a project file, guarded against stale reads.

The handler runs inside the log's ``BEGIN IMMEDIATE`` transaction and does, in order:

1. the path jail (``leanctx.paths.normalize`` against ``ctx.project``: ``..`` climbing out,
   absolute paths elsewhere, symlinks resolving outside → ``EDIT_PATH_OUTSIDE_PROJECT``), and
   well-known secret files (``.env``, ``id_rsa``...) refused like reads refuse them
   (``EDIT_SECRET_FILE`` unless ``$LEAN_CTX_ALLOW_SECRET_FILES=1``);
2. read the file (no symlink followed at the last step, regular files only, at most
   ``MAX_EDIT_BYTES``, UTF-8 text) and hash it;
3. the TOCTOU guard, on the strong ``file_versions`` projection: the agent must have read (or
   itself written) the file through lean-ctx, and what it saw must be what is on disk now.
   Never read → ``EDIT_NOT_READ`` (unless ``allow_unread``); read but changed since →
   ``EDIT_STALE_READ``. Refusing unread files is the default because an agent that never saw
   the file decides blind: its exact-match old text proves it knows one fragment, not that
   the rest of the file is what it thinks. ``allow_unread`` (``--allow-unread``) opts out for
   that case only; a stale read is refused regardless;
4. the match: the old text must occur exactly once (overlapping occurrences count: ``aa`` in
   ``aaa`` is ambiguous) → ``EDIT_NO_MATCH`` / ``EDIT_AMBIGUOUS``; with ``replace_all`` every
   non-overlapping occurrence is replaced. An old text that does not match and holds a
   ``[REDACTED`` marker (copied from a redacted read: the file holds the real value) gets an
   ``EDIT_NO_MATCH`` saying so and how to proceed (old text around the secret, or a raw read);
5. the atomic write (``ops.files.atomic_write``: same-directory temp file, fsync, mode kept,
   ``os.replace``) and ``file.edited`` (before/after sha256, replacements) on ``edit:<path>``.

Because check and write happen while the transaction holds the log's write lock, two agents
(or processes) editing through lean-ctx cannot both pass the check on the same version: the
second one sees the first one's bytes on disk and is refused as stale. (A program writing the
file outside lean-ctx between steps 2 and 5 is not serialized by the lock; the window is
one read-and-replace long.)

Refusals raise (the bus rolls back and records ``tool.called`` with the code); the STUCK
deposit a refused edit leaves on the file is dispatched by ``leanctx.ops.edit`` in a second
transaction. Neither the old nor the new text ever reaches the log: messages name the path
and hashes only.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat

import msgspec

from ..errors import CommandError, InvalidInput, NotFound
from ..events.kinds.context import FileEdited
from ..paths import join, normalize, workspace_root
from ..projections.file_versions import last_seen, seen_by
from .bus import Command, CommandContext, handles

MAX_EDIT_BYTES = 8_000_000
INVALID = "EDIT_PATH_INVALID"
OUTSIDE = "EDIT_PATH_OUTSIDE_PROJECT"

_LINE_END = re.compile(r"\r\n|\r|\n")


class EditFile(Command, frozen=True):
    name = "file.edit"
    path: str  # project-relative (or absolute inside the project)
    old: str
    new: str
    replace_all: bool = False
    allow_unread: bool = False


class EditResult(msgspec.Struct, frozen=True):
    path: str
    before_hash: str
    after_hash: str
    replacements: int
    first_line: int  # line of the first replacement, in the old text
    bytes_before: int
    bytes_after: int
    read_before: bool  # the agent had read (or written) this version
    text: str  # the one-line answer sent to the agent
    sent_tokens: int


def stream_of(path: str) -> str:
    return f"edit:{path}"


def read_file_bytes(real: str, shown: str) -> bytes:
    """The bytes of a file to edit: no final symlink followed, regular files of at most
    ``MAX_EDIT_BYTES`` (refusals: ``EDIT_FILE_NOT_FOUND``, ``EDIT_NOT_A_FILE``, ``EDIT_TOO_LARGE``)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(real, flags)
    except FileNotFoundError:
        raise NotFound("EDIT_FILE_NOT_FOUND", f"{shown} does not exist; ctx_edit changes existing files only") from None
    except OSError as exc:
        raise InvalidInput("EDIT_NOT_A_FILE", f"{shown} cannot be opened for editing ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InvalidInput("EDIT_NOT_A_FILE", f"{shown} is not a regular file; ctx_edit changes files only")
        if st.st_size > MAX_EDIT_BYTES:
            raise InvalidInput("EDIT_TOO_LARGE", f"{shown} is {st.st_size:,} bytes; ctx_edit handles files up to "
                               f"{MAX_EDIT_BYTES:,} bytes")
        chunks = []
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _occurrences(text: str, old: str, cap: int = 1000) -> int:
    """Occurrences of ``old`` in ``text``, overlapping ones included (at most ``cap``)."""
    n, i = 0, text.find(old)
    while i >= 0 and n < cap:
        n += 1
        i = text.find(old, i + 1)
    return n


_REDACTION_MARKER = "[REDACTED"


def _no_match_message(path: str, old: str) -> str:
    """``EDIT_NO_MATCH``'s message; an old text holding a ``[REDACTED:...]`` marker was copied from
    a redacted read, and the file holds the real value there: it cannot match as written."""
    if _REDACTION_MARKER not in old:
        return (f"the old text does not occur in {path}; copy it exactly from the file (whitespace and line endings"
                " count)")
    return (f"the old text does not occur in {path}: it holds a redaction marker ([REDACTED:...]) from a read, and"
            " the file holds the real value there, not the marker; choose old text around the secret (the lines"
            f" before or after it, without the marker), or read the file unredacted with the CLI (lean-ctx read"
            f" {path} --raw: project files only; ctx_read always redacts) and copy the old text from that")


def _refuse_secret_file(path: str, asked: str) -> None:
    """A well-known secret file (``.env``, ``id_rsa``, ``*.pem``...) is not edited, as it is not
    read: whether an old text matches would tell what the secret holds. ``EDIT_SECRET_FILE``
    unless ``$LEAN_CTX_ALLOW_SECRET_FILES=1``, the switch that allows reading them."""
    from ..context.secrets import is_secret_path
    from ..ops.read_load import ALLOW_SECRETS_ENV, secrets_allowed

    if not secrets_allowed() and (is_secret_path(path) or is_secret_path(asked)):
        raise CommandError("EDIT_SECRET_FILE", f"{path} is a well-known secret file and is not edited through"
                           f" lean-ctx (a match would reveal its content); set ${ALLOW_SECRETS_ENV}=1 to allow it",
                           path=path)


@handles(EditFile, emits=("file.edited",), result=EditResult)
def edit(ctx: CommandContext, cmd: EditFile) -> EditResult:
    from ..context.tokens import count_tokens
    from ..ops.files import atomic_write

    agent = ctx.actor
    if not agent:
        raise InvalidInput("EDIT_NO_AGENT", "an edit needs an agent: dispatch with actor=..., or set LEAN_CTX_AGENT_ID")
    if not ctx.project:
        raise InvalidInput("EDIT_NO_PROJECT", "an edit needs the project root (dispatch with project=...)")
    root = workspace_root(ctx.project, invalid_code="EDIT_NO_PROJECT")
    wp = normalize(cmd.path, root, invalid_code=INVALID, outside_code=OUTSIDE)
    path = wp.path
    _refuse_secret_file(path, cmd.path)
    if cmd.old == "":
        raise InvalidInput("EDIT_EMPTY_OLD", "the old text is empty; pass the exact text to replace")
    if cmd.old == cmd.new:
        raise InvalidInput("EDIT_NOOP", "the old and new texts are the same; nothing would change")
    try:
        cmd.old.encode("utf-8")
        cmd.new.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("EDIT_INVALID_TEXT", "the old or new text is not valid UTF-8") from None
    real = join(root, path)
    data = read_file_bytes(real, path)
    before = hashlib.sha256(data).hexdigest()

    seen = last_seen(ctx.conn, project=root, agent=agent, path=path)
    if seen is None and not cmd.allow_unread:
        raise CommandError(
            "EDIT_NOT_READ",
            f"you ({agent}) have not read {path} through lean-ctx, so this edit would change a version you never saw;"
            f" read it first (ctx_read, or lean-ctx read {path}), or allow it (allow_unread=true, or"
            " --allow-unread)",
            path=path, current_hash=before,
        )
    if seen is not None and seen.sha256 != before:
        by = next((v.agent for v in seen_by(ctx.conn, project=root, path=path)
                   if v.agent != agent and v.sha256 == before and v.source == "edited"), None)
        raise CommandError(
            "EDIT_STALE_READ",
            f"{path} changed since you last {'read' if seen.source == 'read' else 'wrote'} it"
            f"{f' (edited by {by})' if by else ''}: you saw {seen.sha256[:12]}, it is now {before[:12]};"
            " read it again, then redo the edit",
            path=path, seen_hash=seen.sha256, current_hash=before, changed_by=by,
        )
    if b"\0" in data[:8192]:
        raise InvalidInput("EDIT_BINARY", f"{path} is a binary file; ctx_edit changes text files only")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput("EDIT_NOT_TEXT", f"{path} is not UTF-8 text; ctx_edit changes UTF-8 files only") from None

    first = text.find(cmd.old)
    if first < 0:
        marker = {"redaction_marker": True} if _REDACTION_MARKER in cmd.old else {}
        raise CommandError("EDIT_NO_MATCH", _no_match_message(path, cmd.old), path=path, **marker)
    if cmd.replace_all:
        count = text.count(cmd.old)
        new_text = text.replace(cmd.old, cmd.new)
    else:
        n = _occurrences(text, cmd.old)
        if n > 1:
            raise CommandError(
                "EDIT_AMBIGUOUS",
                f"the old text occurs {n}{'+' if n >= 1000 else ''} times in {path}; include surrounding lines so"
                " it occurs once, or pass --all to replace every occurrence",
                path=path, occurrences=n,
            )
        count = 1
        new_text = text[:first] + cmd.new + text[first + len(cmd.old):]
    out = new_text.encode("utf-8")
    after = hashlib.sha256(out).hexdigest()
    first_line = len(_LINE_END.findall(text, 0, first)) + 1  # line ends as reads count them (CR-only too)
    atomic_write(real, out)
    answer = (f"edited {path}: {count} replacement{'s' if count != 1 else ''} from line {first_line}"
              f" ({before[:12]} → {after[:12]})")
    sent = count_tokens(answer)
    ctx.emit(stream_of(path), FileEdited(path=path, before_hash=before, after_hash=after, replacements=count,
                                         sent_tokens=sent, session_id=ctx.session_id))
    return EditResult(path, before, after, count, first_line, len(data), len(out), seen is not None, answer, sent)
