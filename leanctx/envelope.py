"""TransportEnvelopeV1: a handoff bundle (or any context package) wrapped for agent-to-agent
transport, authenticated with a shared secret.

    {"version": 1, "sender": "<agent id>", "created_at": "<iso>", "payload_kind": "handoff" | "context",
     "payload": <the bundle object / any JSON value>,
     "mac": "<64 lowercase hex: HMAC-SHA256(secret, keys.canonical(envelope without mac))>"}

The wire and file form is exactly ``keys.canonical(envelope) + b"\\n"`` (the trailing newline is
optional on the wire); any other bytes are refused, so no single byte can change unnoticed.
The MAC proves the envelope came from a holder of the secret; a handoff payload is verified
again on its own (Ed25519 signature, trust store) when it is imported.

``created_at`` is an ISO 8601 time with a UTC offset (``clock.iso`` writes one; any other is
``ENVELOPE_INVALID``). A receiver that passes ``now`` (``POST /v1/a2a/handoff`` does, at the
server's clock) also refuses an envelope sealed more than ``MAX_AGE_S`` (24 h) before ``now``
(``ENVELOPE_EXPIRED``) or more than ``MAX_SKEW_S`` (5 min) after it (``ENVELOPE_NOT_YET_VALID``).
24 h leaves room for an envelope sealed to a file and carried over (``pack seal``, then sent or
received later) and for a queue that delivers late; 5 min is the clock skew tolerated between
two hosts. The window bounds how long captured bytes stay usable; a replay inside it is stopped
by the import itself (``handoff.import`` applies a bundle once per receiver).
Codes: ``ENVELOPE_INVALID``, ``ENVELOPE_BAD_MAC``, ``ENVELOPE_NO_SECRET``, ``ENVELOPE_EXPIRED``,
``ENVELOPE_NOT_YET_VALID``.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from . import clock, keys
from .errors import CommandError, InvalidInput

VERSION = 1
KINDS = ("handoff", "context")
ENVELOPE_INVALID = "ENVELOPE_INVALID"
ENVELOPE_BAD_MAC = "ENVELOPE_BAD_MAC"
ENVELOPE_NO_SECRET = "ENVELOPE_NO_SECRET"
ENVELOPE_EXPIRED = "ENVELOPE_EXPIRED"
ENVELOPE_NOT_YET_VALID = "ENVELOPE_NOT_YET_VALID"
MAX_AGE_S = 24 * 3600.0  # an envelope sealed longer ago than this is refused (when the receiver passes now)
MAX_SKEW_S = 300.0  # how far ahead of the receiver's clock a sender's may be
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


def created_epoch(created_at: str) -> float:
    """An envelope's ``created_at`` as epoch seconds (ISO 8601 with a UTC offset, e.g.
    ``2026-12-01T07:41:00.000000Z``); ``ENVELOPE_INVALID`` otherwise."""
    try:
        t = datetime.fromisoformat(created_at) if len(created_at) <= 64 else None
    except ValueError:
        t = None
    if t is None or t.tzinfo is None:
        raise InvalidInput(ENVELOPE_INVALID, f"the envelope's created_at {created_at[:64]!r} is not an ISO 8601 time "
                           "with a UTC offset (e.g. 2026-12-01T07:41:00.000000Z); seal it again (`lean-ctx pack "
                           "seal` or `pack send` write one)")
    return t.timestamp()


def check_window(created_at: str, now: float, *, max_age: float = MAX_AGE_S, skew: float = MAX_SKEW_S) -> None:
    """Refuse an envelope sealed more than ``max_age`` before ``now`` or ``skew`` after it."""
    t = created_epoch(created_at)
    if t < now - max_age:
        raise CommandError(ENVELOPE_EXPIRED, f"the envelope's created_at ({created_at}) is more than "
                           f"{max_age / 3600:g} h before this receiver's clock ({clock.iso(now)}): it is too old to "
                           "be applied (a replay, or a long-delayed delivery); seal and send it again")
    if t > now + skew:
        raise CommandError(ENVELOPE_NOT_YET_VALID, f"the envelope's created_at ({created_at}) is more than "
                           f"{skew:g} s after this receiver's clock ({clock.iso(now)}): check the sender's clock, "
                           "then seal and send it again")


def open_envelope(raw: bytes | str, secret: str | bytes, *, now: float | None = None) -> TransportEnvelopeV1:
    """Check the bytes are canonical, the MAC is right and ``created_at`` is a time (inside the
    window around ``now`` when given); the envelope, or a refusal."""
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
    if now is None:
        created_epoch(env.created_at)
    else:
        check_window(env.created_at, now)
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
