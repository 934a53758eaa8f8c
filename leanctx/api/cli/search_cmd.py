"""``lean-ctx search``, ``lean-ctx tree`` and ``lean-ctx edit`` (top-level verbs).

``search`` and ``tree`` count tokens with ``$LEAN_CTX_MODEL`` (a model name or an encoding spec;
default ``o200k_base``); ``search.ran`` records it. ``tree`` has the defaults of ``ctx_tree``
(``ops.tree``) and archives a capped listing whole beside the log (``ops.tree.archived_tree``:
the notice names the ``lean-ctx expand ID --lines N-M`` that continues it; ``--json`` carries
``capped``, ``omitted_lines`` and ``archive_id``); only then is the log opened (created if need
be) to record that archive (``tree.record``, as ``$LEAN_CTX_AGENT_ID`` in
``$LEAN_CTX_SESSION_ID``): a listing that fits never touches the database."""

from __future__ import annotations

import os
import sys
from typing import Optional

import typer

from ...ops.tree import DEFAULT_DEPTH as TREE_DEFAULT_DEPTH
from ...ops.tree import DEFAULT_MAX_ENTRIES as TREE_DEFAULT_MAX_ENTRIES
from .app import State, state
from .common import JSON
from .render import emit_json, progress_bar

_SESSION_HELP = "Conversation id (default: $LEAN_CTX_SESSION_ID; none: this process is a conversation of its own)."


def _session(session: Optional[str]) -> Optional[str]:
    from ...identity import session_identity

    return session or session_identity()


def _path_arg(st: State, raw: str) -> str:
    """A relative path that exists from the working directory is made absolute, so that it is
    made relative to the project root (and jailed) by the operation."""
    t = raw
    if t and not os.path.isabs(t) and os.path.lexists(t):
        cwd = os.getcwd()
        if os.path.normpath(cwd) != os.path.normpath(st.project_root()):
            return os.path.join(cwd, t)
    return t


def search_cmd(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="Words, an identifier, or (with --regex) a pattern."),
    regex_: bool = typer.Option(False, "--regex", help="Regex only: every matching line, in path order."),
    bm25: bool = typer.Option(False, "--bm25", help="BM25 only: ranked chunks from the code index."),
    semantic: bool = typer.Option(False, "--semantic", help="Semantic only (needs the semantic extra: pip install 'lean-ctx\\[semantic]')."),
    limit: int = typer.Option(20, "--limit", "-n", help="Results shown (the rest is archived)."),
    path: Optional[str] = typer.Option(None, "--path", help="Only files matching this glob (e.g. 'src/*.py', '*.md')."),
    session: Optional[str] = typer.Option(None, "--session", help=_SESSION_HELP),
    json_: bool = JSON,
) -> None:
    """Search the project: BM25 + regex fused by RRF (+ semantic when installed); path:line: snippet."""
    from ...errors import InvalidInput
    from ...identity import agent_identity
    from ...ops.search import search
    from ..tools.context import encoding_of

    st = state(ctx)
    chosen = [m for m, on in (("regex", regex_), ("bm25", bm25), ("semantic", semantic)) if on]
    if len(chosen) > 1:
        raise InvalidInput("SEARCH_METHOD_CONFLICT", "pick one of --regex, --bm25, --semantic (or none: fused)")
    lc = st.open()
    with progress_bar("indexing", st.progress and not st.want_json(json_) and sys.stderr.isatty()) as progress:
        ans = search(lc, st.project_root(), query, method=chosen[0] if chosen else "auto", limit=limit, glob=path,
                     actor=agent_identity(), session_id=_session(session), encoding=encoding_of(), progress=progress)
    if st.want_json(json_):
        emit_json(ans)
        return
    sys.stdout.write(ans.text if ans.text.endswith("\n") else ans.text + "\n")


def tree_cmd(
    ctx: typer.Context,
    path: Optional[str] = typer.Argument(None, help="A folder of the project (default: the project root)."),
    depth: int = typer.Option(TREE_DEFAULT_DEPTH, "--depth", "-d",
                              help="Levels to expand; deeper folders show their file count."),
    max_entries: int = typer.Option(TREE_DEFAULT_MAX_ENTRIES, "--max-entries",
                                    help="Entries shown per folder before '… N more'."),
    json_: bool = JSON,
) -> None:
    """A compact, gitignore-aware listing with file counts per folder (a capped one is archived: lean-ctx expand)."""
    from pathlib import Path

    from ...config import db_path
    from ...identity import agent_identity
    from ...ops.tree import archived_tree
    from ..tools.context import encoding_of

    st = state(ctx)
    as_json = st.want_json(json_)  # the cap then holds for the JSON, entries included
    root = st.project_root()
    db = db_path(st.db, root=None if st.db else Path(root))  # the log State.open() would open: not opened here
    ans = archived_tree(db, root, _path_arg(st, path) if path else None, depth=depth, max_entries=max_entries,
                        encoding=encoding_of(), as_json=as_json, open_log=st.open, actor=agent_identity(),
                        session_id=_session(None), project=root)
    if as_json:
        emit_json(ans)
        return
    sys.stdout.write(ans.text)


def _text(value: Optional[str], file: Optional[str], what: str) -> str:
    from ...errors import InvalidInput

    if (value is None) == (file is None):
        raise InvalidInput("EDIT_INVALID_INPUT", f"give the {what} text once: --{what} TEXT or --{what}-file FILE")
    if value is not None:
        return value
    assert file is not None
    try:
        if file == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(file, "rb") as fh:
                data = fh.read()
    except OSError as exc:
        raise InvalidInput("EDIT_INVALID_INPUT", f"cannot read --{what}-file {file}: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput("EDIT_INVALID_INPUT", f"--{what}-file {file} is not UTF-8 text") from None


def edit_cmd(
    ctx: typer.Context,
    path: str = typer.Argument(..., help="The file to change (relative to the project root or the working directory)."),
    old: Optional[str] = typer.Option(None, "--old", help="The exact text to replace (must occur once, unless --all)."),
    new: Optional[str] = typer.Option(None, "--new", help="The text to put in its place (may be empty)."),
    old_file: Optional[str] = typer.Option(None, "--old-file", help="Read the old text from this file ('-': stdin)."),
    new_file: Optional[str] = typer.Option(None, "--new-file", help="Read the new text from this file ('-': stdin)."),
    all_: bool = typer.Option(False, "--all", help="Replace every occurrence."),
    allow_unread: bool = typer.Option(
        False, "--allow-unread", help="Allow editing a file this agent never read through lean-ctx."),
    session: Optional[str] = typer.Option(None, "--session", help=_SESSION_HELP),
    json_: bool = JSON,
) -> None:
    """Replace old text with new text, atomically; refused if the file changed since you read it."""
    from ...errors import InvalidInput
    from ...identity import agent_identity
    from ...ops.edit import edit_file

    st = state(ctx)
    if old_file == "-" and new_file == "-":
        raise InvalidInput("EDIT_INVALID_INPUT", "only one of --old-file and --new-file can read stdin")
    old_text = _text(old, old_file, "old")
    new_text = _text(new, new_file, "new")
    lc = st.open()
    res = edit_file(lc, st.project_root(), _path_arg(st, path), old_text, new_text, replace_all=all_,
                    allow_unread=allow_unread, actor=agent_identity(), session_id=_session(session))
    if st.want_json(json_):
        emit_json(res)
        return
    sys.stdout.write(res.text + "\n")


def attach(app: typer.Typer) -> None:
    app.command("search")(search_cmd)
    app.command("tree")(tree_cmd)
    app.command("edit")(edit_cmd)
