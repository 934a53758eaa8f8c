"""``overview`` and the ``session`` verbs go through a running daemon, with the same answers as
in-process; ``precompact`` and ``doctor`` stay in the calling process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.api import thin

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))


class Env:
    def __init__(self, home: Path) -> None:
        self.base = {k: v for k, v in os.environ.items()
                     if k not in ("LEAN_CTX_AGENT_ID", "LEAN_CTX_NO_DAEMON", "LEAN_CTX_DB", "LEAN_CTX_SESSION_ID")}
        self.base.update({"LEAN_CTX_HOME": str(home), "LEAN_CTX_DAEMON_WATCH": "0"})

    def run(self, *args: str, cwd: Path, env: dict[str, str] | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        p = subprocess.run([LEAN_CTX, *args], check=False, env={**self.base, **(env or {})}, cwd=cwd, capture_output=True,
                           text=True, stdin=subprocess.DEVNULL, timeout=120)
        if check and p.returncode != 0:
            raise AssertionError(f"lean-ctx {' '.join(args)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
        return p

    def by_command(self, cwd: Path) -> dict[str, int]:
        return json.loads(self.run("daemon", "status", "--json", cwd=cwd).stdout)["by_command"]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    env = Env(tmp_path_factory.mktemp("dh") / "home")
    here = Path.cwd()
    try:
        env.run("daemon", "start", cwd=here)
        yield env
    finally:
        env.run("daemon", "stop", cwd=here, check=False)


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "a.py").write_text("def foo():\n    return 1\n")
    return tmp_path


def test_plan_forwards_overview_and_session_verbs_but_not_precompact() -> None:
    for argv in (["overview"], ["overview", "fix the bug", "--max-tokens", "300"], ["session", "resume"],
                 ["--json", "session", "status"], ["session", "task", "t", "--step", "1", "--total", "2"]):
        assert thin.plan(argv) is False, argv
    for argv in (["session", "precompact"], ["hooks", "precompact"], ["doctor"], ["session"], ["session", "--help"],
                 ["session", "resume", "--help"], ["overview", "--help"]):
        assert thin.plan(argv) is None, argv


def test_overview_and_session_answers_match_in_process(daemon: Env, project: Path) -> None:
    a = {"LEAN_CTX_AGENT_ID": "alice", "LEAN_CTX_SESSION_ID": "s1"}
    local = {**a, "LEAN_CTX_NO_DAEMON": "1"}
    before = daemon.by_command(project)
    daemon.run("session", "task", "fix the parser", "--step", "1", "--total", "3", cwd=project, env=a)
    daemon.run("session", "finding", "foo returns 1", "--path", "a.py", cwd=project, env=a)
    daemon.run("read", "a.py", cwd=project, env=a)
    for args in (("overview",), ("overview", "parser", "--json"), ("session", "resume"), ("session", "resume", "--json"),
                 ("session", "status", "--json"), ("session", "list")):
        via, here = daemon.run(*args, cwd=project, env=a), daemon.run(*args, cwd=project, env=local)
        assert (via.returncode, via.stdout, via.stderr) == (here.returncode, here.stdout, here.stderr), args
    assert "fix the parser" in daemon.run("session", "resume", cwd=project, env=a).stdout
    after = daemon.by_command(project)
    served = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    assert served["overview"] == 2 and served["session resume"] == 3 and served["session task"] == 1
    assert served["session status"] == 1 and served["session list"] == 1


def test_the_default_identity_is_the_callers(daemon: Env, project: Path) -> None:
    # no LEAN_CTX_AGENT_ID: the agent is local-<parent pid>, this test's pid, through the daemon too
    daemon.run("session", "task", "identity check", cwd=project)
    status = json.loads(daemon.run("session", "status", "--json", cwd=project, env={"LEAN_CTX_NO_DAEMON": "1"}).stdout)
    assert f"default-local-{os.getpid()}" in status["text"] and "identity check" in status["text"]


def test_precompact_and_doctor_run_in_the_calling_process(daemon: Env, project: Path) -> None:
    before = daemon.by_command(project)
    daemon.run("hooks", "precompact", cwd=project, env={"LEAN_CTX_AGENT_ID": "bob"})
    daemon.run("session", "precompact", "--json", cwd=project, env={"LEAN_CTX_AGENT_ID": "bob"})
    daemon.run("doctor", cwd=project, check=False)
    assert daemon.by_command(project) == before
