"""The MCP client's name picks the tokenizer of its session's counts (Gemini: cl100k with the
1.1 correction; Claude, Cursor...: o200k), ``$LEAN_CTX_MODEL`` overrides it, and the events
record which encoding counted. The official ``mcp`` client against a spawned ``lean-ctx mcp``
(stdio, and streamable HTTP where the server's environment does not matter)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from leanctx.app import LeanCtx
from leanctx.context.tokens import count_tokens
from leanctx.events.codec import payload_dict

from .test_mcp import Transport, _call, _text, anyio_backend, transport  # noqa: F401

pytestmark = pytest.mark.anyio

GEMINI, O200K = "cl100k_base*1.1", "o200k_base"
# text whose o200k, cl100k and cl100k×1.1 counts all differ
PROSE = "".join(f"Der Überblick über Straße {i}: naïve café façade — ünïcödé ✓\n" for i in range(60))


def _events(t: Transport, kind: str) -> list[dict[str, Any]]:
    with LeanCtx(Path(t.env["LEAN_CTX_DB"])) as lc:
        return [payload_dict(e.payload) | {"actor": e.actor} for e in lc.store.read_all(0) if e.kind == kind]


def _prose(t: Transport) -> str:
    (t.project / "prose.txt").write_text(PROSE)
    return "prose.txt"


async def _read_and_run(t: Transport, client: str, env: dict[str, str] | None = None) -> tuple[Any, Any, str]:
    path = _prose(t)
    async with t.connect(client, env=env) as c:
        me = _text(await _call(c, "ctx_agent", {"action": "list"}))
        agent = next(line for line in me.splitlines() if line.endswith("← you"))
        read = await _call(c, "ctx_read", {"paths": [path], "mode": "full"})
        shell = await _call(c, "ctx_shell", {"argv": ["cat", path], "raw": True})
    return read, shell, agent


def test_the_three_counts_differ() -> None:
    counts = {count_tokens(PROSE, e) for e in (O200K, "cl100k_base", GEMINI)}
    assert len(counts) == 3, counts


@pytest.mark.parametrize(("client", "spec"), [("gemini-cli", GEMINI), ("claude-code", O200K), ("cursor", O200K)])
async def test_the_client_name_picks_the_encoding(transport: Transport, client: str, spec: str) -> None:
    read, shell, _ = await _read_and_run(transport, client)
    text = _text(read)
    sent = read.structured_content["files"][0]["sent_tokens"]
    assert sent == count_tokens(text, spec)  # the real count, in this session's encoding
    assert sent != count_tokens(text, GEMINI if spec == O200K else O200K)
    assert read.structured_content["files"][0]["raw_tokens"] == count_tokens(PROSE, spec)
    # the output as a plain run shows it (with or without its final newline)
    assert shell.structured_content["raw_tokens"] in {count_tokens(PROSE, spec), count_tokens(PROSE.rstrip(), spec)}
    assert shell.structured_content["sent_tokens"] == count_tokens(_text(shell), spec)
    # the events say which encoding counted
    reads = [e for e in _events(transport, "file.read") if e["sent_tokens"] == sent and e["path"] == "prose.txt"]
    ran = [e for e in _events(transport, "shell.ran") if e["command"] == "cat prose.txt"]
    assert reads and reads[-1]["encoding"] == spec
    assert ran and ran[-1]["encoding"] == spec and ran[-1]["sent_tokens"] == shell.structured_content["sent_tokens"]


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
async def test_lean_ctx_model_overrides_the_client_name(transport: Transport) -> None:
    read, _, _ = await _read_and_run(transport, "claude-code", env={"LEAN_CTX_MODEL": "gemini-2.5-pro"})
    assert read.structured_content["files"][0]["sent_tokens"] == count_tokens(_text(read), GEMINI)
    read, _, _ = await _read_and_run(transport, "gemini-cli", env={"LEAN_CTX_MODEL": "cl100k_base"})
    assert read.structured_content["files"][0]["sent_tokens"] == count_tokens(_text(read), "cl100k_base")
    assert _events(transport, "file.read")[-1]["encoding"] == "cl100k_base"


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
async def test_an_unusable_lean_ctx_model_spec_is_a_stable_error(transport: Transport) -> None:
    _prose(transport)
    async with transport.connect("claude-code", env={"LEAN_CTX_MODEL": "cl100k_base*9"}) as c:
        r = await c.call_tool("ctx_read", {"paths": ["prose.txt"]})
        assert r.is_error and _text(r).startswith("TOKENIZER_UNKNOWN_ENCODING:"), _text(r)
        assert "LEAN_CTX_MODEL" in _text(r)


# --- the pieces, in process ------------------------------------------------------------------


def test_sessions_and_env_pick_the_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    from leanctx.api import mcp_session as ms
    from leanctx.context.tokens import MODEL_ENV, tokenizer_for

    monkeypatch.delenv(MODEL_ENV, raising=False)
    assert [ms.new_session({"name": n}, None, None).encoding for n in ("gemini-cli", "claude-code", "cursor", "x")] \
        == [GEMINI, O200K, O200K, O200K]
    monkeypatch.setenv(MODEL_ENV, "gemini-2.5-pro")
    assert ms.new_session({"name": "claude-code"}, None, None).encoding == GEMINI
    assert tokenizer_for("claude-code", {MODEL_ENV: "cl100k_base*1.25"}).spec == "cl100k_base*1.25"
    assert tokenizer_for("gemini-cli", {MODEL_ENV: "gpt-4o"}).spec == O200K
    assert tokenizer_for(None, {}).spec == O200K


def test_a_factor_is_applied_in_exact_decimal_arithmetic() -> None:
    from leanctx.context.tokens import base_budget, cumulative_tokens, token_costs

    text = "word" + " word" * 49  # 50 cl100k tokens: 50 × 1.1 is 55, not the 56 float arithmetic gives
    assert count_tokens(text, "cl100k_base") == 50 and count_tokens(text, GEMINI) == 55
    lines = [f"line {i} of some text\n" for i in range(40)]
    cum = cumulative_tokens(lines, GEMINI)
    assert cum[-1] == count_tokens("".join(lines), GEMINI) and cum == sorted(cum)
    assert sum(token_costs(lines, GEMINI)) >= cum[-1]
    assert base_budget(110, GEMINI) == 100 and base_budget(100, O200K) == 100


@pytest.mark.parametrize("spec", ["p50k_base", "cl100k_base*0", "cl100k_base*9", "cl100k_base*x", "o200k_base*"])
def test_unusable_specs_are_refused(spec: str) -> None:
    from leanctx.context.errors import TokenizerUnknownEncoding

    with pytest.raises(TokenizerUnknownEncoding) as info:
        count_tokens("x", spec)
    assert info.value.code == "TOKENIZER_UNKNOWN_ENCODING"
