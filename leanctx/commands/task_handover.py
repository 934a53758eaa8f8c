"""Task handover: ``handover_row`` and ``hand_over`` (re-exported by ``leanctx.commands.tasks``).

Handover (``hand_over``, called by ``handoff.import`` with ``apply_workflow``; not a command of
its own, because its authority is a verified handoff signed by the owner): a task of the
bundle that its sender still owns passes to the importer — ``task.handed_over``, directed to
the previous owner, status unchanged, a fresh lease for the importer when the task is in
progress. The other transitions cannot say this honestly: only the holder may ``release``,
``recover`` is for abandoned (expired) leases and records a recovery, and delegation is fixed
at creation. Left alone, with a code: a task not in this log (``TASK_NOT_FOUND``), finished
(``TASK_HANDOVER_FINISHED``), owned by someone other than the sender or by nobody
(``TASK_HANDOVER_NOT_SENDERS``), or taken again by the sender after the handoff was created — a
new claim, or the task coming back through another handover or an update (``TASK_HANDOVER_STALE``:
the handoff does not cover that ownership).
"""

from __future__ import annotations

from typing import Any

from ..errors import CommandError
from ..events.kinds.task import TaskHandedOver
from .bus import CommandContext
from .task_commands import TaskResult, _agent
from .task_rules import _emit, _lease, _load


def handover_row(ctx: CommandContext, channel: str, task_id: str, *, sender: str, receiver: str,
                 since: str) -> dict[str, Any] | None:
    """The row of a task that a handoff of ``sender`` (created at ``since``) may hand to
    ``receiver``; None when ``receiver`` already owns it. Raises (with the reason) when the
    task is left alone: see the module doc."""
    row = _load(ctx, channel, task_id)
    where = f"task {row['task_id']!r} of channel {row['channel']!r}"
    if row["status"] in ("done", "cancelled"):
        raise CommandError("TASK_HANDOVER_FINISHED", f"{where} is already {row['status']} here: nothing to continue")
    owner = row["owner"]
    if owner == receiver:
        return None
    if owner is None:
        raise CommandError("TASK_HANDOVER_NOT_SENDERS",
                           f"nobody owns {where} here ({row['status']}), {sender} does not any more: claim it "
                           f"(ctx_task action=claim task_id={row['task_id']} channel={row['channel']}, "
                           f"or `lean-ctx chat task claim {row['task_id']} --channel {row['channel']}`)")
    if owner != sender:
        raise CommandError("TASK_HANDOVER_NOT_SENDERS",
                           f"{where} is owned by {owner}, not by {sender} who sent the handoff: it stays with {owner}")
    # the handoff covers the ownership the sender had when it was made, not one taken since
    # (a new claim, or the task coming back to the sender through another handover or update)
    taken = max((t for t in (row["claimed_at"], row.get("owner_since")) if t is not None), default=None)
    if taken is not None and taken > since:
        raise CommandError("TASK_HANDOVER_STALE",
                           f"{sender} took {where} again at {taken}, after the handoff was created "
                           f"({since}): the handoff does not cover that; ask {sender} for a new handoff "
                           "(ctx_handoff action=create, or `lean-ctx handoff create`)")
    return row


def hand_over(ctx: CommandContext, row: dict[str, Any], *, receiver: str, handoff_id: str,
              lease_seconds: float) -> TaskResult:
    """Hand the task of ``row`` (from ``handover_row``) to ``receiver``: ``task.handed_over``,
    with a lease of ``lease_seconds`` when it is in progress."""
    lease: dict[str, Any] = {}
    if row["status"] == "in_progress":
        secs, expires = _lease(ctx, lease_seconds)
        lease = {"lease_seconds": secs, "lease_expires_at": expires}
    ev = TaskHandedOver(channel=row["channel"], task_id=row["task_id"], owner=_agent(receiver, "new owner"),
                        previous_owner=row["owner"], handoff_id=handoff_id, status=row["status"],
                        previous_lease_expires_at=row["lease_expires_at"], **lease)
    return _emit(ctx, row, [ev], to_agent=row["owner"] if row["owner"] != ctx.actor else None)
