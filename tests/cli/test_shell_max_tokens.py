"""``lean-ctx shell --max-tokens N`` caps the answer as ``ctx_shell``'s ``max_tokens`` does (MCP,
``/v1/tools``, HTTP, ``lean-ctx call``): the same meaning, the same refusal (``SHELL_INVALID_CAP``,
exit 2, before the command runs), and with ``--json`` the JSON printed stays within it.

Real console script in subprocesses, a real log; counts with o200k (what lean-ctx counts with).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.commands.read import DEFAULT_CAP_TOKENS, MAX_CAP_TOKENS, MIN_CAP_TOKENS
from leanctx.context.tokens import count_tokens

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_") or k == "LEAN_CTX_HOME"}
    env.update(LEAN_CTX_NO_DAEMON="1", LEAN_CTX_AGENT_ID="shell-cap")
    return subprocess.run([LEAN_CTX, *args], check=False, capture_output=True, text=True, env=env, cwd=cwd, timeout=180,
                          stdin=subprocess.DEVNULL)


def test_the_plain_answer_stays_within_max_tokens(tmp_path: Path) -> None:
    p = run(tmp_path, "shell", "--raw", "--max-tokens", "1000", "--", "seq", "1", "20000")
    assert p.returncode == 0, p.stderr
    assert 800 < count_tokens(p.stdout) <= 1000, count_tokens(p.stdout)
    assert "lean-ctx expand A" in p.stdout  # the rest is archived and named
    whole = run(tmp_path, "shell", "--raw", "--", "seq", "1", "20000")  # without it: the default cap
    assert 1000 < count_tokens(whole.stdout) <= DEFAULT_CAP_TOKENS


def test_the_same_answer_as_ctx_shell_max_tokens(tmp_path: Path) -> None:
    """The same cap gives the same text through ``lean-ctx call ctx_shell`` (same archive too)."""
    cli = run(tmp_path, "shell", "--raw", "--max-tokens", "600", "--", "seq 1 5000")
    call = run(tmp_path, "call", "ctx_shell", json.dumps({"command": "seq 1 5000", "raw": True, "max_tokens": 600}))
    assert cli.returncode == call.returncode == 0, (cli.stderr, call.stderr)
    assert "[… capped at " in cli.stdout and cli.stdout == call.stdout


def test_json_stays_within_max_tokens(tmp_path: Path) -> None:
    (tmp_path / "q.txt").write_text('say "hi"\t\\ there\n' * 5000, encoding="utf-8")  # escaping costs more
    p = run(tmp_path, "--json", "shell", "--raw", "--max-tokens", "3000", "--", "cat", "q.txt")
    assert p.returncode == 0, p.stderr
    assert 1500 < count_tokens(p.stdout) <= 3000, count_tokens(p.stdout)
    out = json.loads(p.stdout)
    assert out["capped"] is True and out["sent_tokens"] == count_tokens(out["text"])
    assert "JSON_OVER_CAP" not in p.stderr


@pytest.mark.parametrize("cap", [str(MIN_CAP_TOKENS - 1), str(MAX_CAP_TOKENS + 1), "0", "-5"])
def test_a_cap_out_of_range_is_refused_as_ctx_shell_refuses_it(tmp_path: Path, cap: str) -> None:
    p = run(tmp_path, "shell", "--max-tokens", cap, "--", "touch", "ran")
    call = run(tmp_path, "call", "ctx_shell", json.dumps({"argv": ["touch", "ran"], "max_tokens": int(cap)}))
    assert p.returncode == call.returncode == 2, (p.stdout, p.stderr)
    assert p.stderr.startswith("error[SHELL_INVALID_CAP]: ") and p.stderr == call.stderr
    assert not (tmp_path / "ran").exists()  # refused before the command runs
    j = run(tmp_path, "shell", "--json", "--max-tokens", cap, "--", "touch", "ran")
    assert j.returncode == 2 and json.loads(j.stdout)["error"]["code"] == "SHELL_INVALID_CAP"
    assert not (tmp_path / "ran").exists()


def test_help_documents_it(tmp_path: Path) -> None:
    p = run(tmp_path, "shell", "--help")
    assert p.returncode == 0 and "--max-tokens" in p.stdout
