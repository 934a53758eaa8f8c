"""``expand``: ranges past the end and empty selections are refused with stable codes (operation,
CLI with exit 2, ``--json``, the MCP tool), and ``L[A-B]`` addresses characters of one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.api import registry
from leanctx.api.registry import Caller
from leanctx.app import LeanCtx
from leanctx.archive import ArchiveStore
from leanctx.errors import InvalidInput
from leanctx.events.codec import payload_dict
from leanctx.ops.expand import expand

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))

pytestmark = pytest.mark.timeout(90)

LINES = [f"row {i:04} " + "abcdefghij" * (i % 7) for i in range(1, 2001)]


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    return tmp_path / "data" / "events.db"


@pytest.fixture()
def aid(db: Path) -> str:
    with LeanCtx(db) as lc:
        return ArchiveStore.beside(lc.db).put("\n".join(LINES) + "\n")[0]


def expanded_events(db: Path) -> list[dict]:
    with LeanCtx(db) as lc:
        return [payload_dict(e.payload) for e in lc.store.read_all(0) if e.kind == "archive.expanded"]


def cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LEAN_CTX_DB": str(db), "LEAN_CTX_AGENT_ID": "cli-agent", "LEAN_CTX_NO_DAEMON": "1"}
    return subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.parametrize("kwargs,code", [
    ({"lines": "3000-3005"}, "EXPAND_INVALID_RANGE"),
    ({"lines": "2001"}, "EXPAND_INVALID_RANGE"),
    ({"lines": "2001-"}, "EXPAND_INVALID_RANGE"),
    ({"head": 0}, "EXPAND_EMPTY_RANGE"),
    ({"tail": 0}, "EXPAND_EMPTY_RANGE"),
    ({"lines": "2001[1-5]"}, "EXPAND_INVALID_RANGE"),
    ({"lines": "7[500-600]"}, "EXPAND_INVALID_RANGE"),  # line 7 is shorter than 500 characters
    ({"lines": "7[5-3]"}, "EXPAND_INVALID_RANGE"),
    ({"lines": "7[0-3]"}, "EXPAND_INVALID_RANGE"),
    ({"max_tokens": 0}, "EXPAND_INVALID_COUNT"),
])
def test_empty_and_past_the_end_selections_are_refused(db: Path, aid: str, kwargs: dict, code: str) -> None:
    with LeanCtx(db) as lc, pytest.raises(InvalidInput) as e:
        expand(lc, aid, **kwargs)
    assert e.value.code == code
    assert expanded_events(db) == []  # nothing was sent, nothing is recorded
    if code == "EXPAND_INVALID_RANGE" and "[" not in kwargs.get("lines", "["):
        assert "2,000 lines" in e.value.message and "1-2000" in e.value.message


def test_ranges_that_overlap_the_end_are_cut_to_it(db: Path, aid: str) -> None:
    with LeanCtx(db) as lc:
        e = expand(lc, aid, lines="1998-3000")
        assert e.text.splitlines() == [f"{k}:{LINES[k - 1]}" for k in (1998, 1999, 2000)]
        whole = expand(lc, aid, head=5000)
        assert whole.lines == 2000 and whole.text.startswith("\n".join(LINES[:100]) + "\n")
        assert expand(lc, aid, lines="2000").text == f"2000:{LINES[-1]}"


def test_characters_of_one_line(db: Path, aid: str) -> None:
    line = LINES[12]  # "row 0013 " + 6 x "abcdefghij"
    with LeanCtx(db) as lc:
        assert expand(lc, aid, lines="13[1-8]").text == line[:8]
        assert expand(lc, aid, lines="13[10-]").text == line[9:]
        assert expand(lc, aid, lines="13[60-9999]").text == line[59:]
        assert expand(lc, aid, lines="13[3]").text == line[2]
        e = expand(lc, aid, lines=" 13 [ 2 - 4 ] ")
        assert e.text == line[1:4] and e.selector == "lines:13[2-4]" and e.lines == 1
    assert [x["selector"] for x in expanded_events(db)][-1] == "lines:13[2-4]"


def test_cli_json_and_mcp_agree_on_the_codes(db: Path, aid: str, tmp_path: Path) -> None:
    p = cli(db, "expand", aid, "--lines", "3000-3005")
    assert p.returncode == 2 and p.stdout == "" and "error[EXPAND_INVALID_RANGE]" in p.stderr
    p = cli(db, "expand", aid, "--head", "0")
    assert p.returncode == 2 and "error[EXPAND_EMPTY_RANGE]" in p.stderr
    j = cli(db, "--json", "expand", aid, "--tail", "0")
    assert j.returncode == 2
    err = json.loads(j.stdout or j.stderr)["error"]
    assert err["code"] == "EXPAND_EMPTY_RANGE" and err["details"] == {"lines": 2000}
    ok = cli(db, "expand", aid, "--lines", "13[1-8]")
    assert ok.returncode == 0 and ok.stdout == LINES[12][:8] + "\n"
    project = tmp_path / "proj"
    project.mkdir()
    with LeanCtx(db) as lc:
        who = Caller("mcp-agent", "s1", str(project))
        for args, code in (({"archive_id": aid, "lines": "3000-3005"}, "EXPAND_INVALID_RANGE"),
                           ({"archive_id": aid, "head": 0}, "EXPAND_EMPTY_RANGE")):
            with pytest.raises(InvalidInput) as e:
                registry.call(lc, who, "ctx_expand", args)
            assert e.value.code == code
        got = registry.call(lc, who, "ctx_expand", {"archive_id": aid, "lines": "1999-"})
    assert got["text"].splitlines() == [f"1999:{LINES[1998]}", f"2000:{LINES[1999]}"]
