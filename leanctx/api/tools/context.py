"""Context-engine tools: ``ctx_read``, ``ctx_shell``, ``ctx_search``, ``ctx_tree``, ``ctx_edit``,
``ctx_expand`` — thin wrappers over ``leanctx.ops``, acting as the caller in its session.

**Token counts** (read, shell, search, tree, expand) use the caller's encoding spec: an MCP session's
(its client's name or ``$LEAN_CTX_MODEL``: ``leanctx.api.mcp_session``), else, for callers
without a session (HTTP ``/v1/tools``, ``lean-ctx call``), ``$LEAN_CTX_MODEL`` or the default
``o200k_base``. The events record the spec that counted (their ``encoding`` field).

**ctx_shell** runs ``command`` (a string, with ``bash -c``) or ``argv`` (a list, run directly):
exactly one of them (``SHELL_COMMAND_AND_ARGV`` when both, ``SHELL_EMPTY_COMMAND`` when
neither, or when it is blank, an empty argv or one whose program is empty: :func:`check_shell_target`,
shared with the HTTP ``POST /v1/context/shell``). ``env`` is what ``lean-ctx shell --env`` takes: ``NAME=VALUE`` items added to (or
overriding) the environment the command inherits from the server (``SHELL_INVALID_ENV``
otherwise). ``timeout`` defaults to ``DEFAULT_SHELL_TIMEOUT`` = 120 s, the default of the HTTP
``POST /v1/context/shell`` too (and of Claude Code's own Bash tool), at most
``MAX_SHELL_TIMEOUT`` = 600 s (``SHELL_INVALID_TIMEOUT``); past it the process group is killed
and the exit code is 124. ``cwd`` must stay inside the project (:func:`shell_cwd`, shared with
the HTTP ``POST /v1/context/shell``): ``..`` that climbs out, an absolute path elsewhere or a
symlink resolving outside is refused with ``SHELL_CWD_OUTSIDE_PROJECT``.

**ctx_tree** takes the defaults of ``ops.tree`` (``depth`` 2, ``max_entries`` 40: those of HTTP
``/v1/context/tree`` and ``lean-ctx tree`` too) and answers through ``ops.tree.archived_tree``:
a capped listing is archived whole, the archive recorded as the caller (``tree.record``:
``archive.created`` with source ``tree``, once per archive), and its notice names the ``lean-ctx
expand ID --lines N-M`` that continues it; the result always carries ``capped``,
``omitted_lines`` and ``archive_id`` (:func:`tree_result`).
"""

from __future__ import annotations

import math
import os
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from ...errors import InvalidInput
from ...ops.tree import DEFAULT_DEPTH as TREE_DEFAULT_DEPTH
from ...ops.tree import DEFAULT_MAX_ENTRIES as TREE_DEFAULT_MAX_ENTRIES
from ..registry import Caller, tool

DEFAULT_SHELL_TIMEOUT = 120.0  # seconds; leanctx.api.http.context imports both
MAX_SHELL_TIMEOUT = 600.0


class _Args(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    pass


def _without(value: Any, *keys: str) -> dict[str, Any]:
    d = msgspec.to_builtins(value)
    return {k: v for k, v in d.items() if k not in keys and v not in (None, [], {})}


def encoding_of(caller: Caller | None = None) -> str:
    """The encoding spec of the caller's counts: its MCP session's, else ``$LEAN_CTX_MODEL``'s,
    else the default (see the module doc). No caller: a surface without sessions (the CLI
    verbs, HTTP ``/v1/context/*``)."""
    from ...context.errors import ContextError
    from ...context.tokens import tokenizer_for

    try:
        spec = getattr(caller.toolset, "encoding", None) if caller is not None else None
        return spec if isinstance(spec, str) else tokenizer_for(None).spec
    except ContextError as exc:  # a $LEAN_CTX_MODEL spec it cannot use
        raise InvalidInput(exc.code, f"$LEAN_CTX_MODEL: {exc.message}") from None


def env_pairs(items: list[str], *, option: str = "env takes NAME=VALUE items") -> dict[str, str]:
    """``NAME=VALUE`` items as a mapping: the one rule for ``lean-ctx shell --env``, MCP and HTTP."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name or not name.replace("_", "a").isalnum() or name[0].isdigit():
            raise InvalidInput("SHELL_INVALID_ENV", f"{option} (e.g. RUST_LOG=debug), not {item!r}")
        out[name] = value
    return out


EMPTY_COMMAND_MESSAGE = ('nothing to run: give a command line (a string run with bash -c, e.g. "git status") or an'
                         ' argv (a list run directly, e.g. ["git", "status"])')


def check_shell_target(target: str | list[str] | None) -> str | list[str]:
    """The command to run, or ``SHELL_EMPTY_COMMAND`` when there is none: no command, a blank
    string, an empty argv or an argv whose program is empty (MCP and HTTP; the message names no
    surface's syntax). Empty arguments after the program are arguments like any other."""
    if not target or (isinstance(target, str) and not target.strip()) or (isinstance(target, list) and not target[0]):
        raise InvalidInput("SHELL_EMPTY_COMMAND", EMPTY_COMMAND_MESSAGE)
    return target


def check_shell_timeout(timeout: float) -> None:
    """Above 0 and at most ``MAX_SHELL_TIMEOUT`` seconds (``SHELL_INVALID_TIMEOUT``): MCP and HTTP."""
    if not (math.isfinite(timeout) and 0 < timeout <= MAX_SHELL_TIMEOUT):
        raise InvalidInput("SHELL_INVALID_TIMEOUT", f"timeout must be above 0 and at most {MAX_SHELL_TIMEOUT:g} seconds")


def _is_root(root: str, cwd: str) -> bool:
    try:
        return os.path.realpath(os.path.join(root, cwd)) == root
    except (ValueError, OSError):  # a NUL byte, ...
        return False


def shell_cwd(project: str, cwd: str | None) -> str:
    """The directory a shell command runs in: the project root when ``cwd`` is empty or ``.``,
    else ``cwd`` (relative to the root, or absolute) resolved inside it, symlinks followed.
    Refused: a path that leaves the project (``..`` climbing out, an absolute path elsewhere, a
    symlink resolving outside: ``SHELL_CWD_OUTSIDE_PROJECT``) or a malformed one
    (``SHELL_INVALID_CWD``). Used by MCP ``ctx_shell`` and HTTP ``POST /v1/context/shell``."""
    from ...paths import PathRefused, normalize, workspace_root

    try:
        root = workspace_root(project, invalid_code="SHELL_INVALID_CWD")
    except PathRefused as exc:
        raise InvalidInput(exc.code, exc.message) from None
    if cwd is None or cwd.strip() in ("", "."):
        return root
    try:
        rel = normalize(cwd, root, invalid_code="SHELL_INVALID_CWD", outside_code="SHELL_CWD_OUTSIDE_PROJECT",
                        allow_root=True)
    except PathRefused as exc:
        if exc.code == "SHELL_INVALID_CWD" and _is_root(root, cwd):
            return root  # a symlink to the project root: the root itself is a fine cwd
        raise InvalidInput(exc.code, exc.message.replace("workspace", "project")) from None
    return os.path.join(root, rel.path) if rel.path != "." else root


# --- ctx_read ------------------------------------------------------------------------------


class ReadArgs(_Args):
    paths: list[str]
    mode: Annotated[str, Meta(description="auto|full|map|signatures|lines:N-M|diff|aggressive|entropy|task")] = "auto"
    fresh: bool = False
    task: Annotated[str | None, Meta(description="what you are doing (task mode)")] = None
    intent: str | None = None
    max_tokens: int | None = None


@tool("ctx_read", category="core", args=ReadArgs, description="""
Read project files, compressed by mode. An unchanged re-read in this session returns a short stub
(fresh=true resends).""")
def ctx_read(lc: Any, caller: Caller, a: ReadArgs) -> dict[str, Any]:
    from ...ops.read import read_files

    answers = read_files(lc, a.paths, mode=a.mode, fresh=a.fresh, task=a.task, intent=a.intent,
                         actor=caller.agent_id, session_id=caller.session_id, project=caller.project,
                         cap_tokens=a.max_tokens, encoding=encoding_of(caller))
    return {"text": "\n\n".join(x.text for x in answers), "files": [_without(x, "text") for x in answers]}


# --- ctx_shell -----------------------------------------------------------------------------


class ShellArgs(_Args):
    command: Annotated[str | None, Meta(description="run with bash -c (or give argv)")] = None
    argv: Annotated[list[str] | None, Meta(description="run directly, no shell (instead of command)")] = None
    cwd: Annotated[str | None, Meta(description="relative to the project root")] = None
    timeout: Annotated[float, Meta(description=f"seconds, at most {MAX_SHELL_TIMEOUT:g}")] = DEFAULT_SHELL_TIMEOUT
    env: Annotated[list[str], Meta(description="NAME=VALUE added to the environment")] = []
    raw: bool = False
    max_tokens: int | None = None


@tool("ctx_shell", category="core", args=ShellArgs, exec_when=True, description="""
Run a shell command in the project; output compressed and secrets redacted, omitted lines
archived (ctx_expand).""")
def ctx_shell(lc: Any, caller: Caller, a: ShellArgs) -> dict[str, Any]:
    from ...ops.shell import run_shell

    if a.command is not None and a.argv is not None:
        raise InvalidInput("SHELL_COMMAND_AND_ARGV", "give command (a string run with bash -c) or argv (a list run"
                           " directly), not both")
    target = check_shell_target(a.command if a.command is not None else a.argv)
    check_shell_timeout(a.timeout)
    env = env_pairs(a.env)
    cwd = shell_cwd(caller.project, a.cwd)
    r = run_shell(lc, target, cwd=cwd, timeout=a.timeout, env_passthrough=env, raw=a.raw, actor=caller.agent_id,
                  session_id=caller.session_id, project=caller.project, encoding=encoding_of(caller),
                  **({"cap_tokens": a.max_tokens} if a.max_tokens is not None else {}))
    return {"text": r.text, **_without(r, "text", "command", "encoding"), "exit_code": r.exit_code}


# --- ctx_search ----------------------------------------------------------------------------


class SearchArgs(_Args):
    query: str
    method: Annotated[str, Meta(description="auto|regex|bm25|semantic")] = "auto"
    limit: int = 20
    glob: Annotated[str | None, Meta(description="only paths matching, e.g. src/*.py")] = None


@tool("ctx_search", category="core", args=SearchArgs, description="""
Search the project (bm25 + regex, fused); answers path:line: snippet.""")
def ctx_search(lc: Any, caller: Caller, a: SearchArgs) -> dict[str, Any]:
    from ...ops.search import search

    ans = search(lc, caller.project, a.query, method=a.method, limit=a.limit, glob=a.glob, actor=caller.agent_id,
                 session_id=caller.session_id, encoding=encoding_of(caller))
    out = _without(ans, "text", "index", "hits")
    out["hits"] = [{"path": h.path, "line": h.line} for h in ans.hits]
    return {"text": ans.text, **out}


# --- ctx_tree ------------------------------------------------------------------------------


class TreeArgs(_Args):
    path: str | None = None
    depth: int = TREE_DEFAULT_DEPTH
    max_entries: int = TREE_DEFAULT_MAX_ENTRIES


@tool("ctx_tree", category="core", args=TreeArgs, description="Project tree with file counts per folder (gitignore-aware).")
def ctx_tree(lc: Any, caller: Caller, a: TreeArgs) -> dict[str, Any]:
    from ...ops.tree import archived_tree

    t = archived_tree(lc.db, caller.project, a.path, depth=a.depth, max_entries=a.max_entries,
                      encoding=encoding_of(caller), open_log=lambda: lc, actor=caller.agent_id,
                      session_id=caller.session_id, project=caller.project)
    return tree_result(t)


def tree_result(t: Any) -> dict[str, Any]:
    """The structured result of ``ctx_tree`` (a ``TreeAnswer`` without its entries): what was
    cut (``capped``, ``omitted_lines``) and where the whole listing is (``archive_id``) always
    named, null or not."""
    return {"text": t.text, "root": t.root, "files": t.files, "dirs": t.dirs, "links": t.links, "depth": t.depth,
            "capped": t.capped, "omitted_lines": t.omitted_lines, "archive_id": t.archive_id,
            "next_path": t.next_path}


# --- ctx_edit ------------------------------------------------------------------------------


class EditArgs(_Args):
    path: str
    old: str
    new: str
    replace_all: bool = False
    allow_unread: bool = False


@tool("ctx_edit", category="core", args=EditArgs, exec_when=True, description="""
Replace old text with new in a file you have read (old must occur once unless replace_all).""")
def ctx_edit(lc: Any, caller: Caller, a: EditArgs) -> dict[str, Any]:
    from ...ops.edit import edit_file

    r = edit_file(lc, caller.project, a.path, a.old, a.new, replace_all=a.replace_all, allow_unread=a.allow_unread,
                  actor=caller.agent_id, session_id=caller.session_id)
    return {"text": r.text, **_without(r, "text")}


# --- ctx_expand ----------------------------------------------------------------------------


class ExpandArgs(_Args):
    archive_id: str
    head: int | None = None
    tail: int | None = None
    lines: Annotated[str | None, Meta(description="A-B")] = None
    grep: Annotated[str | None, Meta(description="regex")] = None
    max_tokens: int | None = None


@tool("ctx_expand", category="core", args=ExpandArgs, description="""
Show archived output left out of an answer: whole, head, tail, lines or grep. A notice's
"lean-ctx expand ID --lines A-B" is ctx_expand(archive_id=ID, lines="A-B").""")
def ctx_expand(lc: Any, caller: Caller, a: ExpandArgs) -> dict[str, Any]:
    from ...ops.shell import expand

    e = expand(lc, a.archive_id, a.head, a.tail, a.lines, a.grep, max_tokens=a.max_tokens, actor=caller.agent_id,
               session_id=caller.session_id, project=caller.project, encoding=encoding_of(caller))
    return {"text": e.text, **_without(e, "text")}
