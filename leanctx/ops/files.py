"""Project files: the listing that search, the code index and tree work from.

- **Listing** (``list_files``): in a git work tree, ``git ls-files -co --exclude-standard -z``
  (tracked plus untracked-but-not-ignored files, git's own ignore rules); elsewhere a walk that
  skips ``SKIP_DIRS`` and honours ``.gitignore`` files (the common subset of git's syntax:
  ``*``, ``?``, ``[...]``, ``**``, a leading or inner ``/`` anchoring, a trailing ``/`` for
  directories, ``!`` negation, ``#`` comments). ``SKIP_DIRS`` are dropped in git mode too (an
  untracked ``.venv`` without an ignore rule would otherwise flood every search). Only regular
  files are listed in ``files``: symlinks are never followed (one pointing out of the project
  would leak what it points at), submodules and sockets are left out; names that are not valid
  UTF-8 are left out too. Symlinks are listed apart in ``links`` (``LinkEntry``: where they
  point when that is inside the project, else only that they leave it), for ``tree``.
- **Size caps**: ``MAX_FILE_BYTES`` (1,000,000) is the cap of the code index (bm25, semantic):
  larger files are listed but not indexed. The regex scan of search reads files up to the read
  limit (``ops.read.MAX_FILE_BYTES``, 8 MiB) and says how many files it skipped past it.
- **Binary sniff** (``is_binary``): a NUL byte in the first 8 KiB, as git and grep decide.
- **Reading for search** (``read_text``): a size cap, the sniff, UTF-8 with replacement.
- **Line-preserving redaction** (``redact_text``): ``leanctx.context.secrets.redact`` with line
  numbers kept, so that ``path:line`` of a redacted text still points at the file's line.
- **Atomic write** (``atomic_write``): temp file in the same directory, fsync, mode kept,
  ``os.replace``, directory fsync.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import msgspec

from ..context.secrets import _PATTERNS, redact

SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", "node_modules", ".venv", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache",
    ".tox",
})
SNIFF_BYTES = 8192
MAX_FILE_BYTES = 1_000_000  # the code index's cap: larger files are listed but not indexed (search's regex
# scan reads up to ops.read.MAX_FILE_BYTES; read_bytes callers pass their own cap)
GIT_TIMEOUT = 30.0


class FileEntry(msgspec.Struct, frozen=True):
    """One regular file of the project."""

    path: str  # project-relative, '/'-separated
    size: int
    mtime_ns: int


class LinkEntry(msgspec.Struct, frozen=True):
    """A symlink of the project (never followed by search, the index or read)."""

    path: str  # project-relative, '/'-separated: the link itself
    target: str | None  # project-relative path it resolves to; None when it leaves the project
    kind: str  # "file" | "dir" | "missing" (dangling, inside) | "outside"


class Listing(msgspec.Struct, frozen=True):
    files: list[FileEntry]
    source: str  # "git" | "walk"
    skipped: int = 0  # entries left out of ``files`` (symlinks, non-UTF-8 names, vanished files)
    links: list[LinkEntry] = []  # the symlinks among them, sorted by path


# --- gitignore (for the walk outside git) -----------------------------------------------------

def _translate(pat: str) -> str:
    """A gitignore glob (without anchoring or the dir-only slash) as a regex body."""
    out: list[str] = []
    i, n = 0, len(pat)
    while i < n:
        if pat.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pat.startswith("/**", i) and i + 3 == n:
            out.append("/.*")
            i += 3
        elif pat.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            c = pat[i]
            if c == "*":
                out.append("[^/]*")
            elif c == "?":
                out.append("[^/]")
            elif c == "[":
                j = pat.find("]", i + 2 if pat[i + 1:i + 2] in ("!", "^") else i + 1)
                if j < 0:
                    out.append(re.escape(c))
                else:
                    body = pat[i + 1:j]
                    neg = body[:1] in ("!", "^")
                    body = body[1:] if neg else body
                    out.append("[" + ("^" if neg else "") + body.replace("\\", "\\\\") + "]")
                    i = j
            elif c == "\\" and i + 1 < n:
                out.append(re.escape(pat[i + 1]))
                i += 1
            else:
                out.append(re.escape(c))
            i += 1
    return "".join(out)


class _Rule(msgspec.Struct, frozen=True):
    base: str  # directory of the .gitignore, relative ('' at the root)
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


def parse_gitignore(text: str, base: str = "") -> list[_Rule]:
    rules: list[_Rule] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if raw.endswith("\\ "):
            line += " "
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate or line.startswith(("\\!", "\\#")):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        body = _translate(line)
        regex = re.compile(("^" if anchored else "^(?:.*/)?") + body + "$")
        rules.append(_Rule(base, regex, negate, dir_only))
    return rules


def ignored(rules: Iterable[_Rule], path: str, is_dir: bool) -> bool:
    """Whether ``path`` (relative to the root) is ignored by ``rules`` (last match wins)."""
    result = False
    for r in rules:
        if r.dir_only and not is_dir:
            continue
        if r.base:
            if not path.startswith(r.base + "/"):
                continue
            rel = path[len(r.base) + 1:]
        else:
            rel = path
        if r.regex.match(rel):
            result = not r.negate
    return result


# --- listing ----------------------------------------------------------------------------------

def _entry(root: str, rel: str) -> FileEntry | None:
    try:
        st = os.lstat(os.path.join(root, rel))
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return FileEntry(rel, st.st_size, st.st_mtime_ns)


def _link(root: str, rel: str) -> LinkEntry | None:
    """``rel`` as a ``LinkEntry`` when it is a symlink (its target resolved, not followed further)."""
    full = os.path.join(root, rel)
    try:
        if not stat.S_ISLNK(os.lstat(full).st_mode):
            return None
        real = os.path.realpath(full)
    except (OSError, ValueError):
        return None
    top = os.path.realpath(root)
    if real != top and not real.startswith(top.rstrip(os.sep) + os.sep):
        return LinkEntry(rel, None, "outside")
    if real == top:
        return LinkEntry(rel, ".", "dir")
    target = os.path.relpath(real, top).replace(os.sep, "/")
    kind = "dir" if os.path.isdir(real) else "file" if os.path.exists(real) else "missing"
    return LinkEntry(rel, target, kind)


def _valid_name(rel: str) -> bool:
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return not any(ord(c) < 32 for c in rel)


def _git_paths(root: str) -> list[str] | None:
    try:
        p = subprocess.run(
            ["git", "-c", "core.quotepath=off", "ls-files", "-co", "--exclude-standard", "-z"],
            cwd=root, capture_output=True, timeout=GIT_TIMEOUT, check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if p.returncode != 0:
        return None
    return [os.fsdecode(b) for b in p.stdout.split(b"\0") if b]


def _walk_paths(root: str) -> Iterator[str]:
    rules: list[_Rule] = []

    def visit(rel_dir: str) -> Iterator[str]:
        absdir = os.path.join(root, rel_dir) if rel_dir else root
        gi = os.path.join(absdir, ".gitignore")
        added = 0
        if os.path.isfile(gi) and not os.path.islink(gi):
            try:
                new = parse_gitignore(Path(gi).read_text(encoding="utf-8", errors="replace"), rel_dir)
            except OSError:
                new = []
            rules.extend(new)
            added = len(new)
        try:
            with os.scandir(absdir) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            entries = []
        for e in entries:
            rel = f"{rel_dir}/{e.name}" if rel_dir else e.name
            try:
                is_dir = e.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if e.name in SKIP_DIRS or ignored(rules, rel, True):
                    continue
                yield from visit(rel)
            elif not ignored(rules, rel, False):
                yield rel
        if added:
            del rules[len(rules) - added:]

    yield from visit("")


def list_files(root: str | os.PathLike[str], *, use_git: bool = True) -> Listing:
    """Every regular file of the project at ``root`` that git (or the walk) does not ignore,
    sorted by path. In a git work tree an untracked git repository nested in it (which ``git
    ls-files -co`` reports as one ``nested/`` entry, without descending) is listed by its own
    rules, as the walk lists it outside git: ``list_files`` run in it (its own ``.gitignore``,
    and a repository nested in it in turn), its symlinks judged against ``root``."""
    base = os.fspath(root)
    names = _git_paths(base) if use_git else None
    source = "git"
    if names is None:
        names = list(_walk_paths(base))
        source = "walk"
    out: list[FileEntry] = []
    links: list[LinkEntry] = []
    skipped = 0
    seen: set[str] = set()
    for rel in names:
        if rel in seen:
            continue
        seen.add(rel)
        if any(part in SKIP_DIRS for part in rel.split("/")[:-1]) or not _valid_name(rel):
            skipped += 1
            continue
        if source == "git" and rel.endswith("/"):  # an untracked nested repository
            inner = list_files(os.path.join(base, rel))
            sub = rel.rstrip("/")
            out += [FileEntry(f"{sub}/{f.path}", f.size, f.mtime_ns) for f in inner.files]
            links += [x for x in (_link(base, f"{sub}/{x.path}") for x in inner.links) if x is not None]
            skipped += inner.skipped
            continue
        entry = _entry(base, rel)
        if entry is None:
            skipped += 1
            link = _link(base, rel)
            if link is not None:
                links.append(link)
            continue
        out.append(entry)
    out.sort(key=lambda f: f.path)
    links.sort(key=lambda x: x.path)
    return Listing(out, source, skipped, links)


# --- filters ----------------------------------------------------------------------------------

def glob_match(path: str, pattern: str) -> bool:
    """``--path GLOB``: fnmatch on the relative path (``*`` crosses ``/``); a pattern without
    ``/`` also matches the file name (``*.py``); a bare directory name matches what is under it."""
    pattern = pattern.strip()
    while pattern.startswith("./"):
        pattern = pattern[2:]
    if not pattern:
        return True
    if fnmatch.fnmatchcase(path, pattern) or fnmatch.fnmatchcase(path, pattern.rstrip("/") + "/*"):
        return True
    return "/" not in pattern and fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], pattern)


def is_binary(head: bytes) -> bool:
    return b"\0" in head[:SNIFF_BYTES]


def read_bytes(root: str, rel: str, max_bytes: int = MAX_FILE_BYTES) -> bytes | None:
    """The file's bytes, or None when it is missing, larger than ``max_bytes`` or binary."""
    try:
        with open(os.path.join(root, rel), "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError:
        return None
    if len(data) > max_bytes or is_binary(data):
        return None
    return data


def decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def read_text(root: str, rel: str, max_bytes: int = MAX_FILE_BYTES) -> str | None:
    data = read_bytes(root, rel, max_bytes)
    return None if data is None else decode(data)


# --- redaction that keeps line numbers --------------------------------------------------------

_KEY_BLOCK = dict(_PATTERNS)["private_key"]  # one rule for every caller (an unterminated block too)


def redact_text(text: str) -> tuple[str, int]:
    """``text`` with secrets redacted and its line structure kept: a private-key block becomes
    ``[REDACTED:private_key]`` followed by as many newlines as it spanned (an unterminated
    block is redacted to the end of the text); the rest goes through ``redact`` whole, or line
    by line when a match would have swallowed a newline (an assignment split over two lines)."""
    count = 0

    def key(m: re.Match[str]) -> str:
        nonlocal count
        count += 1
        return "[REDACTED:private_key]" + "\n" * m.group(0).count("\n")

    if "PRIVATE KEY" in text:
        text = _KEY_BLOCK.sub(key, text)
    r = redact(text)
    if r.text.count("\n") == text.count("\n"):
        return r.text, count + r.count
    lines = text.split("\n")
    out = []
    for line in lines:
        rl = redact(line)
        count += rl.count
        out.append(rl.text)
    return "\n".join(out), count


# --- atomic write -----------------------------------------------------------------------------

def atomic_write(path: str | os.PathLike[str], data: bytes, *, new_mode: int | None = None) -> None:
    """Replace the file at ``path`` with ``data`` atomically: a temp file in the same directory,
    written and fsynced, given the original's mode (and owner, where allowed), then
    ``os.replace``d over it and the directory fsynced. Readers see the old bytes or the new,
    never a mix; on any failure the temp file is removed and the original is untouched.
    ``new_mode``: the file may not exist yet, and is then created with this mode (otherwise
    a missing file raises ``FileNotFoundError``)."""
    target = os.fspath(path)
    directory = os.path.dirname(target) or "."
    try:
        st: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        if new_mode is None:
            raise
        st = None
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(target)[:100] + ".", suffix=".lean-ctx")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), stat.S_IMODE(st.st_mode) if st is not None else new_mode or 0)
            if st is not None and hasattr(os, "fchown") and (st.st_uid != os.geteuid() or st.st_gid != os.getegid()):
                try:
                    os.fchown(f.fileno(), st.st_uid, st.st_gid)
                except OSError:
                    pass
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
