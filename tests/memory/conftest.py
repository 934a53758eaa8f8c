"""Fixtures shared by the memory, handoff and proof tests (``home``, a fresh data dir per test,
comes from tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    """An empty git project (a ``.git`` folder marks its root)."""
    p = tmp_path / "proj"
    (p / ".git").mkdir(parents=True)
    return p
