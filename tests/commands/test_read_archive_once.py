"""``read.record`` records each archive once: ``archive.created`` is emitted the first time the
log hears of an archive (``leanctx.commands.archives.record_archive``, as shell, search and tree
do), never again for a later capped read of the same view — by the same conversation, another
session or another agent — nor twice within one call (two paths with the same content). The
archive a capped answer names is checked like theirs (``READ_INVALID_RECORD``).

Through the real CLI (one process per call, a real SQLite file), plus one direct dispatch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from leanctx.app import LeanCtx
from leanctx.archive import ArchiveInfo
from leanctx.commands.read import ReadFile, ReadView, RecordRead
from leanctx.errors import InvalidInput

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
# ~3,000 tokens: far over --max-tokens 1000
BIG = "".join(f"def function_number_{i}(argument: int) -> int:  # line {i}\n    return argument * {i}\n"
              for i in range(150))


class Cli:
    def __init__(self, project: Path, db: Path) -> None:
        self.project, self.db = project, db
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
        self.env.update(LEAN_CTX_DB=str(db), LEAN_CTX_NO_DAEMON="1", LEAN_CTX_HOME=os.environ["LEAN_CTX_HOME"])

    def run(self, *args: str, agent: str = "a1", session: str = "s1") -> str:
        env = {**self.env, "LEAN_CTX_AGENT_ID": agent, "LEAN_CTX_SESSION_ID": session}
        p = subprocess.run([LEAN_CTX, "--project", str(self.project), *args], check=False, capture_output=True,
                           text=True, env=env, cwd=self.project, timeout=60)
        assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
        return p.stdout

    def read(self, *paths: str, **who: str) -> list[dict[str, Any]]:
        out = self.run("read", *paths, "--mode", "full", "--json", "--max-tokens", "1000", **who)
        return [json.loads(x) for x in out.splitlines()]

    def events(self, kind: str) -> list[dict[str, Any]]:
        out = self.run("events", "tail", "--kind", kind, "--json", "-n", "1000")
        return [json.loads(x) for x in out.splitlines()]


@pytest.fixture()
def cli(tmp_path: Path) -> Cli:
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "src" / "big.py").write_text(BIG)
    (project / "src" / "twin.py").write_text(BIG)  # the same content: the same archive
    return Cli(project, tmp_path / "events.db")


def test_repeated_capped_reads_create_the_archive_once(cli: Cli) -> None:
    first = cli.read("src/big.py")[0]
    assert first["capped"] and first["archive_id"], first["text"][-300:]
    aid = first["archive_id"]
    again = cli.read("src/big.py")[0]  # the same conversation: capped answers never become stubs
    other_session = cli.read("src/big.py", session="s2")[0]
    other_agent = cli.read("src/big.py", agent="b1", session="s9")[0]
    for a in (again, other_session, other_agent):
        assert a["capped"] and not a["stub"] and a["archive_id"] == aid
        assert f"archived as {aid}" in a["text"]  # every answer still names where the rest is
    created = cli.events("archive.created")
    assert [e["payload"]["archive_id"] for e in created] == [aid], created  # was: one per read
    assert created[0]["stream"] == f"archive:{aid}" and created[0]["payload"]["source"] == "read"
    reads = cli.events("file.read")
    assert len(reads) == 4 and {e["payload"]["archive_id"] for e in reads} == {aid}
    # the first read is the one that created it (same tool call)
    assert created[0]["correlation_id"] == reads[0]["correlation_id"]
    assert [e["stream"] for e in cli.events("archive.*")] == [f"archive:{aid}"]


def test_two_paths_with_one_content_in_one_call_create_one_archive(cli: Cli) -> None:
    answers = cli.read("src/big.py", "src/twin.py")
    assert [a["capped"] for a in answers] == [True, True]
    assert answers[0]["archive_id"] == answers[1]["archive_id"]
    created = cli.events("archive.created")
    assert [e["payload"]["archive_id"] for e in created] == [answers[0]["archive_id"]]
    cli.read("src/twin.py", agent="b1")  # later, anyone: nothing more
    assert len(cli.events("archive.created")) == 1


def test_replay_and_gain_are_unaffected(cli: Cli) -> None:
    cli.read("src/big.py")
    cli.read("src/big.py", agent="b1", session="s9")
    gain = json.loads(cli.run("gain", "--json"))
    rep = json.loads(cli.run("replay", "--verify", "--json"))  # exit 1 if any projection differs
    assert rep["chain_ok"] and all(p["match"] for p in rep["projections"]), rep
    assert any(p["name"] == "savings" for p in rep["projections"])
    cli.run("replay")  # rebuilt in place: the same figures
    assert json.loads(cli.run("gain", "--json")) == gain
    assert gain["totals"]["calls"] == 2 and gain["totals"]["deferred_tokens"] > 0
    by_tool = {r["group"]["tool"]: r for r in gain["reports"][0]["rows"]}
    assert set(by_tool) == {"read"}  # the archive is charged to the read that capped it


def test_a_capped_answer_naming_a_bad_archive_is_refused(tmp_path: Path) -> None:
    body = "".join(f"line {i} of a body long enough to be capped at two hundred tokens\n" for i in range(60))
    with LeanCtx(tmp_path / "e.db") as lc:
        def record(info: ArchiveInfo) -> Any:
            view = ReadView(mode="full", label="full", body=body, tokens=900, archive=info)
            f = ReadFile(path="a.py", content_hash="h" * 64, lines=60, raw_tokens=900, redactions=0,
                         requested_mode="full", view=view)
            return lc.bus.dispatch(RecordRead(files=[f], cap_tokens=200), actor="a1", session_id="s1",
                                   project=str(tmp_path))

        good = ArchiveInfo("A" + "ab" * 8, "ab" * 32, len(body), 60, 900, source="read")
        for bad in (msgspec_replace(good, sha256="cd" * 32), msgspec_replace(good, archive_id="Anot-an-id"),
                    msgspec_replace(good, tokens=-1)):
            with pytest.raises(InvalidInput) as e:
                record(bad)
            assert e.value.code in ("READ_INVALID_RECORD", "ARCHIVE_INVALID_ID"), e.value
        assert e.value.code == "READ_INVALID_RECORD"  # a bad count is the command's own code
        assert lc.store.read_all(0) == [] or all(ev.kind not in ("file.read", "archive.created")
                                                 for ev in lc.store.read_all(0))
        answers = record(good).value
        assert answers[0].capped and answers[0].archive_id == good.archive_id
        assert [ev.kind for ev in lc.store.read_all(0)].count("archive.created") == 1


def msgspec_replace(info: ArchiveInfo, **changes: Any) -> ArchiveInfo:
    import msgspec

    return msgspec.structs.replace(info, **changes)
