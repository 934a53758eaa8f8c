"""``lean-ctx chat lock|check|unlock|recover|locks`` and ``lean-ctx hooks install-git|pre-commit``.

Paths are relative to the workspace (the project root, or ``--workspace DIR``), not to the
working directory; a trailing ``/`` marks a directory lock. ``check`` only reports: it
exits 0 whether the path is locked or not (read the ``locked`` / ``free`` fields).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from ... import clock
from ...errors import CommandError
from .app import State, state
from .common import JSON, dispatch
from .groups import chat_app, hooks_app
from .render import emit_json, table, to_builtins

HOOK_MARKER = "# lean-ctx-hook: pre-commit"

_AS = typer.Option(None, "--as", help="Act as this agent (default: $LEAN_CTX_AGENT_ID, else local-<parent pid>).")
_WS = typer.Option(None, "--workspace", help="Workspace directory the paths are relative to (default: the project root).")
_LEASE = typer.Option(900.0, "--lease-seconds", "--lease", "--ttl", help="Lease length in seconds (positive, finite).")


def _workspace(st: State, workspace: str | None, *, must_exist: bool = True) -> str:
    """The workspace: ``--workspace`` (an existing directory: ``PROJECT_NOT_FOUND`` otherwise,
    except for ``unlock``/``recover``, which may clean up after a removed one), else the project."""
    if not workspace:
        return st.project_root()
    if must_exist:
        from ...config import existing_dir

        return str(existing_dir(workspace, "--workspace"))
    return str(Path(workspace).expanduser().resolve())


def _me(as_: str | None) -> str:
    from ...identity import agent_identity

    return as_ or agent_identity()


def _span(seconds: float) -> str:
    s = abs(seconds)
    return f"{s:.0f}s" if s < 120 else f"{s / 60:.0f}m" if s < 7200 else f"{s / 3600:.1f}h"


@chat_app.command("lock")
def lock(
    ctx: typer.Context,
    paths: list[str] = typer.Argument(..., help="Workspace-relative paths; end a directory with '/'."),
    as_: Optional[str] = _AS,
    lease: float = _LEASE,
    reason: Optional[str] = typer.Option(None, "--reason", help="Why you lock it (shown to the others)."),
    workspace: Optional[str] = _WS,
    json_: bool = JSON,
) -> None:
    """Lock paths with a lease, all or none; locking your own path again renews it."""
    from ...commands.locks import LockPaths

    st = state(ctx)
    v = dispatch(st, LockPaths(paths=paths, lease_seconds=lease, reason=reason,
                               workspace=_workspace(st, workspace)), actor=as_)
    if st.want_json(json_):
        emit_json(v)
        return
    for g in v.locks:
        verb = "renewed" if g.renewed else "locked"
        sys.stdout.write(f"{verb} {g.display} for {v.owner} until {g.expires_at} ({_span(g.lease_seconds)})\n")


@chat_app.command("check")
def check(
    ctx: typer.Context,
    paths: list[str] = typer.Argument(..., help="Workspace-relative paths."),
    as_: Optional[str] = _AS,
    workspace: Optional[str] = _WS,
    json_: bool = JSON,
) -> None:
    """Who holds locks overlapping these paths. Exits 0 either way: `locked` says whether
    another agent's unexpired lock covers a path, `free` whether you could lock it now."""
    from ...commands.locks import lock_workspace, normalize_lock_path
    from ...projections.locks import check_path

    st = state(ctx)
    ws = lock_workspace(_workspace(st, workspace))
    me = _me(as_)
    wanted = [normalize_lock_path(p, ws) for p in paths]  # all valid before any output
    conn = st.open().projections.reader("path_locks")
    now = clock.now()
    results = [check_path(conn, ws, wp.path, me=me, now=now, directory=wp.directory) for wp in wanted]
    if st.want_json(json_):
        emit_json(results)
        return
    for r in results:
        if not r.locks:
            sys.stdout.write(f"{r.display}: free\n")
            continue
        state_ = "locked" if r.locked else "free" if r.free else "blocked by an expired lock (recover it)"
        sys.stdout.write(f"{r.display}: {state_}\n")
        for lk in r.locks:
            who = "you" if lk.owner == me else lk.owner
            when = (f"expired {_span(lk.expires_in)} ago" if lk.expired
                    else f"expires {lk.expires_at} (in {_span(lk.expires_in)})")
            sys.stdout.write(f"  {lk.display} by {who}, {when}" + (f" — {lk.reason}" if lk.reason else "") + "\n")


@chat_app.command("unlock")
def unlock(
    ctx: typer.Context,
    paths: list[str] = typer.Argument(..., help="The locked paths, as they were locked."),
    as_: Optional[str] = _AS,
    workspace: Optional[str] = _WS,
    json_: bool = JSON,
) -> None:
    """Release your locks on these paths (all or none; the owner only)."""
    from ...commands.locks import UnlockPaths

    st = state(ctx)
    v = dispatch(st, UnlockPaths(paths=paths, workspace=_workspace(st, workspace, must_exist=False)), actor=as_)
    if st.want_json(json_):
        emit_json(v)
    else:
        for p in v.released:
            sys.stdout.write(f"unlocked {p}\n")


@chat_app.command("recover")
def recover(
    ctx: typer.Context,
    path: str = typer.Argument(..., help="The path of an expired lock."),
    reason: str = typer.Option(..., "--reason", help="Why the lock is taken over (required, recorded)."),
    as_: Optional[str] = typer.Option(None, "--as", help="The new owner (default: $LEAN_CTX_AGENT_ID, else local-<pid>)."),
    lease: float = _LEASE,
    workspace: Optional[str] = _WS,
    json_: bool = JSON,
) -> None:
    """Take over another agent's expired lock, with a reason."""
    from ...commands.locks import RecoverLock

    st = state(ctx)
    v = dispatch(st, RecoverLock(path=path, reason=reason, lease_seconds=lease,
                                 workspace=_workspace(st, workspace)), actor=as_)
    if st.want_json(json_):
        emit_json(v)
        return
    g = v.locks[0]
    sys.stdout.write(f"recovered {g.display} from {g.previous_owner} (expired {g.previous_expires_at}); "
                     f"{v.owner} holds it until {g.expires_at}\n")


@chat_app.command("locks")
def locks(
    ctx: typer.Context,
    workspace: Optional[str] = _WS,
    every: bool = typer.Option(False, "--all-workspaces", help="Locks of every workspace in this log."),
    json_: bool = JSON,
) -> None:
    """Held locks (expired ones too, until they are recovered or unlocked)."""
    from ...projections.locks import list_locks

    st = state(ctx)
    ws = None if every else _workspace(st, workspace)
    found = list_locks(st.open().projections.reader("path_locks"), now=clock.now(), workspace=ws)
    if st.want_json(json_):
        emit_json(found)
        return
    if not found:
        sys.stderr.write("no path is locked (lean-ctx chat lock PATH)\n")
        return
    rows = [to_builtins(lk) for lk in found]
    for r in rows:
        r["state"] = "expired" if r["expired"] else f"{_span(r['expires_in'])} left"
        r["path"] = r["display"]
    cols = ["path", "owner", "state", "expires_at", "reason"] + (["workspace"] if every else [])
    sys.stdout.write(table(rows, cols) + "\n")


# --- git pre-commit hook ---------------------------------------------------------------------

def _git(args: list[str], cwd: str | os.PathLike[str]) -> Any:
    import subprocess

    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=60, check=False)
    except FileNotFoundError:
        raise CommandError("HOOK_GIT_NOT_FOUND", "git is not installed or not on PATH; install git first") from None


def _toplevel(repo: str | os.PathLike[str]) -> Path:
    if not Path(repo).is_dir():
        raise CommandError("HOOK_NOT_A_GIT_REPO", f"{repo} is not a directory; pass --repo DIR (a git work tree)")
    p = _git(["rev-parse", "--show-toplevel"], repo)
    if p.returncode != 0 or not p.stdout.strip():
        raise CommandError("HOOK_NOT_A_GIT_REPO",
                           f"{repo} is not inside a git work tree; run `git init` or pass --repo DIR")
    return Path(os.fsdecode(p.stdout.strip())).resolve()


def _hooks_dir(top: Path) -> Path:
    custom = _git(["config", "core.hooksPath"], top)
    if custom.returncode == 0 and custom.stdout.strip():
        d = Path(os.fsdecode(custom.stdout.strip())).expanduser()
        return d if d.is_absolute() else top / d
    p = _git(["rev-parse", "--git-path", "hooks"], top)
    d = Path(os.fsdecode(p.stdout.strip()))
    return d if d.is_absolute() else top / d


def _lean_ctx_argv() -> list[str]:
    """How the hook calls this very lean-ctx: the running console script, else the one on
    PATH, else this interpreter."""
    import shutil

    here = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if os.path.basename(here) == "lean-ctx" and os.access(here, os.X_OK):
        return [here]
    found = shutil.which("lean-ctx")
    if found:
        return [os.path.abspath(found)]
    return [sys.executable, "-c", "from leanctx.api.cli import main; main()"]


def hook_script(argv: list[str], db: str) -> str:
    import shlex

    exe = shlex.quote(argv[0])
    return (
        "#!/bin/sh\n"
        f"{HOOK_MARKER} (installed by `lean-ctx hooks install-git`; delete this file to remove it)\n"
        "# Refuses a commit that stages a path locked by another agent ($LEAN_CTX_AGENT_ID is you).\n"
        f"if [ ! -x {exe} ]; then\n"
        f"  echo \"lean-ctx pre-commit: \"{exe}\" is missing; path locks were NOT checked "
        "(reinstall with: lean-ctx hooks install-git)\" >&2\n"
        "  exit 0\n"
        "fi\n"
        f"exec {shlex.join(argv)} --db {shlex.quote(db)} hooks pre-commit\n"
    )


@hooks_app.command("install-git")
def install_git(
    ctx: typer.Context,
    repo: Optional[str] = typer.Option(None, "--repo", help="A directory of the git work tree (default: here)."),
    force: bool = typer.Option(False, "--force", help="Replace a pre-commit hook that lean-ctx did not write "
                               "(the old one is kept as pre-commit.before-lean-ctx)."),
    json_: bool = JSON,
) -> None:
    """Install a git pre-commit hook refusing commits that touch paths locked by other agents."""
    from ...config import db_path

    st = state(ctx)
    top = _toplevel(repo or os.getcwd())
    db = str(db_path(st.db, root=None if st.db else top).resolve())
    hooks = _hooks_dir(top)
    target = hooks / "pre-commit"
    backup: Path | None = None
    replaced = False
    if target.exists() or target.is_symlink():
        try:
            current = target.read_text(errors="replace")
        except OSError:
            current = ""
        if HOOK_MARKER in current:
            replaced = True
        elif not force:
            raise CommandError(
                "HOOK_ALREADY_EXISTS",
                f"{target} exists and was not written by lean-ctx; pass --force to replace it (it is kept as "
                "pre-commit.before-lean-ctx), or call `lean-ctx hooks pre-commit` from your own hook",
                path=str(target),
            )
        else:
            backup = hooks / "pre-commit.before-lean-ctx"
            n = 1
            while backup.exists():
                backup = hooks / f"pre-commit.before-lean-ctx.{n}"
                n += 1
            target.rename(backup)
    hooks.mkdir(parents=True, exist_ok=True)
    argv = _lean_ctx_argv()
    tmp = hooks / f".pre-commit.lean-ctx.{os.getpid()}"
    tmp.write_text(hook_script(argv, db))
    tmp.chmod(0o755)
    os.replace(tmp, target)
    out = {"hook": str(target), "db": db, "lean_ctx": argv, "replaced": replaced,
           "backup": str(backup) if backup else None}
    if st.want_json(json_):
        emit_json(out)
    else:
        extra = f" (the previous hook is kept as {backup.name})" if backup else ""
        sys.stdout.write(f"installed {target} → checks path locks in {db}{extra}\n")


@hooks_app.command("pre-commit")
def pre_commit(
    ctx: typer.Context,
    as_: Optional[str] = typer.Option(None, "--as", help="You (default: $LEAN_CTX_AGENT_ID, else local-<pid>)."),
    json_: bool = JSON,
) -> None:
    """Run by the git hook: exit 1 when a staged path is covered by another agent's unexpired lock.
    With --json: {ok, agent, checked, conflicts: [{code, path, lock, message}]} (exit 1 when not ok)."""
    from ...config import db_path
    from ...projections.locks import blocking_locks

    st = state(ctx)
    as_json = st.want_json(json_)
    me = _me(as_)
    top = _toplevel(os.getcwd())
    db = db_path(st.db, root=None if st.db else top)
    staged: dict[str, str] = {}
    hits: list[Any] = []
    if db.exists():  # no log, no locks (and do not create one from a hook)
        staged = _staged(top)
    if staged:
        conn = st.open().projections.reader("path_locks")
        hits = blocking_locks(conn, staged, me=me, now=clock.now())
    from ...commands.locks import conflict_message

    conflicts = [{"code": "PATH_LOCK_CONFLICT", "path": staged[a], "lock": to_builtins(lk),
                  "message": conflict_message(staged[a], lk)} for a, lk in hits]
    if as_json:
        emit_json({"ok": not hits, "agent": me, "checked": len(staged), "conflicts": conflicts})
    else:
        for c in conflicts:
            sys.stderr.write(f"error[PATH_LOCK_CONFLICT]: commit refused: {c['message']} "
                             f"(or unstage it: git restore --staged -- {c['path']})\n")
        if hits:
            sys.stderr.write(f"lean-ctx: {len({a for a, _ in hits})} staged path(s) locked by other agents; you are "
                             f"{me} (set LEAN_CTX_AGENT_ID to commit as the lock owner)\n")
    if hits:
        raise typer.Exit(1)


def _staged(top: Path) -> dict[str, str]:
    """The staged paths of the work tree ``top``: absolute lock key → path as git names it."""
    from ...paths import PathRefused, check_text, join

    p = _git(["diff", "--cached", "--name-only", "--no-renames", "-z"], top)
    if p.returncode != 0:
        raise CommandError("HOOK_GIT_FAILED", "`git diff --cached` failed: "
                           + p.stderr.decode(errors="replace").strip() + "; fix the repository and retry")
    staged: dict[str, str] = {}
    for raw in p.stdout.split(b"\0"):
        if not raw:
            continue
        rel = os.fsdecode(raw)
        try:
            key = check_text(rel)
        except PathRefused:  # a name no lock can hold (control characters, ...): nothing to check
            continue
        staged[join(str(top), key)] = rel
    return staged
