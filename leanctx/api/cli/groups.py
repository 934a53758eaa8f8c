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

# Which ``*_cmd`` modules define each top-level verb, so that ``lean-ctx chat post`` imports
# and builds only the chat verbs (a whole tree costs ~40 ms of start-up). A verb missing here
# makes the CLI load every module; tests/cli/test_cli.py checks this table against the tree.
VERB_MODULES: dict[str, tuple[str, ...]] = {
    "events": ("events_cmd",),
    "agent": ("agent_cmd", "diary_cmd", "scent_cmd"),
    "db": ("db_cmd",),
    "replay": ("db_cmd",),
    "schema": ("db_cmd",),
    "chat": ("chat_cmd", "lock_cmd", "state_cmd", "task_cmd"),
    "hooks": ("lock_cmd", "session_cmd"),
    "read": ("read_cmd",),
    "shell": ("shell_cmd",),
    "compress": ("shell_cmd",),
    "expand": ("shell_cmd",),
    "search": ("search_cmd",),
    "tree": ("search_cmd",),
    "edit": ("search_cmd",),
    "gain": ("gain_cmd",),
    "call": ("call_cmd",),
    "serve": ("serve_cmd",),
    "dashboard": ("serve_cmd",),
    "mcp": ("mcp_cmd",),
    "daemon": ("daemon_cmd",),
    "setup": ("setup_cmd",),
    "doctor": ("setup_cmd",),
    "knowledge": ("knowledge_cmd",),
    "proof": ("proof_cmd",),
    "keys": ("keys_cmd",),
    "session": ("session_cmd",),
    "overview": ("session_cmd",),
    "handoff": ("handoff_cmd",),
    "pack": ("handoff_cmd",),
}


def register_groups(app: typer.Typer) -> None:
    for name, group in GROUPS.items():
        app.add_typer(group, name=name)
