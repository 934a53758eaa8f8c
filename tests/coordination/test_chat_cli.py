"""The message bus end-to-end: the real ``lean-ctx`` console script in subprocesses (identity from
``LEAN_CTX_AGENT_ID``, ``--as``/``--from`` overrides), and ``wait`` woken across processes."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from leanctx.app import LeanCtx
from leanctx.commands.agents import RegisterAgent
from leanctx.commands.chat import PostMessage
from tools.replay import replay

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))  # this interpreter's, not whatever PATH finds
REPO = Path(__file__).resolve().parents[2]


def env_for(db: Path, agent: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env["LEAN_CTX_DB"] = str(db)
    if agent is not None:
        env["LEAN_CTX_AGENT_ID"] = agent
    return env


def run(db: Path, agent: str | None, *args: str, check: bool = True, stdin: str | None = None,
        cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    p = subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, env=env_for(db, agent), input=stdin,
                       timeout=60, cwd=cwd or db.parent)
    if check and p.returncode != 0:
        raise AssertionError(f"lean-ctx {' '.join(args)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def js(p: subprocess.CompletedProcess[str]) -> Any:
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
    assert len(lines) == 1, p.stdout
    return lines[0]


def fails(p: subprocess.CompletedProcess[str], code: str) -> None:
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert p.stderr.startswith(f"error[{code}]:") or js(p)["error"]["code"] == code, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    return tmp_path / "events.db"


def run_many(db: Path, calls: list[tuple[str, list[str]]]) -> list[subprocess.CompletedProcess[str]]:
    """Independent invocations, run at the same time (each as its agent)."""
    procs = [(args, subprocess.Popen([LEAN_CTX, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=env_for(db, agent), cwd=db.parent)) for agent, args in calls]
    out = []
    for args, p in procs:
        stdout, stderr = p.communicate(timeout=60)
        out.append(subprocess.CompletedProcess(args, p.returncode, stdout, stderr))
    return out


def test_every_chat_verb_has_help() -> None:
    from typer.testing import CliRunner

    from leanctx.api.cli.app import app

    runner = CliRunner()
    for verb in (["init"], ["channels"], ["post"], ["read"], ["peek"], ["wait"], ["export"], ["event"],
                 ["event", "post"], ["event", "read"]):
        res = runner.invoke(app, ["chat", *verb, "--help"])
        assert res.exit_code == 0 and "Usage" in res.output and len(res.output) > 200, verb


def test_channels_post_read_peek_export_through_the_cli(db: Path, tmp_path: Path) -> None:
    made = js(run(db, "alice", "chat", "init", "backend", "--members", "bob,carol", "--members", "dave",
                  "--topic", "API work", "--json"))
    assert (made["name"], made["members"], made["topic"]) == ("backend", ["bob", "carol", "dave"], "API work")
    fails(run(db, "alice", "chat", "init", "backend", check=False), "CHAT_CHANNEL_EXISTS")

    m1 = js(run(db, "alice", "chat", "post", "--channel", "backend", "--to", "all", "--title", "hello",
                "--body", "hi all", "--category", "finding", "--json"))
    assert (m1["seq"], m1["from"], m1["to"], m1["category"]) == (1, "alice", "all", "finding")
    (tmp_path / "secret.md").write_text("only for carol\n")
    m2 = js(run(db, "alice", "chat", "post", "-c", "backend", "--to", "carol", "--title", "secret",
                "--body-file", str(tmp_path / "secret.md"), "--json"))
    assert (m2["seq"], m2["to"], m2["body"]) == (2, "carol", "only for carol\n")
    m3 = js(run(db, "bob", "chat", "post", "-c", "backend", "--title", "from stdin", "--body", "-", "--reply", "1",
                "--json", stdin="piped body\n"))
    assert (m3["seq"], m3["from"], m3["reply_to"], m3["body"]) == (3, "bob", 1, "piped body\n")
    m4 = js(run(db, "alice", "chat", "post", "-c", "backend", "--from", "dave", "--title", "as dave", "--body", "d",
                "--json"))
    assert m4["from"] == "dave"
    human = run(db, "alice", "chat", "post", "--title", "in general", "--body", "g")
    assert human.stdout.strip() == "posted #1 to #general → all"

    bob = js(run(db, "bob", "chat", "read", "--channel", "backend", "--json"))
    assert [m["seq"] for m in bob["messages"]] == [1, 4] and bob["cursor"] == 4  # not carol's, not its own
    assert js(run(db, "bob", "chat", "read", "--channel", "backend", "--json"))["messages"] == []
    carol = js(run(db, "alice", "chat", "read", "--channel", "backend", "--as", "carol", "--json"))
    assert [m["title"] for m in carol["messages"]] == ["hello", "secret", "from stdin", "as dave"]
    peeked = js(run(db, "bob", "chat", "peek", "--channel", "backend", "-n", "3", "--json"))
    assert [m["seq"] for m in peeked] == [1, 3, 4]  # own post included, the secret never
    text = run(db, "bob", "chat", "peek", "-c", "backend", "-n", "1").stdout
    assert text.startswith("#4  ") and "dave → all  [note]" in text and "    as dave\n" in text
    listed = {c["name"]: c for c in js(run(db, "bob", "chat", "channels", "--json"))}
    assert list(listed) == ["backend", "general"]
    assert (listed["backend"]["messages"], listed["backend"]["last_seq"], listed["backend"]["unread"]) == (3, 4, 0)
    assert (listed["general"]["messages"], listed["general"]["unread"]) == (1, 1)
    table = run(db, "bob", "chat", "channels").stdout
    assert table.splitlines()[0].split() == ["CHANNEL", "MESSAGES", "UNREAD", "TOPIC", "LAST"]

    refusals = [
        (["chat", "post", "-c", "nope", "--title", "t", "--body", "b"], "CHAT_CHANNEL_NOT_FOUND"),
        (["chat", "post", "-c", "backend", "--title", "t", "--body", "b", "--reply", "99", "--json"],
         "CHAT_REPLY_NOT_FOUND"),
        (["chat", "post", "--title", "t"], "CHAT_EMPTY_BODY"),
        (["chat", "post", "--title", "t", "--body-file", str(tmp_path / "missing")], "CHAT_BODY_FILE_NOT_FOUND"),
        (["chat", "read", "-c", "Not_A Slug"], "CHAT_INVALID_CHANNEL"),
        (["chat", "post", "--to", "bad id", "--title", "t", "--body", "b"], "CHAT_INVALID_RECIPIENT"),
        (["chat", "post", "--title", "t", "--body", "b", "--category", "Bad Cat"], "CHAT_INVALID_CATEGORY"),
        (["chat", "export", "nope", str(tmp_path / "n")], "CHAT_CHANNEL_NOT_FOUND"),
    ]
    for p, (_, code) in zip(run_many(db, [("bob", args) for args, _ in refusals]), refusals):
        fails(p, code)

    res = js(run(db, "bob", "chat", "export", "backend", str(tmp_path / "thread"), "--json"))
    assert res["files"] == ["0001-alice-hello.md", "0003-bob-from-stdin.md", "0004-dave-as-dave.md"]
    assert (tmp_path / "thread" / "0003-bob-from-stdin.md").read_text().startswith(
        '---\nseq: 3\nfrom: "bob"\nto: "all"\nreply_to: 1\nchannel: "backend"\ncategory: "note"\nts: "')
    again = js(run(db, "carol", "chat", "export", "backend", str(tmp_path / "carol"), "--json"))
    assert "0002-alice-secret.md" in again["files"]

    with LeanCtx(db) as lc:
        report = replay(lc, verify=True)
        assert report.ok and all(p.match for p in report.projections)


def test_adapter_events_through_the_cli(db: Path) -> None:
    cap = js(run(db, "alice", "chat", "event", "post", "--type", "capability", "--harness", "claude-code",
                 "--primitives", "messages,cursors", "--primitives", "wait", "--json"))
    assert (cap["agent"], cap["harness"]) == ("alice", "claude-code")
    assert cap["primitives"] == ["messages", "cursors", "wait"]
    st = run(db, "alice", "chat", "event", "post", "--from", "bob", "--json-body",
             '{"schema_version": 1, "event": "status", "agent": "bob", "harness": "cursor", "status": "busy",'
             ' "ts": "2026-11-30T15:00:00Z"}')
    assert st.stdout.strip() == "bob (cursor) is busy"
    every = js(run(db, "carol", "chat", "event", "post", "--type", "capability", "--harness", "codex", "--json"))
    assert len(every["primitives"]) == 8  # agent-chat's default: every primitive
    refusals = [
        (["--type", "status", "--json-body", '{"harness": "h", "status": "busy", "mood": "fine"}'],
         "EVENT_UNKNOWN_FIELD"),
        (["--type", "status", "--harness", "h", "--status", "asleep", "--json"], "EVENT_INVALID_STATUS"),
        (["--type", "capability", "--harness", "h", "--primitives", "telepathy"], "EVENT_UNKNOWN_PRIMITIVE"),
        (["--type", "mood", "--harness", "h"], "EVENT_INVALID_TYPE"),
        (["--type", "status", "--json-body", "{"], "EVENT_MALFORMED_BODY"),
        (["--type", "status", "--status", "busy"], "EVENT_REQUIRED_FIELD_MISSING"),
        (["--type", "status", "--harness", "h", "--json-body", "{}"], "CHAT_INVALID_ARGUMENT"),
    ]
    done = run_many(db, [("bob", ["chat", "event", "post", *args]) for args, _ in refusals])
    for p, (_, code) in zip(done, refusals):
        fails(p, code)
    run(db, "alice", "chat", "event", "post", "--type", "status", "--json-body", "-",
        stdin='{"harness": "claude-code", "status": "idle"}')

    page = js(run(db, "carol", "chat", "event", "read", "--json"))
    got = [(e["kind"], e["actor"]) for e in page["events"]]
    assert got == [("adapter.capability_declared", "alice"), ("adapter.status_reported", "bob"),
                   ("adapter.capability_declared", "carol"), ("adapter.status_reported", "alice")]
    statuses = js(run(db, "carol", "chat", "event", "read", "--type", "status", "--json"))["events"]
    first_status = statuses[0]["payload"]
    assert (first_status["agent"], first_status["status"], first_status["adapter_ts"]) == (
        "bob", "busy", "2026-11-30T15:00:00Z")
    assert js(run(db, "carol", "chat", "event", "read", "--since", str(page["next_cursor"]), "--json"))["events"] == []
    first = js(run(db, "carol", "chat", "event", "read", "-n", "1", "--json"))
    assert len(first["events"]) == 1 and first["next_cursor"] == first["events"][0]["position"]
    # poll_events as bob over messages: alice's note to carol never shows
    run(db, "alice", "chat", "post", "--to", "carol", "--title", "psst", "--body", "x")
    run(db, "alice", "chat", "post", "--title", "public", "--body", "x")
    for who, titles in (("bob", ["public"]), ("carol", ["psst", "public"])):
        polled = js(run(db, who, "chat", "event", "read", "--kind", "message.*", "--json"))
        assert [e["payload"]["title"] for e in polled["events"]] == titles
    human = run(db, "carol", "chat", "event", "read").stdout
    assert "adapter.status_reported" in human and human.rstrip().splitlines()[-1].startswith("next cursor: ")


def test_wait_times_out_with_exit_2(db: Path) -> None:
    t0 = time.monotonic()
    timed_out, as_json, unknown = run_many(db, [
        ("bob", ["chat", "wait", "--timeout", "0.3"]),
        ("bob", ["chat", "wait", "--timeout", "0", "--json"]),
        ("bob", ["chat", "wait", "-c", "nope", "--timeout", "0"]),
    ])
    assert time.monotonic() - t0 < 10
    fails(timed_out, "CHAT_WAIT_TIMEOUT")
    fails(as_json, "CHAT_WAIT_TIMEOUT")
    fails(unknown, "CHAT_CHANNEL_NOT_FOUND")


def test_cli_wait_is_woken_by_a_post_from_another_cli_process(db: Path) -> None:
    run(db, "alice", "chat", "post", "--title", "old", "--body", "x")
    run(db, "bob", "chat", "read")
    run(db, "carol", "chat", "read")  # carol has read: the bus knows her, so a message can be directed to her
    waiter = subprocess.Popen([LEAN_CTX, "chat", "wait", "--timeout", "20", "--json"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env_for(db, "bob"), cwd=db.parent)
    time.sleep(0.6)
    run(db, "alice", "chat", "post", "--to", "carol", "--title", "not for bob", "--body", "x")
    run(db, "bob", "chat", "post", "--title", "bob's own", "--body", "x")
    time.sleep(0.3)
    assert waiter.poll() is None  # neither woke it for good
    run(db, "alice", "chat", "post", "--to", "bob", "--title", "for bob", "--body", "x")
    out, err = waiter.communicate(timeout=20)
    assert waiter.returncode == 0, err
    res = json.loads(out)
    assert [m["title"] for m in res["messages"]] == ["for bob"] and res["cursor"] == 4


WAITER = textwrap.dedent("""
    import sys, time
    from leanctx.app import LeanCtx
    from leanctx.commands.chat_reads import wait
    from leanctx.errors import CommandError

    lc = LeanCtx(sys.argv[1])
    # warm-up: a delivery (carol has "warm up" waiting), so that one-time set-up (imports, catching the
    # projections up, the tokenizer that sizes answers) is neither the idle wait nor a wake measured
    wait(lc, "general", "carol", timeout=5)
    c0, t0 = time.process_time(), time.monotonic()
    try:
        wait(lc, "general", "bob", timeout=1.0)
        code = "woke"
    except CommandError as exc:
        code = exc.code
    print("idle", time.process_time() - c0, time.monotonic() - t0, code, flush=True)
    for i in range(int(sys.argv[2])):
        print("ready", i, flush=True)
        res = wait(lc, "general", "bob", timeout=10)
        print("woke", repr(time.time()), res.messages[0].seq, flush=True)
""")


def test_wait_wakes_within_100ms_of_a_post_by_another_process(db: Path) -> None:
    samples = 5
    with LeanCtx(db) as lc:
        for who in ("bob", "carol"):  # creates the log; registered, both can be addressed
            lc.bus.dispatch(RegisterAgent(agent_type="cli", agent_id=who, project_root=str(db.parent)), actor=who)
        lc.bus.dispatch(PostMessage(title="warm up", body="x", to="carol"), actor="alice")
        child = subprocess.Popen([sys.executable, "-c", WAITER, str(db), str(samples)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, cwd=REPO)
        try:
            assert child.stdout is not None
            idle = child.stdout.readline().split()
            assert idle[0] == "idle" and idle[3] == "CHAT_WAIT_TIMEOUT", idle
            cpu, wall = float(idle[1]), float(idle[2])
            assert 0.9 < wall < 3 and cpu < 0.3 * wall, f"an idle wait used {cpu:.3f}s of CPU in {wall:.3f}s"
            latencies = []
            for i in range(samples):
                assert child.stdout.readline().split() == ["ready", str(i)]
                time.sleep(0.15)  # the waiter is idle inside store.wait
                lc.bus.dispatch(PostMessage(title=f"ping {i}", body="x", to="bob"), actor="alice")
                posted = time.time()
                woke = child.stdout.readline().split()
                assert woke[0] == "woke" and int(woke[2]) == i + 2, woke
                latencies.append(float(woke[1]) - posted)
            child.wait(timeout=10)
            assert child.returncode == 0, child.stderr.read() if child.stderr else ""
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
    assert max(latencies) < 1.0, latencies
    assert statistics.median(latencies) < 0.1, latencies
