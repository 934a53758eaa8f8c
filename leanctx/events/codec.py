"""Encoding of payloads, canonical bytes and the hash chain.

``hash = sha256(prev_hash ‖ canonical)`` where ``canonical`` is the JSON array of every
column of the row but the two hashes, with the stored payload bytes embedded verbatim.
Any change to any column of any row therefore breaks the chain at that row.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from ..errors import LeanCtxError
from .kinds import Event, registry
from .upcast import upcast

GENESIS_HASH = "0" * 64

_encoder = msgspec.json.Encoder()
_decoders: dict[str, msgspec.json.Decoder[Any]] = {}  # kind -> decoder of its current Struct
_versions: dict[str, int] = {}
_dict_decoder = msgspec.json.Decoder(dict[str, Any])


def encode_payload(event: Event) -> bytes:
    return _encoder.encode(event)


def decode_payload(kind: str, schema_version: int, payload: bytes) -> Event:
    """Decode a stored payload into its Struct, upcasting old schema versions."""
    dec = _decoders.get(kind)
    if dec is not None and schema_version == _versions[kind]:
        return dec.decode(payload)
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
    """``row``: every column but payload and the hashes, in table order."""
    return _encoder.encode([*row, msgspec.Raw(payload)])


def canonical_row(row: tuple[Any, ...], payload: bytes) -> bytes:
    """The same bytes as ``canonical_bytes``, built without the Raw wrapper (the append loop's
    hot path): ``[c1,...,c14]`` with the payload spliced in before the closing bracket."""
    return _encoder.encode(row)[:-1] + b"," + payload + b"]"


def chain_hash(prev_hash: str, canonical: bytes) -> str:
    return hashlib.sha256(prev_hash.encode("ascii") + canonical).hexdigest()
