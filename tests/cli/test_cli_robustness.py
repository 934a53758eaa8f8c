"""The CLI refuses bad input with a stable code, never a traceback or a silent success.

Real console script in real subprocesses, a scratch data dir (conftest). Unwritable places are
paths under a FILE (the tests may run as root, for whom permissions do not stop a write).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
UNDECODABLE = os.fsdecode(b"\xff")  # passed to the child as the raw byte 0xff


def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    full_env.pop("LEAN_CTX_DB", None) if not (env and "LEAN_CTX_DB" in env) else None
    full_env.pop("LEAN_CTX_DEBUG", None)
    return subprocess.run([LEAN_CTX, *args], check=False, capture_output=True, text=True, env=full_env, cwd=cwd,
                          timeout=timeout, errors="backslashreplace")


def refused(p: subprocess.CompletedProcess[str], code: str, status: int = 2) -> None:
    assert "Traceback" not in p.stderr, p.stderr
    assert p.returncode == status, (p.returncode, p.stdout, p.stderr)
    assert f"error[{code}]" in p.stderr, p.stderr


def json_refused(p: subprocess.CompletedProcess[str], code: str, status: int = 2) -> dict:
    assert "Traceback" not in p.stderr, p.stderr
    assert p.returncode == status, (p.returncode, p.stdout, p.stderr)
    err = json.loads(p.stdout.strip().splitlines()[-1])["error"]
    assert err["code"] == code, err
    return err


@pytest.fixture()
def blocker(tmp_path: Path) -> Path:
    """A regular file: any path under it can be neither created nor written, even by root."""
    f = tmp_path / "a-file"
    f.write_text("x")
    return f


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    (p / ".git").mkdir()
    (p / "a.py").write_text("def f(x):\n    return x\n")
    return p


# --- 1. the project must exist ----------------------------------------------------------------
def test_project_typo_is_refused_and_creates_no_log(tmp_path: Path, home: Path) -> None:
    p = run("--project", str(tmp_path / "typo"), "chat", "post", "-t", "x", "-b", "y")
    refused(p, "PROJECT_NOT_FOUND")
    assert "typo" in p.stderr
    assert not (home / "projects").exists() or not any((home / "projects").iterdir())


def test_project_that_is_a_file_is_refused_under_json(blocker: Path) -> None:
    p = run("--json", "--project", str(blocker), "chat", "post", "-t", "x", "-b", "y")
    assert json_refused(p, "PROJECT_NOT_FOUND")["message"].count(str(blocker)) == 1


def test_setup_refuses_a_missing_project_and_creates_nothing(tmp_path: Path) -> None:
    target = tmp_path / "typo" / "proj"
    refused(run("setup", "--agent", "claude", "--project", str(target)), "PROJECT_NOT_FOUND")
    assert not (tmp_path / "typo").exists()


def test_workspace_and_project_root_must_exist(tmp_path: Path, project: Path) -> None:
    missing = str(tmp_path / "nonexistent")
    refused(run("chat", "lock", "a.py", "--workspace", missing, cwd=project), "PROJECT_NOT_FOUND")
    refused(run("agent", "register", "-t", "claude", "--project-root", missing, cwd=project), "PROJECT_NOT_FOUND")


# --- 2./3. usage errors -----------------------------------------------------------------------
@pytest.mark.parametrize("args", [("chat", "post"), ("events", "lineage", "abc"), ("nosuch",)])
def test_usage_errors_are_json_under_json(args: tuple[str, ...], project: Path) -> None:
    err = json_refused(run("--json", *args, cwd=project), "CLI_USAGE")
    assert err["message"]


@pytest.mark.parametrize("args", [("--json",), ("--db", "x.db")])
def test_options_without_a_command_are_a_usage_error(args: tuple[str, ...], tmp_path: Path) -> None:
    p = run(*args, cwd=tmp_path)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert not (tmp_path / "x.db").exists()


# --- 4. tracebacks become codes -----------------------------------------------------------------
@pytest.mark.parametrize("args", [
    ("proof", "--out", "{b}/proofs"),
    ("knowledge", "export", "-o", "{b}/facts.jsonl"),
    ("replay", "--verify", "--out", "{b}/fresh.db"),
])
def test_unwritable_output_paths_are_refused(args: tuple[str, ...], blocker: Path, project: Path) -> None:
    argv = [a.format(b=blocker) for a in args]
    p = run(*argv, cwd=project)
    refused(p, "OUTPUT_UNWRITABLE")
    assert str(blocker) in p.stderr
    json_refused(run("--json", *argv, cwd=project), "OUTPUT_UNWRITABLE")


def test_unwritable_data_dir_for_the_daemon(blocker: Path, project: Path) -> None:
    p = run("daemon", "start", "--wait", "1", cwd=project, env={"LEAN_CTX_HOME": str(blocker / "home")})
    refused(p, "DATA_DIR_UNWRITABLE")
    assert str(blocker) in p.stderr


@pytest.mark.parametrize("verb", ["roster", "state"])
def test_bad_at_is_a_usage_error(verb: str, project: Path) -> None:
    p = run("chat", verb, "--at", "yesterday", cwd=project)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "yesterday" in p.stderr
    assert run("chat", verb, "--at", "2025-01-31T12:00:00Z", cwd=project).returncode in (0, 2)


def test_mcp_port_out_of_range_is_a_usage_error(project: Path) -> None:
    p = run("mcp", "--http", "--port", "-1", cwd=project, timeout=30)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr


def test_gain_days_beyond_the_calendar(project: Path) -> None:
    assert run("read", "a.py", cwd=project).returncode == 0  # one recorded call, so gain has days to span
    p = run("gain", "--days", "800000", cwd=project)
    refused(p, "SAVINGS_INVALID_DAYS")
    assert run("gain", "--days", "3", cwd=project).returncode == 0


@pytest.mark.parametrize("args", [
    ("chat", "post", "-t", UNDECODABLE, "-b", "y"),
    ("agent", "claim", UNDECODABLE),
])
def test_undecodable_argument_bytes_are_refused(args: tuple[str, ...], project: Path) -> None:
    p = run(*args, cwd=project)
    refused(p, "CLI_INVALID_TEXT")
    json_refused(run("--json", *args, cwd=project), "CLI_INVALID_TEXT")


def test_closed_stdout_exits_with_a_code_and_leaves_the_log_intact(project: Path) -> None:
    p = subprocess.run(["sh", "-c", 'exec "$0" "$@" >&-', LEAN_CTX, "chat", "post", "-t", "x", "-b", "y"],
                       check=False, capture_output=True, text=True, cwd=project, timeout=60)
    refused(p, "STDOUT_CLOSED", status=1)
    check = run("--json", "events", "verify", cwd=project)
    assert check.returncode == 0, (check.stdout, check.stderr)


def test_unexpected_exception_says_internal_error() -> None:
    from leanctx.api.cli.failures import unexpected

    err = unexpected(ValueError("boom"), ["chat", "post"])
    assert err.code == "INTERNAL_ERROR" and "boom" in err.message and err.exit_code == 1
    io = unexpected(FileNotFoundError(2, "No such file or directory", "/x/y"), [])
    assert io.code == "IO_ERROR" and "/x/y" in io.message


# --- 5. values outside their range ------------------------------------------------------------
@pytest.mark.parametrize("args", [
    ("events", "tail", "--consistency", "bogus"),
    ("agent", "ledger", "--area", "bogus"),
    ("agent", "sync", "--floor", "nan"),
    ("agent", "sync", "--floor", "-1"),
    ("replay", "--out", "fresh.db"),
])
def test_out_of_range_options_are_usage_errors(args: tuple[str, ...], project: Path) -> None:
    p = run(*args, cwd=project)
    assert p.returncode == 2 and "Traceback" not in p.stderr, (p.stdout, p.stderr)
    assert not (project / "fresh.db").exists()
    json_refused(run("--json", *args, cwd=project), "CLI_USAGE")


def test_pack_send_refuses_a_target_that_is_not_a_url(project: Path) -> None:
    (project / "h.json").write_text("{}\n")
    p = run("--project", str(project), "pack", "send", str(project / "h.json"), "--target", "notaurl",
            "--secret", "s", cwd=project)
    refused(p, "PACK_INVALID_TARGET")


def test_state_at_a_bad_time_is_a_coded_error_on_every_surface(tmp_path: Path) -> None:
    from leanctx.app import LeanCtx
    from leanctx.channel_state import evaluation_time
    from leanctx.errors import InvalidInput

    with LeanCtx(tmp_path / "e.db") as lc, pytest.raises(InvalidInput) as e:
        evaluation_time(lc.store, "yesterday")
    assert e.value.code == "CHAT_STATE_INVALID_AT"


def test_chat_export_into_a_file_is_a_coded_error(blocker: Path, project: Path) -> None:
    p = run("--project", str(project), "chat", "export", "general", str(blocker), cwd=project)
    refused(p, "OUTPUT_UNWRITABLE")


@pytest.mark.parametrize("args", [("knowledge", "remember", "-c", "convention", "x" * 100_000, "v"),
                                  ("chat", "init", "y" * 100_000)])
def test_an_error_quoting_a_huge_input_stays_short(args: tuple[str, ...], project: Path) -> None:
    """An error names the bad value, but a 100,000-character argument does not make a 100 KB
    error line: the message keeps its head and tail and says how much was cut."""
    p = run("--project", str(project), *args, cwd=project)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    line = p.stderr.strip().splitlines()[0]
    assert line.startswith("error[") and len(line) < 5000, len(line)
    assert "characters of the message cut" in line
