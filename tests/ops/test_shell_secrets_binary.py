"""ctx_shell: secrets on the command line (and in ``env``) never reach the log, its WAL or an
archive; binary output is answered with one notice per run, its bytes archived exactly.

Real subprocesses and a real SQLite log (the operation layer), and the real ``lean-ctx``
console script with its own ``LEAN_CTX_HOME``, whose every file is grepped byte by byte.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.app import LeanCtx
from leanctx.archive import ArchiveStore
from leanctx.commands.shell import MAX_COMMAND_CHARS, RecordShell
from leanctx.context.shell import compress
from leanctx.context.shell.binary import find_runs
from leanctx.context.tokens import count_tokens
from leanctx.events.codec import payload_dict
from leanctx.ops.shell import compress_captured, expand, run_shell

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))  # this interpreter's, not whatever PATH finds
PY = sys.executable

pytestmark = pytest.mark.timeout(120)

GITHUB = "ghp_Qw3rTy9UiOp2AsDf4GhJk6LzXc8VbNm1Qw3r"
OPENAI = "sk-live-Zq7Xw2Ce4Rv6Bt8Yn1Um3Ik5"
PASSWORD = "Hunter2CorrectHorse77"
ENV_SECRET = "envSecretOnlyInTheEnvironment42"
NOTICE = re.compile(r"^\[binary output: ([\d,]+) bytes? \((?:line \d+|lines \d+-\d+)\), not shown · expand (A[0-9a-f]{16})\]$")


@pytest.fixture()
def lc(tmp_path: Path):  # type: ignore[no-untyped-def]
    app = LeanCtx(tmp_path / "data" / "e.db")
    yield app
    app.close()


def events(lc: LeanCtx, kind: str) -> list[dict]:
    return [payload_dict(e.payload) for e in lc.store.read_all(0) if e.kind == kind]


def stored_bytes(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (the database, its WAL and shm, archives), by relative path."""
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def assert_nowhere(root: Path, secrets: list[str]) -> None:
    files = stored_bytes(root)
    assert any(n.endswith((".db", ".db-wal")) for n in files), sorted(files)
    for name, data in files.items():
        for s in secrets:
            assert s.encode() not in data, f"{s} found in {name}"


def cli(home: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LEAN_CTX_HOME": str(home), "LEAN_CTX_NO_DAEMON": "1", "LEAN_CTX_AGENT_ID": "cli-agent"}
    env.pop("LEAN_CTX_DB", None)
    env.pop("LEAN_CTX_SESSION_ID", None)
    return subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=90, check=False)


def unescape(archived: str) -> bytes:
    """The bytes an archive's text stands for: ``\\xNN``, ``\\\\``, ``\\t``, ``\\r`` as written
    for binary runs, everything else as UTF-8."""
    out = bytearray()
    for m in re.finditer(r"\\x([0-9a-f]{2})|\\\\|\\t|\\r|[^\\]+", archived):
        t = m.group()
        out += bytes([int(m.group(1), 16)]) if m.group(1) else {"\\\\": b"\\", "\\t": b"\t", "\\r": b"\r"}.get(
            t, t.encode("utf-8"))
    return bytes(out)


def emit(data: bytes, code: int = 0) -> list[str]:
    """An argv writing ``data`` to stdout byte for byte, then exiting with ``code``."""
    return [PY, "-c", f"import sys; sys.stdout.buffer.write(bytes.fromhex('{data.hex()}')); sys.exit({code})"]


# ----------------------------------------------------------------------------- the command line


def test_string_and_argv_command_lines_are_redacted_before_the_log(lc: LeanCtx, tmp_path: Path) -> None:
    as_string = run_shell(lc, f"true {GITHUB}; echo done # PASSWORD={PASSWORD} {OPENAI}", actor="a")
    as_argv = run_shell(lc, ["echo", "-n", f"--token={GITHUB}", "-H", f"X-Api-Key: {OPENAI}", f"PASSWORD={PASSWORD}"],
                        actor="a")
    captured = compress_captured(lc, f"deploy --key {OPENAI}", "deployed\n", actor="a")
    for r in (as_string, as_argv, captured):
        assert "[REDACTED:" in r.command  # the answer's header (``command``) is the recorded one
        for s in (GITHUB, OPENAI, PASSWORD):
            assert s not in r.command
    ran = events(lc, "shell.ran")
    assert [r["command"] for r in ran] == [as_string.command, as_argv.command, captured.command]
    lc.close()
    assert_nowhere(tmp_path / "data", [GITHUB, OPENAI, PASSWORD])


def test_shell_record_redacts_before_cutting_the_command_line(lc: LeanCtx, tmp_path: Path) -> None:
    # a caller that did not redact (or a secret straddling the cut): the handler redacts first,
    # so no prefix of the token survives the cut at MAX_COMMAND_CHARS
    filler = "x" * (MAX_COMMAND_CHARS - 20)
    cmd = f"{filler} {GITHUB} and more"
    lc.bus.dispatch(RecordShell(command=cmd, pattern="raw", exit_code=0, raw_tokens=1, sent_tokens=1), actor="a")
    lc.bus.dispatch(RecordShell(command=f"curl -H 'Authorization: token {GITHUB}'", pattern="raw", exit_code=0,
                                raw_tokens=1, sent_tokens=1), actor="a")
    got = [r["command"] for r in events(lc, "shell.ran")]
    assert all(len(c) <= MAX_COMMAND_CHARS for c in got)
    assert got[1] == "curl -H 'Authorization: token [REDACTED:github_token]'"
    lc.close()
    assert_nowhere(tmp_path / "data", [GITHUB, GITHUB[:19]])


def test_env_values_named_secret_are_scrubbed_wherever_the_command_prints_them(lc: LeanCtx, tmp_path: Path) -> None:
    lines = "; ".join(f"echo line {i}" for i in range(40))
    r = run_shell(lc, f'echo "pw=$DB_PASSWORD"; {lines}; echo "again $DB_PASSWORD"; echo "$PLAIN_VALUE"',
                  env_passthrough={"DB_PASSWORD": ENV_SECRET, "PLAIN_VALUE": "justAnOrdinaryValue"}, actor="a")
    assert ENV_SECRET not in r.text
    # the echoed value is caught (by the echo rule, or first by the ``pw=`` assignment rule)
    assert re.search(r"pw=\[REDACTED:(echoed|assignment)\]", r.text) and "again [REDACTED:echoed]" in r.text
    assert "justAnOrdinaryValue" in r.text  # a value not named secret stays
    assert r.redactions >= 2
    lc.close()
    assert_nowhere(tmp_path / "data", [ENV_SECRET])


# the header case, through the console script: every file of LEAN_CTX_HOME grepped, a bare Bearer
# token and curl's ``-u user:pass`` included (context/secret_headers.py)


@pytest.mark.parametrize("command, secret", [
    pytest.param(f"true curl -H 'Authorization: token {GITHUB}' http://127.0.0.1:9/", GITHUB, id="github-token"),
    pytest.param(f"true deploy --api-key {OPENAI}", OPENAI, id="openai-key"),
    pytest.param(f"PASSWORD={PASSWORD} true", PASSWORD, id="password-assignment"),
    pytest.param("true curl -H 'Authorization: Bearer 0a1b2c3d4e5f60718293a4b5c6d7e8f9' http://127.0.0.1:9/",
                 "0a1b2c3d4e5f60718293a4b5c6d7e8f9", id="bearer-hex"),
    pytest.param("true curl -sS -u deploy:Tr0ub4dorXYZ77 http://127.0.0.1:9/", "Tr0ub4dorXYZ77", id="curl-user"),
])
def test_cli_command_line_secret_never_reaches_lean_ctx_home(tmp_path: Path, command: str, secret: str) -> None:
    home = tmp_path / "home"
    p = cli(home, "shell", "--json", "--", command, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert secret not in p.stdout and "[REDACTED:" in json.loads(p.stdout)["command"]
    assert_nowhere(home, [secret])


# ----------------------------------------------------------------------------- binary output


def test_random_bytes_are_one_notice_and_archived_exactly(lc: LeanCtx) -> None:
    data = random.Random(1).randbytes(3000)
    r = run_shell(lc, emit(data, 3), actor="a")
    lines = r.text.split("\n")
    assert len(lines) == 2 and lines[1] == "[exit 3]", r.text
    m = NOTICE.match(lines[0])
    assert m and m.group(1) == "3,000" and m.group(2) == r.archive_id, r.text
    assert "\ufffd" not in r.text and r.sent_tokens == count_tokens(r.text) < 40
    assert r.raw_tokens > 1000 and r.exit_code == 3
    n_lines = data.count(b"\n") + (not data.endswith(b"\n"))
    assert r.omitted_lines == n_lines
    ran = events(lc, "shell.ran")[-1]
    assert ran["archive_id"] == r.archive_id and ran["omitted_lines"] == n_lines
    archived = ArchiveStore.beside(lc.db).get(r.archive_id)
    assert archived.isascii() and "\ufffd" not in archived
    assert unescape(archived) == data + (b"" if data.endswith(b"\n") else b"\n")
    back = expand(lc, r.archive_id, head=1, actor="a")  # expandable like any other archive
    assert back.text.startswith(archived.split("\n")[0][:50])


def test_text_around_a_binary_blob_is_kept(lc: LeanCtx) -> None:
    blob = random.Random(1).randbytes(500)
    r = run_shell(lc, emit(b"ok\n" + blob + b"done\n"), actor="a")
    lines = r.text.split("\n")
    assert lines[0] == "ok" and lines[2] == "done" and len(lines) == 3, r.text
    m = NOTICE.match(lines[1])
    assert m and m.group(1) == "500" and m.group(2) == r.archive_id
    archived = ArchiveStore.beside(lc.db).get(r.archive_id)
    assert archived.startswith("ok\n") and archived.endswith("done\n")
    assert unescape(archived) == b"ok\n" + blob + b"done\n"


def test_binary_on_stderr_and_two_runs_separated_by_text(lc: LeanCtx) -> None:
    a, b = random.Random(2).randbytes(400), random.Random(3).randbytes(300)
    code = (f"import sys; sys.stdout.write('starting the dump\\n'); sys.stdout.flush();"
            f" sys.stderr.buffer.write(bytes.fromhex('{a.hex()}') + b'\\n-- a line of text between the two --\\n'"
            f" + bytes.fromhex('{b.hex()}') + b'\\nfinished\\n')")
    r = run_shell(lc, [PY, "-c", code], actor="a")
    lines = r.text.split("\n")
    notices = [x for x in lines if NOTICE.match(x)]
    assert len(notices) == 2, r.text
    assert lines[0] == "starting the dump" and "-- a line of text between the two --" in lines
    assert lines[-1] == "finished" and "\ufffd" not in r.text


def test_text_with_stray_bytes_is_not_binary(lc: LeanCtx) -> None:
    latin1 = "".join(f"café crème brûlée n°{i}\n" for i in range(30)).encode("latin-1")
    r = run_shell(lc, emit(latin1), actor="a", raw=True)
    assert "binary output" not in r.text and "caf\ufffd cr\ufffdme" in r.text
    paths = b"\0".join(f"./src/module_{i}.py".encode() for i in range(50)) + b"\0"  # find -print0
    r0 = run_shell(lc, emit(paths), actor="a")
    assert "binary output" not in r0.text and "module_49.py" in r0.text


def test_raw_sends_binary_escaped_not_as_replacement_characters(lc: LeanCtx) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(range(40)) + b"\xff" * 10
    r = run_shell(lc, emit(b"header\n" + png + b"\ntrailer\n"), actor="a", raw=True)
    assert r.pattern == "raw" and "\ufffd" not in r.text
    assert r.text.startswith("header\n\\x89PNG\\r\n\\x1a\n\\x00\\x00\\x00\\rIHDR") and r.text.endswith("trailer")
    assert "\\xff\\xff" in r.text and r.sent_tokens == count_tokens(r.text)


def test_a_tiny_binary_run_is_shown_as_is_never_worse(lc: LeanCtx) -> None:
    r = run_shell(lc, emit(b"ok\x00\x01\x02\n"), actor="a")
    assert r.text == "ok\x00\x01\x02" and r.archive_id is None
    # a binary run cheaper than its notice: the plain text is sent (never worse), nothing archived
    nuls = "\x00" * 32 + "\x01"
    assert find_runs(nuls)  # a binary run all the same
    c = compress("cat x", nuls)
    assert (c.pattern, c.text, c.omitted_lines) == ("raw", nuls, 0)
    r2 = run_shell(lc, emit(nuls.encode()), actor="a")
    assert (r2.text, r2.archive_id, r2.omitted_lines) == (nuls, None, 0)


def test_secrets_inside_binary_output_are_redacted_in_the_archive(lc: LeanCtx, tmp_path: Path) -> None:
    blob = random.Random(4).randbytes(600) + f"\0\0token={GITHUB}\0\0".encode() + random.Random(6).randbytes(600)
    r = run_shell(lc, emit(blob), actor="a")
    assert NOTICE.match(r.text.split("\n")[0]), r.text
    archived = ArchiveStore.beside(lc.db).get(r.archive_id)  # type: ignore[arg-type]
    assert "[REDACTED:github_token]" in archived
    lc.close()
    assert_nowhere(tmp_path / "data", [GITHUB])


def test_cli_shell_and_compress_answer_binary_with_a_notice(tmp_path: Path) -> None:
    home = tmp_path / "home"
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"ok\n" + random.Random(1).randbytes(500) + b"done\n")
    p = cli(home, "shell", "--", "cat", str(blob), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "ok" and NOTICE.match(lines[1]) and lines[2] == "done", p.stdout
    q = cli(home, "compress", "--json", "--as", "cat blob.bin", str(blob), cwd=tmp_path)
    out = json.loads(q.stdout)
    text = out["text"].splitlines()
    assert text[0] == "ok" and text[-1] == "done" and NOTICE.match(text[1]), out["text"]
    assert out["archive_id"] and out["omitted_lines"] >= 1
    # compress decodes its input like a run's output (surrogateescape): the archive holds the
    # captured bytes exactly, escaped, never U+FFFD (\xef\xbf\xbd) or a raw replacement character
    e = cli(home, "expand", out["archive_id"], cwd=tmp_path)
    assert e.returncode == 0 and "\\xef\\xbf\\xbd" not in e.stdout and "\ufffd" not in e.stdout, e.stdout[:300]
    data = blob.read_bytes()
    assert e.stdout.startswith("ok\n") and e.stdout.rstrip("\n").endswith("done")
    shown = e.stdout.encode("latin-1", "backslashreplace").decode("unicode_escape").encode("latin-1")
    assert shown.rstrip(b"\n") == data.rstrip(b"\n"), "the archive reads back to the exact bytes"


def test_a_password_from_the_command_line_is_scrubbed_from_its_output_and_the_rest_of_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    command = "true curl -u deploy:Passw0rdXyz1 http://127.0.0.1:9/; echo the password is Passw0rdXyz1"
    p = cli(home, "shell", "--json", "--", command, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert "Passw0rdXyz1" not in out["text"] and "[REDACTED:echoed]" in out["text"]
    assert "Passw0rdXyz1" not in out["command"] and "deploy" in out["command"]
    for f in home.rglob("*"):
        if f.is_file():
            assert b"Passw0rdXyz1" not in f.read_bytes(), f
