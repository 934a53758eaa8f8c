"""What the CLI says when something goes wrong outside the error hierarchy.

- ``output_file`` / ``output_dir``: check, before any work, that an output path named on the
  command line can be written (``OUTPUT_UNWRITABLE`` naming the path otherwise). The verbs call
  them where the path is known; ``app.main`` keeps a last resort for the sites that do not.
- ``writable_data_dir``: the same for the data directory (``DATA_DIR_UNWRITABLE``).
- ``usage_error``: a click usage error (missing option, bad type, unknown command) as
  ``CLI_USAGE``, so that ``--json`` callers get ``{"error": {"code": ...}}`` too.
- ``unexpected``: the last resort of ``app.main``. Undecodable argument bytes become
  ``CLI_INVALID_TEXT``, an ``OSError`` naming a file ``IO_ERROR``, anything else
  ``INTERNAL_ERROR`` (a bug: the message says so; ``LEAN_CTX_DEBUG=1`` prints the traceback).
- ``ClosedStdout``: stands in for a closed standard output (``>&-``), so that fd 1 is not
  reused by the log's file and the first write fails cleanly (``STDOUT_CLOSED``).
"""

from __future__ import annotations

import errno
import io
import os
from pathlib import Path
from typing import Any

from ...errors import InvalidInput, LeanCtxError

OUTPUT_UNWRITABLE = "OUTPUT_UNWRITABLE"


def _show(value: object) -> str:
    return str(value).encode("utf-8", "backslashreplace").decode("utf-8")


def _refuse(path: Path, what: str, why: str) -> InvalidInput:
    return InvalidInput(OUTPUT_UNWRITABLE, f"cannot write {what} {_show(path)}: {why}; choose another path",
                        path=_show(path))


def _blocking_ancestor(path: Path) -> Path | None:
    """The nearest existing ancestor of ``path`` that is not a writable directory, if any."""
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
                return parent
            return None
    return None


def output_file(path: str | os.PathLike[str], what: str = "the output") -> Path:
    """``path`` as a ``Path`` when a file can be created or replaced there."""
    p = Path(path).expanduser()
    if p.is_dir():
        raise _refuse(p, what, "it is a directory")
    if p.exists() and not os.access(p, os.W_OK):
        raise _refuse(p, what, "it is not writable")
    bad = _blocking_ancestor(p)
    if bad is not None:
        raise _refuse(p, what, f"{_show(bad)} is {'not a directory' if not bad.is_dir() else 'not writable'}")
    return p


def output_dir(path: str | os.PathLike[str], what: str = "the output directory") -> Path:
    """``path`` as a ``Path`` when a directory exists or can be created there."""
    p = Path(path).expanduser()
    if p.exists() and not p.is_dir():
        raise _refuse(p, what, "it is a file, not a directory")
    if p.is_dir() and not os.access(p, os.W_OK | os.X_OK):
        raise _refuse(p, what, "it is not writable")
    bad = _blocking_ancestor(p)
    if bad is not None:
        raise _refuse(p, what, f"{_show(bad)} is {'not a directory' if not bad.is_dir() else 'not writable'}")
    return p


def writable_data_dir() -> Path:
    """The data directory, when it exists or can be created and is writable; else
    ``DATA_DIR_UNWRITABLE`` naming it (and how to choose another)."""
    from ...config import data_dir

    home = data_dir()
    try:
        output_dir(home)
    except InvalidInput as exc:
        why = exc.message.split(": ", 1)[-1].removesuffix("; choose another path")
        raise InvalidInput("DATA_DIR_UNWRITABLE", f"the data directory {_show(home)} cannot be used: {why}; "
                           "set LEAN_CTX_HOME to a writable directory", path=_show(home)) from None
    return home


def usage_error(exc: Any) -> LeanCtxError:
    """A click usage error as ``CLI_USAGE`` (the message says which command's --help to read)."""
    message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    ctx = getattr(exc, "ctx", None)
    if ctx is not None:
        message = f"{message} (see `{ctx.command_path} --help`)"
    return LeanCtxError("CLI_USAGE", _show(message))


def _undecodable(args: list[str]) -> str | None:
    for a in args:
        try:
            a.encode("utf-8")
        except UnicodeEncodeError:
            return _show(a)
    return None


def unexpected(exc: BaseException, args: list[str]) -> LeanCtxError:
    """The coded error for an exception no verb translated (see the module docstring)."""
    if isinstance(exc, UnicodeEncodeError):
        bad = _undecodable(args)
        if bad is not None:
            err = LeanCtxError("CLI_INVALID_TEXT", f"the argument '{bad}' is not valid UTF-8 text; "
                                                   "pass text in UTF-8")
            return err
    if isinstance(exc, OSError) and exc.filename is not None:
        err = LeanCtxError("IO_ERROR", f"{exc.strerror or type(exc).__name__}: {_show(exc.filename)}; "
                                       "check that the path exists and is writable")
        err.exit_code = 1
        return err
    err = LeanCtxError("INTERNAL_ERROR", f"{type(exc).__name__}: {_show(exc)[:300]} - this is a bug in lean-ctx "
                                         "(set LEAN_CTX_DEBUG=1 for the traceback)")
    err.exit_code = 1
    return err


class ClosedStdout(io.TextIOBase):
    """``sys.stdout`` when fd 1 was closed: every write fails with ``EBADF``."""

    closed_stdout = True

    def writable(self) -> bool:
        return True

    def write(self, s: Any) -> int:
        raise OSError(errno.EBADF, "standard output is closed")

    @property
    def buffer(self) -> ClosedStdout:
        return self


def guard_stdout() -> bool:
    """When fd 1 was closed at start (Python then sets ``sys.stdout`` to None), hold it with
    /dev/null (so that no file opened later, like the log, lands on it) and make ``sys.stdout``
    a ``ClosedStdout``. True if it was closed. A host that set its own ``sys.stdout`` (the
    daemon's runner) is left alone."""
    import sys

    if sys.stdout is not None:
        return False
    try:
        os.fstat(1)
        return False
    except OSError:
        pass
    fd = os.open(os.devnull, os.O_RDONLY)
    if fd != 1:
        os.dup2(fd, 1)
        os.close(fd)
    sys.stdout = ClosedStdout()
    return True


def stdout_closed_error() -> LeanCtxError:
    err = LeanCtxError("STDOUT_CLOSED", "standard output is closed, so the result could not be printed; "
                                        "redirect it to /dev/null instead of closing it")
    err.exit_code = 1
    return err
