"""``lean-ctx agent claim|release|sync|deposit``: the scent field."""

from __future__ import annotations

import os
import sys
from typing import Optional

import typer

from .app import State, state
from .common import JSON, dispatch, finite_at_least
from .groups import agent_app
from .render import emit_json, table, to_builtins

_TARGET_HELP = "A file path (relative to the project root, or to the working directory if it exists there) or a task id."


def _target(st: State, target: str) -> str:
    """A relative path that exists from the working directory is made absolute, so that the
    command can make it relative to the project root; anything else (task ids) is passed on."""
    t = target.strip()
    if t and not os.path.isabs(t) and os.path.exists(t):
        cwd = os.getcwd()
        if os.path.normpath(cwd) != os.path.normpath(st.project_root()):
            return os.path.join(cwd, t)
    return t


@agent_app.command("claim")
def claim(
    ctx: typer.Context,
    target: str = typer.Argument(..., help=_TARGET_HELP),
    intensity: float = typer.Option(1.0, "--intensity", help="Positive finite strength of the mark."),
    json_: bool = JSON,
) -> None:
    """Claim a target exclusively (refused while another agent's claim is active); re-claim to refresh."""
    from ...commands.scent import ClaimScent
    from ...projections.scent import format_age

    st = state(ctx)
    v = dispatch(st, ClaimScent(target=_target(st, target), intensity=intensity))
    if st.want_json(json_):
        emit_json(v)
        return
    verb = "refreshed claim on" if v.refreshed else "claimed"
    extra = f"; took over {v.took_over_from}'s lapsed claim" if v.took_over_from else ""
    sys.stdout.write(
        f"{verb} {v.target} as {v.agent} (active {format_age(v.active_for_seconds or 0)} unless refreshed{extra})\n"
    )


@agent_app.command("release")
def release(
    ctx: typer.Context,
    target: str = typer.Argument(..., help=_TARGET_HELP),
    json_: bool = JSON,
) -> None:
    """Release your claim on a target."""
    from ...commands.scent import ReleaseScent

    st = state(ctx)
    v = dispatch(st, ReleaseScent(target=_target(st, target)))
    if st.want_json(json_):
        emit_json(v)
    else:
        sys.stdout.write(f"released {v.target} ({v.agent})\n")


@agent_app.command("deposit")
def deposit(
    ctx: typer.Context,
    target: str = typer.Argument(..., help=_TARGET_HELP),
    kind: str = typer.Option(..., "--kind", "-k", help="HOT, STUCK, DONE, AVOID or CLAIMED (= claim)."),
    intensity: float = typer.Option(1.0, "--intensity", help="Positive finite strength of the mark."),
    json_: bool = JSON,
) -> None:
    """Leave a scent mark on a target (DONE also ends your claim on it)."""
    from ...commands.scent import DepositScent

    st = state(ctx)
    v = dispatch(st, DepositScent(target=_target(st, target), kind=kind, intensity=intensity))
    if st.want_json(json_):
        emit_json(v)
        return
    extra = "; your claim on it ended" if v.ended_claim else ""
    sys.stdout.write(f"{v.kind} {v.target} ({v.agent}, intensity {v.intensity:g}){extra}\n")


@agent_app.command("sync")
def sync_(
    ctx: typer.Context,
    kind: Optional[list[str]] = typer.Option(None, "--kind", "-k", help="Only these kinds (repeatable)."),
    floor: float = typer.Option(0.05, "--floor", callback=finite_at_least(0.0), help="Hide marks whose current intensity is below this."),
    any_project: bool = typer.Option(False, "--any-project", help="Every project in this log, not only this one."),
    json_: bool = JSON,
) -> None:
    """The live scent field, strongest first: target, kind, agent, current intensity, age."""
    from ... import clock
    from ...commands.scent import check_kind, half_lives_from_env
    from ...projections.scent import format_age, sync

    st = state(ctx)
    kinds = [check_kind(k) for k in kind] if kind else None
    hl = half_lives_from_env()
    lc = st.open()
    field = sync(lc.projections.reader("scent"), now=clock.now(), project=None if any_project else st.project_root(),
                 kinds=kinds, floor=floor, half_lives=hl)
    if st.want_json(json_):
        emit_json(field)
        return
    if not field:
        sys.stderr.write("the scent field is empty (lean-ctx agent claim TARGET)\n")
        return
    rows = [to_builtins(v) for v in field]
    for r in rows:
        r["agent"] = r["name"]
        r["intensity"] = f"{r['intensity']:.3f}"
        r["age"] = format_age(r["age_seconds"])
        r["state"] = "active" if r["active"] else ""
    sys.stdout.write(table(rows, ["target", "kind", "agent", "intensity", "age", "state"]) + "\n")
