"""Stub safety: the "unchanged" stub only ever goes to the conversation that already has that
exact content in that mode; refs F1..Fn per session; the decision is exact across processes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from leanctx.context.tokens import count_tokens
from leanctx.projections.deliveries import last_delivery, latest_delivery, ref_for

from .test_read_common import LEAN_CTX, Reader, lc, project, reader  # noqa: F401


def test_same_conversation_same_content_same_mode_gets_the_stub(reader: Reader) -> None:
    first = reader.one("src/app.py", mode="signatures")
    assert not first.stub and first.ref == "F1"
    again = reader.one("src/app.py", mode="signatures")
    assert again.stub and again.text == f"F1=src/app.py [unchanged {first.lines} lines · fresh=true to re-read]"
    assert again.sent_tokens == count_tokens(again.text) <= 20
    assert again.content_hash == first.content_hash
    ev = reader.events("file.read")
    assert [e["stub"] for e in ev] == [False, True]
    assert ev[1]["sent_tokens"] == again.sent_tokens and ev[1]["raw_tokens"] == first.raw_tokens


def test_another_agent_never_gets_a_stub_for_a_file_only_agent_a_read(reader: Reader) -> None:
    reader.one("src/app.py", mode="full", agent="agent-a", session="s1")
    b = reader.one("src/app.py", mode="full", agent="agent-b", session="s1")  # same session id, other agent
    assert not b.stub and "class Store:" in b.text
    c = reader.one("src/app.py", mode="full", agent="agent-b", session="s9")
    assert not c.stub and "class Store:" in c.text
    assert reader.one("src/app.py", mode="full", agent="agent-a", session="s1").stub


def test_another_session_of_the_same_agent_never_gets_the_stub(reader: Reader) -> None:
    reader.one("src/app.py", mode="full", session="s1")
    s2 = reader.one("src/app.py", mode="full", session="s2")
    assert not s2.stub and "def handle_timeout" in s2.text


def test_a_changed_file_is_never_stubbed(reader: Reader, project: Path) -> None:
    app = project / "src" / "app.py"
    reader.one("src/app.py", mode="full")
    app.write_text(app.read_text() + "\n# more\n")
    changed = reader.one("src/app.py", mode="full")
    assert not changed.stub and "# more" in changed.text


def test_same_size_edit_with_mtime_kept_is_not_stubbed(reader: Reader, project: Path) -> None:
    app = project / "src" / "app.py"
    before = reader.one("src/app.py", mode="full")
    st = os.stat(app)
    data = app.read_bytes()
    i = data.index(b"timeout after")
    app.write_bytes(data[:i] + b"T" + data[i + 1:])  # one byte, same size
    os.utime(app, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime put back
    st2 = os.stat(app)
    assert (st2.st_size, st2.st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    after = reader.one("src/app.py", mode="full")
    assert not after.stub and "Timeout after" in after.text
    assert after.content_hash != before.content_hash


def test_a_touched_file_with_the_same_bytes_is_still_unchanged(reader: Reader, project: Path) -> None:
    app = project / "src" / "app.py"
    reader.one("src/app.py", mode="map")
    os.utime(app, (1, 1))
    assert reader.one("src/app.py", mode="map").stub


def test_the_mode_is_part_of_the_key(reader: Reader) -> None:
    assert not reader.one("src/app.py", mode="full").stub
    assert not reader.one("src/app.py", mode="signatures").stub
    assert not reader.one("src/app.py", mode="map").stub
    assert not reader.one("src/app.py", mode="lines:1-5").stub
    assert not reader.one("src/app.py", mode="lines:1-6").stub  # other lines: other content
    assert reader.one("src/app.py", mode="lines:1-5").stub
    assert reader.one("src/app.py", mode="signatures").stub
    assert reader.one("src/app.py", mode="full").stub
    # task views depend on their task text: the key carries its digest
    first = reader.one("src/app.py", mode="task", task="timeout")
    assert not first.stub and first.mode == "task"
    assert reader.one("src/app.py", mode="task", task="timeout").stub  # same task, same content
    assert not reader.one("src/app.py", mode="task", task="retry").stub  # another task: other lines
    assert reader.one("src/app.py", mode="task", task="timeout").stub


def test_auto_is_keyed_by_the_mode_it_resolved_to(reader: Reader) -> None:
    a = reader.one("src/app.py", mode="auto")
    assert a.mode == "full" and not a.stub  # a small file
    assert reader.one("src/app.py", mode="full").stub
    assert reader.one("src/app.py", mode="auto").stub


def test_fresh_bypasses_the_stub(reader: Reader) -> None:
    reader.one("src/app.py", mode="full")
    f = reader.one("src/app.py", mode="full", fresh=True)
    assert not f.stub and f.fresh and "class Store:" in f.text
    assert reader.events("file.read")[-1]["fresh"] is True


def test_no_session_never_gets_a_stub(reader: Reader) -> None:
    for _ in range(3):
        a = reader.one("src/app.py", mode="full", session=None)
        assert not a.stub and a.ref is None and a.text.startswith("src/app.py [full")
    for _ in range(2):
        assert not reader.one("src/app.py", mode="full", agent=None, session="s1").stub


def test_raw_reads_are_never_stubbed(reader: Reader) -> None:
    reader.one("src/app.py", mode="full")
    assert not reader.one("src/app.py", mode="full", raw=True).stub


def test_refs_are_per_session_and_stable(reader: Reader, project: Path) -> None:
    (project / "b.py").write_text("x = 1\n")
    a = reader(["src/app.py", "README.md"], mode="full")
    assert [x.ref for x in a] == ["F1", "F2"]
    b = reader(["b.py", "src/app.py"], mode="map")
    assert [x.ref for x in b] == ["F3", "F1"]
    assert reader.one("b.py", session="s2").ref == "F1"
    assert reader.one("README.md", agent="agent-b").ref == "F2"  # the session's ref, whoever reads
    conn = reader.lc.projections.reader("deliveries")
    assert ref_for(conn, "s1", "b.py", project=str(project)) == "F3"


def test_the_same_path_twice_in_one_call_is_answered_once(reader: Reader) -> None:
    a = reader(["src/app.py", "./src/app.py", "src//app.py"], mode="full")
    assert len(a) == 1


def test_deliveries_projection_rows(reader: Reader, project: Path) -> None:
    a = reader.one("src/app.py", mode="signatures")
    reader.one("src/app.py", mode="lines:2-3")
    conn = reader.lc.projections.reader("deliveries")
    d = last_delivery(conn, "agent-a", "s1", "src/app.py", "signatures", project=str(project))
    assert d is not None and d.content_hash == a.content_hash
    latest = latest_delivery(conn, "agent-a", "s1", "src/app.py", project=str(project))
    assert latest is not None and latest.mode == "lines:2-3"
    assert last_delivery(conn, "agent-b", "s1", "src/app.py", "signatures", project=str(project)) is None
    assert last_delivery(conn, "agent-a", None, "src/app.py", "signatures", project=str(project)) is None


def test_diff_against_what_this_conversation_received(reader: Reader, project: Path) -> None:
    app = project / "src" / "app.py"
    reader.one("src/app.py", mode="full")
    app.write_text(app.read_text().replace("return f\"timeout after {seconds}s\"", "return 'late'"))
    d = reader.one("src/app.py", mode="diff")
    assert d.mode == "diff" and not d.stub
    assert "+23     return 'late'" in d.text and "-23     return f\"timeout" in d.text
    assert d.sent_tokens < count_tokens(app.read_text())
    again = reader.one("src/app.py", mode="diff")
    assert again.stub  # nothing changed since the diff
    other = reader.one("src/app.py", mode="diff", session="s2")
    assert other.mode == "full" and "has not received this file before" in other.text and "class Store" in other.text
    none = reader.one("src/app.py", mode="diff", session=None)
    assert none.mode == "full" and "no conversation" in none.text
    fresh = reader.one("src/app.py", mode="diff", fresh=True)
    assert fresh.mode == "full" and not fresh.stub and "class Store" in fresh.text
    app.write_text(app.read_text().replace("def main() -> None:", "def main(argv: list[str]) -> None:"))
    auto = reader.one("src/app.py", mode="auto", intent="what changed since my last read")
    assert auto.mode == "diff" and auto.text.startswith("F1=src/app.py [auto→diff vs ")
    assert "+26 def main(argv: list[str]) -> None:" in auto.text


def test_two_processes_same_conversation_exactly_one_gets_the_content(tmp_path: Path, project: Path) -> None:
    db = tmp_path / "race.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_DB=str(db), LEAN_CTX_AGENT_ID="racer", LEAN_CTX_SESSION_ID="conv-1")
    env_b = {**env, "LEAN_CTX_SESSION_ID": "conv-2"}
    cmd = [LEAN_CTX, "--project", str(project), "read", "src/app.py", "--mode", "signatures", "--json"]
    procs = [subprocess.Popen(cmd, env=e, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for e in (env, env, env, env_b, env_b)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    got = [json.loads(o) for o, _ in outs]
    conv1 = [g["stub"] for g in got[:3]]
    conv2 = [g["stub"] for g in got[3:]]
    assert sorted(conv1) == [False, True, True]
    assert sorted(conv2) == [False, True]
    from leanctx.app import LeanCtx

    with LeanCtx(db) as lc:
        r = Reader(lc, project)
        ev = r.events("file.read")
        for session in ("conv-1", "conv-2"):
            mine = [e for e in ev if e["session_id"] == session]
            assert not mine[0]["stub"] and all(e["stub"] for e in mine[1:])  # content first, in log order


def _race(reader: Reader, first: dict, second: dict) -> tuple[list, list]:
    """Run read ``first`` up to its dispatch, let read ``second`` run whole and commit, then
    dispatch ``first``: what the first decides must account for the second."""
    bus = reader.lc.bus
    orig = bus.dispatch
    ahead: list = []

    def racing(cmd, **kw):  # type: ignore[no-untyped-def]
        bus.dispatch = orig  # type: ignore[method-assign]
        ahead.extend(reader(**second))
        return orig(cmd, **kw)

    bus.dispatch = racing  # type: ignore[method-assign]
    try:
        mine = reader(**first)
    finally:
        bus.dispatch = orig  # type: ignore[method-assign]
    return mine, ahead


def test_the_stub_decision_is_taken_inside_the_transaction(reader: Reader) -> None:
    req = {"paths": "src/app.py", "mode": "signatures"}
    mine, ahead = _race(reader, req, req)
    assert not ahead[0].stub  # it committed first
    assert mine[0].stub  # prepared as content before that commit, decided as a stub after it


def test_a_diff_whose_base_moved_meanwhile_sends_the_full_content(reader: Reader, project: Path) -> None:
    app = project / "src" / "app.py"
    reader.one("src/app.py", mode="full")
    app.write_text(app.read_text().replace("def main() -> None:", "def main(argv: list[str]) -> None:"))
    mine, ahead = _race(reader, {"paths": "src/app.py", "mode": "diff"}, {"paths": "src/app.py", "mode": "map"})
    assert ahead[0].mode == "map"
    assert mine[0].mode == "full" and "class Store:" in mine[0].text  # not a diff against a stale base
