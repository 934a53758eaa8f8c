"""Encoding of payloads, canonical bytes and the hash chain.

``hash = sha256(prev_hash ‖ canonical)`` where ``canonical`` is the JSON array of every
column of the row but the two hashes, with the stored payload bytes embedded verbatim.
Any change to any column of any row therefore breaks the chain at that row.

A payload that does not decode into its kind's Struct (a field missing or of the wrong type, bytes
that are not JSON: edited behind the store's back, the chain recomputed) is
``EVENT_UNDECODABLE``, never msgspec's error: ``undecodable()`` builds it, and whoever knows the
event's position (the projection runner) adds it.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from ..errors import LeanCtxError, StoreError
from .kinds import Event, registry
from .upcast import upcast

GENESIS_HASH = "0" * 64

_encoder = msgspec.json.Encoder()
_decoders: dict[str, msgspec.json.Decoder[Any]] = {}  # kind -> decoder of its current Struct
_versions: dict[str, int] = {}
_dict_decoder = msgspec.json.Decoder(dict[str, Any])


def encode_payload(event: Event) -> bytes:
    return _encoder.encode(event)


def undecodable(kind: str, schema_version: int, reason: str, position: int | None = None) -> StoreError:
    """The error of a stored payload that does not decode (``position`` when the caller knows it)."""
    where = f"the event at position {position}" if position is not None else "an event"
    return StoreError(
        "EVENT_UNDECODABLE",
        f"{where} ({kind}, schema_version {schema_version}) has a payload this lean-ctx cannot decode: {reason}. "
        "The log was changed outside lean-ctx or written by a faulty version: restore it from a backup "
        "(`lean-ctx events verify` says whether its hash chain still holds)",
        position=position, kind=kind, schema_version=schema_version, reason=reason,
    )


def decode_payload(kind: str, schema_version: int, payload: bytes) -> Event:
    """Decode a stored payload into its Struct, upcasting old schema versions."""
    try:
        dec = _decoders.get(kind)
        if dec is not None and schema_version == _versions[kind]:
            return dec.decode(payload)
        return _decode_first(kind, schema_version, payload)
    except msgspec.DecodeError as exc:  # ValidationError is one too
        raise undecodable(kind, schema_version, str(exc)) from exc


def _decode_first(kind: str, schema_version: int, payload: bytes) -> Event:
    """A kind's first decode (its decoder is made) or an old schema version's (upcast)."""
    cls = registry().get(kind)
    if cls is None:
        raise LeanCtxError(
            "EVENT_UNKNOWN_KIND",
            f"the log holds an event of kind {kind!r} that this version of lean-ctx does not know; upgrade lean-ctx",
        )
    if schema_version == cls.schema_version:
        dec = _decoders[kind] = msgspec.json.Decoder(cls)
        _versions[kind] = cls.schema_version
        return dec.decode(payload)
    if schema_version > cls.schema_version:
        raise LeanCtxError(
            "EVENT_SCHEMA_TOO_NEW",
            f"{kind} is stored at schema_version {schema_version}, newer than this code's "
            f"{cls.schema_version}; upgrade lean-ctx",
        )
    data = upcast(kind, schema_version, cls.schema_version, _dict_decoder.decode(payload))
    return msgspec.convert(data, cls)


def payload_dict(payload: bytes) -> dict[str, Any]:
    return _dict_decoder.decode(payload)


def canonical_bytes(row: tuple[Any, ...], payload: bytes) -> bytes:
    """``row``: every column but payload and the hashes, in table order. The JSON array of the
    row with the stored payload bytes spliced in verbatim before the closing bracket. (A payload
    edited behind the store's back can come back as TEXT: it is hashed as its UTF-8 bytes.)"""
    if not isinstance(payload, bytes):
        payload = str(payload).encode("utf-8", "surrogatepass")
    return _encoder.encode(row)[:-1] + b"," + payload + b"]"


def chain_hash(prev_hash: str, canonical: bytes) -> str:
    return hashlib.sha256(prev_hash.encode("ascii") + canonical).hexdigest()


def check_link(prev: str, expected_position: int, row: tuple[Any, ...], payload: bytes, prev_hash: str,
               stored_hash: str) -> tuple[str | None, str]:
    """One link of the chain: (why this row breaks it, or None; the hash its content gives).
    ``row`` starts with the 14 columns before the payload."""
    computed = chain_hash(prev, canonical_bytes(row[:14], payload))
    if row[0] != expected_position:
        return f"gap: expected position {expected_position}, found {row[0]}", computed
    if prev_hash != prev:
        return "prev_hash does not match the previous event's hash", computed
    if computed != stored_hash:
        return "hash does not match the event's content", computed
    return None, computed
