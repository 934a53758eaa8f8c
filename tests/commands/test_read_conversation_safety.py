"""``read.record`` never tells a conversation it has what it never received, and marks bounces.

- A stub goes only to a conversation that received this content *whole* in that mode: a
  capped answer (the rest archived) never makes a later read a stub.
- A diff is computed only against a version the conversation received in full (``full``, or a
  diff); after partial views only (``map``, ``signatures``, ``lines:``...) or a capped answer,
  ``diff`` sends the full content and says so.
- A full read that bounces (a compressed read of the same path and content at most 3 calls
  before, in the same conversation: the savings projection's definition) deposits STUCK on the
  file, besides HOT, in the same transaction; any other full read deposits no STUCK.

Through the real CLI (one process per call, a real SQLite file), plus the operation in-process
for the call-window boundaries.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from leanctx.app import LeanCtx
from leanctx.events.codec import payload_dict
from leanctx.ops.read import ReadAnswer, read_files
from leanctx.projections.savings import bounced_files

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
T0 = 1_800_000_000.0
APP = '''"""A small app."""

import os


class Store:
    """Keeps things."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.items: dict[str, int] = {}

    def get(self, key: str) -> int | None:
        return self.items.get(key)

    def put(self, key: str, value: int) -> None:
        self.items[key] = value


def handle_timeout(seconds: float) -> str:
    # retry after a timeout
    return f"timeout after {seconds}s"


def main() -> None:
    s = Store(os.getcwd())
    s.put("a", 1)
    print(s.get("a"))
'''
# ~3,000 tokens: under the default cap, far over --max-tokens 1000
BIG = "".join(f"def function_number_{i}(argument: int) -> int:  # line {i}\n    return argument * {i}\n"
              for i in range(150))


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text(APP)
    (root / "src" / "big.py").write_text(BIG)
    (root / "README.md").write_text("# proj\n\nA project.\n")
    return root


class Cli:
    """``lean-ctx`` subprocesses on one database, as one agent and session unless told."""

    def __init__(self, project: Path, db: Path) -> None:
        self.project, self.db = project, db
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
        self.env.update(LEAN_CTX_DB=str(db), LEAN_CTX_NO_DAEMON="1", LEAN_CTX_HOME=os.environ["LEAN_CTX_HOME"])

    def run(self, *args: str, agent: str = "a6", session: str | None = "s6b") -> str:
        env = {**self.env, "LEAN_CTX_AGENT_ID": agent}
        if session:
            env["LEAN_CTX_SESSION_ID"] = session
        p = subprocess.run([LEAN_CTX, "--project", str(self.project), *args], check=False, capture_output=True,
                           text=True, env=env, cwd=self.project, timeout=60)
        assert p.returncode == 0, p.stderr
        return p.stdout

    def read(self, path: str, mode: str, *more: str, **who: Any) -> dict[str, Any]:
        rows = [json.loads(x) for x in self.run("read", path, "--mode", mode, "--json", *more, **who).splitlines()]
        assert len(rows) == 1
        return rows[0]

    def deposits(self) -> list[tuple[str, str, str]]:
        """(agent, target, scent kind) of every scent.deposited, in log order."""
        out = self.run("events", "tail", "--kind", "scent.deposited", "--json", "-n", "1000")
        return [(e["actor"], e["payload"]["target"], e["payload"]["scent"])
                for e in map(json.loads, out.splitlines())]

    def stuck(self) -> list[tuple[str, str]]:
        return [(a, t) for a, t, k in self.deposits() if k == "STUCK"]

    def bounces(self) -> int:
        return int(json.loads(self.run("gain", "--json"))["totals"]["bounces"])


@pytest.fixture()
def cli(tmp_path: Path, project: Path) -> Cli:
    return Cli(project, tmp_path / "events.db")


# --- stubs and diffs: only against what this conversation received whole -------------------


def test_diff_after_a_map_read_sends_the_full_content_and_says_so(cli: Cli) -> None:
    m = cli.read("src/app.py", "map")
    assert m["mode"] == "map" and "retry after a timeout" not in m["text"]
    d = cli.read("src/app.py", "diff")
    assert not d["stub"] and d["mode"] == "full", d["text"]
    assert "retry after a timeout" in d["text"] and 'return f"timeout after {seconds}s"' in d["text"]
    assert "never received" in d["text"] and "full content sent" in d["text"]
    # now the conversation holds it in full: an unchanged diff is the stub
    again = cli.read("src/app.py", "diff")
    assert again["stub"] and again["text"].startswith("F1=src/app.py [unchanged 28 lines")
    # another session of the same agent has nothing: content, never a stub
    other = cli.read("src/app.py", "diff", session="s-other")
    assert not other["stub"] and "retry after a timeout" in other["text"]


def test_diff_after_signatures_and_a_change_is_not_against_text_the_agent_never_saw(cli: Cli,
                                                                                    project: Path) -> None:
    app = project / "src" / "app.py"
    cli.read("src/app.py", "signatures")
    app.write_text(APP.replace("return self.items.get(key)", "return self.items.get(key, None)"))
    d = cli.read("src/app.py", "diff")
    assert d["mode"] == "full" and not d["stub"]
    assert "@@" not in d["text"] and "+14" not in d["text"]  # no hunks
    assert "return self.items.get(key, None)" in d["text"] and "retry after a timeout" in d["text"]
    assert "full content sent" in d["text"]


def test_a_diff_against_a_version_received_in_full_is_still_a_diff(cli: Cli, project: Path) -> None:
    app = project / "src" / "app.py"
    cli.read("src/app.py", "full")
    app.write_text(APP.replace("return self.items.get(key)", "return self.items.get(key, None)"))
    d = cli.read("src/app.py", "diff")
    assert d["mode"] == "diff" and "+14         return self.items.get(key, None)" in d["text"], d["text"]
    assert "retry after a timeout" not in d["text"]  # only the hunk
    # a diff delivery counts as the whole new text: the next change diffs against it
    app.write_text(APP.replace("return self.items.get(key)", "return self.items.get(key, 0)"))
    d2 = cli.read("src/app.py", "diff")
    assert d2["mode"] == "diff" and "-14         return self.items.get(key, None)" in d2["text"], d2["text"]


def test_a_capped_full_read_never_makes_a_later_full_read_a_stub(cli: Cli) -> None:
    capped = cli.read("src/big.py", "full", "--max-tokens", "1000")
    assert capped["capped"] and capped["archive_id"] and "function_number_149" not in capped["text"]
    full = cli.read("src/big.py", "full")  # default cap: the whole file fits
    assert not full["stub"] and not full["capped"] and "function_number_149" in full["text"]
    assert cli.read("src/big.py", "full")["stub"]  # now it has it whole


def test_a_capped_answer_is_never_a_diff_base_and_never_stubs_its_own_mode(cli: Cli) -> None:
    capped = cli.read("src/big.py", "full", "--max-tokens", "300")
    assert capped["capped"]
    d = cli.read("src/big.py", "diff")
    assert d["mode"] == "full" and not d["stub"] and "function_number_149" in d["text"]
    assert "full content sent" in d["text"]
    sig = cli.read("src/big.py", "signatures", "--max-tokens", "200")
    assert sig["capped"] and "function_number_149" not in sig["text"]
    sig2 = cli.read("src/big.py", "signatures")
    assert not sig2["stub"] and not sig2["capped"] and "function_number_149" in sig2["text"]
    assert cli.read("src/big.py", "signatures")["stub"]


@pytest.mark.parametrize("partial", ["map", "signatures", "lines:1-5", "aggressive", "entropy"])
def test_a_partial_view_never_makes_a_full_read_or_a_diff_a_stub(cli: Cli, partial: str) -> None:
    cli.read("src/app.py", partial)
    full = cli.read("src/app.py", "full", session="s-full")
    assert not full["stub"]
    cli.read("src/app.py", partial, session="s-full")  # its own stub or content: either way partial
    assert cli.read("src/app.py", "full", session="s-full")["stub"]  # it did receive full before
    d = cli.read("src/app.py", "diff")  # session s6b only ever got the partial view
    assert not d["stub"] and d["mode"] == "full" and "retry after a timeout" in d["text"]


# --- bounces deposit STUCK -------------------------------------------------------------------


def test_a_bounce_deposits_stuck_and_a_plain_full_read_does_not(cli: Cli) -> None:
    cli.read("README.md", "full")  # a first full read: no compressed read before it
    assert cli.stuck() == []
    cli.read("src/app.py", "signatures")
    cli.read("README.md", "map")  # another file in between: one call
    cli.read("src/app.py", "full")  # 2 calls after the compressed read of the same content
    assert cli.stuck() == [("a6", "src/app.py")]
    deposits = cli.deposits()
    assert deposits[-2:] == [("a6", "src/app.py", "HOT"), ("a6", "src/app.py", "STUCK")]
    cli.read("src/app.py", "full", "--fresh")  # the compressed read was answered already: no second STUCK
    assert cli.stuck() == [("a6", "src/app.py")]
    assert cli.bounces() == 1  # the savings projection counts the very same bounce


def test_another_conversation_or_a_changed_file_is_no_bounce(cli: Cli, project: Path) -> None:
    cli.read("src/app.py", "map")
    cli.read("src/app.py", "full", session="s-other")  # another conversation
    cli.read("src/app.py", "full", agent="other-agent")
    (project / "src" / "app.py").write_text(APP + "\n# changed\n")
    cli.read("src/app.py", "full")  # a new version is a new need
    assert cli.stuck() == [] and cli.bounces() == 0


def test_the_stuck_deposit_is_in_the_reads_transaction(cli: Cli) -> None:
    cli.read("src/app.py", "map")
    cli.read("src/app.py", "full")
    events = [json.loads(x) for x in cli.run("events", "tail", "-n", "50", "--json").splitlines()]
    read = [e for e in events if e["kind"] == "file.read"][-1]
    stuck = [e for e in events if e["kind"] == "scent.deposited" and e["payload"]["scent"] == "STUCK"]
    assert len(stuck) == 1
    assert stuck[0]["correlation_id"] == read["correlation_id"] and stuck[0]["causation_id"] == read["causation_id"]


# --- the window, in-process ------------------------------------------------------------------


@pytest.fixture()
def lc(tmp_path: Path) -> Iterator[LeanCtx]:
    app = LeanCtx(tmp_path / "inproc.db")
    yield app
    app.close()


def _read(lc: LeanCtx, project: Path, path: str, mode: str, **kw: Any) -> ReadAnswer:
    kw.setdefault("actor", "agent-a")
    kw.setdefault("session_id", "s1")
    (a,) = read_files(lc, [path], mode=mode, project=str(project), now=T0, **kw)
    return a


def _stuck(lc: LeanCtx) -> list[str]:
    return [d["target"] for d in (payload_dict(e.payload) for e in lc.store.read_all(0) if e.kind == "scent.deposited")
            if d["scent"] == "STUCK"]


@pytest.mark.parametrize(("between", "bounce"), [(0, True), (2, True), (3, False), (5, False)])
def test_the_window_is_the_savings_projections(lc: LeanCtx, project: Path, between: int, bounce: bool) -> None:
    """Compressed read at call c, full read at c + between + 1: a bounce up to 3 calls apart."""
    _read(lc, project, "src/app.py", "map")
    for _ in range(between):
        _read(lc, project, "README.md", "full", fresh=True)  # other calls of the conversation
    _read(lc, project, "src/app.py", "full")
    assert _stuck(lc) == (["src/app.py"] if bounce else [])
    bounced = bounced_files(lc.projections.reader("savings"))
    assert [(b.path, b.bounces) for b in bounced if b.path == "src/app.py"] == ([("src/app.py", 1)] if bounce else [])


def test_no_agent_no_stuck(lc: LeanCtx, project: Path) -> None:
    _read(lc, project, "src/app.py", "map", actor=None, session_id=None)
    _read(lc, project, "src/app.py", "full", actor=None, session_id=None)
    assert _stuck(lc) == []


def test_a_stub_is_not_a_compressed_read(lc: LeanCtx, project: Path) -> None:
    _read(lc, project, "src/app.py", "full")
    assert _read(lc, project, "src/app.py", "full").stub  # a reference to what it holds, not a view
    _read(lc, project, "src/app.py", "full", fresh=True)  # came back for the content anyway
    assert _stuck(lc) == []  # no bounce: the savings projection agrees (one rule for both)


def test_a_line_range_read_records_its_plain_tokens_and_is_measured_against_them(lc: LeanCtx, project: Path) -> None:
    """What a plain ranged read would have sent is the baseline of a ``lines:`` read, not the file."""
    from leanctx.context.tokens import count_tokens
    from leanctx.projections.savings import report

    a = _read(lc, project, "src/app.py", "lines:1-3")
    ev = [payload_dict(e.payload) for e in lc.store.read_all(0) if e.kind == "file.read"][-1]
    assert ev["plain_tokens"] is not None and 0 < ev["plain_tokens"] < a.raw_tokens
    assert ev["plain_tokens"] <= a.sent_tokens <= ev["plain_tokens"] + count_tokens(a.text.split("\n", 1)[0]) + 2
    lc.projections.ensure_current(["savings"])
    t = report(lc.projections.reader("savings"), by=("tool",)).totals
    assert t.raw_tokens == ev["plain_tokens"]  # not the whole file's raw_tokens
    assert not _read(lc, project, "src/app.py", "full").stub  # and other modes are untouched
