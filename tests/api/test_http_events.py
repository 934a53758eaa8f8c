"""The log over HTTP: SSE with Last-Event-ID resume (no gap, no duplicate, across processes),
TopicFilter query parameters, directed-event privacy, search, lineage, poll, summary."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

from .test_http_common import Api, SSEReader, make_server  # noqa: F401


def _positions(store, **flt) -> list[int]:  # type: ignore[no-untyped-def]
    from leanctx.events import TopicFilter

    return [e.position for e in store.read_all(0, TopicFilter(**flt) if flt else None)]


def test_last_event_id_resumes_with_no_gap_and_no_duplicate(make_server) -> None:  # noqa: F811
    server = make_server()
    api = Api(server)
    a = api.register()
    first = SSEReader(api.url + "/v1/events", params={"kinds": ["message.posted"]}).open()
    for i in range(5):
        api.ok("/v1/chat/post", a, title=f"m{i}", body="x")
    got = first.take(5)
    first.close()
    cut = got[2].id  # the client saw 3 events, then lost the connection
    for i in range(5, 10):
        api.ok("/v1/chat/post", a, title=f"m{i}", body="x")
    again = SSEReader(api.url + "/v1/events", headers={"Last-Event-ID": cut},
                      params={"kinds": ["message.posted"]}).open()
    resumed = again.take(7)
    assert again.quiet(0.2)
    titles = [e.json()["payload"]["title"] for e in got[:3] + resumed]
    assert titles == [f"m{i}" for i in range(10)]
    ids = [int(e.id) for e in got[:3] + resumed]
    assert ids == _positions(server.state.lc.store, kinds=("message.posted",))
    # a malformed Last-Event-ID is a 4xx with a stable code
    r = api.client.get("/v1/events", headers={"Last-Event-ID": "abc"})
    assert r.status_code == 422 and r.json()["error"]["code"] == "EVENT_INVALID_CURSOR"
    # a position this log never had: it was replaced (or the client talks to another server)
    r = api.client.get("/v1/events", headers={"Last-Event-ID": str(int(ids[-1]) + 1000)})
    assert r.status_code == 422 and r.json()["error"]["code"] == "EVENT_CURSOR_AHEAD"
    for huge in (str(2**62 + 1), "99999999999999999999"):  # however far past the head: the same answer
        r = api.client.get("/v1/events", headers={"Last-Event-ID": huge})
        assert r.status_code == 422 and r.json()["error"]["code"] == "EVENT_CURSOR_AHEAD", r.text
        r = api.client.get("/v1/events/poll", params={"since": huge})
        assert r.status_code == 422 and r.json()["error"]["code"] == "EVENT_CURSOR_AHEAD", r.text


def test_resume_from_the_log_while_another_process_appends(make_server) -> None:  # noqa: F811
    """A reconnect far behind reads the log in batches, then joins the live ring, while a
    separate process appends: every position exactly once, in order."""
    server = make_server()
    server.state.hub.ring_size = 16  # force the ring to be trimmed and the log path to be used
    api = Api(server)
    a = api.register()
    for i in range(30):
        api.ok("/v1/chat/post", a, title=f"before {i}", body="x")
    writer = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from leanctx.app import LeanCtx
        from leanctx.commands.chat import PostMessage
        with LeanCtx({str(server.config.db)!r}) as lc:
            for i in range(120):
                lc.bus.dispatch(PostMessage(title=f"other process {{i}}", body="y"), actor="writer-proc")
                if i % 10 == 0:
                    time.sleep(0.01)
        """)])
    time.sleep(0.05)
    reader = SSEReader(api.url + "/v1/events", params={"since": 0}).open()
    assert writer.wait(30) == 0
    expected = _positions(server.state.lc.store)
    got = [int(e.id) for e in reader.take(len(expected), timeout=15)]
    assert got == expected
    assert reader.quiet(0.2)


def test_filters_as_query_parameters(make_server) -> None:  # noqa: F811
    server = make_server()
    api = Api(server)
    a, b = api.register("claude"), api.register("cursor")
    api.ok("/v1/chat/init", a, channel="ops")
    base = server.state.lc.store.head().position
    stream = SSEReader(api.url + "/v1/events", params={"kinds": "task.*", "actor": b.agent_id, "since": base}).open()
    by_channel = SSEReader(api.url + "/v1/events", params={"channel": "ops", "kinds": "message.posted"}).open()
    api.ok("/v1/tasks/create", a, title="by a")
    api.ok("/v1/tasks/create", b, title="by b")
    api.ok("/v1/chat/post", a, channel="general", title="g", body="x")
    api.ok("/v1/chat/post", a, channel="ops", title="o", body="x")
    e = stream.next()
    assert e.event == "task.created" and e.json()["actor"] == b.agent_id and stream.quiet(0.2)
    assert by_channel.next().json()["payload"]["title"] == "o" and by_channel.quiet(0.1)
    for params in ({"consistency": "sometimes"}, {"since": "-1"}):
        r = api.client.get("/v1/events", params=params)
        assert r.status_code == 422, params


def test_directed_events_reach_only_their_agent(make_server) -> None:  # noqa: F811
    api = Api(make_server())
    alice, bob, carol = api.register("claude"), api.register("cursor"), api.register("codex")
    as_bob = SSEReader(api.url + "/v1/events", headers=bob.headers, params={"kinds": "message.posted"}).open()
    as_carol = SSEReader(api.url + "/v1/events", headers=carol.headers, params={"kinds": "message.posted"}).open()
    operator = SSEReader(api.url + "/v1/events", params={"kinds": "message.posted"}).open()
    api.ok("/v1/chat/post", alice, title="psst", body="secret", to=bob.agent_id)
    api.ok("/v1/chat/post", alice, title="all", body="hello")
    assert [e.json()["payload"]["title"] for e in as_bob.take(2)] == ["psst", "all"]
    assert [e.json()["payload"]["title"] for e in as_carol.take(1)] == ["all"] and as_carol.quiet(0.2)
    assert [e.json()["payload"]["title"] for e in operator.take(2)] == ["psst", "all"]
    # reading as bob needs bob's token
    r = api.client.get("/v1/events", params={"to_agent": bob.agent_id}, headers=carol.headers)
    assert r.status_code == 403 and r.json()["error"]["code"] == "AUTH_AGENT_MISMATCH"
    # the same rule for poll and search
    polled = api.client.get("/v1/events/poll", params={"kinds": "message.posted"}, headers=carol.headers).json()
    assert [e["payload"]["title"] for e in polled["events"]] == ["all"]
    hits = api.client.get("/v1/events/search", params={"q": "secret"}, headers=carol.headers).json()["hits"]
    assert hits == []
    hits = api.client.get("/v1/events/search", params={"q": "secret"}, headers=bob.headers).json()["hits"]
    assert [h["event"]["payload"]["title"] for h in hits] == ["psst"]


def test_search_lineage_poll_and_summary(make_server) -> None:  # noqa: F811
    server = make_server()
    api = Api(server)
    a = api.register()
    res = api.ok("/v1/tasks/create", a, title="refactor the parser")
    call = res["call_position"]
    hits = api.client.get("/v1/events/search", params={"q": "parser"}).json()["hits"]
    assert hits and hits[0]["event"]["kind"] == "task.created"
    lin = api.client.get(f"/v1/events/lineage/{call}").json()
    assert lin["event"]["kind"] == "tool.called"
    assert [e["kind"] for e in lin["descendants"]] == ["task.created"]
    up = api.client.get(f"/v1/events/lineage/{res['positions'][0]}").json()
    assert [e["position"] for e in up["ancestors"]] == [call]
    for bad, status, code in (("abc", 422, "EVENT_INVALID_POSITION"), ("0", 422, "EVENT_INVALID_POSITION"),
                              ("99999", 404, "EVENT_NOT_FOUND"), (str(2**62 + 1), 404, "EVENT_NOT_FOUND"),
                              ("99999999999999999999", 404, "EVENT_NOT_FOUND")):
        r = api.client.get(f"/v1/events/lineage/{bad}")
        assert r.status_code == status and r.json()["error"]["code"] == code
    for q in ("", "   "):
        r = api.client.get("/v1/events/search", params={"q": q})
        assert r.status_code == 422 and r.json()["error"]["code"] == "EVENT_INVALID_QUERY"
    assert api.client.get("/v1/events/search", params={"q": 'AND OR "NEAR( *'}).status_code == 200
    poll = api.client.get("/v1/events/poll", params={"since": 0, "limit": 2}).json()
    assert len(poll["events"]) == 2 and poll["next_cursor"] == poll["events"][-1]["position"]
    summary = api.client.get("/v1/context/summary").json()
    assert summary["open_tasks"] == 1 and summary["agents"]["active"] == 1
    assert summary["head"] == server.state.lc.store.head().position
    assert set(summary["savings"]) >= {"raw_tokens", "sent_tokens", "saved_tokens"}
