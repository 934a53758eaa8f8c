"""/health, /metrics (Prometheus text) and /openapi.json (generated from the route table)."""

from __future__ import annotations

import re

from leanctx.api.http.app import route_specs

from .test_http_common import Api, make_server  # noqa: F401

_LABEL = r'[a-z_]+="(?:[^"\\]|\\.)*"'
_SAMPLE = re.compile(rf"^[a-zA-Z_:][a-zA-Z0-9_:]*(\{{{_LABEL}(,{_LABEL})*\}})? -?[0-9.e+]+$")


def test_health_and_metrics(make_server) -> None:  # noqa: F811
    server = make_server()
    api = Api(server)
    assert api.client.get("/health").json()["status"] == "ok"
    a = api.register()
    api.ok("/v1/tasks/create", a, title="x")
    api.post("/v1/tasks/claim", a, task_id="missing")
    r = api.client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain; version=0.0.4")
    lines = r.text.splitlines()
    for line in lines:
        assert line.startswith("# HELP ") or line.startswith("# TYPE ") or _SAMPLE.match(line), line
    values = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in lines if not line.startswith("#")}
    assert values["leanctx_events_total"] == server.state.lc.store.head().position
    assert values['leanctx_tool_calls_total{tool="task.create",outcome="ok"}'] == 1
    assert values['leanctx_tool_calls_total{tool="task.claim",outcome="error"}'] == 1
    assert values['leanctx_agents{status="active"}'] == 1 and values["leanctx_agents_active"] == 1
    assert values["leanctx_appends_per_second"] > 0
    # incremental: a second scrape counts only what is new
    api.ok("/v1/tasks/create", a, title="y")
    again = api.client.get("/metrics").text
    assert 'leanctx_tool_calls_total{tool="task.create",outcome="ok"} 2' in again


def test_tokens_saved_come_from_the_savings_report(make_server) -> None:  # noqa: F811
    server = make_server()
    (__import__("pathlib").Path(server.config.project_root) / "big.py").write_text(
        "".join(f"def f{i}(x):\n    return x * {i} + {i}\n\n" for i in range(300)))
    api = Api(server)
    a = api.register()
    api.ok("/v1/context/read", a, paths=["big.py"], mode="signatures")
    text = api.client.get("/metrics").text
    saved = [line for line in text.splitlines() if line.startswith('leanctx_tokens_saved_total{tool="read"}')]
    assert saved and int(saved[0].split()[-1]) > 0
    summary = api.client.get("/v1/context/summary").json()
    assert summary["savings"]["saved_tokens"] == int(saved[0].split()[-1])


def test_openapi_lists_every_route_with_schemas(make_server) -> None:  # noqa: F811
    api = Api(make_server())
    doc = api.client.get("/openapi.json").json()
    assert doc["openapi"].startswith("3.1")
    listed = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
    assert listed == {(s.method, s.path) for s in route_specs()}
    create = doc["paths"]["/v1/tasks/create"]["post"]
    ref = create["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    schema = doc["components"]["schemas"][ref.rsplit("/", 1)[1]]
    assert "title" in schema["required"] and "channel" in schema["properties"]
    assert any(p["name"] == "X-Agent-Token" and p["required"] for p in create["parameters"])
    assert doc["paths"]["/health"]["get"]["security"] == []
    assert "Error" in doc["components"]["schemas"]
    ids = [op["operationId"] for ops in doc["paths"].values() for op in ops.values()]
    assert len(ids) == len(set(ids))
