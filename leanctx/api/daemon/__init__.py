"""The lean-ctx daemon: a background process that keeps the CLI warm.

It serves a Unix socket in the data directory (``<data dir>/daemon/lean-ctx.sock``, its pid
file and lock beside it; the directory mode 0700, the files 0600) and runs forwarded CLI calls
in-process, one at a time, with the imports, the click command tree, the tokenizer (once a call
needed it) and one ``LeanCtx`` per database kept between calls.

- ``leanctx.api.thin``: the client side (standard library only) and the wire format.
- ``protocol``: the server side of the wire format.
- ``runner``: runs one call as the caller (argv, cwd, environment, identity, umask, stdin).
- ``server``: the socket, the worker, status and shutdown (``python -m leanctx.api.daemon.server``).
- ``control``: start, stop and status from the CLI (stale files, readiness, signals).

Nothing here is imported by a CLI call that does not use the daemon.
"""
