"""``ctx_proof``: Context Proofs of the log — create one, show the latest and its verification,
verify one (``leanctx.proof_store``, the code behind ``lean-ctx proof`` and ``/v1/proof``).

Proofs live in ``<db dir>/proofs``; a proof is named by its bare file name there
(``context-proof-<N>.json``), never by a path. The structured answer of each action is the
HTTP route's answer (``POST /v1/proof``, ``GET /v1/proof/latest``, ``POST /v1/proof/verify``)
plus ``text``.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from ... import proof_store as ps
from ...errors import InvalidInput
from ..registry import Caller, tool

Action = Literal["create", "latest", "verify"]


class ProofArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    action: Action
    file: str | None = None  # verify: a proof's file name (context-proof-N.json); default: the latest


@tool("ctx_proof", category="memory", args=ProofArgs, description="""
Context Proof: a signed summary of the log (head, hash chain, counts, projection digests,
savings). action: create → writes context-proof-<head>.json/.html | latest → the newest proof
and its last verification | verify(file?: context-proof-N.json, default latest) → replays the
log and names every difference.""")
def ctx_proof(lc: Any, caller: Caller, a: ProofArgs) -> dict[str, Any]:
    if a.action != "verify" and a.file is not None:
        raise InvalidInput("INVALID_ARGUMENT", f"ctx_proof {a.action} takes no file")
    if a.action == "create":
        c = ps.create(lc, caller.project)
        return {"text": ps.created_text(c), **msgspec.structs.asdict(c)}
    if a.action == "latest":
        info = ps.on_latest(ps.proofs_dir(lc), ps.describe)
        return {"text": ps.info_text(info), **msgspec.structs.asdict(info)}
    ans = ps.verify_named(lc, a.file)
    return {"text": ps.verify_text(ans), **msgspec.structs.asdict(ans)}
