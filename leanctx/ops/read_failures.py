"""Per-path failures of a multi-path ``ctx_read`` (``leanctx.ops.read``).

A read of several paths answers every file it can: a path that is refused or cannot be read
(``READ_NOT_FOUND``, ``READ_SECRET_FILE``, ``READ_PATH_OUTSIDE_PROJECT``, ``READ_BINARY_FILE``,
a ``lines:`` range past its end, ...) gets its own entry, in the order the paths were given: a
``ReadFailure``, which is a ``ReadAnswer`` whose ``text`` is the line the agent reads
(``nope.py: error[READ_NOT_FOUND] no file nope.py ...``), whose ``mode`` is ``error`` and whose
``error`` holds the stable code, the message and the details (``details.path`` the path it is
reported under, as a single-path refusal carries it), so every surface (CLI text and ``--json``,
MCP, HTTP) shows it without knowing about it. Nothing is recorded for a failed path.

When **every** path failed there is no answer to give: the call raises, like a single-path
read does. (The CLI exits 2 in both cases: when some paths failed, after printing every answer.) One failure (or several
with the same code and message, e.g. an option every file refuses) is raised as it is; several
with one code are raised with that code and a message listing each; mixed codes are raised as
``READ_ALL_FAILED``. Either way ``details["errors"]`` lists each path's code and message.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..commands.read import ReadAnswer
from ..context.tokens import count_tokens
from ..errors import CommandError, InvalidInput, LeanCtxError, NotFound

__all__ = ["ReadError", "ReadFailure", "all_failed", "failure"]


class ReadError(msgspec.Struct, frozen=True):
    """Why one path of a read was not answered."""

    code: str
    message: str
    details: dict[str, Any] = {}


class ReadFailure(ReadAnswer, frozen=True, kw_only=True):
    """The entry of a path that could not be read (see the module doc)."""

    error: ReadError


class Failed:
    """A path that failed, with the error as raised."""

    __slots__ = ("exc", "path")

    def __init__(self, path: str, exc: LeanCtxError) -> None:
        self.path, self.exc = path, exc


def path_of(raw_path: Any, exc: LeanCtxError) -> str:
    """The name a failure is reported under: the normalized path when the jail got that far."""
    p = exc.details.get("path") if isinstance(exc.details, dict) else None
    return p if isinstance(p, str) and p else str(raw_path)


def _line(path: str, exc: LeanCtxError) -> str:
    return f"{path}: error[{exc.code}] {exc.message}"


def failure(f: Failed, requested_mode: str, encoding: str) -> ReadFailure:
    text = _line(f.path, f.exc)
    details = {**(f.exc.details or {}), "path": f.path}  # as a single-path refusal names it
    return ReadFailure(path=f.path, text=text, mode="error", requested_mode=requested_mode, lines=0,
                       sent_tokens=count_tokens(text, encoding), raw_tokens=0, content_hash="",
                       error=ReadError(f.exc.code, f.exc.message, msgspec.to_builtins(details)))


def all_failed(failed: list[Failed]) -> LeanCtxError:
    """The error to raise when no path of a call could be read (see the module doc)."""
    first = failed[0].exc
    if all(f.exc.code == first.code and f.exc.message == first.message for f in failed):
        return first
    errors = [{"path": f.path, "code": f.exc.code, "message": f.exc.message} for f in failed]
    listing = "; ".join(_line(f.path, f.exc) for f in failed)
    if all(f.exc.code == first.code for f in failed):
        cls = next((c for c in (NotFound, CommandError, InvalidInput) if isinstance(first, c)), LeanCtxError)
        return cls(first.code, f"none of the {len(failed)} files could be read: {listing}", errors=errors)
    return InvalidInput("READ_ALL_FAILED", f"none of the {len(failed)} files could be read: {listing}",
                        errors=errors)
