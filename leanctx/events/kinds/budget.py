"""Token budget facts (stream ``budget:<agent_id>``). A limit of 0 means unlimited."""

from __future__ import annotations

from .base import Event


class BudgetSet(Event, tag="budget.set"):
    """An agent's token budget (``agent_token_budget``) was set; 0 = unlimited."""

    agent_id: str
    limit: int
    previous: int = 0


class BudgetRaised(Event, tag="budget.raised"):
    """An agent's token budget was raised by ``by`` tokens, to ``limit``."""

    agent_id: str
    by: int
    limit: int


class BudgetReset(Event, tag="budget.reset"):
    """An agent's token usage was set back to zero (its limit is kept)."""

    agent_id: str
    used_before: int


class BudgetConsumed(Event, tag="budget.consumed"):
    """An agent spent tokens: emitted by the commands that put text into an agent's context
    (reads, shell output, search), naming the tool that spent them."""

    agent_id: str
    tokens: int
    tool: str
