"""The security middleware, and how a handler learns which agent is calling.

In order, for every request:

1. ``Host`` must be allowed (loopback names, the bind address, ``--allow-host``):
   ``400 HTTP_HOST_NOT_ALLOWED``. This defeats DNS rebinding against a loopback server.
2. An ``Origin`` header, when present, must be the server's own origin: an ``http``/``https``
   URL whose host is allowed and whose port is the port the request was sent to (the ``Host``
   header's; with no port there, the default of the Origin's scheme, as behind a TLS proxy):
   ``403 HTTP_ORIGIN_NOT_ALLOWED``. Browsers send it on cross-site requests, and a page on
   another port of this machine is another site; no CORS is granted. (One port serves one
   scheme, so the same host and port is the same origin.)
3. Rate limit, before authentication, so requests failing it are limited too (token buckets,
   ``429 RATE_LIMITED`` with ``Retry-After``): a bucket per client (its agent when it sends a
   valid agent token, else its address) at the configured rate, and a bucket per address at
   ``ADDRESS_FACTOR`` times that rate, so agents sharing one address (several agents of one
   machine) get at most that many times the limit, not one limit each. IPv6 addresses count
   by their /64 network (one host holds a whole /64).
4. With a bearer token configured (always when bound beyond loopback), every route but
   ``/health`` and the dashboard's static files needs ``Authorization: Bearer <token>``: ``401 AUTH_TOKEN_REQUIRED`` /
   ``401 AUTH_TOKEN_INVALID``.

Agent identity is separate from the bearer token (which only says "may use this server"): an
agent's actions need *its own* token in ``X-Agent-Token`` (see ``tokens``). ``require_agent``
returns the agent id the token proves (``401 AUTH_AGENT_TOKEN_REQUIRED`` /
``401 AUTH_AGENT_TOKEN_INVALID``), and ``mismatch`` refuses a body that names another agent
(``403 AUTH_AGENT_MISMATCH``): nobody can act as another agent.

5. A request that sends an ``X-Agent-Token`` (after the checks above) has it looked up, in a
   worker thread, in the log's agents projection (``AgentCredential``): a good signature is not
   enough, the token's registration must be the agent's current one and the agent must not have
   left (deregistered over HTTP, the CLI or MCP, or its timeout recorded). Otherwise the token is
   revoked: ``401 AUTH_AGENT_TOKEN_REVOKED`` (details: ``agent``, ``reason``), for every route
   that reads the agent from it. The decision is the log's, so it holds across restarts and
   for every server sharing the log. One exception, the agent's own lifecycle
   (``lifecycle=True``: register, heartbeat, deregister in ``agents``): the current
   registration's token of an agent that left still says who it is there, so that it can rejoin
   (a fresh token), be told by the registry that it left (``AGENT_LEFT``), or leave again (a
   no-op). A token of an earlier registration is refused there too.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import math
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

import anyio
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from ...projections.agents import AgentView, find_agent
from .ratelimit import TokenBucket
from .responses import HttpError, error_response
from .tokens import HEADER, AgentTokens

log = logging.getLogger("leanctx.http")

if TYPE_CHECKING:
    from .config import ServerConfig
    from .state import ServerState

# no credentials needed: liveness, and the dashboard's static files (they carry no data). Exact
# paths, not a prefix: nothing else under /dashboard/ (a route added later, an unknown name)
# is public by accident. The names are dashboard.ASSETS' (a test serves each without a token).
DASHBOARD_FILES = ("index.html", "dashboard.js", "dashboard.css", "favicon.svg")
PUBLIC_PATHS = frozenset({"/health", "/", *(f"/dashboard/{name}" for name in DASHBOARD_FILES)})
ADDRESS_FACTOR = 4  # one address may send this many clients' worth of requests (module doc, 3.)


class SecurityMiddleware:
    def __init__(self, app: ASGIApp, config: ServerConfig, tokens: AgentTokens, limiter: TokenBucket) -> None:
        self.app = app
        self.config = config
        self.tokens = tokens
        self.limiter = limiter
        self.per_address = TokenBucket(limiter.rate * ADDRESS_FACTOR, int(limiter.burst * ADDRESS_FACTOR),
                                       clock=limiter.clock, max_keys=limiter.max_keys)
        self._bearer = config.token.encode() if config.token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        try:
            self._check(scope)
            if scope.get("path", "") not in PUBLIC_PATHS:
                await self._credential(scope)
        except HttpError as err:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await error_response(err)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _check(self, scope: Scope) -> None:
        headers = _headers(scope)
        if not self.config.host_allowed(headers.get("host")):
            raise HttpError(400, "HTTP_HOST_NOT_ALLOWED",
                            f"Host {headers.get('host', '')[:100]!r} is not served here; use the server's address, or"
                            " start it with --allow-host NAME")
        origin = headers.get("origin")
        if origin is not None and not self._same_origin(origin, headers.get("host", "")):
            raise HttpError(403, "HTTP_ORIGIN_NOT_ALLOWED", "cross-origin requests are not accepted")
        path = scope.get("path", "")
        if path in PUBLIC_PATHS:
            return
        if self.limiter.enabled:
            self._rate_limit(scope, headers)
        if self._bearer is not None:
            auth = headers.get("authorization", "")
            scheme, _, value = auth.partition(" ")
            if not auth:
                raise HttpError(401, "AUTH_TOKEN_REQUIRED",
                                "this server needs `Authorization: Bearer <token>` (the token it was started with)",
                                headers={"WWW-Authenticate": 'Bearer realm="lean-ctx"'})
            if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), self._bearer):
                raise HttpError(401, "AUTH_TOKEN_INVALID",
                                "the bearer token is not the one this server was started with",
                                headers={"WWW-Authenticate": 'Bearer realm="lean-ctx", error="invalid_token"'})

    async def _credential(self, scope: Scope) -> None:
        """Look the agent token up in the log (module doc, 5.); handlers read the answer."""
        raw = _headers(scope).get(HEADER.lower())
        st = getattr(getattr(scope.get("app"), "state", None), "srv", None)
        if raw is not None and st is not None:
            scope[CREDENTIAL] = await anyio.to_thread.run_sync(credential_of, st, raw)

    def _same_origin(self, origin: str, host: str) -> bool:
        """``origin`` is this server's own (module doc, 2.); ``host`` is the allowed Host header."""
        try:
            o, h = urlsplit(origin), urlsplit("//" + host)
            o_port, h_port = o.port, h.port
        except ValueError:  # a port that is not a number, or out of range
            return False
        scheme = o.scheme.lower()
        if (scheme not in ("http", "https") or not o.hostname or o.username is not None or o.password is not None
                or o.path or o.query or o.fragment or not self.config.host_allowed(o.netloc)):
            return False
        default = 443 if scheme == "https" else 80
        return (o_port or default) == (h_port or default)

    def _rate_limit(self, scope: Scope, headers: dict[str, str]) -> None:
        """The two buckets of the module doc (3.), before the bearer check."""
        client = scope.get("client")
        address = _address_key(client[0] if client else "?")
        claim = self.tokens.verify(headers.get(HEADER.lower()))  # an HMAC: no database
        agent = claim.agent_id if claim else None
        for limiter, key, per in ((self.per_address, f"net:{address}", "address"),
                                  (self.limiter, f"agent:{agent}" if agent else f"addr:{address}", "client")):
            wait = limiter.take(key)
            if wait > 0:
                raise HttpError(429, "RATE_LIMITED",
                                f"too many requests; retry in {wait:.2f}s (limit {limiter.rate:g}/s per {per})",
                                headers={"Retry-After": str(max(1, math.ceil(wait)))})


def _address_key(address: str) -> str:
    """A client address as its rate-limit key: IPv4 as is, IPv6 by its /64 network."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        mapped = ip.ipv4_mapped
        if mapped is not None:
            return str(mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in scope.get("headers", []):
        name = k.decode("latin-1").lower()
        if name not in out:
            out[name] = v.decode("latin-1")
    return out


# --- agent identity -----------------------------------------------------------------------

CREDENTIAL = "leanctx.agent_credential"  # the scope key of the request's AgentCredential
INVALID, CURRENT, LEFT, EARLIER = "invalid", "current", "left", "earlier"
REVOKED = "AUTH_AGENT_TOKEN_REVOKED"


class AgentCredential(NamedTuple):
    """An ``X-Agent-Token`` as the log sees it: ``state`` is ``invalid`` (not signed by this
    server), ``current`` (the agent's current registration, not left), ``left`` (that
    registration, but the agent left) or ``earlier`` (another registration than the agent's
    current one, or an agent this log does not hold)."""

    agent_id: str | None
    state: str
    agent: AgentView | None = None  # the agent as the projection holds it
    error: str | None = None  # the lookup failed: why


def credential_of(st: ServerState, raw: str) -> AgentCredential:
    """(Worker thread.) The token ``raw`` checked against the agents projection."""
    claim = st.tokens.verify(raw)
    if claim is None:
        return AgentCredential(None, INVALID)
    try:
        found = find_agent(st.reader("agents"), claim.agent_id, now=st.now())
    except Exception as exc:  # noqa: BLE001 - answered as a 503 by the handler that needs the agent
        log.warning("could not look the agent token of %s up: %s", claim.agent_id, exc)
        return AgentCredential(claim.agent_id, INVALID, error=f"{type(exc).__name__}: {exc}")
    if found is None or found.agent_id != claim.agent_id or found.registered_at != claim.registered_at:
        return AgentCredential(claim.agent_id, EARLIER, found if found and found.agent_id == claim.agent_id else None)
    return AgentCredential(claim.agent_id, LEFT if found.left_at is not None else CURRENT, found)


def _revoked(cred: AgentCredential) -> HttpError:
    agent = cred.agent
    if cred.state == EARLIER:
        since = f" (it registered again at {agent.registered_at})" if agent is not None else ""
        return HttpError(401, REVOKED,
                         f"this {HEADER} is from an earlier registration of agent {cred.agent_id!r}{since}, or from"
                         " another log: use the token its last registration answered, or register without agent_id"
                         " to get a new identity", agent=cred.agent_id, reason="registered_again")
    assert agent is not None
    how = "timed out (its heartbeats stopped)" if agent.timed_out else "left"
    return HttpError(401, REVOKED,
                     f"agent {agent.name} ({agent.agent_id}) {how} at {agent.left_at} ({agent.left_reason}), so its"
                     f" token no longer acts; to come back, register again with it: POST /v1/agents/register with"
                     f" agent_id {agent.agent_id!r} and this {HEADER}, which answers a fresh token",
                     agent=agent.agent_id, reason=agent.left_reason)


def agent_of(request: Request, tokens: AgentTokens, *, lifecycle: bool = False) -> str | None:
    """The agent a present, valid, not revoked ``X-Agent-Token`` proves; None when the header is
    absent. A token this server did not sign is ``401 AUTH_AGENT_TOKEN_INVALID``; one whose
    agent left or registered again since is ``401 AUTH_AGENT_TOKEN_REVOKED`` (module doc, 5.;
    ``lifecycle``: the agent's own register / heartbeat / deregister, where a left agent's
    current token still counts)."""
    raw = request.headers.get(HEADER)
    if raw is None:
        return None
    cred = request.scope.get(CREDENTIAL)
    if not isinstance(cred, AgentCredential):  # not looked up by the middleware (a mounted app)
        cred = credential_of(request.app.state.srv, raw)
    if cred.error is not None:
        raise HttpError(503, "AUTH_AGENT_TOKEN_UNCHECKED",
                        f"the {HEADER} could not be checked against the log ({cred.error[:200]}); retry")
    if cred.state == INVALID or cred.agent_id is None:
        raise HttpError(401, "AUTH_AGENT_TOKEN_INVALID",
                        f"the {HEADER} header is not a token this server issued; register again to get one")
    if cred.state == CURRENT or (cred.state == LEFT and lifecycle):
        return cred.agent_id
    raise _revoked(cred)


def require_agent(request: Request, tokens: AgentTokens, *, lifecycle: bool = False) -> str:
    agent = agent_of(request, tokens, lifecycle=lifecycle)
    if agent is None:
        raise HttpError(401, "AUTH_AGENT_TOKEN_REQUIRED",
                        f"this action is taken by an agent: send its token in {HEADER} (from POST /v1/agents/register)")
    return agent


def mismatch(agent: str, named: Any) -> HttpError:
    return HttpError(403, "AUTH_AGENT_MISMATCH",
                     f"the {HEADER} belongs to {agent!r}, but the request names {str(named)[:128]!r}; an agent acts"
                     " only as itself", agent=agent)
