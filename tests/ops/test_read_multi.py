"""ctx_read of several paths: one bad path no longer fails the call (every readable file is
answered, each failing path gets its own error entry, the CLI fails only when all did), and
``auto`` takes the session's task as its intent when the call gives none — both through the
operation and through the real CLI, the tool registry (what MCP calls) and the HTTP API."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from api.test_http_common import Api, make_server  # noqa: F401

from leanctx.api import registry
from leanctx.api.registry import Caller
from leanctx.context.tokens import count_tokens
from leanctx.errors import CommandError, InvalidInput, LeanCtxError, NotFound
from leanctx.ops.read import ReadFailure

from .test_read_common import LEAN_CTX, Reader, lc, project, reader  # noqa: F401


def _cli(project: Path, db: Path, *args: str, agent: str = "cli-agent", session: str | None = None,
         ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_DB=str(db), LEAN_CTX_AGENT_ID=agent, LEAN_CTX_NO_DAEMON="1")
    if session:
        env["LEAN_CTX_SESSION_ID"] = session
    return subprocess.run([LEAN_CTX, "--project", str(project), *args], capture_output=True, text=True, env=env,
                          cwd=project, timeout=60, check=False)


# --- the operation ----------------------------------------------------------------------------


def test_a_secret_file_among_others_fails_alone(reader: Reader, project: Path) -> None:
    (project / ".env").write_text("API_TOKEN=planted-secret-value-1234\n")
    answers = reader(["src/app.py", ".env", "README.md"], mode="full")
    assert [a.path for a in answers] == ["src/app.py", ".env", "README.md"]
    ok, bad, readme = answers
    assert "class Store" in ok.text and "A project." in readme.text
    assert isinstance(bad, ReadFailure) and not isinstance(ok, ReadFailure)
    assert bad.mode == "error" and bad.error.code == "READ_SECRET_FILE"
    assert bad.text.startswith(".env: error[READ_SECRET_FILE] .env is a well-known secret file")
    assert bad.text == f".env: error[READ_SECRET_FILE] {bad.error.message}"
    assert "planted-secret-value-1234" not in bad.text and bad.sent_tokens == count_tokens(bad.text)
    # one event per file actually read, none for the refused one
    assert [e["path"] for e in reader.events("file.read")] == ["src/app.py", "README.md"]


def test_a_missing_file_is_reported_in_its_place(reader: Reader, project: Path) -> None:
    answers = reader(["nope.py", "src/app.py"], mode="signatures")
    assert [a.path for a in answers] == ["nope.py", "src/app.py"]
    missing, ok = answers
    assert isinstance(missing, ReadFailure) and missing.error.code == "READ_NOT_FOUND"
    assert missing.text.startswith("nope.py: error[READ_NOT_FOUND] no file nope.py in the project")
    assert ok.mode == "signatures" and ok.ref == "F1"  # the failed path took no ref
    assert [e["path"] for e in reader.events("file.read")] == ["src/app.py"]


def test_a_range_past_one_files_end_fails_that_file_only(reader: Reader, project: Path) -> None:
    (project / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 61)))
    short, long_ = reader(["README.md", "long.txt"], mode="lines:50-52")
    assert isinstance(short, ReadFailure) and short.error.code == "READ_INVALID_RANGE"
    assert short.text.startswith("README.md: error[READ_INVALID_RANGE] ")
    assert "line 50\n" in long_.text and long_.mode == "lines:50-52"


def test_paths_outside_and_invalid_are_per_path_too(reader: Reader, project: Path) -> None:
    answers = reader(["../outside.txt", "src/app.py", "src\\app.py"], mode="full")
    assert [type(a).__name__ for a in answers] == ["ReadFailure", "ReadAnswer", "ReadFailure"]
    assert answers[0].error.code == "READ_PATH_OUTSIDE_PROJECT"  # type: ignore[attr-defined]
    assert answers[2].error.code == "READ_PATH_INVALID"  # type: ignore[attr-defined]


def test_a_single_path_still_raises_its_own_error(reader: Reader, project: Path) -> None:
    (project / ".env").write_text("A=1\n")
    with pytest.raises(CommandError) as sec:
        reader.one(".env")
    assert sec.value.code == "READ_SECRET_FILE" and "errors" not in sec.value.details
    with pytest.raises(NotFound) as nf:
        reader(["nope.py", "./nope.py"])  # one distinct path, named twice
    assert nf.value.code == "READ_NOT_FOUND" and nf.value.message.startswith("no file nope.py")
    assert not reader.events("file.read")


def test_when_every_path_fails_the_call_raises_with_every_error(reader: Reader, project: Path) -> None:
    (project / ".env").write_text("A=1\n")
    with pytest.raises(NotFound) as same:
        reader(["nope.py", "gone.py"])
    assert same.value.code == "READ_NOT_FOUND"
    assert "nope.py: error[READ_NOT_FOUND]" in same.value.message and "gone.py: error[READ_NOT_FOUND]" in same.value.message
    assert [e["path"] for e in same.value.details["errors"]] == ["nope.py", "gone.py"]
    with pytest.raises(InvalidInput) as mixed:
        reader(["nope.py", ".env"])
    assert mixed.value.code == "READ_ALL_FAILED"
    assert [(e["path"], e["code"]) for e in mixed.value.details["errors"]] == [
        ("nope.py", "READ_NOT_FOUND"), (".env", "READ_SECRET_FILE")]
    with pytest.raises(LeanCtxError) as task:  # an option every file refuses: raised as it is
        reader(["src/app.py", "README.md"], mode="task")
    assert task.value.code == "READ_MISSING_INPUT" and "errors" not in task.value.details
    assert not reader.events("file.read")


def test_the_call_itself_is_still_refused_whole(reader: Reader, project: Path) -> None:
    with pytest.raises(InvalidInput) as bad_mode:
        reader(["src/app.py", "nope.py"], mode="bogus")
    assert bad_mode.value.code == "READ_INVALID_MODE"


# --- the surfaces ------------------------------------------------------------------------------


def test_cli_answers_the_good_files_and_exits_2_when_any_failed(tmp_path: Path, project: Path) -> None:
    db = tmp_path / "cli.db"
    (project / ".env").write_text("API_TOKEN=planted-secret-value-1234\n")
    p = _cli(project, db, "read", "src/app.py", ".env", "--mode", "signatures")
    assert p.returncode == 2, p.stderr  # every answer printed, the status says one failed
    first, second = p.stdout.rstrip("\n").split("\n\n")
    assert first.startswith("src/app.py [signatures · 29 lines · ")
    assert second.startswith(".env: error[READ_SECRET_FILE] .env is a well-known secret file")
    assert "planted-secret-value-1234" not in p.stdout
    j = _cli(project, db, "read", "src/app.py", "nope.py", "--json")
    assert j.returncode == 2, j.stderr
    rows = [json.loads(x) for x in j.stdout.splitlines()]
    assert [r["path"] for r in rows] == ["src/app.py", "nope.py"]
    assert "error" not in rows[0] and rows[0]["mode"] == "full"
    assert rows[1]["mode"] == "error" and rows[1]["error"]["code"] == "READ_NOT_FOUND"
    assert rows[1]["text"] == f"nope.py: error[READ_NOT_FOUND] {rows[1]['error']['message']}"
    both = _cli(project, db, "read", "nope.py", ".env")
    assert both.returncode == 2 and both.stderr.startswith("error[READ_ALL_FAILED]: none of the 2 files")
    assert "nope.py: error[READ_NOT_FOUND]" in both.stderr and ".env: error[READ_SECRET_FILE]" in both.stderr
    one = _cli(project, db, "read", "nope.py", "--json")
    assert one.returncode == 2 and json.loads(one.stdout)["error"]["code"] == "READ_NOT_FOUND"
    events = _cli(project, db, "events", "tail", "--kind", "file.read", "--json")
    paths = [json.loads(x)["payload"]["path"] for x in events.stdout.splitlines()]
    assert sorted(paths) == ["src/app.py", "src/app.py"]


def test_the_tool_result_carries_the_errors(lc, project: Path) -> None:  # noqa: F811
    (project / ".env").write_text("A=1\n")
    out = registry.call(lc, Caller("agent-a", "s1", str(project)), "ctx_read",
                        {"paths": ["src/app.py", ".env"], "mode": "full"})
    assert [f["path"] for f in out["files"]] == ["src/app.py", ".env"]
    assert "error" not in out["files"][0]
    assert out["files"][1]["error"]["code"] == "READ_SECRET_FILE" and out["files"][1]["mode"] == "error"
    assert "class Store" in out["text"] and "\n\n.env: error[READ_SECRET_FILE] " in out["text"]
    with pytest.raises(LeanCtxError) as e:
        registry.call(lc, Caller("agent-a", "s1", str(project)), "ctx_read", {"paths": ["x.py", "y.py"]})
    assert e.value.code == "READ_NOT_FOUND"


def test_http_answers_a_per_file_error_object(make_server) -> None:  # noqa: F811
    server = make_server()
    root = Path(server.config.project_root)
    (root / "app.py").write_text("def main():\n    return 42\n")
    api = Api(server)
    a = api.register()
    files = api.ok("/v1/context/read", a, paths=["app.py", "missing.py"], mode="full")["files"]
    assert "return 42" in files[0]["text"] and "error" not in files[0]
    assert files[1]["path"] == "missing.py" and files[1]["error"]["code"] == "READ_NOT_FOUND"
    r = api.post("/v1/context/read", a, paths=["missing.py", "other.py"])
    assert r.status_code == 404 and r.json()["error"]["code"] == "READ_NOT_FOUND"
    api.close()


# --- auto and the session's intent -------------------------------------------------------------


@pytest.fixture()
def big(project: Path) -> Path:
    (project / "big.py").write_text("\n".join(f"def func_{i}(x):\n    y = x + {i}\n    return y * 2\n"
                                              for i in range(300)))
    return project / "big.py"


def test_auto_uses_the_sessions_task_through_the_cli(tmp_path: Path, project: Path, big: Path) -> None:
    db = tmp_path / "cli.db"

    def read(*extra: str, session: str | None = None) -> dict[str, object]:
        p = _cli(project, db, "read", "big.py", "--json", *extra, session=session)
        assert p.returncode == 0, p.stderr
        row: dict[str, object] = json.loads(p.stdout)
        return row

    assert read()["mode"] == "map"  # a large python file, no intent anywhere
    t = _cli(project, db, "session", "task", "refactor the func_10 helper")  # default-<agent>, as the read
    assert t.returncode == 0, t.stderr
    row = read()
    assert row["mode"] == "task"  # "refactor" asks to edit; the file is large: the relevant lines
    assert row["reason"] == ("no intent given: the session's task 'refactor the func_10 helper' asks to edit,"
                             " but the file is large (1199 lines): relevant lines")
    assert str(row["text"]).split("\n", 1)[0].endswith("· intent: the session's task]")
    over = read("--intent", "give me an overview")  # the per-call intent wins
    assert over["mode"] == "map" and over["reason"] == "intent 'give me an overview' matches 'map' (1199 lines)"
    assert "session" not in str(over["text"]).split("\n", 1)[0]
    assert read("--task", "the func helpers")["mode"] == "task"  # a per-call task is an intent of its own
    blind = read("--task", "the y variable")  # it names no line of the file: a task view would show nothing
    assert blind["mode"] == "map" and str(blind["reason"]).endswith("; intent 'the y variable' matches no line of the file")
    # a named session: its own task, not the default session's
    assert read(session="conv-b")["mode"] == "map"
    assert _cli(project, db, "session", "task", "explore the api types", session="conv-b").returncode == 0
    named = read(session="conv-b")
    assert named["mode"] == "map" and str(named["reason"]).startswith(
        "no intent given: the session's task 'explore the api types' matches 'map'")


def test_a_task_that_names_no_mode_is_still_stated(reader: Reader, project: Path, lc) -> None:  # noqa: F811
    registry.call(lc, Caller("agent-a", "s1", str(project)), "ctx_session", {"action": "task", "task": "port it"})
    a = reader.one("README.md")
    assert a.mode == "full" and a.reason == "no intent given: small file (3 lines); the session's task 'port it' names no mode"
    assert "intent" not in a.text.split("\n", 1)[0]  # it decided nothing: the header stays short
    other = reader.one("README.md", session="s2")  # another session has no task
    assert other.reason == "small file (3 lines)"
