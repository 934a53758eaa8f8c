"""Shell-compression audit, git: merge conflicts, word diffs and combined diffs.

Real outputs captured during the audit (``tests/fixtures/shell_audit/git_*``: the raw text and a
JSON of the corpus's shape, kept out of ``tests/fixtures/shell`` so that the benchmark's figures
stay comparable), and outputs made at test time by real git in temporary repositories: every
kind of conflict in a merge, a pull, a cherry-pick and a rebase; an octopus merge's combined
diff; word diffs in each of git's forms. A marker's reason must be true of every line it hides.
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
from leanctx.context.tokens import count_tokens

pytestmark = pytest.mark.timeout(120)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "shell_audit"
CASES = sorted(FIXTURES.glob("git_*.json"))
LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
_INLINE = re.compile(r"\[… (\d+) lines? omitted \([^)]*\) · expand \{archive\}\]")
_FOOTER = re.compile(r"\[… (\d+) lines? omitted: [^\]]* · expand \{archive\}\]")
_WORD_MARK = re.compile(r"\[-.*?-\]|\{\+.*?\+\}")


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _compress(fx: dict):
    return compress(fx["command"], fx["stdout"], fx["stderr"], fx["exit_code"])


def _omitted(c, stdout: str, stderr: str) -> dict[str, list[str]]:
    """reason -> the raw lines (as archived) that the omissions with that reason hide."""
    lines = archive_text(stdout, stderr).split("\n")
    out: dict[str, list[str]] = {}
    for o in c.omissions:
        out.setdefault(o.reason, []).extend(lines[k - 1] for a, z in o.ranges for k in range(a, z + 1))
    return out


def _accounted(c) -> None:
    assert c.raw_lines == c.kept_lines + c.folded_lines + c.omitted_lines + c.blank_lines
    assert sum(o.count for o in c.omissions) == c.omitted_lines
    stated = sum(int(n) for rx in (_INLINE, _FOOTER) for n in rx.findall(c.text))
    assert stated == c.omitted_lines, "the markers must state every omitted line"


def _combined_changes(lines: list[str]) -> tuple[list[str], list[str]]:
    """(changed, context) hunk lines of a combined diff: a hunk header ``@@@ … @@@`` has one
    ``@`` more than the diff has parents, and a line is a change when any of its first N
    columns is ``+`` or ``-``."""
    changed: list[str] = []
    context: list[str] = []
    n = 0
    for x in lines:
        if x.startswith("diff --"):
            n = 0
        elif re.match(r"^@@@+ ", x):
            n = len(x) - len(x.lstrip("@")) - 1
        elif n:
            (changed if set(x[:n]) & {"+", "-"} else context).append(x)
    return changed, context


# ----------------------------------------------------------------------------- the audit's cases


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_audit_case(path: Path) -> None:
    fx = _load(path)
    assert path.with_suffix(".txt").read_bytes().decode() == fx["stdout"] + fx["stderr"]
    c = _compress(fx)
    for fact in fx["must_keep"]:
        assert fact in c.text, f"lost must-keep fact {fact!r}"
    for fact in c.must_keep:
        assert fact in c.text
    if fx["exit_code"]:
        assert c.text.endswith(f"[exit {fx['exit_code']}]")
    assert c.sent_tokens == count_tokens(c.text) <= c.raw_tokens
    _accounted(c)


def test_merge_conflicts_every_conflict_line_survives_the_auto_merging_lines_are_counted() -> None:
    fx = _load(FIXTURES / "git_merge_conflict.json")
    c = _compress(fx)
    raw = split_lines(fx["stdout"])
    conflicts = [x for x in raw if x.startswith("CONFLICT")]
    assert len(conflicts) == 45
    shown = c.text.split("\n")
    assert [x for x in shown if x.startswith("CONFLICT")] == conflicts
    assert "Automatic merge failed; fix conflicts and then commit the result." in shown
    assert not any(x.startswith("Auto-merging") for x in shown)
    hidden = _omitted(c, fx["stdout"], fx["stderr"])
    assert list(hidden) == ["Auto-merging lines"]
    assert hidden["Auto-merging lines"] == [x for x in raw if x.startswith("Auto-merging ")]
    assert c.sent_tokens < c.raw_tokens * 2 / 3


def test_rebase_conflict_stays_as_it_was() -> None:
    fx = _load(FIXTURES / "git_rebase_conflict.json")
    c = _compress(fx)
    assert c.pattern == "raw"  # short: nothing to gain


def test_word_diff_changed_lines_are_changes_and_context_is_context() -> None:
    fx = _load(FIXTURES / "git_diff_word.json")
    c = _compress(fx)
    for x in split_lines(fx["stdout"]):
        if _WORD_MARK.search(x):
            assert x in c.text.split("\n")
    for reason, lines in _omitted(c, fx["stdout"], fx["stderr"]).items():
        assert not any(_WORD_MARK.search(x) for x in lines), reason


def test_colour_word_diff_reads_as_the_plain_one() -> None:
    """A ``--word-diff=color`` diff's colours are read as git's plain markers before they are
    stripped: it is compressed as the ``--word-diff`` diff of the same change is (the colours
    that cannot be told apart are in tests/context/test_shell_color_words.py)."""
    c = _compress(_load(FIXTURES / "git_diff_word_color.json"))
    assert c.text == _compress(_load(FIXTURES / "git_diff_word.json")).text
    assert "    returna + b + a  # featurecommutative" not in c.text  # the old and new words run together


@pytest.mark.parametrize("name", ["git_show_merge", "git_diff_cc"])
def test_combined_diff_changes_survive_and_only_context_is_called_context(name: str) -> None:
    fx = _load(FIXTURES / f"{name}.json")
    c = _compress(fx)
    raw = split_lines(fx["stdout"])
    changed, context = _combined_changes(raw)
    shown = c.text.split("\n")
    assert changed and all(x in shown for x in changed)
    hidden = _omitted(c, fx["stdout"], fx["stderr"])
    assert set(hidden.get("context lines", [])) <= set(context)
    assert not any(x.startswith("index ") for x in shown)


def test_diff_cc_shows_both_sides_of_a_conflict() -> None:
    fx = _load(FIXTURES / "git_diff_cc.json")
    text = _compress(fx).text
    head = text.index("++<<<<<<< HEAD")
    assert text.index(" +line one of file 1 MAIN") > head
    assert text.index(" +    indented value = 100") < text.index("++=======")


def test_merge_conflict_through_the_cli_is_archived_and_expandable(tmp_path: Path) -> None:
    env = {**os.environ, "LEAN_CTX_HOME": str(tmp_path / "home"), "LEAN_CTX_NO_DAEMON": "1"}
    env.pop("LEAN_CTX_SESSION_ID", None)

    def cli(*args: str) -> dict:
        p = subprocess.run([LEAN_CTX, *args, "--json"], check=False, capture_output=True, text=True, env=env,
                           timeout=60)
        assert p.returncode in (0, 1), p.stderr
        return json.loads(p.stdout)

    out = cli("compress", "--as", "git merge feature", str(FIXTURES / "git_merge_conflict.txt"), "--exit-code", "1")
    assert len(re.findall(r"^CONFLICT", out["text"], re.MULTILINE)) == 45
    assert f"omitted (Auto-merging lines) · expand {out['archive_id']}]" in out["text"]
    got = cli("expand", out["archive_id"], "--grep", "^Auto-merging")
    assert len(re.findall(r"^\d+:Auto-merging src/", got["text"], re.MULTILINE)) == 46


# ----------------------------------------------------------------------------- real git, now

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent", "LC_ALL": "C",
}


def _run(cwd: Path, *args: str, ok: bool = True) -> tuple[str, str, int]:
    p = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", "-c", "protocol.file.allow=always", "-c", "merge.conflictStyle=merge",
         "-c", "pull.rebase=false", *args],
        check=False, cwd=cwd, capture_output=True, text=True, env={**os.environ, **_GIT_ENV}, timeout=60,
    )
    if ok:
        assert p.returncode == 0, (args, p.stderr)
    return p.stdout, p.stderr, p.returncode


def _write(repo: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)


def _commit_all(repo: Path, msg: str) -> None:
    _run(repo, "add", "-A", ".")
    _run(repo, "commit", "-qm", msg)


N_FILES = 40


def _diverged(repo: Path) -> Path:
    """main and topic both change src/f<k>.txt (content conflicts) and, between them, make
    every other kind of conflict git reports."""
    repo.mkdir()
    _run(repo, "init", "-q")
    base = {f"src/f{k}.txt": f"base {k}\nshared\n" for k in range(N_FILES)}
    base |= {"m.txt": "base m\n", "r.txt": "base r\n", "clean.txt": "a\nb\nc\nd\ne\n"}
    _write(repo, base)
    _commit_all(repo, "base")
    _run(repo, "checkout", "-qb", "topic")
    _write(repo, {f"src/f{k}.txt": f"topic {k}\nshared\n" for k in range(N_FILES)})
    _write(repo, {"n.txt": "topic new\n", "d.txt": "a file\n", "clean.txt": "a\nb\nc\nd\nE\n"})
    (repo / "m.txt").unlink()
    (repo / "r.txt").rename(repo / "r2.txt")
    _commit_all(repo, "topic")
    _run(repo, "checkout", "-q", "main")
    _write(repo, {f"src/f{k}.txt": f"main {k}\nshared\n" for k in range(N_FILES)})
    _write(repo, {"n.txt": "main new\n", "d.txt/in": "a dir\n", "m.txt": "main m\n", "clean.txt": "A\nb\nc\nd\ne\n"})
    (repo / "r.txt").unlink()
    _commit_all(repo, "main")
    return repo


def _assert_conflicts_kept(out: str, err: str, code: int, command: str) -> str:
    raw = split_lines(out) + split_lines(err)
    conflicts = [x for x in raw if x.startswith("CONFLICT (")]
    assert len(conflicts) >= N_FILES, raw
    c = compress(command, out, err, code)
    assert c.pattern == "git"
    shown = c.text.split("\n")
    assert [x for x in shown if x.startswith("CONFLICT (")] == conflicts
    assert not any(x.startswith("Auto-merging ") for x in shown)
    assert c.sent_tokens < c.raw_tokens
    _accounted(c)
    return c.text


def test_every_kind_of_merge_conflict_survives(tmp_path: Path) -> None:
    repo = _diverged(tmp_path / "r")
    out, err, code = _run(repo, "merge", "topic", ok=False)
    assert code == 1
    raw = out + err
    for kind in ("content", "add/add", "modify/delete", "rename/delete", "file/directory"):
        assert f"CONFLICT ({kind})" in raw
    text = _assert_conflicts_kept(out, err, code, "git merge topic")
    assert "Automatic merge failed; fix conflicts and then commit the result." in text

    # and git diff, during that conflict: a combined diff of each path, then the unmerged ones
    out, err, _ = _run(repo, "diff")
    c = compress("git diff", out, err, 0)
    changed, _ = _combined_changes(split_lines(out))
    shown = c.text.split("\n")
    assert len(changed) >= 5 * N_FILES and all(x in shown for x in changed)
    unmerged = [x for x in split_lines(out) if x.startswith("* Unmerged path ")]
    assert unmerged and all(x in shown for x in unmerged)
    _accounted(c)


def test_pull_with_conflicts_keeps_them(tmp_path: Path) -> None:
    origin = _diverged(tmp_path / "origin")
    _run(tmp_path, "clone", "-q", "-b", "main", "origin", "clone")
    clone = tmp_path / "clone"
    _run(clone, "reset", "-q", "--hard", "HEAD~1")
    _write(clone, {f"src/f{k}.txt": f"clone {k}\nshared\n" for k in range(N_FILES)})
    _commit_all(clone, "clone")
    out, err, code = _run(clone, "pull", "origin", "main", ok=False)
    assert code == 1 and origin.exists()
    text = _assert_conflicts_kept(out, err, code, "git pull origin main")
    assert "Automatic merge failed; fix conflicts and then commit the result." in text


def test_cherry_pick_and_rebase_conflicts_keep_them(tmp_path: Path) -> None:
    repo = _diverged(tmp_path / "r")
    out, err, code = _run(repo, "cherry-pick", "topic", ok=False)
    assert code == 1
    text = _assert_conflicts_kept(out, err, code, "git cherry-pick topic")
    assert re.search(r"^error: could not apply [0-9a-f]+\.\.\. topic$", text, re.MULTILINE)
    _run(repo, "cherry-pick", "--abort")
    _run(repo, "checkout", "-q", "topic")
    out, err, code = _run(repo, "rebase", "main", ok=False)
    assert code == 1
    text = _assert_conflicts_kept(out, err, code, "git rebase main")
    assert re.search(r"^Could not apply [0-9a-f]+\.\.\. topic$", text, re.MULTILINE)


def test_octopus_merge_combined_diff_has_three_columns(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    _run(repo, "init", "-q")
    lines = [f"line {k}" for k in range(60)]
    _write(repo, {"x.txt": "\n".join(lines) + "\n"})
    _commit_all(repo, "base")
    for branch, at in (("p", 26), ("q", 30)):
        _run(repo, "checkout", "-qb", branch, "main")
        _write(repo, {"x.txt": "\n".join(x + (f" {branch}" if k == at else "") for k, x in enumerate(lines)) + "\n"})
        _commit_all(repo, branch)
    _run(repo, "checkout", "-q", "main")
    _write(repo, {"x.txt": "\n".join(x + (" main" if k == 28 else "") for k, x in enumerate(lines)) + "\n"})
    _commit_all(repo, "main")
    _run(repo, "merge", "-q", "--no-edit", "p", "q")
    for flag in ("--cc", "-c"):
        out, err, _ = _run(repo, "show", flag, "HEAD")
        assert "@@@@ " in out
        changed, context = _combined_changes(split_lines(out))
        c = compress(f"git show {flag} HEAD", out, err, 0)
        shown = c.text.split("\n")
        # the parents: main, p, q
        expected = {"- -line 26", "+ +line 26 p", " --line 28", " ++line 28 main", "-- line 30", "++ line 30 q"}
        assert expected <= set(changed)
        assert all(x in shown for x in changed)
        hidden = _omitted(c, out, err)
        assert hidden["context lines"] and set(hidden["context lines"]) <= set(context)
        _accounted(c)


def _word_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "w"
    repo.mkdir()
    _run(repo, "init", "-q")
    old = ["def add(a, b):", "    return a + b", "", "- item one", "- item two", "plain line", "gone line"]
    old += [f"    filler {k}" for k in range(20)]
    _write(repo, {"a.py": "\n".join(old) + "\n"})
    _commit_all(repo, "base")
    new = ["def add(a, b):", "    return b + a", "", "- item one", "- item 2", "plain line"]
    new += [f"    filler {k}" for k in range(20)] + ["    added at the end"]
    _write(repo, {"a.py": "\n".join(new) + "\n"})
    return repo


@pytest.mark.parametrize("flags", [["--word-diff"], ["--word-diff=plain"], ["--word-diff-regex=[a-z]+"], []])
def test_plain_word_diff_by_flag_and_by_content(tmp_path: Path, flags: list[str]) -> None:
    repo = _word_repo(tmp_path)
    out, err, _ = _run(repo, "diff", "-U10", *(flags or ["--word-diff"]))
    c = compress(" ".join(["git", "diff", "-U10", *flags]), out, err, 0)  # [] : told only by the content
    shown = c.text.split("\n")
    changed = [x for x in split_lines(out) if _WORD_MARK.search(x)]
    assert len(changed) == 4 and all(x in shown for x in changed)
    for reason, lines in _omitted(c, out, err).items():
        assert not any(_WORD_MARK.search(x) for x in lines), reason
    assert "- item one" not in shown  # a context line starting with "-": not a change
    _accounted(c)


def test_porcelain_word_diff(tmp_path: Path) -> None:
    repo = _word_repo(tmp_path)
    out, err, _ = _run(repo, "diff", "-U10", "--word-diff=porcelain")
    c = compress("git diff -U10 --word-diff=porcelain", out, err, 0)
    shown = c.text.split("\n")
    for x in ("-a +", "++ a", "-two", "+2", "-gone line", "+added at the end"):
        assert x in shown
    hidden = _omitted(c, out, err)
    assert hidden["context lines"]
    assert all(x == "~" or x.startswith(" ") for x in hidden["context lines"])
    assert " - item one" in hidden["context lines"]
    _accounted(c)


@pytest.mark.parametrize("flag", ["--color-words", "--word-diff=color"])
def test_colour_word_diff_from_real_git(tmp_path: Path, flag: str) -> None:
    repo = _word_repo(tmp_path)
    out, err, _ = _run(repo, "diff", "-U10", flag)
    plain, _, _ = _run(repo, "diff", "-U10", "--word-diff=plain")
    assert "\x1b[" in out
    for command in (f"git diff -U10 {flag}", "git diff"):  # by its flag, and by its content
        c = compress(command, out, err, 0)
        assert c.text == compress("git diff -U10 --word-diff=plain", plain, "", 0).text
        assert "    return[-a +-] b {++ a+}" in c.text.split("\n")
        assert "[-gone line-]" in c.text and "    {+added at the end+}" in c.text
        _accounted(c)


def test_the_paths_a_merge_refuses_to_overwrite_all_survive(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    _run(repo, "init", "-q")
    _write(repo, {f"src/g{k}.txt": "base\n" for k in range(120)})
    _commit_all(repo, "base")
    _run(repo, "checkout", "-qb", "topic")
    _write(repo, {f"src/g{k}.txt": "topic\n" for k in range(120)})
    _commit_all(repo, "topic")
    _run(repo, "checkout", "-q", "main")
    _write(repo, {f"src/g{k}.txt": "local edit\n" for k in range(120)})
    out, err, code = _run(repo, "merge", "topic", ok=False)
    paths = [x.strip() for x in split_lines(out + err) if x.startswith("\t")]
    assert code != 0 and len(paths) == 120
    c = compress("git merge topic", out, err, code)
    shown = {x.strip() for x in c.text.split("\n")}
    assert set(paths) <= shown
    _accounted(c)


def test_no_newline_note_goes_with_the_line_it_qualifies(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    _run(repo, "init", "-q")
    _write(repo, {"a.txt": "".join(f"line {k}\n" for k in range(30)) + "last"})
    _commit_all(repo, "base")
    _write(repo, {"a.txt": "".join(f"line {k}\n" for k in range(30)) + "changed last"})
    _commit_all(repo, "change")
    out, err, _ = _run(repo, "log", "-p", "-n", "2")
    assert out.count("\\ No newline at end of file") == 3
    c = compress("git log -p -n 2", out, err, 0)
    hidden = _omitted(c, out, err)
    # after "-last" and "+changed last", and after "+last" in the commit that added the file
    assert c.text.count("\\ No newline at end of file") == 3
    assert all(x.startswith(" ") for x in hidden["context lines"])  # the separators before a commit: blank
    _accounted(c)
