"""Upcasters: turn a payload written at an old ``schema_version`` into the current shape.

Register one function per (kind, from_version); it receives the decoded JSON object and
returns the object at ``from_version + 1``. Decoding applies the chain up to the kind's
current ``schema_version``. The stored bytes are never rewritten (the log is immutable).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import LeanCtxError

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]

_UPCASTERS: dict[tuple[str, int], Upcaster] = {}


def upcaster(kind: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
    """Decorator: register ``fn`` to lift ``kind`` payloads from ``from_version``."""

    def register(fn: Upcaster) -> Upcaster:
        key = (kind, from_version)
        if key in _UPCASTERS and _UPCASTERS[key] is not fn:
            raise TypeError(f"an upcaster for {kind} v{from_version} is already registered")
        _UPCASTERS[key] = fn
        return fn

    return register


def unregister(kind: str, from_version: int) -> None:
    _UPCASTERS.pop((kind, from_version), None)


def upcast(kind: str, version: int, target: int, data: dict[str, Any]) -> dict[str, Any]:
    """Apply the registered chain ``version → target``."""
    while version < target:
        fn = _UPCASTERS.get((kind, version))
        if fn is None:
            raise LeanCtxError(
                "EVENT_NO_UPCASTER",
                f"{kind} is stored at schema_version {version} but the code expects {target} "
                f"and no upcaster from v{version} is registered; register one in leanctx.events.upcast",
            )
        data = fn(dict(data))
        data["kind"] = kind
        version += 1
    return data
