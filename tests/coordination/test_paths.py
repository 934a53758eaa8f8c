"""Path normalization and jail checks (``leanctx.paths``): a table-driven corpus.

Each row is an input and either the expected display form (normalized path, with a trailing
``/`` when it is a directory) or the stable error code. The workspace is a real directory
under ``tmp_path`` with real symlinks (some pointing out of it).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from leanctx.paths import (
    INVALID,
    OUTSIDE,
    PathRefused,
    WorkspacePath,
    ancestors,
    covers,
    join,
    normalize,
    overlaps,
    workspace_root,
)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("paths")
    ws = base / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("x")
    (ws / "docs").mkdir()
    (ws / "café").mkdir()  # NFC on disk
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    (base / "ws2").mkdir()  # shares the prefix "ws" but is not inside ws
    os.symlink("src", ws / "link_src")  # a directory symlink that stays inside
    os.symlink(str(outside), ws / "out_link")  # a directory symlink that leaves
    os.symlink(str(outside / "secret.txt"), ws / "out_file")  # a file symlink that leaves
    os.symlink("/nonexistent-lean-ctx/x", ws / "dangling_out")  # dangling, pointing out
    os.symlink("../outside/secret.txt", ws / "rel_out")  # relative target, leaves
    os.symlink("src/missing.py", ws / "dangling_in")  # dangling, pointing inside
    os.symlink(".", ws / "root_link")  # the workspace root itself
    os.symlink("loop", ws / "loop")  # a symlink loop
    os.symlink(str(ws), base / "ws_alias")  # the workspace reached through a symlink
    return base


def W(tree: Path) -> str:
    return str(tree / "ws")


# (input, expected display or error code); "{ws}" / "{base}" are replaced by real paths
CORPUS: list[tuple[str, str]] = [
    # plain and lexical normalization
    ("src/app.py", "src/app.py"),
    ("./src/app.py", "src/app.py"),
    ("src//app.py", "src/app.py"),
    ("./a//b/../c", "a/c"),
    ("a/./b", "a/b"),
    ("a/b/../../c", "c"),
    ("src/../docs/readme.md", "docs/readme.md"),
    ("a/b/c/../../d/./e", "a/d/e"),
    (".//./x", "x"),
    # directories: trailing slash, '/.', '/..', or an existing directory
    ("src", "src/"),
    ("src/", "src/"),
    ("src///", "src/"),
    ("src/.", "src/"),
    ("newdir/", "newdir/"),
    ("newdir", "newdir"),
    ("a/b/..", "a/"),
    ("a/b/c/", "a/b/c/"),
    # case preserved, unicode (NFC), odd but legal names
    ("Readme.MD", "Readme.MD"),
    ("A/B.TXT", "A/B.TXT"),
    ("café/menu.txt", "café/menu.txt"),
    ("cafe\u0301/menu.txt", "café/menu.txt"),  # NFD in → NFC out
    ("café", "café/"),
    ("日本語/ファイル.txt", "日本語/ファイル.txt"),
    ("emoji 🎉.md", "emoji 🎉.md"),
    ("with space.txt", "with space.txt"),
    (" leading space", " leading space"),
    ("...", "..."),
    ("..foo/bar", "..foo/bar"),
    ("foo../bar", "foo../bar"),
    (".hidden", ".hidden"),
    (".git/config", ".git/config"),
    ("-dash", "-dash"),
    ("a:b", "a:b"),
    ("~/x", "~/x"),
    ("$HOME/x", "$HOME/x"),
    ("*.py", "*.py"),
    ("%/_", "%/_"),
    ("x" * 255, "x" * 255),
    # absolute paths inside are made relative; outside are refused
    ("{ws}/src/app.py", "src/app.py"),
    ("{ws}//src///app.py", "src/app.py"),
    ("{ws}/a/../b", "b"),
    ("{ws}/src/", "src/"),
    ("{base}/ws_alias/src/app.py", "src/app.py"),
    ("{ws}", INVALID),
    ("{ws}/", INVALID),
    ("{ws}/a/..", INVALID),
    ("/etc/passwd", OUTSIDE),
    ("/", OUTSIDE),
    ("{base}/outside/secret.txt", OUTSIDE),
    ("{ws}/../outside/secret.txt", OUTSIDE),
    ("{base}/ws2/x", OUTSIDE),  # a sibling sharing the prefix is not inside
    ("{ws}2/x", OUTSIDE),
    # traversal leaving the workspace
    ("..", OUTSIDE),
    ("../x", OUTSIDE),
    ("../ws/src/app.py", OUTSIDE),  # climbs out, even if it comes back
    ("a/../../x", OUTSIDE),
    ("./../x", OUTSIDE),
    ("src/../../outside/secret.txt", OUTSIDE),
    # symlinks
    ("link_src/app.py", "src/app.py"),
    ("link_src", "src/"),
    ("link_src/new.py", "src/new.py"),
    ("dangling_in", "src/missing.py"),
    ("root_link/src/app.py", "src/app.py"),
    ("loop", "loop"),
    ("out_link", OUTSIDE),
    ("out_link/secret.txt", OUTSIDE),
    ("out_link/new/deep.txt", OUTSIDE),
    ("out_file", OUTSIDE),
    ("rel_out", OUTSIDE),
    ("dangling_out", OUTSIDE),
    ("src/../out_link/x", OUTSIDE),
    ("root_link", INVALID),
    ("root_link/", INVALID),
    # empty, the root itself
    ("", INVALID),
    ("   ", INVALID),
    ("\t", INVALID),
    (".", INVALID),
    ("./", INVALID),
    ("a/..", INVALID),
    ("./a/b/../..", INVALID),
    # control and override characters, NUL, newline, backslash, bad UTF-8, lengths
    ("a\x00b", INVALID),
    ("a\nb", INVALID),
    ("src/app.py\n", INVALID),
    ("a\rb", INVALID),
    ("a\tb", INVALID),
    ("a\x1bb", INVALID),
    ("a\x7fb", INVALID),
    ("a\x85b", INVALID),  # C1 (NEL)
    ("a\u202eb", INVALID),  # right-to-left override
    ("a\u2066b", INVALID),  # left-to-right isolate
    ("a\\b", INVALID),
    ("..\\..\\x", INVALID),
    ("bad\udcffname", INVALID),  # undecodable byte under surrogateescape
    ("x" * 256, INVALID),
    ("a/" * 2100 + "b", INVALID),
]


def _expand(raw: str, tree: Path) -> str:
    return raw.replace("{ws}", W(tree)).replace("{base}", str(tree))


@pytest.mark.parametrize(("raw", "expected"), CORPUS, ids=[repr(r)[:40] for r, _ in CORPUS])
def test_corpus(tree: Path, raw: str, expected: str) -> None:
    raw = _expand(raw, tree)
    if expected in (INVALID, OUTSIDE):
        with pytest.raises(PathRefused) as info:
            normalize(raw, W(tree))
        assert info.value.code == expected, info.value.message
        assert info.value.reason == ("invalid" if expected == INVALID else "outside")
        assert info.value.message and "\n" not in info.value.message and "\x00" not in info.value.message
    else:
        got = normalize(raw, W(tree))
        assert got.display == expected
        assert not got.path.endswith("/") and not got.path.startswith("/") and "//" not in got.path
        assert normalize(got.display, W(tree)) == got  # idempotent


def test_corpus_is_large_and_covers_both_outcomes() -> None:
    ok = [r for r, e in CORPUS if e not in (INVALID, OUTSIDE)]
    assert len(CORPUS) >= 90 and len(ok) >= 40 and len(CORPUS) - len(ok) >= 40


def test_codes_are_the_callers(tree: Path) -> None:
    with pytest.raises(PathRefused) as a:
        normalize("../x", W(tree), invalid_code="X_BAD", outside_code="X_OUT")
    with pytest.raises(PathRefused) as b:
        normalize("a\nb", W(tree), invalid_code="X_BAD", outside_code="X_OUT")
    assert (a.value.code, b.value.code) == ("X_OUT", "X_BAD")


def test_the_workspace_given_through_a_symlink_is_the_same_workspace(tree: Path) -> None:
    alias = str(tree / "ws_alias")
    assert workspace_root(alias) == os.path.realpath(W(tree))
    assert normalize("link_src/app.py", alias).path == "src/app.py"
    assert normalize(W(tree) + "/src/app.py", alias).path == "src/app.py"
    with pytest.raises(PathRefused) as info:
        normalize("out_link/x", alias)
    assert info.value.code == OUTSIDE


def test_allow_root_and_lexical_only(tree: Path) -> None:
    assert normalize(".", W(tree), allow_root=True) == WorkspacePath(".", True)
    # lexical rules only: a symlink escape is not seen, traversal still is
    assert normalize("out_link/x", W(tree), resolve_symlinks=False).path == "out_link/x"
    with pytest.raises(PathRefused):
        normalize("../x", W(tree), resolve_symlinks=False)


@pytest.mark.parametrize("workspace", ["", "relative/dir", "./ws", "/tmp/a\nb"])
def test_the_workspace_must_be_absolute(workspace: str) -> None:
    with pytest.raises(PathRefused) as info:
        normalize("x", workspace)
    assert info.value.code == INVALID


def test_refusal_details_are_json_safe(tree: Path) -> None:
    import msgspec

    for raw in ("bad\udcffname", "a\x00b", "../\udcff"):
        with pytest.raises(PathRefused) as info:
            normalize(raw, W(tree))
        msgspec.json.encode(info.value.to_dict())  # no lone surrogate reaches JSON
        assert "\n" not in info.value.message


def test_non_text_is_refused(tree: Path) -> None:
    with pytest.raises(PathRefused) as info:
        normalize(b"src/app.py", W(tree))  # type: ignore[arg-type]
    assert info.value.code == INVALID


COVERAGE = [
    ("src", "src", True, True),
    ("src", "src/a.py", True, True),
    ("src/a.py", "src", False, True),
    ("src", "srcx/a.py", False, False),
    ("src", "src.py", False, False),
    ("a/b", "a/bc", False, False),
    ("a/b", "a/b/c/d", True, True),
    ("a", "b", False, False),
    ("/ws/src", "/ws/src/a.py", True, True),
    ("/ws", "/ws2/a", False, False),
]


@pytest.mark.parametrize(("a", "b", "a_covers_b", "overlap"), COVERAGE)
def test_coverage_is_by_whole_components(a: str, b: str, a_covers_b: bool, overlap: bool) -> None:
    assert covers(a, b) is a_covers_b
    assert overlaps(a, b) is overlap and overlaps(b, a) is overlap


def test_ancestors_and_join() -> None:
    assert ancestors("a/b/c") == ["a", "a/b"]
    assert ancestors("a") == []
    assert join("/ws", "src/a.py") == "/ws/src/a.py"
    assert join("/", "x") == "/x"


@pytest.mark.parametrize("raw", ["a" * 5000, "a\x07b", "bad\udcffname"])
def test_only_locks_are_told_to_lock_a_directory(raw: str, tmp_path: Path) -> None:
    """A read, edit or tree refusal gives advice its caller can follow; only a lock can name a
    directory instead of the file."""
    with pytest.raises(PathRefused) as e:
        normalize(raw, tmp_path, invalid_code="READ_PATH_INVALID")
    assert "lock" not in e.value.message
    with pytest.raises(PathRefused) as e:
        normalize(raw, tmp_path, invalid_code="PATH_LOCK_INVALID_PATH")
    assert "lock" in e.value.message
