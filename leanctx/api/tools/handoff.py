"""``ctx_handoff``: hand your work to another agent as a signed bundle, or take over another
agent's work from one (see ``leanctx.commands.handoff``).

``create`` without ``out``: the text ends with the bundle (one line), since the text is all an MCP
client shows the model; ``import`` with ``bundle`` takes that line with or without its final newline
(recorded ``via inline``; with ``path``: ``via file``). The texts here are shared with the CLI
(``lean-ctx handoff``) and the A2A endpoint: counts in words, how each import came, and next steps
as the tool action first, then the CLI command.

``create`` with ``out`` writes a project file, like ``ctx_edit``: the registry refuses it to a
caller without exec (``HTTP_EXEC_DISABLED``, ``lean-ctx serve --no-exec``). Even with exec, ``out``
never lands in version-control metadata (``.git/``, ``.hg/``, ``.svn/``: hooks there run code), in
a ``.lean-ctx`` folder, nor in the log's folder or lean-ctx's data directory (keys, secrets):
``HANDOFF_PATH_REFUSED``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import msgspec

from ...errors import InvalidInput
from ..registry import Caller, tool

Action = Literal["create", "import", "list", "show"]
BUNDLE_LINE = ("bundle (the receiver runs ctx_handoff action=import bundle=<the next line>, or saves it to FILE and "
               "runs `lean-ctx handoff import FILE`; out=FILE saves it instead):")


class HandoffArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    action: Action
    knowledge: str = "all"  # create: all | none | a category
    message: str | None = None  # create: a note for the receiver
    diary_limit: int = 50  # create
    out: str | None = None  # create: write the bundle to this file (inside the project)
    overwrite: bool = False  # create: replace an existing out file
    path: str | None = None  # import: a bundle file (relative to the project)
    bundle: str | None = None  # import: the bundle text itself
    apply_knowledge: bool = False
    apply_session: bool = False
    apply_workflow: bool = False  # import: take over the sender's tasks it still owns here
    lease_seconds: float | None = None  # import: the lease on taken-over tasks in progress (default 900)
    reapply: bool = False  # import: apply again what an earlier import of this bundle applied
    handoff_id: str | None = None  # show


def _dispatch(lc: Any, caller: Caller, command: Any) -> Any:
    return lc.bus.dispatch(command, actor=caller.agent_id, session_id=caller.session_id,
                           project=caller.project).value


def _path(caller: Caller, p: str) -> Path:
    """``p`` inside the caller's project, as ``ctx_read``/``ctx_edit`` take paths: ``..``,
    absolute paths and symlinks leading out are refused (``HANDOFF_PATH_OUTSIDE_PROJECT``)."""
    from ...paths import normalize

    if p.startswith("~"):  # a shell would expand it to the home folder, which is outside
        p = str(Path(p).expanduser())
    wp = normalize(p, caller.project, invalid_code="HANDOFF_PATH_INVALID",
                   outside_code="HANDOFF_PATH_OUTSIDE_PROJECT")
    return Path(caller.project) / wp.path


# folders ``out`` never writes into: version-control metadata (its hooks run code) and lean-ctx's own
REFUSED_DIRS = frozenset({".git", ".hg", ".svn", ".lean-ctx"})


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _refused_by_data(lc: Any, caller: Caller, path: Path) -> bool:
    """``path`` is the log (or its -wal/-shm/-journal), or lies in the log's folder or the data
    directory when that folder is inside the project (one that holds the project is not refused whole)."""
    from ...config import data_dir

    real, project = os.path.realpath(path), os.path.realpath(caller.project)
    db = os.path.realpath(lc.db)
    if real in {db + suffix for suffix in ("", "-wal", "-shm", "-journal")}:
        return True
    folders = {os.path.dirname(db), os.path.realpath(data_dir())}
    return any(_inside(real, f) and not _inside(project, f) for f in folders)


def _out_path(lc: Any, caller: Caller, out: str, overwrite: bool) -> Path:
    path = _path(caller, out)  # normalized: symlinks inside the project resolved, so a link to .git/ is seen
    rel = path.relative_to(caller.project).parts
    refused = next((p for p in rel if p.casefold() in REFUSED_DIRS), None)
    if refused is None and _refused_by_data(lc, caller, path):
        refused = "lean-ctx's data (the log, keys, secrets)"
    if refused is not None:
        raise InvalidInput("HANDOFF_PATH_REFUSED", f"out={out} is inside {refused}, where a handoff is never "
                           "written; choose a file elsewhere in the project", path=out)
    if path.is_dir():
        raise InvalidInput("HANDOFF_OUT_IS_A_DIRECTORY", f"{out} is a folder; name a file in it", path=out)
    if path.exists() and not overwrite:
        raise InvalidInput("HANDOFF_OUT_EXISTS", f"{out} exists; choose a new file, or pass overwrite=true to "
                                                 "replace it", path=out)
    try:  # its folders now, so that a path that cannot be written records no handoff
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidInput("HANDOFF_OUT_UNWRITABLE", f"cannot write {out}: {exc.strerror or exc}", path=out) from None
    return path


def _n(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


COUNT_WORDS = (("notes", "note", "notes"), ("knowledge", "fact", "facts"), ("tasks", "open task", "open tasks"),
               ("files", "file", "files"), ("diary", "diary entry", "diary entries"))


def counts_text(c: dict[str, int]) -> str:
    """A bundle's counts in words: ``2 notes, 1 fact, 0 open tasks, 3 files, 1 diary entry``."""
    return ", ".join(_n(c.get(k, 0), one, many) for k, one, many in COUNT_WORDS)


def created_text(v: Any, out: str | None = None) -> str:
    where = f" → {out}" if out else ""
    return (f"handoff {v.handoff_id} by {v.sender} (session {v.session_id}, key {v.fingerprint}){where}: "
            f"{counts_text(v.counts)}")


def imported_text(v: Any) -> str:
    from ...commands.handoff import already_text, apply_hint

    lines = [(f"handoff {v.handoff_id} from {v.sender} verified (signer {v.signer} {v.fingerprint}) → "
              f"{v.receiver} session {v.session_id} (via {v.via}); applied: {', '.join(v.applied) or 'nothing'}")]
    again = already_text(v) if getattr(v, "already_imported_at", None) else None
    if again:
        lines.append(again)
    elif not v.applied:
        lines.append(f"verified and recorded only: {apply_hint(v.via, 'all')}")
    if getattr(v, "trust_note", None):
        lines.append(f"trust: {v.trust_note}")
    if v.message:
        lines.append(f"message: {v.message}")
    if v.task:
        lines.append(f"task: {v.task}" + (f" — step {v.step}/{v.total}" if v.total else ""))
    lines.append(f"{_n(v.notes, 'finding/decision', 'findings/decisions')}, "
                 f"{_n(len(v.knowledge_imported), 'fact', 'facts')} imported ({len(v.knowledge_skipped)} already "
                 f"known), {_n(v.diary, 'diary entry', 'diary entries')}")
    lines += [f"{f.ref} {f.path} {(f.content_hash or '')[:12]}" for f in v.files]
    lines += [f"task {t.channel}/{t.task_id} [{t.status}{'' if t.status_here in (None, t.status) else ' → ' + t.status_here}]"
              f" {t.title}: {t.outcome.replace('_', ' ')}{f' [{t.code}]' if t.code else ''} — {t.reason}"
              for t in v.tasks]
    return "\n".join(lines)


def list_handoffs(lc: Any) -> dict[str, Any]:
    from ...projections.handoffs import counts, list_created, list_imported

    conn = lc.projections.reader("handoffs")
    created, imported = list_created(conn), list_imported(conn)
    n_created, n_imported = counts(conn)
    lines = [f"created  {h.handoff_id} by {h.sender} {h.ts[:19]}: {counts_text(h.counts)}" for h in created]
    if n_created > len(created):
        lines.append(f"(the newest {len(created)} of {n_created} created; show one with ctx_handoff action=show)")
    lines += [f"imported {i.handoff_id} from {i.sender} by {i.receiver} {i.ts[:19]} via {i.via}, applied: "
              f"{','.join(i.applied) or 'nothing'}" for i in imported]
    if n_imported > len(imported):
        lines.append(f"(the newest {len(imported)} of {n_imported} imports)")
    return {"text": "\n".join(lines) or "no handoffs", "created": created, "imported": imported}


def show_handoff(lc: Any, handoff_id: str) -> dict[str, Any]:
    from ...errors import NotFound
    from ...projections.handoffs import get_created, imports_of

    conn = lc.projections.reader("handoffs")
    c, imps = get_created(conn, handoff_id), imports_of(conn, handoff_id)
    if c is None and not imps:
        raise NotFound("HANDOFF_NOT_FOUND", f"no handoff {handoff_id!r} in this log; see ctx_handoff action=list, "
                       "or `lean-ctx handoff list`")
    lines = []
    if c:
        lines.append(f"created {c.ts[:19]} by {c.sender} session {c.session_id} key {c.fingerprint} "
                     f"digest {c.digest[:16]}: {counts_text(c.counts)}" + (f"; message: {c.message}" if c.message
                                                                          else ""))
    lines += [f"imported {i.ts[:19]} by {i.receiver} into {i.session_id} via {i.via}, applied: "
              f"{','.join(i.applied) or 'nothing'}, digest {i.digest[:16]}" for i in imps]
    return {"text": "\n".join(lines), "created": c, "imports": imps}


def _writes(a: HandoffArgs) -> bool:
    """The calls that write a project file (the registry's exec policy)."""
    return a.action == "create" and a.out is not None


@tool("ctx_handoff", category="memory", args=HandoffArgs, exec_when=_writes, description="""
Hand work to another agent with a signed bundle, or continue another agent's work. action:
create(knowledge?: all|none|CATEGORY, message?, out? (a new file in the project), overwrite?) → bundle | import(path | bundle,
apply_session?, apply_knowledge?, apply_workflow?, lease_seconds?, reapply?) (verified against the trust
store; apply_workflow: the sender's tasks it still owns become yours, leased if in progress;
others are reported with the reason) | list | show(handoff_id).""")
def ctx_handoff(lc: Any, caller: Caller, a: HandoffArgs) -> dict[str, Any]:
    from ...commands.handoff import CreateHandoff, ImportHandoff

    if a.action == "create":
        # the path is checked before the handoff is recorded: a refused out creates nothing
        out = _out_path(lc, caller, a.out, a.overwrite) if a.out else None
        v = _dispatch(lc, caller, CreateHandoff(knowledge=a.knowledge, diary_limit=a.diary_limit, message=a.message))
        if out is not None and a.out:
            try:
                out.write_text(v.bundle)
                return {"text": created_text(v, a.out), "handoff": v}
            except OSError as exc:  # recorded already: the bundle goes in the text instead, nothing lost
                return {"text": f"{created_text(v)}\ncould not write {a.out} ({exc.strerror or exc});\n{BUNDLE_LINE}\n"
                                f"{v.bundle.strip()}", "handoff": v}
        # not saved: the text is all the model has to hand over, so it carries the bundle (one line)
        return {"text": f"{created_text(v)}\n{BUNDLE_LINE}\n{v.bundle.strip()}", "handoff": v}
    if a.action == "import":
        if (a.path is None) == (a.bundle is None):
            raise InvalidInput("INVALID_ARGUMENT", "ctx_handoff import needs path or bundle (one of them)")
        via = "file" if a.path is not None else "inline"
        if a.path is not None:
            try:
                text = _path(caller, a.path).read_bytes().decode("utf-8")
            except (OSError, UnicodeError) as exc:
                raise InvalidInput("HANDOFF_INVALID", f"cannot read {a.path}: {exc}") from None
        else:  # as the model copies it from a text: its one final newline may be missing
            text = (a.bundle or "").rstrip("\r\n") + "\n"
        v = _dispatch(lc, caller, ImportHandoff(bundle=text, apply_knowledge=a.apply_knowledge,
                                                apply_session=a.apply_session, apply_workflow=a.apply_workflow,
                                                lease_seconds=a.lease_seconds, via=via, reapply=a.reapply))
        return {"text": imported_text(v), "import": v}
    if a.action == "list":
        return list_handoffs(lc)
    if not a.handoff_id:
        raise InvalidInput("INVALID_ARGUMENT", "ctx_handoff show needs handoff_id")
    return show_handoff(lc, a.handoff_id)
