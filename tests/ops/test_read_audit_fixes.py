"""Fixes of a read-mode audit: a one-line file's footer never stays in the body (9); a read of
many files stays within its cap, every file sent, stubbed or named as not sent (10); a diff
whose only change is invisible to a line diff (line endings, the final newline, bytes the
decoded text does not show) says what changed instead of "no changes" (13)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from leanctx.context.modes.basic import render_diff
from leanctx.context.modes.rendered import footer, parse_footer
from leanctx.context.tokens import count_tokens
from leanctx.errors import InvalidInput

from . import test_read_common as common
from .test_read_common import LEAN_CTX, Reader

lc, project, reader = common.lc, common.project, common.reader  # the shared fixtures

ENC = "o200k_base"


def _body(text: str) -> list[str]:
    """The answer's lines after its header."""
    return text.split("\n")[1:]


# --- 9: the footer of one-line and empty files ---------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 2, 1200])
@pytest.mark.parametrize("note", [None, "1 line not shown", "3 comment lines removed · 2 blank"])
def test_the_footer_parses_back_for_any_line_count(n: int, note: str | None) -> None:
    for mode in ("aggressive", "lines:1-3,7", "diff", "task"):
        assert parse_footer(footer(mode, n, note)) == (mode, n, note)
    assert parse_footer("x = 1") is None and parse_footer("[not a footer]") is None


@pytest.mark.parametrize("mode", ["aggressive", "entropy", "lines:1", "signatures", "map"])
def test_a_one_line_file_keeps_no_footer_in_its_body(reader: Reader, project: Path, mode: str) -> None:
    (project / "one.py").write_text("x = 1  # set x\n")
    a = reader.one("one.py", mode=mode, agent=None, session=None)
    assert "1 line ·" in a.text.split("\n")[0]
    assert not any(ln.startswith("[") and ln.endswith("]") for ln in _body(a.text)), a.text
    assert a.sent_tokens == count_tokens(a.text, ENC)


def test_a_one_line_file_in_aggressive_mode_is_the_code_alone(reader: Reader, project: Path) -> None:
    (project / "one.py").write_text("x = 1  # set x\n")
    a = reader.one("one.py", mode="aggressive", agent=None, session=None)
    assert _body(a.text) == ["x = 1"]
    (project / "min.js").write_text("var a=1;function f(){return a}\n")
    js = reader.one("min.js", mode="aggressive", agent=None, session=None)
    assert _body(js.text) == ["var a=1;function f(){return a}"]


def test_an_empty_file_has_a_header_and_no_body(reader: Reader, project: Path) -> None:
    (project / "empty.py").write_text("")
    for mode in ("aggressive", "entropy"):
        a = reader.one("empty.py", mode=mode, agent=None, session=None)
        assert "\n" not in a.text and "0 lines" in a.text, a.text


# --- 10: many files under one cap ----------------------------------------------------------


def _module(i: int) -> str:
    """A Python module of 40-200 lines with comments, docstrings and blank lines."""
    out = [f'"""Module {i}: helpers for part {i} of the system."""', "", "import os", ""]
    for k in range(8 + (i * 7) % 40):
        out += [f"# helper {k} of module {i}", f"def helper_{k}(value: int) -> int:",
                f'    """Return value plus {k}."""', f"    total = value + {k}  # add", "    return total", ""]
    return "\n".join(out) + "\n"


@pytest.fixture()
def many(project: Path) -> list[str]:
    names = []
    for i in range(32):
        name = f"pkg/mod_{i:02d}.py"
        (project / "pkg").mkdir(exist_ok=True)
        (project / name).write_text(_module(i))
        names.append(name)
    return names


def _kind(text: str) -> str:
    head = text.split("\n")[0]
    if "[unchanged " in head:
        return "stub"
    if "not sent" in head:
        return "not sent"
    if "· capped" in head:
        return "capped"
    return "content"


@pytest.mark.parametrize("cap", [1000, 2000])
def test_thirty_two_files_stay_within_the_cap(reader: Reader, many: list[str], cap: int) -> None:
    answers = reader(many, mode="aggressive", cap_tokens=cap)
    assert [a.path for a in answers] == many  # every file answered, in order
    whole = "\n\n".join(a.text for a in answers)  # what the CLI prints, and the tool's text
    assert sum(a.sent_tokens for a in answers) <= cap
    assert count_tokens(whole, ENC) <= cap
    kinds = [_kind(a.text) for a in answers]
    assert kinds[0] in ("content", "capped") and "not sent" in kinds
    for a, kind in zip(answers, kinds, strict=True):
        assert a.text.startswith(f"{a.ref}={a.path} ["), a.text  # each named
        assert a.sent_tokens == count_tokens(a.text, ENC)
        if kind == "not sent":
            assert a.capped and a.archive_id is not None  # the whole view is kept, as for a capped answer
    unsent = [a for a, k in zip(answers, kinds, strict=True) if k == "not sent"]
    assert f"{len(unsent)} of 32 files not sent" in unsent[-1].text  # how to get them, said once
    assert "another call" in unsent[-1].text
    events = reader.events("file.read")
    assert [e["sent_tokens"] for e in events] == [a.sent_tokens for a in answers]  # recorded = sent


def test_a_larger_cap_sends_more(reader: Reader, many: list[str]) -> None:
    small = reader(many, mode="aggressive", cap_tokens=1000, session="s1")
    large = reader(many, mode="aggressive", cap_tokens=2000, session="s2")
    sent = [sum(1 for a in x if _kind(a.text) in ("content", "capped")) for x in (small, large)]
    assert sent[1] > sent[0] >= 1


def test_three_files_at_the_minimum_cap(reader: Reader, many: list[str]) -> None:
    answers = reader(many[:3], mode="aggressive", cap_tokens=200)
    assert count_tokens("\n\n".join(a.text for a in answers), ENC) <= 200
    assert sum(a.sent_tokens for a in answers) <= 200
    assert [a.path for a in answers] == many[:3]


def test_a_file_not_sent_is_not_held_so_its_reread_is_content(reader: Reader, many: list[str]) -> None:
    first = reader(many, mode="aggressive", cap_tokens=1000)
    unsent = next(a for a in first if _kind(a.text) == "not sent")
    again = reader.one(unsent.path, mode="aggressive")
    assert not again.stub and _kind(again.text) == "content"


def test_small_files_all_fit_and_nothing_is_said_about_the_cap(reader: Reader, many: list[str]) -> None:
    answers = reader(many[:4], mode="aggressive")
    assert all(_kind(a.text) == "content" for a in answers)
    assert not any("not sent" in a.text for a in answers)


def test_the_budget_warning_line_fits_under_the_cap_too(reader: Reader, many: list[str]) -> None:
    from leanctx.commands.budgets import SetBudget

    agent = "agent-" + "-".join(f"part{i}" for i in range(20))  # a long warning line
    reader.lc.bus.dispatch(SetBudget(limit=1000), actor=agent, project=str(reader.project), now=reader.now)
    answers = reader(many, mode="aggressive", cap_tokens=1000, agent=agent)
    assert answers[-1].budget_warning is not None  # past 80 % of 1,000 tokens: the warning is added
    assert count_tokens("\n\n".join(a.text for a in answers), ENC) <= 1000
    assert sum(a.sent_tokens for a in answers) <= 1000


def test_too_many_files_to_even_name_under_the_cap_is_refused(reader: Reader, project: Path) -> None:
    names = []
    for i in range(32):
        name = f"a/very/long/folder/name/that/costs/tokens/module_number_{i:02d}_with_a_long_name.py"
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(_module(i))
        names.append(name)
    with pytest.raises(InvalidInput) as e:
        reader(names, mode="aggressive", cap_tokens=200)
    assert e.value.code == "READ_CAP_TOO_SMALL" and "fewer files" in e.value.message


def test_the_cli_output_of_thirty_two_files_stays_within_the_cap(tmp_path: Path, project: Path,
                                                                 many: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_DB=str(tmp_path / "cli.db"), LEAN_CTX_AGENT_ID="cli-agent", LEAN_CTX_NO_DAEMON="1")
    r = subprocess.run([LEAN_CTX, "--project", str(project), "read", *many, "-m", "aggressive", "--max-tokens", "1000"],
                       capture_output=True, text=True, env=env, cwd=project, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    assert count_tokens(r.stdout, ENC) <= 1000
    assert "--max-tokens" in r.stdout  # the CLI's way to raise the cap
    for name in many:
        assert f"{name} [" in r.stdout


def test_the_cli_json_of_many_files_names_them_all_rather_than_refuse(tmp_path: Path, project: Path,
                                                                      many: list[str]) -> None:
    """``--json`` lowers the text cap for the envelopes; with 32 files that left too little to name
    them (READ_CAP_TOO_SMALL at a cap the plain read takes): the text gets the cap, the JSON warns."""
    import json

    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_DB=str(tmp_path / "cli.db"), LEAN_CTX_AGENT_ID="cli-agent", LEAN_CTX_NO_DAEMON="1")
    r = subprocess.run([LEAN_CTX, "--project", str(project), "read", *many, "-m", "aggressive", "--max-tokens",
                        "1000", "--json"], capture_output=True, text=True, env=env, cwd=project, timeout=120,
                       check=False)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [row["path"] for row in rows] == many
    assert sum(count_tokens(row["text"], ENC) for row in rows) <= 1000  # the text keeps the cap
    assert "warning[JSON_OVER_CAP]" in r.stderr  # 32 envelopes cannot fit in 1,000 tokens: said


# --- 13: diffs of changes a line diff does not show -----------------------------------------


def _diff_after(reader: Reader, project: Path, before: bytes, after: bytes) -> str:
    f = project / "f.txt"
    f.write_bytes(before)
    reader.one("f.txt", mode="full")
    f.write_bytes(after)
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))  # a new mtime even when the size is the same
    reader.now += 10
    return reader.one("f.txt", mode="diff").text


@pytest.mark.parametrize(("before", "after", "said"), [
    (b"line 1\nline 2\n", b"line 1\r\nline 2\r\n", "line endings changed: LF -> CRLF"),
    (b"line 1\r\nline 2\r\n", b"line 1\nline 2\n", "line endings changed: CRLF -> LF"),
    (b"line 1\nline 2\nline 3\n", b"line 1\r\nline 2\nline 3\n", "line endings changed: LF -> mixed (1 CRLF, 2 LF)"),
    (b"line 1\nline 2", b"line 1\nline 2\n", "final newline added"),
    (b"line 1\nline 2\n", b"line 1\nline 2", "final newline removed"),
])
def test_a_diff_says_what_changed_when_no_line_did(reader: Reader, project: Path, before: bytes, after: bytes,
                                                   said: str) -> None:
    text = _diff_after(reader, project, before, after)
    assert "no changes" not in text, text
    assert said in text.split("\n")[0], text


def test_line_endings_and_a_final_newline_together(reader: Reader, project: Path) -> None:
    text = _diff_after(reader, project, b"a\nb\n", b"a\r\nb")
    head = text.split("\n")[0]
    assert "line endings changed: LF -> CRLF" in head and "final newline removed" in head, text


def test_a_real_change_still_names_a_line_ending_change(reader: Reader, project: Path) -> None:
    text = _diff_after(reader, project, b"a\nb\nc\n", b"a\r\nB\r\nc\r\n")
    assert "+2 B" in text and "-2 b" in text
    assert "line endings changed: LF -> CRLF" in text.split("\n")[0], text


def test_bytes_the_text_does_not_show_are_not_no_changes(reader: Reader, project: Path) -> None:
    """CR-only line ends are read as LF: the decoded text is the same, the bytes are not."""
    text = _diff_after(reader, project, b"a\nb\n", b"a\rb\r")
    assert "no changes" not in text, text
    assert "bytes changed" in text.split("\n")[0], text


def test_the_diff_mode_itself_names_every_layout_change() -> None:
    def note(old: str, new: str) -> str:
        return render_diff("f.txt", new, "text", old).text.split("\n")[-1]

    assert note("a\r\nb\n", "a\nb\r\n") == "[diff · 2 lines · line endings changed on 2 lines · the text of every line is unchanged]"
    assert note("a\r", "a") == "[diff · 1 line · only line-end characters differ · the text of every line is unchanged]"
    assert note("a\n", "a\n") == "[diff · 1 line · no changes]"  # the same text: nothing changed
    assert note("a\n", "b\n") == "[diff · 1 line · +1 −1 (was 1 line) · 0 unchanged lines not shown]"


def test_an_unchanged_file_is_still_the_stub(reader: Reader, project: Path) -> None:
    (project / "f.txt").write_bytes(b"a\r\nb\r\n")
    reader.one("f.txt", mode="full")
    assert reader.one("f.txt", mode="diff").stub
