"""``ctx_handoff create out=FILE`` writes a file for an agent, so it follows the rules of the
other writing tool (``ctx_edit``): the path stays inside the project (``..``, absolute paths and
symlinks pointing out are refused), and an existing file is not replaced unless the call says
``overwrite=true``. A refused path is refused before the handoff is created, so the log does not
record a handoff nobody received. ``import path=`` reads inside the project only, likewise."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from leanctx.api import registry
from leanctx.api.registry import Caller
from leanctx.app import LeanCtx
from leanctx.errors import LeanCtxError
from leanctx.projections.handoffs import list_created

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def lc(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "e.db") as app:
        yield app


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    return p


def me(lc: LeanCtx, proj: Path) -> Caller:
    c = Caller("a", "s-a", str(proj))
    registry.call(lc, c, "ctx_agent", {"action": "register", "role": "dev"})
    return c


def refused(lc: LeanCtx, who: Caller, **args: object) -> LeanCtxError:
    with pytest.raises(LeanCtxError) as e:
        registry.call(lc, who, "ctx_handoff", {"action": "create", **args})
    return e.value


def created(lc: LeanCtx) -> int:
    return len(list_created(lc.projections.reader("handoffs")))


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "home", "dotdot_in_middle"])
def test_out_outside_the_project_is_refused_before_anything_is_created(
        lc: LeanCtx, proj: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # a wrong answer writes in tmp_path, never the real home
    out = {"dotdot": "../escape.json", "absolute": str(tmp_path / "abs.json"), "home": "~/h.json",
           "dotdot_in_middle": "sub/../../escape.json"}[kind]
    err = refused(lc, me(lc, proj), out=out)
    assert err.code == "HANDOFF_PATH_OUTSIDE_PROJECT", err
    assert created(lc) == 0
    assert not (tmp_path / "escape.json").exists() and not (tmp_path / "abs.json").exists()
    assert not (home / "h.json").exists()


def test_out_through_a_symlink_pointing_out_is_refused(lc: LeanCtx, proj: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (proj / "link").symlink_to(tmp_path / "elsewhere")
    err = refused(lc, me(lc, proj), out="link/h.json")
    assert err.code == "HANDOFF_PATH_OUTSIDE_PROJECT"
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_an_existing_file_is_kept_unless_overwrite(lc: LeanCtx, proj: Path) -> None:
    who = me(lc, proj)
    (proj / "keep.txt").write_text("the user's notes\n")
    err = refused(lc, who, out="keep.txt")
    assert err.code == "HANDOFF_OUT_EXISTS" and "overwrite=true" in err.message
    assert (proj / "keep.txt").read_text() == "the user's notes\n" and created(lc) == 0
    out = registry.call(lc, who, "ctx_handoff", {"action": "create", "out": "keep.txt", "overwrite": True})
    assert "→ keep.txt" in out["text"]
    assert (proj / "keep.txt").read_text().startswith("{") and created(lc) == 1


def test_a_new_file_inside_is_written_in_new_folders(lc: LeanCtx, proj: Path) -> None:
    out = registry.call(lc, me(lc, proj), "ctx_handoff", {"action": "create", "out": "handoffs/h1.json"})
    assert "→ handoffs/h1.json" in out["text"]
    assert (proj / "handoffs" / "h1.json").read_text().endswith("\n")


def test_import_path_outside_the_project_is_refused(lc: LeanCtx, proj: Path, tmp_path: Path) -> None:
    (tmp_path / "b.json").write_text("{}\n")
    with pytest.raises(LeanCtxError) as e:
        registry.call(lc, me(lc, proj), "ctx_handoff", {"action": "import", "path": str(tmp_path / "b.json")})
    assert e.value.code == "HANDOFF_PATH_OUTSIDE_PROJECT"


def test_an_out_that_cannot_be_written_records_nothing(lc: LeanCtx, proj: Path) -> None:
    who = me(lc, proj)
    (proj / "afile").write_text("x\n")
    err = refused(lc, who, out="afile/x/b.json")
    assert err.code == "HANDOFF_OUT_UNWRITABLE" and created(lc) == 0
    (proj / "folder").mkdir()
    err = refused(lc, who, out="folder", overwrite=True)
    assert err.code == "HANDOFF_OUT_IS_A_DIRECTORY" and created(lc) == 0
