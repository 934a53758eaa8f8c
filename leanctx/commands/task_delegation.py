"""Delegation is a claim rule: who may claim a task delegated to another agent.

A task created with ``to_agent`` (``task create --to bob``) is bob's to take: while bob is live —
``active`` or ``idle`` in the agents registry at the command's ``now``, i.e. it heartbeated or
performed a command of its own within ``HEARTBEAT_TTL`` (60 s) — only bob may claim it. Anyone
else, the task's creator included, is refused with ``TASK_DELEGATED_TO_OTHER``, which names the
delegate and what to do: ask the delegate, or wait until it leaves. Once the delegate has left
(deregistered) or gone ``stale`` (its timeout recorded or not), or when ``to_agent`` names no
registered agent (logs written before delegates had to be registered), the task is open to any
claimer. The delegate stays recorded on the task either way (events stay directed to it).

The rule is about starting the task (a fresh claim). A claimer already holding the task's lease
renews it by claiming again, and a task someone else holds is governed by the lease rules
(``task_leases``), which come first. ``recover`` takes over an *expired* lease with a reason on
record and is not gated here; there is no verb to re-delegate or decline a task (``to_agent`` is
set at creation only): the creator may cancel the task and create it again for someone else.
"""

from __future__ import annotations

from typing import Any

from ..errors import CommandError
from ..projections.agents import HEARTBEAT_TTL, find_agent
from .bus import CommandContext

LIVE = frozenset({"active", "idle"})


def check_delegation(ctx: CommandContext, row: dict[str, Any], actor: str) -> None:
    """Refuse ``actor``'s fresh claim of the task ``row`` (a ``get_row`` mapping) when the task
    is delegated to another agent that is live at ``ctx.now`` (``TASK_DELEGATED_TO_OTHER``)."""
    delegate = row["to_agent"]
    if delegate is None or delegate == actor:
        return
    agent = find_agent(ctx.conn, delegate, now=ctx.now)
    if agent is None or agent.agent_id != delegate or agent.status not in LIVE:
        return
    tid, channel = row["task_id"], row["channel"]
    raise CommandError(
        "TASK_DELEGATED_TO_OTHER",
        f"task {tid!r} in channel {channel!r} is delegated to {agent.name} ({delegate}), who is {agent.status} "
        f"(last seen {agent.age_seconds:.0f}s ago): only {delegate} may claim it while it is here. Ask {delegate} "
        f"to take it (ctx_agent action=post to={delegate}, or `lean-ctx chat post --to {delegate} --title ... "
        f"--body ...`); it opens to any claimer once {delegate} leaves or goes stale (no heartbeat and no command "
        f"for {HEARTBEAT_TTL:.0f} s)",
        to_agent=delegate,
        delegate_status=agent.status,
    )
