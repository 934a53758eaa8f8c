"""The live side of ``replay --verify``: each projection's digest, all read at one head.

A digest read while other processes append must be compared with a fresh build that stops at
the same position. ``live_digests`` catches the projections up, then reads the head, the
checkpoints and every digest inside one read transaction (one snapshot). Strong projections are
always at the head (they are applied in the appending transaction); an eventual one is behind
when an append landed between the catch-up and the snapshot: then it tries again, and after
``tries`` such races it reads under the write lock (writers wait for the digests, no longer).
"""

from __future__ import annotations

from collections.abc import Sequence

from leanctx.app import LeanCtx
from leanctx.projections import digest_tables
from leanctx.projections.base import Projection


def live_digests(app: LeanCtx, projections: Sequence[Projection], tries: int = 5) -> tuple[int, dict[str, str]]:
    """(head H, digest per projection), every projection folded up to exactly H."""
    names = [p.name for p in projections]
    for _ in range(tries):
        app.projections.ensure_current(names)
        conn = app.store.read_connection()  # head() and checkpoints() read on this same connection
        with conn:  # one read transaction: one snapshot
            head = app.store.head().position
            at = {c["name"]: c["position"] for c in app.projections.checkpoints()}
            if all(at[n] == head for n in names):
                return head, {p.name: digest_tables(conn, p) for p in projections}
    with app.store.transaction() as tx:
        for p in projections:
            app.projections.catch_up_in(tx, p)
        return tx.head().position, {p.name: digest_tables(tx.conn, p) for p in projections}
