"""Every answer of expand, shell (compressed and raw), tree and search stays under the read cap
(``ops.cap``: 20,000 tokens); what is left out is in an archive, the answer says how much and
the call that gets it, and following those calls gives back exactly what was left out. The
events record the tokens actually sent. Also: search covers files up to the read limit and
says when it skipped one; its footer is true past ``MAX_LISTED``; ``lean-ctx shell`` passes a
piped stdin to the command."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.app import LeanCtx
from leanctx.archive import ArchiveStore
from leanctx.commands.read import DEFAULT_CAP_TOKENS
from leanctx.context.tokens import count_tokens
from leanctx.events.codec import payload_dict
from leanctx.ops.cap import ANSWER_CAP_TOKENS
from leanctx.ops.expand import expand
from leanctx.ops.read import MAX_FILE_BYTES as READ_MAX_FILE_BYTES
from leanctx.ops.search import search
from leanctx.ops.search_answer import MAX_LISTED
from leanctx.ops.shell import compress_captured, run_shell
from leanctx.ops.tree import tree

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
PY = sys.executable
CLIENT_LIMIT = 25_000

pytestmark = pytest.mark.timeout(180)


@pytest.fixture()
def lc(tmp_path: Path):  # type: ignore[no-untyped-def]
    app = LeanCtx(tmp_path / "data" / "e.db")
    yield app
    app.close()


def events(lc: LeanCtx, kind: str) -> list[dict]:
    return [payload_dict(e.payload) for e in lc.store.read_all(0) if e.kind == kind]


def archive_lines(lc: LeanCtx, aid: str) -> list[str]:
    return ArchiveStore.beside(lc.db).get(aid).removesuffix("\n").split("\n")


_NEXT_LINES = re.compile(r"lean-ctx expand (A[0-9a-f]{16}) --lines (\d+)-(\d+)")
_NEXT_CHARS = re.compile(r"lean-ctx expand (A[0-9a-f]{16}) --lines '(\d+)\[(\d+)-(\d+)\]'")


def test_the_cap_is_the_read_cap() -> None:
    assert ANSWER_CAP_TOKENS == DEFAULT_CAP_TOKENS < CLIENT_LIMIT


# --- shell -------------------------------------------------------------------------------------


def test_raw_shell_output_is_capped_and_the_rest_is_archived(lc: LeanCtx) -> None:
    code = "for i in range(6000): print(f'line {i:05} ' + 'lorem ipsum dolor sit amet ' * 3)\nraise SystemExit(3)"
    r = run_shell(lc, [PY, "-c", code], raw=True, actor="agent-a", session_id="s1")
    assert r.exit_code == 3 and r.capped and r.pattern == "raw"
    assert r.raw_tokens > 100_000 and r.sent_tokens == count_tokens(r.text) <= ANSWER_CAP_TOKENS
    whole = archive_lines(lc, r.archive_id)
    assert r.capped_archive_id == r.archive_id and len(whole) == 6001 and whole[-1] == "[exit 3]"
    sent = r.text.split("\n")
    notice = next(i for i, ln in enumerate(sent) if ln.startswith("[… capped at 20,000 tokens"))
    m = _NEXT_LINES.search(sent[notice])
    assert m and m.group(1) == r.archive_id
    first, last = int(m.group(2)), int(m.group(3))
    assert sent[:notice] == whole[: first - 1] and sent[notice + 1:] == whole[last:]  # head and tail are exact
    assert whole[-1] == sent[-1] == "[exit 3]"  # the end (exit code) is kept
    assert f"({last - first + 1:,} lines)" in sent[notice] and r.omitted_lines == last - first + 1
    ran = events(lc, "shell.ran")[-1]
    assert ran["sent_tokens"] == r.sent_tokens and ran["archive_id"] == r.archive_id
    assert ran["omitted_lines"] == r.omitted_lines
    # the notice's call gets exactly the lines left out (capped again, and so on)
    got: list[str] = []
    lo = first
    while lo <= last:
        e = expand(lc, r.archive_id, lines=f"{lo}-{last}")
        assert e.sent_tokens <= ANSWER_CAP_TOKENS
        body = e.text.split("\n")
        if e.capped:
            m2 = _NEXT_LINES.search(body[-1])
            assert m2 and int(m2.group(3)) == last
            body = body[:-1]
            nxt = int(m2.group(2))
        else:
            nxt = last + 1
        got += [ln.split(":", 1)[1] for ln in body]
        assert nxt > lo
        lo = nxt
    assert got == whole[first - 1: last]


def _pytest_output(n: int) -> str:
    out = ["============================= test session starts ==============================",
           f"collected {n + 10} items", "", "tests/test_x.py " + "F" * n + "." * 10 + " [100%]", "",
           "=================================== FAILURES ==================================="]
    for i in range(n):
        out += [f"____________________________ test_case_{i} ____________________________",
                f"    def test_case_{i}():", f">       assert compute({i}) == {i + 1}", f"E       assert {i} == {i + 1}",
                "", f"tests/test_x.py:{i * 5 + 3}: AssertionError"]
    out.append("=========================== short test summary info ============================")
    out += [f"FAILED tests/test_x.py::test_case_{i} - assert {i} == {i + 1}" for i in range(n)]
    out.append(f"================= {n} failed, 10 passed in 3.21s =================")
    return "\n".join(out) + "\n"


def test_compressed_shell_output_is_capped_and_keeps_its_summary(lc: LeanCtx) -> None:
    r = compress_captured(lc, "pytest", _pytest_output(1500), exit_code=1, actor="agent-a")
    assert r.pattern == "pytest" and r.capped and r.capped_archive_id and r.archive_id
    assert r.capped_archive_id != r.archive_id  # the full output (markers) and the whole answer (cap)
    assert r.sent_tokens == count_tokens(r.text) <= ANSWER_CAP_TOKENS
    assert "1500 failed, 10 passed" in r.text and r.text.endswith("[exit 1]")
    answer = archive_lines(lc, r.capped_archive_id)
    sent = r.text.split("\n")
    notice = next(i for i, ln in enumerate(sent) if ln.startswith("[… capped at"))
    m = _NEXT_LINES.search(sent[notice])
    assert m and m.group(1) == r.capped_archive_id
    first, last = int(m.group(2)), int(m.group(3))
    assert sent[:notice] + answer[first - 1: last] + sent[notice + 1:] == answer
    assert count_tokens("\n".join(answer)) > 50_000  # what an uncapped answer would have sent
    assert events(lc, "shell.ran")[-1]["sent_tokens"] == r.sent_tokens
    assert ArchiveStore.beside(lc.db).exists(r.archive_id)  # the markers' archive is there too
    created = {e["archive_id"] for e in events(lc, "archive.created")}
    assert {r.archive_id, r.capped_archive_id} <= created  # the log knows of both archives


def test_cli_shell_keeps_the_exit_code_when_capped(tmp_path: Path) -> None:
    env = {**os.environ, "LEAN_CTX_DB": str(tmp_path / "e.db"), "LEAN_CTX_AGENT_ID": "cli", "LEAN_CTX_NO_DAEMON": "1"}
    code = "for i in range(6000): print(f'row {i} ' + 'word ' * 12)\nraise SystemExit(5)"
    p = subprocess.run([LEAN_CTX, "shell", "--raw", "--", PY, "-c", code], capture_output=True, text=True,
                       env=env, timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode == 5
    assert count_tokens(p.stdout.rstrip("\n")) <= ANSWER_CAP_TOKENS and "[… capped at 20,000 tokens" in p.stdout
    assert p.stdout.rstrip("\n").endswith("[exit 5]")


def test_cli_shell_passes_piped_stdin(tmp_path: Path) -> None:
    env = {**os.environ, "LEAN_CTX_DB": str(tmp_path / "e.db"), "LEAN_CTX_AGENT_ID": "cli", "LEAN_CTX_NO_DAEMON": "1"}
    p = subprocess.run([LEAN_CTX, "shell", "--", "cat"], input="piped\nsecond\n", capture_output=True, text=True,
                       env=env, timeout=60)
    assert (p.returncode, p.stdout) == (0, "piped\nsecond\n")
    p = subprocess.run([LEAN_CTX, "shell", "--", "wc -l; exit 4"], input="a\nb\nc\n", capture_output=True,
                       text=True, env=env, timeout=60)
    assert p.returncode == 4 and p.stdout.split("\n")[0].strip() == "3"
    p = subprocess.run([LEAN_CTX, "shell", "--", "cat"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       env=env, timeout=60)
    assert (p.returncode, p.stdout) == (0, "")
    # a command that stops reading early does not wait for the rest of an endless input
    p = subprocess.run(f"yes | {LEAN_CTX} shell -- head -2", shell=True, capture_output=True, text=True, env=env,
                       timeout=60)
    assert (p.returncode, p.stdout) == (0, "y\ny\n")


def test_run_shell_stdin_from_a_file(lc: LeanCtx, tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_text("from a file\n")
    with open(src, "rb") as f:
        r = run_shell(lc, ["cat"], stdin=f)
    assert r.text == "from a file"
    assert run_shell(lc, ["cat"]).text == ""  # no stdin given: an empty input (MCP, HTTP)


# --- expand ------------------------------------------------------------------------------------


def test_expand_of_a_big_archive_is_capped_and_the_chain_gives_it_all(lc: LeanCtx) -> None:
    lines = [f"{i:06} " + " ".join(f"w{(i * 7 + k) % 997}" for k in range(20)) for i in range(1, 12001)]
    aid = ArchiveStore.beside(lc.db).put("\n".join(lines) + "\n")[0]
    e = expand(lc, aid, actor="agent-a", session_id="s1")
    assert e.capped and e.sent_tokens == count_tokens(e.text) <= ANSWER_CAP_TOKENS
    assert events(lc, "archive.expanded")[-1]["sent_tokens"] == e.sent_tokens
    body = e.text.split("\n")
    m = _NEXT_LINES.search(body[-1])
    assert m and body[-1].startswith(f"[… {e.truncated_lines} more selected lines not sent")
    assert body[:-1] == lines[: int(m.group(2)) - 1] and int(m.group(3)) == 12000
    assert e.truncated_lines == 12000 - len(body) + 1
    assert expand(lc, aid, max_tokens=10**9).cap_tokens == 24_000  # max_tokens can lower the cap, not lift it


def test_an_over_long_single_line_is_sent_in_parts(lc: LeanCtx) -> None:
    line = "".join(f"function f{i}(a,b){{return a*{i}+b-{i * 37 % 1000};}}" for i in range(12000))
    aid = ArchiveStore.beside(lc.db).put(line + "\n")[0]  # a minified file: one line, ~150k tokens
    e = expand(lc, aid, lines="1-1")
    assert e.capped and e.sent_tokens <= ANSWER_CAP_TOKENS and e.truncated_lines == 1
    first, notice = e.text.split("\n")
    assert first.startswith("1:") and line.startswith(first[2:]) and len(first) > 20_000
    got = first[2:]
    while True:
        m = _NEXT_CHARS.search(notice)
        assert m and m.group(1) == aid and int(m.group(3)) == len(got) + 1
        e = expand(lc, aid, lines=f"1[{m.group(3)}-]")
        assert e.sent_tokens <= ANSWER_CAP_TOKENS
        if not e.capped:
            got += e.text
            break
        part, notice = e.text.split("\n")
        got += part
    assert got == line


# --- tree --------------------------------------------------------------------------------------


def test_a_long_tree_is_capped(tmp_path: Path, lc: LeanCtx) -> None:
    root = tmp_path / "proj"
    for d in range(3):
        folder = root / f"package_{d}" / "a_rather_long_module_directory_name"
        folder.mkdir(parents=True)
        for i in range(1200):
            (folder / f"some_rather_long_file_name_number_{i:04}_with_a_suffix.py").write_text("")
    t = tree(root, depth=5, max_entries=2000)
    assert t.capped and count_tokens(t.text) <= ANSWER_CAP_TOKENS and t.files == 3600
    lines = t.text.rstrip("\n").split("\n")
    assert lines[-1].startswith("[… capped at 20,000 tokens: ") and f"{t.omitted_lines:,} lines" in lines[-1]
    assert "lean-ctx tree package_" in lines[-1]
    assert len(t.entries) == len(lines) - 2  # one entry per listing line sent
    store = ArchiveStore.beside(lc.db)
    a = tree(root, depth=5, max_entries=2000, archive=store)
    assert a.capped and count_tokens(a.text) <= ANSWER_CAP_TOKENS
    sent = a.text.rstrip("\n").split("\n")
    m = _NEXT_LINES.search(sent[-1])
    assert m and m.group(1) == a.archive_id
    whole = store.get(a.archive_id).removesuffix("\n").split("\n")
    assert len(whole) == int(m.group(3)) == 1 + 3 + 3600  # the header, 3 folder chains, the files
    assert whole[: int(m.group(2)) - 1] == sent[:-1] and sent[:-1] == lines[: len(sent) - 1]


# --- search ------------------------------------------------------------------------------------


def test_search_reads_files_up_to_the_read_limit_and_counts_what_it_skips(tmp_path: Path, lc: LeanCtx) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    body = "".join(f"needle line {i} " + "x" * 260 + "\n" for i in range(3000))
    (root / "big.txt").write_text(body)  # ~0.8 MB ... made larger below
    (root / "big.txt").write_text(body + "".join("filler " * 40 + "\n" for _ in range(2500)))
    assert 1_000_000 < (root / "big.txt").stat().st_size < READ_MAX_FILE_BYTES
    (root / "huge.txt").write_text(("needle " + "y" * 90 + "\n") * (READ_MAX_FILE_BYTES // 98 + 10))
    assert (root / "huge.txt").stat().st_size > READ_MAX_FILE_BYTES
    (root / "small.py").write_text("def needle():\n    return 1\n")
    (root / "blob.bin").write_bytes(b"\0needle" * (READ_MAX_FILE_BYTES // 7 + 10))  # binary: never searched, not counted
    r = search(lc, root, "needle", method="regex", limit=5)
    assert r.total == 3000 + 1 and r.partial and r.skipped_large == 1
    assert any("1 file over 8,388,608 bytes (the read limit) not searched" in n for n in r.notes)
    assert "[1 file over 8,388,608 bytes" in r.text
    b = search(lc, root, "needle", method="bm25", limit=5)
    assert b.partial and b.skipped_large == 2 and any("not in the code index" in n for n in b.notes)
    (root / "huge.txt").unlink()
    ok = search(lc, root, "needle", method="regex", limit=5)
    assert not ok.partial and ok.total == 3001 and ok.skipped_large == 0


def test_search_footer_says_how_many_the_archive_lists(tmp_path: Path, lc: LeanCtx) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    for f in range(3):
        (root / f"f{f}.txt").write_text("".join(f"needle {f}-{i}\n" for i in range(1000)))
    r = search(lc, root, "needle", method="regex", limit=1000)
    assert r.total == 3000 and r.archive_id and r.sent_tokens <= ANSWER_CAP_TOKENS
    footer = next(ln for ln in r.text.split("\n") if ln.startswith("[search regex:"))
    assert f"{MAX_LISTED} of 3000 listed in archive {r.archive_id}" in footer and "refine the query" in footer
    assert "all " not in footer
    assert len(archive_lines(lc, r.archive_id)) == MAX_LISTED == r.listed
    few = search(lc, root, "needle 1-9\\d\\d$", method="regex", limit=10)
    assert f"all {few.total} listed in archive" in few.text
    assert events(lc, "search.ran")[-1]["sent_tokens"] == few.sent_tokens == count_tokens(few.text)
