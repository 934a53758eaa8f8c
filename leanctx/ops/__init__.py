"""Operations: the I/O around commands.

A command handler runs inside the log's write transaction, so it must not run a process or
scan a tree while holding it. An operation does the slow, effectful part first (run a shell
command, read and hash files, walk the project), then dispatches the command that decides and
records it (stubs, budgets, claims, events). The delivery surfaces (CLI, MCP, HTTP) call
operations; operations call the bus.
"""
