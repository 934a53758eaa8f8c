"""Context Proof v1: build + verify on a real log, every byte change refused, an edit of the db
behind the store's back named by position, untrusted signer reported, events after the head
ignored, the HTML page self-contained, and the CLI."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from leanctx import keys, proof
from leanctx.app import LeanCtx
from leanctx.errors import InvalidInput
from leanctx.commands.agents import RegisterAgent
from leanctx.commands.chat import PostMessage
from leanctx.commands.tasks import ClaimTask, CompleteTask, CreateTask
from leanctx.events import NewEvent
from leanctx.events.kinds.context import FileRead, ShellRan
from leanctx.proof_html import render_html

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
T0 = 1_900_000_000.0


def fill(lc: LeanCtx, project: Path) -> None:
    """A real log: agents, chat, tasks through the bus; context events appended directly."""
    root = str(project)
    for i, a in enumerate(("alice", "bob")):
        lc.bus.dispatch(RegisterAgent(agent_type="cursor", agent_id=a, project_root=root), actor=a, project=root,
                        now=T0 + i)
    lc.bus.dispatch(PostMessage(title="hello", body="starting on the parser"), actor="alice", project=root, now=T0 + 5)
    lc.bus.dispatch(CreateTask(title="fix parser", task_id="t1"), actor="alice", project=root, now=T0 + 6)
    lc.bus.dispatch(ClaimTask(task_id="t1"), actor="bob", project=root, now=T0 + 7)
    lc.bus.dispatch(CompleteTask(task_id="t1"), actor="bob", project=root, now=T0 + 8)
    lc.bus.dispatch(PostMessage(title="done", body="t1 is fixed", to="alice"), actor="bob", project=root, now=T0 + 9)
    reads = [
        ("alice", FileRead(path="src/p.py", mode="map", requested_mode="auto", content_hash="h1", lines=90,
                           raw_tokens=1200, sent_tokens=150)),
        ("alice", FileRead(path="src/p.py", mode="full", requested_mode="full", content_hash="h1", lines=90,
                           raw_tokens=1200, sent_tokens=1200)),  # a bounce
        ("bob", ShellRan(command="git status", pattern="git_status", exit_code=0, raw_tokens=400, sent_tokens=40)),
        ("bob", FileRead(path="README.md", mode="signatures", requested_mode="auto", content_hash="h2", lines=10,
                         raw_tokens=300, sent_tokens=60)),
    ]
    for n, (actor, ev) in enumerate(reads):
        lc.store.append(f"calls:{actor}", [NewEvent(event=ev, actor=actor, correlation_id=f"c{n}",
                                                    ts=f"2030-03-17T10:00:{n:02d}.000000Z", consistency="eventual")])


@pytest.fixture()
def built(tmp_path: Path, project: Path) -> tuple[Path, dict, Path]:
    db = tmp_path / "events.db"
    with LeanCtx(db) as lc:
        fill(lc, project)
        doc = proof.build(lc, project_root=str(project))
        jp, _ = proof.write(doc, tmp_path / "out")
    return db, doc, jp


def verify(db: Path, data: bytes) -> proof.VerifyReport:
    with LeanCtx(db) as lc:
        return proof.verify(lc, data)


def test_proof_of_a_real_log_verifies(built: tuple[Path, dict, Path], project: Path) -> None:
    db, doc, jp = built
    assert doc["format"] == "lean-ctx/context-proof" and doc["version"] == 1
    assert doc["chain"]["ok"] and doc["chain"]["checked"] == doc["head"]["position"] == doc["events"]["total"]
    by_kind = doc["events"]["by_kind"]
    assert by_kind["tool.called"] == 7 and by_kind["file.read"] == 3 and by_kind["shell.ran"] == 1
    assert {"agent.registered", "message.posted", "task.created"} <= set(by_kind)
    with LeanCtx(db) as lc:
        assert doc["head"]["hash"] == lc.store.head().hash
        live = {p: lc.projections.digest(p) for p in lc.projections.all}
    assert {p["name"]: p["digest"] for p in doc["projections"]} == live  # replay digests equal the live ones
    alice, bob = doc["agents"]["alice"], doc["agents"]["bob"]
    assert (alice["tool_calls"], bob["tool_calls"]) == (3, 4)
    assert alice["savings"]["bounces"] == 1 and alice["savings"]["saved_tokens"] == 1200 - 150 - 1200
    assert bob["savings"]["saved_tokens"] == (400 - 40) + (300 - 60)
    assert doc["signer"]["key_id"] == keys.project_key_id(project)
    rep = verify(db, jp.read_bytes())
    assert rep.ok and rep.trusted and rep.signature_valid, rep.differences


def test_every_byte_change_is_refused(built: tuple[Path, dict, Path]) -> None:
    db, doc, jp = built
    data = jp.read_bytes()
    assert proof.check_file(data).differences == []
    rng = random.Random(6)
    for i in range(len(data)):  # every position, a random flip of one or more bits
        changed = bytearray(data)
        changed[i] ^= rng.randrange(1, 256)
        fc = proof.check_file(bytes(changed))
        assert fc.differences, f"a change at byte {i} ({data[i:i + 20]!r}) was accepted"
    # the full verification (log replay included) on a sample, and an edit of every field's value
    for i in rng.sample(range(len(data)), 12):
        changed = bytearray(data)
        changed[i] ^= 0x01
        assert not verify(db, bytes(changed)).ok
    for m in re.finditer(rb'": ("[^"]*"|-?\d+|true|false|null)', data):
        start = m.start(1)
        changed = bytearray(data)
        changed[start + (1 if data[start] == ord('"') and m.end(1) - start > 2 else 0)] ^= 0x02
        assert proof.check_file(bytes(changed)).differences, m.group(0)


def test_a_respelled_signature_is_refused(built: tuple[Path, dict, Path]) -> None:
    """A signature's last base64 character before ``==`` has unused bits: setting one spells
    the same bytes. Only the canonical spelling is accepted, so that changed file is refused (the
    byte-flip test above hit this on one random flip in ~64)."""
    import base64

    _, _, jp = built
    data = jp.read_bytes()
    m = re.search(rb'"signature": "([A-Za-z0-9+/]+)(=*)"', data)
    assert m is not None and m.group(2) == b"=="
    alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    last = m.end(1) - 1
    changed = bytearray(data)
    changed[last] = alphabet[alphabet.index(data[last]) ^ 1]  # a bit the 64 bytes do not use
    sig = m.group(1) + m.group(2)
    respelled = bytes(changed[m.start(1):m.end(2)])
    assert respelled != sig and base64.b64decode(respelled) == base64.b64decode(sig)  # the premise
    assert proof.check_file(bytes(changed)).differences
    with pytest.raises(InvalidInput):
        keys.unb64(respelled.decode())


def test_edited_figures_resigned_with_a_trusted_key_are_named(built: tuple[Path, dict, Path], project: Path) -> None:
    """A proof signed correctly (by the project key) but with wrong figures: verify names each one."""
    db, doc, _ = built
    bad = json.loads(json.dumps(doc))
    bad["events"]["by_kind"]["task.created"] += 1
    bad["agents"]["bob"]["savings"]["saved_tokens"] = 10**6
    bad["projections"][0]["digest"] = "0" * 64
    bad["signature"] = keys.b64(keys.sign(bad["signer"]["key_id"], proof.signed_bytes(bad)))
    rep = verify(db, proof.render(bad))
    assert rep.signature_valid and rep.trusted and not rep.ok
    fields = {d.field for d in rep.differences}
    assert fields == {"events.by_kind.task.created", "agents.bob.savings.saved_tokens",
                      f"projections.{bad['projections'][0]['name']}.digest"}


def test_edit_behind_the_stores_back_is_named(built: tuple[Path, dict, Path], tmp_path: Path) -> None:
    db, doc, jp = built
    copy = tmp_path / "tampered.db"
    shutil.copy(db, copy)  # LeanCtx was closed: the WAL is checkpointed into the file
    conn = apsw.Connection(str(copy))
    pos = conn.execute("SELECT position FROM events WHERE kind = 'message.posted' ORDER BY position").fetchone()[0]
    conn.execute("DROP TRIGGER events_no_update")
    conn.execute("UPDATE events SET payload = replace(payload, 'starting on the parser', 'nothing to see')"
                 " WHERE position = ?", (pos,))
    assert conn.changes() == 1
    conn.close()
    rep = verify(copy, jp.read_bytes())
    assert not rep.ok
    broken = [d for d in rep.differences if d.code == "CHAIN_BROKEN"]
    assert broken and broken[0].actual == pos and f"position {pos}" in broken[0].message
    assert rep.signature_valid  # the file itself is intact: the log is what changed
    assert verify(db, jp.read_bytes()).ok  # the original still verifies


def test_untrusted_signer_is_reported(tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "events.db"
    monkeypatch.setenv("LEAN_CTX_HOME", str(tmp_path / "elsewhere"))  # another machine's data dir
    with LeanCtx(db) as lc:
        fill(lc, project)
        data = proof.render(proof.build(lc, project_root=str(project)))
    foreign_pub = keys.public_key(keys.project_key_id(project))
    monkeypatch.setenv("LEAN_CTX_HOME", str(tmp_path / "home"))
    rep = verify(db, data)
    assert not rep.ok and rep.signature_valid and not rep.trusted
    assert [d.code for d in rep.differences] == [keys.KEY_UNTRUSTED]
    keys.trust(keys.pub_line(foreign_pub, "theirs"))
    assert verify(db, data).ok


def test_events_after_the_head_are_ignored(built: tuple[Path, dict, Path], project: Path) -> None:
    db, doc, jp = built
    with LeanCtx(db) as lc:
        lc.bus.dispatch(PostMessage(title="later", body="after the proof"), actor="alice", project=str(project),
                        now=T0 + 100)
        lc.store.append("calls:bob", [NewEvent(event=ShellRan(command="ls", pattern="ls", exit_code=0, raw_tokens=9,
                                                               sent_tokens=1), actor="bob")])
    assert verify(db, jp.read_bytes()).ok


def test_html_is_self_contained(built: tuple[Path, dict, Path]) -> None:
    _, doc, jp = built
    page = jp.with_suffix(".html").read_text()
    assert page == render_html(doc)
    assert doc["head"]["hash"] in page
    assert "http" not in page.lower()
    assert not re.search(r"""\b(src|href)\s*=""", page, re.I)
    assert "<script" not in page.lower() and "@import" not in page and "url(" not in page
    assert "prefers-color-scheme: dark" in page and "<style>" in page
    hostile = json.loads(json.dumps(doc))
    hostile["agents"]["<img src=http://x>"] = hostile["agents"]["alice"]
    assert "<img" not in render_html(hostile)


def test_cli_proof_and_verify(tmp_path: Path, project: Path, home: Path) -> None:
    db = tmp_path / "cli.db"
    with LeanCtx(db) as lc:
        fill(lc, project)
    env = {**os.environ, "LEAN_CTX_HOME": str(home), "LEAN_CTX_DB": str(db)}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([LEAN_CTX, *args], cwd=project, env=env, capture_output=True, text=True, timeout=60)

    p = run("proof", "--out", str(tmp_path / "o"), "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert Path(out["json"]).exists() and Path(out["html"]).exists()
    p = run("proof", "verify", out["json"])
    assert p.returncode == 0 and p.stdout.startswith("ok:"), p.stdout + p.stderr
    record = Path(out["json"]).with_name(Path(out["json"]).name.replace(".json", ".verify.json"))
    rec = json.loads(record.read_text())  # the result is recorded next to the proof
    assert rec["verified"] is True and rec["differences"] == [] and rec["signer"] == out["signer"]
    data = bytearray(Path(out["json"]).read_bytes())
    i = data.index(b'"total": ') + len(b'"total": ')
    data[i] = ord("9") if data[i] != ord("9") else ord("8")
    bad = tmp_path / "bad.json"
    bad.write_bytes(bytes(data))
    p = run("proof", "verify", str(bad), "--json")
    assert p.returncode == 1
    rep = json.loads(p.stdout)
    assert not rep["ok"] and "SIGNATURE_INVALID" in {d["code"] for d in rep["differences"]}
    assert "events.total" in {d["field"] for d in rep["differences"]}
    p = run("proof", "verify", str(bad))
    assert p.returncode == 1 and "[SIGNATURE_INVALID]" in p.stdout and "events.total" in p.stdout
    rec = json.loads((tmp_path / "bad.verify.json").read_text())
    assert rec["verified"] is False
    assert {d["code"] for d in rec["differences"]} == {d["code"] for d in rep["differences"]}
    # no --out: <db dir>/proofs; `proof verify` without a file takes the latest proof there
    p = run("proof", "verify")
    assert p.returncode == 2 and "PROOF_NOT_FOUND" in p.stderr
    p = run("proof", "--json")
    assert p.returncode == 0, p.stderr
    default = json.loads(p.stdout)
    assert Path(default["json"]).parent == db.resolve().parent / "proofs"
    p = run("proof", "verify")
    assert p.returncode == 0 and p.stdout.startswith(f"ok: proof of head {default['head']['position']} "), p.stdout
    assert json.loads(Path(default["json"]).with_name(Path(default["json"]).stem + ".verify.json").read_text())[
        "verified"] is True


def test_written_proofs_are_shareable_and_replaced_whole(tmp_path: Path) -> None:
    out = tmp_path / "proofs"
    target = out / "p.json"
    out.mkdir()
    proof.write_atomic(target, b"first\n")
    assert target.read_bytes() == b"first\n" and (target.stat().st_mode & 0o777) == 0o644
    os.chmod(target, 0o640)  # an operator's choice of mode survives a rewrite
    proof.write_atomic(target, b"second\n")
    assert target.read_bytes() == b"second\n" and (target.stat().st_mode & 0o777) == 0o640
    assert sorted(p.name for p in out.iterdir()) == ["p.json"]  # no temporary file left behind
