"""Coordination and context commands over HTTP: one route per action, results and refusals
with their stable codes, idempotency keys, read routes."""

from __future__ import annotations

from pathlib import Path

from .test_http_common import Api, make_server  # noqa: F401


def test_tasks_chat_locks_scent_diary(make_server) -> None:  # noqa: F811
    server = make_server()
    api = Api(server)
    a, b = api.register("claude"), api.register("cursor")

    t = api.ok("/v1/tasks/create", a, title="write the parser", files_hint=["src/parser.py"])
    assert t["result"]["task"]["created_by"] == a.agent_id and t["positions"] and t["duplicate"] is False
    tid = t["result"]["task"]["task_id"]
    assert api.ok("/v1/tasks/claim", b, task_id=tid)["result"]["task"]["owner"] == b.agent_id
    r = api.post("/v1/tasks/claim", a, task_id=tid)
    assert r.status_code == 409 and r.json()["error"]["code"] == "LEASE_CONFLICT"
    assert api.ok("/v1/tasks/done", b, task_id=tid)["result"]["task"]["status"] == "done"
    r = api.post("/v1/tasks/update", a, task_id=tid, status="open")
    assert r.status_code == 409 and r.json()["error"]["code"] == "TASK_INVALID_TRANSITION"
    listed = api.client.get("/v1/tasks/list", params={"status": "done"}).json()["tasks"]
    assert [x["task_id"] for x in listed] == [tid]
    assert api.client.get("/v1/tasks/show", params={"task_id": tid}).json()["status"] == "done"
    r = api.client.get("/v1/tasks/show", params={"task_id": "nope"})
    assert r.status_code == 404 and r.json()["error"]["code"] == "TASK_NOT_FOUND"
    r = api.client.get("/v1/tasks/list", params={"status": "sleeping"})
    assert r.status_code == 422 and r.json()["error"]["code"] == "TASK_INVALID_ARGUMENT"

    api.ok("/v1/chat/post", a, title="hi b", body="direct", to=b.agent_id)
    read = api.ok("/v1/chat/read", b)["result"]
    assert [m["title"] for m in read["messages"]] == ["hi b"] and read["reader"] == b.agent_id
    assert api.ok("/v1/chat/read", b)["result"]["messages"] == []  # the cursor moved
    peek = api.client.get("/v1/chat/peek", headers=b.headers).json()["messages"]
    assert [m["title"] for m in peek] == ["hi b"]
    assert api.client.get("/v1/chat/peek").status_code == 401
    r = api.post("/v1/chat/post", a, title="", body="x")
    assert r.status_code == 422 and r.json()["error"]["code"] == "CHAT_INVALID_TITLE"
    channels = api.client.get("/v1/chat/channels", headers=a.headers).json()["channels"]
    assert [c["name"] for c in channels] == ["general"]

    lock = api.ok("/v1/locks/acquire", a, paths=["src/parser.py"], reason="editing")["result"]
    assert lock["owner"] == a.agent_id and lock["workspace"] == str(Path(server.config.project_root).resolve())
    r = api.post("/v1/locks/acquire", b, paths=["src"])
    assert r.status_code == 409 and r.json()["error"]["code"] == "PATH_LOCK_CONFLICT"
    assert r.json()["error"]["details"]["holder"] == a.agent_id
    r = api.post("/v1/locks/acquire", b, paths=["../outside"])
    assert r.status_code == 422
    assert [x["path"] for x in api.client.get("/v1/locks/list").json()["locks"]] == ["src/parser.py"]
    assert api.ok("/v1/locks/release", a, paths=["src/parser.py"])["result"]["released"] == ["src/parser.py"]

    mark = api.ok("/v1/scent/claim", a, target="src/lexer.py")["result"]
    assert mark["agent"] == a.agent_id and mark["kind"] == "CLAIMED"
    assert api.ok("/v1/scent/release", a, target="src/lexer.py")["result"]["agent"] == a.agent_id

    api.ok("/v1/diary/write", a, category="decision", text="parser is recursive descent", tags=["parser"])
    entries = api.client.get("/v1/diary/recall", headers=a.headers).json()["entries"]
    assert [e["text"] for e in entries] == ["parser is recursive descent"]
    assert api.client.get("/v1/diary/recall", headers=b.headers).json()["entries"] == []  # b sees its own only
    assert api.client.get("/v1/budget", headers=a.headers).json()["agent_id"] == a.agent_id

    for path in ("/v1/budget/set", "/v1/budget/raise", "/v1/nope/create", "/v1/tasks/explode"):
        r = api.post(path, a, limit=10)
        assert r.status_code == 404 and r.json()["error"]["code"] == "HTTP_NOT_FOUND", path
    r = api.client.get("/v1/tasks/create")
    assert r.status_code == 405 and r.json()["error"]["code"] == "HTTP_METHOD_NOT_ALLOWED"


def test_idempotency_key_replays_the_first_answer(make_server) -> None:  # noqa: F811
    server = make_server()
    api = Api(server)
    a, b = api.register(), api.register()
    key = {"Idempotency-Key": "create-42"}
    first = api.client.post("/v1/tasks/create", json={"title": "once"}, headers={**a.headers, **key}).json()
    head = server.state.lc.store.head().position
    again = api.client.post("/v1/tasks/create", json={"title": "once"}, headers={**a.headers, **key}).json()
    assert again["duplicate"] is True and again["result"] == first["result"]
    assert server.state.lc.store.head().position == head
    # the same key from another agent is another request
    other = api.client.post("/v1/tasks/create", json={"title": "once"}, headers={**b.headers, **key}).json()
    assert other["duplicate"] is False and other["result"]["task"]["task_id"] != first["result"]["task"]["task_id"]
    r = api.client.post("/v1/tasks/create", json={"title": "x"}, headers={**a.headers, "Idempotency-Key": "a b"})
    assert r.status_code == 422 and r.json()["error"]["code"] == "HTTP_INVALID_IDEMPOTENCY_KEY"


def test_context_routes_work_in_the_servers_project(make_server) -> None:  # noqa: F811
    server = make_server(allow_exec=True)
    root = Path(server.config.project_root)
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def main():\n    return 42\n")
    api = Api(server)
    a = api.register(project_root="/somewhere/else")  # the registry group, not where files are read
    tree = api.ok("/v1/context/tree", a)
    assert "app.py" in tree["text"]
    read = api.ok("/v1/context/read", a, paths=["src/app.py"], mode="full")
    assert "return 42" in read["files"][0]["text"]
    r = api.post("/v1/context/read", a, paths=["/etc/passwd"])
    assert r.status_code == 422 and r.json()["error"]["code"].startswith("READ_")
    found = api.ok("/v1/context/search", a, query="main")
    assert "app.py" in found["text"]
    shell = api.ok("/v1/context/shell", a, command="pwd", cwd="src")
    assert shell["exit_code"] == 0 and shell["text"].strip().endswith("src")
    r = api.post("/v1/context/shell", a, command="pwd", cwd="../..")
    assert r.status_code == 422 and r.json()["error"]["code"] == "SHELL_CWD_OUTSIDE_PROJECT"
    edit = api.ok("/v1/context/edit", a, path="src/app.py", old="42", new="43")
    assert (root / "src" / "app.py").read_text().endswith("43\n") and edit
    assert api.client.post("/v1/context/tree", json={}).status_code == 401


def test_every_registry_tool_is_reachable_at_v1_tools(make_server) -> None:  # noqa: F811
    """The generic route serves the MCP tool table: no per-tool HTTP code."""
    from leanctx.api.registry import tools

    server = make_server(allow_exec=False)
    root = Path(server.config.project_root)
    (root / "notes.md").write_text("# notes\nthe parser is in src/\n")
    api = Api(server)
    a, b = api.register("claude"), api.register("cursor")
    names = {t.name for t in tools()}
    assert {"ctx_read", "ctx_agent", "ctx_task", "ctx_shell"} <= names
    read = api.ok("/v1/tools/ctx_read", a, paths=["notes.md"], mode="full")
    assert "the parser is in src/" in read["text"]
    posted = api.ok("/v1/tools/ctx_agent", a, action="post", title="hello", body="from a")
    assert posted["message"]["from"] == a.agent_id
    got = api.ok("/v1/tools/ctx_agent", b, action="read")
    assert "hello" in got["text"]
    made = api.ok("/v1/tools/ctx_task", a, action="create", title="parse")
    tid = made["task"]["task_id"]
    api.ok("/v1/tools/ctx_task", b, action="claim", task_id=tid)
    r = api.post("/v1/tools/ctx_task", a, action="claim", task_id=tid)
    assert r.status_code == 409 and r.json()["error"]["code"] == "LEASE_CONFLICT"
    r = api.post("/v1/tools/ctx_nope", a)
    assert r.status_code == 404 and r.json()["error"]["code"] == "TOOL_UNKNOWN"
    r = api.post("/v1/tools/ctx_read", a, bogus=1)
    assert r.status_code == 422 and r.json()["error"]["code"] == "INVALID_ARGUMENT"
    r = api.post("/v1/tools/ctx_shell", a, command="echo hi")  # exec is off on this server
    assert r.status_code == 403 and r.json()["error"]["code"] == "HTTP_EXEC_DISABLED"
    assert api.client.post("/v1/tools/ctx_read", json={"paths": ["notes.md"]}).status_code == 401
