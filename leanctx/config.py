"""Where state lives: the data directory, the project root, the database path.

- data dir: ``$LEAN_CTX_HOME``, else ``$XDG_DATA_HOME/lean-ctx``, else ``~/.local/share/lean-ctx``
- project root: the nearest ancestor of the working directory holding ``.git``, else the
  working directory itself; one named explicitly (``--project``, ``--workspace``,
  ``--project-root``) must be an existing directory (``existing_dir``: ``PROJECT_NOT_FOUND``
  otherwise, so that a typo is refused instead of opening a new, empty log)
- database: ``--db`` / ``$LEAN_CTX_DB``, else one per project root:
  ``<data dir>/projects/<name>-<sha256(root)[:12]>/events.db``
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path


def data_dir() -> Path:
    home = os.environ.get("LEAN_CTX_HOME")
    if home:
        return Path(home).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / "lean-ctx"


def project_root(start: str | os.PathLike[str] | None = None) -> Path:
    here = Path(start or os.getcwd()).resolve()
    for p in (here, *here.parents):
        if (p / ".git").exists():
            return p
    return here


def existing_dir(given: str | os.PathLike[str], option: str = "--project") -> Path:
    """``given`` resolved, if it names an existing directory; else ``PROJECT_NOT_FOUND``."""
    from .errors import InvalidInput

    raw = os.fspath(given)
    try:
        path = Path(raw).expanduser().resolve()
        ok = path.is_dir()
    except (OSError, ValueError, RuntimeError):  # NUL bytes, loops, unreadable parents
        ok = False
    if not ok:
        shown = raw.encode("utf-8", "backslashreplace").decode("utf-8")
        what = "does not exist" if not os.path.lexists(raw) else "is not a directory"
        raise InvalidInput("PROJECT_NOT_FOUND", f"{option} {shown!r} {what}; name an existing project directory",
                           option=option, path=shown)
    return path


def project_slug(root: Path) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", root.name or "root").strip("-") or "root"
    return f"{name}-{hashlib.sha256(str(root).encode()).hexdigest()[:12]}"


def db_path(explicit: str | os.PathLike[str] | None = None, root: Path | None = None) -> Path:
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get("LEAN_CTX_DB")
    if env:
        return Path(env).expanduser()
    return data_dir() / "projects" / project_slug(root or project_root()) / "events.db"
