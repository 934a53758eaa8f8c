"""``replay --verify`` compares like with like while other processes write: the live digests are
read in one snapshot at a head H and the fresh build stops at exactly H. And the counts it
reports are the log's: events up to the head, and what each projection applied."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from leanctx.app import LeanCtx
from leanctx.commands.agents import Heartbeat, RegisterAgent
from leanctx.commands.chat import PostMessage
from leanctx.events import TopicFilter
from tools.replay import replay

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
REPO = Path(__file__).resolve().parents[2]

# a writer process: chat posts (channels, strong) through the bus, which records each dispatch
# as tool.called (ledger, eventual), until the stop file appears
WRITER = textwrap.dedent("""
    import os, sys
    from leanctx.app import LeanCtx
    from leanctx.commands.chat import PostMessage
    db, stop, who = sys.argv[1:4]
    with LeanCtx(db) as lc:
        i = 0
        while not os.path.exists(stop):
            lc.bus.dispatch(PostMessage(title=f"m{i}", body="x" * (i % 50 + 1)), actor=who)
            i += 1
            if i == 1:
                print("ready", flush=True)
""")


@pytest.fixture()
def writers(tmp_path: Path) -> Iterator[tuple[Path, list[subprocess.Popen[str]]]]:
    db = tmp_path / "events.db"
    LeanCtx(db).close()
    stop = tmp_path / "stop"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(db), str(stop), f"w{i}"], stdout=subprocess.PIPE,
                         text=True, env=env)
        for i in range(3)
    ]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        yield db, procs
    finally:
        stop.touch()
        for p in procs:
            p.wait(timeout=60)
    assert all(p.returncode == 0 for p in procs)


def test_verify_while_other_processes_write_reports_no_false_mismatch(writers: tuple[Path, list]) -> None:  # type: ignore[type-arg]
    db, _ = writers
    with LeanCtx(db) as lc:
        overlapped = 0
        for _ in range(8):
            before = lc.store.head().position
            rep = replay(lc, verify=True)
            after = lc.store.head().position
            overlapped += after > before
            bad = [p.name for p in rep.projections if not p.match]
            assert rep.ok and not bad, (bad, rep.head_position)
            assert before <= rep.head_position <= after
            assert rep.events == rep.head_position
        assert overlapped >= 6  # the writers really wrote during (nearly) every verify
        # one projection alone (an eventual one, the most likely to lag behind)
        for _ in range(3):
            rep = replay(lc, projection="ledger", verify=True)
            assert rep.ok and [p.name for p in rep.projections] == ["ledger"]
        # in place, during writes, then verified
        rep = replay(lc)
        assert rep.events == rep.head_position
        assert replay(lc, verify=True).ok


def test_cli_verify_while_other_processes_write(writers: tuple[Path, list]) -> None:  # type: ignore[type-arg]
    db, _ = writers
    env = {**os.environ, "LEAN_CTX_DB": str(db)}
    for _ in range(3):
        p = subprocess.run([LEAN_CTX, "replay", "--verify"], capture_output=True, text=True, env=env, timeout=120,
                           check=False)
        assert p.returncode == 0 and " NO" not in p.stdout, p.stdout + p.stderr


def test_counts_are_the_logs_events_and_each_projections_share(tmp_path: Path) -> None:
    with LeanCtx(tmp_path / "e.db") as lc:
        lc.bus.dispatch(RegisterAgent(agent_type="cursor", project_root=str(tmp_path), agent_id="a1"), actor="a1")
        for _ in range(3):
            lc.bus.dispatch(Heartbeat(agent="a1"), actor="a1")
        for i in range(4):
            lc.bus.dispatch(PostMessage(title=f"m{i}", body="b"), actor="a1")
        head = lc.store.head().position

        def of_kinds(name: str) -> int:
            kinds = tuple(sorted(lc.projections.get(name).kinds))
            return len(lc.store.read_all(0, TopicFilter(kinds=kinds)))

        for rep in (replay(lc), replay(lc, verify=True), replay(lc, projection="agents"),
                    replay(lc, projection="agents", verify=True)):
            assert rep.events == head and rep.head_position == head, rep.mode
            for p in rep.projections:
                assert p.applied == of_kinds(p.name), (rep.mode, p.name)
        agents = replay(lc, projection="agents", verify=True).projections[0]
        assert 0 < agents.applied < head  # type: ignore[operator]
