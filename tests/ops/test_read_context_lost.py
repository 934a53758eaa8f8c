"""A conversation whose context was compacted or reset no longer holds what it was sent: after
``session.context_lost`` it gets content, never an "unchanged" stub, for what it read before,
and ``diff`` has no base. Other conversations keep their stubs; replay gives the same state."""

from __future__ import annotations

from pathlib import Path

import pytest

from leanctx.app import LeanCtx
from leanctx.commands.sessions import MarkContextLost
from leanctx.errors import InvalidInput
from leanctx.projections.deliveries import last_delivery

from .test_read_common import Reader, lc, project, reader  # noqa: F401


def _lose(lc: LeanCtx, agent: str = "agent-a", session: str = "s1", **kw: object) -> None:
    lc.bus.dispatch(MarkContextLost(**kw), actor=agent, session_id=session, project=None)


def _lose_in(lc: LeanCtx, project: Path, agent: str = "agent-a", session: str = "s1") -> None:
    lc.bus.dispatch(MarkContextLost(reason="compaction", call=7), actor=agent, session_id=session,
                    project=str(project))


def test_after_the_context_is_lost_a_reread_sends_the_content(reader: Reader, lc: LeanCtx, project: Path) -> None:
    first = reader.one("src/app.py", mode="signatures")
    assert reader.one("src/app.py", mode="signatures").stub  # before: the stub
    reader.one("src/app.py", mode="full", agent="agent-b", session="s2")
    _lose_in(lc, project)
    again = reader.one("src/app.py", mode="signatures")
    assert not again.stub and again.text == first.text and again.ref == first.ref  # F1 still names the path
    assert reader.one("src/app.py", mode="signatures").stub  # received again: stubs resume
    assert reader.one("src/app.py", mode="full", agent="agent-b", session="s2").stub  # others unaffected
    (ev,) = reader.events("session.context_lost")
    assert (ev["session_id"], ev["agent_id"], ev["reason"], ev["call"]) == ("s1", "agent-a", "compaction", 7)


def test_diff_has_no_base_after_the_context_is_lost(reader: Reader, lc: LeanCtx, project: Path) -> None:
    reader.one("src/app.py", mode="full")
    app = project / "src" / "app.py"
    app.write_text(app.read_text() + "\n# more\n")
    _lose_in(lc, project)
    d = reader.one("src/app.py", mode="diff")
    assert "class Store:" in d.text and "# more" in d.text  # the whole file, not a diff against a lost base


def test_replay_forgets_the_same_deliveries(reader: Reader, lc: LeanCtx, project: Path) -> None:
    reader.one("src/app.py", mode="map")
    reader.one("README.md", mode="full", agent="agent-b", session="s2")
    _lose_in(lc, project)
    reader.one("README.md", mode="full")
    conn = lc.store.read_connection()
    before = (last_delivery(conn, "agent-a", "s1", "src/app.py", "map", project=str(project)),
              last_delivery(conn, "agent-a", "s1", "README.md", "full", project=str(project)),
              last_delivery(conn, "agent-b", "s2", "README.md", "full", project=str(project)))
    assert before[0] is None and before[1] is not None and before[2] is not None
    lc.projections.rebuild("deliveries")
    conn = lc.store.read_connection()
    after = (last_delivery(conn, "agent-a", "s1", "src/app.py", "map", project=str(project)),
             last_delivery(conn, "agent-a", "s1", "README.md", "full", project=str(project)),
             last_delivery(conn, "agent-b", "s2", "README.md", "full", project=str(project)))
    assert after == before


@pytest.mark.parametrize(("kw", "code"), [({"reason": "nap"}, "SESSION_INVALID_REASON"),
                                          ({"call": 0}, "SESSION_INVALID_CALL")])
def test_bad_context_loss_is_refused_with_a_code(lc: LeanCtx, kw: dict, code: str) -> None:
    with pytest.raises(InvalidInput) as e:
        _lose(lc, **kw)
    assert e.value.code == code
