"""Savings honesty, second audit: an expansion is credited with the archived text it returned
(``text_tokens``, not its ``N:`` prefixes), never for lines the conversation already holds; no
call's baseline exceeds what a client accepts (``PLAIN_RESULT_LIMIT``); ranked searches claim
nothing; a ``lines:`` read never bounces and its stub names its lines; two answers of one call
naming one archive record it once.

Real files read through ``leanctx.ops.read`` and expanded through ``leanctx.ops.expand`` or
dispatched as ``archive.expand`` on the real command bus (a real SQLite log), the real CLI for
shell and ``gain``, and a replay.
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
from leanctx.archive import ArchiveInfo
from leanctx.commands.read import ReadFile, ReadView, RecordRead
from leanctx.commands.search import RecordSearch
from leanctx.commands.shell import MAX_LINE_SPANS, ExpandArchive, RecordShell
from leanctx.errors import InvalidInput
from leanctx.events import TopicFilter
from leanctx.ops.expand import expand
from leanctx.ops.read import ReadAnswer, read_files
from leanctx.projections import savings as sv
from tools.replay import replay

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
BIG = "".join(f"value_{i} = compute_something({i}, factor={i % 7})  # line {i}\n" for i in range(700))
SMALL = "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(74))  # 148 lines
SENT = re.compile(r"capped at [\d,]+ tokens: lines 1-(\d+) of the (\d+)-line view sent")


class Env:
    def __init__(self, root: Path) -> None:
        self.project = root / "proj"
        (self.project / ".git").mkdir(parents=True)
        (self.project / "big.py").write_text(BIG)
        (self.project / "small.py").write_text(SMALL)
        self.db = root / "home" / "events.db"
        self.db.parent.mkdir(parents=True)
        self.lc = LeanCtx(self.db)

    def read(self, path: str = "big.py", mode: str = "full", cap: int = 3000, **kw: Any) -> ReadAnswer:
        [a] = read_files(self.lc, [path], mode=mode, actor="a", session_id="s1", project=str(self.project),
                         cap_tokens=cap, **kw)
        return a

    def dispatch(self, cmd: Any, actor: str = "a", session: str = "s1") -> Any:
        return self.lc.bus.dispatch(cmd, actor=actor, session_id=session, project=str(self.project)).value

    def conn(self) -> Any:
        return self.lc.projections.reader("savings")

    def last_call(self) -> tuple[int, int, int, int]:
        """(baseline, sent, deferred, raw) of the latest savings row."""
        return tuple(self.conn().execute(
            "SELECT baseline_tokens, sent_tokens, deferred_tokens, raw_tokens FROM savings_calls"
            " ORDER BY position DESC LIMIT 1").fetchone())

    def owed(self, aid: str) -> tuple[int, int, list[list[int]]] | None:
        row = self.conn().execute(
            "SELECT raw_left, view_left, held FROM savings_deferred WHERE archive_id = ?", (aid,)).fetchone()
        return None if row is None else (row[0], row[1], json.loads(row[2]))

    def totals(self, **kw: Any) -> sv.SavingsRow:
        return sv.report(self.conn(), by=("tool",), **kw).totals

    def events(self, kind: str) -> list[dict[str, Any]]:
        return [e.to_dict() for e in self.lc.store.read_all(0, filter=TopicFilter(kinds=(kind,)))]


@pytest.fixture()
def env(tmp_path: Path):
    e = Env(tmp_path)
    yield e
    e.lc.close()


def capped(env: Env) -> tuple[ReadAnswer, int, int]:
    a = env.read()
    m = SENT.search(a.text)
    assert a.capped and a.archive_id and m, a.text[-300:]
    return a, int(m.group(1)), int(m.group(2))


# --- 1. an expansion redeems the archived text it returned, not its line prefixes -----------------


def test_an_expansion_redeems_its_text_tokens_not_its_prefixes(env: Env) -> None:
    a, k, _ = capped(env)
    assert env.events("file.read")[-1]["payload"]["sent_lines"] == k  # what the conversation holds
    raw_left, view_left, held = env.owed(a.archive_id)
    assert held == [[1, k]] and view_left > 600
    env.dispatch(ExpandArchive(archive_id=a.archive_id, selector=f"lines:{k + 1}-{k + 20}", sent_tokens=600,
                               text_tokens=450, line_spans=[[k + 1, k + 20]]))
    back = raw_left * 450 // view_left
    assert env.last_call()[:3] == (back, 600, -back)  # was credited as 600 (the prefixes too)
    assert env.owed(a.archive_id) == (raw_left - back, view_left - 450, [[1, k + 20]])
    ev = env.events("archive.expanded")[-1]["payload"]
    assert (ev["text_tokens"], ev["sent_tokens"], ev["line_spans"]) == (450, 600, [[k + 1, k + 20]])
    # without text_tokens (events written before the field): sent_tokens, as before
    env.dispatch(ExpandArchive(archive_id=a.archive_id, selector=f"lines:{k + 21}-{k + 40}", sent_tokens=600))
    left = raw_left - back
    assert env.last_call()[0] == left * 600 // (view_left - 450)


def test_expand_archive_validates_its_new_counts(env: Env) -> None:
    a, _, _ = capped(env)
    bad: list[dict[str, Any]] = [
        {"text_tokens": -1}, {"text_tokens": True}, {"line_spans": [[0, 3]]}, {"line_spans": [[5, 4]]},
        {"line_spans": [[1, 5], [5, 9]]}, {"line_spans": [[1, 2, 3]]},
        {"line_spans": [[2 * i + 1, 2 * i + 1] for i in range(MAX_LINE_SPANS + 1)]},
    ]
    for extra in bad:
        with pytest.raises(InvalidInput) as e:
            env.dispatch(ExpandArchive(archive_id=a.archive_id, selector="full", sent_tokens=10, **extra))
        assert e.value.code == "SHELL_INVALID_RECORD", extra
    assert env.events("archive.expanded") == []


# --- 2. lines the conversation already received are a cost --------------------------------------


def test_re_expanding_lines_the_capped_read_sent_is_a_cost(env: Env) -> None:
    a, k, total = capped(env)
    owed = env.owed(a.archive_id)
    for _ in range(3):  # the audit: lines 100-200 of a read that sent lines 1-k, three times
        x = expand(env.lc, a.archive_id, lines=f"{k - 60}-{k - 10}", actor="a", session_id="s1")
        base, sent, deferred, _ = env.last_call()
        assert (base, deferred) == (0, 0) and sent == x.sent_tokens > 0  # was: credited as the deferred rest
    assert env.owed(a.archive_id) == owed  # nothing of the rest was recovered
    for spec in ({"head": 5}, {"lines": f"{k}[1-5]"}):  # other selectors inside what was sent
        expand(env.lc, a.archive_id, actor="a", session_id="s1", **spec)
        assert env.last_call()[:3:2] == (0, 0), spec
    # a selection that reaches past what was sent still redeems (the operation gave no spans)
    expand(env.lc, a.archive_id, lines=f"{k - 5}-{k + 30}", actor="a", session_id="s1")
    assert env.last_call()[0] > 0
    # the whole rest, expanded: the read plus its expansions never count more than the file
    expand(env.lc, a.archive_id, lines=f"{k + 1}-{total}", max_tokens=24_000, actor="a", session_id="s1")
    t = env.totals()
    assert t.raw_tokens <= a.raw_tokens and t.deferred_tokens == 0


def test_line_spans_credit_only_the_lines_not_yet_held(env: Env) -> None:
    a, k, _ = capped(env)
    raw_left, view_left, _ = env.owed(a.archive_id)
    # 20 lines, the first 10 already sent by the read: half of the text is a repeat
    env.dispatch(ExpandArchive(archive_id=a.archive_id, selector=f"lines:{k - 9}-{k + 10}", sent_tokens=500,
                               text_tokens=400, line_spans=[[k - 9, k + 10]]))
    back = raw_left * 200 // view_left
    assert env.last_call()[:3] == (back, 500, -back)
    assert env.owed(a.archive_id)[2] == [[1, k + 10]]
    # the same lines again: all held now, all cost
    env.dispatch(ExpandArchive(archive_id=a.archive_id, selector=f"lines:{k + 1}-{k + 10}", sent_tokens=250,
                               text_tokens=200, line_spans=[[k + 1, k + 10]]))
    assert env.last_call()[:3] == (0, 250, 0)


def test_a_capped_shell_answer_holds_the_lines_it_sent(env: Env) -> None:
    aid = "A" + "cd" * 8
    info = ArchiveInfo(aid, "cd" * 32, 90_000, 3_000, 40_000)
    env.dispatch(RecordShell(command="make", pattern="raw", exit_code=0, raw_tokens=40_000, sent_tokens=10_000,
                             archive=info, answer_tokens=40_000, deferred_tokens=30_000, capped_archive_id=aid,
                             line_spans=[[1, 700], [2_990, 3_000]]))
    assert env.owed(aid) == (30_000, 30_000, [[1, 700], [2_990, 3_000]])
    assert env.events("shell.ran")[-1]["payload"]["line_spans"] == [[1, 700], [2_990, 3_000]]
    env.dispatch(ExpandArchive(archive_id=aid, selector="tail:5", sent_tokens=80))  # the tail it sent
    assert env.last_call()[:3] == (0, 80, 0)
    env.dispatch(ExpandArchive(archive_id=aid, selector="lines:701-800", sent_tokens=1_500))  # new lines
    assert env.last_call()[:3] == (1_500, 1_500, -1_500)
    with pytest.raises(InvalidInput) as e:  # spans only with a capped run
        env.dispatch(RecordShell(command="ls", pattern="raw", exit_code=0, raw_tokens=5, sent_tokens=5,
                                 line_spans=[[1, 2]]))
    assert e.value.code == "SHELL_INVALID_RECORD"


# --- 3. no call's baseline exceeds what a client accepts ------------------------------------------


def test_baselines_are_capped_at_the_client_limit_raw_stays_recorded(env: Env) -> None:
    env.dispatch(RecordShell(command="seq 1 30000", pattern="generic", exit_code=0, raw_tokens=89_000,
                             sent_tokens=30))
    assert env.last_call() == (sv.PLAIN_RESULT_LIMIT, 30, 0, 89_000)  # was 89,000 "plain" tokens
    huge = "".join(f"def function_{i}(a, b, c):\n    x = a * {i} + b - c  # some body text\n    return x\n"
                   for i in range(3_000))
    (env.project / "huge.py").write_text(huge)
    a = env.read("huge.py", mode="map", cap=20_000)
    assert a.raw_tokens > 2 * sv.PLAIN_RESULT_LIMIT
    base, sent, _, raw = env.last_call()
    assert base <= sv.PLAIN_RESULT_LIMIT and raw == a.raw_tokens and sent == a.sent_tokens
    t = env.totals()
    assert t.raw_tokens_recorded == 89_000 + a.raw_tokens and t.raw_tokens <= 2 * sv.PLAIN_RESULT_LIMIT


@pytest.mark.timeout(120)
def test_cli_shell_seq_claims_at_most_the_client_limit(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_HOME=str(tmp_path / "h"), LEAN_CTX_NO_DAEMON="1", LEAN_CTX_AGENT_ID="a1",
               LEAN_CTX_SESSION_ID="s1")
    (tmp_path / ".git").mkdir()

    def run(*args: str) -> str:
        p = subprocess.run([LEAN_CTX, *args], check=False, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
        assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
        return p.stdout

    out = json.loads(run("--json", "shell", "--", "seq", "1", "30000"))
    assert out["raw_tokens"] > 2 * sv.PLAIN_RESULT_LIMIT
    g = json.loads(run("--json", "gain"))["totals"]
    assert (g["raw_tokens"], g["raw_tokens_recorded"]) == (sv.PLAIN_RESULT_LIMIT, out["raw_tokens"])
    assert g["saved_tokens"] == sv.PLAIN_RESULT_LIMIT - out["sent_tokens"]
    assert "25,000" in run("gain")  # the text report shows the same capped raw


# --- 4. ranked searches have no plain equivalent ------------------------------------------------


def test_ranked_searches_claim_no_savings_regex_keeps_its_baseline(env: Env) -> None:
    for method in ("bm25", "semantic", "fused"):
        env.dispatch(RecordSearch(query="token bucket", method=method, results=264, raw_tokens=6_106,
                                  sent_tokens=400))
        assert env.last_call() == (400, 400, 0, 6_106), method  # was: 5,706 "saved"
    env.dispatch(RecordSearch(query="token.bucket", method="regex", results=264, raw_tokens=6_106, sent_tokens=400))
    assert env.last_call() == (6_106, 400, 0, 6_106)
    assert sv.PLAIN_SEARCH_METHODS == {"regex"}


# --- 5. a ``lines:`` read then a full read is not a bounce ----------------------------------------


def test_a_lines_read_then_a_full_read_is_no_bounce(env: Env) -> None:
    env.read("small.py", mode="lines:1-3")
    env.read("small.py", mode="full")
    stuck = [e for e in env.events("scent.deposited") if e["payload"]["scent"] == "STUCK"]
    t = env.totals()
    assert (t.bounces, t.wasted_tokens, len(stuck)) == (0, 0, 0)
    # the control: a compressed read then a full read, in the same way, is one
    env.read("small.py", mode="signatures", fresh=True)
    env.read("small.py", mode="full", fresh=True)
    stuck = [e for e in env.events("scent.deposited") if e["payload"]["scent"] == "STUCK"]
    assert (env.totals().bounces, len(stuck)) == (1, 1)
    assert [b.mode for b in sv.bounced_files(env.conn())] == ["signatures"]


def test_a_lines_view_and_a_full_view_in_one_call_deposit_no_stuck(env: Env) -> None:
    def call(mode: str, h: str) -> None:
        head = ReadView(mode=mode, label=mode, body="1\tdef f0(x):\n2\t    return x + 0\n", tokens=14)
        full = ReadView(mode="full", label="full", body=SMALL, tokens=600)
        env.dispatch(RecordRead(files=[
            ReadFile(path="small.py", content_hash=h, lines=147, raw_tokens=600, redactions=0, requested_mode=mode,
                     view=head),
            ReadFile(path="small.py", content_hash=h, lines=147, raw_tokens=600, redactions=0, requested_mode="full",
                     view=full),
        ]))

    def stuck() -> int:
        return sum(e["payload"]["scent"] == "STUCK" for e in env.events("scent.deposited"))

    call("lines:1-2", "1" * 64)
    assert (stuck(), env.totals().bounces) == (0, 0)
    call("signatures", "2" * 64)  # the control: a compressed view then the full one, in one call
    assert (stuck(), env.totals().bounces) == (1, 1)


# --- 6. the stub of a ``lines:`` read names what the conversation holds ---------------------------


def test_the_stub_of_a_lines_read_names_its_lines(env: Env) -> None:
    n = SMALL.count("\n")
    first = env.read("small.py", mode="lines:1-30")
    again = env.read("small.py", mode="lines:1-30")
    assert not first.stub and again.stub
    assert again.text == f"F1=small.py [unchanged lines 1-30 of {n} · fresh=true to re-read]"  # was "{n} lines"
    env.read("small.py", mode="full")
    full = env.read("small.py", mode="full")
    assert full.text == f"F1=small.py [unchanged {n} lines · fresh=true to re-read]"  # unchanged


# --- 7. two answers of one call naming one archive record it once ---------------------------------


def test_one_archive_named_twice_in_one_dispatch_is_recorded_once(env: Env) -> None:
    aid = "A" + "ef" * 8
    info = ArchiveInfo(aid, "ef" * 32, 9_000, 300, 4_000)
    # the same archive as the output's and the capped answer's: was a concurrency error
    env.dispatch(RecordShell(command="make", pattern="raw", exit_code=0, raw_tokens=4_000, sent_tokens=1_000,
                             omitted_lines=10, archive=info, extra_archives=[info], answer_tokens=4_000,
                             deferred_tokens=3_000, capped_archive_id=aid))
    assert [e["payload"]["archive_id"] for e in env.events("archive.created")] == [aid]
    env.dispatch(RecordShell(command="make", pattern="raw", exit_code=0, raw_tokens=4_000, sent_tokens=1_000,
                             omitted_lines=10, archive=info))
    assert len(env.events("archive.created")) == 1


def test_two_paths_with_one_archive_in_one_read_record_it_once(env: Env) -> None:
    (env.project / "twin.py").write_text(BIG)
    answers = read_files(env.lc, ["big.py", "twin.py"], mode="full", actor="a", session_id="s1",
                         project=str(env.project), cap_tokens=6000)
    assert [x.capped for x in answers] == [True, True] and answers[0].archive_id == answers[1].archive_id
    assert [e["payload"]["archive_id"] for e in env.events("archive.created")] == [answers[0].archive_id]


# --- gain and replay agree ------------------------------------------------------------------------


def test_replay_is_digest_equal(env: Env) -> None:
    a, k, _ = capped(env)
    expand(env.lc, a.archive_id, lines=f"{k - 60}-{k - 10}", actor="a", session_id="s1")
    env.dispatch(ExpandArchive(archive_id=a.archive_id, selector=f"lines:{k - 9}-{k + 10}", sent_tokens=500,
                               text_tokens=400, line_spans=[[k - 9, k + 10]]))
    env.dispatch(RecordShell(command="seq 1 30000", pattern="generic", exit_code=0, raw_tokens=89_000,
                             sent_tokens=30))
    env.dispatch(RecordSearch(query="q", method="bm25", results=3, raw_tokens=900, sent_tokens=90))
    env.read("small.py", mode="lines:1-3")
    env.read("small.py", mode="full")
    before = sv.report(env.conn(), by=("tool", "mode")), env.totals()
    r = replay(env.lc, verify=True)
    assert r.ok and any(p.name == "savings" and p.match for p in r.projections), r
    replay(env.lc)
    assert (sv.report(env.conn(), by=("tool", "mode")), env.totals()) == before
    assert before[1].bounces == 0 and before[1].raw_tokens_recorded > before[1].raw_tokens


def test_a_capped_shell_run_holds_the_lines_it_sent(env: Env) -> None:
    """``ops.shell`` records the lines a capped run sent whole (``line_spans``): expanding them
    again is a cost; expanding the rest redeems what was deferred, to zero."""
    from leanctx.ops.shell import run_shell

    r = run_shell(env.lc, "seq 1 3000", cwd=env.project, actor="a", session_id="s1", project=str(env.project),
                  cap_tokens=1_000, raw=True)
    assert "expand" in r.text
    (ran,) = [e["payload"] for e in env.events("shell.ran")]
    spans = ran["line_spans"]
    assert spans and spans[0][0] == 1
    aid = ran["capped_archive_id"]
    owed = env.owed(aid)
    assert owed is not None and owed[2] == spans
    expand(env.lc, aid, head=spans[0][1], actor="a", session_id="s1")
    base, sent, deferred, _ = env.last_call()
    assert (base, deferred) == (0, 0) and sent > 0  # lines the run already sent: a cost
    total = int(env.events("archive.created")[-1]["payload"]["lines"])
    expand(env.lc, aid, lines=f"{spans[0][1] + 1}-{total}", max_tokens=24_000, actor="a", session_id="s1")
    assert env.owed(aid) is None and env.totals().deferred_tokens == 0
