"""The server side of the daemon's wire format (the format itself is in ``leanctx.api.thin``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..thin import MAGIC, frame, recv_frame

__all__ = ["MAGIC", "ProtocolError", "Request", "encode_response", "parse_request", "recv_frame"]

OPS = ("run", "status", "stop")


class ProtocolError(ValueError):
    """A request that is not lean-ctx daemon protocol version 1."""


@dataclass
class Request:
    op: str
    version: str
    cwd: str
    ppid: int
    umask: int
    ttys: tuple[bool, bool, bool]
    term: tuple[int, int] | None
    env: dict[str, str]
    argv: list[str]
    stdin: bytes = field(default=b"", repr=False)


def parse_request(head: bytes, stdin: bytes = b"") -> Request:
    parts = head.split(b"\0")
    if len(parts) < 9 or parts[0] != MAGIC:
        raise ProtocolError("not a lean-ctx daemon request (version 1)")
    try:
        op = parts[1].decode()
        if op not in OPS:
            raise ProtocolError(f"unknown operation {op!r}")
        flags = parts[6].decode()
        if len(flags) != 3 or set(flags) - {"0", "1"}:
            raise ProtocolError("bad tty flags")
        term = None
        if parts[7]:
            cols, lines = parts[7].decode().split("x")
            term = (int(cols), int(lines))
        n_env = int(parts[8])
        if n_env < 0 or len(parts) < 9 + n_env:
            raise ProtocolError("bad environment count")
        env: dict[str, str] = {}
        for raw in parts[9:9 + n_env]:
            k, sep, v = raw.partition(b"=")
            if sep and k:
                env[os.fsdecode(k)] = os.fsdecode(v)
        return Request(
            op=op,
            version=os.fsdecode(parts[2]),
            cwd=os.fsdecode(parts[3]),
            ppid=int(parts[4]),
            umask=int(parts[5].decode(), 8),
            ttys=(flags[0] == "1", flags[1] == "1", flags[2] == "1"),
            term=term,
            env=env,
            argv=[os.fsdecode(a) for a in parts[9 + n_env:]],
            stdin=stdin,
        )
    except (UnicodeDecodeError, ValueError) as exc:
        if isinstance(exc, ProtocolError):
            raise
        raise ProtocolError(f"malformed request: {exc}") from None


def encode_response(status: str, code: int, out: bytes = b"", err: bytes = b"") -> bytes:
    return frame(b"\0".join([MAGIC, status.encode(), str(int(code)).encode()])) + frame(out) + frame(err)
