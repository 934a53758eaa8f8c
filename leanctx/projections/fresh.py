"""Build projections into a fresh database file from a stream of events (for replay).

The output never destroys anything. Before a byte is written, ``build_fresh`` refuses:

- ``REPLAY_OUT_IS_LOG``: the event log ``live`` (when given), its ``-wal``/``-shm``/``-journal``,
  any name for them (relative path, symlink, or hard link: compared by ``st_dev``/``st_ino``),
  and any other file that reads as an event log (an ``events`` table);
- ``REPLAY_OUT_EXISTS``: a directory, a device/pipe/socket, and any existing non-empty file that
  is not a database an earlier replay made.

A replay output is marked: SQLite ``application_id`` = ``REPLAY_APPLICATION_ID`` ("LCrp") in
its header and ``user_version`` 0 (the event log sets 1). Only such a file, or an empty one,
is replaced; and never while a ``-wal``/``-journal`` lies beside ``path`` (SQLite would fold
it into the new database; an output is written with an in-memory journal, so it leaves none).
The new database is built in a temporary file next to ``path`` and renamed over it once
complete, so a failed build leaves the earlier output as it was.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterable, Sequence
from urllib.parse import quote

import apsw

from ..errors import InvalidInput
from ..events import StoredEvent
from .base import Projection
from .runner import Progress, digest_tables, replay_into

REPLAY_APPLICATION_ID = int.from_bytes(b"LCrp", "big")
_SQLITE_MAGIC = b"SQLite format 3\x00"
_SIDECARS = ("-wal", "-shm", "-journal")


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def _header(path: str) -> bytes:
    """The first 100 bytes of a regular file (a pipe's open would block), else nothing."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return b""
        with open(path, "rb") as f:
            return f.read(100)
    except OSError:
        return b""


def _is_replay_output(path: str) -> bool:
    h = _header(path)
    return (
        len(h) == 100
        and h.startswith(_SQLITE_MAGIC)
        and int.from_bytes(h[68:72], "big") == REPLAY_APPLICATION_ID
        and int.from_bytes(h[60:64], "big") == 0
    )


def _is_event_log(path: str) -> bool:
    """Whether ``path`` reads as an event log. Read with ``immutable=1``: SQLite takes no lock
    and creates no file, whatever the file is (at worst it reads a stale page and says no)."""
    if not _header(path).startswith(_SQLITE_MAGIC):
        return False
    try:
        conn = apsw.Connection(f"file:{quote(os.path.abspath(path))}?immutable=1",
                               flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        try:
            return bool(conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'events'")
                        .fetchall())
        finally:
            conn.close()
    except apsw.Error:
        return False


def _log_files(live: str | os.PathLike[str] | None) -> list[str]:
    """The live log and its sidecars, by resolved name."""
    if live is None:
        return []
    real = os.path.realpath(os.fspath(live))
    return [real, *(real + s for s in _SIDECARS)]


def check_out(path: str | os.PathLike[str], live: str | os.PathLike[str] | None = None) -> str:
    """``path`` (resolved) when a replay may write its database there; else a coded refusal
    (see the module docstring). Reads only; nothing is created or deleted."""
    shown = os.fspath(path)
    real = os.path.realpath(shown)
    what = f"the replay output {shown}" + (f" (= {real})" if real != os.path.abspath(shown) else "")
    logs = _log_files(live)
    st = _stat(real)
    log_stats = [s for s in map(_stat, logs) if s is not None]
    if real in logs or (st is not None and any(_same_file(st, s) for s in log_stats)):
        raise InvalidInput("REPLAY_OUT_IS_LOG", f"{what} is the event log (or one of its -wal/-shm files): replay "
                           "would destroy the only source of truth; choose another path for the fresh database",
                           path=shown)
    if st is not None and not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file (a device, pipe or socket)"
        raise InvalidInput("REPLAY_OUT_EXISTS", f"{what} is {kind}; name a file for the fresh database",
                           path=shown)
    stem = next((real[: -len(s)] for s in _SIDECARS if real.endswith(s)), None)
    if (st is not None and _is_event_log(real)) or (stem is not None and _is_event_log(stem)):
        raise InvalidInput("REPLAY_OUT_IS_LOG", f"{what} is an event log (or one of its -wal/-shm files): replay "
                           "never writes over one; choose another path for the fresh database", path=shown)
    if st is not None and st.st_size > 0 and not _is_replay_output(real):
        raise InvalidInput("REPLAY_OUT_EXISTS", f"{what} exists and is not a database an earlier replay made; "
                           "replay only replaces its own output: choose a new path, or move that file away "
                           "yourself", path=shown)
    hot = [real + s for s in ("-wal", "-journal") if os.path.lexists(real + s)]
    if hot:
        raise InvalidInput("REPLAY_OUT_EXISTS", f"{what} has {', '.join(hot)} beside it (a database opened it, "
                           "and SQLite would fold that file into the new one): choose a new path, or move them "
                           "away yourself", path=shown)
    return real


def build_fresh(
    path: str | os.PathLike[str],
    events: Iterable[StoredEvent],
    projections: Sequence[Projection],
    total: int = 0,
    progress: Progress | None = None,
    live: str | os.PathLike[str] | None = None,
) -> tuple[int, dict[str, str]]:
    """Create ``projections``' tables in a new database at ``path``, fold ``events`` into
    them in one transaction, and return (events applied, digest per projection).

    ``live``: the event log the events come from (refused as ``path`` by every name). What
    ``path`` may be is in the module docstring; a refusal happens before anything is written."""
    target = check_out(path, live)
    # SQLite creates it (permissions as umask says); the random name is never anyone else's
    tmp = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.{secrets.token_hex(6)}.replay-tmp")
    try:
        conn = apsw.Connection(tmp)
        try:
            conn.execute("PRAGMA journal_mode=MEMORY")  # no -journal/-wal file beside it, ever
            conn.execute("PRAGMA synchronous=OFF")
            conn.execute(f"PRAGMA application_id={REPLAY_APPLICATION_ID}")
            with conn:
                for p in projections:
                    p.create(conn)
                n = replay_into(conn, events, projections, total, progress)
            digests = {p.name: digest_tables(conn, p) for p in projections}
        finally:
            conn.close()
        check_out(path, live)  # still nothing else there (it may have changed while we built)
        os.replace(tmp, target)
    except BaseException:
        for f in (tmp, *(tmp + s for s in _SIDECARS)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f)
        raise
    return n, digests
