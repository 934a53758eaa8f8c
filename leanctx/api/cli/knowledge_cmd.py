"""``lean-ctx knowledge ...``: the project's facts — remember, recall, remove, resolve,
consolidate, status, export, import."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from .app import state
from .common import JSON, dispatch
from .render import emit_json

knowledge_app = typer.Typer(
    help="Project knowledge: remember and recall facts, conflicts, consolidation, export/import.",
    no_args_is_help=True,
)


def attach(app: typer.Typer) -> None:
    app.add_typer(knowledge_app, name="knowledge")


@knowledge_app.command("remember")
def remember(
    ctx: typer.Context,
    key: str = typer.Argument(..., help="The fact's key, e.g. db.engine."),
    value: str = typer.Argument(..., help="The value ('-' reads stdin)."),
    category: str = typer.Option(..., "--category", "-c", help="One lowercase word, e.g. architecture."),
    confidence: float = typer.Option(0.8, "--confidence", help="From 0 to 1."),
    source: Optional[str] = typer.Option(None, "--source", help="Where it comes from (file, URL, ...)."),
    window: float = typer.Option(600.0, "--conflict-window", help="Seconds within which another agent's different value is a conflict."),
    json_: bool = JSON,
) -> None:
    """Remember a fact (another agent's different value within the window is flagged)."""
    from ...commands.knowledge import RememberKnowledge

    st = state(ctx)
    if value == "-":
        value = sys.stdin.read()
    v = dispatch(st, RememberKnowledge(category=category, key=key, value=value, confidence=confidence,
                                       source=source, conflict_window_s=window))
    if st.want_json(json_):
        emit_json(v)
        return
    sys.stdout.write(f"remembered {v.key} [{v.category}] (version {v.version})\n")
    if v.conflict:
        sys.stdout.write(f"⚠ conflict on {v.key}:\n")
        for a in v.alternatives:
            sys.stdout.write(f"  {a.agent}: {a.value}\n")


@knowledge_app.command("recall")
def recall(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="Words to look for (any string is safe)."),
    category: Optional[str] = typer.Option(None, "--category", "-c", help="Only this category."),
    limit: int = typer.Option(10, "-n", "--limit", min=1, help="At most this many facts."),
    json_: bool = JSON,
) -> None:
    """Facts for a query, best first (bm25; fused with sqlite-vec nearest neighbours when a model is installed)."""
    from ...commands.knowledge import check_category, entry_lines
    from ...commands.knowledge_recall import recall as do_recall

    st = state(ctx)
    lc = st.open()
    cat = check_category(category) if category is not None else None
    ans = do_recall(lc, query, category=cat, limit=limit)
    if st.want_json(json_):
        emit_json(ans.fields())
        return
    for h in ans.hits:
        sys.stdout.write("\n".join(entry_lines(h.entry)) + "\n")
    sys.stderr.write(f"{len(ans.hits)} fact(s); {ans.summary}\n")


@knowledge_app.command("show")
def show(ctx: typer.Context, key: str = typer.Argument(...), json_: bool = JSON) -> None:
    """One fact by key, with any conflict."""
    from ...commands.knowledge import check_key, entry_lines
    from ...errors import NotFound
    from ...projections.knowledge import get_entry

    st = state(ctx)
    e = get_entry(st.open().projections.reader("knowledge"), check_key(key))
    if e is None:
        raise NotFound("KNOWLEDGE_NOT_FOUND", f"no fact with key {key!r}; see `lean-ctx knowledge status`")
    if st.want_json(json_):
        emit_json(e)
    else:
        sys.stdout.write("\n".join(entry_lines(e)) + "\n")


@knowledge_app.command("remove")
def remove(ctx: typer.Context, key: str = typer.Argument(...), json_: bool = JSON) -> None:
    """Forget a fact."""
    from ...commands.knowledge import RemoveKnowledge

    st = state(ctx)
    v = dispatch(st, RemoveKnowledge(key=key))
    if st.want_json(json_):
        emit_json(v)
    else:
        sys.stdout.write(f"removed {v.key}\n")


@knowledge_app.command("resolve")
def resolve(
    ctx: typer.Context,
    key: str = typer.Argument(...),
    value: Optional[str] = typer.Argument(None, help="The value to keep (default: the latest)."),
    json_: bool = JSON,
) -> None:
    """Settle a flagged conflict by keeping one of the disputed values."""
    from ...commands.knowledge import ResolveKnowledge

    st = state(ctx)
    v = dispatch(st, ResolveKnowledge(key=key, value=value))
    if st.want_json(json_):
        emit_json(v)
    else:
        sys.stdout.write(f"resolved {v.key} = {v.value}\n")


@knowledge_app.command("consolidate")
def consolidate(
    ctx: typer.Context,
    threshold: float = typer.Option(0.8, "--threshold", help="Jaccard token overlap that makes a near-duplicate."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show the merges without making them."),
    json_: bool = JSON,
) -> None:
    """Merge near-duplicate facts of one category (the merge is recorded as an event)."""
    from ...commands.knowledge import ConsolidateKnowledge

    st = state(ctx)
    v = dispatch(st, ConsolidateKnowledge(threshold=threshold, dry_run=dry_run))
    if st.want_json(json_):
        emit_json(v)
        return
    verb = "would merge" if v.dry_run else "merged"
    for m in v.merges:
        sys.stdout.write(f"{verb} {', '.join(m.merged)} into {m.key} [{m.category}] (similarity ≥ {m.similarity})\n")
    if not v.merges:
        sys.stdout.write("no near-duplicates\n")


@knowledge_app.command("status")
def status(ctx: typer.Context, json_: bool = JSON) -> None:
    """Counts by category and the keys in conflict."""
    from ...projections.knowledge import status as do_status

    st = state(ctx)
    s = do_status(st.open().projections.reader("knowledge"))
    if st.want_json(json_):
        emit_json(s)
        return
    sys.stdout.write(f"{s.total} fact(s)\n")
    for c, n in s.by_category.items():
        sys.stdout.write(f"  {c:<20} {n}\n")
    sys.stdout.write(f"conflicts: {', '.join(s.conflicts) if s.conflicts else 'none'}\n")


@knowledge_app.command("export")
def export(
    ctx: typer.Context,
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write to this file (default: stdout)."),
    category: Optional[str] = typer.Option(None, "--category", "-c", help="Only this category."),
) -> None:
    """Every fact as JSON lines."""
    from ...commands.knowledge import check_category, export_jsonl
    from ...projections.knowledge import list_entries
    from .failures import output_file

    st = state(ctx)
    if out is not None:
        output_file(out, "the knowledge export")
    cat = check_category(category) if category is not None else None
    text = export_jsonl(list_entries(st.open().projections.reader("knowledge"), category=cat))
    if out is None:
        sys.stdout.write(text)
    else:
        out.write_text(text, encoding="utf-8")


@knowledge_app.command("import")
def import_(
    ctx: typer.Context,
    file: str = typer.Argument(..., help="JSON lines from `knowledge export` ('-' reads stdin)."),
    json_: bool = JSON,
) -> None:
    """Append the facts of a file; entries identical to the current ones are skipped."""
    from ...commands.knowledge import ImportKnowledge, parse_jsonl
    from ...errors import InvalidInput

    st = state(ctx)
    if file == "-":
        text = sys.stdin.read()
    else:
        try:
            text = Path(file).read_text(encoding="utf-8")
        except OSError as exc:
            raise InvalidInput("KNOWLEDGE_INVALID_IMPORT", f"cannot read {file}: {exc.strerror}") from None
    v = dispatch(st, ImportKnowledge(entries=parse_jsonl(text)))
    if st.want_json(json_):
        emit_json(v)
    else:
        sys.stdout.write(f"imported {len(v.imported)}, skipped {len(v.skipped)} identical\n")
