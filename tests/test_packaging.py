"""lean-ctx runs from what a wheel holds, not only from its checkout.

A wheel carries the packages ``[tool.setuptools.packages.find]`` finds (their ``.py`` files) and
the package data ``[tool.setuptools.package-data]`` names. Building one needs setuptools from the
registry (build isolation), which tests may not reach; so the test lays out exactly those files in
a scratch directory, away from the checkout, and runs lean-ctx from there: it creates a log,
appends to it and runs the CLI's `read` on a file in `signatures` mode.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def wheel_files() -> list[Path]:
    """The files a wheel of this checkout holds (relative to the repository)."""
    conf = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    include = conf["packages"]["find"]["include"]
    data = conf.get("package-data", {})
    out: list[Path] = []
    for init in REPO.rglob("__init__.py"):
        pkg_dir = init.parent
        rel = pkg_dir.relative_to(REPO)
        if ".venv" in rel.parts or "tests" in rel.parts:
            continue
        name = ".".join(rel.parts)
        if not any(fnmatch.fnmatch(name, pat) for pat in include):
            continue
        out += [p.relative_to(REPO) for p in pkg_dir.glob("*.py")]
        for pattern in data.get(name, []):
            out += [p.relative_to(REPO) for p in pkg_dir.glob(pattern) if p.is_file()]
    return sorted(set(out))


SCRIPT = r"""
import sys
from pathlib import Path
import leanctx
assert Path(leanctx.__file__).resolve().is_relative_to(Path(sys.argv[1]).resolve()), leanctx.__file__
from leanctx.app import LeanCtx
from leanctx.commands.chat import PostMessage
with LeanCtx(Path(sys.argv[2]) / "e.db") as lc:
    lc.bus.dispatch(PostMessage(title="from a wheel", body="x"), actor="alice")
    print(lc.store.head().position)
(Path(sys.argv[2]) / "m.py").write_text("def f(x: int) -> int:\n    return x\n")
from leanctx.api.cli import main
sys.argv = ["lean-ctx", "--db", str(Path(sys.argv[2]) / "e.db"), "read", "m.py", "--mode", "signatures"]
main()
"""


def test_lean_ctx_runs_from_the_files_a_wheel_holds(tmp_path: Path) -> None:
    files = wheel_files()
    assert Path("leanctx/events/events.sql") in files and Path("leanctx/api/http/static/index.html") in files
    site = tmp_path / "site"
    for rel in files:
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / rel, site / rel)
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)  # before site-packages, where the checkout's own path entry is
    p = subprocess.run([sys.executable, "-c", SCRIPT, str(site), str(work)], capture_output=True, text=True,
                       env=env, cwd=work, timeout=120, check=False)
    assert p.returncode == 0, p.stderr[-3000:]
    assert int(p.stdout.splitlines()[0]) >= 1, p.stdout
    assert "f(x: int)" in p.stdout and "signatures" in p.stdout, p.stdout
