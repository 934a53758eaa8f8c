"""Request parsing: JSON bodies, command conversion and query parameters, each refusal a 4xx
with a stable code (never a 500).

- A body must be sent as ``application/json`` (``415 HTTP_UNSUPPORTED_MEDIA_TYPE``): a browser
  cannot send that cross-origin without a CORS preflight, which this server never grants. An
  empty body passes without a ``Content-Type`` or with a JSON one, and is refused (415) with any
  other: ``text/plain``, form and multipart are what a browser's preflight-free "simple request"
  carries, and no JSON client sends them. A bodiless request without a type (``curl -X POST``,
  the dashboard) stays accepted: a browser sending that cross-origin also sends ``Origin``,
  which the security middleware refuses.
- At most ``max_body_bytes`` (``413 HTTP_BODY_TOO_LARGE``); malformed JSON is
  ``400 HTTP_INVALID_JSON``; anything but an object where an object is expected, a field of the
  wrong type, or a field the body does not have (a misspelt ``chanel`` would otherwise be
  dropped and the default used) is ``422 INVALID_INPUT`` (the message names the field, and the
  accepted ones when it is unknown). The context routes (``/v1/context/*``, :mod:`.context`)
  answer ``422 INVALID_ARGUMENT`` instead, like ``/v1/tools`` and MCP for the same tools.
"""

from __future__ import annotations

import math
from typing import Any, TypeVar

import msgspec
from starlette.requests import Request

from ...errors import InvalidInput
from .responses import HttpError

T = TypeVar("T")

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


def _is_json(content_type: str | None) -> bool:
    if not content_type:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


async def raw_body(request: Request, max_bytes: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise HttpError(400, "HTTP_INVALID_CONTENT_LENGTH", "the Content-Length header is not a number") from None
        if size > max_bytes:
            raise _too_large(max_bytes)
    chunks: list[bytes] = []
    total = 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > max_bytes:
            raise _too_large(max_bytes)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limit: int) -> HttpError:
    return HttpError(413, "HTTP_BODY_TOO_LARGE", f"the request body is larger than {limit} bytes; send less")


_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1
MAX_DEPTH = 64


def decode_json(data: bytes) -> Any:
    try:
        value = msgspec.json.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise HttpError(400, "HTTP_INVALID_JSON", f"the body is not valid JSON ({exc}); send a JSON object") from None
    except RecursionError:
        raise HttpError(400, "HTTP_INVALID_JSON", "the body nests too deeply; send a flat JSON object") from None
    _check_values(value)
    return value


def _check_values(value: Any) -> None:
    """Refuse what the log cannot store: integers beyond 64 bits, nesting deeper than MAX_DEPTH."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, bool):
            continue
        if isinstance(v, int):
            if not _INT_MIN <= v <= _INT_MAX:
                raise InvalidInput("INVALID_INPUT", "a number in the body does not fit in 64 bits")
        elif isinstance(v, (dict, list)):
            if depth >= MAX_DEPTH:
                raise InvalidInput("INVALID_INPUT", f"the body nests deeper than {MAX_DEPTH} levels")
            stack.extend((x, depth + 1) for x in (v.values() if isinstance(v, dict) else v))


async def json_body(request: Request, max_bytes: int, *, allow_empty: bool = True) -> dict[str, Any]:
    """The request's JSON object (``{}`` for an empty body when ``allow_empty``)."""
    data = await raw_body(request, max_bytes)
    content_type = request.headers.get("content-type")
    if not data.strip():
        if content_type and content_type.strip() and not _is_json(content_type):
            raise _unsupported()
        if allow_empty:
            return {}
        raise InvalidInput("INVALID_INPUT", "the request needs a JSON object body")
    if not _is_json(content_type):
        raise _unsupported()
    value = decode_json(data)
    if not isinstance(value, dict):
        raise InvalidInput("INVALID_INPUT", f"the body must be a JSON object, not {_json_type(value)}")
    return value


def _unsupported() -> HttpError:
    return HttpError(415, "HTTP_UNSUPPORTED_MEDIA_TYPE",
                     "send the body as JSON with the header `Content-Type: application/json`")


def _json_type(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number",
            type(None): "null"}.get(type(value), type(value).__name__)


def convert(body: dict[str, Any], type_: type[T], *, what: str | None = None) -> T:
    """``body`` as a ``type_`` Struct; a missing, mistyped or unknown field is ``422 INVALID_INPUT``."""
    name = what or getattr(type_, "name", None) or type_.__name__
    check_fields(body, type_, name)
    try:
        return msgspec.convert(body, type_)
    except msgspec.ValidationError as exc:
        raise InvalidInput("INVALID_INPUT", f"{name}: {exc}") from None
    except (RecursionError, OverflowError, ValueError, TypeError) as exc:
        raise InvalidInput("INVALID_INPUT", f"the body cannot be read as {type_.__name__}: {exc}") from None


def accepted_fields(type_: type) -> list[str]:
    """The field names a ``type_`` Struct reads from a JSON object."""
    return [f.encode_name for f in msgspec.structs.fields(type_)]


def check_fields(body: dict[str, Any], type_: type, what: str) -> None:
    """Refuse a key of ``body`` that ``type_`` does not have (``INVALID_INPUT``, naming it and
    the accepted ones), which ``msgspec.convert`` would drop. The bodies served are flat; a
    nested Struct refuses its own unknown keys only if it sets ``forbid_unknown_fields``."""
    accepted = accepted_fields(type_)
    unknown = [k for k in body if k not in accepted]
    if unknown:
        names = ", ".join(repr(k[:60]) for k in unknown[:5])
        raise InvalidInput("INVALID_INPUT", f"{what}: unknown field{'s' if len(unknown) > 1 else ''} {names};"
                                            f" the accepted fields are {', '.join(accepted) or 'none'}")


# --- query parameters ---------------------------------------------------------------------

def q_str(request: Request, name: str, default: str | None = None, *, max_len: int = 4096) -> str | None:
    value = request.query_params.get(name)
    if value is None:
        return default
    if len(value) > max_len or "\x00" in value:
        raise InvalidInput("INVALID_INPUT", f"query parameter {name!r} is too long or holds a NUL character")
    return value


def q_list(request: Request, name: str) -> list[str]:
    """A repeatable parameter; each value may also be a comma-separated list."""
    out: list[str] = []
    for raw in request.query_params.getlist(name):
        if len(raw) > 4096 or "\x00" in raw:
            raise InvalidInput("INVALID_INPUT", f"query parameter {name!r} is too long or holds a NUL character")
        out.extend(v.strip() for v in raw.split(",") if v.strip())
    return out


def q_int(request: Request, name: str, default: int | None = None, *, lo: int | None = None,
          hi: int | None = None) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise InvalidInput("INVALID_INPUT",
                           f"query parameter {name!r} must be a whole number, not {raw[:40]!r}") from None
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        bounds = f"{lo if lo is not None else '-∞'}..{hi if hi is not None else '∞'}"
        raise InvalidInput("INVALID_INPUT", f"query parameter {name!r} must be in {bounds}")
    return value


def q_float(request: Request, name: str, default: float | None = None) -> float | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise InvalidInput("INVALID_INPUT", f"query parameter {name!r} must be a number") from None
    if not math.isfinite(value):
        raise InvalidInput("INVALID_INPUT", f"query parameter {name!r} must be finite")
    return value


def q_bool(request: Request, name: str, default: bool = False) -> bool:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    v = raw.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise InvalidInput("INVALID_INPUT", f"query parameter {name!r} must be true or false")
