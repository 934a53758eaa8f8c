"""The latest proof when the proofs directory changes under a reader, and one verification answer
for every surface.

- A latest proof removed between the listing and the read (someone pruning ``<db dir>/proofs``)
  is not an answer: ``latest`` (store, ``ctx_proof``) and ``verify`` of the default proof take
  the next latest; ``PROOF_NOT_FOUND`` only when no proof is left.
- A file that has a record's name but is not a record is never overwritten by a verification.
- ``lean-ctx --json proof verify`` answers what ``POST /v1/proof/verify`` and ``ctx_proof verify``
  answer (``ProofVerifyAnswer``: the report, when, and the record's name), and its text is the
  store's ``verify_text``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from leanctx import proof_store
from leanctx.api import registry
from leanctx.app import LeanCtx
from leanctx.commands.chat import PostMessage
from leanctx.errors import LeanCtxError, NotFound

from .test_proof import T0, fill

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
pytestmark = pytest.mark.timeout(180)


def two_proofs(lc: LeanCtx, project: Path) -> tuple[proof_store.ProofCreated, proof_store.ProofCreated]:
    fill(lc, project)
    first = proof_store.create(lc, project)
    lc.bus.dispatch(PostMessage(title="later", body="more work"), actor="alice", project=str(project), now=T0 + 50)
    return first, proof_store.create(lc, project)


def prune_after_listing(monkeypatch: pytest.MonkeyPatch, times: int = 1) -> list[Path]:
    """The next ``times`` listings each find the latest proof, which is then removed (JSON and
    page) before anyone reads it."""
    real = proof_store.latest
    pruned: list[Path] = []

    def listing(directory: Any) -> Path | None:
        found = real(directory)
        if found is not None and len(pruned) < times:
            found.unlink()
            found.with_suffix(".html").unlink(missing_ok=True)
            pruned.append(found)
        return found

    monkeypatch.setattr(proof_store, "latest", listing)
    return pruned


def test_a_latest_proof_pruned_before_it_is_read_gives_way_to_the_next(
        tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with LeanCtx(tmp_path / "e.db") as lc:
        d = proof_store.proofs_dir(lc)
        first, second = two_proofs(lc, project)
        pruned = prune_after_listing(monkeypatch)
        info = proof_store.on_latest(d, proof_store.describe)
        assert pruned == [d / second.file] and info.file == first.file and info.head == first.head

        again = proof_store.create(lc, project)  # a latest again, to prune
        pruned = prune_after_listing(monkeypatch)
        out = registry.call(lc, registry.Caller("ana", "s1", str(project)), "ctx_proof", {"action": "latest"})
        assert pruned == [d / again.file] and out["file"] == first.file

        proof_store.create(lc, project)
        pruned = prune_after_listing(monkeypatch)
        ans = proof_store.verify_named(lc)  # the default proof: the latest one still there
        assert pruned == [d / again.file] and ans.ok and ans.file == first.file
        assert ans.record == first.file.replace(".json", ".verify.json") and (d / ans.record).is_file()

        # nothing left after the pruning: not found, after listing again
        pruned = prune_after_listing(monkeypatch, times=1)
        with pytest.raises(LeanCtxError) as ei:
            proof_store.on_latest(d, proof_store.describe)
        assert ei.value.code == proof_store.PROOF_NOT_FOUND and "no proof has been written" in ei.value.message
        assert pruned == [d / first.file]


def test_a_not_found_about_a_file_that_is_still_there_is_not_retried(tmp_path: Path, project: Path) -> None:
    with LeanCtx(tmp_path / "e.db") as lc:
        d = proof_store.proofs_dir(lc)
        _, second = two_proofs(lc, project)
        calls: list[Path] = []

        def use(path: Path) -> None:
            calls.append(path)
            raise NotFound(proof_store.PROOF_NOT_FOUND, "the page is missing")

        with pytest.raises(LeanCtxError) as ei:
            proof_store.on_latest(d, use)
        assert ei.value.message == "the page is missing" and calls == [d / second.file]


def test_a_file_with_a_records_name_that_is_not_a_record_is_left_alone(tmp_path: Path, project: Path) -> None:
    with LeanCtx(tmp_path / "e.db") as lc:
        _, second = two_proofs(lc, project)
        mine = tmp_path / "mine.json"
        mine.write_bytes((proof_store.proofs_dir(lc) / second.file).read_bytes())
        notes = tmp_path / "mine.verify.json"
        notes.write_bytes(b"my own notes\n")
        r = proof_store.verify_and_record(lc, mine)
        assert r.report.ok and r.path is None and "is not a verification record" in (r.error or "")
        assert notes.read_bytes() == b"my own notes\n"
        assert proof_store.answer(r).record_error == r.error
        notes.unlink()
        r = proof_store.verify_and_record(lc, mine)
        assert r.path == notes and r.error is None
        r = proof_store.verify_and_record(lc, mine)  # its own record is replaced
        assert r.path == notes and proof_store.recorded_verification(mine) == r.record


def test_cli_verify_answers_what_the_other_surfaces_answer(tmp_path: Path, project: Path, home: Path) -> None:
    db = tmp_path / "e.db"
    with LeanCtx(db) as lc:
        _, second = two_proofs(lc, project)
        via_store = msgspec.to_builtins(proof_store.verify_named(lc))
        via_tool = registry.call(lc, registry.Caller("ana", "s1", str(project)), "ctx_proof", {"action": "verify"})
    env = {**os.environ, "LEAN_CTX_HOME": str(home), "LEAN_CTX_DB": str(db), "LEAN_CTX_NO_DAEMON": "1"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([LEAN_CTX, *args], check=False, cwd=project, env=env, capture_output=True, text=True, timeout=60)

    p = run("--json", "proof", "verify")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert set(out) == set(via_store) == set(via_tool) - {"text"}
    assert out["ok"] and out["record"] == second.file.replace(".json", ".verify.json") and out["verified_at"]
    assert out["file"].endswith(second.file) and out["head_position"] == second.head.position
    p = run("proof", "verify")
    answer = proof_store.ProofVerifyAnswer(**{**out, "differences": [], "verified_at": "-"})
    assert p.returncode == 0 and p.stdout == proof_store.verify_text(answer) + "\n"
    assert p.stdout.startswith(f"ok: proof of head {second.head.position} ({out['file']}) verified against ")
