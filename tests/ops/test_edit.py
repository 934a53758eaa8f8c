"""ctx_edit: exact replacement, the TOCTOU guard, the path jail, atomic writes, STUCK on refusal,
races between processes."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from leanctx.app import LeanCtx
from leanctx.commands.edit import EditFile
from leanctx.errors import LeanCtxError
from leanctx.events import NewEvent, TopicFilter
from leanctx.events.kinds.context import FileRead
from leanctx.ops.edit import edit_file
from leanctx.projections.file_versions import last_seen

T0 = 1_800_000_000.0


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    r = tmp_path / "proj"
    (r / "src").mkdir(parents=True)
    (r / "src" / "app.py").write_text("def main():\n    return 1\n\nvalue = 'a'\n")
    return r.resolve()


@pytest.fixture()
def lc(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "e.db") as app:
        yield app


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def read(lc: LeanCtx, root: Path, agent: str, rel: str, content_hash: str | None = None) -> None:
    """Simulate ``agent`` reading ``rel`` through ctx_read: the ``file.read`` event the read family appends."""
    h = content_hash or sha(root / rel)
    ev = FileRead(path=rel, mode="full", requested_mode="full", content_hash=h, lines=1, raw_tokens=1, sent_tokens=1)
    lc.store.append(f"session:{agent}", [NewEvent(event=ev, actor=agent, project=str(root))])


def edit(lc: LeanCtx, root: Path, agent: str | None, rel: str, old: str, new: str, **kw: Any) -> Any:
    return edit_file(lc, root, rel, old, new, actor=agent, now=T0, **kw)


def refused(lc: LeanCtx, root: Path, agent: str | None, rel: str, old: str, new: str, code: str,
            **kw: Any) -> LeanCtxError:
    with pytest.raises(LeanCtxError) as e:
        edit(lc, root, agent, rel, old, new, **kw)
    assert e.value.code == code, e.value
    return e.value


def kinds(lc: LeanCtx, *names: str) -> list[Any]:
    return list(lc.store.iter_all(0, TopicFilter(kinds=names)))


def stuck(lc: LeanCtx) -> list[tuple[str | None, str]]:
    return [(e.actor, e.data().target) for e in kinds(lc, "scent.deposited") if e.data().scent == "STUCK"]


# --- replacing ---------------------------------------------------------------------------------------

def test_edit_after_read_replaces_once_and_records_hashes(lc: LeanCtx, root: Path) -> None:
    f = root / "src" / "app.py"
    before = sha(f)
    read(lc, root, "A", "src/app.py")
    res = edit(lc, root, "A", "src/app.py", "return 1", "return 2", session_id=None)
    assert f.read_text() == "def main():\n    return 2\n\nvalue = 'a'\n"
    assert (res.path, res.replacements, res.first_line, res.read_before) == ("src/app.py", 1, 2, True)
    assert (res.before_hash, res.after_hash) == (before, sha(f))
    (ev,) = kinds(lc, "file.edited")
    d = ev.data()
    assert (d.path, d.before_hash, d.after_hash, d.replacements, ev.actor, ev.stream) == \
        ("src/app.py", before, sha(f), 1, "A", "edit:src/app.py")
    assert d.sent_tokens > 0 and res.text.startswith("edited src/app.py: 1 replacement")
    # the agent's own write counts as seen: a second edit needs no re-read
    edit(lc, root, "A", "src/app.py", "'a'", "'b'")
    assert last_seen(lc.store.read_connection(), project=str(root), agent="A", path="src/app.py").sha256 == sha(f)


def test_no_match_ambiguous_and_all(lc: LeanCtx, root: Path) -> None:
    f = root / "x.txt"
    f.write_text("aaa\nfoo foo foo\n")
    read(lc, root, "A", "x.txt")
    e = refused(lc, root, "A", "x.txt", "bar", "baz", "EDIT_NO_MATCH")
    assert "bar" not in e.message  # texts never reach messages (they are recorded in the log)
    e = refused(lc, root, "A", "x.txt", "foo", "baz", "EDIT_AMBIGUOUS")
    assert e.details["occurrences"] == 3 and "--all" in e.message
    refused(lc, root, "A", "x.txt", "aa", "b", "EDIT_AMBIGUOUS")  # overlapping occurrences count
    assert f.read_text() == "aaa\nfoo foo foo\n"
    res = edit(lc, root, "A", "x.txt", "foo", "baz", replace_all=True)
    assert res.replacements == 3 and f.read_text() == "aaa\nbaz baz baz\n"
    res = edit(lc, root, "A", "x.txt", "aa", "b", replace_all=True)
    assert res.replacements == 1 and f.read_text() == "ba\nbaz baz baz\n"
    edit(lc, root, "A", "x.txt", "ba\n", "")  # deleting text is an edit like any other
    assert f.read_text() == "baz baz baz\n"


@pytest.mark.parametrize("old,new,code", [("", "x", "EDIT_EMPTY_OLD"), ("same", "same", "EDIT_NOOP"),
                                          ("\udcff", "x", "EDIT_INVALID_TEXT")])
def test_bad_input(lc: LeanCtx, root: Path, old: str, new: str, code: str) -> None:
    read(lc, root, "A", "src/app.py")
    refused(lc, root, "A", "src/app.py", old, new, code)
    assert stuck(lc) == []  # bad input is not being stuck on the file


def test_non_text_missing_and_agentless(lc: LeanCtx, root: Path) -> None:
    (root / "bin.dat").write_bytes(b"ab\0cd")
    (root / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    read(lc, root, "A", "bin.dat")
    read(lc, root, "A", "latin.txt")
    refused(lc, root, "A", "bin.dat", "ab", "xy", "EDIT_BINARY")
    refused(lc, root, "A", "latin.txt", "caf", "xy", "EDIT_NOT_TEXT")
    refused(lc, root, "A", "nope.txt", "a", "b", "EDIT_FILE_NOT_FOUND")
    refused(lc, root, "A", "src", "a", "b", "EDIT_NOT_A_FILE")
    refused(lc, root, None, "src/app.py", "return 1", "return 2", "EDIT_NO_AGENT")


# --- the TOCTOU guard ----------------------------------------------------------------------------------

def test_an_unread_file_is_refused_unless_allowed(lc: LeanCtx, root: Path) -> None:
    f = root / "src" / "app.py"
    before = f.read_bytes()
    e = refused(lc, root, "A", "src/app.py", "return 1", "return 2", "EDIT_NOT_READ")
    assert "--allow-unread" in e.message and "allow_unread=true" in e.message and "ctx_read" in e.message
    assert e.details["stuck_deposited"] is True
    assert f.read_bytes() == before
    assert stuck(lc) == [("A", "src/app.py")]
    (call,) = [c for c in kinds(lc, "tool.called") if c.data().command == "file.edit"]
    assert (call.data().outcome, call.data().error_code) == ("error", "EDIT_NOT_READ")
    (dep,) = [c for c in kinds(lc, "scent.deposited")]
    assert dep.correlation_id == call.correlation_id  # one lineage: refusal and STUCK mark
    res = edit(lc, root, "A", "src/app.py", "return 1", "return 2", allow_unread=True)
    assert res.read_before is False and f.read_text().count("return 2") == 1


def test_a_file_changed_by_another_agent_is_stale(lc: LeanCtx, root: Path) -> None:
    f = root / "src" / "app.py"
    read(lc, root, "A", "src/app.py")
    read(lc, root, "B", "src/app.py")
    edit(lc, root, "B", "src/app.py", "return 1", "return 2")
    after_b = f.read_bytes()
    e = refused(lc, root, "A", "src/app.py", "'a'", "'z'", "EDIT_STALE_READ")
    assert "edited by B" in e.message and e.details["current_hash"] == sha(f)
    assert f.read_bytes() == after_b
    # allow_unread does not excuse a stale read
    refused(lc, root, "A", "src/app.py", "'a'", "'z'", "EDIT_STALE_READ", allow_unread=True)
    assert stuck(lc) == [("A", "src/app.py")] * 2  # one STUCK deposit per refusal
    # reading again clears it
    read(lc, root, "A", "src/app.py")
    edit(lc, root, "A", "src/app.py", "'a'", "'z'")
    assert f.read_text() == "def main():\n    return 2\n\nvalue = 'z'\n"


def test_a_file_changed_outside_lean_ctx_is_stale(lc: LeanCtx, root: Path) -> None:
    f = root / "src" / "app.py"
    read(lc, root, "A", "src/app.py")
    f.write_text(f.read_text() + "# changed in an editor\n")
    refused(lc, root, "A", "src/app.py", "return 1", "return 2", "EDIT_STALE_READ")
    assert "return 1" in f.read_text()


def test_reads_are_per_project(lc: LeanCtx, root: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    (other / "src").mkdir(parents=True)
    (other / "src" / "app.py").write_bytes((root / "src" / "app.py").read_bytes())
    read(lc, other.resolve(), "A", "src/app.py")
    refused(lc, root, "A", "src/app.py", "return 1", "return 2", "EDIT_NOT_READ")


def test_file_versions_replay_to_the_same_rows(lc: LeanCtx, root: Path) -> None:
    read(lc, root, "A", "src/app.py")
    read(lc, root, "B", "src/app.py")
    edit(lc, root, "A", "src/app.py", "return 1", "return 2")
    live = lc.projections.digest("file_versions")
    lc.projections.rebuild("file_versions")
    assert lc.projections.digest("file_versions") == live
    rows = lc.store.read_connection().execute(
        "SELECT agent, source FROM file_versions ORDER BY agent").fetchall()
    assert rows == [("A", "edited"), ("B", "read")]


# --- the path jail ---------------------------------------------------------------------------------

@pytest.fixture()
def outside(tmp_path: Path) -> Path:
    o = tmp_path / "outside"
    o.mkdir()
    (o / "secret.txt").write_text("return 1\n")
    return o


def jail_corpus(root: Path, outside: Path) -> list[str]:
    (root / "link-out.txt").symlink_to(outside / "secret.txt")
    (root / "dir-out").symlink_to(outside)
    (root / "dangling").symlink_to(outside / "nope.txt")
    return ["../outside/secret.txt", str(outside / "secret.txt"), "src/../../outside/secret.txt", "..",
            "link-out.txt", "dir-out/secret.txt", "dangling", "/etc/hostname", "src/../../../etc/passwd",
            str(root) + "/../outside/secret.txt"]


def test_paths_leaving_the_project_are_refused(lc: LeanCtx, root: Path, outside: Path) -> None:
    for bad in jail_corpus(root, outside):
        read(lc, root, "A", bad.lstrip("/"), content_hash=sha(outside / "secret.txt"))
        e = refused(lc, root, "A", bad, "return 1", "return 2", "EDIT_PATH_OUTSIDE_PROJECT", allow_unread=True)
        assert "stuck_deposited" not in e.details
    assert (outside / "secret.txt").read_text() == "return 1\n"
    assert stuck(lc) == [] and kinds(lc, "file.edited") == []
    codes = [c.data().error_code for c in kinds(lc, "tool.called") if c.data().command == "file.edit"]
    assert codes == ["EDIT_PATH_OUTSIDE_PROJECT"] * 10  # every attempt is on record
    # the handler applies the jail itself, whoever dispatches
    with pytest.raises(LeanCtxError) as e:
        lc.bus.dispatch(EditFile(path="../outside/secret.txt", old="return 1", new="x", allow_unread=True),
                        actor="A", project=str(root))
    assert e.value.code == "EDIT_PATH_OUTSIDE_PROJECT"


def test_symlinks_inside_the_project_edit_the_real_file(lc: LeanCtx, root: Path) -> None:
    (root / "alias.py").symlink_to(root / "src" / "app.py")
    read(lc, root, "A", "src/app.py")
    res = edit(lc, root, "A", "alias.py", "return 1", "return 2")  # one file, one name
    assert res.path == "src/app.py" and (root / "alias.py").is_symlink()
    assert "return 2" in (root / "src" / "app.py").read_text()
    assert edit(lc, root, "A", str(root / "src" / "app.py"), "return 2", "return 3").path == "src/app.py"


# --- atomicity ----------------------------------------------------------------------------------------

def test_writes_are_atomic_and_keep_the_mode(lc: LeanCtx, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = root / "src" / "app.py"
    os.chmod(f, 0o640)
    read(lc, root, "A", "src/app.py")
    edit(lc, root, "A", "src/app.py", "return 1", "return 2")
    assert oct(f.stat().st_mode & 0o7777) == oct(0o640)
    assert sorted(os.listdir(root / "src")) == ["app.py"]
    # a failure at the last step leaves the file whole, no temp file, and no event
    before = f.read_bytes()

    def boom(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        edit(lc, root, "A", "src/app.py", "return 2", "return 3")
    monkeypatch.undo()
    assert f.read_bytes() == before and sorted(os.listdir(root / "src")) == ["app.py"]
    assert len(kinds(lc, "file.edited")) == 1
    calls = [c.data() for c in kinds(lc, "tool.called") if c.data().command == "file.edit"]
    assert calls[-1].error_code == "INTERNAL_ERROR"


def test_texts_never_reach_the_log(lc: LeanCtx, root: Path, tmp_path: Path) -> None:
    read(lc, root, "A", "src/app.py")
    old_marker, new_marker = "value = 'a'", "NEW_MARKER_7f3a9c_never_logged"
    refused(lc, root, "A", "src/app.py", "OLD_MARKER_absent_91b2", new_marker, "EDIT_NO_MATCH")
    edit(lc, root, "A", "src/app.py", old_marker, new_marker, idempotency_key="k1")
    lc.store.index_fts()
    lc.close()
    data = b"".join(p.read_bytes() for p in tmp_path.glob("e.db*"))
    assert b"NEW_MARKER_7f3a9c" not in data and b"OLD_MARKER_absent" not in data


# --- races between processes ------------------------------------------------------------------------

RACERS = 4
ROUNDS = 3


def _racer(db: str, root: str, k: int, barrier: Any, results: Any) -> None:
    from leanctx.app import LeanCtx as App
    from leanctx.errors import LeanCtxError as Err
    from leanctx.ops.edit import edit_file as do_edit

    out = []
    with App(db) as app:
        for r in range(ROUNDS):
            barrier.wait(timeout=120)
            try:
                do_edit(app, root, f"round{r}.txt", f"line {k}\n", f"line {k} edited by racer-{k}\n",
                        actor=f"racer-{k}")
                out.append("ok")
            except Err as exc:
                out.append(exc.code)
    results.put((k, out))


def test_concurrent_edits_from_processes_exactly_one_wins(tmp_path: Path, root: Path) -> None:
    db = str(tmp_path / "race.db")
    with LeanCtx(db) as app:
        for r in range(ROUNDS):
            f = root / f"round{r}.txt"
            f.write_text("".join(f"line {k}\n" for k in range(RACERS)))
            for k in range(RACERS):  # every racer read the same version
                read(app, root, f"racer-{k}", f.name)
    mp = multiprocessing.get_context("spawn")
    barrier = mp.Barrier(RACERS)
    results = mp.Queue()
    procs = [mp.Process(target=_racer, args=(db, str(root), k, barrier, results)) for k in range(RACERS)]
    for p in procs:
        p.start()
    got = dict(results.get(timeout=240) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    with LeanCtx(db) as app:
        edited = [e for e in kinds(app, "file.edited")]
        assert len(edited) == ROUNDS
        for r in range(ROUNDS):
            codes = [got[k][r] for k in range(RACERS)]
            assert codes.count("ok") == 1 and codes.count("EDIT_STALE_READ") == RACERS - 1, (r, codes)
            w = codes.index("ok")
            text = (root / f"round{r}.txt").read_text()
            assert text.count("edited by") == 1 and f"edited by racer-{w}" in text  # no lost or mixed write
            (ev,) = [e for e in edited if e.data().path == f"round{r}.txt"]
            assert ev.actor == f"racer-{w}" and ev.data().after_hash == sha(root / f"round{r}.txt")
        losers = {a for a, _ in stuck(app)}
        assert len(losers) >= 1 and all(a and a.startswith("racer-") for a in losers)
        assert app.store.verify().ok
