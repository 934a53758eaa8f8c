"""Responses: JSON bodies encoded with msgspec, and the one error shape.

Every error is ``{"error": {"code": STABLE_CODE, "message": sentence[, "details": {...}]}}``
with the status of the ``LeanCtxError`` (``http_status``): the same code the CLI prints and MCP
reports. Errors raised by the HTTP layer itself are ``HttpError`` (a ``LeanCtxError`` that
carries its own status).
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from ...errors import LeanCtxError

log = logging.getLogger("leanctx.http")


class HttpError(LeanCtxError):
    """An error the HTTP layer raises (authentication, content type, rate limit, ...)."""

    def __init__(self, status: int, code: str, message: str, *, headers: dict[str, str] | None = None,
                 **details: Any) -> None:
        super().__init__(code, message, **details)
        self.http_status = status
        self.headers = headers or {}


def _default(obj: Any) -> Any:
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    if isinstance(obj, bytes):
        return obj.decode("utf-8", "replace")
    return repr(obj)


def encode(obj: Any) -> bytes:
    try:
        return msgspec.json.encode(obj, enc_hook=_default)
    except (UnicodeError, TypeError, ValueError, OverflowError):  # lone surrogates, NaN keys, ...
        return msgspec.json.encode(_scrub(msgspec.to_builtins(obj, enc_hook=_default)))


def _scrub(obj: Any) -> Any:
    if isinstance(obj, str):
        return obj.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(obj, dict):
        return {_scrub(k): _scrub(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_scrub(v) for v in obj]
    return obj


class JSON(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return encode(content)


def error_body(err: LeanCtxError) -> dict[str, Any]:
    return {"error": err.to_dict()}


def error_response(err: LeanCtxError) -> JSON:
    status = int(getattr(err, "http_status", 400) or 400)
    headers = dict(getattr(err, "headers", {}) or {})
    if err.code == "STORE_BUSY":  # another writer held the log too long: a retry will do
        status = 503
        headers.setdefault("Retry-After", "1")
    if status >= 500:
        log.error("request failed: %s", err)
    return JSON(error_body(err), status_code=status, headers=headers)


def error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSON:
    return error_response(HttpError(status, code, message, headers=headers))


# --- exception handlers (installed by the app) -------------------------------------------

_STATUS_CODES = {
    404: ("HTTP_NOT_FOUND", "no such route; see /openapi.json for the routes this server has"),
    405: ("HTTP_METHOD_NOT_ALLOWED", "this route does not take that method; see /openapi.json"),
}


async def on_leanctx_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, LeanCtxError)
    return error_response(exc)


async def on_http_exception(request: Request, exc: Exception) -> Response:
    status = int(getattr(exc, "status_code", 500))
    code, message = _STATUS_CODES.get(status, (f"HTTP_{status}", str(getattr(exc, "detail", "")) or "request refused"))
    headers = dict(getattr(exc, "headers", None) or {})
    return error(status, code, message, headers)


async def on_unexpected(request: Request, exc: Exception) -> Response:
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    return error(500, "INTERNAL_ERROR", f"{type(exc).__name__}: the server failed; this is a bug in lean-ctx, "
                 "please report it with the request that caused it")
