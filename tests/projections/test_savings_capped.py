"""Capped reads in the savings projection: a cap defers content to an archive, it does not
compress it. Only the part of the file an answer covered counts as raw; the rest is
``deferred`` until the same conversation expands it (then it counts, as a plain read of that
part would have). Synthetic events appended to a real log, a replay, and the real CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from leanctx.app import LeanCtx
from leanctx.events import NewEvent, TopicFilter
from leanctx.events.kinds.context import ArchiveCreated, ArchiveExpanded, FileRead
from leanctx.projections import savings as sv
from tools.replay import replay

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
DAY = "2026-03-01"


class Log:
    """Appends each call's events as one tool call (one correlation id), a second apart on ``day``."""

    def __init__(self, lc: LeanCtx, day: str = DAY) -> None:
        self.lc, self.seq, self.day = lc, count(1), day

    def call(self, actor: str, *events: Any) -> None:
        n = next(self.seq)
        self.lc.store.append(f"calls:{actor}", [
            NewEvent(event=e, actor=actor, correlation_id=f"call-{n}", ts=f"{self.day}T10:00:{n:02d}.000000Z",
                     consistency="eventual") for e in events])


def capped(path: str, raw: int, sent: int, archive: str, *, mode: str = "full", view: int | None = None,
           deferred: int | None = None, session: str = "s1") -> FileRead:
    return FileRead(path=path, mode=mode, requested_mode=mode, content_hash=f"h-{path}", lines=6000, raw_tokens=raw,
                    sent_tokens=sent, session_id=session, archive_id=archive, view_tokens=view,
                    deferred_tokens=deferred)


def created(archive: str, tokens: int) -> ArchiveCreated:
    return ArchiveCreated(archive_id=archive, source="read", sha256="s", bytes=1, lines=6000, tokens=tokens)


def expanded(archive: str, sent: int, session: str = "s1") -> ArchiveExpanded:
    return ArchiveExpanded(archive_id=archive, selector="lines:996-6000", sent_tokens=sent, session_id=session)


@pytest.fixture()
def lc(tmp_path: Path):
    app = LeanCtx(tmp_path / "e.db")
    yield app
    app.close()


def totals(lc: LeanCtx, **kw: Any) -> sv.SavingsRow:
    return sv.report(lc.projections.reader("savings"), by=("tool",), **kw).totals


def test_a_capped_full_read_saves_nothing_and_defers_the_rest(lc: LeanCtx) -> None:
    # the audit's case: 6,000 lines, 60,082 tokens, capped at 20k (39,985 were reported saved)
    Log(lc).call("a", capped("big.py", 60_082, 20_097, "A1", view=60_082, deferred=40_142), created("A1", 60_082))
    t = totals(lc)
    assert (t.raw_tokens, t.sent_tokens, t.saved_tokens) == (19_940, 20_097, -157)  # header + notice cost
    assert (t.deferred_tokens, t.raw_tokens_recorded) == (40_142, 60_082)
    assert t.savings_pct is not None and t.savings_pct < 0


def test_a_capped_compressed_view_counts_the_part_of_the_file_it_covered(lc: LeanCtx) -> None:
    # signatures of a 30k-token file: a 3k view, 1k of it deferred → 2/3 of the file covered:
    # covered = 30,000 × (3,000 − 1,000) // 3,000 = 20,000 (under PLAIN_RESULT_LIMIT), deferred 10,000
    Log(lc).call("a", capped("mid.py", 30_000, 2_050, "A2a", mode="signatures", view=3_000, deferred=1_000))
    t = totals(lc)
    assert (t.raw_tokens, t.deferred_tokens) == (20_000, 10_000)
    assert t.saved_tokens == 20_000 - 2_050
    # signatures of a 200k-token file: a 30k view, 10k deferred → covered 200,000 × 20,000 // 30,000
    # = 133,333, deferred 200,000 − 133,333 = 66,667; the row's raw is capped at PLAIN_RESULT_LIMIT
    # (no plain answer exceeds 25,000), the deferral is not
    Log(lc).call("b", capped("huge.py", 200_000, 20_050, "A2", mode="signatures", view=30_000, deferred=10_000))
    t = totals(lc, agent="b")
    assert sv.PLAIN_RESULT_LIMIT == 25_000
    assert (t.raw_tokens, t.deferred_tokens, t.raw_tokens_recorded) == (25_000, 66_667, 200_000)
    assert t.saved_tokens == 25_000 - 20_050


def test_old_capped_events_without_the_fields_count_neither_saving_nor_cost(lc: LeanCtx) -> None:
    Log(lc).call("a", capped("big.py", 60_082, 20_097, "A3"))
    t = totals(lc)
    assert (t.raw_tokens, t.saved_tokens, t.deferred_tokens) == (20_097, 0, 39_985)


def test_uncapped_reads_are_unchanged(lc: LeanCtx) -> None:
    log = Log(lc)
    log.call("a", FileRead(path="a.py", mode="map", requested_mode="map", content_hash="h", lines=10, raw_tokens=1000,
                           sent_tokens=100, session_id="s1"))
    t = totals(lc)
    assert (t.raw_tokens, t.saved_tokens, t.deferred_tokens) == (1000, 900, 0)


def test_expanding_the_deferred_rest_in_the_same_conversation_counts_it(lc: LeanCtx) -> None:
    log = Log(lc)
    log.call("a", capped("big.py", 60_000, 20_050, "A4", view=60_000, deferred=40_000), created("A4", 60_000))
    log.call("a", expanded("A4", 25_000))  # part of the rest
    mid = totals(lc)
    assert (mid.raw_tokens, mid.deferred_tokens) == (20_000 + 25_000, 15_000)
    log.call("a", expanded("A4", 16_000))  # the rest, and 1,000 tokens more than was owed
    done = totals(lc)
    assert (done.raw_tokens, done.deferred_tokens, done.raw_tokens_recorded) == (60_000, 0, 60_000)
    assert done.saved_tokens == 60_000 - (20_050 + 25_000 + 16_000)
    log.call("a", expanded("A4", 5_000))  # expanding again: nothing is owed any more, a cost
    again = totals(lc)
    assert (again.raw_tokens, again.saved_tokens) == (60_000, done.saved_tokens - 5_000)
    by_tool = {r.group["tool"]: r for r in sv.report(lc.projections.reader("savings"), by=("tool",)).rows}
    assert set(by_tool) == {"read"} and by_tool["read"].expansions == 3  # charged to the read


def test_another_conversation_does_not_redeem_what_was_deferred_for_this_one(lc: LeanCtx) -> None:
    log = Log(lc)
    log.call("a", capped("big.py", 60_000, 20_050, "A5", view=60_000, deferred=40_000), created("A5", 60_000))
    log.call("b", expanded("A5", 40_000))  # another agent
    log.call("a", expanded("A5", 10_000, session="s2"))  # the same agent, another conversation
    t = totals(lc)
    assert (t.raw_tokens, t.deferred_tokens) == (20_000, 40_000)
    assert t.saved_tokens == 20_000 - 20_050 - 40_000 - 10_000


def test_a_compressed_view_redeems_in_proportion(lc: LeanCtx) -> None:
    log = Log(lc)
    # covered 30,000 × 2,000 // 3,000 = 20,000; owed: raw 10,000 for view 1,000
    log.call("a", capped("mid.py", 30_000, 2_050, "A6a", mode="signatures", view=3_000, deferred=1_000))
    log.call("a", expanded("A6a", 500))  # half the deferred view: back 10,000 × 500 // 1,000 = 5,000
    t = totals(lc, agent="a")
    assert (t.raw_tokens, t.deferred_tokens) == (20_000 + 5_000, 10_000 - 5_000)
    # the 200k file: covered 133,333 (row capped at 25,000), owed raw 66,667 for view 10,000
    log.call("b", capped("huge.py", 200_000, 20_050, "A6", mode="signatures", view=30_000, deferred=10_000))
    log.call("b", expanded("A6", 5_000))  # half: back 66,667 × 5,000 // 10,000 = 33,333, its row capped at 25,000
    t = totals(lc, agent="b")
    assert (t.raw_tokens, t.deferred_tokens) == (25_000 + 25_000, 66_667 - 33_333)


def test_replay_is_digest_equal(lc: LeanCtx) -> None:
    log = Log(lc)
    log.call("a", capped("big.py", 60_000, 20_050, "A7", view=60_000, deferred=40_000), created("A7", 60_000))
    log.call("a", capped("old.py", 9_000, 4_000, "A8"))
    log.call("a", expanded("A7", 30_000))
    log.call("a", expanded("A8", 1_000))
    before = sv.report(lc.projections.reader("savings"), by=("tool", "mode"))
    rep = replay(lc, verify=True)
    assert rep.ok, rep
    assert any(p.name == "savings" and p.match for p in rep.projections)
    replay(lc)
    assert sv.report(lc.projections.reader("savings"), by=("tool", "mode")) == before
    assert before.totals.deferred_tokens == 10_000 + 4_000


# --- through the real CLI ----------------------------------------------------------------------


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_HOME=str(root / "home"), LEAN_CTX_DB=str(root / "home" / "events.db"),
               LEAN_CTX_NO_DAEMON="1", LEAN_CTX_AGENT_ID="capper")
    p = subprocess.run([LEAN_CTX, *args], check=False, capture_output=True, text=True, env=env, cwd=root / "proj", timeout=120)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    return p


@pytest.mark.timeout(180)
def test_gain_does_not_count_a_capped_reads_rest_as_saved(tmp_path: Path) -> None:
    (tmp_path / "proj" / ".git").mkdir(parents=True)
    (tmp_path / "proj" / "big.py").write_text(
        "".join(f"value_{i} = compute_something({i}, factor={i % 7})  # line {i}\n" for i in range(700)))
    out = json.loads(_cli(tmp_path, "read", "big.py", "--mode", "full", "--json", "--session", "s1",
                          "--max-tokens", "3000").stdout)
    read = out[0] if isinstance(out, list) else out
    assert read["capped"] and read["raw_tokens"] > 3 * read["sent_tokens"]
    t = json.loads(_cli(tmp_path, "gain", "--json").stdout)["totals"]
    assert t["raw_tokens_recorded"] == read["raw_tokens"] and t["sent_tokens"] == read["sent_tokens"]
    assert t["saved_tokens"] <= 0 and t["raw_tokens"] <= t["sent_tokens"]  # was: ~70% "saved"
    assert t["deferred_tokens"] >= read["raw_tokens"] - read["sent_tokens"] > 0
    # the read event carries the view's size and what it left in the archive (not the old fallback)
    with LeanCtx(tmp_path / "home" / "events.db") as app:
        ev = app.store.read_all(0, filter=TopicFilter(kinds=("file.read",)))[-1].to_dict()["payload"]
    assert ev["view_tokens"] > ev["deferred_tokens"] > 0 and ev["archive_id"]
    covered = ev["raw_tokens"] * (ev["view_tokens"] - ev["deferred_tokens"]) // ev["view_tokens"]
    assert t["deferred_tokens"] == ev["raw_tokens"] - covered
    # the conversation expands the rest: it is counted then, and nothing is deferred any more
    m = re.search(r"lean-ctx expand (A[0-9a-f]+) --lines (\d+-\d+)\]", read["text"])
    assert m, read["text"][-400:]
    _cli(tmp_path, "expand", m.group(1), "--lines", m.group(2), "--session", "s1")
    after = json.loads(_cli(tmp_path, "gain", "--json").stdout)["totals"]
    assert after["expansions"] == 1 and after["deferred_tokens"] == 0
    assert after["raw_tokens"] == after["raw_tokens_recorded"] == read["raw_tokens"]


def test_capped_reads_and_shell_answers_replay_digest_equal(lc: LeanCtx) -> None:
    from leanctx.events.kinds.context import ShellRan

    log = Log(lc)
    log.call("a", capped("big.py", 60_000, 20_050, "A9", view=60_000, deferred=40_000), created("A9", 60_000))
    log.call("a", ShellRan(command="seq 1 99999", pattern="raw", exit_code=0, raw_tokens=90_000, sent_tokens=20_000,
                           archive_id="B1", capped_archive_id="B1", answer_tokens=90_000, deferred_tokens=70_000,
                           session_id="s1"))
    log.call("a", expanded("B1", 35_000))
    before = sv.report(lc.projections.reader("savings"), by=("tool",))
    assert before.totals.deferred_tokens == 40_000 + 35_000
    rep = replay(lc, verify=True)
    assert rep.ok and any(p.name == "savings" and p.match for p in rep.projections), rep
    replay(lc)
    assert sv.report(lc.projections.reader("savings"), by=("tool",)) == before
