"""Agent tokens: proof that a caller is the agent it names.

``POST /v1/agents/register`` answers with the agent's token; every action of that agent sends
it back in ``X-Agent-Token``. A token is derived, not stored:

    token = "lct1." + b64url(agent_id) + "." + b64url(HMAC-SHA256(secret, "lean-ctx agent token v1" ‖ db ‖ agent_id))

- ``secret``: 32 random bytes in ``<data dir>/http-secret``, created with mode 0600 on first
  use; the server refuses to start if the file can be read by anyone else
  (``HTTP_SECRET_INSECURE``). Nothing else is kept: a token survives server restarts, and the
  server can check it with one HMAC and no lookup.
- ``db``: the real path of the event log, so that an agent id that exists in two projects' logs
  has two different tokens.
- Rotation: delete the secret file and restart; every token becomes invalid and agents register
  again. An id already known to the log can only be registered again by whoever holds its token
  (see ``agents.register``), so after a rotation agents come back under new ids.
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

from ...errors import InvalidInput, StoreError

PREFIX = "lct1"
HEADER = "X-Agent-Token"
SECRET_FILE = "http-secret"
_CONTEXT = b"lean-ctx agent token v1\x00"


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

    def _mac(self, agent_id: str) -> bytes:
        msg = _CONTEXT + self._scope + b"\x00" + agent_id.encode("utf-8", "surrogatepass")
        return hmac.new(self._secret, msg, hashlib.sha256).digest()

    def mint(self, agent_id: str) -> str:
        return f"{PREFIX}.{_b64(agent_id.encode('utf-8'))}.{_b64(self._mac(agent_id))}"

    def verify(self, token: str | None) -> str | None:
        """The agent id a valid ``token`` belongs to, else None."""
        if not token or len(token) > 1024:
            return None
        parts = token.strip().split(".")
        if len(parts) != 3 or parts[0] != PREFIX:
            return None
        try:
            agent_id = _unb64(parts[1]).decode("utf-8")
            mac = _unb64(parts[2])
        except (binascii.Error, ValueError, UnicodeDecodeError):
            return None
        if not agent_id or not hmac.compare_digest(mac, self._mac(agent_id)):
            return None
        return agent_id
