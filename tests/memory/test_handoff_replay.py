"""Replaying a handoff: the same envelope (or bundle) imported again by the same receiver applies
nothing again (a network retry of ``pack send --apply`` must not wipe what the receiver did since),
what was not applied yet still can be, ``reapply`` applies again on purpose, and an envelope's
``created_at`` must be a date inside the receiver's window."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from api.test_http_common import Api, make_server  # noqa: F401

from leanctx import clock
from leanctx import envelope as env
from leanctx.app import LeanCtx
from leanctx.commands.agents import RegisterAgent
from leanctx.commands.handoff import CreateHandoff, ImportHandoff
from leanctx.commands.knowledge import RememberKnowledge
from leanctx.commands.sessions import AddNote, SetTask
from leanctx.errors import LeanCtxError
from leanctx.projections.sessions import get_session, session_notes

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
SECRET = "shared-s3cret"
pytestmark = pytest.mark.timeout(180)
STATE_KINDS = ("session.", "knowledge.", "task.")


def do(lc: LeanCtx, cmd: Any, project: Path, actor: str, sid: str | None = None) -> Any:
    return lc.bus.dispatch(cmd, actor=actor, session_id=sid, project=str(project)).value


def a_hands_off(lc: LeanCtx, project: Path) -> Any:
    do(lc, RegisterAgent(agent_type="claude", agent_id="a", project_root=str(project)), project, "a")
    do(lc, SetTask(task="port the parser", step=2, total=5), project, "a")
    do(lc, AddNote(note="finding", text="the lexer is fine"), project, "a")
    do(lc, RememberKnowledge(category="architecture", key="parser.kind", value="recursive descent"), project, "a")
    return do(lc, CreateHandoff(), project, "a")


def state(lc: LeanCtx, sid: str) -> tuple[Any, ...]:
    conn = lc.projections.reader("sessions")
    s = get_session(conn, sid)
    assert s is not None
    return (s.task, s.step, s.total, [(n.note, n.text) for n in session_notes(conn, sid)])


def seal(bundle: str, created_at: str | None = None) -> bytes:
    return env.seal(json.loads(bundle), sender="a", created_at=created_at or clock.iso(clock.now()),
                    payload_kind="handoff", secret=SECRET)


def state_events(lc: LeanCtx, since: int) -> list[str]:
    return [e.kind for e in lc.store.read_all(since) if e.kind.startswith(STATE_KINDS)]


def imports(lc: LeanCtx, since: int) -> list[tuple[str, tuple[str, ...]]]:
    return [(e.data().receiver, e.data().applied) for e in lc.store.read_all(since)  # type: ignore[attr-defined]
            if e.kind == "handoff.imported"]


@pytest.fixture
def served(tmp_path: Path, make_server: Any, monkeypatch: pytest.MonkeyPatch) -> Any:  # noqa: F811
    monkeypatch.setenv("LEAN_CTX_A2A_SECRET", SECRET)
    server = make_server()
    api = Api(server)
    yield server, api, tmp_path / "project"
    api.close()


def post(api: Api, data: bytes, query: str = "", headers: dict[str, str] | None = None) -> Any:
    return api.client.post("/v1/a2a/handoff" + query, content=data,
                           headers={"Content-Type": "application/json", **(headers or {})})


# --- replay over HTTP --------------------------------------------------------------------------


def test_a_replayed_envelope_applies_nothing_again(served: Any) -> None:
    server, api, project = served
    b = api.register()
    lc = server.state.lc
    made = a_hands_off(lc, project)
    data = seal(made.bundle)
    r = post(api, data, "?apply=1", b.headers)
    assert r.status_code == 200, r.text
    first = r.json()["import"]
    assert first["applied"] == ["session", "knowledge", "workflow"] and first["already_imported_at"] is None
    sid = f"default-{b.agent_id}"
    # b goes on working
    do(lc, SetTask(task="port the parser", step=3, total=5), project, b.agent_id)
    do(lc, AddNote(note="finding", text="the parser needs a new token"), project, b.agent_id)
    do(lc, RememberKnowledge(category="architecture", key="parser.kind", value="pratt"), project, b.agent_id)
    after = state(lc, sid)
    head = lc.store.head().position
    # the same bytes again (a retry of pack send --apply)
    r = post(api, data, "?apply=1", b.headers)
    assert r.status_code == 200, r.text
    again = r.json()
    imp = again["import"]
    assert imp["applied"] == [] and imp["already_applied"] == ["session", "knowledge", "workflow"]
    assert imp["already_imported_at"] is not None and imp["already_imported_at"].startswith("20")
    assert f"already imported at {imp['already_imported_at']}" in again["text"]
    assert state_events(lc, head) == []  # no state change: the import is only recorded
    assert imports(lc, head) == [(b.agent_id, ())]
    assert state(lc, sid) == after
    from leanctx.projections.knowledge import get_entry

    assert get_entry(lc.projections.reader("knowledge"), "parser.kind").value == "pratt"
    # apply on purpose: reapply=1
    r = post(api, data, "?apply=1&reapply=1", b.headers)
    assert r.status_code == 200, r.text
    assert r.json()["import"]["applied"] == ["session", "knowledge", "workflow"]
    assert state(lc, sid) == ("port the parser", 2, 5, [("finding", "the lexer is fine")])


def test_what_was_only_recorded_can_still_be_applied(served: Any) -> None:
    server, api, project = served
    b = api.register()
    lc = server.state.lc
    made = a_hands_off(lc, project)
    data = seal(made.bundle)
    # recorded by the anonymous receiver (no token), twice: recorded once
    assert post(api, data).status_code == 200
    head = lc.store.head().position
    r = post(api, data)
    assert r.status_code == 200 and r.json()["import"]["already_imported_at"] is not None
    assert state_events(lc, head) == [] and imports(lc, head) == [("a2a", ())]
    # b records it without applying, then applies it: the first apply is applied
    assert post(api, data, "", b.headers).json()["import"]["applied"] == []
    r = post(api, data, "?apply=1", b.headers)
    imp = r.json()["import"]
    assert imp["applied"] == ["session", "knowledge", "workflow"], r.text
    assert state(lc, f"default-{b.agent_id}") == ("port the parser", 2, 5, [("finding", "the lexer is fine")])


def test_two_retries_at_once_apply_once(served: Any) -> None:
    server, api, project = served
    b = api.register()
    lc = server.state.lc
    made = a_hands_off(lc, project)
    data = seal(made.bundle)
    head = lc.store.head().position
    gate = threading.Barrier(4)
    out: list[Any] = []

    def go() -> None:
        gate.wait()
        out.append(post(api, data, "?apply=1", b.headers))

    threads = [threading.Thread(target=go) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert [r.status_code for r in out] == [200] * 4
    applied = [r.json()["import"]["applied"] for r in out]
    assert sorted(applied, key=len) == [[], [], [], ["session", "knowledge", "workflow"]]
    assert state_events(lc, head).count("session.reset") == 1
    assert sorted(imports(lc, head), key=lambda i: len(i[1])) == [(b.agent_id, ())] * 3 + [
        (b.agent_id, ("session", "knowledge", "workflow"))]


# --- the command, through the CLI ----------------------------------------------------------------


def test_importing_the_same_bundle_twice_from_the_cli_applies_once(tmp_path: Path, project: Path) -> None:
    db = tmp_path / "events.db"
    with LeanCtx(db) as lc:
        made = a_hands_off(lc, project)
        do(lc, RegisterAgent(agent_type="cursor", agent_id="b", project_root=str(project)), project, "b")
    bundle = tmp_path / "h.json"
    bundle.write_text(made.bundle)
    e = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    e.update(LEAN_CTX_DB=str(db), LEAN_CTX_HOME=os.environ["LEAN_CTX_HOME"], LEAN_CTX_AGENT_ID="b",
             LEAN_CTX_SESSION_ID="s-b", LEAN_CTX_NO_DAEMON="1")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([LEAN_CTX, *args], check=False, capture_output=True, text=True, env=e, timeout=60, cwd=project,
                              stdin=subprocess.DEVNULL)

    p = cli("--json", "handoff", "import", str(bundle), "--apply")
    assert p.returncode == 0, p.stderr
    with LeanCtx(db) as lc:
        do(lc, AddNote(note="decision", text="keep the lexer"), project, "b", "s-b")
        after = state(lc, "s-b")
    p = cli("--json", "handoff", "import", str(bundle), "--apply")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    out = out.get("import", out)
    assert out["applied"] == [] and out["already_imported_at"]
    with LeanCtx(db) as lc:
        assert state(lc, "s-b") == after


def test_a_second_import_applies_only_what_was_not_applied(tmp_path: Path, project: Path) -> None:
    with LeanCtx(tmp_path / "events.db") as lc:
        made = a_hands_off(lc, project)
        do(lc, RegisterAgent(agent_type="cursor", agent_id="b", project_root=str(project)), project, "b")
        v = do(lc, ImportHandoff(bundle=made.bundle, apply_session=True), project, "b")
        assert v.applied == ["session"] and v.already_imported_at is None
        v = do(lc, ImportHandoff(bundle=made.bundle, apply_session=True, apply_knowledge=True), project, "b")
        assert (v.applied, v.already_applied) == (["knowledge"], ["session"])
        assert v.already_imported_at is not None


# --- created_at ----------------------------------------------------------------------------------


def test_envelope_created_at_must_be_a_date_in_the_window(served: Any) -> None:
    server, api, project = served
    b = api.register()
    lc = server.state.lc
    made = a_hands_off(lc, project)
    head = lc.store.head().position
    now = clock.now()
    refused = {
        "2001-01-01T00:00:00.000000Z": env.ENVELOPE_EXPIRED,
        clock.iso(now - env.MAX_AGE_S - 120): env.ENVELOPE_EXPIRED,
        clock.iso(now + env.MAX_SKEW_S + 120): env.ENVELOPE_NOT_YET_VALID,
        "2099-01-01T00:00:00Z": env.ENVELOPE_NOT_YET_VALID,
        "not a date": env.ENVELOPE_INVALID,
        "2026": env.ENVELOPE_INVALID,
        "2026-12-01T07:41:00": env.ENVELOPE_INVALID,  # no offset: whose clock?
    }
    for created_at, code in refused.items():
        r = post(api, seal(made.bundle, created_at), "?apply=1", b.headers)
        assert r.status_code in (409, 422) and r.json()["error"]["code"] == code, (created_at, r.text)
        assert "created_at" in r.json()["error"]["message"]
    assert lc.store.head().position == head  # refused before anything was dispatched
    # a sender's clock a little ahead, or an envelope some hours old, is fine; other ISO forms too
    for created_at in (clock.iso(now + 60), clock.iso(now - 6 * 3600)):
        r = post(api, seal(made.bundle, created_at), "", b.headers)
        assert r.status_code == 200, (created_at, r.text)
    stamp = clock.iso(now).replace(".", ",")[:19] + "+00:00"
    r = post(api, seal(made.bundle, stamp), "", None)
    assert r.status_code == 200, (stamp, r.text)


def test_open_envelope_checks_the_window_only_when_given_now() -> None:
    data = env.seal({"x": 1}, sender="a", created_at="2001-01-01T00:00:00Z", payload_kind="context", secret="k")
    assert env.open_envelope(data, "k").created_at == "2001-01-01T00:00:00Z"
    with pytest.raises(LeanCtxError) as ei:
        env.open_envelope(data, "k", now=clock.now())
    assert ei.value.code == env.ENVELOPE_EXPIRED
    bad = env.seal({"x": 1}, sender="a", created_at="whenever", payload_kind="context", secret="k")
    with pytest.raises(LeanCtxError) as ei:
        env.open_envelope(bad, "k")
    assert ei.value.code == env.ENVELOPE_INVALID


def test_the_tool_says_a_bundle_was_imported_before_and_reapplies_on_request(tmp_path: Path) -> None:
    """ctx_handoff's text for a second import names the first one (not "recorded only: apply
    it"), and reapply=true applies it again."""
    from leanctx.api import registry
    from leanctx.api.registry import Caller

    proj = tmp_path / "proj"
    proj.mkdir()
    with LeanCtx(tmp_path / "t.db") as app:
        a, b = Caller("a", "s-a", str(proj)), Caller("b", "s-b", str(proj))
        for who in (a, b):
            registry.call(app, who, "ctx_agent", {"action": "register", "role": "dev"})
        registry.call(app, a, "ctx_session", {"action": "task", "text": "port the parser"})
        made = registry.call(app, a, "ctx_handoff", {"action": "create"})["text"].splitlines()[-1]
        first = registry.call(app, b, "ctx_handoff", {"action": "import", "bundle": made, "apply_session": True})
        assert "applied: session" in first["text"] and "already imported" not in first["text"]
        again = registry.call(app, b, "ctx_handoff", {"action": "import", "bundle": made, "apply_session": True})
        assert "already imported at" in again["text"] and "reapply=true" in again["text"], again["text"]
        assert "applied: nothing" in again["text"] and "recorded only" not in again["text"]
        forced = registry.call(app, b, "ctx_handoff", {"action": "import", "bundle": made, "apply_session": True,
                                                       "reapply": True})
        assert "applied: session" in forced["text"], forced["text"]
