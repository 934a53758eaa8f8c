"""``lean-ctx call`` exits the way the matching verb does when what the tool ran failed.

Real console script, real subprocesses, a real log under the test's own data dir.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))


def call(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LEAN_CTX_DB", "LEAN_CTX_AGENT_ID")}
    env.update(LEAN_CTX_NO_DAEMON="1", LEAN_CTX_AGENT_ID="caller-1")
    return subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


def test_a_failing_shell_command_sets_the_exit_code(tmp_path: Path) -> None:
    p = call(tmp_path, "call", "ctx_shell", '{"command": "echo boom; exit 7"}')
    assert p.returncode == 7, (p.stdout, p.stderr)
    assert "boom" in p.stdout and "[exit 7]" in p.stdout  # the answer is still printed in full
    p = call(tmp_path, "call", "ctx_shell", '{"argv": ["sh", "-c", "exit 3"]}', "--json")
    assert p.returncode == 3, (p.stdout, p.stderr)
    assert json.loads(p.stdout)["exit_code"] == 3
    # the same convention as `lean-ctx shell`
    assert call(tmp_path, "shell", "--", "sh", "-c", "exit 3").returncode == 3


def test_a_timeout_exits_124_and_success_exits_0(tmp_path: Path) -> None:
    p = call(tmp_path, "call", "ctx_shell", '{"command": "sleep 30", "timeout": 0.5}', "--json")
    assert p.returncode == 124, (p.stdout, p.stderr)
    assert json.loads(p.stdout)["timed_out"] is True
    p = call(tmp_path, "call", "ctx_shell", '{"command": "echo fine"}')
    assert p.returncode == 0 and "fine" in p.stdout, (p.stdout, p.stderr)


def test_through_ctx_call_the_inner_tools_failure_counts(tmp_path: Path) -> None:
    p = call(tmp_path, "call", "ctx_call", '{"name": "ctx_shell", "args": {"command": "exit 5"}}', "--json")
    assert p.returncode == 5, (p.stdout, p.stderr)
    assert json.loads(p.stdout)["exit_code"] == 5


def test_a_failed_proof_verification_exits_1(tmp_path: Path) -> None:
    call(tmp_path, "call", "ctx_shell", '{"command": "true"}')  # something in the log
    made = call(tmp_path, "--json", "call", "ctx_proof", '{"action": "create"}')
    assert made.returncode == 0, made.stderr
    ok = call(tmp_path, "--json", "call", "ctx_proof", '{"action": "verify"}')
    assert ok.returncode == 0 and json.loads(ok.stdout)["ok"] is True, (ok.stdout, ok.stderr)
    path = Path(json.loads(made.stdout)["path"])
    doc = json.loads(path.read_text())
    agent = doc["agents"]["caller-1"]
    agent["tool_calls"] += 1  # tampered: the signature and a figure no longer hold
    path.write_text(json.dumps(doc))
    bad = call(tmp_path, "--json", "call", "ctx_proof", '{"action": "verify"}')
    assert bad.returncode == 1, (bad.stdout, bad.stderr)
    answer = json.loads(bad.stdout)
    assert answer["ok"] is False and answer["differences"]
    text = call(tmp_path, "call", "ctx_proof", '{"action": "verify"}')
    assert text.returncode == 1 and text.stdout.startswith("FAILED"), (text.stdout, text.stderr)
    assert call(tmp_path, "proof", "verify").returncode == 1  # what the verb itself does


def test_refusals_still_exit_2_with_the_error_envelope(tmp_path: Path) -> None:
    p = call(tmp_path, "call", "ctx_read", '{"paths": ["nope.py"]}', "--json")
    assert p.returncode == 2
    assert json.loads(p.stdout)["error"]["code"] == "READ_NOT_FOUND"
    p = call(tmp_path, "call", "ctx_read", '{"paths": ["nope.py"]}')
    assert p.returncode == 2 and "error[READ_NOT_FOUND]" in p.stderr


def test_a_partly_failed_multi_read_exits_2_as_lean_ctx_read_does(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    p = call(tmp_path, "call", "ctx_read", '{"paths": ["a.py", "nope.py"]}', "--json")
    assert p.returncode == 2, (p.stdout, p.stderr)
    files = json.loads(p.stdout)["files"]
    assert [f.get("error", {}).get("code") for f in files] == [None, "READ_NOT_FOUND"]
    assert call(tmp_path, "read", "a.py", "nope.py").returncode == 2
