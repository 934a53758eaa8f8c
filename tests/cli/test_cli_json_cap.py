"""``--json`` answers stay within the answer cap, though JSON escaping inflates their text.

Real console script in subprocesses, a real log; the JSON printed is counted with o200k (the
offline vocabulary lean-ctx itself counts with).
"""

from __future__ import annotations

import json
import os
import random
import string
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.commands.read import DEFAULT_CAP_TOKENS
from leanctx.context.tokens import count_tokens

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))


def run(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_") or k == "LEAN_CTX_HOME"}
    full.update(LEAN_CTX_NO_DAEMON="1", LEAN_CTX_AGENT_ID="json-cap", **(env or {}))
    p = subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, env=full, cwd=cwd, timeout=180)
    assert p.returncode == 0, (args, p.stdout[-2000:], p.stderr)
    return p


def escape_heavy(n_lines: int, width: int = 6, seed: int = 7) -> str:
    """Lines full of quotes, backslashes, tabs and non-ASCII (every one of them escaped in JSON
    but the non-ASCII), all different so nothing is folded as repetition."""
    rnd = random.Random(seed)
    out = []
    for _ in range(n_lines):
        parts = []
        for _ in range(width):
            word = "".join(rnd.choice(string.ascii_lowercase) for _ in range(rnd.randint(1, 3)))
            parts.append(rnd.choice(['\t"', '\\"', "\\\\", '\t\t"\\', '"\\"', '\t\\\\"']) + word
                         + rnd.choice(["é", '"', "\t", "\\", 'ü"']))
        out.append("\t" + "".join(parts))
    return "\n".join(out) + "\n"


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "quotes.txt").write_text(escape_heavy(12_000), encoding="utf-8")
    return tmp_path


def tokens(stdout: str) -> int:
    return count_tokens(stdout)


def test_the_fixture_is_escape_heavy(project: Path) -> None:
    """Without the lower text cap this content's JSON is far over the cap (the test can fail)."""
    text = (project / "quotes.txt").read_text(encoding="utf-8")[:120_000]
    assert count_tokens(json.dumps(text, ensure_ascii=False)) > 1.2 * count_tokens(text)


def test_read_json_stays_within_the_cap(project: Path) -> None:
    p = run(project, "read", "quotes.txt", "--mode", "full", "--json")
    assert tokens(p.stdout) <= DEFAULT_CAP_TOKENS, tokens(p.stdout)
    answer = json.loads(p.stdout)
    assert answer["capped"] is True and answer["archive_id"]
    assert answer["sent_tokens"] == count_tokens(answer["text"])  # the record says what was sent
    assert tokens(p.stdout) > 0.8 * DEFAULT_CAP_TOKENS  # and the cap is still put to use
    assert "JSON_OVER_CAP" not in p.stderr
    plain = run(project, "read", "quotes.txt", "--mode", "full")  # the plain answer keeps the whole cap
    assert 0.95 * DEFAULT_CAP_TOKENS < tokens(plain.stdout) <= DEFAULT_CAP_TOKENS


def test_read_json_honours_max_tokens_and_the_env_cap(project: Path) -> None:
    p = run(project, "read", "quotes.txt", "--mode", "full", "--json", "--max-tokens", "3000")
    assert tokens(p.stdout) <= 3000, tokens(p.stdout)
    p = run(project, "--json", "read", "quotes.txt", "--mode", "full", env={"LEAN_CTX_READ_MAX_TOKENS": "5000"})
    assert 4000 < tokens(p.stdout) <= 5000, tokens(p.stdout)


def test_a_small_read_is_the_same_with_json(project: Path) -> None:
    (project / "small.py").write_text('x = "a\\tb"\n', encoding="utf-8")
    answer = json.loads(run(project, "read", "small.py", "--json", "--fresh").stdout)
    assert answer["capped"] is False and answer["text"].endswith('x = "a\\tb"')


def test_expand_json_stays_within_the_cap(project: Path) -> None:
    archive = json.loads(run(project, "read", "quotes.txt", "--mode", "full", "--json").stdout)["archive_id"]
    p = run(project, "expand", archive, "--json")
    assert tokens(p.stdout) <= DEFAULT_CAP_TOKENS, tokens(p.stdout)
    assert json.loads(p.stdout)["capped"] is True
    p = run(project, "expand", archive, "--lines", "3000-9000", "--json", "--max-tokens", "6000")
    assert tokens(p.stdout) <= 6000, tokens(p.stdout)


def long_lines(tmp: Path) -> Path:
    """Output the generic pattern keeps whole at its head and tail: 60 very long lines."""
    lines = escape_heavy(60 * 40, width=6, seed=11).splitlines()
    text = "\n".join("".join(lines[i:i + 40]) for i in range(0, len(lines), 40)) + "\n"
    path = tmp / "captured.txt"
    path.write_text(text, encoding="utf-8")
    return path


def test_compress_json_stays_within_the_cap(project: Path) -> None:
    captured = long_lines(project)
    p = run(project, "compress", "--as", "make", str(captured), "--json")
    assert tokens(p.stdout) <= DEFAULT_CAP_TOKENS, tokens(p.stdout)
    assert json.loads(p.stdout)["capped"] is True


def test_shell_json_stays_within_the_cap(project: Path) -> None:
    p = run(project, "shell", "--raw", "--json", "--", "cat", "quotes.txt")
    assert tokens(p.stdout) <= DEFAULT_CAP_TOKENS, tokens(p.stdout)
    assert json.loads(p.stdout)["capped"] is True


def test_an_estimate_beaten_is_said_on_stderr(project: Path) -> None:
    """Shell cannot measure its output first: past its assumed 1.5x, the JSON is printed whole
    and a warning says by how much it is over."""
    (project / "q.txt").write_text('"\n' * 60_000, encoding="utf-8")  # escaping doubles it
    p = run(project, "shell", "--raw", "--json", "--", "cat", "q.txt")
    assert json.loads(p.stdout)["capped"] is True
    assert tokens(p.stdout) > DEFAULT_CAP_TOKENS
    assert "warning[JSON_OVER_CAP]" in p.stderr and f"{tokens(p.stdout):,} tokens" in p.stderr
