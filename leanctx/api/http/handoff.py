"""``POST /v1/a2a/handoff``: receive a TransportEnvelopeV1 (``leanctx.envelope``).

The body is the envelope's canonical bytes (as ``lean-ctx pack send`` posts them). The MAC is
checked with this server's A2A secret (``$LEAN_CTX_A2A_SECRET``, else ``<data dir>/a2a-secret``);
a bad MAC is refused (``ENVELOPE_BAD_MAC``, 401) and nothing is applied or recorded. A handoff
payload is then imported: verified against this server's trust store and recorded
(``handoff.imported``). With ``?apply=1`` and the receiving agent's ``X-Agent-Token`` its
session, knowledge and workflow are applied for that agent — the workflow: the sender's tasks it
still owns in this log are handed to that agent (``task.handed_over``, a fresh lease on those in
progress; ``?lease_seconds=N``, default 900), the others are reported with the reason; without a
token the import is recorded by the agent ``a2a`` and nothing is applied. A ``context`` payload is acknowledged
(MAC checked) and not stored.

The envelope's ``created_at`` must lie inside the window around the server's clock (24 h back,
5 min ahead: ``ENVELOPE_EXPIRED``, ``ENVELOPE_NOT_YET_VALID``, see ``leanctx.envelope``); a
refused envelope dispatches nothing. The same envelope posted again (a retry) applies nothing
the receiving agent already applied from it (``handoff.import`` replays: the import is recorded,
applying nothing; the answer's text says ``already imported at …``); ``?reapply=1`` applies it
again.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ... import envelope as env
from ... import handoff_bundle as hb
from ...errors import InvalidInput, LeanCtxError
from .bodies import raw_body
from .responses import JSON, HttpError
from .routes import AGENT_OPTIONAL, Param, RouteSpec
from .security import agent_of
from .state import session_of, srv

RECEIVER = "a2a"


def _receive(st: Any, data: bytes, agent: str | None, session: str | None, apply: bool,
             lease: float | None = None, reapply: bool = False) -> dict[str, Any]:
    from ...commands.handoff import ImportHandoff, already_text
    from ..tools.handoff import imported_text

    e = env.open_envelope(data, env.server_secret(), now=st.now())
    if e.payload_kind != "handoff":
        return {"text": f"{e.payload_kind} package from {e.sender}: MAC ok", "payload_kind": e.payload_kind,
                "sender": e.sender}
    if not isinstance(e.payload, dict):
        raise InvalidInput(hb.HANDOFF_INVALID, "the envelope's handoff payload is not a bundle object")
    cmd = ImportHandoff(bundle=hb.encode(e.payload).decode(), apply_knowledge=apply, apply_session=apply,
                        apply_workflow=apply, via="envelope", lease_seconds=lease, reapply=reapply)
    res = st.lc.bus.dispatch(cmd, actor=agent or RECEIVER, session_id=session, project=str(st.project_root),
                             now=st.now())
    again = already_text(res.value)
    text = again if again is not None and not res.value.applied else "\n".join(
        t for t in (imported_text(res.value), again) if t)
    return {"text": text, "payload_kind": "handoff", "sender": e.sender, "import": res.value,
            "call_position": res.call_position}


def _lease(raw: str | None) -> float | None:
    if raw is None or raw == "":
        return None
    try:
        return float(raw)
    except ValueError:
        raise InvalidInput("LEASE_INVALID_DURATION", f"lease_seconds={raw[:40]!r} is not a number of seconds") from None


async def receive(request: Request) -> Response:
    st = srv(request)
    agent = agent_of(request, st.tokens)
    apply = request.query_params.get("apply", "") in ("1", "true", "yes")
    reapply = request.query_params.get("reapply", "") in ("1", "true", "yes")
    lease = _lease(request.query_params.get("lease_seconds"))
    if apply and agent is None:
        raise HttpError(401, "AUTH_AGENT_TOKEN_REQUIRED",
                        "applying a handoff acts for an agent: send its token in X-Agent-Token")
    data = await raw_body(request, st.config.max_body_bytes)
    try:
        out = await st.run(_receive, st, data, agent, session_of(request), apply, lease, reapply)
    except LeanCtxError as err:
        if err.code == env.ENVELOPE_BAD_MAC:
            raise HttpError(401, err.code, err.message) from None
        raise
    return JSON(out)


ROUTES = [
    RouteSpec(
        "POST", "/v1/a2a/handoff", receive,
        "Receive a TransportEnvelopeV1 (HMAC-SHA256 with the shared A2A secret) carrying a handoff bundle; "
        "?apply=1 applies it for the X-Agent-Token's agent.",
        "a2a", auth=AGENT_OPTIONAL,
        params=(Param("apply", type="boolean", description="Apply session, knowledge and workflow (needs X-Agent-Token): "
                      "the sender's tasks it still owns here pass to the token's agent."),
                Param("lease_seconds", type="number", description="The lease on taken-over tasks in progress "
                      "(default 900)."),
                Param("reapply", type="boolean", description="Apply again what an earlier import of this handoff "
                      "by the same agent applied (a replay applies nothing by default)."),),
        operation_id="receive_handoff_envelope",
    ),
]
