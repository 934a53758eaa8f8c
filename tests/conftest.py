"""Nothing a test does is written into the real home.

- From the start of the session (``pytest_configure``, before collection, so module- and
  session-scoped fixtures are covered too) ``LEAN_CTX_HOME`` and ``XDG_DATA_HOME`` (its fallback)
  point into a temporary directory, removed at the end.
- Every test then gets a fresh data dir of its own (the autouse fixture ``home``, via
  monkeypatch), outside its ``tmp_path`` so that a project rooted at ``tmp_path`` does not see it.

Subprocesses inherit the environment, so a ``lean-ctx`` run by a test writes there too. A test
that sets its own ``LEAN_CTX_HOME`` (monkeypatch, or a subprocess ``env``) overrides it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

_VARS = ("LEAN_CTX_HOME", "XDG_DATA_HOME")
_saved: dict[str, str | None] = {}
_session_dir: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    base = tempfile.mkdtemp(prefix="lean-ctx-tests-")
    _session_dir.append(base)
    for k in _VARS:
        _saved[k] = os.environ.get(k)
    os.environ["LEAN_CTX_HOME"] = os.path.join(base, "lean-ctx")
    os.environ["XDG_DATA_HOME"] = os.path.join(base, "xdg")


def pytest_unconfigure(config: pytest.Config) -> None:
    for k, v in _saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    for base in _session_dir:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(autouse=True, name="home")
def _isolated_data_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    base = tmp_path_factory.mktemp("data-home")
    home = base / "lean-ctx"
    monkeypatch.setenv("LEAN_CTX_HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(base / "xdg"))
    return home
