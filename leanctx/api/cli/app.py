"""The ``lean-ctx`` command line (typer). It translates; the command bus decides."""

from __future__ import annotations

import errno
import os
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

import typer

try:  # typer < 0.25 runs on the click package
    from click.exceptions import ClickException
    from click.exceptions import Exit as _ClickExit
except ImportError:  # pragma: no cover - typer >= 0.25 vendors click
    from typer._click.exceptions import ClickException  # type: ignore[no-redef]

    _ClickExit = typer.Exit  # type: ignore[misc,assignment]
try:
    from click.exceptions import NoArgsIsHelpError  # click >= 8.2
except ImportError:  # pragma: no cover
    NoArgsIsHelpError = None  # type: ignore[assignment,misc]

from ...errors import LeanCtxError

if TYPE_CHECKING:
    from ...app import LeanCtx

_root_app = typer.Typer(
    name="lean-ctx",
    help="lean-ctx: a context layer for AI coding agents — compressed context, multi-agent coordination, "
    "one event-sourced log.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@dataclass
class State:
    db: str | None
    json: bool
    project: str | None
    progress: bool = True
    _app: "LeanCtx | None" = field(default=None, repr=False)

    def want_json(self, local: bool) -> bool:
        return self.json or local

    def project_root(self) -> str:
        from ...config import existing_dir, project_root

        return str(project_root(existing_dir(self.project))) if self.project else str(project_root())

    def open(self) -> "LeanCtx":
        if self._app is None:
            from ...app import LeanCtx
            from ...config import db_path

            self._app = LeanCtx(db_path(self.db, root=None if self.db else _root_path(self)))
        return self._app

    def close(self) -> None:
        if self._app is not None:
            # an answer read from projections behind the log (another process kept the write lock)
            # says so, on stderr: stdout stays the answer (JSON too)
            note = self._app.projections.stale_note()
            if note:
                sys.stderr.write(f"note: {note}\n")
            self._app.close()
            self._app = None


def _root_path(st: State):  # type: ignore[no-untyped-def]
    from pathlib import Path

    return Path(st.project_root())


def state(ctx: typer.Context) -> State:
    obj = ctx.find_root().obj
    assert isinstance(obj, State)
    return obj


@_root_app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    db: Optional[str] = typer.Option(
        None, "--db", envvar="LEAN_CTX_DB", help="Path of the event log (default: one per project under the data dir)."
    ),
    json_: bool = typer.Option(False, "--json", help="Print JSON (one object per line where there are several)."),
    project: Optional[str] = typer.Option(
        None, "--project", help="Project directory (default: the git root above the working directory)."
    ),
    no_progress: bool = typer.Option(False, "--no-progress", help="Never draw progress bars."),
    version: bool = typer.Option(False, "--version", help="Print the version and exit."),
) -> None:
    if version:
        from ... import __version__

        sys.stdout.write(f"lean-ctx {__version__}\n")
        raise typer.Exit(0)
    if ctx.invoked_subcommand is None and not ctx.resilient_parsing:
        # options but no verb (``lean-ctx --json``): a usage error, not a silent success
        ctx.fail("no command given")
    if project is not None:
        from ...config import existing_dir

        existing_dir(project)  # a typo must not open a new, empty log: PROJECT_NOT_FOUND for every verb
    ctx.obj = State(db=db, json=json_, project=project, progress=not no_progress)
    ctx.call_on_close(ctx.obj.close)


_loaded: set[str] = set()


def _load(modules: "tuple[str, ...] | None" = None) -> typer.Typer:
    """Register verbs on the root app: every ``*_cmd.py`` module (``modules`` None), or only
    those named. Each module adds its verbs to a group of ``groups.py``; one with an
    ``attach(app)`` function also adds top-level verbs. Idempotent."""
    import importlib

    from ...discovery import import_submodules
    from .groups import register_groups

    if not _loaded:
        register_groups(_root_app)
        _loaded.add("")
    if modules is None:
        mods = import_submodules(__package__, suffix="_cmd")
    else:
        mods = [importlib.import_module(f"{__package__}.{m}") for m in modules]
    for module in mods:
        name = module.__name__.rsplit(".", 1)[-1]
        if name in _loaded:
            continue
        _loaded.add(name)
        attach = getattr(module, "attach", None)
        if attach is not None:
            attach(_root_app)
    return _root_app


def full_app() -> typer.Typer:
    """The root app with every verb registered (for help, tests and docs)."""
    return _load(None)


def __getattr__(name: str) -> typer.Typer:  # ``from leanctx.api.cli.app import app``
    if name == "app":
        return full_app()
    raise AttributeError(name)


_GLOBAL_WITH_VALUE = ("--db", "--project")


def _verb(args: list[str]) -> str | None:
    """The first top-level verb in ``args`` (after the global options), if any."""
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in _GLOBAL_WITH_VALUE:
            skip = True
            continue
        if a.startswith("-"):
            continue
        return a
    return None


def _print_error(err: LeanCtxError, as_json: bool) -> None:
    """Print an error; user text that cannot be encoded (lone surrogates from undecodable
    bytes) is escaped rather than allowed to crash the report. A JSON error whose stdout is
    closed goes to stderr."""
    from .failures import ClosedStdout

    if as_json and not isinstance(sys.stdout, ClosedStdout) and sys.stdout is not None:
        import msgspec

        try:
            text = msgspec.json.encode({"error": err.to_dict()}).decode()
        except (UnicodeError, TypeError):
            text = msgspec.json.encode({"error": {"code": err.code, "message": repr(err.message)}}).decode()
        _write(sys.stdout, text.encode("utf-8", "backslashreplace").decode("utf-8") + "\n")
    else:
        line = f"error[{err.code}]: {err.message}\n"
        _write(sys.stderr, line.encode("utf-8", "backslashreplace").decode("utf-8"))


def _write(stream: object, text: str) -> None:
    try:
        stream.write(text)  # type: ignore[attr-defined]
        stream.flush()  # type: ignore[attr-defined]
    except (OSError, AttributeError, ValueError):
        pass  # nowhere left to report to


def _fail(err: LeanCtxError, as_json: bool) -> None:
    _print_error(err, as_json)
    sys.exit(err.exit_code)


def _last_resort(exc: Exception, args: list[str], as_json: bool, *, embedded: bool) -> None:
    """An exception no verb translated, as a coded error. A real bug (``INTERNAL_ERROR``) is
    re-raised with ``LEAN_CTX_DEBUG`` set, and when ``main`` was given its ``argv`` by a host
    that handles failures itself (the daemon's runner resets its connections)."""
    from .failures import unexpected

    err = unexpected(exc, args)
    if os.environ.get("LEAN_CTX_DEBUG") or (embedded and err.code == "INTERNAL_ERROR"):
        raise exc
    _fail(err, as_json)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: runs the CLI and turns errors into stable codes and exit statuses."""
    from .failures import (
        ClosedStdout,
        guard_stdout,
        stdout_closed_error,
        usage_error,
    )

    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    guard_stdout()
    from .groups import VERB_MODULES

    verb = _verb(args)
    # ``--version`` alone needs no verb module (``--help`` lists them all, so it loads them all)
    version_only = verb is None and "--version" in args and "--help" not in args
    command = typer.main.get_command(_load(() if version_only else VERB_MODULES.get(verb or "")))
    try:
        rv = command.main(args=args, prog_name="lean-ctx", standalone_mode=False)
    except LeanCtxError as err:
        _fail(err, as_json)
    except (typer.Exit, _ClickExit) as e:
        sys.exit(e.exit_code)
    except ClickException as e:
        if NoArgsIsHelpError is not None and isinstance(e, NoArgsIsHelpError):
            e.show()
            sys.exit(0)
        if as_json:
            usage = usage_error(e)
            usage.exit_code = e.exit_code
            _fail(usage, True)
        e.show()
        sys.exit(e.exit_code)
    except typer.Abort:
        sys.stderr.write("aborted\n")
        sys.exit(130)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
    except OSError as e:
        if e.errno == errno.EBADF and isinstance(sys.stdout, ClosedStdout):
            _fail(stdout_closed_error(), False)
        _last_resort(e, args, as_json, embedded=argv is not None)
    except Exception as e:  # noqa: BLE001 - the last resort: a coded line, never a bare traceback
        _last_resort(e, args, as_json, embedded=argv is not None)
    sys.exit(rv if isinstance(rv, int) else 0)
