"""Agent tokens: proof that a caller is the agent it names, in one registration of it.

``POST /v1/agents/register`` answers with the agent's token; every action of that agent sends
it back in ``X-Agent-Token``. A token is derived, not stored:

    token = "lct2." + b64url(agent_id) + "." + b64url(registered_at) + "."
            + b64url(HMAC-SHA256(secret, "lean-ctx agent token v2" ‖ db ‖ agent_id ‖ registered_at))

- ``secret``: 32 random bytes in ``<data dir>/http-secret``, created with mode 0600 on first
  use; the server refuses to start if the file can be read by anyone else
  (``HTTP_SECRET_INSECURE``). Nothing else is kept: a token survives server restarts, and its
  signature is checked with one HMAC and no lookup.
- ``db``: the real path of the event log, so that an agent id that exists in two projects' logs
  has two different tokens.
- ``registered_at``: the timestamp of the ``agent.registered`` event the token was issued for
  (the agents projection's ``registered_at``), which names that registration. Every
  registration of an id (a rejoin too) issues a fresh token, and the previous one is then an
  earlier registration's. Whether a token still acts is decided on the log, not in memory
  (``security.AgentCredential``): its registration must be the agent's current one, and the agent
  must not have left (deregistered, or its timeout recorded); a restart changes nothing. (A
  registration is named by its time in microseconds: two registrations of one id at the very
  same instant, possible only with a clock that does not move, would share a token.)
- Rotation: delete the secret file and restart; every token becomes invalid and agents register
  again. An id already known to the log can only be registered again by whoever holds its token
  (see ``agents.register``), so after a rotation agents come back under new ids. Tokens of the
  first format (``lct1.``, bound to no registration) are no longer accepted, with the same effect.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path
from typing import NamedTuple

from ...errors import InvalidInput, StoreError

PREFIX = "lct2"
HEADER = "X-Agent-Token"
SECRET_FILE = "http-secret"
_CONTEXT = b"lean-ctx agent token v2\x00"


class TokenClaim(NamedTuple):
    """What a token with a good signature says: who, and which registration of it."""

    agent_id: str
    registered_at: str


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def load_secret(path: Path) -> bytes:
    """The secret at ``path``, created (mode 0600, in a directory of mode 0700) if absent."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_bytes(32))
        st = path.stat()
        if os.name == "posix" and st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise InvalidInput(
                "HTTP_SECRET_INSECURE",
                f"{path} (the agent-token secret) can be read by other users: `chmod 600 {path}`, or delete it to"
                " rotate every agent token",
            )
        data = path.read_bytes()
    except OSError as exc:
        raise StoreError("HTTP_SECRET_UNREADABLE",
                         f"cannot read or create the agent-token secret {path}: {exc}") from exc
    if len(data) < 32:
        raise InvalidInput("HTTP_SECRET_INSECURE", f"{path} holds fewer than 32 bytes; delete it and restart")
    return data


class AgentTokens:
    def __init__(self, secret: bytes, scope: str) -> None:
        self._secret = secret
        self._scope = scope.encode("utf-8", "surrogatepass")

    def _mac(self, agent_id: str, registered_at: str) -> bytes:
        msg = (_CONTEXT + self._scope + b"\x00" + agent_id.encode("utf-8", "surrogatepass") + b"\x00"
               + registered_at.encode("utf-8", "surrogatepass"))
        return hmac.new(self._secret, msg, hashlib.sha256).digest()

    def mint(self, agent_id: str, registered_at: str) -> str:
        """The token of ``agent_id``'s registration at ``registered_at`` (its event's ``ts``)."""
        return (f"{PREFIX}.{_b64(agent_id.encode('utf-8'))}.{_b64(registered_at.encode('utf-8'))}"
                f".{_b64(self._mac(agent_id, registered_at))}")

    def verify(self, token: str | None) -> TokenClaim | None:
        """What a ``token`` this server signed claims, else None. The signature only: whether
        that registration is still the agent's, and the agent still there, is the log's to say."""
        if not token or len(token) > 1024:
            return None
        parts = token.strip().split(".")
        if len(parts) != 4 or parts[0] != PREFIX:
            return None
        try:
            agent_id = _unb64(parts[1]).decode("utf-8")
            registered_at = _unb64(parts[2]).decode("utf-8")
            mac = _unb64(parts[3])
        except (binascii.Error, ValueError, UnicodeDecodeError):
            return None
        if not agent_id or not registered_at or not hmac.compare_digest(mac, self._mac(agent_id, registered_at)):
            return None
        return TokenClaim(agent_id, registered_at)
