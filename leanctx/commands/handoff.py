"""Handoff commands: create a signed bundle of the caller's work, import (verify, then apply)
another agent's bundle. Stream ``handoff:<handoff_id>``.

Create packs the caller's session (task, step, findings, decisions), its file refs with content
hashes, the project's knowledge (all, a category, or none), the caller's workflow state (tasks it
owns or was delegated that are open, in progress or blocked) and its diary (newest
``diary_limit`` entries), signs it with the caller's Ed25519 key (``keys/<agent_id>.key``,
created when the agent registered, or here for an actor that never registered) and records
``handoff.created``.

Import verifies the bundle **inside the write transaction** (so nothing can be applied from an
unverified bundle; ``leanctx.handoff_trust``) against the trust store (``leanctx.handoff_bundle``:
keys of agents registered in this log — the key recorded for the sender's current registration
(``commands.agents.recorded_key``), or, when none was recorded, the key this data dir holds for
it — and keys added with ``keys trust``). A sender that has left (deregistered, or rejoined with
another key since) is trusted for a bundle this log recorded: its ``handoff.created`` by the
sender, with the bundle's digest and a fingerprint the log bound to the sender at that seq, whose
recorded key then verifies the signature; the result says so (``sender_left``, ``trusted_by``,
``trust_note``). A bundle reusing the id of another bundle this log recorded is refused. Then,
as asked:

- ``apply_session``: the importer's session is reset and given the sender's task, step/total,
  findings and decisions (in order) — it continues where the sender stopped. File refs are
  reported, not replayed: refs come from the importer's own reads (the hashes tell it which files
  changed since).
- ``apply_knowledge``: every entry not identical to the current fact is remembered (the usual
  conflict rule applies when another agent wrote a different value within the window).
- ``apply_workflow``: the bundle's tasks that the sender still owns here are handed to the
  importer (``task.handed_over`` through ``leanctx.commands.tasks.hand_over``, in this same
  transaction): owner and, for a task in progress, a fresh lease of ``lease_seconds``; the
  status is unchanged. Tasks not in this log, done or cancelled, owned by another agent or by
  nobody, or claimed again by the sender after the handoff was created are left alone and
  reported with the reason and its code. Without ``apply_workflow`` every task is only
  reported, with what an import with it would do.

Replays: a bundle is applied once per receiver. When this receiver (the actor) already imported
the same bundle (``handoff.imported`` of its id and digest), what those imports applied is not
applied again (``already_applied``, ``already_imported_at``: the first such import): what is
asked and was not applied yet still is; when nothing is left, the import is only recorded
(``handoff.imported`` applying nothing, so the log still shows every import and how the bundle
came). So a retried ``pack send --apply`` (the same envelope twice) cannot reset the session and
knowledge the receiver changed since. ``reapply`` applies again on purpose: a replay cannot be
told apart from a deliberate re-send of the same bytes, so the safe answer is the default and
overwriting later work takes an explicit flag. The decision reads the log's own
``handoff:<id>`` stream under the write lock, so concurrent retries apply once.

``via`` says how the bundle came and is recorded on ``handoff.imported``: ``file`` (a bundle file
the caller read), ``inline`` (the bundle text itself, e.g. ``ctx_handoff import bundle=``; the
default, since the command is given text), ``stdin`` (``lean-ctx handoff import -``) or
``envelope`` (a TransportEnvelopeV1: ``pack receive``, ``POST /v1/a2a/handoff``). The next steps
a report names (take a task over, apply what was not applied) name the MCP tool action first,
then the CLI command, both runnable as written.

Codes: HANDOFF_NO_AGENT; create: HANDOFF_NOT_YOUR_SESSION, HANDOFF_INVALID_LIMIT; import:
HANDOFF_INVALID_VIA, LEASE_INVALID_DURATION (a bad ``lease_seconds`` with ``apply_workflow``), and
the refusals of verification, HANDOFF_INVALID, HANDOFF_TAMPERED, HANDOFF_UNSIGNED, KEY_UNTRUSTED,
SIGNATURE_INVALID (see ``leanctx.handoff_bundle``) and HANDOFF_ID_REUSED (see
``leanctx.handoff_trust``). A task left alone is not a refusal: its report names the reason's code
(TASK_NOT_FOUND, TASK_HANDOVER_FINISHED, TASK_HANDOVER_NOT_SENDERS, TASK_HANDOVER_STALE; see
``leanctx.commands.tasks``).
"""

from __future__ import annotations

import json
import shlex
import uuid

import msgspec

from .. import handoff_bundle as hb
from .. import keys
from ..errors import InvalidInput, LeanCtxError
from ..events.kinds.handoff import HandoffCreated, HandoffImported
from ..events.kinds.knowledge import KnowledgeRemembered
from ..events.kinds.session import SessionNoted, SessionReset, SessionTaskSet
from ..handoff_trust import registered_agents, verify_import  # noqa: F401 (registered_agents: re-exported)
from ..projections.diaries import recall_diary
from ..projections.knowledge import get_entry, list_entries
from ..projections.sessions import get_session, session_files, session_notes
from ..projections.tasks import get_task, list_tasks
from . import tasks as task_cmds
from .bus import Command, CommandContext, handles
from .knowledge import DEFAULT_WINDOW_S, check_category
from .knowledge import stream_of as knowledge_stream
from .sessions import session_of
from .sessions import stream_of as session_stream

OPEN_STATUSES = ("open", "in_progress", "blocked")
VIAS = ("file", "inline", "stdin", "envelope")  # how an imported bundle came (see the module doc)


def stream_of(handoff_id: str) -> str:
    return f"handoff:{handoff_id}"


def _me(ctx: CommandContext) -> str:
    if not ctx.actor:
        raise InvalidInput("HANDOFF_NO_AGENT", "a handoff needs the agent's identity (set $LEAN_CTX_AGENT_ID)")
    return ctx.actor


class CreateHandoff(Command, frozen=True):
    name = "handoff.create"
    knowledge: str = "all"  # all | none | a category
    diary_limit: int = 50
    message: str | None = None
    session: str | None = None  # another of the caller's sessions (default: the current one)


class HandoffCreatedResult(msgspec.Struct, frozen=True):
    handoff_id: str
    sender: str
    session_id: str
    fingerprint: str
    digest: str
    counts: dict[str, int]
    bundle: str  # the file form (canonical JSON + newline)


@handles(CreateHandoff, emits=("handoff.created",), result=HandoffCreatedResult)
def create(ctx: CommandContext, cmd: CreateHandoff) -> HandoffCreatedResult:
    me = _me(ctx)
    keys.check_id(me)
    sid = cmd.session or session_of(me, ctx.session_id)
    conn, project = ctx.conn, ctx.project or ""
    s = get_session(conn, sid)
    if s is not None and s.agent_id not in (None, me):
        raise InvalidInput("HANDOFF_NOT_YOUR_SESSION", f"session {sid!r} belongs to {s.agent_id}, not to {me}")
    if cmd.diary_limit < 0 or cmd.diary_limit > 10_000:
        raise InvalidInput("HANDOFF_INVALID_LIMIT", "diary_limit is 0..10000")
    notes = [hb.BNote(note=n.note, text=n.text, path=n.path, ts=n.ts) for n in session_notes(conn, sid)]
    session = hb.BSession(session_id=sid, task=s.task if s else None, step=s.step if s else 0,
                          total=s.total if s else 0, notes=notes)
    files = [hb.BFile(ref=f.ref, path=f.path, content_hash=f.content_hash)
             for f in session_files(conn, sid, project=project)]
    if cmd.knowledge == "none":
        entries = []
    else:
        entries = list_entries(conn, category=None if cmd.knowledge == "all" else check_category(cmd.knowledge))
    knowledge = [hb.BKnowledge(key=e.key, category=e.category, value=e.value, confidence=e.confidence,
                               source=e.source, agent=e.agent, ts=e.ts) for e in entries]
    workflow = [hb.BTask(channel=t.channel, task_id=t.task_id, title=t.title, status=t.status, owner=t.owner,
                         to_agent=t.to_agent, depends_on=list(t.depends_on), acceptance=t.acceptance,
                         files_hint=list(t.files_hint))
                for t in list_tasks(conn, now=ctx.now, status=OPEN_STATUSES, assigned_to=me)]
    diary = [hb.BDiary(seq=d.seq, category=d.category, text=d.text, ts=d.ts, tags=list(d.tags), paths=list(d.paths),
                       session_id=d.session_id)
             for d in recall_diary(conn, me, limit=cmd.diary_limit)] if cmd.diary_limit else []
    fp = keys.fingerprint(keys.public_key(me))
    hid = "h-" + uuid.uuid4().hex[:16]
    body = hb.HandoffBodyV1(format=hb.FORMAT, handoff_id=hid, created_at=ctx.ts, project=project,
                            sender=hb.BSender(agent_id=me, session_id=sid, key_id=me, fingerprint=fp),
                            session=session, files=files, knowledge=knowledge, workflow=workflow, diary=diary,
                            message=(cmd.message or None))
    bundle = hb.sign_bundle(body)
    digest = hb.digest_of(hb.signed_bytes(body))
    counts = {"notes": len(notes), "knowledge": len(knowledge), "tasks": len(workflow), "files": len(files),
              "diary": len(diary)}
    ctx.emit(stream_of(hid), HandoffCreated(handoff_id=hid, sender=me, session_id=sid, key_id=me, fingerprint=fp,
                                            digest=digest, message=body.message, **counts))
    return HandoffCreatedResult(hid, me, sid, fp, digest, counts, hb.encode(bundle).decode())


class ImportHandoff(Command, frozen=True):
    name = "handoff.import"
    bundle: str  # the file form
    apply_knowledge: bool = False
    apply_session: bool = False
    apply_workflow: bool = False
    via: str = "inline"  # one of VIAS: file | inline | stdin | envelope
    conflict_window_s: float = DEFAULT_WINDOW_S
    lease_seconds: float | None = None  # apply_workflow: the importer's lease (None: the task family's default)
    reapply: bool = False  # apply again what an earlier import of this bundle by the caller applied


class TaskReport(msgspec.Struct, frozen=True):
    channel: str
    task_id: str
    title: str
    status: str  # in the bundle
    status_here: str | None  # in this log after the import (None: the task is not in this log)
    owner: str | None  # here, after the import
    outcome: str  # handed_over | already_yours | left_alone | can_hand_over (without apply_workflow)
    reason: str
    code: str | None = None  # why it was left alone (TASK_NOT_FOUND, TASK_HANDOVER_*)
    lease_expires_at: str | None = None  # the importer's lease (a handed-over task in progress)


class HandoffImportResult(msgspec.Struct, frozen=True):
    handoff_id: str
    sender: str
    signer: str  # key id of the trusted key that verified it
    fingerprint: str
    digest: str
    receiver: str
    session_id: str
    applied: list[str]
    task: str | None
    step: int
    total: int
    notes: int
    knowledge_imported: list[str]
    knowledge_skipped: list[str]
    tasks: list[TaskReport]
    files: list[hb.BFile]
    diary: int
    message: str | None
    created_at: str
    project: str
    sender_left: bool = False  # the sender deregistered from this log
    trusted_by: int | None = None  # seq of the log's handoff.created that vouched (None: the trust store did)
    trust_note: str | None = None  # e.g. "sender deregistered; trusted by the log's handoff.created at seq N"
    via: str = "inline"  # how the bundle came (VIAS)
    already_imported_at: str | None = None  # the caller's first import of this bundle (None: this is the first)
    already_applied: list[str] = []  # what the caller's earlier imports of this bundle applied


PARTS = ("session", "knowledge", "workflow")


def _earlier(ctx: CommandContext, handoff_id: str, receiver: str, digest: str) -> tuple[str | None, list[str]]:
    """The first time ``receiver`` imported this bundle (None: never) and what its imports applied."""
    first: str | None = None
    done: set[str] = set()
    for e in ctx.projections.store.read_stream(stream_of(handoff_id)):
        if e.kind != "handoff.imported":
            continue
        d = e.data()
        if d.receiver == receiver and d.digest == digest:  # type: ignore[attr-defined]
            first = first or e.ts
            done.update(d.applied)  # type: ignore[attr-defined]
    return first, [p for p in PARTS if p in done]


@handles(ImportHandoff, emits=("handoff.imported", "session.reset", "session.task_set", "session.noted",
                               "knowledge.remembered", "task.handed_over"), result=HandoffImportResult)
def import_(ctx: CommandContext, cmd: ImportHandoff) -> HandoffImportResult:
    me = _me(ctx)
    if cmd.via not in VIAS:
        raise InvalidInput("HANDOFF_INVALID_VIA", f"via {cmd.via!r} is not one of {', '.join(VIAS)}")
    obj = hb.parse(cmd.bundle)
    trust = verify_import(ctx, obj)
    v = trust.verified
    b = v.body
    sid = session_of(me, ctx.session_id)
    first, done = _earlier(ctx, b.handoff_id, me, v.digest)
    asked = [p for p, on in zip(PARTS, (cmd.apply_session, cmd.apply_knowledge, cmd.apply_workflow)) if on]
    todo = [p for p in asked if cmd.reapply or p not in done]
    applied: list[str] = []
    if "session" in todo:
        stream = session_stream(sid)
        ctx.emit(stream, SessionReset(session_id=sid, agent_id=me))
        if b.session.task:
            ctx.emit(stream, SessionTaskSet(session_id=sid, agent_id=me, task=b.session.task, step=b.session.step,
                                            total=b.session.total))
        for n in b.session.notes:
            ctx.emit(stream, SessionNoted(session_id=sid, agent_id=me, note=n.note, text=n.text, path=n.path))
        applied.append("session")
    imported: list[str] = []
    skipped: list[str] = []
    if "knowledge" in todo:
        seen: dict[str, tuple[object, ...]] = {}
        for e in b.knowledge:
            row = (e.key, e.category, e.value, e.confidence, e.source)
            cur = seen.get(e.key)
            if cur is None:
                entry = get_entry(ctx.conn, e.key)
                cur = None if entry is None else (entry.key, entry.category, entry.value, entry.confidence,
                                                  entry.source)
            if cur == row:
                skipped.append(e.key)
                continue
            seen[e.key] = row
            ctx.emit(knowledge_stream(e.key), KnowledgeRemembered(
                key=e.key, category=e.category, value=e.value, confidence=e.confidence, source=e.source,
                conflict_window_s=float(cmd.conflict_window_s)))
            imported.append(e.key)
        applied.append("knowledge")
    reports = _workflow(ctx, cmd, v, me, "workflow" in todo)
    if "workflow" in todo:
        applied.append("workflow")
    ctx.emit(stream_of(b.handoff_id), HandoffImported(
        handoff_id=b.handoff_id, sender=b.sender.agent_id, receiver=me, session_id=sid, key_id=v.signer.key_id,
        fingerprint=v.signer.fingerprint, digest=v.digest, applied=tuple(applied), knowledge_imported=len(imported),
        tasks=tuple(f"{t.channel}/{t.task_id}" for t in b.workflow) if "workflow" in applied else (), via=cmd.via,
        handed_over=tuple(f"{t.channel}/{t.task_id}" for t in reports if t.outcome == "handed_over")))
    return HandoffImportResult(
        b.handoff_id, b.sender.agent_id, v.signer.key_id, v.signer.fingerprint, v.digest, me, sid, applied,
        b.session.task, b.session.step, b.session.total, len(b.session.notes), imported, skipped, reports,
        list(b.files), len(b.diary), b.message, b.created_at, b.project, trust.sender_left, trust.created_seq,
        trust.note, cmd.via, first, done)


def _workflow(ctx: CommandContext, cmd: ImportHandoff, v: hb.Verified, me: str, apply: bool) -> list[TaskReport]:
    """Hand the sender's tasks over (``apply``) or say what that would do; one report per task of
    the bundle."""
    b = v.body
    lease_seconds = task_cmds.DEFAULT_LEASE_SECONDS if cmd.lease_seconds is None else cmd.lease_seconds
    if apply and b.workflow:
        task_cmds.validate_lease(lease_seconds)  # refuse a bad lease before anything is decided
    reports: list[TaskReport] = []
    seen: set[tuple[str, str]] = set()
    for t in b.workflow:
        if (t.channel, t.task_id) in seen:
            continue
        seen.add((t.channel, t.task_id))
        lease: str | None = None
        code: str | None = None
        try:
            row = task_cmds.handover_row(ctx, t.channel, t.task_id, sender=b.sender.agent_id, receiver=me,
                                         since=b.created_at)
        except LeanCtxError as exc:
            row, outcome, code, reason = None, "left_alone", exc.code, exc.message
            if code == "TASK_NOT_FOUND":
                reason = _create_hint(t, me)
        else:
            if row is None:
                outcome, reason = "already_yours", f"{me} already owns it here"
            elif not apply:
                outcome, reason = "can_hand_over", f"{b.sender.agent_id} owns it here: {apply_hint(cmd.via)}"
            else:
                lease = task_cmds.hand_over(ctx, row, receiver=me, handoff_id=b.handoff_id,
                                            lease_seconds=lease_seconds).task.lease_expires_at
                outcome = "handed_over"
                reason = (f"from {b.sender.agent_id}" + (f", leased to {me} until {lease}" if lease
                                                          else f" ({row['status']}, no lease)"))
        status_here: str | None
        owner: str | None
        if outcome == "handed_over" and row is not None:  # the projection sees the handover at the append
            status_here, owner = row["status"], me
        else:
            here = get_task(ctx.conn, t.channel, t.task_id, now=ctx.now) if code != "TASK_NOT_FOUND" else None
            status_here, owner = (here.status, here.owner) if here else (None, None)
        reports.append(TaskReport(t.channel, t.task_id, t.title, t.status, status_here, owner, outcome, reason,
                                  code, lease))
    return reports


def _create_hint(t: hb.BTask, me: str) -> str:
    """A bundle's task this log does not hold: how to create it here as the importer's."""
    q = shlex.quote
    return (f"not in this log: to take it over, create it here as yours (ctx_task action=create task_id={t.task_id} "
            f"channel={t.channel} title={json.dumps(t.title, ensure_ascii=False)} owner={me}, or `lean-ctx chat task create --id "
            f"{q(t.task_id)} --channel {q(t.channel)} --title {q(t.title)} --owner {q(me)}`)")


def apply_hint(via: str, what: str = "workflow") -> str:
    """How to import again applying ``what`` (``workflow``, or ``all``), for a bundle that came
    ``via``: the MCP tool action first, then the CLI command."""
    goal = "to take it over" if what == "workflow" else "to apply it"
    if via == "envelope":  # an envelope is applied whole, for the agent of the token
        return (f"{goal}, receive the envelope again with apply (`lean-ctx pack receive ENVELOPE --apply`, or POST "
                "it to /v1/a2a/handoff?apply=1 with your X-Agent-Token)")
    flag = "--apply-workflow" if what == "workflow" else "--apply"
    cli = f"lean-ctx handoff import - {flag} < FILE" if via == "stdin" else f"lean-ctx handoff import FILE {flag}"
    if what == "workflow":
        return (f"{goal}, import again with apply_workflow (ctx_handoff action=import apply_workflow=true with the "
                f"same path or bundle, or `{cli}`)")
    return (f"{goal}, import again with what to apply (ctx_handoff action=import apply_session=true "
            f"apply_knowledge=true apply_workflow=true with the same path or bundle, or `{cli}`, or one of "
            "--apply-session, --apply-knowledge, --apply-workflow)")


def already_text(v: HandoffImportResult) -> str | None:
    """The line that says a bundle was imported before by this receiver (None: it was not)."""
    if v.already_imported_at is None:
        return None
    line = (f"handoff {v.handoff_id} already imported at {v.already_imported_at} by {v.receiver} (applied then: "
            f"{', '.join(v.already_applied) or 'nothing'})")
    if v.applied:
        return line
    if v.via == "envelope":
        again = "POST the envelope to /v1/a2a/handoff?apply=1&reapply=1 with your X-Agent-Token"
    else:
        again = ("import it with reapply (ctx_handoff action=import reapply=true, or "
                 "`lean-ctx handoff import FILE --reapply`)")
    return f"{line}; nothing applied again, so what you did since stays (to apply it over that: {again})"
