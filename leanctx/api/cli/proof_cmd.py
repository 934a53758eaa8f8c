"""``lean-ctx proof [--out DIR]`` and ``lean-ctx proof verify FILE``."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

import typer

from .app import state
from .common import JSON
from .render import emit_json

proof_app = typer.Typer(
    help="Context Proof: a signed summary of the log (head, counts, digests, savings) and its verification.",
    invoke_without_command=True,
)


@proof_app.callback()
def proof_cmd(
    ctx: typer.Context,
    out: Optional[str] = typer.Option(
        None, "--out", help="Directory for context-proof-<head>.json and .html (default: <db dir>/proofs)."
    ),
    json_: bool = JSON,
) -> None:
    """Write Context Proof v1 (JSON + self-contained HTML), signed with the project key."""
    if ctx.invoked_subcommand is not None:
        return
    from ... import proof

    st = state(ctx)
    lc = st.open()
    doc = proof.build(lc, project_root=st.project_root())
    jp, hp = proof.write(doc, out or (lc.db.resolve().parent / "proofs"))
    if st.want_json(json_):
        emit_json({"json": str(jp), "html": str(hp), "head": doc["head"], "chain_ok": doc["chain"]["ok"],
                   "signer": doc["signer"]})
        return
    sys.stdout.write(
        f"proof of head {doc['head']['position']} {doc['head']['hash']}\n"
        f"chain {'ok' if doc['chain']['ok'] else 'BROKEN at ' + str(doc['chain']['first_broken'])}, "
        f"{doc['events']['total']:,} events, {len(doc['projections'])} projections, {len(doc['agents'])} agents\n"
        f"signed by {doc['signer']['key_id']} {doc['signer']['fingerprint']}\n"
        f"wrote {jp}\n      {hp}\n"
    )


@proof_app.command("verify")
def verify_cmd(
    ctx: typer.Context,
    file: str = typer.Argument(..., help="A context-proof-*.json file."),
    json_: bool = JSON,
) -> None:
    """Check the signature (trusted keys only) and re-derive every figure from the log; exit 1 on any difference."""
    from ... import proof
    from ...app import LeanCtx
    from ...errors import InvalidInput

    st = state(ctx)
    path = Path(file)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidInput("PROOF_NOT_FOUND", f"cannot read {file}: {exc.strerror}") from exc
    # the log: --db / $LEAN_CTX_DB when given, else the proof's own db when it exists, else the project's
    lc = None
    if not st.db:
        doc, _ = proof.parse(data)
        db = doc.get("db_path") if isinstance(doc, dict) else None
        if isinstance(db, str) and os.path.isfile(db):
            lc = LeanCtx(db)
    try:
        report = proof.verify(lc or st.open(), data, file=str(path))
    finally:
        if lc is not None:
            lc.close()
    if st.want_json(json_):
        emit_json(report)
    else:
        if report.ok:
            sys.stdout.write(
                f"ok: proof of head {report.head_position} verified against {report.db_path}; "
                f"signed by trusted key {report.signer['key_id']} {report.signer['fingerprint']}\n"
            )
        else:
            sys.stdout.write(f"FAILED: {len(report.differences)} difference(s) in {file}\n")
            for d in report.differences:
                sys.stdout.write(f"  [{d.code}] {d.field or '-'}: {d.message}\n")
    if not report.ok:
        raise typer.Exit(1)


def attach(app: typer.Typer) -> None:
    app.add_typer(proof_app, name="proof")
