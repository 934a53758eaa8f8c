"""The scent field: deposits, decay, exclusive claims, release, sync, replay, CLI, races."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from leanctx import clock
from leanctx.app import LeanCtx
from leanctx.commands.agents import Heartbeat, RegisterAgent
from leanctx.commands.bus import CommandContext
from leanctx.commands.scent import (
    ClaimScent,
    DepositScent,
    ReleaseScent,
    ScentMark,
    ScentRelease,
    claim_note,
    half_lives_from_env,
)
from leanctx.errors import CommandError, InvalidInput, LeanCtxError
from leanctx.events import TopicFilter
from leanctx.events.codec import payload_dict
from leanctx.projections.scent import (
    DEFAULT_HALF_LIVES,
    ScentView,
    claims_on,
    decay,
    normalize_target,
    scent_for,
    sync,
)
from tools.replay import replay

T0 = 1_800_000_000.0
LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))  # this interpreter's, not whatever PATH finds


@pytest.fixture
def app(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "e.db") as a:
        yield a


def do(app: LeanCtx, cmd: Any, actor: str | None, now: float, project: str | None = None) -> Any:
    return app.bus.dispatch(cmd, actor=actor, now=now, project=project).value


def refused(app: LeanCtx, cmd: Any, actor: str | None, now: float, code: str,
            project: str | None = None) -> LeanCtxError:
    """Expect a refusal with ``code``; check that only its error record was appended."""
    head = app.store.head().position
    with pytest.raises(LeanCtxError) as ei:
        app.bus.dispatch(cmd, actor=actor, now=now, project=project)
    assert ei.value.code == code, ei.value
    new = app.store.read_all(since=head)
    assert [e.kind for e in new] == ["tool.called"]
    rec = payload_dict(new[0].payload)
    assert (rec["outcome"], rec["error_code"]) == ("error", code)
    return ei.value


def field(app: LeanCtx, now: float, **kw: Any) -> list[ScentView]:
    return sync(app.projections.reader("scent"), now=now, **kw)


def claim(app: LeanCtx, target: str, actor: str, now: float, **kw: Any) -> ScentMark:
    return do(app, ClaimScent(target=target, **kw), actor, now)


# --- decay ---------------------------------------------------------------------------------


def test_decay_values_at_exact_ages_per_kind(app: LeanCtx) -> None:
    assert DEFAULT_HALF_LIVES == {"CLAIMED": 600, "HOT": 600, "STUCK": 1800, "DONE": 3600, "AVOID": 3600}
    for kind in DEFAULT_HALF_LIVES:
        do(app, DepositScent(target=f"t-{kind}", kind=kind), "a", T0)
    for kind, hl in DEFAULT_HALF_LIVES.items():
        for halvings in (0, 1, 2, 3):
            got = {v.kind: v for v in field(app, T0 + halvings * hl, floor=0.0)}[kind]
            assert got.intensity == 0.5**halvings, (kind, halvings)
            assert got.age_seconds == halvings * hl and got.half_life_seconds == hl
        half = {v.kind: v.intensity for v in field(app, T0 + hl / 2, floor=0.0)}[kind]
        assert half == pytest.approx(2**-0.5, abs=1e-6)
    # one CLAIMED half-life (600 s) is a different fraction of each kind's own half-life
    at_600 = {v.kind: v.intensity for v in field(app, T0 + 600, floor=0.0)}
    assert at_600 == {"CLAIMED": 0.5, "HOT": 0.5, "STUCK": round(0.5 ** (1 / 3), 6),
                      "DONE": round(0.5 ** (1 / 6), 6), "AVOID": round(0.5 ** (1 / 6), 6)}
    # the deposit's intensity scales the curve; a clock before the deposit means age 0
    do(app, DepositScent(target="big", kind="HOT", intensity=4.0), "a", T0)
    assert [v.intensity for v in field(app, T0 + 1200, target="big")] == [1.0]
    assert [v.intensity for v in field(app, T0 - 50, target="big")] == [4.0]
    assert decay(4.0, 1200, 600) == 1.0 and decay(1.0, -5, 600) == 1.0


def test_half_lives_are_configurable(app: LeanCtx, monkeypatch: pytest.MonkeyPatch) -> None:
    do(app, DepositScent(target="x", kind="HOT"), "a", T0)
    assert [v.intensity for v in field(app, T0 + 60, half_lives={"HOT": 60})] == [0.5]
    assert [v.intensity for v in field(app, T0 + 60, half_lives={"hot": 30})] == [0.25]
    with pytest.raises(InvalidInput) as ei:
        field(app, T0, half_lives={"HOT": 0})
    assert ei.value.code == "SCENT_INVALID_HALF_LIFE"
    # the command layer reads $LEAN_CTX_SCENT_HALF_LIFE_<KIND>: a 60 s claim lapses after 60 s
    monkeypatch.setenv("LEAN_CTX_SCENT_HALF_LIFE_CLAIMED", "60")
    assert half_lives_from_env()["CLAIMED"] == 60 and half_lives_from_env()["HOT"] == 600
    m = claim(app, "short", "a", T0)
    assert (m.half_life_seconds, m.active_for_seconds) == (60, 60)
    refused(app, ClaimScent(target="short"), "b", T0 + 60, "SCENT_ALREADY_CLAIMED")
    assert claim(app, "short", "b", T0 + 61).took_over_from == "a"
    monkeypatch.setenv("LEAN_CTX_SCENT_HALF_LIFE_STUCK", "soon")
    refused(app, ClaimScent(target="other"), "a", T0, "SCENT_INVALID_HALF_LIFE")
    assert half_lives_from_env({"LEAN_CTX_SCENT_HALF_LIFE_DONE": "7.5"})["DONE"] == 7.5


# --- claims --------------------------------------------------------------------------------


def test_claim_conflict_has_a_stable_code_and_says_who_and_when(app: LeanCtx) -> None:
    m = claim(app, "./src//a.py", "local-48121", T0)
    assert (m.target, m.kind, m.agent, m.refreshed, m.active_for_seconds) == ("src/a.py", "CLAIMED", "local-48121",
                                                                                False, 600)
    err = refused(app, ClaimScent(target="src/a.py"), "local-7", T0 + 150, "SCENT_ALREADY_CLAIMED")
    assert isinstance(err, CommandError)
    assert "already claimed by local-48121 (2m ago, still active)" in err.message
    assert err.details["agent"] == "local-48121" and err.details["active_for_seconds"] == 450
    # a registered agent is named by its registry name
    do(app, RegisterAgent(agent_type="cursor", role="dev", project_root="/p", agent_id="ag1"), "ag1", T0)
    claim(app, "src/b.py", "ag1", T0)
    do(app, Heartbeat(agent="ag1"), "ag1", T0 + 200)  # a registered holder holds while it heartbeats
    err = refused(app, DepositScent(target="src/b.py", kind="claimed"), "local-7", T0 + 240,
                  "SCENT_ALREADY_CLAIMED")  # a CLAIMED deposit is a claim: same exclusivity
    assert "already claimed by cursor-dev-1 (4m ago, still active)" in err.message
    deposited = app.store.read_all(filter=TopicFilter(kinds=("scent.deposited",)))
    assert [(e.actor, e.stream) for e in deposited] == [("local-48121", "scent:src/a.py"), ("ag1", "scent:src/b.py")]


def test_the_owner_refreshes_its_claim(app: LeanCtx) -> None:
    claim(app, "t1", "a", T0)
    m = claim(app, "t1", "a", T0 + 500, intensity=2.0)
    assert m.refreshed and m.intensity == 2.0
    assert len(app.store.read_all(filter=TopicFilter(kinds=("scent.deposited",)))) == 2  # a new event
    [c] = claims_on(app.projections.reader("scent"), "t1", now=T0 + 900)
    assert (c.age_seconds, c.active, c.active_for_seconds, c.claimed_since) == (400, True, 200, clock.iso(T0))
    err = refused(app, ClaimScent(target="t1"), "b", T0 + 900, "SCENT_ALREADY_CLAIMED")
    assert "(6m ago, still active)" in err.message  # the age restarted at the refresh
    [v] = field(app, T0 + 1100)
    assert (v.kind, v.agent, v.intensity, v.age_seconds, v.deposits, v.active) == ("CLAIMED", "a", 1.0, 600, 2, True)


def test_a_claim_becomes_takeable_once_it_decays_below_the_threshold(app: LeanCtx) -> None:
    claim(app, "t1", "a", T0)
    refused(app, ClaimScent(target="t1"), "b", T0 + 599, "SCENT_ALREADY_CLAIMED")
    refused(app, ClaimScent(target="t1"), "b", T0 + 600, "SCENT_ALREADY_CLAIMED")  # I = 0.5·I0: still active
    m = claim(app, "t1", "b", T0 + 600.5)
    assert m.took_over_from == "a" and not m.refreshed
    refused(app, ClaimScent(target="t1"), "a", T0 + 601, "SCENT_ALREADY_CLAIMED")
    view = {v.agent: v for v in field(app, T0 + 601)}
    assert view["b"].active and not view["a"].active and view["a"].intensity < 0.5
    # the threshold is relative to the deposit: a strong claim does not hold longer
    claim(app, "t2", "a", T0, intensity=8.0)
    assert claim(app, "t2", "b", T0 + 600.5).took_over_from == "a"


def test_release_rules(app: LeanCtx) -> None:
    refused(app, ReleaseScent(target="t1"), "a", T0, "SCENT_NOT_CLAIMED")
    claim(app, "t1", "a", T0)
    err = refused(app, ReleaseScent(target="t1"), "b", T0 + 60, "SCENT_NOT_OWNER")
    assert "claimed by a (1m ago, still active)" in err.message
    r = do(app, ReleaseScent(target="./t1"), "a", T0 + 120)
    assert r == ScentRelease("t1", "a", clock.iso(T0), 120.0, True)
    assert field(app, T0 + 120) == [] and scent_for(app.projections.reader("scent"), "t1", now=T0 + 120) is None
    refused(app, ReleaseScent(target="t1"), "a", T0 + 130, "SCENT_NOT_CLAIMED")
    claim(app, "t1", "b", T0 + 130)  # free again
    # someone else's lapsed claim: nothing to release; your own lapsed claim: released
    claim(app, "t2", "a", T0)
    refused(app, ReleaseScent(target="t2"), "b", T0 + 700, "SCENT_NOT_CLAIMED")
    assert do(app, ReleaseScent(target="t2"), "a", T0 + 700).was_active is False
    assert field(app, T0 + 700, target="t2") == []


def test_done_by_the_claimer_ends_its_claim(app: LeanCtx) -> None:
    claim(app, "t1", "a", T0)
    d = do(app, DepositScent(target="t1", kind="DONE"), "a", T0 + 60)
    assert (d.kind, d.ended_claim, d.half_life_seconds) == ("DONE", True, 3600)
    assert [(v.kind, v.agent) for v in field(app, T0 + 60)] == [("DONE", "a")]
    claim(app, "t1", "b", T0 + 61)
    # a DONE by someone else ends nothing
    assert do(app, DepositScent(target="t1", kind="DONE"), "c", T0 + 62).ended_claim is False
    refused(app, ClaimScent(target="t1"), "c", T0 + 63, "SCENT_ALREADY_CLAIMED")
    refused(app, ReleaseScent(target="t1"), "a", T0 + 64, "SCENT_NOT_OWNER")


# --- the field -----------------------------------------------------------------------------


def test_sync_orders_strongest_first_and_drops_marks_below_the_floor(app: LeanCtx) -> None:
    do(app, DepositScent(target="z.py", kind="HOT", intensity=3.0), "a", T0)
    do(app, DepositScent(target="b.py", kind="AVOID", intensity=2.0), "a", T0)
    for target, kind, agent in (("b.py", "HOT", "b"), ("a.py", "STUCK", "a"), ("b.py", "HOT", "a"),
                                ("a.py", "HOT", "a")):
        do(app, DepositScent(target=target, kind=kind), agent, T0)  # equal intensities
    do(app, DepositScent(target="old.py", kind="HOT"), "a", T0 - 2600)  # 0.0496 at T0: below the floor
    order = [(v.target, v.kind, v.agent, v.intensity) for v in field(app, T0)]
    assert order == [("z.py", "HOT", "a", 3.0), ("b.py", "AVOID", "a", 2.0), ("a.py", "HOT", "a", 1.0),
                     ("a.py", "STUCK", "a", 1.0), ("b.py", "HOT", "a", 1.0), ("b.py", "HOT", "b", 1.0)]
    # an hour later the HOT marks (10 min half-life) fell below 0.05; AVOID and STUCK remain
    later = [(v.target, v.kind, v.intensity) for v in field(app, T0 + 3600)]
    assert later == [("b.py", "AVOID", 1.0), ("a.py", "STUCK", 0.25)]
    assert [v.target for v in field(app, T0 + 3600, floor=0.04)] == ["b.py", "a.py", "z.py"]  # 3·2^-6
    assert [(v.target, v.kind) for v in field(app, T0, kinds=["stuck", "AVOID"])] == [("b.py", "AVOID"),
                                                                                      ("a.py", "STUCK")]
    with pytest.raises(InvalidInput) as ei:
        field(app, T0, kinds=["WARM"])
    assert ei.value.code == "SCENT_INVALID_KIND"
    # the same mark again replaces it (age restarts) instead of adding up
    do(app, DepositScent(target="z.py", kind="HOT", intensity=3.0), "a", T0 + 600)
    [z] = field(app, T0 + 600, target="z.py")
    assert (z.intensity, z.deposits, z.age_seconds) == (3.0, 2, 0)


def test_sync_is_scoped_by_project(app: LeanCtx) -> None:
    claim(app, "/p1/src/a.py", "a", T0)
    do(app, ClaimScent(target="/p1/src/a.py"), "a", T0, project="/p1")
    do(app, ClaimScent(target="src/a.py"), "b", T0, project="/p2")  # another project: no conflict
    assert [(v.project, v.target) for v in field(app, T0, project="/p1")] == [("/p1", "src/a.py")]
    assert [(v.project, v.target, v.agent) for v in field(app, T0)] == [
        ("", "/p1/src/a.py", "a"), ("/p1", "src/a.py", "a"), ("/p2", "src/a.py", "b")]
    refused(app, ClaimScent(target="src/a.py"), "b", T0 + 1, "SCENT_ALREADY_CLAIMED", project="/p1")


def test_targets_are_normalized_and_validated(app: LeanCtx) -> None:
    assert normalize_target("./src//a.py") == "src/a.py"
    assert normalize_target("  src/x/../a.py/ ") == "src/a.py"
    assert normalize_target("/root/proj/src/a.py", "/root/proj") == "src/a.py"
    assert normalize_target("/root/proj", "/root/proj/") == "."
    assert normalize_target("/root/project2/a.py", "/root/proj") == "/root/project2/a.py"
    assert normalize_target("//etc///passwd") == "/etc/passwd"
    assert normalize_target("task:general/t-12") == "task:general/t-12"
    do(app, ClaimScent(target="/root/proj/./src/a.py"), "a", T0, project="/root/proj")
    refused(app, ClaimScent(target="src//a.py"), "b", T0, "SCENT_ALREADY_CLAIMED", project="/root/proj")
    for bad in ("", "   ", "a\nb", "tab\there", "x\x00", "n\u2028l", "esc\x1b[31m", "y" * 513):
        refused(app, ClaimScent(target=bad), "a", T0, "SCENT_INVALID_TARGET")
    assert claim(app, "y" * 512, "a", T0).target == "y" * 512
    refused(app, DepositScent(target="t", kind="WARM"), "a", T0, "SCENT_INVALID_KIND")
    for bad_i in (0.0, -1.0, float("nan"), float("inf")):
        refused(app, DepositScent(target="t", kind="HOT", intensity=bad_i), "a", T0, "SCENT_INVALID_INTENSITY")
        refused(app, ClaimScent(target="t", intensity=bad_i), "a", T0, "SCENT_INVALID_INTENSITY")
    refused(app, ClaimScent(target="t"), None, T0, "SCENT_NO_AGENT")


def test_scent_for_names_the_active_claimer(app: LeanCtx) -> None:
    conn = app.projections.reader("scent")
    assert scent_for(conn, "src/a.py", now=T0) is None
    do(app, RegisterAgent(agent_type="cursor", role="dev", project_root="/p", agent_id="ag1"), "ag1", T0,
       project="/p")
    do(app, ClaimScent(target="src/a.py"), "ag1", T0, project="/p")
    do(app, Heartbeat(agent="ag1"), "ag1", T0 + 200, project="/p")  # a registered holder holds while it heartbeats
    c = scent_for(app.projections.reader("scent"), "/p/./src/a.py", now=T0 + 240, project="/p")
    assert c is not None and (c.agent, c.name, c.age_seconds) == ("ag1", "cursor-dev-1", 240)
    assert c.text == "claimed by cursor-dev-1, 4m ago"
    assert scent_for(app.projections.reader("scent"), "src/a.py", now=T0 + 240, project="/other") is None
    assert scent_for(app.projections.reader("scent"), "src/a.py", now=T0 + 601, project="/p") is None  # lapsed
    assert scent_for(app.projections.reader("scent"), "bad\x00", now=T0) is None
    # what another family's handler writes next to a read
    with app.store.transaction() as tx:
        ctx = CommandContext(tx, app.projections, "local-9", None, "/p", T0 + 240, clock.iso(T0 + 240), "corr")
        assert claim_note(ctx, "src/a.py") == "[scent: claimed by cursor-dev-1, 4m ago]"
        ctx.actor = "ag1"
        assert claim_note(ctx, "src/a.py") is None  # your own claim is no news


# --- replay --------------------------------------------------------------------------------


def test_replay_reproduces_the_field_digest_equal(app: LeanCtx) -> None:
    claim(app, "t1", "a", T0)
    claim(app, "t1", "a", T0 + 100)
    claim(app, "t2", "b", T0)
    claim(app, "t2", "c", T0 + 700)
    do(app, ReleaseScent(target="t2"), "c", T0 + 710)
    claim(app, "t3", "a", T0)
    do(app, DepositScent(target="t3", kind="DONE"), "a", T0 + 10)
    for i, kind in enumerate(("HOT", "STUCK", "AVOID", "HOT")):
        do(app, DepositScent(target=f"src/f{i % 2}.py", kind=kind, intensity=1.5), "b", T0 + i, project="/p")
    with pytest.raises(LeanCtxError):
        claim(app, "t1", "b", T0 + 200)
    before = (app.projections.digest("scent"), field(app, T0 + 800))
    app.projections.rebuild()
    assert (app.projections.digest("scent"), field(app, T0 + 800)) == before
    report = replay(app, verify=True)
    assert report.ok and report.chain_ok
    assert {p.name: p.match for p in report.projections}["scent"] is True
    assert all(p.match for p in report.projections)


# --- CLI -----------------------------------------------------------------------------------


def _cli(tmp_path: Path, agent: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LEAN_CTX_DB": str(tmp_path / "cli.db"), "LEAN_CTX_AGENT_ID": agent}
    for k in [k for k in env if k.startswith("LEAN_CTX_SCENT_")]:
        env.pop(k)
    return subprocess.run([LEAN_CTX, "--project", str(tmp_path), *args], check=False, capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=60)


def test_cli_claim_refusal_exit_2_and_json(tmp_path: Path) -> None:
    p = _cli(tmp_path, "local-48121", "agent", "claim", "./src//a.py", "--json")
    assert p.returncode == 0, p.stderr
    mine = json.loads(p.stdout)
    assert (mine["target"], mine["kind"], mine["agent"], mine["refreshed"]) == ("src/a.py", "CLAIMED",
                                                                                 "local-48121", False)
    p = _cli(tmp_path, "local-7", "agent", "claim", "src/a.py")
    assert p.returncode == 2 and p.stdout == ""
    assert re.match(r"error\[SCENT_ALREADY_CLAIMED\]: src/a\.py is already claimed by local-48121 "
                    r"\(\d+s ago, still active\)", p.stderr), p.stderr
    p = _cli(tmp_path, "local-7", "agent", "release", str(tmp_path / "src" / "a.py"), "--json")
    assert p.returncode == 2 and json.loads(p.stdout)["error"]["code"] == "SCENT_NOT_OWNER"
    p = _cli(tmp_path, "local-7", "agent", "deposit", "src/b.py", "--kind", "HOT", "--intensity", "2", "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["kind"] == "HOT"
    p = _cli(tmp_path, "local-7", "agent", "sync", "--json")
    rows = json.loads(p.stdout)
    assert [(r["target"], r["kind"], r["agent"], r["active"]) for r in rows] == [
        ("src/b.py", "HOT", "local-7", False), ("src/a.py", "CLAIMED", "local-48121", True)]
    assert rows[0]["intensity"] > 1.99 and rows[1]["project"] == str(tmp_path.resolve())
    p = _cli(tmp_path, "local-7", "agent", "sync")
    assert p.returncode == 0 and p.stdout.splitlines()[0].split() == ["TARGET", "KIND", "AGENT", "INTENSITY",
                                                                        "AGE", "STATE"]
    p = _cli(tmp_path, "local-48121", "agent", "release", "src/a.py")
    assert p.returncode == 0 and p.stdout == "released src/a.py (local-48121)\n"
    p = _cli(tmp_path, "local-7", "agent", "deposit", "x", "--kind", "WARM")
    assert p.returncode == 2 and p.stderr.startswith("error[SCENT_INVALID_KIND]:")


# --- a barrier race with real processes ----------------------------------------------------

WORKER = textwrap.dedent(
    """
    import sys, time
    from leanctx.app import LeanCtx
    from leanctx.commands.scent import ClaimScent
    from leanctx.errors import LeanCtxError

    db, actor = sys.argv[1], sys.argv[2]
    lc = LeanCtx(db)
    print("ready", flush=True)
    for line in sys.stdin:
        word, rnd, start = line.split()
        if word != "go":
            break
        start = float(start)
        while time.time() < start - 0.002:  # every racer waits for the same instant
            time.sleep(0.0005)
        while time.time() < start:
            pass
        try:
            lc.bus.dispatch(ClaimScent(target="race/" + rnd), actor=actor)
            out = "ok"
        except LeanCtxError as exc:
            out = exc.code
        print(rnd, out, flush=True)
    lc.close()
    """
)


@pytest.mark.timeout(180)
def test_barrier_race_8_processes_exactly_one_winner_per_round(tmp_path: Path) -> None:
    racers, rounds = 8, 100
    db = tmp_path / "race.db"
    LeanCtx(db).close()  # schema and projections exist before the racers open it
    script = tmp_path / "racer.py"
    script.write_text(WORKER)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_SCENT_")}
    errs = [(tmp_path / f"racer-{i}.err").open("w") for i in range(racers)]
    procs = [
        subprocess.Popen([sys.executable, str(script), str(db), f"racer-{i}"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=errs[i], text=True, bufsize=1, env=env)
        for i in range(racers)
    ]
    winners: list[str] = []
    try:
        for i, p in enumerate(procs):
            assert p.stdout is not None and p.stdout.readline().strip() == "ready", (tmp_path / f"racer-{i}.err"
                                                                                     ).read_text()
        for r in range(rounds):
            start = time.time() + 0.004  # the barrier: one start instant for all, per round
            for p in procs:
                assert p.stdin is not None
                p.stdin.write(f"go {r} {start}\n")
                p.stdin.flush()
            results = {}
            for i, p in enumerate(procs):
                line = p.stdout.readline().split()  # type: ignore[union-attr]
                assert line and line[0] == str(r), (tmp_path / f"racer-{i}.err").read_text()
                results[f"racer-{i}"] = line[1]
            ok = [a for a, out in results.items() if out == "ok"]
            assert len(ok) == 1, (r, results)
            assert sorted(results.values()) == ["SCENT_ALREADY_CLAIMED"] * (racers - 1) + ["ok"], (r, results)
            winners.append(ok[0])
        for p in procs:
            p.stdin.write("stop 0 0\n")  # type: ignore[union-attr]
            p.stdin.close()  # type: ignore[union-attr]
            assert p.wait(timeout=30) == 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            if p.stdout is not None:
                p.stdout.close()
        for f in errs:
            f.close()
    with LeanCtx(db) as lc:
        deposited = lc.store.read_all(filter=TopicFilter(kinds=("scent.deposited",)))
        assert [(e.stream, e.actor) for e in deposited] == sorted(
            ((f"scent:race/{r}", w) for r, w in enumerate(winners)), key=lambda x: int(x[0].split("/")[1]))
        calls = [payload_dict(e.payload) for e in lc.store.read_all(filter=TopicFilter(kinds=("tool.called",)))]
        assert sum(c["error_code"] == "SCENT_ALREADY_CLAIMED" for c in calls) == (racers - 1) * rounds
        live = field(lc, clock.now())
        assert sorted((v.target, v.agent) for v in live if v.active) == sorted(
            (f"race/{r}", w) for r, w in enumerate(winners))
        assert len({w for w in winners}) > 1  # several racers won some round: they really raced
