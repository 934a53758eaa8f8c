"""Path locks: overlap rules, leases and recovery with injected ``now``, all-or-none batches,
the query functions, replay, the CLI, the git pre-commit hook, and a barrier race between
real processes."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from leanctx import clock
from leanctx.app import LeanCtx
from leanctx.commands.locks import (
    DEFAULT_LEASE_SECONDS,
    LockPaths,
    LockResult,
    RecoverLock,
    UnlockPaths,
    conflict_message,
)
from leanctx.errors import LeanCtxError
from leanctx.events import TopicFilter
from leanctx.events.codec import payload_dict
from leanctx.projections.locks import (
    active_locks,
    blocking_locks,
    check_path,
    get_lock,
    list_locks,
    locks_overlapping,
)
from tools.replay import replay

T0 = 1_800_000_000.0
LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))  # this interpreter's, not whatever PATH finds


@pytest.fixture
def ws(tmp_path: Path) -> str:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a")
    (root / "docs").mkdir()
    return str(root)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "e.db") as a:
        yield a


def do(app: LeanCtx, cmd: Any, actor: str | None, now: float = T0, project: str | None = None) -> Any:
    return app.bus.dispatch(cmd, actor=actor, now=now, project=project).value


def refused(app: LeanCtx, cmd: Any, actor: str | None, code: str, now: float = T0) -> LeanCtxError:
    head = app.store.head().position
    with pytest.raises(LeanCtxError) as info:
        app.bus.dispatch(cmd, actor=actor, now=now)
    assert info.value.code == code, info.value.message
    # a refusal appends only its own tool.called record
    after = app.store.read_all(head)
    assert [e.kind for e in after] == ["tool.called"]
    assert payload_dict(after[0].payload)["error_code"] == code
    return info.value


def lock(app: LeanCtx, ws: str, actor: str, *paths: str, now: float = T0, lease: float = 60.0,
         reason: str | None = None) -> LockResult:
    return do(app, LockPaths(paths=list(paths), workspace=ws, lease_seconds=lease, reason=reason), actor, now)


def conn(app: LeanCtx) -> Any:
    return app.projections.reader("path_locks")


def lock_events(app: LeanCtx) -> list[Any]:
    return [e for e in app.store.read_all(0) if e.kind.startswith("lock.")]


# --- acquire, renew, unlock ------------------------------------------------------------------

def test_lock_emits_on_the_path_stream_and_unlock_releases(app: LeanCtx, ws: str) -> None:
    res = lock(app, ws, "alice", "./src//a.py", "docs/", reason="refactor")
    assert res.owner == "alice" and res.workspace == os.path.realpath(ws)
    assert [(g.path, g.display, g.directory, g.renewed) for g in res.locks] == [
        ("src/a.py", "src/a.py", False, False), ("docs", "docs/", True, False)]
    assert {g.expires_at for g in res.locks} == {clock.iso(T0 + 60)}
    evs = lock_events(app)
    assert [(e.kind, e.stream, e.version, e.actor) for e in evs] == [
        ("lock.acquired", "lock:src/a.py", 1, "alice"), ("lock.acquired", "lock:docs", 1, "alice")]
    first = payload_dict(evs[0].payload)
    assert first["owner"] == "alice" and first["reason"] == "refactor" and first["lease_seconds"] == 60.0
    assert first["lease_expires_at"] == clock.iso(T0 + 60) and first["workspace"] == os.path.realpath(ws)
    held = active_locks(conn(app), now=T0 + 1)
    assert [(lk.display, lk.owner, lk.expired, lk.reason) for lk in held] == [
        ("docs/", "alice", False, "refactor"), ("src/a.py", "alice", False, "refactor")]
    out = do(app, UnlockPaths(paths=["src/a.py", "docs"], workspace=ws), "alice", T0 + 2)
    assert out.released == ["src/a.py", "docs"]
    assert active_locks(conn(app), now=T0 + 3) == [] and list_locks(conn(app), now=T0 + 3) == []
    assert [e.kind for e in lock_events(app)][-2:] == ["lock.released", "lock.released"]
    # the stream continues after a release: the next lock is version 2
    lock(app, ws, "bob", "src/a.py", now=T0 + 4)
    assert [(e.stream, e.version) for e in lock_events(app)][-1] == ("lock:src/a.py", 3)


def test_relocking_your_own_path_renews_its_lease(app: LeanCtx, ws: str) -> None:
    lock(app, ws, "alice", "src/a.py", now=T0, lease=60)
    res = lock(app, ws, "alice", "src/a.py", now=T0 + 50, lease=60)
    assert res.locks[0].renewed and res.locks[0].previous_expires_at == clock.iso(T0 + 60)
    assert res.locks[0].expires_at == clock.iso(T0 + 110)
    assert [e.kind for e in lock_events(app)] == ["lock.acquired", "lock.renewed"]
    lk = get_lock(conn(app), os.path.realpath(ws), "src/a.py", now=T0 + 100)
    assert lk is not None and not lk.expired and lk.renewals == 1 and lk.acquired_at == clock.iso(T0)
    err = refused(app, LockPaths(paths=["src/a.py"], workspace=ws), "bob", "PATH_LOCK_CONFLICT", now=T0 + 100)
    assert "expires at " + clock.iso(T0 + 110) in err.message
    # your own expired lock can be renewed too (nobody recovered it)
    res = lock(app, ws, "alice", "src/a.py", now=T0 + 500, lease=30)
    assert res.locks[0].renewed and res.locks[0].expires_at == clock.iso(T0 + 530)


def test_your_own_overlapping_locks_do_not_conflict(app: LeanCtx, ws: str) -> None:
    lock(app, ws, "alice", "src/")
    lock(app, ws, "alice", "src/a.py", "src/deep/x.py")
    assert [lk.path for lk in active_locks(conn(app), now=T0)] == ["src", "src/a.py", "src/deep/x.py"]


# --- overlap rules ---------------------------------------------------------------------------

OVERLAPS = [
    # (held by alice, wanted by bob, conflict?)
    ("src/a.py", "src/a.py", True),  # same file
    ("src/a.py", "./src//a.py", True),  # same file, spelled differently
    ("src/", "src/a.py", True),  # directory lock, file under it
    ("src/a.py", "src/", True),  # ... and the other direction
    ("src", "src/deep/er/x.py", True),  # an existing directory without the slash
    ("docs/", "docs/api/", True),  # nested directories
    ("docs/api/", "docs/", True),
    ("newdir", "newdir/x", True),  # coverage is by components, the flag is informational
    ("src/a.py", "src/b.py", False),  # siblings
    ("src/", "srcx/a.py", False),  # a shared prefix is not containment
    ("src.py", "src/", False),  # ('.' sorts before '/')
    ("a-b/x", "a", False),
    ("a b", "a/", False),
    ("a/b", "a/bc", False),
    ("a_c", "abc", False),  # LIKE wildcards mean nothing here
    ("a%", "ab", False),
    ("a%/x", "a%/x/y", True),
    ("café/x", "cafe\u0301/x", True),  # NFC and NFD are one name
    ("Readme.md", "README.md", False),  # case is preserved
]


@pytest.mark.parametrize(("held", "wanted", "conflict"), OVERLAPS)
def test_overlap_rules(app: LeanCtx, ws: str, held: str, wanted: str, conflict: bool) -> None:
    lock(app, ws, "alice", held)
    if conflict:
        err = refused(app, LockPaths(paths=[wanted], workspace=ws), "bob", "PATH_LOCK_CONFLICT")
        assert err.details["holder"] == "alice"
        assert "alice" in err.message and "expires at" in err.message
        assert locks_overlapping(conn(app), err.details["path"], now=T0)
    else:
        lock(app, ws, "bob", wanted)
        assert {lk.owner for lk in active_locks(conn(app), now=T0)} == {"alice", "bob"}


def test_same_path_in_two_workspaces_does_not_conflict(app: LeanCtx, ws: str, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    lock(app, ws, "alice", "src/a.py")
    lock(app, str(other), "bob", "src/a.py")
    assert [(lk.workspace, lk.owner) for lk in active_locks(conn(app), now=T0)] == sorted(
        [(os.path.realpath(ws), "alice"), (str(other), "bob")])
    assert [lk.owner for lk in active_locks(conn(app), now=T0, workspace=str(other))] == ["bob"]


def test_the_workspace_defaults_to_the_project_of_the_call(app: LeanCtx, ws: str) -> None:
    res = do(app, LockPaths(paths=["src/a.py"]), "alice", project=ws)
    assert res.workspace == os.path.realpath(ws)
    err = refused(app, LockPaths(paths=["src/a.py"]), "alice", "PATH_LOCK_INVALID_WORKSPACE")
    assert "--workspace" in err.message
    refused(app, LockPaths(paths=["x"], workspace="relative/dir"), "alice", "PATH_LOCK_INVALID_WORKSPACE")


def test_conflict_message_names_holder_path_and_expiry(app: LeanCtx, ws: str) -> None:
    lock(app, ws, "alice", "src/", lease=600)
    err = refused(app, LockPaths(paths=["src/a.py"], workspace=ws), "bob", "PATH_LOCK_CONFLICT", now=T0 + 60)
    assert err.message == (f"src/a.py is locked by alice (lock on src/), which expires at {clock.iso(T0 + 600)} "
                           "(in 9m); wait for it, ask alice to unlock, or work on another path")
    assert err.details == {"path": "src/a.py", "holder": "alice", "locked_path": "src/",
                           "expires_at": clock.iso(T0 + 600), "expired": False}


# --- queries ---------------------------------------------------------------------------------

def test_query_functions_are_ordered_and_computed_at_query_time(app: LeanCtx, ws: str) -> None:
    lock(app, ws, "carol", "src/z.py", now=T0, lease=100)
    lock(app, ws, "alice", "docs/", now=T0, lease=10)
    lock(app, ws, "bob", "src/a.py", now=T0, lease=1000)
    c = conn(app)
    assert [lk.path for lk in active_locks(c, now=T0 + 5)] == ["docs", "src/a.py", "src/z.py"]
    assert [lk.path for lk in active_locks(c, now=T0 + 50)] == ["src/a.py", "src/z.py"]
    assert [lk.path for lk in active_locks(c, now=T0 + 500)] == ["src/a.py"]
    assert [lk.path for lk in active_locks(c, now=T0 + 5000)] == []
    assert [(lk.path, lk.expired) for lk in list_locks(c, now=T0 + 500)] == [
        ("docs", True), ("src/a.py", False), ("src/z.py", True)]
    assert [lk.expires_in for lk in list_locks(c, now=T0 + 500)] == [-490.0, 500.0, -400.0]
    assert [lk.path for lk in locks_overlapping(c, "src", now=T0 + 5)] == ["src/a.py", "src/z.py"]
    assert [lk.path for lk in locks_overlapping(c, "src/a.py/", now=T0 + 5)] == ["src/a.py"]
    assert [lk.path for lk in locks_overlapping(c, "docs/api/x.md", now=T0 + 5)] == ["docs"]
    assert locks_overlapping(c, "docs/api/x.md", now=T0 + 50) == []
    assert [lk.path for lk in locks_overlapping(c, "docs/api/x.md", now=T0 + 50, include_expired=True)] == ["docs"]
    # check_path: `locked` = another agent's unexpired lock; `free` = I could lock it now
    w = os.path.realpath(ws)
    r = check_path(c, w, "src", me="bob", now=T0 + 500)
    assert (r.locked, r.free, [lk.path for lk in r.locks]) == (False, False, ["src/a.py", "src/z.py"])
    r = check_path(c, w, "src/a.py", me="bob", now=T0 + 500)
    assert (r.locked, r.free) == (False, True)
    r = check_path(c, w, "src/a.py", me="alice", now=T0 + 500)
    assert (r.locked, r.free) == (True, False)
    # blocking_locks: absolute staged paths against other agents' unexpired locks
    hits = blocking_locks(c, [w + "/src/a.py", w + "/docs/x.md", w + "/README"], me="alice", now=T0 + 5)
    assert [(p[len(w) + 1:], lk.owner) for p, lk in hits] == [("src/a.py", "bob")]
    assert blocking_locks(c, [w + "/src/a.py"], me="bob", now=T0 + 5) == []


# --- leases, expiry and recovery -------------------------------------------------------------

def test_expired_lock_is_never_taken_silently_and_recover_records_why(app: LeanCtx, ws: str) -> None:
    lock(app, ws, "alice", "src/a.py", now=T0, lease=60)
    err = refused(app, LockPaths(paths=["src/a.py"], workspace=ws), "bob", "PATH_LOCK_CONFLICT", now=T0 + 59)
    assert err.details["expired"] is False
    err = refused(app, LockPaths(paths=["src/a.py"], workspace=ws), "bob", "PATH_LOCK_CONFLICT", now=T0 + 61)
    assert err.details["expired"] is True and "recover" in err.message and "expired at" in err.message
    err = refused(app, RecoverLock(path="src/a.py", reason="alice crashed", workspace=ws), "bob",
                  "PATH_LOCK_NOT_STALE", now=T0 + 30)
    assert "alice" in err.message and clock.iso(T0 + 60) in err.message
    for blank in ("", "   "):
        refused(app, RecoverLock(path="src/a.py", reason=blank, workspace=ws), "bob", "PATH_LOCK_INVALID_REASON",
                now=T0 + 61)
    refused(app, RecoverLock(path="src/b.py", reason="x", workspace=ws), "bob", "PATH_LOCK_NOT_FOUND", now=T0 + 61)
    refused(app, RecoverLock(path="../a.py", reason="x", workspace=ws), "bob", "PATH_LOCK_PATH_OUTSIDE_WORKSPACE",
            now=T0 + 61)
    res = do(app, RecoverLock(path="./src/a.py", reason="  alice crashed  ", workspace=ws, lease_seconds=120), "bob",
             T0 + 61)
    g = res.locks[0]
    assert (res.owner, g.previous_owner, g.previous_expires_at, g.recovery_reason, g.expires_at) == (
        "bob", "alice", clock.iso(T0 + 60), "alice crashed", clock.iso(T0 + 181))
    ev = lock_events(app)[-1]
    assert ev.kind == "lock.recovered" and ev.stream == "lock:src/a.py"
    p = payload_dict(ev.payload)
    assert (p["owner"], p["previous_owner"], p["previous_lease_expires_at"], p["recovery_reason"]) == (
        "bob", "alice", clock.iso(T0 + 60), "alice crashed")
    lk = get_lock(conn(app), os.path.realpath(ws), "src/a.py", now=T0 + 62)
    assert lk is not None and (lk.owner, lk.recovered_from, lk.recovery_reason, lk.expired) == (
        "bob", "alice", "alice crashed", False)
    # the old owner can no longer unlock or renew; the new owner can
    err = refused(app, UnlockPaths(paths=["src/a.py"], workspace=ws), "alice", "PATH_LOCK_OWNER_MISMATCH",
                  now=T0 + 62)
    assert "bob" in err.message
    refused(app, LockPaths(paths=["src/a.py"], workspace=ws), "alice", "PATH_LOCK_CONFLICT", now=T0 + 62)
    do(app, UnlockPaths(paths=["src/a.py"], workspace=ws), "bob", T0 + 63)
    refused(app, UnlockPaths(paths=["src/a.py"], workspace=ws), "bob", "PATH_LOCK_NOT_FOUND", now=T0 + 64)


def test_recover_with_a_named_new_owner_and_an_overlap_check(app: LeanCtx, ws: str) -> None:
    lock(app, ws, "alice", "src/", now=T0, lease=60)
    lock(app, ws, "alice", "src/a.py", now=T0, lease=1000)
    # taking over src/ would overlap alice's still-active src/a.py
    err = refused(app, RecoverLock(path="src/", reason="stuck", workspace=ws), "bob", "PATH_LOCK_CONFLICT",
                  now=T0 + 61)
    assert "src/a.py" in err.message
    do(app, UnlockPaths(paths=["src/a.py"], workspace=ws), "alice", T0 + 62)
    res = do(app, RecoverLock(path="src", reason="stuck", new_owner="carol", workspace=ws), "bob", T0 + 63)
    assert res.owner == "carol" and res.locks[0].display == "src/"
    assert [(lk.path, lk.owner) for lk in active_locks(conn(app), now=T0 + 64)] == [("src", "carol")]


def test_unlock_is_for_the_owner_only_even_after_expiry(app: LeanCtx, ws: str) -> None:
    lock(app, ws, "alice", "src/a.py", now=T0, lease=60)
    err = refused(app, UnlockPaths(paths=["src/a.py"], workspace=ws), "bob", "PATH_LOCK_OWNER_MISMATCH", now=T0 + 10)
    assert "ask alice" in err.message
    err = refused(app, UnlockPaths(paths=["src/a.py"], workspace=ws), "bob", "PATH_LOCK_OWNER_MISMATCH", now=T0 + 99)
    assert "recover" in err.message
    refused(app, UnlockPaths(paths=["src"], workspace=ws), "alice", "PATH_LOCK_NOT_FOUND", now=T0 + 99)
    do(app, UnlockPaths(paths=["src/a.py"], workspace=ws), "alice", T0 + 99)  # the owner, after expiry: fine


@pytest.mark.parametrize("lease", [0.0, -1.0, float("nan"), float("inf"), float("-inf"), 7 * 86400 + 1.0])
def test_lease_must_be_positive_and_finite(app: LeanCtx, ws: str, lease: float) -> None:
    refused(app, LockPaths(paths=["x"], workspace=ws, lease_seconds=lease), "alice", "PATH_LOCK_INVALID_DURATION")
    lock(app, ws, "alice", "x", now=T0 + 1, lease=60)
    refused(app, RecoverLock(path="x", reason="r", workspace=ws, lease_seconds=lease), "bob",
            "PATH_LOCK_INVALID_DURATION", now=T0 + 100)


def test_defaults_and_refused_inputs(app: LeanCtx, ws: str) -> None:
    res = do(app, LockPaths(paths=["x"], workspace=ws), "alice")
    assert res.locks[0].lease_seconds == DEFAULT_LEASE_SECONDS == 900.0
    refused(app, LockPaths(paths=[], workspace=ws), "alice", "PATH_LOCK_INVALID_PATH")
    refused(app, LockPaths(paths=["a\x00b"], workspace=ws), "alice", "PATH_LOCK_INVALID_PATH")
    refused(app, LockPaths(paths=["a\nb"], workspace=ws), "alice", "PATH_LOCK_INVALID_PATH")
    refused(app, LockPaths(paths=["."], workspace=ws), "alice", "PATH_LOCK_INVALID_PATH")
    refused(app, LockPaths(paths=["/etc/passwd"], workspace=ws), "alice", "PATH_LOCK_PATH_OUTSIDE_WORKSPACE")
    for reason in ("r" * 1001, "two\nlines", "bad\udcffbyte"):
        refused(app, LockPaths(paths=["y"], workspace=ws, reason=reason), "alice", "PATH_LOCK_INVALID_REASON")
    refused(app, LockPaths(paths=["y"], workspace=ws), None, "PATH_LOCK_INVALID_OWNER")
    with pytest.raises(LeanCtxError) as info:
        app.bus.dispatch({"paths": "x"}, command_type=LockPaths, actor="alice")
    assert info.value.code == "INVALID_INPUT"


def test_symlink_escape_is_refused(app: LeanCtx, ws: str, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", Path(ws) / "esc")
    err = refused(app, LockPaths(paths=["esc/x.py"], workspace=ws), "alice", "PATH_LOCK_PATH_OUTSIDE_WORKSPACE")
    assert "symlink" in err.message
    os.symlink("src", Path(ws) / "alias")
    assert lock(app, ws, "alice", "alias/a.py").locks[0].path == "src/a.py"
    refused(app, LockPaths(paths=["src/a.py"], workspace=ws), "bob", "PATH_LOCK_CONFLICT")


# --- all or none -----------------------------------------------------------------------------

def test_several_paths_lock_all_or_none(app: LeanCtx, ws: str) -> None:
    lock(app, ws, "bob", "src/b.py")
    before = len(lock_events(app))
    err = refused(app, LockPaths(paths=["docs/x.md", "src/a.py", "src/", "z"], workspace=ws), "alice",
                  "PATH_LOCK_CONFLICT")
    assert err.details["path"] == "src" and err.details["holder"] == "bob"
    refused(app, LockPaths(paths=["docs/x.md", "../bad", "z"], workspace=ws), "alice",
            "PATH_LOCK_PATH_OUTSIDE_WORKSPACE")
    refused(app, LockPaths(paths=["docs/x.md", "z\x00"], workspace=ws), "alice", "PATH_LOCK_INVALID_PATH")
    assert len(lock_events(app)) == before
    assert [(lk.path, lk.owner) for lk in active_locks(conn(app), now=T0)] == [("src/b.py", "bob")]
    # the same path twice in one call is one lock
    res = lock(app, ws, "alice", "docs/x.md", "src/a.py", "./docs//x.md", "z")
    assert [g.path for g in res.locks] == ["docs/x.md", "src/a.py", "z"]
    assert len(lock_events(app)) == before + 3
    # unlock is all or none too
    refused(app, UnlockPaths(paths=["docs/x.md", "src/b.py"], workspace=ws), "alice", "PATH_LOCK_OWNER_MISMATCH")
    refused(app, UnlockPaths(paths=["docs/x.md", "nope"], workspace=ws), "alice", "PATH_LOCK_NOT_FOUND")
    assert len(active_locks(conn(app), now=T0)) == 4


# --- replay ----------------------------------------------------------------------------------

def test_replay_reproduces_the_lock_table(app: LeanCtx, ws: str) -> None:
    lock(app, ws, "alice", "src/", "docs/a.md", now=T0, lease=60, reason="r1")
    lock(app, ws, "bob", "other/", now=T0 + 1, lease=600)
    lock(app, ws, "alice", "docs/a.md", now=T0 + 2, lease=120)
    do(app, RecoverLock(path="src", reason="gone", workspace=ws), "bob", T0 + 100)
    do(app, UnlockPaths(paths=["docs/a.md"], workspace=ws), "alice", T0 + 101)
    lock(app, ws, "carol", "docs/", now=T0 + 102, lease=5)
    live = app.projections.digest("path_locks")
    report = replay(app, verify=True)
    assert report.ok and report.chain_ok
    mine = next(p for p in report.projections if p.name == "path_locks")
    assert mine.match is True and mine.digest == live
    replay(app)  # in place
    assert app.projections.digest("path_locks") == live
    assert [(lk.path, lk.owner, lk.renewals) for lk in list_locks(conn(app), now=T0 + 200)] == [
        ("docs", "carol", 0), ("other", "bob", 0), ("src", "bob", 0)]


# --- barrier race with real processes ---------------------------------------------------------

RACERS = 8
ROUNDS = 100


def _racer(db: str, ws: str, k: int, barrier: Any, results: Any) -> None:
    from leanctx.app import LeanCtx as App
    from leanctx.commands.locks import LockPaths as Lock
    from leanctx.errors import LeanCtxError as Err

    outcomes = []
    with App(db) as lc:
        for r in range(ROUNDS):
            barrier.wait(timeout=120)
            try:
                lc.bus.dispatch(Lock(paths=[f"round-{r}/file.txt"], workspace=ws), actor=f"racer-{k}")
                outcomes.append("ok")
            except Err as exc:
                outcomes.append(exc.code)
    results.put((k, outcomes))


def test_barrier_race_8_processes_exactly_one_winner_per_round(tmp_path: Path, ws: str) -> None:
    db = str(tmp_path / "race.db")
    LeanCtx(db).close()  # create the schema once
    mp = multiprocessing.get_context("spawn")
    barrier = mp.Barrier(RACERS)
    results = mp.Queue()
    procs = [mp.Process(target=_racer, args=(db, ws, k, barrier, results)) for k in range(RACERS)]
    for p in procs:
        p.start()
    got = dict(results.get(timeout=240) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert sorted(got) == list(range(RACERS))
    winners: dict[int, str] = {}
    for r in range(ROUNDS):
        codes = [got[k][r] for k in range(RACERS)]
        assert codes.count("ok") == 1, (r, codes)
        assert codes.count("PATH_LOCK_CONFLICT") == RACERS - 1, (r, codes)
        winners[r] = f"racer-{codes.index('ok')}"
    with LeanCtx(db) as lc:
        acquired = list(lc.store.iter_all(0, TopicFilter(kinds=("lock.acquired",))))
        assert len(acquired) == ROUNDS
        by_stream = {e.stream: (e.version, e.actor) for e in acquired}
        assert by_stream == {f"lock:round-{r}/file.txt": (1, winners[r]) for r in range(ROUNDS)}
        held = active_locks(lc.projections.reader("path_locks"), now=clock.now())
        assert {lk.path: lk.owner for lk in held} == {f"round-{r}/file.txt": winners[r] for r in range(ROUNDS)}
        assert lc.store.verify().ok
        assert len(set(winners.values())) > 1  # a real race, not one process running ahead


# --- CLI, through the real console script -----------------------------------------------------

def run(db: Path | None, *args: str, agent: str | None = None, cwd: str | Path | None = None, check: bool = True,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``lean-ctx ARGS`` with ``$LEAN_CTX_DB=db`` (none when ``db`` is None) and ``$LEAN_CTX_AGENT_ID=agent``."""
    full = {**os.environ, **(env or {})}
    full.pop("LEAN_CTX_DB", None)
    if db is not None:
        full["LEAN_CTX_DB"] = str(db)
    full.pop("LEAN_CTX_AGENT_ID", None)
    if agent is not None:
        full["LEAN_CTX_AGENT_ID"] = agent
    p = subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, env=full, cwd=cwd, timeout=60,
                       check=False)
    if check and p.returncode != 0:
        raise AssertionError(f"lean-ctx {' '.join(args)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def test_cli_lock_check_unlock_recover(tmp_path: Path, ws: str) -> None:
    db = tmp_path / "cli.db"
    out = json.loads(run(db, "chat", "lock", "src/a.py", "docs/", "--workspace", ws, "--ttl", "600",
                         "--reason", "refactor", "--json", agent="bob").stdout)
    assert [g["display"] for g in out["locks"]] == ["src/a.py", "docs/"] and out["owner"] == "bob"
    p = run(db, "chat", "lock", "src/", "--workspace", ws, agent="alice", check=False)
    assert p.returncode == 2
    assert p.stderr.startswith("error[PATH_LOCK_CONFLICT]: src/ is locked by bob (lock on src/a.py)")
    assert "expires at" in p.stderr and "Traceback" not in p.stderr
    p = run(db, "chat", "lock", "src/a.py", "--workspace", ws, "--json", agent="alice", check=False)
    assert p.returncode == 2 and json.loads(p.stdout)["error"]["code"] == "PATH_LOCK_CONFLICT"
    # check reports and exits 0
    rep = json.loads(run(db, "chat", "check", "src", "README", "--workspace", ws, "--json", agent="alice").stdout)
    assert [(r["display"], r["locked"], r["free"]) for r in rep] == [("src/", True, False), ("README", False, True)]
    assert rep[0]["locks"][0]["owner"] == "bob"
    human = run(db, "chat", "check", "src/a.py", "--workspace", ws, agent="alice").stdout
    assert "src/a.py: locked" in human and "by bob" in human and "refactor" in human
    for bad, code in (("../x", "PATH_LOCK_PATH_OUTSIDE_WORKSPACE"), ("a\nb", "PATH_LOCK_INVALID_PATH")):
        p = run(db, "chat", "check", bad, "--workspace", ws, check=False)
        assert p.returncode == 2 and p.stderr.startswith(f"error[{code}]:"), p.stderr
    p = run(db, "chat", "lock", "z", "--workspace", ws, "--lease", "-5", agent="alice", check=False)
    assert p.returncode == 2 and "PATH_LOCK_INVALID_DURATION" in p.stderr, p.stderr
    p = run(db, "chat", "unlock", "src/a.py", "--workspace", ws, agent="alice", check=False)
    assert p.returncode == 2 and p.stderr.startswith("error[PATH_LOCK_OWNER_MISMATCH]:")
    p = run(db, "chat", "recover", "src/a.py", "--workspace", ws, "--reason", "why", "--as", "alice", check=False)
    assert p.returncode == 2 and p.stderr.startswith("error[PATH_LOCK_NOT_STALE]:")
    p = run(db, "chat", "recover", "src/a.py", "--workspace", ws, agent="alice", check=False)
    assert p.returncode == 2 and "--reason" in p.stderr  # a usage error, not a traceback
    listed = json.loads(run(db, "chat", "locks", "--workspace", ws, "--json").stdout)
    assert [lk["display"] for lk in listed] == ["docs/", "src/a.py"]
    assert "unlocked src/a.py" in run(db, "chat", "unlock", "src/a.py", "docs/", "--workspace", ws,
                                       agent="bob").stdout
    # --as acts as that agent; the workspace defaults to the project root (the git root above cwd)
    (Path(ws) / ".git").mkdir()
    out = json.loads(run(db, "chat", "lock", "src/a.py", "--as", "carol", "--json", cwd=Path(ws) / "src").stdout)
    assert out["owner"] == "carol" and out["workspace"] == os.path.realpath(ws)
    listed = json.loads(run(db, "chat", "locks", "--workspace", ws, "--json").stdout)
    assert [(lk["display"], lk["owner"]) for lk in listed] == [("src/a.py", "carol")]


def test_every_lock_verb_has_help() -> None:
    from typer.testing import CliRunner

    from leanctx.api.cli.app import app as cli

    runner = CliRunner()
    for args in (["chat", "lock"], ["chat", "check"], ["chat", "unlock"], ["chat", "recover"], ["chat", "locks"],
                 ["hooks", "install-git"], ["hooks", "pre-commit"]):
        res = runner.invoke(cli, [*args, "--help"])
        assert res.exit_code == 0 and "Usage" in res.output and len(res.output) > 200, args


# --- git pre-commit hook, end to end ---------------------------------------------------------

def git(repo: Path, *args: str, agent: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "LEAN_CTX_"))}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(repo.parent / "gitconfig"))
    if agent is not None:
        env["LEAN_CTX_AGENT_ID"] = agent
    p = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, env=env, timeout=120,
                       check=False)
    if check and p.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    r = tmp_path / "repo"
    r.mkdir()
    (tmp_path / "gitconfig").write_text("")
    git(r, "init", "-q")
    git(r, "config", "user.name", "Test")
    git(r, "config", "user.email", "test@example.com")
    git(r, "config", "commit.gpgsign", "false")
    (r / "src").mkdir()
    (r / "src" / "a.py").write_text("a\n")
    (r / "src" / "b.py").write_text("b\n")
    (r / "docs").mkdir()
    return r


def test_git_hook_refuses_commits_of_paths_locked_by_another_agent(tmp_path: Path, repo: Path) -> None:
    db = tmp_path / "hook.db"
    out = json.loads(run(db, "hooks", "install-git", "--repo", str(repo), "--json").stdout)
    hook = repo / ".git" / "hooks" / "pre-commit"
    assert out["hook"] == str(hook) and out["db"] == str(db.resolve())
    assert hook.stat().st_mode & stat.S_IXUSR
    text = hook.read_text()
    assert str(db.resolve()) in text and os.path.isabs(out["lean_ctx"][0]) and out["lean_ctx"][0] in text
    # agent-b locks src/a.py through the CLI, from inside the repo (workspace = the git root)
    run(db, "chat", "lock", "src/a.py", "--reason", "rewriting", agent="agent-b", cwd=repo / "src")
    # agent-a's commit of that file fails, naming path, holder and expiry; git runs without LEAN_CTX_DB:
    # the hook finds the database it was installed for
    git(repo, "add", "src/a.py")
    p = git(repo, "commit", "-m", "touch a", agent="agent-a", check=False)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "error[PATH_LOCK_CONFLICT]" in p.stderr and "src/a.py is locked by agent-b" in p.stderr
    assert "expires at" in p.stderr and "you are agent-a" in p.stderr
    assert git(repo, "rev-list", "--all").stdout == ""  # nothing was committed
    # another file passes
    git(repo, "rm", "-q", "--cached", "src/a.py")  # (no HEAD yet for `git restore --staged`)
    git(repo, "add", "src/b.py")
    git(repo, "commit", "-q", "-m", "b", agent="agent-a")
    # the owner may commit the file it locked
    git(repo, "add", "src/a.py")
    git(repo, "commit", "-q", "-m", "a by b", agent="agent-b")
    # a directory lock covers files under it; a rename away from a locked path counts too
    run(db, "chat", "lock", "docs/", "--workspace", str(repo), agent="agent-b")
    (repo / "docs" / "new.md").write_text("n\n")
    git(repo, "add", "docs/new.md")
    p = git(repo, "commit", "-m", "docs", agent="agent-a", check=False)
    assert p.returncode == 1 and "docs/new.md is locked by agent-b (lock on docs/)" in p.stderr
    git(repo, "restore", "--staged", "docs/new.md")
    git(repo, "mv", "src/a.py", "src/c.py")
    p = git(repo, "commit", "-m", "rename", agent="agent-a", check=False)
    assert p.returncode == 1 and "src/a.py is locked by agent-b" in p.stderr
    # after unlock the commit passes
    run(db, "chat", "unlock", "src/a.py", "docs", "--workspace", str(repo), agent="agent-b")
    git(repo, "commit", "-q", "-m", "rename", agent="agent-a")
    git(repo, "add", "docs/new.md")
    git(repo, "commit", "-q", "-m", "docs", agent="agent-a")
    assert len(git(repo, "rev-list", "--all").stdout.split()) == 4


def test_git_hook_install_respects_foreign_hooks(tmp_path: Path, repo: Path) -> None:
    db = tmp_path / "hook.db"
    hooks = repo / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "pre-commit").write_text("#!/bin/sh\necho mine\n")
    p = run(db, "hooks", "install-git", "--repo", str(repo), check=False)
    assert p.returncode == 2 and p.stderr.startswith("error[HOOK_ALREADY_EXISTS]:") and "--force" in p.stderr
    assert (hooks / "pre-commit").read_text() == "#!/bin/sh\necho mine\n"
    run(db, "hooks", "install-git", "--repo", str(repo), "--force")
    assert (hooks / "pre-commit.before-lean-ctx").read_text() == "#!/bin/sh\necho mine\n"
    assert "lean-ctx-hook" in (hooks / "pre-commit").read_text()
    out = json.loads(run(db, "hooks", "install-git", "--json", cwd=repo / "src").stdout)  # ours: replaced quietly
    assert out["replaced"] is True and out["backup"] is None
    # without --db / $LEAN_CTX_DB the hook bakes the project's own database: the one the chat verbs use there
    home = {"LEAN_CTX_HOME": str(tmp_path / "home")}
    out = json.loads(run(None, "hooks", "install-git", "--json", cwd=repo, env=home).stdout)
    info = json.loads(run(None, "db", "info", "--json", cwd=repo / "src", env=home).stdout)
    assert out["db"] == info["path"] and out["db"].startswith(str(tmp_path / "home"))
    assert f"--db {out['db']} hooks pre-commit" in (hooks / "pre-commit").read_text()
    p = run(db, "hooks", "install-git", "--repo", str(tmp_path / "nowhere"), check=False)
    assert p.returncode == 2 and "HOOK_NOT_A_GIT_REPO" in p.stderr
    (tmp_path / "plain").mkdir()
    p = run(db, "hooks", "install-git", "--repo", str(tmp_path / "plain"), check=False,
            env={"GIT_CEILING_DIRECTORIES": str(tmp_path)})
    assert p.returncode == 2 and "HOOK_NOT_A_GIT_REPO" in p.stderr


def test_conflict_message_helper_for_an_expired_lock(app: LeanCtx, ws: str) -> None:
    lock(app, ws, "alice", "src/", now=T0, lease=60)
    lk = list_locks(conn(app), now=T0 + 3600)[0]
    msg = conflict_message("src/a.py", lk)
    assert msg.startswith("src/a.py is locked by alice (lock on src/), whose lease expired at")
    assert "lean-ctx chat recover src/" in msg
