"""Who is calling: the agent identity and the conversation (session) of a CLI process.

- agent: ``$LEAN_CTX_AGENT_ID`` when set; otherwise ``local-<pid of the parent process>`` — the
  shell or editor that runs ``lean-ctx`` — so two editor windows on one machine are two
  distinct agents and see each other.
- session: ``$LEAN_CTX_SESSION_ID`` when set, else None (each process is a conversation of
  its own).
"""

from __future__ import annotations

import os


def agent_identity() -> str:
    return os.environ.get("LEAN_CTX_AGENT_ID") or f"local-{os.getppid()}"


def session_identity() -> str | None:
    return os.environ.get("LEAN_CTX_SESSION_ID") or None
