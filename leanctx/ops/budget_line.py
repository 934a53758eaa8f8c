"""The budget warning line a shell run or an expansion appends (``\\n[token budget ...]``), counted
in what the answer sends.

The record command (``shell.record``, ``archive.expand``) spends ``sent_tokens`` and returns the
budget after it; at 80 % and past 100 % its ``warning_line`` goes at the end of the answer. The
line is sent, so ``sent_tokens`` must count it too — but the line names the tokens used, which
include it. :func:`sent_with_warning` solves that before the dispatch: from the agent's budget now
(the ``budgets`` projection, strong, so current) it finds the answer's token count with the line
the record will produce at that count (a few rounds: a fixed point, reached in one or two). The
record then returns that very line, and the text sent has exactly the tokens recorded — unless
another writer spent the agent's budget between the two (the line then names its own figures,
and the count is off by the difference of the lines' tokens). Reads decide their line inside
their command, under the write lock (``leanctx.commands.read``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..app import LeanCtx

ROUNDS = 6  # the line's tokens change with its figures (and its level) a few times at most


def with_warning(text: str, warning: str | None) -> str:
    """The answer as sent: ``text`` and, when there is one, the warning line."""
    return f"{text}\n[{warning}]" if warning else text


def sent_with_warning(lc: LeanCtx, actor: str | None, text: str, tokens: int, encoding: str) -> int:
    """The tokens the answer ``text`` (``tokens`` of it) will send, the budget warning line that
    recording them brings included (see the module doc)."""
    if not actor:
        return tokens
    from ..context.tokens import count_tokens
    from ..projections.budgets import budget_row, make_state

    limit, used, _, _ = budget_row(lc.projections.reader("budgets"), actor)
    if limit <= 0:
        return tokens
    sent = tokens
    for _ in range(ROUNDS):
        line = make_state(actor, limit, used + sent).warning_line
        now = count_tokens(with_warning(text, line), encoding) if line else tokens
        if now == sent:
            break
        sent = now
    return sent
