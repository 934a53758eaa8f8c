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
    """One shell running many calls is one agent doing its work: no note for it (the rule, on the
    events the CLI's reads record, made in-process: agents ``local-<pid>`` as the CLI names them)."""
    from leanctx.api.cli.gain_scatter import scatter
    from leanctx.app import LeanCtx
    from leanctx.ops.read import read_files
    from leanctx.projections import savings as sv

    (tmp_path / "a.py").write_text("x = 1\n")
    with LeanCtx(tmp_path / "events.db") as lc:
        def shell(pid: int, calls: int) -> None:
            for _ in range(calls):
                read_files(lc, ["a.py"], actor=f"local-{pid}", session_id=None, project=str(tmp_path))

        def spread() -> object:
            lc.projections.ensure_current()
            conn = lc.store.read_connection()
            total = sv.report(conn, by=("agent",)).totals.calls
            return scatter(conn, since=None, agent=None, total_calls=total)

        shell(100, 8)
        for pid in range(101, 104):
            shell(pid, 2)
        assert spread() is None  # 6 of 14 calls are short-lived
        for pid in range(104, 106):
            shell(pid, 2)
        got = spread()  # 10 of 18
        assert got is not None and (got.agents, got.calls, got.total_calls) == (5, 10, 18)
