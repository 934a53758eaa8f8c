"""``ctx_read``: read files for an agent, compressed, cached, never losing data.

``read_files(lc, paths, mode=..., actor=..., session_id=..., project=...)`` does the slow part
outside the log's write transaction, then dispatches ``read.record`` (``leanctx.commands.read``),
which decides stub vs content, the refs, the cap, scent and budget inside it.

For each path, outside the transaction:

1. **loading** (``leanctx.ops.read_load``): the jail, secret files (``READ_SECRET_FILE``), the
   mtime + size fast check (an unchanged file, by its recorded stat and not racily clean,
   is neither read nor hashed: its recorded sha256 and cached redacted blob stand for it), else
   the bytes are read and hashed (sha256); decoding shows bytes that are not UTF-8 as U+FFFD
   and CR-only line ends as LF, and the answer's header says how many of each. A file over
   ``MAX_FILE_BYTES`` (8 MiB) is refused (``READ_FILE_TOO_LARGE``) except by a ``lines:`` read,
   which streams it for just its ranges (``leanctx.ops.read_huge``: the header says
   ``streamed: over 8 MiB``; redaction and the cap apply as to any view; nothing is cached).
2. **the session's intent**: ``auto`` with neither ``intent`` nor ``task`` takes the task of the
   caller's session (``lean-ctx session task``; the session is ``session_id``, else
   ``default-<agent>`` as for the session verbs) as its intent; the reason and the header say so.
3. **content**: everything derived (redacted blob, views, token counts) is looked up by the
   content hash, so an unchanged file costs a stat and a few cache look-ups.
4. **redaction**: secrets are replaced (``leanctx.context.secrets.redact``; private key blocks
   keep their line count so line numbers still match the file) before anything is cached,
   archived or appended; the agent receives the redacted text unless it asked for ``raw``.
5. **view**: the read mode's rendering of the redacted text, through the view cache
   (``leanctx.cache.views``, keyed by content hash, mode and options, shared by every agent of
   the project). ``raw`` views are rendered from the real text and never cached.
6. **the cap** (``leanctx.ops.read_cap``): views that may not fit under the answer cap are
   archived (redacted) beforehand, with the running token counts of their lines, so that the
   handler can send their head and point at the rest. Every count is in the call's encoding
   spec, its correction factor applied (``cl100k_base*1.1``:
   ``leanctx.context.tokens.cumulative_tokens``).

``diff`` renders against the redacted text of the version this conversation last received
(its content hash from the ``deliveries`` projection, its text from the cache); without one,
the answer says so and sends the full content.

**Several paths**: every file that can be read is answered; a path that fails gets its own
entry (``leanctx.ops.read_failures.ReadFailure``: the line ``path: error[CODE] message`` and an
``error`` object) in its place, and only the files answered are recorded (one ``file.read`` each).
When every path failed the call raises (a single path keeps raising its own error), so the
CLI exits non-zero only then. A refused decision (``BUDGET_EXCEEDED``) still fails the call.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from typing import Any

from ..archive import ArchiveStore
from ..cache.views import Blob, View, ViewCache, options_key, views_for
from ..commands.read import (
    DEFAULT_CAP_TOKENS,
    MAX_PATHS,
    ReadAnswer,
    ReadFile,
    ReadView,
    RecordRead,
    check_cap,
    redact_keeping_lines,
)
from ..commands.sessions import session_of
from ..context.errors import ContextError
from ..context.modes import parse_ranges
from ..context.modes import read as render
from ..context.modes.auto import SESSION_TASK, intent_label
from ..context.modes.rendered import parse_footer
from ..context.tokens import DEFAULT_ENCODING, count_tokens
from ..errors import InvalidInput, LeanCtxError
from ..paths import PathRefused, workspace_root
from ..projections.deliveries import latest_delivery
from ..projections.sessions import get_session
from .read_cap import foresee_cap
from .read_failures import Failed, ReadFailure, all_failed, failure, path_of
from .read_huge import Streamed, render_streamed
from .read_load import (
    ALLOW_SECRETS_ENV,
    MAX_FILE_BYTES,
    Loaded,
    blob_of,
    decode_notes,
    load,
)

__all__ = ["ALLOW_SECRETS_ENV", "MAX_FILE_BYTES", "ReadAnswer", "ReadFailure", "read_files", "redact_keeping_lines"]

CAP_ENV = "LEAN_CTX_READ_MAX_TOKENS"
_MODE_NAMES = ("full", "map", "signatures", "lines", "diff", "aggressive", "entropy", "task", "auto")


def _cap_from_env() -> int:
    raw = os.environ.get(CAP_ENV)
    if not raw:
        return DEFAULT_CAP_TOKENS
    try:
        return int(raw)
    except ValueError:
        raise InvalidInput("READ_INVALID_CAP", f"${CAP_ENV} must be a whole number of tokens, not {raw!r}") from None


def _normalize_mode(mode: str) -> tuple[str, str]:
    """(mode name, argument), lower-cased name, checked against the known modes."""
    if not isinstance(mode, str) or not mode.strip():
        raise InvalidInput("READ_INVALID_MODE", f"name a read mode: one of {', '.join(_MODE_NAMES)}")
    name, colon, arg = mode.strip().partition(":")
    name, arg = name.strip().lower(), arg.strip()
    if name not in _MODE_NAMES:
        raise InvalidInput("READ_INVALID_MODE",
                           f"unknown read mode {mode!r}; use one of {', '.join(_MODE_NAMES)} (lines as lines:N-M)")
    if name == "lines" and not arg:
        raise InvalidInput("READ_INVALID_MODE", "lines mode needs ranges: use lines:N-M or lines:N-M,A-B")
    if colon and name != "lines":
        raise InvalidInput("READ_INVALID_MODE",
                           f"mode {name!r} takes no argument; use {name} alone, or lines:N-M for line ranges")
    return name, arg


def _context_error(exc: ContextError) -> InvalidInput:
    return InvalidInput(exc.code, exc.message)


# --- views -----------------------------------------------------------------------------


def _key(resolved: str, arg: str, line_count: int, *, task: str | None = None, intent: str | None = None) -> str:
    """The delivery key of a view: what a stub may stand for. ``task`` renderings depend on their
    task text, so their key carries its digest (``task:1a2b3c4d5e6f``): the same task re-read
    unchanged is a stub, another task is new content."""
    if resolved == "lines":
        return "lines:" + ",".join(f"{s}-{e}" for s, e in parse_ranges(arg, line_count))
    if resolved == "task":
        return "task:" + hashlib.sha256(f"{task or ''}\x00{intent or ''}".encode()).hexdigest()[:12]
    return resolved


def _render(path: str, text: str, mode: str, encoding: str, *, task: str | None, intent: str | None,
            old: str | None) -> View:
    try:
        r = render(path, text, mode, task=task, old_text=old, intent=intent)
    except ContextError as exc:
        raise _context_error(exc) from None
    return View(r.mode, r.text, r.line_count, r.shown_lines, r.omitted_lines, r.omitted, r.reason,
                count_tokens(r.text, encoding))


def _view(cache: ViewCache | None, sha: str, path: str, text: str, mode: str, encoding: str, *,
          task: str | None = None, intent: str | None = None, old_hash: str | None = None,
          old: str | None = None) -> View:
    name = mode.partition(":")[0]
    opts = options_key(
        task=task if name in ("task", "auto") else None,
        intent=intent if name == "auto" else None,
        old=old_hash if name in ("diff", "auto") else None,
        encoding=encoding,
    )
    if cache is not None:
        hit = cache.get_view(sha, mode, opts)
        if hit is not None:
            cache.touch_view(sha, mode, opts)
            return hit
    v = _render(path, text, mode, encoding, task=task if name in ("task", "auto") else None,
                intent=intent if name == "auto" else None, old=old if name in ("diff", "auto") else None)
    if cache is not None:
        cache.put_view(sha, mode, opts, v)
    return v


def _read_view(v: View, key: str, label: str, encoding: str, *, diff_base: str | None = None,
               notes: list[str] | None = None, more: Sequence[str] = (), reason: str | None = None,
               note: str | None = None) -> ReadView:
    """A sendable view. The mode's footer line (``[signatures · 120 lines · ...]``, always the
    last line of a non-full rendering, read back by ``parse_footer`` whatever the line count)
    moves into the answer's header, which states the mode and line count anyway; ``note``, when
    given, replaces the footer's; ``more`` is added to it (how the file was decoded, where auto's
    intent came from)."""
    body, tokens, detail = v.text, v.tokens, None
    if v.mode != "full":
        head, _, last = body.rpartition("\n")
        parsed = parse_footer(last)
        if parsed is not None:
            body, detail = head, parsed[2]
            tokens = count_tokens(body, encoding)
    detail = " · ".join(x for x in (note or detail, *more) if x) or None
    return ReadView(mode=key, label=label, body=body, tokens=tokens, diff_base=diff_base, notes=notes or [],
                    reason=reason or v.reason, detail=detail)


_UNSEEN = ("bytes changed that the text sent does not show (CR-only line ends read as LF, bytes that are"
           " not UTF-8, or a redacted secret)")


def _unseen(old: str | None, new: str) -> str | None:
    """The diff's note when the content hash changed but not the text a diff compares (decoded
    and redacted): never "no changes" for bytes that differ."""
    return _UNSEEN if old is not None and old == new else None


def _prepare(cache: ViewCache, f: Loaded, *, mode: str, task: str | None, intent: str | None, raw: bool,
             encoding: str, latest_hash: str | None, conv: bool,
             session_intent: bool = False) -> tuple[ReadFile, View, View | None]:
    """The file's candidate answer(s) and the redacted views behind them (for archiving).
    ``session_intent``: ``intent`` is the session's task (auto names it so)."""
    blob = blob_of(cache, f, encoding)
    name, arg = _normalize_mode(mode)
    requested = name if not arg else f"{name}:{arg}"
    body_text = f.text if raw and f.text is not None else blob.text
    decoded = decode_notes(f.stat)
    vcache = None if raw else cache
    rel = f.rel

    def view_of(m: str, **kw: Any) -> View:
        return _view(vcache, f.sha, rel, body_text, m, encoding, **kw)

    def redacted_of(m: str, **kw: Any) -> View:
        return _view(cache, f.sha, rel, blob.text, m, encoding, **kw)

    def mk(v: View, key: str, label: str, **kw: Any) -> ReadView:
        return _read_view(v, key, label, encoding, more=[*decoded, *kw.pop("more", ())], **kw)

    old_text = None
    if latest_hash is not None and latest_hash != f.sha and name in ("diff", "auto") and not raw:
        old_text = cache.blob_text(latest_hash)
    alt: ReadView | None = None
    alt_red: View | None = None
    if name == "diff":
        full = view_of("full")
        alt_red = redacted_of("full") if raw else full
        alt = mk(full, "full", "full")
        if raw:
            note = "raw content: diff needs the earlier raw text, which lean-ctx never keeps; full content sent"
            return _file(f, blob, requested, mk(full, "full", "full", notes=[f"[{note}]"])), alt_red, None
        if not conv or latest_hash is None:
            why = ("this read has no conversation (agent and session id)" if not conv
                   else "this conversation has not received this file before")
            rv = mk(full, "full", "full", notes=[f"[diff: {why}; full content sent]"])
            return _file(f, blob, requested, rv), full, None
        if latest_hash == f.sha:  # unchanged since the last delivery: the handler sends the stub
            v = redacted_of("diff", old_hash=f.sha, old=blob.text)
            rv = mk(v, "diff", f"diff vs {f.sha[:8]}", diff_base=f.sha)
            return _file(f, blob, requested, rv, alt), v, alt_red
        if old_text is None:
            gone = (f"[diff: the version this conversation received ({latest_hash[:8]}) is no longer cached;"
                    " full content sent]")
            rv = mk(full, "full", "full", notes=[gone])
            return _file(f, blob, requested, rv), full, None
        v = redacted_of("diff", old_hash=latest_hash, old=old_text)
        rv = mk(v, "diff", f"diff vs {latest_hash[:8]}", diff_base=latest_hash, note=_unseen(old_text, blob.text))
        return _file(f, blob, requested, rv, alt), v, alt_red
    if name == "auto":
        v = view_of("auto", task=task, intent=intent, old_hash=latest_hash if old_text is not None else None,
                    old=old_text)
        red = redacted_of("auto", task=task, intent=intent,
                          old_hash=latest_hash if old_text is not None else None, old=old_text) if raw else v
        label = f"auto→{v.mode}"
        said: dict[str, Any] = {}
        if session_intent and intent:  # say where the intent came from: the agent did not give one
            label_ = intent_label(intent, SESSION_TASK)
            why = (v.reason or "").replace(intent_label(intent), label_, 1)
            said = {"reason": f"no intent given: {why}"}
            if why.startswith(label_):  # the intent decided the mode: the header says so too
                said["more"] = [f"intent: {SESSION_TASK}"]
        if v.mode == "diff":
            full = view_of("full")
            alt = mk(full, "full", label.replace("diff", "full"), **said)
            rv = mk(v, "diff", f"auto→diff vs {latest_hash[:8] if latest_hash else ''}", diff_base=latest_hash,
                    note=_unseen(old_text, blob.text), **said)
            return _file(f, blob, requested, rv, alt), red, full
        key = _key(v.mode, "", blob.lines, task=task, intent=intent)
        return _file(f, blob, requested, mk(v, key, label, **said)), red, None
    m = name if name != "lines" else f"lines:{arg}"
    v = view_of(m, task=task)
    red = redacted_of(m, task=task) if raw else v
    key = _key(v.mode, arg, blob.lines, task=task)
    label = key if name != "task" else "task"
    return _file(f, blob, requested, mk(v, key, label)), red, None


def _prepare_streamed(f: Streamed, arg: str, *, raw: bool, encoding: str) -> tuple[ReadFile, View, None]:
    """A ``lines:`` read of a file over the read limit (``leanctx.ops.read_huge``)."""
    v, red, n = render_streamed(f, encoding, raw=raw)
    key = _key("lines", arg, f.lines)
    rv = _read_view(v, key, key, encoding, more=[*decode_notes(f.stat), f"streamed: over {MAX_FILE_BYTES >> 20} MiB"])
    return ReadFile(path=f.rel, content_hash=f.sha, lines=f.lines, raw_tokens=f.raw_tokens, redactions=n,
                    requested_mode=f"lines:{arg}", view=rv), red, None


def _file(f: Loaded, blob: Blob, requested: str, view: ReadView, alt: ReadView | None = None) -> ReadFile:
    return ReadFile(path=f.rel, content_hash=f.sha, lines=blob.lines, raw_tokens=blob.tokens,
                    redactions=blob.redactions, requested_mode=requested, view=view, alt=alt)


# --- the operation ---------------------------------------------------------------------


def read_files(
    lc: Any,
    paths: Sequence[str],
    *,
    mode: str = "auto",
    fresh: bool = False,
    task: str | None = None,
    intent: str | None = None,
    raw: bool = False,
    actor: str | None,
    session_id: str | None,
    project: str,
    now: float | None = None,
    cap_tokens: int | None = None,
    encoding: str = DEFAULT_ENCODING,
    surface: str = "tool",
) -> list[ReadAnswer]:
    """Read ``paths`` (relative to ``project``, or absolute inside it) in ``mode``; returns one
    answer per distinct path, in order: a ``ReadFailure`` (``mode="error"``, ``error`` set) for a
    path that could not be read while others could. Refusals raise ``LeanCtxError`` subclasses
    with stable codes (``READ_PATH_OUTSIDE_PROJECT``, ``READ_SECRET_FILE``, ``READ_NOT_FOUND``,
    ``READ_INVALID_MODE``, ``BUDGET_EXCEEDED``, ...) when the call itself is refused or no path
    could be read (``leanctx.ops.read_failures.all_failed``); nothing is recorded for a refused
    path, and a refused decision (budget) is recorded as a failed ``read.record`` call.
    ``surface`` (``"tool"`` or ``"cli"``) picks the re-read a stub names (``RecordRead.surface``)."""
    if isinstance(paths, str):
        paths = [paths]
    if not paths:
        raise InvalidInput("READ_NO_PATHS", "name at least one file to read")
    if len(paths) > MAX_PATHS:
        raise InvalidInput("READ_TOO_MANY_PATHS", f"read at most {MAX_PATHS} files per call, not {len(paths)}")
    _normalize_mode(mode)
    cap = _cap_from_env() if cap_tokens is None else cap_tokens
    check_cap(cap, "READ_INVALID_CAP")
    try:
        root = workspace_root(project, invalid_code="READ_INVALID_PROJECT")
    except PathRefused as exc:
        raise InvalidInput("READ_INVALID_PROJECT", exc.message) from None
    if not os.path.isdir(root):
        raise InvalidInput("READ_INVALID_PROJECT", f"the project root {root} is not a directory")
    cache = views_for(lc)
    entries: list[Loaded | Streamed | Failed] = []  # in the order asked, one per distinct path
    seen: set[str] = set()
    name, arg = _normalize_mode(mode)
    for p in paths:
        f: Loaded | Streamed | Failed
        try:
            f = load(p, root, cache, encoding=encoding, trust_stat=not (raw or fresh),
                     lines=arg if name == "lines" else None)
            key = f.rel
        except LeanCtxError as exc:
            key = path_of(p, exc)
            f = Failed(key, exc)
        if key not in seen:
            seen.add(key)
            entries.append(f)
    session_task = _session_task(lc, actor, session_id, project, root) if (
        name == "auto" and not intent and not task and any(isinstance(e, Loaded) for e in entries)) else None
    conv = bool(actor and session_id)
    conn = lc.projections.reader("deliveries") if conv else None
    files: list[ReadFile] = []
    redacted: list[tuple[View, View | None]] = []
    for i, e in enumerate(entries):
        if isinstance(e, Failed):
            continue
        latest = latest_delivery(conn, actor, session_id, e.rel, project=project) if conn is not None else None
        try:
            if isinstance(e, Streamed):
                rf, red, alt_red = _prepare_streamed(e, arg, raw=raw, encoding=encoding)
            else:
                rf, red, alt_red = _prepare(cache, e, mode=mode, task=task, intent=intent or session_task, raw=raw,
                                            encoding=encoding, latest_hash=latest.content_hash if latest else None,
                                            conv=conv, session_intent=session_task is not None)
        except LeanCtxError as exc:  # a lines: range past this file's end, ...
            entries[i] = Failed(e.rel, exc)
            continue
        files.append(rf)
        redacted.append((red, alt_red))
    failed = [e for e in entries if isinstance(e, Failed)]
    if not files:
        raise all_failed(failed)
    store = ArchiveStore.beside(lc.db)
    files = foresee_cap(files, redacted, cap, encoding, store, surface)
    cmd = RecordRead(files=files, fresh=fresh, raw=raw, cap_tokens=cap, encoding=encoding,
                     archive_root=str(store.root), surface=surface)
    res = lc.bus.dispatch(cmd, actor=actor, session_id=session_id, project=project, now=now)
    answers = iter(list(res.value))
    requested = name if not arg else f"{name}:{arg}"
    return [failure(e, requested, encoding) if isinstance(e, Failed) else next(answers) for e in entries]


def _session_task(lc: Any, actor: str | None, session_id: str | None, project: str, root: str) -> str | None:
    """The task of the caller's session (``session_id``, else ``default-<actor>``: where
    ``lean-ctx session task`` writes it), if it has one in this project."""
    if not (actor or session_id):
        return None
    sid = session_of(actor, session_id)
    s = get_session(lc.projections.reader("sessions"), sid)
    if s is None or not s.task or not s.task.strip() or (s.project and s.project not in (project, root)):
        return None
    return s.task.strip()
