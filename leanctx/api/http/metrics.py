"""``GET /metrics``: Prometheus text format (version 0.0.4).

- ``leanctx_events_total``: events in the log (its head position; positions are gap-free).
- ``leanctx_appends_per_second``: events appended per second over the last minute, as the
  server's SSE hub saw them (appends from every process count).
- ``leanctx_tool_calls_total{tool, outcome}``: command dispatches, from ``tool.called``
  records (counted incrementally: each scrape reads only the records since the last one).
- ``leanctx_tokens_saved_total{tool}``, ``leanctx_tokens_raw_total{tool}``,
  ``leanctx_tokens_sent_total{tool}``: the savings report (``lean-ctx gain``) by tool.
- ``leanctx_agents{status}`` and ``leanctx_agents_active``: the registry now.
- ``leanctx_sse_clients``: open SSE streams.
"""

from __future__ import annotations

import threading
from collections import Counter

from starlette.requests import Request
from starlette.responses import Response

from ...events import SqliteEventStore, TopicFilter
from ...projections.agents import list_agents
from ...projections.savings import report
from .routes import RouteSpec
from .state import ServerState, srv

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_TOOL = TopicFilter(kinds=("tool.called",))


class ToolStats:
    """Calls per (command, outcome), folded from ``tool.called`` records incrementally."""

    def __init__(self, store: SqliteEventStore, batch: int = 5000) -> None:
        self.store = store
        self.batch = batch
        self.position = 0
        self.calls: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    def catch_up(self) -> dict[tuple[str, str], int]:
        with self._lock:
            while True:
                events = self.store.read_all(self.position, _TOOL, self.batch)
                for e in events:
                    data = e.data()
                    self.calls[(getattr(data, "command", "?"), getattr(data, "outcome", "?"))] += 1
                if events:
                    self.position = events[-1].position
                if len(events) < self.batch:
                    return dict(self.calls)


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render(st: ServerState) -> str:
    """(Worker thread.) The metrics text."""
    now = st.now()
    head = st.lc.store.head().position
    calls = st.metrics.catch_up()
    conn = st.reader("savings", "agents")
    savings = report(conn, by=("tool",))
    agents = list_agents(conn, now=now)
    by_status = Counter(a.status for a in agents)
    out: list[str] = []

    def metric(name: str, kind: str, help_: str, samples: list[tuple[str, float]]) -> None:
        out.append(f"# HELP {name} {help_}")
        out.append(f"# TYPE {name} {kind}")
        for labels, value in samples:
            v = int(value) if float(value).is_integer() else round(float(value), 6)
            out.append(f"{name}{labels} {v}")

    metric("leanctx_events_total", "counter", "Events in the log.", [("", head)])
    metric("leanctx_appends_per_second", "gauge", "Events appended per second over the last minute.",
           [("", st.hub.appends_per_second())])
    metric("leanctx_tool_calls_total", "counter", "Command dispatches by tool and outcome (tool.called).",
           [(f'{{tool="{_label(t)}",outcome="{_label(o)}"}}', n) for (t, o), n in sorted(calls.items())])
    for name, field, help_ in (
        ("leanctx_tokens_saved_total", "saved_tokens", "Tokens saved by tool (raw minus sent)."),
        ("leanctx_tokens_raw_total", "raw_tokens", "Tokens the plain tools would have sent, by tool."),
        ("leanctx_tokens_sent_total", "sent_tokens", "Tokens lean-ctx sent, by tool."),
    ):
        metric(name, "counter", help_,
               [(f'{{tool="{_label(r.group.get("tool", ""))}"}}', getattr(r, field)) for r in savings.rows])
    metric("leanctx_agents", "gauge", "Registered agents by status.",
           [(f'{{status="{s}"}}', by_status.get(s, 0)) for s in ("active", "idle", "stale")])
    metric("leanctx_agents_active", "gauge", "Agents that heartbeat on time.", [("", by_status.get("active", 0))])
    metric("leanctx_sse_clients", "gauge", "Open SSE streams.", [("", st.hub.subscribers)])
    return "\n".join(out) + "\n"


async def metrics(request: Request) -> Response:
    st = srv(request)
    return Response(await st.run(render, st), media_type=CONTENT_TYPE)


ROUTES = [
    RouteSpec("GET", "/metrics", metrics, "Prometheus metrics (text format 0.0.4).", "operations",
              content_type=CONTENT_TYPE),
]
