"""Bodies over HTTP are read strictly: a field the route does not know is refused (422 naming it
and the accepted ones) instead of being dropped, in command, agent and A2A bodies alike; an
empty body sent with a content type other than JSON is refused like a non-empty one (415)."""

from __future__ import annotations

from typing import Any

import pytest

from leanctx.api.http.server import BackgroundServer
from leanctx.events import TopicFilter
from leanctx.proof_store import proofs_dir

from .test_http_common import Api, make_server  # noqa: F401


def _kinds(server: BackgroundServer, kind: str) -> list[Any]:
    return server.state.lc.store.read_last(100, TopicFilter(kinds=(kind,)))


def _refused(r: Any, field: str, accepted: str) -> str:
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert err["code"] == "INVALID_INPUT", err
    assert field in err["message"] and accepted in err["message"], err["message"]
    return str(err["message"])


def test_a_misspelt_command_field_is_refused_not_dropped(make_server) -> None:  # noqa: F811
    server = make_server()
    api = Api(server)
    a = api.register()
    msg = _refused(api.post("/v1/chat/post", a, title="t", body="b", chanel="secret-room"), "chanel", "channel")
    assert "reply_to" in msg  # the accepted fields are listed
    assert _kinds(server, "message.posted") == []  # nothing went to general
    _refused(api.post("/v1/locks/acquire", a, paths=["a.py"], ttl_seconds=30), "ttl_seconds", "lease_seconds")
    assert api.client.get("/v1/locks/list").json()["locks"] == []
    _refused(api.post("/v1/tasks/create", a, title="x", assignee="b"), "assignee", "to_agent")
    # the well-formed bodies still pass
    assert api.ok("/v1/chat/post", a, title="t", body="b", channel="general")["result"]["channel"] == "general"
    lock = api.ok("/v1/locks/acquire", a, paths=["a.py"], lease_seconds=30)["result"]
    assert lock["locks"][0]["lease_seconds"] == 30


def test_agent_bodies_refuse_unknown_fields(make_server) -> None:  # noqa: F811
    api = Api(make_server())
    r = api.client.post("/v1/agents/register", json={"agent_type": "claude", "rol": "reviewer"})
    _refused(r, "rol", "role")
    a = api.register()
    _refused(api.post("/v1/agents/heartbeat", a, stauts="busy"), "stauts", "status")
    _refused(api.post("/v1/agents/deregister", a, reson="done"), "reson", "reason")


def rpc(api: Api, method: str, params: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    r = api.client.post("/a2a", json={"jsonrpc": "2.0", "id": 7, "method": method, "params": params},
                        headers=headers)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def _send(task_id: str, **metadata: Any) -> dict[str, Any]:
    return {"id": task_id, "message": {"role": "user", "parts": [{"kind": "text", "text": "fix it"}]},
            "metadata": metadata}


def test_a2a_metadata_refuses_unknown_options(make_server) -> None:  # noqa: F811
    server = make_server()
    api = Api(server)
    a = api.register()
    err = rpc(api, "tasks/send", _send("t-1", chanel="secret"), a.headers)["error"]
    assert err["code"] == -32602 and err["data"]["code"] == "INVALID_INPUT"
    assert "chanel" in err["data"]["message"] and "channel" in err["data"]["message"], err
    assert "lease_seconds" in err["data"]["message"]
    assert _kinds(server, "task.created") == []
    err = rpc(api, "tasks/get", {"id": "t-1", "metadata": {"chanel": "x"}}, a.headers)["error"]
    assert err["code"] == -32602 and "chanel" in err["data"]["message"]
    err = rpc(api, "tasks/cancel", {"id": "t-1", "metadata": {"chanel": "x"}}, a.headers)["error"]
    assert err["code"] == -32602 and "chanel" in err["data"]["message"]
    # A2A's own fields outside metadata stay accepted (other clients send them)
    ok = _send("t-2", channel="a2a")
    ok["message"]["messageId"] = "m-1"
    ok["configuration"] = {"acceptedOutputModes": ["application/json"]}
    assert rpc(api, "tasks/send", ok, a.headers)["result"]["id"] == "t-2"


EMPTY_POSTS = ["/v1/proof", "/v1/chat/read", "/v1/agents/heartbeat", "/v1/context/tree", "/v1/tools/ctx_agent"]


@pytest.mark.parametrize("content_type", ["text/plain", "text/plain;charset=UTF-8",
                                          "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"])
def test_an_empty_body_with_a_non_json_type_is_refused(make_server, content_type: str) -> None:  # noqa: F811
    """The content types a browser sends without a CORS preflight: refused with or without a body."""
    server = make_server()
    api = Api(server)
    a = api.register()
    head = server.state.lc.store.head().position
    for path in EMPTY_POSTS:
        r = api.client.post(path, content=b"", headers={**a.headers, "Content-Type": content_type})
        assert r.status_code == 415, (path, r.text)
        assert r.json()["error"]["code"] == "HTTP_UNSUPPORTED_MEDIA_TYPE"
    r = api.client.post("/v1/proof/verify", content=b"", headers={"Content-Type": content_type})
    assert r.status_code == 415, r.text
    assert server.state.lc.store.head().position == head  # nothing was written
    assert not list(proofs_dir(server.state.lc).glob("*.json"))  # no proof was written


def test_an_empty_body_passes_without_a_type_or_as_json(make_server) -> None:  # noqa: F811
    server = make_server()
    api = Api(server)
    a = api.register()
    for headers in ({}, {"Content-Type": "application/json"}, {"Content-Type": ""}):
        r = api.client.post("/v1/chat/read", content=b"", headers={**a.headers, **headers})
        assert r.status_code == 200, (headers, r.text)
    assert api.client.post("/v1/proof").status_code == 200  # curl -X POST, the dashboard's fetch
