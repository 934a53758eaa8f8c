"""The message bus through the command bus: channels, delivery rules, cursors, replies, adapter
events, poll_events, wait (in process), export, replay. Cross-process tests are in test_chat_cli.py."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from leanctx.app import LeanCtx
from leanctx.chat_export import export_channel, file_name, render, slug, yaml_string
from leanctx.commands.agents import RegisterAgent
from leanctx.commands.chat import (
    InitChannel,
    PostAdapterEvent,
    PostMessage,
    ReadMessages,
    ReadResult,
)
from leanctx.commands.chat_reads import channels, peek, poll_events, wait
from leanctx.errors import CommandError, InvalidInput, LeanCtxError
from leanctx.events import NewEvent, TopicFilter
from leanctx.events.codec import payload_dict
from leanctx.events.kinds.chat import MessagePosted, parse_adapter_event
from leanctx.projections.channels import (
    MessageView,
    adapter_states,
    channel_info,
    get_cursor,
    last_messages,
)
from tools.replay import replay

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def lc(tmp_path: Path):  # type: ignore[no-untyped-def]
    app = LeanCtx(tmp_path / "e.db")
    for who in ("alice", "bob", "carol"):  # registered: a directed message goes to someone the bus knows
        app.bus.dispatch(RegisterAgent(agent_type="cli", agent_id=who, project_root=str(tmp_path)), actor=who)
    yield app
    app.close()


def post(lc: LeanCtx, actor: str | None, title: str = "t", body: str = "b", **kw: Any) -> MessageView:
    return lc.bus.dispatch(PostMessage(title=title, body=body, **kw), actor=actor).value


def read(lc: LeanCtx, actor: str, channel: str = "general", limit: int | None = None) -> ReadResult:
    return lc.bus.dispatch(ReadMessages(channel=channel, limit=limit), actor=actor).value


def code_of(fn: Any) -> str:
    with pytest.raises(LeanCtxError) as ei:
        fn()
    return ei.value.code


def kinds_count(lc: LeanCtx, kind: str) -> int:
    return len(lc.store.read_all(0, TopicFilter(kinds=(kind,))))


def conn(lc: LeanCtx) -> Any:
    lc.projections.ensure_current()
    return lc.store.read_connection()


# --- channels ------------------------------------------------------------------------------

def test_init_list_and_the_implicit_general_channel(lc: LeanCtx) -> None:
    listed = channels(lc, "alice")
    assert [c.name for c in listed] == ["general"] and listed[0].implicit and listed[0].messages == 0
    info = lc.bus.dispatch(InitChannel(channel="#backend", members=["bob", "carol", "bob"], topic=" API work "),
                           actor="alice").value
    assert (info.name, info.members, info.topic, info.created_by) == ("backend", ["bob", "carol"], "API work", "alice")
    assert code_of(lambda: lc.bus.dispatch(InitChannel(channel="backend"), actor="bob")) == "CHAT_CHANNEL_EXISTS"
    for bad in ("Bad", "a b", "../x", "", "x" * 65, "-lead", "a/b"):
        assert code_of(lambda: lc.bus.dispatch(InitChannel(channel=bad), actor="alice")) == "CHAT_INVALID_CHANNEL"
    assert code_of(lambda: post(lc, "alice", channel="nowhere")) == "CHAT_CHANNEL_NOT_FOUND"
    assert code_of(lambda: read(lc, "alice", channel="nowhere")) == "CHAT_CHANNEL_NOT_FOUND"
    assert code_of(lambda: peek(lc, "nowhere", "alice")) == "CHAT_CHANNEL_NOT_FOUND"
    assert code_of(lambda: lc.bus.dispatch(InitChannel(channel="ops", topic="a\nb"), actor="a")) == "CHAT_INVALID_TOPIC"

    post(lc, "alice", "one", to="all")
    post(lc, "alice", "two", to="bob")
    post(lc, "carol", "three", channel="backend")
    # general is posted to without init, and may be given a topic later — once
    lc.bus.dispatch(InitChannel(channel="general", topic="everything"), actor="alice")
    assert code_of(lambda: lc.bus.dispatch(InitChannel(channel="general"), actor="alice")) == "CHAT_CHANNEL_EXISTS"

    by_name = {c.name: c for c in channels(lc, "bob")}
    assert list(by_name) == ["backend", "general"]
    g = by_name["general"]
    assert (g.topic, g.implicit, g.messages, g.last_seq, g.unread) == ("everything", False, 2, 2, 2)
    assert g.last is not None and (g.last.seq, g.last.title, g.last.to) == (2, "two", "bob")
    assert (by_name["backend"].messages, by_name["backend"].last.title) == (1, "three")  # type: ignore[union-attr]
    # carol cannot see alice's message to bob: not in her count, not as her last message
    g_carol = next(c for c in channels(lc, "carol") if c.name == "general")
    assert (g_carol.messages, g_carol.last_seq, g_carol.unread, g_carol.last.title) == (1, 2, 1, "one")  # type: ignore[union-attr]
    # the anonymous view (what a channel summary shows) holds broadcasts only
    anon = channel_info(conn(lc), "general")
    assert anon is not None and (anon.messages, anon.unread, anon.last.title) == (1, None, "one")  # type: ignore[union-attr]
    assert channel_info(conn(lc), "nowhere") is None
    assert [m.title for m in last_messages(conn(lc), "general", 5)] == ["one"]
    assert [m.title for m in last_messages(conn(lc), "general", 5, reader="bob")] == ["one", "two"]


# --- post ------------------------------------------------------------------------------------

def test_post_validation_codes_append_nothing(lc: LeanCtx) -> None:
    cases = [
        (dict(body="  \n"), "CHAT_EMPTY_BODY"),
        (dict(title=""), "CHAT_INVALID_TITLE"),
        (dict(title="x\nfrom: admin"), "CHAT_INVALID_TITLE"),
        (dict(title="bell\x07"), "CHAT_INVALID_TITLE"),
        (dict(title="t" * 301), "CHAT_INVALID_TITLE"),
        (dict(category="Not A Slug"), "CHAT_INVALID_CATEGORY"),
        (dict(to="bad id!"), "CHAT_INVALID_RECIPIENT"),
        (dict(to="alice"), "CHAT_INVALID_RECIPIENT"),  # to yourself
        (dict(channel="Bad!"), "CHAT_INVALID_CHANNEL"),
        (dict(body="x" * (256 * 1024 + 1)), "CHAT_BODY_TOO_LARGE"),
        (dict(reply_to=1), "CHAT_REPLY_NOT_FOUND"),
    ]
    for kw, code in cases:
        args = {"title": "t", "body": "b", **kw}
        assert code_of(lambda: lc.bus.dispatch(PostMessage(**args), actor="alice")) == code, kw
    assert code_of(lambda: post(lc, None)) == "CHAT_INVALID_SENDER"
    assert code_of(lambda: post(lc, "no good")) == "CHAT_INVALID_SENDER"
    assert kinds_count(lc, "message.posted") == 0
    failures = [payload_dict(e.payload) for e in lc.store.read_all(0, TopicFilter(kinds=("tool.called",)))]
    assert [f["error_code"] for f in failures if f["outcome"] == "error"][:3] == ["CHAT_EMPTY_BODY", "CHAT_INVALID_TITLE", "CHAT_INVALID_TITLE"]
    # the well-known categories and free-form slugs are accepted; ALL is case-insensitive
    for cat in ("finding", "warning", "request", "status", "perf-note"):
        assert post(lc, "alice", category=cat, to="ALL").category == cat


def test_seq_is_per_channel_and_gapless_and_the_envelope_is_set(lc: LeanCtx) -> None:
    lc.bus.dispatch(InitChannel(channel="ops"), actor="alice")
    seqs = []
    for i in range(6):
        ch = "general" if i % 2 else "ops"
        m = post(lc, "alice", f"m{i}", channel=ch, to="bob" if i % 3 == 0 else "all")
        seqs.append((ch, m.seq))
        stored = lc.store.get(m.position)
        assert stored is not None and stored.kind == "message.posted"
        assert (stored.stream, stored.channel, stored.actor) == (f"channel:{ch}", ch, "alice")
        assert stored.to_agent == ("bob" if i % 3 == 0 else None)
        data = payload_dict(stored.payload)
        assert (data["seq"], data["from"], data["to"]) == (m.seq, "alice", "bob" if i % 3 == 0 else "all")
    assert [s for c, s in seqs if c == "ops"] == [1, 2, 3]
    assert [s for c, s in seqs if c == "general"] == [1, 2, 3]


def test_reply_to_must_exist_in_the_channel_and_be_visible(lc: LeanCtx) -> None:
    lc.bus.dispatch(InitChannel(channel="ops"), actor="alice")
    first = post(lc, "alice", "question")
    secret = post(lc, "alice", "for carol", to="carol")
    assert post(lc, "bob", "answer", reply_to=first.seq).reply_to == 1
    assert code_of(lambda: post(lc, "bob", "x", reply_to=99)) == "CHAT_REPLY_NOT_FOUND"
    assert code_of(lambda: post(lc, "bob", "x", reply_to=0)) == "CHAT_REPLY_NOT_FOUND"
    assert code_of(lambda: post(lc, "bob", "x", channel="ops", reply_to=first.seq)) == "CHAT_REPLY_NOT_FOUND"
    # bob cannot reply to (or learn of) alice's message to carol; carol and alice can
    assert code_of(lambda: post(lc, "bob", "x", reply_to=secret.seq)) == "CHAT_REPLY_NOT_FOUND"
    assert post(lc, "carol", "re", to="alice", reply_to=secret.seq).reply_to == secret.seq
    assert post(lc, "alice", "re re", reply_to=secret.seq).reply_to == secret.seq


# --- delivery ------------------------------------------------------------------------------

def test_directed_messages_never_reach_other_agents(lc: LeanCtx) -> None:
    post(lc, "alice", "hello all")
    post(lc, "alice", "for carol only", to="carol")
    post(lc, "alice", "for bob", to="bob")
    post(lc, "carol", "carol to all")
    secret = "for carol only"

    b = read(lc, "bob")
    assert [m.title for m in b.messages] == ["hello all", "for bob", "carol to all"]
    c = read(lc, "carol")
    assert [m.title for m in c.messages] == ["hello all", "for carol only"]  # not its own post
    assert secret not in [m.title for m in peek(lc, "general", "bob", 50)]
    assert secret in [m.title for m in peek(lc, "general", "alice", 50)]  # the sender sees what it sent
    # wait (no advance): bob has nothing new; after another post he gets it, never the secret
    post(lc, "alice", "another secret", to="carol")
    post(lc, "alice", "later")
    w = wait(lc, "general", "bob", timeout=1.0)
    assert [m.title for m in w.messages] == ["later"]
    # poll_events with bob's identity never returns the events directed to carol
    polled = poll_events(lc.store, 0, TopicFilter(kinds=("message.posted",), to_agent="bob"))
    titles = [payload_dict(e.payload)["title"] for e in polled.events]
    assert secret not in titles and "another secret" not in titles and "for bob" in titles
    everything = poll_events(lc.store, 0, TopicFilter(kinds=("message.posted",)))  # no identity: the operator
    assert secret in [payload_dict(e.payload)["title"] for e in everything.events]
    # and carol's cursor moves are hers only
    cursors = poll_events(lc.store, 0, TopicFilter(kinds=("cursor.advanced",), to_agent="bob")).events
    assert {payload_dict(e.payload)["agent"] for e in cursors} == {"bob"}


def test_read_is_exactly_once_in_order_and_the_cursor_move_is_an_event(lc: LeanCtx) -> None:
    for i in range(5):
        post(lc, "alice", f"m{i}")
    r1 = read(lc, "bob", limit=2)
    assert ([m.seq for m in r1.messages], r1.previous_cursor, r1.cursor, r1.unread) == ([1, 2], 0, 2, 3)
    r2 = read(lc, "bob")
    assert ([m.seq for m in r2.messages], r2.previous_cursor, r2.cursor, r2.unread) == ([3, 4, 5], 2, 5, 0)
    before = lc.store.head().position
    r3 = read(lc, "bob")
    assert (r3.messages, r3.cursor) == ([], 5)
    appended = lc.store.read_all(before)
    assert [e.kind for e in appended] == ["tool.called"]  # a read with nothing new moves nothing
    moves = lc.store.read_all(0, TopicFilter(kinds=("cursor.advanced",)))
    assert [(e.stream, e.to_agent, e.channel) for e in moves] == [("cursor:bob/general", "bob", "general")] * 2
    steps = [payload_dict(e.payload) for e in moves]
    assert [(p["previous_seq"], p["seq"]) for p in steps] == [(0, 2), (2, 5)]
    assert [e.version for e in moves] == [1, 2]
    post(lc, "alice", "m5")
    assert [m.title for m in read(lc, "bob").messages] == ["m5"]
    assert code_of(lambda: read(lc, "bob", limit=0)) == "CHAT_INVALID_LIMIT"


def test_the_cursor_moves_past_own_and_others_directed_messages(lc: LeanCtx) -> None:
    post(lc, "bob", "mine")
    post(lc, "alice", "to carol", to="carol")
    r = read(lc, "bob")
    assert (r.messages, r.cursor) == ([], 2)
    assert get_cursor(conn(lc), "bob", "general")[0] == 2


def test_peek_does_not_move_the_cursor(lc: LeanCtx) -> None:
    for i in range(4):
        post(lc, "alice", f"m{i}")
    moves = kinds_count(lc, "cursor.advanced")
    assert [m.seq for m in peek(lc, "general", "bob", 2)] == [3, 4]
    assert peek(lc, "general", "bob", 0) == []
    assert code_of(lambda: peek(lc, "general", "bob", -1)) == "CHAT_INVALID_LIMIT"
    assert kinds_count(lc, "cursor.advanced") == moves and get_cursor(conn(lc), "bob", "general") == (0, 0)
    assert [m.seq for m in read(lc, "bob").messages] == [1, 2, 3, 4]


def test_agent_names_resolve_to_ids(lc: LeanCtx) -> None:
    reg = lc.bus.dispatch(RegisterAgent(agent_type="cursor", role="dev", project_root="/p", agent_id="ab12cd34"),
                          actor="ab12cd34").value
    assert reg.name == "cursor-dev-1"
    m = post(lc, "alice", "hi", to="cursor-dev-1")
    assert m.to == "ab12cd34"
    assert [x.title for x in read(lc, "cursor-dev-1").messages] == ["hi"]  # read as its name: same agent
    post(lc, "cursor-dev-1", "from the name")
    assert [x.sender for x in read(lc, "alice").messages] == ["ab12cd34"]
    assert code_of(lambda: post(lc, "ab12cd34", "x", to="cursor-dev-1")) == "CHAT_INVALID_RECIPIENT"


# --- adapter events ----------------------------------------------------------------------------

def adapter(lc: LeanCtx, actor: str, body: Any, type_: str | None = None, **kw: Any) -> Any:
    return lc.bus.dispatch(PostAdapterEvent(type=type_, body=body, **kw), actor=actor).value


def test_capability_and_status_events_are_validated_strictly(lc: LeanCtx) -> None:
    cap = adapter(lc, "alice", '{"schema_version": 1, "event": "capability", "agent": "alice", "harness": '
                  '"claude-code", "ts": "2026-11-30T15:00:00+01:00", "primitives": ["messages", "wait"]}')
    assert (cap.kind, cap.primitives, cap.harness, cap.ts) == (
        "adapter.capability_declared", ["messages", "wait"], "claude-code", "2026-11-30T15:00:00+01:00")
    st = adapter(lc, "alice", {"harness": "claude-code", "status": "busy", "detail": "tests"}, "status")
    assert (st.kind, st.status, st.detail, st.agent) == ("adapter.status_reported", "busy", "tests", "alice")
    assert st.ts.endswith("Z")  # filled from the command's clock
    every = ["messages", "cursors", "wait", "tasks", "dependencies", "leases", "path_locks", "state_summary"]
    parse_adapter_event({"harness": "h", "primitives": every}, type_="capability", agent="a", ts="2026-01-01T00:00:00Z")
    for s in ("ready", "busy", "idle", "blocked", "stopped"):
        parse_adapter_event({"harness": "h", "status": s}, type_="status", agent="a", ts="2026-01-01T00:00:00Z")

    cap_ok = '"harness": "h", "primitives": ["messages"]'
    st_ok = '"harness": "h", "status": "busy"'
    bad = [
        ('{%s, "extra": 1}' % cap_ok, "capability", "EVENT_UNKNOWN_FIELD"),
        ('{%s, "color": "red"}' % st_ok, "status", "EVENT_UNKNOWN_FIELD"),
        ('{%s, "primitives": ["messages"]}' % st_ok, "status", "EVENT_UNKNOWN_FIELD"),
        ('{"harness": "h", "primitives": ["teleport"]}', "capability", "EVENT_UNKNOWN_PRIMITIVE"),
        ('{"harness": "h", "primitives": ["wait", "wait"]}', "capability", "EVENT_DUPLICATE_PRIMITIVE"),
        ('{"harness": "h", "primitives": "messages"}', "capability", "EVENT_INVALID_PRIMITIVES"),
        ('{"harness": "h", "primitives": []}', "capability", "EVENT_INVALID_PRIMITIVES"),
        ('{"harness": "h", "status": "sleepy"}', "status", "EVENT_INVALID_STATUS"),
        ('{"harness": "h", "status": 3}', "status", "EVENT_INVALID_STATUS"),
        ('{%s, "detail": "a\\nb"}' % st_ok, "status", "EVENT_INVALID_TEXT"),
        ('{%s, "detail": 5}' % st_ok, "status", "EVENT_INVALID_TEXT"),
        ('{"harness": "bad name", "status": "busy"}', "status", "EVENT_INVALID_TEXT"),
        ('{%s, "ts": "yesterday"}' % st_ok, "status", "EVENT_INVALID_TIMESTAMP"),
        ('{%s, "ts": "2026-01-01T00:00:00"}' % st_ok, "status", "EVENT_INVALID_TIMESTAMP"),  # no offset
        ('{"status": "busy"}', "status", "EVENT_REQUIRED_FIELD_MISSING"),  # harness
        ('{"harness": "h"}', "status", "EVENT_REQUIRED_FIELD_MISSING"),
        ("{%s}" % st_ok, None, "EVENT_INVALID_TYPE"),
        ('{"event": "mood", "harness": "h"}', None, "EVENT_INVALID_TYPE"),
        ('{"event": "capability", %s}' % st_ok, "status", "EVENT_INVALID_TYPE"),
        ('{%s, "schema_version": 2}' % st_ok, "status", "EVENT_UNSUPPORTED_VERSION"),
        ('{%s, "schema_version": true}' % st_ok, "status", "EVENT_UNSUPPORTED_VERSION"),
        ('{%s, "agent": "carol"}' % st_ok, "status", "EVENT_AGENT_MISMATCH"),
        ("{not json", "status", "EVENT_MALFORMED_BODY"),
        ("[1]", "status", "EVENT_INVALID_RECORD"),
    ]
    before = lc.store.head().position
    for body, type_, code in bad:
        with pytest.raises(InvalidInput) as ei:
            adapter(lc, "bob", body, type_)
        assert ei.value.code == code, (body, ei.value.code, ei.value.message)
    assert not lc.store.read_all(before, TopicFilter(kinds=("adapter.*",)))

    adapter(lc, "alice", {"harness": "claude-code", "status": "idle"}, "status")
    lc.bus.dispatch(InitChannel(channel="ops"), actor="bob")
    adapter(lc, "bob", {"harness": "cursor", "status": "ready", "agent": "bob"}, "status", channel="ops")
    states = adapter_states(conn(lc))
    assert [(s.agent, s.harness, s.status, s.primitives, s.status_channel) for s in states] == [
        ("alice", "claude-code", "idle", ["messages", "wait"], None), ("bob", "cursor", "ready", None, "ops")]
    assert [s.agent for s in adapter_states(conn(lc), ["bob", "nobody"])] == ["bob"]
    assert code_of(lambda: adapter(lc, "bob", {"harness": "h", "status": "idle"}, "status",
                                   channel="nowhere")) == "CHAT_CHANNEL_NOT_FOUND"


# --- poll_events ------------------------------------------------------------------------------

def test_poll_events_pages_with_a_next_cursor(lc: LeanCtx) -> None:
    for i in range(5):
        post(lc, "alice", f"m{i}", to="carol" if i == 2 else "all")
    flt = TopicFilter(kinds=("message.*",), to_agent="bob", channel="general")
    seen, since = [], 0
    while True:
        page = poll_events(lc.store, since, flt, limit=2)
        seen += [payload_dict(e.payload)["title"] for e in page.events]
        if not page.events:
            break
        assert page.next_cursor >= since
        since = page.next_cursor
    assert seen == ["m0", "m1", "m3", "m4"]
    head = lc.store.head().position
    assert since == head and poll_events(lc.store, since, flt).next_cursor == head
    assert poll_events(lc.store, 0, TopicFilter(actor="nobody")).next_cursor == head  # nothing matched: skip ahead
    assert poll_events(lc.store, 0, TopicFilter(kinds=("message.posted",), consistency="eventual")).events == []
    assert code_of(lambda: poll_events(lc.store, -1)) == "EVENT_INVALID_CURSOR"


# --- wait (in process; across processes in test_chat_cli.py) ---------------------------------

def test_wait_returns_at_once_when_unread_times_out_and_ignores_own_posts(lc: LeanCtx) -> None:
    post(lc, "alice", "already there")
    got = wait(lc, "general", "bob", timeout=5)
    assert [m.title for m in got.messages] == ["already there"] and got.cursor == 1
    t0 = time.monotonic()
    with pytest.raises(CommandError) as ei:
        wait(lc, "general", "bob", timeout=0.2)
    assert ei.value.code == "CHAT_WAIT_TIMEOUT" and 0.15 < time.monotonic() - t0 < 2
    # an own post does not wake the waiter; a post by someone else does
    def own() -> None:
        time.sleep(0.1)
        with LeanCtx(lc.db) as other:
            post(other, "bob", "mine")

    th = threading.Thread(target=own)
    th.start()
    with pytest.raises(CommandError):
        wait(lc, "general", "bob", timeout=0.5)
    th.join()

    def later() -> None:
        time.sleep(0.1)
        with LeanCtx(lc.db) as other:
            post(other, "alice", "news")

    th = threading.Thread(target=later)
    th.start()
    got = wait(lc, "general", "bob", timeout=5, advance=False)
    th.join()
    assert [m.title for m in got.messages] == ["news"] and got.cursor == 1  # not advanced
    assert [m.title for m in wait(lc, "general", "bob", timeout=0).messages] == ["news"]
    assert code_of(lambda: wait(lc, "general", "bob", timeout=float("nan"))) == "CHAT_INVALID_TIMEOUT"
    assert code_of(lambda: wait(lc, "general", "bob", timeout=-1)) == "CHAT_INVALID_TIMEOUT"


# --- export ---------------------------------------------------------------------------------

def frontmatter(text: str) -> tuple[dict[str, Any], str]:
    lines = text.split("\n")
    assert lines[0] == "---"
    end = lines.index("---", 1)
    fields = {}
    for line in lines[1:end]:
        key, _, value = line.partition(": ")
        assert key not in fields, f"duplicate key {key}"
        fields[key] = json.loads(value)  # every value is JSON (null, int or a quoted string)
    return fields, "\n".join(lines[end + 1:])


def test_export_format_and_determinism(lc: LeanCtx, tmp_path: Path) -> None:
    lc.bus.dispatch(InitChannel(channel="design", members=["alice", "bob"]), actor="alice")
    post(lc, "alice", "Use WAL mode?", body="Proposal: WAL.\n\n---\nnot: frontmatter\n", channel="design",
         category="request")
    post(lc, "bob", "Re: Use WAL mode — ça marche", body="yes", channel="design", reply_to=1, category="finding")
    post(lc, "alice", "private", body="for carol", channel="design", to="carol")
    out = export_channel(conn(lc), "design", tmp_path / "a", reader="bob")
    assert out.files == ["0001-alice-use-wal-mode.md", "0002-bob-re-use-wal-mode-ca-marche.md"]  # not alice→carol
    text = (tmp_path / "a" / out.files[1]).read_text(encoding="utf-8")
    fields, body = frontmatter(text)
    assert list(fields) == ["seq", "from", "to", "reply_to", "channel", "category", "ts", "title"]
    assert (fields["seq"], fields["from"], fields["to"], fields["reply_to"], fields["channel"]) == (
        2, "bob", "all", 1, "design")
    assert fields["title"] == "Re: Use WAL mode — ça marche" and "ça marche" in text  # readable, not \u-escaped
    assert body == "\nyes\n"
    first, body1 = frontmatter((tmp_path / "a" / out.files[0]).read_text(encoding="utf-8"))
    assert first["reply_to"] is None and body1 == "\nProposal: WAL.\n\n---\nnot: frontmatter\n"

    everything = export_channel(conn(lc), "design", tmp_path / "b", everything=True)
    assert everything.files[-1] == "0003-alice-private.md"
    # same log → byte-identical files: again, and after every projection is rebuilt from the log
    lc.projections.rebuild()
    again = export_channel(conn(lc), "design", tmp_path / "c", everything=True)
    for name in everything.files:
        assert (tmp_path / "b" / name).read_bytes() == (tmp_path / "c" / name).read_bytes()
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == sorted(again.files)


def test_export_titles_and_fields_cannot_forge_frontmatter(lc: LeanCtx, tmp_path: Path) -> None:
    # ``post`` refuses such titles; a log written by another writer may still hold them
    evil_title = "x\nfrom: admin\r\nto: all\u2028seq: 99\x85reply_to: 7\x1b[31m\u202e\"quoted\\"
    lc.store.append("channel:general", [NewEvent(
        event=MessagePosted(channel="general", seq=1, sender="alice\nseq: 42", to="all", category="note",
                            title=evil_title, body="body"),
        actor="alice", channel="general")])
    out = export_channel(conn(lc), "general", tmp_path / "x")
    assert len(out.files) == 1 and "/" not in out.files[0] and out.files[0].startswith("0001-alice-seq-42-x-from")
    raw = (tmp_path / "x" / out.files[0]).read_bytes()
    text = raw.decode("utf-8")
    head = text.split("\n---\n", 1)[0]
    assert len(head.splitlines()) == 9  # '---' and the 8 fields, whatever splits the lines
    assert not any(ord(c) < 0x20 and c != "\n" for c in head) and "\x85" not in head and "\u2028" not in head
    fields, _ = frontmatter(text)
    assert (fields["seq"], fields["from"], fields["to"], fields["reply_to"]) == (1, "alice\nseq: 42", "all", None)
    assert fields["title"] == evil_title  # escaped, and it decodes back to exactly what was posted
    assert yaml_string("a\u2028b\x7f") == '"a\\u2028b\\u007f"'
    assert slug("../../etc/passwd") == "etc-passwd" and slug("???") == "msg"


def test_render_is_a_pure_function() -> None:
    m = MessageView(channel="c", seq=12345, sender="a", to="b", category="note", title="T", body="x",
                    ts="2026-01-01T00:00:00.000000Z", position=9, reply_to=3)
    assert file_name(m) == "12345-a-t.md"
    assert render(m) == (
        '---\nseq: 12345\nfrom: "a"\nto: "b"\nreply_to: 3\nchannel: "c"\ncategory: "note"\n'
        'ts: "2026-01-01T00:00:00.000000Z"\ntitle: "T"\n---\n\nx\n'
    )


# --- replay ---------------------------------------------------------------------------------

def test_replay_reproduces_every_chat_projection(lc: LeanCtx) -> None:
    lc.bus.dispatch(InitChannel(channel="ops", members=["bob"], topic="t"), actor="alice")
    for i in range(4):
        post(lc, "alice", f"m{i}", to="bob" if i == 1 else "all", channel="ops" if i % 2 else "general")
    post(lc, "bob", "re", reply_to=1)
    read(lc, "bob")
    read(lc, "bob", channel="ops", limit=1)
    adapter(lc, "bob", {"harness": "codex", "primitives": ["messages"]}, "capability")
    adapter(lc, "bob", {"harness": "codex", "status": "blocked"}, "status", channel="ops")
    live = {n: lc.projections.digest(n) for n in ("channels", "adapter_states")}
    report = replay(lc, verify=True)
    assert report.ok and report.chain_ok
    assert all(p.match for p in report.projections), [p.name for p in report.projections if not p.match]
    assert {p.name for p in report.projections} >= {"channels", "adapter_states"}
    replay(lc)  # in place
    assert {n: lc.projections.digest(n) for n in live} == live


# --- exactly-once across processes ------------------------------------------------------------

def test_concurrent_readers_as_one_agent_get_each_message_once(lc: LeanCtx, tmp_path: Path) -> None:
    for i in range(24):
        post(lc, "alice", f"m{i}")
    script = textwrap.dedent(f"""
        import sys
        from leanctx.app import LeanCtx
        from leanctx.commands.chat import ReadMessages
        lc = LeanCtx({str(lc.db)!r})
        got = []
        for _ in range(12):
            got += [m.seq for m in lc.bus.dispatch(ReadMessages(limit=1), actor="bob").value.messages]
        print(" ".join(map(str, got)))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=REPO)
             for _ in range(3)]
    outs = [p.communicate(timeout=60)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    per = [[int(x) for x in o.split()] for o in outs]
    assert all(s == sorted(s) for s in per)  # each process sees them in order
    assert sorted(x for s in per for x in s) == list(range(1, 25))  # every message exactly once
