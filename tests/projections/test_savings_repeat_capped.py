"""Repeated capped reads in the savings projection: what a cap leaves in an archive is owed
once per archive and conversation — the rest the latest capped answer naming it left there,
less what was expanded since — never once per answer. Two capped reads of the same file in
one conversation defer one rest (not two), and expanding that rest once settles it.

Real events: real files read through ``leanctx.ops.read`` and expanded through
``leanctx.ops.expand`` (the real command bus, a real SQLite log), capped shell answers
dispatched as ``shell.record``, then a replay, and ``lean-ctx gain`` (text and ``--json``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from leanctx.app import LeanCtx
from leanctx.events import TopicFilter
from leanctx.ops.expand import expand
from leanctx.ops.read import ReadAnswer, read_files
from leanctx.projections import savings as sv
from tools.replay import replay

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
BIG = "".join(f"value_{i} = compute_something({i}, factor={i % 7})  # line {i}\n" for i in range(700))
NOTICE = re.compile(r"lean-ctx expand (A[0-9a-f]{16}) --lines (\d+-\d+)\]")


class Env:
    def __init__(self, root: Path) -> None:
        self.project = root / "proj"
        (self.project / ".git").mkdir(parents=True)
        (self.project / "big.py").write_text(BIG)
        self.db = root / "home" / "events.db"
        self.db.parent.mkdir(parents=True)
        self.lc = LeanCtx(self.db)

    def read(self, agent: str = "a", session: str = "s1", cap: int = 3000) -> ReadAnswer:
        [a] = read_files(self.lc, ["big.py"], mode="full", actor=agent, session_id=session,
                         project=str(self.project), cap_tokens=cap)
        assert a.capped and a.archive_id, a.text[-300:]
        return a

    def expand(self, answer: ReadAnswer, agent: str = "a", session: str = "s1", lines: str | None = None) -> int:
        m = NOTICE.search(answer.text)
        assert m and m.group(1) == answer.archive_id, answer.text[-300:]
        return expand(self.lc, m.group(1), lines=lines or m.group(2), actor=agent, session_id=session).sent_tokens

    def deferrals(self) -> list[tuple[int, int]]:
        """(covered raw, deferred raw) of every ``file.read``, from its event (the module doc's rule)."""
        out = []
        for e in self.lc.store.read_all(0, filter=TopicFilter(kinds=("file.read",))):
            p = e.to_dict()["payload"]
            covered = p["raw_tokens"] * (p["view_tokens"] - p["deferred_tokens"]) // p["view_tokens"]
            out.append((covered, p["raw_tokens"] - covered))
        return out

    def totals(self, **kw: Any) -> sv.SavingsRow:
        return sv.report(self.lc.projections.reader("savings"), by=("tool",), **kw).totals

    def owed(self) -> list[tuple[str, str, int]]:
        return [tuple(r) for r in self.lc.projections.reader("savings").execute(
            "SELECT agent, session, raw_left FROM savings_deferred ORDER BY agent, session")]


@pytest.fixture()
def env(tmp_path: Path):
    e = Env(tmp_path)
    yield e
    e.lc.close()


def test_two_capped_reads_of_one_file_defer_its_rest_once(env: Env) -> None:
    first, second = env.read(), env.read()
    assert first.archive_id == second.archive_id and not second.stub
    (c1, d1), (c2, d2) = env.deferrals()
    assert (c1, d1) == (c2, d2) and d1 > 5_000
    t = env.totals()
    assert t.deferred_tokens == d1  # was 2 × d1: the same rest counted twice
    assert (t.raw_tokens, t.sent_tokens) == (c1 + c2, first.sent_tokens + second.sent_tokens)
    assert env.owed() == [("a", "s1", d1)]
    # expanding the rest the notice names, once, settles it: nothing is owed any more
    env.expand(second)
    done = env.totals()
    assert (done.deferred_tokens, done.expansions) == (0, 1)  # was: d1 still "deferred"
    assert done.raw_tokens == c1 + c2 + d1 <= done.raw_tokens_recorded == 2 * (c1 + d1)
    assert env.owed() == []


def test_each_conversation_owes_its_own_rest(env: Env) -> None:
    a = env.read()
    env.read(session="s2")
    env.read(agent="b", session="s9")
    env.read()  # a repeat in the first conversation: nothing more
    d = env.deferrals()[0][1]
    assert env.totals().deferred_tokens == 3 * d
    assert env.owed() == [("a", "s1", d), ("a", "s2", d), ("b", "s9", d)]
    env.expand(a)  # conversation (a, s1) expands its rest; the others still owe theirs
    assert env.totals().deferred_tokens == 2 * d
    assert env.totals(agent="a").deferred_tokens == d


def test_after_a_partial_expansion_a_new_capped_read_owes_its_rest_afresh(env: Env) -> None:
    first = env.read()
    (c1, d1), = env.deferrals()
    m = NOTICE.search(first.text)
    assert m
    start = int(m.group(2).split("-")[0])
    env.expand(first, lines=f"{start}-{start + 99}")  # a hundred lines of the rest
    partly = env.totals()
    back = partly.raw_tokens - c1
    assert 0 < back < d1 and partly.deferred_tokens == d1 - back
    second = env.read()  # a re-read: a new need, its rest is owed in full again
    t = env.totals()
    assert t.deferred_tokens == d1 and t.raw_tokens == c1 + back + c1
    env.expand(second)
    assert (env.totals().deferred_tokens, env.totals().raw_tokens) == (0, c1 + back + c1 + d1)


def test_a_repeat_with_a_larger_cap_owes_the_smaller_rest_it_left(env: Env) -> None:
    env.read(cap=3000)
    second = env.read(cap=6000)
    (c1, d1), (c2, d2) = env.deferrals()
    assert c2 > c1 and d2 < d1
    rows = env.lc.projections.reader("savings").execute(
        "SELECT baseline_tokens, deferred_tokens FROM savings_calls ORDER BY position").fetchall()
    assert [tuple(r) for r in rows] == [(c1, d1), (c2, d2 - d1)]  # the repeat sent part of what was owed
    assert env.totals().deferred_tokens == d2
    env.expand(second)  # the rest its notice names
    assert env.totals().deferred_tokens == 0 and env.owed() == []


def test_a_capped_shell_answer_repeated_defers_its_rest_once(env: Env) -> None:
    from leanctx.commands.shell import ArchiveInfo, RecordShell

    aid, sha = "A" + "ab" * 8, "ab" * 32
    info = ArchiveInfo(archive_id=aid, sha256=sha, bytes=10, lines=2, tokens=5)
    run = RecordShell(command="seq 1 99999", pattern="raw", exit_code=0, raw_tokens=1000, sent_tokens=400,
                      omitted_lines=1, archive=info, answer_tokens=1000, deferred_tokens=600, capped_archive_id=aid)
    for _ in range(3):
        env.lc.bus.dispatch(run, actor="a", session_id="s1")
    t = env.totals()
    assert (t.raw_tokens, t.deferred_tokens, t.calls) == (3 * 400, 600, 3)  # was 1,800 deferred


def test_replay_gives_the_same_figures(env: Env) -> None:
    first = env.read()
    env.read()
    env.read(cap=6000)
    env.read(session="s2")
    env.expand(first, lines=None)
    before = sv.report(env.lc.projections.reader("savings"), by=("tool", "mode"))
    rep = replay(env.lc, verify=True)
    assert rep.ok and any(p.name == "savings" and p.match for p in rep.projections), rep
    replay(env.lc)
    assert sv.report(env.lc.projections.reader("savings"), by=("tool", "mode")) == before


# --- lean-ctx gain: text and --json tell the same figures ---------------------------------------


def _cli(root: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_HOME=str(root / "home"), LEAN_CTX_DB=str(root / "home" / "events.db"),
               LEAN_CTX_NO_DAEMON="1", LEAN_CTX_AGENT_ID="rereader", LEAN_CTX_SESSION_ID="s1")
    p = subprocess.run([LEAN_CTX, *args], check=False, capture_output=True, text=True, env=env, cwd=root / "proj",
                       timeout=120)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    return p.stdout


@pytest.mark.timeout(180)
def test_gain_counts_the_rest_of_a_repeated_capped_read_once(tmp_path: Path) -> None:
    (tmp_path / "proj" / ".git").mkdir(parents=True)
    (tmp_path / "proj" / "big.py").write_text(BIG)
    answers = []
    deferred = []
    for _ in range(2):
        a = json.loads(_cli(tmp_path, "read", "big.py", "--mode", "full", "--json", "--max-tokens", "3000"))
        answers.append(a[0] if isinstance(a, list) else a)
        deferred.append(json.loads(_cli(tmp_path, "gain", "--json"))["totals"]["deferred_tokens"])
    rest = deferred[0]
    assert rest > 0 and deferred == [rest, rest]  # the rest, once (was twice)
    # the notice prices the follow-up call (expand numbers its lines): a little more than the rest
    announced = int(re.search(r"\(~([\d,]+) tokens\) archived as", answers[0]["text"]).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert rest <= announced <= 1.2 * rest
    g = json.loads(_cli(tmp_path, "gain", "--json"))
    t = g["totals"]
    assert t["raw_tokens"] + t["deferred_tokens"] == answers[0]["raw_tokens"] + t["raw_tokens"] // 2
    text = _cli(tmp_path, "gain")
    assert f"{rest:,} deferred" in text and f"raw {t['raw_tokens']:,}" in text
    assert re.search(rf"^read\s+2\s+{t['raw_tokens']:,}\s+{t['sent_tokens']:,}\s+{t['saved_tokens']:,}\s+\S+\s+{rest:,}\s",
                     text, re.MULTILINE), text
    rep = json.loads(_cli(tmp_path, "replay", "--verify", "--json"))
    assert rep["chain_ok"] and all(p["match"] for p in rep["projections"]), rep
    _cli(tmp_path, "replay")
    assert json.loads(_cli(tmp_path, "gain", "--json")) == g
