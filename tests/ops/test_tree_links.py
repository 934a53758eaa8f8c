"""ctx_tree: symlinks are listed and counted, never followed; folder entries count their
subfolders (``dirs``); git and the walk agree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.ops.files import LinkEntry, list_files
from leanctx.ops.tree import tree

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))

pytestmark = pytest.mark.timeout(90)


def write(root: Path, rel: str, text: str = "x\n") -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


@pytest.fixture()
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    for rel in ("src/a.py", "src/sub/b.py", "src/sub/deep/c.py", "docs/x.md", "README.md"):
        write(root, rel)
    outside = tmp_path / "elsewhere"
    for i in range(5):
        write(outside, f"secret{i}.txt")
    (root / "alink.py").symlink_to("src/a.py")
    (root / "srclink").symlink_to("src")
    (root / "out").symlink_to(outside)
    (root / "dangling").symlink_to("nothing-here")
    (root / "src" / "sub" / "updocs").symlink_to("../../docs")
    return root


WANT = [
    "./ (5 files, 4 folders, 5 links)",
    "  docs/ (1)",
    "    x.md",
    "  src/ (3)",
    "    sub/ (2)",
    "      deep/ (1)",
    "        c.py",
    "      b.py",
    "      updocs@ -> docs/",
    "    a.py",
    "  README.md",
    "  alink.py@ -> src/a.py",
    "  dangling@ -> nothing-here (missing)",
    "  out@ -> (outside the project; not followed)",
    "  srclink@ -> src/",
]


def test_links_are_listed_marked_and_not_followed(proj: Path) -> None:
    t = tree(proj, depth=5)
    assert t.text.splitlines() == WANT
    assert (t.files, t.dirs, t.links) == (5, 4, 5)
    assert "secret" not in t.text and "elsewhere" not in t.text  # the outside link is not followed
    links = {e.path: (e.target, e.target_kind) for e in t.entries if e.type == "link"}
    assert links == {"alink.py": ("src/a.py", "file"), "dangling": ("nothing-here", "missing"),
                     "out": (None, "outside"), "srclink": ("src", "dir"), "src/sub/updocs": ("docs", "dir")}
    listing = list_files(proj, use_git=False)
    assert [f.path for f in listing.files] == ["README.md", "docs/x.md", "src/a.py", "src/sub/b.py",
                                               "src/sub/deep/c.py"]  # search and the index still skip links
    assert listing.links[0] == LinkEntry("alink.py", "src/a.py", "file") and len(listing.links) == 5


def test_git_lists_the_same_links(proj: Path) -> None:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull}
    subprocess.run(["git", "init", "-q"], cwd=proj, check=True, env=env)
    t = tree(proj, depth=5)
    assert t.source == "git" and t.text.splitlines() == WANT


def test_dir_entries_count_their_subfolders(proj: Path) -> None:
    t = tree(proj, depth=1)
    dirs = {e.path: (e.files, e.dirs, e.links) for e in t.entries if e.type == "dir"}
    assert dirs == {"docs": (1, 0, 0), "src": (3, 2, 1)}
    deeper = {e.path: (e.files, e.dirs) for e in tree(proj, depth=5).entries if e.type == "dir"}
    assert deeper == {"docs": (1, 0), "src": (3, 2), "src/sub": (2, 1), "src/sub/deep": (1, 0)}
    sub = tree(proj, "src", depth=1)
    assert sub.text.splitlines() == ["src/ (3 files, 2 folders, 1 link)", "  sub/ (2)", "  a.py"]
    assert [(e.path, e.dirs, e.links) for e in sub.entries] == [("src/sub", 1, 1), ("src/a.py", 0, 0)]


def test_a_folder_holding_only_links_and_the_more_line_counts_links(tmp_path: Path) -> None:
    root = tmp_path / "p"
    write(root, "real/f.txt")
    for i in range(4):
        (root / "links").mkdir(exist_ok=True)
        (root / "links" / f"l{i}").symlink_to("../real/f.txt")
    t = tree(root, depth=3, max_entries=2)
    assert t.text.splitlines() == [
        "./ (1 file, 2 folders, 4 links)",
        "  links/ (0)",
        "    l0@ -> real/f.txt",
        "    l1@ -> real/f.txt",
        "    … 2 more (0 folders, 0 files, 2 links)",
        "  real/ (1)",
        "    f.txt",
    ]
    more = next(e for e in t.entries if e.type == "more")
    assert (more.path, more.files, more.dirs, more.links) == ("links", 0, 0, 2)


def test_cli_json_dirs_are_right(proj: Path, tmp_path: Path) -> None:
    env = {**os.environ, "LEAN_CTX_DB": str(tmp_path / "never-created.db"), "LEAN_CTX_NO_DAEMON": "1"}
    p = subprocess.run([LEAN_CTX, "--project", str(proj), "tree", "--depth", "3", "--json"], capture_output=True,
                       text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    by_path = {e["path"]: e for e in out["entries"]}
    assert by_path["src"]["dirs"] == 2 and by_path["src/sub"]["dirs"] == 1
    assert by_path["out"]["type"] == "link" and by_path["out"]["target"] is None
    assert out["links"] == 5 and out["dirs"] == 4
    assert not (tmp_path / "never-created.db").exists()
