"""A ranked search reads and redacts only the files of the hits it may show: the archived rest
of the listing is placed at its chunks' start lines (``search_answer.UNREAD``), not worked out
by reading every file (which made ``--bm25`` twice as slow as the fused search on a large tree)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from leanctx.app import LeanCtx
from leanctx.archive import ArchiveStore
from leanctx.ops import search as search_mod
from leanctx.ops.search import search
from leanctx.ops.search_answer import UNREAD

N_FILES = 30
LIMIT = 3


@pytest.fixture()
def lc(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "e.db") as app:
        yield app


@pytest.fixture()
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    for i in range(N_FILES):
        # the words on separate lines, after a first line without them: the best line is 2
        (root / f"m{i:02d}.py").write_text(f"x_{i} = {i}\n# quokka meadow\n# wombat burrow {'quokka ' * (i % 4)}\n")
    return root


@pytest.fixture()
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """The files ``ops.search`` reads and the texts it redacts (the code index keeps its own)."""
    calls: dict[str, list[str]] = {"read": [], "redact": []}
    real_read, real_redact = search_mod.read_bytes, search_mod.redact_text

    def read_bytes(root: str, path: str, limit: int) -> bytes | None:
        calls["read"].append(path)
        return real_read(root, path, limit)

    def redact_text(text: str) -> tuple[str, int]:
        calls["redact"].append(text)
        return real_redact(text)

    monkeypatch.setattr(search_mod, "read_bytes", read_bytes)
    monkeypatch.setattr(search_mod, "redact_text", redact_text)
    return calls


def _archive(lc: LeanCtx, aid: str) -> list[str]:
    return ArchiveStore.beside(lc.db).get(aid).splitlines()


def test_bm25_reads_only_the_files_of_the_hits_it_may_show(lc: LeanCtx, proj: Path,
                                                           counted: dict[str, list[str]]) -> None:
    ans = search(lc, proj, "quokka wombat", method="bm25", limit=LIMIT)
    assert ans.total == N_FILES and ans.shown == LIMIT and ans.archive_id
    shown = [h.path for h in ans.hits]
    assert sorted(set(counted["read"])) == sorted(shown)  # no file read beyond those shown
    assert len(counted["redact"]) == LIMIT
    for h in ans.hits:  # the shown ones at their best line, with its text
        assert h.line == 3 and h.snippet.startswith("# wombat burrow")
    lines = _archive(lc, ans.archive_id)
    assert len(lines) == N_FILES
    assert lines[:LIMIT] == [f"{h.path}:3: {h.snippet}" for h in ans.hits]
    unread = UNREAD.format(start=1, end=3)
    assert all(line.endswith(f":1: {unread}") for line in lines[LIMIT:])
    assert {line.split(":")[0] for line in lines} == {f"m{i:02d}.py" for i in range(N_FILES)}


def test_fused_reads_only_the_files_of_the_hits_it_may_show(lc: LeanCtx, proj: Path,
                                                            counted: dict[str, list[str]]) -> None:
    # the phrase is not in the files: the regex scan reads them all but matches (and redacts) none
    ans = search(lc, proj, "quokka wombat", limit=LIMIT)
    assert ans.method == "fused" and ans.shown == LIMIT and ans.archive_id
    assert len(counted["redact"]) == LIMIT  # only the shown hits' files were redacted
    assert all(h.sources == ["bm25"] and h.line == 3 for h in ans.hits)
    lines = _archive(lc, ans.archive_id)
    assert len(lines) == N_FILES and sum(UNREAD.format(start=1, end=3) in line for line in lines) == N_FILES - LIMIT


def test_a_file_already_read_is_placed_at_its_best_line_in_the_archive(lc: LeanCtx, tmp_path: Path,
                                                                       counted: dict[str, list[str]]) -> None:
    root = tmp_path / "one"
    root.mkdir()
    chunks = "\n\n".join(f"def f{i}():\n    pass\n    # quokka {i}\n" for i in range(40))  # many chunks, one file
    (root / "big.py").write_text(chunks)
    ans = search(lc, root, "quokka", method="bm25", limit=1)
    assert ans.shown == 1 and ans.archive_id and ans.total > 1
    assert counted["read"] == ["big.py"] and len(counted["redact"]) == 1
    lines = _archive(lc, ans.archive_id)
    assert len(lines) == ans.total and not any("not read" in line for line in lines)
    assert all("# quokka" in line for line in lines)
