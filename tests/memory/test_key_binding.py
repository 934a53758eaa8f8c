"""Which key speaks for an agent id: the one recorded for its current registration.

Re-registering an id never adds a signer that importers trust for it (a rejoin from another data
dir, or anyone else naming the id, registers without recording its key: ``AGENT_KEY_MISMATCH``),
and deregistering ends the binding, so a key of an earlier registration no longer speaks for new
work once the id registers again with another key — for importers with another data dir, and for
the data dir that still holds the old key alike; a handoff the log recorded while that key was
bound still imports (``leanctx.handoff_trust``). An id that is not a safe key file name registers
without a key, and a key left behind by a refused registration is adopted by the next one.

Every step runs in this process with ``LEAN_CTX_HOME`` switched between data dirs: ``home-a``
is the agent's own, ``home-x`` another one (another machine, or someone naming the id), and
``home-b`` the importer's, which holds no key of ``a``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from leanctx import keys
from leanctx.app import LeanCtx
from leanctx.commands.agents import AGENT_KEY_MISMATCH, Deregister, RegisterAgent
from leanctx.commands.handoff import CreateHandoff, ImportHandoff
from leanctx.commands.sessions import SetTask
from leanctx.errors import LeanCtxError
from leanctx.events import TopicFilter

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "events.db") as a:
        yield a


class Homes:
    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root, self.mp = tmp_path, monkeypatch

    def use(self, name: str) -> Path:
        home = self.root / f"home-{name}"
        self.mp.setenv("LEAN_CTX_HOME", str(home))
        return home


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Homes:
    return Homes(tmp_path, monkeypatch)


def register(app: LeanCtx, agent_id: str) -> Any:
    return app.bus.dispatch(RegisterAgent(agent_type="claude", agent_id=agent_id, project_root="/p"),
                            actor=agent_id, project="/p").value


def handoff(app: LeanCtx, agent: str, task: str) -> str:
    app.bus.dispatch(SetTask(task=task), actor=agent, session_id=f"s-{agent}", project="/p")
    return app.bus.dispatch(CreateHandoff(), actor=agent, session_id=f"s-{agent}", project="/p").value.bundle


def import_(app: LeanCtx, bundle: str, importer: str = "b") -> Any:
    return app.bus.dispatch(ImportHandoff(bundle=bundle, apply_session=True), actor=importer,
                            session_id=f"s-{importer}", project="/p").value


def refused(app: LeanCtx, bundle: str, importer: str = "b") -> LeanCtxError:
    head = app.store.head().position
    with pytest.raises(LeanCtxError) as ei:
        import_(app, bundle, importer)
    assert [e.kind for e in app.store.read_all(head)] == ["tool.called"]  # the refusal alone
    return ei.value


def recorded(app: LeanCtx, agent_id: str) -> list[str | None]:
    return [e.to_dict()["payload"]["fingerprint"]
            for e in app.store.read_all(0, filter=TopicFilter(kinds=("agent.registered",)))
            if e.stream == f"agent:{agent_id}"]


def test_a_rejoin_with_another_key_does_not_make_that_key_trusted(app: LeanCtx, homes: Homes) -> None:
    homes.use("a")
    first = register(app, "a")
    genuine = handoff(app, "a", "the real work")
    homes.use("x")  # another data dir rejoins as "a": it gets a key of its own there, not recorded
    again = register(app, "a")
    assert again.rejoined and again.key_created and again.key_fingerprint is None
    assert again.key_warning.startswith(f"{AGENT_KEY_MISMATCH}: ") and first.key_fingerprint in again.key_warning
    assert recorded(app, "a") == [first.key_fingerprint, None]
    forged = handoff(app, "a", "work of someone else")  # signed with home-x's key for "a"
    homes.use("b")
    err = refused(app, forged)
    assert err.code == keys.KEY_UNTRUSTED and first.key_fingerprint in err.message
    assert import_(app, genuine).task == "the real work"  # the recorded key still speaks for a
    # nor does home-x trust its own key for a over the one the log recorded
    homes.use("x")
    assert refused(app, forged, importer="c").code == keys.KEY_UNTRUSTED
    assert import_(app, genuine, importer="c").signer == "a"
    # the agent itself rejoining from its own data dir keeps its recorded key, with no warning
    homes.use("a")
    back = register(app, "a")
    assert (back.key_fingerprint, back.key_warning) == (first.key_fingerprint, None)


def test_after_deregistering_the_old_key_speaks_only_for_handoffs_made_while_it_was_bound(
        app: LeanCtx, homes: Homes) -> None:
    homes.use("a")
    first = register(app, "a")
    old = handoff(app, "a", "before leaving")
    app.bus.dispatch(Deregister(agent="a"), actor="a")
    homes.use("b")
    v = import_(app, old)  # hand off, then leave: the log's handoff.created of it vouches for it
    assert (v.task, v.signer, v.sender_left) == ("before leaving", "a", True)
    homes.use("x")  # the id registers again, from another data dir: its key is recorded now
    new = register(app, "a")
    assert new.key_fingerprint not in (None, first.key_fingerprint) and new.key_warning is None
    assert recorded(app, "a") == [first.key_fingerprint, new.key_fingerprint]
    fresh = handoff(app, "a", "after rejoining")
    homes.use("b")
    v = import_(app, fresh)
    assert (v.task, v.trusted_by) == ("after rejoining", None)  # the current key, as before
    v = import_(app, old)  # the rejoin does not undo a handoff made under the earlier binding
    assert (v.task, v.fingerprint, v.sender_left) == ("before leaving", first.key_fingerprint, False)
    homes.use("a")  # but the old key speaks for no new work, not even for the data dir that holds it
    assert (homes.root / "home-a" / "keys" / "a.key").exists()
    stale = handoff(app, "a", "old key, new work")
    err = refused(app, stale, importer="c")
    assert err.code == keys.KEY_UNTRUSTED and new.key_fingerprint in err.message
    homes.use("b")
    assert refused(app, stale).code == keys.KEY_UNTRUSTED
    # the same data dir registering again after leaving binds its key again
    homes.use("a")
    app.bus.dispatch(Deregister(agent="a"), actor="a")
    assert register(app, "a").key_fingerprint == first.key_fingerprint
    homes.use("b")
    assert import_(app, old).task == "before leaving"
    v = import_(app, fresh)  # made while the other key was bound: the log still vouches for it
    assert (v.task, v.fingerprint) == ("after rejoining", new.key_fingerprint) and v.trusted_by is not None


def test_an_id_that_is_not_a_key_file_name_registers_without_a_key(app: LeanCtx, homes: Homes) -> None:
    home = homes.use("a")
    r = register(app, "a..b")  # a valid agent id; as a file name it would hold ".."
    assert r.agent_id == "a..b" and r.key_fingerprint is None and r.key_warning.startswith("KEY_INVALID_ID: ")
    assert recorded(app, "a..b") == [None]
    assert not (home / "keys").exists() or not any((home / "keys").iterdir())
    homes.use("b")
    with pytest.raises(LeanCtxError) as ei:  # and it cannot sign a handoff either
        handoff(app, "a..b", "anything")
    assert ei.value.code == keys.KEY_INVALID_ID


def test_a_key_made_by_a_refused_registration_is_adopted_by_the_next(app: LeanCtx, homes: Homes,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from leanctx.commands import agents
    from leanctx.errors import CommandError

    home = homes.use("a")
    real = agents.agent_key

    def then_refused(agent_id: str) -> Any:
        real(agent_id)  # the key file is written inside the transaction...
        raise CommandError("REFUSED_FOR_THE_TEST", "the transaction is refused after the key was written")

    monkeypatch.setattr(agents, "agent_key", then_refused)
    head = app.store.head().position
    with pytest.raises(LeanCtxError):
        register(app, "a")
    assert [e.kind for e in app.store.read_all(head)] == ["tool.called"]  # ...and nothing was registered
    seed = (home / "keys" / "a.key").read_bytes()
    monkeypatch.setattr(agents, "agent_key", real)
    r = register(app, "a")
    assert not r.key_created and (home / "keys" / "a.key").read_bytes() == seed
    assert recorded(app, "a") == [r.key_fingerprint] == [keys.fingerprint(keys.public_key("a"))]
