"""``lean-ctx search``: when the 6,000-token listing limit (``MAX_ANSWER_TOKENS``), not
``--limit``, stops the lines sent, the footer says how many more were not shown, why, and the
archive lines that hold them; ``lean-ctx expand ID --lines A-B`` gives exactly those."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.ops.search_answer import MAX_ANSWER_TOKENS, MAX_LISTED

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))  # this interpreter's, not whatever PATH finds

pytestmark = pytest.mark.timeout(180)

CUT = re.compile(
    r"^\[search regex: (\d+) of (\d+) results; (\d+) more within the limit of (\d+) not shown: over the "
    + re.escape(f"{MAX_ANSWER_TOKENS:,}")
    + r"-token listing limit \(they are lines (\d+)-(\d+) of archive (A[0-9a-f]{16}): lean-ctx expand \7 --lines \5-\6\);"
)


def run(db: Path, proj: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_DB=str(db), LEAN_CTX_NO_DAEMON="1", LEAN_CTX_AGENT_ID="cli-agent",
               LEAN_CTX_HOME=os.environ["LEAN_CTX_HOME"])
    p = subprocess.run([LEAN_CTX, "--project", str(proj), *args], check=False, capture_output=True, text=True, env=env,
                       timeout=120)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    return p


@pytest.fixture()
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    for f in range(3):
        (root / f"f{f}.txt").write_text("".join(f"needle {f}-{i} x\n" for i in range(1000)))
    return root


def _footer(text: str) -> str:
    return next(ln for ln in text.split("\n") if ln.startswith("[search "))


def _expanded(db: Path, proj: Path, aid: str, first: int, last: int) -> list[str]:
    out = run(db, proj, "expand", aid, "--lines", f"{first}-{last}").stdout.splitlines()
    numbers = [int(ln.split(":", 1)[0]) for ln in out]
    assert numbers == list(range(first, last + 1))  # all of them: nothing left out by expand's own cap
    return [ln.split(":", 1)[1] for ln in out]


def test_footer_names_what_the_token_limit_left_out_and_where_it_is(tmp_path: Path, proj: Path) -> None:
    db = tmp_path / "e.db"
    expected = [f"f{f}.txt:{i + 1}: needle {f}-{i} x" for f in range(3) for i in range(1000)]
    p = run(db, proj, "search", "--regex", "--limit", "1000", "needle")
    lines = p.stdout.rstrip("\n").split("\n")
    footer = _footer(p.stdout)
    m = CUT.match(footer)
    assert m, footer
    shown, total, more, limit, first, last, aid = (*map(int, m.groups()[:6]), m.group(7))
    assert (total, limit, last) == (3000, 1000, 1000)
    assert 0 < shown < 1000 and shown + more == 1000 and first == shown + 1
    assert lines[:shown] == expected[:shown] and lines[shown] == footer  # what is sent is what it says
    assert f"; {MAX_LISTED} of 3000 listed in archive {aid} (lean-ctx expand {aid}; at most 2,000 are listed);" \
           " refine the query]" in footer
    assert _expanded(db, proj, aid, first, last) == expected[shown:1000]
    # --json: the same text, and the counts agree with it
    j = json.loads(run(db, proj, "--json", "search", "--regex", "--limit", "1000", "needle").stdout)
    assert j["shown"] == shown and len(j["hits"]) == shown and _footer(j["text"]) == footer


def test_footer_when_fewer_were_found_than_the_limit(tmp_path: Path, proj: Path) -> None:
    db = tmp_path / "e.db"
    expected = [f"f1.txt:{i + 1}: needle 1-{i} x" for i in range(100, 900)]  # 800 hits, under --limit 1000
    p = run(db, proj, "search", "--regex", "--limit", "1000", r"needle 1-[1-8]\d\d ")
    footer = _footer(p.stdout)
    m = CUT.match(footer)
    assert m, footer
    shown, total, more, limit, first, last, aid = (*map(int, m.groups()[:6]), m.group(7))
    assert (total, limit, last, first) == (800, 1000, 800, shown + 1) and shown + more == 800
    assert footer.endswith(f"; all 800 listed in archive {aid} (lean-ctx expand {aid})]")
    assert p.stdout.split("\n")[:shown] == expected[:shown]
    assert _expanded(db, proj, aid, first, last) == expected[shown:]


def test_footer_is_unchanged_when_the_limit_stops_the_listing(tmp_path: Path, proj: Path) -> None:
    db = tmp_path / "e.db"
    footer = _footer(run(db, proj, "search", "--regex", "--limit", "50", "needle").stdout)
    assert footer.startswith("[search regex: 50 of 3000 results; 2000 of 3000 listed in archive A")
    assert "not shown" not in footer and "token" not in footer
    footer = _footer(run(db, proj, "search", "--regex", "--limit", "50", "needle 2-99 ").stdout)
    assert footer == "[search regex: 1 of 1 result]"
