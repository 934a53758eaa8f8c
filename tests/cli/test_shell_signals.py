"""A ``lean-ctx shell`` that is terminated (SIGTERM, SIGHUP) kills the command it runs.

The command runs in a session of its own, so without this a signal to lean-ctx would leave it
running, reparented to init. Now the whole process group is killed, the answer says so, the
exit code is 128 + N (143, 129) and the run is recorded like a timeout. A SIGHUP that lean-ctx
ignores (``nohup``) stays ignored. The handlers exist only while the command runs, in the main
thread only, and the previous ones are back afterwards.

Real console script in subprocesses, real commands, a real log under the test's data dir.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from leanctx.ops.process import execute

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
# the command writes its own pid and the pid of a background child, then waits on it
SCRIPT = 'sleep 60 & echo "$$ $!" > pids; wait'


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_") or k == "LEAN_CTX_HOME"}
    env.update(LEAN_CTX_NO_DAEMON="1", LEAN_CTX_AGENT_ID="shell-signals")
    return env


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purpose
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _pids(cwd: Path, proc: subprocess.Popen[str]) -> list[int]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        text = (cwd / "pids").read_text() if (cwd / "pids").exists() else ""
        if text.endswith("\n"):
            return [int(x) for x in text.split()]
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    raise AssertionError("the command did not start")


def _start(cwd: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([LEAN_CTX, *args, "shell", "--", SCRIPT], cwd=cwd, env=_env(), text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _reap(pids: list[int]) -> None:
    for pid in pids:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_terminated_shell_kills_the_commands_group_and_says_so(tmp_path: Path, sig: signal.Signals) -> None:
    p = _start(tmp_path)
    pids = _pids(tmp_path, p)
    try:
        p.send_signal(sig)
        out, err = p.communicate(timeout=30)
        assert p.returncode == 128 + sig, (p.returncode, out, err)
        assert f"[exit {128 + sig}]" in out
        assert f"[terminated: lean-ctx received {sig.name}; the command's process group was killed]" in out
        time.sleep(0.2)
        assert [pid for pid in pids if _alive(pid)] == []  # the leader and its background child
    finally:
        _reap(pids)
    events = subprocess.run([LEAN_CTX, "events", "tail", "--kind", "shell.ran", "--json"], cwd=tmp_path, env=_env(),
                            check=False, capture_output=True, text=True, timeout=60)
    rows = [json.loads(x)["payload"] for x in events.stdout.splitlines()]
    assert [r["exit_code"] for r in rows] == [128 + sig], events.stderr  # recorded whole, once


def test_json_says_terminated_too(tmp_path: Path) -> None:
    p = _start(tmp_path, "--json")
    pids = _pids(tmp_path, p)
    try:
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=30)
    finally:
        _reap(pids)
    assert p.returncode == 143, (out, err)
    answer = json.loads(out)
    assert answer["exit_code"] == 143 and answer["timed_out"] is False
    assert "[terminated: lean-ctx received SIGTERM" in answer["text"]


def test_an_ignored_sighup_stays_ignored(tmp_path: Path) -> None:
    """Under nohup (SIGHUP ignored) the command is not killed by a hang-up."""
    p = subprocess.Popen(["nohup", LEAN_CTX, "shell", "--", 'echo "$$" > pids; sleep 1; echo finished'],
                         cwd=tmp_path, env=_env(), text=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    pids = _pids(tmp_path, p)
    try:
        p.send_signal(signal.SIGHUP)
        out, err = p.communicate(timeout=30)
    finally:
        _reap(pids)
    assert p.returncode == 0, (out, err)
    assert "finished" in out and "terminated" not in out


# --- in-process: the handlers come and go ----------------------------------------------------------


def test_a_signal_during_execute_kills_the_command_and_the_handlers_are_restored(tmp_path: Path) -> None:
    outer: list[int] = []  # the handler in place before (so that a SIGTERM never ends the test run)
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: outer.append(signum))
    try:
        before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
        timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM))
        timer.start()
        t0 = time.monotonic()
        run = execute(["sh", "-c", "sleep 60 & echo \"$$ $!\" > pids; wait"], str(tmp_path), dict(os.environ),
                      5.0, 1 << 20)  # the timeout only bounds the test when the signal is not handled
        timer.join()
        after = {s: signal.getsignal(s) for s in before}
    finally:
        signal.signal(signal.SIGTERM, previous)
    pids = [int(x) for x in (tmp_path / "pids").read_text().split()]
    _reap(pids)
    assert time.monotonic() - t0 < 4
    assert outer == []  # lean-ctx handled it while the command ran
    assert run.exit_code == 143 and run.terminated == signal.SIGTERM and not run.timed_out
    assert run.note and "received SIGTERM" in run.note
    assert after == before


def test_a_finished_command_leaves_the_handlers_as_they_were(tmp_path: Path) -> None:
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    run = execute(["sh", "-c", "exit 3"], str(tmp_path), dict(os.environ), None, 1 << 20)
    assert run.exit_code == 3 and run.terminated is None
    assert {s: signal.getsignal(s) for s in before} == before


def test_outside_the_main_thread_nothing_is_installed(tmp_path: Path) -> None:
    """MCP and HTTP run commands in worker threads: signal handlers cannot be set there."""
    seen: list[object] = []

    def work() -> None:
        r = execute(["sh", "-c", "sleep 0.3; echo ok"], str(tmp_path), dict(os.environ), None, 1 << 20)
        seen.append(r.stdout)

    before = signal.getsignal(signal.SIGTERM)
    t = threading.Thread(target=work)
    t.start()
    time.sleep(0.1)
    assert signal.getsignal(signal.SIGTERM) is before
    t.join(10)
    assert seen == ["ok\n"]
