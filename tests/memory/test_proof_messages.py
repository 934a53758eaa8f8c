"""``proof verify`` names the right figures: HEAD_MISSING counts the events the log holds up to
the proof's head (not the live head), HEAD_MISMATCH never shows a hash for a head event that is
not there, and REPLAY_FAILED names the event (position and kind) the replay stopped at. Real
SQLite copies of a real log, tampered behind the store's back as an attacker would."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import apsw
import pytest

from leanctx import proof
from leanctx.app import LeanCtx
from leanctx.commands.chat import PostMessage
from leanctx.events.codec import canonical_bytes, chain_hash
from tests.memory.test_proof import T0, fill, verify

pytestmark = pytest.mark.timeout(120)


@pytest.fixture()
def later(tmp_path: Path, project: Path) -> tuple[Path, Path, int, int]:
    """(db, proof file, proof head, live head): a proof, then 4 more events in the log."""
    db = tmp_path / "events.db"
    with LeanCtx(db) as lc:
        fill(lc, project)
        doc = proof.build(lc, project_root=str(project))
        jp, _ = proof.write(doc, tmp_path / "out")
        for i in range(4):
            lc.bus.dispatch(PostMessage(title=f"later {i}", body="x"), actor="alice", project=str(project),
                            now=T0 + 50 + i)
        live = lc.store.head().position
    return db, jp, doc["head"]["position"], live


def tampered(db: Path, tmp_path: Path, sql: str, *args: Any) -> Path:
    copy = tmp_path / "tampered.db"
    shutil.copy(db, copy)
    conn = apsw.Connection(str(copy))
    conn.execute("DROP TRIGGER IF EXISTS events_no_delete")
    conn.execute("DROP TRIGGER IF EXISTS events_no_update")
    conn.execute(sql, args)
    conn.close()
    return copy


def by_code(rep: proof.VerifyReport, code: str) -> list[proof.Difference]:
    return [d for d in rep.differences if d.code == code]


def test_head_missing_counts_the_events_up_to_the_head(later: tuple[Path, Path, int, int], tmp_path: Path) -> None:
    db, jp, head, live = later
    copy = tampered(db, tmp_path, "DELETE FROM events WHERE position = 3")
    rep = verify(copy, jp.read_bytes())
    [d] = by_code(rep, "HEAD_MISSING")
    assert (d.expected, d.actual) == (head, head - 1)
    assert d.message == f"the proof's head is position {head}; the log holds {head - 1} events up to it, not {head}"
    assert str(live) not in d.message.split()  # the live head is no count of anything here
    assert by_code(rep, "CHAIN_BROKEN")[0].actual == 3
    # the head event itself is there, untouched: only the recomputed chain differs
    assert [d.message for d in by_code(rep, "HEAD_MISMATCH")] == ["the head hash is not what the log's content hashes to"]


def test_tail_cut_names_no_hash_for_an_absent_head(later: tuple[Path, Path, int, int], tmp_path: Path) -> None:
    db, jp, head, _ = later
    copy = tampered(db, tmp_path, "DELETE FROM events WHERE position > ?", head - 2)
    rep = verify(copy, jp.read_bytes())
    [missing] = by_code(rep, "HEAD_MISSING")
    assert (missing.expected, missing.actual) == (head, head - 2)
    assert missing.message.endswith(f"not {head} (it ends at position {head - 2})")
    [mm] = by_code(rep, "HEAD_MISMATCH")
    assert mm.actual is None and mm.expected == proof.parse(jp.read_bytes())[0]["head"]["hash"]
    assert mm.message.startswith(f"the log has no event at position {head} (its last event up to it is position "
                                 f"{head - 2}); ")
    assert "has hash" not in mm.message


def rechain(db: Path, pos: int, payload: bytes) -> None:
    """Replace the payload at ``pos`` and recompute the hash chain from there (an attacker with the code)."""
    conn = apsw.Connection(str(db))
    conn.execute("DROP TRIGGER IF EXISTS events_no_update")
    rows = [list(r) for r in conn.execute("SELECT * FROM events WHERE position >= ? ORDER BY position", (pos - 1,))]
    prev = rows[0][-1] if rows[0][0] == pos - 1 else "0" * 64
    for r in rows:
        if r[0] < pos:
            continue
        if r[0] == pos:
            r[14] = payload
        h = chain_hash(prev, canonical_bytes(tuple(r[:14]), bytes(r[14])))
        conn.execute("UPDATE events SET payload = ?, prev_hash = ?, hash = ? WHERE position = ?", (r[14], prev, h, r[0]))
        prev = h
    conn.close()


def test_replay_failed_names_the_undecodable_event(later: tuple[Path, Path, int, int], tmp_path: Path) -> None:
    db, jp, head, _ = later
    copy = tmp_path / "bad.db"
    shutil.copy(db, copy)
    with LeanCtx(copy) as lc:
        pos = next(e.position for e in lc.store.iter_all(0) if e.kind == "message.posted")
    rechain(copy, pos, b"not json at all")
    rep = verify(copy, jp.read_bytes())
    [d] = by_code(rep, "REPLAY_FAILED")
    assert d.actual == {"position": pos, "kind": "message.posted"}
    assert f"position {pos} (message.posted" in d.message and f"up to position {head}" in d.message


def test_replay_failed_names_the_event_a_projection_stopped_at(later: tuple[Path, Path, int, int],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure that does not name its event (here: a projection's own bug) is still attributed."""
    db, jp, _, _ = later
    with LeanCtx(db) as lc:
        pos = next(e.position for e in lc.store.iter_all(0) if e.kind == "task.claimed")
        victim = next(p for p in lc.projections.all.values() if "task.claimed" in p.kinds)
        real = victim.apply

        def apply(conn: Any, e: Any) -> None:
            if e.position == pos:
                raise KeyError("owner")
            real(conn, e)

        monkeypatch.setattr(victim, "apply", apply)
        rep = proof.verify(lc, jp.read_bytes())
    [d] = by_code(rep, "REPLAY_FAILED")
    assert d.actual == {"position": pos, "kind": "task.claimed"}
    assert f"event {pos} (task.claimed)" in d.message and "KeyError" in d.message
