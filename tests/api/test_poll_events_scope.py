"""What an agent sees of the log (``leanctx.commands.chat_reads.AgentScope``): events directed to
it, the coordination events of its project (messages, channels, adapter events, tasks, claims,
locks, joins and leaves), and everything it appended itself — never another agent's
``tool.called`` / ``file.read`` / ``shell.ran`` records, which carry its session id, paths and
commands. The same rule for ``ctx_agent poll_events`` (in process, over ``/v1/tools``), and with
an agent token for ``/v1/events/poll``, the SSE stream, search and lineage. And ``since="now"``:
no past events, the head to poll from next (tool, HTTP poll and stream, CLI ``events tail``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from leanctx.api import registry
from leanctx.api.registry import Caller
from leanctx.app import LeanCtx

from .test_http_common import Api, SSEReader, make_server  # noqa: F401

LEAN_CTX = str(Path(sys.executable).parent / "lean-ctx")
SECRET = "SECRETWORD_4711"  # only in alice's shell command


@pytest.fixture
def lc(tmp_path: Path) -> Any:
    app = LeanCtx(tmp_path / "e.db")
    yield app
    app.close()


def _project(tmp_path: Path, name: str) -> Path:
    p = tmp_path / name
    (p / ".git").mkdir(parents=True)
    (p / "notes.txt").write_text("private notes\n")
    return p


def _join(lc: Any, agent: str, project: Path, role: str = "dev") -> Caller:
    me = Caller(agent, f"session-of-{agent}", str(project))
    registry.call(lc, me, "ctx_agent", {"action": "register", "role": role})
    return me


def _poll(lc: Any, who: Caller, **args: Any) -> dict[str, Any]:
    return registry.call(lc, who, "ctx_agent", {"action": "poll_events", **args})


def _activity(lc: Any, alice: Caller, bob: Caller) -> None:
    """Alice works (private records) and coordinates (shared ones); bob does a little of both."""
    registry.call(lc, alice, "ctx_shell", {"command": f"echo {SECRET}"})
    registry.call(lc, alice, "ctx_read", {"paths": ["notes.txt"]})
    registry.call(lc, alice, "ctx_agent", {"action": "post", "title": "hello", "body": "all of you"})
    registry.call(lc, alice, "ctx_agent", {"action": "post", "title": "dm", "body": "just carol", "to": "carol"})
    registry.call(lc, alice, "ctx_task", {"action": "create", "title": "parse"})
    registry.call(lc, alice, "ctx_agent", {"action": "claim", "target": "pkg/mod.py"})
    registry.call(lc, bob, "ctx_read", {"paths": ["notes.txt"]})


def test_an_agent_sees_coordination_and_its_own_records_not_anothers_tool_calls(lc: Any, tmp_path: Path) -> None:
    proj = _project(tmp_path, "proj")
    alice, bob, _carol = _join(lc, "alice", proj), _join(lc, "bob", proj), _join(lc, "carol", proj)
    _activity(lc, alice, bob)
    everything = lc.store.read_all(0)
    assert any(e.kind == "shell.ran" and e.actor == "alice" for e in everything)  # the records exist

    seen = _poll(lc, bob, since=0, limit=1000)
    kinds_by_actor = {(e["kind"], e["actor"]) for e in seen["events"]}
    # nothing of alice's private work: no tool.called, shell.ran, file.read, and not her session id (what
    # she reads still deposits scent on the file: the scent field is shared on purpose)
    assert not {k for k, who in kinds_by_actor if who == "alice"} & {"tool.called", "shell.ran", "file.read"}
    assert SECRET not in json.dumps(seen["events"]) and SECRET not in seen["text"]
    # (her registration names the session she joined from, as the agent list does)
    assert "session-of-alice" not in json.dumps([e for e in seen["events"] if e["kind"] != "agent.registered"])
    # her coordination events, and bob's own records
    assert {("message.posted", "alice"), ("task.created", "alice"), ("scent.deposited", "alice")} <= kinds_by_actor
    assert {("tool.called", "bob"), ("file.read", "bob")} <= kinds_by_actor
    assert sum(e["kind"] == "agent.registered" for e in seen["events"]) == 3
    titles = [e["payload"]["title"] for e in seen["events"] if e["kind"] == "message.posted"]
    assert titles == ["hello"]  # not the message alice sent carol
    # alice sees her own work, and her message to carol (she sent it)
    mine = _poll(lc, alice, since=0, limit=1000)["events"]
    assert {"tool.called", "shell.ran", "file.read"} <= {e["kind"] for e in mine if e["actor"] == "alice"}
    assert [e["payload"]["title"] for e in mine if e["kind"] == "message.posted"] == ["hello", "dm"]
    # asking for a private kind by name gives only one's own
    calls = _poll(lc, bob, since=0, kinds=["tool.called"], limit=1000)["events"]
    assert calls and {e["actor"] for e in calls} == {"bob"}


def test_the_limit_counts_visible_events_and_the_cursor_moves_past_hidden_ones(lc: Any, tmp_path: Path) -> None:
    proj = _project(tmp_path, "proj")
    alice, bob = _join(lc, "alice", proj), _join(lc, "bob", proj)
    start = lc.store.head().position
    for i in range(30):
        registry.call(lc, alice, "ctx_shell", {"command": f"echo {i}"})
    registry.call(lc, alice, "ctx_agent", {"action": "post", "title": "after the noise", "body": "x"})
    got = _poll(lc, bob, since=start, limit=1)
    assert [e["kind"] for e in got["events"]] == ["message.posted"]
    assert got["next_cursor"] == got["events"][0]["position"]
    rest = _poll(lc, bob, since=got["next_cursor"])
    assert rest["events"] == [] and rest["next_cursor"] == lc.store.head().position


def test_coordination_events_of_another_project_are_not_shown(lc: Any, tmp_path: Path) -> None:
    proj, other = _project(tmp_path, "proj"), _project(tmp_path, "other")
    bob = _join(lc, "bob", proj)
    olga = _join(lc, "olga", other)
    registry.call(lc, olga, "ctx_task", {"action": "create", "title": "theirs"})
    registry.call(lc, olga, "ctx_agent", {"action": "post", "title": "for bob, by id", "body": "x", "to": "bob"})
    seen = _poll(lc, bob, since=0, limit=1000)["events"]
    assert not [e for e in seen if e["kind"] == "task.created"]
    assert [e["payload"]["title"] for e in seen if e["kind"] == "message.posted"] == ["for bob, by id"]


def test_since_now_returns_no_past_event_and_the_head(lc: Any, tmp_path: Path) -> None:
    proj = _project(tmp_path, "proj")
    alice, bob = _join(lc, "alice", proj), _join(lc, "bob", proj)
    registry.call(lc, alice, "ctx_agent", {"action": "post", "title": "old", "body": "x"})
    head = lc.store.head().position
    now = _poll(lc, bob, since="now")
    assert now["events"] == [] and now["next_cursor"] == head and f"since={head}" in now["text"]
    registry.call(lc, alice, "ctx_agent", {"action": "post", "title": "new", "body": "x"})
    after = _poll(lc, bob, since=now["next_cursor"])
    assert [e["payload"]["title"] for e in after["events"] if e["kind"] == "message.posted"] == ["new"]
    for bad in ("later", -1):
        with pytest.raises(Exception) as err:
            _poll(lc, bob, since=bad)
        assert getattr(err.value, "code", "") in ("INVALID_ARGUMENT", "INVALID_INPUT", "EVENT_INVALID_CURSOR")


def test_the_tool_says_what_an_agent_sees() -> None:
    desc = registry.get("ctx_agent").description
    assert '"now"' in desc and "not others' tool calls" in desc


# --- over HTTP ---------------------------------------------------------------------------------


def test_http_poll_stream_search_and_lineage_follow_the_same_rule(make_server) -> None:  # noqa: F811
    server = make_server()
    api = Api(server)
    alice, bob = api.register("claude"), api.register("cursor")
    bob_stream = SSEReader(api.url + "/v1/events", headers=bob.headers).open()
    shell = api.client.post("/v1/tools/ctx_shell", json={"command": f"echo {SECRET}"},
                            headers={**alice.headers, "X-Session-Id": "alice-session-1"})
    assert shell.status_code == 200, shell.text
    api.ok("/v1/chat/post", alice, title="hello", body="x")
    api.ok("/v1/agents/heartbeat", bob)
    store = server.state.lc.store
    shell_ran = next(e for e in store.read_all(0) if e.kind == "shell.ran")

    polled = api.client.get("/v1/events/poll", params={"since": 0, "limit": 1000}, headers=bob.headers).json()
    by_alice = {e["kind"] for e in polled["events"] if e["actor"] == alice.agent_id}
    assert "message.posted" in by_alice and not by_alice & {"tool.called", "shell.ran"}
    assert "alice-session-1" not in json.dumps(polled) and SECRET not in json.dumps(polled)
    assert {e["kind"] for e in polled["events"] if e["actor"] == bob.agent_id} >= {"tool.called"}
    # the operator (no agent token) still reads the whole log
    operator = api.client.get("/v1/events/poll", params={"since": 0, "limit": 1000}).json()
    assert "shell.ran" in {e["kind"] for e in operator["events"]}

    streamed = [e.event for e in bob_stream.take(3)]  # message.posted; bob's tool.called + heartbeat
    assert streamed == ["message.posted", "tool.called", "agent.heartbeat"] and bob_stream.quiet(0.3)

    assert api.client.get("/v1/events/search", params={"q": SECRET}, headers=bob.headers).json()["hits"] == []
    assert api.client.get("/v1/events/search", params={"q": SECRET}).json()["hits"]
    r = api.client.get(f"/v1/events/lineage/{shell_ran.position}", headers=bob.headers)
    assert r.status_code == 404 and r.json()["error"]["code"] == "EVENT_NOT_FOUND"
    assert api.client.get(f"/v1/events/lineage/{shell_ran.position}", headers=alice.headers).status_code == 200


def test_http_since_now(make_server) -> None:  # noqa: F811
    server = make_server()
    api = Api(server)
    alice, bob = api.register("claude"), api.register("cursor")
    api.ok("/v1/chat/post", alice, title="old", body="x")
    head = server.state.lc.store.head().position
    for who in (bob.headers, {}):
        r = api.client.get("/v1/events/poll", params={"since": "now"}, headers=who)
        assert r.status_code == 200, r.text
        assert r.json() == {"events": [], "next_cursor": head}
    stream = SSEReader(api.url + "/v1/events", params={"since": "now", "kinds": "message.posted"}).open()
    api.ok("/v1/chat/post", alice, title="new", body="x")
    assert [e.json()["payload"]["title"] for e in stream.take(1)] == ["new"]
    r = api.client.get("/v1/events/poll", params={"since": "later"})
    assert r.status_code == 422 and r.json()["error"]["code"] == "EVENT_INVALID_CURSOR"


# --- the CLI -----------------------------------------------------------------------------------


def test_cli_events_tail_since_now(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    env = {**os.environ, "LEAN_CTX_DB": str(db), "LEAN_CTX_HOME": str(tmp_path / "home")}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([LEAN_CTX, *args], check=False, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)

    assert cli("chat", "post", "--title", "old", "--body", "x").returncode == 0
    r = cli("events", "tail", "--since", "now", "--json")
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    # following from now: the stderr names the head it starts after; only what comes later is printed
    tail = subprocess.Popen([LEAN_CTX, "events", "tail", "--since", "now", "--follow", "--timeout", "20", "--json",
                             "--kind", "message.posted"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=tmp_path)
    assert tail.stderr is not None and tail.stdout is not None
    started = tail.stderr.readline()
    assert "since=" in started, started
    assert cli("chat", "post", "--title", "new", "--body", "x").returncode == 0
    line = json.loads(tail.stdout.readline())
    assert line["payload"]["title"] == "new"
    tail.kill()
    tail.wait(10)
    r = cli("events", "tail", "--since", "later")
    assert r.returncode != 0 and "now" in (r.stderr + r.stdout)
    r = cli("events", "tail", "--since", "0", "--json")
    assert r.returncode == 0 and "old" in r.stdout
