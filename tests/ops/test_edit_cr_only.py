"""``lean-ctx edit`` on files with CR-only (old Mac) and CRLF line ends, through the real console
script after a real ``lean-ctx read``: an old text spanning lines written with ``\\n`` (as reads
show CR-only ends) matches, the file keeps its line ends, and no other byte changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.app import LeanCtx
from leanctx.events import TopicFilter

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))  # this interpreter's, not whatever PATH finds

pytestmark = pytest.mark.timeout(180)

CR_FILE = b"first line\rdef main():\r    return 1\r\rdef other():\r    return 1\rlast line\r"


def run(db: Path, proj: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_DB=str(db), LEAN_CTX_NO_DAEMON="1", LEAN_CTX_AGENT_ID="A",
               LEAN_CTX_HOME=os.environ["LEAN_CTX_HOME"])
    return subprocess.run([LEAN_CTX, "--project", str(proj), *args], check=False, capture_output=True, text=True, env=env,
                          timeout=120)


def read(db: Path, proj: Path, rel: str) -> str:
    p = run(db, proj, "--json", "read", rel, "--mode", "full")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["text"].split("\n", 1)[1]  # the lines, after the header


def edit(db: Path, proj: Path, rel: str, old: str, new: str, *more: str) -> subprocess.CompletedProcess[str]:
    return run(db, proj, "edit", rel, "--old", old, "--new", new, *more)


@pytest.fixture()
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    return root.resolve()


def test_old_spanning_lines_matches_a_cr_only_file_and_cr_is_kept(tmp_path: Path, proj: Path) -> None:
    db = tmp_path / "e.db"
    f = proj / "mac.py"
    f.write_bytes(CR_FILE)
    shown = read(db, proj, "mac.py")
    assert shown == CR_FILE.decode().replace("\r", "\n").rstrip("\n")  # what the agent copies from
    old = "def main():\n    return 1\n"
    assert old in shown
    p = edit(db, proj, "mac.py", old, "def main() -> int:\n    return 2\n")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("edited mac.py: 1 replacement from line 2 ")  # lines as reads count them
    want = CR_FILE.replace(b"def main():\r    return 1\r", b"def main() -> int:\r    return 2\r")
    assert f.read_bytes() == want
    # a one-line old text, lines added by the new text: written with the file's CR too
    p = edit(db, proj, "mac.py", "last line", "last line\nadded line")
    assert p.returncode == 0, p.stderr
    want = want.replace(b"last line\r", b"last line\radded line\r")
    assert f.read_bytes() == want
    # --all across lines: every occurrence the agent saw
    p = edit(db, proj, "mac.py", "():\n    return", "(x):\n    return", "--all")
    assert p.returncode == 0 and p.stdout.startswith("edited mac.py: 1 replacement"), p.stdout + p.stderr
    want = want.replace(b"other():\r    return", b"other(x):\r    return")
    assert f.read_bytes() == want and b"\n" not in want


def test_ambiguity_and_no_match_count_what_the_agent_saw(tmp_path: Path, proj: Path) -> None:
    db = tmp_path / "e.db"
    f = proj / "mac.txt"
    f.write_bytes(b"x = 1\ry = 2\rx = 1\ry = 2\rend\r")
    read(db, proj, "mac.txt")
    p = run(db, proj, "--json", "edit", "mac.txt", "--old", "x = 1\ny = 2", "--new", "z")
    err = json.loads(p.stdout)["error"]
    assert p.returncode == 2 and (err["code"], err["details"]["occurrences"]) == ("EDIT_AMBIGUOUS", 2)
    p = edit(db, proj, "mac.txt", "y = 2\nend\nmore", "z")
    assert p.returncode == 2 and p.stderr.startswith("error[EDIT_NO_MATCH]")
    assert f.read_bytes() == b"x = 1\ry = 2\rx = 1\ry = 2\rend\r"
    p = edit(db, proj, "mac.txt", "x = 1\ny = 2\n", "w = 0\n", "--all")
    assert p.returncode == 0 and "2 replacements" in p.stdout, p.stderr
    assert f.read_bytes() == b"w = 0\rw = 0\rend\r"
    with LeanCtx(db) as lc:  # the refusals went through the handler: in the log, each with its STUCK mark
        codes = [e.payload for e in lc.store.iter_all(0, TopicFilter(kinds=("tool.called",)))]
        assert sum(b"EDIT_AMBIGUOUS" in c for c in codes) == 1 and sum(b"EDIT_NO_MATCH" in c for c in codes) == 1
        marks = [e.payload for e in lc.store.iter_all(0, TopicFilter(kinds=("scent.deposited",)))]
        assert sum(b"STUCK" in m for m in marks) == 2


def test_mixed_cr_and_lf_file_changes_only_the_matched_text(tmp_path: Path, proj: Path) -> None:
    db = tmp_path / "e.db"
    f = proj / "mixed.txt"
    data = b"a\rb\nc\r\nd\re\n"
    f.write_bytes(data)
    read(db, proj, "mixed.txt")
    p = edit(db, proj, "mixed.txt", "a\nb\nc", "A\nB")  # spans a CR-only end and an LF end
    assert p.returncode == 0, p.stderr
    assert f.read_bytes() == b"A\nB\r\nd\re\n"  # mixed: the new text is written as given
    read(db, proj, "mixed.txt")
    f.write_bytes(b"x\ry\nx\ny\n")  # the same old text, written with different line ends
    read(db, proj, "mixed.txt")
    p = edit(db, proj, "mixed.txt", "x\ny", "z")
    assert p.returncode == 2 and p.stderr.startswith("error[EDIT_AMBIGUOUS]: the old text occurs 2 times")
    assert f.read_bytes() == b"x\ry\nx\ny\n"


def test_crlf_files_still_work_and_keep_crlf(tmp_path: Path, proj: Path) -> None:
    db = tmp_path / "e.db"
    f = proj / "win.txt"
    data = b"one\r\ntwo\r\nthree\r\nfour\r\n"
    f.write_bytes(data)
    shown = read(db, proj, "win.txt")
    assert "one\r\ntwo\r\n" in shown  # reads show CRLF as it is
    p = edit(db, proj, "win.txt", "one\r\ntwo\r\n", "ONE\r\nTWO\r\n")
    assert p.returncode == 0, p.stderr
    assert f.read_bytes() == b"ONE\r\nTWO\r\nthree\r\nfour\r\n"
    p = edit(db, proj, "win.txt", "three\r\n", "three\nthree and a half\n")  # new lines typed with LF
    assert p.returncode == 0, p.stderr
    assert f.read_bytes() == b"ONE\r\nTWO\r\nthree\r\nthree and a half\r\nfour\r\n"
    # an LF-only file keeps LF, and is unchanged around the edit
    g = proj / "unix.txt"
    g.write_bytes(b"one\ntwo\nthree\n")
    read(db, proj, "unix.txt")
    assert edit(db, proj, "unix.txt", "one\ntwo", "1\n2").returncode == 0
    assert g.read_bytes() == b"1\n2\nthree\n"
