"""The re-read stub names the way to re-read of the surface it is sent through: ``--fresh`` from
``lean-ctx read``, ``fresh=true`` over the tool registry (MCP, HTTP, ``lean-ctx call ctx_read``).

Real console script in subprocesses, one real log; the stub's recorded count is the count of
exactly the text sent, and a replay of the log rebuilds the same projections.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.app import LeanCtx
from leanctx.context.tokens import count_tokens
from leanctx.events.codec import payload_dict
from tools.replay import replay

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
APP = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(20))  # 60 lines


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text(APP)
    return root


def run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_") or k == "LEAN_CTX_HOME"}
    env.update(LEAN_CTX_NO_DAEMON="1", LEAN_CTX_DB=str(project.parent / "events.db"), LEAN_CTX_AGENT_ID="hint-agent",
               LEAN_CTX_SESSION_ID="conv")
    p = subprocess.run([LEAN_CTX, *args], check=False, capture_output=True, text=True, env=env, cwd=project,
                       timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, (args, p.stdout, p.stderr)
    return p


def stub_events(project: Path) -> list[dict]:
    with LeanCtx(project.parent / "events.db") as lc:
        return [payload_dict(e.payload) for e in lc.store.read_all(0) if e.kind == "file.read"
                and payload_dict(e.payload)["stub"]]


def test_the_cli_stub_says_fresh_the_cli_way_and_following_it_rereads(project: Path) -> None:
    run(project, "read", "src/app.py", "--mode", "full")
    again = run(project, "read", "src/app.py", "--mode", "full")
    assert again.stdout == "F1=src/app.py [unchanged 60 lines · --fresh to re-read]\n"
    assert "fresh=true" not in again.stdout
    fresh = run(project, "read", "src/app.py", "--mode", "full", "--fresh")  # what the stub says to type
    assert fresh.stdout.startswith("F1=src/app.py [full · 60 lines") and "def f19(x):" in fresh.stdout
    j = json.loads(run(project, "read", "src/app.py", "--mode", "full", "--json").stdout)
    assert j["stub"] and j["text"] == again.stdout[:-1]
    assert j["sent_tokens"] == count_tokens(j["text"]) <= 20  # the real count of what is sent, ~20 tokens
    assert [e["sent_tokens"] for e in stub_events(project)] == [count_tokens(j["text"])] * 2


def test_a_lines_stub_names_its_lines_and_the_cli_way(project: Path) -> None:
    run(project, "read", "src/app.py", "-m", "lines:1-30")
    again = run(project, "read", "src/app.py", "-m", "lines:1-30")
    assert again.stdout == "F1=src/app.py [unchanged lines 1-30 of 60 · --fresh to re-read]\n"


def test_the_tool_surface_keeps_fresh_true_in_the_same_conversation(project: Path) -> None:
    """``lean-ctx call ctx_read`` is the registry's tool (as MCP and HTTP): its stub says
    ``fresh=true``, the argument that tool takes; the CLI's stub of the same delivery says
    ``--fresh``. Both are counted as sent, and the log replays to the same projections."""
    run(project, "read", "src/app.py", "--mode", "full")
    call = json.loads(run(project, "--json", "call", "ctx_read", '{"paths": ["src/app.py"], "mode": "full"}').stdout)
    [f] = call["files"]
    assert call["text"] == "F1=src/app.py [unchanged 60 lines · fresh=true to re-read]"
    assert f["stub"] and f["sent_tokens"] == count_tokens(call["text"])
    cli = run(project, "read", "src/app.py", "--mode", "full")
    assert cli.stdout == "F1=src/app.py [unchanged 60 lines · --fresh to re-read]\n"
    assert [e["sent_tokens"] for e in stub_events(project)] == [count_tokens(call["text"]), count_tokens(cli.stdout)]
    with LeanCtx(project.parent / "events.db") as lc:
        report = replay(lc, verify=True)
    assert report.ok, report


def test_a_surface_without_a_hint_is_refused(project: Path) -> None:
    """A stub must name a real way to re-read: a surface ``REREAD_HINTS`` does not know is refused
    (nothing recorded), not silently given another surface's hint."""
    from leanctx.errors import LeanCtxError
    from leanctx.ops.read import read_files

    with LeanCtx(project.parent / "events.db") as lc:
        with pytest.raises(LeanCtxError) as e:
            read_files(lc, ["src/app.py"], actor="a", session_id="s", project=str(project), surface="web")
        assert e.value.code == "READ_INVALID_RECORD"
        assert not [x for x in lc.store.read_all(0) if x.kind == "file.read"]
