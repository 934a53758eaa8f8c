"""Two lean-ctx versions on one log: a projection is owned by the newest code that opened it.

The other version runs in a real subprocess whose code has one projection's ``version`` moved
(+1: a newer lean-ctx, -1: an older one); this test process is the current code. A process whose
projection version differs from the stored one never decides on it: when the stored one is
newer it refuses (``PROJECTION_VERSION_CHANGED``) and writes nothing into it; when it is older
(or missing) it rebuilds it first. A read-only log rebuilds into its throwaway copies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import apsw
import pytest

from leanctx.app import LeanCtx
from leanctx.commands.chat import PostMessage
from leanctx.commands.task_commands import ClaimTask, CreateTask
from leanctx.errors import LeanCtxError
from leanctx.projections.ledger import Ledger
from leanctx.projections.tasks import Tasks, get_task

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
REPO = Path(__file__).resolve().parents[2]
V = Tasks.version

# the other version: moves one projection's version by BUMP, opens the log, runs STEPS
# (("create"|"claim", actor, task_id) or ("read", name)), prints one JSON line per step
OTHER = textwrap.dedent("""
    import importlib, json, sys
    db, module, cls, bump, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), json.loads(sys.argv[5])
    p = getattr(importlib.import_module("leanctx.projections." + module), cls)
    p.version += bump
    from leanctx.app import LeanCtx
    from leanctx.commands.task_commands import ClaimTask, CreateTask
    from leanctx.errors import LeanCtxError
    with LeanCtx(db) as lc:
        for step in steps:
            try:
                if step[0] == "create":
                    lc.bus.dispatch(CreateTask(title="x", task_id=step[2]), actor=step[1])
                elif step[0] == "claim":
                    lc.bus.dispatch(ClaimTask(task_id=step[2]), actor=step[1])
                elif step[0] == "read":
                    lc.projections.reader(step[1])
                elif step[0] == "rebuild":
                    lc.projections.rebuild(step[1])
                print(json.dumps({"ok": True}))
            except LeanCtxError as exc:
                print(json.dumps({"ok": False, "code": exc.code}))
""")


def other(db: Path, bump: int, *steps: tuple[str, ...], projection: type = Tasks) -> list[dict[str, Any]]:
    """Run ``steps`` in a subprocess whose ``projection`` is at its version + ``bump``."""
    module = projection.__module__.rsplit(".", 1)[1]
    out = subprocess.run(
        [sys.executable, "-c", OTHER, str(db), module, projection.__name__, str(bump), json.dumps(steps)],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)}, check=False,
    )
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def stored(db: Path, name: str) -> tuple[int, int]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        row: Any = conn.execute("SELECT version, position FROM projection_checkpoints WHERE name = ?",
                                (name,)).fetchall()[0]
        return row
    finally:
        conn.close()


def claims(lc: LeanCtx) -> list[str | None]:
    return [e.actor for e in lc.store.read_all() if e.kind == "task.claimed"]


def code_of(fn: Any) -> str:
    with pytest.raises(LeanCtxError) as ei:
        fn()
    return ei.value.code


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "events.db"


def test_a_process_left_behind_by_a_newer_version_refuses_to_decide(db: Path) -> None:
    """The audit's R2: an old serve kept deciding on a frozen tasks table (two owners of t1)."""
    with LeanCtx(db) as old:
        old.bus.dispatch(CreateTask(title="x", task_id="t1"), actor="ann")
        assert other(db, +1) == []  # a newer lean-ctx opens the log: tasks rebuilt at V + 1
        assert stored(db, "tasks")[0] == V + 1
        for who in ("ann", "ben"):
            err = pytest.raises(LeanCtxError, old.bus.dispatch, ClaimTask(task_id="t1"), actor=who).value
            assert err.code == "PROJECTION_VERSION_CHANGED"
        assert code_of(lambda: old.bus.dispatch(CreateTask(title="y", task_id="t2"), actor="ann")) == \
            "PROJECTION_VERSION_CHANGED"
        assert code_of(lambda: old.projections.reader("tasks")) == "PROJECTION_VERSION_CHANGED"
        assert claims(old) == []
        assert stored(db, "tasks")[0] == V + 1  # nothing of the old code was written into it
        # the newer version decides, once
        assert other(db, +1, ("claim", "ben", "t1"), ("claim", "ann", "t1")) == [
            {"ok": True}, {"ok": False, "code": "LEASE_CONFLICT"}]
        assert claims(old) == ["ben"]


def test_an_older_version_opening_later_does_not_take_the_projection_back(db: Path) -> None:
    assert other(db, +1, ("create", "ann", "t1")) == [{"ok": True}]
    before = stored(db, "tasks")
    with LeanCtx(db) as old:  # the current code is the older one here
        assert stored(db, "tasks") == before == (V + 1, before[1])
        err = pytest.raises(LeanCtxError, old.bus.dispatch, ClaimTask(task_id="t1"), actor="ann").value
        assert err.code == "PROJECTION_VERSION_CHANGED"
        assert "newer" in err.message and "lean-ctx replay" in err.message
        assert old.projections.reader("agents") is not None  # projections at its version still read
        # a deliberate downgrade: `lean-ctx replay` rebuilds for this version
        old.projections.rebuild("tasks")
        assert stored(db, "tasks")[0] == V
        old.bus.dispatch(ClaimTask(task_id="t1"), actor="ann")
    # and the newer version takes it back at its next open
    assert other(db, +1, ("claim", "ben", "t1")) == [{"ok": False, "code": "LEASE_CONFLICT"}]
    assert stored(db, "tasks")[0] == V + 1


def test_an_older_process_never_downgrades_an_eventual_projection(db: Path) -> None:
    """No ping-pong: catching up from older code would stamp its version, and every newer
    process would then rebuild the projection at open."""
    with LeanCtx(db) as old:
        old.bus.dispatch(PostMessage(title="m1", body="x"), actor="ann")
        assert other(db, +1, ("read", "ledger"), projection=Ledger) == [{"ok": True}]
        newer = stored(db, "ledger")
        assert newer[0] == Ledger.version + 1
        old.bus.dispatch(PostMessage(title="m2", body="x"), actor="ann")  # ledger is behind now
        assert code_of(lambda: old.projections.reader("ledger")) == "PROJECTION_VERSION_CHANGED"
        assert code_of(lambda: old.projections.ensure_current()) == "PROJECTION_VERSION_CHANGED"
        assert stored(db, "ledger") == newer


def test_a_newer_process_rebuilds_a_projection_an_older_one_took_back(db: Path) -> None:
    with LeanCtx(db) as new:  # the current code is the newer one here
        new.bus.dispatch(CreateTask(title="x", task_id="t1"), actor="ann")
        # an older lean-ctx takes tasks back (`lean-ctx replay` with it) and records a task
        assert other(db, -1, ("rebuild", "tasks"), ("create", "ann", "t2")) == [{"ok": True}, {"ok": True}]
        assert stored(db, "tasks")[0] == V - 1
        # this process decides on the whole log again, at its own version (not on its frozen rows)
        new.bus.dispatch(ClaimTask(task_id="t2"), actor="ben")
        assert stored(db, "tasks") == (V, new.store.head().position)
        view = get_task(new.projections.reader("tasks"), "general", "t2", now=time.time())
        assert view is not None and view.owner == "ben"


def test_a_read_only_log_of_another_version_is_read_from_scratch_copies(db: Path) -> None:
    assert other(db, +1, ("create", "ann", "t1"), ("claim", "ann", "t1")) == [{"ok": True}, {"ok": True}]
    before = stored(db, "tasks")
    raw = db.read_bytes()
    env = {**os.environ, "LEAN_CTX_READ_ONLY": "1"}
    out = subprocess.run([LEAN_CTX, "--db", str(db), "--json", "chat", "task", "list"], capture_output=True,
                         text=True, timeout=60, env=env, check=False)
    assert out.returncode == 0, out.stderr
    assert [(t["task_id"], t["owner"]) for t in json.loads(out.stdout)] == [("t1", "ann")]
    assert stored(db, "tasks") == before and db.read_bytes() == raw  # the file is untouched
