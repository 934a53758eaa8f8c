"""What one read of the message bus delivers, and the text an agent reads it as.

A read takes the messages for the reader after its cursor, in seq order, and stops at the first
of two bounds (the cursor then moves only past what it took; the rest stays unread):

- ``limit`` messages: ``DEFAULT_READ_LIMIT`` (50) unless the caller says otherwise, None for
  no count limit (the CLI's ``chat read --all``). Fifty is a screenful an agent can act on: a
  typical message (a title and a few lines) costs 50-300 tokens, so fifty of them fit well
  inside the answer cap, while a new agent on a busy log (tens of thousands of messages) no
  longer gets them all at once — it is told how many more are unread and reads again.
- ``max_tokens`` of their text as :func:`message_lines` renders it (``ctx_agent action=read``
  shows exactly these lines), in the caller's encoding spec: ``DEFAULT_READ_TOKENS``, the
  answer cap (``leanctx.ops.cap.ANSWER_CAP_TOKENS``, 20,000), unless the caller says
  otherwise, None for no budget. Each message is costed on its
  own; the sum of the pieces is never below the count of the text they join into, so the
  messages taken fit. The first message is always taken, even alone over the budget (a body
  may be 256 KB): otherwise a read could never get past it. Who shows it cuts its text and
  says where the whole of it is (``lean-ctx chat peek --seq N``).

Messages are fetched a page at a time, so a read near a long backlog costs about what it
delivers, not the backlog.
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidInput
from ..projections.channels import MessageView, messages_for
from .read import DEFAULT_CAP_TOKENS as DEFAULT_READ_TOKENS

DEFAULT_READ_LIMIT = 50
PAGE = 200  # messages fetched at a time while the token budget is open


def message_lines(m: MessageView) -> list[str]:
    """A message as an agent reads it: a header line, then the body indented by two spaces."""
    reply = f" (re #{m.reply_to})" if m.reply_to else ""
    return [f"#{m.seq} {m.sender} → {m.to} [{m.category}] {m.title}{reply}",
            *(f"  {line}" for line in m.body.splitlines())]


def read_bounds(limit: int | None, max_tokens: int | None, encoding: str | None) -> tuple[int, int, str]:
    """``(limit, max_tokens, encoding)`` checked, with 0 standing for "no bound" (None given),
    or refused with ``CHAT_INVALID_LIMIT``."""
    from ..context.tokens import DEFAULT_ENCODING, parse_encoding

    if limit is not None and limit < 1:
        raise InvalidInput("CHAT_INVALID_LIMIT", "the limit must be at least 1 (none: no count limit)")
    if max_tokens is not None and max_tokens < 1:
        raise InvalidInput("CHAT_INVALID_LIMIT", "max_tokens must be at least 1 (none: no token budget)")
    encoding = encoding or DEFAULT_ENCODING
    parse_encoding(encoding)  # TOKENIZER_UNKNOWN_ENCODING for a spec that names nothing
    return limit or 0, max_tokens or 0, encoding


def take(conn: Any, channel: str, reader: str, *, after: int, limit: int, max_tokens: int,
         encoding: str) -> tuple[list[MessageView], bool]:
    """The messages for ``reader`` after seq ``after`` that one read delivers (module doc; 0:
    no such bound), and whether a bound stopped it (True: messages for the reader may follow
    the last one taken)."""
    if not max_tokens:
        got = messages_for(conn, channel, reader, after=after, limit=limit or None)
        return got, bool(limit) and len(got) == limit
    from ..context.tokens import count_tokens

    out: list[MessageView] = []
    used = 0
    while True:
        want = PAGE if not limit else min(PAGE, limit - len(out))
        page = messages_for(conn, channel, reader, after=after, limit=want)
        for m in page:
            cost = count_tokens("\n".join(message_lines(m)) + "\n", encoding)
            if out and used + cost > max_tokens:
                return out, True
            out.append(m)
            used += cost
        if limit and len(out) == limit:
            return out, True
        if len(page) < want:
            return out, False
        after = page[-1].seq


__all__ = ["DEFAULT_READ_LIMIT", "DEFAULT_READ_TOKENS", "message_lines", "read_bounds", "take"]
