"""The dashboard's server side: the snapshot at /v1/dashboard/state reflects the projections,
the static files are public but carry a strict CSP and nothing else is reachable under them,
and `lean-ctx dashboard` serves and prints its address. (The page itself is tested in a real
browser in tests/dashboard.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from leanctx.api.http import dashboard
from leanctx.projections.scent import decay

from .test_http_common import Api, make_server  # noqa: F401

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
TOKEN = "t0ken-for-the-dashboard-tests"


def test_snapshot_reflects_agents_tasks_locks_scent_messages_and_savings(make_server) -> None:  # noqa: F811
    server = make_server()
    root = Path(server.config.project_root)
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("".join(f"def f{i}(x, y):\n    return x + y + {i}\n\n" for i in range(60)))
    api = Api(server)
    empty = api.client.get("/v1/dashboard/state").json()
    assert empty["head"]["position"] == 0 and empty["agents"] == [] and empty["tasks"] == []
    assert empty["savings"]["series"] == [] and empty["savings"]["totals"]["calls"] == 0
    assert [c["name"] for c in empty["channels"]] == ["general"] and empty["messages"] == []
    assert empty["proof"] is None

    a, b = api.register("claude"), api.register("cursor", role="review")
    t1 = api.ok("/v1/tasks/create", a, title="parser")["result"]["task"]["task_id"]
    t2 = api.ok("/v1/tasks/create", a, title="lexer", depends_on=[t1])["result"]["task"]["task_id"]
    api.ok("/v1/tasks/claim", b, task_id=t1)
    api.ok("/v1/chat/post", a, title="to b", body="direct", to=b.agent_id)
    api.ok("/v1/chat/post", b, title="to all", body="broadcast")
    api.ok("/v1/locks/acquire", a, paths=["src/app.py"], reason="editing")
    api.ok("/v1/scent/claim", b, target="src/lexer.py")
    read = api.ok("/v1/context/read", a, paths=["src/app.py"], mode="signatures")
    assert read["files"]

    r = api.client.get("/v1/dashboard/state")
    assert r.status_code == 200 and r.headers["cache-control"] == "no-store"
    s = r.json()
    assert s["head"]["position"] == server.state.lc.store.head().position
    assert {x["agent"]["agent_id"]: x["agent"]["role"] for x in s["agents"]} == {a.agent_id: "dev",
                                                                                 b.agent_id: "review"}
    assert all(x["budget"]["level"] == "ok" and x["budget"]["limit"] == 0 for x in s["agents"])
    assert s["agent_counts"]["total"] == 2 and s["agent_counts"]["active"] == 2
    assert s["task_columns"] == ["open", "in_progress", "blocked", "done", "cancelled"]
    tasks = {t["task_id"]: t for t in s["tasks"]}
    assert tasks[t1]["status"] == "in_progress" and tasks[t1]["owner"] == b.agent_id
    assert tasks[t1]["lease_state"] == "active" and 0 < tasks[t1]["lease_remaining_seconds"] <= 900
    assert tasks[t2]["status"] == "open" and tasks[t2]["waiting_on"] == [t1]
    assert [(lk["path"], lk["owner"], lk["expired"]) for lk in s["locks"]] == [("src/app.py", a.agent_id, False)]
    marks = {(m["target"], m["kind"]): m for m in s["scent"]}
    claim = marks[("src/lexer.py", "CLAIMED")]
    assert claim["agent"] == b.agent_id and claim["active"] is True
    assert ("src/app.py", "HOT") in marks  # the read deposited HOT
    for m in s["scent"]:  # the intensity is the decay formula at the snapshot's clock
        assert m["intensity"] == pytest.approx(decay(m["deposit_intensity"], m["age_seconds"],
                                                     m["half_life_seconds"]), abs=1e-5)
        assert m["intensity"] >= s["scent_floor"]
    # the operator's view: the directed message too, in log order
    assert [(m["title"], m["to"]) for m in s["messages"]] == [("to b", b.agent_id), ("to all", "all")]
    general = s["channels"][0]  # the operator's counts: the directed message too
    assert general["name"] == "general" and general["messages"] == 2 and general["last"]["title"] == "to all"
    assert s["proof"] is None
    made = api.client.post("/v1/proof")
    assert made.status_code == 200, made.text
    proof = api.client.get("/v1/dashboard/state").json()["proof"]
    assert proof["file"] == made.json()["file"] and proof["verification"] is None
    assert api.client.post("/v1/proof/verify").json()["ok"] is True
    assert api.client.get("/v1/dashboard/state").json()["proof"]["verification"]["verified"] is True
    sav = s["savings"]
    assert sav["totals"]["calls"] == 1 and sav["totals"]["raw_tokens"] > sav["totals"]["sent_tokens"] > 0
    assert [row["group"] for row in sav["by_mode"]] == [{"mode": "signatures"}]
    assert [row["group"] for row in sav["by_agent"]] == [{"agent": a.agent_id}]
    assert sum(p["calls"] for p in sav["series"]) == sav["totals"]["calls"]
    assert sum(p["raw_tokens"] for p in sav["series"]) == sav["totals"]["raw_tokens"]
    assert sum(p["sent_tokens"] for p in sav["series"]) == sav["totals"]["sent_tokens"]
    assert sav["bucket_seconds"] in dashboard.BUCKETS and sav["daily"][-1]["calls"] == 1


def test_series_buckets_keep_the_chart_small() -> None:
    assert dashboard._bucket(0) == 1 and dashboard._bucket(59) == 1
    assert dashboard._bucket(61) == 5
    assert dashboard._bucket(3 * 3600) == 300  # 36 points
    assert dashboard._bucket(90 * 86400) == 7 * 86400  # capped at a week
    for span in (10, 500, 7200, 200_000, 3_000_000):
        assert span / dashboard._bucket(span) <= dashboard.MAX_SERIES_POINTS


def test_static_files_are_public_with_a_strict_csp_and_nothing_else_is_reachable(make_server) -> None:  # noqa: F811
    server = make_server(token=TOKEN)
    c = httpx.Client(base_url=server.url, timeout=10)
    page = c.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "connect-src 'self'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    # the page names only its own files: nothing from another origin
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page.text)
    for name, ctype in dashboard.ASSETS.items():
        r = c.get("/" if name == "index.html" else f"/dashboard/{name}")
        assert r.status_code == 200 and r.headers["content-type"].split(";")[0] == ctype.split(";")[0], name
        again = c.get(f"/dashboard/{name}", headers={"If-None-Match": r.headers["etag"]})
        assert again.status_code == 304 and again.content == b""
    for bad in ("nope.js", "..%2Fdashboard.py", "%2e%2e%2fapp.py", "__init__.py", ".hidden"):
        r = c.get(f"/dashboard/{bad}")
        assert r.status_code == 404, bad
        assert r.json()["error"]["code"] in ("DASHBOARD_ASSET_NOT_FOUND", "HTTP_NOT_FOUND"), bad
    assert c.get("/dashboard/../openapi.json").status_code == 401  # normalized away: a data route
    # the data is behind the bearer token
    assert c.get("/v1/dashboard/state").status_code == 401
    ok = c.get("/v1/dashboard/state", headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200 and ok.json()["version"] == 1
    c.close()


def test_the_route_table_and_openapi_describe_the_dashboard(make_server) -> None:  # noqa: F811
    server = make_server()
    spec = httpx.get(server.url + "/openapi.json").json()
    assert "/v1/dashboard/state" in spec["paths"] and "/" in spec["paths"]
    schema = spec["paths"]["/v1/dashboard/state"]["get"]["responses"]["200"]
    assert "DashboardState" in str(schema)


def test_lean_ctx_dashboard_serves_and_prints_its_address(tmp_path: Path) -> None:
    env = dict(os.environ, LEAN_CTX_HOME=str(tmp_path / "home"))
    proc = subprocess.Popen([LEAN_CTX, "--db", str(tmp_path / "e.db"), "--project", str(tmp_path), "dashboard",
                             "--port", "0", "--token", TOKEN], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.fullmatch(r"dashboard: (http://127\.0\.0\.1:(\d+))/#token=(\S+)\n", line)
        assert m, line
        assert m.group(3) == TOKEN and int(m.group(2)) > 0
        deadline = time.monotonic() + 10
        while True:
            try:
                r = httpx.get(m.group(1) + "/v1/dashboard/state", headers={"Authorization": f"Bearer {TOKEN}"})
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert r.status_code == 200 and r.json()["project_root"] == str(tmp_path)
        assert httpx.get(m.group(1) + "/").status_code == 200
    finally:
        proc.terminate()
        proc.wait(10)


def test_dashboard_refuses_a_short_token_before_serving(tmp_path: Path) -> None:
    p = subprocess.run([LEAN_CTX, "--db", str(tmp_path / "e.db"), "dashboard", "--port", "0", "--token", "tiny"],
                       capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, LEAN_CTX_HOME=str(tmp_path / "home")))
    assert p.returncode == 2 and "error[" in p.stderr
