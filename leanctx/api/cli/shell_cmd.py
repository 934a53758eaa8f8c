"""``lean-ctx shell``, ``lean-ctx compress`` and ``lean-ctx expand`` (top-level verbs).

``lean-ctx shell [--cwd D] [--timeout S] [--raw] [--env NAME=VALUE] [--max-tokens N] [--json] -- CMD...``
runs CMD (several words: an argv; one word: a string for ``bash -c``), prints its compressed,
secret-redacted output and exits with CMD's exit code (124 on a timeout). SIGTERM or SIGHUP to
lean-ctx while CMD runs kills CMD's process group (as a timeout does, ``leanctx.ops.process``); the
answer says so, the run is recorded, and the exit code is 128 + N (143, 129). Ctrl-C kills it too.

``--max-tokens N`` is ``ctx_shell``'s ``max_tokens``: the answer cap (default 20,000; past it the
rest is archived and the answer names the ``lean-ctx expand`` that gets it), refused outside
200..24,000 with ``SHELL_INVALID_CAP`` (exit 2) before CMD runs, by the one rule of every answer cap
(``leanctx.commands.read.check_cap``).

**Where CMD runs** stays inside the project, as over MCP and HTTP (the same check,
``leanctx.api.tools.context.shell_cwd``, the same refusal: ``SHELL_CWD_OUTSIDE_PROJECT``, exit 2,
``{"error": {...}}`` with ``--json``, and CMD does not run): a ``--cwd`` that climbs out with
``..``, an absolute path elsewhere or a symlink resolving outside is refused. The base directory
is the current one when it is inside the project (always, unless ``--project`` names another
tree): no ``--cwd`` runs CMD there and a relative ``--cwd`` is taken from there. When the current
directory is outside the project (``--project`` elsewhere), the base is the project root, as
for ``ctx_shell``: no ``--cwd`` runs CMD in the project root, a relative one is taken from it.

Token counts (shell, compress, expand) use ``$LEAN_CTX_MODEL`` (a model name such as
``gemini-2.5-pro``, or an encoding spec such as ``cl100k_base*1.1``; default ``o200k_base``);
the events record it in their ``encoding`` field.

``--json``: shell prints every field ``ctx_shell`` returns (``capped`` and ``capped_archive_id``
included; null ones too) plus ``command``; compress prints the same minus the run's fields
(exit code, duration, timeout, capture, command); expand prints the ``Expansion``. That JSON
stays within the answer cap the plain answer has (shell, expand: ``--max-tokens``, else 20,000): the
text is capped lower to leave room for JSON escaping (``leanctx.api.cli.json_cap``: measured on
the captured output or the archive beforehand; shell assumes 1.5× as its output is not known yet).
"""

from __future__ import annotations

import sys
from typing import Optional

import typer

from ...commands.read import DEFAULT_CAP_TOKENS as ANSWER_CAP_TOKENS
from ...commands.read import MAX_CAP_TOKENS, MIN_CAP_TOKENS, check_cap
from ...errors import InvalidInput
from .app import state
from .common import JSON

SESSION = typer.Option(
    None, "--session", envvar="LEAN_CTX_SESSION_ID",
    help="Conversation id (default: $LEAN_CTX_SESSION_ID; none: this process is a conversation of its own).",
)


def _who(st, session: Optional[str]) -> dict:  # type: ignore[no-untyped-def]
    from ...identity import agent_identity
    from ..tools.context import encoding_of

    return {"actor": agent_identity(), "session_id": session or None, "project": st.project_root(),
            "encoding": encoding_of()}


def _env_pairs(items: list[str]) -> dict[str, str]:
    from ..tools.context import env_pairs

    return env_pairs(items, option="--env takes NAME=VALUE")


_SHELL_KEYS = ("exit_code", "raw_tokens", "sent_tokens", "text", "archive_id", "pattern", "omitted_lines",
               "duration_ms", "redactions", "timed_out", "captured", "budget_warning", "command")
_COMPRESS_KEYS = ("raw_tokens", "sent_tokens", "text", "archive_id", "pattern", "omitted_lines", "redactions",
                  "budget_warning", "capped", "capped_archive_id")


def _cli_cwd(project: str, cwd: str | None) -> str:
    """The directory CMD runs in (see the module doc), checked by ``shell_cwd``."""
    import os

    from ..tools.context import shell_cwd

    root = shell_cwd(project, None)  # the real project root (SHELL_INVALID_CWD when it is malformed)
    try:
        here = os.path.realpath(os.getcwd())
    except OSError:  # the current directory was removed: the project root is the base
        here = root
    base = os.path.relpath(here, root) if here == root or here.startswith(root.rstrip(os.sep) + os.sep) else "."
    if cwd is None or cwd == "":
        return shell_cwd(project, base)
    if os.path.isabs(cwd) or base == ".":
        return shell_cwd(project, cwd)
    return shell_cwd(project, base + "/" + cwd)  # refusals then name the path from the root, e.g. src/../..


def _shell_json(r, keys: tuple[str, ...] = _SHELL_KEYS) -> dict:  # type: ignore[no-untyped-def]
    """The ``--json`` of shell (every field of ``ShellResult``, as ``ctx_shell`` returns them, but
    ``encoding``; none left out when null) or of compress (``_COMPRESS_KEYS``)."""
    import msgspec

    d = msgspec.to_builtins(r)
    out = {k: d[k] for k in keys}
    if keys is _SHELL_KEYS:
        out.update((k, v) for k, v in d.items() if k not in out and k != "encoding")
    return out


def _text_cap(as_json: bool, encoding: str, sources: list[str] | None, extra: list[str],
              cap: int = ANSWER_CAP_TOKENS) -> int:
    """The text cap to ask for: the answer cap, or with ``--json`` less (``json_cap.text_cap``)."""
    if not as_json:
        return cap
    from .json_cap import text_cap

    return text_cap(cap, encoding=encoding, sources=sources, extra=extra)


def _archive_text(lc, archive_id: str) -> list[str] | None:  # type: ignore[no-untyped-def]
    """The archive's text to measure, or None when it cannot be read (``expand`` then says why)."""
    from ...archive import ArchiveStore
    from ...errors import LeanCtxError

    try:
        return [ArchiveStore.beside(lc.db).get(archive_id.strip())]
    except (LeanCtxError, OSError, ValueError):
        return None


def _emit(value, encoding: str, cap: int | None = ANSWER_CAP_TOKENS) -> None:  # type: ignore[no-untyped-def]
    from .json_cap import emit_capped
    from .render import emit_json

    if cap is None:
        emit_json(value)
    else:
        emit_capped([value], cap, encoding)


def shell_cmd(
    ctx: typer.Context,
    command: list[str] = typer.Argument(
        ..., help="The command, after `--`: several words are run as an argv; one word is a string run with bash -c."
    ),
    cwd: Optional[str] = typer.Option(
        None, "--cwd", help="Run in this directory, inside the project (default: the current one; the project root"
        " when the current one is outside it). Relative to the same."
    ),
    timeout: Optional[float] = typer.Option(
        None, "--timeout", help="Seconds; past them the command's process group is killed and the exit code is 124."
    ),
    raw: bool = typer.Option(False, "--raw", help="Send the output uncompressed (secrets are still redacted)."),
    env: list[str] = typer.Option(
        [], "--env", help="NAME=VALUE added to the command's environment (repeatable)."
    ),
    max_tokens: Optional[int] = typer.Option(
        None, "--max-tokens", help=f"Cap on the tokens of the answer ({MIN_CAP_TOKENS}-{MAX_CAP_TOKENS}, default"
        f" {ANSWER_CAP_TOKENS}); past it the rest is archived for `lean-ctx expand`."
    ),
    session: Optional[str] = SESSION,
    json_: bool = JSON,
) -> None:
    """Run a command; print its compressed output (omissions name an archive id for `lean-ctx expand`) and exit with its code.

    Standard input, when it is not a terminal (a pipe, a file), is the command's standard input."""
    from ...ops.shell import run_shell

    st = state(ctx)
    workdir = _cli_cwd(st.project_root(), cwd)  # refused before anything runs or is opened
    env_passthrough = _env_pairs(env)
    answer_cap = ANSWER_CAP_TOKENS if max_tokens is None else max_tokens
    check_cap(answer_cap, "SHELL_INVALID_CAP")  # ctx_shell's refusal, before the --json text cap is derived
    lc = st.open()
    target: str | list[str] = command[0] if len(command) == 1 else list(command)
    try:
        piped = None if sys.stdin is None or sys.stdin.isatty() else sys.stdin.fileno()
    except (OSError, ValueError):  # closed or detached: the command reads an empty input
        piped = None
    who = _who(st, session)
    as_json = st.want_json(json_)
    cap = _text_cap(as_json, who["encoding"], None, [" ".join(command)], cap=answer_cap)
    r = run_shell(lc, target, cwd=workdir, timeout=timeout, env_passthrough=env_passthrough, raw=raw, stdin=piped,
                  cap_tokens=cap, **who)
    if as_json:
        _emit(_shell_json(r), who["encoding"], answer_cap)
    else:
        sys.stdout.write(r.text + ("\n" if r.text else ""))
        sys.stdout.flush()
    raise typer.Exit(r.exit_code)


def compress_cmd(
    ctx: typer.Context,
    source: str = typer.Argument("-", help="File holding the captured output, or - for standard input."),
    as_: str = typer.Option(..., "--as", help='The command that produced the output, e.g. --as "git status".'),
    exit_code: int = typer.Option(0, "--exit-code", help="The exit code the command had (shown when not 0)."),
    session: Optional[str] = SESSION,
    json_: bool = JSON,
) -> None:
    """Compress output captured earlier as if the named command had produced it (same patterns and rules)."""
    from ...ops.shell import compress_captured

    st = state(ctx)
    if source == "-":
        data = sys.stdin.buffer.read()
    else:
        try:
            with open(source, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise InvalidInput("COMPRESS_CANNOT_READ", f"cannot read {source!r}: {exc.strerror}; give a file or -") from None
    text = data.decode("utf-8", "surrogateescape")  # as ``ops.process`` decodes a run's output: bytes kept exactly
    lc = st.open()
    who = _who(st, session)
    as_json = st.want_json(json_)
    cap = _text_cap(as_json, who["encoding"], [text], [as_])
    r = compress_captured(lc, as_, text, exit_code=exit_code, cap_tokens=cap, **who)
    if as_json:
        _emit(_shell_json(r, _COMPRESS_KEYS), who["encoding"])
    else:
        sys.stdout.write(r.text + ("\n" if r.text else ""))


def expand_cmd(
    ctx: typer.Context,
    archive_id: str = typer.Argument(..., help="The archive id named by an omission marker (A + 16 hex digits)."),
    head: Optional[int] = typer.Option(None, "--head", help="Only the first N lines."),
    tail: Optional[int] = typer.Option(None, "--tail", help="Only the last N lines."),
    lines: Optional[str] = typer.Option(None, "--lines", help="Only lines A-B (1-based, inclusive; A- to the end), numbered; L[A-B] is characters A-B of line L (an over-long line)."),
    grep: Optional[str] = typer.Option(None, "--grep", help="Only the lines matching this regular expression, numbered."),
    max_tokens: Optional[int] = typer.Option(
        None, "--max-tokens", help="Stop before this many tokens; the answer says which lines were left out."
    ),
    session: Optional[str] = SESSION,
    json_: bool = JSON,
) -> None:
    """Print an archived output (or its head, tail, a line range, or the lines matching a regex)."""
    from ...ops.shell import expand

    st = state(ctx)
    lc = st.open()
    who = _who(st, session)
    as_json = st.want_json(json_)
    json_cap = None
    if as_json and (max_tokens is None or MIN_CAP_TOKENS <= max_tokens):  # a smaller one is refused as given
        json_cap = min(max_tokens or ANSWER_CAP_TOKENS, MAX_CAP_TOKENS)
        max_tokens = _text_cap(True, who["encoding"], _archive_text(lc, archive_id), [archive_id], cap=json_cap)
    e = expand(lc, archive_id, head=head, tail=tail, lines=lines, grep=grep, max_tokens=max_tokens, **who)
    if as_json:
        _emit(e, who["encoding"], json_cap)
    else:
        sys.stdout.write(e.text + ("\n" if e.text else ""))


def attach(app: typer.Typer) -> None:
    settings = {"allow_interspersed_args": False, "ignore_unknown_options": True}
    app.command("shell", context_settings=settings)(shell_cmd)
    app.command("compress")(compress_cmd)
    app.command("expand")(expand_cmd)
