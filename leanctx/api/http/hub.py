"""One thread follows the log for every SSE client.

The hub thread blocks in ``store.wait`` (woken at once by appends in this process, and within
a few milliseconds by appends from other processes through ``PRAGMA data_version``) and hands
each batch to the event loop, which keeps the last ``ring_size`` events (at most ``ring_bytes``
of payload) in memory and wakes every subscriber. A subscriber keeps its own cursor (the last
position it has examined) and takes the events after it from the ring, filtered with its
``TopicFilter``; when its cursor is older than the ring (a reconnect with an old
``Last-Event-ID``) it reads the log in batches in a worker thread until it catches up.
Positions are gap-free and committed in order, so "every position after the cursor, exactly
once" holds across the switch from the log to the ring: no gap, no duplicate.

Cost: one thread and one ``wait`` for the whole server, however many clients are connected.

A subscriber gets its events in chunks of at most ``CHUNK`` and lets the event loop run between
two chunks: writing to a socket does not yield, so without that pause a client that left in the
middle of a catch-up would only be noticed at the end of a whole batch (hundreds of writes to a
dead socket, each logged by asyncio). The hub also keeps the peer address of every open stream
(``streaming``), so that the server can drop, at shutdown, the streams whose client reads nothing.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
from anyio.lowlevel import checkpoint

from ...commands.chat_reads import poll_events
from ...events import SqliteEventStore, StoredEvent, TopicFilter

log = logging.getLogger("leanctx.http")

BATCH = 500  # events read from the log at a time (a subscriber behind the ring)
CHUNK = 32  # events handed to a subscriber at a time; it checks its client between two chunks


class EventHub:
    def __init__(self, store: SqliteEventStore, *, ring_size: int = 8192, ring_bytes: int = 32 * 1024 * 1024,
                 wait_timeout: float = 0.25) -> None:
        self.store = store
        self.ring_size = ring_size  # events kept in memory (up to twice as many between trims)
        self.ring_bytes = ring_bytes  # and at most this many payload bytes (idem)
        self._ring_bytes = 0
        self.wait_timeout = wait_timeout
        self._ring: list[StoredEvent] = []
        self._ring_first = 1  # position of _ring[0] (when the ring is not empty)
        self._head = 0  # the last position handed to the loop
        self._subs: set[asyncio.Event] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.stopped = False
        self._arrivals: collections.deque[tuple[float, int]] = collections.deque()
        self.started_at = time.monotonic()
        self._peers: collections.Counter[tuple[str, int]] = collections.Counter()

    # --- lifecycle (called on the event loop) -------------------------------------------
    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._head = self.store.head().position
        self._ring_first = self._head + 1
        self.started_at = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="lean-ctx-sse-hub", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop following the log and end every stream (idempotent; any thread)."""
        self.stopped = True
        self._stop.set()
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self._wake_all)
            except RuntimeError:  # the loop is closing
                pass

    def join(self, timeout: float = 2.0) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def subscribers(self) -> int:
        return len(self._subs)

    @property
    def head(self) -> int:
        return self._head

    # --- the thread ---------------------------------------------------------------------
    def _run(self) -> None:
        pos = self._head
        while not self._stop.is_set():
            try:
                events = self.store.wait(pos, None, timeout=self.wait_timeout, limit=1000)
            except Exception as exc:  # noqa: BLE001 - the store closed under us, or a transient read error
                if self._stop.is_set():
                    return
                log.warning("SSE hub: reading the log failed (%s); retrying", exc)
                self._stop.wait(0.2)
                continue
            if not events:
                continue
            pos = events[-1].position
            loop = self._loop
            if loop is None or loop.is_closed():
                return
            try:
                loop.call_soon_threadsafe(self._publish, events)
            except RuntimeError:
                return

    # --- on the loop --------------------------------------------------------------------
    def _publish(self, events: list[StoredEvent]) -> None:
        if not self._ring:
            self._ring_first = events[0].position
        self._ring.extend(events)
        self._ring_bytes += sum(len(e.payload) for e in events)
        if len(self._ring) > 2 * self.ring_size or self._ring_bytes > 2 * self.ring_bytes:
            drop = 0
            kept = len(self._ring)
            while drop < len(self._ring) - 1 and (kept > self.ring_size or self._ring_bytes > self.ring_bytes):
                self._ring_bytes -= len(self._ring[drop].payload)
                drop += 1
                kept -= 1
            del self._ring[:drop]
            self._ring_first += drop
        self._head = events[-1].position
        now = time.monotonic()
        self._arrivals.append((now, len(events)))
        self._trim_arrivals(now)
        self._wake_all()

    def _wake_all(self) -> None:
        for ev in list(self._subs):
            ev.set()

    def _trim_arrivals(self, now: float) -> None:
        while self._arrivals and self._arrivals[0][0] < now - 60.0:
            self._arrivals.popleft()

    def appends_per_second(self) -> float:
        """Events appended per second over the last minute (since start, when younger)."""
        now = time.monotonic()
        self._trim_arrivals(now)
        window = min(60.0, max(1.0, now - self.started_at))
        return sum(n for _, n in self._arrivals) / window

    def _from_ring(self, cursor: int, flt: TopicFilter | None, limit: int) -> tuple[list[StoredEvent], int] | None:
        """Events after ``cursor`` from memory and the new cursor, or None when the ring does
        not reach back to ``cursor``."""
        if cursor >= self._head:
            return [], cursor
        if not self._ring or cursor + 1 < self._ring_first:
            return None
        out: list[StoredEvent] = []
        last = cursor
        for e in self._ring[cursor + 1 - self._ring_first:]:
            last = e.position
            if flt is None or flt.matches(e):
                out.append(e)
                if len(out) >= limit:
                    break
        return out, last

    @contextlib.contextmanager
    def streaming(self, peer: Any) -> Iterator[None]:
        """Marks a stream to ``peer`` (the ASGI ``client``: host, port) open while inside."""
        key = _peer_key(peer)
        if key is not None:
            self._peers[key] += 1
        try:
            yield
        finally:
            if key is not None:
                self._peers[key] -= 1
                if self._peers[key] <= 0:
                    del self._peers[key]

    def is_streaming_to(self, peer: Any) -> bool:
        """True while a stream to ``peer`` (a connection's remote address) is open."""
        key = _peer_key(peer)
        return key is not None and key in self._peers

    async def follow(self, since: int, flt: TopicFilter | None, *, batch: int = BATCH,
                     chunk: int = CHUNK) -> AsyncIterator[list[StoredEvent]]:
        """Every event after ``since`` that matches ``flt``, in order and in chunks of at most
        ``chunk``, then the new ones as they are appended, until the hub stops or the consumer
        stops iterating. Between two chunks the event loop runs (a disconnect or a shutdown is
        seen within one chunk, not one batch)."""
        wake = asyncio.Event()
        self._subs.add(wake)
        try:
            cursor = since
            while not self.stopped:
                wake.clear()
                got = self._from_ring(cursor, flt, batch)
                if got is None:
                    res: Any = await anyio.to_thread.run_sync(poll_events, self.store, cursor, flt, batch)
                    events, nxt = res.events, res.next_cursor
                    more = len(events) >= batch or nxt < self._head
                else:
                    events, nxt = got
                    more = len(events) >= batch
                for i in range(0, len(events), chunk):
                    part = [e for e in events[i:i + chunk] if e.position > cursor]
                    if part:
                        cursor = part[-1].position
                        yield part
                        await checkpoint()  # let the loop see a disconnect
                    if self.stopped:
                        return
                cursor = max(cursor, nxt)
                if more:
                    continue
                await wake.wait()
        finally:
            self._subs.discard(wake)


def _peer_key(peer: Any) -> tuple[str, int] | None:
    try:
        host, port = peer
        return str(host), int(port)
    except (TypeError, ValueError):
        return None
