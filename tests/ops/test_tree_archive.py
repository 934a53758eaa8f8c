"""A capped tree answer keeps its rest: every surface archives the whole listing beside the log
(``ops.tree.archived_tree``) and the notice names the ``lean-ctx expand ID --lines N-M`` that
continues it, exactly; the notice never sends the agent back to the folder it just listed; the
cap counts with the caller's encoding (Gemini: cl100k × 1.1), on the CLI through
``$LEAN_CTX_MODEL``. The archive is recorded (``tree.record``: ``archive.created`` with source
``tree``, its figures those of the archived bytes, once per archive) as the caller on the CLI,
HTTP and MCP, only for a capped answer, and an expansion of it is then charged to ``tree``.
Real SQLite logs, real archives, the real CLI, a real HTTP server and MCP client."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from api.test_http_common import Api, make_server  # noqa: F401
from api.test_mcp import Transport, _call, anyio_backend, transport  # noqa: F401

from leanctx.app import LeanCtx
from leanctx.archive import ArchiveStore
from leanctx.commands.tree import RecordTree
from leanctx.context.tokens import count_tokens
from leanctx.errors import InvalidInput
from leanctx.ops.cap import ANSWER_CAP_TOKENS
from leanctx.ops.expand import expand
from leanctx.ops.tree import TreeEntry, _next_folder, archived_tree, tree
from leanctx.projections import savings

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
GEMINI, O200K = "cl100k_base*1.1", "o200k_base"
_NEXT = re.compile(r"lean-ctx expand (A[0-9a-f]{16}) --lines (\d+)-(\d+)")

pytestmark = pytest.mark.timeout(240)


@pytest.fixture()
def lc(tmp_path: Path):  # type: ignore[no-untyped-def]
    app = LeanCtx(tmp_path / "data" / "e.db")
    yield app
    app.close()


def _big(root: Path, packages: int = 3, files: int = 1200) -> None:
    for d in range(packages):
        folder = root / f"package_{d}" / "a_rather_long_module_directory_name"
        folder.mkdir(parents=True)
        for i in range(files):
            (folder / f"some_rather_long_file_name_number_{i:04}_with_a_suffix.py").write_text("")


def _flat(root: Path, n: int = 2500) -> None:
    """One folder holding only files, with names that cost many tokens."""
    folder = root / "cjk"
    folder.mkdir(parents=True)
    for i in range(n):
        (folder / f"文件名称很长的测试数据_{i:04}_説明書き_한국어.txt").write_text("")


def _rest_by_expanding(lc: LeanCtx, notice: str) -> list[str]:
    """Follow the notice (and the notices of the expansions) to the end of the archive; the
    lines come back numbered from the first line not sent."""
    m = _NEXT.search(notice)
    assert m, notice
    aid, start, last = m.group(1), int(m.group(2)), int(m.group(3))
    first = start
    got: list[str] = []
    while True:
        e = expand(lc, aid, lines=f"{first}-{last}")
        assert e.sent_tokens <= ANSWER_CAP_TOKENS
        body = e.text.split("\n")
        nxt = None
        if e.capped:
            body, nxt = body[:-1], _NEXT.search(body[-1])
            assert nxt and nxt.group(1) == aid
        for ln in body:
            n, _, text = ln.partition(":")
            assert int(n) == start + len(got)
            got.append(text)
        if nxt is None:
            assert start + len(got) - 1 == last
            return got
        first = int(nxt.group(2))


def test_a_capped_listing_is_archived_and_the_notice_continues_it_exactly(tmp_path: Path, lc: LeanCtx) -> None:
    root = tmp_path / "proj"
    _big(root)
    whole = tree(root, depth=5, max_entries=2000, cap_tokens=10**6).text.rstrip("\n").split("\n")
    t = archived_tree(lc.db, root, depth=5, max_entries=2000)
    assert t.capped and t.archive_id and t.omitted_lines > 0
    sent = t.text.rstrip("\n").split("\n")
    notice = sent[-1]
    m = _NEXT.search(notice)
    assert m and m.group(1) == t.archive_id and int(m.group(3)) == len(whole)
    assert int(m.group(2)) == len(sent)  # the first line not sent: the notice took its place
    assert ArchiveStore.beside(lc.db).get(t.archive_id).removesuffix("\n").split("\n") == whole
    assert sent[:-1] + _rest_by_expanding(lc, notice) == whole
    assert t.omitted_lines == len(whole) - (len(sent) - 1)


def test_archived_tree_neither_creates_the_log_nor_archives_an_answer_that_fits(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    _big(root, packages=1, files=5)
    db = tmp_path / "data" / "never.db"
    t = archived_tree(db, root, depth=5)
    assert not t.capped and t.archive_id is None and t.omitted_lines == 0
    assert not (tmp_path / "data").exists()
    _flat(root, 2500)
    capped = archived_tree(db, root, "cjk", max_entries=5000)
    assert capped.capped and (tmp_path / "data" / "archives" / f"{capped.archive_id}.txt").is_file()
    assert not db.exists()


def test_the_notice_never_names_the_folder_just_listed(tmp_path: Path, lc: LeanCtx) -> None:
    root = tmp_path / "proj"
    _flat(root)
    plain = tree(root, "cjk", max_entries=5000)
    notice = plain.text.rstrip("\n").split("\n")[-1]
    assert plain.capped and notice.startswith("[… capped at 20,000 tokens: ")
    assert "lean-ctx tree cjk" not in notice and plain.next_path is None  # following it would loop
    assert "smaller depth or max entries" in notice
    kept = archived_tree(lc.db, root, "cjk", max_entries=5000)
    notice = kept.text.rstrip("\n").split("\n")[-1]
    assert "lean-ctx tree cjk" not in notice and _NEXT.search(notice)
    whole = tree(root, "cjk", max_entries=5000, cap_tokens=10**6).text.rstrip("\n").split("\n")
    assert kept.text.rstrip("\n").split("\n")[:-1] + _rest_by_expanding(lc, notice) == whole


def test_the_folder_to_list_next() -> None:
    assert _next_folder(TreeEntry("cjk/a.txt", "file", 0), "cjk") is None
    assert _next_folder(TreeEntry("a.txt", "file", 0), ".") is None
    assert _next_folder(TreeEntry("cjk", "more", 0), "cjk") is None  # the rest of the listed folder
    assert _next_folder(TreeEntry("src/sub", "more", 1), ".") == "src/sub"
    assert _next_folder(TreeEntry("src/sub", "dir", 1), ".") == "src/sub"
    assert _next_folder(TreeEntry("src/sub/x.py", "link", 2), ".") == "src/sub"
    assert _next_folder(None, ".") is None


def test_the_cap_counts_with_the_callers_encoding(tmp_path: Path, lc: LeanCtx) -> None:
    root = tmp_path / "proj"
    _big(root)
    default = archived_tree(lc.db, root, depth=5, max_entries=2000)
    assert count_tokens(default.text, O200K) <= ANSWER_CAP_TOKENS < count_tokens(default.text, GEMINI)
    gem = archived_tree(lc.db, root, depth=5, max_entries=2000, encoding=GEMINI)
    assert gem.capped and count_tokens(gem.text, GEMINI) <= ANSWER_CAP_TOKENS
    assert count_tokens(gem.text, GEMINI) >= ANSWER_CAP_TOKENS - 500  # and not far under
    assert gem.omitted_lines > default.omitted_lines


def _cli(home: Path, cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    e = {**os.environ, "LEAN_CTX_HOME": str(home), "LEAN_CTX_NO_DAEMON": "1", "LEAN_CTX_AGENT_ID": "cli-agent",
         **env}
    e.pop("LEAN_CTX_DB", None)
    if "LEAN_CTX_MODEL" not in env:
        e.pop("LEAN_CTX_MODEL", None)
    return subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, env=e, cwd=cwd, timeout=120,
                          check=False)


def test_cli_tree_counts_with_lean_ctx_model_and_archives_its_rest(tmp_path: Path) -> None:
    proj, home = tmp_path / "proj", tmp_path / "home"
    _big(proj)
    whole = tree(proj, depth=5, max_entries=2000, cap_tokens=10**6).text.rstrip("\n").split("\n")
    p = _cli(home, proj, "tree", "--depth", "5", "--max-entries", "2000", LEAN_CTX_MODEL="gemini-2.5-pro")
    assert p.returncode == 0, p.stderr
    assert count_tokens(p.stdout, GEMINI) <= ANSWER_CAP_TOKENS
    sent = p.stdout.rstrip("\n").split("\n")
    m = _NEXT.search(sent[-1])
    assert m and int(m.group(2)) == len(sent) and int(m.group(3)) == len(whole)
    rest = _cli(home, proj, "expand", m.group(1), "--lines", f"{m.group(2)}-{m.group(3)}",
                LEAN_CTX_MODEL="gemini-2.5-pro")
    assert rest.returncode == 0, rest.stderr
    first = rest.stdout.split("\n")[0]
    assert first == f"{len(sent)}:{whole[len(sent) - 1]}"  # the line the notice took the place of
    j = _cli(home, proj, "--json", "tree", "--depth", "5", "--max-entries", "2000", LEAN_CTX_MODEL="gemini-2.5-pro")
    assert j.returncode == 0, j.stderr
    assert count_tokens(j.stdout, GEMINI) <= ANSWER_CAP_TOKENS
    d = json.loads(j.stdout)
    assert d["capped"] is True and d["omitted_lines"] > 0 and d["archive_id"] == m.group(1)  # the same listing
    assert f"lean-ctx expand {d['archive_id']} --lines " in d["text"].splitlines()[-1]


# --- the archive is recorded: archive.created (source "tree"), once per archive ----------------


def _events(lc: LeanCtx, kind: str) -> list[Any]:
    return [e for e in lc.store.read_all(0) if e.kind == kind]


def _archive_created(lc: LeanCtx) -> list[Any]:
    return _events(lc, "archive.created")


def _tree_records(lc: LeanCtx) -> list[Any]:
    return [e for e in _events(lc, "tool.called") if e.data().command == "tree.record"]


def _check_event_is_the_archive(ev: Any, store: ArchiveStore, archive_id: str, encoding: str) -> None:
    """The recorded figures are those of the archived bytes, the tokens in the caller's encoding."""
    blob = store.path(archive_id).read_bytes()
    text = blob.decode("utf-8")
    d = ev.data()
    assert ev.stream == f"archive:{archive_id}" and d.archive_id == archive_id and d.source == "tree"
    assert d.sha256 == hashlib.sha256(blob).hexdigest() and d.archive_id == "A" + d.sha256[:16]
    assert d.bytes == len(blob)
    assert d.lines == len(text.removesuffix("\n").split("\n"))  # the lines expand numbers
    assert d.tokens == count_tokens(text, encoding)
    assert d.tokens != count_tokens(text, O200K if encoding != O200K else GEMINI)  # the encoding mattered


def _savings_by_tool(lc: LeanCtx) -> dict[str, Any]:
    return {r.group["tool"]: r for r in savings.report(lc.projections.reader("savings"), by=("tool",)).rows}


def test_cli_records_a_capped_listings_archive_once_and_its_expansion_is_charged_to_tree(tmp_path: Path) -> None:
    proj, home = tmp_path / "proj", tmp_path / "home"
    _big(proj)
    env = {"LEAN_CTX_MODEL": "gemini-2.5-pro", "LEAN_CTX_SESSION_ID": "s-tree"}
    short = _cli(home, proj, "tree", **env)  # fits: nothing recorded, the log not even created
    assert short.returncode == 0 and "[… capped" not in short.stdout, short.stderr
    assert not list(home.rglob("*.db")) and not list(home.rglob("archives"))
    ids = set()
    for args in (("tree",), ("tree",), ("--json", "tree")):  # the same listing, capped three times
        p = _cli(home, proj, *args, "--depth", "5", "--max-entries", "2000", **env)
        assert p.returncode == 0, p.stderr
        ids.add(json.loads(p.stdout)["archive_id"] if "--json" in args else _NEXT.findall(p.stdout)[-1][0])
    (aid,) = ids
    (db,) = home.rglob("events.db")
    store = ArchiveStore.beside(db)
    with LeanCtx(db) as lc:
        (ev,) = _archive_created(lc)  # exactly once
        _check_event_is_the_archive(ev, store, aid, GEMINI)
        assert ev.actor == "cli-agent" and ev.project == str(proj.resolve())
        calls = _tree_records(lc)
        assert len(calls) == 3 and [c.data().events for c in calls] == [1, 0, 0]
        assert {(c.actor, c.stream, c.data().session_id) for c in calls} == {("cli-agent", "calls:s-tree", "s-tree")}
        assert ev.causation_id == calls[0].position and ev.correlation_id == calls[0].correlation_id
    rest = _cli(home, proj, "expand", aid, "--lines", "2-6", **env)
    assert rest.returncode == 0, rest.stderr
    with LeanCtx(db) as lc:
        (expanded,) = _events(lc, "archive.expanded")
        assert expanded.data().archive_id == aid and expanded.actor == "cli-agent"
        by_tool = _savings_by_tool(lc)
        assert set(by_tool) == {"tree"}  # charged to the tool whose answer was archived, not to "expand"
        t = by_tool["tree"]
        assert (t.calls, t.expansions, t.sent_tokens) == (1, 1, expanded.data().sent_tokens)
        assert (t.raw_tokens, t.saved_tokens) == (0, -t.sent_tokens)  # tree answers are not in the savings
        assert len(_archive_created(lc)) == 1


def test_http_records_a_capped_listings_archive_once_as_the_agent(make_server,  # noqa: F811
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEAN_CTX_MODEL", "gemini-2.5-pro")
    server = make_server()
    project = Path(server.config.project_root)
    _big(project)
    api = Api(server)
    a = api.register()
    headers = {**a.headers, "X-Session-Id": "h-sess"}
    small = api.client.post("/v1/context/tree", json={"path": "package_0"}, headers=headers)
    assert small.status_code == 200 and small.json()["capped"] is False, small.text
    args = {"depth": 5, "max_entries": 2000}
    got = []
    for route in ("/v1/context/tree", "/v1/tools/ctx_tree", "/v1/context/tree"):
        r = api.client.post(route, json=args, headers=headers)
        assert r.status_code == 200 and r.json()["capped"] is True, r.text
        got.append(r.json()["archive_id"])
    aid = got[0]
    assert got == [aid] * 3
    db = Path(server.config.db)
    with LeanCtx(db) as lc:
        (ev,) = _archive_created(lc)
        _check_event_is_the_archive(ev, ArchiveStore.beside(db), aid, GEMINI)
        assert ev.actor == a.agent_id and ev.project == str(project)
        calls = _tree_records(lc)  # the listing that fit dispatched nothing
        assert [c.data().events for c in calls] == [1, 0, 0]
        assert {(c.actor, c.data().session_id) for c in calls} == {(a.agent_id, "h-sess")}
    rest = api.client.post("/v1/context/expand", json={"archive_id": aid, "lines": "2-6"}, headers=headers)
    assert rest.status_code == 200, rest.text
    with LeanCtx(db) as lc:
        by_tool = _savings_by_tool(lc)
        assert set(by_tool) == {"tree"} and by_tool["tree"].expansions == 1


@pytest.mark.anyio
async def test_mcp_records_a_capped_listings_archive_once_in_the_clients_encoding(
        transport: Transport) -> None:  # noqa: F811
    _big(transport.project / "big")
    async with transport.connect("gemini-cli") as c:
        first = await _call(c, "ctx_tree", {"path": "big", "depth": 5, "max_entries": 2000})
        again = await _call(c, "ctx_tree", {"path": "big", "depth": 5, "max_entries": 2000})
        aid = first.structured_content["archive_id"]
        assert aid and again.structured_content["archive_id"] == aid
        await _call(c, "ctx_expand", {"archive_id": aid, "lines": "2-4"})
    db = Path(transport.env["LEAN_CTX_DB"])
    with LeanCtx(db) as lc:
        created = [e for e in _archive_created(lc) if e.data().source == "tree"]
        (ev,) = created
        _check_event_is_the_archive(ev, ArchiveStore.beside(db), aid, GEMINI)
        (expanded,) = [e for e in _events(lc, "archive.expanded") if e.data().archive_id == aid]
        assert ev.actor and ev.actor == expanded.actor  # the MCP session's agent, for both
        calls = [x for x in _tree_records(lc) if x.actor == ev.actor]
        assert [x.data().events for x in calls] == [1, 0]
        assert {x.data().session_id for x in calls} == {expanded.data().session_id}
        row = savings.report(lc.projections.reader("savings"), by=("tool",), agent=ev.actor).rows
        assert [(r.group["tool"], r.expansions) for r in row if r.group["tool"] in ("tree", "expand")] == [("tree", 1)]


def test_archived_tree_opens_the_log_only_for_a_capped_answer(tmp_path: Path, lc: LeanCtx) -> None:
    root = tmp_path / "proj"
    _big(root, packages=1, files=5)
    opened: list[int] = []

    def open_log() -> LeanCtx:
        opened.append(1)
        return lc

    t = archived_tree(lc.db, root, depth=5, open_log=open_log, actor="a", session_id="s", project=str(root))
    assert not t.capped and opened == [] and _archive_created(lc) == [] and _tree_records(lc) == []
    _flat(root, 2500)
    capped = archived_tree(lc.db, root, "cjk", max_entries=5000, open_log=open_log, actor="a", session_id="s",
                           project=str(root))
    assert capped.capped and opened == [1]
    (ev,) = _archive_created(lc)
    _check_event_is_the_archive(ev, ArchiveStore.beside(lc.db), capped.archive_id or "", O200K)
    assert (ev.actor, ev.project) == ("a", str(root))


def test_tree_record_refuses_figures_that_cannot_be_an_archives(lc: LeanCtx) -> None:
    text = "./ (1 file, 0 folders)\n  a.py\n"
    aid, digest = ArchiveStore.id_of(text)
    good: dict[str, Any] = {"archive_id": aid, "sha256": digest, "bytes": len(text), "lines": 2, "tokens": 5}
    for bad, code in (({"archive_id": "B123"}, "ARCHIVE_INVALID_ID"),
                      ({"sha256": "0" * 64}, "ARCHIVE_INVALID_ID"),  # not the sha256 the id names
                      ({"sha256": digest.upper()}, "ARCHIVE_INVALID_ID"),
                      ({"bytes": -1}, "TREE_INVALID_RECORD"),
                      ({"lines": -2}, "TREE_INVALID_RECORD"),
                      ({"tokens": -3}, "TREE_INVALID_RECORD")):
        with pytest.raises(InvalidInput) as e:
            lc.bus.dispatch(RecordTree(**{**good, **bad}), actor="a")
        assert e.value.code == code, bad
    assert _archive_created(lc) == []
    assert lc.bus.dispatch(RecordTree(**good), actor="a").value.archive_created is True
    assert lc.bus.dispatch(RecordTree(**good), actor="b").value.archive_created is False
    (ev,) = _archive_created(lc)
    assert (ev.data().source, ev.data().lines, ev.actor) == ("tree", 2, "a")
