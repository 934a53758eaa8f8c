"""The savings projection and ``lean-ctx gain``: synthetic context events appended directly to the
log (explicit timestamps, several agents and sessions), then the queries, a replay, and the real
CLI in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from leanctx.app import LeanCtx
from leanctx.events import NewEvent
from leanctx.events.kinds.context import (
    ArchiveCreated,
    ArchiveExpanded,
    FileEdited,
    FileRead,
    SearchRan,
    ShellRan,
)
from leanctx.projections import savings as sv
from tools.replay import replay

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))  # this interpreter's, not whatever PATH finds
D1, D2, D3 = "2026-03-01", "2026-03-02", "2026-03-04"  # D3 leaves a gap day (03-03)


class Log:
    """Appends context events like the commands do: one call = one correlation id."""

    def __init__(self, lc: LeanCtx) -> None:
        self.lc = lc
        self.seq = count(1)

    def call(self, actor: str | None, day: str, *events: Any, corr: str | None = "auto", sec: int | None = None) -> None:
        n = next(self.seq)
        ts = f"{day}T{10 + n // 3600 % 10:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000000Z" if sec is None else \
            f"{day}T12:00:{sec:02d}.000000Z"
        cid = f"call-{n}" if corr == "auto" else corr
        self.lc.store.append(
            f"calls:{actor}",
            [NewEvent(event=e, actor=actor, correlation_id=cid, ts=ts, consistency="eventual") for e in events],
        )


def read(path: str, mode: str = "full", raw: int = 1000, sent: int | None = None, *, stub: bool = False,
         session: str | None = None, h: str = "h1", archive_id: str | None = None) -> FileRead:
    return FileRead(path=path, mode=mode, requested_mode=mode, content_hash=h, lines=100, raw_tokens=raw,
                    sent_tokens=raw if sent is None else sent, stub=stub, session_id=session, archive_id=archive_id)


def shell(command: str, pattern: str, raw: int, sent: int, archive_id: str | None = None,
          session: str | None = None) -> ShellRan:
    return ShellRan(command=command, pattern=pattern, exit_code=0, raw_tokens=raw, sent_tokens=sent,
                    archive_id=archive_id, session_id=session)


@pytest.fixture()
def lc(tmp_path: Path):
    app = LeanCtx(tmp_path / "e.db")
    yield app
    app.close()


def conn(lc: LeanCtx) -> Any:
    return lc.projections.reader("savings")


def rows(rep: sv.SavingsReport) -> dict[tuple[str, ...], sv.SavingsRow]:
    return {tuple(r.group.values()): r for r in rep.rows}


def test_aggregates_per_dimension_and_negative_savings(lc: LeanCtx) -> None:
    log = Log(lc)
    log.call("a", D1, read("src/app.py", "map", 1000, 100))
    log.call("a", D1, read("src/util.py", "signatures", 800, 80), read("README.md", "aggressive", 300, 200))
    log.call("b", D2, shell("git status", "git_status", 500, 50))
    log.call("b", D2, shell("uv run pytest -x", "raw", 200, 200))  # family from the command
    log.call("b", D2, shell("terraform plan", "generic", 400, 100))
    # a regex search keeps its raw (a plain grep sends the listing): saved 900 − 90 = 810; a ranked
    # (bm25/semantic/fused) one would claim nothing (tests/projections/test_savings_audit2.py)
    log.call("b", D3, SearchRan(query="foo", method="regex", results=3, raw_tokens=900, sent_tokens=90))
    log.call("a", D3, read("tiny.py", "map", 10, 25))  # the map costs more than the file: negative
    log.call("a", D3, FileEdited(path="src/app.py", before_hash="h1", after_hash="h2", replacements=1,
                                 sent_tokens=12))

    c = conn(lc)
    by_tool = sv.report(c, by=("tool",))
    t = rows(by_tool)
    assert t[("read",)].calls == 3  # the two-path read is one call
    assert (t[("read",)].raw_tokens, t[("read",)].sent_tokens) == (2110, 405)
    assert t[("read",)].saved_tokens == 1705
    assert (t[("shell",)].raw_tokens, t[("shell",)].sent_tokens, t[("shell",)].saved_tokens) == (1100, 350, 750)
    assert (t[("search",)].saved_tokens, t[("search",)].savings_pct) == (810, 90.0)
    assert (t[("edit",)].raw_tokens, t[("edit",)].sent_tokens, t[("edit",)].saved_tokens) == (12, 12, 0)
    assert by_tool.totals.calls == 8
    assert by_tool.totals.saved_tokens == 1705 + 750 + 810
    assert by_tool.encodings == ["o200k_base"]

    modes = rows(sv.report(c, by=("mode",)))
    assert set(modes) == {("map",), ("signatures",), ("aggressive",)}
    assert modes[("map",)].saved_tokens == 900 - 15
    neg = rows(sv.report(c, by=("mode",), since=D3))[("map",)]
    assert (neg.saved_tokens, neg.savings_pct) == (-15, -150.0)  # kept negative, never clamped

    fam = rows(sv.report(c, by=("family",)))
    assert set(fam) == {("git",), ("pytest",), ("other",)}
    assert fam[("git",)].saved_tokens == 450 and fam[("pytest",)].saved_tokens == 0

    ext = rows(sv.report(c, by=("ext",)))
    assert set(ext) == {(".py",), (".md",)}
    assert ext[(".py",)].calls == 4 and ext[(".md",)].calls == 1  # three reads, the edit

    agents = rows(sv.report(c, by=("agent",)))
    assert agents[("a",)].calls == 4 and agents[("b",)].calls == 4
    assert sv.report(c, agent="b", by=("tool",)).totals.calls == 4

    two = rows(sv.report(c, by=("agent", "tool")))
    assert two[("b", "shell")].calls == 3 and ("a", "shell") not in two

    days = rows(sv.report(c, by=("day",)))
    assert [r.group["day"] for r in sv.report(c, by=("day",)).rows] == [D1, D2, D3]
    assert days[(D1,)].saved_tokens == 900 + 720 + 100

    with pytest.raises(Exception) as err:
        sv.report(c, by=("colour",))
    assert getattr(err.value, "code", "") == "SAVINGS_INVALID_DIMENSION"

    # the same search ranked by bm25: no plain equivalent, so raw = sent (900 recorded): saved 0
    log.call("c", D3, SearchRan(query="foo", method="bm25", results=3, raw_tokens=900, sent_tokens=90))
    ranked = sv.report(conn(lc), agent="c", by=("tool",)).totals
    assert (ranked.raw_tokens, ranked.saved_tokens, ranked.raw_tokens_recorded) == (90, 0, 900)


def test_command_family_and_extension_rules() -> None:
    assert sv.command_family("git_status", "git status") == "git"
    assert sv.command_family("npm", "pnpm install") == "npm"
    assert sv.command_family("cargo:test", "cargo test") == "cargo"
    assert sv.command_family("raw", "cd x && python -m pytest -q | tail") == "pytest"
    assert sv.command_family("generic", "./build.sh") == "other"
    assert sv.file_ext("src/App.TSX") == ".tsx"
    assert sv.file_ext("Makefile") == sv.NO_EXT and sv.file_ext(".env") == sv.NO_EXT
    assert sv.file_ext("a/b.tar.gz") == ".gz"


def test_bounce_inside_the_window_deducts_the_waste(lc: LeanCtx) -> None:
    log = Log(lc)
    log.call("a", D1, read("src/app.py", "map", 1000, 100))          # call 1: compressed
    log.call("a", D1, shell("git status", "git", 300, 30))           # call 2
    log.call("a", D1, read("src/other.py", "full", 50))              # call 3 (a full read of another file)
    log.call("a", D1, read("src/app.py", "full", 1000))              # call 4: 3 calls later -> bounce
    c = conn(lc)
    mode = rows(sv.report(c, by=("mode",)))[("map",)]
    assert (mode.bounces, mode.wasted_tokens) == (1, 100)
    assert (mode.raw_tokens, mode.sent_tokens, mode.saved_tokens) == (0, 100, -100)
    assert mode.raw_tokens_recorded == 1000
    read_row = rows(sv.report(c, by=("tool",)))[("read",)]
    # plain tools: app.py once (1000) + other.py (50); lean-ctx sent 100 + 1000 + 50
    assert (read_row.raw_tokens, read_row.sent_tokens, read_row.saved_tokens) == (1050, 1150, -100)
    assert read_row.bounces == 1 and read_row.wasted_tokens == 100
    assert sv.bounced_files(c) == [sv.BouncedFile("src/app.py", "map", 1, 100)]
    # the full read answered the map: a later full read bounces nothing more
    log.call("a", D1, read("src/app.py", "full", 1000))
    assert sv.report(conn(lc), by=("tool",)).totals.bounces == 1


def test_no_bounce_outside_the_window_or_across_conversations(lc: LeanCtx) -> None:
    log = Log(lc)
    log.call("a", D1, read("x.py", "signatures", 1000, 100))    # call 1
    for i in range(3):                                          # calls 2-4
        log.call("a", D1, SearchRan(query=f"q{i}", method="regex", results=1, raw_tokens=10, sent_tokens=5))
    log.call("a", D1, read("x.py", "full", 1000))               # call 5: 4 calls later -> no bounce
    log.call("b", D1, read("y.py", "map", 1000, 100))           # agent b's compressed read
    log.call("a", D1, read("y.py", "full", 1000))               # another agent reads it in full
    log.call("a", D1, read("z.py", "map", 1000, 100, session="s1"))
    log.call("a", D1, read("z.py", "full", 1000, session="s2"))  # same agent, another session
    log.call("a", D1, read("z.py", "full", 1000))               # same agent, no session: another conversation
    log.call("a", D1, read("w.py", "map", 1000, 100, h="old"))
    log.call("a", D1, read("w.py", "full", 1000, h="new"))      # the file changed in between: a new need
    log.call("a", D1, read("v.py", "lines:1-20", 1000, 40))
    log.call("a", D1, read("v.py", "map", 1000, 90))
    log.call("a", D1, read("v.py", "full", 1000, session="s1"))  # different conversation
    tot = sv.report(conn(lc), by=("tool",)).totals
    assert (tot.bounces, tot.wasted_tokens) == (0, 0)


def test_bounce_per_session_stub_and_multi_event_calls(lc: LeanCtx) -> None:
    log = Log(lc)
    # session s1: a stub, then (2 calls later) a fresh full read of the same content: a stub is a
    # reference, not a compressed view, so it does not bounce
    log.call("a", D1, read("app.py", "full", 1000, 13, stub=True, session="s1"))
    log.call("a", D1, read("other.py", "map", 500, 50, session="s2"))  # s2 does not count in s1's window
    log.call("a", D1, read("b.py", "full", 10, session="s1"))
    log.call("a", D1, read("c.py", "full", 10, session="s1"))
    log.call("a", D1, read("app.py", "full", 1000, session="s1"))
    # one call reading four paths counts as one call: the full read 3 calls after the map bounces it
    log.call("a", D2, read("m.py", "map", 2000, 200, session="s3"))
    log.call("a", D2, *[read(f"f{i}.py", "full", 10, session="s3") for i in range(4)])
    log.call("a", D2, read("g.py", "full", 10, session="s3"))
    log.call("a", D2, read("m.py", "full", 2000, session="s3"))
    # events without a correlation id count one call each: here the 4th call after -> no bounce
    log.call("a", D2, read("n.py", "entropy", 700, 70, session="s4"), corr=None)
    log.call("a", D2, *[read(f"k{i}.py", "full", 10, session="s4") for i in range(3)], corr=None)
    log.call("a", D2, read("n.py", "full", 700, session="s4"), corr=None)
    c = conn(lc)
    bounced = {(b.path, b.mode): b for b in sv.bounced_files(c)}
    assert set(bounced) == {("m.py", "map")}
    assert bounced[("m.py", "map")].wasted_tokens == 200
    stub = rows(sv.report(c, by=("mode",)))[("stub",)]
    assert (stub.saved_tokens, stub.bounces) == (0, 0)  # no earlier delivery on record: neutral
    # two compressed reads of a file in the window: one full read is one bounce wasting both
    log.call("q", D3, read("t.py", "map", 600, 60))
    log.call("q", D3, read("t.py", "signatures", 600, 40))
    log.call("q", D3, read("t.py", "full", 600))
    log.call("q", D3, read("t.py", "full", 600))
    q = sv.report(conn(lc), agent="q", by=("tool",)).totals
    assert (q.bounces, q.wasted_tokens, q.saved_tokens) == (1, 100, -100)


def test_expansions_cost_the_tool_whose_output_was_archived(lc: LeanCtx) -> None:
    log = Log(lc)
    log.call("a", D1, ArchiveCreated(archive_id="A1", source="shell", sha256="s", bytes=10, lines=900, tokens=5000),
             shell("pytest -q", "pytest", 5000, 300, archive_id="A1"))
    log.call("a", D1, ArchiveCreated(archive_id="A2", source="search", sha256="s", bytes=10, lines=9, tokens=900))
    log.call("a", D1, ArchiveExpanded(archive_id="A1", selector="tail:50", sent_tokens=400))
    log.call("a", D1, ArchiveExpanded(archive_id="A2", selector="head:5", sent_tokens=60))
    log.call("a", D1, ArchiveExpanded(archive_id="nope", selector="head:5", sent_tokens=70))
    c = conn(lc)
    t = rows(sv.report(c, by=("tool",)))
    assert (t[("shell",)].calls, t[("shell",)].expansions) == (2, 1)
    assert (t[("shell",)].raw_tokens, t[("shell",)].sent_tokens, t[("shell",)].saved_tokens) == (5000, 700, 4300)
    assert (t[("search",)].raw_tokens, t[("search",)].saved_tokens) == (0, -60)  # only known from archive.created
    assert (t[("expand",)].saved_tokens, t[("expand",)].savings_pct) == (-70, None)
    assert rows(sv.report(c, by=("family",)))[("pytest",)].saved_tokens == 4300


def test_daily_buckets_and_time_filters(lc: LeanCtx) -> None:
    log = Log(lc)
    log.call("a", D1, read("a.py", "map", 1000, 100), sec=1)
    log.call("a", D1, read("b.py", "map", 1000, 100), sec=59)
    log.call("b", D2, shell("ls", "ls", 300, 100))
    log.call("a", D3, read("c.py", "full", 70, 90))
    c = conn(lc)
    week = sv.daily(c, days=5)
    assert [d.day for d in week] == ["2026-02-28", D1, D2, "2026-03-03", D3]
    by_day = {d.day: d for d in week}
    assert (by_day[D1].calls, by_day[D1].raw_tokens, by_day[D1].sent_tokens, by_day[D1].saved_tokens) == \
        (2, 2000, 200, 1800)
    assert by_day["2026-03-03"].calls == 0 and by_day["2026-02-28"].raw_tokens == 0
    assert by_day[D3].saved_tokens == -20
    assert [d.day for d in sv.daily(c, days=2, until=D2, agent="a")] == [D1, D2]
    assert sv.daily(c, days=2, until=D2, agent="a")[1].calls == 0
    assert sv.report(c, since=D2, by=("tool",)).totals.calls == 2
    assert sv.report(c, until=D1, by=("tool",)).totals.calls == 2
    assert sv.report(c, since=f"{D1}T12:00:30.000000Z", until=D2, by=("tool",)).totals.calls == 2
    assert sv.last_day(c) == D3 and sv.first_day(c) == D1
    for bad in ("last week", "2026-3-1"):
        with pytest.raises(Exception) as err:
            sv.report(c, since=bad)
        assert getattr(err.value, "code", "") == "SAVINGS_INVALID_TIME"


def test_replay_is_digest_equal(lc: LeanCtx) -> None:
    log = Log(lc)
    log.call("a", D1, read("app.py", "map", 1000, 100, session="s"))
    log.call("a", D1, ArchiveCreated(archive_id="A", source="shell", sha256="s", bytes=1, lines=1, tokens=1),
             shell("git log", "git_log", 900, 90, archive_id="A", session="s"))
    log.call("a", D2, read("app.py", "full", 1000, session="s"))
    log.call("b", D2, ArchiveExpanded(archive_id="A", selector="head:10", sent_tokens=33))
    before = sv.report(conn(lc), by=("agent", "tool"))
    rep = replay(lc, verify=True)
    assert rep.ok, rep
    assert any(p.name == "savings" and p.match for p in rep.projections)
    replay(lc)  # in place
    assert sv.report(conn(lc), by=("agent", "tool")) == before
    assert before.totals.bounces == 1


# --- the real CLI -------------------------------------------------------------------------
def gain(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env["LEAN_CTX_DB"] = str(db)
    p = subprocess.run([LEAN_CTX, "gain", *args], check=False, capture_output=True, text=True, env=env, timeout=60,
                       cwd=db.parent)
    assert "Traceback" not in p.stderr, p.stderr
    return p


def test_cli_gain_tables_chart_totals_and_json(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    empty = gain(db)
    assert empty.returncode == 0 and "no savings recorded yet" in empty.stdout
    assert json.loads(gain(db, "--json").stdout)["totals"]["calls"] == 0

    with LeanCtx(db) as lc:
        log = Log(lc)
        log.call("a", D1, read("src/app.py", "map", 4000, 400))
        log.call("a", D1, read("src/app.py", "full", 4000))              # bounce
        log.call("b", D2, shell("git status", "git_status", 2000, 200))
        log.call("b", D3, read("tiny.py", "map", 10, 30))                # negative savings

    out = gain(db)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for title in ("by tool", "by mode", "by family", "bounced reads", "per day (UTC)"):
        assert title in text, text
    mode_table = text[text.index("by mode"):text.index("by family")]
    assert "-420" in mode_table  # the bounced map (-400) and the map that cost more than the file (-20)
    chart = [ln for ln in text.splitlines() if ln[:10] in (D1, D2, "2026-03-03", D3) and "│" in ln]
    assert [ln[:10] for ln in chart] == [D1, D2, "2026-03-03", D3]
    assert len({len(ln) for ln in chart}) == 1  # stable width
    bars = {ln[:10]: ln.split("│")[1] for ln in chart}
    assert all(len(b) == 40 for b in bars.values())
    assert "░" in bars[D2] and "█" in bars[D2] and bars["2026-03-03"].strip() == ""
    assert "▒" in bars[D1]  # the bounce: sent beyond raw
    total = text.strip().splitlines()[-1]
    assert total.startswith("total: 4 calls") and "saved 1,380" in total and "o200k, real token counts" in total
    assert "1 bounce (400 wasted)" in total

    by_agent = gain(db, "--by", "agent", "--by", "tool,mode", "--days", "2")
    assert "by agent" in by_agent.stdout and "by tool × mode" in by_agent.stdout
    assert "last 2 days up to 2026-03-04" in by_agent.stdout
    assert "by mode" not in by_agent.stdout
    two_day_chart = [ln for ln in by_agent.stdout.splitlines() if "│" in ln]
    assert [ln[:10] for ln in two_day_chart] == ["2026-03-03", D3]

    js = json.loads(gain(db, "--json", "--by", "agent", "--agent", "a").stdout)
    assert js["tokenizer"] == "o200k, real token counts"
    assert js["reports"][0]["by"] == ["agent"]
    assert js["reports"][0]["rows"][0]["group"] == {"agent": "a"}
    assert js["totals"]["saved_tokens"] == -400 and js["totals"]["bounces"] == 1
    assert js["bounced_files"] == [{"path": "src/app.py", "mode": "map", "bounces": 1, "wasted_tokens": 400}]
    assert [(d["day"], d["calls"]) for d in js["daily"]] == [(D1, 2), (D2, 0), ("2026-03-03", 0), (D3, 0)]

    bad = gain(db, "--by", "colour")
    assert bad.returncode == 2 and "SAVINGS_INVALID_DIMENSION" in bad.stderr
