"""The resume block: what a session needs back after its context was compacted or lost, in at
most ``max_tokens`` tokens (real tokenizer, ``leanctx.context.tokens.count_tokens``).

Sections, highest priority first: identity, task (step i/n), decisions, files (F1..Fn with
hashes), findings, archives (``[expired]`` when the archive file is gone), diary counts. Each
section first gets a few lines (its share), then what budget is left goes to the sections in
priority order; what did not fit is named on a last line ("left out: ..."). Newest items come
first in every section. Pure reads: no events are written.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec

from . import clock
from .context.tokens import count_tokens

DEFAULT_MAX_TOKENS = 500
MAX_TOKENS_ENV = "LEAN_CTX_RESUME_MAX_TOKENS"
# (section, lines it is sure of before the others fill up), highest priority first
SHARES: tuple[tuple[str, int], ...] = (("identity", 2), ("task", 1), ("decisions", 4), ("files", 8),
                                       ("findings", 6), ("archives", 3), ("diary", 1))
TITLES = {"decisions": "decisions", "files": "files", "findings": "findings", "archives": "archives"}


class ResumeBlock(msgspec.Struct, frozen=True):
    session_id: str
    agent_id: str | None
    text: str
    tokens: int
    max_tokens: int
    left_out: dict[str, int]  # section → items that did not fit
    empty: bool  # the session has nothing to restore


def max_tokens_from_env(default: int = DEFAULT_MAX_TOKENS) -> int:
    raw = os.environ.get(MAX_TOKENS_ENV, "").strip()
    try:
        return max(60, int(raw)) if raw else default
    except ValueError:
        return default


def _one(text: str, limit: int = 160) -> str:
    t = " ".join(text.split())
    return t if len(t) <= limit else t[: limit - 1] + "…"


def sections(lc: Any, session_id: str, agent_id: str | None, project: str, *, now: float | None = None,
             archive_root: str | os.PathLike[str] | None = None) -> tuple[dict[str, list[str]], bool]:
    """Every line the block could hold, per section (newest first), and whether the session has
    anything to restore."""
    from .archive import ArchiveStore
    from .projections.agents import find_agent
    from .projections.sessions import (
        diary_counts,
        get_session,
        session_archives,
        session_files,
        session_notes,
    )

    conn = lc.projections.reader("sessions")
    lc.projections.ensure_current(["deliveries", "diaries", "agents"])
    now = clock.now() if now is None else now
    sess = get_session(conn, session_id)
    agent = agent_id or (sess.agent_id if sess else None)
    out: dict[str, list[str]] = {name: [] for name, _ in SHARES}
    who = find_agent(conn, agent, now=now) if agent else None
    head = f"## lean-ctx resume — session {session_id}"
    if who is not None:
        ident = f"you are {who.name} (agent_id {who.agent_id}, {who.agent_type}/{who.role}) in {project}"
    else:
        ident = f"you are {agent or 'an unregistered agent'} in {project}"
    out["identity"] = [head, ident]
    if sess is not None and sess.task:
        step = f" — step {sess.step}/{sess.total}" if sess.total else (f" — step {sess.step}" if sess.step else "")
        out["task"] = [f"task: {_one(sess.task, 240)}{step}"]
    notes = session_notes(conn, session_id)
    out["decisions"] = [f"- {_one(n.text)}" + (f" ({n.path})" if n.path else "")
                        for n in reversed(notes) if n.note == "decision"]
    out["findings"] = [f"- {_one(n.text)}" + (f" ({n.path})" if n.path else "")
                       for n in reversed(notes) if n.note == "finding"]
    files = session_files(conn, session_id, project=project)
    out["files"] = [f"{f.ref} {f.path}" + (f" sha256:{f.content_hash[:12]}" if f.content_hash else "")
                    for f in reversed(files)]
    store = ArchiveStore(archive_root) if archive_root is not None else ArchiveStore.beside(lc.db)
    out["archives"] = [f"{a.archive_id} ({a.source})" + ("" if store.exists(a.archive_id) else " [expired]")
                       for a in session_archives(conn, session_id)]
    if agent:
        counts = diary_counts(conn, agent)
        if counts:
            total = sum(counts.values())
            out["diary"] = [f"diary: {total} entries (" + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
                            + ") — ctx_agent recall_diary"]
    has_state = bool(out["task"] or notes or files or out["archives"])
    return out, has_state


def _render(chosen: dict[str, list[str]], left: dict[str, int]) -> str:
    lines: list[str] = []
    for name, _ in SHARES:
        items = chosen.get(name) or []
        if not items:
            continue
        if name in TITLES:
            lines.append(f"{TITLES[name]}:")
        lines.extend(items)
    if left:
        lines.append("left out: " + ", ".join(f"{n} {k}" for k, n in left.items())
                     + " — ctx_session action=status for all")
    return "\n".join(lines)


def fit(parts: dict[str, list[str]], max_tokens: int) -> tuple[str, int, dict[str, int]]:
    """Choose lines of ``parts`` to fit ``max_tokens`` (see the module doc): (text, tokens, left out)."""
    cost = {name: [count_tokens(x) + 1 for x in parts.get(name, [])] for name, _ in SHARES}
    chosen: dict[str, int] = {name: 0 for name, _ in SHARES}
    reserve = 30  # the "left out" line
    used = sum(count_tokens(f"{t}:") + 1 for t in TITLES.values())

    def take(name: str, upto: int) -> None:
        nonlocal used
        while chosen[name] < min(upto, len(cost[name])):
            c = cost[name][chosen[name]]
            if used + c > max_tokens - reserve:
                return
            used += c
            chosen[name] += 1

    for name, share in SHARES:
        take(name, share)
    for name, _ in SHARES:
        take(name, len(cost[name]))
    while True:
        picked = {n: parts[n][: chosen[n]] for n in chosen if chosen[n]}
        left = {n: len(parts.get(n, [])) - chosen[n] for n, _ in SHARES if len(parts.get(n, [])) > chosen[n]}
        text = _render(picked, left)
        tokens = count_tokens(text)
        if tokens <= max_tokens:
            return text, tokens, left
        for name, _ in reversed(SHARES):  # over (estimates differ): drop the lowest-priority line
            if chosen[name] and name != "identity":
                chosen[name] -= 1
                break
        else:
            return text[: max_tokens], count_tokens(text[: max_tokens]), left


def build_resume(lc: Any, session_id: str, agent_id: str | None, project: str, *, max_tokens: int | None = None,
                 now: float | None = None, archive_root: str | os.PathLike[str] | None = None) -> ResumeBlock:
    limit = max_tokens_from_env() if max_tokens is None else int(max_tokens)
    parts, has_state = sections(lc, session_id, agent_id, project, now=now, archive_root=archive_root)
    text, tokens, left = fit(parts, limit)
    return ResumeBlock(session_id, agent_id, text, tokens, limit, left, not has_state)


def resume_path(session_id: str, data_dir: str | os.PathLike[str] | None = None) -> Path:
    """``<data dir>/sessions/<session_id>/resume.md`` (the PreCompact hook writes it)."""
    from .config import data_dir as default_dir

    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in session_id)[:128] or "_"
    return Path(data_dir or default_dir()) / "sessions" / safe / "resume.md"


def write_resume(block: ResumeBlock, data_dir: str | os.PathLike[str] | None = None) -> Path:
    """Write the block to the session folder (atomically); returns the file."""
    target = resume_path(block.session_id, data_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".md.tmp")
    tmp.write_text(block.text + "\n", encoding="utf-8")
    os.replace(tmp, target)
    return target


# --- compaction detection ------------------------------------------------------------------------

DEFAULT_GAP_THRESHOLD = 2
GAP_ENV = "LEAN_CTX_COUNTER_GAP_THRESHOLD"


def gap_threshold_from_env(default: int = DEFAULT_GAP_THRESHOLD) -> int:
    raw = os.environ.get(GAP_ENV, "").strip()
    try:
        return max(1, int(raw)) if raw else default
    except ValueError:
        return default


def compaction_gap(server_call: int, expected_call: int | None, *, last_injected: int = 0,
                   threshold: int = DEFAULT_GAP_THRESHOLD) -> bool:
    """Whether to add the resume block to call number ``server_call``.

    ``expected_call`` is the number the client expects this call to get (the last
    ``_meta["lean-ctx/call"]`` it saw, plus one). A client that lost its context (compaction)
    reports an old one: it lags by at least ``threshold``. Once per gap: a lag whose expected
    number is not past ``last_injected`` (the call that last carried the block) is the same gap
    seen again, not a new loss."""
    if expected_call is None or expected_call <= 0:
        return False
    return server_call - expected_call >= threshold and expected_call > last_injected
