"""A command a ``ctx_shell`` call runs dies with the call: cancelled by the client, or stopped
with the server (SIGTERM, SIGINT). Real servers (``lean-ctx mcp`` over stdio, ``lean-ctx mcp
--http``, the ``/mcp`` mount of ``lean-ctx serve``), the official ``mcp`` client, and a command
that leaves a background child in its process group; the log is read back through the CLI."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import Implementation, TextContent

pytestmark = pytest.mark.anyio

LEAN_CTX = str(Path(sys.executable).parent / "lean-ctx")
GONE_WITHIN = 10.0  # seconds a killed command (and its background child) may take to disappear
_SCRUB = ("LEAN_CTX_AGENT_ID", "LEAN_CTX_SESSION_ID", "LEAN_CTX_MCP_FEATURES", "LEAN_CTX_DB", "LEAN_CTX_HOME")


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie no reaper collected does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


async def _wait_gone(pids: list[int], timeout: float = GONE_WITHIN) -> float:
    t0 = time.monotonic()
    while any(_alive(p) for p in pids):
        if time.monotonic() - t0 > timeout:
            for p in pids:  # leave nothing behind, then fail
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            pytest.fail(f"still running {timeout:g}s later: {[p for p in pids if _alive(p)]}")
        await anyio.sleep(0.02)  # the client's loop runs meanwhile (its cancellation goes out)
    return time.monotonic() - t0


@dataclass
class Server:
    kind: str  # "stdio", "mcp-http" or "serve"
    project: Path
    env: dict[str, str]
    proc: subprocess.Popen[bytes] | None = None  # the HTTP servers (stdio: spawned by the client)
    url: str | None = None

    def command(self, name: str) -> list[str]:
        """A command that writes its pid and its background child's to ``name``, then waits."""
        pidfile = self.project / name
        return ["sh", "-c", f"echo started; sleep 60 & echo $$ $! > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; wait"]

    def pids(self, name: str) -> list[int]:
        return [int(x) for x in (self.project / name).read_text().split()]

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[Client]:
        target: Any = self.url or StdioServerParameters(command=LEAN_CTX, args=["mcp"], env=self.env,
                                                        cwd=str(self.project))
        async with Client(target, mode="legacy", client_info=Implementation(name="claude-code", version="1"),
                          read_timeout_seconds=60) as client:
            yield client

    def shell_runs(self) -> list[dict[str, Any]]:
        out = subprocess.run([LEAN_CTX, "events", "tail", "--json", "--kind", "shell.ran", "-n", "100"],
                             env=self.env, cwd=self.project, capture_output=True, text=True, timeout=60, check=False)
        assert out.returncode == 0, out.stderr
        return [json.loads(line)["payload"] for line in out.stdout.splitlines() if line.strip()]

    def expand(self, archive_id: str) -> str:
        out = subprocess.run([LEAN_CTX, "expand", archive_id], env=self.env, cwd=self.project,
                             capture_output=True, text=True, timeout=60, check=False)
        assert out.returncode == 0, out.stderr
        return out.stdout


@contextmanager
def server(kind: str, tmp_path: Path) -> Iterator[Server]:
    project = tmp_path / "proj"
    project.mkdir()
    base = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    env = {**base, "LEAN_CTX_DB": str(tmp_path / "events.db"), "LEAN_CTX_HOME": str(tmp_path / "home")}
    if kind == "stdio":
        yield Server(kind, project, env)
        return
    port = _free_port()
    args = ["mcp", "--http", "--port", str(port)] if kind == "mcp-http" else ["serve", "--port", str(port)]
    log = open(tmp_path / "server.log", "wb")  # noqa: SIM115 - the server writes to it until it ends
    proc = subprocess.Popen([LEAN_CTX, *args], cwd=project, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"lean-ctx {kind} did not start: {(tmp_path / 'server.log').read_text()}")
                time.sleep(0.05)
        yield Server(kind, project, env, proc, f"http://127.0.0.1:{port}/mcp")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()


async def _wait_file(path: Path, timeout: float = 30.0) -> None:
    with anyio.fail_after(timeout):
        while not path.exists():
            await anyio.sleep(0.02)


KINDS = ["stdio", "mcp-http", "serve"]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_cancelled_call_kills_its_command_and_records_it(kind: str, tmp_path: Path) -> None:
    with server(kind, tmp_path) as srv:
        async with srv.connect() as c:
            answered: list[Any] = []
            async with anyio.create_task_group() as tg:
                async def call() -> None:
                    answered.append(await c.call_tool("ctx_shell", {"argv": srv.command("pids")}))

                tg.start_soon(call)
                await _wait_file(srv.project / "pids")
                started = time.monotonic()
                tg.cancel_scope.cancel()  # the client's cancellation: notifications/cancelled
            pids = srv.pids("pids")
            gone = await _wait_gone(pids)
            print(f"\n[{kind}] cancelled command and its background child gone {time.monotonic() - started:.2f}s "
                  f"after the cancel ({gone:.2f}s of waiting)")
            assert not answered
            after = await c.call_tool("ctx_shell", {"command": "echo still serving"})  # the session goes on
            assert not after.is_error and "still serving" in _text(after)
        with anyio.fail_after(20):  # the cancelled call is recorded: exit 130, its output so far archived
            while not [r for r in srv.shell_runs() if r["exit_code"] == 130]:
                await anyio.sleep(0.1)
        run = next(r for r in srv.shell_runs() if r["exit_code"] == 130)
        assert "sleep 60" in run["command"] and run["archive_id"], run
        assert "started" in srv.expand(run["archive_id"])


STOPS = [("stdio", signal.SIGTERM), ("stdio", signal.SIGINT), ("mcp-http", signal.SIGTERM),
         ("serve", signal.SIGTERM), ("serve", signal.SIGINT)]


@pytest.mark.parametrize(("kind", "signum"), STOPS, ids=[f"{k}-{s.name}" for k, s in STOPS])
async def test_stopping_the_server_kills_the_running_commands(kind: str, signum: signal.Signals,
                                                              tmp_path: Path) -> None:
    with server(kind, tmp_path) as srv:
        answered: list[Any] = []
        stopped = False
        try:
            async with srv.connect() as c, anyio.create_task_group() as tg:
                async def call(name: str) -> None:
                    try:
                        answered.append(await c.call_tool("ctx_shell", {"argv": srv.command(name)}))
                    except Exception as exc:  # noqa: BLE001 - the server may go before it answers
                        answered.append(exc)

                tg.start_soon(call, "one")
                tg.start_soon(call, "two")
                await _wait_file(srv.project / "one")
                await _wait_file(srv.project / "two")
                pids = srv.pids("one") + srv.pids("two")
                # stdio: the client's child that runs lean-ctx mcp (its command's parent)
                target = srv.proc.pid if srv.proc is not None else _parent(pids[0])
                started = time.monotonic()
                os.kill(target, signum)
                gone = await _wait_gone(pids)
                with anyio.fail_after(20):
                    while _alive(target):
                        await anyio.sleep(0.05)
                print(f"\n[{kind} {signum.name}] both commands gone {gone:.2f}s, the server "
                      f"{time.monotonic() - started:.2f}s after the signal")
                stopped = True
                tg.cancel_scope.cancel()
        except Exception:  # the client's own ending fails once its server is gone: no matter
            if not stopped:
                raise
        code = 128 + int(signum)
        runs = [r for r in srv.shell_runs() if "sleep 60" in r["command"]]
        assert sorted(r["exit_code"] for r in runs) == [code, code], runs
        for a in answered:  # a call that was answered says what happened
            if not isinstance(a, Exception):
                assert f"[terminated: lean-ctx received {signum.name}" in _text(a)
