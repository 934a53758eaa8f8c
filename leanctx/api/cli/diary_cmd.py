"""``lean-ctx agent diary`` and ``lean-ctx agent recall-diary``: an agent's persistent notes."""

from __future__ import annotations

import sys
from typing import Optional

import typer

from .app import state
from .common import JSON, dispatch
from .groups import agent_app
from .render import emit_json


@agent_app.command("diary")
def diary(
    ctx: typer.Context,
    text_arg: Optional[str] = typer.Argument(None, metavar="[TEXT]", help="The entry ('-' reads stdin)."),
    category: str = typer.Option(
        ..., "--category", "-c", help="discovery, decision, blocker, progress or insight."
    ),
    text: Optional[str] = typer.Option(None, "--text", help="The entry, instead of the argument."),
    tag: list[str] = typer.Option([], "--tag", help="A tag (repeatable)."),
    path: list[str] = typer.Option([], "--path", help="A file the entry is about (repeatable)."),
    json_: bool = JSON,
) -> None:
    """Write an entry in your diary (it stays in the log across sessions)."""
    from ...commands.diaries import WriteDiary
    from ...errors import InvalidInput

    st = state(ctx)
    if text_arg is not None and text is not None:
        raise InvalidInput("DIARY_INVALID_ARGUMENT", "give the entry either as an argument or with --text, not both")
    body = text if text is not None else text_arg
    if body == "-":
        body = sys.stdin.read()
    v = dispatch(st, WriteDiary(category=category, text=body or "", tags=tuple(tag), paths=tuple(path)))
    if st.want_json(json_):
        emit_json(v)
    else:
        sys.stdout.write(f"{v.category} #{v.seq} written in the diary of {v.agent_id}\n")


@agent_app.command("recall-diary")
def recall_diary(
    ctx: typer.Context,
    agent: Optional[str] = typer.Argument(None, help="Agent id or name (default: yourself)."),
    category: Optional[str] = typer.Option(None, "--category", "-c", help="Only this category."),
    limit: int = typer.Option(20, "-n", "--limit", min=1, help="At most this many entries."),
    grep: Optional[str] = typer.Option(None, "--grep", "-g", help="Only entries containing each of these words (text, tags, paths; any case)."),
    json_: bool = JSON,
) -> None:
    """An agent's diary entries, newest first."""
    from ... import clock
    from ...commands.diaries import check_category
    from ...identity import agent_identity
    from ...projections.agents import find_agent
    from ...projections.diaries import recall_diary as recall

    st = state(ctx)
    lc = st.open()
    if agent is None:
        agent_id = agent_identity()
    else:
        found = find_agent(lc.projections.reader("agents"), agent, now=clock.now(), project_root=st.project_root())
        agent_id = found.agent_id if found is not None else agent
    cat = check_category(category) if category is not None else None
    entries = recall(lc.projections.reader("diaries"), agent_id, category=cat, limit=limit, matching=grep)
    if st.want_json(json_):
        emit_json(entries)
        return
    if not entries:
        sys.stderr.write(f"no diary entries for {agent_id}\n")
        return
    for e in entries:
        extra = ""
        if e.tags:
            extra += "  [" + ", ".join(e.tags) + "]"
        if e.paths:
            extra += "  " + " ".join(e.paths)
        lines = e.text.splitlines() or [""]
        sys.stdout.write(f"#{e.seq:<4} {e.ts[:19]}  {e.category:<9}  {lines[0]}{extra}\n")
        for line in lines[1:]:
            sys.stdout.write(f"{'':<38}{line}\n")
