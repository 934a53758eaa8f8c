"""Hypothesis-generated requests never get a 500: every route answers a malformed, mistyped or
hostile body, query or header with a 4xx and a stable code (or a 2xx when it is valid).

Bodies are drawn two ways: arbitrary JSON (any type, big numbers, NaN, lone surrogates, deep
nesting) and objects shaped like the route's body type (its field names, values of the right
type most of the time, odd strings: control characters, path tricks, NUL, very long text), so
that most requests get past validation into the commands."""

from __future__ import annotations

import json
import string
from collections.abc import Iterator
from typing import Any

import httpx
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leanctx.api.http.app import route_specs
from leanctx.api.http.server import BackgroundServer

from .test_http_common import Api, module_server

POSTS = [r for r in route_specs() if r.method == "POST" and r.body is not None]
GETS = [r for r in route_specs() if r.method == "GET" and not r.sse]
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

odd_text = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["", " ", "general", "t1", "a2a", "..", "../../etc/passwd", "/etc/passwd", "src/app.py",
                     "a\x00b", "line\nbreak", "\u202etxt.exe", "x" * 5000, "🙂", "*", "AND", "NOT OR", "\\",
                     "all", "in_progress", "done", "cancelled", "CLAIMED", "decision", "-1", "1e999", "ops", "t2",
                     "src", "src/", "./src/app.py",
                     "lct1.AAAA.BBBB", "t" * 64, "T" * 65, "#general"]),
    st.text(alphabet=string.ascii_letters + string.digits + "._-:", min_size=1, max_size=12),
)
numbers = st.one_of(st.integers(-10, 10**6), st.integers(min_value=-(2**80), max_value=2**80),
                    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([0, -1, 0.0, 1e308, -1e-9]))
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), numbers, odd_text),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(odd_text, inner, max_size=4)),
    max_leaves=12,
)


def for_type(t: Any) -> st.SearchStrategy[Any]:
    mi = msgspec.inspect
    if isinstance(t, mi.StrType):
        return odd_text
    if isinstance(t, (mi.IntType, mi.FloatType)):
        return numbers
    if isinstance(t, mi.BoolType):
        return st.booleans()
    if isinstance(t, mi.NoneType):
        return st.none()
    if isinstance(t, (mi.ListType, mi.TupleType, mi.VarTupleType, mi.SetType)):
        item = getattr(t, "item_type", None) or mi.AnyType()
        return st.lists(for_type(item), max_size=4)
    if isinstance(t, mi.UnionType):
        return st.one_of(*[for_type(x) for x in t.types])
    if isinstance(t, mi.LiteralType):
        return st.sampled_from(list(t.values))
    if isinstance(t, mi.DictType):
        return st.dictionaries(odd_text, json_values, max_size=4)
    if isinstance(t, mi.StructType):
        return shaped(t.cls)
    return json_values


def shaped(cls: type) -> st.SearchStrategy[dict[str, Any]]:
    fields = msgspec.inspect.type_info(cls).fields
    parts = {f.encode_name: st.one_of(for_type(f.type), for_type(f.type), for_type(f.type), json_values)
             for f in fields}
    required = {f.encode_name for f in fields if f.required}

    @st.composite
    def build(draw: Any) -> dict[str, Any]:
        out = {}
        for name, strat in parts.items():
            if name in required or draw(st.booleans()):
                if name in required and draw(st.integers(0, 19)) == 0:
                    continue  # sometimes leave a required field out
                out[name] = draw(strat)
        return out

    return build()


def body_for(route: Any) -> st.SearchStrategy[Any]:
    return st.one_of(shaped(route.body), shaped(route.body), shaped(route.body), json_values)


def assert_not_500(r: httpx.Response, what: Any) -> None:
    assert r.status_code < 500, (what, r.status_code, r.text[:2000])
    if r.status_code >= 400:
        err = r.json()["error"]
        assert isinstance(err["code"], str) and err["code"] and isinstance(err["message"], str), (what, r.text)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    yield from module_server(tmp_path_factory, allow_exec=False, rate=0)


@pytest.fixture(scope="module")
def api(server: BackgroundServer) -> Iterator[Api]:
    api = Api(server)
    (__import__("pathlib").Path(server.config.project_root) / "src").mkdir(exist_ok=True)
    (__import__("pathlib").Path(server.config.project_root) / "src" / "app.py").write_text("def main():\n    pass\n")
    yield api
    api.close()


@pytest.fixture(scope="module")
def agent(api: Api) -> Any:
    """The acting agent, with something to act on: tasks t1 (open) and t2 (claimed) in general,
    a channel ops, a lock on src/app.py, so that drawn ids and paths often exist."""
    a = api.register("fuzz", "dev")
    api.ok("/v1/tasks/create", a, title="one")
    api.ok("/v1/tasks/create", a, title="two")
    api.ok("/v1/tasks/claim", a, task_id="t2")
    api.ok("/v1/chat/init", a, channel="ops")
    api.ok("/v1/locks/acquire", a, paths=["src/app.py"])
    return a


def _post(api: Api, agent: Any, route: Any, body: Any) -> httpx.Response:
    content = json.dumps(body, allow_nan=True).encode("utf-8", "surrogatepass")
    return api.client.post(route.path, content=content,
                           headers={**agent.headers, "Content-Type": "application/json"})


@SETTINGS
@given(data=st.data())
def test_post_bodies_never_500(api: Api, agent: Any, data: st.DataObject) -> None:
    route = data.draw(st.sampled_from([r for r in POSTS if "deregister" not in r.path]))
    body = data.draw(body_for(route))
    assert_not_500(_post(api, agent, route, body), (route.path, body))


@settings(SETTINGS, max_examples=250)
@given(data=st.data())
def test_coordination_bodies_never_500(api: Api, agent: Any, data: st.DataObject) -> None:
    """The command routes, many examples each (they decide; a bug there would be a 500)."""
    families = ("/v1/tasks/", "/v1/chat/", "/v1/locks/", "/v1/scent/", "/v1/diary/", "/v1/agents/heartbeat",
                "/v1/agents/register")
    route = data.draw(st.sampled_from([r for r in POSTS if r.path.startswith(families)]))
    body = data.draw(shaped(route.body))
    assert_not_500(_post(api, agent, route, body), (route.path, body))


@SETTINGS
@given(data=st.data())
def test_raw_bytes_and_headers_never_500(api: Api, agent: Any, data: st.DataObject) -> None:
    route = data.draw(st.sampled_from(POSTS))
    raw = data.draw(st.one_of(st.binary(max_size=200), st.sampled_from(
        [b"", b"{", b"[]", b"null", b'{"a":' * 200, b"\xff\xfe", b'{"title": "\\ud800"}', b"NaN", b"1e999",
         b'{"title": 1e999}', b'{"paths": ["\\u0000"]}', b"\x00"])))
    headers = {"Content-Type": data.draw(st.sampled_from(["application/json", "text/plain", "application/x+json",
                                                          "application/json; charset=latin-1", ""]))}
    extra = data.draw(st.sampled_from([{}, {"Idempotency-Key": "k1"}, {"Idempotency-Key": "bad key"},
                                       {"X-Session-Id": "s1"}, {"X-Session-Id": "../x"},
                                       {"X-Agent-Token": "lct1.x.y"}, {"X-Agent-Token": ""}]))
    r = api.client.post(route.path, content=raw, headers={**agent.headers, **headers, **extra})
    assert_not_500(r, (route.path, raw, headers, extra))


@SETTINGS
@given(data=st.data())
def test_query_strings_never_500(api: Api, agent: Any, data: st.DataObject) -> None:
    route = data.draw(st.sampled_from(GETS))
    names = [p.name for p in route.params if p.where == "query"] + ["q", "since", "limit", "kinds"]
    params = data.draw(st.lists(st.tuples(st.sampled_from(names), odd_text), max_size=5))
    path = route.path
    if "{position}" in path:
        position = data.draw(st.sampled_from(["1", "0", "-5", "abc", "1e3", "99999999999999999999", "%00", "2"]))
        path = path.replace("{position}", position)
    headers = agent.headers if data.draw(st.booleans()) else {}
    r = api.client.get(path, params=params, headers=headers)
    assert_not_500(r, (path, params))


@settings(SETTINGS, max_examples=40)
@given(data=st.data())
def test_sse_parameters_never_500(server: BackgroundServer, agent: Any, data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(["/v1/events", "/v1/agents/events"]))
    params = data.draw(st.lists(st.tuples(st.sampled_from(["kinds", "actor", "to_agent", "channel", "stream_prefix",
                                                           "consistency", "since"]), odd_text), max_size=4))
    headers = {"Last-Event-ID": data.draw(st.sampled_from(["", "0", "1", "-1", "x", "1" * 30]))}
    if data.draw(st.booleans()):
        headers.update(agent.headers)
    with httpx.Client(base_url=server.url, timeout=5) as c, c.stream("GET", path, params=params, headers=headers) as r:
        if r.status_code >= 400:
            r.read()
        assert_not_500(r, (path, params, headers))


@SETTINGS
@given(data=st.data())
def test_a2a_requests_never_500(api: Api, agent: Any, data: st.DataObject) -> None:
    params = data.draw(st.one_of(json_values, st.fixed_dictionaries(
        {"id": odd_text, "message": st.one_of(json_values, st.fixed_dictionaries(
            {"role": odd_text, "parts": st.lists(st.fixed_dictionaries({"kind": odd_text, "text": odd_text}),
                                                 max_size=3)}))},
        optional={"metadata": st.one_of(json_values, st.fixed_dictionaries(
            {}, optional={"channel": odd_text, "claim": st.booleans(), "lease_seconds": numbers,
                          "to_agent": odd_text, "depends_on": st.lists(odd_text, max_size=3)}))})))
    body = {"jsonrpc": data.draw(st.sampled_from(["2.0", "2.0", "1.0", None])),
            "method": data.draw(st.sampled_from(["tasks/send", "tasks/get", "tasks/cancel", "tasks/x", ""])),
            "params": params}
    if data.draw(st.booleans()):
        body["id"] = data.draw(st.one_of(st.integers(), odd_text, st.none(), st.lists(st.integers(), max_size=1)))
    r = _post(api, agent, type("R", (), {"path": "/a2a"}), body)
    assert r.status_code < 500, (body, r.text)
    if r.status_code == 200:
        reply = r.json()
        assert reply["jsonrpc"] == "2.0" and ("result" in reply) != ("error" in reply)
        if "error" in reply:
            assert isinstance(reply["error"]["code"], int) and reply["error"]["data"]["code"]
