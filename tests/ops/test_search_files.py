"""The project listing behind search, the code index and tree: gitignore, binaries, redaction."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from leanctx.ops.files import (
    FileEntry,
    atomic_write,
    glob_match,
    ignored,
    is_binary,
    list_files,
    parse_gitignore,
    read_text,
    redact_text,
)


def git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env, timeout=60)


def write(root: Path, rel: str, text: str | bytes) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text)
    return p


def paths(root: Path, **kw: object) -> list[str]:
    return [f.path for f in list_files(root, **kw).files]  # type: ignore[arg-type]


@pytest.fixture()
def tree_with_ignores(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    write(root, ".gitignore", "build/\n*.log\n/top-only.txt\n!keep.log\nsecret-dir/**\n")
    write(root, "src/app.py", "print('hi')\n")
    write(root, "src/.gitignore", "generated_*.py\n")
    write(root, "src/generated_x.py", "x = 1\n")
    write(root, "src/deep/top-only.txt", "not anchored here\n")
    write(root, "top-only.txt", "ignored at the top\n")
    write(root, "build/out.js", "ignored dir\n")
    write(root, "debug.log", "ignored\n")
    write(root, "keep.log", "re-included\n")
    write(root, "secret-dir/a/b.txt", "ignored\n")
    write(root, "node_modules/pkg/index.js", "skipped always\n")
    write(root, ".venv/lib/site.py", "skipped always\n")
    write(root, "src/__pycache__/app.cpython-311.pyc", b"\0\0")
    write(root, "README.md", "# readme\n")
    return root


EXPECTED = [".gitignore", "README.md", "keep.log", "src/.gitignore", "src/app.py", "src/deep/top-only.txt"]


def test_walk_honours_gitignore_files(tree_with_ignores: Path) -> None:
    assert paths(tree_with_ignores, use_git=False) == EXPECTED
    assert list_files(tree_with_ignores, use_git=False).source == "walk"


def test_a_real_git_repo_uses_git_ls_files(tree_with_ignores: Path) -> None:
    root = tree_with_ignores
    git(root, "init", "-q")
    git(root, "add", "README.md", "src/app.py")
    # a tracked file inside an ignored directory stays listed (git's rules, not ours)
    write(root, "build/tracked.js", "tracked anyway\n")
    git(root, "add", "-f", "build/tracked.js")
    listing = list_files(root)
    assert listing.source == "git"
    assert [f.path for f in listing.files] == sorted([*EXPECTED, "build/tracked.js"])
    # the same project outside git: the walk drops what it ignores
    assert "build/tracked.js" not in paths(root, use_git=False)


def test_git_listing_drops_deleted_files_symlinks_and_skip_dirs(tmp_path: Path) -> None:
    root = tmp_path / "r"
    write(root, "a.txt", "a\n")
    write(root, "gone.txt", "g\n")
    write(root, ".venv/x.py", "untracked venv without an ignore rule\n")
    (root / "link.txt").symlink_to("/etc/hostname")
    git(root, "init", "-q")
    git(root, "add", "a.txt", "gone.txt", "link.txt")
    (root / "gone.txt").unlink()
    listing = list_files(root)
    assert [f.path for f in listing.files] == ["a.txt"]
    assert listing.skipped >= 2
    e = listing.files[0]
    assert isinstance(e, FileEntry) and e.size == 2 and e.mtime_ns > 0


def test_gitignore_pattern_corpus() -> None:
    rules = parse_gitignore("*.o\n/abs\ndir/\na/**/z\n**/logs\ndocs/*.md\n!docs/keep.md\n\\#hash\n# comment\n")
    cases = {
        ("x.o", False): True, ("deep/y.o", False): True,
        ("abs", False): True, ("sub/abs", False): False,
        ("dir", True): True, ("dir", False): False, ("x/dir", True): True,
        ("a/z", False): True, ("a/b/c/z", False): True, ("b/a/z", False): False,
        ("logs", True): True, ("x/y/logs", True): True,
        ("docs/a.md", False): True, ("docs/sub/a.md", False): False, ("docs/keep.md", False): False,
        ("#hash", False): True, ("comment", False): False,
    }
    got = {k: ignored(rules, *k) for k in cases}
    assert got == cases


def test_binaries_are_sniffed_by_nul_bytes(tmp_path: Path) -> None:
    assert is_binary(b"abc\0def") and not is_binary("héllo\n".encode())
    write(tmp_path, "img.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    write(tmp_path, "big.txt", "x" * 2000)
    write(tmp_path, "ok.txt", "fine\n")
    assert read_text(str(tmp_path), "img.png") is None
    assert read_text(str(tmp_path), "big.txt", max_bytes=1000) is None
    assert read_text(str(tmp_path), "ok.txt") == "fine\n"
    assert read_text(str(tmp_path), "missing.txt") is None


@pytest.mark.parametrize("path,pattern,ok", [
    ("src/app.py", "*.py", True), ("src/app.py", "src/*.py", True), ("src/app.py", "src", True),
    ("src/app.py", "src/", True), ("src/app.py", "./src/*", True), ("src/app.py", "*.md", False),
    ("docs/a.md", "src/*", False), ("a/b/c.py", "a/*.py", True), ("app.py", "", True),
])
def test_glob_match(path: str, pattern: str, ok: bool) -> None:
    assert glob_match(path, pattern) is ok


def test_redaction_keeps_line_numbers() -> None:
    key = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join("QUJD" * 16 for _ in range(30)) + \
        "\n-----END RSA PRIVATE KEY-----"
    text = f"line1\n{key}\nafter = 1\nAPI_KEY =\n  'zz9Yq8Xw7Vu6'\ntoken = 'ghp_{'a1B2' * 9}'\nlast\n"
    red, n = redact_text(text)
    assert red.count("\n") == text.count("\n")
    lines = red.split("\n")
    assert lines[1] == "[REDACTED:private_key]" and lines[33] == "after = 1"
    assert "QUJD" not in red and "ghp_" not in red
    assert lines[-2] == "last" and n >= 2
    # an unterminated key block is redacted to the end
    red2, _ = redact_text("a\n-----BEGIN PRIVATE KEY-----\nQUJDREVG\nQUJDREVG\n")
    assert red2 == "a\n[REDACTED:private_key]\n\n\n"


def test_atomic_write_keeps_mode_and_leaves_no_temp(tmp_path: Path) -> None:
    p = write(tmp_path, "f.sh", "old\n")
    os.chmod(p, 0o751)
    ino = p.stat().st_ino
    atomic_write(p, b"new\n")
    assert p.read_bytes() == b"new\n"
    assert oct(p.stat().st_mode & 0o7777) == oct(0o751)
    assert p.stat().st_ino != ino  # replaced, not rewritten in place
    assert sorted(os.listdir(tmp_path)) == ["f.sh"]
