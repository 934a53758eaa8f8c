"""ctx_tree: a compact, gitignore-aware listing of the project with file counts per folder.

The files are those of ``ops.files.list_files`` (git's ignore rules in a git work tree, the
``.gitignore`` walk elsewhere; ``.git``, ``node_modules``, ``.venv``, ``__pycache__`` and
friends never listed; an untracked git repository nested in a git work tree listed by its own
rules). Rendering rules:

- folders first, then files and symlinks, each sorted by name; a folder shows its recursive
  file count: ``api/ (14)``;
- symlinks are listed, never followed: ``name@ -> target`` for a link to a path inside the
  project (``target/`` for a folder, ``target (missing)`` when it dangles), ``name@ -> (outside
  the project; not followed)`` for one that leaves it; the header counts them when there are
  any: ``./ (120 files, 14 folders, 2 links)``;
- ``depth`` levels are expanded (1 = only the top level); deeper folders are collapsed to
  their name and count;
- a chain of folders holding only one folder each is shown on one line: ``src/main/java/ (12)``;
- a folder with more than ``max_entries`` entries shows that many and then one line with the
  rest counted: ``… 35 more (2 folders, 33 files)``;
- the answer cap (``ops.cap``: the same 20,000 tokens as reads, counted with ``encoding``, the
  caller's spec): a longer listing is cut after the lines that fit, with a notice counting the
  lines left out and saying how to get them: with ``archive`` (an ``ArchiveStore``; every
  surface passes one: MCP and ``/v1/tools`` ``ctx_tree``, HTTP ``/v1/context/tree``, the CLI
  ``tree``) the whole listing is archived and the notice names the ``lean-ctx expand ID --lines
  N-M`` that continues it exactly; it also names a folder to list next when that is not the
  folder just listed (listing that again would stop at the same line).

``entries`` holds one entry per line sent (after the header); ``omitted_entries`` counts the
ones left out and ``next_path`` names the folder to list next (None when the first entry left
out lies directly in the listed folder); ``capped``, ``omitted_lines`` and ``archive_id`` say
what was cut and where the whole listing is. With ``as_json`` (the CLI's
``--json``) the cap holds for the JSON answer, text and ``entries`` together, so fewer lines are
sent than in the text listing (an entry costs more than its line). A ``dir`` entry's ``files``,
``dirs`` and ``links`` count everything under it, recursively; a ``more`` entry's count what
it left out.

:func:`tree` reads the file system only: it appends nothing to the log (and writes nothing
unless given an ``archive``). :func:`archived_tree`, what every surface answers with, also
records a capped answer's archive: given ``open_log`` (the caller's log, opened only then, so a
listing that fits never opens or creates the database) it dispatches ``tree.record``
(``leanctx.commands.tree``) as the caller (actor, session, project), which appends
``archive.created`` with ``source`` ``"tree"`` the first time the log hears of that archive (the
same listing capped again is the same archive, recorded once). Its ``sha256``, ``bytes``,
``lines`` and ``tokens`` (the caller's ``encoding``) are those of the archived text itself, so
an expansion of it is charged to ``tree`` in the savings. Tree answers themselves are not in
the savings (see ``leanctx.commands.tree``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import msgspec

from ..errors import InvalidInput, NotFound
from ..paths import normalize, workspace_root
from .cap import ANSWER_CAP_TOKENS, Cut, cap_lines
from .files import LinkEntry, list_files

DEFAULT_DEPTH = 2
MAX_DEPTH = 64
DEFAULT_MAX_ENTRIES = 40


class TreeEntry(msgspec.Struct, frozen=True):
    path: str  # project-relative ('/'-separated)
    type: str  # "dir" | "file" | "link" | "more"
    level: int  # 0 = directly under the listed folder
    files: int = 0  # dirs: recursive file count; "more": files left out
    dirs: int = 0  # dirs: recursive folder count; "more": folders left out
    collapsed: bool = False  # dirs: children not shown
    links: int = 0  # dirs: recursive symlink count; "more": symlinks left out
    target: str | None = None  # links: the project path it points at (None: it leaves the project)
    target_kind: str | None = None  # links: file | dir | missing | outside


class TreeAnswer(msgspec.Struct):
    root: str  # the listed folder, project-relative ('.' for the project)
    text: str
    files: int
    dirs: int
    entries: list[TreeEntry]
    depth: int
    source: str  # git | walk
    links: int = 0  # symlinks under the listed folder (listed, not followed)
    capped: bool = False  # over the answer cap: lines were left out (said in the text)
    omitted_lines: int = 0  # listing lines not sent
    archive_id: str | None = None  # the whole listing, when capped and archived
    omitted_entries: int = 0  # entries of the listing left out of ``entries`` (capped)
    next_path: str | None = None  # capped: the folder to list next (its first entry was left out)


class _Node:
    __slots__ = ("count", "dirs", "files", "links", "ndirs", "nlinks")

    def __init__(self) -> None:
        self.dirs: dict[str, _Node] = {}
        self.files: list[str] = []
        self.links: dict[str, LinkEntry] = {}
        self.count = 0  # files, recursively
        self.ndirs = 0  # folders, recursively
        self.nlinks = 0  # symlinks, recursively


def _build(paths: list[str], links: list[tuple[str, LinkEntry]]) -> tuple[_Node, int]:
    top = _Node()

    def parent(parts: list[str]) -> _Node:
        node = top
        for name in parts[:-1]:
            child = node.dirs.get(name)
            if child is None:
                child = node.dirs[name] = _Node()
            node = child
        return node

    for p in paths:
        parts = p.split("/")
        parent(parts).files.append(parts[-1])
    for p, link in links:
        parts = p.split("/")
        parent(parts).links[parts[-1]] = link

    def total(node: _Node) -> None:
        node.count, node.ndirs, node.nlinks = len(node.files), len(node.dirs), len(node.links)
        for child in node.dirs.values():
            total(child)
            node.count += child.count
            node.ndirs += child.ndirs
            node.nlinks += child.nlinks

    total(top)
    return top, top.ndirs


def _link_text(name: str, link: LinkEntry) -> str:
    if link.target is None:
        return f"{name}@ -> (outside the project; not followed)"
    if link.kind == "dir":
        return f"{name}@ -> {link.target}/"
    if link.kind == "missing":
        return f"{name}@ -> {link.target} (missing)"
    return f"{name}@ -> {link.target}"


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'s' if n != 1 else ''}"


def tree(root: str | os.PathLike[str], path: str | None = None, *, depth: int = DEFAULT_DEPTH,
         max_entries: int = DEFAULT_MAX_ENTRIES, cap_tokens: int = ANSWER_CAP_TOKENS, archive: Any = None,
         encoding: str = "o200k_base", as_json: bool = False) -> TreeAnswer:
    """The listing of ``path`` (default: the whole project at ``root``), at most ``cap_tokens``
    tokens; ``archive`` (an ``ArchiveStore``) keeps the whole listing when it is cut. With
    ``as_json`` the cap holds for the answer's JSON (text and ``entries`` together)."""
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
        rel_links = [(x.path, x) for x in listing.links]
    else:
        prefix = base + "/"
        rel = [f.path[len(prefix):] for f in listing.files if f.path.startswith(prefix)]
        rel_links = [(x.path[len(prefix):], x) for x in listing.links if x.path.startswith(prefix)]
        if not rel and not rel_links and any(f.path == base for f in listing.files):
            name = base.rsplit("/", 1)[-1]
            return TreeAnswer(base, name + "\n", 1, 0, [TreeEntry(base, "file", 0)], depth, listing.source)
        if not rel and not rel_links and not os.path.lexists(os.path.join(project, base)):
            raise NotFound("TREE_PATH_NOT_FOUND", f"{base} does not exist in the project; list the root with no path")
    top, ndirs = _build(rel, rel_links)
    entries: list[TreeEntry] = []
    header = f"{'.' if base == '.' else base}/ ({_plural(top.count, 'file')}, {_plural(ndirs, 'folder')}"
    header += f", {_plural(top.nlinks, 'link')})" if top.nlinks else ")"
    lines = [header]
    join = (lambda p: p) if base == "." else (lambda p: f"{base}/{p}")

    def walk(node: _Node, at: str, level: int) -> None:
        items: list[tuple[str, str]] = [("d", n) for n in sorted(node.dirs)] + sorted(
            [("f", n) for n in node.files] + [("l", n) for n in node.links], key=lambda kn: kn[1])
        for i, (kind, name) in enumerate(items):
            indent = "  " * (level + 1)
            if i >= max_entries:
                rest = items[i:]
                nd = sum(1 for k, _ in rest if k == "d")
                nl = sum(1 for k, _ in rest if k == "l")
                nf = len(rest) - nd - nl
                extra = f", {_plural(nl, 'link')}" if nl else ""
                lines.append(f"{indent}… {len(rest)} more ({nd} folder{'s' if nd != 1 else ''}, "
                             f"{nf} file{'s' if nf != 1 else ''}{extra})")
                entries.append(TreeEntry(join(at.rstrip("/")) if at else base, "more", level, nf, nd, links=nl))
                return
            if kind == "f":
                lines.append(f"{indent}{name}")
                entries.append(TreeEntry(join(at + name), "file", level))
                continue
            if kind == "l":
                link = node.links[name]
                lines.append(f"{indent}{_link_text(name, link)}")
                entries.append(TreeEntry(join(at + name), "link", level, target=link.target, target_kind=link.kind))
                continue
            child = node.dirs[name]
            label = name
            while len(child.dirs) == 1 and not child.files and not child.links:
                (sub, only), = child.dirs.items()
                label += "/" + sub
                child = only
            collapsed = level + 1 >= depth and bool(child.dirs or child.files or child.links)
            lines.append(f"{indent}{label}/ ({child.count})")
            entries.append(TreeEntry(join(at + label), "dir", level, child.count, child.ndirs, collapsed=collapsed,
                                     links=child.nlinks))
            if not collapsed:
                walk(child, at + label + "/", level + 1)

    walk(top, "", 0)

    def answer(cap: int) -> TreeAnswer:
        text, cut, archive_id, folder = _capped(lines, entries, base, cap, archive, encoding, as_json)
        sent = entries if cut is None else entries[: max(0, cut.head - 1)]
        return TreeAnswer(base, text + "\n", top.count, ndirs, sent, depth, listing.source, links=top.nlinks,
                          capped=cut is not None, omitted_lines=cut.unsent if cut is not None else 0,
                          archive_id=archive_id, omitted_entries=len(entries) - len(sent), next_path=folder)

    ans = answer(cap_tokens)
    if as_json:  # the estimate of _capped, checked on the JSON itself
        from ..context.tokens import count_tokens

        cap = cap_tokens
        for _ in range(6):
            over = count_tokens(msgspec.json.encode(ans).decode(), encoding) - cap_tokens
            if over <= 0:
                break
            cap -= over + 50
            ans = answer(cap)
    return ans


class _Kept:
    """An ``ArchiveStore`` that remembers the text it was given (the whole listing)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.text: str | None = None

    def put(self, text: str) -> tuple[str, str, bool]:
        self.text = text
        return self.store.put(text)  # type: ignore[no-any-return]


def archived_tree(db: str | os.PathLike[str], root: str | os.PathLike[str], path: str | None = None, *,
                  depth: int = DEFAULT_DEPTH, max_entries: int = DEFAULT_MAX_ENTRIES, encoding: str = "o200k_base",
                  as_json: bool = False, open_log: Callable[[], Any] | None = None, actor: str | None = None,
                  session_id: str | None = None, project: str | None = None,
                  now: float | None = None) -> TreeAnswer:
    """:func:`tree` as every surface answers it: counted with the caller's ``encoding``, the
    whole listing of a capped answer archived beside the log at ``db`` (``ArchiveStore.beside``;
    the archive folder is created only when an answer is capped). With ``open_log`` (returning
    the ``LeanCtx`` of the log at ``db``; called only for a capped answer, so the database is
    neither opened nor created for one that fits) the archive is recorded: ``tree.record`` is
    dispatched as ``actor`` in ``session_id`` and ``project``."""
    from ..archive import ArchiveStore

    kept = _Kept(ArchiveStore.beside(db))
    ans = tree(root, path, depth=depth, max_entries=max_entries, archive=kept, encoding=encoding, as_json=as_json)
    if ans.archive_id is not None and kept.text is not None and open_log is not None:
        _record(open_log(), kept.text, ans.archive_id, encoding, actor=actor, session_id=session_id,
                project=project, now=now)
    return ans


def _record(lc: Any, text: str, archive_id: str, encoding: str, *, actor: str | None, session_id: str | None,
            project: str | None, now: float | None) -> None:
    """Dispatch ``tree.record`` for the archived listing ``text``: its id, sha256 and counts are
    computed from the text itself (the bytes written), its tokens with the caller's encoding."""
    from ..archive import ArchiveStore
    from ..commands.tree import RecordTree
    from ..context.tokens import count_tokens

    aid, digest = ArchiveStore.id_of(text)
    if aid != archive_id:  # pragma: no cover - the answer names the archive of this very text
        raise AssertionError(f"the tree answer names {archive_id}, its listing is {aid}")
    cmd = RecordTree(archive_id=aid, sha256=digest, bytes=len(text.encode("utf-8", "surrogatepass")),
                     lines=text.count("\n") + (0 if text.endswith("\n") else 1), tokens=count_tokens(text, encoding))
    lc.bus.dispatch(cmd, actor=actor, session_id=session_id, project=project, now=now)


_JSON_FIELDS_TOKENS = 200  # the answer's other JSON fields


def _next_folder(entry: TreeEntry | None, base: str) -> str | None:
    """The folder to list next for the first entry left out: the folder itself (a ``dir``, or
    the folder a ``more`` line counts the rest of), else the one holding it; None when that is
    the folder just listed (listing it again would stop at the same line)."""
    if entry is None:
        return None
    if entry.type in ("dir", "more"):
        folder = entry.path
    else:
        folder = entry.path.rsplit("/", 1)[0] if "/" in entry.path else "."
    return None if folder == base else folder


def _capped(lines: list[str], entries: list[TreeEntry], base: str, cap: int, archive: Any, encoding: str,
            as_json: bool = False) -> tuple[str, Cut | None, str | None, str | None]:
    """The listing within the cap (line ``i`` > 0 is ``entries[i - 1]``), the cut, the archive
    id and the folder to list next. ``as_json``: each line costs its entry's JSON too."""
    archive_id = None
    next_folder: list[str] = []
    full = "\n".join(lines) + "\n"
    if archive is not None:
        from ..archive import ArchiveStore

        archive_id = ArchiveStore.id_of(full)[0]

    def notice(cut: Cut) -> str:
        first = cut.first_unsent
        folder = _next_folder(entries[first - 2] if first >= 2 else None, base)
        next_folder[:] = [folder] if folder is not None else []
        ways = [f"lean-ctx expand {archive_id} --lines {first}-{cut.total}"] if archive_id else []
        if folder is not None:
            ways.append(f"list a folder (lean-ctx tree {folder})")
        ways.append("use a smaller depth or max entries")
        return (f"[… capped at {cap:,} tokens: {_plural(cut.unsent, 'line')} of the {cut.total:,}-line listing not"
                f" sent (~{cut.rest_tokens:,} tokens) · the rest: {', or '.join(ways)}]")

    if not as_json:
        text, cut = cap_lines(lines, cap - 1, notice, encoding=encoding)  # - 1: the final newline
    else:
        costed = lines[:1] + [f"{ln}\n{msgspec.json.encode(e).decode()}," for ln, e in zip(lines[1:], entries)]
        _, cut = cap_lines(costed, cap - 1 - _JSON_FIELDS_TOKENS, notice, encoding=encoding)
        text = "\n".join(lines) if cut is None else "\n".join([*lines[: cut.head], notice(cut)])
    if cut is None:
        return text, None, None, None
    if archive is not None:
        archive.put(full)
    return text, cut, archive_id, next_folder[0] if next_folder else None
