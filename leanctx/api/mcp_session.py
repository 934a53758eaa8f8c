"""MCP sessions: who a connected client is, what it supports, and its lazy tool list.

**Identity.** On ``initialize`` the session registers its agent: the client's name maps to an
``agent_type`` (``claude-code`` → ``claude``, ``cursor`` → ``cursor``, ``codex`` → ``codex``,
``gemini-cli`` → ``gemini``; any other name, sanitized, is its own type) with role ``dev``.
``$LEAN_CTX_AGENT_ID`` fixes the agent id (re-registering the same id rejoins); otherwise a
fresh id is generated per session. The lean-ctx session id is the transport's session id
(streamable HTTP: ``Mcp-Session-Id``), else one generated per connection (stdio). Every tool
call runs as that agent in that session. The connection closing deregisters the agent; while it
is open a background loop heartbeats it (``HEARTBEAT_INTERVAL``).

**Token counts.** The client's name also picks the tokenizer of every count the session's
tool calls record and answer (``McpSession.encoding``, an encoding spec:
``leanctx.context.tokens.tokenizer_for``): ``gemini-cli`` → ``cl100k_base*1.1`` (cl100k with
Gemini's 1.1 correction), ``claude-code``, ``cursor``, ``codex`` and unknown names →
``o200k_base``. ``$LEAN_CTX_MODEL`` (a model name such as ``gemini-2.5-pro``, or a spec) overrides
it for every session of the server; a spec it cannot use fails each counting call with
``TOKENIZER_UNKNOWN_ENCODING``.

**What the client supports.** MCP has no client capability saying "I handle
``notifications/tools/list_changed``", nor one for resources or prompts (client capabilities
are roots, sampling, elicitation, experimental and extensions). So lean-ctx decides per
session, first match wins:

1. ``$LEAN_CTX_MCP_FEATURES``: ``all``, ``none`` or a comma list of ``list_changed``,
   ``resources``, ``prompts`` (for every session of this server);
2. an explicit declaration by the client: ``capabilities.experimental["lean-ctx"]`` or the
   extension ``dev.lean-ctx/client`` with settings ``{"listChanged": bool, "resources": bool,
   "prompts": bool}`` (missing keys: false);
3. a table of known clients (``KNOWN_FEATURES``, by agent type) — a policy, not a protocol
   fact: adjust it as clients evolve;
4. otherwise nothing: every tool is listed, resources and prompts are not advertised.

**Lazy tools.** A session with ``list_changed`` lists ``core`` and ``session`` at start and
loads or unloads other categories through ``ctx_load_tools``; a session without it lists
every category (it could never learn of a change).
"""

from __future__ import annotations

import logging
import os
import re
import socket
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import LeanCtxError
from .registry import CATEGORIES, DEFAULT_CATEGORIES, Caller

log = logging.getLogger("leanctx.mcp")

FEATURES = ("list_changed", "resources", "prompts")
FEATURES_ENV = "LEAN_CTX_MCP_FEATURES"
AGENT_ENV = "LEAN_CTX_AGENT_ID"
DECLARATION_KEY = "lean-ctx"  # capabilities.experimental[...]
DECLARATION_EXTENSION = "dev.lean-ctx/client"  # capabilities.extensions[...]

AGENT_TYPES: dict[str, str] = {
    "claude-code": "claude", "claude": "claude", "claude-ai": "claude", "claude-desktop": "claude",
    "cursor": "cursor", "cursor-vscode": "cursor",
    "codex": "codex", "codex-mcp-client": "codex", "openai-codex": "codex",
    "gemini-cli": "gemini", "gemini": "gemini",
}
KNOWN_FEATURES: dict[str, frozenset[str]] = {
    "claude": frozenset({"list_changed", "resources", "prompts"}),
    "cursor": frozenset({"resources", "prompts"}),
    "gemini": frozenset({"prompts"}),
    "codex": frozenset(),
}
_TYPE_OK = re.compile(r"[^A-Za-z0-9._-]+")


def agent_type_for(client_name: str | None) -> str:
    """The agent type of an MCP client name (``claude-code`` → ``claude``)."""
    name = (client_name or "").strip().lower()
    if name in AGENT_TYPES:
        return AGENT_TYPES[name]
    for prefix, kind in AGENT_TYPES.items():
        if name.startswith((prefix + "-", prefix + " ")):
            return kind
    cleaned = _TYPE_OK.sub("-", name).strip("-._")[:64]
    return cleaned if cleaned and cleaned[0].isalnum() else "mcp"


def _flags(settings: Any) -> frozenset[str] | None:
    if not isinstance(settings, Mapping):
        return None
    keys = {"listChanged": "list_changed", "list_changed": "list_changed", "resources": "resources",
            "prompts": "prompts"}
    return frozenset(v for k, v in keys.items() if settings.get(k) is True)


def client_features(agent_type: str, capabilities: Mapping[str, Any] | None,
                    environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """What this client handles, by the rules of the module doc."""
    env = (os.environ if environ is None else environ).get(FEATURES_ENV, "").strip().lower()
    if env:
        if env == "all":
            return frozenset(FEATURES)
        if env == "none":
            return frozenset()
        return frozenset(f.strip() for f in env.split(",") if f.strip() in FEATURES)
    caps = capabilities or {}
    for declared in ((caps.get("experimental") or {}).get(DECLARATION_KEY),
                     (caps.get("extensions") or {}).get(DECLARATION_EXTENSION)):
        flags = _flags(declared)
        if flags is not None:
            return flags
    return KNOWN_FEATURES.get(agent_type, frozenset())


@dataclass
class McpSession:
    """One MCP session: its agent, its lean-ctx session id, its lazy tool categories, its call
    counter. Implements ``registry.ToolSet``."""

    agent_type: str
    client_name: str
    features: frozenset[str]
    session_id: str | None  # None: no conversation (never answered with a stub)
    agent_id: str | None = None
    agent_name: str | None = None
    registered: bool = False
    calls: int = 0
    resumed_at: int = 0  # the call that last carried the resume block (compaction detection)
    _loaded: set[str] = field(default_factory=set)
    _changed: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self._loaded = set(DEFAULT_CATEGORIES) if self.lazy else set(CATEGORIES)

    @property
    def lazy(self) -> bool:
        return "list_changed" in self.features

    @property
    def encoding(self) -> str:
        """The encoding spec this session's token counts use (see the module doc)."""
        from ..context.tokens import tokenizer_for

        return tokenizer_for(self.client_name).spec

    def tick(self) -> int:
        """Count a tool call; returns this call's number in the session (1, 2, ...)."""
        with self._lock:
            self.calls += 1
            return self.calls

    def claim_resume(self, call: int, expected: int | None, threshold: int) -> bool:
        """Whether call number ``call``, whose client expected ``expected``, gets the resume
        block (``leanctx.resume.compaction_gap``: a lag of ``threshold`` or more, once per gap)."""
        from ..resume import compaction_gap

        with self._lock:
            if not compaction_gap(call, expected, last_injected=self.resumed_at, threshold=threshold):
                return False
            self.resumed_at = call
            return True

    def caller(self, project: str) -> Caller:
        return Caller(self.agent_id, self.session_id, project, toolset=self)

    # --- registry.ToolSet ----------------------------------------------------------------
    def loaded(self) -> list[str]:
        with self._lock:
            return [c for c in CATEGORIES if c in self._loaded]

    def load(self, categories: Sequence[str]) -> list[str]:
        with self._lock:
            new = [c for c in dict.fromkeys(categories) if c not in self._loaded]
            self._loaded.update(new)
            self._changed = self._changed or bool(new)
            return new

    def unload(self, categories: Sequence[str]) -> list[str]:
        if not self.lazy:  # it could not learn of the change: everything stays listed
            return []
        with self._lock:
            gone = [c for c in dict.fromkeys(categories) if c in self._loaded]
            self._loaded.difference_update(gone)
            self._changed = self._changed or bool(gone)
            return gone

    def take_changed(self) -> bool:
        """Whether the tool list changed since the last call (and reset the flag)."""
        with self._lock:
            changed, self._changed = self._changed, False
            return changed

    def rotate(self) -> str | None:
        """Start a new conversation (after the client reset its context): a new session id,
        so nothing delivered before is answered with a stub."""
        with self._lock:
            if self.session_id is not None:
                self.session_id = f"mcp-{uuid.uuid4().hex[:16]}"
            return self.session_id


def new_session(client_info: Mapping[str, Any] | None, capabilities: Mapping[str, Any] | None,
                transport_session: str | None) -> McpSession:
    name = str((client_info or {}).get("name") or "")
    kind = agent_type_for(name)
    sid = transport_session or f"mcp-{uuid.uuid4().hex[:16]}"
    return McpSession(agent_type=kind, client_name=name, features=client_features(kind, capabilities), session_id=sid)


# --- the log: register, heartbeat, deregister (blocking: run them in a worker thread) --------------


def register(lc: Any, sess: McpSession, project: str, *, pid: int | None = None) -> None:
    from ..commands.agents import RegisterAgent

    wanted = os.environ.get(AGENT_ENV) or sess.agent_id
    cmd = RegisterAgent(agent_type=sess.agent_type, role="dev", project_root=project, agent_id=wanted, pid=pid,
                        host=socket.gethostname(), session_id=sess.session_id)
    v = lc.bus.dispatch(cmd, actor=wanted, session_id=sess.session_id, project=project).value
    sess.agent_id, sess.agent_name, sess.registered = v.agent_id, v.name, True


def ensure_registered(lc: Any, sess: McpSession, project: str) -> None:
    if not sess.registered:
        register(lc, sess, project)


def heartbeat(lc: Any, sess: McpSession, project: str) -> None:
    """Heartbeat the session's agent; one that timed out meanwhile registers again (same id)."""
    from ..commands.agents import Heartbeat

    if not sess.registered or not sess.agent_id:
        return
    try:
        lc.bus.dispatch(Heartbeat(agent=sess.agent_id), actor=sess.agent_id, session_id=sess.session_id,
                        project=project)
    except LeanCtxError as exc:
        if exc.code in ("AGENT_LEFT", "AGENT_NOT_FOUND"):
            register(lc, sess, project)
        else:
            raise


def deregister(lc: Any, sess: McpSession, project: str) -> None:
    from ..commands.agents import Deregister

    if not sess.registered or not sess.agent_id:
        return
    lc.bus.dispatch(Deregister(agent=sess.agent_id, reason="mcp session closed"), actor=sess.agent_id,
                    session_id=sess.session_id, project=project)
    sess.registered = False
