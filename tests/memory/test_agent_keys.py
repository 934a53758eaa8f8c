"""Agent keys are made at registration, through every surface that registers an agent (the
command, the CLI — also through the daemon —, HTTP, the ctx_agent tool, the MCP session), kept
on re-registration, recorded on ``agent.registered``, and trusted for handoffs by importers of
the log — in another process, and through the recorded key with another data dir."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from api.test_http_common import Api, make_server  # noqa: F401

from leanctx import keys
from leanctx.api import mcp_session as ms
from leanctx.api import registry
from leanctx.api.registry import Caller
from leanctx.app import LeanCtx
from leanctx.commands.agents import Deregister, RegisterAgent
from leanctx.commands.handoff import CreateHandoff
from leanctx.commands.sessions import SetTask
from leanctx.errors import LeanCtxError
from leanctx.events import TopicFilter

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def app(tmp_path: Path) -> Any:
    with LeanCtx(tmp_path / "events.db") as a:
        yield a


def register(app: LeanCtx, agent_id: str | None, project: str = "/p") -> Any:
    return app.bus.dispatch(RegisterAgent(agent_type="claude", agent_id=agent_id, project_root=project),
                            actor=agent_id, project=project).value


def registered_payloads(app: LeanCtx, agent_id: str) -> list[dict[str, Any]]:
    return [e.to_dict()["payload"] for e in app.store.read_all(0, filter=TopicFilter(kinds=["agent.registered"]))
            if e.stream == f"agent:{agent_id}"]


def assert_key_files(home: Path, agent_id: str) -> str:
    """The key pair's files are there with their modes; returns the fingerprint of the .pub."""
    key, pub = home / "keys" / f"{agent_id}.key", home / "keys" / f"{agent_id}.pub"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600, oct(key.stat().st_mode)
    assert stat.S_IMODE((home / "keys").stat().st_mode) == 0o700
    raw, kid = keys.parse_pub(pub.read_text(), str(pub))
    assert kid == agent_id
    assert bytes(keys.load_signing_key(agent_id, create=False, base=home).verify_key) == raw  # the .key's
    return keys.fingerprint(raw)


def cli(db: Path, cwd: Path, *args: str, agent: str, home: Path | None = None, check: bool = True,
        extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    e.update(LEAN_CTX_DB=str(db), LEAN_CTX_HOME=str(home or os.environ["LEAN_CTX_HOME"]), LEAN_CTX_AGENT_ID=agent,
             LEAN_CTX_SESSION_ID=f"s-{agent}", LEAN_CTX_NO_DAEMON="1", **(extra or {}))
    p = subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, env=e, timeout=60, cwd=cwd,
                       stdin=subprocess.DEVNULL, check=False)
    if check and p.returncode != 0:
        raise AssertionError(f"lean-ctx {' '.join(args)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


# --- created at registration, kept afterwards ---------------------------------------------------


def test_registration_creates_the_key_pair_and_records_it(app: LeanCtx, home: Path) -> None:
    assert not (home / "keys").exists()
    r = register(app, "claude-a")
    fp = assert_key_files(home, "claude-a")
    assert (r.key_fingerprint, r.key_created, r.key_warning) == (fp, True, None)
    [ev] = registered_payloads(app, "claude-a")
    assert ev["fingerprint"] == fp and keys.fingerprint(keys.unb64(ev["public_key"])) == fp
    # a generated id gets its key too
    g = register(app, None)
    assert g.key_created and assert_key_files(home, g.agent_id) == g.key_fingerprint
    # ids with ':' are valid agent ids, so valid key ids
    assert register(app, "mcp:cursor-1").key_fingerprint == assert_key_files(home, "mcp:cursor-1")


def test_registering_again_keeps_the_key(app: LeanCtx, home: Path) -> None:
    first = register(app, "a")
    seed = (home / "keys" / "a.key").read_bytes()
    again = register(app, "a")  # a rejoin
    app.bus.dispatch(Deregister(agent="a"), actor="a")
    after_leaving = register(app, "a")
    with LeanCtx(home.parent / "other.db") as other:  # another project's log, same data dir
        elsewhere = register(other, "a", "/q")
    assert (home / "keys" / "a.key").read_bytes() == seed
    assert again.rejoined and not again.key_created and not after_leaving.key_created and not elsewhere.key_created
    assert {first.key_fingerprint, again.key_fingerprint, after_leaving.key_fingerprint,
            elsewhere.key_fingerprint} == {assert_key_files(home, "a")}
    assert [p["fingerprint"] for p in registered_payloads(app, "a")] == [first.key_fingerprint] * 3
    # a key made earlier (e.g. by a handoff before any registration) is adopted, not replaced
    pre = keys.public_key("b")
    assert register(app, "b").key_fingerprint == keys.fingerprint(pre) and keys.public_key("b") == pre


def test_processes_registering_one_id_at_once_end_with_one_key(tmp_path: Path, home: Path) -> None:
    # eight processes, eight logs, one data dir: exactly one key wins and every log records it
    dbs = [tmp_path / f"e{i}.db" for i in range(8)]
    procs = [subprocess.Popen([LEAN_CTX, "--json", "agent", "register", "--type", "claude", "--id", "racer"],
                              env={**os.environ, "LEAN_CTX_DB": str(db), "LEAN_CTX_NO_DAEMON": "1"},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
             for db in dbs]
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    regs = [json.loads(o[0]) for o in outs]
    fp = assert_key_files(home, "racer")
    assert {r["key_fingerprint"] for r in regs} == {fp}
    assert sum(r["key_created"] for r in regs) == 1
    assert sorted(os.listdir(home / "keys")) == ["racer.key", "racer.pub"]  # no temporary file left


def test_an_insecure_key_does_not_stop_registration_but_is_not_recorded(app: LeanCtx, home: Path,
                                                                      tmp_path: Path) -> None:
    keys.public_key("lax")
    os.chmod(home / "keys" / "lax.key", 0o644)
    r = register(app, "lax")
    assert r.agent_id == "lax" and r.key_fingerprint is None and r.key_warning.startswith("KEY_INSECURE:")
    [ev] = registered_payloads(app, "lax")
    assert ev["public_key"] is None and ev["fingerprint"] is None
    assert stat.S_IMODE((home / "keys" / "lax.key").stat().st_mode) == 0o644  # left as it was, not replaced
    p = cli(tmp_path / "cli.db", tmp_path, "agent", "register", "--type", "claude", agent="lax")
    assert "registered" in p.stdout and "warning[KEY_INSECURE]" in p.stderr and "chmod 600" in p.stderr


# --- every surface that registers -------------------------------------------------------------


def test_cli_registration_creates_the_key(tmp_path: Path, home: Path) -> None:
    db = tmp_path / "e.db"
    p = cli(db, tmp_path, "agent", "register", "--type", "cursor", agent="cursor-a")
    fp = assert_key_files(home, "cursor-a")
    assert f"key {fp} (new, keys/cursor-a.key)" in p.stdout
    p = cli(db, tmp_path, "agent", "register", "--type", "cursor", agent="cursor-a")
    assert f"key {fp} (kept" in p.stdout and assert_key_files(home, "cursor-a") == fp


def test_http_registration_creates_the_key_in_the_servers_data_dir(make_server: Any, home: Path) -> None:  # noqa: F811
    api = Api(make_server())
    try:
        r = api.client.post("/v1/agents/register", json={"agent_type": "claude", "role": "dev"})
        assert r.status_code == 200, r.text
        d = r.json()
        assert d["key_fingerprint"] == assert_key_files(home, d["agent_id"]) and d["key_warning"] is None
        assert "keys/" not in r.text  # the server's file paths are not told to clients
    finally:
        api.close()


def test_mcp_tool_and_mcp_session_registration_create_the_key(app: LeanCtx, home: Path) -> None:
    out = registry.call(app, Caller("tool-agent", "s1", "/p"), "ctx_agent", {"action": "register", "role": "dev"})
    fp = assert_key_files(home, "tool-agent")
    assert out["agent"]["key_fingerprint"] == fp and f"key {fp}" in out["text"]
    sess = ms.new_session({"name": "claude-code"}, {}, None)
    ms.register(app, sess, "/p", pid=os.getpid())
    assert sess.registered and sess.agent_id
    [ev] = registered_payloads(app, sess.agent_id)
    assert ev["fingerprint"] == assert_key_files(home, sess.agent_id)


def test_registration_through_the_daemon_creates_the_key(tmp_path: Path, home: Path) -> None:
    env = {**os.environ, "LEAN_CTX_DAEMON_WATCH": "0", "LEAN_CTX_DB": str(tmp_path / "e.db"),
           "LEAN_CTX_AGENT_ID": "via-daemon"}
    env.pop("LEAN_CTX_NO_DAEMON", None)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([LEAN_CTX, *args], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path,
                              stdin=subprocess.DEVNULL, check=True)

    run("daemon", "start", "--json")
    try:
        before = json.loads(run("daemon", "status", "--json").stdout)["requests"]
        reg = json.loads(run("--json", "agent", "register", "--type", "claude").stdout)
        after = json.loads(run("daemon", "status", "--json").stdout)
    finally:
        subprocess.run([LEAN_CTX, "daemon", "stop"], env=env, capture_output=True, timeout=30, check=False)
    assert after["requests"] == before + 1 and after["by_command"].get("agent register") == 1  # served there
    assert reg["agent_id"] == "via-daemon" and reg["key_fingerprint"] == assert_key_files(home, "via-daemon")


# --- trusted for handoffs -----------------------------------------------------------------------


def make_handoff(app: LeanCtx, agent: str, project: Path, tmp_path: Path) -> Path:
    app.bus.dispatch(SetTask(task=f"work of {agent}", step=1, total=3), actor=agent, session_id=f"s-{agent}",
                     project=str(project))
    res = app.bus.dispatch(CreateHandoff(), actor=agent, session_id=f"s-{agent}", project=str(project)).value
    path = tmp_path / f"{agent}.json"
    path.write_text(res.bundle)
    return path


def test_a_registered_agents_handoff_imports_in_another_process(app: LeanCtx, tmp_path: Path) -> None:
    register(app, "a", str(tmp_path))
    bundle = make_handoff(app, "a", tmp_path, tmp_path)
    p = cli(app.db, tmp_path, "--json", "handoff", "import", str(bundle), "--apply-session", agent="b")
    out = json.loads(p.stdout)
    assert (out["signer"], out["task"], out["applied"]) == ("a", "work of a", ["session"])


def test_an_unknown_signer_is_refused_and_nothing_is_recorded(app: LeanCtx, tmp_path: Path, home: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # "ghost" has a key in this data dir (from its first handoff) but never registered in this log
    bundle = make_handoff(app, "ghost", tmp_path, tmp_path)
    before = app.store.head().position
    p = cli(app.db, tmp_path, "handoff", "import", str(bundle), "--apply", agent="b", check=False)
    assert p.returncode == 2 and "error[KEY_UNTRUSTED]" in p.stderr and "ghost" in p.stderr
    imported = [e for e in app.store.read_all(before) if e.kind != "tool.called"]
    assert imported == []
    # a key of another data dir, registered in another log, is unknown here too
    other_home = tmp_path / "other-home"
    with LeanCtx(tmp_path / "other.db") as other:
        monkeypatch.setenv("LEAN_CTX_HOME", str(other_home))
        register(other, "remote", str(tmp_path))
        remote = make_handoff(other, "remote", tmp_path, tmp_path)
        monkeypatch.setenv("LEAN_CTX_HOME", str(home))
    assert (other_home / "keys" / "remote.key").exists() and not (home / "keys" / "remote.key").exists()
    p = cli(app.db, tmp_path, "handoff", "import", str(remote), agent="b", check=False)
    assert p.returncode == 2 and "error[KEY_UNTRUSTED]" in p.stderr


def test_the_recorded_key_is_trusted_by_an_importer_with_another_data_dir(tmp_path: Path) -> None:
    db, home_a, home_b = tmp_path / "shared.db", tmp_path / "home-a", tmp_path / "home-b"
    cli(db, tmp_path, "agent", "register", "--type", "claude", agent="a", home=home_a)
    cli(db, tmp_path, "session", "task", "port the parser", agent="a", home=home_a)
    bundle = tmp_path / "h.json"
    cli(db, tmp_path, "handoff", "create", "--out", str(bundle), agent="a", home=home_a)
    assert not (home_b / "keys" / "a.key").exists()
    p = cli(db, tmp_path, "--json", "handoff", "import", str(bundle), "--apply-session", agent="b", home=home_b)
    out = json.loads(p.stdout)
    assert out["signer"] == "a" and out["task"] == "port the parser"
    assert out["fingerprint"] == assert_key_files(home_a, "a")
    # once a deregisters, its recorded key vouches only for the handoff this log recorded it making
    # then ("hand off, then leave"; tests/memory/test_handoff_after_leave.py has the rest)
    cli(db, tmp_path, "agent", "deregister", "a", agent="a", home=home_a)
    p = cli(db, tmp_path, "--json", "handoff", "import", str(bundle), agent="b", home=home_b)
    out = json.loads(p.stdout)
    assert out["signer"] == "a" and out["sender_left"] and isinstance(out["trusted_by"], int)
    late = tmp_path / "late.json"  # made after leaving: no key is bound to a any more
    cli(db, tmp_path, "handoff", "create", "--out", str(late), agent="a", home=home_a)
    p = cli(db, tmp_path, "handoff", "import", str(late), agent="b", home=home_b, check=False)
    assert p.returncode == 2 and "error[KEY_UNTRUSTED]" in p.stderr


def test_a_recorded_key_of_another_agent_does_not_vouch_for_the_claimed_sender(app: LeanCtx, tmp_path: Path) -> None:
    from leanctx import handoff_bundle as hb

    register(app, "a")
    register(app, "b")
    bundle = make_handoff(app, "b", tmp_path, tmp_path).read_text()
    recorded = {"a": [keys.b64(keys.public_key("b"))]}  # b's key recorded under a: trusted as a, not as b
    with pytest.raises(LeanCtxError) as ei:
        hb.verify(bundle, {"a"}, recorded=recorded)
    assert ei.value.code == keys.KEY_UNTRUSTED and "not as the claimed signer" in ei.value.message
    # with no local key (another data dir), the key recorded for b vouches for b — while b is registered
    empty = tmp_path / "empty-home"
    own = {"b": [keys.b64(keys.public_key("b"))]}
    v = hb.verify(bundle, {"b"}, recorded=own, base=empty)
    assert v.signer.key_id == "b" and v.signer.path.startswith("log:")
    with pytest.raises(LeanCtxError) as ei:
        hb.verify(bundle, set(), recorded=own, base=empty)
    assert ei.value.code == keys.KEY_UNTRUSTED
