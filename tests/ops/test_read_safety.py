"""Reads and secrets, reads and the project jail.

- Well-known secret files are refused unless configured.
- Planted secrets never reach the database file, its WAL, the view cache or the archives,
  whatever the mode (raw included: the agent gets the raw text, nothing keeps it).
- Paths that leave the project (``..``, absolute, symlinks out) are refused with stable codes.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from leanctx.archive import ArchiveStore
from leanctx.cache.views import views_for
from leanctx.errors import LeanCtxError
from leanctx.ops.read import redact_keeping_lines

from .test_read_common import Reader, lc, project, reader  # noqa: F401

# the distinctive part of each planted secret: none of these may appear in any byte we keep
PLANTED = {
    "aws": "AKIAQ7ZX4RT2PLANTED1",
    "github": "ghp_PlantedGithubToken0123456789abcdefABCD",
    "openai": "sk-proj-PlantedOpenAIKey0123456789abcdef",
    "anthropic": "sk-ant-api03-PlantedAnthropicKey0123456789",
    "slack": "xoxb-1234567890-PlantedSlackToken",
    "stripe": "sk_live_PlantedStripeKey012345",
    "google": "AIzaSyPlantedGoogleKey0123456789abcdefg",
    "password_url": "Pl4ntedUrlPassw0rd",
    "env_assign": "Pl4ntedDbSecretValue99",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.PlantedJwtSignature123",
    "private_key": "MIIEPlantedPrivateKeyBodyLine0123456789ABCDEF",
}

CONFIG = f'''"""Settings (with secrets that must never be logged)."""

AWS_ACCESS_KEY_ID = "{PLANTED['aws']}"
GITHUB = "{PLANTED['github']}"
OPENAI = "{PLANTED['openai']}"
ANTHROPIC = "{PLANTED['anthropic']}"
SLACK = "{PLANTED['slack']}"
STRIPE = "{PLANTED['stripe']}"
GOOGLE = "{PLANTED['google']}"
DATABASE_URL = "postgres://admin:{PLANTED['password_url']}@db.internal:5432/app"
DB_PASSWORD = "{PLANTED['env_assign']}"
SESSION = "{PLANTED['jwt']}"
KEY = """-----BEGIN RSA PRIVATE KEY-----
{PLANTED['private_key']}
{PLANTED['private_key'][::-1]}
-----END RSA PRIVATE KEY-----"""


def connect(timeout: float = 3.0) -> None:
    """Open the connection (a line the task mode can find: connect timeout)."""
    return None
''' + "".join(f"\ndef filler_{i}(x: int) -> int:\n    return x + {i}\n" for i in range(400))


def _kept_bytes(db: Path) -> dict[str, bytes]:
    out = {}
    for p in [db, Path(f"{db}-wal"), Path(f"{db}-shm"), *sorted((db.parent / "archives").glob("*"))]:
        if p.exists():
            out[str(p)] = p.read_bytes()
    return out


def test_planted_secrets_never_reach_the_db_the_cache_or_the_archives(reader: Reader, project: Path) -> None:
    (project / "config.py").write_text(CONFIG)
    answers = []
    for mode, kw in [("full", {}), ("signatures", {}), ("map", {}), ("lines:1-20", {}), ("aggressive", {}),
                     ("entropy", {}), ("task", {"task": "connect timeout"}), ("auto", {}), ("diff", {})]:
        answers.append(reader.one("config.py", mode=mode, fresh=True, **kw))
    capped = reader.one("config.py", mode="full", fresh=True, cap_tokens=400, session="s-cap")  # archives the view
    assert capped.capped and capped.archive_id
    raw = reader.one("config.py", mode="full", raw=True, session="s-raw")
    raw_capped = reader.one("config.py", mode="full", raw=True, cap_tokens=400, session="s-raw2")
    assert raw_capped.capped
    # the agent got raw content when it asked (and only then)
    assert PLANTED["github"] in raw.text and PLANTED["private_key"] in raw.text and "raw" in raw.text.split("\n")[0]
    for a in [*answers, capped]:
        for secret in PLANTED.values():
            assert secret not in a.text, (a.mode, secret)
    assert answers[0].redactions >= len(PLANTED)
    full = answers[0].text
    assert "[REDACTED:aws_access_key]" in full and "[REDACTED:private_key]" in full
    assert "[REDACTED:url_password]@db.internal" in full
    archive = ArchiveStore.beside(reader.lc.db).get(capped.archive_id)  # type: ignore[arg-type]
    assert "[REDACTED:github_token]" in archive
    # the cache holds redacted texts only
    cache = views_for(reader.lc)
    conn = cache._conn  # noqa: SLF001
    texts = [r[0] for r in conn.execute("SELECT text FROM cache_views UNION ALL SELECT text FROM cache_blobs")]
    assert texts and all(s not in t for t in texts for s in PLANTED.values())
    kept = _kept_bytes(reader.lc.db)
    assert any("archives" in k for k in kept)
    for name, data in kept.items():
        for kind, secret in PLANTED.items():
            assert secret.encode() not in data, f"{kind} found in {name}"
    reader.lc.close()  # checkpoint: the main file gets the pages
    for name, data in _kept_bytes(reader.lc.db).items():
        for kind, secret in PLANTED.items():
            assert secret.encode() not in data, f"{kind} found in {name} after checkpoint"


def test_redaction_keeps_line_numbers() -> None:
    text = "a\n-----BEGIN PRIVATE KEY-----\nAAAA\nBBBB\n-----END PRIVATE KEY-----\nafter = 1\n"
    red, n = redact_keeping_lines(text)
    assert n == 1 and red.split("\n")[5] == "after = 1" and red.count("\n") == text.count("\n")
    assert "AAAA" not in red


@pytest.mark.parametrize("name", [".env", ".env.local", "id_rsa", "server.pem", "tls.key", "credentials.json",
                                  ".npmrc", ".pypirc", "secrets.yml", ".netrc"])
def test_secret_files_are_refused(reader: Reader, project: Path, name: str) -> None:
    (project / name).write_text("API_TOKEN=planted-secret-value-1234\n")
    with pytest.raises(LeanCtxError) as info:
        reader.one(name)
    assert info.value.code == "READ_SECRET_FILE" and "LEAN_CTX_ALLOW_SECRET_FILES" in info.value.message
    assert not reader.events("file.read")


def test_a_symlink_to_a_secret_file_is_refused(reader: Reader, project: Path) -> None:
    (project / ".env").write_text("API_TOKEN=planted-secret-value-1234\n")
    os.symlink(".env", project / "innocent.txt")
    with pytest.raises(LeanCtxError) as info:
        reader.one("innocent.txt")
    assert info.value.code == "READ_SECRET_FILE"


def test_secret_files_when_allowed_are_still_redacted(reader: Reader, project: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (project / ".env").write_text("API_TOKEN=planted-secret-value-1234\nDEBUG=1\n.env.example\n")
    (project / ".env.example").write_text("API_TOKEN=\n")
    assert reader.one(".env.example").mode == "full"  # templates are not secret files
    monkeypatch.setenv("LEAN_CTX_ALLOW_SECRET_FILES", "1")
    a = reader.one(".env")
    assert "planted-secret-value-1234" not in a.text and "API_TOKEN=[REDACTED:assignment]" in a.text
    assert a.redactions == 1


# --- the jail ---------------------------------------------------------------------------------


@pytest.fixture()
def jail(project: Path, tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside the project\n")
    os.symlink(outside / "secret.txt", project / "link-out.txt")
    os.symlink(outside, project / "dir-out")
    os.symlink(tmp_path / "nowhere" / "x", project / "dangling-out")
    os.symlink(project / "src" / "app.py", project / "link-in.py")
    os.symlink(project / "src", project / "src-link")
    return outside


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("../outside/secret.txt", "READ_PATH_OUTSIDE_PROJECT"),
        ("src/../../outside/secret.txt", "READ_PATH_OUTSIDE_PROJECT"),
        ("../proj/src/app.py", "READ_PATH_OUTSIDE_PROJECT"),  # climbs out even if it comes back
        ("/etc/hostname", "READ_PATH_OUTSIDE_PROJECT"),
        ("{outside}/secret.txt", "READ_PATH_OUTSIDE_PROJECT"),
        ("link-out.txt", "READ_PATH_OUTSIDE_PROJECT"),
        ("dir-out/secret.txt", "READ_PATH_OUTSIDE_PROJECT"),
        ("dangling-out", "READ_PATH_OUTSIDE_PROJECT"),
        ("", "READ_PATH_INVALID"),
        ("   ", "READ_PATH_INVALID"),
        ("src/app.py\x00.txt", "READ_PATH_INVALID"),
        ("src/app\n.py", "READ_PATH_INVALID"),
        ("src\\app.py", "READ_PATH_INVALID"),
        ("src/\u202eyp.ppa", "READ_PATH_INVALID"),
        (".", "READ_IS_DIRECTORY"),
        ("src", "READ_IS_DIRECTORY"),
        ("src/missing.py", "READ_NOT_FOUND"),
    ],
)
def test_path_jail_corpus(reader: Reader, jail: Path, path: str, code: str) -> None:
    with pytest.raises(LeanCtxError) as info:
        reader.one(path.replace("{outside}", str(jail)))
    assert info.value.code == code, info.value
    assert "outside the project\n" not in str(info.value)
    assert not reader.events("file.read")


@pytest.mark.parametrize("path", ["src/app.py", "./src//app.py", "src/../src/app.py", "{root}/src/app.py",
                                  "link-in.py", "src-link/app.py"])
def test_paths_inside_are_normalized_to_one_name(reader: Reader, jail: Path, project: Path, path: str) -> None:
    a = reader.one(path.replace("{root}", str(project)), session=None)
    assert a.path == "src/app.py" and "class Store" in a.text
