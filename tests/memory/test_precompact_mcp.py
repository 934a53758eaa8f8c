"""The PreCompact hook ends stubs for the MCP conversations of the client that runs it: the
client spawned the stdio MCP server (registered with the client's pid) and runs the hook as its
own descendant, here through a shell as Claude Code does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from leanctx.compaction_hook import ancestors

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))

pytestmark = pytest.mark.timeout(120)


def test_ancestors_walk_up_from_this_process() -> None:
    up = ancestors()
    assert up == [] or up[0] == os.getppid()  # empty when this process was handed to init
    code = "import os; from leanctx.compaction_hook import ancestors; print(os.getppid(), *ancestors())"
    child = subprocess.run(["sh", "-c", f"{sys.executable} -c '{code}'"], capture_output=True, text=True, check=True)
    shell, *walk = map(int, child.stdout.split())
    assert shell != os.getpid()  # the shell sits between: the walk must go past it
    assert walk[:2] == [shell, os.getpid()]
    assert ancestors(999_999_999) == []


def test_precompact_hook_ends_the_stubs_of_the_clients_mcp_conversations(tmp_path: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp_types import Implementation

    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "b.py").write_text("def b():\n    return 7\n")
    env = {"LEAN_CTX_HOME": str(tmp_path / "home"), "LEAN_CTX_NO_DAEMON": "1", "PATH": os.environ["PATH"]}

    async def main() -> list[str]:
        srv = StdioServerParameters(command=LEAN_CTX, args=["mcp"], env=env, cwd=str(project))
        async with Client(srv, client_info=Implementation(name="claude-code", version="1")) as c:
            texts = []
            for _ in range(2):
                r = await c.call_tool("ctx_read", {"paths": ["b.py"], "mode": "full"})
                texts.append(r.content[0].text)
            hook = subprocess.run(["sh", "-c", f"{LEAN_CTX} hooks precompact"], capture_output=True, text=True,
                                  input=json.dumps({"session_id": "claude-sess-1", "hook_event_name": "PreCompact"}),
                                  env=env, cwd=project, timeout=60)
            assert hook.returncode == 0, hook.stderr
            for _ in range(2):
                r = await c.call_tool("ctx_read", {"paths": ["b.py"], "mode": "full"})
                texts.append(r.content[0].text)
            return texts

    texts = anyio.run(main)
    assert "return 7" in texts[0] and "unchanged" in texts[1]
    assert "return 7" in texts[2] and "unchanged" not in texts[2]  # after the hook: content
    assert "unchanged" in texts[3]
