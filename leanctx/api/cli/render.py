"""Output for the CLI: human text by default, JSON for scripts, errors with stable codes."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import msgspec

from ...events import StoredEvent
from ...events.codec import payload_dict

_enc = msgspec.json.Encoder()


def to_builtins(value: Any) -> Any:
    return msgspec.to_builtins(value)


def emit_json(value: Any) -> None:
    sys.stdout.write(_enc.encode(to_builtins(value)).decode() + "\n")
    sys.stdout.flush()


def event_json(e: StoredEvent) -> dict[str, Any]:
    return e.to_dict()


def _summary(payload: dict[str, Any], width: int = 90) -> str:
    parts = []
    for k, v in payload.items():
        if k == "kind" or v is None or v == "" or v == [] or v == {}:
            continue
        text = v if isinstance(v, str) else _enc.encode(v).decode()
        parts.append(f"{k}={text}")
    s = " ".join(parts)
    return s if len(s) <= width else s[: width - 1] + "…"


def event_line(e: StoredEvent) -> str:
    who = e.actor or "-"
    if e.to_agent:
        who += f"→{e.to_agent}"
    chan = f" #{e.channel}" if e.channel else ""
    cause = f" ⟵{e.causation_id}" if e.causation_id else ""
    return (
        f"{e.position:>7}  {e.ts[:23]}  {e.kind:<20} {e.stream}@{e.version}  {who}{chan}{cause}  "
        f"{_summary(payload_dict(e.payload))}"
    )


def print_events(events: Iterable[StoredEvent], as_json: bool) -> int:
    n = 0
    for e in events:
        if as_json:
            emit_json(event_json(e))
        else:
            sys.stdout.write(event_line(e) + "\n")
        n += 1
    sys.stdout.flush()
    return n


def table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    if not rows:
        return ""
    cells = [[("" if r.get(c) is None else str(r.get(c))) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    out = ["  ".join(c.upper().ljust(w) for c, w in zip(columns, widths)).rstrip()]
    for row in cells:
        out.append("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())
    return "\n".join(out)


@contextmanager
def progress_bar(label: str, enabled: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar on stderr; yields a ``progress(done, total)`` callback."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    with Progress(
        TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=True
    ) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total or None)

        yield update
