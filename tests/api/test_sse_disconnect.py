"""SSE streams against clients that go away or stop reading: a client that leaves in the middle
of a long catch-up stops its stream at once (no flood of ``socket.send() raised exception.``,
only a small bounded number of events rendered after the close); shutdown ends every stream
promptly even when a client reads nothing (no ``ERROR`` line, no graceful-shutdown timeout),
while a client that reads gets a clean end of stream."""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from sse_starlette.sse import EventSourceResponse

from leanctx.api.http import events as http_events
from leanctx.api.http.hub import CHUNK
from leanctx.events import NewEvent, SqliteEventStore
from leanctx.events.kinds.agent import AgentHeartbeat

from .test_http_common import SSEReader, make_server  # noqa: F401
from .test_http_security import LEAN_CTX, free_port

LOG_EVENTS = 20_000
# events a stream may still render once its client has gone: a few chunks (the loop needs a few
# turns to deliver the disconnect), not the rest of a 500-event batch of the log
AFTER_CLOSE = 4 * CHUNK


def fill(store: SqliteEventStore, n: int = LOG_EVENTS) -> int:
    """``n`` events (~300 bytes each) appended through the store, 1000 per transaction."""
    for b in range(0, n, 1000):
        store.append(f"agent:a{b // 1000 % 50:07d}",
                     [NewEvent(event=AgentHeartbeat(agent_id="ab12cd34", status="s" * 200), actor="ab12cd34")
                      for _ in range(min(1000, n - b))])
    return store.head().position


def read_then_leave(url: str, n: int = 5) -> None:
    """Read ``n`` events of a catch-up from position 0, then close the connection."""
    with httpx.stream("GET", url + "/v1/events", params={"since": 0}, timeout=10) as r:
        assert r.status_code == 200
        seen = 0
        for line in r.iter_lines():
            if line.startswith("id:"):
                seen += 1
                if seen >= n:
                    break


def stalled_client(port: int) -> socket.socket:
    """A raw socket that asks for the whole log and never reads a byte of the answer."""
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(b"GET /v1/events?since=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    return s


def send_failures(lines: list[str]) -> list[str]:
    """Lines of asyncio's "socket.send() raised exception." (the CLI's log handler may wrap it)."""
    return [x for x in lines if "socket.send()" in x]


def test_a_client_that_leaves_mid_catch_up_stops_its_stream(make_server, monkeypatch, caplog) -> None:  # noqa: F811
    server = make_server()
    fill(server.state.lc.store)
    rendered = [0]
    render = http_events._render

    def counting(e: Any) -> Any:
        rendered[0] += 1
        return render(e)

    monkeypatch.setattr(http_events, "_render", counting)
    after_close = []
    with caplog.at_level(logging.WARNING, logger="asyncio"):
        for _ in range(3):
            with httpx.stream("GET", server.url + "/v1/events", params={"since": 0}, timeout=10) as r:
                seen = 0
                for line in r.iter_lines():
                    if line.startswith("id:"):
                        seen += 1
                        if seen >= 5:
                            break
                at_close = rendered[0]
            deadline = time.monotonic() + 5
            while server.state.hub.subscribers:
                assert time.monotonic() < deadline, "the stream went on after its client left"
                time.sleep(0.01)
            after_close.append(rendered[0] - at_close)
    assert max(after_close) <= AFTER_CLOSE, after_close
    flood = send_failures([rec.getMessage() for rec in caplog.records])
    assert len(flood) <= 3, f"{len(flood)} x socket.send() raised exception"


def test_background_server_stops_promptly_with_a_stalled_client(make_server) -> None:  # noqa: F811
    server = make_server()
    fill(server.state.lc.store)
    s = stalled_client(server.port)
    try:
        time.sleep(1.0)  # the server has filled the socket buffers and waits on the client
        assert server.state.hub.subscribers == 1
        t = time.monotonic()
        server.stop()
        took = time.monotonic() - t
        assert not server.thread.is_alive()
        assert took < 3.0, f"stop took {took:.2f} s"
    finally:
        s.close()


def test_sse_starlette_still_has_the_exit_listener_the_stream_replaces() -> None:
    """``sse.stream`` replaces sse-starlette's own shutdown watcher (it would cancel a stream
    blocked on a client that does not read and leave the response incomplete): if the library
    renames the method, the replacement silently stops applying."""
    assert callable(getattr(EventSourceResponse, "_listen_for_exit_signal_with_grace", None))


@pytest.fixture()
def serve(tmp_path: Path):  # type: ignore[no-untyped-def]
    """``lean-ctx serve`` in its own process on a log of ``LOG_EVENTS`` events."""
    db = tmp_path / "e.db"
    store = SqliteEventStore(str(db))
    try:
        fill(store)
    finally:
        store.close()
    project = tmp_path / "proj"
    project.mkdir()
    port = free_port()
    env = {**os.environ, "LEAN_CTX_DB": str(db), "LEAN_CTX_HOME": str(tmp_path / "home")}
    env.pop("LEAN_CTX_HTTP_TOKEN", None)
    with open(tmp_path / "serve.err", "w") as err:  # the child keeps its own descriptor
        proc = subprocess.Popen([LEAN_CTX, "--project", str(project), "serve", "--port", str(port)], env=env,
                                stdout=subprocess.DEVNULL, stderr=err, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, (tmp_path / "serve.err").read_text()
            assert time.monotonic() < deadline, "lean-ctx serve did not come up"
            time.sleep(0.05)
        yield proc, port, url, tmp_path / "serve.err"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_serve_no_warning_flood_and_a_prompt_clean_shutdown_with_a_stalled_client(serve) -> None:  # type: ignore[no-untyped-def]
    proc, port, url, err_path = serve
    for _ in range(3):
        read_then_leave(url)
    time.sleep(0.5)
    # a client that reads (live, from the head) and one that reads nothing
    ended: dict[str, Any] = {}

    def reader() -> None:
        try:
            with httpx.stream("GET", url + "/v1/events", timeout=httpx.Timeout(10, read=None)) as r:
                for _ in r.iter_lines():
                    pass
            ended["clean"] = True
        except httpx.HTTPError as exc:  # a reset or a broken chunk: not a clean end
            ended["error"] = repr(exc)

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    s = stalled_client(port)
    try:
        time.sleep(1.5)
        assert proc.poll() is None
        start = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
        took = time.monotonic() - start
        t.join(5)
    finally:
        s.close()
    lines = err_path.read_text().splitlines()
    assert proc.returncode in (0, 130), lines[-20:]  # 130: the CLI re-raises the SIGINT uvicorn caught
    assert took < 3.0, (f"exit took {took:.2f} s", lines[-10:])
    assert not [x for x in lines if "ERROR" in x], lines[-10:]
    flood = send_failures(lines)
    assert len(flood) <= 3, f"{len(flood)} x socket.send() raised exception"
    assert len([x for x in lines if "WARNING" in x]) <= 3, lines[-10:]
    assert ended == {"clean": True}, ended

