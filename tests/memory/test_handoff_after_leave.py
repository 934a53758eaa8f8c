"""Hand off, then leave: a bundle still imports after its sender deregistered, when this log
recorded it (``handoff.created`` by the sender, same digest and key) and the key is the one the
log bound to the sender when it was created (``leanctx.handoff_trust``). Bundles this log did not
record (another log's, edited, re-signed, made by someone naming the id after it left) stay
refused, a rejoin with another key neither breaks an old bundle nor lets the new key speak for
it, and a registered sender's import is what it was.

Deregistering releases nothing: the sender's tasks stay its own until an import with the
workflow applied hands them to the importer, as for a sender that is still registered.

``home-a`` is the sender's data dir, ``home-x`` another one (a rejoin from elsewhere, or someone
naming the id), ``home-b`` the importer's, which holds no key of ``a``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from api.test_http_common import Api, make_server  # noqa: F401

from leanctx import clock, keys
from leanctx import handoff_bundle as hb
from leanctx.api import registry
from leanctx.api.registry import Caller
from leanctx.app import LeanCtx
from leanctx.commands.agents import Deregister, RegisterAgent
from leanctx.commands.handoff import CreateHandoff, ImportHandoff
from leanctx.commands.knowledge import RememberKnowledge
from leanctx.commands.sessions import AddNote, SetTask
from leanctx.commands.tasks import ClaimTask, CreateTask
from leanctx.errors import LeanCtxError
from leanctx.events import NewEvent, TopicFilter
from leanctx.events.kinds.handoff import HandoffCreated
from leanctx.handoff_trust import HANDOFF_ID_REUSED
from leanctx.projections.sessions import get_session, session_notes
from leanctx.projections.tasks import get_task

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def app(tmp_path: Path) -> Any:
    with LeanCtx(tmp_path / "events.db") as a:
        yield a


@pytest.fixture
def use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``use(name)``: switch this process to data dir ``home-<name>``; returns its path."""
    def _use(name: str) -> Path:
        h = tmp_path / f"home-{name}"
        monkeypatch.setenv("LEAN_CTX_HOME", str(h))
        return h
    return _use


def do(app: LeanCtx, cmd: Any, project: Path, actor: str = "a") -> Any:
    return app.bus.dispatch(cmd, actor=actor, session_id=f"s-{actor}", project=str(project)).value


def cli(db: Path, cwd: Path, *args: str, agent: str = "b", home: Path | None = None,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    e.update(LEAN_CTX_DB=str(db), LEAN_CTX_HOME=str(home or os.environ["LEAN_CTX_HOME"]), LEAN_CTX_AGENT_ID=agent,
             LEAN_CTX_SESSION_ID=f"s-{agent}", LEAN_CTX_NO_DAEMON="1")
    p = subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, env=e, timeout=60, cwd=cwd,
                       stdin=subprocess.DEVNULL, check=False)
    if check and p.returncode != 0:
        raise AssertionError(f"lean-ctx {' '.join(args)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def register(app: LeanCtx, project: Path, agent: str = "a") -> Any:
    return do(app, RegisterAgent(agent_type="claude", agent_id=agent, project_root=str(project)), project, agent)


def leave(app: LeanCtx, project: Path, agent: str = "a") -> None:
    do(app, Deregister(agent=agent), project, agent)


def handoff(app: LeanCtx, project: Path, task: str, agent: str = "a") -> Any:
    do(app, SetTask(task=task), project, agent)
    return do(app, CreateHandoff(), project, agent)


def import_(app: LeanCtx, project: Path, bundle: str, importer: str = "b", **kw: Any) -> Any:
    return do(app, ImportHandoff(bundle=bundle, apply_session=True, **kw), project, importer)


def refused(app: LeanCtx, project: Path, bundle: str, importer: str = "b") -> LeanCtxError:
    head = app.store.head().position
    with pytest.raises(LeanCtxError) as ei:
        import_(app, project, bundle, importer, apply_knowledge=True, apply_workflow=True)
    assert [e.kind for e in app.store.read_all(head)] == ["tool.called"]  # the refusal alone
    return ei.value


def created_at(app: LeanCtx, handoff_id: str) -> int:
    [e] = [e for e in app.store.read_all(0, filter=TopicFilter(kinds=("handoff.created",)))
           if e.stream == f"handoff:{handoff_id}"]
    return e.position


def resign(bundle: str, home: Path, **changes: Any) -> str:
    """``bundle`` with ``changes`` to its body, signed by ``a``'s key in ``home`` (its fingerprint
    put in as the sender's)."""
    obj = json.loads(bundle)
    del obj["signature"]
    body = msgspec.convert(obj, hb.HandoffBodyV1)
    fp = keys.fingerprint(keys.public_key(body.sender.key_id, base=home))
    body = msgspec.structs.replace(body, sender=msgspec.structs.replace(body.sender, fingerprint=fp), **changes)
    return hb.encode(hb.sign_bundle(body, base=home)).decode()


def session_state(app: LeanCtx, sid: str) -> tuple[Any, ...]:
    conn = app.projections.reader("sessions")
    s = get_session(conn, sid)
    assert s is not None
    return (s.task, s.step, s.total, [(n.note, n.text, n.path) for n in session_notes(conn, sid)])


def owners(app: LeanCtx, *task_ids: str) -> dict[str, tuple[str, str | None]]:
    conn, now = app.projections.reader("tasks"), clock.now()
    return {t: ((v := get_task(conn, "general", t, now=now)).status, v.owner) for t in task_ids}  # type: ignore[union-attr]


def a_at_work(app: LeanCtx, project: Path) -> None:
    register(app, project)
    do(app, SetTask(task="port the parser", step=2, total=5), project)
    do(app, AddNote(note="finding", text="the lexer drops BOMs"), project)
    do(app, AddNote(note="decision", text="keep the FTS index"), project)
    do(app, RememberKnowledge(category="convention", key="tests.runner", value="pytest -q"), project)
    do(app, CreateTask(title="fix the race", task_id="t1", owner="a"), project)
    do(app, ClaimTask(task_id="t1", lease_seconds=300), project)
    do(app, CreateTask(title="test it", task_id="t2", owner="a"), project)


# --- hand off, then leave ---------------------------------------------------------------------


def test_hand_off_then_leave_then_import_in_another_process(app: LeanCtx, project: Path, tmp_path: Path,
                                                            use: Any) -> None:
    home_a, home_b = use("a"), tmp_path / "home-b"
    a_at_work(app, project)
    bundle = project / "h.json"  # ctx_handoff reads bundle files inside the project only
    made = json.loads(cli(app.db, project, "--json", "handoff", "create", "--out", str(bundle), agent="a",
                          home=home_a).stdout)
    cli(app.db, project, "agent", "deregister", "a", agent="a", home=home_a)
    seq = created_at(app, made["handoff_id"])
    # deregistering releases nothing: a's tasks are still a's
    assert owners(app, "t1", "t2") == {"t1": ("in_progress", "a"), "t2": ("open", "a")}
    head = app.store.head().position
    out = json.loads(cli(app.db, project, "--json", "handoff", "import", str(bundle), "--apply",
                         home=home_b).stdout)
    assert not (home_b / "keys" / "a.key").exists()  # trusted through the log, not a key file here
    assert (out["signer"], out["fingerprint"], out["digest"]) == ("a", made["fingerprint"], made["digest"])
    assert (out["sender_left"], out["trusted_by"]) == (True, seq)
    assert out["trust_note"] == f"sender deregistered; trusted by the log's handoff.created at seq {seq}"
    # applied as usual: session, knowledge (same log: already known), workflow (a's tasks become b's)
    assert out["applied"] == ["session", "knowledge", "workflow"]
    assert session_state(app, "s-b") == session_state(app, "s-a")
    assert out["knowledge_skipped"] == ["tests.runner"]
    assert {t["task_id"]: (t["outcome"], t["owner"]) for t in out["tasks"]} == {
        "t1": ("handed_over", "b"), "t2": ("handed_over", "b")}
    assert owners(app, "t1", "t2") == {"t1": ("in_progress", "b"), "t2": ("open", "b")}
    assert get_task(app.projections.reader("tasks"), "general", "t1", now=clock.now()).lease_state == "active"
    kinds = [e.kind for e in app.store.read_all(head)]
    assert kinds.count("task.handed_over") == 2 and kinds[-1] == "handoff.imported"
    imported = app.store.read_all(head, filter=TopicFilter(kinds=("handoff.imported",)))[0].to_dict()["payload"]
    assert (imported["sender"], imported["key_id"], imported["fingerprint"]) == ("a", "a", made["fingerprint"])
    # the tool (MCP / HTTP /v1/call) answers with the same result
    r = registry.call(app, Caller("c", "s-c", str(project)), "ctx_handoff",
                      {"action": "import", "path": str(bundle), "apply_session": True})
    imp = r["import"]
    assert (imp["sender_left"], imp["trusted_by"], imp["task"]) == (True, seq, "port the parser")
    assert f"trust: sender deregistered; trusted by the log's handoff.created at seq {seq}" in r["text"].splitlines()
    # replay rebuilds the same state
    assert cli(app.db, project, "replay", "--verify", home=home_b).returncode == 0


def test_an_envelope_over_http_is_applied_after_the_sender_left(
        tmp_path: Path, make_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    from leanctx import envelope as env

    monkeypatch.setenv("LEAN_CTX_A2A_SECRET", "shared-s3cret")
    server = make_server()
    api = Api(server)
    try:
        b = api.register()
        project = tmp_path / "project"
        with LeanCtx(tmp_path / "events.db") as lc:  # the server's log
            a_at_work(lc, project)
            made = do(lc, CreateHandoff(), project)
            leave(lc, project)
            data = env.seal(json.loads(made.bundle), sender="a", created_at=clock.iso(clock.now()),
                            payload_kind="handoff", secret="shared-s3cret")
            r = api.client.post("/v1/a2a/handoff?apply=1", content=data, headers=b.headers)
            assert r.status_code == 200, r.text
            imp = r.json()["import"]
            assert imp["sender_left"] and imp["trusted_by"] == created_at(lc, made.handoff_id)
            assert "sender deregistered" in imp["trust_note"]
            assert owners(lc, "t1", "t2") == {"t1": ("in_progress", b.agent_id), "t2": ("open", b.agent_id)}
    finally:
        api.close()


# --- what the log does not vouch for --------------------------------------------------------------


def test_a_bundle_made_in_another_log_is_refused_once_its_sender_left(app: LeanCtx, project: Path,
                                                                        tmp_path: Path) -> None:
    with LeanCtx(tmp_path / "other.db") as other:  # same data dir, same key, another project's log
        register(other, project)
        elsewhere = handoff(other, project, "work of the other project").bundle
    register(app, project)
    here = handoff(app, project, "work of this project").bundle
    ok = import_(app, project, elsewhere)  # while a is registered here, its key speaks for it
    assert ok.task == "work of the other project" and (ok.sender_left, ok.trusted_by) == (False, None)
    leave(app, project)
    path = tmp_path / "elsewhere.json"
    path.write_text(elsewhere)
    head = app.store.head().position
    p = cli(app.db, project, "handoff", "import", str(path), "--apply", check=False)
    assert p.returncode == 2 and "error[KEY_UNTRUSTED]" in p.stderr
    assert "this log holds no handoff.created of" in p.stderr
    assert [e.kind for e in app.store.read_all(head)] == ["tool.called"]
    # a record of that bundle written into this log (while a's key was bound) by someone else than
    # a does not vouch for it either
    register(app, project)
    obj = json.loads(elsewhere)
    rec = HandoffCreated(handoff_id=obj["handoff_id"], sender="a", session_id="s-a", key_id="a",
                         fingerprint=obj["sender"]["fingerprint"], digest=hb.digest_of(hb.signed_bytes(obj)))
    app.store.append(f"handoff:{obj['handoff_id']}", [NewEvent(event=rec, actor="m", project=str(project))])
    leave(app, project)
    err = refused(app, project, elsewhere)
    assert err.code == keys.KEY_UNTRUSTED and "was not appended by 'a'" in err.message
    assert import_(app, project, here).sender_left  # the one this log recorded imports


def test_edited_or_re_signed_bundles_and_handoffs_made_after_leaving_are_refused(
        app: LeanCtx, project: Path, use: Any) -> None:
    home_a = use("a")
    register(app, project)
    made = handoff(app, project, "before leaving")
    leave(app, project)
    use("b")
    # an edit keeping the canonical form: not the bundle the log recorded
    edited = made.bundle.replace("before leaving", "before leavinG")
    err = refused(app, project, edited)
    assert err.code == keys.KEY_UNTRUSTED and "records another bundle" in err.message
    # an edit breaking it
    assert refused(app, project, made.bundle.replace('"format":', '"format": ')).code == hb.HANDOFF_TAMPERED
    # the recorded bytes with another signature (the digest leaves the signature out): the bound key
    # still has to verify it
    obj = json.loads(made.bundle)
    obj["signature"]["sig"] = keys.sign("a", b"something else", base=home_a).hex()
    assert refused(app, project, hb.encode(obj).decode()).code == keys.SIGNATURE_INVALID
    # re-signed by a's own key (same id, other content): the log recorded another digest
    err = refused(app, project, resign(made.bundle, home_a, message="more work"))
    assert err.code == keys.KEY_UNTRUSTED and "records another bundle" in err.message
    # someone naming a after it left records a handoff.created with a key of its own: no key bound then
    use("x")
    forged = handoff(app, project, "work of someone else")
    use("b")
    err = refused(app, project, forged.bundle)
    assert err.code == keys.KEY_UNTRUSTED and f"bound no key to 'a', not {forged.fingerprint}" in err.message
    # nor does a itself speak for work it hands off after leaving (with the key bound before)
    use("a")
    late = handoff(app, project, "after leaving")
    assert late.fingerprint == made.fingerprint
    use("b")
    assert refused(app, project, late.bundle).code == keys.KEY_UNTRUSTED
    # the bundle the log recorded while a was registered imports
    v = import_(app, project, made.bundle)
    assert (v.task, v.sender_left, v.trusted_by) == ("before leaving", True, created_at(app, made.handoff_id))


# --- a rejoin with another key -------------------------------------------------------------------


def test_a_rejoin_with_another_key_keeps_old_bundles_and_does_not_lend_them_its_key(
        app: LeanCtx, project: Path, use: Any) -> None:
    use("a")
    first = register(app, project)
    old = handoff(app, project, "before leaving")
    leave(app, project)
    home_x = use("x")  # a rejoins from another data dir: its new key is bound now
    new = register(app, project)
    assert new.key_fingerprint not in (None, first.key_fingerprint) and new.key_warning is None
    use("b")
    v = import_(app, project, old.bundle)
    assert (v.task, v.signer, v.fingerprint) == ("before leaving", "a", first.key_fingerprint)
    assert (v.sender_left, v.trusted_by) == (False, created_at(app, old.handoff_id))
    assert v.trust_note == ("a's current registration binds another key; trusted by the log's handoff.created "
                            f"at seq {v.trusted_by}")
    # the new key signing the old handoff's id (its content changed or not) is not that handoff
    for changes in ({}, {"message": "pretend"}):
        forged = resign(old.bundle, home_x, **changes)
        err = refused(app, project, forged)
        assert err.code == HANDOFF_ID_REUSED and old.handoff_id in err.message
    # the new key speaks for new work (an id this log has not recorded)
    fresh = resign(old.bundle, home_x, handoff_id="h-00000000000000ff")
    assert import_(app, project, fresh).fingerprint == new.key_fingerprint
    # once a left again, the forgery has no current key to lean on either
    use("x")
    leave(app, project)
    use("b")
    assert refused(app, project, resign(old.bundle, home_x)).code == keys.KEY_UNTRUSTED
    v = import_(app, project, old.bundle)
    assert v.sender_left and v.fingerprint == first.key_fingerprint


# --- a registered sender ----------------------------------------------------------------------


def test_a_registered_senders_import_is_unchanged(app: LeanCtx, project: Path, tmp_path: Path) -> None:
    a_at_work(app, project)
    bundle = project / "h.json"  # ctx_handoff reads bundle files inside the project only
    made = do(app, CreateHandoff(), project)
    bundle.write_text(made.bundle)
    out = json.loads(cli(app.db, project, "--json", "handoff", "import", str(bundle), "--apply-session").stdout)
    assert (out["signer"], out["fingerprint"], out["task"]) == ("a", made.fingerprint, "port the parser")
    assert (out["sender_left"], out["trusted_by"], out["trust_note"]) == (False, None, None)
    assert f"from a verified (signer a {made.fingerprint})" in cli(app.db, project, "handoff", "import",
                                                                   str(bundle)).stdout
    # a registered sender's bundle needs no handoff.created here (made in another log, same key)
    with LeanCtx(tmp_path / "other.db") as other:
        register(other, project)
        elsewhere = handoff(other, project, "elsewhere").bundle
    v = import_(app, project, elsewhere)
    assert (v.task, v.sender_left, v.trusted_by, v.trust_note) == ("elsewhere", False, None, None)
    # a sender that never registered is still nobody's (its handoff.created does not vouch for it)
    ghost = handoff(app, project, "ghost work", agent="ghost")
    assert refused(app, project, ghost.bundle).code == keys.KEY_UNTRUSTED
