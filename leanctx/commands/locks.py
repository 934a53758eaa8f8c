"""Path-lock commands: lock (acquire or renew), unlock, recover.

Every decision is taken inside the command's ``BEGIN IMMEDIATE`` transaction, on the
``path_locks`` projection made current at its start, so it holds across processes.

Rules:
- A lock covers its path and, for a directory, everything under it; locks overlap when one
  covers the other. Locking is refused (``PATH_LOCK_CONFLICT``) while another agent holds an
  overlapping lock — also an *expired* one: an expired lock is never taken silently, it must
  be recovered first (``recover``, with a reason).
- Locking your own path again renews its lease (``lock.renewed``). Your own overlapping locks
  never conflict with each other.
- Several paths in one command are locked all or none (one transaction).
- ``unlock``: owner only (``PATH_LOCK_OWNER_MISMATCH``), whether the lease ran out or not.
- ``recover``: only an expired lock (``PATH_LOCK_NOT_STALE`` otherwise), with a non-empty
  reason; the new owner gets a fresh lease and the event records the previous owner, its
  lease end and the reason.
"""

from __future__ import annotations

import math

import msgspec

from .. import clock
from ..errors import CommandError, InvalidInput
from ..events import NO_STREAM
from ..events.kinds.lock import LockAcquired, LockRecovered, LockReleased, LockRenewed
from ..paths import PathRefused, WorkspacePath, normalize, workspace_root
from ..projections.locks import LockView, get_lock, locks_overlapping
from .bus import Command, CommandContext, handles

DEFAULT_LEASE_SECONDS = 900.0
MAX_LEASE_SECONDS = 7 * 24 * 3600.0
MAX_PATHS = 1000
MAX_REASON = 1000

INVALID_PATH = "PATH_LOCK_INVALID_PATH"
OUTSIDE = "PATH_LOCK_PATH_OUTSIDE_WORKSPACE"


def stream_of(path: str) -> str:
    return f"lock:{path}"


# --- validation ------------------------------------------------------------------------------

def lock_workspace(workspace: str | None) -> str:
    """The canonical workspace of a lock command (an absolute directory path)."""
    if not workspace:
        raise InvalidInput("PATH_LOCK_INVALID_WORKSPACE",
                           "no workspace: run inside a project or pass --workspace DIR (an absolute directory)")
    try:
        return workspace_root(workspace, invalid_code="PATH_LOCK_INVALID_WORKSPACE")
    except PathRefused as exc:
        raise InvalidInput("PATH_LOCK_INVALID_WORKSPACE", exc.message + " (pass --workspace DIR)") from None


def normalize_lock_path(raw: str, workspace: str) -> WorkspacePath:
    """``raw`` as a lock names it, or ``PATH_LOCK_INVALID_PATH`` / ``PATH_LOCK_PATH_OUTSIDE_WORKSPACE``."""
    return normalize(raw, workspace, invalid_code=INVALID_PATH, outside_code=OUTSIDE)


def _paths(raws: list[str], workspace: str) -> list[WorkspacePath]:
    if not raws:
        raise InvalidInput(INVALID_PATH, "no path given; name at least one file or directory (e.g. src/app.py)")
    if len(raws) > MAX_PATHS:
        raise InvalidInput(INVALID_PATH, f"{len(raws)} paths in one call; lock at most {MAX_PATHS}, or a directory")
    out: dict[str, WorkspacePath] = {}
    for raw in raws:
        wp = normalize_lock_path(raw, workspace)
        prev = out.get(wp.path)
        out[wp.path] = WorkspacePath(wp.path, wp.directory or (prev.directory if prev else False))
    return list(out.values())


def _lease(seconds: float) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) \
            or seconds <= 0 or seconds > MAX_LEASE_SECONDS:
        raise InvalidInput(
            "PATH_LOCK_INVALID_DURATION",
            f"lease {seconds!r} is not valid: give a positive, finite number of seconds up to {MAX_LEASE_SECONDS:.0f}"
            f" (e.g. --lease-seconds {DEFAULT_LEASE_SECONDS:.0f})",
        )
    return float(seconds)


def _reason(reason: str | None, *, required: bool) -> str | None:
    text = (reason or "").strip()
    if required and not text:
        raise InvalidInput("PATH_LOCK_INVALID_REASON",
                           "a recovery needs a reason: say why the lock is taken over (--reason \"...\")")
    if len(text) > MAX_REASON:
        raise InvalidInput("PATH_LOCK_INVALID_REASON", f"the reason is longer than {MAX_REASON} characters; shorten it")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("PATH_LOCK_INVALID_REASON", "the reason is not valid UTF-8 text; retype it") from None
    if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in text):
        raise InvalidInput("PATH_LOCK_INVALID_REASON",
                           "the reason contains control characters (newlines included); give it on one line")
    return text or None


def _owner(actor: str | None, what: str = "lock") -> str:
    if not actor or not actor.strip():
        raise InvalidInput("PATH_LOCK_INVALID_OWNER",
                           f"a {what} needs an agent: set $LEAN_CTX_AGENT_ID or pass --as AGENT")
    return actor


def _when(lock: LockView) -> str:
    secs = abs(lock.expires_in)
    span = f"{secs:.0f}s" if secs < 120 else f"{secs / 60:.0f}m" if secs < 7200 else f"{secs / 3600:.1f}h"
    return f"expired at {lock.expires_at} ({span} ago)" if lock.expired else f"expires at {lock.expires_at} (in {span})"


def conflict_message(path: str, lock: LockView) -> str:
    """The sentence of ``PATH_LOCK_CONFLICT``: holder, locked path, expiry, what to do."""
    on = "" if lock.path == path else f" (lock on {lock.display})"
    if lock.expired:
        return (f"{path} is locked by {lock.owner}{on}, whose lease {_when(lock)}; an expired lock is not taken "
                f"silently: take it over with `lean-ctx chat recover {lock.display} --reason \"...\"`")
    return (f"{path} is locked by {lock.owner}{on}, which {_when(lock)}; wait for it, ask {lock.owner} to unlock, "
            "or work on another path")


def _check_free(ctx: CommandContext, workspace: str, wp: WorkspacePath, owner: str, *,
                skip: str | None = None) -> None:
    for lock in locks_overlapping(ctx.conn, wp.path, now=ctx.now, workspace=workspace, include_expired=True):
        if lock.owner == owner or lock.path == skip:
            continue
        raise CommandError("PATH_LOCK_CONFLICT", conflict_message(wp.display, lock), path=wp.path,
                           holder=lock.owner, locked_path=lock.display, expires_at=lock.expires_at,
                           expired=lock.expired)


# --- commands and results --------------------------------------------------------------------

class LockPaths(Command, frozen=True):
    """Lock (or renew) workspace paths for the calling agent, all or none."""

    name = "lock.acquire"
    paths: list[str]
    lease_seconds: float = DEFAULT_LEASE_SECONDS
    reason: str | None = None
    workspace: str | None = None  # default: the project root of the call


class UnlockPaths(Command, frozen=True):
    """Release the calling agent's locks on these exact paths, all or none."""

    name = "lock.release"
    paths: list[str]
    workspace: str | None = None


class RecoverLock(Command, frozen=True):
    """Take over an expired lock, with a reason."""

    name = "lock.recover"
    path: str
    reason: str
    new_owner: str | None = None  # default: the calling agent
    lease_seconds: float = DEFAULT_LEASE_SECONDS
    workspace: str | None = None


class LockGrant(msgspec.Struct, frozen=True):
    path: str
    display: str
    directory: bool
    owner: str
    lease_seconds: float
    expires_at: str
    renewed: bool = False
    previous_owner: str | None = None
    previous_expires_at: str | None = None
    recovery_reason: str | None = None


class LockResult(msgspec.Struct, frozen=True):
    workspace: str
    owner: str
    locks: list[LockGrant]


class UnlockResult(msgspec.Struct, frozen=True):
    workspace: str
    owner: str
    released: list[str]


# --- handlers ----------------------------------------------------------------------------------

@handles(LockPaths, emits=("lock.acquired", "lock.renewed"), result=LockResult)
def lock(ctx: CommandContext, cmd: LockPaths) -> LockResult:
    owner = _owner(ctx.actor)
    workspace = lock_workspace(cmd.workspace or ctx.project)
    lease = _lease(cmd.lease_seconds)
    reason = _reason(cmd.reason, required=False)
    wanted = _paths(cmd.paths, workspace)
    for wp in wanted:  # decide for every path before emitting anything: all or none
        _check_free(ctx, workspace, wp, owner)
    expires = clock.iso(ctx.now + lease)
    grants: list[LockGrant] = []
    for wp in wanted:
        stream = stream_of(wp.path)
        mine = get_lock(ctx.conn, workspace, wp.path, now=ctx.now)
        version = ctx.tx.stream_version(stream)
        if mine is not None:  # ours (others were refused above): renew
            directory = wp.directory or mine.directory
            ctx.emit(stream, LockRenewed(workspace=workspace, path=wp.path, directory=directory, owner=owner,
                                         lease_seconds=lease, lease_expires_at=expires,
                                         previous_lease_expires_at=mine.expires_at, reason=reason),
                     expected_version=version)
            grants.append(LockGrant(wp.path, wp.path + "/" if directory else wp.path, directory, owner, lease,
                                    expires, renewed=True, previous_expires_at=mine.expires_at))
        else:
            ctx.emit(stream, LockAcquired(workspace=workspace, path=wp.path, directory=wp.directory, owner=owner,
                                          lease_seconds=lease, lease_expires_at=expires, reason=reason),
                     expected_version=version if version else NO_STREAM)
            grants.append(LockGrant(wp.path, wp.display, wp.directory, owner, lease, expires))
    return LockResult(workspace, owner, grants)


def _held(ctx: CommandContext, workspace: str, wp: WorkspacePath) -> LockView:
    held = get_lock(ctx.conn, workspace, wp.path, now=ctx.now)
    if held is None:
        raise CommandError("PATH_LOCK_NOT_FOUND",
                           f"nothing is locked at {wp.display} in {workspace}; see `lean-ctx chat check {wp.display}` "
                           "for the locks that cover it", path=wp.path)
    return held


@handles(UnlockPaths, emits=("lock.released",), result=UnlockResult)
def unlock(ctx: CommandContext, cmd: UnlockPaths) -> UnlockResult:
    owner = _owner(ctx.actor, "unlock")
    workspace = lock_workspace(cmd.workspace or ctx.project)
    wanted = _paths(cmd.paths, workspace)
    for wp in wanted:
        held = _held(ctx, workspace, wp)
        if held.owner != owner:
            hint = (f"its lease {_when(held)}, so you may take it over with `lean-ctx chat recover {held.display} "
                    "--reason \"...\"`") if held.expired else f"it {_when(held)}; ask {held.owner} to unlock it"
            raise CommandError("PATH_LOCK_OWNER_MISMATCH",
                               f"{held.display} is locked by {held.owner}, not by {owner}; only the owner unlocks: "
                               + hint, path=wp.path, holder=held.owner)
    for wp in wanted:
        stream = stream_of(wp.path)
        ctx.emit(stream, LockReleased(workspace=workspace, path=wp.path, owner=owner),
                 expected_version=ctx.tx.stream_version(stream))
    return UnlockResult(workspace, owner, [wp.path for wp in wanted])


@handles(RecoverLock, emits=("lock.recovered",), result=LockResult)
def recover(ctx: CommandContext, cmd: RecoverLock) -> LockResult:
    new_owner = _owner(cmd.new_owner or ctx.actor, "recovery")
    workspace = lock_workspace(cmd.workspace or ctx.project)
    reason = _reason(cmd.reason, required=True)
    assert reason is not None
    lease = _lease(cmd.lease_seconds)
    wp = normalize_lock_path(cmd.path, workspace)
    held = _held(ctx, workspace, wp)
    if not held.expired:
        raise CommandError(
            "PATH_LOCK_NOT_STALE",
            f"{held.display} is locked by {held.owner} and {_when(held)}; only an expired lock can be recovered: "
            f"wait for it, or ask {held.owner} to unlock",
            path=wp.path, holder=held.owner, expires_at=held.expires_at,
        )
    # the recovered lock must not overlap someone else's lock either (e.g. a third agent's lock under it)
    _check_free(ctx, workspace, WorkspacePath(held.path, held.directory), new_owner, skip=held.path)
    expires = clock.iso(ctx.now + lease)
    stream = stream_of(held.path)
    ctx.emit(stream, LockRecovered(workspace=workspace, path=held.path, directory=held.directory, owner=new_owner,
                                   lease_seconds=lease, lease_expires_at=expires, previous_owner=held.owner,
                                   previous_lease_expires_at=held.expires_at, recovery_reason=reason),
             expected_version=ctx.tx.stream_version(stream))
    grant = LockGrant(held.path, held.display, held.directory, new_owner, lease, expires,
                      previous_owner=held.owner, previous_expires_at=held.expires_at, recovery_reason=reason)
    return LockResult(workspace, new_owner, [grant])
