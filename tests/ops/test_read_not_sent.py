"""A file a read of several files names as not sent (past the cap) was not read: it deposits no
HOT scent, its ``file.read`` (mode ``unsent``) claims no raw tokens, defers nothing and is no
bounce source (nor, read in ``full``, the read that bounces), and it never makes a later read
an "unchanged" stub or a diff base. The event still records that it was named: its ref, the
view it would have sent (``view_tokens``, all of it ``deferred_tokens``) and the line's tokens."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from leanctx.app import LeanCtx
from leanctx.commands.scent import ClaimScent
from leanctx.commands.sessions import MarkContextLost
from leanctx.projections import savings as sv

from . import test_read_common as common
from .test_read_common import LEAN_CTX, Reader

lc, project, reader = common.lc, common.project, common.reader  # the shared fixtures

CAP = 1500  # the first module's aggressive view fits, the second's does not


def _module(i: int) -> str:
    out = [f'"""Module {i}."""', "", "import os", ""]
    for k in range(60):
        out += [f"# helper {k} of module {i}", f"def helper_{k}_{i}(value: int) -> int:",
                f'    """Return value plus {k}."""', f"    total = value + {k}  # add", "    return total", ""]
    return "\n".join(out) + "\n"


@pytest.fixture()
def mods(project: Path) -> list[str]:
    (project / "pkg").mkdir()
    names = []
    for i in range(3):
        (project / "pkg" / f"mod_{i}.py").write_text(_module(i))
        names.append(f"pkg/mod_{i}.py")
    return names


def _named(reader: Reader, paths: list[str], mode: str = "aggressive", **kw: Any) -> tuple[Any, Any]:
    """A read of ``paths`` whose first file is sent and whose second is named as not sent."""
    answers = reader(paths, mode=mode, cap_tokens=CAP, **kw)
    sent, unsent = answers[0], answers[1]
    assert "not sent" not in sent.text.split("\n")[0]
    assert unsent.text.split("\n")[0].endswith("tokens not sent]"), unsent.text
    return sent, unsent


def _scent(reader: Reader) -> list[tuple[str, str]]:
    return [(e["target"], e["scent"]) for e in reader.events("scent.deposited")]


def _savings(lc: LeanCtx, *by: str) -> sv.SavingsReport:
    return sv.report(lc.projections.reader("savings"), by=by or ("tool",))


def test_a_file_not_sent_deposits_no_hot(reader: Reader, mods: list[str]) -> None:
    _named(reader, mods[:2])
    assert _scent(reader) == [(mods[0], "HOT")]


def test_its_event_records_that_it_was_named_and_claims_nothing(reader: Reader, lc: LeanCtx,
                                                                 mods: list[str]) -> None:
    sent, unsent = _named(reader, mods[:2])
    ev = reader.events("file.read")[1]
    assert (ev["path"], ev["mode"], ev["requested_mode"], ev["ref"]) == (mods[1], "unsent", "aggressive", unsent.ref)
    assert ev["sent_tokens"] == unsent.sent_tokens and not ev["stub"]  # the line (and the note) it was sent
    assert ev["view_tokens"] == ev["deferred_tokens"] > 0 and ev["sent_lines"] == 0
    assert unsent.mode == "aggressive" and unsent.capped  # the answer is unchanged
    r = _savings(lc, "mode")
    modes = {row.group["mode"]: row for row in r.rows}
    assert (modes["unsent"].raw_tokens, modes["unsent"].raw_tokens_recorded, modes["unsent"].deferred_tokens,
            modes["unsent"].sent_tokens) == (0, 0, 0, unsent.sent_tokens)
    assert (r.totals.raw_tokens, r.totals.deferred_tokens) == (modes["aggressive"].raw_tokens,
                                                             modes["aggressive"].deferred_tokens)
    assert modes["aggressive"].raw_tokens_recorded == sent.raw_tokens  # the file sent (whole or capped) only


def test_a_full_read_of_it_right_after_is_no_bounce(reader: Reader, lc: LeanCtx, mods: list[str]) -> None:
    _named(reader, mods[:2])
    full = reader.one(mods[1], mode="full")
    assert not full.stub and "not sent" not in full.text
    assert (mods[1], "STUCK") not in _scent(reader)
    assert _savings(lc).totals.bounces == 0 and _savings(lc).totals.wasted_tokens == 0
    assert sv.bounced_files(lc.projections.reader("savings")) == []


def test_a_full_read_not_sent_does_not_bounce_an_earlier_compressed_read(reader: Reader, lc: LeanCtx,
                                                                         mods: list[str]) -> None:
    reader.one(mods[1], mode="aggressive")  # whole: a compressed read of mod_1
    first = reader.one(mods[0], mode="full", session="other").sent_tokens
    answers = reader([mods[0], mods[1]], mode="full", cap_tokens=first + 80)  # room for mod_0 only
    assert answers[1].text.split("\n")[0].endswith("tokens not sent]"), answers[1].text
    assert (mods[1], "STUCK") not in _scent(reader)
    assert _savings(lc).totals.bounces == 0


def test_it_never_makes_a_later_read_a_stub(reader: Reader, lc: LeanCtx, project: Path, mods: list[str]) -> None:
    first = reader.one(mods[1], mode="aggressive")  # received whole
    assert reader.one(mods[1], mode="aggressive").stub
    lc.bus.dispatch(MarkContextLost(reason="compaction"), actor="agent-a", session_id="s1", project=str(project))
    _named(reader, mods[:2])  # named, not sent: the conversation still does not hold it
    again = reader.one(mods[1], mode="aggressive")
    assert not again.stub and again.text == first.text
    assert reader.one(mods[1], mode="aggressive").stub  # received again: stubs resume


def test_it_is_no_diff_base(reader: Reader, project: Path, mods: list[str]) -> None:
    reader.one(mods[1], mode="full")  # held whole: v1
    f = project / mods[1]
    f.write_text(f.read_text() + "# more\n")
    reader.one(mods[1], mode="lines:1-3")  # the conversation's latest: v2, partly
    f.write_text(_module(1))  # back to v1
    _named(reader, mods[:2])  # v1 named, not sent
    d = reader.one(mods[1], mode="diff")
    assert not d.stub and "def helper_0_1" in d.text, d.text  # the content, not "unchanged"


def test_a_stub_past_the_cap_keeps_the_file_held(reader: Reader, mods: list[str]) -> None:
    reader.one(mods[1], mode="aggressive")  # held whole
    other = "agent-" + "-".join(f"part{i}" for i in range(16))  # a long claim note: the stub outgrows its line
    reader.lc.bus.dispatch(ClaimScent(target=mods[1]), actor=other, project=str(reader.project), now=reader.now)
    answers = reader(mods[:2], mode="aggressive", cap_tokens=1300)  # mod_0 capped: the rest is mod_1's line
    assert answers[1].text.split("\n")[0].endswith("tokens not sent]")  # its stub (and claim note) did not fit
    assert reader.one(mods[1], mode="aggressive").stub  # it is still held: what it received before


def _cli(project: Path, home: Path, *args: str) -> list[dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_HOME=str(home), LEAN_CTX_AGENT_ID="cli-agent", LEAN_CTX_NO_DAEMON="1")
    p = subprocess.run([LEAN_CTX, "--json", "--project", str(project), *args], capture_output=True, text=True,
                       env=env, cwd=project, timeout=120, check=False)
    assert p.returncode == 0, p.stderr
    return [json.loads(ln) for ln in p.stdout.splitlines() if ln.strip()]


def test_the_cli_counts_no_bounce_and_no_hot(tmp_path: Path, project: Path, mods: list[str]) -> None:
    home = tmp_path / "home"
    answers = _cli(project, home, "read", *mods[:2], "--mode", "aggressive", "--session", "c1", "--max-tokens",
                   str(CAP))
    assert "not sent" in answers[1]["text"].split("\n")[0]
    full = _cli(project, home, "read", mods[1], "--mode", "full", "--session", "c1")
    assert not full[0]["stub"]
    scent = _cli(project, home, "events", "tail", "--kind", "scent.deposited", "-n", "50")
    # the full read's HOT only: the multi-read deposited none on the file it did not send, nor STUCK after it
    assert [(e["payload"]["target"], e["payload"]["scent"]) for e in scent] == [(mods[0], "HOT"), (mods[1], "HOT")]
    (gain,) = _cli(project, home, "gain")
    assert (gain["totals"]["bounces"], gain["totals"]["wasted_tokens"]) == (0, 0)
    by_mode = next(r for r in gain["reports"] if r["by"] == ["mode"])
    unsent = next(r for r in by_mode["rows"] if r["group"]["mode"] == "unsent")
    assert (unsent["raw_tokens"], unsent["deferred_tokens"], unsent["sent_tokens"]) == (0, 0, answers[1]["sent_tokens"])


def test_auto_diffs_against_what_was_held_not_what_was_named(reader: Reader, project: Path, mods: list[str]) -> None:
    reader.one(mods[1], mode="full")  # held whole: v1
    f = project / mods[1]
    f.write_text(_module(1) + "# two\n")
    _named(reader, mods[:2])  # v2 named, not sent
    f.write_text(_module(1) + "# three\n")
    a = reader.one(mods[1], mode="auto", intent="what changed")
    head = a.text.split("\n")[0]
    # the base is v1, what the conversation holds: v2 was only named
    v1 = hashlib.sha256(_module(1).encode()).hexdigest()
    assert not a.stub and f"diff vs {v1[:8]}" in head, a.text[:300]
    assert "+365 # three" in a.text and "# two" not in a.text, a.text[:300]


def test_a_file_only_named_is_not_read_for_the_edit_guard(reader: Reader, project: Path, mods: list[str]) -> None:
    from leanctx.commands.edit import EditFile
    from leanctx.errors import LeanCtxError

    _named(reader, mods[:2])
    with pytest.raises(LeanCtxError) as e:
        reader.lc.bus.dispatch(EditFile(path=mods[1], old='"""Module 1."""', new='"""Module one."""'),
                               actor="agent-a", session_id="s1", project=str(project), now=reader.now)
    assert e.value.code == "EDIT_NOT_READ"
