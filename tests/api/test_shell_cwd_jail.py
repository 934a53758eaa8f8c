"""``cwd`` of a shell command stays inside the project on every surface: MCP ``ctx_shell``
(the official ``mcp`` client, stdio and streamable HTTP), HTTP ``POST /v1/context/shell`` and
``POST /v1/tools/ctx_shell``; one check (``leanctx.api.tools.context.shell_cwd``), one error
code (``SHELL_CWD_OUTSIDE_PROJECT``). A refused command does not run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from leanctx.api.tools.context import shell_cwd
from leanctx.errors import LeanCtxError

from .test_http_common import Api, make_server  # noqa: F401
from .test_mcp import Transport, _call, _text, anyio_backend, transport  # noqa: F401

OUTSIDE_CODE = "SHELL_CWD_OUTSIDE_PROJECT"
MARK = "touch lean-ctx-cwd-mark; pwd"  # leaves a file where it ran


def _cmd(cwd: str) -> str:
    return "pwd" if cwd in ("/", "/tmp") else MARK  # never litter system folders, even when the jail is broken


def _layout(project: Path) -> Path:
    """``src/`` inside, ``escape`` → a folder outside, ``inner`` → ``src``, ``home`` → the root."""
    outside = project.parent / "outside"
    outside.mkdir(exist_ok=True)
    (project / "src").mkdir(exist_ok=True)
    for name, target in (("escape", outside), ("inner", project / "src"), ("home", project)):
        if not (project / name).is_symlink():
            (project / name).symlink_to(target, target_is_directory=True)
    return outside


def _refused(project: Path) -> list[str]:
    return ["/", "../..", "..", "escape", "escape/", "src/../../outside", str(project.parent / "outside"), "/tmp"]


def _no_marks(project: Path, outside: Path) -> None:
    for d in (outside, project.parent, project.parent.parent):
        assert not (d / "lean-ctx-cwd-mark").exists(), d


def _accepted(project: Path) -> dict[str, Path]:
    real = project.resolve()
    return {"src": real / "src", "src/": real / "src", str(project / "src"): real / "src", "inner": real / "src",
            ".": real, "src/..": real, "home": real}


# --- the shared check, in process ------------------------------------------------------------------


def test_shell_cwd_refuses_what_leaves_the_project(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    _layout(project)
    for cwd in _refused(project):
        with pytest.raises(LeanCtxError) as info:
            shell_cwd(str(project), cwd)
        assert info.value.code == OUTSIDE_CODE, cwd
    for cwd, where in {**_accepted(project), "": project.resolve()}.items():
        assert shell_cwd(str(project), cwd) == str(where), cwd
    assert shell_cwd(str(project), None) == str(project.resolve())
    with pytest.raises(LeanCtxError) as info:
        shell_cwd(str(project), "a\x00b")
    assert info.value.code == "SHELL_INVALID_CWD"


# --- MCP -----------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_mcp_ctx_shell_keeps_cwd_inside_the_project(transport: Transport) -> None:  # noqa: F811
    project = transport.project
    outside = _layout(project)
    async with transport.connect("claude-code") as c:
        for cwd in _refused(project):
            r = await c.call_tool("ctx_shell", {"command": _cmd(cwd), "cwd": cwd})
            assert r.is_error and _text(r).startswith(f"{OUTSIDE_CODE}:"), (cwd, _text(r))
        _no_marks(project, outside)
        for cwd, where in _accepted(project).items():
            r = await _call(c, "ctx_shell", {"argv": ["pwd"], "cwd": cwd})
            assert _text(r).strip() == str(where), cwd
        r = await _call(c, "ctx_shell", {"command": MARK, "cwd": "src"})
        assert (project / "src" / "lean-ctx-cwd-mark").exists()
        (project / "src" / "lean-ctx-cwd-mark").unlink()


# --- HTTP ----------------------------------------------------------------------------------------


def test_http_shell_routes_keep_cwd_inside_the_project(make_server) -> None:  # noqa: F811
    server = make_server(allow_exec=True)
    project = Path(server.config.project_root)
    outside = _layout(project)
    api = Api(server)
    a = api.register()
    for route in ("/v1/context/shell", "/v1/tools/ctx_shell"):
        for cwd in _refused(project):
            r = api.post(route, a, command=_cmd(cwd), cwd=cwd)
            assert r.status_code == 422 and r.json()["error"]["code"] == OUTSIDE_CODE, (route, cwd, r.text)
        _no_marks(project, outside)
        for cwd, where in _accepted(project).items():
            r = api.ok(route, a, command="pwd", cwd=cwd)
            assert r["text"].strip() == str(where), (route, cwd)
    assert os.listdir(outside) == []
