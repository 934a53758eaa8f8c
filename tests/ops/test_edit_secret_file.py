"""A well-known secret file is not edited, as it is not read: whether an old text matches
would tell what the secret holds. The refusal is recorded like any other, and the switch that
allows reading such files allows editing them."""

from __future__ import annotations

from pathlib import Path

import pytest

from leanctx.app import LeanCtx
from leanctx.errors import LeanCtxError
from leanctx.events.codec import payload_dict
from leanctx.ops.edit import edit_file


@pytest.fixture()
def lc(tmp_path: Path):  # type: ignore[no-untyped-def]
    app = LeanCtx(tmp_path / "data" / "e.db")
    yield app
    app.close()


@pytest.mark.parametrize("name", [".env", "config/.env.production", "keys/id_rsa", "certs/server.pem"])
def test_a_secret_file_is_not_edited(lc, tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("LEAN_CTX_ALLOW_SECRET_FILES", raising=False)
    proj = tmp_path / "proj"
    f = proj / name
    f.parent.mkdir(parents=True)
    f.write_text("API_TOKEN=tapir-secret-123\n")
    with pytest.raises(LeanCtxError) as exc:
        edit_file(lc, proj, name, "tapir", "x", allow_unread=True, actor="a1")
    assert exc.value.code == "EDIT_SECRET_FILE"
    assert f.read_text() == "API_TOKEN=tapir-secret-123\n"  # untouched
    calls = [payload_dict(e.payload) for e in lc.store.read_all(0) if e.kind == "tool.called"]
    assert any(c.get("error_code") == "EDIT_SECRET_FILE" for c in calls), calls


def test_the_read_switch_allows_the_edit(lc, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LEAN_CTX_ALLOW_SECRET_FILES", "1")
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".env").write_text("DEBUG=0\n")
    edit_file(lc, proj, ".env", "DEBUG=0", "DEBUG=1", allow_unread=True, actor="a1")
    assert (proj / ".env").read_text() == "DEBUG=1\n"
