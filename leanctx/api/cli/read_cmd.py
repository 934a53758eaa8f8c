"""``lean-ctx read PATH...``: read files compressed, as an agent would through ctx_read.

Token counts use ``$LEAN_CTX_MODEL`` (a model name such as ``gemini-2.5-pro``, or an encoding
spec such as ``cl100k_base*1.1``; default ``o200k_base``); ``file.read`` records it.

An unchanged re-read in the same conversation (``--session``, else ``$LEAN_CTX_SESSION_ID``) is
answered with the stub, which names this verb's way to re-read: ``--fresh`` (the tool's stub,
over MCP, HTTP and ``lean-ctx call``, names ``fresh=true``).

``--json`` prints one object per file, and all of them together stay within the answer cap
(``--max-tokens``, else ``$LEAN_CTX_READ_MAX_TOKENS``, else 20,000): the text is capped lower to
leave room for JSON escaping (measured on the files beforehand: ``leanctx.api.cli.json_cap``).

Exit status: 0 when every path was read; 2 (the CLI's status for an error) when any failed. A
read where only some paths failed still prints every answer, in order: the failed ones as
``PATH: error[CODE] sentence`` (``--json``: an object whose ``mode`` is ``error`` and whose
``error`` holds ``code``, ``message`` and ``details``, ``leanctx.ops.read_failures``). When all
failed the read is refused whole, as a single path is (``error[CODE]`` on stderr)."""

from __future__ import annotations

import os
import sys
from typing import Optional

import typer

from .app import State, state
from .render import emit_json

_MODE_HELP = ("full, map, signatures, lines:N-M[,A-B], diff, aggressive, entropy, task (with --task) or auto "
              "(picked from size, type and --intent, else the session's task).")


def _path(st: State, p: str) -> str:
    """A relative path that exists from the working directory is made absolute (the operation
    makes it relative to the project root again); anything else is taken relative to the root."""
    if p and not os.path.isabs(p) and os.path.lexists(p):
        cwd = os.getcwd()
        if os.path.normpath(cwd) != os.path.normpath(st.project_root()):
            return os.path.join(cwd, p)
    return p


def _json_cap(st: State, paths: list[str], max_tokens: int | None, encoding: str) -> tuple[int | None, int | None]:
    """(the text cap to ask for, the cap of the JSON printed) for ``--json``; (``max_tokens``,
    None) when the cap is not a usable number (the operation then refuses it)."""
    from ...commands.read import DEFAULT_CAP_TOKENS, MAX_CAP_TOKENS, MIN_CAP_TOKENS
    from ...ops.read import CAP_ENV
    from .json_cap import SCAN_CHARS, text_cap

    cap: object = max_tokens
    if cap is None:
        try:
            cap = int(os.environ.get(CAP_ENV) or DEFAULT_CAP_TOKENS)
        except ValueError:
            return max_tokens, None
    if not isinstance(cap, int) or not MIN_CAP_TOKENS <= cap <= MAX_CAP_TOKENS:
        return max_tokens, None
    root = os.path.realpath(st.project_root())
    sources: list[str] = []
    for p in paths:  # only files inside the project: what the operation may read
        full = os.path.realpath(p if os.path.isabs(p) else os.path.join(root, p))
        if full.startswith(root.rstrip(os.sep) + os.sep) and os.path.isfile(full):
            try:
                with open(full, "rb") as f:
                    sources.append(f.read(SCAN_CHARS).decode("utf-8", "replace"))
            except OSError:
                pass
    lowered = text_cap(cap, encoding=encoding, sources=sources, answers=len(paths), extra=paths)
    if len(paths) > 1 and lowered < _naming_tokens(paths, encoding):
        # the JSON envelopes of many files leave the text too little room even to name each file
        # (the operation would refuse the read: READ_CAP_TOO_SMALL); their text gets the whole
        # cap instead, and the JSON printed over it says so (JSON_OVER_CAP)
        return cap, cap
    return lowered, cap


def _naming_tokens(paths: list[str], encoding: str) -> int:
    """About what a read's text needs to name each of ``paths`` as not sent (``F7=src/b.py
    [aggressive · 147 lines · 877 tokens not sent]``, ~20 tokens besides the path) and its
    closing note (~60)."""
    from ...context.tokens import count_tokens

    return sum(count_tokens(p, encoding) + 20 for p in paths) + 60


def read_cmd(
    ctx: typer.Context,
    paths: list[str] = typer.Argument(
        ..., help="Files to read (relative to the working directory or the project root)."
    ),
    mode: str = typer.Option("auto", "--mode", "-m", help=_MODE_HELP),
    fresh: bool = typer.Option(False, "--fresh", help="Send the content even if this conversation already has it."),
    task: Optional[str] = typer.Option(None, "--task", help="What you are doing (task mode keeps the relevant lines)."),
    intent: Optional[str] = typer.Option(None, "--intent", help="Why you read (auto mode uses it to pick a mode; default: the session's task)."),
    session: Optional[str] = typer.Option(
        None, "--session", help="Conversation id (default $LEAN_CTX_SESSION_ID; without one, never a stub)."
    ),
    raw: bool = typer.Option(False, "--raw", help="Send secrets unredacted (never cached, archived or logged)."),
    max_tokens: Optional[int] = typer.Option(
        None, "--max-tokens", help="Cap on the tokens of the whole answer (default 20000, $LEAN_CTX_READ_MAX_TOKENS)."
    ),
    json_: bool = typer.Option(False, "--json", help="Print one JSON object per file."),
) -> None:
    """Read files compressed: mode, line count and tokens sent are stated; unchanged re-reads in
    the same conversation get a short stub; past the cap the rest is archived."""
    from ...errors import LeanCtxError
    from ...identity import agent_identity, session_identity
    from ...ops.read import read_files
    from ...ops.read_failures import ReadFailure
    from ..tools.context import encoding_of

    st = state(ctx)
    lc = st.open()
    enc = encoding_of()
    wanted = [_path(st, p) for p in paths]
    as_json = st.want_json(json_)
    json_cap = None
    if as_json:
        max_tokens, json_cap = _json_cap(st, wanted, max_tokens, enc)
    answers = read_files(
        lc,
        wanted,
        mode=mode,
        fresh=fresh,
        task=task,
        intent=intent,
        raw=raw,
        actor=agent_identity(),
        session_id=session or session_identity(),
        project=st.project_root(),
        cap_tokens=max_tokens,
        encoding=enc,
        surface="cli",  # its stubs say --fresh, the option that re-reads here
    )
    if as_json:
        if json_cap is None:
            for a in answers:
                emit_json(a)
        else:
            from .json_cap import emit_capped

            emit_capped(list(answers), json_cap, enc)
    else:
        sys.stdout.write("\n\n".join(a.text for a in answers) + "\n")
    if any(isinstance(a, ReadFailure) for a in answers):  # some paths failed (all: read_files raised)
        sys.stdout.flush()
        raise typer.Exit(LeanCtxError.exit_code)


def attach(app: typer.Typer) -> None:
    app.command("read")(read_cmd)
