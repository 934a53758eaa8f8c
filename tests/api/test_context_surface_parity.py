"""The context tools answer the same input the same way on every surface: MCP (the official
``mcp`` client against a spawned ``lean-ctx mcp``), HTTP ``POST /v1/tools/ctx_*`` and
``POST /v1/context/*`` (a real uvicorn), and the CLI verbs where they take the input.

- the same refusal codes (and HTTP statuses) for the same arguments: unknown fields
  (``INVALID_ARGUMENT`` naming the field), an empty command (``SHELL_EMPTY_COMMAND``, with a
  message naming no surface's syntax), ``max_tokens`` 0 (``EXPAND_INVALID_COUNT`` for expand,
  ``READ_INVALID_CAP`` for read);
- one set of tree defaults;
- a capped tree answer counted with the caller's encoding, its whole listing archived, and
  ``capped`` / ``omitted_lines`` / ``archive_id`` in every structured result;
- a multi-path read's failing path carries ``details.path``, like a single-path refusal.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from leanctx.api.tools.context import EMPTY_COMMAND_MESSAGE
from leanctx.context.tokens import count_tokens
from leanctx.ops.cap import ANSWER_CAP_TOKENS
from leanctx.ops.tree import DEFAULT_DEPTH, DEFAULT_MAX_ENTRIES

from .test_http_common import Api, make_server  # noqa: F401
from .test_mcp import Transport, _call, _text, anyio_backend, transport  # noqa: F401

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
GEMINI = "cl100k_base*1.1"
FAKE_ID = "A0123456789abcdef"
_NEXT = re.compile(r"lean-ctx expand (A[0-9a-f]{16}) --lines (\d+)-(\d+)")

pytestmark = pytest.mark.timeout(240)

# (tool, arguments, code, what the message must name). ``argv`` is ctx_shell's list argument;
# /v1/context/shell takes the same list as ``command``.
CASES: list[tuple[str, dict[str, Any], str, str | None]] = [
    ("tree", {"max_token": 5}, "INVALID_ARGUMENT", "max_token"),
    ("read", {"paths": ["app.py"], "max_token": 500}, "INVALID_ARGUMENT", "max_token"),
    ("search", {"query": "hello", "limt": 3}, "INVALID_ARGUMENT", "limt"),
    ("expand", {"archive_id": FAKE_ID, "hed": 1}, "INVALID_ARGUMENT", "hed"),
    ("edit", {"path": "app.py", "old": "a", "new": "b", "everywhere": True}, "INVALID_ARGUMENT", "everywhere"),
    ("shell", {"command": "true", "stdin": "x"}, "INVALID_ARGUMENT", "stdin"),
    ("tree", {"depth": "deep"}, "INVALID_ARGUMENT", "depth"),
    ("expand", {"archive_id": FAKE_ID, "max_tokens": 0}, "EXPAND_INVALID_COUNT", "max_tokens"),
    ("read", {"paths": ["app.py"], "max_tokens": 0}, "READ_INVALID_CAP", None),
    ("tree", {"depth": 0}, "TREE_INVALID_DEPTH", None),
    ("shell", {"command": ""}, "SHELL_EMPTY_COMMAND", None),
    ("shell", {"command": "   "}, "SHELL_EMPTY_COMMAND", None),
    ("shell", {"argv": []}, "SHELL_EMPTY_COMMAND", None),
    ("shell", {"argv": [""]}, "SHELL_EMPTY_COMMAND", None),
    ("shell", {"argv": ["", "status"]}, "SHELL_EMPTY_COMMAND", None),
]


def _context_body(args: dict[str, Any]) -> dict[str, Any]:
    return {("command" if k == "argv" else k): v for k, v in args.items()}


def _check_message(code: str, message: str, named: str | None) -> None:
    if named is not None:
        assert named in message, message
    if code == "SHELL_EMPTY_COMMAND":
        assert message == EMPTY_COMMAND_MESSAGE and "lean-ctx" not in message


def _populate_small(project: Path) -> None:
    (project / "src").mkdir(parents=True, exist_ok=True)
    (project / "app.py").write_text('def hello():\n    return "hello from app"\n')
    (project / "src" / "util.py").write_text("def add(a, b):\n    return a + b\n")


def _populate_big(project: Path) -> None:
    """A listing far over the answer cap at depth 5 (3,600 files, long names)."""
    for d in range(3):
        folder = project / "big" / f"package_{d}" / "a_rather_long_module_directory_name"
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(1200):
            (folder / f"some_rather_long_file_name_number_{i:04}_with_a_suffix.py").write_text("")


def _cli(project: Path, home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    e = {**os.environ, "LEAN_CTX_HOME": str(home), "LEAN_CTX_NO_DAEMON": "1", **env}
    e.pop("LEAN_CTX_DB", None)
    if "LEAN_CTX_MODEL" not in env:
        e.pop("LEAN_CTX_MODEL", None)
    return subprocess.run([LEAN_CTX, "--project", str(project), *args], capture_output=True, text=True, env=e,
                          cwd=project, timeout=120, check=False)


# --- HTTP: /v1/tools/ctx_* and /v1/context/* ---------------------------------------------------


def test_http_surfaces_refuse_the_same_input_with_the_same_code(make_server) -> None:  # noqa: F811
    server = make_server(allow_exec=True)
    _populate_small(Path(server.config.project_root))
    api = Api(server)
    a = api.register()
    for tool, args, code, named in CASES:
        via_tool = api.post(f"/v1/tools/ctx_{tool}", a, **args)
        via_route = api.post(f"/v1/context/{tool}", a, **_context_body(args))
        got = [(r.status_code, r.json()["error"]["code"]) for r in (via_tool, via_route)]
        assert got == [(422, code), (422, code)], (tool, args, via_tool.text, via_route.text)
        for r in (via_tool, via_route):
            _check_message(code, r.json()["error"]["message"], named)


def test_http_surfaces_share_tree_defaults_and_per_path_read_errors(make_server, tmp_path: Path) -> None:  # noqa: F811
    server = make_server(allow_exec=True)
    project = Path(server.config.project_root)
    _populate_small(project)
    for i in range(DEFAULT_MAX_ENTRIES + 5):  # past the per-folder default: "… N more"
        (project / "src" / "deep" / "deeper").mkdir(parents=True, exist_ok=True)
        (project / "src" / f"m{i:02}.py").write_text("")
    (project / "src" / "deep" / "deeper" / "x.py").write_text("")
    (project / "src" / "deep" / "y.py").write_text("")
    api = Api(server)
    a = api.register()
    via_tool = api.ok("/v1/tools/ctx_tree", a)
    via_route = api.ok("/v1/context/tree", a)
    cli = _cli(project, tmp_path / "home", "--json", "tree")
    assert cli.returncode == 0, cli.stderr
    via_cli = json.loads(cli.stdout)
    for d in (via_tool, via_route, via_cli):
        assert d["depth"] == DEFAULT_DEPTH and d["capped"] is False and d["omitted_lines"] == 0
        assert d["archive_id"] is None
    assert via_tool["text"] == via_route["text"] == via_cli["text"]
    lines = via_tool["text"].splitlines()  # 40 entries per folder, 2 levels
    assert "    deep/ (2)" in lines and "    … 7 more (0 folders, 7 files)" in lines and "deeper" not in via_tool["text"]
    for route, key in (("/v1/tools/ctx_read", "files"), ("/v1/context/read", "files")):
        files = api.ok(route, a, paths=["app.py", "nope.py", "../outside.py"], mode="full")[key]
        assert "error" not in files[0]
        assert files[1]["error"]["code"] == "READ_NOT_FOUND" and files[1]["error"]["details"] == {"path": "nope.py"}
        assert files[2]["error"]["code"] == "READ_PATH_OUTSIDE_PROJECT"
        assert files[2]["error"]["details"]["path"] == "../outside.py"
    single = api.post("/v1/context/read", a, paths=["nope.py"])
    assert single.json()["error"]["details"]["path"] == "nope.py"


def test_http_tree_is_capped_in_the_servers_encoding_and_archived(make_server,  # noqa: F811
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEAN_CTX_MODEL", "gemini-2.5-pro")
    server = make_server()
    _populate_big(Path(server.config.project_root))
    api = Api(server)
    a = api.register()
    args = {"path": "big", "depth": 5, "max_entries": 2000}
    via_tool = api.ok("/v1/tools/ctx_tree", a, **args)
    route = api.post("/v1/context/tree", a, **args)
    assert route.status_code == 200, route.text
    via_route = route.json()
    assert count_tokens(via_tool["text"], GEMINI) <= ANSWER_CAP_TOKENS
    assert count_tokens(route.text, GEMINI) <= ANSWER_CAP_TOKENS  # the whole JSON answer, entries included
    for d in (via_tool, via_route):
        assert d["capped"] is True and d["omitted_lines"] > 0 and d["archive_id"]
    assert via_tool["archive_id"] == via_route["archive_id"]  # the same whole listing
    m = _NEXT.search(via_route["text"].splitlines()[-1])
    assert m and m.group(1) == via_route["archive_id"]
    rest = api.ok("/v1/context/expand", a, archive_id=m.group(1), lines=f"{m.group(2)}-{m.group(3)}")
    first_sent_back = rest["text"].split("\n")[0]
    assert first_sent_back.startswith(f"{m.group(2)}:") and first_sent_back.endswith(".py")


# --- MCP -------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_mcp_refuses_the_same_input_with_the_same_code(transport: Transport) -> None:  # noqa: F811
    async with transport.connect("claude-code") as c:
        for tool, args, code, named in CASES:
            r = await c.call_tool(f"ctx_{tool}", args)
            assert r.is_error, (tool, args, _text(r))
            got, _, message = _text(r).partition(": ")
            assert got == code, (tool, args, _text(r))
            _check_message(code, message, named)
        read = await _call(c, "ctx_read", {"paths": ["app.py", "nope.py"], "mode": "full"})
        assert read.structured_content["files"][1]["error"]["details"] == {"path": "nope.py"}


@pytest.mark.anyio
async def test_mcp_gemini_tree_is_capped_in_its_encoding_and_continues(transport: Transport) -> None:  # noqa: F811
    _populate_big(transport.project)
    async with transport.connect("gemini-cli") as c:
        small = await _call(c, "ctx_tree", {})
        assert small.structured_content["depth"] == DEFAULT_DEPTH and small.structured_content["capped"] is False
        assert small.structured_content["archive_id"] is None and small.structured_content["omitted_lines"] == 0
        r = await _call(c, "ctx_tree", {"path": "big", "depth": 5, "max_entries": 2000})
        text, sc = _text(r), r.structured_content
        assert count_tokens(text, GEMINI) <= ANSWER_CAP_TOKENS
        assert sc["capped"] is True and sc["omitted_lines"] > 0 and sc["archive_id"]
        m = _NEXT.search(text.rstrip("\n").splitlines()[-1])
        assert m and m.group(1) == sc["archive_id"]
        rest = await _call(c, "ctx_expand", {"archive_id": m.group(1), "lines": f"{m.group(2)}-{m.group(3)}"})
        assert _text(rest).split("\n")[0].startswith(f"{m.group(2)}:")


# --- CLI -------------------------------------------------------------------------------------


def test_cli_uses_the_same_codes(tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    _populate_small(project)
    e = _cli(project, home, "expand", FAKE_ID, "--max-tokens", "0")
    assert e.returncode == 2 and "error[EXPAND_INVALID_COUNT]" in e.stderr
    r = _cli(project, home, "read", "app.py", "--max-tokens", "0")
    assert r.returncode == 2 and "error[READ_INVALID_CAP]" in r.stderr
    s = _cli(project, home, "shell", "--", "")
    assert s.returncode == 2 and "error[SHELL_EMPTY_COMMAND]" in s.stderr
    t = _cli(project, home, "tree", "--depth", "0")
    assert t.returncode == 2 and "error[TREE_INVALID_DEPTH]" in t.stderr
