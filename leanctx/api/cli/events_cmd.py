"""``lean-ctx events``: tail, search, lineage, verify.

``tail --since now`` starts at the head: nothing already in the log is printed (with
``--follow``, what is appended from then on), and stderr names the head as ``since=N`` (the
position to pass as ``--since`` to continue from there). ``search`` takes at most
ctx_search's ``MAX_QUERY_CHARS`` (1,000) characters of query, refused as HTTP's
``/v1/events/search?q=`` refuses more (``INVALID_INPUT``): FTS5's cost grows with the square of
the terms ANDed (32,000 terms took ~4 s)."""

from __future__ import annotations

import sys
import time
from typing import Literal

import typer

from ...errors import InvalidInput
from ...events import StoredEvent, TopicFilter
from .app import state
from .common import JSON, one_of
from .groups import events_app
from .render import emit_json, event_json, event_line, print_events, progress_bar


@events_app.command("tail")
def tail(
    ctx: typer.Context,
    since: str | None = typer.Option(
        None, "--since", help="Events after this position, or 'now' (only new ones; default: the last -n)."
    ),
    kind: list[str] = typer.Option([], "--kind", help="Only these kinds (repeatable; 'agent.*' for a family)."),
    actor: str | None = typer.Option(None, "--actor", help="Only events appended by this agent."),
    to_agent: str | None = typer.Option(
        None, "--to-agent", help="As seen by this agent: broadcasts and events directed to it."
    ),
    channel: str | None = typer.Option(None, "--channel", help="Only this channel."),
    stream: str | None = typer.Option(None, "--stream", help="Only streams starting with this prefix."),
    consistency: str | None = typer.Option(None, "--consistency", callback=one_of("strong", "eventual"),
                                              help="strong or eventual."),
    limit: int = typer.Option(20, "-n", "--limit", min=0, help="How many recent events without --since."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing new events as they are appended."),
    timeout: float | None = typer.Option(
        None, "--timeout", min=0, help="With --follow: stop after this many seconds."
    ),
    json_: bool = JSON,
) -> None:
    """Print events (one JSON object per line with --json)."""
    st = state(ctx)
    as_json = st.want_json(json_)
    store = st.open().store
    flt = TopicFilter(
        kinds=tuple(kind) or None, actor=actor, to_agent=to_agent, channel=channel, stream_prefix=stream,
        consistency=consistency,
    )
    start = _since(since)
    if start == "now":
        last = store.head().position
        events: list[StoredEvent] = []
        sys.stderr.write(f"since={last}\n")
        sys.stderr.flush()
    elif start is None:
        head = store.head().position
        events = store.read_last(limit, flt)
        last = head
    else:
        events = store.read_all(start, flt)
        last = events[-1].position if events else start
    print_events(events, as_json)
    if events:
        last = max(last, events[-1].position)
    if not follow:
        return
    deadline = None if timeout is None else time.monotonic() + timeout
    while deadline is None or time.monotonic() < deadline:
        wait_for = 1.0 if deadline is None else max(0.0, min(1.0, deadline - time.monotonic()))
        new = store.wait(last, flt, timeout=wait_for)
        if new:
            print_events(new, as_json)
            last = new[-1].position


def _since(raw: str | None) -> int | Literal["now"] | None:
    """``--since``: None (the last -n), ``"now"``, or a position."""
    if raw is None:
        return None
    text = raw.strip()
    if text == "now":
        return "now"
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise InvalidInput("EVENT_INVALID_CURSOR", f"--since must be a log position (0 or more) or 'now', not {raw[:40]!r}")
    return value


@events_app.command("search")
def search(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="Words to find (any text is safe; 'word*' for a prefix)."),
    limit: int = typer.Option(20, "--limit", "-n", min=1, help="At most this many hits."),
    json_: bool = JSON,
) -> None:
    """Full-text search of the log, best match first (FTS5 bm25)."""
    from ...ops.search_input import MAX_QUERY_CHARS

    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInput("INVALID_INPUT", f"the search query is {len(query):,} characters, more than"
                                            f" {MAX_QUERY_CHARS:,}: search for fewer words")
    st = state(ctx)
    hits = st.open().store.search(query, limit=limit)
    if st.want_json(json_):
        for h in hits:
            emit_json({"score": h.score, **event_json(h.event)})
        return
    if not hits:
        sys.stderr.write(f"no event matches {query!r}\n")
        return
    for h in hits:
        sys.stdout.write(f"{h.score:8.3f} {event_line(h.event)}\n")


@events_app.command("lineage")
def lineage(
    ctx: typer.Context,
    position: int = typer.Argument(..., help="Position of the event."),
    json_: bool = JSON,
) -> None:
    """An event's causation ancestors (root first) and all its descendants."""
    st = state(ctx)
    lin = st.open().store.lineage(position)
    if st.want_json(json_):
        emit_json(
            {
                "event": event_json(lin.event),
                "ancestors": [event_json(e) for e in lin.ancestors],
                "descendants": [event_json(e) for e in lin.descendants],
            }
        )
        return
    depth = {}
    for i, e in enumerate(lin.ancestors):
        depth[e.position] = i
        sys.stdout.write("  " * i + "  " + event_line(e).lstrip() + "\n")
    base = len(lin.ancestors)
    depth[lin.event.position] = base
    sys.stdout.write("  " * base + "▶ " + event_line(lin.event).lstrip() + "\n")
    for e in lin.descendants:
        d = depth.get(e.causation_id or 0, base) + 1
        depth[e.position] = d
        sys.stdout.write("  " * d + "└ " + event_line(e).lstrip() + "\n")


@events_app.command("verify")
def verify(ctx: typer.Context, json_: bool = JSON) -> None:
    """Walk the sha256 chain; exit 0 when it holds, 1 with the first broken position."""
    st = state(ctx)
    as_json = st.want_json(json_)
    store = st.open().store
    with progress_bar("verifying", st.progress and not as_json and sys.stderr.isatty()) as progress:
        res = store.verify(progress)
    if as_json:
        emit_json(res)
    elif res.ok:
        sys.stdout.write(f"ok: {res.checked} events, chain intact, head {res.head_position} {res.head_hash}\n")
    elif res.first_broken is None:  # the chain holds, the log is unprotected (TRIGGERS_MISSING)
        sys.stdout.write(f"NOT OK: {res.reason} (the chain of its {res.checked} events is intact)\n")
    else:
        sys.stdout.write(
            f"BROKEN at position {res.first_broken}: {res.reason} ({res.checked} events before it are intact)\n"
        )
    if not res.ok:
        raise typer.Exit(1)

