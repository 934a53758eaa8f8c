"""A read does not wait on another writer's lock: projections that catch up before they are read
(the ledger, savings) try the write lock for ``READ_WAIT_MS``; when it stays busy they answer
from their rows as they are and say how far behind the log those are (``stale()``,
``stale_note()``). Before this, ``lean-ctx gain`` or ``agent ledger`` waited the store's whole
busy timeout (30 s) and then failed with ``STORE_BUSY``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from leanctx.app import LeanCtx
from leanctx.commands.chat import PostMessage
from leanctx.projections.runner import READ_WAIT_MS

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))

# holds the log's write lock (BEGIN IMMEDIATE) until its stdin closes
HOLDER = textwrap.dedent("""
    import sys, apsw
    conn = apsw.Connection(sys.argv[1])
    conn.execute("BEGIN IMMEDIATE")
    print("held", flush=True)
    sys.stdin.read()
    conn.execute("ROLLBACK")
""")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A log whose ledger is behind: three posts (each dispatch records a tool.called)."""
    path = tmp_path / "events.db"
    with LeanCtx(path) as lc:
        for j in range(3):
            lc.bus.dispatch(PostMessage(title=f"m{j}", body="x"), actor="a")
    return path


@pytest.fixture
def held(db: Path) -> Iterator[subprocess.Popen[str]]:
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "held"
        yield p
    finally:
        release(p)


def release(p: subprocess.Popen[str]) -> None:
    if p.poll() is None:
        assert p.stdin is not None
        p.stdin.close()
        p.wait(timeout=30)


def cli(db: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {**os.environ, "LEAN_CTX_DB": str(db), "LEAN_CTX_AGENT_ID": "a", "LEAN_CTX_NO_DAEMON": "1"}
    t0 = time.perf_counter()
    p = subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, env=env, timeout=120, check=False)
    return p, time.perf_counter() - t0


def behind(lc: LeanCtx, name: str) -> int:
    cp = next(c for c in lc.projections.checkpoints() if c["name"] == name)
    return int(lc.store.head().position - cp["position"])


@pytest.mark.parametrize("verb", [("gain",), ("agent", "ledger")])
def test_cli_reads_answer_while_another_process_holds_the_lock(db: Path, held: subprocess.Popen[str],
                                                               verb: tuple[str, ...]) -> None:
    p, secs = cli(db, "--json", *verb)
    assert p.returncode == 0, p.stdout + p.stderr
    assert secs < 10, secs  # was 30 s, then STORE_BUSY
    json.loads(p.stdout)  # stdout stays the answer
    assert "note: answered from projections behind the log" in p.stderr, p.stderr  # and says it is stale


def test_a_stale_answer_says_how_far_behind_it_is(db: Path, held: subprocess.Popen[str]) -> None:
    with LeanCtx(db) as lc:
        n = behind(lc, "ledger")
        assert n > 0
        t0 = time.perf_counter()
        conn = lc.projections.reader("ledger")
        assert time.perf_counter() - t0 < 5
        assert conn.execute("SELECT count(*) FROM ledger").fetchall()[0][0] == 0  # the rows as they are
        assert lc.projections.stale() == {"ledger": n}
        note = lc.projections.stale_note()
        assert note is not None and "ledger" in note and f"{n} event" in note
        release(held)
        lc.projections.reader("ledger")  # the lock is free: it catches up
        assert lc.projections.stale() == {} and lc.projections.stale_note() is None
        assert behind(lc, "ledger") == 0


def test_another_thread_of_the_same_process_holding_a_transaction(db: Path) -> None:
    """The store's own lock (a long transaction on another thread of a server) is waited on for
    no longer than the database's."""
    with LeanCtx(db) as lc:
        inside, done = threading.Event(), threading.Event()

        def hold() -> None:
            with lc.store.transaction():
                inside.set()
                done.wait(30)

        t = threading.Thread(target=hold)
        t.start()
        try:
            assert inside.wait(10)
            t0 = time.perf_counter()
            lc.projections.reader("ledger")
            assert time.perf_counter() - t0 < READ_WAIT_MS / 1000 + 2
            assert set(lc.projections.stale()) == {"ledger"}
        finally:
            done.set()
            t.join()


def test_a_digest_still_waits_for_the_lock(db: Path, held: subprocess.Popen[str]) -> None:
    """What must be current (digests compared by replay) waits as before."""
    threading.Timer(1.0, release, (held,)).start()
    with LeanCtx(db) as lc:
        t0 = time.perf_counter()
        lc.projections.digest("ledger")
        assert time.perf_counter() - t0 >= 0.9
        assert behind(lc, "ledger") == 0 and lc.projections.stale() == {}
