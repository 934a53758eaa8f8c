"""Task commands and their arguments: the command Structs of the task family, their result
(``TaskResult``), the family's constants and stream name (``stream_of``), and the validation of
every argument (ids, agent ids, texts, files hints, dependency lists, lease durations, reasons,
the acting agent). Validation raises ``InvalidInput`` and reads nothing; the handlers are in
``tasks`` (create, update, done, block) and ``task_leases`` (claim, renew, release, recover).
"""

from __future__ import annotations

import math
import re
from typing import Any

import msgspec

from ..errors import InvalidInput
from ..projections.tasks import TaskView
from .bus import Command, CommandContext

DEFAULT_CHANNEL = "general"
DEFAULT_LEASE_SECONDS = 900.0
MAX_LEASE_SECONDS = 30 * 24 * 3600.0

_SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_AGENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
_CTRL = re.compile(r"[\x00-\x1f\x7f]")


def stream_of(channel: str, task_id: str) -> str:
    return f"task:{channel}/{task_id}"


# --- commands ------------------------------------------------------------------------


class CreateTask(Command, frozen=True):
    name = "task.create"
    title: str
    task_id: str | None = None  # generated (t1, t2, ... per channel) when absent
    channel: str = DEFAULT_CHANNEL
    owner: str | None = None
    to_agent: str | None = None  # delegate the task to this agent
    depends_on: list[str] = []
    files_hint: list[str] = []
    acceptance: str | None = None
    branch: str | None = None


class UpdateTask(Command, frozen=True):
    name = "task.update"
    task_id: str
    channel: str = DEFAULT_CHANNEL
    title: str | None = None
    owner: str | None = None
    clear_owner: bool = False
    depends_on: list[str] | None = None  # replaces the list; [] removes every dependency
    files_hint: list[str] | None = None  # replaces the list
    acceptance: str | None = None  # "" removes it
    branch: str | None = None
    clear_branch: bool = False
    status: str | None = None
    reason: str | None = None  # why (kept as the blocked reason when the status becomes blocked)


class ClaimTask(Command, frozen=True):
    name = "task.claim"
    task_id: str
    channel: str = DEFAULT_CHANNEL
    lease_seconds: float = DEFAULT_LEASE_SECONDS


class RenewTask(Command, frozen=True):
    name = "task.renew"
    task_id: str
    channel: str = DEFAULT_CHANNEL
    lease_seconds: float = DEFAULT_LEASE_SECONDS


class CompleteTask(Command, frozen=True):
    name = "task.done"
    task_id: str
    channel: str = DEFAULT_CHANNEL


class BlockTask(Command, frozen=True):
    name = "task.block"
    task_id: str
    reason: str
    channel: str = DEFAULT_CHANNEL


class ReleaseTask(Command, frozen=True):
    name = "task.release"
    task_id: str
    channel: str = DEFAULT_CHANNEL
    reason: str | None = None


class RecoverTask(Command, frozen=True):
    name = "task.recover"
    task_id: str
    reason: str
    owner: str | None = None  # the new owner; default: the acting agent
    channel: str = DEFAULT_CHANNEL
    lease_seconds: float = DEFAULT_LEASE_SECONDS


class TaskResult(msgspec.Struct, frozen=True):
    """What a task command did: the task as its events leave it, and the kinds it appended
    (none and ``unchanged=True`` for a same-state write)."""

    task: TaskView
    ok: bool = True
    unchanged: bool = False
    events: list[str] = []


# --- validation ----------------------------------------------------------------------


def _bad(message: str) -> InvalidInput:
    return InvalidInput("TASK_INVALID_ARGUMENT", message)


def _slug(value: str, what: str) -> str:
    value = value.strip()
    if not _SLUG.match(value):
        raise _bad(f"{what} {value!r} is not valid: use 1-64 letters, digits, '.', '_' or '-', "
                   "starting with a letter or digit")
    return value


def _agent(value: str, what: str) -> str:
    value = value.strip()
    if not _AGENT.match(value):
        raise _bad(f"{what} {value!r} is not a valid agent id: use 1-128 letters, digits, '.', '_', ':' or '-'")
    return value


def _text(value: str, what: str, limit: int, *, multiline: bool = False) -> str:
    value = value.strip()
    if not value:
        raise _bad(f"{what} must not be empty")
    if len(value) > limit:
        raise _bad(f"{what} is {len(value)} characters long; keep it to {limit}")
    if _CTRL.search(value.replace("\n", "").replace("\t", "") if multiline else value):
        raise _bad(f"{what} must not contain control characters{'' if multiline else ' or line breaks'}")
    return value


def _files(values: list[str]) -> list[str]:
    out: list[str] = []
    for v in values:
        v = _text(v, "a files hint", 512)
        if v not in out:
            out.append(v)
    if len(out) > 200:
        raise _bad(f"{len(out)} files hints given; keep it to 200")
    return out


def _deps(values: list[str]) -> list[str]:
    return sorted({_slug(v, "dependency id") for v in values})


def _duration(seconds: Any) -> float:
    ok = isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and math.isfinite(seconds)
    if not ok or not 0 < seconds <= MAX_LEASE_SECONDS:
        raise InvalidInput(
            "LEASE_INVALID_DURATION",
            f"lease duration {seconds!r} is not valid: give a finite number of seconds above 0 and at most "
            f"{MAX_LEASE_SECONDS:.0f} (30 days), e.g. --lease-seconds 900",
        )
    return float(seconds)


validate_lease = _duration  # for other families that hand out leases (handoff.import)


def _reason(reason: str | None, code: str, what: str) -> str:
    text = (reason or "").strip()
    if not text:
        raise InvalidInput(code, f"{what} needs a non-empty reason (--reason '...')")
    if len(text) > 1000:
        raise InvalidInput(code, f"the reason is {len(text)} characters long; keep it to 1000")
    return text


def _actor(ctx: CommandContext, what: str) -> str:
    if not ctx.actor:
        raise _bad(f"{what} needs an acting agent: set LEAN_CTX_AGENT_ID or pass --as")
    return ctx.actor

