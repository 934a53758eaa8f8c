"""Loading one file for ``ctx_read`` (``leanctx.ops.read``): the jail, secret files, the stat
fast check, and decoding.

1. **jail**: the path is normalized inside the project root (``leanctx.paths``): ``..`` that
   climbs out, absolute paths outside, symlinks resolving outside are refused
   (``READ_PATH_OUTSIDE_PROJECT``); malformed paths too (``READ_PATH_INVALID``). The file is then
   opened without following a final symlink and checked to be the file the jail approved.
2. **secret files** (``.env``, ``id_rsa``, ``*.pem``, ...; ``is_secret_path`` on the name asked
   for and on the real name) are refused with ``READ_SECRET_FILE`` unless
   ``$LEAN_CTX_ALLOW_SECRET_FILES=1``.
3. **the fast check**: the open file is ``fstat``-ed; when the stat equals the one recorded
   when its bytes were last hashed (mtime, ctime, size, inode, device) and that record is not
   racily clean (``leanctx.cache.views.stat_is_trusted``), the recorded sha256 stands for the
   bytes and the cached redacted blob is used: the file is not read nor hashed. ``raw`` reads
   (which need the real text), ``fresh`` reads (what the stub tells an agent to use when it
   doubts the file is unchanged: they always look at the bytes) and files whose blob is no
   longer cached are read as below.
4. **content**: otherwise the bytes are read and hashed (sha256), and the stat taken before
   reading is recorded beside the hash, with the time the hash was taken (so a later read can
   tell a racily clean record); a file whose size changed while it was read is recorded as
   never trusted.
   A file over ``MAX_FILE_BYTES`` (8 MiB) is refused (``READ_FILE_TOO_LARGE``) in every mode
   but ``lines:``; the message names what reaches it: a ``lines:`` read, and the command that
   finds line numbers for it (``numbered_grep``: ``perl -pe "s/\r(?!\n)/\n/g" FILE | grep -n
   PATTERN``; plain ``grep -n`` does not count a lone CR as a line end, so its numbers would not
   be lean-ctx's on a file with progress bars). A ``lines:`` read of such a
   file is streamed (``leanctx.ops.read_huge``: only the lines asked for are kept, the sha256
   is computed on the way, nothing is cached).
5. **decoding**: UTF-8; each byte that is not UTF-8 becomes one U+FFFD (``bad_bytes`` counts
   them, and the answer's header says so), and CR-only line ends (old Mac files: a CR not
   followed by LF) become LF (``cr_breaks``), so every mode, ``lines:`` range and line count
   sees the lines an editor shows. CRLF is left as it is (the modes count it as one line end).
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import shlex
import stat as stat_mod
import time
from typing import TYPE_CHECKING

from ..cache.views import Blob, FileStat, ViewCache, stat_is_trusted
from ..commands.read import redact_keeping_lines
from ..context import secrets as _secrets
from ..context.modes import source_lines
from ..context.tokens import count_tokens
from ..errors import CommandError, InvalidInput, NotFound
from ..paths import PathRefused, normalize

if TYPE_CHECKING:
    from .read_huge import Streamed

__all__ = ["ALLOW_SECRETS_ENV", "MAX_FILE_BYTES", "Loaded", "blob_of", "crlf_as_lines", "decode", "decode_notes", "load",
           "numbered_grep"]

MAX_FILE_BYTES = 8 * 1024 * 1024
ALLOW_SECRETS_ENV = "LEAN_CTX_ALLOW_SECRET_FILES"
_LONE_CR = re.compile(r"\r(?!\n)")
_ESCAPED = re.compile("[\udc80-\udcff]")  # surrogateescape's stand-ins for undecodable bytes


def secrets_allowed() -> bool:
    return os.environ.get(ALLOW_SECRETS_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


class Loaded:
    """One file, loaded: its hash and stat record, and either its decoded real text (read now)
    or its cached redacted blob (the fast check passed: ``text`` is None)."""

    __slots__ = ("blob", "rel", "sha", "stat", "text")

    def __init__(self, rel: str, sha: str, st: FileStat, *, text: str | None = None, blob: Blob | None = None) -> None:
        self.rel, self.sha, self.stat, self.text, self.blob = rel, sha, st, text, blob

    @property
    def fast(self) -> bool:
        return self.text is None


def decode(data: bytes) -> tuple[str, int, int]:
    """(text, bytes not UTF-8, CR-only line ends): see the module doc."""
    try:
        text, bad = data.decode("utf-8"), 0
    except UnicodeDecodeError:
        text, bad = _ESCAPED.subn("\ufffd", data.decode("utf-8", "surrogateescape"))
    cr = 0
    if "\r" in text:
        text, cr = _LONE_CR.subn("\n", text)
    return text, bad, cr


def decode_notes(st: FileStat) -> list[str]:
    """What the header says about decoding (nothing for plain UTF-8 with LF or CRLF ends)."""
    notes = []
    if st.bad_bytes:
        notes.append(f"{st.bad_bytes} byte{'s' if st.bad_bytes != 1 else ''} not UTF-8 shown as \ufffd")
    if st.cr_breaks:
        notes.append(f"{st.cr_breaks} CR-only line end{'s' if st.cr_breaks != 1 else ''} shown as LF")
    return notes


def _jail(raw_path: str, root: str) -> str:
    if isinstance(raw_path, str) and raw_path.strip() in (".", "./"):
        raise InvalidInput("READ_IS_DIRECTORY", "the project root is a directory; name a file inside it")
    try:
        wp = normalize(raw_path, root, invalid_code="READ_PATH_INVALID", outside_code="READ_PATH_OUTSIDE_PROJECT")
    except PathRefused as exc:
        raise InvalidInput(exc.code, exc.message.replace("workspace", "project"), **exc.details) from None
    rel = wp.path
    if not secrets_allowed() and (_secrets.is_secret_path(rel) or _secrets.is_secret_path(str(raw_path))):
        raise CommandError(
            "READ_SECRET_FILE",
            f"{rel} is a well-known secret file and is not read (its content would reach the agent); set"
            f" ${ALLOW_SECRETS_ENV}=1 to allow reading such files",
            path=rel,
        )
    return rel


def _open(full: str, rel: str, root: str) -> int:
    try:
        return os.open(full, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise NotFound("READ_NOT_FOUND", f"no file {rel} in the project; check the path (relative to "
                       f"{root})", path=rel) from None
    except IsADirectoryError:
        raise InvalidInput("READ_IS_DIRECTORY", f"{rel} is a directory; name a file inside it", path=rel) from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):  # the last component became a symlink after the jail check
            raise InvalidInput("READ_PATH_OUTSIDE_PROJECT", f"{rel} changed into a symlink while being read; "
                               "read it again", path=rel) from None
        raise InvalidInput("READ_UNREADABLE", f"cannot open {rel}: {exc.strerror}", path=rel) from None


def crlf_as_lines(path: str) -> str:
    """A shell command printing ``path`` with every lone CR made a line end, so that ``grep -n``,
    ``sed -n`` and ``awk`` number its lines as lean-ctx does (LF, CRLF and a lone CR each end one;
    a CRLF stays one line end). Its only quoting is double quotes, so it nests in single ones."""
    return f"perl -pe \"s/\\r(?!\\n)/\\n/g\" {shlex.quote(path)}"


def numbered_grep(path: str, pattern: str = "PATTERN", flags: str = "-n") -> str:
    """The shell pipeline finding lines of ``path`` with grep, numbered as lean-ctx numbers them."""
    return f"{crlf_as_lines(path)} | grep {flags} {pattern}"


def _check(st: os.stat_result, full: str, rel: str, root: str, *, stream: bool = False) -> bool:
    """Refuse what is not a regular file inside the project; True: over the size limit, and
    ``stream`` (a ``lines:`` read) allows it."""
    if stat_mod.S_ISDIR(st.st_mode):
        raise InvalidInput("READ_IS_DIRECTORY", f"{rel} is a directory; name a file inside it", path=rel)
    if not stat_mod.S_ISREG(st.st_mode):
        raise InvalidInput("READ_NOT_A_FILE", f"{rel} is not a regular file (a device, pipe or socket)", path=rel)
    real = os.path.realpath(full)
    if not real.startswith(root.rstrip(os.sep) + os.sep):
        raise InvalidInput("READ_PATH_OUTSIDE_PROJECT", f"{rel} moved outside the project while being read", path=rel)
    if st.st_size > MAX_FILE_BYTES:
        if stream:
            return True
        raise InvalidInput(
            "READ_FILE_TOO_LARGE",
            f"{rel} is {st.st_size:,} bytes; lean-ctx reads files up to {MAX_FILE_BYTES:,} bytes, and search skips"
            f" larger ones: a read in mode lines:N-M streams just those lines; find their numbers with lean-ctx"
            f" shell -- {shlex.quote(numbered_grep(rel))} (numbered as lean-ctx numbers lines: a lone CR ends one"
            " too, which grep -n alone does not count; the shell's output is redacted too)", path=rel,
        )
    return False


def _read_all(fd: int, rel: str) -> bytes:
    chunks = []
    left = MAX_FILE_BYTES + 1
    while left > 0:
        b = os.read(fd, min(left, 1 << 20))
        if not b:
            break
        chunks.append(b)
        left -= len(b)
    data = b"".join(chunks)
    if len(data) > MAX_FILE_BYTES:
        raise InvalidInput("READ_FILE_TOO_LARGE", f"{rel} grew past {MAX_FILE_BYTES:,} bytes while being read",
                           path=rel)
    return data


def load(raw_path: str, root: str, cache: ViewCache, *, encoding: str, trust_stat: bool = True,
         lines: str | None = None) -> Loaded | Streamed:
    """Load one file (see the module doc); refusals raise ``LeanCtxError`` with stable codes.
    ``trust_stat=False`` (``raw`` and ``fresh`` reads) always reads and hashes the bytes.
    ``lines`` (the ranges of a ``lines:`` read): a file over the limit is streamed for them."""
    rel = _jail(raw_path, root)
    full = os.path.join(root, rel)
    fd = _open(full, rel, root)
    try:
        hashed_ns = time.time_ns()  # before the stat: a write after it lands at or after this instant
        st = os.fstat(fd)
        if _check(st, full, rel, root, stream=lines is not None):
            from .read_huge import stream_lines

            return stream_lines(fd, rel, st, lines or "", hashed_ns, encoding)
        if trust_stat:
            known = cache.last_stat(rel)
            if known is not None and stat_is_trusted(known, st):
                blob = cache.get_blob(known.sha256, encoding)
                if blob is not None:
                    return Loaded(rel, known.sha256, known, blob=blob)
        data = _read_all(fd, rel)
    finally:
        os.close(fd)
    if b"\x00" in data[:8192]:
        raise InvalidInput("READ_BINARY_FILE", f"{rel} is a binary file; lean-ctx reads text files", path=rel)
    sha = hashlib.sha256(data).hexdigest()
    text, bad, cr = decode(data)
    steady = len(data) == st.st_size  # else the file changed while it was read: never trust this record
    fs = FileStat(st.st_mtime_ns, st.st_size, st.st_ino, sha, st.st_ctime_ns, st.st_dev,
                  hashed_ns if steady else 0, bad, cr)
    cache.record_stat(rel, fs)
    return Loaded(rel, sha, fs, text=text)


def blob_of(cache: ViewCache, f: Loaded, encoding: str) -> Blob:
    """The redacted blob of a loaded file (cached by content hash)."""
    if f.blob is not None:
        return f.blob
    blob = cache.get_blob(f.sha, encoding)
    if blob is None:
        assert f.text is not None  # a fast load always carries its blob
        redacted, n = redact_keeping_lines(f.text)
        blob = Blob(f.sha, redacted, n, len(source_lines(redacted)), count_tokens(redacted, encoding), encoding)
        cache.put_blob(blob)
    return blob
