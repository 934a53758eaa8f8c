"""What the redaction audit tests share: the megabyte of a pathological line, the timing check
that redaction of one stays linear, and the real CLI run in a fresh home (no daemon)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from leanctx.context.secrets import redact

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
MB = 1_000_000


def assert_redacts_in_linear_time(text: str) -> None:
    """A line of about a megabyte is redacted in well under quadratic time: < 10 CPU seconds of
    this process (wall time is what a loaded machine stretches: one such run took over 10 s of
    wall time under a load of 8 on 2 cores). The linear scans take 0.1-2 s of CPU here; a quadratic
    one takes minutes (the quadratic scans these tests caught took 1 s for 72 KB, so ~200 s for
    1 MB)."""
    assert len(text) >= 0.9 * MB
    t0 = time.process_time()
    redact(text)
    took = time.process_time() - t0
    assert took < 10.0, f"{took:.2f} CPU s"


def secret_cli(home: Path, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``lean-ctx ARGS`` in ``project`` with its own ``home`` (no daemon, agent ``secret-tester``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_HOME=str(home), LEAN_CTX_DB=str(home / "data" / "events.db"), LEAN_CTX_NO_DAEMON="1",
               LEAN_CTX_AGENT_ID="secret-tester")
    return subprocess.run([LEAN_CTX, *args], check=False, capture_output=True, text=True, env=env, cwd=project,
                          timeout=120)
