"""Reading without a limit, and channels an MCP agent can make and see.

A read takes at most ``DEFAULT_READ_LIMIT`` messages and, through ``ctx_agent``, at most what
fits in the answer cap; the cursor moves only past what was delivered and the answer says how
many more are unread. Tested on a real log (registry calls as an MCP caller, the real CLI in
subprocesses, real HTTP, and the real ``mcp`` client over stdio against a spawned ``lean-ctx
mcp``). Channels: ``ctx_agent action=init`` / ``action=channels``, a channel that only has tasks
in ``chat state``, and refusals that name the tool action first.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from leanctx.api import registry
from leanctx.api.registry import Caller
from leanctx.app import LeanCtx
from leanctx.commands import chat
from leanctx.commands.chat import PostMessage, ReadMessages
from leanctx.context.tokens import count_tokens
from leanctx.errors import LeanCtxError
from leanctx.ops.cap import ANSWER_CAP_TOKENS
from leanctx.projections.channels import get_cursor

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
MORE = re.compile(r"\[(\d+) more unread")


@pytest.fixture
def lc(tmp_path: Path) -> Any:
    with LeanCtx(tmp_path / "e.db") as app:
        yield app


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    return p


def member(lc: LeanCtx, project: Path, agent: str) -> Caller:
    me = Caller(agent, f"s-{agent}", str(project))
    registry.call(lc, me, "ctx_agent", {"action": "register", "role": "dev"})
    return me


def fill(lc: LeanCtx, n: int, body: Any = "short body", *, channel: str = "general", actor: str = "filler") -> None:
    for i in range(n):
        text = body(i) if callable(body) else body
        lc.bus.dispatch(PostMessage(title=f"m{i + 1}", body=text, channel=channel), actor=actor)


def wordy(tokens: int) -> Any:
    """A body of about ``tokens`` tokens, different for each message."""
    return lambda i: "\n".join(" ".join(f"item{i}-{r}-{c} value" for c in range(8)) for r in range(tokens // 57))


def cursor(lc: LeanCtx, agent: str, channel: str = "general") -> int:
    lc.projections.ensure_current()
    return get_cursor(lc.store.read_connection(), agent, channel)[0]


def more(text: str) -> int:
    m = MORE.search(text)
    return int(m.group(1)) if m else 0


# --- reads are bounded ---------------------------------------------------------------------------


def test_a_read_without_a_limit_takes_the_default_and_says_how_many_more(lc: LeanCtx) -> None:
    DEFAULT_READ_LIMIT = chat.DEFAULT_READ_LIMIT
    assert 10 <= DEFAULT_READ_LIMIT <= 100
    fill(lc, DEFAULT_READ_LIMIT * 2 + 20)
    got: list[int] = []
    unread = []
    while True:
        r = lc.bus.dispatch(ReadMessages(), actor="bob").value
        if not r.messages:
            break
        assert len(r.messages) <= DEFAULT_READ_LIMIT
        got += [m.seq for m in r.messages]
        assert r.cursor == r.messages[-1].seq == cursor(lc, "bob")  # only past what was delivered
        unread.append(r.unread)
    assert got == list(range(1, DEFAULT_READ_LIMIT * 2 + 21))
    assert unread == [DEFAULT_READ_LIMIT + 20, 20, 0]
    r = lc.bus.dispatch(ReadMessages(limit=None, max_tokens=None), actor="carol").value  # the CLI's --all
    assert len(r.messages) == DEFAULT_READ_LIMIT * 2 + 20 and r.unread == 0


def test_ctx_agent_read_stays_under_the_cap_and_marks_only_what_it_sent(lc: LeanCtx, project: Path) -> None:
    bob = member(lc, project, "bob")
    n = 40  # 40 messages of ~2,000 tokens: ~80,000 tokens, four times the answer cap
    fill(lc, n, wordy(2000))
    seen: list[int] = []
    while True:
        out = registry.call(lc, bob, "ctx_agent", {"action": "read"})
        assert count_tokens(out["text"]) <= ANSWER_CAP_TOKENS
        if not out["messages"]:
            assert "no new messages" in out["text"]
            break
        seqs = [m["seq"] for m in out["messages"]]
        assert all(f"#{s} " in out["text"] for s in seqs)  # every message delivered is in the text, whole
        assert all(m["body"].splitlines()[-1] in out["text"] for m in out["messages"])
        seen += seqs
        assert cursor(lc, bob.agent_id or "") == seqs[-1]
        assert out["unread"] == n - len(seen) == more(out["text"])
    assert seen == list(range(1, n + 1)) and len(seen) > 1


def test_a_message_larger_than_the_cap_is_sent_cut_and_says_where_the_rest_is(lc: LeanCtx, project: Path) -> None:
    bob = member(lc, project, "bob")
    fill(lc, 1, wordy(40_000))
    fill(lc, 1, "the next one")
    out = registry.call(lc, bob, "ctx_agent", {"action": "read"})
    assert count_tokens(out["text"]) <= ANSWER_CAP_TOKENS
    assert [m["seq"] for m in out["messages"]] == [1] and out["unread"] == 1
    assert "#1 " in out["text"] and "lean-ctx chat peek" in out["text"] and "--seq 1" in out["text"]
    assert "[1 more unread" in out["text"]
    p = subprocess.run([LEAN_CTX, "chat", "peek", "--seq", "1", "--as", "bob", "--json"], capture_output=True,
                       text=True, timeout=60, env={**_env(lc.db), "LEAN_CTX_AGENT_ID": "bob"}, cwd=project, check=False)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)[0]["body"] == out["messages"][0]["body"]  # the whole body, there
    again = registry.call(lc, bob, "ctx_agent", {"action": "read"})
    assert [m["seq"] for m in again["messages"]] == [2] and again["unread"] == 0


def _env(db: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env["LEAN_CTX_DB"] = str(db)
    env["LEAN_CTX_HOME"] = str(Path(db).parent / "home")
    return env


def test_cli_read_is_bounded_by_default_and_all_reads_everything(lc: LeanCtx, tmp_path: Path) -> None:
    DEFAULT_READ_LIMIT = chat.DEFAULT_READ_LIMIT
    total = DEFAULT_READ_LIMIT + 30
    fill(lc, total)

    def read(*args: str) -> subprocess.CompletedProcess[str]:
        p = subprocess.run([LEAN_CTX, "chat", "read", "--as", "bob", *args], capture_output=True, text=True,
                           timeout=60, env=_env(lc.db), cwd=tmp_path, check=False)
        assert p.returncode == 0, p.stderr
        return p

    first = read("--json")
    got = json.loads(first.stdout)
    assert len(got["messages"]) == DEFAULT_READ_LIMIT and got["unread"] == 30
    human = read("-n", "5")
    assert human.stdout.count("\n    m") == 5 and "25 more unread" in human.stderr
    rest = read("--all", "--json")
    assert len(json.loads(rest.stdout)["messages"]) == 25 and cursor(lc, "bob") == total


def test_http_read_without_a_limit_is_bounded(tmp_path: Path) -> None:
    DEFAULT_READ_LIMIT = chat.DEFAULT_READ_LIMIT
    from leanctx.api.http.server import BackgroundServer
    from tests.api.test_http_common import Api, make_config

    server = BackgroundServer(make_config(tmp_path)).start()
    try:
        api = Api(server)
        a, b = api.register("claude"), api.register("cursor")
        for i in range(DEFAULT_READ_LIMIT + 10):
            api.ok("/v1/chat/post", a, title=f"m{i}", body="x")
        r = api.ok("/v1/chat/read", b)["result"]
        assert len(r["messages"]) == DEFAULT_READ_LIMIT and r["unread"] == 10
        assert r["cursor"] == r["messages"][-1]["seq"]
        assert len(api.ok("/v1/chat/read", b)["result"]["messages"]) == 10
    finally:
        server.stop()


# --- the real MCP client over stdio ----------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_mcp_stdio_reads_hundreds_of_large_messages_in_capped_answers(tmp_path: Path,
                                                                           anyio_backend: str) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp_types import Implementation

    project = tmp_path / "proj"
    project.mkdir()
    db = tmp_path / "events.db"
    n = 300
    with LeanCtx(db) as lc:
        fill(lc, n, wordy(1500))  # ~450,000 tokens, ~1.8 MB of text
    env = {"LEAN_CTX_DB": str(db), "LEAN_CTX_HOME": str(tmp_path / "home"), "LEAN_CTX_AGENT_ID": "reader-1"}
    server = StdioServerParameters(command=LEAN_CTX, args=["mcp"], env=env, cwd=str(project))
    seen: list[int] = []
    structured: Any = {"lean-ctx/structured": True}  # the result's fields too (mcp_server's module doc)
    async with Client(server, mode="legacy", client_info=Implementation(name="claude-code", version="1.0"),
                      read_timeout_seconds=60) as client:
        for _ in range(n):
            r = await client.call_tool("ctx_agent", {"action": "read"}, meta=structured)
            text = "\n".join(getattr(c, "text", "") for c in r.content if getattr(c, "type", "") == "text")
            assert not r.is_error, text
            assert count_tokens(text) <= ANSWER_CAP_TOKENS
            seqs = [m["seq"] for m in r.structured_content["messages"]]
            if not seqs:
                break
            seen += seqs
            with LeanCtx(db) as lc:  # the cursor is past what was delivered, not past what was not
                assert cursor(lc, "reader-1") == seqs[-1]
            assert more(text) == n - len(seen)
    assert seen == list(range(1, n + 1))


# --- channels -------------------------------------------------------------------------------------


def test_ctx_agent_creates_and_lists_channels(lc: LeanCtx, project: Path) -> None:
    alice, bob = member(lc, project, "alice"), member(lc, project, "bob")
    with pytest.raises(LeanCtxError) as ei:
        registry.call(lc, alice, "ctx_agent", {"action": "post", "channel": "work", "title": "t", "body": "b"})
    assert ei.value.code == "CHAT_CHANNEL_NOT_FOUND"
    msg = ei.value.message
    assert "ctx_agent action=init channel=work" in msg and msg.index("ctx_agent") < msg.index("lean-ctx chat init")
    made = registry.call(lc, alice, "ctx_agent", {"action": "init", "channel": "work", "members": ["alice", "bob"],
                                                  "topic": "the parser"})
    assert "work" in made["text"] and "the parser" in made["text"]
    with pytest.raises(LeanCtxError) as ei:
        registry.call(lc, alice, "ctx_agent", {"action": "init", "channel": "work"})
    assert ei.value.code == "CHAT_CHANNEL_EXISTS"
    registry.call(lc, alice, "ctx_agent", {"action": "post", "channel": "work", "title": "t", "body": "b"})
    registry.call(lc, alice, "ctx_task", {"action": "create", "title": "write it", "channel": "work"})
    registry.call(lc, alice, "ctx_task", {"action": "create", "title": "only a task", "channel": "later"})
    listed = registry.call(lc, bob, "ctx_agent", {"action": "channels"})
    lines = {ln.split()[0].lstrip("#"): ln for ln in listed["text"].splitlines() if ln.strip()}
    assert {"general", "work", "later"} <= set(lines), listed["text"]
    work = lines["work"]
    assert "2 members" in work and "1 unread" in work and "1 task" in work and "the parser" in work
    assert "tasks only" in lines["later"] and "ctx_agent action=init channel=later" in listed["text"]
    registry.call(lc, bob, "ctx_agent", {"action": "read", "channel": "work"})
    assert "0 unread" in {ln.split()[0].lstrip("#"): ln for ln in registry.call(
        lc, bob, "ctx_agent", {"action": "channels"})["text"].splitlines() if ln.strip()}["work"]


def test_chat_state_of_a_channel_that_only_has_tasks(lc: LeanCtx, project: Path, tmp_path: Path) -> None:
    alice = member(lc, project, "alice")
    for title in ("one", "two", "three"):
        registry.call(lc, alice, "ctx_task", {"action": "create", "title": title, "channel": "work"})

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([LEAN_CTX, "--project", str(project), "chat", *args], capture_output=True, text=True,
                              timeout=60, env={**_env(lc.db), "LEAN_CTX_AGENT_ID": "alice"}, cwd=project, check=False)

    p = cli("state", "work")
    assert p.returncode == 0, p.stderr
    assert "tasks only" in p.stdout and "ctx_agent action=init channel=work" in p.stdout
    assert "## tasks (3 not finished" in p.stdout and "one" in p.stdout
    nothing = cli("state", "nowhere")
    assert nothing.returncode == 2 and "CHAT_CHANNEL_NOT_FOUND" in nothing.stderr
    assert "ctx_agent action=init channel=nowhere" in nothing.stderr
    listed = cli("channels")
    assert listed.returncode == 0 and "work" in listed.stdout and "tasks" in listed.stdout
