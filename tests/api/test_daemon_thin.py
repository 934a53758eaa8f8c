"""The thin client on its own: what it forwards, what it reads from stdin, what it imports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.api import thin
from leanctx.api.daemon.protocol import ProtocolError, encode_response, parse_request


def test_importing_the_thin_client_loads_only_the_standard_library() -> None:
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import leanctx.api.thin, leanctx.api.cli\n"
        "leanctx.api.thin.plan(['chat', 'post', '--body', '-'])\n"
        "leanctx.api.thin.connect('/nonexistent/lean-ctx.sock')\n"
        "new = set(sys.modules) - before\n"
        "ours = {'leanctx', 'leanctx.api', 'leanctx.api.thin', 'leanctx.api.cli'}\n"
        "bad = sorted(m for m in new - ours if m.split('.')[0] not in sys.stdlib_module_names)\n"
        "print(bad)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"


@pytest.mark.parametrize("argv, expected", [
    (["chat", "post", "--title", "x", "--body", "hi"], False),
    (["--db", "x.db", "--json", "chat", "read"], False),
    (["--db=x.db", "chat", "task", "claim", "t1"], False),
    (["chat", "task", "claim", "t1", "--channel", "dev"], False),
    (["agent", "register", "--type", "claude"], False),
    (["events", "tail", "-n", "3"], False),
    (["read", "a.py", "--mode", "map"], False),
    (["chat", "post", "--title", "x", "--body", "-"], True),
    (["chat", "post", "--title", "x", "--body=-"], True),
    (["chat", "post", "--title", "x", "-b", "-"], True),
    (["chat", "post", "--title", "x", "-b-"], True),
    (["chat", "post", "--title", "-", "--body", "x"], False),  # a title "-", no stdin
    (["chat", "event", "post", "--data", "-"], True),
    (["edit", "f.py", "--old", "a", "--new-file", "-"], True),
    (["agent", "diary", "-", "--category", "insight"], True),
    (["agent", "diary", "--category", "insight", "-"], True),
    (["agent", "diary", "--category", "insight", "--text", "-"], True),
    (["agent", "diary", "--json", "-"], None),  # a flag or a value before it: cannot tell
    (["compress", "--as", "git status"], True),  # no source: stdin
    (["compress", "--as", "git status", "out.txt"], False),
    (["compress", "out.txt", "--as=git status", "--json"], False),
    (["compress", "--weird", "x"], None),
    # not forwarded
    ([], None), (["--version"], None), (["--help"], None), (["chat"], None), (["chat", "--help"], None),
    (["chat", "post", "--help"], None), (["chat", "wait"], None), (["events", "tail", "--follow"], None),
    (["events", "tail", "-fn", "3"], None), (["shell", "ls"], None), (["mcp"], None), (["serve"], None),
    (["daemon", "status"], None), (["setup", "--agent", "claude"], None), (["doctor"], None),
    (["replay"], None), (["hooks", "pre-commit"], None), (["chat", "task"], None), (["nope"], None),
    (["--unknown", "chat", "read"], None), (["chat", "post", "--", "-"], None),
])
def test_plan(argv: list[str], expected: bool | None) -> None:
    assert thin.plan(argv) is expected


def _tree():  # type: ignore[no-untyped-def]
    import typer

    from leanctx.api.cli.app import full_app

    return typer.main.get_command(full_app())


def _find(root, path):  # type: ignore[no-untyped-def]
    cmd = root
    for name in path:
        cmd = cmd.commands[name]
    return cmd


def test_forwarded_commands_and_their_stdin_options_exist_in_the_tree() -> None:
    root = _tree()
    for path in thin.FORWARD:
        cmd = _find(root, path)
        assert not hasattr(cmd, "commands"), f"{path} is a group"
        opts = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
        for o in thin.STDIN_OPTIONS.get(path, ()):
            assert o in opts, (path, o)
        # a forwarded command that reads stdin must be known to the client
        for p in cmd.params:
            if "stdin" in (getattr(p, "help", "") or "") or "standard input" in (getattr(p, "help", "") or ""):
                known = set(thin.STDIN_OPTIONS.get(path, ())) & set(p.opts)
                assert known or (path in thin.STDIN_POSITIONAL and p.param_type_name == "argument"), (path, p.opts)
    compress = _find(root, ("compress",))
    value_opts = {o for p in compress.params if p.param_type_name == "option" and not p.is_flag for o in p.opts}
    flags = {o for p in compress.params if p.param_type_name == "option" and p.is_flag for o in p.opts} - {"--help"}
    assert value_opts == set(thin.COMPRESS_VALUE_OPTIONS) and flags == set(thin.COMPRESS_FLAGS)


def test_long_running_verbs_are_not_forwarded() -> None:
    for path in [("chat", "wait"), ("shell",), ("mcp",), ("serve",), ("replay",), ("events", "verify")]:
        assert path not in thin.FORWARD


@pytest.mark.parametrize("env", [
    {},
    {"XDG_DATA_HOME": "/x/data"},
    {"XDG_DATA_HOME": "~/xdg"},
    {"LEAN_CTX_HOME": "~/lc", "XDG_DATA_HOME": "/x/data"},
    {"LEAN_CTX_HOME": "/abs/lc"},
])
def test_data_dir_agrees_with_config(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], tmp_path: Path) -> None:
    from leanctx.config import data_dir

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("LEAN_CTX_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert thin.data_dir() == str(data_dir())
    assert thin.socket_path() == str(data_dir() / "daemon" / "lean-ctx.sock")


def test_request_round_trips_through_the_protocol(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEAN_CTX_WEIRD", "a=b\tc ✓")
    argv = ["chat", "post", "--title", "", "--body", "x\ny", os.fsdecode(b"\xff-bytes")]
    req = parse_request(thin.request_head("run", argv, (False, True, False), "120x40"), b"in")
    assert req.op == "run" and req.argv == argv and req.stdin == b"in"
    assert req.cwd == os.getcwd() and req.ppid == os.getppid()
    assert req.ttys == (False, True, False) and req.term == (120, 40)
    assert req.env["LEAN_CTX_WEIRD"] == "a=b\tc ✓" and req.env == dict(os.environ)
    mask = os.umask(0)
    os.umask(mask)
    assert req.umask == mask
    empty = parse_request(thin.request_head("status", []))
    assert empty.argv == [] and empty.op == "status"
    for bad in (b"", b"nope\0run", thin.request_head("run", []).replace(b"\0run\0", b"\0rm\0", 1)):
        with pytest.raises(ProtocolError):
            parse_request(bad)
    import socket

    a, b = socket.socketpair()
    with a, b:
        a.sendall(encode_response("ok", 3, b"out", "é\n".encode()))
        assert thin.read_response(b) == ("ok", 3, b"out", "é\n".encode())
        a.sendall(encode_response("fallback", 0))
        assert thin.read_response(b) == ("fallback", 0, b"", b"")


def test_no_daemon_means_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEAN_CTX_HOME", str(tmp_path))
    assert thin.forward(["chat", "peek"]) is None  # no socket
    (tmp_path / "daemon").mkdir()
    (tmp_path / "daemon" / "lean-ctx.sock").write_text("not a socket")
    assert thin.forward(["chat", "peek"]) is None
    monkeypatch.setenv("LEAN_CTX_NO_DAEMON", "1")
    assert thin.forward(["chat", "peek"]) is None
