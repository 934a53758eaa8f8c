"""Context Proof beyond the CLI: the store (``leanctx.proof_store``: create, latest, verify with
its ``.verify.json`` record), the operator routes ``/v1/proof*`` over real loopback HTTP, the
``ctx_proof`` tool over the real MCP client (a spawned ``lean-ctx mcp``), ``POST
/v1/tools/ctx_proof`` and ``lean-ctx call ctx_proof``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import apsw
import httpx
import pytest
from api.test_http_common import Api, make_server  # noqa: F401
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import Implementation

from leanctx import keys, proof, proof_store
from leanctx.app import LeanCtx
from leanctx.commands.chat import PostMessage

from .test_proof import T0, fill

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
BAD_NAMES = ["../events.db", "/etc/passwd", "proofs/context-proof-1.json", "..", "context-proof-1.json/..",
             "..\\context-proof-1.json", "context-proof-x.json", "events.db", "context-proof-1.verify.json",
             "context-proof-1.json.bak", ""]


def tamper(db: Path, old: str, new: str) -> int:
    """Edit a message's payload in the file behind the store's back (its trigger dropped for the
    edit and put back); returns the edited position."""
    conn = apsw.Connection(str(db))
    conn.set_busy_timeout(10_000)
    try:
        trigger = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'events_no_update'"
                               ).fetchone()[0]
        pos = conn.execute("SELECT position FROM events WHERE kind = 'message.posted' AND instr(payload, ?) > 0"
                           " ORDER BY position", (old,)).fetchone()[0]
        with conn:
            conn.execute("DROP TRIGGER events_no_update")
            conn.execute("UPDATE events SET payload = replace(payload, ?, ?) WHERE position = ?", (old, new, pos))
            assert conn.changes() == 1
            conn.execute(trigger)
    finally:
        conn.close()
    return pos


def codes(r: httpx.Response) -> str:
    return r.json()["error"]["code"]


# --- the store -----------------------------------------------------------------------------------


def test_latest_is_the_highest_head_and_a_record_holds_only_for_the_bytes_it_checked(
        tmp_path: Path, project: Path) -> None:
    with LeanCtx(tmp_path / "e.db") as lc:
        d = proof_store.proofs_dir(lc)
        assert d == (tmp_path / "proofs").resolve() and proof_store.latest(d) is None
        fill(lc, project)
        first = proof_store.create(lc, project)
        lc.bus.dispatch(PostMessage(title="later", body="more work"), actor="alice", project=str(project),
                        now=T0 + 50)
        second = proof_store.create(lc, project)
        assert second.head.position > first.head.position
        old = d / first.file
        os.utime(old, (old.stat().st_atime, old.stat().st_mtime + 3600))  # newer on disk, lower head
        (d / "context-proof-99999.verify.json").write_text("{}")  # neither a record nor a page is a proof
        (d / "context-proof-99998.html").write_text("")
        assert proof_store.latest(d) == d / second.file

        assert proof_store.describe(d / second.file).verification is None
        rep = proof_store.verify_file(lc, d / second.file)
        assert rep.ok, rep.differences
        info = proof_store.describe(d / second.file)
        assert info.verification is not None and info.verification.verified
        assert info.verification.signer == rep.signer and info.verification.differences == []
        rec = json.loads((d / second.file.replace(".json", ".verify.json")).read_text())
        assert rec["verified"] is True and rec["head_position"] == second.head.position

        # the proof rewritten at the same head: the old record is gone with it
        again = proof_store.create(lc, project)
        assert again.file == second.file and not (d / second.file.replace(".json", ".verify.json")).exists()
        assert proof_store.describe(d / again.file).verification is None
        proof_store.verify_file(lc, d / again.file)
        assert proof_store.describe(d / again.file).verification is not None
        # the bytes changed behind the record's back: the record no longer describes this file
        data = (d / again.file).read_bytes()
        (d / again.file).write_bytes(data.replace(b'"total": ', b'"total":  ', 1))
        assert proof_store.describe(d / again.file).verification is None


def test_resolve_name_takes_bare_proof_names_only(tmp_path: Path) -> None:
    (tmp_path / "context-proof-7.json").write_text("{}")
    assert proof_store.resolve_name(tmp_path, "context-proof-7.json") == tmp_path / "context-proof-7.json"
    for bad in [*BAD_NAMES, None, 7]:
        with pytest.raises(Exception) as exc:
            proof_store.resolve_name(tmp_path, bad)
        assert getattr(exc.value, "code", None) == proof_store.PROOF_INVALID_NAME, bad
    with pytest.raises(Exception) as exc:
        proof_store.resolve_name(tmp_path, "context-proof-8.json")
    assert getattr(exc.value, "code", None) == proof_store.PROOF_NOT_FOUND


# --- HTTP ----------------------------------------------------------------------------------------


def test_http_create_latest_verify_then_tamper(make_server: Any) -> None:  # noqa: F811
    server = make_server()
    api = Api(server)
    c = api.client
    proofs = Path(server.config.db).resolve().parent / "proofs"
    try:
        for r in (c.get("/v1/proof/latest"), c.post("/v1/proof/verify"), c.get("/v1/proof/html")):
            assert r.status_code == 404 and codes(r) == "PROOF_NOT_FOUND", r.text
        a, b = api.register(), api.register()
        api.ok("/v1/chat/post", a, title="plan", body="starting on the lexer")
        api.ok("/v1/chat/post", b, title="ack", body="taking the parser")

        r = c.post("/v1/proof")
        assert r.status_code == 200, r.text
        created = r.json()
        head = server.state.lc.store.head()
        assert created["head"] == {"position": head.position, "hash": head.hash} and created["chain_ok"]
        assert created["file"] == f"context-proof-{head.position}.json" and (proofs / created["file"]).is_file()
        assert created["html"] == f"context-proof-{head.position}.html" and (proofs / created["html"]).is_file()
        assert created["signer"]["key_id"] == keys.project_key_id(server.config.project_root)
        doc = json.loads((proofs / created["file"]).read_text())
        assert created["generated_at"] == doc["generated_at"] and created["events_total"] == head.position

        latest = c.get("/v1/proof/latest").json()
        assert latest["file"] == created["file"] and latest["head"] == created["head"]
        assert (latest["generated_at"], latest["signer"], latest["chain_ok"], latest["events_total"]) == (
            created["generated_at"], created["signer"], True, head.position)
        assert latest["verification"] is None

        r = c.post("/v1/proof/verify")  # no body: the latest
        assert r.status_code == 200, r.text
        v = r.json()
        assert v["ok"] and v["differences"] == [] and v["trusted"] and v["signature_valid"], v
        assert v["file"] == created["file"] and v["head_position"] == head.position
        assert v["record"] == created["file"].replace(".json", ".verify.json") and (proofs / v["record"]).is_file()
        seen = c.get("/v1/proof/latest").json()["verification"]
        assert seen["verified"] is True and seen["verified_at"] == v["verified_at"] and seen["differences"] == []

        page = c.get("/v1/proof/html", params={"file": created["file"]})
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert page.content == (proofs / created["html"]).read_bytes() and head.hash in page.text
        assert "default-src 'none'" in page.headers["content-security-policy"]
        assert c.get("/v1/proof/html", params={"file": created["html"]}).content == page.content

        # later events and a second proof: latest follows the head; the first still verifies
        api.ok("/v1/chat/post", a, title="done", body="the lexer is in")
        second = c.post("/v1/proof", json={}).json()
        assert second["head"]["position"] > created["head"]["position"]
        assert c.get("/v1/proof/latest").json()["file"] == second["file"]
        assert c.post("/v1/proof/verify", json={"file": created["file"]}).json()["ok"]

        # the log edited behind the store's back: verify names the position, latest shows it
        pos = tamper(Path(server.config.db), "taking the parser", "taking nothing")
        assert pos <= created["head"]["position"]
        r = c.post("/v1/proof/verify", json={"file": second["file"]})
        assert r.status_code == 200, r.text
        bad = r.json()
        assert not bad["ok"] and bad["signature_valid"]  # the file is intact: the log changed
        broken = [d for d in bad["differences"] if d["code"] == "CHAIN_BROKEN"]
        assert broken and broken[0]["actual"] == pos and f"position {pos}" in broken[0]["message"]
        shown = c.get("/v1/proof/latest").json()
        assert shown["file"] == second["file"] and shown["verification"]["verified"] is False
        assert shown["verification"]["differences"] == bad["differences"]
        assert shown["verification"]["verified_at"] == bad["verified_at"]
        record = json.loads((proofs / bad["record"]).read_text())
        assert record["verified"] is False and record["differences"] == bad["differences"]
    finally:
        api.close()


def test_http_bad_names_and_bodies_are_refused_with_their_codes(make_server: Any, tmp_path: Path) -> None:  # noqa: F811
    server = make_server()
    api = Api(server)
    c = api.client
    try:
        created = c.post("/v1/proof").json()
        before = sorted(p.name for p in tmp_path.rglob("*"))
        for name in BAD_NAMES:
            r = c.post("/v1/proof/verify", json={"file": name})
            assert r.status_code == 422 and codes(r) == "PROOF_INVALID_NAME", (name, r.text)
            r = c.get("/v1/proof/html", params={"file": name})
            assert r.status_code == 422 and codes(r) == "PROOF_INVALID_NAME", (name, r.text)
        assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing read or recorded elsewhere
        missing = f"context-proof-{created['head']['position'] + 1000}.json"
        r = c.post("/v1/proof/verify", json={"file": missing})
        assert r.status_code == 404 and codes(r) == "PROOF_NOT_FOUND"
        assert codes(c.get("/v1/proof/html", params={"file": missing})) == "PROOF_NOT_FOUND"
        for body in ({"file": 5}, {"path": created["file"]}):
            r = c.post("/v1/proof/verify", json=body)
            assert r.status_code == 422 and codes(r) == "INVALID_INPUT", r.text
        assert codes(c.post("/v1/proof", json={"out": "/tmp"})) == "INVALID_INPUT"
        r = c.post("/v1/proof/verify", content=b"file=x", headers={"Content-Type": "text/plain"})
        assert r.status_code == 415
        doc = c.get("/openapi.json").json()
        latest = doc["paths"]["/v1/proof/latest"]["get"]["responses"]["200"]["content"]["application/json"]
        schema = doc["components"]["schemas"][latest["schema"]["$ref"].rsplit("/", 1)[1]]
        assert {"file", "head", "generated_at", "signer", "chain_ok", "events_total", "verification"} <= set(
            schema["properties"])
        assert "text/html" in doc["paths"]["/v1/proof/html"]["get"]["responses"]["200"]["content"]
    finally:
        api.close()


def test_http_proof_routes_need_the_servers_token(make_server: Any) -> None:  # noqa: F811
    server = make_server(token="a-long-enough-operator-token")
    for method, path in (("POST", "/v1/proof"), ("GET", "/v1/proof/latest"), ("POST", "/v1/proof/verify"),
                         ("GET", "/v1/proof/html")):
        r = httpx.request(method, server.url + path, timeout=10)
        assert r.status_code == 401 and codes(r) == "AUTH_TOKEN_REQUIRED", (path, r.text)
    r = httpx.post(server.url + "/v1/proof", headers={"Authorization": "Bearer a-long-enough-operator-token"},
                   timeout=30)
    assert r.status_code == 200, r.text


def test_tools_route_and_cli_call_answer_what_the_routes_answer(make_server: Any, home: Path) -> None:  # noqa: F811
    server = make_server()
    api = Api(server)
    try:
        a = api.register()
        r = api.post("/v1/tools/ctx_proof", a, action="latest")
        assert r.status_code == 404 and codes(r) == "PROOF_NOT_FOUND"
        made = api.ok("/v1/tools/ctx_proof", a, action="create")
        assert made["text"].startswith(f"proof of head {made['head']['position']} ")
        assert api.ok("/v1/tools/ctx_proof", a, action="verify")["ok"]
        via_tool = api.ok("/v1/tools/ctx_proof", a, action="latest")
        assert {k: v for k, v in via_tool.items() if k != "text"} == api.client.get("/v1/proof/latest").json()
        assert "verified at" in via_tool["text"] and ": ok" in via_tool["text"]
        r = api.post("/v1/tools/ctx_proof", a, action="verify", file="../events.db")
        assert r.status_code == 422 and codes(r) == "PROOF_INVALID_NAME"
        r = api.post("/v1/tools/ctx_proof", a, action="latest", file=made["file"])
        assert r.status_code == 422 and codes(r) == "INVALID_ARGUMENT"

        env = {**os.environ, "LEAN_CTX_HOME": str(home), "LEAN_CTX_DB": str(server.config.db)}
        p = subprocess.run([LEAN_CTX, "--json", "call", "ctx_proof", '{"action": "latest"}'], env=env,
                           cwd=server.config.project_root, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        assert {k: v for k, v in json.loads(p.stdout).items() if k != "text"} == \
            api.client.get("/v1/proof/latest").json()
    finally:
        api.close()


# --- MCP -----------------------------------------------------------------------------------------


@pytest.fixture()
def anyio_backend() -> str:
    return "asyncio"


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


@pytest.mark.anyio
async def test_ctx_proof_over_the_mcp_client(tmp_path: Path, project: Path, home: Path) -> None:
    db = tmp_path / "events.db"
    with LeanCtx(db) as lc:
        fill(lc, project)
    params = StdioServerParameters(command=LEAN_CTX, args=["mcp"], cwd=str(project),
                                   env={"LEAN_CTX_DB": str(db), "LEAN_CTX_HOME": str(home),
                                        "LEAN_CTX_MCP_STRUCTURED": "1"})  # these checks read its fields
    async with Client(params, mode="legacy", client_info=Implementation(name="claude-code", version="1.0"),
                      read_timeout_seconds=60) as client:
        assert "ctx_proof" not in {t.name for t in (await client.list_tools()).tools}  # lazy: memory
        loaded = await client.call_tool("ctx_load_tools", {"action": "load", "categories": ["memory"]})
        assert not loaded.is_error and "memory" in loaded.structured_content["changed"]
        assert "ctx_proof" in {t.name for t in (await client.list_tools()).tools}

        missing = await client.call_tool("ctx_proof", {"action": "verify"})
        assert missing.is_error and _text(missing).startswith("PROOF_NOT_FOUND: ")

        made = await client.call_tool("ctx_proof", {"action": "create"})
        assert not made.is_error, _text(made)
        created = made.structured_content
        proofs = db.resolve().parent / "proofs"
        assert (proofs / created["file"]).is_file() and created["chain_ok"]
        assert _text(made).startswith(f"proof of head {created['head']['position']} {created['head']['hash']}")

        checked = await client.call_tool("ctx_proof", {"action": "verify", "file": created["file"]})
        assert not checked.is_error, _text(checked)
        v = checked.structured_content
        assert v["ok"] and v["differences"] == [] and _text(checked).startswith("ok: ")
        assert (proofs / v["record"]).is_file()

        latest = await client.call_tool("ctx_proof", {"action": "latest"})
        info = latest.structured_content
        assert info["file"] == created["file"] and info["verification"]["verified"] is True
        assert info["verification"]["verified_at"] == v["verified_at"]

        refused = await client.call_tool("ctx_proof", {"action": "verify", "file": "../events.db"})
        assert refused.is_error and _text(refused).startswith("PROOF_INVALID_NAME: ")
    with LeanCtx(db) as lc:  # what the tool wrote verifies here too
        assert proof.verify(lc, (proofs / created["file"]).read_bytes()).ok
