"""The scatter note of ``lean-ctx gain`` also covers shells that run a few calls each.

Each ``sh -c`` runs one or two real CLI calls; without ``LEAN_CTX_AGENT_ID`` its agent is
``local-<pid of that shell>``. Four shells of one read and four of two reads: 8 agents, 12 calls
(the audit's case, which got no note: only one-call agents were counted).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from test_gain_scatter_warning import LEAN_CTX, env, gain  # noqa: E402


def shell_of(cwd: Path, *calls: list[str], **extra: str) -> None:
    script = "; ".join(" ".join(shlex.quote(a) for a in (LEAN_CTX, *c)) + " >/dev/null" for c in calls)
    p = subprocess.run(["sh", "-c", script], env=env(**extra), cwd=cwd, capture_output=True, text=True, timeout=90)
    assert p.returncode == 0, p.stderr


def test_shells_of_one_and_two_calls_get_the_note(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 2\n")
    for _ in range(4):
        shell_of(tmp_path, ["read", "a.py"])
    for _ in range(4):
        shell_of(tmp_path, ["read", "a.py"], ["read", "b.py"])
    data = json.loads(gain(tmp_path, "--json"))
    spread = data["scatter"]
    assert spread is not None, data
    assert spread["agents"] == 8 and spread["calls"] == 12 and spread["total_calls"] == 12
    text = gain(tmp_path)
    last = text.rstrip("\n").splitlines()[-1]
    assert last.startswith("note: 12 of 12 calls came from 8 short-lived default agents (2 calls at most each)"), last
    assert "LEAN_CTX_AGENT_ID" in last and last == spread["message"]


def test_a_long_default_agent_is_not_short_lived(tmp_path: Path) -> None:
    """One shell running many calls is one agent doing its work: no note for it."""
    (tmp_path / "a.py").write_text("x = 1\n")
    shell_of(tmp_path, *[["read", "a.py"]] * 8)
    for _ in range(3):
        shell_of(tmp_path, ["read", "a.py"], ["read", "a.py"])
    assert json.loads(gain(tmp_path, "--json"))["scatter"] is None  # 6 of 14 calls are short-lived
    for _ in range(2):
        shell_of(tmp_path, ["read", "a.py"], ["read", "a.py"])
    spread = json.loads(gain(tmp_path, "--json"))["scatter"]  # 10 of 18
    assert spread is not None and spread["agents"] == 5 and spread["calls"] == 10 and spread["total_calls"] == 18
