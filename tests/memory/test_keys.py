"""Keys: created on first use with mode 0600, refused when readable by others, sign / verify,
trust store, canonical encoding, and the keys CLI."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx import keys
from leanctx.errors import CommandError, InvalidInput, NotFound

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))


def test_key_created_on_first_use_with_0600_and_pub(home: Path) -> None:
    sig = keys.sign("agent-a", b"hello")
    key = home / "keys" / "agent-a.key"
    pub = home / "keys" / "agent-a.pub"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE((home / "keys").stat().st_mode) == 0o700
    raw, kid = keys.parse_pub(pub.read_text())
    assert kid == "agent-a" and raw == keys.public_key("agent-a")
    keys.verify(raw, b"hello", sig)  # no raise
    assert keys.sign("agent-a", b"hello") == sig  # the same key is reused (ed25519 is deterministic)


def test_world_or_group_readable_key_is_refused(home: Path) -> None:
    keys.sign("k1", b"x")
    path = home / "keys" / "k1.key"
    for mode in (0o644, 0o640, 0o604):
        os.chmod(path, mode)
        with pytest.raises(CommandError) as ei:
            keys.sign("k1", b"x")
        assert ei.value.code == keys.KEY_INSECURE
        assert "chmod 600" in ei.value.message
    os.chmod(path, 0o600)
    keys.sign("k1", b"x")


def test_bad_signature_and_missing_key_codes() -> None:
    pub = keys.public_key("k")
    sig = keys.sign("k", b"data")
    with pytest.raises(CommandError) as ei:
        keys.verify(pub, b"datA", sig)
    assert ei.value.code == keys.SIGNATURE_INVALID
    with pytest.raises(CommandError):
        keys.verify(keys.public_key("other"), b"data", sig)
    with pytest.raises(CommandError):
        keys.verify(pub, b"data", sig[:-1] + bytes([sig[-1] ^ 1]))
    with pytest.raises(NotFound) as nf:
        keys.load_signing_key("never-made", create=False)
    assert nf.value.code == keys.KEY_NOT_FOUND
    for bad in ("../evil", "a/b", "", ".hidden"):
        with pytest.raises(InvalidInput) as bi:
            keys.sign(bad, b"x")
        assert bi.value.code == keys.KEY_INVALID_ID


def test_trust_store(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other_home = tmp_path / "other"
    foreign = keys.public_key("agent-z", base=other_home)
    assert keys.find_trusted(foreign) is None
    with pytest.raises(CommandError) as ei:
        keys.require_trusted(foreign)
    assert ei.value.code == keys.KEY_UNTRUSTED
    k = keys.trust(keys.pub_line(foreign, "agent-z"))
    assert k.fingerprint == keys.fingerprint(foreign)
    assert keys.require_trusted(foreign).key_id == "agent-z"
    assert keys.find_trusted(keys.public_key("mine")) is not None  # own keys are trusted
    with pytest.raises(InvalidInput):
        keys.trust("ssh-rsa AAAA x")


def test_canonical_sorts_keys_at_every_level() -> None:
    assert keys.canonical({"b": 1, "a": {"d": [2, {"z": 1, "y": 2}], "c": None}}) == \
        b'{"a":{"c":null,"d":[2,{"y":2,"z":1}]},"b":1}'


def test_keys_cli(tmp_path: Path, home: Path) -> None:
    env = {**os.environ, "LEAN_CTX_HOME": str(home)}
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([LEAN_CTX, *args], cwd=proj, env=env, capture_output=True, text=True, timeout=60)

    shown = json.loads(run("keys", "show", "--json").stdout)
    assert shown["key_id"] == keys.project_key_id(proj)
    line = run("keys", "export-pub").stdout
    assert keys.parse_pub(line)[1] == shown["key_id"]
    foreign = tmp_path / "z.pub"
    foreign.write_text(keys.pub_line(keys.public_key("agent-z", base=tmp_path / "o"), "agent-z"))
    p = run("keys", "trust", str(foreign))
    assert p.returncode == 0 and "trusted agent-z" in p.stdout
    listed = json.loads(run("keys", "list", "--json").stdout)
    assert {(k["key_id"], k["private"]) for k in listed} == {(shown["key_id"], True), ("agent-z", False)}
    bad = tmp_path / "bad.pub"
    bad.write_text("nonsense\n")
    p = run("keys", "trust", str(bad))
    assert p.returncode != 0 and "KEY_INVALID_FILE" in p.stderr
