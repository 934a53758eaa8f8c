"""Context Proof over HTTP: operator routes over the proofs directory of the server's log
(``<db dir>/proofs``), through the same code as ``lean-ctx proof`` and ``ctx_proof``
(``leanctx.proof_store``).

- ``POST /v1/proof``: build a proof of the log at its head (a replay into a fresh database, off
  the event loop), write ``context-proof-<head>.json`` and ``.html``; answers ``ProofCreated``.
- ``GET /v1/proof/latest``: the proof with the highest head and its recorded verification, read
  without a replay (``ProofInfo``); ``404 PROOF_NOT_FOUND`` when there is none.
- ``POST /v1/proof/verify`` ``{"file": "context-proof-12.json"}`` (optional; default: the latest):
  verify against the log, record ``context-proof-12.verify.json``, answer the report.
- ``GET /v1/proof/html?file=...``: the stored page (``text/html``; default: the latest), under
  a Content-Security-Policy that allows its inline style and nothing else.

A proof is named by its bare file name only: ``context-proof-<N>.json`` (the page route also takes
``.html``); a path, ``..`` or any other name is ``422 PROOF_INVALID_NAME``.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from ... import proof_store as ps
from ...errors import InvalidInput, NotFound
from .bodies import convert, json_body, q_str
from .responses import JSON
from .routes import SERVER, Param, RouteSpec
from .state import srv

TAG = "proof"
PAGE_CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none';"
            " frame-ancestors 'self'")


class ProofVerifyBody(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    file: str | None = None  # a bare file name in the proofs directory; default: the latest proof


async def create(request: Request) -> Response:
    st = srv(request)
    if await json_body(request, st.config.max_body_bytes):  # a body, if sent, must be an empty JSON object
        raise InvalidInput("INVALID_INPUT", "POST /v1/proof takes no fields; send no body or {}")
    return JSON(await st.run(ps.create, st.lc, st.project_root))


async def latest(request: Request) -> Response:
    st = srv(request)
    d = ps.proofs_dir(st.lc)
    return JSON(await st.run(ps.on_latest, d, ps.describe))


async def verify(request: Request) -> Response:
    st = srv(request)
    b = convert(await json_body(request, st.config.max_body_bytes), ProofVerifyBody, what="ProofVerifyBody")
    return JSON(await st.run(ps.verify_named, st.lc, b.file))


async def html(request: Request) -> Response:
    st = srv(request)
    name = q_str(request, "file", max_len=200)
    d = ps.proofs_dir(st.lc)

    def page(path: Path) -> bytes:
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise NotFound(ps.PROOF_NOT_FOUND, f"{path.name} is not in the proofs directory") from None

    if name is None:
        data = await st.run(ps.on_latest, d, lambda latest: page(latest.with_suffix(".html")))
    else:
        data = await st.run(lambda: page(ps.resolve_name(d, name, suffix="html")))
    return Response(data, media_type="text/html; charset=utf-8",
                    headers={"Content-Security-Policy": PAGE_CSP, "X-Content-Type-Options": "nosniff",
                             "Referrer-Policy": "no-referrer", "Cache-Control": "no-cache"})


FILE_PARAM = Param("file", description="A proof's file name in the proofs directory (context-proof-<N>.json or "
                   ".html); default: the latest proof.")
ROUTES = [
    RouteSpec("POST", "/v1/proof", create, "Build and write a signed Context Proof of the log at its head into "
              "<db dir>/proofs.", TAG, auth=SERVER, response=ps.ProofCreated, operation_id="create_proof"),
    RouteSpec("GET", "/v1/proof/latest", latest, "The newest proof (highest head) and its recorded verification; "
              "404 PROOF_NOT_FOUND when none exists.", TAG, auth=SERVER, response=ps.ProofInfo,
              operation_id="latest_proof"),
    RouteSpec("POST", "/v1/proof/verify", verify, "Verify a stored proof (default: the latest) by replaying the log; "
              "the result is recorded next to it as <name>.verify.json.", TAG, auth=SERVER, body=ProofVerifyBody,
              response=ps.ProofVerifyAnswer, operation_id="verify_proof"),
    RouteSpec("GET", "/v1/proof/html", html, "A stored proof's self-contained HTML page.", TAG, auth=SERVER,
              params=(FILE_PARAM,), content_type="text/html", operation_id="proof_html"),
]
