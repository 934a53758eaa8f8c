"""``lean-ctx daemon start|stop|restart|status``: the background process that keeps the CLI warm.

While it runs, short verbs (``leanctx.api.thin.FORWARD``) are handed to it over a Unix socket in
the data dir and come back with their output and exit code; without it the CLI runs them
in-process, exactly the same way.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import typer

from .app import state
from .common import JSON

daemon_app = typer.Typer(
    help="The background daemon: keeps imports, the tokenizer and databases warm for fast CLI calls.",
    no_args_is_help=True,
)


def attach(app: typer.Typer) -> None:
    app.add_typer(daemon_app, name="daemon")


def _emit(data: dict[str, Any]) -> None:
    from .render import emit_json

    emit_json(data)


def _code_changed(st: dict[str, Any]) -> bool:
    from ..daemon.runner import code_stamp

    stamp = st.get("code_stamp") or 0.0
    return bool(stamp) and code_stamp() > stamp + 1e-6


def _describe(st: dict[str, Any]) -> str:
    return (f"lean-ctx daemon running: pid {st['pid']}, lean-ctx {st['version']}, up {st['uptime_seconds']:.1f}s, "
            f"{st['requests']} calls served\n  socket {st['socket']}\n")


@daemon_app.command("start")
def start(
    ctx: typer.Context,
    foreground: bool = typer.Option(False, "--foreground", help="Serve in this process until stopped (for service managers)."),
    wait: float = typer.Option(20.0, "--wait", min=0.1, help="Seconds to wait for the daemon to answer."),
    json_: bool = JSON,
) -> None:
    """Start the daemon for this data dir (does nothing if it already runs; cleans a stale socket)."""
    from ..daemon import control
    from .failures import writable_data_dir

    as_json = state(ctx).want_json(json_)
    writable_data_dir()
    res = control.start(wait=wait, foreground=foreground)
    if as_json:
        _emit(res)
        return
    if foreground:
        return
    for p in res.get("cleaned") or []:
        sys.stderr.write(f"removed stale {p}\n")
    if not res.get("started"):
        sys.stdout.write("already running; " + _describe(res))
        _warn_foreign(res)
    else:
        sys.stdout.write(_describe(res))


def _warn_foreign(st: dict[str, Any]) -> None:
    from .. import thin

    if st.get("build") and st["build"] != thin.build_id():
        sys.stderr.write(f"it serves another installation ({st['build']}), so this one runs in-process: "
                         "`lean-ctx daemon restart` to serve this one\n")


@daemon_app.command("stop")
def stop(
    ctx: typer.Context,
    wait: float = typer.Option(15.0, "--wait", min=0.1, help="Seconds before the daemon is killed."),
    json_: bool = JSON,
) -> None:
    """Stop the daemon: calls already accepted finish; later ones run in-process."""
    from ..daemon import control

    res = control.stop(wait=wait)
    if state(ctx).want_json(json_):
        _emit(res)
        return
    if res["stopped"]:
        served = f", {res['requests']} calls served" if res.get("requests") is not None else ""
        sys.stdout.write(f"stopped the lean-ctx daemon (pid {res['pid']}{served})\n")
    else:
        sys.stdout.write("no lean-ctx daemon was running\n")
        for p in res.get("cleaned") or []:
            sys.stderr.write(f"removed stale {p}\n")


@daemon_app.command("restart")
def restart(ctx: typer.Context, json_: bool = JSON) -> None:
    """Stop the daemon if it runs, then start it (after upgrading lean-ctx)."""
    from ..daemon import control
    from .failures import writable_data_dir

    writable_data_dir()
    control.stop()
    res = control.start()
    if state(ctx).want_json(json_):
        _emit(res)
    else:
        sys.stdout.write(_describe(res))


@daemon_app.command("status")
def status(ctx: typer.Context, json_: bool = JSON) -> None:
    """Whether the daemon runs, with its pid, calls served and open databases; exits 3 when it
    does not run."""
    from ..daemon import control

    st = control.probe()
    if st["state"] == "running":
        st["code_changed"] = _code_changed(st)
    if state(ctx).want_json(json_):
        _emit(st)
    elif st["state"] == "running":
        out = _describe(st)
        if st["databases"]:
            out += "  databases " + ", ".join(st["databases"]) + "\n"
        if st["tokenizers"]:
            out += "  tokenizers " + ", ".join(st["tokenizers"]) + "\n"
        if st["last_request_at"]:
            out += f"  last call {time.time() - st['last_request_at']:.1f}s ago\n"
        sys.stdout.write(out)
        _warn_foreign(st)
        if st["code_changed"]:
            sys.stderr.write("lean-ctx's code changed since the daemon started: run `lean-ctx daemon restart`\n")
    elif st["state"] == "unresponsive":
        sys.stdout.write(f"lean-ctx daemon not answering (pid {st.get('pid')}): run `lean-ctx daemon stop`\n")
    elif st["state"] == "stale":
        sys.stdout.write("lean-ctx daemon not running (a stale socket is left: `lean-ctx daemon start` "
                         "cleans it; the CLI runs in-process meanwhile)\n")
    else:
        sys.stdout.write("lean-ctx daemon not running (the CLI runs in-process; `lean-ctx daemon start` "
                         "makes short calls faster)\n")
    raise typer.Exit(0 if st["state"] == "running" else 3)
