"""``lean-ctx read`` of several paths where some fail: every answer is printed, and the exit
status says a path failed (2, the CLI's status for an error), as ``read nope.py`` alone does.

Each failed path's ``--json`` object carries ``{"error": {"code", "message", ...}}`` like any
other error. Real console script in subprocesses, in-process and through the daemon.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))


def _read(cwd: Path, *args: str, daemon: bool = False) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_") or k == "LEAN_CTX_HOME"}
    env.update(LEAN_CTX_AGENT_ID="partial-reader")
    if not daemon:
        env["LEAN_CTX_NO_DAEMON"] = "1"
    return subprocess.run([LEAN_CTX, *args], check=False, capture_output=True, text=True, env=env, cwd=cwd, timeout=120,
                          stdin=subprocess.DEVNULL)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("def f():\n    return 1\n")
    return tmp_path


def test_text_prints_every_answer_and_exits_2(project: Path) -> None:
    p = _read(project, "read", "src/app.py", "nope.py")
    assert p.returncode == 2, (p.stdout, p.stderr)
    first, second = p.stdout.rstrip("\n").split("\n\n")
    assert first.startswith("src/app.py [") and "return 1" in first
    assert second.startswith("nope.py: error[READ_NOT_FOUND] ")
    assert _read(project, "read", "src/app.py").returncode == 0  # all read: 0, as before
    assert _read(project, "read", "nope.py").returncode == 2  # one path that fails: as before


def test_json_prints_every_object_with_its_error_and_exits_2(project: Path) -> None:
    p = _read(project, "read", "nope.py", "src/app.py", "gone.py", "--json")
    assert p.returncode == 2, (p.stdout, p.stderr)
    rows = [json.loads(x) for x in p.stdout.splitlines()]
    assert [r["path"] for r in rows] == ["nope.py", "src/app.py", "gone.py"]
    assert "error" not in rows[1] and "return 1" in rows[1]["text"]
    for r in (rows[0], rows[2]):
        assert r["mode"] == "error"
        assert r["error"]["code"] == "READ_NOT_FOUND" and r["error"]["message"]
        assert r["text"] == f"{r['path']}: error[READ_NOT_FOUND] {r['error']['message']}"


def test_the_daemon_gives_the_same_exit_status(project: Path) -> None:
    assert _read(project, "daemon", "start", daemon=True).returncode == 0
    try:
        p = _read(project, "read", "src/app.py", "nope.py", daemon=True)
        assert p.returncode == 2, (p.stdout, p.stderr)
        assert "return 1" in p.stdout and "nope.py: error[READ_NOT_FOUND]" in p.stdout
        status = json.loads(_read(project, "daemon", "status", "--json", daemon=True).stdout)
        assert status.get("requests", 0) >= 1, status  # it went through the daemon
    finally:
        _read(project, "daemon", "stop", daemon=True)
