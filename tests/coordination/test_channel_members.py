"""Who may post where: channel members, and whom a directed message may go to.

A channel created with members (``chat init --members``) takes posts from its members and its
creator only; another poster is refused with ``CHAT_NOT_MEMBER`` and nothing is appended but the
bus's record of the refusal. A channel without members (``general`` included) stays open, and
reading a members channel stays open to everyone. A directed message goes to someone the bus
knows — a registered agent, a channel member, or an identity that has posted, read or reported
— whoever sends it: an unregistered CLI sender is refused (``AGENT_NOT_FOUND``) like a
registered one when it addresses an identity that never registered and never acted. Real SQLite
logs, the real command bus, and the real ``lean-ctx`` CLI in subprocesses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from leanctx.app import LeanCtx
from leanctx.commands.agents import RegisterAgent
from leanctx.commands.chat import InitChannel, PostMessage, ReadMessages
from leanctx.errors import LeanCtxError
from leanctx.events.codec import payload_dict
from tools.replay import replay

P = "/p"
LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))


@pytest.fixture
def lc(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "e.db") as app:
        yield app


def do(lc: LeanCtx, cmd: Any, actor: str) -> Any:
    return lc.bus.dispatch(cmd, actor=actor, project=P).value


def refused(lc: LeanCtx, cmd: Any, actor: str, code: str) -> LeanCtxError:
    head = lc.store.head().position
    with pytest.raises(LeanCtxError) as ei:
        do(lc, cmd, actor)
    assert ei.value.code == code, ei.value
    appended = lc.store.read_all(since=head)
    assert [e.kind for e in appended] == ["tool.called"]  # the refusal's record, nothing else
    assert payload_dict(appended[0].payload)["error_code"] == code
    return ei.value


# --- channel members --------------------------------------------------------------------------


def test_a_members_channel_takes_posts_from_members_and_its_creator_only(lc: LeanCtx) -> None:
    bob_name = do(lc, RegisterAgent(agent_type="cli", agent_id="bob", project_root=P), "bob").name
    do(lc, InitChannel(channel="secret", members=[bob_name, "carol"]), "alice")  # alice: creator, not listed
    assert do(lc, PostMessage(channel="secret", title="from the creator", body="x"), "alice").seq == 1
    assert do(lc, PostMessage(channel="secret", title="from bob", body="x"), "bob").seq == 2  # listed by name
    assert do(lc, PostMessage(channel="secret", title="from carol", body="x", to="bob"), "carol").seq == 3
    err = refused(lc, PostMessage(channel="secret", title="let me in", body="x"), "mallory", "CHAT_NOT_MEMBER")
    assert "mallory" in err.message and "bob, carol" in err.message and "(alice)" in err.message
    assert err.details == {"channel": "secret", "sender": "mallory", "created_by": "alice"}
    refused(lc, PostMessage(channel="secret", title="dm", body="x", to="bob"), "mallory", "CHAT_NOT_MEMBER")
    # reading stays open: mallory sees the broadcasts, never the directed message
    read = do(lc, ReadMessages(channel="secret"), "mallory")
    assert [m.title for m in read.messages] == ["from the creator", "from bob"]


def test_channels_without_members_stay_open(lc: LeanCtx) -> None:
    do(lc, InitChannel(channel="open"), "alice")
    assert do(lc, PostMessage(channel="open", title="hi", body="x"), "mallory").seq == 1
    assert do(lc, PostMessage(title="in general", body="x"), "mallory").seq == 1


def test_replay_matches_after_refused_posts(lc: LeanCtx) -> None:
    do(lc, InitChannel(channel="secret", members=["bob"]), "alice")
    do(lc, PostMessage(channel="secret", title="a", body="x"), "bob")
    refused(lc, PostMessage(channel="secret", title="b", body="x"), "mallory", "CHAT_NOT_MEMBER")
    report = replay(lc, verify=True)
    assert report.ok and all(p.match for p in report.projections), [p.name for p in report.projections if not p.match]


# --- directed messages from unregistered senders ---------------------------------------------------


def test_an_unregistered_sender_may_not_address_an_identity_nobody_has_seen(lc: LeanCtx) -> None:
    err = refused(lc, PostMessage(title="hi", body="for later", to="frank"), "erin", "AGENT_NOT_FOUND")
    assert "'frank'" in err.message and "ctx_agent action=list" in err.message
    # someone the bus knows: a registered agent, a channel member, an identity that has posted
    do(lc, RegisterAgent(agent_type="cli", agent_id="gina", project_root=P), "gina")
    assert do(lc, PostMessage(title="hi", body="x", to="gina"), "erin").to == "gina"
    do(lc, InitChannel(channel="team", members=["hank"]), "erin")
    assert do(lc, PostMessage(title="hi", body="x", to="hank"), "erin").to == "hank"
    do(lc, PostMessage(title="hello", body="x"), "frank")
    assert do(lc, PostMessage(title="now you exist", body="x", to="frank"), "erin").to == "frank"


# --- the real CLI -----------------------------------------------------------------------------------


def test_the_cli_refuses_non_members_and_dms_to_nobody(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env["LEAN_CTX_DB"] = str(tmp_path / "cli.db")

    def cli(agent: str | None, *args: str) -> subprocess.CompletedProcess[str]:
        e = dict(env) if agent is None else {**env, "LEAN_CTX_AGENT_ID": agent}
        return subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, check=False, timeout=60,
                              cwd=tmp_path, env=e)

    def code(p: subprocess.CompletedProcess[str]) -> str:
        assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
        return str(json.loads(p.stdout)["error"]["code"])

    assert cli("alice", "chat", "init", "secret", "--members", "alice,bob").returncode == 0
    assert cli("bob", "chat", "post", "-c", "secret", "--to", "all", "--title", "t", "--body", "b").returncode == 0
    assert code(cli("carol", "--json", "chat", "post", "-c", "secret", "--to", "all", "--title", "t",
                    "--body", "intruder")) == "CHAT_NOT_MEMBER"
    assert code(cli(None, "--json", "chat", "post", "-c", "secret", "--to", "all", "--title", "t",
                    "--body", "intruder")) == "CHAT_NOT_MEMBER"  # the default local-<ppid> identity too
    human = cli("carol", "chat", "post", "-c", "secret", "--to", "all", "--title", "t", "--body", "b")
    assert human.returncode == 2 and human.stderr.startswith("error[CHAT_NOT_MEMBER]:"), human.stderr
    read = cli("carol", "--json", "chat", "read", "-c", "secret")
    assert read.returncode == 0 and [m["from"] for m in json.loads(read.stdout)["messages"]] == ["bob"]
    # an unregistered sender's DM to an identity nobody has seen
    assert code(cli("alice", "--json", "chat", "post", "--to", "nobody-ever", "--title", "hi",
                    "--body", "x")) == "AGENT_NOT_FOUND"
    ok = cli("alice", "--json", "chat", "post", "--to", "bob", "--title", "hi", "--body", "x")  # bob has posted
    assert ok.returncode == 0 and json.loads(ok.stdout)["to"] == "bob"
