"""``expand`` chains: following the notices one after another recovers an archive exactly (a
400k-character line, long lines under the smallest cap); caps below the minimum are refused;
the CLI's ``--json`` of shell and tree carry what ``ctx_shell`` / the cap promise."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.api import registry
from leanctx.api.registry import Caller
from leanctx.app import LeanCtx
from leanctx.archive import ArchiveStore
from leanctx.commands.read import MIN_CAP_TOKENS
from leanctx.context.tokens import count_tokens
from leanctx.errors import InvalidInput
from leanctx.ops.cap import ANSWER_CAP_TOKENS
from leanctx.ops.expand import expand
from leanctx.ops.tree import tree

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))

pytestmark = pytest.mark.timeout(180)

_NEXT = re.compile(r"next: lean-ctx expand (A[0-9a-f]{16}) --lines (?:'(\d+)\[(\d+)-(\d*)\]'|(\d+)-(\d+))")
_NUMBERED = re.compile(r"^(\d+):(.*)$", re.DOTALL)


def _long_line(n: int, seed: int) -> str:
    rnd = random.Random(seed)
    words = ["alpha", "beta", "[1-2]", "{x}", ";", "return", "é", "数据", "0x1f", "  ", "__init__", "'q'"]
    out: list[str] = []
    size = 0
    while size < n:
        w = rnd.choice(words) + rnd.choice(" ,.;")
        out.append(w)
        size += len(w)
    return "".join(out)[:n]


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    return tmp_path / "data" / "events.db"


def _follow(lc: LeanCtx, aid: str, first: str | None, max_tokens: int | None) -> dict[int, str]:
    """Follow the ``next:`` of every answer from ``expand(first)`` (None: the whole archive),
    checking each answer's cap and progress; the characters got, by line, in order."""
    got: dict[int, list[tuple[int, str]]] = {}
    spec = first
    cap = max_tokens or ANSWER_CAP_TOKENS
    seen: set[str | None] = set()
    for _ in range(2000):
        assert spec not in seen, f"the chain repeats itself at {spec!r}"
        seen.add(spec)
        e = expand(lc, aid, lines=spec, max_tokens=max_tokens)
        assert e.sent_tokens == count_tokens(e.text) <= cap
        body = e.text.split("\n")
        notice = body[-1] if body[-1].startswith("[…") else None
        content = body[:-1] if notice else body
        assert content and any(content), f"{spec!r}: nothing sent"
        m = re.fullmatch(r"(\d+)\[(\d+)-\d*\]", spec or "")
        if m:  # characters of one line, as they are
            assert len(content) == 1
            got.setdefault(int(m.group(1)), []).append((int(m.group(2)), content[0]))
        else:
            for row in content:
                if spec is None:  # the whole archive, unnumbered: line k is the k-th row
                    got.setdefault(len(got) + 1, []).append((1, row))
                else:
                    k, text = _NUMBERED.match(row).groups()  # type: ignore[union-attr]
                    got.setdefault(int(k), []).append((1, text))
        if notice is None:
            break
        n = _NEXT.search(notice)
        assert n and n.group(1) == aid, notice
        spec = f"{n.group(2)}[{n.group(3)}-{n.group(4)}]" if n.group(2) else f"{n.group(5)}-{n.group(6)}"
    else:
        raise AssertionError("the chain did not end")
    out: dict[int, str] = {}
    for k, pieces in got.items():
        text, at = "", pieces[0][0]  # a chain may start inside the line
        for start, piece in pieces:
            assert start == at + len(text), f"line {k}: a gap or an overlap at character {start}"
            text += piece
        out[k] = text
    return out


def test_following_the_notices_recovers_a_400k_character_line(db: Path) -> None:
    line = _long_line(400_000, 1)
    with LeanCtx(db) as lc:
        aid = ArchiveStore.beside(lc.db).put(line + "\n")[0]
        assert _follow(lc, aid, None, None) == {1: line}
        # a bounded range, as the shell's notice names it: answered whole, then it goes on to the end
        e = expand(lc, aid, lines="1[84765-100000]")
        chunk, notice = e.text.split("\n")
        assert chunk == line[84764:100000] and not e.capped and e.sent_tokens <= ANSWER_CAP_TOKENS
        assert notice.startswith("[… line 1 goes on to char 400,000 · next: ") and "'1[100001-" in notice
        assert _follow(lc, aid, "1[84765-100000]", None) == {1: line[84764:]}
        assert _follow(lc, aid, "1[84765-169528]", None) == {1: line[84764:]}  # cut, then goes on


def test_long_lines_under_the_smallest_cap_are_recovered_exactly(db: Path) -> None:
    lines = [_long_line(3000, 2), "short", _long_line(2500, 3), "end"]
    with LeanCtx(db) as lc:
        aid = ArchiveStore.beside(lc.db).put("\n".join(lines) + "\n")[0]
        got = _follow(lc, aid, None, MIN_CAP_TOKENS)
    assert [got[k] for k in sorted(got)] == lines


def test_the_first_line_over_the_cap_is_sent_in_part(db: Path) -> None:
    line = _long_line(5000, 4)
    with LeanCtx(db) as lc:
        aid = ArchiveStore.beside(lc.db).put(line + "\n" + "second\n")[0]
        e = expand(lc, aid, lines="1-2", max_tokens=MIN_CAP_TOKENS)
    first, notice = e.text.split("\n")
    assert e.capped and e.sent_tokens <= MIN_CAP_TOKENS
    assert first.startswith("1:") and len(first) > 40 and line.startswith(first[2:])
    assert f"next: lean-ctx expand {aid} --lines '1[{len(first) - 1}-" in notice and "then:" in notice


@pytest.mark.parametrize("cap", [1, 5, 60, MIN_CAP_TOKENS - 1])
def test_caps_below_the_minimum_are_refused(db: Path, cap: int) -> None:
    with LeanCtx(db) as lc:
        aid = ArchiveStore.beside(lc.db).put("a\nb\n")[0]
        with pytest.raises(InvalidInput) as e:
            expand(lc, aid, max_tokens=cap)
        assert e.value.code == "EXPAND_INVALID_CAP" and str(MIN_CAP_TOKENS) in e.value.message
        assert expand(lc, aid, max_tokens=MIN_CAP_TOKENS).text == "a\nb"


def test_a_short_line_is_sliced_as_asked_and_a_line_end_names_the_lines_after(db: Path) -> None:
    long = _long_line(3000, 5)
    with LeanCtx(db) as lc:
        aid = ArchiveStore.beside(lc.db).put(f"row 13 abcdefghij\n{long}\nlast\n")[0]
        assert expand(lc, aid, lines="1[1-6]").text == "row 13"
        e = expand(lc, aid, lines="2[2901-]")
    assert e.text == f"{long[2900:]}\n[… line 2 ends here; the archive goes on to line 3 · next: lean-ctx expand {aid}" \
        " --lines 3-3]"


def _cli(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LEAN_CTX_HOME": str(home), "LEAN_CTX_NO_DAEMON": "1", "LEAN_CTX_AGENT_ID": "cli-agent"}
    env.pop("LEAN_CTX_DB", None)
    return subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120,
                          check=False)


def test_cli_shell_notice_then_expand_chain_gives_the_whole_line(tmp_path: Path) -> None:
    line = _long_line(358_732, 6)
    (tmp_path / "huge2.txt").write_text(line + "\n")
    home = tmp_path / "home"
    p = _cli(home, tmp_path, "shell", "--raw", "--", "cat", "huge2.txt")
    assert p.returncode == 0
    got = p.stdout.split("\n")[0]
    assert line.startswith(got) and len(got) < len(line)
    notice = p.stdout
    for _ in range(30):
        m = re.search(r"lean-ctx expand (A[0-9a-f]{16}) --lines '1\[(\d+)-(\d*)\]'", notice)
        assert m and int(m.group(2)) == len(got) + 1, notice[-400:]
        q = _cli(home, tmp_path, "expand", m.group(1), "--lines", f"1[{m.group(2)}-{m.group(3)}]")
        assert q.returncode == 0, q.stderr
        out = q.stdout[:-1].split("\n")  # the trailing newline of the CLI
        got += out[0]
        if len(out) == 1:
            break
        notice = out[1]
    assert got == line
    bad = _cli(home, tmp_path, "expand", m.group(1), "--max-tokens", "60")
    assert bad.returncode == 2 and "error[EXPAND_INVALID_CAP]" in bad.stderr


def test_mcp_messages_name_selectors_neutrally(db: Path, tmp_path: Path) -> None:
    with LeanCtx(db) as lc:
        aid = ArchiveStore.beside(lc.db).put("a\nb\n")[0]
        who = Caller("mcp-agent", "s1", str(tmp_path))
        for args, code in (({"head": 0}, "EXPAND_EMPTY_RANGE"), ({"tail": -1}, "EXPAND_INVALID_COUNT"),
                           ({"head": 1, "grep": "a"}, "EXPAND_ONE_SELECTOR"), ({"max_tokens": 60}, "EXPAND_INVALID_CAP")):
            with pytest.raises(InvalidInput) as e:
                registry.call(lc, who, "ctx_expand", {"archive_id": aid, **args})
            assert e.value.code == code and "--" not in e.value.message, e.value.message
        with pytest.raises(InvalidInput) as e:
            registry.call(lc, who, "ctx_expand", {"archive_id": aid, "head": 0})
        assert "head 0 selects nothing" in e.value.message


def test_cli_shell_json_has_the_fields_of_ctx_shell(tmp_path: Path, db: Path) -> None:
    home = tmp_path / "home"
    p = _cli(home, tmp_path, "--json", "shell", "--raw", "--", "seq", "1", "30000")
    assert p.returncode == 0
    got = json.loads(p.stdout)
    assert got["capped"] is True and got["capped_archive_id"] and got["command"] == "seq 1 30000"
    with LeanCtx(db) as lc:
        mcp = registry.call(lc, Caller("mcp-agent", "s1", str(tmp_path)), "ctx_shell",
                            {"argv": ["seq", "1", "30000"], "raw": True})
    assert mcp["capped"] is True and set(mcp) <= set(got), set(mcp) - set(got)
    c = subprocess.run([LEAN_CTX, "--json", "compress", "--as", "seq 1 30000"], input=p.stdout, capture_output=True, check=False,
                       text=True, cwd=tmp_path, timeout=60,
                       env={**os.environ, "LEAN_CTX_HOME": str(home), "LEAN_CTX_NO_DAEMON": "1"})
    assert c.returncode == 0 and {"capped", "capped_archive_id"} <= set(json.loads(c.stdout))


def _big_project(root: Path) -> None:
    for d in range(40):
        sub = root / f"package_{d:02}_with_a_long_name" / "src" / "module"
        sub.mkdir(parents=True)
        for f in range(60):
            (sub / f"file_{f:03}_with_a_rather_long_descriptive_name.py").write_text("x\n")


def test_cli_tree_json_is_capped_entries_included(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    _big_project(proj)
    p = _cli(tmp_path / "home", proj, "--json", "tree", "--depth", "10", "--max-entries", "100000")
    assert p.returncode == 0, p.stderr
    assert count_tokens(p.stdout) <= ANSWER_CAP_TOKENS
    d = json.loads(p.stdout)
    text = d["text"].splitlines()
    assert d["capped"] and d["omitted_entries"] > 0 and len(d["entries"]) + d["omitted_entries"] == 40 * 61
    assert len(d["entries"]) == len(text) - 2  # one entry per line sent, between the header and the notice
    assert d["next_path"] and (proj / d["next_path"]).is_dir() and f"lean-ctx tree {d['next_path']}" in text[-1]
    nxt = d["next_path"]
    first_left_out = [e.path for e in tree(proj, depth=10, max_entries=100000, cap_tokens=10**6).entries][
        len(d["entries"])]
    assert first_left_out.startswith(nxt + "/") or first_left_out == nxt
    plain = tree(proj, depth=10, max_entries=100000)  # the text listing keeps its lines
    assert plain.capped and len(plain.entries) > len(d["entries"]) and plain.next_path is not None
