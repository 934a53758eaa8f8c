"""``lean-ctx --json call`` keeps the answer cap as ``--json read / expand / shell`` do.

Real console script in subprocesses, a real log; stdout is counted with o200k. Without the lower
text cap ``call ctx_read`` / ``ctx_expand`` on this escape-heavy file printed ~35k tokens.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from leanctx.commands.read import DEFAULT_CAP_TOKENS
from leanctx.context.tokens import count_tokens

sys.path.insert(0, str(Path(__file__).parent))
from test_cli_json_cap import escape_heavy, run  # noqa: E402


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "quotes.txt").write_text(escape_heavy(12_000), encoding="utf-8")
    return tmp_path


def call(project: Path, tool: str, args: dict, *extra: str):  # type: ignore[no-untyped-def]
    return run(project, "--json", "call", tool, json.dumps(args), *extra)


def test_call_ctx_read_json_stays_within_the_cap(project: Path) -> None:
    p = call(project, "ctx_read", {"paths": ["quotes.txt"], "mode": "full"})
    n = count_tokens(p.stdout)
    assert 0.8 * DEFAULT_CAP_TOKENS < n <= DEFAULT_CAP_TOKENS, n
    assert "JSON_OVER_CAP" not in p.stderr
    out = json.loads(p.stdout)
    assert out["files"][0]["capped"] is True
    assert out["files"][0]["sent_tokens"] == count_tokens(out["text"])  # the record says what was sent
    plain = run(project, "call", "ctx_read", json.dumps({"paths": ["quotes.txt"], "mode": "full"}))
    assert count_tokens(plain.stdout) > 0.95 * DEFAULT_CAP_TOKENS  # the plain answer keeps the whole cap


def test_call_ctx_read_json_honours_max_tokens(project: Path) -> None:
    p = call(project, "ctx_read", {"paths": ["quotes.txt"], "mode": "full", "max_tokens": 3000})
    assert 2000 < count_tokens(p.stdout) <= 3000


def test_call_ctx_expand_json_stays_within_the_cap(project: Path) -> None:
    first = run(project, "read", "quotes.txt", "--mode", "full").stdout
    aid = re.search(r"A[0-9a-f]{16}", first).group(0)  # type: ignore[union-attr]
    p = call(project, "ctx_expand", {"archive_id": aid, "lines": "100-"})
    n = count_tokens(p.stdout)
    assert 0.8 * DEFAULT_CAP_TOKENS < n <= DEFAULT_CAP_TOKENS, n
    assert json.loads(p.stdout)["capped"] is True and "JSON_OVER_CAP" not in p.stderr
    through = call(project, "ctx_call", {"name": "ctx_expand", "args": {"archive_id": aid, "lines": "100-"}})
    assert count_tokens(through.stdout) <= DEFAULT_CAP_TOKENS
    through = call(project, "ctx_call", {"name": "ctx_read", "args": {"paths": ["quotes.txt"], "mode": "full"}})
    assert count_tokens(through.stdout) <= DEFAULT_CAP_TOKENS


def test_call_ctx_shell_json_uses_the_shell_estimate_and_warns_when_beaten(project: Path) -> None:
    # mild output (ratio under 1.5): within the cap, no warning
    (project / "mild.txt").write_text("".join(f'row {i}: "v{i}"\tok\n' for i in range(40_000)), encoding="utf-8")
    p = call(project, "ctx_shell", {"command": "cat mild.txt", "raw": True})
    assert count_tokens(p.stdout) <= DEFAULT_CAP_TOKENS and "JSON_OVER_CAP" not in p.stderr
    out = json.loads(p.stdout)
    assert out["exit_code"] == 0 and out["capped"] is True and "command" not in out
    # output more escape-heavy than the 1.5 assumed: printed whole, and said so on stderr
    p = call(project, "ctx_shell", {"command": "cat quotes.txt", "raw": True})
    n = count_tokens(p.stdout)
    if n > DEFAULT_CAP_TOKENS:
        assert f"warning[JSON_OVER_CAP]: this JSON is {n:,} tokens" in p.stderr
    else:
        assert "JSON_OVER_CAP" not in p.stderr
    assert n < 1.2 * DEFAULT_CAP_TOKENS  # the text cap was lowered (uncapped escaping costs ~1.6x)


def test_call_ctx_shell_json_keeps_the_tool_refusals(project: Path) -> None:
    import os
    import subprocess

    from test_cli_json_cap import LEAN_CTX

    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_") or k == "LEAN_CTX_HOME"}
    env["LEAN_CTX_NO_DAEMON"] = "1"
    p = subprocess.run([LEAN_CTX, "--json", "call", "ctx_shell", json.dumps({"command": "true", "argv": ["true"]})],
                       capture_output=True, text=True, env=env, cwd=project, timeout=60)
    assert p.returncode == 2 and json.loads(p.stdout)["error"]["code"] == "SHELL_COMMAND_AND_ARGV"
