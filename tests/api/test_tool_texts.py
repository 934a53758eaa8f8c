"""What the model reads is the text: every value it needs to act next is in it.

MCP results are text only by default (``leanctx.api.mcp_server``: Claude Code, Codex and VS Code
show the model ``structuredContent`` *instead of* the text whenever it is present, so it is not
sent). Anything only in the rest of a tool's mapping is invisible to the model. For every tool
and action, called in-process as a caller (``registry.call``, real log, real files), these
tests take the values from the mapping that an agent needs next (ids, cursors, archive ids,
versions, counts that change a decision, what was cut, who holds what) and assert they appear in
the mapping's ``text``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from leanctx import clock
from leanctx.api import registry
from leanctx.api.registry import Caller

from .test_registry import _Set, lc  # noqa: F401  (lc: the registry tests' fixture, one log per test)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    (p / "pkg").mkdir(parents=True)
    (p / "pkg" / "mod.py").write_text("def f():\n    return 1\n\n\ndef g(x):\n    return x * 2\n")
    (p / "big.txt").write_text("".join(f"line {i} of a long file\n" for i in range(3000)))
    return p


@pytest.fixture
def a(lc: Any, project: Path) -> Caller:
    me = Caller("alice", "s1", str(project))
    registry.call(lc, me, "ctx_agent", {"action": "register", "role": "dev"})
    return me


@pytest.fixture
def b(lc: Any, project: Path) -> Caller:
    me = Caller("bob", "s2", str(project))
    registry.call(lc, me, "ctx_agent", {"action": "register", "role": "review"})
    return me


def call(lc: Any, who: Caller, tool: str, /, **args: Any) -> dict[str, Any]:
    out = registry.call(lc, who, tool, args)
    assert isinstance(out.get("text"), str) and out["text"], f"{tool} {args}: no text"
    return out


def has(out: dict[str, Any], *values: Any) -> None:
    """Each value (an id, a count, ...) appears in the text as written."""
    missing = [v for v in values if str(v) not in out["text"]]
    assert not missing, f"not in the text: {missing}\n--- text:\n{out['text']}"


# --- core ------------------------------------------------------------------------------------


def test_read_names_the_ref_what_was_cut_and_where_the_rest_is(lc: Any, a: Caller) -> None:
    r = call(lc, a, "ctx_read", paths=["big.txt", "missing.py"], mode="full", max_tokens=300)
    big, missing = r["files"]
    assert big["capped"] and big["archive_id"]
    has(r, f"{big['ref']}=big.txt", "capped", big["archive_id"], missing["error"]["code"])
    again = call(lc, a, "ctx_read", paths=["pkg/mod.py"])
    again = call(lc, a, "ctx_read", paths=["pkg/mod.py"])
    assert again["files"][0]["stub"]
    has(again, again["files"][0]["ref"], "unchanged", "fresh=true")


def test_shell_says_the_exit_code_a_timeout_and_the_archive_of_what_it_left_out(lc: Any, a: Caller) -> None:
    failed = call(lc, a, "ctx_shell", command="echo boom; exit 3")
    has(failed, "[exit 3]")
    slow = call(lc, a, "ctx_shell", command="echo start; sleep 5", timeout=0.5)
    assert slow["timed_out"]
    has(slow, f"[exit {slow['exit_code']}]", "timed out")
    folded = call(lc, a, "ctx_shell", command="seq 1 3000")
    assert folded["omitted_lines"] and folded["archive_id"]
    has(folded, f"{folded['omitted_lines'] - 0} lines omitted", folded["archive_id"])
    capped = call(lc, a, "ctx_shell", command="seq 1 3000; exit 5", raw=True, max_tokens=200)
    assert capped["capped"]
    has(capped, capped["capped_archive_id"], f"{capped['omitted_lines']:,} lines", "[exit 5]")


def test_search_says_how_many_it_shows_of_how_many_and_where_the_rest_is(lc: Any, a: Caller,
                                                                           project: Path) -> None:
    for i in range(30):
        (project / "pkg" / f"m{i}.py").write_text(f"VALUE_{i} = {i}\n")
    r = call(lc, a, "ctx_search", query="VALUE", method="regex", limit=3)
    assert r["total"] > r["shown"] == 3 and r["archive_id"]
    has(r, f"{r['shown']} of {r['total']}", r["archive_id"], *(f"{h['path']}:{h['line']}:" for h in r["hits"]))


def test_tree_counts_what_it_lists_and_what_it_left_out(lc: Any, a: Caller, project: Path) -> None:
    for i in range(12):
        (project / "pkg" / f"m{i}.py").write_text("x = 1\n")
    r = call(lc, a, "ctx_tree", path="pkg", max_entries=5)
    has(r, f"{r['files']} files", "8 more")


def test_edit_says_how_many_replacements_where_and_the_new_version(lc: Any, a: Caller) -> None:
    call(lc, a, "ctx_read", paths=["pkg/mod.py"], mode="full")
    r = call(lc, a, "ctx_edit", path="pkg/mod.py", old="return", new="yield", replace_all=True)
    has(r, f"{r['replacements']} replacements", f"line {r['first_line']}", r["after_hash"][:12])


def test_expand_names_the_next_lines_when_it_is_capped(lc: Any, a: Caller, project: Path) -> None:
    (project / "u.sh").write_text('for i in $(seq 1 400); do echo "unique $i $((i * 7919 % 1000003))"; done\n')
    sh = call(lc, a, "ctx_shell", command="bash u.sh", raw=True, max_tokens=200)
    e = call(lc, a, "ctx_expand", archive_id=sh["archive_id"], max_tokens=200)
    assert e["capped"] and e["truncated_lines"]
    has(e, f"{e['truncated_lines']} more", f"expand {sh['archive_id']} --lines")
    g = call(lc, a, "ctx_expand", archive_id=sh["archive_id"], grep="zzz-none")
    has(g, sh["archive_id"], "matches")


def test_call_is_the_called_tool_and_load_tools_says_what_changed(lc: Any, a: Caller) -> None:
    inner = call(lc, a, "ctx_call", name="ctx_tree", args={"path": "pkg"})
    assert inner["text"] == call(lc, a, "ctx_tree", path="pkg")["text"]
    ts: Any = _Set()
    r = call(lc, Caller("alice", "s1", a.project, toolset=ts), "ctx_load_tools", action="load",
             categories=["memory"])
    has(r, "loaded: memory", *r["categories"][4]["tools"])


# --- session ---------------------------------------------------------------------------------


def test_agent_register_list_post_read(lc: Any, a: Caller, b: Caller) -> None:
    reg = call(lc, a, "ctx_agent", action="register", role="dev")
    has(reg, reg["agent"]["agent_id"], reg["agent"]["name"])
    listed = call(lc, a, "ctx_agent", action="list")
    has(listed, *(x["agent_id"] for x in listed["agents"]))
    p1 = call(lc, a, "ctx_agent", action="post", title="hi", body="first", to="bob")
    p2 = call(lc, a, "ctx_agent", action="post", title="all", body="second")
    has(p1, f"#{p1['message']['seq']}", "bob", "general")
    got = call(lc, b, "ctx_agent", action="read", limit=1)
    has(got, f"#{p1['message']['seq']}", f"{got['unread']} more unread")
    has(call(lc, b, "ctx_agent", action="read"), f"#{p2['message']['seq']}")


def test_agent_claim_says_how_long_it_holds(lc: Any, a: Caller) -> None:
    c = call(lc, a, "ctx_agent", action="claim", target="pkg/mod.py")
    assert c["mark"]["active_for_seconds"] == 600
    has(c, "pkg/mod.py", "10m")
    again = call(lc, a, "ctx_agent", action="claim", target="pkg/mod.py")
    has(again, "refreshed", "10m")
    has(call(lc, a, "ctx_agent", action="release", target="pkg/mod.py"), "released pkg/mod.py")


def test_agent_diary_sync_budget_heartbeat(lc: Any, a: Caller) -> None:
    d = call(lc, a, "ctx_agent", action="diary", category="decision", text="use sqlite")
    has(d, f"#{d['entry']['seq']}")
    has(call(lc, a, "ctx_agent", action="recall_diary"), f"#{d['entry']['seq']}", "use sqlite")
    call(lc, a, "ctx_agent", action="claim", target="x.py")
    has(call(lc, a, "ctx_agent", action="sync"), "x.py CLAIMED (active)")
    bud = call(lc, a, "ctx_agent", action="budget")
    has(bud, f"{bud['budget']['used']} tokens used")
    has(call(lc, a, "ctx_agent", action="heartbeat"), "next heartbeat")


def test_poll_events_gives_positions_the_cursor_and_marks_a_cut_line(lc: Any, a: Caller, b: Caller) -> None:
    call(lc, a, "ctx_agent", action="post", title="long", body="word " * 80, to="bob")
    r = call(lc, b, "ctx_agent", action="poll_events", since=0, kinds=["message.posted"])
    has(r, *(e["position"] for e in r["events"]), f"since={r['next_cursor']}")
    line = next(ln for ln in r["text"].splitlines() if "message.posted" in ln)
    assert line.endswith("…"), line  # cut: the model knows there is more (ctx_agent read)


def test_task_texts_name_the_id_status_owner_and_lease(lc: Any, a: Caller, b: Caller) -> None:
    t1 = call(lc, a, "ctx_task", action="create", title="parse", files=["pkg/mod.py"], acceptance="tests pass")
    has(t1, t1["task"]["task_id"], "[open]")
    t2 = call(lc, a, "ctx_task", action="create", title="lex", depends_on=[t1["task"]["task_id"]], to="bob")
    has(t2, t2["task"]["task_id"], "to bob", f"waiting on {t1['task']['task_id']}")
    has(call(lc, a, "ctx_task", action="list"), t1["task"]["task_id"], t2["task"]["task_id"])
    c = call(lc, a, "ctx_task", action="claim", task_id="t1", lease_seconds=60)
    has(c, "[in_progress]", "owner alice", "lease 60s left")
    has(call(lc, a, "ctx_task", action="update", task_id="t1", title="parse"), "unchanged")
    has(call(lc, a, "ctx_task", action="done", task_id="t1"), "[done]")
    has(call(lc, a, "ctx_task", action="block", task_id="t2", reason="waiting on review"),
        "[blocked (waiting on review)]")


def test_task_show_names_who_created_it_and_its_details(lc: Any, a: Caller) -> None:
    call(lc, a, "ctx_task", action="create", title="parse", files=["pkg/mod.py", "pkg/b.py"],
         acceptance="tests pass")
    s = call(lc, a, "ctx_task", action="show", task_id="t1")
    has(s, "t1", "created_by: alice", "files: pkg/mod.py, pkg/b.py", "tests pass")
    assert "['" not in s["text"]  # lists read as lists, not Python reprs


def test_task_recover_names_the_previous_owner(lc: Any, a: Caller, b: Caller,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    call(lc, a, "ctx_task", action="create", title="parse")
    call(lc, a, "ctx_task", action="claim", task_id="t1", lease_seconds=60)
    later = clock.now() + 120
    monkeypatch.setattr(clock, "now", lambda: later)
    r = call(lc, b, "ctx_task", action="recover", task_id="t1", reason="alice vanished")
    assert r["task"]["previous_owner"] == "alice"
    has(r, "owner bob", "recovered from alice")
    has(call(lc, b, "ctx_task", action="show", task_id="t1"), "previous_owner: alice", "alice vanished")


def test_session_texts(lc: Any, a: Caller) -> None:
    call(lc, a, "ctx_read", paths=["big.txt"], mode="full", max_tokens=300)
    has(call(lc, a, "ctx_session", action="task", task="refactor", step=1, total=3), "refactor (1/3)")
    call(lc, a, "ctx_session", action="finding", text="f is slow", path="pkg/mod.py")
    has(call(lc, a, "ctx_session", action="save", name="snap1"), "snap1")
    st = call(lc, a, "ctx_session", action="status")
    has(st, *(x["archive_id"] for x in st["archives"]), *(f["ref"] for f in st["files"]), "f is slow")
    ls = call(lc, a, "ctx_session", action="list")
    has(ls, *(s["session_id"] for s in ls["sessions"]), *(x["name"] for x in ls["snapshots"]))
    call(lc, a, "ctx_session", action="decision", text="keep f")
    has(call(lc, a, "ctx_session", action="diff", name="snap1"), "+ decision: keep f")
    for i in range(12):
        call(lc, a, "ctx_session", action="finding", text=f"finding {i} " + "detail " * 20)
    res = call(lc, a, "ctx_session", action="resume", max_tokens=120)
    assert res["resume"]["left_out"]
    has(res, *(f"{n} {k}" for k, n in res["resume"]["left_out"].items()))
    has(call(lc, a, "ctx_session", action="load", name="snap1"), "loaded snap1")


def test_overview_names_tasks_and_unread_channels(lc: Any, a: Caller, b: Caller) -> None:
    t = call(lc, a, "ctx_task", action="create", title="parse")["task"]
    call(lc, b, "ctx_agent", action="post", title="hi", body="x", to="alice")
    ov = call(lc, a, "ctx_overview")
    has(ov, f"general/{t['task_id']}", *(f"{ch}: {n} unread" for ch, n in ov["overview"]["unread"].items()))


# --- memory ----------------------------------------------------------------------------------


def test_knowledge_texts(lc: Any, a: Caller, b: Caller) -> None:
    r = call(lc, a, "ctx_knowledge", action="remember", category="architecture", key="db", value="sqlite")
    has(r, "db", f"version {r['ack']['version']}")
    c = call(lc, b, "ctx_knowledge", action="remember", category="architecture", key="db", value="postgres")
    has(c, "CONFLICT", "sqlite", "postgres")
    has(call(lc, a, "ctx_knowledge", action="show", key="db"), "CONFLICT", "sqlite", "postgres")
    res = call(lc, a, "ctx_knowledge", action="resolve", key="db", value="sqlite")
    assert res["resolved"]["discarded"] == ["postgres"]
    has(res, "db = sqlite", "postgres")
    has(call(lc, a, "ctx_knowledge", action="recall", query="db"), "db [architecture] = sqlite")
    st = call(lc, a, "ctx_knowledge", action="status")
    has(st, f"{st['status']['total']} fact")
    ex = call(lc, a, "ctx_knowledge", action="export")
    assert ex["text"] == ex["data"]
    imp = call(lc, a, "ctx_knowledge", action="import", data=ex["data"])
    has(imp, f"imported {len(imp['result']['imported'])}", f"skipped {len(imp['result']['skipped'])}")
    call(lc, a, "ctx_knowledge", action="remember", category="architecture", key="db.engine", value="wal mode")
    call(lc, a, "ctx_knowledge", action="remember", category="architecture", key="db-engine", value="wal mode")
    con = call(lc, a, "ctx_knowledge", action="consolidate", dry_run=True, threshold=0.3)
    has(con, *(f"{', '.join(m['merged'])} into {m['key']}" for m in con["result"]["merges"]))
    has(call(lc, a, "ctx_knowledge", action="remove", key="db-engine"), "removed db-engine")


def test_handoff_create_gives_the_model_the_bundle_it_hands_over(lc: Any, a: Caller, b: Caller) -> None:
    call(lc, a, "ctx_session", action="finding", text="x is slow")
    h = call(lc, a, "ctx_handoff", action="create", message="over to you")
    bundle = h["handoff"]["bundle"]
    has(h, h["handoff"]["handoff_id"], bundle.strip())
    # what the model read is enough to hand it over: the bundle line of the text imports
    from_text = h["text"].splitlines()[-1]
    got = call(lc, b, "ctx_handoff", action="import", bundle=from_text, apply_session=True)
    assert got["import"]["handoff_id"] == h["handoff"]["handoff_id"]
    has(got, got["import"]["handoff_id"], got["import"]["session_id"], "applied: session", "over to you")


def test_handoff_create_to_a_file_names_it_and_import_list_show(lc: Any, a: Caller, b: Caller,
                                                                 project: Path) -> None:
    call(lc, a, "ctx_task", action="create", title="parse")
    call(lc, a, "ctx_task", action="claim", task_id="t1")
    h = call(lc, a, "ctx_handoff", action="create", out="h.json")
    assert (project / "h.json").read_text() == h["handoff"]["bundle"]
    has(h, h["handoff"]["handoff_id"], "h.json")
    assert h["handoff"]["bundle"].strip() not in h["text"]  # saved: the file is named, not repeated
    got = call(lc, b, "ctx_handoff", action="import", path="h.json", apply_workflow=True)
    t = got["import"]["tasks"][0]
    has(got, f"task {t['channel']}/{t['task_id']}", t["outcome"].replace("_", " "), t["reason"])
    hid = h["handoff"]["handoff_id"]
    has(call(lc, a, "ctx_handoff", action="list"), f"created  {hid}", f"imported {hid}")
    has(call(lc, a, "ctx_handoff", action="show", handoff_id=hid), "by alice", "by bob")


def test_proof_texts_name_the_file(lc: Any, a: Caller) -> None:
    c = call(lc, a, "ctx_proof", action="create")
    has(c, c["file"], c["head"]["position"])
    has(call(lc, a, "ctx_proof", action="latest"), c["file"], "not verified")
    v = call(lc, a, "ctx_proof", action="verify", file=c["file"])
    assert v["ok"]
    has(v, "ok", c["file"])
    has(call(lc, a, "ctx_proof", action="latest"), "verified at")


# --- metrics ---------------------------------------------------------------------------------


def test_gain_totals(lc: Any, a: Caller) -> None:
    call(lc, a, "ctx_shell", command="seq 1 2000")
    g = call(lc, a, "ctx_gain")
    tot = g["report"]["totals"]
    has(g, f"total: {tot['calls']} calls", f"saved {tot['saved_tokens']:,}")
