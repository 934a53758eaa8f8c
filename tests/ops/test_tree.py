"""ctx_tree: counts per folder, depth, collapsing, gitignore, the path jail; CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.errors import LeanCtxError
from leanctx.ops.tree import tree

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))  # this interpreter's, not whatever PATH finds


def write(root: Path, rel: str, text: str = "x\n") -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


@pytest.fixture()
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    for rel in ("src/a.py", "src/b.py", "src/sub/c.py", "src/sub/deeper/d.py", "docs/x.md", "README.md",
                "java/src/main/Main.java", "build/out.bin", "node_modules/m/index.js", "app.log"):
        write(root, rel)
    write(root, ".gitignore", "build/\n*.log\n")
    return root


def test_counts_and_depth(proj: Path) -> None:
    t = tree(proj, depth=1)
    assert t.files == 8 and t.text.splitlines() == [
        "./ (8 files, 7 folders)",
        "  docs/ (1)",
        "  java/src/main/ (1)",
        "  src/ (4)",
        "  .gitignore",
        "  README.md",
    ]
    assert t.source == "walk"
    assert [(e.path, e.type, e.files, e.collapsed) for e in t.entries[:3]] == [
        ("docs", "dir", 1, True), ("java/src/main", "dir", 1, True), ("src", "dir", 4, True)]
    t2 = tree(proj, depth=2)
    assert "    sub/ (2)" in t2.text.splitlines() and "    a.py" in t2.text.splitlines()
    deep = tree(proj, depth=10).text.splitlines()
    assert "      deeper/ (1)" in deep and "        d.py" in deep


def test_a_subfolder_and_a_file(proj: Path) -> None:
    t = tree(proj, "src", depth=1)
    assert t.root == "src" and t.text.splitlines() == ["src/ (4 files, 2 folders)", "  sub/ (2)", "  a.py", "  b.py"]
    assert t.entries[0].path == "src/sub"
    one = tree(proj, "src/a.py")
    assert one.files == 1 and one.text == "a.py\n"
    assert tree(proj, "./").root == "."


def test_large_folders_are_cut_with_counts(tmp_path: Path) -> None:
    for i in range(50):
        write(tmp_path / "p", f"f{i:02}.txt")
    for i in range(3):
        write(tmp_path / "p", f"d{i}/x.txt")
    t = tree(tmp_path / "p", max_entries=10, depth=1)
    lines = t.text.splitlines()
    assert len(lines) == 1 + 10 + 1 and lines[-1] == "  … 43 more (0 folders, 43 files)"
    assert (t.entries[-1].type, t.entries[-1].files, t.entries[-1].dirs) == ("more", 43, 0)


def test_git_rules_apply(proj: Path) -> None:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull}
    subprocess.run(["git", "init", "-q"], cwd=proj, check=True, env=env)
    write(proj, "untracked.txt")
    t = tree(proj, depth=1)
    assert t.source == "git" and t.files == 9
    assert "build" not in t.text and "node_modules" not in t.text and "app.log" not in t.text


@pytest.mark.parametrize("bad,code", [("..", "TREE_PATH_OUTSIDE_PROJECT"), ("/etc", "TREE_PATH_OUTSIDE_PROJECT"),
                                      ("src/../../x", "TREE_PATH_OUTSIDE_PROJECT"), ("out-link", "TREE_PATH_OUTSIDE_PROJECT"),
                                      ("nope", "TREE_PATH_NOT_FOUND"), ("a\nb", "TREE_PATH_INVALID")])
def test_paths_are_jailed(proj: Path, tmp_path: Path, bad: str, code: str) -> None:
    (proj / "out-link").symlink_to(tmp_path)
    with pytest.raises(LeanCtxError) as e:
        tree(proj, bad)
    assert e.value.code == code
    with pytest.raises(LeanCtxError):
        tree(proj, depth=0)


def test_cli_tree(proj: Path, tmp_path: Path) -> None:
    env = {**os.environ, "LEAN_CTX_DB": str(tmp_path / "never-created.db")}
    p = subprocess.run([LEAN_CTX, "--project", str(proj), "tree", "--depth", "1"], capture_output=True, text=True,
                       env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0] == "./ (8 files, 7 folders)"
    p = subprocess.run([LEAN_CTX, "--project", str(proj), "tree", "src", "--json"], capture_output=True, text=True,
                       env=env, timeout=60)
    out = json.loads(p.stdout)
    assert (out["root"], out["files"], out["depth"]) == ("src", 4, 2)
    p = subprocess.run([LEAN_CTX, "--project", str(proj), "tree", ".."], capture_output=True, text=True, env=env,
                       timeout=60)
    assert p.returncode == 2 and "error[TREE_PATH_OUTSIDE_PROJECT]" in p.stderr
    assert not (tmp_path / "never-created.db").exists()  # tree reads the file system only
