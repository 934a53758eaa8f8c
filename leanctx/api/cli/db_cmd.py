"""``lean-ctx db info``, ``lean-ctx db restore-triggers`` and ``lean-ctx replay``.

``db info`` counts the log's rows next to its head position (they differ when events were
deleted: a gap) and lists what is wrong with the log (``LOG_TRUNCATED``, ``TRIGGERS_MISSING``,
``LOG_GAP``). ``db restore-triggers`` is the explicit way back from ``TRIGGERS_MISSING``: the
store does not restore them on open, which would hide the tampering.
"""

from __future__ import annotations

import os
import sys

import typer

from .app import state
from .common import JSON
from .groups import db_app
from .render import emit_json, progress_bar, table


@db_app.command("info")
def info(ctx: typer.Context, json_: bool = JSON) -> None:
    """Path, size, events, head, FTS index position, read-only or not, projections with their checkpoints,
    and what is wrong with the log (a gap, a cut end, missing triggers)."""
    st = state(ctx)
    lc = st.open()
    head = lc.store.head()
    rows = lc.store.row_count()
    problems = [p.to_dict() for p in lc.store.integrity()]
    if rows != head.position:
        problems.insert(0, {"code": "LOG_GAP", "message": (
            f"the log holds {rows:,} events but its head is at position {head.position:,}: "
            f"{head.position - rows:,} were deleted; run `lean-ctx events verify` to find the first, and restore "
            "the file from a backup")})
    size = sum(os.path.getsize(p) for p in (str(lc.db), f"{lc.db}-wal") if os.path.exists(p))
    checkpoints = lc.projections.checkpoints()
    out = {
        "path": str(lc.db),
        "bytes": size,
        "events": rows,
        "head_position": head.position,
        "head_hash": head.hash,
        "fts_position": lc.store.fts_position(),
        "synchronous": lc.store.synchronous,
        "read_only": lc.store.read_only,
        "projections": checkpoints,
        "problems": problems,
    }
    if st.want_json(json_):
        emit_json(out)
        return
    gap = f" (head at {head.position:,}: the log has a gap)" if rows != head.position else ""
    sys.stdout.write(
        f"path        {out['path']}\nsize        {size:,} bytes\nevents      {rows:,}{gap}\n"
        f"head        {head.position} {head.hash}\nfts index   at {out['fts_position']}\n"
        f"synchronous {out['synchronous']}\n"
        + (f"read-only   yes ({lc.store.read_only_reason})\n" if lc.store.read_only else "") + "\n"
    )
    listed = [{**p, "kinds": ",".join(p["kinds"])} for p in checkpoints]
    sys.stdout.write(table(listed, ["name", "version", "consistency", "position", "kinds"]) + "\n")
    for p in problems:
        sys.stdout.write(f"\n{p['code']}: {p['message']}\n")


@db_app.command("restore-triggers")
def restore_triggers(ctx: typer.Context, json_: bool = JSON) -> None:
    """Put back the log's immutability triggers (TRIGGERS_MISSING) and verify the log; exit 1 if it still fails."""
    st = state(ctx)
    store = st.open().store
    restored = store.restore_triggers()
    res = store.verify()
    if st.want_json(json_):
        emit_json({"restored": restored, "verify": res})
    else:
        sys.stdout.write(f"restored {', '.join(restored)}: the log could be changed unnoticed while it lacked them\n"
                         if restored else "nothing to restore: the triggers are in place\n")
        where = f" at position {res.first_broken}" if res.first_broken is not None else ""
        sys.stdout.write(f"verify: ok, {res.checked:,} events, chain intact\n" if res.ok else
                         f"verify: NOT OK{where}: {res.reason}\n")
    if not res.ok:
        raise typer.Exit(1)


def replay_cmd(
    ctx: typer.Context,
    projection: str | None = typer.Option(None, "--projection", "-p", help="Only this projection."),
    verify: bool = typer.Option(
        False, "--verify", help="Rebuild into a fresh database and compare digests with the live ones (exit 1 if any differ)."
    ),
    out: str | None = typer.Option(None, "--out", help="With --verify: keep the fresh database at this path."),
    json_: bool = JSON,
) -> None:
    """Rebuild projections from the log (in place), or --verify them against a fresh rebuild."""
    from tools.replay import replay

    from .failures import output_file

    if out is not None:
        if not verify:
            raise typer.BadParameter("it only works with --verify (it keeps the fresh database)", param_hint="--out")
        output_file(out, "the fresh database")
    st = state(ctx)
    as_json = st.want_json(json_)
    lc = st.open()
    with progress_bar("replaying", st.progress and not as_json and sys.stderr.isatty()) as progress:
        report = replay(lc, projection=projection, verify=verify, out=out, progress=progress)
    if as_json:
        emit_json(report)
    else:
        sys.stdout.write(
            f"{report.mode}: {report.events:,} events in {report.seconds:.3f}s "
            f"({report.events_per_second:,.0f} events/s), head {report.head_position}\n"
        )
        if report.chain_ok is not None:
            broken = report.chain_first_broken
            sys.stdout.write(  # not ok at no position: the chain holds, the log lacks its triggers
                "chain: ok\n" if report.chain_ok else f"chain: BROKEN at position {broken}\n" if broken is not None
                else "chain: intact, but the log is not ok: see `lean-ctx events verify`\n"
            )
        rows = [
            {
                "projection": p.name,
                "version": p.version,
                "digest": p.digest[:16],
                "live": (p.live_digest or "")[:16],
                "match": {True: "yes", False: "NO", None: ""}[p.match],
            }
            for p in report.projections
        ]
        sys.stdout.write(table(rows, ["projection", "version", "digest", "live", "match"]) + "\n")
    if not report.ok:
        raise typer.Exit(1)


def schema_cmd(
    ctx: typer.Context,
    check: bool = typer.Option(False, "--check", help="Only report drift (exit 1 if schema/ is stale)."),
    out: str | None = typer.Option(
        None, "--out", help="The directory to write (or --check) instead of the source tree's schema/; "
        "required when lean-ctx is installed rather than run from its repository."
    ),
    json_: bool = JSON,
) -> None:
    """Regenerate schema/ (JSON Schemas of every event kind, EVENTS.md, projections.sql)."""
    from pathlib import Path

    from ... import schema_gen
    from ...errors import InvalidInput

    if out is not None:
        from .failures import output_dir

        target = output_dir(out, "the schema directory") if not check else Path(out).expanduser()
    else:
        found = schema_gen.source_dir()
        if found is None:
            raise InvalidInput("SCHEMA_OUT_REQUIRED", "this lean-ctx is installed, not run from its repository, so it "
                               "has no schema/ of its own; pass --out DIR to write (or --check) another directory")
        target = found
    as_json = state(ctx).want_json(json_)
    if check:
        stale = schema_gen.drift(target)
        if as_json:
            emit_json({"dir": str(target), "current": not stale, "stale": stale})
        else:
            sys.stdout.write(("stale: " + ", ".join(stale)) if stale else f"{target} is current")
            sys.stdout.write("\n")
        if stale:
            raise typer.Exit(1)
        return
    changed = schema_gen.write(target)
    if as_json:
        emit_json({"dir": str(target), "written": changed})
    else:
        sys.stdout.write(("wrote " + ", ".join(changed)) if changed else f"{target} is current")
        sys.stdout.write("\n")


def attach(app: typer.Typer) -> None:
    app.command("replay")(replay_cmd)
    app.command("schema")(schema_cmd)
