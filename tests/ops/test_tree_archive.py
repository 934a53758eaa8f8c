"""A capped tree answer keeps its rest: every surface archives the whole listing beside the log
(``ops.tree.archived_tree``) and the notice names the ``lean-ctx expand ID --lines N-M`` that
continues it, exactly; the notice never sends the agent back to the folder it just listed; the
cap counts with the caller's encoding (Gemini: cl100k × 1.1), on the CLI through
``$LEAN_CTX_MODEL``. Real SQLite logs, real archives, the real CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.app import LeanCtx
from leanctx.archive import ArchiveStore
from leanctx.context.tokens import count_tokens
from leanctx.ops.cap import ANSWER_CAP_TOKENS
from leanctx.ops.expand import expand
from leanctx.ops.tree import TreeEntry, _next_folder, archived_tree, tree

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
