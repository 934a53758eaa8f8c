"""``ctx_shell`` takes ``argv`` (exclusive with ``command``) and ``env`` (``NAME=VALUE``, as
``lean-ctx shell --env``), and its default timeout is the HTTP API's. Through the official
``mcp`` client (stdio and streamable HTTP) and ``lean-ctx call``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.api.cli.shell_cmd import _env_pairs as cli_env_pairs
from leanctx.api.http import context as http_context
from leanctx.api.tools import context as tools_context
from leanctx.errors import LeanCtxError

from .test_mcp import Transport, _call, _text, anyio_backend, transport  # noqa: F401

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))


async def _error(c: object, args: dict) -> str:
    r = await c.call_tool("ctx_shell", args)  # type: ignore[attr-defined]
    assert r.is_error, _text(r)
    return _text(r)


@pytest.mark.anyio
async def test_argv_env_and_their_errors(transport: Transport) -> None:
    async with transport.connect("claude-code") as c:
        r = await _call(c, "ctx_shell", {"argv": ["sh", "-c", "echo ran; exit 6"]})
        assert r.structured_content["exit_code"] == 6 and "ran" in _text(r) and "[exit 6]" in _text(r)
        # an argv is not re-parsed by a shell: one argument with spaces and a $ stays one
        r = await _call(c, "ctx_shell", {"argv": ["printf", "%s|", "a b", "$HOME"]})
        assert _text(r).strip() == "a b|$HOME|"
        r = await _call(c, "ctx_shell", {"argv": ["sh", "-c", 'echo "$LC_A-$LC_B-$LC_C"'],
                                         "env": ["LC_A=1", "LC_B=x=y", "LC_C="]})
        assert _text(r).strip() == "1-x=y-"
        r = await _call(c, "ctx_shell", {"command": "echo $LC_D; pwd", "env": ["LC_D=string"]})
        assert _text(r).splitlines() == ["string", str(transport.project)]
        both = await _error(c, {"command": "true", "argv": ["true"]})
        assert both.startswith("SHELL_COMMAND_AND_ARGV:")
        for neither in ({}, {"argv": []}, {"command": "  "}, {"argv": [""]}):
            assert (await _error(c, neither)).startswith("SHELL_EMPTY_COMMAND:"), neither
        assert (await _error(c, {"argv": ["true"], "env": ["NOEQUALS"]})).startswith("SHELL_INVALID_ENV:")
        assert (await _error(c, {"argv": ["true"], "env": ["1X=2"]})).startswith("SHELL_INVALID_ENV:")
        assert (await _error(c, {"argv": ["true"], "timeout": 601})).startswith("SHELL_INVALID_TIMEOUT:")
        assert (await _error(c, {"argv": ["true"], "timeout": 0})).startswith("SHELL_INVALID_TIMEOUT:")
        assert (await _error(c, {"argv": "true"})).startswith("INVALID_ARGUMENT")
        timed = await _call(c, "ctx_shell", {"argv": ["sh", "-c", "echo begun; sleep 20"], "timeout": 1})
        assert timed.structured_content["exit_code"] == 124 and timed.structured_content["timed_out"] is True
        tool = next(t for t in (await c.list_tools()).tools if t.name == "ctx_shell")
        props = tool.input_schema["properties"]
        assert {"command", "argv", "env", "timeout", "cwd", "raw"} <= set(props)
        assert props["timeout"].get("default") == tools_context.DEFAULT_SHELL_TIMEOUT


def test_one_default_timeout_for_mcp_and_http() -> None:
    assert tools_context.DEFAULT_SHELL_TIMEOUT == http_context.DEFAULT_SHELL_TIMEOUT == 120.0
    assert tools_context.MAX_SHELL_TIMEOUT == http_context.MAX_SHELL_TIMEOUT
    assert tools_context.ShellArgs(command="true").timeout == http_context.ShellBody(command="true").timeout


@pytest.mark.parametrize("items", [
    ["A=1"], ["A_B=x=y"], ["EMPTY="], ["_U=1", "V2=2"], ["A=1", "A=2"], ["ÄX=1"],
    ["NOEQUALS"], ["=v"], ["1X=2"], ["A-B=1"], ["A B=1"], ["A=1", "bad"],
])
def test_env_takes_exactly_what_the_cli_takes(items: list[str]) -> None:
    def outcome(fn):  # type: ignore[no-untyped-def]
        try:
            return fn(items)
        except LeanCtxError as exc:
            return exc.code

    assert outcome(tools_context.env_pairs) == outcome(cli_env_pairs)


def test_the_audit_repro_through_lean_ctx_call(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_HOME=str(tmp_path / "home"), LEAN_CTX_NO_DAEMON="1")
    p = subprocess.run([LEAN_CTX, "call", "ctx_shell", '{"argv":["sh","-c","exit 6"]}', "--json"],
                       check=False, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert "unknown field" not in p.stdout + p.stderr, p.stdout + p.stderr
    out = json.loads(p.stdout)
    assert out["exit_code"] == 6, out
