"""Colour word diffs: the removed and added words, told apart only by their colours, reach the
agent as git's plain markers (``[-removed-]``, ``{+added+}``), not run together.

Real outputs: the fixtures ``tests/fixtures/shell_audit/git_*color_words*`` and
``git_diff_word_color_custom`` (captured by ``capture_color_words.py`` there) and git run now in
temporary repositories, with the default colours and custom ones. What git itself prints with
``--word-diff=plain`` for the same change is the reference. A coloured line diff, a coloured
plain word diff, colours that cannot be told apart and any other command's coloured output are
compressed exactly as their text without the colours is.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.context.shell import archive_text, compress, split_lines
from leanctx.context.shell.dispatch import parse_command
from leanctx.context.shell.patterns.git_color_words import color_word_marks
from leanctx.context.shell.text import strip_ansi

pytestmark = pytest.mark.timeout(120)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "shell_audit"
CASES = ["git_diff_color_words", "git_diff_word_color_custom", "git_show_color_words"]
LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
_WORD_MARK = re.compile(r"\[-.*?-\]|\{\+.*?\+\}")
_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent", "LC_ALL": "C",
}
COLOURS = {  # git -c settings: how each slot is coloured
    "default": [],
    "red bold, green reverse": ["color.diff.old=red bold", "color.diff.new=green reverse"],
    "24-bit": ["color.diff.old=#ff0000", "color.diff.new=#00ff00 bold"],
    "256": ["color.diff.old=196", "color.diff.new=46"],
    "blue, yellow": ["color.diff.old=blue", "color.diff.new=yellow"],  # told by their order
    "coloured context": ["color.diff.context=white"],
}


def _git(repo: Path, *args: str, colours: list[str] | None = None) -> str:
    conf = [x for c in ["init.defaultBranch=main", *(colours or [])] for x in ("-c", c)]
    p = subprocess.run(["git", *conf, *args], cwd=repo, capture_output=True, check=True,
                       env={**os.environ, **_ENV}, timeout=60)
    return p.stdout.decode()  # not text=True: a carriage return must stay one


def _repo(tmp_path: Path) -> Path:
    """A commit, then words changed, a function moved, lines deleted and added (not committed)."""
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    funcs = [f"def f{k}(a, b):\n    return a + {k}  # step {k}\n\n\n" for k in range(8)]
    (repo / "m.py").write_text("".join(funcs) + "- item one\n- item two\ngone line\n")
    (repo / "notes.txt").write_text("The quick brown fox jumps over the lazy dog.\nunchanged\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    funcs[2] = "def f2(a, b):\n    return b + 2  # commutative step\n\n\n"
    funcs.insert(0, funcs.pop(6))  # f6 moved to the top
    (repo / "m.py").write_text("".join(funcs) + "- item one\n- item 2\nadded line\n")
    (repo / "notes.txt").write_text("The slow red fox jumps over the lazy dog.\nunchanged\n")
    return repo


def _rewritten(command: str, out: str) -> str:
    """The output as the patterns read it (colours rewritten, then stripped); the command says
    ``--word-diff=plain`` exactly when something was rewritten."""
    given = parse_command(command)
    cmd, lines = color_word_marks(given, split_lines(out))
    text = "".join(strip_ansi(x) + "\n" for x in lines)
    assert cmd.args == (given.args + ["--word-diff=plain"] if text != strip_ansi(out) else given.args)
    return text


def _hidden(c, out: str) -> list[str]:
    lines = archive_text(out, "").split("\n")
    return [lines[k - 1] for o in c.omissions for a, z in o.ranges for k in range(a, z + 1)]


def _same_as_without_colours(command: str, out: str) -> None:
    c, bare = compress(command, out), compress(command, strip_ansi(out))
    assert c.text == bare.text and c.omissions == bare.omissions


@pytest.mark.parametrize("name", CASES)
def test_fixture_changes_reach_the_agent_as_plain_marks(name: str) -> None:
    fx = json.loads((FIXTURES / f"{name}.json").read_text())
    assert (FIXTURES / f"{name}.txt").read_text() == fx["stdout"]
    c = compress(fx["command"], fx["stdout"], fx["stderr"], fx["exit_code"])
    shown = c.text.split("\n")
    for fact in fx["must_keep"]:  # lines of git's --word-diff=plain output for the same change
        assert fact in c.text, fact
    assert "The quick brownslow red fox jumps over the lazy dog." not in shown  # the words run together
    assert "The [-quick brown-]{+slow red+} fox jumps over the lazy dog." in shown
    assert "[-    return a / b-]{+* 1+}" in shown  # a removal over two lines, then an addition
    hidden = _hidden(c, fx["stdout"])
    assert hidden and not any(_WORD_MARK.search(x) for x in hidden)
    raw = split_lines(fx["stdout"])
    coloured = {strip_ansi(x) for x in raw if re.search(r"\x1b\[[0-9;]+m[^\x1b]", x) and not x.startswith("\x1b[1m")}
    assert not coloured & set(hidden)  # no line with a changed word is called context
    assert c.raw_lines == c.kept_lines + c.folded_lines + c.omitted_lines + c.blank_lines


@pytest.mark.parametrize("colours", list(COLOURS), ids=list(COLOURS))
@pytest.mark.parametrize("flag", ["--color-words", "--word-diff=color"])
def test_real_git_colours_read_as_its_plain_word_diff(tmp_path: Path, flag: str, colours: str) -> None:
    repo = _repo(tmp_path)
    plain = _git(repo, "diff", "--word-diff=plain")
    out = _git(repo, "diff", flag, colours=["color.ui=always", *COLOURS[colours]])
    assert "\x1b[" in out
    for command in (f"git diff {flag}", "git diff"):  # told by its flag, and by its content
        rewritten = _rewritten(command, out)
        assert [x.rstrip() for x in split_lines(rewritten)] == [x.rstrip() for x in split_lines(plain)]
        c = compress(command, out)
        changed = [x for x in split_lines(plain) if _WORD_MARK.search(x)]
        assert len(changed) >= 6 and all(x in c.text.split("\n") for x in changed)
        assert "- item one" not in c.text.split("\n")  # context, though it starts with "-"
        assert not any(_WORD_MARK.search(x) for x in _hidden(c, out))


def test_show_and_log_with_colour_words(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _git(repo, "commit", "-qam", "change words")
    _git(repo, "branch", "topic")
    plain = _git(repo, "show", "--word-diff=plain")
    out = _git(repo, "show", "--color-words", colours=["color.ui=always"])
    assert _rewritten("git show --color-words", out) == plain
    log = _git(repo, "log", "-p", "--decorate", "--color-words", colours=["color.ui=always"])
    assert "\x1b[1;32mtopic" in log  # the branch names of a commit line: coloured, not a change
    rewritten = _rewritten("git log -p --decorate --color-words", log)
    assert rewritten == _git(repo, "log", "-p", "--decorate", "--word-diff=plain")
    c = compress("git log -p --decorate --color-words", log)
    assert "The [-quick brown-]{+slow red+} fox jumps over the lazy dog." in c.text.split("\n")
    assert "(HEAD -> main, topic)" in c.text


def test_colours_that_cannot_be_told_apart_are_left_as_they_were(tmp_path: Path) -> None:
    """A coloured context and a removal colour that is not red: which colour is the context's is
    not certain, so nothing is rewritten and every line is kept (no line called context)."""
    repo = _repo(tmp_path)
    out = _git(repo, "diff", "--color-words", colours=["color.ui=always", "color.diff.context=white",
                                                        "color.diff.old=blue"])
    assert _rewritten("git diff --color-words", out) == strip_ansi(out)
    c = compress("git diff --color-words", out)
    assert "The quick brownslow red fox jumps over the lazy dog." in c.text.split("\n")
    assert "context lines" not in c.text


def test_colour_words_without_colours_keep_every_line(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    out = _git(repo, "diff", "--color-words", "--no-color")  # --color-words alone forces colours
    assert "\x1b[" not in out
    c = compress("git diff --color-words --no-color", out)
    assert "The quick brownslow red fox jumps over the lazy dog." in c.text.split("\n")
    assert "context lines" not in c.text


@pytest.mark.parametrize("args", [
    ["diff"], ["diff", "--color-moved"], ["diff", "--word-diff=plain"], ["diff", "--word-diff=porcelain"],
    ["log", "-p", "--decorate"],
], ids=["line diff", "moved lines", "plain words", "porcelain words", "log -p"])
def test_other_coloured_git_output_is_read_as_without_colours(tmp_path: Path, args: list[str]) -> None:
    repo = _repo(tmp_path)
    if args[0] == "log":
        _git(repo, "commit", "-qam", "change words")
    out = _git(repo, *args, colours=["color.ui=always"])
    assert "\x1b[31m" in out or "\x1b[32m" in out
    for command in (f"git {' '.join(args)}", "git diff"):
        assert _rewritten(command, out) == strip_ansi(out)
        _same_as_without_colours(command, out)


def test_a_line_diff_with_a_hunk_misread_is_not_a_word_diff(tmp_path: Path) -> None:
    """A carriage return in a changed line: that line reads as its last frame, which has no
    ``+`` prefix, so its hunk does not read as a unified one; the other hunks do, and the
    output is a coloured line diff still, not a colour word diff."""
    repo = _repo(tmp_path)
    (repo / "log.txt").write_text("Rebasing (1/3)\rerror: could not apply 7c2fb6e\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "change words")
    out = _git(repo, "log", "-p", colours=["color.ui=always"])
    assert "\x1b[32m+\x1b[m\x1b[32mRebasing (1/3)\r" in out
    _same_as_without_colours("git log -p", out)


def test_non_git_coloured_output_is_read_as_without_colours(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    grep = subprocess.run(["grep", "--color=always", "-rn", "return", "."], cwd=repo, capture_output=True,
                          text=True, check=True).stdout
    assert "\x1b[01;31m\x1b[Kreturn" in grep  # a red word inside a line
    _same_as_without_colours("grep --color=always -rn return .", grep)
    words = _git(repo, "diff", "--color-words", colours=["color.ui=always"])
    for command in ("cat changes.diff", "less -R changes.diff"):  # a colour word diff, not from git
        assert _rewritten(command, words) == strip_ansi(words)
        _same_as_without_colours(command, words)


def test_through_the_cli(tmp_path: Path) -> None:
    env = {**os.environ, "LEAN_CTX_HOME": str(tmp_path / "home"), "LEAN_CTX_NO_DAEMON": "1"}
    env.pop("LEAN_CTX_SESSION_ID", None)

    def cli(*args: str) -> dict:
        p = subprocess.run([LEAN_CTX, *args, "--json"], check=False, capture_output=True, text=True, env=env,
                           timeout=60)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    out = cli("compress", "--as", "git diff --color-words", str(FIXTURES / "git_diff_color_words.txt"))
    assert "    return[-a +-] b {++ a+}" in out["text"].split("\n")
    assert f"context lines · expand {out['archive_id']}]" in out["text"]


def test_hidden_changes_expand_marked(tmp_path: Path) -> None:
    """Past 80 changed lines in a file the rest are hidden behind a marker; expanded from the
    archive they read with git's marks too, not with the old and new words run together."""
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "t.txt").write_text("".join(f"row {k} says alpha\n" for k in range(200)))
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    (repo / "t.txt").write_text("".join(f"row {k} says beta\n" for k in range(200)))
    env = {**os.environ, **_ENV, "LEAN_CTX_HOME": str(tmp_path / "home"), "LEAN_CTX_NO_DAEMON": "1"}
    env.pop("LEAN_CTX_SESSION_ID", None)

    def cli(*args: str) -> dict:
        p = subprocess.run([LEAN_CTX, "--json", *args], check=False, capture_output=True, text=True, env=env,
                           timeout=60, cwd=repo)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    out = cli("shell", "--", "git", "-c", "color.ui=always", "diff", "--color-words")
    assert "row 0 says [-alpha-]{+beta+}" in out["text"].split("\n")
    assert "row 150 says [-alpha-]{+beta+}" not in out["text"]  # hidden (past the first 60, before the last 20)
    back = cli("expand", out["archive_id"], "--grep", "row 150 ")["text"]
    assert "row 150 says [-alpha-]{+beta+}" in back, back
    assert "alphabeta" not in back
