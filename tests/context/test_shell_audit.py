"""Audit findings on shell compression: facts the generic pass folded away, lines cut or redrawn
without a marker or an archive, git status details lost or garbled, git log markers repeated.

The git outputs are produced at test time by real git in temporary repositories (a submodule
with new commits, a diverged branch, a merge and a rebase in progress, a detached HEAD)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.context.shell import archive_text, compress

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
_CUT = re.compile(r"\[… (\d+) chars of line (\d+) omitted · expand \{archive\}\]")

pytestmark = pytest.mark.timeout(120)


def _accounted(c) -> None:
    assert c.raw_lines == c.kept_lines + c.folded_lines + c.omitted_lines + c.blank_lines
    assert sum(o.count for o in c.omissions) == c.omitted_lines


def _cli(db: Path, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> dict:
    full = {**os.environ, "LEAN_CTX_DB": str(db), "LEAN_CTX_AGENT_ID": "audit", "LEAN_CTX_NO_DAEMON": "1", **(env or {})}
    full.pop("LEAN_CTX_SESSION_ID", None)
    p = subprocess.run([LEAN_CTX, *args], check=False, capture_output=True, text=True, env=full, cwd=cwd, timeout=60)
    assert p.returncode in (0, 1), p.stderr
    return json.loads(p.stdout) if "--json" in args else {"text": p.stdout}


# ----------------------------------------------------------------------------- 1. located facts


@pytest.mark.parametrize("command", ["gcc -c x.c", "mytool"])
def test_every_located_error_and_warning_line_survives(command: str) -> None:
    errors = [f"src/m{n}.c:{n + 10}:3: error: unknown type name 'foo{n}'" for n in range(12)]
    warnings = [f"lib/x{n}.py:{n + 5}: warning: deprecated call bar{n}" for n in range(12)]
    c = compress(command, "\n".join(errors + warnings) + "\n", "", 1)
    for line in errors + warnings:
        assert line in c.text
        assert line in c.must_keep
    assert "similar lines" not in c.text
    _accounted(c)


def test_thousands_of_located_errors_all_survive_among_folded_noise() -> None:
    lines = []
    for n in range(3000):
        lines.append(f"src/gen/unit{n}.c:{n % 97 + 1}:5: error: conflicting types for 'f{n}'")
        lines += [f"  building object {n}.{k} in 0.{k}s" for k in range(6)]
    c = compress("mytool", "\n".join(lines) + "\n", "", 2)
    assert c.pattern == "generic"  # compressed, not sent raw
    shown = [ln for ln in c.text.split("\n") if ": error: conflicting types" in ln]
    assert len(shown) == 3000
    assert c.omitted_lines > 0 and "[exit 2]" in c.text
    _accounted(c)


def test_a_located_error_repeated_with_later_timestamps_is_announced_not_repeated() -> None:
    lines = [f"2026-11-30T10:00:0{s}Z client.py:88: error: retry failed" for s in range(8)]
    c = compress("./client", "\n".join(lines) + "\n", "", 1)
    assert c.text.count("client.py:88: error: retry failed") == 1
    assert "[… 7 lines omitted (same line, later timestamps) · expand {archive}]" in c.text


# ----------------------------------------------------------------------------- 2a. long lines


def test_a_long_line_keeps_its_head_and_tail_and_counts_as_omitted() -> None:
    line = "start " + "x" * 3000 + " ERROR at the end src/a.py:10"
    c = compress("mytool", line + "\n", "", 0)
    assert c.text.startswith("start xxx")
    assert c.text.endswith("ERROR at the end src/a.py:10")
    (m,) = _CUT.finditer(c.text)
    assert m.group(2) == "1"
    shown = len(c.text) - len(m.group(0))
    assert int(m.group(1)) + shown == len(line)  # every character is either shown or counted
    assert c.omitted_lines == 1 and [(o.count, o.ranges) for o in c.omissions] == [(1, [(1, 1)])]
    assert "src/a.py:10" in c.must_keep
    _accounted(c)


def test_a_long_fact_line_keeps_its_location_and_message_start_from_the_middle() -> None:
    line = "a" * 2500 + " src/mid.py:77: error: bad thing happened here " + "b" * 2500
    plain = "c" * 1500  # no fact: head and tail only
    c = compress("mytool", f"{line}\nok\n{plain}\n", "", 1)
    assert "src/mid.py:77: error: bad thing happened here" in c.text
    cuts = _CUT.findall(c.text)
    assert {ln for _, ln in cuts} == {"1", "3"}
    assert sum(int(n) for n, ln in cuts if ln == "1") + sum(
        len(x) for x in re.split(_CUT, c.text.split("\n")[0])[::3]) == len(line)
    assert c.omitted_lines == 2 and c.kept_lines == 1
    _accounted(c)


def test_long_line_is_archived_and_expandable_through_the_cli(tmp_path: Path) -> None:
    db = tmp_path / "data" / "events.db"
    line = "start " + "x" * 3000 + " ERROR at the end src/a.py:10"
    captured = tmp_path / "out.txt"
    captured.write_text(line + "\n")
    out = _cli(db, "compress", "--as", "mytool", str(captured), "--json")
    assert out["archive_id"] and out["omitted_lines"] == 1
    assert f"of line 1 omitted · expand {out['archive_id']}]" in out["text"]
    assert out["text"].endswith("ERROR at the end src/a.py:10")
    full = _cli(db, "expand", out["archive_id"], "--lines", "1", "--json")
    assert full["text"] == "1:" + line


def test_a_long_grep_match_is_clipped_with_a_marker_naming_its_line() -> None:
    lines = [f"src/f{k}.py:{k}:    value_{k} = compute()" for k in range(30)]
    lines[7] = "src/min.js:1:" + "var a=1;" * 200
    c = compress("grep -rn value src", "\n".join(lines) + "\n", "", 0)
    (m,) = _CUT.finditer(c.text)
    assert m.group(2) == "8" and int(m.group(1)) == len("var a=1;" * 200) - 160
    assert 8 in {k for o in c.omissions for a, z in o.ranges for k in range(a, z + 1)}
    _accounted(c)


# ----------------------------------------------------------------------------- 2b. redraws


def _frames(n: int) -> str:
    return "".join(f"Downloading {i}% |{'#' * (i // 5)}| eta 0:00:{i:02d}\r" for i in range(n))


def test_redraw_keeps_the_frame_with_a_fact_and_counts_the_progress_frames() -> None:
    out = "start\n" + _frames(100) + "Done: src/x.py:3: error: boom\rDone.\nend\n"
    c = compress("mytool", out, "", 0)
    assert "Done: src/x.py:3: error: boom␍Done." in c.text
    assert "[… 100 progress frames of 1 redrawn line omitted · expand {archive}]" in c.text
    assert "Downloading" not in c.text
    assert c.omitted_lines == 1 and [(o.reason, o.ranges) for o in c.omissions] == [("progress frames", [(2, 2)])]
    archived = archive_text(out, "").split("\n")
    assert archived[1].startswith("Downloading 0% || eta 0:00:00␍Downloading 1%")
    assert archived[1].endswith("␍Done: src/x.py:3: error: boom␍Done.")
    assert "src/x.py:3" in " ".join(c.must_keep)
    _accounted(c)


def test_a_short_redraw_is_never_cut_silently() -> None:
    c = compress("mytool", "Downloading 10%\rDone: src/x.py:3: error: boom\rDone.\n", "", 0)
    assert "src/x.py:3: error: boom" in c.text and "Downloading 10%" in c.text  # raw: nothing to gain
    # a few cheap frames among other output: shown rather than announced
    c = compress("mytool", "a\n10%\r50%\rdone\n" + "waiting for the build lock\n" * 40, "", 0)
    assert c.pattern == "generic" and "10%␍50%␍done" in c.text and c.omitted_lines == 0
    # CRLF line ends redraw nothing
    c = compress("mytool", "".join(f"line {i} of a windows tool\r\n" for i in range(30)), "", 0)
    assert "frame" not in c.text and "\r" not in c.text


def test_redraw_frames_are_archived_and_expandable_through_the_cli(tmp_path: Path) -> None:
    db = tmp_path / "data" / "events.db"
    captured = tmp_path / "out.txt"
    captured.write_bytes(("start\n" + _frames(60) + "Done: src/x.py:3: error: boom\rDone.\nend\n").encode())
    out = _cli(db, "compress", "--as", "mytool", str(captured), "--json")
    assert out["archive_id"] and out["omitted_lines"] == 1
    assert f"[… 60 progress frames of 1 redrawn line omitted · expand {out['archive_id']}]" in out["text"]
    got = _cli(db, "expand", out["archive_id"], "--grep", "boom", "--json")
    assert got["text"].startswith("2:Downloading 0%") and "Downloading 59%" in got["text"]


# ----------------------------------------------------------------------------- 3. git status

_GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C", "LANG": "C",
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
}


def _git(cwd: Path, *args: str, check: bool = True) -> str:
    p = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", "-c", "protocol.file.allow=always", "-c", "advice.detachedHead=false",
         *args],
        check=False, cwd=cwd, capture_output=True, text=True, env={**os.environ, **_GIT_ENV}, timeout=60,
    )
    if check:
        assert p.returncode == 0, (args, p.stderr)
    return p.stdout


def _repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True)
    _git(path, "init", "-q")
    for name, text in files.items():
        (path / name).write_text(text)
    _git(path, "add", ".")
    _git(path, "commit", "-qm", "init")
    return path


def _commit(repo: Path, name: str, text: str, msg: str) -> None:
    (repo / name).write_text(text)
    _git(repo, "add", name)
    _git(repo, "commit", "-qm", msg)


def _status(repo: Path):
    out = _git(repo, "status")
    c = compress("git status", out, "", 0)
    _accounted(c)
    return out, c


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("git")
    lib1 = _repo(base / "lib1", {"a": "a\n"})
    _repo(base / "lib2", {"b": "b\n"})
    top = _repo(base / "top", {"x": "x\n"})
    _git(top, "submodule", "-q", "add", "../lib1", "sub")
    _git(top, "submodule", "-q", "add", "../lib2", "dep")
    _git(top, "commit", "-qm", "submodules")
    _commit(top / "sub", "c", "c\n", "new in sub")  # sub: new commits
    (top / "dep" / "b").write_text("changed\n")  # dep: modified and untracked content
    (top / "dep" / "untracked.txt").write_text("u\n")
    assert lib1.exists()

    origin = _repo(base / "origin", {"f": "1\n"})
    _git(origin, "checkout", "-qb", "feature/x")
    _git(base, "clone", "-q", "origin", "clone")
    clone = base / "clone"
    _git(clone, "checkout", "-q", "feature/x")
    _commit(clone, "l1", "l1\n", "local 1")
    _commit(clone, "l2", "l2\n", "local 2")
    for k in (1, 2, 3):
        _commit(origin, f"r{k}", f"r{k}\n", f"remote {k}")
    _git(clone, "fetch", "-q")

    ahead = base / "ahead"
    _git(base, "clone", "-q", "-b", "feature/x", "origin", "ahead")
    _commit(ahead, "z", "z\n", "ahead 1")
    behind = base / "behind"
    _git(base, "clone", "-q", "-b", "feature/x", "origin", "behind")
    _git(behind, "reset", "-q", "--hard", "HEAD~2")

    def conflicted(name: str) -> Path:
        r = _repo(base / name, {"a.txt": "base\n"})
        _git(r, "checkout", "-qb", "topic")
        _commit(r, "a.txt", "topic\n", "topic")
        _git(r, "checkout", "-q", "main")
        _commit(r, "a.txt", "main\n", "main")
        return r

    merge = conflicted("merge")
    _git(merge, "merge", "topic", check=False)
    rebase = conflicted("rebase")
    _git(rebase, "checkout", "-q", "topic")
    _git(rebase, "rebase", "main", check=False)

    detached = _repo(base / "detached", {"a.txt": "1\n"})
    _commit(detached, "a.txt", "2\n", "second")
    _git(detached, "checkout", "-q", "HEAD~1")
    (detached / "a.txt").write_text("dirty\n")
    return {"top": top, "diverged": clone, "ahead": ahead, "behind": behind, "merge": merge, "rebase": rebase,
            "detached": detached}


def test_git_status_keeps_a_submodules_state(repos: dict[str, Path]) -> None:
    raw, c = _status(repos["top"])
    assert "modified:   sub (new commits)" in raw  # what real git printed
    assert "M sub (new commits)" in c.text
    assert "M dep (modified content, untracked content)" in c.text
    assert "sub (new commits)" in c.must_keep
    assert "(commit or discard" not in c.text  # a fixed advice sentence


def test_git_status_renders_a_diverged_branch(repos: dict[str, Path]) -> None:
    raw, c = _status(repos["diverged"])
    assert "have diverged," in raw and "and have 2 and 3 different commits each" in raw
    assert c.text.startswith("branch feature/x, diverged from 'origin/feature/x': 2 and 3 different commits each\n")
    assert ",," not in c.text and "and have" not in c.text


def test_git_status_renders_ahead_and_behind(repos: dict[str, Path]) -> None:
    _, c = _status(repos["ahead"])
    assert c.text.startswith("branch feature/x, ahead of 'origin/feature/x' by 1 commit\n")
    raw, c = _status(repos["behind"])
    assert "can be fast-forwarded" in raw
    assert c.text.startswith("branch feature/x, behind 'origin/feature/x' by 2 commits, and can be fast-forwarded")


def test_git_status_during_a_merge_and_a_rebase(repos: dict[str, Path]) -> None:
    raw, c = _status(repos["merge"])
    assert '(use "git merge --abort" to abort the merge)' in raw
    assert "You have unmerged paths." in c.text and "unmerged (1): UU a.txt" in c.text
    assert "git merge --abort" not in c.text  # fixed advice: counted as blank
    raw, c = _status(repos["rebase"])
    assert "You are currently rebasing branch 'topic' on '" in c.text
    assert re.search(r"rebase in progress; onto [0-9a-f]{7}", c.text)
    assert "unmerged (1): UU a.txt" in c.text
    assert "git rebase --abort" in raw and "git rebase --abort" not in c.text


def test_git_status_on_a_detached_head(repos: dict[str, Path]) -> None:
    raw, c = _status(repos["detached"])
    head = raw.split("\n")[0]
    assert head.startswith("HEAD detached at ")
    assert c.text.startswith(head + "\n")
    assert "unstaged (1): M a.txt" in c.text or c.pattern == "raw"


def test_git_status_through_the_cli_in_a_real_repo(repos: dict[str, Path], tmp_path: Path) -> None:
    out = _cli(tmp_path / "data" / "events.db", "shell", "--json", "--", "git", "status", cwd=repos["diverged"],
               env=_GIT_ENV)
    assert out["pattern"] == "git"
    assert "branch feature/x, diverged from 'origin/feature/x': 2 and 3 different commits each" in out["text"]


# ----------------------------------------------------------------------------- 4. git log


@pytest.fixture(scope="module")
def long_history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = _repo(tmp_path_factory.mktemp("log") / "r", {"f": "0\n"})
    for k in range(1, 42):
        _commit(repo, "f", f"{k}\n", f"commit number {k}")
    return repo  # 42 commits


def test_git_log_states_the_older_commits_once(long_history: Path, tmp_path: Path) -> None:
    db = tmp_path / "data" / "events.db"
    out = _cli(db, "shell", "--json", "--", "git", "log", cwd=long_history, env=_GIT_ENV)
    markers = re.findall(r"\[… \d+ lines? omitted \([^)]*older commits\) · expand A[0-9a-f]+\]", out["text"])
    assert markers == [f"[… 8 lines omitted (2 older commits) · expand {out['archive_id']}]"]
    assert out["omitted_lines"] == 8
    assert "commit number 2" in _cli(db, "expand", out["archive_id"], "--json")["text"]


def test_git_log_with_stats_omits_older_commits_whole_under_one_marker(long_history: Path) -> None:
    raw = _git(long_history, "log", "--stat")
    c = compress("git log --stat", raw, "", 0)
    assert len(re.findall(r"older commits", c.text)) == 1
    assert "[… " in c.text and "(2 older commits)" in c.text
    assert "commit number 1\n" not in c.text + "\n" and "init" not in c.text
    _accounted(c)


def test_git_log_stat_writes_an_empty_files_row_compactly(tmp_path: Path) -> None:
    """``empty.py | 0`` (no bar) is a stat row like the others: path and count, no padding."""
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    _commit(repo, "a_rather_long_file_name.txt", "hi\n", "first")
    _commit(repo, "empty.py", "", "add an empty module")
    raw = _git(repo, "log", "--stat")
    assert re.search(r"^ empty\.py\s+\| 0$", raw, re.M)  # what git prints
    c = compress("git log --stat", raw, "", 0)
    assert " empty.py 0" in c.text.splitlines()
    assert "empty.py" in c.must_keep
    assert not re.search(r"empty\.py\s{2,}", c.text)
    _accounted(c)
