"""``lean-ctx gain`` says when its figures scatter over one-call default agents.

Each call runs in a fresh shell (``sh -c``), as an agent's bash tool runs it: without
``LEAN_CTX_AGENT_ID`` its agent is ``local-<pid of that shell>``, a new one every time.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))


def env(**extra: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_") or k == "LEAN_CTX_HOME"}
    out.update(LEAN_CTX_NO_DAEMON="1", **extra)
    return out


def in_fresh_shell(cwd: Path, *args: str, **extra: str) -> None:
    cmd = " ".join(shlex.quote(a) for a in (LEAN_CTX, *args))
    p = subprocess.run(["sh", "-c", cmd + " >/dev/null"], env=env(**extra), cwd=cwd, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr


def gain(cwd: Path, *args: str) -> str:
    p = subprocess.run([LEAN_CTX, "gain", *args], env=env(), cwd=cwd, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_one_call_default_agents_get_the_hint(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    for _ in range(4):
        in_fresh_shell(tmp_path, "read", "a.py")
    text = gain(tmp_path)
    last = text.rstrip("\n").splitlines()[-1]
    assert last.startswith("note: 4 of 4 calls came from 4 one-call default agents"), text
    assert "LEAN_CTX_AGENT_ID" in last and "--session" in last
    data = json.loads(gain(tmp_path, "--json"))
    assert data["scatter"]["agents"] == 4 and data["scatter"]["total_calls"] == 4
    assert data["scatter"]["message"] == last


def test_a_named_agent_gets_no_hint(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    for _ in range(4):
        in_fresh_shell(tmp_path, "read", "a.py", LEAN_CTX_AGENT_ID="claude-1", LEAN_CTX_SESSION_ID="s1")
    text = gain(tmp_path)
    assert "one-call default agents" not in text and "total: 4 calls" in text
    assert json.loads(gain(tmp_path, "--json"))["scatter"] is None


def test_the_hint_needs_the_lone_calls_to_dominate(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    for _ in range(5):
        in_fresh_shell(tmp_path, "read", "a.py", LEAN_CTX_AGENT_ID="claude-1")
    for _ in range(3):
        in_fresh_shell(tmp_path, "read", "a.py")
    assert json.loads(gain(tmp_path, "--json"))["scatter"] is None  # 3 of 8 calls
    for _ in range(3):
        in_fresh_shell(tmp_path, "read", "a.py")
    spread = json.loads(gain(tmp_path, "--json"))["scatter"]  # 6 of 11
    assert spread is not None and spread["agents"] == 6 and spread["total_calls"] == 11
