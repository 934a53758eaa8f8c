"""Task facts: tasks of a channel, their states, dependencies and leases.

Every payload names its ``channel`` and ``task_id`` (the stream is ``task:<channel>/<task_id>``).
Lease expiry is stored as fixed-width ISO text (``leanctx.clock.iso``) computed by the command
from its ``now`` and ``lease_seconds``; whether a lease is active or expired is decided at
query time from a ``now`` argument, never by the projection.
"""

from __future__ import annotations

from .base import Event


class TaskCreated(Event, tag="task.created"):
    """A task was created in a channel, open, optionally owned, delegated (`to_agent`) and
    depending on other tasks of the same channel."""

    channel: str
    task_id: str
    title: str
    owner: str | None = None
    to_agent: str | None = None
    depends_on: list[str] = []
    files_hint: list[str] = []
    acceptance: str | None = None
    branch: str | None = None


class TaskUpdated(Event, tag="task.updated"):
    """Fields of a task changed (only the fields that changed are set; `*_cleared` unsets one)."""

    channel: str
    task_id: str
    title: str | None = None
    owner: str | None = None
    owner_cleared: bool = False
    depends_on: list[str] | None = None
    files_hint: list[str] | None = None
    acceptance: str | None = None
    acceptance_cleared: bool = False
    branch: str | None = None
    branch_cleared: bool = False


class TaskStatusChanged(Event, tag="task.status_changed"):
    """A task moved from one state to another through `task update --status` (reopen, start
    without a lease, cancel, ...). Leaving `in_progress` ends any lease."""

    channel: str
    task_id: str
    from_status: str
    to_status: str
    reason: str | None = None


class TaskClaimed(Event, tag="task.claimed"):
    """An agent claimed a task with a lease; the task is in progress and the agent owns it."""

    channel: str
    task_id: str
    owner: str
    lease_seconds: float
    lease_expires_at: str
    from_status: str


class TaskRenewed(Event, tag="task.renewed"):
    """The lease holder extended its lease on a task (expiry = renewal time + lease_seconds)."""

    channel: str
    task_id: str
    owner: str
    lease_seconds: float
    lease_expires_at: str


class TaskReleased(Event, tag="task.released"):
    """The lease holder gave a task back: it is open again, without owner or lease."""

    channel: str
    task_id: str
    owner: str
    reason: str | None = None


class TaskCompleted(Event, tag="task.completed"):
    """A task was done (every dependency was done); its lease ended."""

    channel: str
    task_id: str
    owner: str | None = None


class TaskBlocked(Event, tag="task.blocked"):
    """A task was blocked, with the reason; its lease ended, its owner stays."""

    channel: str
    task_id: str
    from_status: str
    reason: str


class TaskRecovered(Event, tag="task.recovered"):
    """An expired lease was taken over by a new owner, with a reason: the previous owner and
    lease expiry are kept on record."""

    channel: str
    task_id: str
    owner: str
    previous_owner: str
    previous_lease_expires_at: str
    recovery_reason: str
    lease_seconds: float
    lease_expires_at: str


class TaskHandedOver(Event, tag="task.handed_over"):
    """A task owned by the sender of a signed handoff passed to the agent that verified and
    imported that handoff with `apply_workflow` (`handoff_id`): the new owner takes the lease
    when the task is in progress (`lease_*`; none otherwise); the status is unchanged and the
    previous owner and lease expiry are kept on record. Only the bundle's own tasks that the
    sender still owns are handed over."""

    channel: str
    task_id: str
    owner: str
    previous_owner: str
    handoff_id: str
    status: str
    previous_lease_expires_at: str | None = None
    lease_seconds: float | None = None
    lease_expires_at: str | None = None
