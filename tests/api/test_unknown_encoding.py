"""An encoding spec lean-ctx cannot use is ``TOKENIZER_UNKNOWN_ENCODING`` on every surface: HTTP
422 (was a 500: the tokenizer's ``ContextError`` is no ``LeanCtxError``, so the HTTP app's
catch-all answered it), an MCP tool error, CLI exit 2.

``tests/api/test_http_fuzz.py::test_coordination_bodies_never_500`` found it only now and then:
the failing body needs route ``/v1/chat/read`` with a string ``encoding`` *and* a channel that
exists and valid bounds, a rare draw among the 250 examples, and Hypothesis's draws (derandomized)
still depend on what ran before in the same process (run alone, the test draws
``{"encoding": "0"}``; after ``test_post_bodies_never_500``, it draws no such body). Here the
bodies are fixed. A real uvicorn, the real CLI, the official MCP client on ``lean-ctx mcp``."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from leanctx.api.http.server import BackgroundServer
from leanctx.context.errors import ContextError
from leanctx.context.tokens import count_tokens, parse_encoding
from leanctx.errors import InvalidInput

from .test_http_common import Api, module_server
from .test_mcp import Transport, _text, anyio_backend, transport  # noqa: F401

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
BAD = ["0", "p50k_base", "cl100k_base*9", "cl100k_base*0", "o200k_base*", "o200k_base*x", "🙂", "x" * 5000,
       "a\x00b", " *1"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    yield from module_server(tmp_path_factory, allow_exec=False, rate=0)


@pytest.fixture(scope="module")
def api(server: BackgroundServer) -> Iterator[Api]:
    api = Api(server)
    yield api
    api.close()


@pytest.mark.parametrize("spec", BAD)
def test_the_error_is_a_context_error_and_invalid_input(spec: str) -> None:
    for call in (lambda: parse_encoding(spec), lambda: count_tokens("", spec), lambda: count_tokens("x", spec)):
        with pytest.raises(ContextError) as info:
            call()
        err = info.value
        assert isinstance(err, InvalidInput) and err.code == "TOKENIZER_UNKNOWN_ENCODING"
        assert err.http_status == 422 and err.exit_code == 2
        assert err.to_dict()["code"] == "TOKENIZER_UNKNOWN_ENCODING" and len(err.message) <= 4000
        assert str(err).startswith("TOKENIZER_UNKNOWN_ENCODING: ") and str(err).count("TOKENIZER_UNKNOWN") == 1


@pytest.mark.parametrize("spec", BAD)
def test_http_chat_read_with_an_unknown_encoding_is_422(api: Api, spec: str) -> None:
    agent = api.register("enc", "dev")
    for body in ({"encoding": spec}, {"channel": "general", "encoding": spec, "limit": 5, "max_tokens": 100}):
        r = api.post("/v1/chat/read", agent, **body)
        assert r.status_code == 422, (body, r.status_code, r.text[:500])
        err = r.json()["error"]
        assert err["code"] == "TOKENIZER_UNKNOWN_ENCODING" and "cl100k_base*1.1" in err["message"], err


def test_http_chat_read_with_a_good_encoding_still_reads(api: Api) -> None:
    agent = api.register("enc", "dev")
    api.ok("/v1/chat/post", agent, title="hello", body="body text")
    for spec in ("cl100k_base*1.1", "o200k_base", ""):
        assert api.post("/v1/chat/read", agent, encoding=spec).status_code == 200


def test_cli_refuses_an_unusable_model_spec_with_the_code(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    env = {**os.environ, "LEAN_CTX_HOME": str(tmp_path / "home"), "LEAN_CTX_DB": str(tmp_path / "e.db"),
           "LEAN_CTX_MODEL": "cl100k_base*9"}
    r = subprocess.run([LEAN_CTX, "read", "a.txt"], check=False, cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "TOKENIZER_UNKNOWN_ENCODING" in r.stderr, (r.returncode, r.stdout, r.stderr)


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
async def test_mcp_chat_read_with_an_unusable_model_spec_is_a_tool_error(transport: Transport) -> None:  # noqa: F811
    async with transport.connect("claude-code", env={"LEAN_CTX_MODEL": "cl100k_base*9"}) as c:
        r: Any = await c.call_tool("ctx_agent", {"action": "read"})
        assert r.is_error and "TOKENIZER_UNKNOWN_ENCODING" in _text(r), _text(r)
