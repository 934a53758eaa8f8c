"""A private key block with no END line is redacted by read like by shell and search, and the
header counts only the secrets in what it sends.

- The block runs to the end of the file (``leanctx.ops.files.redact_text``'s rule), keeping
  the line count, so ``lines:`` numbers stay the file's.
- After reads in every mode (raw included, capped included), the key body is in no byte of the
  database, its WAL and the archives.
- ``N secrets redacted`` in a header counts the secrets in the text sent: none for
  ``lines:2-4`` when the only secret is on line 7.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from leanctx.app import LeanCtx
from leanctx.commands.read import redact_keeping_lines
from leanctx.ops.files import redact_text
from leanctx.ops.read import ReadAnswer, read_files

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
T0 = 1_800_000_000.0
BODY = ("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQPlantedKeyBodyOne0123",
        "AAAAMwAAAAtzc2gtZWQyNTUxOQAAACBPlantedKeyBodyTwo4567")
HEAD = "def connect() -> None:\n    return None\n\n\nKEY = '''\n"
UNTERMINATED = HEAD + "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(BODY) + "\n"
SEVEN = "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\nAPI_KEY = 'zz9Yq8Xw7Vu6PlantedApiKey'\n"


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "keys.py").write_text(UNTERMINATED)
    (root / "bare.txt").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(BODY) + "\n")
    (root / "seven.py").write_text(SEVEN)
    return root


@pytest.fixture()
def lc(tmp_path: Path) -> Iterator[LeanCtx]:
    app = LeanCtx(tmp_path / "data" / "events.db")
    yield app
    app.close()


def _read(lc: LeanCtx, project: Path, path: str, mode: str, **kw: Any) -> ReadAnswer:
    kw.setdefault("actor", "agent-a")
    kw.setdefault("session_id", "s1")
    (a,) = read_files(lc, [path], mode=mode, project=str(project), now=T0, **kw)
    return a


def _kept(data_dir: Path) -> dict[str, bytes]:
    """Every file under the data dir: the database, its WAL and shm, the archives, the rest."""
    return {str(p): p.read_bytes() for p in sorted(data_dir.rglob("*")) if p.is_file()}


def test_the_rule_is_the_shell_and_search_rule() -> None:
    red, n = redact_keeping_lines(UNTERMINATED)
    assert (red, n) == redact_text(UNTERMINATED)
    assert n == 1 and all(b not in red for b in BODY)
    assert red.count("\n") == UNTERMINATED.count("\n")
    assert red.split("\n")[5] == "[REDACTED:private_key]" and red.startswith(HEAD)
    # a terminated block still ends at its END line
    closed = UNTERMINATED + "-----END OPENSSH PRIVATE KEY-----\n'''\nafter = 1\n"
    red2, n2 = redact_keeping_lines(closed)
    assert n2 == 1 and red2.split("\n")[10] == "after = 1" and red2.count("\n") == closed.count("\n")


MODES: list[tuple[str, dict[str, Any]]] = [
    ("full", {}), ("map", {}), ("signatures", {}), ("lines:1-3", {}), ("lines:2-3", {}), ("aggressive", {}),
    ("entropy", {}), ("task", {"task": "connect key"}), ("auto", {}), ("diff", {}),
]


def test_the_key_body_reaches_no_answer_and_no_kept_byte_in_any_mode(lc: LeanCtx, project: Path) -> None:
    for path in ("keys.py", "bare.txt"):
        for mode, kw in [*MODES, *([("lines:6-7", {})] if path == "keys.py" else [])]:
            a = _read(lc, project, path, mode, fresh=True, **kw)
            assert all(b not in a.text for b in BODY), (path, mode, a.text)
        full = _read(lc, project, path, "full", fresh=True)
        assert "[REDACTED:private_key]" in full.text and "1 secret redacted" in full.text.split("\n")[0]
        lines = _read(lc, project, path, f"lines:1-{full.lines}", fresh=True)
        assert f"{full.lines}\t" in lines.text or full.lines == 0  # numbering is the file's
        raw = _read(lc, project, path, "full", raw=True, session_id="s-raw")
        assert BODY[0] in raw.text  # raw is what the agent asked for, and only then
    # capped answers archive the whole view: redacted, raw or not
    (project / "long.py").write_text("".join(f"line_{i} = {i}\n" for i in range(400)) + UNTERMINATED)
    capped = _read(lc, project, "long.py", "full", cap_tokens=300, session_id="s-cap")
    raw_capped = _read(lc, project, "long.py", "full", raw=True, cap_tokens=300, session_id="s-raw2")
    assert capped.capped and raw_capped.capped and capped.archive_id and raw_capped.archive_id
    assert all(b not in capped.text + raw_capped.text for b in BODY)  # the key is in the part not sent
    data = lc.db.parent
    assert list((data / "archives").rglob("*"))
    kept = _kept(data)
    assert any(k.endswith("events.db") for k in kept)
    for name, blob in kept.items():
        for b in BODY:
            assert b.encode() not in blob, f"key body found in {name}"
    lc.close()  # checkpoint: the main file gets the WAL's pages
    for name, blob in _kept(data).items():
        for b in BODY:
            assert b.encode() not in blob, f"key body found in {name} after checkpoint"


def test_a_capped_read_archives_the_redacted_text(lc: LeanCtx, project: Path) -> None:
    long = "".join(f"line_{i} = {i}\n" for i in range(400)) + "-----BEGIN PRIVATE KEY-----\n" + "\n".join(BODY) + "\n"
    (project / "long.py").write_text(long)
    a = _read(lc, project, "long.py", "full", cap_tokens=300)
    assert a.capped and a.archive_id
    archived = next((lc.db.parent / "archives").rglob(f"*{a.archive_id}*")).read_bytes()
    assert b"[REDACTED:private_key]" in archived and all(b.encode() not in archived for b in BODY)


def test_the_cli_prints_no_key_body(tmp_path: Path, project: Path) -> None:
    db = tmp_path / "cli" / "events.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_DB=str(db), LEAN_CTX_NO_DAEMON="1", LEAN_CTX_HOME=os.environ["LEAN_CTX_HOME"],
               LEAN_CTX_AGENT_ID="a1", LEAN_CTX_SESSION_ID="s1")
    for mode in ("full", "map", "lines:1-3", "aggressive", "entropy", "diff", "auto"):
        p = subprocess.run([LEAN_CTX, "--project", str(project), "read", "bare.txt", "--mode", mode, "--fresh"],
                           check=False, capture_output=True, text=True, env=env, cwd=project, timeout=60)
        assert p.returncode == 0, p.stderr
        assert all(b not in p.stdout for b in BODY), (mode, p.stdout)
    for name, blob in _kept(db.parent).items():
        assert all(b.encode() not in blob for b in BODY), name


# --- the header counts what is sent ----------------------------------------------------------


def _header(a: ReadAnswer) -> str:
    return a.text.split("\n", 1)[0]


def test_the_header_counts_the_secrets_in_what_is_sent(lc: LeanCtx, project: Path) -> None:
    none = _read(lc, project, "seven.py", "lines:2-4")
    assert "redacted" not in _header(none), _header(none)
    one = _read(lc, project, "seven.py", "lines:6-7")
    assert "1 secret redacted" in _header(one) and "[REDACTED:assignment]" in one.text
    full = _read(lc, project, "seven.py", "full")
    assert "1 secret redacted" in _header(full)
    assert none.redactions == one.redactions == 1  # the answer's field still counts the file's


def test_a_capped_answer_counts_the_part_it_sends(lc: LeanCtx, project: Path) -> None:
    body = "".join(f"value_{i} = {i} * {i}  # a line of numbers\n" for i in range(300))
    (project / "tail_secret.py").write_text(body + "DB_PASSWORD = 'Pl4ntedTailSecretValue'\n")
    a = _read(lc, project, "tail_secret.py", "full", cap_tokens=300)
    assert a.capped and "Pl4nted" not in a.text
    assert "redacted" not in _header(a), _header(a)  # the secret is in the archived rest
    head = (project / "head_secret.py")
    head.write_text("DB_PASSWORD = 'Pl4ntedHeadSecretValue'\n" + body)
    b = _read(lc, project, "head_secret.py", "full", cap_tokens=300)
    assert b.capped and "1 secret redacted" in _header(b)


def test_a_file_that_only_mentions_the_marker_reports_nothing(lc: LeanCtx, project: Path) -> None:
    (project / "doc.md").write_text("Secrets show as [REDACTED:private_key] in answers.\n")
    a = _read(lc, project, "doc.md", "full")
    assert a.redactions == 0 and "redacted" not in _header(a)


def test_json_answer_of_the_cli_has_the_honest_header(tmp_path: Path, project: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_DB=str(tmp_path / "j.db"), LEAN_CTX_NO_DAEMON="1", LEAN_CTX_HOME=os.environ["LEAN_CTX_HOME"])
    p = subprocess.run([LEAN_CTX, "--project", str(project), "read", "seven.py", "--mode", "lines:2-4", "--json"],
                       check=False, capture_output=True, text=True, env=env, cwd=project, timeout=60)
    assert p.returncode == 0, p.stderr
    row = json.loads(p.stdout)
    assert row["text"].startswith("seven.py [lines:2-4 · 7 lines") and "redacted" not in row["text"].split("\n")[0]
