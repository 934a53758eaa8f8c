"""Which key a handoff import trusts (``handoff.import`` asks ``verify_import``).

1. The trust store (``leanctx.handoff_bundle.verify_obj``): the key the log binds to the sender's
   *current* registration (``commands.agents.recorded_key``; a local key of a registered sender
   for which the log recorded none), or a key added with ``keys trust``. Registered means
   registered in this log and not deregistered (a sender that timed out still counts).
2. When that refuses the signer (``KEY_UNTRUSTED``) — the sender deregistered ("hand off, then
   leave"), or rejoined since with another key — the log's own record of the bundle: this log
   holds a ``handoff.created`` of the bundle's ``handoff_id`` appended by the sender (event
   actor and ``sender``, ``key_id`` the sender too) whose ``digest`` and ``fingerprint`` are the
   bundle's, and whose fingerprint is the key the log bound to the sender at that event's
   position (the first key recorded on its ``agent.registered`` since its last
   ``agent.deregistered`` before it). The signature is verified against that key's bytes as the
   log recorded them, never against a local key file. A bundle made in another log, one not
   created by its sender, one signed by a key not bound to the sender when it was created (a
   rejoin's new key, or a key never recorded) stays refused with ``KEY_UNTRUSTED``, the reason
   appended.
3. Whichever trusted it: when this log holds ``handoff.created`` events of the bundle's id, the
   bundle must be one of them (sender, digest, fingerprint). A bundle that reuses the id of
   another bundle recorded here — e.g. signed by a rejoined sender's new key under the id of a
   handoff made with its old one — is refused: ``HANDOFF_ID_REUSED``.

Everything is read from the committed log under the command's write lock, so the decision (and
what the import appends) is the same whenever the command runs on the same log; nothing here is
a projection.
"""

from __future__ import annotations

import msgspec

from . import handoff_bundle as hb
from . import keys
from .commands.agents import bound_key_at, recorded_key
from .commands.bus import CommandContext
from .errors import CommandError, LeanCtxError
from .projections.agents import LEFT_DEREGISTERED

HANDOFF_ID_REUSED = "HANDOFF_ID_REUSED"


class Created(msgspec.Struct, frozen=True):
    """One ``handoff.created`` of the log (``position``: its seq)."""

    position: int
    actor: str | None
    sender: str
    key_id: str
    fingerprint: str
    digest: str


class Trust(msgspec.Struct, frozen=True):
    verified: hb.Verified
    sender_left: bool  # the sender is deregistered in this log
    created_seq: int | None = None  # the handoff.created that vouched (None: the trust store did)
    note: str | None = None


def registered_agents(conn: object) -> set[str]:
    """Agent ids registered in this log and not deregistered (their keys are trusted)."""
    return {r[0] for r in conn.execute(  # type: ignore[attr-defined]
        "SELECT agent_id FROM agents WHERE left_kind IS NULL OR left_kind != ?", (LEFT_DEREGISTERED,))}


def _deregistered(conn: object, agent_id: str) -> bool:
    return conn.execute(  # type: ignore[attr-defined]
        "SELECT 1 FROM agents WHERE agent_id = ? AND left_kind = ?", (agent_id, LEFT_DEREGISTERED)).fetchone() is not None


def created_records(ctx: CommandContext, handoff_id: str | None) -> list[Created]:
    """The ``handoff.created`` events this log holds for ``handoff_id`` (stream ``handoff:<id>``)."""
    if not handoff_id:
        return []
    out: list[Created] = []
    for e in ctx.projections.store.read_stream(f"handoff:{handoff_id}"):
        if e.kind != "handoff.created":
            continue
        d = e.data()
        out.append(Created(e.position, e.actor, d.sender, d.key_id, d.fingerprint, d.digest))  # type: ignore[attr-defined]
    return out


def _by_log(ctx: CommandContext, obj: dict, sender: str, records: list[Created]) -> tuple[hb.Verified, Created]:
    """Verify ``obj`` against the key the log bound to ``sender`` when it recorded the bundle's
    ``handoff.created`` (rule 2 of the module doc); raises ``KEY_UNTRUSTED`` with the reason."""
    hid = hb.claimed_handoff_id(obj)
    s = obj.get("sender")
    fp = s.get("fingerprint") if isinstance(s, dict) else None
    digest = hb.digest_of(hb.signed_bytes(obj))
    why = f"this log holds no handoff.created of {hid!r} (a bundle made in another log is not vouched for here)"
    for c in records:
        if c.actor != sender or c.sender != sender or c.key_id != sender:
            why = f"the log's handoff.created of {hid!r} (seq {c.position}) was not appended by {sender!r}"
        elif c.digest != digest or c.fingerprint != fp:
            why = (f"the log's handoff.created of {hid!r} (seq {c.position}) records another bundle (digest "
                   f"{c.digest[:16]}…, key {c.fingerprint}): this is not the bundle created there")
        else:
            bound = bound_key_at(ctx, sender, c.position)
            if bound is None or keys.fingerprint(keys.unb64(bound[0])) != c.fingerprint:
                why = (f"at seq {c.position}, when {hid!r} was created, the log bound "
                       + ("no key" if bound is None else f"another key ({keys.fingerprint(keys.unb64(bound[0]))})")
                       + f" to {sender!r}, not {c.fingerprint}")
                continue  # another record of the id may still vouch
            signer = keys.KeyInfo(sender, c.fingerprint, bound[0], False, True,
                                  f"log: agent.registered of {sender} at seq {bound[1]}, "
                                  f"vouched by handoff.created at seq {c.position}")
            return hb.verify_with_key(obj, signer), c
    raise CommandError(keys.KEY_UNTRUSTED, why)


def verify_import(ctx: CommandContext, obj: dict) -> Trust:
    """Verify a parsed bundle for ``handoff.import`` (see the module doc)."""
    sender = hb.claimed_sender(obj)
    registered = registered_agents(ctx.conn)
    bound = recorded_key(ctx, sender) if sender in registered else None
    recorded = {sender: [bound]} if sender is not None and bound is not None else {}
    records = created_records(ctx, hb.claimed_handoff_id(obj))
    left = sender is not None and sender not in registered and _deregistered(ctx.conn, sender)
    try:
        v = hb.verify_obj(obj, registered, recorded=recorded)
    except LeanCtxError as exc:
        if exc.code != keys.KEY_UNTRUSTED or sender is None:
            raise
        try:
            v, c = _by_log(ctx, obj, sender, records)
        except LeanCtxError as fallback:
            if fallback.code != keys.KEY_UNTRUSTED:
                raise
            raise CommandError(exc.code, f"{exc.message}; nor does the log vouch for it: {fallback.message}",
                               **exc.details) from None
        who = ("sender deregistered" if left else
               f"{sender}'s current registration binds another key" if sender in registered else
               f"{sender} is not registered")
        return Trust(v, left, c.position, f"{who}; trusted by the log's handoff.created at seq {c.position}")
    b = v.body
    if records and not any(c.sender == b.sender.agent_id and c.digest == v.digest
                           and c.fingerprint == v.signer.fingerprint for c in records):
        c = records[0]
        raise CommandError(HANDOFF_ID_REUSED,
                           f"this log records handoff {b.handoff_id!r} as another bundle (seq {c.position}: by "
                           f"{c.sender}, key {c.fingerprint}, digest {c.digest[:16]}…); this bundle (digest "
                           f"{v.digest[:16]}…, key {v.signer.fingerprint}) reuses its id: ask {b.sender.agent_id} "
                           "for a fresh one (ctx_handoff action=create, or `lean-ctx handoff create`)", handoff_id=b.handoff_id, position=c.position)
    return Trust(v, left)
