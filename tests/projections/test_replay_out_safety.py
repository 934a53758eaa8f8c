"""``replay --verify --out PATH`` never destroys anything: not the event log (nor its -wal/-shm,
nor a link or relative path to them), not any other existing file; only a database an earlier
replay made is replaced, and only once the new one is complete."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from leanctx.app import LeanCtx
from leanctx.commands.chat import PostMessage
from leanctx.errors import LeanCtxError
from leanctx.projections import AgentRegistry
from leanctx.projections.fresh import REPLAY_APPLICATION_ID, build_fresh
from tools.replay import replay

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.fixture()
def lc(tmp_path: Path) -> Iterator[LeanCtx]:
    app = LeanCtx(tmp_path / "events.db")
    for i in range(3):
        app.bus.dispatch(PostMessage(title=f"m{i}", body="hello"), actor="alice")
    yield app
    app.close()


def code_of(fn: Any) -> str:
    with pytest.raises(LeanCtxError) as ei:
        fn()
    return ei.value.code


def log_intact(lc: LeanCtx, head: int) -> None:
    res = lc.store.verify()
    assert res.ok and res.checked == head and lc.store.head().position == head


def app_id(path: Path) -> int:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        value = conn.execute("PRAGMA application_id").fetchall()[0][0]
        assert isinstance(value, int)
        return value
    finally:
        conn.close()


def test_the_live_log_and_every_name_for_it_are_refused(lc: LeanCtx, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    db = Path(lc.store.path)
    head = lc.store.head().position
    assert head > 0 and Path(f"{db}-wal").exists() and Path(f"{db}-shm").exists()
    (tmp_path / "link.db").symlink_to(db)
    os.link(db, tmp_path / "hard.db")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    names = [str(db), f"{db}-wal", f"{db}-shm", f"{db}-journal", str(tmp_path / "link.db"),
             str(tmp_path / "hard.db"), "../events.db", "../sub/../events.db-wal"]
    for out in names:
        assert code_of(lambda o=out: replay(lc, verify=True, out=o)) == "REPLAY_OUT_IS_LOG", out
        log_intact(lc, head)
    assert not Path(f"{db}-journal").exists()
    assert (tmp_path / "link.db").is_symlink()
    # build_fresh itself refuses, whoever calls it and without being told where the live log is
    # (its own file may not show the log's tables yet, while they are only in the -wal: then it
    # is refused as a file no replay made)
    for out in (str(db), str(tmp_path / "hard.db"), f"{db}-wal"):
        code = code_of(lambda o=out: build_fresh(o, iter(()), [AgentRegistry()]))
        assert code in ("REPLAY_OUT_IS_LOG", "REPLAY_OUT_EXISTS"), out
    log_intact(lc, head)
    assert replay(lc, verify=True).ok


def test_another_event_log_is_refused(lc: LeanCtx, tmp_path: Path) -> None:
    other = LeanCtx(tmp_path / "other.db")
    other.bus.dispatch(PostMessage(title="x", body="y"), actor="bob")
    other_head = other.store.head().position
    other.close()
    assert code_of(lambda: replay(lc, verify=True, out=str(tmp_path / "other.db"))) == "REPLAY_OUT_IS_LOG"
    with LeanCtx(tmp_path / "other.db") as again:
        log_intact(again, other_head)


@pytest.mark.parametrize("content", ["readme", "sqlite", "binary"])
def test_an_existing_file_that_no_replay_made_is_left_alone(lc: LeanCtx, tmp_path: Path, content: str) -> None:
    out = tmp_path / "keep.me"
    if content == "readme":
        shutil.copy(README, out)
    elif content == "sqlite":  # somebody's database, not a replay output
        conn = apsw.Connection(str(out))
        conn.execute("CREATE TABLE precious (x); INSERT INTO precious VALUES (42)")
        conn.close()
    else:
        out.write_bytes(os.urandom(4096))
    before = out.read_bytes()
    err = pytest.raises(LeanCtxError, replay, lc, verify=True, out=str(out)).value
    assert err.code == "REPLAY_OUT_EXISTS" and str(out) in err.message
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events.db", "events.db-shm", "events.db-wal", "keep.me"]


def test_a_directory_or_a_special_file_is_refused(lc: LeanCtx, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    assert code_of(lambda: replay(lc, verify=True, out=str(tmp_path / "d"))) == "REPLAY_OUT_EXISTS"
    assert (tmp_path / "d").is_dir()
    os.mkfifo(tmp_path / "pipe")  # size 0 like an empty file, but no file to replace (nor is /dev/null)
    assert code_of(lambda: replay(lc, verify=True, out=str(tmp_path / "pipe"))) == "REPLAY_OUT_EXISTS"
    assert replay(lc, verify=True, out=str(tmp_path / "pipe-wal")).ok  # looking at "pipe" does not block
    assert (tmp_path / "pipe").is_fifo()


def test_a_replay_output_is_marked_and_replaced_by_the_next_replay(lc: LeanCtx, tmp_path: Path) -> None:
    out = tmp_path / "fresh.db"
    first = replay(lc, verify=True, out=str(out))
    assert first.ok and out.exists() and app_id(out) == REPLAY_APPLICATION_ID
    lc.bus.dispatch(PostMessage(title="later", body="more"), actor="alice")
    second = replay(lc, verify=True, out=str(out))
    assert second.ok and second.head_position > first.head_position
    assert app_id(out) == REPLAY_APPLICATION_ID
    conn = apsw.Connection(str(out), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        titles = {r[0] for r in conn.execute("SELECT title FROM channel_messages")}
    finally:
        conn.close()
    assert "later" in titles  # the new build, not the old file
    # an empty file (``mktemp``) holds nothing to lose: it is used
    empty = tmp_path / "empty.db"
    empty.touch()
    assert replay(lc, verify=True, out=str(empty)).ok and app_id(empty) == REPLAY_APPLICATION_ID
    assert not [p for p in tmp_path.iterdir() if "tmp" in p.name]


def test_a_failed_build_leaves_the_earlier_output_whole(lc: LeanCtx, tmp_path: Path) -> None:
    out = tmp_path / "fresh.db"
    replay(lc, verify=True, out=str(out))
    before = out.read_bytes()

    class Boom(AgentRegistry):
        def create(self, conn: Any, *args: Any, **kwargs: Any) -> None:
            raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError):
        build_fresh(out, iter(()), [Boom()])
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events.db", "events.db-shm", "events.db-wal", "fresh.db"]


def test_cli_refuses_the_live_log_and_keeps_it(tmp_path: Path) -> None:
    db = tmp_path / "events.db"
    env = {**os.environ, "LEAN_CTX_DB": str(db), "LEAN_CTX_AGENT_ID": "a"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, env=env, timeout=60, check=False)

    assert run("chat", "post", "--to", "all", "--title", "hi", "--body", "there").returncode == 0
    before = run("events", "verify")
    assert before.returncode == 0 and "ok: 2 events" in before.stdout
    p = run("replay", "--verify", "--out", str(db))
    assert p.returncode == 2 and "REPLAY_OUT_IS_LOG" in p.stderr and "Traceback" not in p.stderr
    p = run("--json", "replay", "--verify", "--out", f"{db}-wal")
    assert p.returncode == 2 and '"REPLAY_OUT_IS_LOG"' in p.stdout + p.stderr
    after = run("events", "verify")
    assert after.returncode == 0 and after.stdout == before.stdout
