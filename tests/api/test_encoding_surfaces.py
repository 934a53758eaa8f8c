"""The encoding spec reaches every surface, not only MCP sessions: capped reads and shell
answers cut with the spec's correction factor (``ops.read``, ``ops.cap``); HTTP
``/v1/context/*`` and the CLI verbs count with ``$LEAN_CTX_MODEL`` and their events record it;
HTTP ``shell`` shares the MCP tool's timeout constants and ``env`` rules; ``lean-ctx gain``
shows deferred tokens and the correction factor. Real SQLite logs, a real uvicorn, the real CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from leanctx.app import LeanCtx
from leanctx.context.tokens import MODEL_ENV, count_tokens
from leanctx.events import NewEvent
from leanctx.events.codec import payload_dict
from leanctx.events.kinds.context import ArchiveCreated, FileRead, ShellRan
from leanctx.ops.cap import cap_lines, char_prefix
from leanctx.ops.read import read_files
from leanctx.ops.shell import run_shell

from .test_http_common import Api, make_server  # noqa: F401

GEMINI, O200K = "cl100k_base*1.1", "o200k_base"
LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
PY = sys.executable
# lines whose counts differ between the encodings, no leading whitespace (per-line counts add up)
LINES = [f"line {i:05} Überblick über Straße {i}: naïve café façade — lorem ipsum dolor" for i in range(3000)]

pytestmark = pytest.mark.timeout(180)


@pytest.fixture()
def lc(tmp_path: Path):  # type: ignore[no-untyped-def]
    app = LeanCtx(tmp_path / "data" / "e.db")
    yield app
    app.close()


def _events(lc: LeanCtx, kind: str) -> list[dict[str, Any]]:
    return [payload_dict(e.payload) for e in lc.store.read_all(0) if e.kind == kind]


# --- 1. caps cut with the spec's factor ---------------------------------------------------------


def test_char_prefix_counts_with_the_factor() -> None:
    text = "".join(LINES)  # one over-long line
    for budget in (1000, 5000):
        n = char_prefix(text, budget, GEMINI)
        assert count_tokens(text[:n], GEMINI) <= budget  # without the factor: ~10% over
        assert count_tokens(text[:n], GEMINI) >= budget - 20  # and not far under
    assert char_prefix(text, 1000, O200K) > char_prefix(text, 1000, "cl100k_base") > char_prefix(text, 1000, GEMINI)


@pytest.mark.parametrize("spec", [GEMINI, O200K])
def test_cap_lines_stays_under_the_cap_in_the_spec(spec: str) -> None:
    text, cut = cap_lines(LINES, 3000, lambda c: f"[… {c.unsent} lines left out]", encoding=spec,
                          tail_tokens=300, tail_lines=5)
    assert cut is not None and count_tokens(text, spec) <= 3000
    assert count_tokens(text, spec) >= 2800  # the cap is used, not wasted
    one, cut = cap_lines(["".join(LINES)], 3000, lambda c: "[… cut]", encoding=spec)
    assert cut is not None and cut.chars > 0 and 2800 <= count_tokens(one, spec) <= 3000


def test_a_capped_read_counts_and_cuts_with_the_factor(lc: LeanCtx, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "big.txt").write_text("\n".join(LINES) + "\n")
    [a] = read_files(lc, ["big.txt"], mode="full", actor="agent-a", session_id="s1", project=str(project),
                     cap_tokens=2000, encoding=GEMINI)
    assert a.capped and a.archive_id
    assert a.sent_tokens == count_tokens(a.text, GEMINI) <= 2000
    assert a.sent_tokens != count_tokens(a.text, "cl100k_base")
    ev = _events(lc, "file.read")[-1]
    assert ev["encoding"] == GEMINI and ev["sent_tokens"] == a.sent_tokens
    assert ev["view_tokens"] == count_tokens("\n".join(LINES) + "\n", GEMINI)
    # what was sent of the view, counted in the spec, is what the event says was not deferred:
    # the per-line running counts the cut used carry the factor (without it: ~9% of it off)
    body = a.text.split("\n")[1:]
    sent = body[:next(i for i, ln in enumerate(body) if ln.startswith("[capped at"))]
    assert sent == LINES[:len(sent)] and len(sent) > 50
    covered = count_tokens("".join(ln + "\n" for ln in sent), GEMINI)
    assert abs((ev["view_tokens"] - ev["deferred_tokens"]) - covered) <= 2, (ev, covered)
    # the notice prices the follow-up call, counted in the spec too: the deferred rest plus
    # expand's "N:" line prefixes (a little more, never less)
    m = re.search(r"\(~([\d,]+) tokens(?:, estimated from a sample)?\) archived as", a.text)
    assert m, a.text[-300:]
    assert ev["deferred_tokens"] <= int(m.group(1).replace(",", "")) <= 1.25 * ev["deferred_tokens"]


def test_a_capped_shell_answer_counts_and_cuts_with_the_factor(lc: LeanCtx) -> None:
    code = "import sys\nfor ln in sys.argv[1:]: print(ln)\n"
    r = run_shell(lc, [PY, "-c", code, *LINES[:1500]], raw=True, actor="agent-a", session_id="s1", encoding=GEMINI,
                  cap_tokens=2000)
    assert r.capped and r.sent_tokens == count_tokens(r.text, GEMINI) <= 2000
    assert r.sent_tokens >= 1800
    one = run_shell(lc, [PY, "-c", "print('x' * 3 + ' '.join(f'w{i}' for i in range(40000)))"], raw=True,
                    actor="agent-a", session_id="s1", encoding=GEMINI, cap_tokens=2000)
    assert one.capped and one.sent_tokens == count_tokens(one.text, GEMINI) <= 2000
    ran = _events(lc, "shell.ran")
    assert [e["encoding"] for e in ran] == [GEMINI, GEMINI]
    assert [e["sent_tokens"] for e in ran] == [r.sent_tokens, one.sent_tokens]


# --- 2. HTTP -----------------------------------------------------------------------------------


def test_http_shares_the_mcp_shell_constants() -> None:
    from leanctx.api.http import context as http_context
    from leanctx.api.tools import context as tools_context

    assert http_context.DEFAULT_SHELL_TIMEOUT is tools_context.DEFAULT_SHELL_TIMEOUT
    assert http_context.MAX_SHELL_TIMEOUT is tools_context.MAX_SHELL_TIMEOUT
    assert http_context.env_pairs is tools_context.env_pairs


def test_http_shell_takes_env_like_the_mcp_tool(make_server) -> None:  # noqa: F811
    server = make_server(allow_exec=True)
    api = Api(server)
    a = api.register()
    r = api.ok("/v1/context/shell", a, command=["sh", "-c", 'echo "$LC_A-$LC_B-$LC_C"'],
               env=["LC_A=1", "LC_B=x=y", "LC_C="])
    assert r["text"].strip() == "1-x=y-"
    for bad in (["NOEQUALS"], ["1X=2"], ["A-B=1"], ["=v"]):
        r = api.post("/v1/context/shell", a, command="true", env=bad)
        assert r.status_code == 422 and r.json()["error"]["code"] == "SHELL_INVALID_ENV", (bad, r.text)
    r = api.post("/v1/context/shell", a, command="true", env="A=1")  # not a list
    assert r.status_code == 422


@pytest.mark.parametrize(("model", "spec"), [("gemini-1.5-pro", GEMINI), (None, O200K)])
def test_http_counts_with_lean_ctx_model(make_server, monkeypatch: pytest.MonkeyPatch, model: str | None,  # noqa: F811
                                         spec: str) -> None:
    if model:
        monkeypatch.setenv(MODEL_ENV, model)
    else:
        monkeypatch.delenv(MODEL_ENV, raising=False)
    server = make_server(allow_exec=True)
    (Path(server.config.project_root) / "prose.txt").write_text("".join(ln + "\n" for ln in LINES[:60]))
    api = Api(server)
    a = api.register()
    read = api.ok("/v1/context/read", a, paths=["prose.txt"], mode="full")["files"][0]
    assert read["sent_tokens"] == count_tokens(read["text"], spec)
    shell = api.ok("/v1/context/shell", a, command=["cat", "prose.txt"], raw=True)
    assert shell["sent_tokens"] == count_tokens(shell["text"], spec)
    found = api.ok("/v1/context/search", a, query="Straße", method="regex")
    assert found["sent_tokens"] == count_tokens(found["text"], spec)
    lc = server.state.lc
    for kind in ("file.read", "shell.ran", "search.ran"):
        assert [e["encoding"] for e in _events(lc, kind)] == [spec], kind


def test_http_refuses_an_unusable_lean_ctx_model(make_server, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    monkeypatch.setenv(MODEL_ENV, "cl100k_base*9")
    server = make_server()
    (Path(server.config.project_root) / "a.txt").write_text("hello\n")
    api = Api(server)
    r = api.post("/v1/context/read", api.register(), paths=["a.txt"])
    assert r.status_code == 422 and r.json()["error"]["code"] == "TOKENIZER_UNKNOWN_ENCODING", r.text


# --- 3. the CLI verbs --------------------------------------------------------------------------


def _cli(project: Path, db: Path, model: str | None, *args: str, stdin: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_DB=str(db), LEAN_CTX_NO_DAEMON="1", LEAN_CTX_AGENT_ID="cli-agent")
    if model:
        env[MODEL_ENV] = model
    p = subprocess.run([LEAN_CTX, *args], check=False, cwd=project, env=env, capture_output=True, text=True, timeout=60,
                       input=stdin)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stdout + p.stderr
    return p.stdout


@pytest.mark.parametrize(("model", "spec"), [("gemini-1.5-pro", GEMINI), (None, O200K)])
def test_cli_verbs_count_with_lean_ctx_model(tmp_path: Path, model: str | None, spec: str) -> None:
    project, db = tmp_path / "proj", tmp_path / "events.db"
    project.mkdir()
    (project / "prose.txt").write_text("".join(ln + "\n" for ln in LINES[:60]))
    read = json.loads(_cli(project, db, model, "read", "prose.txt", "--mode", "full", "--json"))
    assert read["sent_tokens"] == count_tokens(read["text"], spec)
    shell = json.loads(_cli(project, db, model, "shell", "--raw", "--json", "--", "cat", "prose.txt"))
    assert shell["sent_tokens"] == count_tokens(shell["text"], spec)
    found = json.loads(_cli(project, db, model, "search", "Straße", "--regex", "--json"))
    assert found["sent_tokens"] == count_tokens(found["text"], spec)
    comp = json.loads(_cli(project, db, model, "compress", "--as", "cat prose.txt", "--json",
                           stdin="".join(ln + "\n" for ln in LINES[:3000])))
    assert comp["sent_tokens"] == count_tokens(comp["text"], spec)
    tail = [json.loads(ln) for ln in _cli(project, db, None, "events", "tail", "--json", "-n", "100").splitlines()]
    by_kind: dict[str, list[str]] = {}
    for e in tail:
        if "encoding" in e["payload"]:
            by_kind.setdefault(e["kind"], []).append(e["payload"]["encoding"])
    assert by_kind == {"file.read": [spec], "shell.ran": [spec, spec], "search.ran": [spec]}, by_kind
    aid = next(e["payload"]["archive_id"] for e in tail if e["kind"] == "shell.ran" and e["payload"]["archive_id"])
    expanded = json.loads(_cli(project, db, model, "expand", aid, "--lines", "1-40", "--json"))
    assert expanded["sent_tokens"] == count_tokens(expanded["text"], spec)
    last = next(json.loads(ln) for ln in reversed(_cli(project, db, None, "events", "tail", "--json", "-n", "100")
                                                  .splitlines()) if json.loads(ln)["kind"] == "archive.expanded")
    assert last["payload"]["encoding"] == spec  # expansions say which tokenizer counted them too


# --- 4. gain -----------------------------------------------------------------------------------


def test_gain_shows_deferred_tokens_and_the_factor(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    seq = count(1)
    with LeanCtx(db) as app:
        def call(*events: Any) -> None:
            n = next(seq)
            app.store.append("calls:a", [NewEvent(event=e, actor="a", correlation_id=f"c{n}",
                                                  ts=f"2026-03-01T10:00:{n:02d}.000000Z", consistency="eventual")
                                         for e in events])

        call(FileRead(path="big.py", mode="full", requested_mode="full", content_hash="h", lines=6000,
                      raw_tokens=60_000, sent_tokens=20_050, session_id="s1", archive_id="A1", view_tokens=60_000,
                      deferred_tokens=40_000, encoding=GEMINI),
             ArchiveCreated(archive_id="A1", source="read", sha256="s", bytes=1, lines=6000, tokens=60_000))
        call(ShellRan(command="git status", pattern="git_status", exit_code=0, raw_tokens=2000, sent_tokens=200,
                      encoding=GEMINI))
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env["LEAN_CTX_DB"] = str(db)
    p = subprocess.run([LEAN_CTX, "gain", "--by", "tool"], check=False, cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    header = next(ln for ln in lines if ln.startswith("TOOL"))
    assert header.split() == ["TOOL", "CALLS", "RAW", "SENT", "SAVED", "SAVED%", "DEFERRED", "BOUNCES", "WASTED"]
    rows = {ln.split()[0]: ln.split() for ln in lines[lines.index(header) + 1:] if ln.strip()
            and ln.split()[0] in ("read", "shell", "total")}
    assert rows["read"][6] == "40,000" and rows["shell"][6] == "0" and rows["total"][6] == "40,000"
    total = lines[-1]
    assert "40,000 deferred" in total and total.endswith("cl100k×1.1, real token counts"), total
    assert "cl100k_base" not in p.stdout
    js = json.loads(subprocess.run([LEAN_CTX, "gain", "--json"], check=False, cwd=tmp_path, env=env, capture_output=True,
                                   text=True, timeout=60).stdout)
    assert js["tokenizer"] == "cl100k×1.1, real token counts" and js["encodings"] == [GEMINI]
    assert js["totals"]["deferred_tokens"] == 40_000


def test_gain_has_no_deferred_column_without_capped_reads(tmp_path: Path) -> None:
    from leanctx.api.cli.gain_cmd import tokenizer_note

    db = tmp_path / "e.db"
    with LeanCtx(db) as app:
        app.store.append("calls:a", [NewEvent(
            event=ShellRan(command="git status", pattern="git_status", exit_code=0, raw_tokens=2000, sent_tokens=200),
            actor="a", correlation_id="c1", ts="2026-03-01T10:00:01.000000Z", consistency="eventual")])
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env["LEAN_CTX_DB"] = str(db)
    out = subprocess.run([LEAN_CTX, "gain"], check=False, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60).stdout
    assert "DEFERRED" not in out and "deferred" not in out and out.rstrip().endswith("o200k, real token counts")
    assert tokenizer_note([O200K, GEMINI, "cl100k_base"]) == "o200k+cl100k×1.1+cl100k, real token counts"
