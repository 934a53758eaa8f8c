"""The CLI's command groups. Modules named ``*_cmd.py`` add their verbs to these."""

from __future__ import annotations

import typer

events_app = typer.Typer(help="Read the event log: tail, search, lineage, verify.", no_args_is_help=True)
agent_app = typer.Typer(
    help="Agents: registry, heartbeats, scent claims, diaries, budgets.", no_args_is_help=True
)
db_app = typer.Typer(help="The database behind the log.", no_args_is_help=True)
chat_app = typer.Typer(
    help="Coordination: channels, messages, tasks with leases, path locks, events.", no_args_is_help=True
)
hooks_app = typer.Typer(help="Install hooks (git pre-commit, ...).", no_args_is_help=True)

GROUPS = {"events": events_app, "agent": agent_app, "db": db_app, "chat": chat_app, "hooks": hooks_app}


def register_groups(app: typer.Typer) -> None:
    for name, group in GROUPS.items():
        app.add_typer(group, name=name)
