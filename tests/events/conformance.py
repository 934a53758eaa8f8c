"""The event store conformance suite.

Every backend subclasses ``EventStoreConformance`` (a plain base class: pytest only
collects the ``Test*`` subclasses) and implements:

- ``make_store(path)``: open (creating if needed) a store at ``path``;
- ``tamper(path, position)``: behind the store's back, change the stored payload of the
  event at ``position`` in a *copy* of the store at ``path`` and return the copy's path;
- ``raw_mutate(path, op, position)``: try to ``"update"`` or ``"delete"`` the event at
  ``position`` through a raw backend connection (must raise: the log is immutable).

Modelled on pyeventsourcing's recorder test cases: one contract, every backend runs it.
"""

from __future__ import annotations

import abc
import contextlib
import gc
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import msgspec
import pytest

from leanctx.errors import ConcurrencyError, InvalidInput, LeanCtxError, NotFound
from leanctx.events import (
    ANY,
    GENESIS_HASH,
    NO_STREAM,
    EventStore,
    Head,
    NewEvent,
    SearchHit,
    StoredEvent,
    TopicFilter,
    codec,
)
from leanctx.events.kinds import (
    AgentDeregistered,
    AgentHeartbeat,
    AgentRegistered,
    ToolCalled,
    base,
    registry,
)
from leanctx.events.upcast import unregister, upcaster

# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


def hb(agent_id: str, status: str | None = None, **envelope: Any) -> NewEvent:
    """A heartbeat (its ``agent_id`` and ``status`` are searchable text)."""
    return NewEvent(event=AgentHeartbeat(agent_id=agent_id, status=status), **envelope)


def note(text: str, agent_id: str = "n", **envelope: Any) -> NewEvent:
    """An event whose body is ``text`` (a deregistration reason)."""
    return NewEvent(event=AgentDeregistered(agent_id=agent_id, reason=text), **envelope)


def reg(agent_id: str, **envelope: Any) -> NewEvent:
    return NewEvent(
        event=AgentRegistered(agent_id=agent_id, name=f"n-{agent_id}", agent_type="cursor", role="dev",
                              project_root="/p"),
        **envelope,
    )


def call(command: str, **envelope: Any) -> NewEvent:
    return NewEvent(event=ToolCalled(command=command, outcome="ok", duration_ms=1.5), **envelope)


_RAW_KINDS: dict[tuple[str, int], type] = {}


def raw_kind(tag: str, schema_version: int = 1) -> type:
    """A Struct that encodes like an event of ``tag`` but is *not* an ``Event`` subclass, so it
    never enters the kind registry (for kinds the code does not know, or old shapes)."""
    key = (tag, schema_version)
    if key not in _RAW_KINDS:
        _RAW_KINDS[key] = msgspec.defstruct(
            f"Raw_{tag.replace('.', '_')}_v{schema_version}",
            [("body", str, "")],
            tag_field="kind",
            tag=tag,
            frozen=True,
            kw_only=True,
            namespace={"schema_version": schema_version, "kind": property(lambda self, _t=tag: _t)},
        )
    return _RAW_KINDS[key]


def raw(tag: str, body: str = "", schema_version: int = 1, **envelope: Any) -> NewEvent:
    return NewEvent(event=raw_kind(tag, schema_version)(body=body), **envelope)


class _UpcastV1(msgspec.Struct, tag_field="kind", tag="test.upcast", frozen=True, kw_only=True):
    """``test.upcast`` as it was written at schema_version 1 (not a registered kind)."""

    schema_version: ClassVar[int] = 1
    title: str

    @property
    def kind(self) -> str:
        return "test.upcast"


class _UpcastV3(msgspec.Struct, tag_field="kind", tag="test.upcast", frozen=True, kw_only=True):
    """``test.upcast`` written by newer code (schema_version 3)."""

    schema_version: ClassVar[int] = 3
    summary: str
    priority: int
    labels: list[str]

    @property
    def kind(self) -> str:
        return "test.upcast"


@contextlib.contextmanager
def temporary_upcast_kind(with_upcaster: bool = True) -> Iterator[type]:
    """Define the ``test.upcast`` Event kind at schema_version 2 (and, optionally, its v1→v2
    upcaster) for the duration of the block, then remove both from the registries."""

    def lift(data: dict[str, Any]) -> dict[str, Any]:
        title = data.pop("title")
        return {**data, "summary": title.upper(), "priority": len(title)}

    def define() -> type:
        from leanctx.events.kinds import Event

        class UpcastV2(Event, tag="test.upcast"):
            schema_version: ClassVar[int] = 2
            summary: str
            priority: int = 0

        return UpcastV2

    if with_upcaster:
        upcaster("test.upcast", 1)(lift)
    try:
        yield define()
    finally:
        unregister("test.upcast", 1)
        codec._decoders.pop("test.upcast", None)
        base._cache = (-1, {})  # the registry caches the class; let it go
        gc.collect()
        # leave no test kind behind for other modules (the schema drift tests walk the registry)
        assert "test.upcast" not in registry(), "the test-only kind leaked into the registry"


def _filter_id(f: TopicFilter) -> str:
    return ",".join(f"{k}={v!r}" for k, v in msgspec.structs.asdict(f).items() if v is not None) or "empty"


def positions(events: list[StoredEvent] | list[SearchHit]) -> list[int]:
    return [e.event.position if isinstance(e, SearchHit) else e.position for e in events]


# --------------------------------------------------------------------------------------
# the suite
# --------------------------------------------------------------------------------------

HOSTILE_QUERIES = [
    '"',
    "'",
    '""',
    '"unbalanced',
    "NEAR(",
    "NEAR(alpha beta)",
    "NEAR(alpha beta, 2)",
    "NEAR",
    "alpha NEAR beta",
    "*",
    "**",
    "*alpha",
    "alpha**",
    "AND",
    "OR",
    "NOT",
    "alpha AND",
    "AND alpha",
    "alpha OR",
    "OR alpha",
    "NOT alpha",
    "alpha NOT",
    "alpha AND OR NOT beta",
    "AND*",
    "and or not",
    "(",
    ")",
    "((alpha",
    "alpha))",
    "(alpha OR beta",
    "-",
    "-alpha",
    "alpha -beta",
    ":",
    "kind:agent",
    "body : alpha",
    "{kind body}: alpha",
    "^",
    "^alpha",
    "+",
    "alpha + beta",
    "é",
    "café",
    "日本語 テキスト",
    "🔥",
    "alpha🔥",
    "½",
    "\u200b",
    "",
    " ",
    "   \t\n  ",
    "'; DROP TABLE events; --",
    "alpha\x00beta",
    "x" * 3000,
    " ".join(["alpha"] * 200),
]


class EventStoreConformance(abc.ABC):
    """The contract of ``leanctx.events.store.EventStore``."""

    # --- what a backend provides --------------------------------------------------------
    @abc.abstractmethod
    def make_store(self, path: Path) -> EventStore: ...

    @abc.abstractmethod
    def tamper(self, path: Path, position: int) -> Path:
        """Copy the store at ``path``, change the stored payload of the event at ``position``
        in the copy (bypassing immutability), and return the copy's path."""

    @abc.abstractmethod
    def raw_mutate(self, path: Path, op: str, position: int) -> None:
        """Try to ``update``/``delete`` one event through a raw connection (should raise)."""

    # --- fixtures -------------------------------------------------------------------------
    @pytest.fixture
    def path(self, tmp_path: Path) -> Path:
        return tmp_path / "events.db"

    @pytest.fixture
    def store(self, path: Path) -> Iterator[EventStore]:
        s = self.make_store(path)
        yield s
        s.close()

    @pytest.fixture
    def opener(self) -> Iterator[Any]:
        """Open more stores (other connections on the same file); all closed at teardown."""
        opened: list[EventStore] = []

        def open_(p: Path) -> EventStore:
            s = self.make_store(p)
            opened.append(s)
            return s

        yield open_
        for s in opened:
            s.close()

    # ======================================================================================
    # ordering, positions, the chain
    # ======================================================================================
    def test_empty_store(self, store: EventStore) -> None:
        assert store.head() == Head(0, GENESIS_HASH)
        assert store.count() == 0
        assert store.read_all() == []
        assert store.get(1) is None
        assert store.stream_version("agent:x") == 0
        assert store.read_stream("agent:x") == []

    def test_positions_start_at_one_and_are_gap_free(self, store: EventStore) -> None:
        results = [
            store.append("agent:a", [hb("a")]),
            store.append("agent:b", [hb("b"), hb("b"), hb("b")]),
            store.append("agent:a", [hb("a"), hb("a")]),
            store.append("calls:s", [call("x")]),
        ]
        assert [r.positions for r in results] == [[1], [2, 3, 4], [5, 6], [7]]
        assert [r.last_position for r in results] == [1, 4, 6, 7]
        assert positions(store.read_all()) == list(range(1, 8))
        assert store.count() == 7
        assert store.head().position == 7

    def test_read_all_is_in_append_order_with_envelope_and_payload(self, store: EventStore) -> None:
        sent = [
            hb("a", "busy", actor="alice", to_agent="bob", project="/p", channel="dev", consistency="eventual",
               correlation_id="corr-1", causation_id=None, ts="2026-01-02T03:04:05.000006Z"),
            reg("b", actor="bob", project="/q", correlation_id="corr-2"),
            note("bye", agent_id="a", actor="alice", causation_id=1, channel="ops"),
        ]
        for ne in sent:
            store.append("s:1", [ne])
        got = store.read_all()
        assert [e.kind for e in got] == ["agent.heartbeat", "agent.registered", "agent.deregistered"]
        for ne, e in zip(sent, got):
            assert e.data() == ne.event
            assert (e.actor, e.to_agent, e.project, e.channel, e.consistency, e.correlation_id, e.causation_id) == (
                ne.actor, ne.to_agent, ne.project, ne.channel, ne.consistency, ne.correlation_id, ne.causation_id
            )
            assert e.schema_version == type(ne.event).schema_version
            assert e.idempotency_key is None
        assert got[0].ts == "2026-01-02T03:04:05.000006Z"
        assert got[1].consistency == "strong"  # the default

    def test_timestamp_is_filled_when_absent(self, store: EventStore) -> None:
        from leanctx import clock

        before = clock.now()
        store.append("s", [hb("a"), hb("b")])
        after = clock.now()
        a, b = store.read_all()
        assert a.ts == b.ts  # taken once per append
        assert len(a.ts) == len("2026-11-30T15:22:14.123456Z")
        assert before - 0.001 <= clock.parse(a.ts) <= after + 0.001

    def test_hash_chain_links_every_event(self, store: EventStore) -> None:
        store.append("s", [hb("a"), hb("b")])
        store.append("t", [hb("c")])
        events = store.read_all()
        assert events[0].prev_hash == GENESIS_HASH
        for prev, cur in zip(events, events[1:]):
            assert cur.prev_hash == prev.hash
        assert len({e.hash for e in events}) == 3
        assert store.head() == Head(3, events[-1].hash)

    def test_get(self, store: EventStore) -> None:
        store.append("s", [hb("a"), hb("b"), hb("c")])
        all_ = store.read_all()
        assert [store.get(p) for p in (1, 2, 3)] == all_
        assert store.get(0) is None
        assert store.get(4) is None

    def test_stream_versions_count_per_stream(self, store: EventStore) -> None:
        store.append("s", [hb("1"), hb("2")])
        store.append("t", [hb("3")])
        r = store.append("s", [hb("4")])
        assert r.stream_version == 3
        assert [(e.stream, e.version) for e in store.read_all()] == [("s", 1), ("s", 2), ("t", 1), ("s", 3)]
        assert store.stream_version("s") == 3
        assert store.stream_version("t") == 1
        assert store.stream_version("u") == 0

    def test_invalid_appends_have_stable_codes(self, store: EventStore) -> None:
        with pytest.raises(InvalidInput) as e1:
            store.append("s", [])
        assert e1.value.code == "EVENT_EMPTY_APPEND"
        with pytest.raises(InvalidInput) as e2:
            store.append("", [hb("a")])
        assert e2.value.code == "EVENT_INVALID_STREAM"
        with pytest.raises(InvalidInput) as e3:
            store.append("s", [hb("a")], idempotency_key="")
        assert e3.value.code == "EVENT_INVALID_IDEMPOTENCY_KEY"
        assert store.count() == 0

    # ======================================================================================
    # transactions and hooks
    # ======================================================================================
    def test_transaction_rolls_back_on_error(self, store: EventStore) -> None:
        store.append("s", [hb("kept")])
        with pytest.raises(RuntimeError):
            with store.transaction() as tx:
                tx.append("s", [hb("a")])
                tx.append("t", [hb("b"), hb("c")])
                raise RuntimeError("boom")
        assert positions(store.read_all()) == [1]
        assert store.stream_version("s") == 1
        assert store.stream_version("t") == 0
        r = store.append("t", [hb("d")])
        assert r.positions == [2]  # no gap left by the rolled-back rows

    def test_transaction_sees_its_own_rows(self, store: EventStore) -> None:
        store.append("s", [hb("a")])
        with store.transaction() as tx:
            r = tx.append("s", [hb("b"), note("c")], idempotency_key="k-own")
            assert r.positions == [2, 3]
            assert tx.head().position == 3
            assert tx.stream_version("s") == 3
            got = tx.read_range(1, 3, ["agent.heartbeat"], 10)
            assert positions(got) == [2]
            assert positions(tx.read_range(0, 3, ["agent.heartbeat", "agent.deregistered"], 2)) == [1, 2]
            found = tx.find_key("k-own")
            assert found is not None and found.position == 2
            assert tx.find_key("nope") is None
        assert store.head().position == 3

    def test_tx_hook_sees_the_stored_events_and_can_veto(self, store: EventStore) -> None:
        seen: list[list[int]] = []

        def hook(tx: Any, events: list[StoredEvent]) -> None:
            seen.append([e.position for e in events])
            if any(e.kind == "agent.deregistered" for e in events):
                raise RuntimeError("veto")

        store.add_tx_hook(hook)
        store.append("s", [hb("a"), hb("b")])
        with pytest.raises(RuntimeError):
            store.append("s", [hb("c"), note("d")])
        assert seen == [[1, 2], [3, 4]]
        assert store.count() == 2
        assert store.append("s", [hb("e")]).positions == [3]

    # ======================================================================================
    # expected_version
    # ======================================================================================
    def test_expected_version_any(self, store: EventStore) -> None:
        assert store.append("s", [hb("a")], expected_version=ANY).stream_version == 1
        assert store.append("s", [hb("b")], expected_version=ANY).stream_version == 2

    def test_expected_version_no_stream(self, store: EventStore) -> None:
        r = store.append("s", [hb("a"), hb("b")], expected_version=NO_STREAM)
        assert r.positions == [1, 2] and r.stream_version == 2
        head = store.head()
        with pytest.raises(ConcurrencyError) as ei:
            store.append("s", [hb("c")], expected_version=NO_STREAM)
        assert ei.value.code == "CONCURRENCY_CONFLICT"
        assert store.head() == head
        assert store.stream_version("s") == 2
        # another stream is still new
        assert store.append("t", [hb("d")], expected_version=NO_STREAM).positions == [3]

    def test_expected_version_exact(self, store: EventStore) -> None:
        store.append("s", [hb("a"), hb("b")])
        store.append("other", [hb("x")])
        r = store.append("s", [hb("c")], expected_version=2)
        assert r.stream_version == 3 and r.positions == [4]
        r = store.append("s", [hb("d"), hb("e")], expected_version=3)
        assert r.stream_version == 5 and r.positions == [5, 6]

    @pytest.mark.parametrize("expected", [1, 2, 4, 9])
    def test_expected_version_mismatch_appends_nothing(self, store: EventStore, expected: int) -> None:
        store.append("s", [hb("a"), hb("b"), hb("c")])
        head = store.head()
        with pytest.raises(ConcurrencyError) as ei:
            store.append("s", [hb("d"), hb("e"), hb("f")], expected_version=expected)
        assert ei.value.code == "CONCURRENCY_CONFLICT"
        assert store.head() == head
        assert store.stream_version("s") == 3
        assert len(store.read_all()) == 3
        assert store.append("s", [hb("g")]).positions == [4]  # nothing reserved either

    def test_expected_version_on_missing_stream(self, store: EventStore) -> None:
        with pytest.raises(ConcurrencyError):
            store.append("s", [hb("a"), hb("b")], expected_version=1)
        assert store.count() == 0

    def test_expected_version_mismatch_inside_a_transaction_rolls_back_the_batch(self, store: EventStore) -> None:
        store.append("s", [hb("a")])
        with pytest.raises(ConcurrencyError):
            with store.transaction() as tx:
                tx.append("t", [hb("b")])
                tx.append("s", [hb("c")], expected_version=NO_STREAM)
        assert positions(store.read_all()) == [1]
        assert store.stream_version("t") == 0

    @pytest.mark.parametrize("bad", [0, -1, True, "latest", 1.5])
    def test_invalid_expected_version(self, store: EventStore, bad: Any) -> None:
        store.append("s", [hb("a")])
        with pytest.raises(InvalidInput) as ei:
            store.append("s", [hb("b")], expected_version=bad)
        assert ei.value.code == "EVENT_INVALID_EXPECTED_VERSION"
        assert store.count() == 1

    def test_expected_version_race_between_threads(self, store: EventStore, path: Path, opener: Any) -> None:
        """N writers decide on the same version: exactly one wins per round."""
        others = [opener(path) for _ in range(3)]
        writers = [store, store, *others, *others]
        for round_, expected in enumerate([NO_STREAM, 1]):
            barrier = threading.Barrier(len(writers))
            outcome: list[str] = []
            lock = threading.Lock()

            def attempt(s: EventStore, i: int) -> None:
                barrier.wait()
                try:
                    s.append("race", [hb(f"r{round_}-{i}")], expected_version=expected)
                    res = "ok"
                except ConcurrencyError:
                    res = "conflict"
                with lock:
                    outcome.append(res)

            threads = [threading.Thread(target=attempt, args=(s, i)) for i, s in enumerate(writers)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert sorted(outcome) == ["conflict"] * (len(writers) - 1) + ["ok"]
        assert store.stream_version("race") == 2
        assert store.count() == 2

    # ======================================================================================
    # idempotency
    # ======================================================================================
    def test_idempotent_retry_returns_original_positions(self, store: EventStore) -> None:
        store.append("s", [hb("before")])
        first = store.append("s", [hb("a")], idempotency_key="key-1")
        assert first.positions == [2] and not first.duplicate
        store.append("t", [hb("between")])
        head = store.head()
        again = store.append("s", [hb("a")], idempotency_key="key-1")
        assert again.duplicate
        assert again.positions == first.positions
        assert store.head() == head
        assert store.get(2).idempotency_key == "key-1"

    def test_idempotent_retry_ignores_a_different_body(self, store: EventStore) -> None:
        first = store.append("s", [hb("a")], idempotency_key="key-2")
        again = store.append("s", [hb("zzz"), hb("yyy")], idempotency_key="key-2")
        assert again.duplicate and again.positions == first.positions
        assert store.count() == 1
        assert store.get(1).data() == AgentHeartbeat(agent_id="a")

    def test_idempotent_batch(self, store: EventStore) -> None:
        store.append("s", [hb("x")])
        first = store.append("s", [hb("a"), hb("b"), hb("c")], idempotency_key="batch")
        assert first.positions == [2, 3, 4]
        again = store.append("s", [hb("a"), hb("b"), hb("c")], idempotency_key="batch")
        assert again.duplicate and again.positions == [2, 3, 4]
        assert store.count() == 4
        keys = [e.idempotency_key for e in store.read_all()]
        assert keys[0] is None
        assert keys[1] == "batch"
        assert len(set(keys[1:])) == 3  # every event of the batch holds a distinct key

    def test_idempotent_retry_with_stale_expected_version(self, store: EventStore) -> None:
        first = store.append("s", [hb("a")], expected_version=NO_STREAM, idempotency_key="k-nos")
        again = store.append("s", [hb("a")], expected_version=NO_STREAM, idempotency_key="k-nos")
        assert again.duplicate and again.positions == first.positions
        assert store.count() == 1

    def test_distinct_keys_append(self, store: EventStore) -> None:
        a = store.append("s", [hb("a")], idempotency_key="k-a")
        b = store.append("s", [hb("a")], idempotency_key="k-b")
        assert (a.positions, b.positions) == ([1], [2])
        assert not b.duplicate

    def test_idempotent_retry_through_another_connection(self, store: EventStore, path: Path, opener: Any) -> None:
        first = store.append("s", [hb("a"), hb("b")], idempotency_key="k-x")
        other = opener(path)
        again = other.append("s", [hb("a"), hb("b")], idempotency_key="k-x")
        assert again.duplicate and again.positions == first.positions
        assert store.count() == 2

    # ======================================================================================
    # immutability
    # ======================================================================================
    @pytest.mark.parametrize("op", ["update", "delete"])
    def test_raw_update_and_delete_abort(self, store: EventStore, path: Path, op: str) -> None:
        store.append("s", [hb("a"), hb("b"), hb("c")])
        before = store.read_all()
        with pytest.raises(Exception) as ei:
            self.raw_mutate(path, op, 2)
        assert "EVENT_IMMUTABLE" in str(ei.value)
        assert store.read_all() == before
        assert store.verify().ok

    # ======================================================================================
    # read_all since / limit
    # ======================================================================================
    def test_read_all_since_and_limit(self, store: EventStore) -> None:
        for i in range(10):
            store.append(f"s{i % 3}", [hb(str(i))])
        assert positions(store.read_all(since=4)) == [5, 6, 7, 8, 9, 10]
        assert positions(store.read_all(since=4, limit=3)) == [5, 6, 7]
        assert positions(store.read_all(limit=2)) == [1, 2]
        assert store.read_all(since=10) == []
        assert store.read_all(since=99) == []
        assert store.read_all(limit=0) == []

    def test_read_last(self, store: EventStore) -> None:
        for i in range(6):
            store.append(f"s{i % 2}", [hb(str(i), channel="dev" if i % 2 else None)])
        assert positions(store.read_last(3)) == [4, 5, 6]  # oldest first
        assert positions(store.read_last(10)) == [1, 2, 3, 4, 5, 6]
        assert store.read_last(0) == []
        assert positions(store.read_last(2, TopicFilter(channel="dev"))) == [4, 6]
        assert positions(store.read_last(5, TopicFilter(stream_prefix="s0"))) == [1, 3, 5]

    def test_iter_all_crosses_batches(self, store: EventStore) -> None:
        for i in range(11):
            store.append("s", [hb(str(i))])
        assert positions(list(store.iter_all(batch=3))) == list(range(1, 12))
        assert positions(list(store.iter_all(since=5, batch=2))) == list(range(6, 12))
        f = TopicFilter(kinds=("agent.heartbeat",))
        assert positions(list(store.iter_all(filter=f, batch=4))) == list(range(1, 12))

    # ======================================================================================
    # TopicFilter
    # ======================================================================================
    @pytest.fixture(scope="class")
    @classmethod
    def corpus(cls, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EventStore]:
        """A small log shared (read-only) by the filter tests of a class."""
        store = cls().make_store(tmp_path_factory.mktemp("corpus") / "events.db")
        store.append("agent:1", [reg("1", actor="alice", channel="dev")])                       # 1
        store.append("agent:1", [hb("1", actor="alice", channel="dev", consistency="eventual")])  # 2
        store.append("agent:2", [hb("2", actor="bob", to_agent="alice")])                      # 3
        store.append("agent:2", [note("x", agent_id="2", actor="bob", to_agent="carol")])      # 4
        store.append("calls:s", [call("agent.register", actor="alice")])                       # 5
        store.append("agents:3", [raw("agents.renamed", actor="carol", channel="ops")])       # 6
        store.append("a_b", [raw("agentx.thing", channel="dev", to_agent="bob")])             # 7
        store.append("axb", [raw("agent", consistency="eventual")])                           # 8
        store.append("a%c", [raw("tool.called.more")])                                        # 9
        yield store
        store.close()

    @pytest.mark.parametrize(
        ("flt", "expected"),
        [
            (TopicFilter(), list(range(1, 10))),
            (TopicFilter(kinds=("agent.heartbeat",)), [2, 3]),
            (TopicFilter(kinds=("agent.heartbeat", "tool.called")), [2, 3, 5]),
            (TopicFilter(kinds=("agent.*",)), [1, 2, 3, 4]),
            (TopicFilter(kinds=("tool.*",)), [5, 9]),
            (TopicFilter(kinds=("agents.*", "agent.registered")), [1, 6]),
            (TopicFilter(kinds=("agent",)), [8]),
            (TopicFilter(kinds=("nothing.*",)), []),
            (TopicFilter(kinds=("agent.heart",)), []),
            (TopicFilter(actor="alice"), [1, 2, 5]),
            (TopicFilter(actor="nobody"), []),
            (TopicFilter(to_agent="alice"), [1, 2, 3, 5, 6, 8, 9]),
            (TopicFilter(to_agent="bob"), [1, 2, 5, 6, 7, 8, 9]),
            (TopicFilter(to_agent="carol"), [1, 2, 4, 5, 6, 8, 9]),
            (TopicFilter(to_agent="dave"), [1, 2, 5, 6, 8, 9]),
            (TopicFilter(channel="dev"), [1, 2, 7]),
            (TopicFilter(channel="ops"), [6]),
            (TopicFilter(stream_prefix="agent:"), [1, 2, 3, 4]),
            (TopicFilter(stream_prefix="agent"), [1, 2, 3, 4, 6]),
            (TopicFilter(stream_prefix="agent:2"), [3, 4]),
            (TopicFilter(stream_prefix="a_"), [7]),
            (TopicFilter(stream_prefix="a%"), [9]),
            (TopicFilter(stream_prefix="A"), []),
            (TopicFilter(consistency="eventual"), [2, 8]),
            (TopicFilter(consistency="strong"), [1, 3, 4, 5, 6, 7, 9]),
            (TopicFilter(kinds=("agent.*",), actor="bob", to_agent="alice"), [3]),
            (TopicFilter(channel="dev", consistency="strong"), [1, 7]),
            (TopicFilter(kinds=("agent.*",), stream_prefix="calls:"), []),
        ],
        ids=lambda v: _filter_id(v) if isinstance(v, TopicFilter) else "",
    )
    def test_topic_filter(self, corpus: EventStore, flt: TopicFilter, expected: list[int]) -> None:
        got = corpus.read_all(filter=flt)
        assert positions(got) == expected
        assert positions([e for e in corpus.read_all() if flt.matches(e)]) == expected

    def test_topic_filter_since_and_limit_combine(self, corpus: EventStore) -> None:
        f = TopicFilter(to_agent="alice")
        assert positions(corpus.read_all(since=3, filter=f, limit=2)) == [5, 6]

    def test_directed_events_reach_only_their_target(self, store: EventStore) -> None:
        store.append("channel:dev", [note("to-bob", to_agent="bob"), note("to-all"),
                                     note("to-carol", to_agent="carol")])
        for reader, mine in (("bob", "to-bob"), ("carol", "to-carol"), ("eve", None)):
            got = [e.data().reason for e in store.read_all(filter=TopicFilter(to_agent=reader))]
            assert got == [r for r in ("to-bob", "to-all", "to-carol") if r in ("to-all", mine)]
        # no recipient filtering without to_agent
        assert len(store.read_all(filter=TopicFilter(channel=None))) == 3

    @pytest.mark.parametrize("seed", [1, 2, 3])
    def test_matches_agrees_with_the_store_on_a_random_corpus(self, store: EventStore, seed: int) -> None:
        rng = random.Random(seed)
        people = [None, "alice", "bob", "carol"]
        streams = ["agent:1", "agent:2", "agents:1", "task:dev/1", "task:ops/2", "a_b", "axb", "a%c", "calls:x"]
        kinds = ["agent.registered", "agent.heartbeat", "agent.deregistered", "tool.called", "agents.x",
                 "agentx.y", "agent", "task.claimed"]
        with store.transaction() as tx:
            for i in range(300):
                kind = rng.choice(kinds)
                env = dict(
                    actor=rng.choice(people),
                    to_agent=rng.choice(people),
                    channel=rng.choice([None, "dev", "ops"]),
                    consistency=rng.choice(["strong", "eventual"]),
                )
                ne = {
                    "agent.registered": lambda: reg(str(i), **env),
                    "agent.heartbeat": lambda: hb(str(i), **env),
                    "agent.deregistered": lambda: note(str(i), **env),
                    "tool.called": lambda: call("c", **env),
                }.get(kind, lambda: raw(kind, str(i), **env))()
                tx.append(rng.choice(streams), [ne])
        everything = store.read_all()
        assert len(everything) == 300
        patterns = kinds + ["agent.*", "agents.*", "tool.*", "task.*", "nope.*", "agent.heart"]
        prefixes = ["", "a", "agent", "agent:", "agents", "task:", "task:dev/", "a_", "a%", "A", "zzz"]
        checked_nonempty = 0
        for _ in range(250):
            f = TopicFilter(
                kinds=tuple(rng.sample(patterns, rng.randint(1, 3))) if rng.random() < 0.5 else None,
                actor=rng.choice(people + ["dave"]) if rng.random() < 0.3 else None,
                to_agent=rng.choice(people[1:] + ["dave"]) if rng.random() < 0.4 else None,
                channel=rng.choice(["dev", "ops", "qa"]) if rng.random() < 0.3 else None,
                stream_prefix=rng.choice(prefixes) if rng.random() < 0.4 else None,
                consistency=rng.choice(["strong", "eventual"]) if rng.random() < 0.3 else None,
            )
            since = rng.choice([0, 0, 50, 299])
            expected = [e.position for e in everything if e.position > since and f.matches(e)]
            assert positions(store.read_all(since=since, filter=f)) == expected, f
            checked_nonempty += bool(expected)
        assert checked_nonempty > 50  # the corpus exercises the filters

    # ======================================================================================
    # read_stream, head, stream_version
    # ======================================================================================
    def test_read_stream(self, store: EventStore) -> None:
        store.append("s", [hb("1"), hb("2")])
        store.append("t", [hb("x")])
        store.append("s", [hb("3"), hb("4")])
        got = store.read_stream("s")
        assert [(e.version, e.position, e.data().agent_id) for e in got] == [
            (1, 1, "1"), (2, 2, "2"), (3, 4, "3"), (4, 5, "4")
        ]
        assert [e.version for e in store.read_stream("s", from_version=3)] == [3, 4]
        assert [e.version for e in store.read_stream("s", from_version=2, limit=2)] == [2, 3]
        assert store.read_stream("s", from_version=5) == []
        assert store.read_stream("nope") == []
        assert [e.position for e in store.read_stream("t")] == [3]

    def test_head_follows_appends(self, store: EventStore, path: Path, opener: Any) -> None:
        other = opener(path)
        for i in range(1, 4):
            r = store.append("s", [hb(str(i))])
            h = store.head()
            assert h.position == r.positions[0] == i
            assert h.hash == store.get(i).hash
            assert other.head() == h  # seen by another connection at once

    def test_stream_version_matches_read_stream(self, store: EventStore) -> None:
        for n, stream in enumerate(["a", "b", "a", "c", "a"]):
            store.append(stream, [hb(str(n))])
        for stream in "abc":
            events = store.read_stream(stream)
            assert store.stream_version(stream) == len(events) == events[-1].version

    # ======================================================================================
    # full-text search
    # ======================================================================================
    @pytest.fixture(scope="class")
    @classmethod
    def texts(cls, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EventStore]:
        """A small log shared (read-only) by the search tests of a class."""
        store = cls().make_store(tmp_path_factory.mktemp("texts") / "events.db")
        store.append("agent:1", [note("alpha beta gamma", actor="alice")])             # 1
        store.append("agent:2", [note("alpha and or not near", actor="bob")])          # 2
        store.append("agent:3", [note("café au lait, delta", actor="carol")])          # 3
        store.append("agent:4", [hb("kumquat-42", "busy", channel="dev")])              # 4
        store.append("agent:5", [note("日本語 テキスト beta")])                           # 5
        yield store
        store.close()

    def test_search_finds_by_payload_and_envelope(self, texts: EventStore) -> None:
        assert sorted(positions(texts.search("alpha"))) == [1, 2]
        assert positions(texts.search("gamma")) == [1]
        assert positions(texts.search("kumquat")) == [4]
        assert positions(texts.search("busy")) == [4]
        assert positions(texts.search("carol")) == [3]  # the actor is searchable
        assert positions(texts.search("dev")) == [4]  # so is the channel
        assert positions(texts.search("absent")) == []
        hit = texts.search("gamma")[0]
        assert isinstance(hit, SearchHit) and hit.event == texts.get(1)

    def test_search_terms_are_anded(self, texts: EventStore) -> None:
        assert positions(texts.search("alpha gamma")) == [1]
        assert positions(texts.search("alpha delta")) == []

    def test_search_operators_are_literal_words(self, texts: EventStore) -> None:
        # AND/OR/NOT/NEAR are words to look for, never query syntax
        assert positions(texts.search("NOT")) == [2]
        assert positions(texts.search("near")) == [2]
        assert positions(texts.search("alpha OR zzzz")) == []
        assert positions(texts.search("alpha AND beta")) == []  # "and" is not in event 1
        assert positions(texts.search("alpha NOT beta")) == []

    def test_search_is_unicode_aware(self, texts: EventStore) -> None:
        assert positions(texts.search("cafe")) == [3]
        assert positions(texts.search("CAFÉ")) == [3]
        assert positions(texts.search("日本語")) == [5]

    def test_search_ranks_by_bm25(self, store: EventStore) -> None:
        filler = " ".join(f"word{i}" for i in range(60))
        store.append("s", [note(f"{filler} zeppelin {filler}")])  # 1: one mention, long
        store.append("s", [note("zeppelin zeppelin zeppelin airship")])  # 2: dense
        store.append("s", [note(f"zeppelin {filler}")])  # 3
        hits = store.search("zeppelin")
        assert positions(hits)[0] == 2
        assert set(positions(hits)) == {1, 2, 3}
        scores = [h.score for h in hits]
        assert scores == sorted(scores)  # bm25: lower is better, best first
        assert scores[0] < scores[-1]

    def test_search_limit(self, store: EventStore) -> None:
        for i in range(6):
            store.append("s", [note(f"walrus {i}")])
        assert len(store.search("walrus", limit=4)) == 4
        assert len(store.search("walrus")) == 6

    def test_prefix_search(self, texts: EventStore) -> None:
        assert positions(texts.search("kumq*")) == [4]
        assert positions(texts.search("kumq")) == []
        assert sorted(positions(texts.search("alph*"))) == [1, 2]
        assert positions(texts.search("alph* gam*")) == [1]
        assert positions(texts.search("caf*")) == [3]

    @pytest.mark.parametrize("query", HOSTILE_QUERIES, ids=lambda q: repr(q)[:40])
    def test_hostile_queries_never_raise(self, texts: EventStore, query: str) -> None:
        hits = texts.search(query)
        assert isinstance(hits, list)
        assert all(isinstance(h, SearchHit) and texts.get(h.event.position) == h.event for h in hits)

    @pytest.mark.parametrize("query", ["", " ", "\t\n", "*", '"', "()", "-:^"])
    def test_searchless_queries_return_nothing(self, texts: EventStore, query: str) -> None:
        assert texts.search(query) == []

    def test_punctuation_around_words_still_finds_them(self, texts: EventStore) -> None:
        assert positions(texts.search("((gamma")) == [1]
        assert positions(texts.search('"gamma"')) == [1]
        assert positions(texts.search("gamma)")) == [1]
        assert positions(texts.search("-gamma")) == [1]

    def test_search_sees_later_appends(self, store: EventStore, path: Path, opener: Any) -> None:
        store.append("s", [note("first walrus")])
        assert positions(store.search("walrus")) == [1]
        store.append("s", [note("second walrus"), note("third narwhal")])
        assert sorted(positions(store.search("walrus"))) == [1, 2]
        assert positions(store.search("narwhal")) == [3]
        other = opener(path)  # appended through another connection
        other.append("t", [note("fourth narwhal")])
        assert sorted(positions(store.search("narwhal"))) == [3, 4]
        assert sorted(positions(other.search("narwhal"))) == [3, 4]

    @pytest.mark.parametrize(
        "flt",
        [
            TopicFilter(kinds=("agent.deregistered",)),
            TopicFilter(kinds=("agent.*",)),
            TopicFilter(stream_prefix="agent:1"),
            TopicFilter(actor="alice"),
            TopicFilter(to_agent="bob"),
            TopicFilter(channel="dev"),
            TopicFilter(consistency="eventual"),
        ],
        ids=lambda f: _filter_id(f),
    )
    def test_search_with_a_filter(self, store: EventStore, flt: TopicFilter) -> None:
        store.append("agent:1", [note("ocelot one", actor="alice", channel="dev")])
        store.append("agent:12", [hb("ocelot", to_agent="bob", consistency="eventual")])
        store.append("agent:2", [note("ocelot two", actor="bob", to_agent="carol")])
        store.append("calls:x", [call("ocelot.run", actor="alice", channel="ops")])
        store.append("agent:3", [note("no match here", actor="alice")])
        expected = sorted(e.position for e in store.read_all() if flt.matches(e) and e.position != 5)
        assert expected  # the filter keeps something and drops something
        assert len(expected) < 4
        assert sorted(positions(store.search("ocelot", filter=flt))) == expected

    # ======================================================================================
    # lineage
    # ======================================================================================
    def test_lineage(self, store: EventStore) -> None:
        store.append("calls:s", [call("root")])                            # 1
        store.append("agent:a", [hb("a", causation_id=1)])                 # 2  <- 1
        store.append("agent:a", [hb("a", causation_id=2)])                 # 3  <- 2
        store.append("other", [call("unrelated")])                         # 4
        store.append("agent:b", [hb("b", causation_id=1)])                 # 5  <- 1
        store.append("agent:a", [hb("a", causation_id=3)])                 # 6  <- 3
        store.append("agent:c", [hb("c", causation_id=4)])                 # 7  <- 4
        lin = store.lineage(6)
        assert lin.event == store.get(6)
        assert positions(lin.ancestors) == [1, 2, 3]  # root cause first
        assert lin.ancestors[0].causation_id is None
        assert lin.descendants == []
        lin = store.lineage(1)
        assert lin.ancestors == []
        assert positions(lin.descendants) == [2, 3, 5, 6]
        lin = store.lineage(2)
        assert positions(lin.ancestors) == [1]
        assert positions(lin.descendants) == [3, 6]
        assert positions(store.lineage(4).descendants) == [7]
        assert store.lineage(4).ancestors == []

    @pytest.mark.parametrize("pos", [0, 2, 99, -1])
    def test_lineage_of_unknown_position(self, store: EventStore, pos: int) -> None:
        store.append("s", [hb("a")])
        with pytest.raises(NotFound) as ei:
            store.lineage(pos)
        assert ei.value.code == "EVENT_NOT_FOUND"

    # ======================================================================================
    # wait
    # ======================================================================================
    def test_wait_returns_at_once_when_events_exist(self, store: EventStore) -> None:
        store.append("s", [hb("a"), hb("b"), hb("c")])
        t0 = time.monotonic()
        got = store.wait(since=1, timeout=10)
        assert time.monotonic() - t0 < 2.0  # did not wait for the 10 s timeout (generous: machines are noisy)
        assert positions(got) == [2, 3]
        assert positions(store.wait(since=0, timeout=10, limit=1)) == [1]

    def test_wait_times_out_with_nothing(self, store: EventStore) -> None:
        store.append("s", [hb("a")])
        t0 = time.monotonic()
        got = store.wait(since=1, timeout=0.3)
        elapsed = time.monotonic() - t0
        assert got == []
        assert 0.29 <= elapsed < 2.0

    def _append_later(
        self, s: EventStore, delay: float, events: list[NewEvent], marks: dict[str, Any]
    ) -> threading.Thread:
        def run() -> None:
            time.sleep(delay)
            marks["t"] = time.monotonic()
            marks["pos"] = s.append("later", events).positions
            marks["t_done"] = time.monotonic()

        t = threading.Thread(target=run)
        t.start()
        return t

    def test_wait_wakes_on_an_append_from_another_thread(self, store: EventStore) -> None:
        store.append("s", [hb("a")])
        marks: dict[str, Any] = {}
        th = self._append_later(store, 0.15, [hb("woken")], marks)
        got = store.wait(since=1, timeout=5)
        t_wake = time.monotonic()
        th.join()
        assert positions(got) == marks["pos"] == [2]
        latency = t_wake - marks["t"]
        print(f"in-process wait latency: {latency * 1000:.1f} ms")
        assert latency < 1.0  # woken by the append, not the 5 s timeout (the real figure: bench/bench_store.py)

    def test_wait_wakes_on_an_append_through_another_connection(
        self, store: EventStore, path: Path, opener: Any
    ) -> None:
        other = opener(path)
        marks: dict[str, Any] = {}
        th = self._append_later(other, 0.15, [hb("woken")], marks)
        got = store.wait(since=0, timeout=5)
        t_wake = time.monotonic()
        th.join()
        assert positions(got) == [1]
        latency = t_wake - marks["t"]
        print(f"cross-connection wait latency: {latency * 1000:.1f} ms")
        assert latency < 1.0  # woken by the append, not the 5 s timeout (the real figure: bench/bench_store.py)

    def test_wait_respects_the_filter(self, store: EventStore) -> None:
        flt = TopicFilter(kinds=("agent.deregistered",), to_agent="bob")
        marks_a: dict[str, Any] = {}
        marks_b: dict[str, Any] = {}
        marks_c: dict[str, Any] = {}
        # not matching: other kind / directed to someone else; then a match
        ta = self._append_later(store, 0.05, [hb("a")], marks_a)
        tb = self._append_later(store, 0.15, [note("not yours", to_agent="carol")], marks_b)
        tc = self._append_later(store, 0.45, [hb("x"), note("yours", to_agent="bob")], marks_c)
        got = store.wait(since=0, filter=flt, timeout=5)
        t_wake = time.monotonic()
        for t in (ta, tb, tc):
            t.join()
        assert t_wake >= marks_c["t"]  # the non-matching appends did not end the wait
        assert [(e.position, e.data().reason) for e in got] == [(marks_c["pos"][1], "yours")]
        assert t_wake - marks_c["t"] < 1.0

    def test_wait_times_out_when_only_unmatched_events_arrive(self, store: EventStore) -> None:
        flt = TopicFilter(channel="ops")
        marks: dict[str, Any] = {}
        th = self._append_later(store, 0.05, [hb("a", channel="dev"), hb("b")], marks)
        t0 = time.monotonic()
        got = store.wait(since=0, filter=flt, timeout=0.4)
        elapsed = time.monotonic() - t0
        th.join()
        assert got == []
        assert elapsed >= 0.39
        assert store.count() == 2

    # ======================================================================================
    # verify
    # ======================================================================================
    def test_verify_empty_log(self, store: EventStore) -> None:
        res = store.verify()
        assert res.ok and res.checked == 0 and res.head_position == 0 and res.head_hash == GENESIS_HASH

    def test_verify_good_log(self, store: EventStore) -> None:
        for i in range(5):
            store.append(f"s{i % 2}", [hb(str(i)), note(f"n{i}")])
        calls: list[tuple[int, int]] = []
        res = store.verify(progress=lambda done, total: calls.append((done, total)))
        assert res.ok
        assert res.first_broken is None and res.reason is None
        assert res.checked == res.head_position == 10
        assert res.head_hash == store.head().hash
        assert calls and calls[-1] == (10, 10)

    @pytest.mark.parametrize("where", ["first", "middle", "last"])
    def test_verify_names_the_first_tampered_position(self, store: EventStore, path: Path, opener: Any,
                                                       where: str) -> None:
        for i in range(8):
            store.append(f"s{i % 3}", [hb(f"agent-{i}")])
        target = {"first": 1, "middle": 5, "last": 8}[where]
        expected_prev = store.get(target).prev_hash
        original_payload = store.get(target).payload
        store.close()
        copy = self.tamper(path, target)
        assert Path(copy) != path
        tampered = opener(copy)
        assert tampered.get(target).payload != original_payload
        res = tampered.verify()
        assert not res.ok
        assert res.first_broken == target
        assert res.checked == target - 1
        assert res.head_hash == expected_prev  # the last good link
        assert res.reason
        # the original is untouched
        assert opener(path).verify().ok

    # ======================================================================================
    # upcasting and unknown kinds
    # ======================================================================================
    def test_upcast_on_decode(self, store: EventStore) -> None:
        r = store.append("test:1", [NewEvent(event=_UpcastV1(title="hello"))])
        stored = store.get(r.positions[0])
        assert (stored.kind, stored.schema_version) == ("test.upcast", 1)
        with temporary_upcast_kind() as UpcastV2:
            assert registry()["test.upcast"] is UpcastV2
            data = stored.data()
            assert isinstance(data, UpcastV2)
            assert (data.summary, data.priority) == ("HELLO", 5)
            direct = codec.decode_payload("test.upcast", 1, stored.payload)
            assert direct == data
            # current-version payloads decode without the upcaster
            cur = store.append("test:1", [NewEvent(event=UpcastV2(summary="now", priority=9))])
            now = store.get(cur.positions[0])
            assert now.schema_version == 2
            assert now.data() == UpcastV2(summary="now", priority=9)
            del data, direct, now, UpcastV2
        # the stored bytes were never rewritten
        assert store.get(r.positions[0]) == stored
        assert store.verify().ok

    def test_upcast_without_an_upcaster(self, store: EventStore) -> None:
        r = store.append("test:1", [NewEvent(event=_UpcastV1(title="hello"))])
        with temporary_upcast_kind(with_upcaster=False):
            with pytest.raises(LeanCtxError) as ei:
                store.get(r.positions[0]).data()
            assert ei.value.code == "EVENT_NO_UPCASTER"
            del ei

    def test_schema_newer_than_the_code(self, store: EventStore) -> None:
        r = store.append("test:1", [NewEvent(event=_UpcastV3(summary="s", priority=1, labels=["a"]))])
        with temporary_upcast_kind():
            with pytest.raises(LeanCtxError) as ei:
                store.get(r.positions[0]).data()
            assert ei.value.code == "EVENT_SCHEMA_TOO_NEW"
            del ei

    def test_unknown_kind(self, store: EventStore) -> None:
        r = store.append("x", [raw("test.never_defined", "body text")])
        e = store.get(r.positions[0])
        assert e.kind == "test.never_defined"
        assert e.to_dict()["payload"] == {"kind": "test.never_defined", "body": "body text"}
        with pytest.raises(LeanCtxError) as ei:
            e.data()
        assert ei.value.code == "EVENT_UNKNOWN_KIND"
        with pytest.raises(LeanCtxError) as ei2:
            codec.decode_payload("test.never_defined", 1, e.payload)
        assert ei2.value.code == "EVENT_UNKNOWN_KIND"
        # the log stays readable and searchable around it
        assert positions(store.search("body")) == [1]
        assert store.verify().ok
