"""``lean-ctx shell``, ``compress`` and ``expand`` through the real console script, and the proof
that planted secrets never reach the database file, its WAL or an archive."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.app import LeanCtx
from leanctx.context.tokens import count_tokens
from leanctx.events.codec import payload_dict

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))  # this interpreter's, not whatever PATH finds
PY = sys.executable
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "shell"

pytestmark = pytest.mark.timeout(90)


def run(db: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None,
        cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "LEAN_CTX_DB": str(db), "LEAN_CTX_AGENT_ID": "cli-agent", **(env or {})}
    full.pop("LEAN_CTX_SESSION_ID", None)
    return subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, env=full, input=stdin, timeout=60,
                          cwd=cwd)


def shell_events(db: Path, kind: str = "shell.ran") -> list[dict]:
    with LeanCtx(db) as lc:
        return [payload_dict(e.payload) for e in lc.store.read_all(0) if e.kind == kind]


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    return tmp_path / "data" / "events.db"


def test_shell_exits_with_the_commands_code(db: Path) -> None:
    p = run(db, "shell", "--", PY, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)")
    assert p.returncode == 3
    assert p.stdout == "out\nerr\n[exit 3]\n"
    p0 = run(db, "shell", "--session", "conv-1", "--", PY, "-c", "print('fine')")
    assert (p0.returncode, p0.stdout) == (0, "fine\n")
    ran = shell_events(db)
    assert [r["exit_code"] for r in ran] == [3, 0]
    assert ran[1]["session_id"] == "conv-1"
    assert ran[0]["sent_tokens"] == count_tokens(p.stdout.rstrip("\n"))


def test_shell_json_timeout_and_one_string_through_bash(db: Path, tmp_path: Path) -> None:
    p = run(db, "shell", "--json", "--timeout", "1", "--", "echo begun; sleep 20")
    assert p.returncode == 124
    out = json.loads(p.stdout)
    assert out["exit_code"] == 124 and out["timed_out"] is True and "begun" in out["text"]
    assert set(out) >= {"exit_code", "raw_tokens", "sent_tokens", "text", "archive_id", "pattern"}
    # the project is the current directory: --cwd must stay inside it (SHELL_CWD_OUTSIDE_PROJECT)
    p = run(db, "shell", "--cwd", str(tmp_path), "--env", "LC_X=42", "--", "echo $LC_X; pwd", cwd=tmp_path)
    assert p.returncode == 0 and p.stdout == f"42\n{tmp_path}\n"
    bad = run(db, "shell", "--env", "nope", "--", "true")
    assert bad.returncode == 2 and "SHELL_INVALID_ENV" in bad.stderr


def test_omissions_expand_through_the_cli(db: Path) -> None:
    code = "for i in range(1, 401): print(f'fetched chunk {i}/400 sha=' + format(i * 2654435761 % 2**32, '08x'))"
    p = run(db, "shell", "--json", "--", PY, "-c", code)
    out = json.loads(p.stdout)
    aid = out["archive_id"]
    assert p.returncode == 0 and aid and out["sent_tokens"] < out["raw_tokens"] / 5
    assert f"expand {aid}]" in out["text"] and out["omitted_lines"] > 300
    lines = [f"fetched chunk {i}/400 sha=" + format(i * 2654435761 % 2**32, "08x") for i in range(1, 401)]
    assert run(db, "expand", aid).stdout == "\n".join(lines) + "\n"
    assert run(db, "expand", aid, "--head", "2").stdout == "\n".join(lines[:2]) + "\n"
    assert run(db, "expand", aid, "--tail", "2").stdout == "\n".join(lines[-2:]) + "\n"
    assert run(db, "expand", aid, "--lines", "10-12").stdout == "".join(f"{k}:{lines[k - 1]}\n" for k in (10, 11, 12))
    g = json.loads(run(db, "expand", aid, "--grep", r"chunk 39\d/", "--json").stdout)
    assert g["text"].splitlines() == [f"{k}:{lines[k - 1]}" for k in range(390, 400)]
    both = run(db, "expand", aid, "--head", "1", "--tail", "1")
    assert both.returncode == 2 and "EXPAND_ONE_SELECTOR" in both.stderr
    missing = run(db, "expand", "A0123456789abcdef")
    assert missing.returncode == 2 and "ARCHIVE_NOT_FOUND" in missing.stderr
    # nothing prunes archives: the likely cause is another project's log, and the answer says where it looked
    assert "pruned" not in missing.stderr and "beside the log of the project" in missing.stderr
    expanded = shell_events(db, "archive.expanded")
    assert [e["selector"] for e in expanded] == ["full", "head:2", "tail:2", "lines:10-12", r"grep:chunk 39\d/"]


@pytest.mark.parametrize("name", ["git_status", "pytest_failures", "cargo_test", "ls_la"])
def test_compress_as_on_fixtures(db: Path, tmp_path: Path, name: str) -> None:
    fx = json.loads((FIXTURES / f"{name}.json").read_text())
    text = fx["stdout"] + fx["stderr"]
    src = tmp_path / "captured.txt"
    src.write_text(text)
    p = run(db, "compress", "--as", fx["command"], "--exit-code", str(fx["exit_code"]), str(src), "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert set(out) >= {"raw_tokens", "sent_tokens", "text", "archive_id"}
    assert out["sent_tokens"] == count_tokens(out["text"]) < out["raw_tokens"]
    for fact in fx["must_keep"]:
        assert fact in out["text"]
    if out["archive_id"]:
        assert run(db, "expand", out["archive_id"]).stdout.splitlines() == text.splitlines()
    piped = run(db, "compress", "--as", fx["command"], "--exit-code", str(fx["exit_code"]), stdin=text)
    assert piped.stdout.rstrip("\n") == out["text"]
    [first, _] = shell_events(db)
    assert first["captured"] is True and first["raw_tokens"] == out["raw_tokens"]


# ----------------------------------------------------------------------------- secrets

AWS = "AKIAZ7Q3R5T1V9X2B4D6"
GITHUB = "ghp_R2d2C3poL1ke5kyWalk3rH4nS0loChewb4cc9"
KEY_BODY = "MIIEpAIBAAKCAQEAz9LeanCtxPlantedKeyBodyLineQ7w8e9r0t1y2u3i4o5p6"
URL_PASSWORD = "Hunt3rTw0SuperSecretPw"
API_KEY = "Zx9Vb8Nm7Lk6Jh5Gf4Ds3"
SECRETS = [AWS, GITHUB, KEY_BODY, URL_PASSWORD, API_KEY]


def _planted() -> str:
    filler = [f"config line {i}: retries={i % 5} backoff={i * 3 % 17}ms" for i in range(120)]
    block = ["-----BEGIN RSA PRIVATE KEY-----", KEY_BODY, "Zm9vYmFyYmF6cXV4" * 4, "-----END RSA PRIVATE KEY-----"]
    planted = [f"aws_access_key_id = {AWS}", f"token: {GITHUB}", *block,
               f"DATABASE_URL=postgres://admin:{URL_PASSWORD}@db.internal:5432/app", f"API_KEY={API_KEY}"]
    return "\n".join(filler[:60] + planted + filler[60:]) + "\n"


def test_planted_secrets_never_reach_the_database_or_the_archives(db: Path, tmp_path: Path) -> None:
    secret_file = tmp_path / "deploy.conf"
    secret_file.write_text(_planted())
    outputs = [
        run(db, "shell", "--json", "--", "cat", str(secret_file)),
        run(db, "shell", "--json", "--", "printf", "%s\\n", AWS, GITHUB, f"https://bob:{URL_PASSWORD}@example.com/x",
            f"API_KEY={API_KEY}", f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\n-----END RSA PRIVATE KEY-----"),
        run(db, "shell", "--json", "--", f"echo second run; cat {secret_file} >&2; exit 4"),
        run(db, "compress", "--json", "--as", "cat deploy.conf", str(secret_file)),
        run(db, "shell", "--json", "--raw", "--", "cat", str(secret_file)),
        # a secret assembled by the command: no pattern matches it on the command line, but it
        # is scrubbed there because the command printed it
        run(db, "shell", "--json", "--", "printf", "API_KEY=%s\\naws %s\\ntoken %s\\nurl https://u:%s@h/\\n%s\\n",
            API_KEY, AWS, GITHUB, URL_PASSWORD, f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\n-----END RSA PRIVATE KEY-----"),
    ]
    for p in outputs:
        out = json.loads(p.stdout)
        assert out["redactions"] >= 5, out
        for s in SECRETS:
            assert s not in p.stdout, f"{s} reached the answer"
        assert "[REDACTED:" in out["text"]
    assert json.loads(outputs[2].stdout)["exit_code"] == 4
    # the archives were really written (so the grep below is not vacuous)
    archive_dir = db.parent / "archives"
    archives = sorted(archive_dir.glob("*.txt"))
    assert len(archives) >= 2
    run(db, "expand", json.loads(outputs[0].stdout)["archive_id"], "--grep", "REDACTED")
    files = [p for p in db.parent.rglob("*") if p.is_file()]
    assert Path(f"{db}-wal").exists() or db.exists()
    assert {db.name, *(a.name for a in archives)} <= {p.name for p in files}
    for path in files:
        data = path.read_bytes()
        for s in SECRETS:
            assert s.encode() not in data, f"{s} found in {path.name}"
    # and the events are there, counting the redactions
    ran = shell_events(db)
    assert len(ran) == 6 and all(r["redactions"] >= 5 for r in ran)
    assert all(s not in r["command"] for r in ran for s in SECRETS)
