"""``tree`` in a git work tree lists an untracked nested repository's files, as the walk outside
git does: ``git ls-files -co`` reports such a repository as one ``nested/`` entry (git does not
descend into it), which is neither a file nor a link. Its contents are listed by its own rules
(its own ``.gitignore``), a repository nested in it too; through the operation and the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.ops.tree import tree

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
_GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}


def write(root: Path, rel: str, text: str = "x\n") -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, env=_GIT_ENV, capture_output=True)


@pytest.fixture()
def outer(tmp_path: Path) -> Path:
    """A git repo with a tracked file, a plain untracked folder and an untracked nested repo
    (its own ignore rule, a subfolder, and a repo nested in it)."""
    root = tmp_path / "outer"
    write(root, "a.txt")
    write(root, ".gitignore", "*.log\n")
    git(root, "init", "-q")
    git(root, "add", "a.txt", ".gitignore")
    git(root, "commit", "-qm", "init")
    write(root, "plain/p.txt")
    nested = root / "nested"
    write(nested, "inner.txt")
    write(nested, "sub/s.txt")
    write(nested, "ign.txt")
    write(nested, ".gitignore", "ign.txt\n")
    git(nested, "init", "-q")
    deeper = nested / "deeper"
    write(deeper, "d.txt")
    git(deeper, "init", "-q")
    return root


def test_git_reports_the_nested_repo_as_one_entry(outer: Path) -> None:
    """The premise: git lists the nested repository as ``nested/``, not its files."""
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=outer, capture_output=True,
                         text=True, check=True, env=_GIT_ENV).stdout.split()
    assert "nested/" in out and not any(p.startswith("nested/") and p != "nested/" for p in out)


def test_the_nested_repo_is_listed_with_its_files(outer: Path) -> None:
    t = tree(outer, depth=10)
    assert t.source == "git"
    lines = t.text.splitlines()
    assert "  nested/ (4)" in lines, t.text  # .gitignore, inner.txt, sub/s.txt, deeper/d.txt (ign.txt ignored)
    assert "    inner.txt" in lines and "      s.txt" in lines and "      d.txt" in lines
    assert not any("ign.txt" in ln for ln in lines)  # its own .gitignore holds
    assert t.files == 7  # a.txt, .gitignore, plain/p.txt + the nested repo's 4 files
    paths = {e.path for e in t.entries}
    assert {"nested", "nested/inner.txt", "nested/sub/s.txt", "nested/deeper/d.txt"} <= paths


def test_listing_the_nested_repo_itself(outer: Path) -> None:
    t = tree(outer, "nested", depth=10)
    assert t.text.splitlines()[0] == "nested/ (4 files, 2 folders)", t.text
    assert "  inner.txt" in t.text.splitlines()
    assert [e.path for e in t.entries if e.type == "file"] == [
        "nested/deeper/d.txt", "nested/sub/s.txt", "nested/.gitignore", "nested/inner.txt"]


def test_the_walk_and_git_agree_on_the_nested_repo(outer: Path, tmp_path: Path) -> None:
    """Outside git (the walk) the same folder is listed the same way."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(outer / "nested", copy / "nested", ignore=shutil.ignore_patterns(".git"))
    walked = tree(copy, "nested", depth=10)
    assert walked.source == "walk"
    assert walked.text == tree(outer, "nested", depth=10).text


def test_the_cli_lists_the_nested_repo(outer: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_HOME=str(tmp_path / "home"), LEAN_CTX_NO_DAEMON="1")
    r = subprocess.run([LEAN_CTX, "--project", str(outer), "tree", "nested"], capture_output=True, text=True,
                       env=env, cwd=outer, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "nested/ (4 files, 2 folders)"
    assert "  inner.txt" in r.stdout.splitlines()


def test_search_and_the_file_listing_see_the_nested_repo_too(outer: Path) -> None:
    """One listing (``ops.files.list_files``) serves tree, search and the code index: the nested
    repository's files are in it, by its own ignore rules, and nothing else changes."""
    from leanctx.ops.files import list_files

    write(outer / "nested", "inner.txt", "needle_in_the_nested_repo\n")
    listing = list_files(outer)
    paths = [f.path for f in listing.files]
    assert listing.source == "git"
    assert {"nested/inner.txt", "nested/sub/s.txt", "nested/deeper/d.txt", "nested/.gitignore"} <= set(paths)
    assert "nested/ign.txt" not in paths and paths == sorted(paths)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_DB=str(outer.parent / "s.db"), LEAN_CTX_NO_DAEMON="1")
    r = subprocess.run([LEAN_CTX, "--project", str(outer), "search", "needle_in_the_nested_repo", "--regex"],
                       capture_output=True, text=True, env=env, cwd=outer, timeout=60, check=False)
    assert r.returncode == 0 and "nested/inner.txt:1:" in r.stdout, r.stdout + r.stderr
