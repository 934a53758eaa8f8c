"""Errors a user of the compression engine can meet.

Each error is a ``ValueError`` carrying a stable ``code`` (e.g. ``READ_INVALID_MODE``) and a
message that says what to do. The delivery layers map ``code`` to their own error hierarchy.
"""

from __future__ import annotations

__all__ = [
    "ContextError",
    "ReadInvalidMode",
    "ReadInvalidRange",
    "ReadMissingInput",
    "TokenizerHashMismatch",
    "TokenizerUnknownEncoding",
    "TokenizerDataMissing",
    "ShellInvalidCommand",
]


class ContextError(ValueError):
    """Base class: a user-facing error of the context engine with a stable ``code``."""

    code: str = "CONTEXT_ERROR"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class ReadInvalidMode(ContextError):
    code = "READ_INVALID_MODE"


class ReadInvalidRange(ContextError):
    code = "READ_INVALID_RANGE"


class ReadMissingInput(ContextError):
    code = "READ_MISSING_INPUT"


class TokenizerHashMismatch(ContextError):
    code = "TOKENIZER_HASH_MISMATCH"


class TokenizerUnknownEncoding(ContextError):
    code = "TOKENIZER_UNKNOWN_ENCODING"


class TokenizerDataMissing(ContextError):
    code = "TOKENIZER_DATA_MISSING"


class ShellInvalidCommand(ContextError):
    code = "SHELL_INVALID_COMMAND"
