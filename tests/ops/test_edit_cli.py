"""``lean-ctx edit`` through the real console script."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.app import LeanCtx
from leanctx.events import NewEvent, TopicFilter
from leanctx.events.kinds.context import FileRead

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))  # this interpreter's, not whatever PATH finds


def run(db: Path, proj: Path, *args: str, agent: str = "A", cwd: Path | None = None,
        stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LEAN_CTX_DB": str(db), "LEAN_CTX_AGENT_ID": agent}
    env.pop("LEAN_CTX_SESSION_ID", None)
    return subprocess.run([LEAN_CTX, "--project", str(proj), *args], capture_output=True, text=True, env=env,
                          timeout=120, cwd=cwd, input=stdin)


def read(db: Path, proj: Path, agent: str, rel: str) -> None:
    h = hashlib.sha256((proj / rel).read_bytes()).hexdigest()
    with LeanCtx(db) as lc:
        ev = FileRead(path=rel, mode="full", requested_mode="full", content_hash=h, lines=1, raw_tokens=1,
                      sent_tokens=1)
        lc.store.append(f"session:{agent}", [NewEvent(event=ev, actor=agent, project=str(proj.resolve()))])


@pytest.fixture()
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    return root.resolve()


def test_cli_edit_flow(tmp_path: Path, proj: Path) -> None:
    db = tmp_path / "e.db"
    f = proj / "src" / "app.py"
    p = run(db, proj, "edit", "src/app.py", "--old", "return 1", "--new", "return 2")
    assert p.returncode == 2 and "error[EDIT_NOT_READ]" in p.stderr and f.read_text().endswith("return 1\n")
    read(db, proj, "A", "src/app.py")
    p = run(db, proj, "edit", "src/app.py", "--old", "return 1", "--new", "return 2")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("edited src/app.py: 1 replacement from line 2")
    # a path relative to the working directory; texts from a file and from stdin; JSON
    (tmp_path / "old.txt").write_text("def main():\n")
    p = run(db, proj, "edit", "app.py", "--old-file", str(tmp_path / "old.txt"), "--new-file", "-", "--json",
            cwd=proj / "src", stdin="def main() -> int:\n")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert (out["path"], out["replacements"], out["read_before"]) == ("src/app.py", 1, True)
    assert f.read_text() == "def main() -> int:\n    return 2\n"
    # another agent changes it: A's next edit is stale
    read(db, proj, "B", "src/app.py")
    assert run(db, proj, "edit", "src/app.py", "--old", "2", "--new", "3", agent="B").returncode == 0
    p = run(db, proj, "edit", "src/app.py", "--old", "int", "--new", "str", "--json")
    assert p.returncode == 2
    err = json.loads(p.stdout)["error"]
    assert err["code"] == "EDIT_STALE_READ" and err["details"]["changed_by"] == "B"
    with LeanCtx(db) as lc:
        edited = list(lc.store.iter_all(0, TopicFilter(kinds=("file.edited",))))
        assert [e.actor for e in edited] == ["A", "A", "B"]
        stuck = [e.actor for e in lc.store.iter_all(0, TopicFilter(kinds=("scent.deposited",)))]
        assert stuck == ["A", "A"]


@pytest.mark.parametrize("args,code", [
    (("edit", "src/app.py", "--old", "x"), "EDIT_INVALID_INPUT"),
    (("edit", "src/app.py", "--old", "x", "--old-file", "f", "--new", "y"), "EDIT_INVALID_INPUT"),
    (("edit", "src/app.py", "--old-file", "-", "--new-file", "-"), "EDIT_INVALID_INPUT"),
    (("edit", "../outside.txt", "--old", "x", "--new", "y", "--allow-unread"), "EDIT_PATH_OUTSIDE_PROJECT"),
    (("edit", "/etc/hostname", "--old", "x", "--new", "y", "--allow-unread"), "EDIT_PATH_OUTSIDE_PROJECT"),
])
def test_cli_edit_refusals(tmp_path: Path, proj: Path, args: tuple[str, ...], code: str) -> None:
    (tmp_path / "outside.txt").write_text("x\n")
    p = run(tmp_path / "e.db", proj, *args)
    assert p.returncode == 2 and f"error[{code}]" in p.stderr, p.stderr
    assert (tmp_path / "outside.txt").read_text() == "x\n"
