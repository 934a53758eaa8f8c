"""Honest savings (re-audit of ``lean-ctx gain``): a capped shell answer defers its rest, one
bounce per full read after compressed views (stubs and ``lines:`` reads never bounce) and as
many as the STUCK deposits, a stub counts the view it stands for, a ``lines:`` read the plain
text of those lines, no row's raw over ``PLAIN_RESULT_LIMIT``, and no absurd percentages.
Synthetic events on a real log, a replay, and the real CLI."""

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
from leanctx.events.kinds.context import ArchiveExpanded, FileRead, ShellRan
from leanctx.projections import savings as sv
from leanctx.projections.savings_rules import overlap_lines
from tools.replay import replay

from .test_savings_capped import Log as _Log

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
DAY = "2026-03-02"


def Log(lc: LeanCtx) -> _Log:
    return _Log(lc, DAY)


def read(path: str, mode: str, raw: int, sent: int, *, stub: bool = False, plain: int | None = None,
         session: str = "s1", h: str = "h1") -> FileRead:
    return FileRead(path=path, mode=mode, requested_mode=mode, content_hash=h, lines=700, raw_tokens=raw,
                    sent_tokens=sent, stub=stub, session_id=session, plain_tokens=plain)


def shell(raw: int, sent: int, *, answer: int | None = None, deferred: int | None = None,
          capped: str | None = None, archive: str | None = None, session: str = "s1") -> ShellRan:
    return ShellRan(command="python3 -c 'print(1)'", pattern="raw", exit_code=0, raw_tokens=raw, sent_tokens=sent,
                    archive_id=archive or capped, session_id=session, answer_tokens=answer,
                    deferred_tokens=deferred, capped_archive_id=capped)


@pytest.fixture()
def lc(tmp_path: Path):
    app = LeanCtx(tmp_path / "e.db")
    yield app
    app.close()


def rep(lc: LeanCtx, *by: str, **kw: Any) -> sv.SavingsReport:
    return sv.report(lc.projections.reader("savings"), by=by or ("tool",), **kw)


def rows(r: sv.SavingsReport) -> dict[tuple[str, ...], sv.SavingsRow]:
    return {tuple(x.group.values()): x for x in r.rows}


# --- 1. a capped shell answer defers its rest ---------------------------------------------------


def test_a_capped_raw_shell_answer_saves_nothing_and_defers_the_rest(lc: LeanCtx) -> None:
    # the audit's case: 338,856 raw tokens, --raw, capped at 20k (318,863 were reported saved)
    Log(lc).call("a", shell(338_856, 19_993, answer=338_900, deferred=318_950, capped="A1"))
    t = rep(lc).totals
    covered = 338_856 * (338_900 - 318_950) // 338_900
    assert (t.raw_tokens, t.sent_tokens, t.deferred_tokens) == (covered, 19_993, 338_856 - covered)
    assert abs(t.saved_tokens) < 100 and t.raw_tokens_recorded == 338_856


def test_a_capped_compressed_shell_answer_counts_the_part_it_covered(lc: LeanCtx) -> None:
    # compression omitted lines (archive A2 holds the output) and the cap cut the answer (A3)
    # covered = 40,000 × (16,000 − 8,000) // 16,000 = 20,000 (under PLAIN_RESULT_LIMIT), deferred 20,000
    Log(lc).call("a", shell(40_000, 8_000, answer=16_000, deferred=8_000, capped="A3a", archive="A2a"))
    t = rep(lc, agent="a").totals
    assert (t.raw_tokens, t.deferred_tokens) == (20_000, 20_000)
    # covered = 100,000 × (40,000 − 20,000) // 40,000 = 50,000, deferred 50,000; the row's raw is
    # capped at PLAIN_RESULT_LIMIT (25,000), what is deferred is not
    Log(lc).call("b", shell(100_000, 20_000, answer=40_000, deferred=20_000, capped="A3", archive="A2"))
    t = rep(lc, agent="b").totals
    assert (t.raw_tokens, t.deferred_tokens, t.raw_tokens_recorded) == (sv.PLAIN_RESULT_LIMIT, 50_000, 100_000)


def test_expanding_a_capped_shell_answer_in_the_same_conversation_counts_it(lc: LeanCtx) -> None:
    log = Log(lc)
    log.call("a", shell(60_000, 20_000, answer=60_000, deferred=40_000, capped="A4"))
    log.call("a", ArchiveExpanded(archive_id="A4", selector="lines:1-9", sent_tokens=40_000, session_id="other"))
    assert rep(lc).totals.deferred_tokens == 40_000  # another conversation redeems nothing
    log.call("a", ArchiveExpanded(archive_id="A4", selector="lines:1-9", sent_tokens=40_000, session_id="s1"))
    r = rep(lc, "tool", "family")
    t = r.totals
    # the run covered 60,000 × 20,000 // 60,000 = 20,000; the expansion redeems all 40,000 owed
    # (deferred −40,000) but its row's raw is capped at PLAIN_RESULT_LIMIT: 20,000 + 25,000
    assert (t.raw_tokens, t.deferred_tokens, t.expansions) == (20_000 + 25_000, 0, 2)
    assert t.saved_tokens == 45_000 - 20_000 - 40_000 - 40_000  # the other conversation's expansion cost
    assert set(rows(r)) == {("shell", "other")}  # the expansions are charged to the shell run


def test_old_shell_events_without_the_fields_keep_their_accounting(lc: LeanCtx) -> None:
    # no cap fields: the whole raw is covered, nothing deferred
    Log(lc).call("a", shell(20_000, 2_000, archive="A5a"))
    t = rep(lc, agent="a").totals
    assert (t.raw_tokens, t.saved_tokens, t.deferred_tokens) == (20_000, 18_000, 0)
    # the same over the client limit: raw min(338,856, 25,000), saved 25,000 − 19,993 = 5,007
    Log(lc).call("b", shell(338_856, 19_993, archive="A5"))
    t = rep(lc, agent="b").totals
    assert (t.raw_tokens, t.saved_tokens, t.deferred_tokens) == (25_000, 5_007, 0)
    assert t.raw_tokens_recorded == 338_856


# --- 2. bounces: one per full read, stubs never ------------------------------------------------


def audit_sequence(log: Log, actor: str = "aud9", session: str = "s1") -> None:
    # the audit's shape with compressed views (a ``lines:`` read is not one: see lines_sequence)
    log.call(actor, read("big.py", "map", 8_400, 165, session=session))
    log.call(actor, read("big.py", "map", 8_400, 19, stub=True, session=session))
    log.call(actor, read("big.py", "signatures", 8_400, 250, session=session))
    log.call(actor, read("big.py", "full", 8_400, 8_418, session=session))


def lines_sequence(log: Log, actor: str = "aud9", session: str = "s1") -> None:
    # the audit's own sequence: ranged reads, a stub of one, then the whole file
    log.call(actor, read("big.py", "lines:1-10", 8_400, 165, plain=140, session=session))
    log.call(actor, read("big.py", "lines:1-10", 8_400, 19, stub=True, session=session))
    log.call(actor, read("big.py", "lines:5-20", 8_400, 250, plain=225, session=session))
    log.call(actor, read("big.py", "full", 8_400, 8_418, session=session))


def test_one_bounce_per_full_read_and_the_stub_is_not_one(lc: LeanCtx) -> None:
    audit_sequence(Log(lc))
    r = rep(lc, "mode")
    m = rows(r)
    # map (call 1) and signatures (call 3) are both in the full read's window (call 4 − 3 = 1):
    # one bounce, charged to signatures (the closest), both retracted (raw 0), both sends wasted
    assert (r.totals.bounces, r.totals.wasted_tokens) == (1, 165 + 250)  # was 3 bounces (stub 1, views 2)
    assert (m[("signatures",)].bounces, m[("signatures",)].wasted_tokens, m[("signatures",)].raw_tokens) == (1, 250, 0)
    assert (m[("map",)].bounces, m[("map",)].wasted_tokens, m[("map",)].raw_tokens) == (0, 165, 0)
    # the stub stands for the map it repeats: min(raw 8,400, sent 165) = 165; never bounced
    assert (m[("stub",)].bounces, m[("stub",)].wasted_tokens, m[("stub",)].raw_tokens) == (0, 0, 165)
    assert sv.bounced_files(lc.projections.reader("savings")) == [sv.BouncedFile("big.py", "signatures", 1, 415)]


def test_lines_reads_then_a_full_read_are_no_bounce(lc: LeanCtx) -> None:
    lines_sequence(Log(lc))
    r = rep(lc, "mode")
    m = rows(r)
    assert (r.totals.bounces, r.totals.wasted_tokens) == (0, 0)  # was 1 bounce, 415 wasted
    # the lines keep their plain baselines (140 + 225), not retracted; the stub its 10 lines
    assert (m[("lines",)].bounces, m[("lines",)].wasted_tokens, m[("lines",)].raw_tokens) == (0, 0, 140 + 225)
    assert (m[("stub",)].bounces, m[("stub",)].raw_tokens) == (0, 140)
    assert sv.bounced_files(lc.projections.reader("savings")) == []


def test_a_full_read_after_only_a_stub_is_no_bounce(lc: LeanCtx) -> None:
    log = Log(lc)
    log.call("a", read("x.py", "full", 1_000, 1_010))
    log.call("a", read("x.py", "full", 1_000, 13, stub=True))
    log.call("a", read("x.py", "full", 1_000, 1_010))
    assert rep(lc).totals.bounces == 0


# --- 3. stubs count what they stand for, lines: reads the plain lines --------------------------


def test_a_stub_counts_the_view_it_stands_for_not_the_file(lc: LeanCtx) -> None:
    log = Log(lc)
    log.call("a", read("big.py", "lines:1-10", 8_400, 165, plain=140))
    for _ in range(3):
        log.call("a", read("big.py", "lines:1-10", 8_400, 19, stub=True))
    log.call("a", read("big.py", "map", 8_400, 900))
    log.call("a", read("big.py", "map", 8_400, 19, stub=True))
    log.call("a", read("f.py", "full", 3_000, 3_015))
    log.call("a", read("f.py", "full", 3_000, 13, stub=True))
    m = rows(rep(lc, "mode"))
    assert m[("stub",)].raw_tokens == 3 * 140 + 900 + 3_000  # was 5 × the whole file
    assert m[("lines",)].raw_tokens == 140 and m[("lines",)].saved_tokens == 140 - 165  # the header's cost


def test_lines_reads_without_plain_tokens_count_neither_saving_nor_cost(lc: LeanCtx) -> None:
    log = Log(lc)
    log.call("a", read("big.py", "lines:1-10", 8_400, 165))
    log.call("a", read("big.py", "lines:1-10", 8_400, 19, stub=True))
    log.call("b", read("big.py", "lines:1-10", 8_400, 19, stub=True))  # nothing on record for b: neutral
    m = rows(rep(lc, "mode"))
    assert (m[("lines",)].raw_tokens, m[("lines",)].saved_tokens) == (165, 0)
    assert m[("stub",)].raw_tokens == 165 + 19


# --- 4. percentages -------------------------------------------------------------------------------


def test_the_percentage_is_left_out_when_raw_is_about_zero() -> None:
    assert sv.savings_pct(0, 10) is None and sv.savings_pct(3, 2_654) is None  # was -88418.2 %
    assert sv.savings_pct(1_000, 2_500) == -150.0 and sv.savings_pct(1_000, 100) == 90.0


def test_replay_is_digest_equal(lc: LeanCtx) -> None:
    log = Log(lc)
    audit_sequence(log)
    log.call("a", shell(60_000, 20_000, answer=60_000, deferred=40_000, capped="A6"))
    log.call("a", ArchiveExpanded(archive_id="A6", selector="lines:1-9", sent_tokens=10_000, session_id="s1"))
    log.call("a", read("big.py", "map", 8_400, 900, session="s2"))
    log.call("a", read("big.py", "map", 8_400, 19, stub=True, session="s2"))
    before = rep(lc, "tool", "mode"), rep(lc, "tool")
    r = replay(lc, verify=True)
    assert r.ok, r
    assert any(p.name == "savings" and p.match for p in r.projections)
    replay(lc)
    assert (rep(lc, "tool", "mode"), rep(lc, "tool")) == before
    assert before[1].totals.bounces == 1 and before[1].totals.deferred_tokens == 30_000


# --- through the real CLI ----------------------------------------------------------------------


def _cli(root: Path, *args: str, agent: str = "aud9") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_HOME=str(root / "home"), LEAN_CTX_DB=str(root / "home" / "events.db"),
               LEAN_CTX_NO_DAEMON="1", LEAN_CTX_AGENT_ID=agent)
    p = subprocess.run([LEAN_CTX, *args], check=False, capture_output=True, text=True, env=env, cwd=root / "proj",
                       timeout=120)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    return p


def _project(tmp_path: Path) -> None:
    (tmp_path / "proj" / ".git").mkdir(parents=True)
    (tmp_path / "proj" / "big.py").write_text(
        "".join(f"def func_{i}(alpha, beta):\n    return alpha * {i} + beta  # {i * 7919 % 1000}\n"
                for i in range(350)))


@pytest.mark.timeout(180)
def test_cli_a_capped_raw_shell_run_is_deferred_not_saved(tmp_path: Path) -> None:
    _project(tmp_path)
    out = json.loads(_cli(tmp_path, "shell", "--raw", "--json", "--session", "s1", "--",
                          "python3", "-c", "for i in range(20000): print(i, 'x'*60)").stdout)
    assert out["capped"] and out["raw_tokens"] > 10 * out["sent_tokens"]
    t = json.loads(_cli(tmp_path, "gain", "--json").stdout)["totals"]
    assert t["raw_tokens_recorded"] == out["raw_tokens"] and t["sent_tokens"] == out["sent_tokens"]
    assert abs(t["saved_tokens"]) < 0.02 * out["sent_tokens"]  # was 94% "saved"
    assert t["deferred_tokens"] == out["raw_tokens"] - t["raw_tokens"] > 0.9 * out["raw_tokens"]
    m = re.search(r"lean-ctx expand (A[0-9a-f]+) --lines (\d+-\d+)", out["text"])
    assert m, out["text"][-400:]
    _cli(tmp_path, "expand", m.group(1), "--lines", m.group(2), "--session", "s1")
    after = json.loads(_cli(tmp_path, "gain", "--json").stdout)["totals"]
    got = after["sent_tokens"] - t["sent_tokens"]  # the expansion (itself capped) sent this much of the rest
    assert after["expansions"] == 1 and got > 1_000
    with LeanCtx(tmp_path / "home" / "events.db") as app:
        ran, ex = (app.store.read_all(0, filter=TopicFilter(kinds=(k,)))[-1].to_dict()["payload"]
                   for k in ("shell.ran", "archive.expanded"))
    # owed for the archive: raw R − R × (A − D) // A, for view D (the run's deferred answer tokens)
    covered = ran["raw_tokens"] * (ran["answer_tokens"] - ran["deferred_tokens"]) // ran["answer_tokens"]
    raw_left, view_left = ran["raw_tokens"] - covered, ran["deferred_tokens"]
    assert t["deferred_tokens"] == raw_left and ex["sent_tokens"] == got
    # it sent lines the run's answer did not (none held), so it redeems the archived text it returned
    # (text_tokens, without its "N:" prefixes and notice), scaled back to raw: raw_left × text // view_left
    assert overlap_lines(ex["line_spans"], ran["line_spans"]) == 0 and 0 < ex["text_tokens"] < got
    back = raw_left * ex["text_tokens"] // view_left
    # it counts as the plain run would have (raw comes back from deferred), not as a pure cost:
    # only what it sent beyond the archived text (the prefixes, the notice) is a cost
    assert after["raw_tokens"] - t["raw_tokens"] == t["deferred_tokens"] - after["deferred_tokens"] == back
    assert back > 0.95 * ex["text_tokens"]  # a --raw run: raw ≈ answer, so back ≈ the text
    assert after["saved_tokens"] - t["saved_tokens"] == back - got > -0.5 * got  # a pure cost would be −got


@pytest.mark.timeout(180)
def test_cli_gain_counts_as_many_bounces_as_stuck_deposits(tmp_path: Path) -> None:
    _project(tmp_path)

    def sequence(modes: tuple[str, ...], session: str) -> list[dict[str, Any]]:
        out = []
        for mode in modes:
            ans = json.loads(_cli(tmp_path, "read", "big.py", "-m", mode, "--json", "--session", session).stdout)
            out.append(ans[0] if isinstance(ans, list) else ans)
        assert [a["stub"] for a in out] == [False, True, False, False]
        return out

    def stuck() -> list[dict[str, Any]]:
        tail = _cli(tmp_path, "events", "tail", "--json", "-n", "200").stdout.splitlines()
        return [e for e in map(json.loads, tail) if e["kind"] == "scent.deposited" and e["payload"]["scent"] == "STUCK"]

    def gain() -> dict[str, Any]:
        return json.loads(_cli(tmp_path, "gain", "--json", "--agent", "aud9", "--by", "mode").stdout)

    # the audit's sequence: ranged reads (plain lines, no compression to undo), then the whole file
    lines = sequence(("lines:1-10", "lines:1-10", "lines:5-20", "full"), "l0")
    g = gain()
    assert len(stuck()) == g["totals"]["bounces"] == 0 and g["bounced_files"] == []  # was 1 (and 3 before that)
    # compressed views, a stub of one, then the whole file within the window: one bounce, one STUCK
    views = sequence(("map", "map", "signatures", "full"), "l1")
    g = gain()
    assert len(stuck()) == g["totals"]["bounces"] == 1  # was 3 bounces for 1 STUCK
    wasted = views[0]["sent_tokens"] + views[2]["sent_tokens"]  # both views in the window, each once
    assert g["totals"]["wasted_tokens"] == wasted
    assert g["bounced_files"] == [{"path": "big.py", "mode": "signatures", "bounces": 1, "wasted_tokens": wasted}]
    by_mode = {r["group"]["mode"]: r for r in g["reports"][0]["rows"]}
    assert (by_mode["signatures"]["bounces"], by_mode["signatures"]["raw_tokens"]) == (1, 0)  # retracted
    assert (by_mode["map"]["bounces"], by_mode["map"]["raw_tokens"]) == (0, 0)
    assert (by_mode["lines"]["bounces"], by_mode["lines"]["wasted_tokens"]) == (0, 0)
    assert 0 < by_mode["lines"]["raw_tokens"] < 1_000  # the plain lines, kept: not retracted
    assert by_mode["full"]["raw_tokens"] == lines[3]["raw_tokens"] + views[3]["raw_tokens"]
    # the stubs count the views they stand for: the 10 lines (part of the lines' raw) and the map
    # (min(raw, sent) of the map read = its sent), not the file twice
    ten_lines = by_mode["stub"]["raw_tokens"] - views[0]["sent_tokens"]
    assert 0 < ten_lines < by_mode["lines"]["raw_tokens"]
    assert (by_mode["stub"]["bounces"], by_mode["stub"]["wasted_tokens"]) == (0, 0)


def test_record_shell_takes_the_cap_fields_together_and_with_their_archive(lc: LeanCtx) -> None:
    from leanctx.commands.shell import ArchiveInfo, RecordShell
    from leanctx.errors import InvalidInput

    aid, sha = "A" + "ab" * 8, "ab" * 32
    info = ArchiveInfo(archive_id=aid, sha256=sha, bytes=10, lines=2, tokens=5)
    base = dict(command="x", pattern="raw", exit_code=0, raw_tokens=100, sent_tokens=40, omitted_lines=1, archive=info)
    for bad, code in ((dict(answer_tokens=100), "SHELL_INVALID_RECORD"),
                      (dict(answer_tokens=100, deferred_tokens=101, capped_archive_id=aid), "SHELL_INVALID_RECORD"),
                      (dict(answer_tokens=100, deferred_tokens=60, capped_archive_id="A" + "cd" * 8),
                       "SHELL_OMISSION_WITHOUT_ARCHIVE")):
        with pytest.raises(InvalidInput) as e:
            lc.bus.dispatch(RecordShell(**base, **bad), actor="a", session_id="s1")
        assert e.value.code == code
    lc.bus.dispatch(RecordShell(**base, answer_tokens=100, deferred_tokens=60, capped_archive_id=aid),
                    actor="a", session_id="s1")
    t = rep(lc).totals
    assert (t.raw_tokens, t.deferred_tokens) == (40, 60)
