"""Scent field commands: deposit a mark, claim a target exclusively, release a claim.

Stream: ``scent:<normalized target>``. Every command acts as ``ctx.actor`` (required).

- ``scent.deposit``: any kind. HOT, STUCK, DONE and AVOID are plain marks (a new one
  replaces the agent's previous mark of that kind on the target); a DONE also ends the
  depositor's own claim. A CLAIMED deposit *is* a claim: it goes through the same exclusive
  check as ``scent.claim``, so the field cannot hold two active claims through this door.
- ``scent.claim``: refused with ``SCENT_ALREADY_CLAIMED`` while another agent's claim on
  the target is active (see ``leanctx.projections.scent`` for "active": not released,
  ``I(t) ≥ 0.5 · I0``, i.e. within one CLAIMED half-life of its latest claim, and held by an
  agent that is not stale or left). Re-claiming your own target refreshes it (a new event; the
  age restarts). Claiming over another agent's inactive claim takes it over: the new
  ``scent.deposited`` names the previous holder (``took_over_from``), and when that holder is
  stale or left its claim is first released (``scent.released``, reason ``taken_over``), so it
  cannot come back to life if the holder resumes heartbeating. The decision runs inside the
  bus's ``BEGIN IMMEDIATE`` transaction, so it holds across processes.
- ``scent.release``: removes your claim (active or lapsed). Someone else's active claim →
  ``SCENT_NOT_OWNER``; no claim of yours and no active one → ``SCENT_NOT_CLAIMED``.

**Departures.** An agent that leaves gives up its claims by events: ``agent.deregister`` and
the recording of a heartbeat timeout (``agent.left``, ``leanctx.commands.agents``) call
``release_departed``, which appends a ``scent.released`` (reason ``agent_deregistered`` or
``heartbeat_timeout``, with the claim's project) for every claim the agent holds, so a replay
rebuilds the same field. "Stale" is the agents projection's status: no heartbeat for more than
``HEARTBEAT_TTL`` (60 s, three missed 20 s heartbeats); a stale holder's claim already holds
nothing before anyone records the timeout (``leanctx.projections.scent``).

**Targets.** Claims and marks name something inside the project: a target that leaves the
project root — ``../x``, ``src/../../x``, or with a project an absolute path outside it — is
refused with ``SCENT_TARGET_OUTSIDE_PROJECT`` (without a project an absolute path cannot be
judged and is kept as it is). ``scent.release`` does not judge, so a claim recorded before the
check can still be released.

Half-lives: ``LEAN_CTX_SCENT_HALF_LIFE_<KIND>`` (seconds) override the defaults; they are read
here (``half_lives_from_env``) and by the CLI, never by the projection. All processes sharing
a log should agree on them, since the claim decision depends on the CLAIMED half-life.

Other families deposit marks (HOT from reads, STUCK from bounces) from their own handlers
with ``emit_deposit(ctx, target, "HOT")`` after declaring ``"scent.deposited"`` in their
``emits``, and annotate reads with ``claim_note(ctx, path)``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

import msgspec

from ..errors import CommandError, InvalidInput
from ..events import NO_STREAM
from ..events.kinds.scent import ScentDeposited, ScentReleased
from ..projections.scent import (
    SCENT_KINDS,
    claim_window,
    claims_of,
    claims_on,
    format_age,
    normalize_target,
    resolve_half_lives,
    scent_for,
    sync,
)
from .bus import Command, CommandContext, handles

ENV_PREFIX = "LEAN_CTX_SCENT_HALF_LIFE_"


def half_lives_from_env(environ: Mapping[str, str] | None = None) -> dict[str, float]:
    """Per-kind half-lives in seconds: the defaults with ``$LEAN_CTX_SCENT_HALF_LIFE_<KIND>``
    laid over them. Raises ``InvalidInput(SCENT_INVALID_HALF_LIFE)`` for a bad value."""
    env = os.environ if environ is None else environ
    out: dict[str, float] = {}
    for kind in SCENT_KINDS:
        raw = env.get(ENV_PREFIX + kind)
        if raw is None or not raw.strip():
            continue
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value > 0):
            raise InvalidInput(
                "SCENT_INVALID_HALF_LIFE",
                f"${ENV_PREFIX}{kind} must be a positive number of seconds, not {raw!r}; fix or unset it",
            )
        out[kind] = value
    return resolve_half_lives(out)


def check_kind(kind: str) -> str:
    k = kind.strip().upper() if isinstance(kind, str) else ""
    if k not in SCENT_KINDS:
        raise InvalidInput("SCENT_INVALID_KIND", f"no scent kind {kind!r}; use one of {', '.join(SCENT_KINDS)}")
    return k


def check_intensity(intensity: float) -> float:
    try:
        value = float(intensity)
    except (TypeError, ValueError):
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise InvalidInput(
            "SCENT_INVALID_INTENSITY", f"intensity must be a positive finite number (default 1.0), not {intensity!r}"
        )
    return value


def stream_of(target: str) -> str:
    return f"scent:{target}"


class ScentMark(msgspec.Struct, frozen=True):
    """What a deposit or claim left on the field."""

    target: str
    kind: str
    agent: str
    intensity: float
    deposited_at: str
    half_life_seconds: float
    refreshed: bool = False  # the agent already had a mark of this kind on the target
    ended_claim: bool = False  # a DONE that ended the depositor's own claim
    took_over_from: str | None = None  # CLAIMED over another agent's inactive claim (lapsed, or its holder
    # stale or left): that agent's name
    active_for_seconds: float | None = None  # CLAIMED: how long it excludes others without a refresh


class ScentRelease(msgspec.Struct, frozen=True):
    target: str
    agent: str
    claimed_since: str
    age_seconds: float
    was_active: bool


class DepositScent(Command, frozen=True):
    name = "scent.deposit"
    target: str
    kind: str
    intensity: float = 1.0


class ClaimScent(Command, frozen=True):
    name = "scent.claim"
    target: str
    intensity: float = 1.0


class ReleaseScent(Command, frozen=True):
    name = "scent.release"
    target: str


def _agent(ctx: CommandContext) -> str:
    if not ctx.actor:
        raise InvalidInput(
            "SCENT_NO_AGENT", "a scent mark needs an agent: dispatch with actor=..., or set LEAN_CTX_AGENT_ID"
        )
    return ctx.actor


def project_target(target: str, project: str | None) -> str:
    """``normalize_target``, refusing a target that leaves the project root
    (``InvalidInput(SCENT_TARGET_OUTSIDE_PROJECT)``, see the module doc)."""
    t = normalize_target(target, project)
    if t == ".." or t.startswith("../") or (project and t.startswith("/")):
        where = f"the project ({project})" if project else "the project root"
        raise InvalidInput(
            "SCENT_TARGET_OUTSIDE_PROJECT",
            f"{target.strip()[:200]!r} is outside {where}; name a path inside it (relative to the project root)"
            " or a task id",
            target=t,
        )
    return t


def release_departed(ctx: CommandContext, agent_id: str, reason: str) -> list[str]:
    """Inside the command that records ``agent_id``'s departure: release every claim it holds,
    in any project (``scent.released`` with ``reason`` and the claim's project; the caller
    declares ``"scent.released"`` in its ``emits``). Returns the released targets."""
    out = []
    for project, target in claims_of(ctx.conn, agent_id):
        ctx.emit(stream_of(target), ScentReleased(target=target, agent=agent_id, reason=reason,
                                                  claim_project=project))
        out.append(target)
    return out


def _claim(ctx: CommandContext, target: str, intensity: float) -> ScentMark:
    agent = _agent(ctx)
    t = project_target(target, ctx.project)
    value = check_intensity(intensity)
    hl = half_lives_from_env()
    claims = claims_on(ctx.conn, t, now=ctx.now, project=ctx.project or "", half_lives=hl)
    for c in claims:
        if c.agent != agent and c.active:
            raise CommandError(
                "SCENT_ALREADY_CLAIMED",
                f"{t} is already claimed by {c.name} ({format_age(c.age_seconds)} ago, still active); it frees when"
                f" they release it or mark it DONE, or after {format_age(c.active_for_seconds)} without a refresh"
                " — pick another target or wait",
                target=t, claimed_by=c.name, agent=c.agent, age_seconds=c.age_seconds,
                active_for_seconds=c.active_for_seconds,
            )
    refreshed = any(c.agent == agent for c in claims)
    others = [c for c in claims if c.agent != agent]  # none active: lapsed, or their holder has gone
    stream = stream_of(t)
    version = ctx.tx.stream_version(stream)  # belt and braces: the transaction already serializes
    for c in others:
        if c.departed:
            ctx.emit(stream, ScentReleased(target=t, agent=c.agent, reason="taken_over"), expected_version=version)
            version += 1
    ctx.emit(stream, ScentDeposited(target=t, scent="CLAIMED", agent=agent, intensity=value,
                                    took_over_from=others[0].agent if others else None),
             expected_version=version or NO_STREAM)
    return ScentMark(t, "CLAIMED", agent, value, ctx.ts, hl["CLAIMED"], refreshed=refreshed,
                     took_over_from=others[0].name if others else None,
                     active_for_seconds=claim_window(hl["CLAIMED"]))


def emit_deposit(ctx: CommandContext, target: str, kind: str, intensity: float = 1.0) -> ScentMark:
    """Deposit a mark from any handler, in its transaction (the handler must declare
    ``"scent.deposited"`` in its ``emits``). A CLAIMED deposit is a claim (may raise
    ``SCENT_ALREADY_CLAIMED``, and may release a departed holder's claim: declare
    ``"scent.released"`` too). A target outside the project raises
    ``SCENT_TARGET_OUTSIDE_PROJECT``."""
    k = check_kind(kind)
    if k == "CLAIMED":
        return _claim(ctx, target, intensity)
    agent = _agent(ctx)
    t = project_target(target, ctx.project)
    value = check_intensity(intensity)
    hl = half_lives_from_env()
    project = ctx.project or ""
    existing = sync(ctx.conn, now=ctx.now, project=project, target=t, kinds=(k,), floor=0.0, half_lives=hl)
    refreshed = any(v.agent == agent for v in existing)
    ended = k == "DONE" and any(c.agent == agent for c in claims_on(ctx.conn, t, now=ctx.now, project=project,
                                                                      half_lives=hl))
    ctx.emit(stream_of(t), ScentDeposited(target=t, scent=k, agent=agent, intensity=value))  # type: ignore[arg-type]
    return ScentMark(t, k, agent, value, ctx.ts, hl[k], refreshed=refreshed, ended_claim=ended)


@handles(DepositScent, emits=("scent.deposited", "scent.released"), result=ScentMark)
def deposit(ctx: CommandContext, cmd: DepositScent) -> ScentMark:
    return emit_deposit(ctx, cmd.target, cmd.kind, cmd.intensity)


@handles(ClaimScent, emits=("scent.deposited", "scent.released"), result=ScentMark)
def claim(ctx: CommandContext, cmd: ClaimScent) -> ScentMark:
    return _claim(ctx, cmd.target, cmd.intensity)


@handles(ReleaseScent, emits=("scent.released",), result=ScentRelease)
def release(ctx: CommandContext, cmd: ReleaseScent) -> ScentRelease:
    agent = _agent(ctx)
    t = normalize_target(cmd.target, ctx.project)
    claims = claims_on(ctx.conn, t, now=ctx.now, project=ctx.project or "", half_lives=half_lives_from_env())
    mine = next((c for c in claims if c.agent == agent), None)
    if mine is None:
        holder = next((c for c in claims if c.active), None)
        if holder is not None:
            raise CommandError(
                "SCENT_NOT_OWNER",
                f"{t} is claimed by {holder.name} ({format_age(holder.age_seconds)} ago, still active), not by you"
                f" ({agent}); only the claimer can release it",
                target=t, claimed_by=holder.name, agent=holder.agent,
            )
        raise CommandError(
            "SCENT_NOT_CLAIMED",
            f"you ({agent}) hold no claim on {t}, and no active claim is on it; nothing to release",
            target=t,
        )
    ctx.emit(stream_of(t), ScentReleased(target=t, agent=agent))
    return ScentRelease(t, agent, mine.claimed_since, mine.age_seconds, mine.active)


def claim_note(ctx: CommandContext, target: str) -> str | None:
    """``[scent: claimed by cursor-dev-1, 4m ago]`` when another agent holds an active claim
    on ``target``, else None (never raises: a bad target or half-life setting gives defaults
    or None)."""
    try:
        hl = half_lives_from_env()
    except InvalidInput:
        hl = resolve_half_lives()
    c = scent_for(ctx.conn, target, now=ctx.now, project=ctx.project or "", half_lives=hl)
    if c is None or c.agent == ctx.actor:
        return None
    return f"[scent: {c.text}]"
