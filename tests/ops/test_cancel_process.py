"""``ops.process`` stops a command run in a worker thread (where no signal handler helps): a
cancel event (exit 130), ``stop_all`` (terminated by the signal given: 128 + N) and ``kill_all``
(SIGKILL for a group that ignores SIGTERM). Real processes, each leaving a background child in
its group; what the command printed before it was stopped is returned."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from leanctx.ops import process
from leanctx.ops.process import (
    CANCELLED_EXIT_CODE,
    Run,
    cancel_on,
    execute,
    kill_all,
    running,
    stop_all,
)

GONE_WITHIN = 10.0


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def _script(pidfile: Path, ignore_term: bool = False) -> list[str]:
    trap = "trap '' TERM; " if ignore_term else ""
    return ["sh", "-c", f"{trap}echo started; sleep 60 & echo $$ $! > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; wait"]


class Worker(threading.Thread):
    """``execute`` in a thread of its own, as a server runs it."""

    def __init__(self, argv: list[str], cancel: threading.Event | None = None, via_context: bool = False) -> None:
        super().__init__(daemon=True)
        self.argv, self.cancel, self.via_context = argv, cancel, via_context
        self.run_: Run | None = None

    def run(self) -> None:
        if self.via_context:
            assert self.cancel is not None
            with cancel_on(self.cancel):
                self.run_ = execute(self.argv, None, dict(os.environ), 120, 1 << 20)
        else:
            self.run_ = execute(self.argv, None, dict(os.environ), 120, 1 << 20, cancel=self.cancel)


@pytest.fixture(autouse=True)
def _nothing_left() -> Iterator[None]:
    yield
    kill_all(grace=0.5)  # a failed test leaves no command to the next


def _started(pidfile: Path) -> list[int]:
    """The pids the command wrote, once its thread has it in the registry (the file can come first)."""
    deadline = time.monotonic() + 20
    while not pidfile.exists():
        assert time.monotonic() < deadline, "the command did not start"
        time.sleep(0.01)
    pids = [int(x) for x in pidfile.read_text().split()]
    while pids[0] not in running():
        assert time.monotonic() < deadline, "the command is not in the registry"
        time.sleep(0.01)
    return pids


def _finished(w: Worker, pids: list[int]) -> Run:
    w.join(GONE_WITHIN)
    assert not w.is_alive(), "execute did not return"
    deadline = time.monotonic() + GONE_WITHIN
    while any(_alive(p) for p in pids):
        assert time.monotonic() < deadline, f"still running: {[p for p in pids if _alive(p)]}"
        time.sleep(0.02)
    assert w.run_ is not None
    return w.run_


@pytest.mark.parametrize("via_context", [False, True], ids=["argument", "cancel_on"])
def test_a_cancel_event_kills_the_group_and_says_so(tmp_path: Path, via_context: bool) -> None:
    cancel = threading.Event()
    w = Worker(_script(tmp_path / "p"), cancel, via_context)
    w.start()
    pids = _started(tmp_path / "p")
    t0 = time.monotonic()
    cancel.set()
    run = _finished(w, pids)
    assert time.monotonic() - t0 < 5
    assert run.exit_code == CANCELLED_EXIT_CODE == 130 and run.cancelled and not run.timed_out
    assert run.terminated is None and run.stdout == "started\n"
    assert run.note is not None and run.note.startswith("[cancelled: ")
    assert pids[0] not in running()


def test_stop_all_ends_every_running_command_as_terminated(tmp_path: Path) -> None:
    workers = [Worker(_script(tmp_path / name)) for name in ("a", "b")]
    for w in workers:
        w.start()
    pids = [_started(tmp_path / "a"), _started(tmp_path / "b")]
    assert stop_all(signal.SIGTERM) == 2
    for w, p in zip(workers, pids):
        run = _finished(w, p)
        assert run.exit_code == 143 and run.terminated == signal.SIGTERM and not run.cancelled
        assert run.note is not None and "lean-ctx received SIGTERM" in run.note and run.stdout == "started\n"
    assert running() == [] and stop_all() == 0


def test_kill_all_kills_a_group_that_ignores_sigterm(tmp_path: Path) -> None:
    w = Worker(_script(tmp_path / "p", ignore_term=True))
    w.start()
    pids = _started(tmp_path / "p")
    t0 = time.monotonic()
    assert kill_all(signal.SIGINT, grace=0.3) == 1
    while any(_alive(p) for p in pids):  # gone before the worker's own SIGKILL: kill_all's did it
        assert time.monotonic() - t0 < process.KILL_GRACE_SECONDS, "not killed by kill_all"
        time.sleep(0.01)
    run = _finished(w, pids)
    assert run.exit_code == 130 and run.terminated == signal.SIGINT


def test_a_command_that_ends_by_itself_is_not_marked(tmp_path: Path) -> None:
    cancel = threading.Event()
    run = execute(["sh", "-c", "echo done"], None, dict(os.environ), 10, 1 << 20, cancel=cancel)
    cancel.set()  # too late: changes nothing
    assert run.exit_code == 0 and not run.cancelled and run.note is None and running() == []
