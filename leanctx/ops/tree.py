"""ctx_tree: a compact, gitignore-aware listing of the project with file counts per folder.

The files are those of ``ops.files.list_files`` (git's ignore rules in a git work tree, the
``.gitignore`` walk elsewhere; ``.git``, ``node_modules``, ``.venv``, ``__pycache__`` and
friends never listed). Rendering rules:

- folders first, then files, each sorted by name; a folder shows its recursive file count:
  ``api/ (14)``;
- ``depth`` levels are expanded (1 = only the top level); deeper folders are collapsed to
  their name and count;
- a chain of folders holding only one folder each is shown on one line: ``src/main/java/ (12)``;
- a folder with more than ``max_entries`` entries shows that many and then one line with the
  rest counted: ``… 35 more (2 folders, 33 files)``.

Reading the file system only, it appends nothing to the log.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from ..errors import InvalidInput, NotFound
from ..paths import normalize, workspace_root
from .files import list_files

DEFAULT_DEPTH = 2
MAX_DEPTH = 64
DEFAULT_MAX_ENTRIES = 40


class TreeEntry(msgspec.Struct, frozen=True):
    path: str  # project-relative ('/'-separated)
    type: str  # "dir" | "file" | "more"
    level: int  # 0 = directly under the listed folder
    files: int = 0  # dirs: recursive file count; "more": files left out
    dirs: int = 0  # "more": folders left out
    collapsed: bool = False  # dirs: children not shown


class TreeAnswer(msgspec.Struct):
    root: str  # the listed folder, project-relative ('.' for the project)
    text: str
    files: int
    dirs: int
    entries: list[TreeEntry]
    depth: int
    source: str  # git | walk


class _Node:
    __slots__ = ("count", "dirs", "files")

    def __init__(self) -> None:
        self.dirs: dict[str, _Node] = {}
        self.files: list[str] = []
        self.count = 0


def _build(paths: list[str]) -> tuple[_Node, int]:
    top = _Node()
    ndirs = 0
    for p in paths:
        parts = p.split("/")
        node = top
        node.count += 1
        for name in parts[:-1]:
            child = node.dirs.get(name)
            if child is None:
                child = node.dirs[name] = _Node()
                ndirs += 1
            node = child
            node.count += 1
        node.files.append(parts[-1])
    return top, ndirs


def tree(root: str | os.PathLike[str], path: str | None = None, *, depth: int = DEFAULT_DEPTH,
         max_entries: int = DEFAULT_MAX_ENTRIES) -> TreeAnswer:
    """The listing of ``path`` (default: the whole project at ``root``)."""
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
        raise InvalidInput("TREE_INVALID_DEPTH", f"depth must be a whole number from 1 to {MAX_DEPTH}")
    if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
        raise InvalidInput("TREE_INVALID_MAX_ENTRIES", "max_entries must be a positive whole number")
    project = workspace_root(os.fspath(root), invalid_code="TREE_INVALID_ROOT")
    base = "."
    if path is not None and path.strip() not in ("", "."):
        base = normalize(path, project, invalid_code="TREE_PATH_INVALID", outside_code="TREE_PATH_OUTSIDE_PROJECT",
                         allow_root=True).path
    listing = list_files(project)
    if base == ".":
        rel = [f.path for f in listing.files]
    else:
        prefix = base + "/"
        rel = [f.path[len(prefix):] for f in listing.files if f.path.startswith(prefix)]
        if not rel and any(f.path == base for f in listing.files):
            name = base.rsplit("/", 1)[-1]
            return TreeAnswer(base, name + "\n", 1, 0, [TreeEntry(base, "file", 0)], depth, listing.source)
        if not rel and not os.path.lexists(os.path.join(project, base)):
            raise NotFound("TREE_PATH_NOT_FOUND", f"{base} does not exist in the project; list the root with no path")
    top, ndirs = _build(rel)
    entries: list[TreeEntry] = []
    header = (f"{'.' if base == '.' else base}/ ({top.count} file{'s' if top.count != 1 else ''}, "
              f"{ndirs} folder{'s' if ndirs != 1 else ''})")
    lines = [header]
    join = (lambda p: p) if base == "." else (lambda p: f"{base}/{p}")

    def walk(node: _Node, at: str, level: int) -> None:
        items: list[tuple[str, Any]] = [("d", n) for n in sorted(node.dirs)] + [("f", n) for n in sorted(node.files)]
        for i, (kind, name) in enumerate(items):
            indent = "  " * (level + 1)
            if i >= max_entries:
                rest = items[i:]
                nd = sum(1 for k, _ in rest if k == "d")
                nf = len(rest) - nd
                lines.append(f"{indent}… {len(rest)} more ({nd} folder{'s' if nd != 1 else ''}, "
                             f"{nf} file{'s' if nf != 1 else ''})")
                entries.append(TreeEntry(join(at.rstrip("/")) if at else base, "more", level, nf, nd))
                return
            if kind == "f":
                lines.append(f"{indent}{name}")
                entries.append(TreeEntry(join(at + name), "file", level))
                continue
            child = node.dirs[name]
            label = name
            while len(child.dirs) == 1 and not child.files:
                (sub, only), = child.dirs.items()
                label += "/" + sub
                child = only
            collapsed = level + 1 >= depth and bool(child.dirs or child.files)
            lines.append(f"{indent}{label}/ ({child.count})")
            entries.append(TreeEntry(join(at + label), "dir", level, child.count, collapsed=collapsed))
            if not collapsed:
                walk(child, at + label + "/", level + 1)

    walk(top, "", 0)
    return TreeAnswer(base, "\n".join(lines) + "\n", top.count, ndirs, entries, depth, listing.source)
