"""End-to-end through the real console script, in real subprocesses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))  # this interpreter's, not whatever PATH finds


def run(db: Path, *args: str, env: dict[str, str] | None = None, check: bool = True,
        timeout: float = 60) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "LEAN_CTX_DB": str(db), **(env or {})}
    full_env.pop("LEAN_CTX_AGENT_ID", None) if not (env and "LEAN_CTX_AGENT_ID" in env) else None
    p = subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, env=full_env, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"lean-ctx {' '.join(args)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    return tmp_path / "events.db"


def _all_commands() -> list[tuple[str, ...]]:
    import typer

    from leanctx.api.cli.app import app

    out: list[tuple[str, ...]] = []

    def walk(cmd, path: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
        out.append(path)
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            if not getattr(sub, "hidden", False):
                walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return out


def test_every_command_has_help_text() -> None:
    """Every verb and group documents itself (checked on the command tree, in-process)."""
    import typer

    from leanctx.api.cli.app import app

    root = typer.main.get_command(app)
    commands = _all_commands()
    assert len(commands) > 40  # the tree really was walked
    missing = []
    for path in commands:
        cmd = root
        for name in path:
            cmd = cmd.commands[name]  # type: ignore[attr-defined]
        if not (cmd.help or "").strip():
            missing.append(" ".join(path))
        for param in cmd.params:
            if param.name not in ("help", "ctx") and getattr(param, "param_type_name", "") == "option" \
                    and not getattr(param, "hidden", False):
                if not (getattr(param, "help", "") or "").strip():
                    missing.append(f"{' '.join(path)} {param.opts[0]}")
    assert missing == [], f"without help text: {missing}"


@pytest.mark.parametrize("path", [("events", "tail"), ("agent", "register"), ("chat", "task", "claim"),
                                  ("chat", "state"), ("replay",)])
def test_help_renders_through_the_console_script(db: Path, path: tuple[str, ...]) -> None:
    p = run(db, *path, "--help")
    assert "Usage" in p.stdout and len(p.stdout) > 200


def test_register_list_heartbeat_deregister(db: Path, tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()  # a project root must exist (PROJECT_NOT_FOUND)
    proj = str(tmp_path / "proj")
    # without --id or $LEAN_CTX_AGENT_ID the agent is this shell: local-<pid of the caller>
    a = jsonl(run(db, "agent", "register", "--type", "cursor", "--role", "dev", "--project-root", proj,
                  "--json").stdout)[0]
    assert a["agent_id"] == f"local-{os.getpid()}"
    b = jsonl(run(db, "agent", "register", "--type", "cursor", "--project-root", proj, "--json",
                  env={"LEAN_CTX_AGENT_ID": "window-2"}).stdout)[0]
    assert (a["name"], b["name"]) == ("cursor-dev-1", "cursor-dev-2")
    assert b["agent_id"] == "window-2"
    # a later call from the same shell acts as that agent
    hb_events = jsonl(run(db, "agent", "heartbeat", a["agent_id"], "--json").stdout)
    tail = jsonl(run(db, "events", "tail", "-n", "1", "--kind", "agent.heartbeat", "--json").stdout)
    assert hb_events and tail[0]["actor"] == a["agent_id"]
    listed = jsonl(run(db, "--project", proj, "agent", "list", "--json").stdout)[0]
    assert [x["name"] for x in listed] == ["cursor-dev-1", "cursor-dev-2"]
    assert {x["status"] for x in listed} == {"active"}
    hb = jsonl(run(db, "agent", "heartbeat", "cursor-dev-1", "--status", "busy", "--json").stdout)[0]
    assert hb["agent_id"] == a["agent_id"] and hb["ttl_seconds"] == 60
    run(db, "agent", "deregister", a["agent_id"])
    listed = jsonl(run(db, "--project", proj, "agent", "list", "--json").stdout)[0]
    assert [x["name"] for x in listed] == ["cursor-dev-2"]
    everyone = jsonl(run(db, "--project", proj, "agent", "list", "--all", "--json").stdout)[0]
    assert {x["name"]: x["status"] for x in everyone} == {"cursor-dev-1": "left", "cursor-dev-2": "active"}


def test_errors_have_stable_codes_and_exit_2(db: Path) -> None:
    p = run(db, "agent", "heartbeat", "nobody", check=False)
    assert p.returncode == 2
    assert p.stderr.startswith("error[AGENT_NOT_FOUND]:")
    p = run(db, "agent", "heartbeat", "nobody", "--json", check=False)
    assert p.returncode == 2 and jsonl(p.stdout)[0]["error"]["code"] == "AGENT_NOT_FOUND"
    p = run(db, "agent", "register", "--type", "bad type", check=False)
    assert p.returncode == 2 and "AGENT_INVALID_TYPE" in p.stderr
    p = run(db, "events", "lineage", "999", check=False)
    assert p.returncode == 2 and "EVENT_NOT_FOUND" in p.stderr
    p = run(db, "replay", "--projection", "nope", check=False)
    assert p.returncode == 2 and "PROJECTION_NOT_FOUND" in p.stderr
    p = run(db, "agent", "register", check=False)  # missing --type: a usage error, not a traceback
    assert p.returncode == 2 and "Traceback" not in p.stderr


def test_tail_json_filters_search_and_lineage(db: Path, tmp_path: Path) -> None:
    run(db, "agent", "register", "--type", "codex", "--project-root", str(tmp_path))
    run(db, "agent", "heartbeat", "codex-dev-1")
    events = jsonl(run(db, "events", "tail", "--since", "0", "--json").stdout)
    assert [e["position"] for e in events] == list(range(1, len(events) + 1))
    for e in events:
        assert {"position", "kind", "stream", "version", "ts", "actor", "payload", "hash"} <= set(e)
    assert [e["kind"] for e in events] == ["tool.called", "agent.registered", "tool.called", "agent.heartbeat"]
    only = jsonl(run(db, "events", "tail", "--since", "0", "--kind", "agent.*", "--json").stdout)
    assert [e["kind"] for e in only] == ["agent.registered", "agent.heartbeat"]
    last = jsonl(run(db, "events", "tail", "-n", "1", "--json").stdout)
    assert [e["position"] for e in last] == [4]
    hits = jsonl(run(db, "events", "search", "codex", "--json").stdout)
    assert hits and hits[0]["kind"] == "agent.registered"
    for hostile in ['"', "NEAR(", "*", "(((", "AND OR NOT", "", "a\"b'c"]:
        p = run(db, "events", "search", hostile, "--json")
        assert p.returncode == 0
    lin = jsonl(run(db, "events", "lineage", "2", "--json").stdout)[0]
    assert [e["position"] for e in lin["ancestors"]] == [1]
    assert lin["ancestors"][0]["kind"] == "tool.called"
    human = run(db, "events", "lineage", "1").stdout
    assert "▶" in human and "agent.registered" in human


def test_verify_detects_tampering_with_exit_1(db: Path, tmp_path: Path) -> None:
    for i in range(5):
        run(db, "agent", "register", "--type", f"t{i}", "--project-root", str(tmp_path))
    ok = jsonl(run(db, "events", "verify", "--json").stdout)[0]
    assert ok["ok"] is True and ok["checked"] == 10
    copy = tmp_path / "copy.db"
    src = apsw.Connection(str(db))
    src.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    src.close()
    shutil.copy(db, copy)
    raw = apsw.Connection(str(copy))
    raw.execute("DROP TRIGGER events_no_update")
    raw.execute("UPDATE events SET payload = replace(payload, 't3', 'tX') WHERE position = 8")
    raw.close()
    bad = run(copy, "events", "verify", "--json", check=False)
    assert bad.returncode == 1
    assert jsonl(bad.stdout)[0]["first_broken"] == 8
    human = run(copy, "events", "verify", check=False)
    assert human.returncode == 1 and "BROKEN at position 8" in human.stdout


def test_replay_verify_and_in_place(db: Path, tmp_path: Path) -> None:
    for i in range(3):
        run(db, "agent", "register", "--type", "cursor", "--project-root", str(tmp_path), "--id", f"w{i}")
    run(db, "agent", "deregister", "cursor-dev-2")
    def by_name(report: dict) -> dict[str, dict]:
        return {p["name"]: p for p in report["projections"]}

    rep = jsonl(run(db, "replay", "--verify", "--json").stdout)[0]
    assert rep["mode"] == "verify" and rep["chain_ok"] is True
    assert "agents" in by_name(rep) and all(p["match"] is True for p in rep["projections"])
    before = by_name(rep)["agents"]["digest"]
    rep2 = jsonl(run(db, "replay", "--json").stdout)[0]
    assert rep2["mode"] == "in-place" and by_name(rep2)["agents"]["digest"] == before
    # a projection row changed behind the log's back is caught by --verify
    raw = apsw.Connection(str(db))
    raw.execute("UPDATE agents SET role = 'forged' WHERE name = 'cursor-dev-1'")
    raw.close()
    p = run(db, "replay", "--verify", "--json", check=False)
    assert p.returncode == 1
    bad = by_name(jsonl(p.stdout)[0])
    assert bad["agents"]["match"] is False
    assert all(v["match"] is True for k, v in bad.items() if k != "agents")
    # and an in-place replay repairs it
    run(db, "replay")
    assert all(p["match"] is True for p in jsonl(run(db, "replay", "--verify", "--json").stdout)[0]["projections"])


def test_db_info(db: Path, tmp_path: Path) -> None:
    run(db, "agent", "register", "--type", "gemini", "--project-root", str(tmp_path))
    info = jsonl(run(db, "db", "info", "--json").stdout)[0]
    assert info["path"] == str(db) and info["events"] == 2 and info["head_position"] == 2
    agents = next(p for p in info["projections"] if p["name"] == "agents")
    assert agents["position"] == 2 and agents["version"] >= 1


def test_agent_id_from_environment(db: Path, tmp_path: Path) -> None:
    env = {"LEAN_CTX_AGENT_ID": "claude-main"}
    a = jsonl(run(db, "agent", "register", "--type", "claude", "--project-root", str(tmp_path), "--json",
                  env=env).stdout)[0]
    assert a["agent_id"] == "claude-main" and a["rejoined"] is False
    again = jsonl(run(db, "agent", "register", "--type", "claude", "--project-root", str(tmp_path), "--json",
                      env=env).stdout)[0]
    assert again["agent_id"] == "claude-main" and again["rejoined"] is True and again["name"] == a["name"]
    events = jsonl(run(db, "events", "tail", "--since", "0", "--kind", "agent.registered", "--json").stdout)
    assert {e["actor"] for e in events} == {"claude-main"}


def test_tail_follow_sees_appends_from_another_process(db: Path, tmp_path: Path) -> None:
    run(db, "agent", "register", "--type", "cursor", "--project-root", str(tmp_path))
    env = {**os.environ, "LEAN_CTX_DB": str(db)}
    follower = subprocess.Popen([LEAN_CTX, "events", "tail", "--since", "2", "--follow", "--timeout", "20",
                                 "--kind", "agent.heartbeat", "--json"], stdout=subprocess.PIPE, text=True, env=env)
    try:
        time.sleep(1.0)
        run(db, "agent", "heartbeat", "cursor-dev-1")
        line = follower.stdout.readline()  # type: ignore[union-attr]
        assert json.loads(line)["kind"] == "agent.heartbeat"
    finally:
        follower.kill()
        follower.wait()


def test_default_db_lives_under_the_data_dir_per_project(tmp_path: Path) -> None:
    home = tmp_path / "home"
    proj = tmp_path / "repo"
    (proj / ".git").mkdir(parents=True)
    (proj / "sub").mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("LEAN_CTX_DB", "LEAN_CTX_AGENT_ID")}
    env["LEAN_CTX_HOME"] = str(home)
    p = subprocess.run([LEAN_CTX, "db", "info", "--json"], cwd=proj / "sub", env=env, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    path = Path(json.loads(p.stdout)["path"])
    assert path.parent.parent == home / "projects" and path.parent.name.startswith("repo-")


def test_verb_module_table_matches_the_tree() -> None:
    """``lean-ctx VERB ...`` loads only VERB_MODULES[VERB]: every command under a verb must be
    defined in one of the modules listed for it, and every verb must be listed."""
    from leanctx.api.cli.app import full_app
    from leanctx.api.cli.groups import VERB_MODULES

    root = full_app()

    def modules_of(t) -> set[str]:  # type: ignore[no-untyped-def]
        out = {c.callback.__module__.rsplit(".", 1)[-1] for c in t.registered_commands}
        for g in t.registered_groups:
            out |= modules_of(g.typer_instance)
        return out

    seen = set()
    for c in root.registered_commands:
        name = c.name or c.callback.__name__
        seen.add(name)
        assert c.callback.__module__.rsplit(".", 1)[-1] in VERB_MODULES[name], name
    for g in root.registered_groups:
        seen.add(g.name)
        assert modules_of(g.typer_instance) <= set(VERB_MODULES[g.name]), g.name
    assert seen == set(VERB_MODULES)


def test_a_verb_runs_with_only_its_modules_loaded(db: Path) -> None:
    code = ("import sys; from leanctx.api.cli import app as a; "
            "sys.argv=['lean-ctx','chat','peek','-n','1'];\n"
            "try:\n    a.main()\nexcept SystemExit as e:\n    pass\n"
            "print(sorted(m for m in a._loaded if m))\n"
            "heavy = ('tiktoken', 'tree_sitter', 'tree_sitter_language_pack', 'mcp', 'starlette', 'uvicorn')\n"
            "print(sorted(m for m in heavy if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "LEAN_CTX_DB": str(db)})
    assert p.returncode == 0, p.stderr
    loaded, heavy = p.stdout.strip().splitlines()[-2:]
    assert loaded == "['chat_cmd', 'lock_cmd', 'state_cmd', 'task_cmd']"
    assert heavy == "[]", f"a chat verb imported {heavy}"  # no tokenizer, parser, MCP or server


def test_call_reaches_any_registry_tool(db: Path, tmp_path: Path) -> None:
    env = {"LEAN_CTX_AGENT_ID": "caller-1"}
    listed = jsonl(run(db, "call", "--list", "--json", env=env).stdout)[0]
    assert {"ctx_read", "ctx_agent", "ctx_task"} <= {t["tool"] for t in listed}
    posted = jsonl(run(db, "call", "ctx_agent", '{"action": "post", "title": "hi", "body": "x"}', "--json",
                       env=env).stdout)[0]
    assert posted["message"]["from"] == "caller-1"
    piped = subprocess.run([LEAN_CTX, "call", "ctx_task", "-", "--json"], input='{"action": "create", "title": "t"}',
                           capture_output=True, text=True, timeout=60, env={**os.environ, "LEAN_CTX_DB": str(db), **env})
    made = jsonl(piped.stdout)[0]
    assert made["task"]["created_by"] == "caller-1"
    p = run(db, "call", "ctx_nope", check=False, env=env)
    assert p.returncode == 2 and "TOOL_UNKNOWN" in p.stderr
    p = run(db, "call", "ctx_read", "{not json", check=False, env=env)
    assert p.returncode == 2 and "INVALID_ARGUMENT" in p.stderr
