"""Handoff bundles: build, sign and verify (pure functions plus ``leanctx.keys``).

A bundle is one JSON object, ``HandoffBodyV1`` plus ``signature``::

    {"format": "lean-ctx.handoff.v1", "handoff_id", "created_at", "project",
     "sender": {"agent_id", "session_id", "key_id", "fingerprint"},
     "session": {"session_id", "task", "step", "total", "notes": [{"note", "text", "path", "ts"}]},
     "files": [{"ref", "path", "content_hash"}],
     "knowledge": [{"key", "category", "value", "confidence", "source", "agent", "ts"}],
     "workflow": [{"channel", "task_id", "title", "status", "owner", "to_agent", "depends_on",
                   "acceptance", "files_hint"}],
     "diary": [{"seq", "category", "text", "ts", "tags", "paths", "session_id"}],
     "message": str | null,
     "signature": {"alg": "ed25519", "sig": "<128 lowercase hex>"}}

``sig`` is the sender key's Ed25519 signature of ``keys.canonical(bundle without "signature")``.
The file form is exactly ``keys.canonical(bundle) + b"\\n"``: any other byte sequence is refused
(``HANDOFF_TAMPERED``), so no byte of a bundle can change without a refusal — whitespace and
escapes included.

Verification never uses a key carried in the bundle (it carries none: only the signer's key id
and fingerprint, inside the signed part). The signer must be in the trust store: a key this data
dir holds for a *registered* agent id, a public key the log recorded when that agent registered
(``agent.registered``: so an importer with another data dir but the same log trusts it too), or
a key added with ``lean-ctx keys trust FILE``; the trusted key's id must be the claimed sender.
When the log recorded a key for the agent's current registration (``commands.agents.recorded_key``),
that key alone speaks for it among the first two: another key of the same id in this data dir
does not. ``verify_with_key`` checks a bundle against one key vouched for by the caller instead
(``leanctx.handoff_trust``: the key the log bound to a sender that has left, when the log holds
that bundle's ``handoff.created``). Codes: ``HANDOFF_INVALID`` (not a bundle),
``HANDOFF_TAMPERED`` (bytes not canonical), ``HANDOFF_UNSIGNED``, ``KEY_UNTRUSTED``,
``SIGNATURE_INVALID``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from . import keys
from .errors import CommandError, InvalidInput

FORMAT = "lean-ctx.handoff.v1"
HANDOFF_INVALID = "HANDOFF_INVALID"
HANDOFF_TAMPERED = "HANDOFF_TAMPERED"
HANDOFF_UNSIGNED = "HANDOFF_UNSIGNED"
MAX_BUNDLE_BYTES = 16 * 1024 * 1024


class _S(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class BSender(_S):
    agent_id: str
    session_id: str
    key_id: str
    fingerprint: str


class BNote(_S):
    note: str
    text: str
    path: str | None
    ts: str


class BSession(_S):
    session_id: str
    task: str | None
    step: int
    total: int
    notes: list[BNote]


class BFile(_S):
    ref: str
    path: str
    content_hash: str | None


class BKnowledge(_S):
    key: str
    category: str
    value: str
    confidence: float
    source: str | None
    agent: str
    ts: str


class BTask(_S):
    channel: str
    task_id: str
    title: str
    status: str
    owner: str | None
    to_agent: str | None
    depends_on: list[str]
    acceptance: str | None
    files_hint: list[str]


class BDiary(_S):
    seq: int
    category: str
    text: str
    ts: str
    tags: list[str]
    paths: list[str]
    session_id: str | None


class HandoffBodyV1(_S):
    format: str
    handoff_id: str
    created_at: str
    project: str
    sender: BSender
    session: BSession
    files: list[BFile]
    knowledge: list[BKnowledge]
    workflow: list[BTask]
    diary: list[BDiary]
    message: str | None = None


class Signature(_S):
    alg: str
    sig: str


class Verified(msgspec.Struct, frozen=True):
    body: HandoffBodyV1
    signer: keys.KeyInfo
    digest: str  # sha256 hex of the signed bytes


def signed_bytes(body: HandoffBodyV1 | dict[str, Any]) -> bytes:
    obj = msgspec.to_builtins(body) if isinstance(body, msgspec.Struct) else body
    return keys.canonical({k: v for k, v in obj.items() if k != "signature"})


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sign_bundle(body: HandoffBodyV1, *, base: Path | None = None) -> dict[str, Any]:
    """The signed bundle (a JSON-ready dict): ``body`` plus the signature of its canonical bytes
    by ``body.sender.key_id`` (its key is created on first use)."""
    pub = keys.public_key(body.sender.key_id, base=base)
    if keys.fingerprint(pub) != body.sender.fingerprint:
        raise InvalidInput(HANDOFF_INVALID, "the sender fingerprint is not the fingerprint of the signing key")
    data = signed_bytes(body)
    sig = keys.sign(body.sender.key_id, data, base=base)
    return {**msgspec.to_builtins(body), "signature": {"alg": keys.ALG, "sig": sig.hex()}}


def encode(bundle: dict[str, Any]) -> bytes:
    """The file form: canonical bytes and one newline."""
    return keys.canonical(bundle) + b"\n"


def parse(raw: bytes | str) -> dict[str, Any]:
    """The bundle object of a file, refused unless its bytes are exactly the canonical form."""
    data = raw.encode() if isinstance(raw, str) else bytes(raw)
    if len(data) > MAX_BUNDLE_BYTES:
        raise InvalidInput(HANDOFF_INVALID, f"a handoff bundle holds at most {MAX_BUNDLE_BYTES} bytes")
    try:
        obj = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise InvalidInput(HANDOFF_INVALID, f"not a handoff bundle: the file is not JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise InvalidInput(HANDOFF_INVALID, "not a handoff bundle: a bundle is a JSON object")
    if encode(obj) != data:
        raise CommandError(HANDOFF_TAMPERED, "the bundle's bytes are not the canonical bytes its sender wrote "
                           "(it was edited); ask the sender for a fresh one (ctx_handoff action=create, "
                           "or `lean-ctx handoff create`)")
    return obj


def trusted_signer(fingerprint: str, key_id: str, registered: Iterable[str], *,
                   recorded: Mapping[str, Iterable[str]] | None = None, base: Path | None = None) -> keys.KeyInfo:
    """The trust store's key with ``fingerprint``: a public key (base64) ``recorded`` for a
    registered agent's current registration (agent id → keys), a local key of a registered agent
    for which the log recorded none, or a key added with ``keys trust``; its id must be
    ``key_id``. ``KEY_UNTRUSTED`` otherwise."""
    reg = set(registered)
    bound: dict[str, dict[str, str]] = {}  # registered agent → fingerprint → base64 of its recorded key(s)
    for agent_id, pubs in (recorded or {}).items():
        if agent_id not in reg:
            continue
        for b in pubs:
            try:
                raw = keys.unb64(b)
            except InvalidInput:
                continue
            if len(raw) == 32:
                bound.setdefault(agent_id, {})[keys.fingerprint(raw)] = keys.b64(raw)
    # the log's record of an agent's key wins over a key of the same id in this data dir
    found = [k for k in keys.local_keys(base) if k.key_id in reg and k.fingerprint == fingerprint
             and (k.key_id not in bound or fingerprint in bound[k.key_id])]
    found += [keys.KeyInfo(agent_id, fingerprint, fps[fingerprint], False, True, f"log: agent.registered of {agent_id}")
              for agent_id, fps in sorted(bound.items()) if fingerprint in fps]
    found += [k for k in keys.trusted_keys(base) if k.fingerprint == fingerprint]
    for k in found:
        if k.key_id == key_id:
            return k
    if found:
        why = f"it is trusted as {found[0].key_id!r}, not as the claimed signer {key_id!r}"
    elif key_id in bound:
        why = (f"this log recorded another key for {key_id!r}'s current registration "
               f"({', '.join(sorted(bound[key_id]))})")
    else:
        why = ("it is neither the key of an agent registered in this log (recorded at its registration, or held "
               f"in this data dir) nor a trusted key; to trust it, {keys.TRUST_HOW}")
    raise CommandError(keys.KEY_UNTRUSTED, f"the signer key {fingerprint} ({key_id}) is not trusted here: {why}",
                       fingerprint=fingerprint, key_id=key_id)


def _decoded(obj: dict[str, Any]) -> tuple[HandoffBodyV1, bytes]:
    """The body and the raw signature of a parsed bundle, refused unless it has the bundle's shape."""
    if obj.get("format") != FORMAT:
        raise InvalidInput(HANDOFF_INVALID, f"not a handoff bundle (format must be {FORMAT!r})")
    raw_sig = obj.get("signature")
    if raw_sig is None:
        raise CommandError(HANDOFF_UNSIGNED, "the bundle carries no signature; only signed bundles are imported")
    try:
        sig_s = msgspec.convert(raw_sig, Signature)
        body = msgspec.convert({k: v for k, v in obj.items() if k != "signature"}, HandoffBodyV1)
    except msgspec.ValidationError as exc:
        raise InvalidInput(HANDOFF_INVALID, f"not a handoff bundle: {exc}") from None
    if sig_s.alg != keys.ALG:
        raise CommandError(HANDOFF_UNSIGNED, f"the bundle's signature is not {keys.ALG}")
    try:
        sig = bytes.fromhex(sig_s.sig)
    except ValueError:
        sig = b""
    if len(sig) != 64 or sig.hex() != sig_s.sig:
        raise CommandError(keys.SIGNATURE_INVALID, "the signature is not 64 bytes of lowercase hex")
    if body.sender.key_id != body.sender.agent_id:
        raise CommandError(keys.KEY_UNTRUSTED, "a handoff is signed with the sender agent's own key")
    return body, sig


def _checked(obj: dict[str, Any], body: HandoffBodyV1, sig: bytes, signer: keys.KeyInfo) -> Verified:
    data = signed_bytes(obj)
    keys.verify(keys.unb64(signer.public_key), data, sig)
    if signed_bytes(body) != data:  # defaults filled in by the Struct would not have been signed
        raise CommandError(HANDOFF_TAMPERED, "the bundle does not match its own schema exactly")
    return Verified(body, signer, digest_of(data))


def verify_obj(obj: dict[str, Any], registered: Iterable[str], *,
               recorded: Mapping[str, Iterable[str]] | None = None, base: Path | None = None) -> Verified:
    """Verify a parsed bundle object (see the module doc for the order of the checks)."""
    body, sig = _decoded(obj)
    signer = trusted_signer(body.sender.fingerprint, body.sender.key_id, registered, recorded=recorded, base=base)
    return _checked(obj, body, sig, signer)


def verify_with_key(obj: dict[str, Any], signer: keys.KeyInfo) -> Verified:
    """Verify a parsed bundle object against one key the caller vouches for (``leanctx.handoff_trust``:
    the key the log bound to the sender when it recorded the bundle's ``handoff.created``), with
    the same checks as ``verify_obj``; the key must be the claimed signer's (id and fingerprint)."""
    body, sig = _decoded(obj)
    if signer.key_id != body.sender.key_id or signer.fingerprint != body.sender.fingerprint:
        raise CommandError(keys.KEY_UNTRUSTED, f"the signer key {body.sender.fingerprint} ({body.sender.key_id}) "
                           f"is not the key {signer.fingerprint} ({signer.key_id}) vouched for",
                           fingerprint=body.sender.fingerprint, key_id=body.sender.key_id)
    try:
        raw = keys.unb64(signer.public_key)
    except InvalidInput:
        raw = b""
    if len(raw) != 32 or keys.fingerprint(raw) != signer.fingerprint:
        raise CommandError(keys.KEY_UNTRUSTED, f"the key vouched for {signer.key_id!r} is not a key of fingerprint "
                           f"{signer.fingerprint}", fingerprint=body.sender.fingerprint, key_id=body.sender.key_id)
    return _checked(obj, body, sig, signer)


def verify(raw: bytes | str, registered: Iterable[str], *,
           recorded: Mapping[str, Iterable[str]] | None = None, base: Path | None = None) -> Verified:
    return verify_obj(parse(raw), registered, recorded=recorded, base=base)


def claimed_sender(obj: dict[str, Any]) -> str | None:
    """The sender agent id a parsed bundle claims (unverified: to look up its recorded keys)."""
    sender = obj.get("sender")
    agent_id = sender.get("agent_id") if isinstance(sender, dict) else None
    return agent_id if isinstance(agent_id, str) else None


def claimed_handoff_id(obj: dict[str, Any]) -> str | None:
    """The handoff id a parsed bundle claims (unverified: to look up the log's record of it)."""
    hid = obj.get("handoff_id")
    return hid if isinstance(hid, str) else None
