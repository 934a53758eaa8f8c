"""Every read mode through the operation; answers state mode, lines and tokens; the cap
archives the rest; the view cache is shared; the CLI end to end."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import starlette.routing

from leanctx.archive import ArchiveStore
from leanctx.cache.views import views_for
from leanctx.context.tokens import count_tokens
from leanctx.errors import InvalidInput, NotFound
from tools.replay import replay

from .test_read_common import LEAN_CTX, Reader, lc, project, reader  # noqa: F401

ROUTING = Path(starlette.routing.__file__).read_text()


@pytest.fixture()
def big(project: Path) -> Path:
    (project / "src" / "routing.py").write_text(ROUTING)
    return project / "src" / "routing.py"


def _header(text: str) -> re.Match[str]:
    m = re.match(r"^(F\d+=)?(?P<path>\S+) \[(?P<mode>[^ ·]+(?: vs \w+)?) · (?P<lines>\d+) lines? · "
                 r"(?P<tokens>[\d,]+) tokens", text)
    assert m, text[:200]
    return m


@pytest.mark.parametrize(
    ("mode", "kw", "resolved", "must"),
    [
        ("full", {}, "full", "def compile_path("),
        ("map", {}, "map", "586 class Router"),
        ("signatures", {}, "signatures", "586 class Router"),
        ("lines:2-4,10-11", {}, "lines:2-4,10-11", "3\timport contextlib"),
        ("aggressive", {}, "aggressive", "class Router:"),
        ("entropy", {}, "entropy", "class Router:"),
        ("task", {"task": "compile the path convertors"}, "task", "def compile_path("),
        ("auto", {}, "signatures", "586 class Router"),
        ("auto", {"intent": "give me an overview"}, "map", "586 class Router"),
        ("diff", {}, "full", "def compile_path("),  # nothing received before: full, and it says so
    ],
)
def test_every_mode_through_the_op(reader: Reader, big: Path, mode: str, kw: dict, resolved: str, must: str) -> None:
    a = reader.one("src/routing.py", mode=mode, **kw)
    assert a.mode == resolved and a.requested_mode == mode
    assert must in a.text
    m = _header(a.text)
    assert m.group("path") == "src/routing.py" and int(m.group("lines")) == a.lines == 772
    assert int(m.group("tokens").replace(",", "")) == a.sent_tokens == count_tokens(a.text)
    assert resolved.split(":")[0] in m.group("mode")
    assert a.raw_tokens == count_tokens(ROUTING)
    if resolved == "aggressive":
        assert a.sent_tokens < a.raw_tokens
    elif resolved == "entropy":  # keeps every line of Python code but blank ones, which cost no tokens
        assert a.sent_tokens < a.raw_tokens * 1.02
    elif resolved != "full":
        assert a.sent_tokens < a.raw_tokens / 2
    ev = reader.events("file.read")[-1]
    # the event records the delivery key: a task view's carries the digest of its task text
    key = ev["mode"] if resolved != "task" else ev["mode"].split(":")[0]
    assert (ev["path"], key, ev["requested_mode"], ev["lines"]) == ("src/routing.py", resolved, mode, 772)
    assert resolved != "task" or re.fullmatch(r"task:[0-9a-f]{12}", ev["mode"])
    assert (ev["sent_tokens"], ev["raw_tokens"], ev["content_hash"], ev["session_id"]) == (
        a.sent_tokens, a.raw_tokens, a.content_hash, "s1")
    assert ev["stub"] is False and ev["archive_id"] is None and ev["ref"] == "F1"
    if mode == "diff":
        assert "has not received this file before" in a.text


def test_invalid_modes_and_inputs_have_stable_codes(reader: Reader, project: Path) -> None:
    for mode, code in [("bogus", "READ_INVALID_MODE"), ("lines:9-1", "READ_INVALID_RANGE"),
                       ("lines:500-600", "READ_INVALID_RANGE"), ("task", "READ_MISSING_INPUT"),
                       ("map:3", "READ_INVALID_MODE")]:
        with pytest.raises(InvalidInput) as info:
            reader.one("src/app.py", mode=mode)
        assert info.value.code == code, mode
    with pytest.raises(NotFound) as nf:
        reader.one("src/nope.py")
    assert nf.value.code == "READ_NOT_FOUND"
    (project / "bin.dat").write_bytes(b"\x00\x01\x02binary")
    with pytest.raises(InvalidInput) as b:
        reader.one("bin.dat")
    assert b.value.code == "READ_BINARY_FILE"
    with pytest.raises(InvalidInput) as d:
        reader.one("src")
    assert d.value.code == "READ_IS_DIRECTORY"
    with pytest.raises(InvalidInput) as cap:
        reader.one("src/app.py", cap_tokens=30_000)
    assert cap.value.code == "READ_INVALID_CAP"
    assert not reader.events("file.read")


def test_the_cap_archives_the_rest_and_says_so(reader: Reader, project: Path) -> None:
    huge = "\n".join(f"def function_number_{i}(argument_{i}: int) -> int:  # line {i}" for i in range(1, 4001)) + "\n"
    (project / "huge.py").write_text(huge)
    raw = count_tokens(huge)
    assert raw > 25_000
    a = reader.one("huge.py", mode="full")
    assert a.capped and a.archive_id and a.sent_tokens == count_tokens(a.text) <= 20_000
    assert a.sent_tokens > 19_000  # the cap is used, not wasted
    m = re.search(r"\[capped at 20,000 tokens: lines 1-(\d+) of the 4000-line view sent · lines (\d+)-4000 "
                  rf"\(~[\d,]+ tokens(?:, estimated from a sample)?\) archived as {a.archive_id} · lean-ctx expand {a.archive_id}"
                  r" --lines (\d+)-4000\]", a.text)
    assert m, a.text[-400:]
    k = int(m.group(1))
    assert int(m.group(2)) == k + 1 == int(m.group(3))
    assert f"function_number_{k}(" in a.text and f"function_number_{k + 1}(" not in a.text
    archived = ArchiveStore.beside(reader.lc.db).get(a.archive_id)
    assert archived == huge  # the whole view: nothing is lost
    ev = reader.events("file.read")[-1]
    assert ev["archive_id"] == a.archive_id and ev["sent_tokens"] == a.sent_tokens and ev["raw_tokens"] == raw
    created = reader.events("archive.created")
    assert len(created) == 1 and created[0]["archive_id"] == a.archive_id and created[0]["source"] == "read"
    assert created[0]["lines"] == 4000 and created[0]["tokens"] == raw
    assert created[0]["_correlation"] == reader.events("tool.called")[-1]["_correlation"]


def test_several_paths_share_one_cap(reader: Reader, project: Path) -> None:
    body = "\n".join(f"value_{i} = {i} * {i}  # a line of numbers" for i in range(1, 2001)) + "\n"
    for n in range(3):
        (project / f"d{n}.py").write_text(body.replace("value_", f"v{n}_"))
    answers = reader([f"d{n}.py" for n in range(3)], mode="full", cap_tokens=12_000)
    total = sum(a.sent_tokens for a in answers)
    assert total <= 12_000
    assert [a.capped for a in answers] == [False, True, True] or [a.capped for a in answers][1:] == [True, True]
    for a in answers:
        if a.capped:
            assert ArchiveStore.beside(reader.lc.db).exists(a.archive_id)  # type: ignore[arg-type]
    assert {e["archive_id"] for e in reader.events("archive.created")} == {a.archive_id for a in answers if a.capped}


def test_a_capped_view_reread_is_not_a_stub(reader: Reader, project: Path) -> None:
    (project / "huge.txt").write_text("".join(f"line {i} of a long text file with words\n" for i in range(6000)))
    first = reader.one("huge.txt", mode="full")
    assert first.capped
    second = reader.one("huge.txt", mode="full")  # the conversation never received it whole: no stub
    assert not second.stub and second.capped


def test_views_are_cached_and_shared_by_agents(reader: Reader, big: Path) -> None:
    cache = views_for(reader.lc)
    reader.one("src/routing.py", mode="signatures", agent="agent-a")
    b = reader.one("src/routing.py", mode="signatures", agent="agent-b")
    assert not b.stub
    conn = cache._conn  # noqa: SLF001
    rows = conn.execute("SELECT mode, hits FROM cache_views WHERE mode = 'signatures'").fetchall()
    assert rows == [("signatures", 1)]
    assert conn.execute("SELECT count(*) FROM cache_blobs").fetchone()[0] == 1
    assert conn.execute("SELECT path FROM cache_files").fetchall() == [("src/routing.py",)]


def test_the_cache_prunes_least_recently_used_entries(tmp_path: Path) -> None:
    from leanctx.cache.views import Blob, View, ViewCache, options_key

    cache = ViewCache(tmp_path / "c.db", max_bytes=10_000)
    for i in range(6):
        text = f"{i}" * 3000
        cache.put_view(f"h{i}", "full", options_key(encoding="o200k_base"), View("full", text, 1, 1, 0, None, None, 9))
    cache.put_blob(Blob("b1", "x" * 100, 0, 1, 1, "o200k_base"))
    assert cache.size() > 10_000
    dropped = cache.prune()
    assert dropped >= 3 and cache.size() <= 10_000
    assert cache.get_view("h5", "full", options_key(encoding="o200k_base")) is not None  # the newest stay
    assert cache.get_view("h0", "full", options_key(encoding="o200k_base")) is None
    assert options_key(task="a", encoding="e") != options_key(task="b", encoding="e")
    assert "secret" not in options_key(task="a secret task text", encoding="e")  # hashed, not stored


def test_replay_gives_digest_equal_projections(reader: Reader, project: Path) -> None:
    reader(["src/app.py", "README.md"], mode="full")
    reader.one("src/app.py", mode="full")
    reader.one("src/app.py", mode="signatures", session="s2", agent="agent-b")
    reader.one("README.md", session=None)
    report = replay(reader.lc, verify=True)
    assert report.ok, report
    assert any(p.name == "deliveries" and p.match for p in report.projections)
    before = reader.lc.projections.digest("deliveries")
    reader.lc.projections.rebuild("deliveries")
    assert reader.lc.projections.digest("deliveries") == before


# --- the CLI -------------------------------------------------------------------------------


def _run(project: Path, db: Path, *args: str, agent: str = "cli-agent", session: str | None = None,
         cwd: Path | None = None, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_DB=str(db), LEAN_CTX_AGENT_ID=agent)
    if session:
        env["LEAN_CTX_SESSION_ID"] = session
    env.update(extra or {})
    return subprocess.run([LEAN_CTX, "--project", str(project), *args], capture_output=True, text=True, env=env,
                          cwd=cwd or project, timeout=60)


def test_cli_end_to_end(tmp_path: Path, project: Path) -> None:
    db = tmp_path / "cli.db"
    p = _run(project, db, "read", "src/app.py", "README.md", "--mode", "signatures")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("src/app.py [signatures · 29 lines · ") and "\n\nREADME.md [signatures" in p.stdout
    assert "10   __init__(root: str)" in p.stdout
    # no session: each process is a conversation of its own, never a stub
    assert "unchanged" not in _run(project, db, "read", "src/app.py", "--mode", "signatures").stdout
    s1 = _run(project, db, "read", "src/app.py", "--mode", "signatures", "--session", "conv")
    assert s1.returncode == 0 and s1.stdout.startswith("F1=src/app.py [signatures")
    s2 = _run(project, db, "read", "src/app.py", "--mode", "signatures", session="conv")
    assert s2.stdout == "F1=src/app.py [unchanged 29 lines · --fresh to re-read]\n"
    s3 = _run(project, db, "read", "src/app.py", "--mode", "signatures", "--fresh", session="conv")
    assert s3.stdout.startswith("F1=src/app.py [signatures")
    j = _run(project, db, "read", "app.py", "-m", "lines:1-2", "--json", session="conv", cwd=project / "src")
    assert j.returncode == 0, j.stderr
    rows = [json.loads(x) for x in j.stdout.splitlines()]
    assert len(rows) == 1 and rows[0]["path"] == "src/app.py" and rows[0]["mode"] == "lines:1-2"
    assert rows[0]["sent_tokens"] == count_tokens(rows[0]["text"]) and rows[0]["ref"] == "F1"
    out = _run(project, db, "read", "../../cli.db", cwd=project / "src")
    assert out.returncode == 2 and out.stderr.startswith("error[READ_PATH_OUTSIDE_PROJECT]:")
    assert "Traceback" not in out.stderr
    (project / ".env").write_text("TOKEN=abc\n")
    env = _run(project, db, "read", ".env", "--json")
    assert env.returncode == 2 and json.loads(env.stdout)["error"]["code"] == "READ_SECRET_FILE"
    bad = _run(project, db, "read", "src/app.py", "--mode", "nope")
    assert bad.returncode == 2 and "READ_INVALID_MODE" in bad.stderr
    (project / "long.txt").write_text("".join(f"line {i} of a longer text\n" for i in range(300)))
    capped = _run(project, db, "read", "long.txt", "--mode", "full", "--max-tokens", "300", "--json")
    assert capped.returncode == 0, capped.stderr
    row = json.loads(capped.stdout)
    assert row["capped"] and row["sent_tokens"] <= 300 and f"lean-ctx expand {row['archive_id']}" in row["text"]


def test_the_commands_encoding_default_is_the_tokenizers() -> None:
    from leanctx.commands.read import DEFAULT_ENCODING
    from leanctx.context.tokens import DEFAULT_ENCODING as TOKENIZER_DEFAULT

    assert DEFAULT_ENCODING == TOKENIZER_DEFAULT
