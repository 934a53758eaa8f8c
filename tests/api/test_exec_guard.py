"""``--no-exec`` holds on every path: the tool registry refuses tools that run commands or write
project files (``ctx_shell``, ``ctx_edit``, ``ctx_handoff create out=``) for a caller without
exec, whichever way the call comes: ``/v1/tools/<name>``, ``ctx_call`` naming such a tool, or
MCP at ``/mcp`` (real uvicorn, the real ``mcp`` client). And ``ctx_handoff out`` never writes
into ``.git/`` or the log's own folder, even with exec allowed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp_types import Implementation

from leanctx.api import registry
from leanctx.api.registry import Caller
from leanctx.app import LeanCtx
from leanctx.errors import LeanCtxError

from .test_http_common import Api, make_server  # noqa: F401

EXEC_CODE = "HTTP_EXEC_DISABLED"


@pytest.fixture()
def anyio_backend() -> str:
    return "asyncio"


def _project(server: Any) -> Path:
    root = Path(server.state.project_root)
    (root / "keep.py").write_text("x = 1\n")
    (root / ".git" / "hooks").mkdir(parents=True, exist_ok=True)
    return root


# --- the registry: one place every transport passes through -------------------------------------

def test_the_registry_refuses_exec_tools_to_a_caller_without_exec(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "keep.py").write_text("x = 1\n")
    lc = LeanCtx(tmp_path / "e.db")
    try:
        no = Caller("agent-a", None, str(project), allow_exec=False)
        cases: list[tuple[str, dict[str, Any]]] = [
            ("ctx_shell", {"command": "touch ran"}),
            ("ctx_edit", {"path": "keep.py", "old": "x = 1", "new": "x = 2", "allow_unread": True}),
            ("ctx_call", {"name": "ctx_shell", "args": {"command": "touch ran"}}),
            ("ctx_call", {"name": "ctx_edit", "args": {"path": "keep.py", "old": "x", "new": "y"}}),
            ("ctx_handoff", {"action": "create", "out": "keep.py", "overwrite": True}),
            ("ctx_call", {"name": "ctx_handoff", "args": {"action": "create", "out": "new.json"}}),
        ]
        for name, args in cases:
            with pytest.raises(LeanCtxError) as e:
                registry.call(lc, no, name, args)
            assert e.value.code == EXEC_CODE and e.value.http_status == 403, (name, args)
        assert not (project / "ran").exists() and not (project / "new.json").exists()
        assert (project / "keep.py").read_text() == "x = 1\n"
        # what neither runs nor writes still works
        assert "keep.py" in registry.call(lc, no, "ctx_read", {"paths": ["keep.py"]})["text"]
        assert "bundle" in registry.call(lc, no, "ctx_handoff", {"action": "create"})["text"]
        # the default caller (CLI, stdio MCP: the user's own process) may run them
        yes = Caller("agent-a", None, str(project))
        registry.call(lc, yes, "ctx_call", {"name": "ctx_shell", "args": {"command": "touch ran"}})
        assert (project / "ran").exists()
    finally:
        lc.close()


def test_the_tools_offered_without_exec_leave_out_shell_and_edit() -> None:
    names = {t.name for t in registry.tools(allow_exec=False)}
    assert "ctx_shell" not in names and "ctx_edit" not in names and "ctx_read" in names
    assert {"ctx_shell", "ctx_edit"} <= {t.name for t in registry.tools()}


# --- HTTP /v1/tools ------------------------------------------------------------------------------

def test_ctx_call_cannot_reach_exec_tools_over_http_without_exec(make_server) -> None:  # noqa: F811
    server = make_server(allow_exec=False)
    root = _project(server)
    api = Api(server)
    a = api.register()
    for body in ({"name": "ctx_shell", "args": {"command": "id > ran_ctxcall"}},
                 {"name": "ctx_edit", "args": {"path": "keep.py", "old": "x = 1", "new": "x = 2",
                                               "allow_unread": True}}):
        r = api.post("/v1/tools/ctx_call", a, **body)
        assert r.status_code == 403 and r.json()["error"]["code"] == EXEC_CODE, r.text
    r = api.post("/v1/tools/ctx_shell", a, command="id > ran_direct")
    assert r.status_code == 403 and r.json()["error"]["code"] == EXEC_CODE
    assert not (root / "ran_ctxcall").exists() and not (root / "ran_direct").exists()
    assert (root / "keep.py").read_text() == "x = 1\n"


def test_handoff_out_is_a_file_write_refused_without_exec(make_server) -> None:  # noqa: F811
    server = make_server(allow_exec=False)
    root = _project(server)
    api = Api(server)
    a = api.register()
    for out in ("keep.py", ".git/hooks/pre-commit", "fresh.json"):
        r = api.post("/v1/tools/ctx_handoff", a, action="create", out=out, overwrite=True)
        assert r.status_code == 403 and r.json()["error"]["code"] == EXEC_CODE, r.text
    assert (root / "keep.py").read_text() == "x = 1\n"
    assert not (root / ".git/hooks/pre-commit").exists() and not (root / "fresh.json").exists()
    r = api.post("/v1/tools/ctx_handoff", a, action="create")  # the bundle in the answer: no write
    assert r.status_code == 200 and "bundle" in r.json()["text"]


def test_handoff_out_never_writes_into_git_or_the_log_folder(make_server) -> None:  # noqa: F811
    server = make_server(allow_exec=True)
    root = _project(server)
    (root / "hooks-link").symlink_to(root / ".git" / "hooks")
    api = Api(server)
    a = api.register()
    for out in (".git/hooks/pre-commit", ".git/config", "sub/../.git/hooks/post-merge", "hooks-link/pre-push",
                ".GIT/hooks/pre-commit", ".lean-ctx/x.json"):
        r = api.post("/v1/tools/ctx_handoff", a, action="create", out=out, overwrite=True)
        assert r.status_code == 422 and r.json()["error"]["code"] == "HANDOFF_PATH_REFUSED", (out, r.text)
    assert os.listdir(root / ".git" / "hooks") == []
    # the log's own folder, when it is inside the project
    server2 = make_server(allow_exec=True, db=root / "data" / "events.db", secret_path=root.parent / "secret2")
    api2 = Api(server2)
    b = api2.register()
    for out in ("data/events.db", "data/other.json"):
        r = api2.post("/v1/tools/ctx_handoff", b, action="create", out=out, overwrite=True)
        assert r.status_code == 422 and r.json()["error"]["code"] == "HANDOFF_PATH_REFUSED", r.text
    # the log at the project's top: its files are refused, the project's other files are not
    server3 = make_server(allow_exec=True, db=root / "top.db", secret_path=root.parent / "secret3")
    api3 = Api(server3)
    c = api3.register()
    for out in ("top.db", "top.db-wal"):
        r = api3.post("/v1/tools/ctx_handoff", c, action="create", out=out, overwrite=True)
        assert r.status_code == 422 and r.json()["error"]["code"] == "HANDOFF_PATH_REFUSED", r.text
    assert api3.post("/v1/tools/ctx_handoff", c, action="create", out="h.json").status_code == 200
    # an ordinary project file may be written when exec is allowed
    r = api.post("/v1/tools/ctx_handoff", a, action="create", out="keep.py", overwrite=True)
    assert r.status_code == 200, r.text
    assert (root / "keep.py").read_text().startswith("{")


# --- MCP at /mcp ----------------------------------------------------------------------------------

def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


@pytest.mark.anyio
async def test_mcp_on_a_no_exec_server_neither_lists_nor_runs_exec_tools(make_server) -> None:  # noqa: F811
    server = make_server(allow_exec=False, mount_mcp=True)
    root = _project(server)
    async with Client(f"{server.url}/mcp", mode="legacy", client_info=Implementation(name="cursor", version="1"),
                      read_timeout_seconds=30) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert "ctx_read" in names and not names & {"ctx_shell", "ctx_edit"}, names
        for name, args in (("ctx_shell", {"command": "id > ran_mcp"}),
                           ("ctx_call", {"name": "ctx_shell", "args": {"command": "id > ran_mcp_call"}}),
                           ("ctx_edit", {"path": "keep.py", "old": "x = 1", "new": "x = 2", "allow_unread": True}),
                           ("ctx_handoff", {"action": "create", "out": "keep.py", "overwrite": True})):
            r = await c.call_tool(name, args)
            assert r.is_error and _text(r).startswith(f"{EXEC_CODE}:"), (name, _text(r))
        listing = _text(await c.call_tool("ctx_load_tools", {"action": "list"}))
        assert "ctx_shell" not in listing and "ctx_read" in listing
    assert not (root / "ran_mcp").exists() and not (root / "ran_mcp_call").exists()
    assert (root / "keep.py").read_text() == "x = 1\n"


@pytest.mark.anyio
async def test_mcp_on_an_exec_server_still_runs_shell(make_server) -> None:  # noqa: F811
    server = make_server(allow_exec=True, mount_mcp=True)
    root = _project(server)
    async with Client(f"{server.url}/mcp", mode="legacy", client_info=Implementation(name="cursor", version="1"),
                      read_timeout_seconds=30) as c:
        assert "ctx_shell" in {t.name for t in (await c.list_tools()).tools}
        r = await c.call_tool("ctx_shell", {"command": "touch ran_mcp"})
        assert not r.is_error, _text(r)
    assert (root / "ran_mcp").exists()
