"""Token budget commands and the helpers read commands use.

- ``budget.set`` (limit, 0 = unlimited), ``budget.raise`` (by N), ``budget.reset`` (usage back
  to 0), ``budget.consume`` (record tokens an agent spent; adapters that count their own tokens
  use it).
- Context-engine commands record what they put into an agent's context with
  ``consume(ctx, agent_id, tokens, tool)`` (declare ``"budget.consumed"`` in their ``emits``)
  and call ``enforce_budget(ctx)`` before a read: it raises ``BUDGET_EXCEEDED`` at 100 % and
  returns the state, whose ``warning_line`` (at >= 80 %) goes into the tool response.
"""

from __future__ import annotations

from ..errors import CommandError, InvalidInput
from ..events.kinds.budget import BudgetConsumed, BudgetRaised, BudgetReset, BudgetSet
from ..projections.agents import find_agent
from ..projections.budgets import BudgetState, budget_row, check_budget, make_state
from .agents import valid_agent_id
from .bus import Command, CommandContext, handles

__all__ = ["BudgetState", "check_budget", "consume", "enforce_budget", "resolve_agent", "stream_of"]

MAX_TOKENS = 10**12


def stream_of(agent_id: str) -> str:
    return f"budget:{agent_id}"


def resolve_agent(ctx: CommandContext, ref: str | None, code: str = "BUDGET_NO_AGENT") -> str:
    """The agent a budget command is about: ``ref`` (an agent id or a registered name in the
    caller's project), else the caller."""
    if ref is None or not ref.strip():
        if not ctx.actor:
            raise InvalidInput(code, "name the agent (or act as one: set $LEAN_CTX_AGENT_ID)")
        return ctx.actor
    ref = ref.strip()
    agent = find_agent(ctx.conn, ref, now=ctx.now, project_root=ctx.project)
    if agent is not None:
        return agent.agent_id
    if not valid_agent_id(ref):
        raise InvalidInput("BUDGET_INVALID_AGENT", f"{ref!r} is not an agent id or a registered agent name")
    return ref


def _amount(value: int, what: str, code: str, *, positive: bool) -> int:
    if isinstance(value, bool) or value < (1 if positive else 0) or value > MAX_TOKENS:
        low = "a positive" if positive else "a non-negative"
        raise InvalidInput(code, f"{what} must be {low} whole number of tokens (at most {MAX_TOKENS}); got {value}")
    return value


def enforce_budget(ctx: CommandContext, agent_id: str | None = None) -> BudgetState:
    """For read commands: refuse with ``BUDGET_EXCEEDED`` when ``agent_id`` (default: the
    caller) has used its whole budget; otherwise return the state (``warning_line`` set at >= 80 %)."""
    who = agent_id or ctx.actor
    if not who:
        return make_state("", 0, 0)
    st = check_budget(ctx.conn, who)
    if st.level == "exceeded":
        raise CommandError(
            "BUDGET_EXCEEDED",
            f"{who} used {st.used} of {st.limit} tokens ({st.used * 100 // st.limit}% of its budget); reads are"
            f" refused: raise it (`lean-ctx agent budget {who} --raise N`) or reset it (`--reset`)",
            agent_id=who,
            used=st.used,
            limit=st.limit,
        )
    return st


def consume(ctx: CommandContext, agent_id: str, tokens: int, tool: str) -> None:
    """Inside a command that declares ``budget.consumed``: record ``tokens`` spent by ``agent_id``."""
    if tokens > 0:
        ctx.emit(stream_of(agent_id), BudgetConsumed(agent_id=agent_id, tokens=int(tokens), tool=tool))


class SetBudget(Command, frozen=True):
    name = "budget.set"
    limit: int  # agent_token_budget; 0 = unlimited
    agent: str | None = None  # agent id or name; default: the caller


class RaiseBudget(Command, frozen=True):
    name = "budget.raise"
    by: int
    agent: str | None = None


class ResetBudget(Command, frozen=True):
    name = "budget.reset"
    agent: str | None = None


class ConsumeTokens(Command, frozen=True):
    name = "budget.consume"
    tokens: int
    tool: str
    agent: str | None = None


@handles(SetBudget, emits=("budget.set",), result=BudgetState)
def set_budget(ctx: CommandContext, cmd: SetBudget) -> BudgetState:
    agent_id = resolve_agent(ctx, cmd.agent)
    limit = _amount(cmd.limit, "a budget", "BUDGET_INVALID_LIMIT", positive=False)
    current, used, _, _ = budget_row(ctx.conn, agent_id)
    if limit != current:  # same limit: idempotent, nothing appended
        ctx.emit(stream_of(agent_id), BudgetSet(agent_id=agent_id, limit=limit, previous=current))
    return make_state(agent_id, limit, used)


@handles(RaiseBudget, emits=("budget.raised",), result=BudgetState)
def raise_budget(ctx: CommandContext, cmd: RaiseBudget) -> BudgetState:
    agent_id = resolve_agent(ctx, cmd.agent)
    by = _amount(cmd.by, "a raise", "BUDGET_INVALID_AMOUNT", positive=True)
    current, used, _, _ = budget_row(ctx.conn, agent_id)
    if current == 0:
        raise CommandError(
            "BUDGET_UNLIMITED",
            f"{agent_id} has no token budget (unlimited), so there is nothing to raise; set one with --set N",
        )
    limit = min(current + by, MAX_TOKENS)
    ctx.emit(stream_of(agent_id), BudgetRaised(agent_id=agent_id, by=by, limit=limit))
    return make_state(agent_id, limit, used)


@handles(ResetBudget, emits=("budget.reset",), result=BudgetState)
def reset_budget(ctx: CommandContext, cmd: ResetBudget) -> BudgetState:
    agent_id = resolve_agent(ctx, cmd.agent)
    limit, used, _, _ = budget_row(ctx.conn, agent_id)
    if used:  # nothing used: idempotent, nothing appended
        ctx.emit(stream_of(agent_id), BudgetReset(agent_id=agent_id, used_before=used))
    return make_state(agent_id, limit, 0)


@handles(ConsumeTokens, emits=("budget.consumed",), result=BudgetState)
def consume_tokens(ctx: CommandContext, cmd: ConsumeTokens) -> BudgetState:
    agent_id = resolve_agent(ctx, cmd.agent)
    tokens = _amount(cmd.tokens, "tokens", "BUDGET_INVALID_AMOUNT", positive=False)
    tool = cmd.tool.strip()
    if not tool or len(tool) > 128:
        raise InvalidInput("BUDGET_INVALID_TOOL", "name the tool that spent the tokens (1-128 characters)")
    limit, used, _, _ = budget_row(ctx.conn, agent_id)
    consume(ctx, agent_id, tokens, tool)
    return make_state(agent_id, limit, used + tokens)
