"""Workspace paths: normalization and jail checks (pure functions: no database, no clock).

Used by path locks, and meant for every tool that takes a path from an agent (file edits,
reads). ``normalize(raw, workspace)`` turns what an agent typed into one canonical,
workspace-relative name, or refuses it with a stable code.

Rules (the corpus in ``tests/coordination/test_paths.py`` pins each one):

- The result is relative to the workspace, ``/``-separated, with no ``.``, ``..``, empty
  components or trailing slash: ``./a//b/../c`` → ``a/c``. ``..`` that stays inside the
  workspace is fine (``a/../b`` → ``b``); ``..`` that climbs above it is refused
  (``PATH_OUTSIDE_WORKSPACE``), even when the path comes back in (``../ws/x``).
- Absolute paths inside the workspace (or inside its real path, when the workspace is
  reached through a symlink) are made relative; absolute paths outside are refused.
- Symlinks: a path whose resolved real path leaves the workspace is refused (a symlink to
  ``/etc``, a symlinked directory pointing out, a dangling link pointing out, a link to the
  workspace root). Symlinks inside the workspace are resolved: the name is the real path, so
  ``link-to-src/app.py`` and ``src/app.py`` are one path (git never lists a path through a
  symlinked directory either). Components that do not exist yet are kept as written.
- A trailing ``/`` (or a trailing ``/.``), or a path naming an existing directory, marks a
  *directory* (``WorkspacePath.directory``); the canonical name never carries the slash
  (``display`` adds it back). The flag is informational: coverage is by path components
  (``covers``/``overlaps``), so ``src`` covers ``src/app.py`` whatever the flag says (a file
  cannot have children, so this never over-matches a real tree).
- Refused as ``PATH_INVALID``: empty or blank paths; control characters (C0, DEL, C1,
  including NUL and newline) and bidirectional-override characters (they make a path read
  differently from what it is); text that is not valid UTF-8 (lone surrogates from
  undecodable bytes); backslashes (a separator on Windows, so ``a\\..\\..\\x`` would mean
  different things on different machines); names longer than 255 bytes or paths longer than
  4096 bytes; and the workspace root itself (``.``, ``a/..``, the workspace's absolute path),
  unless ``allow_root=True``.
- Unicode is NFC-normalized (macOS file systems hand out NFD, editors type NFC: one name, one
  lock); case is preserved (``A.txt`` and ``a.txt`` are different paths, as on Linux and in git).
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterable

import msgspec

from .errors import InvalidInput

INVALID = "PATH_INVALID"
OUTSIDE = "PATH_OUTSIDE_WORKSPACE"
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 4096

# bidirectional embedding / override / isolate controls ("trojan source")
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")


class PathRefused(InvalidInput):
    """A path was refused. ``reason`` is ``invalid`` or ``outside``; ``code`` is the
    caller's stable code for it (``PATH_INVALID`` / ``PATH_OUTSIDE_WORKSPACE`` by default)."""

    def __init__(self, code: str, message: str, *, reason: str, path: str) -> None:
        # the details travel as JSON: undecodable bytes (lone surrogates) are escaped
        super().__init__(code, message, path=path.encode("utf-8", "backslashreplace").decode("utf-8"))
        self.reason = reason
        self.path = path


class WorkspacePath(msgspec.Struct, frozen=True):
    """A normalized workspace-relative path."""

    path: str  # 'src/app.py' — never empty, no leading or trailing slash
    directory: bool = False

    @property
    def display(self) -> str:
        return self.path + "/" if self.directory else self.path

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(self.path.split("/"))


def _show(raw: str) -> str:
    """A printable rendering of ``raw`` for messages (escapes newlines, NUL, ...)."""
    text = repr(raw)
    return text if len(text) <= 120 else text[:117] + "...'"


def check_text(raw: object, *, invalid_code: str = INVALID) -> str:
    """Refuse what no path may contain; return the NFC-normalized text."""
    if not isinstance(raw, str):
        raise PathRefused(invalid_code, f"a path must be text, not {type(raw).__name__}", reason="invalid",
                          path=str(raw))
    # what else to do with a name no path may hold: a lock can name the file's directory instead
    instead = " or lock its directory instead" if "LOCK" in invalid_code else ""
    if raw == "" or raw.strip() == "":
        raise PathRefused(invalid_code, "the path is empty; pass a path relative to the workspace "
                          "(e.g. src/app.py)", reason="invalid", path=raw)
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        raise PathRefused(invalid_code, f"path {_show(raw)} is not valid UTF-8; rename the file{instead}",
                          reason="invalid", path=raw) from None
    for ch in raw:
        o = ord(ch)
        if o < 0x20 or 0x7F <= o <= 0x9F or ch in _BIDI:
            raise PathRefused(
                invalid_code,
                f"path {_show(raw)} contains the control character U+{o:04X}; paths cannot contain control or "
                f"bidirectional-override characters (rename the file{instead})",
                reason="invalid", path=raw,
            )
    if "\\" in raw:
        raise PathRefused(invalid_code, f"path {_show(raw)} contains a backslash; use '/' to separate directories",
                          reason="invalid", path=raw)
    text = unicodedata.normalize("NFC", raw)
    if len(text.encode("utf-8")) > MAX_PATH_BYTES:
        raise PathRefused(invalid_code, f"the path is longer than {MAX_PATH_BYTES} bytes; use a shorter path"
                          + (", or lock a directory instead" if instead else ""),
                          reason="invalid", path=raw)
    return text


def _fold(parts: Iterable[str]) -> tuple[list[str], bool]:
    """Lexically apply '.' and '..'; returns (parts, escaped): escaped when '..' climbs past the start."""
    out: list[str] = []
    escaped = False
    for p in parts:
        if p in ("", "."):
            continue
        if p == "..":
            if out:
                out.pop()
            else:
                escaped = True
            continue
        out.append(p)
    return out, escaped


def _abs_parts(path: str) -> list[str]:
    """Lexical parts of an absolute path ('..' at the root stays at the root)."""
    parts, _ = _fold(path.split("/"))
    return parts


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _rel_to(parts: list[str], base: list[str]) -> list[str] | None:
    if parts[: len(base)] == base:
        return parts[len(base):]
    return None


def workspace_root(workspace: str | os.PathLike[str], *, invalid_code: str = INVALID) -> str:
    """The canonical (absolute, real) path of a workspace."""
    ws = os.fspath(workspace)
    if not isinstance(ws, str) or not ws or not os.path.isabs(ws) or any(ord(c) < 0x20 for c in ws):
        raise PathRefused(invalid_code, f"workspace {_show(str(ws))} must be an absolute directory path",
                          reason="invalid", path=str(ws))
    return os.path.realpath(ws)


def normalize(
    raw: str,
    workspace: str | os.PathLike[str],
    *,
    invalid_code: str = INVALID,
    outside_code: str = OUTSIDE,
    allow_root: bool = False,
    resolve_symlinks: bool = True,
) -> WorkspacePath:
    """Normalize ``raw`` (relative to ``workspace``, or absolute) into a ``WorkspacePath``.

    Raises ``PathRefused`` with ``invalid_code`` or ``outside_code``. With ``allow_root`` the
    workspace root itself is returned as ``WorkspacePath('.', directory=True)``. With
    ``resolve_symlinks=False`` the file system is not consulted (lexical rules only).
    """
    text = check_text(raw, invalid_code=invalid_code)
    ws_given = os.fspath(workspace)
    ws_real = workspace_root(ws_given, invalid_code=invalid_code)
    shown = _show(raw)

    def outside(why: str) -> PathRefused:
        return PathRefused(
            outside_code,
            f"path {shown} {why} the workspace {ws_real}; use a path inside it, relative like src/app.py",
            reason="outside", path=raw,
        )

    stripped = text.rstrip("/")
    marked_dir = text.endswith("/") or stripped.endswith(("/.", "/..")) or stripped in (".", "..")
    if text.startswith("/"):
        parts = _abs_parts(text)
        rel = _rel_to(parts, _abs_parts(os.path.abspath(ws_given)))
        if rel is None:
            rel = _rel_to(parts, _abs_parts(ws_real))
        if rel is None:  # maybe reached through a symlink to the workspace
            real = os.path.realpath("/" + "/".join(parts))
            if not _inside(real, ws_real):
                raise outside("is outside")
            rel = _rel_to(_abs_parts(real), _abs_parts(ws_real)) or []
    else:
        rel, escaped = _fold(text.split("/"))
        if escaped:
            raise outside("climbs out of")

    for name in rel:
        if len(name.encode("utf-8")) > MAX_NAME_BYTES:
            raise PathRefused(invalid_code, f"a name in path {shown} is longer than {MAX_NAME_BYTES} bytes",
                              reason="invalid", path=raw)
    if not rel:
        if allow_root:
            return WorkspacePath(".", True)
        raise PathRefused(
            invalid_code,
            f"path {shown} is the workspace root itself, which cannot be used here; name the files or directories "
            "you will change",
            reason="invalid", path=raw,
        )

    if resolve_symlinks:
        full = os.path.join(ws_real, *rel)
        real_full = os.path.realpath(full)
        if not _inside(real_full, ws_real):
            raise outside(f"resolves through a symlink to {real_full!r}, outside")
        if real_full == ws_real:
            raise PathRefused(invalid_code, f"path {shown} is a symlink to the workspace root; name the files or "
                              "directories you will change", reason="invalid", path=raw)
        rel = os.path.relpath(real_full, ws_real).split(os.sep)
        if os.path.isdir(real_full):
            marked_dir = True
    return WorkspacePath(unicodedata.normalize("NFC", "/".join(rel)), marked_dir)


# --- coverage (component-wise; works on relative names and on absolute paths alike) -------

def covers(ancestor: str, path: str) -> bool:
    """``ancestor`` is ``path`` or one of its parent directories (by whole components)."""
    a, p = ancestor.rstrip("/"), path.rstrip("/")
    return a == p or p.startswith(a + "/") or a == ""


def overlaps(a: str, b: str) -> bool:
    """Two locks on ``a`` and ``b`` cover a common file: equal, or one contains the other."""
    return covers(a, b) or covers(b, a)


def ancestors(path: str) -> list[str]:
    """The proper ancestors of a relative name, shortest first: ``a/b/c`` → ``['a', 'a/b']``."""
    parts = path.strip("/").split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def join(workspace: str, path: str) -> str:
    """The absolute path of a workspace-relative name (no doubled slash at the root)."""
    return workspace.rstrip("/") + "/" + path if path else workspace
