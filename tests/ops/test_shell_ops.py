"""ctx_shell / compress / ctx_expand through the operation layer: real subprocesses, a real log.

Exit codes, stderr, timeouts that kill the whole process group, env passthrough and cwd, the
never-worse rule on the text actually sent, omissions that expand to exactly the archived
lines, events carrying real tokenizer counts, and the agent's token budget.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path

import msgspec
import pytest

from leanctx.app import LeanCtx
from leanctx.archive import ArchiveStore
from leanctx.commands.budgets import SetBudget
from leanctx.context.shell import archive_text, raw_render
from leanctx.context.tokens import count_tokens
from leanctx.errors import CommandError, InvalidInput, NotFound
from leanctx.events.codec import payload_dict
from leanctx.ops.shell import compress_captured, expand, parse_line_range, run_shell

PY = sys.executable
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "shell"
T0 = 1_800_000_000.0

pytestmark = pytest.mark.timeout(60)


@pytest.fixture()
def lc(tmp_path: Path):  # type: ignore[no-untyped-def]
    app = LeanCtx(tmp_path / "e.db")
    yield app
    app.close()


def events(lc: LeanCtx, kind: str) -> list[dict]:
    return [payload_dict(e.payload) for e in lc.store.read_all(0) if e.kind == kind]


def py(code: str) -> list[str]:
    return [PY, "-c", code]


# ----------------------------------------------------------------------------- running


def test_exit_code_stdout_and_stderr(lc: LeanCtx) -> None:
    r = run_shell(lc, py("import sys; print('to stdout'); print('to stderr', file=sys.stderr); sys.exit(3)"),
                  actor="agent-a", session_id="s1")
    assert r.exit_code == 3
    assert "to stdout" in r.text and "to stderr" in r.text and r.text.endswith("[exit 3]")
    ok = run_shell(lc, py("print('fine')"), actor="agent-a")
    assert ok.exit_code == 0 and ok.text == "fine"
    [ran3, ran0] = events(lc, "shell.ran")
    assert (ran3["exit_code"], ran0["exit_code"]) == (3, 0)
    assert ran3["session_id"] == "s1" and ran3["captured"] is False
    assert ran3["duration_ms"] > 0


def test_a_string_runs_through_bash(lc: LeanCtx, tmp_path: Path) -> None:
    r = run_shell(lc, "echo one; echo two | tr a-z A-Z; exit 5", actor="a")
    assert r.exit_code == 5 and "one\nTWO" in r.text


def test_cwd_and_env_passthrough(lc: LeanCtx, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    r = run_shell(lc, py("import os; print(os.getcwd()); print(os.environ['LC_T_VAR'], os.environ.get('HOME') is not None)"),
                  cwd=tmp_path / "sub", env_passthrough={"LC_T_VAR": "passed"})
    assert r.text.splitlines() == [str(tmp_path / "sub"), "passed True"]  # the caller's env is kept too
    with pytest.raises(InvalidInput) as e:
        run_shell(lc, ["true"], cwd=tmp_path / "missing")
    assert e.value.code == "SHELL_INVALID_CWD"
    with pytest.raises(InvalidInput):
        run_shell(lc, "   ")


def test_missing_program_is_exit_127(lc: LeanCtx) -> None:
    r = run_shell(lc, ["lean-ctx-no-such-program-xyz", "--flag"])
    assert r.exit_code == 127 and "command not found" in r.text
    assert events(lc, "shell.ran")[0]["exit_code"] == 127


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in {"Z", "X"}


def test_timeout_kills_the_process_group_and_reports_124(lc: LeanCtx, tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    t = time.monotonic()
    r = run_shell(lc, f"echo started; sleep 30 & echo $! > {pidfile}; sleep 30", timeout=1.0, actor="a")
    took = time.monotonic() - t
    assert took < 10
    assert r.exit_code == 124 and r.timed_out
    assert "started" in r.text and "timed out after 1s" in r.text and "[exit 124]" in r.text
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid), "the background child of a timed-out command must be killed too"
    assert events(lc, "shell.ran")[0]["exit_code"] == 124


def test_background_children_holding_the_pipes_do_not_hang_the_run(lc: LeanCtx, tmp_path: Path) -> None:
    pidfile = tmp_path / "bg.pid"
    t = time.monotonic()
    r = run_shell(lc, f"sleep 20 & echo $! > {pidfile}; echo done")
    assert time.monotonic() - t < 8
    assert r.exit_code == 0 and "done" in r.text and "background" in r.text
    os.kill(int(pidfile.read_text()), 9)


def test_huge_output_is_capped_in_the_middle_and_says_so(lc: LeanCtx) -> None:
    r = run_shell(lc, py("for i in range(200000): print('row', i)"), max_output_bytes=64 * 1024)
    assert "row 0" in r.text and "row 199999" in r.text
    assert r.archive_id is not None
    full = ArchiveStore.beside(lc.db).get(r.archive_id)
    assert "bytes of output in the middle were not captured" in full


# ----------------------------------------------------------------------------- rules


def test_never_worse_sends_the_raw_output(lc: LeanCtx) -> None:
    r = run_shell(lc, ["echo", "hello world"])
    assert r.pattern == "raw" and r.text == "hello world" and r.archive_id is None
    assert r.sent_tokens == r.raw_tokens == count_tokens("hello world")
    assert not (lc.db.parent / "archives").exists()


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.json")), ids=lambda p: p.stem)
def test_fixtures_through_compress_captured(lc: LeanCtx, path: Path) -> None:
    fx = json.loads(path.read_text())
    r = compress_captured(lc, fx["command"], fx["stdout"], stderr=fx["stderr"], exit_code=fx["exit_code"],
                          actor="agent-a")
    # never worse, on the text actually sent (archive ids filled in)
    assert r.sent_tokens == count_tokens(r.text)
    assert r.sent_tokens <= r.raw_tokens
    if r.pattern != "raw":
        assert r.sent_tokens < r.raw_tokens
    else:
        assert r.text == raw_render(fx["stdout"], fx["stderr"], fx["exit_code"]) or r.redactions
    for fact in fx["must_keep"]:
        assert fact in r.text, f"lost must-keep fact {fact!r}"
    assert "{archive}" not in r.text
    # nothing dropped silently: every omission names an archive that holds every line
    if r.omitted_lines:
        assert r.archive_id is not None and f"expand {r.archive_id}]" in r.text
        full = ArchiveStore.beside(lc.db).get(r.archive_id)
        assert full == archive_text(fx["stdout"], fx["stderr"])
    else:
        assert r.archive_id is None and "· expand " not in r.text
    [ran] = events(lc, "shell.ran")
    assert ran["captured"] is True and ran["raw_tokens"] == r.raw_tokens and ran["sent_tokens"] == r.sent_tokens
    assert ran["archive_id"] == r.archive_id and ran["omitted_lines"] == r.omitted_lines


def test_events_carry_real_token_counts(lc: LeanCtx) -> None:
    code = "import sys\nfor i in range(400): print(f'compiling module_{i}.c ... ok')\nprint('error: link failed', file=sys.stderr)\nsys.exit(2)"
    r = run_shell(lc, py(code), actor="agent-a", session_id="s9", now=T0)
    out = "".join(f"compiling module_{i}.c ... ok\n" for i in range(400))
    raw = raw_render(out, "error: link failed\n", 2)
    assert r.raw_tokens == count_tokens(raw)
    assert r.sent_tokens == count_tokens(r.text) < r.raw_tokens / 10
    [created] = events(lc, "archive.created")
    [ran] = events(lc, "shell.ran")
    [spent] = events(lc, "budget.consumed")
    full = archive_text(out, "error: link failed\n")
    assert created == {"kind": "archive.created", "archive_id": r.archive_id, "source": "shell",
                       "sha256": ArchiveStore.id_of(full)[1], "bytes": len(full.encode()), "lines": 401,
                       "tokens": count_tokens(full)}
    assert ran["raw_tokens"] == r.raw_tokens and ran["sent_tokens"] == r.sent_tokens
    assert ran["omitted_lines"] == r.omitted_lines > 0 and ran["archive_id"] == r.archive_id
    assert ran["command"] == shlex.join([PY, "-c", code]) and ran["pattern"] == "generic"
    assert spent == {"kind": "budget.consumed", "agent_id": "agent-a", "tokens": r.sent_tokens, "tool": "ctx_shell"}
    # the same output again: the archive already exists, so no second archive.created
    run_shell(lc, py(code), actor="agent-a", session_id="s9")
    assert len(events(lc, "archive.created")) == 1 and len(events(lc, "shell.ran")) == 2
    streams = {e.kind: e.stream for e in lc.store.read_all(0)}
    assert streams["shell.ran"] == "shell:s9" and streams["archive.created"] == f"archive:{r.archive_id}"


# ----------------------------------------------------------------------------- expand


@pytest.fixture()
def archived(lc: LeanCtx):  # type: ignore[no-untyped-def]
    code = "import sys\nfor i in range(1, 301): print(f'step {i} of 300: state={i*i%97}')\nprint('ERROR: disk full at /var/lib/x.db:12', file=sys.stderr)\nsys.exit(1)"
    r = run_shell(lc, py(code), actor="agent-a")
    assert r.archive_id and r.omitted_lines > 0
    lines = ArchiveStore.beside(lc.db).get(r.archive_id).split("\n")[:-1]
    assert len(lines) == 301
    return r, lines


def test_expand_selectors_return_exactly_the_archived_lines(lc: LeanCtx, archived) -> None:  # type: ignore[no-untyped-def]
    r, lines = archived
    aid = r.archive_id
    assert expand(lc, aid, actor="agent-a").text == "\n".join(lines)
    assert expand(lc, aid, head=5).text == "\n".join(lines[:5])
    assert expand(lc, aid, tail=3).text == "\n".join(lines[-3:])
    with pytest.raises(InvalidInput) as empty:
        expand(lc, aid, tail=0)
    assert empty.value.code == "EXPAND_EMPTY_RANGE"
    e = expand(lc, aid, lines="120-125")
    assert e.text.splitlines() == [f"{k}:{lines[k - 1]}" for k in range(120, 126)] and e.lines == 6
    assert expand(lc, aid, lines="299-").text.splitlines() == [f"{k}:{lines[k - 1]}" for k in (299, 300, 301)]
    with pytest.raises(InvalidInput) as past:
        expand(lc, aid, lines="400-500")
    assert past.value.code == "EXPAND_INVALID_RANGE"
    g = expand(lc, aid, grep=r"state=0\b|ERROR")
    want = [f"{k}:{ln}" for k, ln in enumerate(lines, 1) if "state=0 " in ln + " " or "ERROR" in ln]
    assert g.text.splitlines() == want and g.lines == len(want) >= 2
    assert "no line" in expand(lc, aid, grep="zzz-nothing").text
    # the omission markers' ranges point at the right lines
    assert "ERROR: disk full at /var/lib/x.db:12" in r.text
    kinds = events(lc, "archive.expanded")
    assert [k["selector"] for k in kinds[:3]] == ["full", "head:5", "tail:3"]  # refused calls record nothing
    assert all(k["sent_tokens"] >= 0 for k in kinds)
    assert kinds[3]["sent_tokens"] == count_tokens(e.text)


def test_expand_max_tokens_states_what_it_left_out(lc: LeanCtx, archived) -> None:  # type: ignore[no-untyped-def]
    r, lines = archived
    e = expand(lc, r.archive_id, max_tokens=200)
    assert e.truncated_lines > 0 and e.sent_tokens <= 200
    kept = e.text.splitlines()
    assert kept[:-1] == lines[: len(kept) - 1]
    assert kept[-1].startswith(f"[… {e.truncated_lines} more selected lines not sent")
    assert f"--lines {len(kept)}-301" in kept[-1]


def test_expand_refusals(lc: LeanCtx, archived) -> None:  # type: ignore[no-untyped-def]
    r, _ = archived
    for kwargs, code in [({"head": 1, "tail": 1}, "EXPAND_ONE_SELECTOR"), ({"lines": "9-3"}, "EXPAND_INVALID_RANGE"),
                         ({"lines": "x"}, "EXPAND_INVALID_RANGE"), ({"grep": "("}, "EXPAND_INVALID_REGEX"),
                         ({"head": -1}, "EXPAND_INVALID_COUNT")]:
        with pytest.raises(InvalidInput) as e:
            expand(lc, r.archive_id, **kwargs)
        assert e.value.code == code
    with pytest.raises(InvalidInput):
        expand(lc, "../../etc/passwd")
    with pytest.raises(NotFound) as nf:
        expand(lc, "A0000000000000000")
    assert nf.value.code == "ARCHIVE_NOT_FOUND"
    assert parse_line_range("7") == (7, 7) and parse_line_range("3-") == (3, None)


# ----------------------------------------------------------------------------- budget


def test_budget_warning_then_refusal_before_running(lc: LeanCtx, tmp_path: Path) -> None:
    lc.bus.dispatch(SetBudget(limit=240), actor="agent-b")
    # ~200 tokens of output plus the warning line it carries (counted as sent): ~94 %
    first = run_shell(lc, py("print('x ' * 200)"), actor="agent-b")
    assert first.budget_warning and "token budget warning" in first.text.splitlines()[-1]
    second = run_shell(lc, py("print('x ' * 20)"), actor="agent-b")  # over 100 % now
    assert "token budget exceeded" in (second.budget_warning or "")
    marker = tmp_path / "ran"
    with pytest.raises(CommandError) as e:
        run_shell(lc, py(f"open({str(marker)!r}, 'w').write('x')"), actor="agent-b")
    assert e.value.code == "BUDGET_EXCEEDED"
    assert not marker.exists(), "a refused command must not run"
    calls = [payload_dict(x.payload) for x in lc.store.read_all(0) if x.kind == "tool.called"]
    assert calls[-1]["command"] == "shell.check" and calls[-1]["error_code"] == "BUDGET_EXCEEDED"
    with pytest.raises(CommandError):
        compress_captured(lc, "git status", "On branch main\n", actor="agent-b")
    # other agents are not affected; expand is refused for the exhausted one
    assert run_shell(lc, ["echo", "ok"], actor="agent-c").text == "ok"
    spent = [p for p in events(lc, "budget.consumed") if p["agent_id"] == "agent-b"]
    assert sum(p["tokens"] for p in spent) == first.sent_tokens + second.sent_tokens


def test_expand_enforces_the_budget(lc: LeanCtx, archived) -> None:  # type: ignore[no-untyped-def]
    r, _ = archived
    lc.bus.dispatch(SetBudget(limit=10), actor="agent-d")
    expand(lc, r.archive_id, head=20, actor="agent-d")  # spends past the limit
    with pytest.raises(CommandError) as e:
        expand(lc, r.archive_id, head=1, actor="agent-d")
    assert e.value.code == "BUDGET_EXCEEDED"


def test_result_is_a_msgspec_struct(lc: LeanCtx) -> None:
    r = run_shell(lc, ["echo", "x"])
    assert msgspec.to_builtins(r)["exit_code"] == 0


def test_an_unterminated_private_key_is_redacted_too(lc: LeanCtx, tmp_path: Path) -> None:
    """A key block cut off by a timeout has no END line for the block pattern to match."""
    body = "MIIEowIBAAKCAQEAunterminatedKeyBodyQ1w2e3r4t5y6u7i8o9p0"
    r = run_shell(lc, f"printf -- '-----BEGIN RSA PRIVATE KEY-----\\n{body}\\n'; sleep 20", timeout=1.0,
                  actor="agent-a")
    assert r.exit_code == 124 and r.redactions >= 1
    assert body not in r.text and "[REDACTED:private_key]" in r.text
    # the command line held the key body too: it is redacted in the log as well
    lc.store.close()
    for path in [p for p in tmp_path.rglob("*") if p.is_file()]:
        assert body.encode() not in path.read_bytes(), path.name


def test_a_key_marker_named_in_code_or_a_command_is_kept(lc: LeanCtx, tmp_path: Path) -> None:
    """Markers in code (cryptography's ``_SK_START``) or in a grep are not keys: nothing follows
    them that looks like a key body, so the shell output and the command line keep them whole."""
    src = tmp_path / "ssh.py"
    src.write_text('_SK_START = b"-----BEGIN OPENSSH PRIVATE KEY-----"\n'
                   '_SK_END = b"-----END OPENSSH PRIVATE KEY-----"\n'
                   "def load(data):\n    return data.index(_SK_START)\n")
    r = run_shell(lc, ["cat", str(src)], actor="agent-a")
    assert r.redactions == 0 and "[REDACTED" not in r.text
    assert "    return data.index(_SK_START)" in r.text
    g = run_shell(lc, f"grep -n -- '-----BEGIN OPENSSH PRIVATE KEY-----' {src} && grep -c _SK_ {src}",
                  actor="agent-a")
    assert g.redactions == 0 and '1:_SK_START = b"-----BEGIN OPENSSH PRIVATE KEY-----"' in g.text, g.text
    assert g.command.endswith(f"&& grep -c _SK_ {src}"), g.command
