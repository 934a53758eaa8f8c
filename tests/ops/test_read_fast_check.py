"""The mtime + size fast check of ctx_read (``leanctx.cache.views.stat_is_trusted``): an
unchanged file is neither read nor hashed, a changed one always is — so a changed file is
never stubbed — and what a read states about the bytes (not UTF-8, CR-only line ends) is
the same whether the file was read or not."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from leanctx.cache import views
from leanctx.cache.views import FileStat, ViewCache, stat_is_trusted, views_for
from leanctx.ops import read_load

from .test_read_common import LEAN_CTX, Reader, lc, project, reader  # noqa: F401

HOUR_NS = 3600 * 10**9


@pytest.fixture()
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files whose bytes were read (the fast check skips the read and the hash)."""
    seen: list[str] = []
    real = read_load._read_all

    def spy(fd: int, rel: str) -> bytes:
        seen.append(rel)
        return real(fd, rel)

    monkeypatch.setattr(read_load, "_read_all", spy)
    return seen


def _age(path: Path, seconds: float = 3600) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t))


def _settle(monkeypatch: pytest.MonkeyPatch) -> None:
    """No racy window: a record is trusted as soon as its fields match (the tests that need the
    other guards alone: mtime, ctime, size, inode)."""
    monkeypatch.setattr(views, "RACY_NS", 0)


def _st(**kw: Any) -> Any:
    base = {"st_mtime_ns": 10 * HOUR_NS, "st_ctime_ns": 10 * HOUR_NS, "st_size": 100, "st_ino": 7, "st_dev": 1}
    base.update(kw)
    return SimpleNamespace(**base)


# --- the rule --------------------------------------------------------------------------------


def test_the_rule_equal_stat_and_not_racily_clean() -> None:
    known = FileStat(10 * HOUR_NS, 100, 7, "ab" * 32, ctime_ns=10 * HOUR_NS, dev=1, hashed_ns=11 * HOUR_NS)
    assert stat_is_trusted(known, _st())
    for change in ({"st_mtime_ns": 10 * HOUR_NS + 1}, {"st_ctime_ns": 10 * HOUR_NS + 1}, {"st_size": 101},
                   {"st_ino": 8}, {"st_dev": 2}):
        assert not stat_is_trusted(known, _st(**change)), change
    # racily clean: changed (mtime or ctime) within 2 s of being hashed
    racy = FileStat(10 * HOUR_NS, 100, 7, "ab" * 32, ctime_ns=10 * HOUR_NS, dev=1, hashed_ns=10 * HOUR_NS + 10**9)
    assert not stat_is_trusted(racy, _st())
    late_ctime = FileStat(HOUR_NS, 100, 7, "ab" * 32, ctime_ns=11 * HOUR_NS - 10**9, dev=1, hashed_ns=11 * HOUR_NS)
    assert not stat_is_trusted(late_ctime, _st(st_mtime_ns=HOUR_NS, st_ctime_ns=11 * HOUR_NS - 10**9))
    assert not stat_is_trusted(FileStat(10 * HOUR_NS, 100, 7, "ab" * 32, ctime_ns=10 * HOUR_NS, dev=1), _st())
    assert not stat_is_trusted(None, _st())


# --- reads ----------------------------------------------------------------------------------


def test_an_unchanged_file_is_not_read_again(reader: Reader, project: Path, reads: list[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    app = project / "src" / "app.py"
    _age(app)
    _settle(monkeypatch)
    first = reader.one("src/app.py", mode="signatures", session=None)
    assert reads == ["src/app.py"]
    again = reader.one("src/app.py", mode="signatures", session=None)
    assert reads == ["src/app.py"]  # the stat matched: neither read nor hashed
    assert again.text == first.text and again.content_hash == first.content_hash
    assert reader.one("src/app.py", mode="signatures", session="s1").ref == "F1"  # decisions unchanged
    assert reads == ["src/app.py"]
    reader.one("src/app.py", mode="full", raw=True, session=None)  # raw needs the real text: always read
    assert reads == ["src/app.py", "src/app.py"]
    reader.one("src/app.py", mode="signatures", fresh=True)  # fresh looks at the bytes, whatever the stat says
    assert reads == ["src/app.py", "src/app.py", "src/app.py"]


def test_a_racily_clean_record_is_not_trusted(reader: Reader, project: Path, reads: list[str]) -> None:
    (project / "fresh.txt").write_text("written just now\n")  # mtime within 2 s of the hash
    reader.one("fresh.txt", session=None)
    reader.one("fresh.txt", session=None)
    assert reads == ["fresh.txt", "fresh.txt"]


def test_a_same_size_rewrite_in_the_same_second_is_never_stubbed(reader: Reader, project: Path,
                                                                 reads: list[str]) -> None:
    f = project / "conf.py"
    f.write_text("RETRIES = 3\n")
    first = reader.one("conf.py", mode="full")
    assert "RETRIES = 3" in first.text and not first.stub
    with open(f, "r+") as fh:  # in place: same inode, same size, at once
        fh.write("RETRIES = 5\n")
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, views_for(reader.lc).last_stat("conf.py").mtime_ns))  # type: ignore[union-attr]
    second = reader.one("conf.py", mode="full")
    assert not second.stub and "RETRIES = 5" in second.text
    assert second.content_hash != first.content_hash
    assert reader.one("conf.py", mode="full").stub  # and now it is the version this conversation has


def test_fresh_sees_a_change_the_stat_cannot(reader: Reader, project: Path, reads: list[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The residual risk (every stat field equal after a change: an mmap write, a clock set back)
    simulated by recording the new content's stat under the old hash: the stub offers
    fresh=true, and fresh reads the bytes."""
    f = project / "conf.py"
    f.write_text("RETRIES = 3\n")
    _age(f)
    _settle(monkeypatch)
    first = reader.one("conf.py", mode="full")
    cache = views_for(reader.lc)
    known = cache.last_stat("conf.py")
    assert known is not None
    f.write_text("RETRIES = 5\n")
    st = f.stat()
    cache.record_stat("conf.py", FileStat(st.st_mtime_ns, st.st_size, st.st_ino, known.sha256, st.st_ctime_ns,
                                          st.st_dev, time.time_ns(), 0, 0))
    assert reader.one("conf.py", mode="full").stub  # fooled, as git would be
    fresh = reader.one("conf.py", mode="full", fresh=True)
    assert "RETRIES = 5" in fresh.text and fresh.content_hash != first.content_hash
    assert cache.last_stat("conf.py").sha256 == fresh.content_hash  # type: ignore[union-attr]
    again = reader.one("conf.py", mode="full")  # the record is right again: the new content's stub
    assert again.stub and again.content_hash == fresh.content_hash


def test_an_old_mtime_put_back_is_caught_by_ctime(reader: Reader, project: Path, reads: list[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    f = project / "conf.py"
    f.write_text("RETRIES = 3\n")
    _age(f)
    _settle(monkeypatch)  # no racy window: only the recorded fields can catch the change
    first = reader.one("conf.py", mode="full")
    assert reader.one("conf.py", mode="full").stub and reads == ["conf.py"]  # trusted while unchanged
    old = f.stat()
    time.sleep(0.02)  # past the file system's timestamp tick
    with open(f, "r+") as fh:
        fh.write("RETRIES = 5\n")
    os.utime(f, ns=(old.st_atime_ns, old.st_mtime_ns))  # the mtime put back; ctime cannot be
    now = f.stat()
    assert (now.st_mtime_ns, now.st_size, now.st_ino) == (old.st_mtime_ns, old.st_size, old.st_ino)
    second = reader.one("conf.py", mode="full")
    assert not second.stub and "RETRIES = 5" in second.text and second.content_hash != first.content_hash
    assert reads == ["conf.py", "conf.py"]


def test_an_atomic_replace_is_caught(reader: Reader, project: Path, reads: list[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    f = project / "conf.py"
    f.write_text("RETRIES = 3\n")
    _age(f)
    _settle(monkeypatch)
    reader.one("conf.py", mode="full")
    tmp = project / ".conf.py.swp"
    tmp.write_text("RETRIES = 5\n")
    old = f.stat()
    os.utime(tmp, ns=(old.st_atime_ns, old.st_mtime_ns))
    os.replace(tmp, f)
    second = reader.one("conf.py", mode="full")
    assert not second.stub and "RETRIES = 5" in second.text and reads == ["conf.py", "conf.py"]


def test_a_pruned_blob_means_a_real_read(reader: Reader, project: Path, reads: list[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    app = project / "src" / "app.py"
    _age(app)
    _settle(monkeypatch)
    reader.one("src/app.py", session=None)
    cache = views_for(reader.lc)
    cache.prune(0)  # every blob and view gone; the stat record stays
    assert cache.last_stat("src/app.py") is not None
    assert "class Store" in reader.one("src/app.py", mode="full", session=None).text
    assert reads == ["src/app.py", "src/app.py"]


def test_an_older_cache_files_table_is_replaced(tmp_path: Path) -> None:
    import apsw

    db = tmp_path / "old.db"
    conn = apsw.Connection(str(db))
    conn.execute("CREATE TABLE cache_files (path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,"
                 " inode INTEGER NOT NULL, sha256 TEXT NOT NULL, seen_at REAL NOT NULL)")
    conn.execute("INSERT INTO cache_files VALUES ('a.py', 1, 2, 3, 'ff', 0)")
    conn.close()
    cache = ViewCache(db)
    assert cache.last_stat("a.py") is None  # never hashed under this rule: nothing to trust
    cache.record_stat("a.py", FileStat(1, 2, 3, "ee", ctime_ns=4, dev=5, hashed_ns=6, bad_bytes=7, cr_breaks=8))
    assert cache.last_stat("a.py") == FileStat(1, 2, 3, "ee", 4, 5, 6, 7, 8)
    cache.close()
    assert ViewCache(db).last_stat("a.py") is not None  # a current table is kept


def test_200_unchanged_reads_of_a_large_file_skip_the_hash(reader: Reader, project: Path, reads: list[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    big = project / "big.txt"
    big.write_text("".join(f"entry {i}: some words of filler text\n" for i in range(25_000)))  # ~1 MB
    _age(big)
    _settle(monkeypatch)
    t = time.perf_counter()
    for _ in range(200):
        reader.one("big.txt", mode="lines:1-5", session=None)
    assert reads == ["big.txt"]
    assert time.perf_counter() - t < 120  # a generous bound: a hang, not a benchmark


# --- what a read says about the bytes ---------------------------------------------------------


def test_bytes_not_utf8_are_counted_in_the_header(reader: Reader, project: Path, reads: list[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    f = project / "latin.txt"
    f.write_bytes(b"caf\xe9 latin1\nna\xefve \xff\nplain\n")
    _age(f)
    _settle(monkeypatch)
    a = reader.one("latin.txt", mode="full", session=None)
    assert a.text.split("\n", 1)[0].endswith("· 3 bytes not UTF-8 shown as \ufffd]")
    assert "caf\ufffd latin1\nna\ufffdve \ufffd\nplain" in a.text
    again = reader.one("latin.txt", mode="full", session=None)
    assert reads == ["latin.txt"] and again.text == a.text  # the fast path keeps the note
    f.write_bytes(b"caf\xc3\xa9 utf8\n")
    assert "not UTF-8" not in reader.one("latin.txt", mode="full", session=None).text
    (project / "cut.txt").write_bytes(b"euro \xe2\x82 cut\n")  # a truncated sequence: two bytes, two marks
    cut = reader.one("cut.txt", mode="full", session=None)
    assert "2 bytes not UTF-8" in cut.text and "euro \ufffd\ufffd cut" in cut.text


@pytest.mark.parametrize("mode", ["full", "auto", "map", "signatures", "aggressive", "entropy", "lines:2-3"])
def test_cr_only_line_ends_are_lines_in_every_mode(reader: Reader, project: Path, mode: str) -> None:
    (project / "mac.txt").write_bytes(b"first line\rsecond line\rthird line\r")
    a = reader.one("mac.txt", mode=mode, session=None)
    head = a.text.split("\n", 1)[0]
    assert a.lines == 3 and " · 3 lines · " in head and "3 CR-only line ends shown as LF" in head, head
    if mode == "lines:2-3":
        assert "2\tsecond line\n3\tthird line" in a.text and "first line" not in a.text.split("\n", 1)[1]


def test_crlf_is_not_touched_and_mixed_ends_count_each_line(reader: Reader, project: Path) -> None:
    (project / "win.txt").write_bytes(b"one\r\ntwo\r\n")
    w = reader.one("win.txt", mode="full", session=None)
    assert w.lines == 2 and "CR-only" not in w.text
    (project / "mixed.txt").write_bytes(b"a\nb\rc\r\nd")
    m = reader.one("mixed.txt", mode="lines:3-4", session=None)
    assert m.lines == 4 and "1 CR-only line end shown as LF" in m.text and "3\tc" in m.text and "4\td" in m.text
