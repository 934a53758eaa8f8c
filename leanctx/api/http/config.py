"""What the HTTP server is started with, and the checks made before it binds.

- The bind address defaults to ``127.0.0.1``. Binding anything that is not loopback needs a
  bearer token (``--token`` / ``$LEAN_CTX_HTTP_TOKEN``, at least 16 characters), else the
  server refuses to start (``HTTP_TOKEN_REQUIRED``).
- Hosts: requests must name an allowed ``Host`` (loopback names, the bind address, and any
  ``--allow-host``), which defeats DNS rebinding against a loopback server.
- Rate limit: a token bucket per client (its agent when it sends a valid agent token, else
  its address). Off by default on loopback, 50 requests/s with bursts of 100 otherwise.
- ``allow_exec``: whether the context routes that run commands or write files (``shell``,
  ``edit``) are served. On by default on loopback, off otherwise.
- ``clock``: the time every dispatch and every query uses (the real clock; tests inject one).
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ... import clock as _clock
from ...errors import InvalidInput

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 3344
TOKEN_ENV = "LEAN_CTX_HTTP_TOKEN"
MIN_TOKEN_LENGTH = 16
REMOTE_RATE = 50.0
REMOTE_BURST = 100
DEFAULT_MAX_BODY = 4 * 1024 * 1024
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server on this machine (``localhost`` or a loopback
    address). A name other than ``localhost`` counts as remote: it is not resolved here."""
    h = host.strip().strip("[]").lower()
    if h == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def _host_only(value: str) -> str:
    """``example.org:3344`` → ``example.org``; ``[::1]:3344`` → ``::1``."""
    v = value.strip().lower()
    if v.startswith("["):
        return v[1:v.find("]")] if "]" in v else v[1:]
    if v.count(":") == 1:
        return v.split(":", 1)[0]
    return v


@dataclass
class ServerConfig:
    db: Path
    project_root: str
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    token: str | None = None
    allowed_hosts: tuple[str, ...] = ()
    rate: float | None = None  # requests per second per client; None: the default for the bind; 0: off
    burst: int | None = None
    secret_path: Path | None = None  # the agent-token secret (default: <data dir>/http-secret)
    sweep_interval: float = 5.0  # seconds between looks for agents that missed 3 heartbeats
    clock: Callable[[], float] = field(default=_clock.now)
    allow_exec: bool | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY
    sse_ping: float = 15.0
    mount_mcp: bool = True

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    def effective_rate(self) -> tuple[float, int]:
        """(requests per second, burst); a rate of 0 means no limit."""
        rate = self.rate if self.rate is not None else (0.0 if self.loopback else REMOTE_RATE)
        if self.burst is not None:
            burst = self.burst
        else:
            burst = REMOTE_BURST if rate == REMOTE_RATE else max(1, int(rate * 2))
        return max(0.0, rate), max(1, burst)

    def exec_allowed(self) -> bool:
        return self.loopback if self.allow_exec is None else self.allow_exec

    def host_allowlist(self) -> frozenset[str]:
        names = {*LOOPBACK_NAMES}
        bind = _host_only(self.host)
        if bind not in ("0.0.0.0", "::", ""):
            names.add(bind)
        names.update(_host_only(h) for h in self.allowed_hosts if h.strip())
        return frozenset(n.strip("[]") for n in names)

    def host_allowed(self, host_header: str | None) -> bool:
        if not host_header:
            return False
        return _host_only(host_header) in self.host_allowlist()

    def validate(self) -> None:
        """Refuse a configuration that would expose the log: raises ``InvalidInput``."""
        if self.token is not None:
            if len(self.token) < MIN_TOKEN_LENGTH or any(c.isspace() or ord(c) < 0x21 for c in self.token):
                raise InvalidInput(
                    "HTTP_TOKEN_TOO_SHORT",
                    f"the bearer token must be at least {MIN_TOKEN_LENGTH} printable characters without spaces;"
                    " generate one with `python -c 'import secrets; print(secrets.token_urlsafe(32))'`",
                )
        if not self.loopback and not self.token:
            raise InvalidInput(
                "HTTP_TOKEN_REQUIRED",
                f"binding {self.host} exposes the server beyond this machine: pass --token T (or set ${TOKEN_ENV});"
                " every route but /health then needs `Authorization: Bearer T`. Or bind 127.0.0.1",
            )
        if not 0 <= self.port <= 65535:
            raise InvalidInput("HTTP_INVALID_PORT", f"port {self.port} is not in 0-65535")
        if not os.path.isabs(self.project_root):
            raise InvalidInput("HTTP_INVALID_PROJECT", f"the project root {self.project_root!r} must be absolute")
        if self.rate is not None and self.rate < 0:
            raise InvalidInput("HTTP_INVALID_RATE", "the rate limit must be 0 (off) or a positive number per second")
