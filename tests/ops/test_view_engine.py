"""Cached views are keyed by the engine that rendered them: a change of the view code's source
(or of the grammars) makes old views unreachable, without anyone bumping a version number."""

from __future__ import annotations

from pathlib import Path

from leanctx.cache import views


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_code_digest_follows_every_source_file(tmp_path: Path) -> None:
    root = _tree(tmp_path / "context", {"modes/outline.py": "A = 1\n", "symbols/specs.py": "B = 2\n"})
    first = views._code_digest(root)
    assert views._code_digest(root) == first  # stable
    (root / "symbols" / "specs.py").write_text("B = 3\n")
    second = views._code_digest(root)
    assert second != first
    (root / "modes" / "new.py").write_text("")
    assert views._code_digest(root) not in {first, second}
    (root / "modes" / "new.py").rename(root / "modes" / "renamed.py")  # a file's name counts too
    assert views._code_digest(root) not in {first, second}


def test_the_real_engine_covers_the_read_modes_and_symbols() -> None:
    root = Path(views.__file__).resolve().parents[1] / "context"
    covered = {p.relative_to(root).as_posix() for p in root.rglob("*.py")}
    assert {"modes/outline.py", "modes/compact.py", "symbols/specs.py", "secrets.py"} <= covered
    package = root.parent
    assert all((package / rel).is_file() for rel in views._SHAPERS)  # decoding and file redaction too
    assert views.ENGINE == views._engine_fingerprint()
