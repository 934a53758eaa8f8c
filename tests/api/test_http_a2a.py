"""A2A: the Agent Card and JSON-RPC 2.0 tasks/send, tasks/get, tasks/cancel over lean-ctx
tasks, and JSON-RPC error objects for bad input."""

from __future__ import annotations

import pytest

from .test_http_common import Api, make_server  # noqa: F401


def rpc(api: Api, method: str, params: object = None, *, headers: dict | None = None, id_: object = 1) -> dict:
    body: dict = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        body["params"] = params
    r = api.client.post("/a2a", json=body, headers=headers or {})
    assert r.status_code == 200, r.text
    return r.json()


def send_params(task_id: str, text: str, **metadata: object) -> dict:
    return {"id": task_id, "message": {"role": "user", "parts": [{"kind": "text", "text": text}]},
            "metadata": metadata or None}


@pytest.fixture()
def api(make_server) -> Api:  # noqa: F811
    return Api(make_server())


def test_agent_card(api: Api) -> None:
    card = api.client.get("/.well-known/agent.json").json()
    assert card["name"] == "lean-ctx" and card["url"] == f"{api.url}/a2a"
    assert card["skills"][0]["id"] == "tasks"
    assert card["securitySchemes"]["agentToken"] == {"type": "apiKey", "in": "header", "name": "X-Agent-Token",
                                                     "description": "from POST /v1/agents/register"}
    assert api.client.get("/.well-known/agent-card.json").json() == card


def test_send_get_cancel(api: Api) -> None:
    a, b = api.register("claude"), api.register("cursor")
    sent = rpc(api, "tasks/send", send_params("fix-ci", "Fix the flaky CI job\nIt fails one run in ten.",
                                              to_agent=b.agent_id), headers=a.headers)
    task = sent["result"]
    assert sent["id"] == 1 and task["id"] == "fix-ci" and task["status"]["state"] == "submitted"
    view = task["metadata"]["leanctx"]
    assert (view["title"], view["acceptance"], view["to_agent"], view["channel"]) == (
        "Fix the flaky CI job", "It fails one run in ten.", b.agent_id, "a2a")
    # it is an ordinary lean-ctx task
    shown = api.client.get("/v1/tasks/show", params={"task_id": "fix-ci", "channel": "a2a"}).json()
    assert shown["created_by"] == a.agent_id
    # the delegate claims it through A2A
    working = rpc(api, "tasks/send", send_params("fix-ci", "on it", claim=True), headers=b.headers)["result"]
    assert working["status"]["state"] == "working" and working["metadata"]["leanctx"]["owner"] == b.agent_id
    got = rpc(api, "tasks/get", {"id": "fix-ci"})["result"]
    assert got["status"]["state"] == "working"
    # a's cancel is refused while b holds the lease; b's goes through
    refused = rpc(api, "tasks/cancel", {"id": "fix-ci"}, headers=a.headers)["error"]
    assert refused["code"] == -32000 and refused["data"]["code"] == "LEASE_OWNER_MISMATCH"
    done = rpc(api, "tasks/cancel", {"id": "fix-ci"}, headers=b.headers)["result"]
    assert done["status"]["state"] == "canceled"
    assert rpc(api, "tasks/get", {"id": "fix-ci"})["result"]["status"]["state"] == "canceled"
    # a task in another channel
    rpc(api, "tasks/send", send_params("t-ops", "Rotate keys", channel="ops"), headers=a.headers)
    assert rpc(api, "tasks/get", {"id": "t-ops", "metadata": {"channel": "ops"}})["result"]["contextId"] == "ops"


def test_a_completed_task_is_not_cancelable(api: Api) -> None:
    a = api.register()
    rpc(api, "tasks/send", send_params("t1", "Ship it", claim=True), headers=a.headers)
    api.ok("/v1/tasks/done", a, task_id="t1", channel="a2a")
    err = rpc(api, "tasks/cancel", {"id": "t1"}, headers=a.headers)["error"]
    assert err["code"] == -32002 and err["data"]["code"] == "TASK_INVALID_TRANSITION"


def test_json_rpc_errors(api: Api) -> None:
    a = api.register()
    r = api.client.post("/a2a", content=b'{"jsonrpc": "2.0", "method": ', headers={"Content-Type": "application/json"})
    assert r.status_code == 200 and r.json()["error"]["code"] == -32700 and r.json()["id"] is None
    for body in ([], [{"jsonrpc": "2.0", "id": 1, "method": "tasks/get"}], "x", 3,
                 {"id": 1, "method": "tasks/get"}, {"jsonrpc": "1.0", "id": 1, "method": "tasks/get"},
                 {"jsonrpc": "2.0", "id": 1, "method": 7}, {"jsonrpc": "2.0", "id": {"a": 1}, "method": "tasks/get"}):
        r = api.client.post("/a2a", json=body)
        assert r.status_code == 200 and r.json()["error"]["code"] == -32600, body
    assert rpc(api, "tasks/explode", {})["error"]["code"] == -32601
    assert rpc(api, "message/stream", {}, id_="abc")["id"] == "abc"
    for params in ([1], "x", {}, {"id": 5}, {"id": "t1", "message": "hi"},
                   {"id": "t1", "message": {"role": "user", "parts": []}},
                   {"id": "t1", "message": {"role": "user", "parts": [{"kind": "text", "text": "  "}]}},
                   {"id": "t1", "message": {"role": "user", "parts": [{"kind": "text", "text": "x"}]},
                    "metadata": {"claim": "yes"}},
                   {"id": "not a slug!", "message": {"role": "user", "parts": [{"kind": "text", "text": "x"}]}}):
        err = rpc(api, "tasks/send", params, headers=a.headers)["error"]
        assert err["code"] == -32602 and err["data"]["code"], (params, err)
    err = rpc(api, "tasks/get", {"id": "missing"})["error"]
    assert err["code"] == -32001 and err["data"]["code"] == "TASK_NOT_FOUND"
    err = rpc(api, "tasks/cancel", {"id": "missing"}, headers=a.headers)["error"]
    assert err["code"] == -32001
    # acting needs an agent token; reading does not
    err = rpc(api, "tasks/send", send_params("t9", "x"))["error"]
    assert err["code"] == -32000 and err["data"]["code"] == "AUTH_AGENT_TOKEN_REQUIRED"
    err = rpc(api, "tasks/cancel", {"id": "t9"}, headers={"X-Agent-Token": "lct1.bad.bad"})["error"]
    assert err["data"]["code"] == "AUTH_AGENT_TOKEN_INVALID"
    # a notification (no id) gets no answer
    r = api.client.post("/a2a", json={"jsonrpc": "2.0", "method": "tasks/get", "params": {"id": "missing"}})
    assert r.status_code == 204 and r.content == b""
