"""The tool registry: one table, transport-neutral. Its shape (names, categories, schemas from
the Structs, routes and verbs), argument refusal with stable codes, and tools called in-process
as a caller — no MCP involved."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from leanctx.api import registry
from leanctx.api.registry import Caller
from leanctx.app import LeanCtx
from leanctx.context.tokens import count_tokens
from leanctx.errors import InvalidInput, LeanCtxError, NotFound

LEAN_CTX = str(Path(sys.executable).parent / "lean-ctx")
EXPECTED = {
    "ctx_read": "core", "ctx_shell": "core", "ctx_search": "core", "ctx_tree": "core", "ctx_edit": "core",
    "ctx_expand": "core", "ctx_call": "core", "ctx_load_tools": "core", "ctx_agent": "session",
    "ctx_task": "session", "ctx_session": "session", "ctx_overview": "session", "ctx_knowledge": "memory", "ctx_handoff": "memory",
    "ctx_proof": "memory",
    "ctx_gain": "metrics",
}


@pytest.fixture
def lc(tmp_path: Path) -> Any:
    app = LeanCtx(tmp_path / "e.db")
    yield app
    app.close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    (p / "pkg").mkdir(parents=True)
    (p / "pkg" / "mod.py").write_text("def f():\n    return 1\n")
    return p


def caller(project: Path, agent: str = "a1", session: str | None = "s1", toolset: Any = None) -> Caller:
    return Caller(agent, session, str(project), toolset=toolset)


def test_the_table_holds_every_tool_once_in_a_known_category() -> None:
    rows = registry.tools()
    assert {t.name: t.category for t in rows} == EXPECTED
    assert all(t.category in registry.CATEGORIES for t in rows)
    assert [t.category for t in rows] == sorted((t.category for t in rows), key=list(registry.CATEGORIES).index)
    assert {t.name for t in registry.tools(["metrics"])} == {"ctx_gain"}
    assert set(registry.DEFAULT_CATEGORIES) == {"core", "session"}


def test_each_row_derives_a_schema_a_route_and_a_verb() -> None:
    for t in registry.tools():
        schema = t.input_schema()
        assert schema["type"] == "object" and "$ref" not in json.dumps(schema)
        assert "title" not in schema and "additionalProperties" not in schema
        assert set(schema["properties"]) == set(t.args.__struct_fields__)
        assert t.description and len(t.description) < 500
        assert t.route == f"/v1/tools/{t.name}"
        assert t.verb == t.name.removeprefix("ctx_").replace("_", "-")
        wire = registry.wire(t)
        assert set(wire) == {"name", "description", "inputSchema"}
    read = registry.get("ctx_read").input_schema()
    assert read["required"] == ["paths"]
    assert read["properties"]["task"] == {"type": "string", "description": "what you are doing (task mode)"}
    assert "title" in registry.get("ctx_agent").input_schema()["properties"]  # a field named title survives


class Inner(msgspec.Struct):
    x: int


class Outer(msgspec.Struct, kw_only=True):
    inner: Inner
    maybe: str | None = None
    either: int | str = 1


def test_compact_schema_keeps_nested_definitions() -> None:
    s = registry.compact_schema(msgspec.json.schema(Outer))
    assert s["properties"]["inner"] == {"$ref": "#/$defs/Inner"}
    assert s["$defs"]["Inner"]["properties"] == {"x": {"type": "integer"}}
    assert s["properties"]["maybe"] == {"type": "string"}
    assert "anyOf" in s["properties"]["either"]


def test_the_default_list_stays_small() -> None:
    default = [registry.wire(t) for t in registry.tools(registry.DEFAULT_CATEGORIES)]
    assert count_tokens(json.dumps({"tools": default}, separators=(",", ":"))) <= 2000


def test_arguments_are_refused_with_stable_codes(lc: Any, project: Path) -> None:
    with pytest.raises(NotFound) as e:
        registry.call(lc, caller(project), "ctx_nope", {})
    assert e.value.code == "TOOL_UNKNOWN"
    for bad in ({"paths": ["a"], "bogus": 1}, {"mode": "full"}, {"paths": "a"}, [1, 2]):
        with pytest.raises(InvalidInput) as e:
            registry.call(lc, caller(project), "ctx_read", bad)
        assert e.value.code == "INVALID_ARGUMENT" and "ctx_read" in e.value.message
    with pytest.raises(InvalidInput) as e:
        registry.call(lc, caller(project), "ctx_call", {"name": "ctx_call", "args": {}})
    assert e.value.code == "INVALID_ARGUMENT"
    with pytest.raises(LeanCtxError) as e:
        registry.call(lc, caller(project), "ctx_read", {"paths": ["../x"]})
    assert e.value.code == "READ_PATH_OUTSIDE_PROJECT"


def test_tools_run_in_process_as_the_caller(lc: Any, project: Path) -> None:
    tree = registry.call(lc, caller(project), "ctx_tree", {})
    assert "pkg/ (1)" in tree["text"] and tree["files"] == 1
    first = registry.call(lc, caller(project), "ctx_read", {"paths": ["pkg/mod.py"], "mode": "full"})
    again = registry.call(lc, caller(project), "ctx_read", {"paths": ["pkg/mod.py"], "mode": "full"})
    assert "return 1" in first["text"] and again["files"][0]["stub"] is True
    other = registry.call(lc, caller(project, session="s2"), "ctx_read", {"paths": ["pkg/mod.py"], "mode": "full"})
    assert other["files"][0]["stub"] is False  # another conversation gets the content
    shell = registry.call(lc, caller(project), "ctx_shell", {"command": "pwd"})  # cwd: the project root
    assert shell["text"].strip() == str(project) and shell["exit_code"] == 0
    json.dumps(shell)  # JSON-ready


def test_strings_convert_where_the_schema_says_number(lc: Any, project: Path) -> None:
    r = registry.call(lc, caller(project), "ctx_tree", {"depth": "1"})
    assert r["text"].splitlines()[1].strip() == "pkg/ (1)"


def test_agent_and_task_actions(lc: Any, project: Path) -> None:
    a, b = caller(project, "alice", "s1"), caller(project, "bob", "s2")
    registry.call(lc, a, "ctx_agent", {"action": "register", "role": "review"})
    registry.call(lc, b, "ctx_agent", {"action": "register", "role": "dev"})  # a message to nobody is refused
    assert "alice" in registry.call(lc, b, "ctx_agent", {"action": "list"})["text"]
    registry.call(lc, a, "ctx_agent", {"action": "post", "title": "t", "body": "hello bob", "to": "bob"})
    assert "hello bob" in registry.call(lc, b, "ctx_agent", {"action": "read"})["text"]
    registry.call(lc, a, "ctx_agent", {"action": "claim", "target": "pkg/mod.py"})
    with pytest.raises(LeanCtxError) as e:
        registry.call(lc, b, "ctx_agent", {"action": "claim", "target": "pkg/mod.py"})
    assert e.value.code == "SCENT_ALREADY_CLAIMED"
    assert "pkg/mod.py CLAIMED (active)" in registry.call(lc, b, "ctx_agent", {"action": "sync"})["text"]
    registry.call(lc, a, "ctx_agent", {"action": "diary", "category": "decision", "text": "use sqlite",
                                       "tags": ["db"]})
    assert "use sqlite" in registry.call(lc, b, "ctx_agent", {"action": "recall_diary", "agent": "alice"})["text"]
    events = registry.call(lc, b, "ctx_agent", {"action": "poll_events", "kinds": ["message.posted"]})
    assert len(events["events"]) == 1 and events["next_cursor"] > 0
    assert "unlimited" in registry.call(lc, a, "ctx_agent", {"action": "budget"})["text"]
    t = registry.call(lc, a, "ctx_task", {"action": "create", "title": "parse", "files": ["pkg/mod.py"]})["task"]
    registry.call(lc, a, "ctx_task", {"action": "claim", "task_id": t["task_id"]})
    with pytest.raises(LeanCtxError) as e:
        registry.call(lc, b, "ctx_task", {"action": "done", "task_id": t["task_id"]})
    assert e.value.code == "LEASE_OWNER_MISMATCH"
    done = registry.call(lc, a, "ctx_task", {"action": "done", "task_id": t["task_id"]})
    assert done["task"]["status"] == "done"
    assert "[done]" in registry.call(lc, b, "ctx_task", {"action": "show", "task_id": t["task_id"]})["text"]
    with pytest.raises(InvalidInput):
        registry.call(lc, a, "ctx_task", {"action": "claim"})


class _Set:
    def __init__(self) -> None:
        self.cats = ["core", "session"]

    def loaded(self) -> list[str]:
        return list(self.cats)

    def load(self, categories: list[str]) -> list[str]:
        new = [c for c in categories if c not in self.cats]
        self.cats += new
        return new

    def unload(self, categories: list[str]) -> list[str]:
        gone = [c for c in categories if c in self.cats]
        self.cats = [c for c in self.cats if c not in gone]
        return gone


def test_load_tools_acts_on_the_callers_toolset(lc: Any, project: Path) -> None:
    ts = _Set()
    r = registry.call(lc, caller(project, toolset=ts), "ctx_load_tools", {"action": "load", "categories": ["metrics"]})
    assert r["changed"] == ["metrics"] and ts.cats == ["core", "session", "metrics"]
    with pytest.raises(InvalidInput) as e:
        registry.call(lc, caller(project, toolset=ts), "ctx_load_tools", {"action": "load", "categories": ["x"]})
    assert e.value.code == "TOOLS_UNKNOWN_CATEGORY"
    everything = registry.call(lc, caller(project), "ctx_load_tools", {})  # no toolset: all listed
    assert all(row["loaded"] for row in everything["categories"])


def test_adding_a_row_needs_no_transport_change() -> None:
    class PingArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
        word: str = "pong"

    @registry.tool("ctx_test_ping", category="debug", description="Echo a word.", args=PingArgs)
    def ping(lc: Any, who: Caller, a: PingArgs) -> dict[str, Any]:
        return {"text": f"{a.word} from {who.agent_id}"}

    try:
        assert registry.call(None, Caller("me", None, "/"), "ctx_test_ping", {"word": "hi"})["text"] == "hi from me"
        assert [t.name for t in registry.tools(["debug"])] == ["ctx_test_ping"]
        with pytest.raises(ValueError):
            registry.tool("ctx_test_ping", category="debug", description="again", args=PingArgs)(ping)
    finally:
        registry._TABLE.pop("ctx_test_ping", None)


def test_the_cli_prints_the_registry(tmp_path: Path) -> None:
    p = subprocess.run([LEAN_CTX, "--json", "--db", str(tmp_path / "e.db"), "mcp", "--tools"], check=False, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert {r["name"] for r in out["tools"]} == set(EXPECTED)
    assert 0 < out["default_tokens"] <= 2000


def test_the_standalone_http_server_binds_loopback_only(tmp_path: Path) -> None:
    p = subprocess.run([LEAN_CTX, "--db", str(tmp_path / "e.db"), "mcp", "--http", "--host", "0.0.0.0"],
                       check=False, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "MCP_NON_LOOPBACK_BIND" in p.stderr
