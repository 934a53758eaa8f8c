"""Who a message reaches, and where a poll resumes.

- Agent names repeat per project (the registry numbers them per project), so with one log
  shared by two projects (``LEAN_CTX_DB``) a name resolves among the caller's project's agents;
  an id resolves in every project.
- A message to a name nobody has (never registered, or an outdated name after a re-register
  renamed the agent) is refused with ``AGENT_NOT_FOUND`` instead of being posted to nobody; one
  to an agent that deregistered is refused with ``AGENT_LEFT``. ``to=all``, channel members and
  identities the bus already knows (unregistered CLI agents that have read or posted) still work,
  and an unregistered sender (the CLI without ``agent register``) may still address anyone.
- A poll cursor past the log's head is refused (``EVENT_CURSOR_AHEAD``), as the SSE stream
  refuses such a ``Last-Event-ID``.
- ``ctx_agent budget`` / ``recall_diary`` about an agent nobody registered say so.

Real SQLite files, the real tool registry (as ``tests/api/test_tool_texts.py``), the real CLI
and the real MCP client.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from leanctx.api import registry
from leanctx.api.registry import Caller
from leanctx.app import LeanCtx
from leanctx.commands.agents import Deregister
from leanctx.commands.chat import InitChannel, PostMessage
from leanctx.commands.chat_reads import poll_events
from leanctx.errors import LeanCtxError

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))


@pytest.fixture
def lc(tmp_path: Path) -> Any:
    app = LeanCtx(tmp_path / "shared.db")  # one log, as LEAN_CTX_DB makes it for several projects
    yield app
    app.close()


def _project(tmp_path: Path, name: str) -> str:
    p = tmp_path / name
    (p / ".git").mkdir(parents=True)
    return str(p)


def _join(lc: Any, agent_id: str, project: str, role: str = "dev") -> Caller:
    me = Caller(agent_id, f"s-{agent_id}", project)
    registry.call(lc, me, "ctx_agent", {"action": "register", "role": role})
    return me


def _call(lc: Any, who: Caller, **args: Any) -> dict[str, Any]:
    return registry.call(lc, who, "ctx_agent", args)


def _refused(lc: Any, who: Caller, **args: Any) -> LeanCtxError:
    with pytest.raises(LeanCtxError) as e:
        registry.call(lc, who, "ctx_agent", args)
    return e.value


def _name(lc: Any, who: Caller) -> str:
    agents = _call(lc, who, action="list")["agents"]
    return str(next(a["name"] for a in agents if a["agent_id"] == who.agent_id))


def _posted(lc: Any) -> int:
    return sum(1 for e in poll_events(lc.store, 0, None).events if e.kind == "message.posted")


# --- 1. names resolve within the caller's project -----------------------------------------------------


def test_a_name_resolves_among_the_callers_project_in_a_shared_log(lc: Any, tmp_path: Path) -> None:
    proj, other = _project(tmp_path, "proj"), _project(tmp_path, "other")
    mate = _join(lc, "b0b0b0b0", other)  # other's mcp-dev-1
    sender = _join(lc, "c0c0c0c0", other, role="review")
    stranger = _join(lc, "a1a1a1a1", proj)  # proj's mcp-dev-1, registered last: the newest of that name
    assert _name(lc, mate) == _name(lc, stranger) == "mcp-dev-1"

    posted = _call(lc, sender, action="post", title="dm", body="for my teammate", to="mcp-dev-1")
    assert posted["message"]["to"] == mate.agent_id
    assert "for my teammate" in _call(lc, mate, action="read")["text"]
    assert _call(lc, stranger, action="read")["messages"] == []

    # an id still reaches an agent of another project
    assert _call(lc, sender, action="post", title="hi", body="by id", to=stranger.agent_id)["message"]["to"] \
        == stranger.agent_id
    assert "by id" in _call(lc, stranger, action="read")["text"]


def test_a_name_only_another_project_has_is_not_found(lc: Any, tmp_path: Path) -> None:
    proj, other = _project(tmp_path, "proj"), _project(tmp_path, "other")
    _join(lc, "a1a1a1a1", proj, role="lead")  # proj's mcp-lead-1; other has no lead
    sender = _join(lc, "c0c0c0c0", other)
    err = _refused(lc, sender, action="post", title="dm", body="x", to="mcp-lead-1")
    assert err.code == "AGENT_NOT_FOUND"
    assert "mcp-lead-1" in err.message and "by its id" in err.message


def test_canonical_agent_keeps_its_old_call_and_scopes_names_by_project(lc: Any, tmp_path: Path) -> None:
    from leanctx.projections.channels import canonical_agent

    proj, other = _project(tmp_path, "proj"), _project(tmp_path, "other")
    mate, stranger = _join(lc, "b0b0b0b0", other), _join(lc, "a1a1a1a1", proj)
    conn = lc.projections.reader("agents")
    assert canonical_agent(conn, "mcp-dev-1") == stranger.agent_id  # unscoped: the newest registration
    assert canonical_agent(conn, "mcp-dev-1", project_root=other) == mate.agent_id
    assert canonical_agent(conn, stranger.agent_id, project_root=other) == stranger.agent_id  # ids: global
    assert canonical_agent(conn, "nobody", project_root=other) == "nobody"  # kept as is


# --- 2. names nobody has, outdated names, agents that left -----------------------------------------


def test_a_message_to_a_name_nobody_has_is_refused_with_a_hint(lc: Any, tmp_path: Path) -> None:
    proj = _project(tmp_path, "proj")
    a = _join(lc, "a1a1a1a1", proj)
    before = _posted(lc)
    err = _refused(lc, a, action="post", title="dm", body="x", to="ghost-agent")
    assert err.code == "AGENT_NOT_FOUND"
    assert "ghost-agent" in err.message and "ctx_agent action=list" in err.message
    assert "lean-ctx agent list" in err.message
    assert _posted(lc) == before  # nothing posted to nobody


def test_an_outdated_name_is_refused_and_the_new_one_works(lc: Any, tmp_path: Path) -> None:
    proj = _project(tmp_path, "proj")
    a, b = _join(lc, "a1a1a1a1", proj), _join(lc, "b0b0b0b0", proj, role="dev")
    old = _name(lc, b)
    _call(lc, b, action="register", role="reviewer")  # renames b
    new = _name(lc, b)
    assert old != new
    assert _refused(lc, a, action="post", title="dm", body="x", to=old).code == "AGENT_NOT_FOUND"
    assert _call(lc, a, action="post", title="dm", body="x", to=new)["message"]["to"] == b.agent_id


def test_a_message_to_an_agent_that_left_says_it_left(lc: Any, tmp_path: Path) -> None:
    proj = _project(tmp_path, "proj")
    a, b = _join(lc, "a1a1a1a1", proj), _join(lc, "b0b0b0b0", proj, role="review")
    name, b_id = _name(lc, b), "b0b0b0b0"
    lc.bus.dispatch(Deregister(agent=b_id, reason="session closed"), actor=b_id, project=proj)
    for ref in (name, b_id):
        err = _refused(lc, a, action="post", title="dm", body="x", to=ref)
        assert err.code == "AGENT_LEFT", err
        assert "left" in err.message and b_id in err.message and "session closed" in err.message


def test_broadcasts_channel_members_and_known_identities_still_work(lc: Any, tmp_path: Path) -> None:
    proj = _project(tmp_path, "proj")
    a = _join(lc, "a1a1a1a1", proj)
    assert _call(lc, a, action="post", title="all", body="x")["message"]["to"] == "all"
    assert _call(lc, a, action="post", title="all", body="x", to="ALL")["message"]["to"] == "all"
    # a member named at the channel's creation, never registered
    lc.bus.dispatch(InitChannel(channel="ops", members=["dave"]), actor="a1a1a1a1", project=proj)
    assert _call(lc, a, action="post", title="m", body="x", to="dave", channel="ops")["message"]["to"] == "dave"
    # an unregistered identity that already used the bus (the CLI's LEAN_CTX_AGENT_ID)
    lc.bus.dispatch(PostMessage(title="hi", body="from erin"), actor="erin", project=proj)
    assert _call(lc, a, action="post", title="re", body="x", to="erin")["message"]["to"] == "erin"


def test_an_unregistered_sender_may_not_address_an_identity_not_seen_yet(lc: Any, tmp_path: Path) -> None:
    # the CLI without `agent register` (free-form identities) follows the same rule as a registered sender
    proj = _project(tmp_path, "proj")
    with pytest.raises(LeanCtxError) as ei:
        lc.bus.dispatch(PostMessage(title="hi", body="for later", to="frank"), actor="erin", project=proj)
    assert ei.value.code == "AGENT_NOT_FOUND"
    lc.bus.dispatch(PostMessage(title="here", body="frank"), actor="frank", project=proj)  # frank has acted
    m = lc.bus.dispatch(PostMessage(title="hi", body="now", to="frank"), actor="erin", project=proj).value
    assert m.to == "frank"
    a = _join(lc, "a1a1a1a1", proj)  # a registered sender: the registry is its address book
    assert _refused(lc, a, action="post", title="hi", body="x", to="zed").code == "AGENT_NOT_FOUND"


def test_the_cli_post_resolves_in_its_project_and_refuses_unknown_names(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_DB=str(db), LEAN_CTX_HOME=os.environ["LEAN_CTX_HOME"])
    proj, other = _project(tmp_path, "proj"), _project(tmp_path, "other")

    def cli(cwd: str, agent: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, check=False, timeout=60, cwd=cwd,
                              env={**env, "LEAN_CTX_AGENT_ID": agent})

    for cwd, who in ((other, "mate"), (proj, "stranger"), (other, "sender")):
        role = "review" if who == "sender" else "dev"
        assert cli(cwd, who, "agent", "register", "--type", "cli", "--role", role, "--id", who).returncode == 0
    p = cli(other, "sender", "chat", "post", "--to", "cli-dev-1", "--title", "t", "--body", "b", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["to"] == "mate"
    p = cli(other, "sender", "chat", "post", "--to", "ghost-agent", "--title", "t", "--body", "b")
    assert p.returncode == 2 and p.stderr.startswith("error[AGENT_NOT_FOUND]:"), p.stderr
    assert "lean-ctx agent list" in p.stderr


# --- 3. a poll cursor past the head ------------------------------------------------------------------


def test_a_poll_cursor_past_the_head_is_refused(lc: Any, tmp_path: Path) -> None:
    a = _join(lc, "a1a1a1a1", _project(tmp_path, "proj"))
    head = lc.store.head().position
    err = _refused(lc, a, action="poll_events", since=1_000_000)
    assert err.code == "EVENT_CURSOR_AHEAD"
    assert "1000000" in err.message and f"since={head}" in err.message and "since=0" in err.message
    at_head = _call(lc, a, action="poll_events", since=head)  # the head itself is a good cursor
    assert at_head["events"] == [] and at_head["next_cursor"] == head
    with pytest.raises(LeanCtxError) as e:
        poll_events(lc.store, head + 1)
    assert e.value.code == "EVENT_CURSOR_AHEAD"


# --- 4. budget and diary of an unknown agent ----------------------------------------------------------


def test_budget_and_diary_of_an_agent_nobody_registered_are_not_found(lc: Any, tmp_path: Path) -> None:
    proj = _project(tmp_path, "proj")
    a, b = _join(lc, "a1a1a1a1", proj), _join(lc, "b0b0b0b0", proj, role="review")
    for action in ("budget", "recall_diary"):
        err = _refused(lc, a, action=action, agent="nobody-here")
        assert err.code == "AGENT_NOT_FOUND", action
        assert "nobody-here" in err.message and "ctx_agent action=list" in err.message
    assert _call(lc, a, action="budget", agent=_name(lc, b))["budget"]["agent_id"] == b.agent_id
    assert b.agent_id in _call(lc, a, action="recall_diary", agent=_name(lc, b))["text"]


# --- through the real MCP client (the audit's scenario) --------------------------------------------


async def _mcp(tmp_path: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp_types import Implementation

    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX")}
    env.update(LEAN_CTX_DB=str(tmp_path / "shared.db"), LEAN_CTX_HOME=str(tmp_path / "home"))
    meta = {"lean-ctx/structured": True}
    proj, other = _project(tmp_path, "proj"), _project(tmp_path, "other")

    def client(name: str, cwd: str) -> Any:
        return Client(StdioServerParameters(command=LEAN_CTX, args=["mcp"], env=env, cwd=cwd), mode="legacy",
                      client_info=Implementation(name=name, version="1"), read_timeout_seconds=60)

    def text(r: Any) -> str:
        return "\n".join(c.text for c in r.content if getattr(c, "type", "") == "text")

    async with client("claude-code", other) as mate, client("cursor", other) as sender, \
            client("claude-code", proj) as stranger:
        async def call(c: Any, **args: Any) -> Any:
            return await c.call_tool("ctx_agent", args, meta=meta)

        for c in (mate, sender, stranger):  # stranger registers last: the newest claude-dev-1
            await call(c, action="list")
        r = await call(sender, action="post", title="dm", body="for my teammate", to="claude-dev-1")
        assert not r.is_error, text(r)
        assert "for my teammate" in text(await call(mate, action="read"))
        assert "for my teammate" not in text(await call(stranger, action="read"))
        r = await call(sender, action="post", title="dm", body="x", to="ghost-agent")
        assert r.is_error and r.structured_content["error"]["code"] == "AGENT_NOT_FOUND"
        r = await call(sender, action="poll_events", since=1_000_000)
        assert r.is_error and r.structured_content["error"]["code"] == "EVENT_CURSOR_AHEAD"
        r = await call(sender, action="budget", agent="nobody-here")
        assert r.is_error and r.structured_content["error"]["code"] == "AGENT_NOT_FOUND"


def test_the_audit_scenario_through_the_real_mcp_client(tmp_path: Path) -> None:
    anyio.run(_mcp, tmp_path)
