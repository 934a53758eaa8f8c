"""The text of ``ctx_agent action=read`` and ``action=channels``.

A read's messages are rendered as :func:`leanctx.commands.chat_delivery.message_lines` (the
lines the read was budgeted on), then ``[N more unread: …]`` when more wait. The read already
fits the answer cap, except a first message larger than the cap on its own: that one is cut
(``cap_lines``) and the notice names the command that shows it whole — it counts as read now.
"""

from __future__ import annotations

from typing import Any

from ...commands.chat_delivery import message_lines

_FOOTER_SLACK = 8  # tokens: the footer joined to the text may cost a little more than counted apart


def read_text(r: Any, cap: int, encoding: str) -> str:
    """The text of a :class:`~leanctx.commands.chat.ReadResult`, at most ``cap`` tokens."""
    from ...context.tokens import count_tokens
    from ...ops.cap import Cut, cap_lines

    if not r.messages:
        return f"no new messages in {r.channel}"
    lines: list[str] = []
    spans: list[tuple[Any, int, int]] = []  # (message, first line index, end index)
    for m in r.messages:
        start = len(lines)
        lines.extend(message_lines(m))
        spans.append((m, start, len(lines)))
    footer = f"[{r.unread} more unread: read again for the next]" if r.unread else ""

    def notice(cut: Cut) -> str:
        parts = []
        for m, start, end in spans:
            if end <= cut.head:
                continue
            whole = max(0, cut.head - start)
            shown = f"after {whole:,} of {end - start:,} lines" if whole else "not shown"
            parts.append(f"#{m.seq} {shown}: the whole of it: `lean-ctx chat peek --channel {r.channel} --seq"
                         f" {m.seq} --as {r.reader}`")
        return (f"[… cut at the {cap:,}-token answer cap (~{cut.rest_tokens:,} tokens not shown; read now): "
                + "; ".join(parts) + "]")

    room = cap - (count_tokens("\n" + footer, encoding) + _FOOTER_SLACK if footer else 0)
    text, _ = cap_lines(lines, room, notice, encoding=encoding)
    return f"{text}\n{footer}" if footer else text


def channel_line(c: Any) -> str:
    """One line of :class:`~leanctx.commands.chat_reads.ChannelSummary`."""
    tasks = f"{c.tasks} task{'s' if c.tasks != 1 else ''} not finished"
    info = c.channel
    if info is None:
        return (f"#{c.name} — tasks only: {tasks}; no channel to post in: create it with ctx_agent action=init"
                f" channel={c.name}")
    n = len(info.members)
    members = f"{n} member{'s' if n != 1 else ''}" if n else "open to every agent"
    line = f"#{c.name} — {members}, {info.messages} messages, {info.unread or 0} unread, {tasks}"
    if info.topic:
        line += f" — topic: {info.topic}"
    if info.last is not None:
        line += f" — last: #{info.last.seq} {info.last.sender}: {info.last.title[:60]}"
    return line
