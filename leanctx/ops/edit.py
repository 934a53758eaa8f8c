"""ctx_edit: replace old text with new text in a project file (see ``leanctx.commands.edit``).

The operation dispatches ``file.edit``, whose handler applies the path jail, checks the file
against what this agent last read and writes it atomically, all inside the log's write
transaction. A path refused by the jail is refused by the handler too, so the attempt is
recorded in the log (``tool.called`` with ``EDIT_PATH_OUTSIDE_PROJECT``) like any refusal.

A refused edit leaves a STUCK mark on the file. A refusal rolls the edit's transaction back
(the bus records the refusal itself as ``tool.called`` with the code), so the STUCK deposit is
a second dispatch (``scent.deposit``) carrying the same correlation id: ``lean-ctx events
lineage`` ties the two together. It is made for refusals about the file's state or the edit's
fit (``STUCK_CODES``); bad input (empty old text, a path outside the project, a missing file)
deposits nothing. The refusal is then re-raised unchanged, with ``stuck_deposited`` in its
details. Were the process to die between the two transactions, the refusal is recorded and
the STUCK mark is not: the mark is advisory, the refusal is the fact.

Line ends: before dispatching, the old and new texts are fitted to the file's line ends
(``leanctx.ops.edit_line_ends``): an old text spanning lines written with ``\n``, as reads show
a file with CR-only line ends, matches the file's ``\r``; in a file whose line ends are all
CR-only (or all CRLF) the new text's ``\n`` are written as that line end. Nothing else in the
file changes. The one refusal this fitting makes itself (``EDIT_AMBIGUOUS`` for an old text shown
several times but written with different line ends, in a file mixing CR-only and LF ends) comes
before the dispatch: it leaves the STUCK mark, but no ``tool.called`` record.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

from ..errors import LeanCtxError
from ..paths import PathRefused, join, normalize, workspace_root

STUCK_CODES = frozenset({
    "EDIT_NOT_READ", "EDIT_STALE_READ", "EDIT_NO_MATCH", "EDIT_AMBIGUOUS", "EDIT_BINARY", "EDIT_NOT_TEXT",
    "EDIT_TOO_LARGE",
})


def edit_file(lc: Any, root: str | os.PathLike[str], path: str, old: str, new: str, *, replace_all: bool = False,
              allow_unread: bool = False, actor: str | None, session_id: str | None = None,
              now: float | None = None, correlation_id: str | None = None,
              idempotency_key: str | None = None) -> Any:
    """Edit ``path`` (relative to ``root``, or absolute inside it) as ``actor``; returns the
    ``EditResult``, or raises the refusal (after depositing STUCK on the file)."""
    from ..commands.edit import INVALID, OUTSIDE, EditFile
    from ..commands.scent import DepositScent
    from ..context.tokens import get_encoding
    from .edit_line_ends import fit_file

    project = workspace_root(os.fspath(root), invalid_code="EDIT_NO_PROJECT")
    try:
        target: str | None = normalize(path, project, invalid_code=INVALID, outside_code=OUTSIDE).path
    except PathRefused:
        target = None  # the handler refuses it again, and the bus records the refusal
    corr = correlation_id or uuid.uuid4().hex
    get_encoding()  # build the tokenizer before taking the write lock (the handler counts its answer)
    try:
        if target is not None:
            old, new = fit_file(join(project, target), old, new, shown=target)
        cmd = EditFile(path=target or path, old=old, new=new, replace_all=replace_all, allow_unread=allow_unread)
        return lc.bus.dispatch(cmd, actor=actor, session_id=session_id, project=project, correlation_id=corr,
                               now=now, idempotency_key=idempotency_key).value
    except LeanCtxError as exc:
        if exc.code in STUCK_CODES and actor and target:
            try:
                lc.bus.dispatch(DepositScent(target=target, kind="STUCK"), actor=actor, session_id=session_id,
                                project=project, correlation_id=corr, now=now)
                exc.details["stuck_deposited"] = True
            except LeanCtxError:
                exc.details["stuck_deposited"] = False
        raise
