"""TransportEnvelopeV1: a handoff bundle (or any context package) wrapped for agent-to-agent
transport, authenticated with a shared secret.

    {"version": 1, "sender": "<agent id>", "created_at": "<iso>", "payload_kind": "handoff" | "context",
     "payload": <the bundle object / any JSON value>,
     "mac": "<64 lowercase hex: HMAC-SHA256(secret, keys.canonical(envelope without mac))>"}

The wire and file form is exactly ``keys.canonical(envelope) + b"\\n"`` (the trailing newline is
optional on the wire); any other bytes are refused, so no single byte can change unnoticed.
The MAC proves the envelope came from a holder of the secret; a handoff payload is verified
again on its own (Ed25519 signature, trust store) when it is imported.
Codes: ``ENVELOPE_INVALID``, ``ENVELOPE_BAD_MAC``, ``ENVELOPE_NO_SECRET``.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path
from typing import Any

import msgspec

from . import keys
from .errors import CommandError, InvalidInput

VERSION = 1
KINDS = ("handoff", "context")
ENVELOPE_INVALID = "ENVELOPE_INVALID"
ENVELOPE_BAD_MAC = "ENVELOPE_BAD_MAC"
ENVELOPE_NO_SECRET = "ENVELOPE_NO_SECRET"
SECRET_ENV = "LEAN_CTX_A2A_SECRET"
SECRET_FILE = "a2a-secret"
MAX_BYTES = 16 * 1024 * 1024


class TransportEnvelopeV1(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    version: int
    sender: str
    created_at: str
    payload_kind: str
    payload: Any
    mac: str


def _key(secret: str | bytes) -> bytes:
    k = secret.encode() if isinstance(secret, str) else bytes(secret)
    if not k:
        raise InvalidInput(ENVELOPE_NO_SECRET, "an envelope needs a non-empty shared secret (--secret)")
    return k


def mac_of(secret: str | bytes, rest: dict[str, Any]) -> str:
    return hmac.new(_key(secret), keys.canonical(rest), hashlib.sha256).hexdigest()


def seal(payload: Any, *, sender: str, created_at: str, payload_kind: str, secret: str | bytes) -> bytes:
    """The envelope's bytes (canonical + newline)."""
    if payload_kind not in KINDS:
        raise InvalidInput(ENVELOPE_INVALID, f"payload_kind is one of {', '.join(KINDS)}, not {payload_kind!r}")
    rest = {"version": VERSION, "sender": sender, "created_at": created_at, "payload_kind": payload_kind,
            "payload": payload}
    return keys.canonical({**rest, "mac": mac_of(secret, rest)}) + b"\n"


def open_envelope(raw: bytes | str, secret: str | bytes) -> TransportEnvelopeV1:
    """Check the bytes are canonical and the MAC is right; the envelope, or a refusal."""
    key = _key(secret)
    data = raw.encode() if isinstance(raw, str) else bytes(raw)
    if len(data) > MAX_BYTES:
        raise InvalidInput(ENVELOPE_INVALID, f"an envelope holds at most {MAX_BYTES} bytes")
    try:
        obj = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise InvalidInput(ENVELOPE_INVALID, f"not a transport envelope: not JSON ({exc})") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("mac"), str):
        raise InvalidInput(ENVELOPE_INVALID, "not a transport envelope: a JSON object with a 'mac' is expected")
    canon = keys.canonical(obj)
    if data not in (canon, canon + b"\n"):
        raise CommandError(ENVELOPE_BAD_MAC, "the envelope's bytes are not the canonical bytes that were "
                           "authenticated (it was changed in transit); nothing was applied")
    rest = {k: v for k, v in obj.items() if k != "mac"}
    if not hmac.compare_digest(obj["mac"], hmac.new(key, keys.canonical(rest), hashlib.sha256).hexdigest()):
        raise CommandError(ENVELOPE_BAD_MAC, "the envelope's MAC does not match its content and the shared "
                           "secret; nothing was applied")
    try:
        env = msgspec.convert(obj, TransportEnvelopeV1)
    except msgspec.ValidationError as exc:
        raise InvalidInput(ENVELOPE_INVALID, f"not a transport envelope: {exc}") from None
    if env.version != VERSION or env.payload_kind not in KINDS:
        raise InvalidInput(ENVELOPE_INVALID, f"unsupported envelope (version {env.version}, kind {env.payload_kind!r})")
    return env


def server_secret(base: Path | None = None) -> str:
    """The secret a receiving server checks envelopes with: ``$LEAN_CTX_A2A_SECRET``, else the
    file ``<data dir>/a2a-secret``; ``ENVELOPE_NO_SECRET`` when neither is set."""
    env = os.environ.get(SECRET_ENV)
    if env:
        return env
    path = (base or keys.data_dir()) / SECRET_FILE
    try:
        text = path.read_text().strip()
    except OSError:
        text = ""
    if not text:
        raise CommandError(ENVELOPE_NO_SECRET, f"this server has no A2A secret: set ${SECRET_ENV} or write it to "
                           f"{path} (mode 0600)")
    return text
