"""``ctx_session`` (the caller's session state: task, findings, decisions, snapshots, the resume
block) and ``ctx_overview`` (the wake-up briefing)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from ... import clock
from ...errors import InvalidInput
from ..registry import Caller, tool

Action = Literal["status", "task", "finding", "decision", "save", "load", "reset", "list", "resume", "diff"]


class SessionArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    action: Action
    task: str | None = None
    step: int | None = None
    total: int | None = None
    text: str | None = None
    path: str | None = None
    name: str | None = None  # snapshot name (save, load, diff)
    session: str | None = None  # another session (status, diff, resume)
    max_tokens: int | None = None


def _dispatch(lc: Any, caller: Caller, command: Any) -> Any:
    return lc.bus.dispatch(command, actor=caller.agent_id, session_id=caller.session_id,
                           project=caller.project).value


def _sid(caller: Caller, a: SessionArgs | None = None) -> str:
    from ...commands.sessions import session_of

    if a is not None and a.session:
        return a.session
    return session_of(caller.agent_id, caller.session_id)


def status_text(lc: Any, sid: str, project: str) -> tuple[str, dict[str, Any]]:
    from ...projections.sessions import (
        get_session,
        session_archives,
        session_files,
        session_notes,
    )

    conn = lc.projections.reader("sessions")
    lc.projections.ensure_current(["deliveries"])
    s = get_session(conn, sid)
    notes = session_notes(conn, sid)
    files = session_files(conn, sid, project=project)
    archives = session_archives(conn, sid)
    lines = [f"session {sid}" + (f" ({s.agent_id})" if s and s.agent_id else "")]
    if s and s.task:
        lines.append(f"task: {s.task}" + (f" — step {s.step}/{s.total}" if s.total else ""))
    lines += [f"{n.note} #{n.seq}: {n.text}" + (f" ({n.path})" if n.path else "") for n in notes]
    lines += [f"{f.ref} {f.path} {(f.content_hash or '')[:12]}" for f in files]
    lines += [f"{x.archive_id} ({x.source})" for x in archives]
    if len(lines) == 1:
        lines.append("nothing recorded yet")
    return "\n".join(lines), {"session": s, "notes": notes, "files": files, "archives": archives}


def diff_sessions(lc: Any, a_sid: str, b: str, project: str) -> dict[str, Any]:
    """What changed from ``b`` (a snapshot name, else a session id) to session ``a_sid``."""
    from ...errors import NotFound
    from ...projections.sessions import (
        get_session,
        get_snapshot,
        session_files,
        session_notes,
    )

    conn = lc.projections.reader("sessions")
    snap = get_snapshot(conn, b, project=project)
    if snap is not None:
        base_task = (snap.task, snap.step, snap.total)
        base_notes = {(n.note, n.text) for n in snap.notes}
        base_files = {f.path for f in session_files(conn, snap.session_id, project=project)}
    else:
        other = get_session(conn, b)
        if other is None:
            raise NotFound("SESSION_NOT_FOUND", f"no session or saved snapshot {b!r}; see `lean-ctx session list`")
        base_task = (other.task, other.step, other.total)
        base_notes = {(n.note, n.text) for n in session_notes(conn, b)}
        base_files = {f.path for f in session_files(conn, b, project=project)}
    cur = get_session(conn, a_sid)
    cur_task = (cur.task, cur.step, cur.total) if cur else (None, 0, 0)
    cur_notes = {(n.note, n.text) for n in session_notes(conn, a_sid)}
    cur_files = {f.path for f in session_files(conn, a_sid, project=project)}
    return {
        "task": None if cur_task == base_task else {"from": list(base_task), "to": list(cur_task)},
        "added": [list(x) for x in sorted(cur_notes - base_notes)],
        "removed": [list(x) for x in sorted(base_notes - cur_notes)],
        "files_added": sorted(cur_files - base_files), "files_removed": sorted(base_files - cur_files),
    }


def _status(lc: Any, caller: Caller, a: SessionArgs) -> dict[str, Any]:
    text, data = status_text(lc, _sid(caller, a), caller.project)
    return {"text": text, **data}


def _task(lc: Any, caller: Caller, a: SessionArgs) -> dict[str, Any]:
    from ...commands.sessions import SetTask
    from ...projections.sessions import get_session

    task = a.task or a.text
    if not task:  # a step update keeps the task
        cur = get_session(lc.projections.reader("sessions"), _sid(caller))
        if cur is None or not cur.task or a.step is None:
            raise InvalidInput("INVALID_ARGUMENT", "ctx_session task needs task (and step?, total?)")
        task = cur.task
        total = cur.total if a.total is None else a.total
    else:
        total = a.total or 0
    v = _dispatch(lc, caller, SetTask(task=task, step=a.step or 0, total=total))
    return {"text": f"task: {v.detail}", "ack": v}


def _note(kind: str) -> Any:
    def run(lc: Any, caller: Caller, a: SessionArgs) -> dict[str, Any]:
        from ...commands.sessions import AddNote

        if not a.text:
            raise InvalidInput("INVALID_ARGUMENT", f"ctx_session {kind} needs text")
        v = _dispatch(lc, caller, AddNote(note=kind, text=a.text, path=a.path))
        return {"text": f"{kind} noted in session {v.session_id}", "ack": v}
    return run


def _save(lc: Any, caller: Caller, a: SessionArgs) -> dict[str, Any]:
    from ...commands.sessions import SaveSession

    v = _dispatch(lc, caller, SaveSession(snapshot=a.name or _sid(caller)))
    return {"text": f"saved session {v.session_id} as {v.detail}", "ack": v}


def _load(lc: Any, caller: Caller, a: SessionArgs) -> dict[str, Any]:
    from ...commands.sessions import LoadSession

    if not a.name:
        raise InvalidInput("INVALID_ARGUMENT", "ctx_session load needs name (a saved snapshot)")
    v = _dispatch(lc, caller, LoadSession(snapshot=a.name))
    text, data = status_text(lc, v.session_id, caller.project)
    return {"text": f"loaded {v.detail} into session {v.session_id}\n{text}", "ack": v, **data}


def _reset(lc: Any, caller: Caller, a: SessionArgs) -> dict[str, Any]:
    from ...commands.sessions import ResetSession

    v = _dispatch(lc, caller, ResetSession())
    return {"text": f"session {v.session_id} reset", "ack": v}


def _list(lc: Any, caller: Caller, a: SessionArgs) -> dict[str, Any]:
    from ...projections.sessions import list_sessions, list_snapshots

    conn = lc.projections.reader("sessions")
    sessions = list_sessions(conn, project=caller.project)
    snaps = list_snapshots(conn, project=caller.project)
    lines = [f"{s.session_id} {s.agent_id or '-'} {s.updated_at[:19]} {s.findings}f/{s.decisions}d"
             + (f" task: {s.task} {s.step}/{s.total}" if s.task else "") for s in sessions]
    lines += [f"saved {x.name} ← {x.session_id} {x.ts[:19]}" for x in snaps]
    return {"text": "\n".join(lines) or "no sessions", "sessions": sessions, "snapshots": snaps}


def _resume(lc: Any, caller: Caller, a: SessionArgs) -> dict[str, Any]:
    from ...resume import build_resume

    b = build_resume(lc, _sid(caller, a), caller.agent_id, caller.project, max_tokens=a.max_tokens)
    return {"text": b.text, "resume": b}


def _diff(lc: Any, caller: Caller, a: SessionArgs) -> dict[str, Any]:
    if not a.name:
        raise InvalidInput("INVALID_ARGUMENT", "ctx_session diff needs name (a snapshot or session id)")
    d = diff_sessions(lc, _sid(caller, a), a.name, caller.project)
    lines = []
    if d["task"]:
        lines.append(f"task: {d['task']['from']} → {d['task']['to']}")
    lines += [f"+ {k}: {t}" for k, t in d["added"]] + [f"- {k}: {t}" for k, t in d["removed"]]
    lines += [f"+ file {p}" for p in d["files_added"]] + [f"- file {p}" for p in d["files_removed"]]
    return {"text": "\n".join(lines) or "no difference", "diff": d}


_ACTIONS = {"status": _status, "task": _task, "finding": _note("finding"), "decision": _note("decision"),
            "save": _save, "load": _load, "reset": _reset, "list": _list, "resume": _resume, "diff": _diff}


@tool("ctx_session", category="session", args=SessionArgs, description="""
Your session state, kept across context compaction. action: status | task(task, step?, total?) |
finding(text, path?) | decision(text, path?) | save(name?) | load(name) | reset | list |
resume(max_tokens?) (the resume block) | diff(name: snapshot or session).""")
def ctx_session(lc: Any, caller: Caller, a: SessionArgs) -> dict[str, Any]:
    return _ACTIONS[a.action](lc, caller, a)


class OverviewArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task: str | None = None
    max_tokens: int | None = None


@tool("ctx_overview", category="session", args=OverviewArgs, description="""
Wake-up briefing: live agents, open and delegated tasks, unread messages, locks and claims,
relevant diary/knowledge (task?), and your resume block. Call it first when you start or resume.""")
def ctx_overview(lc: Any, caller: Caller, a: OverviewArgs) -> dict[str, Any]:
    from ...commands.sessions import session_of
    from ...overview import DEFAULT_MAX_TOKENS, build_overview

    sid = caller.session_id or (session_of(caller.agent_id, None) if caller.agent_id else None)
    ov = build_overview(lc, agent_id=caller.agent_id, session_id=sid, project=caller.project, task=a.task,
                        now=clock.now(), max_tokens=a.max_tokens or DEFAULT_MAX_TOKENS)
    return {"text": ov.text, "overview": ov}
