"""Handoff bundles and A2A envelopes: signing, the trust store, byte-level tamper refusal,
A → B in another process, and envelopes over a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from api.test_http_common import Api, make_server  # noqa: F401

from leanctx import clock, keys
from leanctx import envelope as env
from leanctx import handoff_bundle as hb
from leanctx.api import registry
from leanctx.api.registry import Caller
from leanctx.app import LeanCtx
from leanctx.commands.agents import RegisterAgent
from leanctx.commands.diaries import WriteDiary
from leanctx.commands.handoff import CreateHandoff
from leanctx.commands.knowledge import RememberKnowledge
from leanctx.commands.sessions import AddNote, SetTask
from leanctx.commands.tasks import ClaimTask, CreateTask
from leanctx.errors import LeanCtxError
from leanctx.projections.handoffs import list_imported
from leanctx.projections.sessions import get_session, session_notes

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
pytestmark = pytest.mark.timeout(120)
REFUSALS = {hb.HANDOFF_INVALID, hb.HANDOFF_TAMPERED, hb.HANDOFF_UNSIGNED, keys.KEY_UNTRUSTED,
            keys.SIGNATURE_INVALID}


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    monkeypatch.setenv("LEAN_CTX_HOME", str(h))
    for k in ("LEAN_CTX_AGENT_ID", "LEAN_CTX_SESSION_ID", "LEAN_CTX_DB", "LEAN_CTX_A2A_SECRET"):
        monkeypatch.delenv(k, raising=False)
    return h


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    (p / "app.py").write_text("def main():\n    return 42\n")
    return p


@pytest.fixture
def app(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "events.db") as a:
        yield a


def do(app: LeanCtx, cmd: Any, project: Path, actor: str = "a", sid: str | None = "sa") -> Any:
    return app.bus.dispatch(cmd, actor=actor, session_id=sid, project=str(project)).value


def register(app: LeanCtx, project: Path, agent_id: str) -> None:
    do(app, RegisterAgent(agent_type="claude", agent_id=agent_id, project_root=str(project)), project, agent_id)


def work_of_a(app: LeanCtx, project: Path) -> None:
    register(app, project, "a")
    do(app, SetTask(task="migrate the db layer", step=2, total=5), project)
    do(app, AddNote(note="finding", text="pool size is hard-coded", path="app.py"), project)
    do(app, AddNote(note="decision", text="use sqlite WAL"), project)
    do(app, RememberKnowledge(category="architecture", key="db.engine", value="sqlite"), project)
    do(app, RememberKnowledge(category="ops", key="deploy.host", value="fly.io"), project)
    do(app, CreateTask(title="write the migration", task_id="t1", owner="a"), project)
    do(app, ClaimTask(task_id="t1"), project)
    do(app, CreateTask(title="review it", task_id="t2", to_agent="a"), project)
    do(app, WriteDiary(category="progress", text="schema drafted"), project)
    registry.call(app, Caller("a", "sa", str(project)), "ctx_read", {"paths": ["app.py"], "mode": "full"})


def cli(db: Path, cwd: Path, *args: str, agent: str = "b", check: bool = True,
        extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    e.update(LEAN_CTX_DB=str(db), LEAN_CTX_HOME=os.environ["LEAN_CTX_HOME"], LEAN_CTX_AGENT_ID=agent,
             LEAN_CTX_SESSION_ID=f"s{agent}")
    e.update(extra_env or {})
    p = subprocess.run([LEAN_CTX, *args], check=False, capture_output=True, text=True, env=e, timeout=60, cwd=cwd,
                       stdin=subprocess.DEVNULL)
    if check and p.returncode != 0:
        raise AssertionError(f"lean-ctx {' '.join(args)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def state(app: LeanCtx, sid: str) -> tuple[Any, ...]:
    conn = app.projections.reader("sessions")
    s = get_session(conn, sid)
    assert s is not None
    return (s.task, s.step, s.total, [(n.note, n.text, n.path) for n in session_notes(conn, sid)])


def small_bundle(agent: str = "a", **body: Any) -> bytes:
    fp = keys.fingerprint(keys.public_key(agent))
    b = hb.HandoffBodyV1(
        format=hb.FORMAT, handoff_id="h-1", created_at="2026-01-01T00:00:00.000000Z", project="/p",
        sender=hb.BSender(agent_id=agent, session_id="sa", key_id=agent, fingerprint=fp),
        session=hb.BSession(session_id="sa", task="t", step=1, total=2,
                            notes=[hb.BNote(note="finding", text="x", path=None, ts="2026-01-01T00:00:00.000000Z")]),
        files=[hb.BFile(ref="F1", path="a.py", content_hash="ab")],
        knowledge=[hb.BKnowledge(key="k", category="c", value="v", confidence=0.8, source=None, agent=agent,
                                 ts="2026-01-01T00:00:00.000000Z")],
        workflow=[], diary=[], message=None, **body)
    return hb.encode(hb.sign_bundle(b))


def mutations(data: bytes, seed: int) -> Iterator[tuple[int, bytes]]:
    """Every position, changed twice: one bit flipped, and one random other byte value."""
    rnd = random.Random(seed)
    for i in range(len(data)):
        for new in {data[i] ^ 0x01, rnd.choice([v for v in range(256) if v != data[i]])}:
            yield i, data[:i] + bytes([new]) + data[i + 1:]


# --- bundles --------------------------------------------------------------------------------


def test_bundle_verifies_and_every_single_byte_change_is_refused() -> None:
    data = small_bundle()
    v = hb.verify(data, {"a"})
    assert v.body.session.task == "t" and v.signer.key_id == "a"
    assert b"public_key" not in data and keys.b64(keys.public_key("a")).encode() not in data  # no key carried
    codes: dict[str, int] = {}
    n = 0
    for i, bad in mutations(data, seed=6):
        with pytest.raises(LeanCtxError) as ei:
            hb.verify(bad, {"a"})
        assert ei.value.code in REFUSALS, (i, ei.value.code)
        codes[ei.value.code] = codes.get(ei.value.code, 0) + 1
        n += 1
    assert n >= 2 * len(data) - 5 and len(data) > 300
    assert {hb.HANDOFF_TAMPERED, keys.SIGNATURE_INVALID, hb.HANDOFF_INVALID} <= set(codes)


def test_unsigned_unregistered_impersonating_and_unknown_signers_are_refused(tmp_path: Path) -> None:
    obj = json.loads(small_bundle())
    del obj["signature"]
    with pytest.raises(LeanCtxError) as ei:
        hb.verify(hb.encode(obj), {"a"})
    assert ei.value.code == hb.HANDOFF_UNSIGNED
    # a local key of an agent that is not registered in this log is not a known signer
    with pytest.raises(LeanCtxError) as ei:
        hb.verify(small_bundle("c"), {"a"})
    assert ei.value.code == keys.KEY_UNTRUSTED
    # a bundle claiming sender "a" but signed with "x"'s key (x trusted as itself) is refused
    other = tmp_path / "other-home"
    keys.trust(keys.pub_line(keys.public_key("x", base=other), "x"))
    body = msgspec.convert({k: v for k, v in json.loads(small_bundle()).items() if k != "signature"},
                           hb.HandoffBodyV1)
    forged = msgspec.structs.replace(body, sender=msgspec.structs.replace(
        body.sender, fingerprint=keys.fingerprint(keys.public_key("x", base=other))))
    sig = keys.sign("x", hb.signed_bytes(forged), base=other)
    data = hb.encode({**msgspec.to_builtins(forged), "signature": {"alg": "ed25519", "sig": sig.hex()}})
    with pytest.raises(LeanCtxError) as ei:
        hb.verify(data, {"a"})
    assert ei.value.code == keys.KEY_UNTRUSTED and "not as the claimed signer" in ei.value.message


def test_unknown_signer_refused_then_accepted_after_keys_trust(tmp_path: Path, project: Path) -> None:
    # agent "remote" signs in another data dir (another machine)
    other = tmp_path / "remote-home"
    db_remote, db_here = tmp_path / "remote.db", tmp_path / "here.db"
    bundle = tmp_path / "h.json"
    e = {"LEAN_CTX_HOME": str(other)}
    cli(db_remote, project, "agent", "register", "--type", "claude", agent="remote", extra_env=e)
    cli(db_remote, project, "session", "task", "port the parser", agent="remote", extra_env=e)
    cli(db_remote, project, "handoff", "create", "--out", str(bundle), agent="remote", extra_env=e)
    p = cli(db_here, project, "handoff", "import", str(bundle), "--apply-session", check=False)
    assert p.returncode == 2 and "error[KEY_UNTRUSTED]" in p.stderr
    pub = tmp_path / "remote.pub"
    cli(db_remote, project, "keys", "export-pub", "remote", "--out", str(pub), agent="remote", extra_env=e)
    cli(db_here, project, "keys", "trust", str(pub))
    p = cli(db_here, project, "--json", "handoff", "import", str(bundle), "--apply-session")
    out = json.loads(p.stdout)
    assert out["signer"] == "remote" and out["applied"] == ["session"] and out["task"] == "port the parser"
    with LeanCtx(db_here) as lc:
        assert state(lc, "sb")[0] == "port the parser"


# --- A → B ---------------------------------------------------------------------------------


def test_handoff_from_a_imported_by_b_in_another_process(tmp_path: Path, app: LeanCtx, project: Path) -> None:
    work_of_a(app, project)
    res = do(app, CreateHandoff(message="over to you"), project)
    bundle = tmp_path / "handoff.json"
    bundle.write_text(res.bundle)
    assert res.counts == {"notes": 2, "knowledge": 2, "tasks": 2, "files": 1, "diary": 1}
    assert (Path(os.environ["LEAN_CTX_HOME"]) / "keys" / "a.key").exists()
    body = hb.verify(res.bundle, {"a"}).body
    assert body.files[0].path == "app.py" and body.files[0].content_hash
    assert [t.task_id for t in body.workflow] == ["t1", "t2"]
    # a tampered copy is refused by the other process and nothing is applied
    bad = tmp_path / "bad.json"
    bad.write_text(res.bundle.replace("use sqlite WAL", "use sqlite DEL"))
    p = cli(app.db, project, "handoff", "import", str(bad), "--apply", check=False)
    assert p.returncode == 2 and "error[SIGNATURE_INVALID]" in p.stderr
    assert get_session(app.projections.reader("sessions"), "sb") is None
    # B, in another process
    p = cli(app.db, project, "--json", "handoff", "import", str(bundle), "--apply-session", "--apply-knowledge",
            "--apply-workflow")
    out = json.loads(p.stdout)
    assert out["receiver"] == "b" and out["session_id"] == "sb" and out["message"] == "over to you"
    assert sorted(out["applied"]) == ["knowledge", "session", "workflow"]
    assert out["knowledge_skipped"] == ["db.engine", "deploy.host"]  # same log: already known
    t1, t2 = (next(t for t in out["tasks"] if t["task_id"] == i) for i in ("t1", "t2"))
    assert (t1["outcome"], t1["owner"], t1["status_here"]) == ("handed_over", "b", "in_progress")
    assert t1["lease_expires_at"] and t1["code"] is None
    # t2 was delegated to a but a never claimed it: nobody owns it, so it is not a's to hand over
    assert (t2["outcome"], t2["code"], t2["owner"]) == ("left_alone", "TASK_HANDOVER_NOT_SENDERS", None)
    assert state(app, "sb") == state(app, "sa")  # B continues where A stopped
    p = cli(app.db, project, "handoff", "list")
    assert f"created  {res.handoff_id}" in p.stdout and f"imported {res.handoff_id} from a by b" in p.stdout
    p = cli(app.db, project, "handoff", "show", res.handoff_id)
    assert "applied: session,knowledge,workflow" in p.stdout
    from tools.replay import replay

    rep = replay(app, verify=True)
    assert rep.chain_ok and all(p.match for p in rep.projections if p.name in ("handoffs", "sessions", "tasks"))


def test_ctx_handoff_tool_create_import_into_a_fresh_log(tmp_path: Path, app: LeanCtx, project: Path) -> None:
    work_of_a(app, project)
    out = registry.call(app, Caller("a", "sa", str(project)), "ctx_handoff",
                        {"action": "create", "knowledge": "ops", "out": "h.json"})
    assert out["handoff"]["counts"]["knowledge"] == 1 and (project / "h.json").exists()
    with LeanCtx(tmp_path / "fresh.db") as other:
        register(other, project, "a")  # a registered agent of this log: its local key is trusted
        r = registry.call(other, Caller("b", "sb", str(project)), "ctx_handoff",
                          {"action": "import", "path": "h.json", "apply_session": True, "apply_knowledge": True})
        assert r["import"]["knowledge_imported"] == ["deploy.host"]
        assert state(other, "sb") == state(app, "sa")
        assert "not in this log" in r["text"]
        with pytest.raises(LeanCtxError) as ei:
            registry.call(other, Caller("b", "sb", str(project)), "ctx_handoff", {"action": "import"})
        assert ei.value.code == "INVALID_ARGUMENT"


# --- envelopes -----------------------------------------------------------------------------


def test_envelope_mac_and_every_single_byte_change_is_refused() -> None:
    payload = json.loads(small_bundle())
    data = env.seal(payload, sender="a", created_at="2026-01-01T00:00:00.000000Z", payload_kind="handoff",
                    secret="s3cret")
    e = env.open_envelope(data, "s3cret")
    assert e.payload == payload and e.sender == "a" and len(e.mac) == 64
    with pytest.raises(LeanCtxError) as ei:
        env.open_envelope(data, "other")
    assert ei.value.code == env.ENVELOPE_BAD_MAC
    n = 0
    for i, bad in mutations(data, seed=7):
        if i == len(data) - 1 and bad[-1:] != b"\n":  # the trailing newline is optional on the wire...
            with pytest.raises(LeanCtxError):  # ...but no other byte may take its place
                env.open_envelope(bad, "s3cret")
            continue
        with pytest.raises(LeanCtxError) as ei:
            env.open_envelope(bad, "s3cret")
        assert ei.value.code in (env.ENVELOPE_BAD_MAC, env.ENVELOPE_INVALID), i
        n += 1
    assert n > 600


def test_envelope_over_http_and_pack_receive(tmp_path: Path, make_server: Any, project: Path,  # noqa: F811
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEAN_CTX_A2A_SECRET", "shared-s3cret")
    sender_db = tmp_path / "sender.db"
    with LeanCtx(sender_db) as lc:
        work_of_a(lc, project)
        res = do(lc, CreateHandoff(), project)
        a_state = state(lc, "sa")
    bundle = tmp_path / "h.json"
    bundle.write_text(res.bundle)
    server = make_server()
    api = Api(server)
    try:
        b = api.register()
        keys.trust(keys.pub_line(keys.public_key("a"), "a"))  # the receiver knows a's key
        # wrong secret: refused, nothing recorded
        p = cli(sender_db, project, "pack", "send", str(bundle), "--target", server.url, "--secret", "nope",
                agent="a", check=False)
        assert p.returncode == 2 and "ENVELOPE_BAD_MAC" in p.stderr
        # right secret, applied for the token's agent
        p = cli(sender_db, project, "--json", "pack", "send", str(bundle), "--target", server.url, "--secret",
                "shared-s3cret", "--token", b.token, "--apply", agent="a")
        out = json.loads(p.stdout)
        assert out["import"]["receiver"] == b.agent_id and "session" in out["import"]["applied"]
        # a raw post of a changed envelope is refused
        data = env.seal(json.loads(res.bundle), sender="a", created_at=clock.iso(clock.now()), payload_kind="handoff",
                        secret="shared-s3cret")
        r = api.client.post("/v1/a2a/handoff", content=data.replace(b"use sqlite WAL", b"use sqlite DEL"),
                            headers={"Content-Type": "application/json"})
        assert r.status_code == 401 and r.json()["error"]["code"] == "ENVELOPE_BAD_MAC"
        r = api.client.post("/v1/a2a/handoff", content=data, headers={"Content-Type": "application/json"})
        assert r.status_code == 200 and r.json()["import"]["receiver"] == "a2a"
    finally:
        api.close()
    with LeanCtx(tmp_path / "events.db") as srv_lc:  # the server's log
        imports = list_imported(srv_lc.projections.reader("handoffs"))
        assert [(i.receiver, i.via) for i in imports] == [("a2a", "envelope"), (b.agent_id, "envelope")]
        assert state(srv_lc, f"default-{b.agent_id}") == a_state
    # pack receive from a file: tampered → refused and nothing applied; intact → applied
    envf, badf = tmp_path / "e.json", tmp_path / "bad.json"
    cli(sender_db, project, "pack", "seal", str(bundle), "--secret", "k", "--out", str(envf), agent="a")
    raw = envf.read_bytes()
    badf.write_bytes(raw.replace(b'"step":2', b'"step":3'))
    recv_db = tmp_path / "recv.db"
    p = cli(recv_db, project, "pack", "receive", str(badf), "--secret", "k", "--apply", check=False)
    assert p.returncode == 2 and "error[ENVELOPE_BAD_MAC]" in p.stderr
    with LeanCtx(recv_db) as lc:
        assert get_session(lc.projections.reader("sessions"), "sb") is None
    cli(recv_db, project, "pack", "receive", str(envf), "--secret", "k", "--apply")
    with LeanCtx(recv_db) as lc:
        assert state(lc, "sb") == a_state
