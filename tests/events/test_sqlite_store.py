"""The SQLite backend: the conformance suite (catch-up and inline FTS) plus SQLite specifics."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import apsw
import pytest

from leanctx.errors import InvalidInput, LeanCtxError, StoreError
from leanctx.events import NewEvent, SqliteEventStore, open_store
from leanctx.events.kinds import AgentHeartbeat

from .conformance import EventStoreConformance, hb, note


def _raw(path: Path) -> apsw.Connection:
    conn = apsw.Connection(str(path))
    conn.set_busy_timeout(5000)
    return conn


class TestSqliteEventStore(EventStoreConformance):
    fts_mode = "catchup"

    def make_store(self, path: Path) -> SqliteEventStore:
        return SqliteEventStore(path, fts_mode=self.fts_mode)

    def tamper(self, path: Path, position: int) -> Path:
        copy = path.with_name(f"{path.stem}-tampered-{position}.db")
        src = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
        dst = apsw.Connection(str(copy))
        with dst.backup("main", src, "main") as b:
            b.step()
        src.close()
        dst.execute("DROP TRIGGER events_no_update")
        payload = dst.execute("SELECT payload FROM events WHERE position = ?", (position,)).fetchone()[0]
        data = json.loads(payload)
        data["agent_id"] = str(data.get("agent_id", "")) + "-forged"
        dst.execute("UPDATE events SET payload = ? WHERE position = ?", (json.dumps(data).encode(), position))
        dst.close()
        return copy

    def raw_mutate(self, path: Path, op: str, position: int) -> None:
        conn = _raw(path)
        try:
            if op == "update":
                conn.execute("UPDATE events SET payload = ? WHERE position = ?", (b'{"kind":"x"}', position))
            elif op == "delete":
                conn.execute("DELETE FROM events WHERE position = ?", (position,))
            else:  # pragma: no cover
                raise ValueError(op)
        finally:
            conn.close()

    def test_reopen_keeps_the_log(self, path: Path) -> None:
        with SqliteEventStore(path, fts_mode=self.fts_mode) as s:
            s.append("s", [hb("a"), note("persisted walrus")])
            head = s.head()
        with SqliteEventStore(path, fts_mode=self.fts_mode) as s:
            assert s.head() == head
            assert s.verify().ok
            assert [h.event.position for h in s.search("walrus")] == [2]
            assert s.append("s", [hb("b")]).positions == [3]

    def test_fts_index_is_a_catch_up_index(self, store: SqliteEventStore) -> None:
        store.append("s", [note("one walrus"), note("two walrus")])
        expected_before = 2 if self.fts_mode == "inline" else 0
        assert store.fts_position() == expected_before
        store.search("walrus")
        assert store.fts_position() == 2
        assert store.index_fts() == 0  # nothing left

    def test_index_fts_reports_progress(self, store: SqliteEventStore) -> None:
        for i in range(7):
            store.append("s", [note(f"n{i}")])
        calls: list[tuple[int, int]] = []
        indexed = store.index_fts(progress=lambda d, t: calls.append((d, t)))
        if self.fts_mode == "inline":  # indexed while appending: nothing left to do
            assert (indexed, calls) == (0, [])
        else:
            assert indexed == 7
            assert calls[-1] == (7, 7)
        assert store.fts_position() == 7


class TestSqliteEventStoreInlineFts(TestSqliteEventStore):
    """The same suite with the FTS index maintained inside the appending transaction."""

    fts_mode = "inline"

    def test_inline_index_is_current_without_searching(self, store: SqliteEventStore) -> None:
        store.append("s", [NewEvent(event=AgentHeartbeat(agent_id="inline-1"))])
        assert store.fts_position() == store.head().position == 1


# ==========================================================================================
# SQLite specifics (independent of the FTS mode)
# ==========================================================================================


@pytest.fixture

def path(tmp_path: Path) -> Path:
    return tmp_path / "events.db"


@pytest.fixture

def store(path: Path) -> Any:
    s = SqliteEventStore(path)
    yield s
    s.close()


def test_wal_mode_is_on(store: SqliteEventStore, path: Path) -> None:
    store.append("s", [hb("a")])
    conn = _raw(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal"
    finally:
        conn.close()
    assert Path(f"{path}-wal").exists()


def test_immutability_covers_every_column(store: SqliteEventStore, path: Path) -> None:
    store.append("s", [hb("a")])
    conn = _raw(path)
    try:
        for col, value in (("actor", "mallory"), ("hash", "0" * 64), ("position", 9)):
            with pytest.raises(apsw.ConstraintError, match="EVENT_IMMUTABLE"):
                conn.execute(f"UPDATE events SET {col} = ? WHERE position = 1", (value,))
        with pytest.raises(apsw.ConstraintError, match="EVENT_IMMUTABLE"):
            conn.execute("DELETE FROM events")
    finally:
        conn.close()
    assert store.verify().ok


def test_readers_are_read_only(store: SqliteEventStore) -> None:
    store.append("s", [hb("a")])
    with pytest.raises(apsw.ReadOnlyError):
        store.read_connection().execute("INSERT INTO events_fts_state (id, position) VALUES (2, 0)")


@pytest.mark.parametrize(("option", "expected"), [("NORMAL", 1), ("FULL", 2), ("full", 2), ("EXTRA", 3)])

def test_synchronous_option(path: Path, option: str, expected: int) -> None:
    s = SqliteEventStore(path, synchronous=option, fts_mode="catchup")
    try:
        assert s.synchronous == option.upper()
        assert s._writer.execute("PRAGMA synchronous").fetchone()[0] == expected
        assert s.read_connection().execute("PRAGMA synchronous").fetchone()[0] == expected
        s.append("s", [hb("a"), hb("b")])
        assert s.verify().ok and s.count() == 2
    finally:
        s.close()


def test_default_synchronous_is_normal(store: SqliteEventStore) -> None:
    assert store._writer.execute("PRAGMA synchronous").fetchone()[0] == 1


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"synchronous": "SOMETIMES"}, "STORE_INVALID_SYNCHRONOUS"),
        ({"synchronous": ""}, "STORE_INVALID_SYNCHRONOUS"),
        ({"fts_mode": "lazy"}, "STORE_INVALID_FTS_MODE"),
        ({"fts_mode": "INLINE"}, "STORE_INVALID_FTS_MODE"),
    ],
)

def test_invalid_options_have_stable_codes(path: Path, kwargs: dict[str, Any], code: str) -> None:
    with pytest.raises(InvalidInput) as ei:
        SqliteEventStore(path, **kwargs)
    assert ei.value.code == code
    assert ei.value.message and ei.value.message != code
    assert not path.exists()  # nothing was created


@pytest.mark.parametrize("bad", [":memory:", "", "file:events.db", "file:events.db?mode=memory"])

def test_invalid_paths(bad: str) -> None:
    with pytest.raises(InvalidInput) as ei:
        SqliteEventStore(bad)
    assert ei.value.code == "STORE_INVALID_PATH"


def test_a_directory_is_not_a_store(tmp_path: Path) -> None:
    with pytest.raises(StoreError) as ei:
        SqliteEventStore(tmp_path)
    assert ei.value.code == "STORE_OPEN_FAILED"


def test_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    p = tmp_path / "notes.txt"
    p.write_text("this is not a database\n" * 100)
    with pytest.raises(StoreError) as ei:
        SqliteEventStore(p)
    assert ei.value.code == "STORE_OPEN_FAILED"
    assert p.read_text().startswith("this is not a database")


def test_a_path_under_a_regular_file(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    with pytest.raises(StoreError) as ei:
        SqliteEventStore(blocker / "events.db")
    assert ei.value.code == "STORE_OPEN_FAILED"


def test_parent_directories_are_created(tmp_path: Path) -> None:
    p = tmp_path / "a" / "b" / "events.db"
    with open_store(str(p)) as s:
        s.append("s", [hb("a")])
    assert p.exists()


def test_closed_store_refuses_writes_and_reads_with_a_code(path: Path) -> None:
    s = SqliteEventStore(path, fts_mode="catchup")
    s.append("s", [hb("a")])
    assert s.head().position == 1  # this thread now has a reader
    s.close()
    s.close()  # idempotent
    with pytest.raises(StoreError) as e1:
        s.append("s", [hb("b")])
    assert e1.value.code == "STORE_CLOSED"
    with pytest.raises(LeanCtxError) as e2:
        s.head()
    assert e2.value.code == "STORE_CLOSED"


def test_nested_transactions_join(store: SqliteEventStore) -> None:
    with store.transaction() as outer:
        outer.append("s", [hb("a")])
        r = store.append("s", [hb("b")])  # same thread: joins the outer transaction
        assert r.positions == [2]
        with store.transaction() as inner:
            assert inner is outer
    assert store.count() == 2


def test_mixed_fts_modes_on_one_file_index_everything(path: Path) -> None:
    """One process opens the file with catch-up FTS, another with inline FTS: every
    event must stay searchable from both."""
    catchup = SqliteEventStore(path, fts_mode="catchup")
    inline = SqliteEventStore(path, fts_mode="inline")
    try:
        catchup.append("s", [note("zebra crossing")])
        inline.append("s", [note("yak shaving")])
        catchup.append("s", [note("zebra again")])
        for s in (catchup, inline):
            assert sorted(h.event.position for h in s.search("zebra")) == [1, 3]
            assert [h.event.position for h in s.search("yak")] == [2]
    finally:
        catchup.close()
        inline.close()




def test_in_process_appends_wake_waiters_without_polling(path: Path) -> None:
    """With a poll interval far longer than the bound, only the in-process condition can
    wake the waiter in time."""
    s = SqliteEventStore(path, poll_interval=5.0)
    try:
        marks: dict[str, float] = {}

        def later() -> None:
            time.sleep(0.15)
            marks["t"] = time.monotonic()
            s.append("s", [hb("woken")])

        th = threading.Thread(target=later)
        th.start()
        got = s.wait(0, timeout=10)
        t_wake = time.monotonic()
        th.join()
        assert [e.position for e in got] == [1]
        assert t_wake - marks["t"] < 0.1
    finally:
        s.close()
