"""Helpers of the HTTP API tests: a real uvicorn in a thread on a free 127.0.0.1 port, an SSE
reader, and agent registration. (No tests here: the other ``test_http_*`` modules import it.)"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from leanctx.api.http import ServerConfig
from leanctx.api.http.server import BackgroundServer


def make_config(tmp: Path, **kw: Any) -> ServerConfig:
    project = tmp / "project"
    project.mkdir(exist_ok=True)
    opts: dict[str, Any] = dict(db=tmp / "events.db", project_root=str(project), host="127.0.0.1", port=0,
                                secret_path=tmp / "secret", mount_mcp=False, sweep_interval=0.05, sse_ping=15)
    opts.update(kw)
    return ServerConfig(**opts)


@dataclass
class Agent:
    agent_id: str
    name: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"X-Agent-Token": self.token}


class Api:
    """An httpx client on a running server, with helpers."""

    def __init__(self, server: BackgroundServer, headers: dict[str, str] | None = None) -> None:
        self.server = server
        self.url = server.url
        self.client = httpx.Client(base_url=server.url, timeout=10, headers=headers or {})

    def register(self, agent_type: str = "claude", role: str = "dev", **extra: Any) -> Agent:
        r = self.client.post("/v1/agents/register", json={"agent_type": agent_type, "role": role, **extra})
        assert r.status_code == 200, r.text
        d = r.json()
        return Agent(d["agent_id"], d["name"], d["agent_token"])

    def post(self, route: str, who: Agent | None = None, /, **body: Any) -> httpx.Response:
        return self.client.post(route, json=body, headers=who.headers if who else {})

    def ok(self, route: str, who: Agent | None = None, /, **body: Any) -> Any:
        r = self.post(route, who, **body)
        assert r.status_code == 200, r.text
        return r.json()

    def close(self) -> None:
        self.client.close()


@pytest.fixture()
def make_server(tmp_path: Path) -> Iterator[Callable[..., BackgroundServer]]:
    started: list[BackgroundServer] = []

    def make(**kw: Any) -> BackgroundServer:
        s = BackgroundServer(make_config(tmp_path, **kw)).start()
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop()


def module_server(tmp_path_factory: pytest.TempPathFactory, **kw: Any) -> Iterator[BackgroundServer]:
    s = BackgroundServer(make_config(tmp_path_factory.mktemp("http"), **kw)).start()
    try:
        yield s
    finally:
        s.stop()


# --- SSE ------------------------------------------------------------------------------------

@dataclass
class SSEEvent:
    id: str | None
    event: str | None
    data: str

    def json(self) -> Any:
        return json.loads(self.data)


@dataclass
class SSEReader:
    """Reads an SSE stream in a thread; ``open`` returns once the response headers arrived (the
    server has fixed the stream's start by then)."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    params: Any = None
    events: "queue.Queue[SSEEvent]" = field(default_factory=queue.Queue)
    status: int | None = None
    _ready: threading.Event = field(default_factory=threading.Event)
    _stop: threading.Event = field(default_factory=threading.Event)
    error: str | None = None

    def open(self, timeout: float = 5.0) -> "SSEReader":
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        assert self._ready.wait(timeout), "the SSE stream did not start"
        assert self.status == 200, f"SSE answered {self.status}: {self.error}"
        return self

    def _run(self) -> None:
        try:
            with httpx.Client(timeout=httpx.Timeout(10, read=None)) as c:
                with c.stream("GET", self.url, headers=self.headers, params=self.params) as resp:
                    self.status = resp.status_code
                    if resp.status_code != 200:
                        self.error = resp.read().decode()
                        self._ready.set()
                        return
                    self._ready.set()
                    ev: dict[str, Any] = {}
                    data: list[str] = []
                    for line in resp.iter_lines():
                        if self._stop.is_set():
                            return
                        if not line:
                            if data:
                                self.events.put(SSEEvent(ev.get("id"), ev.get("event"), "\n".join(data)))
                            ev, data = {}, []
                        elif line.startswith(":"):
                            continue
                        else:
                            name, _, value = line.partition(":")
                            value = value[1:] if value.startswith(" ") else value
                            if name == "data":
                                data.append(value)
                            else:
                                ev[name] = value
        except Exception as exc:  # the server stopped, or the test closed the stream
            self.error = repr(exc)
        finally:
            self._ready.set()

    def next(self, timeout: float = 5.0) -> SSEEvent:
        return self.events.get(timeout=timeout)

    def take(self, n: int, timeout: float = 5.0) -> list[SSEEvent]:
        deadline = time.monotonic() + timeout
        out = []
        while len(out) < n:
            out.append(self.events.get(timeout=max(0.01, deadline - time.monotonic())))
        return out

    def wait_for(self, pred: Callable[[SSEEvent], bool], timeout: float = 5.0) -> SSEEvent:
        deadline = time.monotonic() + timeout
        while True:
            ev = self.events.get(timeout=max(0.01, deadline - time.monotonic()))
            if pred(ev):
                return ev

    def quiet(self, seconds: float = 0.2) -> bool:
        """True when nothing arrives for ``seconds``."""
        try:
            self.events.get(timeout=seconds)
        except queue.Empty:
            return True
        return False

    def close(self) -> None:
        self._stop.set()
