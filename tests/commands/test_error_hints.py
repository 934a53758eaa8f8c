"""Error hints every surface can follow.

A refusal that tells the agent what to run next names the MCP tool action first, with the
arguments it needs, then the CLI command (``see the tasks (ctx_task action=list channel=dev, or
`lean-ctx chat task list --channel dev`)``); where no tool action does it (path locks, channels,
chat init/peek, keys) the CLI command alone. Each hint is provoked here through the tool
registry as an MCP caller (real log, real files), and the hints of the coordination modules are
checked against what exists: every ``ctx_<tool> action=<a> field=...`` named is a tool, one of
its ``Action`` literals and fields of its arguments; every `lean-ctx ...` named is a real
subcommand (its ``--help`` exits 0 in a subprocess); and a CLI command that has a tool action
never appears in a message without it.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from leanctx import clock
from leanctx.api import registry
from leanctx.api.registry import Caller
from leanctx.app import LeanCtx
from leanctx.commands.agents import Deregister
from leanctx.errors import LeanCtxError

ROOT = Path(__file__).resolve().parents[2]
LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
FILES = [ROOT / "leanctx" / p for p in (
    "commands/agents.py", "commands/budgets.py", "commands/chat.py", "commands/knowledge.py",
    "commands/locks.py", "commands/sessions.py", "commands/task_delegation.py", "commands/task_handover.py",
    "commands/task_leases.py",
    "commands/task_rules.py", "commands/tasks.py", "channel_state.py", "handoff_bundle.py")]
# CLI commands that an MCP tool action also does (written out here, independently of the messages)
TOOL_FOR_CLI = {
    "agent list": "ctx_agent action=list", "agent register": "ctx_agent action=register",
    "session list": "ctx_session action=list", "knowledge recall": "ctx_knowledge action=recall",
    "knowledge status": "ctx_knowledge action=status", "knowledge export": "ctx_knowledge action=export",
    "knowledge resolve": "ctx_knowledge action=resolve", "chat task list": "ctx_task action=list",
    "chat task claim": "ctx_task action=claim", "chat task recover": "ctx_task action=recover",
    "chat task update": "ctx_task action=update", "handoff create": "ctx_handoff action=create",
    "chat init": "ctx_agent action=init", "chat channels": "ctx_agent action=channels",
}
TOOL_HINT = re.compile(r"\b(ctx_[a-z_]+) action=([a-z_]+)((?: [a-z_]+=\S+)*)")
CLI_HINT = re.compile(r"`+lean-ctx ((?:[a-z][a-z-]*)(?: [a-z][a-z-]*)*)")


@pytest.fixture
def lc(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "e.db") as app:
        yield app


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    return p


def _caller(lc: LeanCtx, project: Path, agent: str, role: str = "dev") -> Caller:
    me = Caller(agent, f"s-{agent}", str(project))
    registry.call(lc, me, "ctx_agent", {"action": "register", "role": role})
    return me


@pytest.fixture
def alice(lc: LeanCtx, project: Path) -> Caller:
    return _caller(lc, project, "alice")


@pytest.fixture
def bob(lc: LeanCtx, project: Path) -> Caller:
    return _caller(lc, project, "bob", "review")


def refused(lc: LeanCtx, who: Caller, tool: str, code: str, **args: Any) -> str:
    with pytest.raises(LeanCtxError) as ei:
        registry.call(lc, who, tool, args)
    assert ei.value.code == code, ei.value.message
    return ei.value.message


def names(text: str, *hints: str) -> None:
    missing = [h for h in hints if h not in text]
    assert not missing, f"not in the message: {missing}\n--- message:\n{text}"


# --- each hint, provoked as an MCP caller ------------------------------------------------------


def test_an_unknown_agent_is_pointed_at_the_agent_list(lc: LeanCtx, project: Path) -> None:
    ghost = Caller("ghost", "s-ghost", str(project))
    msg = refused(lc, ghost, "ctx_agent", "AGENT_NOT_FOUND", action="heartbeat")
    names(msg, "ctx_agent action=list", "`lean-ctx agent list`")


def test_an_agent_that_left_is_told_how_to_rejoin(lc: LeanCtx, alice: Caller) -> None:
    lc.bus.dispatch(Deregister(agent="alice"), actor="alice", project=alice.project)
    msg = refused(lc, alice, "ctx_agent", "AGENT_LEFT", action="heartbeat")
    names(msg, "ctx_agent action=register role=dev", "`lean-ctx agent register --type mcp --role dev --id alice`")
    registry.call(lc, alice, "ctx_agent", {"action": "register", "role": "dev"})  # the hint works
    registry.call(lc, alice, "ctx_agent", {"action": "heartbeat"})


def test_knowledge_hints(lc: LeanCtx, alice: Caller, bob: Caller) -> None:
    msg = refused(lc, alice, "ctx_knowledge", "KNOWLEDGE_NOT_FOUND", action="remove", key="db.engine")
    names(msg, "ctx_knowledge action=recall query=db.engine", "`lean-ctx knowledge recall db.engine`")
    msg = refused(lc, alice, "ctx_knowledge", "KNOWLEDGE_INVALID_IMPORT", action="import", data="not json\n")
    names(msg, "ctx_knowledge action=export", "`lean-ctx knowledge export`")
    for who, value in ((alice, "sqlite"), (bob, "postgres")):
        registry.call(lc, who, "ctx_knowledge", {"action": "remember", "category": "architecture", "key": "db",
                                                 "value": value})
    shown = registry.call(lc, alice, "ctx_knowledge", {"action": "show", "key": "db"})["text"]
    names(shown, "CONFLICT", "ctx_knowledge action=resolve key=db value=", "`lean-ctx knowledge resolve db [VALUE]`")


def test_a_missing_snapshot_is_pointed_at_the_session_list(lc: LeanCtx, alice: Caller) -> None:
    msg = refused(lc, alice, "ctx_session", "SESSION_SNAPSHOT_NOT_FOUND", action="load", name="before-refactor")
    names(msg, "ctx_session action=list", "`lean-ctx session list`")


def test_task_hints(lc: LeanCtx, alice: Caller, bob: Caller, monkeypatch: pytest.MonkeyPatch) -> None:
    msg = refused(lc, alice, "ctx_task", "TASK_NOT_FOUND", action="claim", task_id="nope", channel="dev")
    names(msg, "ctx_task action=list channel=dev", "`lean-ctx chat task list --channel dev`")
    registry.call(lc, alice, "ctx_task", {"action": "create", "title": "parse"})
    msg = refused(lc, alice, "ctx_task", "LEASE_NOT_FOUND", action="renew", task_id="t1")
    names(msg, "ctx_task action=claim task_id=t1", "`lean-ctx chat task claim t1`")
    registry.call(lc, alice, "ctx_task", {"action": "claim", "task_id": "t1"})
    registry.call(lc, alice, "ctx_task", {"action": "block", "task_id": "t1", "reason": "waits for review"})
    msg = refused(lc, alice, "ctx_task", "TASK_CLAIM_REQUIRED", action="update", task_id="t1", status="in_progress")
    names(msg, "ctx_task action=claim task_id=t1 channel=general", "`lean-ctx chat task claim t1 --channel general`")
    msg = refused(lc, alice, "ctx_task", "LEASE_NOT_FOUND", action="release", task_id="t1")
    names(msg, "ctx_task action=claim task_id=t1", "ctx_task action=update task_id=t1 status=open",
          "`lean-ctx chat task update t1 --status open`")
    registry.call(lc, alice, "ctx_task", {"action": "claim", "task_id": "t1", "lease_seconds": 60})
    later = clock.now() + 120
    monkeypatch.setattr(clock, "now", lambda: later)
    msg = refused(lc, bob, "ctx_task", "LEASE_EXPIRED_RECOVER_REQUIRED", action="claim", task_id="t1")
    names(msg, "ctx_task action=recover task_id=t1 channel=general reason=",
          "`lean-ctx chat task recover t1 --channel general --reason")


def test_a_handed_over_task_nobody_owns_is_pointed_at_claim(lc: LeanCtx, alice: Caller, bob: Caller) -> None:
    registry.call(lc, alice, "ctx_task", {"action": "create", "title": "parse", "to": "alice"})
    bundle = registry.call(lc, alice, "ctx_handoff", {"action": "create"})["handoff"]["bundle"]
    got = registry.call(lc, bob, "ctx_handoff", {"action": "import", "bundle": bundle, "apply_workflow": True})
    (t,) = got["import"]["tasks"]
    assert t["code"] == "TASK_HANDOVER_NOT_SENDERS"
    names(got["text"], "ctx_task action=claim task_id=t1 channel=general",
          "`lean-ctx chat task claim t1 --channel general`")


def test_an_edited_bundle_asks_for_a_fresh_one(lc: LeanCtx, alice: Caller, bob: Caller) -> None:
    bundle = registry.call(lc, alice, "ctx_handoff", {"action": "create"})["handoff"]["bundle"]
    edited = json.dumps(json.loads(bundle), indent=1)
    msg = refused(lc, bob, "ctx_handoff", "HANDOFF_TAMPERED", action="import", bundle=edited)
    names(msg, "ctx_handoff action=create", "`lean-ctx handoff create`")


# --- every hint in the coordination modules names what exists ----------------------------------


def _strings(path: Path) -> tuple[list[str], list[str]]:
    """The module's string literals (an f-string's fields as ``{...}``): (messages, docstrings)."""
    tree = ast.parse(path.read_text())
    docs: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.add(id(first.value))
    inner = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    messages: list[str] = []
    docstrings: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in inner:
            (docstrings if id(node) in docs else messages).append(node.value)
        elif isinstance(node, ast.JoinedStr):
            messages.append("".join(str(v.value) if isinstance(v, ast.Constant) else "{...}" for v in node.values))
    return messages, docstrings


def _actions(tool: str) -> tuple[set[str], set[str]]:
    args = registry.get(tool).args
    action = typing.get_type_hints(args)["action"]
    return set(typing.get_args(action)), {f.name for f in msgspec.structs.fields(args)}


def test_tool_hints_name_real_tools_actions_and_fields() -> None:
    seen = []
    for path in FILES:
        for text in _strings(path)[0]:
            for tool, action, rest in TOOL_HINT.findall(text):
                seen.append(f"{tool} action={action}")
                actions, fields = _actions(tool)  # TOOL_UNKNOWN for a tool that does not exist
                assert action in actions, f"{path.name}: {tool} has no action {action!r}: {text}"
                for field in re.findall(r"([a-z_]+)=", rest):
                    assert field in fields, f"{path.name}: {tool} has no argument {field!r}: {text}"
    assert len(set(seen)) >= 8, seen


def test_a_cli_command_with_a_tool_action_is_named_with_it() -> None:
    for path in FILES:
        for text in _strings(path)[0]:
            for command in CLI_HINT.findall(text):
                hint = next((tool for cli, tool in TOOL_FOR_CLI.items() if command.startswith(cli)), None)
                assert hint is None or hint in text, f"{path.name}: `lean-ctx {command}` without {hint}: {text}"


def test_cli_hints_name_real_subcommands() -> None:
    commands = {c for path in FILES for texts in _strings(path) for t in texts for c in CLI_HINT.findall(t)}
    assert {"chat task list", "chat channels", "keys trust"} <= commands, commands
    for command in sorted(commands):
        p = subprocess.run([LEAN_CTX, *command.split(), "--help"], capture_output=True, text=True, timeout=60,
                           stdin=subprocess.DEVNULL, check=False)
        assert p.returncode == 0, f"`lean-ctx {command}` is not a subcommand:\n{p.stdout}\n{p.stderr}"
        assert "Usage: lean-ctx " + command in " ".join(p.stdout.split()), p.stdout
