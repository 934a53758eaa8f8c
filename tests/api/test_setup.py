"""``lean-ctx setup`` and ``lean-ctx doctor`` through the real console script, in a tmp HOME."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))  # this interpreter's, not whatever PATH finds
EXE = str(Path(sys.executable).with_name("lean-ctx").absolute())


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    base = {k: v for k, v in os.environ.items()
            if k not in ("LEAN_CTX_DB", "LEAN_CTX_AGENT_ID", "CODEX_HOME", "XDG_DATA_HOME")}
    return {**base, "HOME": str(home), "LEAN_CTX_HOME": str(tmp_path / "data"), "LEAN_CTX_NO_DAEMON": "1"}


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    (p / ".git").mkdir(parents=True)
    return p


def run(env: dict[str, str], *args: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    p = subprocess.run([LEAN_CTX, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
    if check and p.returncode != 0:
        raise AssertionError(f"lean-ctx {' '.join(args)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def entry(data_dir: str) -> dict:
    return {"command": EXE, "args": ["mcp"], "env": {"LEAN_CTX_HOME": data_dir}}


JSON_FILES = {"claude": ".mcp.json", "cursor": ".cursor/mcp.json", "gemini": ".gemini/settings.json"}


@pytest.mark.parametrize("agent", sorted(JSON_FILES))
def test_json_clients_write_merge_backup_and_print(env: dict[str, str], project: Path, agent: str) -> None:
    path = project / JSON_FILES[agent]
    # fresh: created, from the project's working directory
    out = json.loads(run(env, "setup", "--agent", agent, "--json", cwd=project).stdout)
    assert out["action"] == "created" and out["path"] == str(path) and out["backup"] is None
    assert json.loads(path.read_text()) == {"mcpServers": {"lean-ctx": entry(env["LEAN_CTX_HOME"])}}
    assert os.access(out["server"]["command"], os.X_OK)
    # again: nothing changes, no backup
    again = json.loads(run(env, "setup", "--agent", agent, "--json", "--project", str(project)).stdout)
    assert again["action"] == "unchanged" and not list(path.parent.glob(path.name + ".bak-*"))
    # another server and other settings survive; the old file is kept as a backup
    other = {"theme": "dark", "mcpServers": {"other": {"command": "x", "args": []},
                                             "lean-ctx": {"command": "/old/lean-ctx", "args": ["mcp"]}}}
    path.write_text(json.dumps(other))
    upd = json.loads(run(env, "setup", "--agent", agent, "--json", "--project", str(project)).stdout)
    assert upd["action"] == "updated"
    merged = json.loads(path.read_text())
    assert merged["theme"] == "dark" and merged["mcpServers"]["other"] == {"command": "x", "args": []}
    assert merged["mcpServers"]["lean-ctx"] == entry(env["LEAN_CTX_HOME"])
    assert json.loads(Path(upd["backup"]).read_text()) == other
    # --print changes nothing
    before = path.read_text()
    path.write_text(json.dumps(other))
    printed = run(env, "setup", "--agent", agent, "--print", "--project", str(project))
    assert json.loads(printed.stdout)["mcpServers"]["lean-ctx"] == entry(env["LEAN_CTX_HOME"])
    assert json.loads(path.read_text()) == other and before != path.read_text()
    assert len(list(path.parent.glob(path.name + ".bak-*"))) == 1


def test_codex_writes_the_toml_table_in_home(env: dict[str, str], project: Path) -> None:
    path = Path(env["HOME"]) / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text('model = "o3"\n\n[mcp_servers.other]\ncommand = "x"\n\n[mcp_servers.lean-ctx]\n'
                    'command = "/old"\nargs = ["mcp"]\n\n[mcp_servers.lean-ctx.env]\nA = "1"\n\n[profiles.p]\nm = 1\n')
    out = json.loads(run(env, "setup", "--agent", "codex", "--json", cwd=project).stdout)
    assert out["path"] == str(path) and out["action"] == "updated" and out["backup"]
    data = tomllib.loads(path.read_text())
    assert data["model"] == "o3" and data["profiles"] == {"p": {"m": 1}}
    assert data["mcp_servers"]["other"] == {"command": "x"}
    assert data["mcp_servers"]["lean-ctx"] == entry(env["LEAN_CTX_HOME"])
    assert tomllib.loads(Path(out["backup"]).read_text())["mcp_servers"]["lean-ctx"]["command"] == "/old"
    assert json.loads(run(env, "setup", "--agent", "codex", "--json", cwd=project).stdout)["action"] == "unchanged"
    # CODEX_HOME is honoured, and a fresh file is created
    ch = Path(env["HOME"]) / "ch"
    fresh = json.loads(run({**env, "CODEX_HOME": str(ch)}, "setup", "--agent", "codex", "--json").stdout)
    assert fresh["action"] == "created" and fresh["path"] == str(ch / "config.toml")
    assert oct((ch / "config.toml").stat().st_mode & 0o777) == "0o600"


def test_setup_refuses_what_it_cannot_merge(env: dict[str, str], project: Path) -> None:
    bad = project / ".mcp.json"
    bad.write_text("{not json")
    p = run(env, "setup", "--agent", "claude", "--project", str(project), check=False)
    assert p.returncode == 2 and "SETUP_CONFIG_INVALID" in p.stderr
    assert bad.read_text() == "{not json" and not list(project.glob(".mcp.json.bak-*"))
    p = run(env, "setup", "--agent", "vscode", check=False)
    assert p.returncode == 2 and "SETUP_UNKNOWN_AGENT" in p.stderr
    codex = Path(env["HOME"]) / ".codex" / "config.toml"
    codex.parent.mkdir()
    codex.write_text('mcp_servers = { lean-ctx = { command = "x" } }\n')
    p = run(env, "setup", "--agent", "codex", check=False)
    assert p.returncode == 2 and "SETUP_CONFIG_INVALID" in p.stderr
    assert codex.read_text() == 'mcp_servers = { lean-ctx = { command = "x" } }\n'


def test_doctor_reports_each_check_and_fails_on_a_broken_client_config(env: dict[str, str], project: Path) -> None:
    run(env, "chat", "post", "--to", "all", "--title", "x", "--body", "y", cwd=project)  # a database
    p = run(env, "doctor", "--json", cwd=project)
    report = json.loads(p.stdout)
    by = {c["name"]: c for c in report["checks"]}
    assert report["ok"] is True
    assert {"data dir", "database", "tokenizer", "grammars", "daemon", "clients"} <= set(by)
    for name in ("data dir", "database", "tokenizer", "grammars"):
        assert by[name]["status"] == "ok", by[name]
    assert "WAL" in by["database"]["detail"] and "verified" in by["database"]["detail"]
    assert by["daemon"]["status"] == "warn" and "daemon start" in by["daemon"]["fix"]
    assert by["clients"]["status"] == "warn" and "setup --agent" in by["clients"]["fix"]
    run(env, "setup", "--agent", "cursor", cwd=project)
    by = {c["name"]: c for c in json.loads(run(env, "doctor", "--json", cwd=project).stdout)["checks"]}
    assert by["client cursor"]["status"] == "ok"
    # a config that points at a lean-ctx that is gone: fail, exit 1, with the fix
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"lean-ctx": {"command": "/gone/lean-ctx"}}}))
    p = run(env, "doctor", cwd=project, check=False)
    assert p.returncode == 1
    line = next(x for x in p.stdout.splitlines() if "client claude" in x)
    assert line.startswith("fail") and "/gone/lean-ctx" in line
    assert "fix: lean-ctx setup --agent claude" in p.stdout


def test_doctor_fails_on_a_tampered_database(env: dict[str, str], project: Path, tmp_path: Path) -> None:
    import apsw

    db = tmp_path / "t.db"
    e = {**env, "LEAN_CTX_DB": str(db)}
    run(e, "chat", "post", "--to", "all", "--title", "x", "--body", "y")
    conn = apsw.Connection(str(db))
    conn.execute("DROP TRIGGER IF EXISTS events_no_update")
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='trigger'").fetchall():
        conn.execute(f'DROP TRIGGER "{name}"')
    conn.execute("UPDATE events SET actor = 'mallory' WHERE position = 1")
    conn.close()
    p = run(e, "doctor", "--json", check=False)
    by = {c["name"]: c for c in json.loads(p.stdout)["checks"]}
    assert p.returncode == 1 and by["database"]["status"] == "fail" and "position 1" in by["database"]["detail"]
