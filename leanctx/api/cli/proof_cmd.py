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
    from ... import proof_store
    from .failures import output_dir

    st = state(ctx)
    if out:
        output_dir(out, "the proof directory")
    c = proof_store.create(st.open(), st.project_root(), out or None)
    if st.want_json(json_):
        emit_json({"json": c.path, "html": c.html_path, "head": {"position": c.head.position, "hash": c.head.hash},
                   "chain_ok": c.chain_ok, "signer": c.signer})
        return
    sys.stdout.write(proof_store.created_text(c) + "\n")


@proof_app.command("verify")
def verify_cmd(
    ctx: typer.Context,
    file: Optional[str] = typer.Argument(
        None, help="A context-proof-*.json file (default: the latest one in <db dir>/proofs)."
    ),
    json_: bool = JSON,
) -> None:
    """Check the signature (trusted keys only) and re-derive every figure from the log; exit 1 on any difference.

    The result is recorded next to the file as <name>.verify.json (what `GET /v1/proof/latest` and
    `ctx_proof latest` show without replaying again). A file that is not a proof is refused
    (PROOF_NOT_A_PROOF, exit 2) and nothing is written."""
    from ... import proof, proof_store
    from ...app import LeanCtx
    from ...errors import InvalidInput

    st = state(ctx)
    if file is None:  # the latest proof of this log, verified against this log
        lc0 = st.open()
        recorded = proof_store.on_latest(proof_store.proofs_dir(lc0),
                                         lambda p: proof_store.verify_and_record(lc0, p, label=str(p)))
    else:
        path = Path(file)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise InvalidInput(proof_store.PROOF_NOT_FOUND, f"cannot read {file}: {exc.strerror}") from exc
        proof_store.require_proof(data, file)  # not a proof: refused before anything is opened or written
        # the log: --db / $LEAN_CTX_DB when given, else the proof's own db when it exists, else the project's
        lc = None
        if not st.db:
            doc, _ = proof.parse(data)
            db = doc.get("db_path") if isinstance(doc, dict) else None
            if isinstance(db, str) and os.path.isfile(db):
                lc = LeanCtx(db)
        try:
            recorded = proof_store.verify_and_record(lc or st.open(), path, label=str(path))
        finally:
            if lc is not None:
                lc.close()
    answer = proof_store.answer(recorded)  # what POST /v1/proof/verify and ctx_proof verify answer
    if st.want_json(json_):
        emit_json(answer)
    else:
        sys.stdout.write(proof_store.verify_text(answer) + "\n")
    if not answer.ok:
        raise typer.Exit(1)


def attach(app: typer.Typer) -> None:
    app.add_typer(proof_app, name="proof")
