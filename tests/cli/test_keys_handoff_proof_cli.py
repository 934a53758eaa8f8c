"""The CLI's keys, handoff and proof commands refuse with a code instead of leaving things behind.

- ``keys show ID`` / ``keys export-pub ID`` for an id nobody created: ``KEY_NOT_FOUND`` (exit 2),
  and no key is created (only the project key is made on first use, agents' keys at registration).
- ``handoff create --out PATH`` whose PATH cannot be written (under a regular file, or a
  directory): a coded error and no ``handoff.created`` event; missing parent folders are created,
  as ``ctx_handoff out=`` does. ``keys export-pub --out`` and ``pack seal -o`` likewise answer a
  code, not a traceback.
- ``proof verify FILE`` on a file that is not a proof: ``PROOF_NOT_A_PROOF`` (exit 2), nothing
  written next to it.

Real console script, real subprocesses, a real log and data dir per test (the ``home`` fixture).
Unwritable paths are paths under a regular file, so the tests hold when run as root.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
pytestmark = pytest.mark.timeout(180)


@pytest.fixture()
def proj(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    (p / ".git").mkdir(parents=True)
    return p


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LEAN_CTX_DB", "LEAN_CTX_AGENT_ID")}
    env.update(LEAN_CTX_NO_DAEMON="1", LEAN_CTX_AGENT_ID="alice")
    return subprocess.run([LEAN_CTX, *args], check=False, capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


def refused(p: subprocess.CompletedProcess[str], code: str) -> None:
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert f"error[{code}]" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr, p.stderr


def created_handoffs(proj: Path) -> list[dict[str, object]]:
    p = run(proj, "handoff", "list", "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["created"]  # type: ignore[no-any-return]


# --- keys ------------------------------------------------------------------------------------------
def test_an_unknown_key_id_is_not_created(proj: Path, home: Path) -> None:
    refused(run(proj, "keys", "show", "nokey"), "KEY_NOT_FOUND")
    p = run(proj, "--json", "keys", "show", "nokey")
    assert p.returncode == 2 and json.loads(p.stdout)["error"]["code"] == "KEY_NOT_FOUND", (p.stdout, p.stderr)
    refused(run(proj, "keys", "export-pub", "nokey"), "KEY_NOT_FOUND")
    assert not list((home / "keys").glob("nokey*"))
    p = run(proj, "keys", "list", "--json")
    assert p.returncode == 0 and "nokey" not in p.stdout, p.stdout


def test_the_project_key_is_still_made_on_first_use_and_known_keys_show(proj: Path, home: Path) -> None:
    p = run(proj, "keys", "show", "--json")
    assert p.returncode == 0, p.stderr
    mine = json.loads(p.stdout)
    assert mine["key_id"].startswith("project-") and mine["private"] is True and Path(mine["path"]).is_file()
    p = run(proj, "keys", "show", mine["key_id"], "--json")  # the same key, by its id
    assert p.returncode == 0 and json.loads(p.stdout)["fingerprint"] == mine["fingerprint"], p.stderr
    # a registered agent's key (made at registration) shows and exports
    assert run(proj, "agent", "register", "--type", "test", "--role", "dev").returncode == 0
    p = run(proj, "keys", "export-pub", "alice")
    assert p.returncode == 0 and p.stdout.startswith("ed25519 ") and p.stdout.strip().endswith(" alice"), p.stderr
    # a trusted key (no private half here) shows as trusted, and no private key is made for its id
    other = proj.parent / "other.pub"
    other.write_text(p.stdout.replace(" alice", " bob"))
    assert run(proj, "keys", "trust", str(other)).returncode == 0
    p = run(proj, "keys", "show", "bob", "--json")
    assert p.returncode == 0, p.stderr
    bob = json.loads(p.stdout)
    assert bob["private"] is False and bob["trusted"] is True and not (home / "keys" / "bob.key").exists()
    p = run(proj, "keys", "export-pub", "bob")
    assert p.returncode == 0 and p.stdout == other.read_text(), (p.stdout, p.stderr)


def test_export_pub_out_unwritable_is_a_coded_error(proj: Path) -> None:
    (proj / "afile").write_text("x\n")
    refused(run(proj, "keys", "export-pub", "--out", "afile/k.pub"), "KEY_OUT_UNWRITABLE")
    p = run(proj, "keys", "export-pub", "--out", "deep/er/k.pub")  # missing folders are made
    assert p.returncode == 0, p.stderr
    assert (proj / "deep/er/k.pub").read_text().startswith("ed25519 ")


# --- handoff create --out, pack seal -o ------------------------------------------------------------
def test_handoff_out_that_cannot_be_written_records_nothing(proj: Path) -> None:
    (proj / "afile").write_text("x\n")
    (proj / "adir").mkdir()
    refused(run(proj, "handoff", "create", "--out", "afile/x/b.json"), "HANDOFF_OUT_UNWRITABLE")
    refused(run(proj, "handoff", "create", "--out", str(proj / "afile" / "b.json")), "HANDOFF_OUT_UNWRITABLE")
    refused(run(proj, "handoff", "create", "--out", "adir"), "HANDOFF_OUT_IS_A_DIRECTORY")
    p = run(proj, "--json", "handoff", "create", "--out", "afile/b.json")
    assert p.returncode == 2 and json.loads(p.stdout)["error"]["code"] == "HANDOFF_OUT_UNWRITABLE", p.stdout
    assert created_handoffs(proj) == []  # no handoff nobody received
    assert sorted(x.name for x in proj.iterdir()) == [".git", "adir", "afile"]
    assert list((proj / "adir").iterdir()) == []


def test_handoff_out_creates_missing_folders_like_ctx_handoff(proj: Path) -> None:
    p = run(proj, "handoff", "create", "--out", "new/dir/b.json", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    bundle = proj / "new" / "dir" / "b.json"
    assert out["out"] == "new/dir/b.json" and json.loads(bundle.read_text())["format"]
    assert [h["handoff_id"] for h in created_handoffs(proj)] == [out["handoff_id"]]
    assert sorted(x.name for x in (proj / "new" / "dir").iterdir()) == ["b.json"]  # no probe left behind
    # the sealed envelope: a coded error when -o cannot be written, else written (folders made)
    (proj / "afile").write_text("x\n")
    seal = ("pack", "seal", str(bundle), "--secret", "s3cret")
    refused(run(proj, *seal, "-o", "afile/e.json"), "PACK_OUT_UNWRITABLE")
    refused(run(proj, *seal, "-o", "new"), "PACK_OUT_IS_A_DIRECTORY")
    p = run(proj, *seal, "-o", "env/e.json")
    assert p.returncode == 0 and json.loads((proj / "env" / "e.json").read_text()), p.stderr


# --- proof verify ----------------------------------------------------------------------------------
@pytest.mark.parametrize("content", [b'{"a": 1}\n', b"not json at all\n", b"[1, 2]\n", b"\xff\xfe"])
def test_verifying_a_file_that_is_not_a_proof_writes_nothing(proj: Path, content: bytes) -> None:
    f = proj / "notes.json"
    f.write_bytes(content)
    refused(run(proj, "proof", "verify", str(f)), "PROOF_NOT_A_PROOF")
    assert sorted(x.name for x in proj.iterdir()) == [".git", "notes.json"]
    assert f.read_bytes() == content


def test_a_tampered_proof_still_fails_and_is_recorded(proj: Path, tmp_path: Path) -> None:
    assert run(proj, "agent", "register", "--type", "test", "--role", "dev").returncode == 0
    p = run(proj, "proof", "--out", str(tmp_path / "o"), "--json")
    assert p.returncode == 0, p.stderr
    made = Path(json.loads(p.stdout)["json"])
    doc = json.loads(made.read_text())
    doc["events"]["total"] += 1  # re-rendered by hand: no longer canonical, still a proof document
    bad = tmp_path / "o" / "bad.json"
    bad.write_text(json.dumps(doc))
    p = run(proj, "proof", "verify", str(bad), "--json")
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "PROOF_NOT_CANONICAL" in {d["code"] for d in json.loads(p.stdout)["differences"]}
    assert json.loads((tmp_path / "o" / "bad.verify.json").read_text())["verified"] is False
