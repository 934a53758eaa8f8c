"""Shared helpers for the ctx_read tests (a project on disk, a log, reading as a conversation)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from leanctx.app import LeanCtx
from leanctx.events.codec import payload_dict
from leanctx.ops.read import ReadAnswer, read_files

T0 = 1_800_000_000.0
LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))  # this interpreter's, not whatever PATH finds
APP_PY = '''"""A small app."""

import os
from typing import Any


class Store:
    """Keeps things."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.items: dict[str, Any] = {}

    def get(self, key: str) -> Any:
        return self.items.get(key)

    def put(self, key: str, value: Any) -> None:
        self.items[key] = value


def handle_timeout(seconds: float) -> str:
    # retry after a timeout
    return f"timeout after {seconds}s"


def main() -> None:
    s = Store(os.getcwd())
    s.put("a", 1)
    print(s.get("a"))
'''


class Reader:
    """Reads as one agent/session in one project, at a controllable time."""

    def __init__(self, lc: LeanCtx, project: Path) -> None:
        self.lc = lc
        self.project = project
        self.now = T0

    def __call__(self, paths: str | list[str], *, agent: str | None = "agent-a", session: str | None = "s1",
                 **kw: Any) -> list[ReadAnswer]:
        kw.setdefault("now", self.now)
        return read_files(self.lc, [paths] if isinstance(paths, str) else paths, actor=agent, session_id=session,
                          project=str(self.project), **kw)

    def one(self, path: str, **kw: Any) -> ReadAnswer:
        answers = self(path, **kw)
        assert len(answers) == 1
        return answers[0]

    def events(self, kind: str) -> list[dict[str, Any]]:
        out = []
        for e in self.lc.store.read_all(0):
            if e.kind == kind:
                d = payload_dict(e.payload)
                d["_actor"] = e.actor
                d["_position"] = e.position
                d["_correlation"] = e.correlation_id
                out.append(d)
        return out


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text(APP_PY)
    (root / "README.md").write_text("# proj\n\nA project.\n")
    return root


@pytest.fixture()
def lc(tmp_path: Path) -> Iterator[LeanCtx]:
    app = LeanCtx(tmp_path / "events.db")
    yield app
    app.close()


@pytest.fixture()
def reader(lc: LeanCtx, project: Path) -> Reader:
    return Reader(lc, project)
