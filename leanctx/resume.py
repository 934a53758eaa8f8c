"""The resume block: what a session needs back after its context was compacted or lost, in at
most ``max_tokens`` tokens (real tokenizer, ``leanctx.context.tokens.count_tokens``).

Sections, highest priority first: identity, task (step i/n), decisions, files (F1..Fn with
hashes), findings, archives (``[expired]`` when the archive file is gone), diary counts. Identity
and the task are always sent: when they alone do not fit, their longest lines are cut short with
"…" (a task keeps its "— step i/n"), never dropped. The other lines are taken in one order, each
section's first few lines (its share) then the rest, highest priority first, and what is sent is
the longest prefix of that order that fits: a line that does not fit ends the block (a cheaper
line of a lower section is not taken instead), so a section is never dropped while a lower one is
sent, and more budget never sends less. What did not fit, and what was cut short, is named on a
last line ("left out: ...; cut short: ..."). Newest items come first in every section.
``max_tokens`` below ``MIN_MAX_TOKENS`` is refused (``RESUME_INVALID_MAX_TOKENS``). Pure reads:
no events are written.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec

from . import clock
from .context.tokens import DEFAULT_ENCODING, count_tokens
from .errors import InvalidInput

DEFAULT_MAX_TOKENS = 500
MAX_TOKENS_ENV = "LEAN_CTX_RESUME_MAX_TOKENS"
# (section, lines it is sure of before the others fill up), highest priority first
SHARES: tuple[tuple[str, int], ...] = (("identity", 2), ("task", 1), ("decisions", 4), ("files", 8),
                                       ("findings", 6), ("archives", 3), ("diary", 1))
TITLES = {"decisions": "decisions", "files": "files", "findings": "findings", "archives": "archives"}
MANDATORY = ("identity", "task")  # always sent, cut short with "…" rather than dropped
MIN_MAX_TOKENS = 60  # the smallest budget: identity, the task (cut short) and the "left out" line
HINT = " — ctx_session action=status for all"
CUT_FLOOR = 8  # tokens per identity/task line below which the "left out" line drops its HINT


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
        return max(MIN_MAX_TOKENS, int(raw)) if raw else default
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


def _left_line(left: dict[str, int], cut: list[str], hint: bool = True) -> str:
    """The last line: what was not sent (items per section) and which lines were cut short."""
    line = "left out: " + ", ".join(f"{n} {k}" for k, n in left.items()) if left else ""
    if cut:
        line += ("; " if line else "") + "cut short: " + ", ".join(cut)
    return line + (HINT if hint else "") if line else ""


def _render(must: list[str], parts: dict[str, list[str]], chosen: dict[str, int], last: str) -> str:
    lines = list(must)
    for name, _ in SHARES:
        if name in MANDATORY or not chosen.get(name):
            continue
        if name in TITLES:
            lines.append(f"{TITLES[name]}:")
        lines.extend(parts[name][: chosen[name]])
    if last:
        lines.append(last)
    return "\n".join(lines)


def _order(parts: dict[str, list[str]]) -> list[str]:
    """The optional lines in the order they are taken, one section name per line: each section's
    share, then the rest, highest priority first (a prefix of it is what is sent)."""
    have = {name: len(parts.get(name, [])) for name, _ in SHARES if name not in MANDATORY}
    first = [name for name, share in SHARES if name in have for _ in range(min(share, have[name]))]
    rest = [name for name, share in SHARES if name in have for _ in range(have[name] - min(share, have[name]))]
    return first + rest


def _shorten(line: str, cap: int) -> str:
    """``line`` cut with "…" to at most about ``cap`` tokens (its newline included), keeping a
    task's trailing "— step i/n"."""
    from .ops.cap import char_prefix

    if count_tokens(line + "\n") <= cap:
        return line
    body, sep, step = line.rpartition(" — step ")
    tail = sep + step if sep and body else ""
    body = body if tail else line
    room = cap - count_tokens(f"…{tail}\n")
    if room <= 0 and tail:
        body, tail, room = line, "", cap - count_tokens("…\n")
    return body[: char_prefix(body, room, DEFAULT_ENCODING)].rstrip() + "…" + tail


def _shorten_all(lines: list[str], room: int) -> list[str]:
    """The mandatory lines in about ``room`` tokens: the longest ones are cut first (the largest
    per-line cap whose total fits)."""
    costs = [count_tokens(x + "\n") for x in lines]
    if sum(costs) <= room:
        return lines
    cap = max((c for c in range(1, max(costs) + 1) if sum(min(x, c) for x in costs) <= room), default=1)
    return [_shorten(x, cap) for x in lines]


def fit(parts: dict[str, list[str]], max_tokens: int) -> tuple[str, int, dict[str, int]]:
    """Choose lines of ``parts`` to fit ``max_tokens`` (see the module doc): (text, tokens, left out).
    Refused with ``RESUME_INVALID_MAX_TOKENS`` below ``MIN_MAX_TOKENS``."""
    if max_tokens < MIN_MAX_TOKENS:
        raise InvalidInput("RESUME_INVALID_MAX_TOKENS", f"the resume block needs max_tokens of at least "
                           f"{MIN_MAX_TOKENS} (room for who you are, the task and what was left out), not "
                           f"{max_tokens}; leave it out for the default ({DEFAULT_MAX_TOKENS})",
                           min=MIN_MAX_TOKENS)
    full = [x for name in MANDATORY for x in parts.get(name, [])]
    order = _order(parts)
    chosen = {name: 0 for name, _ in SHARES if name not in MANDATORY}

    def left() -> dict[str, int]:
        return {n: len(parts.get(n, [])) - chosen[n] for n, _ in SHARES
                if n in chosen and len(parts.get(n, [])) > chosen[n]}

    used, k = sum(count_tokens(x + "\n") for x in full), 0
    for name in order:  # the longest prefix of ``order`` that fits: a line that does not fit ends it
        line = parts[name][chosen[name]]
        c = count_tokens(line + "\n") + (count_tokens(f"{TITLES[name]}:\n") if not chosen[name] and name in TITLES else 0)
        chosen[name] += 1
        if used + c + count_tokens(_left_line(left(), [])) > max_tokens:
            chosen[name] -= 1
            break
        used, k = used + c, k + 1
    must, hint, room = full, True, None
    cut: list[str] = []
    while True:  # per-line counts are estimates: check the real count of the whole text
        text = _render(must, parts, chosen, _left_line(left(), cut, hint))
        tokens = count_tokens(text)
        if tokens <= max_tokens:
            return text, tokens, left()
        if k:  # over: the last line taken goes back
            k -= 1
            chosen[order[k]] -= 1
            continue
        if room is None:  # identity and the task alone do not fit: cut them short, never drop them
            room = max_tokens - count_tokens(_left_line(left(), list(MANDATORY)))
            if room < CUT_FLOOR * len(full):
                hint = False
                room = max_tokens - count_tokens(_left_line(left(), list(MANDATORY), hint))
        elif room > 2 * len(full):
            room -= tokens - max_tokens
        else:  # not reached with max_tokens >= MIN_MAX_TOKENS: a plain cut keeps the promise
            from .ops.cap import char_prefix

            text = text[: char_prefix(text, max_tokens, DEFAULT_ENCODING)]
            return text, count_tokens(text), left()
        must = _shorten_all(full, room)
        cut = [name for name in MANDATORY if any(x not in must for x in parts.get(name, []))]


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
