"""``lean-ctx shell --cwd`` stays inside the project like MCP ``ctx_shell`` and HTTP: the same
check (``leanctx.api.tools.context.shell_cwd``), the same code and message, the CLI's error
convention (``error[CODE]: ...`` on stderr, or ``{"error": {...}}`` on stdout with ``--json``;
exit 2), and a refused command does not run nor reach the log. Relative ``--cwd`` and the
default are taken from the current directory when it is inside the project, else from the
project root (``--project`` elsewhere)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.api.tools.context import shell_cwd
from leanctx.app import LeanCtx
from leanctx.errors import LeanCtxError

from .test_shell_cwd_jail import (
    MARK,
    OUTSIDE_CODE,
    _accepted,
    _cmd,
    _layout,
    _no_marks,
    _refused,
)

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))  # this interpreter's, not whatever PATH finds

pytestmark = pytest.mark.timeout(180)


def _run(db: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_DB=str(db), LEAN_CTX_NO_DAEMON="1", LEAN_CTX_AGENT_ID="cli-agent",
               LEAN_CTX_HOME=os.environ["LEAN_CTX_HOME"])
    return subprocess.run([LEAN_CTX, *args], check=False, capture_output=True, text=True, env=env, cwd=cwd, timeout=60)


def _shell_runs(db: Path) -> int:
    if not db.exists():
        return 0
    with LeanCtx(db) as lc:
        return sum(1 for e in lc.store.read_all(0) if e.kind == "shell.ran")


def _message(project: Path, cwd: str) -> str:
    with pytest.raises(LeanCtxError) as info:
        shell_cwd(str(project), cwd)
    assert info.value.code == OUTSIDE_CODE
    return info.value.message


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)  # the current directory's project is this tree, wherever tmp_path lies
    return root


def test_cli_shell_refuses_a_cwd_outside_the_project(tmp_path: Path, project: Path) -> None:
    outside = _layout(project)
    db = tmp_path / "data" / "events.db"
    for cwd in _refused(project):
        p = _run(db, project, "shell", "--cwd", cwd, "--", _cmd(cwd))
        assert (p.returncode, p.stdout) == (2, ""), (cwd, p.stdout, p.stderr)
        assert p.stderr == f"error[{OUTSIDE_CODE}]: {_message(project, cwd)}\n", cwd
        j = _run(db, project, "shell", "--json", "--cwd", cwd, "--", _cmd(cwd))
        assert j.returncode == 2 and j.stderr == "", (cwd, j.stderr)
        assert json.loads(j.stdout) == {"error": {"code": OUTSIDE_CODE, "message": _message(project, cwd)}}, cwd
    _no_marks(project, outside)
    assert os.listdir(outside) == [] and _shell_runs(db) == 0
    # the same refusal over the other surfaces' check: MCP and HTTP answer this code for these paths
    for cwd, where in _accepted(project).items():
        p = _run(db, project, "shell", "--cwd", cwd, "--", "pwd")
        assert (p.returncode, p.stdout) == (0, f"{where}\n"), (cwd, p.stderr)
    p = _run(db, project, "shell", "--cwd", "src", "--", MARK)
    assert p.returncode == 0 and (project / "src" / "lean-ctx-cwd-mark").exists()
    assert _shell_runs(db) == len(_accepted(project)) + 1


def test_cli_shell_relative_cwd_and_default_from_a_subdirectory(tmp_path: Path, project: Path) -> None:
    _layout(project)
    (project / "src" / "sub" / "dir").mkdir(parents=True)
    db = tmp_path / "data" / "events.db"
    src, real = project / "src", project.resolve()
    assert _run(db, src, "shell", "--", "pwd").stdout == f"{real / 'src'}\n"
    assert _run(db, src, "shell", "--cwd", "sub/dir", "--", "pwd").stdout == f"{real / 'src' / 'sub' / 'dir'}\n"
    assert _run(db, src, "shell", "--cwd", "..", "--", "pwd").stdout == f"{real}\n"
    assert _run(db, src / "sub", "shell", "--cwd", "../..", "--", "pwd").stdout == f"{real}\n"
    p = _run(db, src, "shell", "--cwd", "../..", "--", MARK)
    assert p.returncode == 2 and p.stderr == f"error[{OUTSIDE_CODE}]: {_message(project, 'src/../..')}\n"
    assert "'src/../..' climbs out of the project" in p.stderr
    p = _run(db, src, "shell", "--cwd", "../escape", "--", MARK)
    assert p.returncode == 2 and p.stderr.startswith(f"error[{OUTSIDE_CODE}]: path 'src/../escape' resolves")
    _no_marks(project, project.parent / "outside")
    assert not (project.parent / "lean-ctx-cwd-mark").exists()


def test_cli_shell_with_project_elsewhere_runs_from_the_project_root(tmp_path: Path, project: Path) -> None:
    outside = _layout(project)
    db = tmp_path / "data" / "events.db"
    real = project.resolve()
    here = ("--project", str(project))
    assert _run(db, outside, *here, "shell", "--", "pwd").stdout == f"{real}\n"
    assert _run(db, outside, *here, "shell", "--cwd", "src", "--", "pwd").stdout == f"{real / 'src'}\n"
    assert _run(db, outside, *here, "shell", "--cwd", ".", "--", "pwd").stdout == f"{real}\n"
    for cwd in ("..", str(outside)):
        p = _run(db, outside, *here, "shell", "--cwd", cwd, "--", MARK)
        assert p.returncode == 2 and p.stderr == f"error[{OUTSIDE_CODE}]: {_message(project, cwd)}\n", cwd
    assert os.listdir(outside) == []
