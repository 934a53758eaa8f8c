"""Path-lock facts. Stream ``lock:<normalized path>`` (workspace-relative, no trailing slash);
the workspace is in the payload, so one log can hold the locks of several workspaces."""

from __future__ import annotations

from .base import Event


class LockAcquired(Event, tag="lock.acquired"):
    """An agent locked a workspace path (a file, or a directory and everything under it) with a lease."""

    workspace: str
    path: str  # normalized, workspace-relative, no trailing slash
    directory: bool
    owner: str
    lease_seconds: float
    lease_expires_at: str  # fixed-width ISO text: event ts + lease
    reason: str | None = None


class LockRenewed(Event, tag="lock.renewed"):
    """The owner locked its own path again: the lease restarts from now."""

    workspace: str
    path: str
    directory: bool
    owner: str
    lease_seconds: float
    lease_expires_at: str
    previous_lease_expires_at: str
    reason: str | None = None


class LockReleased(Event, tag="lock.released"):
    """The owner unlocked a path."""

    workspace: str
    path: str
    owner: str


class LockRecovered(Event, tag="lock.recovered"):
    """An expired lock was taken over by a new owner, with a reason."""

    workspace: str
    path: str
    directory: bool
    owner: str  # the new owner
    lease_seconds: float
    lease_expires_at: str
    previous_owner: str
    previous_lease_expires_at: str
    recovery_reason: str
