"""The base of every event kind.

An event kind is a frozen msgspec ``Struct`` tagged on ``kind`` with a dotted, past-tense
name (``agent.registered``). ``schema_version`` is a class-level constant per kind; when a
kind changes shape, bump it and register an upcaster (``leanctx.events.upcast``) from the
old version so that old payloads still decode.
"""

from __future__ import annotations

from typing import ClassVar

import msgspec

_generation = 0  # bumped by every Event subclass definition (see registry())

class Event(msgspec.Struct, tag_field="kind", frozen=True, kw_only=True, omit_defaults=False):
    """Base class: subclass with ``tag="family.fact"``."""

    schema_version: ClassVar[int] = 1

    def __init_subclass__(cls, **kwargs: object) -> None:
        # msgspec sets the tag after this hook runs, so only note that the registry changed
        super().__init_subclass__(**kwargs)
        global _generation
        _generation += 1

    @property
    def kind(self) -> str:
        return type(self).__struct_config__.tag  # type: ignore[return-value]


def kind_of(cls: type[Event]) -> str:
    return cls.__struct_config__.tag  # type: ignore[return-value]


def _walk(cls: type[Event]) -> list[type[Event]]:
    out: list[type[Event]] = []
    for sub in cls.__subclasses__():
        out.append(sub)
        out.extend(_walk(sub))
    return out


_cache: tuple[int, dict[str, type[Event]]] = (-1, {})


def registry() -> dict[str, type[Event]]:
    """kind → Struct for every defined kind (subclasses of ``Event``), sorted by kind.

    O(1) while no kind is defined; rebuilt after a new subclass appears. Raises
    ``TypeError`` when a kind is defined twice or has no dotted tag.
    """
    global _cache
    if _cache[0] == _generation:
        return _cache[1]
    subs = _walk(Event)
    out: dict[str, type[Event]] = {}
    for cls in subs:
        tag = cls.__struct_config__.tag
        if not isinstance(tag, str) or "." not in tag:
            raise TypeError(f"{cls.__name__}: an event kind needs a dotted tag like 'agent.registered'")
        if tag in out and out[tag] is not cls:
            raise TypeError(f"event kind {tag!r} is defined twice ({out[tag].__name__}, {cls.__name__})")
        out[tag] = cls
    _cache = (_generation, dict(sorted(out.items())))
    return _cache[1]
