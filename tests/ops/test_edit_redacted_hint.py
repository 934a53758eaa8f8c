"""An edit whose old text was copied from a redacted read holds ``[REDACTED:...]`` where the file
holds the real value: it cannot match, and ``EDIT_NO_MATCH`` says why and how to proceed (old
text around the secret, or a ``--raw`` read). Through the real console script."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.app import LeanCtx
from leanctx.errors import LeanCtxError
from leanctx.ops.edit import edit_file

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))


def run(db: Path, proj: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LEAN_CTX_DB": str(db), "LEAN_CTX_AGENT_ID": "A", "LEAN_CTX_NO_DAEMON": "1"}
    env.pop("LEAN_CTX_SESSION_ID", None)
    return subprocess.run([LEAN_CTX, "--project", str(proj), *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False)


@pytest.fixture()
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "config.py").write_text('import os\nAPI_TOKEN = "tapir-Secret-123"\nDEBUG = 1\n')
    return root.resolve()


def test_old_text_from_a_redacted_read_gets_the_hint(tmp_path: Path, proj: Path) -> None:
    db = tmp_path / "e.db"
    f = proj / "config.py"
    p = run(db, proj, "read", "config.py", "--mode", "full")
    assert p.returncode == 0, p.stderr
    line = next(x for x in p.stdout.splitlines() if x.startswith("API_TOKEN"))
    assert line == 'API_TOKEN = "[REDACTED:assignment]"'  # what the agent saw, and copies
    p = run(db, proj, "edit", "config.py", "--old", line, "--new", 'API_TOKEN = os.environ["API_TOKEN"]')
    assert p.returncode == 2
    assert "error[EDIT_NO_MATCH]" in p.stderr
    assert "redaction marker" in p.stderr and "real value" in p.stderr
    assert "--raw" in p.stderr and "around the secret" in p.stderr
    assert "tapir" not in p.stderr + p.stdout  # the hint never tells the secret
    assert f.read_text() == 'import os\nAPI_TOKEN = "tapir-Secret-123"\nDEBUG = 1\n'
    # the way out it names: a raw read, then the real old text
    p = run(db, proj, "read", "config.py", "--mode", "full", "--raw")
    assert p.returncode == 0, p.stderr
    line = next(x for x in p.stdout.splitlines() if x.startswith("API_TOKEN"))
    p = run(db, proj, "edit", "config.py", "--old", line, "--new", 'API_TOKEN = os.environ["API_TOKEN"]')
    assert p.returncode == 0, p.stderr
    assert f.read_text() == 'import os\nAPI_TOKEN = os.environ["API_TOKEN"]\nDEBUG = 1\n'


def test_a_plain_mismatch_keeps_the_plain_message(tmp_path: Path, proj: Path) -> None:
    db = tmp_path / "e.db"
    assert run(db, proj, "read", "config.py", "--mode", "full").returncode == 0
    p = run(db, proj, "edit", "config.py", "--old", "DEBUG = 2", "--new", "DEBUG = 3")
    assert p.returncode == 2 and "error[EDIT_NO_MATCH]" in p.stderr
    assert "copy it exactly" in p.stderr and "redaction" not in p.stderr


def test_the_error_carries_a_marker_detail(tmp_path: Path, proj: Path) -> None:
    with LeanCtx(tmp_path / "d.db") as lc:
        with pytest.raises(LeanCtxError) as e:
            edit_file(lc, proj, "config.py", 'API_TOKEN = "[REDACTED:assignment]"', "x", allow_unread=True,
                      actor="a1")
        assert e.value.code == "EDIT_NO_MATCH"
        assert e.value.details.get("redaction_marker") is True
        with pytest.raises(LeanCtxError) as e:
            edit_file(lc, proj, "config.py", "DEBUG = 2", "x", allow_unread=True, actor="a1")
        assert e.value.code == "EDIT_NO_MATCH" and "redaction_marker" not in e.value.details
