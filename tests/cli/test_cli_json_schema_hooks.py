"""``lean-ctx schema`` and ``lean-ctx hooks pre-commit``: ``--json`` like every other verb, and
``schema`` writes only into a source tree's ``schema/`` (else ``--out DIR``).

Real console script in real subprocesses, real git. ``lean-ctx schema`` is never run against
the repository's own ``schema/`` here (only ``--check``, which writes nothing, or ``--out``).
An installed (non-checkout) lean-ctx is a copy of the package in a scratch site directory put
first on ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx import schema_gen

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
REPO = Path(schema_gen.__file__).resolve().parents[1]


def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
        argv: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("LEAN_CTX_DB", "LEAN_CTX_DEBUG", "LEAN_CTX_AGENT_ID")}
    full.update(env or {})
    return subprocess.run([*(argv or [LEAN_CTX]), *args], capture_output=True, text=True, env=full, cwd=cwd,
                          timeout=120, check=False)


def one_json(p: subprocess.CompletedProcess[str]) -> dict:
    assert "Traceback" not in p.stderr, p.stderr
    lines = p.stdout.strip().splitlines()
    assert len(lines) == 1, p.stdout
    return json.loads(lines[0])


# --- schema --------------------------------------------------------------------------------------

def test_schema_check_json_reports_the_source_tree(tmp_path: Path) -> None:
    stale = schema_gen.drift()  # what the repository's schema/ is right now
    for args in (["schema", "--check", "--json"], ["--json", "schema", "--check"]):
        p = run(*args, cwd=tmp_path)
        out = one_json(p)
        assert out == {"dir": str(REPO / "schema"), "current": stale == [], "stale": stale}
        assert p.returncode == (1 if stale else 0)


def test_schema_out_writes_there_and_check_json_sees_drift(tmp_path: Path) -> None:
    target = tmp_path / "generated"
    p = run("schema", "--out", str(target), "--json", cwd=tmp_path)
    out = one_json(p)
    assert p.returncode == 0 and out["dir"] == str(target)
    assert set(out["written"]) == set(schema_gen.generate())
    assert (target / "EVENTS.md").read_text() == schema_gen.catalog()
    p = run("schema", "--check", "--out", str(target), "--json")
    assert p.returncode == 0 and one_json(p) == {"dir": str(target), "current": True, "stale": []}
    (target / "EVENTS.md").write_text("edited by hand\n")
    (target / "json" / "ghost.kind.json").write_text("{}")
    p = run("--json", "schema", "--check", "--out", str(target))
    assert p.returncode == 1
    assert one_json(p) == {"dir": str(target), "current": False, "stale": ["EVENTS.md", "json/ghost.kind.json"]}
    p = run("schema", "--check", "--out", str(target))  # human text too
    assert p.returncode == 1 and p.stdout.startswith("stale: EVENTS.md, json/ghost.kind.json")
    p = run("schema", "--out", str(target), "--json")
    assert p.returncode == 0 and one_json(p)["written"] == ["EVENTS.md"]
    assert not (target / "json" / "ghost.kind.json").exists()
    p = run("schema", "--out", str(target))
    assert p.returncode == 0 and p.stdout == f"{target} is current\n"


def test_schema_out_unwritable_is_a_coded_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"  # a path under a file cannot be created, even by root
    blocker.write_text("x")
    p = run("schema", "--out", str(blocker / "schema"), "--json")
    assert p.returncode == 2 and one_json(p)["error"]["code"] == "OUTPUT_UNWRITABLE"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site directory holding a copy of the package, as a wheel installs it (no pyproject.toml,
    no schema/ beside it)."""
    site = tmp_path_factory.mktemp("site-packages")
    shutil.copytree(REPO / "leanctx", site / "leanctx", ignore=shutil.ignore_patterns("__pycache__"))
    return site


def run_installed(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", "import sys; sys.argv[0] = 'lean-ctx'; from leanctx.api.cli import main; main()"]
    return run(*args, cwd=cwd, env={"PYTHONPATH": str(site)}, argv=argv)


def test_an_installed_lean_ctx_needs_out(installed: Path, tmp_path: Path) -> None:
    where = run_installed(installed, "--version", cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    probe = subprocess.run([sys.executable, "-c", "import leanctx; print(leanctx.__file__)"], capture_output=True,
                           text=True, env={**os.environ, "PYTHONPATH": str(installed)}, cwd=tmp_path, check=True)
    assert probe.stdout.strip() == str(installed / "leanctx" / "__init__.py")  # the copy runs, not the checkout
    for args in (["schema"], ["schema", "--check"]):
        p = run_installed(installed, *args, cwd=tmp_path)
        assert p.returncode == 2 and p.stderr.startswith("error[SCHEMA_OUT_REQUIRED]:"), p.stderr
        assert "--out" in p.stderr and "Traceback" not in p.stderr
        p = run_installed(installed, *args, "--json", cwd=tmp_path)
        assert p.returncode == 2 and one_json(p)["error"]["code"] == "SCHEMA_OUT_REQUIRED"
    assert not (installed / "schema").exists()  # nothing written beside the package
    target = tmp_path / "out"
    p = run_installed(installed, "schema", "--out", str(target), "--json", cwd=tmp_path)
    assert p.returncode == 0 and one_json(p)["dir"] == str(target)
    assert schema_gen.drift(target) == []
    p = run_installed(installed, "schema", "--check", "--out", str(target), "--json", cwd=tmp_path)
    assert p.returncode == 0 and one_json(p)["current"] is True
    assert not (installed / "schema").exists()


# --- hooks pre-commit ------------------------------------------------------------------------

def git(repo: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "LEAN_CTX_"))}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(repo.parent / "gitconfig"))
    subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, env=env, timeout=120, check=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    r = tmp_path / "repo"
    (r / "src").mkdir(parents=True)
    (tmp_path / "gitconfig").write_text("")
    git(r, "init", "-q")
    (r / "src" / "a.py").write_text("a\n")
    (r / "src" / "b.py").write_text("b\n")
    return r


def test_pre_commit_json(tmp_path: Path, repo: Path) -> None:
    db = str(tmp_path / "hook.db")
    # no log yet: nothing to check (and none is created)
    p = run("hooks", "pre-commit", "--json", cwd=repo, env={"LEAN_CTX_DB": db, "LEAN_CTX_AGENT_ID": "agent-a"})
    assert p.returncode == 0 and one_json(p) == {"ok": True, "agent": "agent-a", "checked": 0, "conflicts": []}
    assert not Path(db).exists()
    lock = run("chat", "lock", "src/a.py", "--reason", "rewriting", cwd=repo,
               env={"LEAN_CTX_DB": db, "LEAN_CTX_AGENT_ID": "agent-b"})
    assert lock.returncode == 0, lock.stderr
    git(repo, "add", "src/a.py", "src/b.py")
    for args in (["hooks", "pre-commit", "--json"], ["--json", "hooks", "pre-commit"]):
        p = run(*args, cwd=repo, env={"LEAN_CTX_DB": db, "LEAN_CTX_AGENT_ID": "agent-a"})
        assert p.returncode == 1, p.stderr
        assert p.stderr == ""  # the verdict is the JSON
        out = one_json(p)
        assert out["ok"] is False and out["agent"] == "agent-a" and out["checked"] == 2
        [c] = out["conflicts"]
        assert c["code"] == "PATH_LOCK_CONFLICT" and c["path"] == "src/a.py"
        assert c["lock"]["owner"] == "agent-b" and c["lock"]["reason"] == "rewriting"
        assert c["message"].startswith("src/a.py is locked by agent-b")
    # the owner passes
    p = run("hooks", "pre-commit", "--json", cwd=repo, env={"LEAN_CTX_DB": db, "LEAN_CTX_AGENT_ID": "agent-b"})
    assert p.returncode == 0 and one_json(p) == {"ok": True, "agent": "agent-b", "checked": 2, "conflicts": []}
    # human output unchanged: the refusal on stderr, exit 1
    p = run("hooks", "pre-commit", cwd=repo, env={"LEAN_CTX_DB": db, "LEAN_CTX_AGENT_ID": "agent-a"})
    assert p.returncode == 1 and p.stdout == "" and "error[PATH_LOCK_CONFLICT]" in p.stderr


def test_pre_commit_json_errors_are_json(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    p = run("hooks", "pre-commit", "--json", cwd=plain, env={"LEAN_CTX_DB": str(tmp_path / "x.db"),
                                                           "GIT_CEILING_DIRECTORIES": str(tmp_path)})
    assert p.returncode == 2 and one_json(p)["error"]["code"] == "HOOK_NOT_A_GIT_REPO"
