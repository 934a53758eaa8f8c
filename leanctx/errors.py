"""One error hierarchy for lean-ctx.

Every error a user can meet carries a stable ``code`` and a sentence that says what to
do. Each delivery surface translates it once: the CLI to an exit status and a message,
MCP to a tool error, HTTP to a status and a JSON body — the same code everywhere.
"""

from __future__ import annotations

from typing import Any

MAX_MESSAGE_CHARS = 4000  # a message quoting a huge bad input keeps its head and tail, said


def _bounded(message: str) -> str:
    if len(message) <= MAX_MESSAGE_CHARS:
        return message
    head, tail = message[: MAX_MESSAGE_CHARS * 2 // 3], message[-(MAX_MESSAGE_CHARS // 4):]
    return f"{head}… [{len(message) - len(head) - len(tail):,} characters of the message cut] …{tail}"


class LeanCtxError(Exception):
    """Base of every error lean-ctx raises on purpose."""

    code: str = "LEANCTX_ERROR"
    http_status: int = 400
    exit_code: int = 2

    def __init__(self, code: str | None = None, message: str = "", **details: Any) -> None:
        if code is not None:
            self.code = code
        self.message = _bounded(message) if message else self.code
        self.details = details
        super().__init__(f"{self.code}: {self.message}")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            out["details"] = self.details
        return out


class CommandError(LeanCtxError):
    """A command refused: the request was understood and is not allowed now."""

    http_status = 409


class InvalidInput(LeanCtxError):
    """The request itself is malformed (bad field, bad value)."""

    code = "INVALID_INPUT"
    http_status = 422


class NotFound(LeanCtxError):
    code = "NOT_FOUND"
    http_status = 404


class ConcurrencyError(LeanCtxError):
    """``expected_version`` did not match the stream's version; nothing was appended."""

    code = "CONCURRENCY_CONFLICT"
    http_status = 409


class StoreError(LeanCtxError):
    """The log cannot be opened or written (bad path, locked too long, corrupt file)."""

    code = "STORE_ERROR"
    http_status = 500
    exit_code = 1
