"""The dashboard's server side: the snapshot at /v1/dashboard/state reflects the projections,
the static files are public but carry a strict CSP and nothing else is reachable under them,
`lean-ctx dashboard` serves and prints its address, and the snapshot's queries give what the
plain whole-table ones give. (The page itself is tested in a real browser in tests/dashboard.)"""

from __future__ import annotations

import math
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import apsw
import httpx
import msgspec
import pytest

from leanctx.api.cli import serve_cmd
from leanctx.api.http import dashboard, security
from leanctx.clock import iso, parse
from leanctx.projections import savings_series as ss
from leanctx.projections.channels import Channels, list_channels, recent_messages
from leanctx.projections.savings import Savings
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
    assert sav["bucket_seconds"] in ss.BUCKETS and sav["daily"][-1]["calls"] == 1


def test_series_buckets_keep_the_chart_small() -> None:
    assert ss.bucket_for(0) == 1 and ss.bucket_for(59) == 1
    assert ss.bucket_for(61) == 5
    assert ss.bucket_for(3 * 3600) == 300  # 36 points
    assert ss.bucket_for(90 * 86400) == 7 * 86400  # capped at a week
    for span in (10, 500, 7200, 200_000, 3_000_000):
        assert span / ss.bucket_for(span) <= ss.MAX_SERIES_POINTS


def test_static_files_are_public_with_a_strict_csp_and_nothing_else_is_reachable(make_server) -> None:  # noqa: F811
    server = make_server(token=TOKEN)
    c = httpx.Client(base_url=server.url, timeout=10)
    page = c.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "connect-src 'self'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp and "data:" not in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    # the page names only its own files: nothing from another origin
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page.text)
    for name, ctype in dashboard.ASSETS.items():
        r = c.get("/" if name == "index.html" else f"/dashboard/{name}")
        assert r.status_code == 200 and r.headers["content-type"].split(";")[0] == ctype.split(";")[0], name
        again = c.get(f"/dashboard/{name}", headers={"If-None-Match": r.headers["etag"]})
        assert again.status_code == 304 and again.content == b""
    # public are exactly the packaged files: any other name under /dashboard/ needs the token,
    # and with it is still not found
    assert set(dashboard.ASSETS) == set(security.DASHBOARD_FILES)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for bad in ("nope.js", "..%2Fdashboard.py", "%2e%2e%2fapp.py", "__init__.py", ".hidden", "index.html/x"):
        assert c.get(f"/dashboard/{bad}").status_code == 401, bad
        r = c.get(f"/dashboard/{bad}", headers=auth)
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


@pytest.mark.parametrize("token", [TOKEN, "plus+slash/eq=amp&pct%hash#-0123"])
def test_lean_ctx_dashboard_serves_and_prints_its_address(tmp_path: Path, token: str) -> None:
    env = dict(os.environ, LEAN_CTX_HOME=str(tmp_path / "home"))
    proc = subprocess.Popen([LEAN_CTX, "--db", str(tmp_path / "e.db"), "--project", str(tmp_path), "dashboard",
                             "--port", "0", "--token", token], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.fullmatch(r"dashboard: (http://127\.0\.0\.1:(\d+))/#token=([A-Za-z0-9%._~-]+)\n", line)
        assert m, line
        # percent-encoded: `+`, `&`, `#`, `%` in a token survive the fragment
        assert m.group(3) == quote(token, safe="") and unquote(m.group(3)) == token and int(m.group(2)) > 0
        deadline = time.monotonic() + 10
        while True:
            try:
                r = httpx.get(m.group(1) + "/v1/dashboard/state", headers={"Authorization": f"Bearer {token}"})
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


# --- the snapshot's queries: the same answers as the plain ones, without reading every row ------

def _tables(*projections: Any) -> apsw.Connection:
    conn = apsw.Connection(":memory:")
    for p in projections:
        for ddl in (*p.tables.values(), *p.indexes):
            conn.execute(ddl)
    return conn


def test_recent_messages_and_channel_counts_match_the_plain_queries() -> None:
    conn = _tables(Channels())
    assert recent_messages(conn, 50) == [] and [c.messages for c in list_channels(conn, everything=True)] == [0]
    rng = random.Random(7)
    seqs: dict[str, int] = {}
    position = 0
    # a busy channel, quiet ones, one that went silent long ago, directed and broadcast messages
    for name, count in (("old", 30), ("general", 0), ("busy", 0), ("quiet", 0)):
        for _ in range(count):
            position += rng.randint(1, 3)
            seqs[name] = seqs.get(name, 0) + 1
            conn.execute("INSERT INTO channel_messages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                          (name, seqs[name], position, f"2026-01-01T00:00:{position % 60:02d}.000000Z", "a1",
                           None, "note", f"m{position}", "", None))
    for _ in range(400):
        name = rng.choices(["general", "busy", "quiet", "c4", "c5"], weights=[5, 20, 1, 1, 1])[0]
        position += rng.randint(1, 3)
        seqs[name] = seqs.get(name, 0) + 1
        conn.execute("INSERT INTO channel_messages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     (name, seqs[name], position, f"2026-01-01T00:01:{position % 60:02d}.000000Z", "a1",
                      rng.choice([None, "a2"]), "note", f"m{position}", "", None))
    for name in ("old", "busy", "quiet", "c4"):  # c5 was never created: its messages count anyway
        conn.execute("INSERT INTO channels VALUES (?, NULL, '[]', 'a1', '2026-01-01T00:00:00.000000Z', 0)", (name,))
    cols = "channel, seq, position, ts, sender, recipient, category, title, body, reply_to"
    for n in (0, 1, 2, 7, 50, 429, 430, 1000):
        plain = conn.execute(f"SELECT {cols} FROM channel_messages ORDER BY position DESC LIMIT ?", (n,)).fetchall()
        assert [(m.channel, m.seq, m.position) for m in recent_messages(conn, n)] == \
            [(r[0], r[1], r[2]) for r in reversed(plain)], n
    for info in list_channels(conn, everything=True):
        count = conn.execute("SELECT count(*) FROM channel_messages WHERE channel = ?", (info.name,)).fetchone()[0]
        assert info.messages == count == info.last_seq, info.name


def _python_series(conn: Any) -> tuple[int, list[ss.SeriesPoint]]:
    """The series as the first version computed it, row by row in Python (calls: distinct)."""
    lo, hi = conn.execute("SELECT MIN(ts), MAX(ts) FROM savings_calls").fetchone()
    if lo is None:
        return ss.BUCKETS[0], []
    size = ss.bucket_for(parse(hi) - parse(lo))
    acc: dict[float, list[Any]] = {}
    for ts, agent, session, call, raw, sent in conn.execute(
            "SELECT ts, agent, session, call_index, baseline_tokens, sent_tokens FROM savings_calls ORDER BY position"):
        t = math.floor(parse(ts) / size) * size
        row = acc.setdefault(t, [set(), 0, 0])
        row[0].add((agent, session, call))
        row[1] += raw
        row[2] += sent
    return size, [ss.SeriesPoint(t, len(c), r, s) for t, (c, r, s) in sorted(acc.items())]


@pytest.mark.parametrize("span", [0, 40, 500, 4000, 50_000, 2_000_000, 40_000_000])
def test_savings_series_in_sql_matches_the_row_by_row_computation(span: float) -> None:
    conn = _tables(Savings())
    assert ss.savings_series(conn) == (1, [])
    rng = random.Random(span)
    start = 1_780_000_000.0
    times = sorted([start, start + span] + [start + rng.random() * span for _ in range(300)])
    # a few rows a hair before and after bucket edges (the fraction must not move them)
    size = ss.bucket_for(span)
    times += [math.floor(start / size) * size + size * k + d for k in (1, 2) for d in (-1e-6, 0.0, 0.999999)
              if start <= math.floor(start / size) * size + size * k + d <= start + span]
    for pos, t in enumerate(sorted(times), 1):
        call = pos // 3  # several rows of one call (a read of several files), sometimes across a bucket edge
        conn.execute("INSERT INTO savings_calls (position, ts, day, agent, session, call_index, tool, kind,"
                     " raw_tokens, baseline_tokens, sent_tokens) VALUES (?, ?, ?, ?, ?, ?, 'read', 'file.read', ?, ?, ?)",
                     (pos, iso(t), iso(t)[:10], rng.choice(["a1", "a2"]), rng.choice(["", "s1"]), call,
                      rng.randint(0, 900), rng.choice([0, rng.randint(0, 900)]), rng.randint(0, 400)))
    got = ss.savings_series(conn)
    assert got == _python_series(conn)
    assert msgspec.json.encode(got[1]) == msgspec.json.encode(_python_series(conn)[1])  # the same JSON too
    if span <= ss.MAX_SERIES_POINTS * ss.BUCKETS[-1]:
        assert len(got[1]) <= ss.MAX_SERIES_POINTS + 1


def test_a_read_of_two_files_is_one_call_in_the_series_too(make_server) -> None:  # noqa: F811
    server = make_server()
    root = Path(server.config.project_root)
    for name in ("a.py", "b.py"):
        (root / name).write_text("".join(f"def f{i}(x):\n    return x * {i}\n\n" for i in range(40)))
    api = Api(server)
    a = api.register("claude")
    assert len(api.ok("/v1/context/read", a, paths=["a.py", "b.py"], mode="signatures")["files"]) == 2
    sav = api.client.get("/v1/dashboard/state").json()["savings"]
    assert sav["totals"]["calls"] == 1 and sum(p["calls"] for p in sav["series"]) == 1


def test_the_savings_panel_is_recomputed_only_when_savings_rows_are_added(make_server) -> None:  # noqa: F811
    server = make_server()
    root = Path(server.config.project_root)
    (root / "m.py").write_text("".join(f"def g{i}(a, b):\n    return a - b - {i}\n\n" for i in range(50)))
    api = Api(server)
    a = api.register("claude")
    st = server.state
    first = dashboard.snapshot(st)
    api.ok("/v1/chat/post", a, title="not a saving", body="a message")
    second = dashboard.snapshot(st)
    assert second.head.position > first.head.position
    assert second.savings is first.savings  # nothing read: the same panel, not recomputed
    api.ok("/v1/context/read", a, paths=["m.py"], mode="map")
    third = dashboard.snapshot(st)
    assert third.savings is not first.savings and third.savings.totals.calls == 1
    api.ok("/v1/context/read", a, paths=["m.py"], mode="full")  # a bounce: it updates the map read's row
    fourth = dashboard.snapshot(st)
    assert fourth.savings.totals.bounces == 1 and fourth.savings.totals.calls == 2
    assert fourth.savings == dashboard.savings_panel(st.reader("savings"))  # what a fresh computation gives


def test_the_browser_is_handed_a_private_redirect_not_the_token(tmp_path: Path) -> None:
    url = serve_cmd.dashboard_url("http://127.0.0.1:3344", TOKEN)
    made: list[Path] = []
    assert serve_cmd.browser_target("http://127.0.0.1:3344/", None, made) == "http://127.0.0.1:3344/" and made == []
    target = serve_cmd.browser_target(url, TOKEN, made)
    assert TOKEN not in target and target.startswith("file://")  # not on the browser's command line
    (page,) = made
    assert target == page.as_uri() and page.stat().st_mode & 0o777 == 0o600
    assert f'content="0; url={url}"' in page.read_text()
    page.unlink()
