"""A handoff list that shows only the newest says so, and every refusal of an untrusted key says
how a key becomes trusted (keys are managed on the CLI: the owner exports it, the receiver
trusts the file) — each named command exists."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from leanctx import keys
from leanctx.api import registry
from leanctx.api.registry import Caller
from leanctx.app import LeanCtx
from leanctx.errors import LeanCtxError

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def lc(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "e.db") as app:
        yield app


def test_a_list_past_its_limit_says_how_many_it_left_out(lc: LeanCtx, tmp_path: Path) -> None:
    me = Caller("a", "s-a", str(tmp_path))
    registry.call(lc, me, "ctx_agent", {"action": "register", "role": "dev"})
    for _ in range(51):
        registry.call(lc, me, "ctx_handoff", {"action": "create"})
    text = registry.call(lc, me, "ctx_handoff", {"action": "list"})["text"]
    assert sum(1 for x in text.splitlines() if x.startswith("created ")) == 50
    assert "(the newest 50 of 51 created; show one with ctx_handoff action=show)" in text
    registry.call(lc, me, "ctx_handoff", {"action": "create"})
    assert "of 52 created" in registry.call(lc, me, "ctx_handoff", {"action": "list"})["text"]


def test_a_short_list_has_no_such_line(lc: LeanCtx, tmp_path: Path) -> None:
    me = Caller("a", "s-a", str(tmp_path))
    registry.call(lc, me, "ctx_agent", {"action": "register", "role": "dev"})
    registry.call(lc, me, "ctx_handoff", {"action": "create"})
    assert "newest" not in registry.call(lc, me, "ctx_handoff", {"action": "list"})["text"]


def test_an_untrusted_key_is_refused_with_the_way_to_trust_it(tmp_path: Path) -> None:
    pub = Ed25519PrivateKey.generate().public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    with pytest.raises(LeanCtxError) as e:
        keys.require_trusted(pub, tmp_path)
    assert e.value.code == keys.KEY_UNTRUSTED
    assert keys.TRUST_HOW in e.value.message
    for words in re.findall(r"`lean-ctx ([a-z -]+?)(?: --| FILE|`)", keys.TRUST_HOW):
        p = subprocess.run([LEAN_CTX, *words.split(), "--help"], capture_output=True, text=True, timeout=60,
                           check=False)
        assert p.returncode == 0 and "--out" in subprocess.run(
            [LEAN_CTX, "keys", "export-pub", "--help"], capture_output=True, text=True, timeout=60).stdout, words
