"""The dashboard: a page at ``/`` and one JSON snapshot of everything it shows.

The page (``static/``: ``index.html``, ``dashboard.js``, ``dashboard.css``) is served by this
module and nothing else: no CDN, no font or script fetched from anywhere, and a strict
Content-Security-Policy (``'self'`` only) makes sure of it. The static files carry no data, so
they are public like ``/health``; every figure comes from the API behind the server's bearer
token when it has one (the page takes it from the URL fragment ``#token=...``, which browsers
never send to a server, and keeps it in ``sessionStorage``).

Data: ``GET /v1/dashboard/state`` is one consistent snapshot of the projections (agents with
their budgets, tasks, path locks, the scent field, channels and recent messages, savings by
tool / mode / command family / agent, a time series, bounces, the latest Context Proof with
its recorded verification). The page keeps it live with the log's SSE stream
(``GET /v1/events``): any new event schedules a fresh snapshot, and the message panel shows the
stream itself, filtered by ``TopicFilter`` fields. The savings panel, the one part whose cost
grows with the log, is recomputed only when a savings row was added. Scent intensities decay
in the browser between snapshots with the same half-life formula as ``projections.scent``.
Events search, lineage and proof actions use their own routes (``/v1/events/search``,
``/v1/events/lineage/{position}``, ``POST /v1/proof``, ``POST /v1/proof/verify``).
"""

from __future__ import annotations

import hashlib
import weakref
from importlib import resources
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from ... import proof_store
from ...clock import iso
from ...errors import NotFound
from ...projections import savings as sv
from ...projections.agents import AgentView, list_agents, status_counts
from ...projections.budgets import check_budget
from ...projections.channels import (
    ChannelInfo,
    MessageView,
    list_channels,
    recent_messages,
)
from ...projections.locks import LockView, list_locks
from ...projections.savings_series import SeriesPoint, content_key, savings_series
from ...projections.scent import FIELD_FLOOR, ScentView, sync
from ...projections.tasks import STATUSES, TaskView, list_tasks
from .responses import JSON
from .routes import PUBLIC, SERVER, Param, RouteSpec
from .state import ServerState, srv

STATIC = "static"
ASSETS = {  # served file -> content type; nothing else under static/ is reachable
    "index.html": "text/html; charset=utf-8",
    "dashboard.js": "text/javascript; charset=utf-8",
    "dashboard.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self';"
       " font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
RECENT_MESSAGES = 50


# --- static files ------------------------------------------------------------------------------

_LOADED: dict[str, tuple[bytes, str]] = {}


def _asset(name: str) -> tuple[bytes, str] | None:
    """(bytes, etag) of a packaged static file (read once), or None when it is not packaged."""
    if name not in _LOADED:
        try:
            data = resources.files(__package__).joinpath(STATIC, name).read_bytes()
        except (FileNotFoundError, OSError):
            return None
        _LOADED[name] = (data, '"' + hashlib.sha256(data).hexdigest()[:20] + '"')
    return _LOADED[name]


def _serve(request: Request, name: str) -> Response:
    found = _asset(name) if name in ASSETS else None
    if found is None:
        raise NotFound("DASHBOARD_ASSET_NOT_FOUND", f"no dashboard file {name[:80]!r}")
    data, etag = found
    headers = {"ETag": etag, "Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff",
               "Content-Security-Policy": CSP, "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"}
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    return Response(data, media_type=ASSETS[name], headers=headers)


async def page(request: Request) -> Response:
    return _serve(request, "index.html")


async def asset(request: Request) -> Response:
    return _serve(request, request.path_params.get("name", ""))


# --- the snapshot ------------------------------------------------------------------------------

class Budget(msgspec.Struct, frozen=True):
    limit: int  # 0: unlimited
    used: int
    ratio: float  # used / limit (0 when unlimited)
    level: str  # ok | warning (>= 80 %) | exceeded (>= 100 %)


class DashAgent(msgspec.Struct, frozen=True):
    agent: AgentView
    budget: Budget


class SavingsPanel(msgspec.Struct, frozen=True):
    totals: sv.SavingsRow
    by_tool: list[sv.SavingsRow]
    by_mode: list[sv.SavingsRow]
    by_family: list[sv.SavingsRow]
    by_agent: list[sv.SavingsRow]
    bucket_seconds: int
    series: list[SeriesPoint]  # per bucket, oldest first; empty buckets left out
    daily: list[sv.DayRow]
    bounced_files: list[sv.BouncedFile]
    encodings: list[str]


class HeadView(msgspec.Struct, frozen=True):
    position: int
    hash: str


class DashboardState(msgspec.Struct, frozen=True, kw_only=True):
    version: int = 1
    now: float  # the server's clock (seconds since the epoch): decay and countdowns start here
    generated_at: str
    project_root: str
    head: HeadView
    agents: list[DashAgent]  # left agents are not listed
    agent_counts: dict[str, int]  # active, idle, stale, total
    task_columns: list[str]  # the board's columns, in order
    tasks: list[TaskView]
    locks: list[LockView]  # expired ones included (marked)
    scent: list[ScentView]  # the live field, strongest first
    scent_floor: float  # marks below this intensity are not shown
    channels: list[ChannelInfo]
    messages: list[MessageView]  # the last ones of every channel, directed ones included
    savings: SavingsPanel
    proof: proof_store.ProofInfo | None  # the latest Context Proof (None: none written yet)


def savings_panel(conn: Any) -> SavingsPanel:
    """The savings part of the snapshot: a pure function of the savings tables."""
    size, series = savings_series(conn)
    totals = sv.report(conn, by=("tool",))
    return SavingsPanel(
        totals=totals.totals,
        by_tool=totals.rows,
        by_mode=sv.report(conn, by=("mode",)).rows,
        by_family=sv.report(conn, by=("family",)).rows,
        by_agent=sv.report(conn, by=("agent",)).rows,
        bucket_seconds=size,
        series=series,
        daily=sv.daily(conn, 14),
        bounced_files=sv.bounced_files(conn, limit=20),
        encodings=totals.encodings,
    )


# Most events (heartbeats, messages, tasks, tool calls) leave the savings tables as they were,
# while the reports read all of them: the panel is kept per server and recomputed only when
# their content key (``savings_series.content_key``) changes.
_PANELS: weakref.WeakKeyDictionary[ServerState, tuple[tuple[int, str], SavingsPanel]] = weakref.WeakKeyDictionary()


def cached_savings_panel(st: ServerState, conn: Any) -> SavingsPanel:
    key = content_key(conn)
    hit = _PANELS.get(st)
    if hit is not None and hit[0] == key:
        return hit[1]
    panel = savings_panel(conn)
    _PANELS[st] = (key, panel)
    return panel


def snapshot(st: ServerState) -> DashboardState:
    """Everything the dashboard shows, read from one connection after the projections caught up."""
    now = st.now()
    conn = st.reader("agents", "budgets", "tasks", "path_locks", "scent", "channels", "savings")
    agents = list_agents(conn, now=now)
    dash_agents = []
    for a in agents:
        b = check_budget(conn, a.agent_id)
        dash_agents.append(DashAgent(a, Budget(b.limit, b.used, b.ratio, b.level)))
    savings = cached_savings_panel(st, conn)
    head = st.lc.store.head()
    return DashboardState(
        proof=_latest_proof(st),
        now=now,
        generated_at=iso(now),
        project_root=st.project_root,
        head=HeadView(head.position, head.hash),
        agents=dash_agents,
        agent_counts=status_counts(agents),
        task_columns=list(STATUSES),
        tasks=list_tasks(conn, now=now),
        locks=list_locks(conn, now=now),
        scent=sync(conn, now=now),
        scent_floor=FIELD_FLOOR,
        channels=list_channels(conn, everything=True),
        messages=recent_messages(conn, RECENT_MESSAGES),
        savings=savings,
    )


def _latest_proof(st: ServerState) -> proof_store.ProofInfo | None:
    """What ``GET /v1/proof/latest`` answers (re-listed if the latest is removed meanwhile), or
    None when there is no proof."""
    try:
        return proof_store.on_latest(proof_store.proofs_dir(st.lc), proof_store.describe)
    except NotFound:
        return None


async def state(request: Request) -> Response:
    st = srv(request)
    return JSON(await st.run(snapshot, st), headers={"Cache-Control": "no-store"})


TAG = "dashboard"
ROUTES = [
    RouteSpec("GET", "/", page, "The dashboard page (static; its data comes from the routes below).", TAG,
              auth=PUBLIC, content_type="text/html"),
    RouteSpec("GET", "/dashboard/{name}", asset, "The dashboard's script, style sheet and icon.", TAG, auth=PUBLIC,
              content_type="text/plain", params=(Param("name", where="path", required=True),)),
    RouteSpec("GET", "/v1/dashboard/state", state,
              "One snapshot of agents (with budgets), tasks, locks, scent, channels, recent messages and savings.",
              TAG, auth=SERVER, response=DashboardState),
]
