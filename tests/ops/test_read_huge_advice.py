"""The advice for files over the 8 MiB read limit lands on the right line.

lean-ctx numbers a line ending in a lone CR (a progress bar) as a line, ``grep -n`` does not; a
CRLF is one line end for both. The commands the refusals and the search note name are followed
here as an agent would (real CLI in subprocesses, real files over the limit), and the line they
find is read with ``--mode lines:N``. And a line over the limit by itself gets advice that works.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.ops.read import MAX_FILE_BYTES

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))


def run(proj: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_") or k == "LEAN_CTX_HOME"}
    env.update(LEAN_CTX_NO_DAEMON="1", LEAN_CTX_AGENT_ID="huge-advice")
    return subprocess.run([LEAN_CTX, "--project", str(proj), *args], capture_output=True, text=True, env=env,
                          cwd=proj, timeout=180, check=False)


def lean_ctx_args(command: str) -> list[str]:
    args = shlex.split(command)
    assert args[0] == "lean-ctx", command
    return args[1:]


@pytest.fixture()
def proj(tmp_path: Path) -> Path:
    """train.log: CRLF lines, progress bars of lone CRs, then the ERROR line."""
    root = tmp_path / "proj"
    root.mkdir()
    with open(root / "train.log", "wb") as f:
        block = b"".join(b"epoch %d step %d loss 0.5\r\n" % (i, j) for i in range(10) for j in range(10))
        bar = b"".join(b"progress %d%%\r" % p for p in range(0, 100, 5)) + b"done\n"
        while f.tell() < MAX_FILE_BYTES + 100_000:
            f.write(block + bar)
        f.write(b"FATAL ERROR here\r\nafter\n")
    return root


def expected_line(path: Path) -> int:
    """The ERROR line as lean-ctx numbers it: LF, CRLF and a lone CR each end a line."""
    data = path.read_bytes()
    before = data[: data.index(b"FATAL ERROR")]
    return len(re.findall(rb"\r\n|\r|\n", before)) + 1


def test_the_grep_advice_numbers_lines_as_lean_ctx(proj: Path) -> None:
    want = expected_line(proj / "train.log")
    plain_grep = subprocess.run(["grep", "-n", "FATAL", "train.log"], cwd=proj, capture_output=True, text=True)
    assert int(plain_grep.stdout.split(":")[0]) != want  # the trap: grep -n alone lands elsewhere
    p = run(proj, "read", "train.log")
    assert p.returncode == 2 and "READ_FILE_TOO_LARGE" in p.stderr
    m = re.search(r"find their numbers with (lean-ctx shell -- '.+?') \(", p.stderr)
    assert m, p.stderr
    assert "sed -n" not in p.stderr and "grep -n PATTERN train.log" not in p.stderr
    found = run(proj, *lean_ctx_args(m.group(1).replace("PATTERN", "FATAL")))
    assert found.returncode == 0, found.stderr
    n = int(re.search(r"^(\d+):FATAL ERROR here", found.stdout, re.M).group(1))  # type: ignore[union-attr]
    assert n == want
    read = run(proj, "read", "train.log", "--mode", f"lines:{n}")
    assert read.returncode == 0 and re.search(rf"^{n}\tFATAL ERROR here$", read.stdout, re.M), read.stdout


def test_the_search_note_numbers_lines_as_lean_ctx(proj: Path) -> None:
    want = expected_line(proj / "train.log")
    p = run(proj, "search", "FATAL")
    m = re.search(r"search it with: (lean-ctx shell -- '.+?') \(numbered as lean-ctx", p.stdout)
    assert m, p.stdout
    found = run(proj, *lean_ctx_args(m.group(1)))
    assert found.returncode == 0, found.stderr
    assert int(re.search(r"^(\d+):FATAL ERROR", found.stdout, re.M).group(1)) == want  # type: ignore[union-attr]


def test_one_line_over_the_limit_gets_advice_that_works(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    long_line = "".join(f"<{i:07d}>" for i in range(MAX_FILE_BYTES // 9 + 1000))
    with open(root / "min.js", "w", newline="") as f:
        f.write("head\rbar\r\n" + long_line + "\nend\n")  # a lone CR before it: it is line 3 for lean-ctx
    p = run(root, "read", "min.js", "--mode", "lines:3")
    assert p.returncode == 2 and "READ_LINES_TOO_LARGE" in p.stderr
    assert "ask for fewer lines" not in p.stderr, p.stderr
    m = re.search(r"line 3 of min\.js alone holds ([\d,]+) bytes.*?take it in pieces with (lean-ctx shell -- '.+?')"
                  r" \(bytes 1-([\d,]+); then", p.stderr)
    assert m, p.stderr
    assert int(m.group(1).replace(",", "")) == len(long_line)
    piece = int(m.group(3).replace(",", ""))
    out = run(root, *lean_ctx_args(m.group(2)), "--raw") if False else run(
        root, "shell", "--raw", "--", *lean_ctx_args(m.group(2))[2:])
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(long_line[:1000])  # the piece is of the right line, from its start
    got = re.sub(r"\n\[.*\]\n?$", "", out.stdout, flags=re.S).rstrip("\n")
    assert long_line.startswith(got) and len(got) <= piece
    # several lines of which one is too long: the others can still be read
    p = run(root, "read", "min.js", "--mode", "lines:1-4")
    assert p.returncode == 2 and "line 3 of min.js alone holds" in p.stderr and "leave it out" in p.stderr
    assert run(root, "read", "min.js", "--mode", "lines:4").returncode == 0
