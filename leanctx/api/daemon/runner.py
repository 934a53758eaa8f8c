"""Run one forwarded CLI call inside the daemon, as the caller would have run it.

``Runner.run(request)`` calls ``leanctx.api.cli.app.main(argv)`` with, for the duration of the
call, the caller's working directory, environment, umask and parent pid, its stdin bytes, and
stdout/stderr captured (reporting the caller's tty flags). These are process-global, so calls
run one at a time (the server has a single worker thread). The environment is left as the last
call set it (the daemon reads none); everything else is restored.

Identity: ``leanctx.identity`` reads ``$LEAN_CTX_AGENT_ID``, else ``local-<parent pid>``. The
caller's parent is its shell, not the daemon's, so a call without ``$LEAN_CTX_AGENT_ID`` runs with
it set to ``local-<caller's parent pid>``, and ``os.getppid()`` answers the caller's parent pid
(``agent register`` records it).

What stays warm between calls (installed by ``Runner.install()``):
- the click command built from the typer tree (``typer.main.get_command`` memoized: building
  it costs ~14 ms per call);
- one ``LeanCtx`` per database file (``State.open`` takes it from a pool; ``State.close``
  leaves it open). A pooled database whose file was deleted or replaced is reopened.
"""

from __future__ import annotations

import io
import os
import sys
import threading
import traceback
from collections import OrderedDict
from pathlib import Path
from typing import Any

from .protocol import Request


class _Buffer(io.BytesIO):
    """Captured bytes that answer ``isatty()`` as the caller's stream would."""

    def __init__(self, data: bytes = b"", tty: bool = False) -> None:
        super().__init__(data)
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


class Pool:
    """One open ``LeanCtx`` per database path, least recently used closed beyond ``limit``."""

    def __init__(self, limit: int = 8) -> None:
        self.limit = limit
        self._items: OrderedDict[tuple[str, str], tuple[Any, tuple[int, int]]] = OrderedDict()

    def get(self, path: Path) -> Any:
        raw = str(path)
        key = ("" if os.path.isabs(raw) else os.getcwd(), raw)
        try:
            st = os.stat(raw)
            ident: tuple[int, int] | None = (st.st_dev, st.st_ino)
        except OSError:
            ident = None
        item = self._items.get(key)
        if item is not None:
            if item[1] == ident:
                self._items.move_to_end(key)
                return item[0]
            self.drop(key)  # deleted or replaced under us: never write into an unlinked file
        from ...app import LeanCtx

        lc = LeanCtx(path)
        st = os.stat(raw)
        self._items[key] = (lc, (st.st_dev, st.st_ino))
        while len(self._items) > self.limit:
            self.drop(next(iter(self._items)))
        return lc

    def drop(self, key: tuple[str, str]) -> None:
        item = self._items.pop(key, None)
        if item is not None:
            try:
                item[0].close()
            except Exception:  # pragma: no cover - closing a broken store
                pass

    def paths(self) -> list[str]:
        keys = list(self._items)  # one atomic copy: the status thread reads while the worker runs
        return [os.path.join(cwd, raw) if cwd else raw for cwd, raw in keys]

    def close_all(self) -> None:
        for key in list(self._items):
            self.drop(key)


class Runner:
    """Runs forwarded calls; not thread-safe by design (one call at a time)."""

    def __init__(self) -> None:
        self.pool = Pool()
        self._installed = False
        self._lock = threading.Lock()

    # --- warm state ---------------------------------------------------------------------------
    def install(self) -> None:
        """Patch the CLI for a long-lived process (in this process only) and import it."""
        if self._installed:
            return
        import typer.main

        from ..cli import app as appmod

        original = typer.main.get_command
        built: dict[tuple[int, frozenset[str]], Any] = {}

        def get_command(typer_instance: Any) -> Any:
            key = (id(typer_instance), frozenset(appmod._loaded))
            cmd = built.get(key)
            if cmd is None:
                cmd = built[key] = original(typer_instance)
            return cmd

        typer.main.get_command = get_command  # type: ignore[assignment]
        pool = self.pool

        def open_(st: Any) -> Any:
            if st._app is None:
                from ...config import db_path

                st._app = pool.get(db_path(st.db, root=None if st.db else appmod._root_path(st)))
            return st._app

        def close(st: Any) -> None:
            st._app = None  # the pool keeps it open for the next call

        appmod.State.open = open_  # type: ignore[method-assign,assignment]
        appmod.State.close = close  # type: ignore[method-assign,assignment]
        self._main = appmod.main
        self._installed = True

    def warm(self) -> None:
        """Import what short calls use and build the command tree, before the first call."""
        import importlib

        from ...discovery import import_submodules
        from ..cli import app as appmod

        self.install()
        import typer.main

        # Best effort: a module that fails to import here fails the same way in the call that
        # needs it (as it would in-process); it must not keep the daemon from serving the rest.
        for step in (appmod.full_app, lambda: typer.main.get_command(appmod._root_app),
                     lambda: importlib.import_module("leanctx.app"),
                     lambda: import_submodules("leanctx.commands"), lambda: import_submodules("leanctx.projections"),
                     _build_encoder):
            try:
                step()
            except Exception as exc:  # pragma: no cover - depends on the installation
                sys.stderr.write(f"warm-up: {exc!r}\n")

    # --- one call -----------------------------------------------------------------------------
    def run(self, req: Request) -> tuple[str, int, bytes, bytes]:
        """(status, exit code, stdout, stderr); status "fallback" when the caller must run it."""
        self.install()
        with self._lock:
            return self._run(req)

    def _run(self, req: Request) -> tuple[str, int, bytes, bytes]:
        try:
            home = os.open(".", os.O_RDONLY)
        except OSError:
            home = None
        try:
            os.chdir(req.cwd)
        except (OSError, ValueError):
            if home is not None:
                os.close(home)
            return "fallback", 0, b"", b""
        env = dict(req.env)
        if not env.get("LEAN_CTX_AGENT_ID"):
            env["LEAN_CTX_AGENT_ID"] = f"local-{req.ppid}"
        if req.term is not None:
            env.setdefault("COLUMNS", str(req.term[0]))
            env.setdefault("LINES", str(req.term[1]))
        saved_streams = (sys.stdin, sys.stdout, sys.stderr)
        saved_argv = sys.argv
        saved_getppid = os.getppid
        out_buf, err_buf = _Buffer(tty=req.ttys[1]), _Buffer(tty=req.ttys[2])
        out = io.TextIOWrapper(out_buf, encoding="utf-8", errors="backslashreplace")
        err = io.TextIOWrapper(err_buf, encoding="utf-8", errors="backslashreplace", line_buffering=True)
        stdin = io.TextIOWrapper(_Buffer(req.stdin), encoding="utf-8")
        old_mask = os.umask(req.umask)
        ppid = req.ppid
        code = 0
        try:
            _set_environ(env)
            os.getppid = lambda: ppid  # type: ignore[assignment]
            sys.stdin, sys.stdout, sys.stderr = stdin, out, err
            sys.argv = ["lean-ctx", *req.argv]
            try:
                self._main(list(req.argv))
            except SystemExit as e:
                code = _exit_code(e.code, err)
            except BaseException:  # what an in-process run would print before dying
                traceback.print_exc(file=err)
                code = 1
                self.pool.close_all()  # the failure may have left a connection in a bad state
        finally:
            for stream in (out, err):
                try:
                    stream.flush()
                except Exception:  # pragma: no cover
                    pass
            sys.stdin, sys.stdout, sys.stderr = saved_streams
            sys.argv = saved_argv
            os.getppid = saved_getppid  # type: ignore[assignment]
            os.umask(old_mask)
            if home is not None:
                try:
                    os.fchdir(home)
                finally:
                    os.close(home)
        return "ok", code, out_buf.getvalue(), err_buf.getvalue()


def _set_environ(env: dict[str, str]) -> None:
    """Make ``os.environ`` equal to ``env``, touching only what differs. It is not restored after
    a call: the daemon itself reads no variable once started, and every call sets its own."""
    current = os.environ
    for k in [k for k in current if k not in env]:
        del current[k]
    for k, v in env.items():
        if current.get(k) != v:
            current[k] = v


def _exit_code(value: object, err: io.TextIOBase) -> int:
    """The status a process exiting with ``sys.exit(value)`` would have."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    err.write(f"{value}\n")
    return 1


def _build_encoder() -> None:
    """The default encoding's tiktoken encoder: a short process counts in pure Python until its
    budget is spent, a daemon serves many calls and would pay the build (~0.3 s) in one of them."""
    from ...context import tokens

    tokens.get_encoding()


def code_stamp(root: Path | None = None) -> float:
    """Newest modification time of the package's source files (a daemon older than its code
    should be restarted)."""
    root = root or Path(__file__).resolve().parents[2]
    newest = 0.0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in filenames:
            if name.endswith(".py"):
                try:
                    newest = max(newest, os.stat(os.path.join(dirpath, name)).st_mtime)
                except OSError:
                    pass
    return newest


__all__ = ["Pool", "Runner", "code_stamp"]
