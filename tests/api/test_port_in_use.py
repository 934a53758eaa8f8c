"""A server asked for a port another program holds: ``PORT_IN_USE`` (exit 2), naming the port and
a free one, as a line or as JSON with ``--json``, before anything else is printed — for ``lean-ctx
serve``, ``lean-ctx dashboard`` and ``lean-ctx mcp --http``. The real CLI, a real listening socket.
(``lean-ctx daemon`` serves a Unix socket, not a port: a second one is refused by its lock.)"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

LEAN_CTX = str(Path(sys.executable).parent / "lean-ctx")
VERBS = [["serve"], ["dashboard"], ["mcp", "--http"]]


@pytest.fixture
def taken() -> Iterator[int]:
    """A loopback port some other program listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield int(s.getsockname()[1])


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LEAN_CTX_DB", "LEAN_CTX_HTTP_TOKEN")}
    return subprocess.run([LEAN_CTX, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False)


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@pytest.mark.parametrize("verb", VERBS, ids=[" ".join(v) for v in VERBS])
def test_a_port_in_use_is_a_coded_error(verb: list[str], taken: int, tmp_path: Path) -> None:
    p = _run([*verb, "--port", str(taken)], tmp_path)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert p.stderr.startswith("error[PORT_IN_USE]: "), p.stderr
    assert p.stderr.count("\n") == 1, p.stderr  # one line: nothing of uvicorn's, no "serving at" announced
    assert f"port {taken} on 127.0.0.1 is already in use" in p.stderr and "--port 0" in p.stderr
    suggested = int(p.stderr.split("choose --port ", 1)[1].split()[0])
    assert suggested != taken and _free(suggested)


@pytest.mark.parametrize("verb", VERBS, ids=[" ".join(v) for v in VERBS])
def test_a_port_in_use_as_json(verb: list[str], taken: int, tmp_path: Path) -> None:
    p = _run(["--json", *verb, "--port", str(taken)], tmp_path)
    assert p.returncode == 2, (p.returncode, p.stderr)
    err = json.loads(p.stdout)["error"]
    assert err["code"] == "PORT_IN_USE" and str(taken) in err["message"]
    assert err["details"]["port"] == taken and err["details"]["host"] == "127.0.0.1"
    assert err["details"]["free_port"] != taken
    assert "Errno" not in p.stderr and "Uvicorn" not in p.stderr, p.stderr


def test_an_address_that_cannot_be_bound_is_a_coded_error(tmp_path: Path) -> None:
    p = _run(["serve", "--host", "no-such-host.invalid", "--port", "0", "--token", "x" * 32], tmp_path)
    assert p.returncode == 2 and p.stderr.startswith("error[HTTP_BIND_FAILED]: "), p.stderr
    assert "no-such-host.invalid" in p.stderr
