"""``ctx_shell`` takes ``max_tokens`` like ``ctx_read`` and ``ctx_expand`` (MCP, ``/v1/tools``,
``lean-ctx call``); out of range it is refused with ``SHELL_INVALID_CAP``."""

from __future__ import annotations

from pathlib import Path

import pytest

from leanctx.api import registry
from leanctx.api.registry import Caller
from leanctx.app import LeanCtx
from leanctx.context.tokens import count_tokens
from leanctx.errors import LeanCtxError


def test_ctx_shell_answers_within_max_tokens(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    with LeanCtx(tmp_path / "events.db") as lc:
        caller = Caller("agent-a", "s1", str(project))
        out = registry.call(lc, caller, "ctx_shell", {"command": "seq 1 20000", "raw": True, "max_tokens": 1000})
        assert count_tokens(out["text"]) <= 1000 and out["capped"] and "expand" in out["text"]
        whole = registry.call(lc, caller, "ctx_shell", {"command": "seq 1 20000", "raw": True})
        assert 1000 < count_tokens(whole["text"]) <= 20_000
        with pytest.raises(LeanCtxError) as e:
            registry.call(lc, caller, "ctx_shell", {"command": "true", "max_tokens": 5})
        assert e.value.code == "SHELL_INVALID_CAP"
