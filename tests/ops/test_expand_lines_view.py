"""Expanding the archive of a capped ``lines:`` read does not number its rows twice.

The view of ``lines:100-400`` carries the file's line numbers (``100<TAB>…``); expand used to add
its own (``46:144<TAB>…``). Real CLI in subprocesses, a real log and archive.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.context.tokens import count_tokens
from leanctx.ops.expand import numbered_view

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))


def run(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_") or k == "LEAN_CTX_HOME"}
    env.update(LEAN_CTX_NO_DAEMON="1", LEAN_CTX_AGENT_ID="view-test")
    p = subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120)
    assert p.returncode == 0, (args, p.stdout, p.stderr)
    return p.stdout


@pytest.fixture()
def capped(tmp_path: Path) -> tuple[Path, str, str]:
    (tmp_path / "big.py").write_text("".join(f'def f{i}(x): return x * {i} + "value {i}"\n' for i in range(1, 3001)))
    out = run(tmp_path, "read", "big.py", "--mode", "lines:100-400", "--max-tokens", "1000")
    aid = re.search(r"archived as (A[0-9a-f]{16})", out).group(1)  # type: ignore[union-attr]
    return tmp_path, aid, out


def test_the_rows_of_a_lines_view_are_sent_as_they_are(capped: tuple[Path, str, str]) -> None:
    root, aid, read = capped
    m = re.search(r"lean-ctx expand \S+ --lines (\d+)-(\d+)", read)
    assert m is not None
    first = int(m.group(1))
    out = run(root, "expand", aid, "--lines", f"{first}-{first + 2}")
    rows = out.rstrip("\n").split("\n")
    k = int(rows[0].split("\t")[0])
    assert rows == [f'{k + i}\tdef f{k + i}(x): return x * {k + i} + "value {k + i}"' for i in range(3)], out
    assert not re.match(r"\d+:", out)  # no view number in front of the file's
    # the follow-up of a capped expansion names the file lines it holds
    out = run(root, "expand", aid, "--lines", f"{first}-", "--max-tokens", "300")
    notice = out.rstrip("\n").split("\n")[-1]
    last_sent = int(out.split("\n")[-3].split("\t")[0]) if "\t" in out.split("\n")[-3] else None
    m2 = re.search(r"not sent \(file lines (\d+)-400\) · next: lean-ctx expand \S+ --lines (\d+)-(\d+)", notice)
    assert m2 is not None, notice
    nxt = run(root, "expand", aid, "--lines", f"{m2.group(2)}-{m2.group(2)}")
    assert nxt.startswith(f"{m2.group(1)}\t"), nxt  # the view line named holds the file line named
    if last_sent is not None:
        assert int(m2.group(1)) == last_sent + 1
    # grep and whole: as they are too
    assert run(root, "expand", aid, "--grep", "f200[(]").startswith('200\tdef f200(x)')
    whole = run(root, "expand", aid, "--max-tokens", "200")
    assert whole.startswith("… lines 1-99 not shown") and "\n100\tdef f100" in whole


def test_fewer_tokens_than_double_numbered(capped: tuple[Path, str, str]) -> None:
    root, aid, _ = capped
    out = run(root, "expand", aid, "--lines", "2-200")
    double = "\n".join(f"{i}:{ln}" for i, ln in enumerate(out.rstrip("\n").split("\n"), 2))
    assert count_tokens(out) < 0.95 * count_tokens(double)


def test_other_archives_are_still_numbered(tmp_path: Path) -> None:
    (tmp_path / "log.txt").write_text("".join(f"entry {i}: all fine\tok\n" for i in range(1, 40_000)))
    out = run(tmp_path, "shell", "--raw", "--", "cat", "log.txt")
    aid = re.search(r"A[0-9a-f]{16}", out).group(0)  # type: ignore[union-attr]
    assert run(tmp_path, "expand", aid, "--lines", "5-6").startswith("5:")


def test_numbered_view_detection() -> None:
    assert numbered_view(["… lines 1-9 not shown (9 lines)", " 10\ta", " 11\tb", "… line 12 not shown",
                          "[lines:10-11 · 12 lines · 10 lines not shown]"])
    assert not numbered_view(["1\ta", "1\tb"])  # not ascending
    assert not numbered_view(["12\tok", "plain text"])
    assert not numbered_view(["… nothing", "[footer]"])  # no row


def test_a_capped_lines_reads_notice_prices_its_rows_as_expand_sends_them(tmp_path: Path) -> None:
    """The rows of a ``lines:`` view carry their file numbers and expand sends them as they are:
    the read notice's "~N tokens" is what the follow-up call sends (within 3 %)."""
    import re

    from leanctx.app import LeanCtx
    from leanctx.ops.expand import expand
    from leanctx.ops.read import read_files

    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "log.txt").write_text("".join(f"event {i} happened at stage {i % 7} with value {i * 13}\n"
                                          for i in range(1, 3001)))
    with LeanCtx(tmp_path / "events.db") as lc:
        a = read_files(lc, ["log.txt"], mode="lines:100-900", actor="a", session_id="s", project=str(proj),
                       cap_tokens=2000)[0]
        m = re.search(r"\(~([\d,]+) tokens\) archived as (A[0-9a-f]{16}) · lean-ctx expand \2 --lines (\d+-\d+)",
                      a.text)
        assert a.capped and m, a.text[-300:]
        follow = expand(lc, m.group(2), lines=m.group(3))
        announced = int(m.group(1).replace(",", ""))
        assert not follow.capped
        assert abs(follow.sent_tokens - announced) <= 0.03 * follow.sent_tokens, (announced, follow.sent_tokens)
