"""Coordination commands over HTTP: one route per action, each a ``Command`` of the bus.

``POST /v1/<family>/<action>`` takes the command's fields as a JSON object (a field the command
does not have is refused, ``422 INVALID_INPUT``, not dropped) and dispatches it as the agent its
``X-Agent-Token`` proves, in the server's project. The answer is
``{"result": ..., "correlation_id", "call_position", "positions", "duplicate"}``; a refusal is
the command's stable code with its status (409 refused, 422 invalid, 404 not found).
``Idempotency-Key`` makes a retry return the first answer and append nothing (keys are scoped
to the agent; one used for another command is ``422 IDEMPOTENCY_KEY_REUSED``). Read routes (``GET``) answer from the projections.

Budget changes (set / raise / reset) are not served: with only agent tokens, an agent could
raise its own budget. They stay on the CLI of the machine that owns the log.
"""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from ...commands.bus import HANDLERS, Command
from ...commands.chat import InitChannel, PostAdapterEvent, PostMessage, ReadMessages
from ...commands.chat_reads import channels as chat_channels
from ...commands.chat_reads import peek as chat_peek
from ...commands.diaries import WriteDiary, check_category
from ...commands.locks import LockPaths, RecoverLock, UnlockPaths
from ...commands.scent import ClaimScent, DepositScent, ReleaseScent
from ...commands.tasks import (
    BlockTask,
    ClaimTask,
    CompleteTask,
    CreateTask,
    RecoverTask,
    ReleaseTask,
    RenewTask,
    UpdateTask,
)
from ...errors import InvalidInput, NotFound
from ...projections.budgets import BudgetView, budget_view
from ...projections.channels import ChannelInfo, MessageView
from ...projections.diaries import DiaryEntry, recall_diary
from ...projections.locks import LockView, list_locks
from ...projections.tasks import STATUSES, TaskView, get_task, list_tasks
from .bodies import convert, json_body, q_bool, q_int, q_list, q_str
from .responses import JSON
from .routes import AGENT, AGENT_OPTIONAL, Param, RouteSpec
from .security import agent_of, require_agent
from .state import envelope, srv

FAMILIES: dict[str, dict[str, type[Command]]] = {
    "chat": {"init": InitChannel, "post": PostMessage, "read": ReadMessages, "event": PostAdapterEvent},
    "tasks": {"create": CreateTask, "update": UpdateTask, "claim": ClaimTask, "renew": RenewTask,
              "done": CompleteTask, "block": BlockTask, "release": ReleaseTask, "recover": RecoverTask},
    "locks": {"acquire": LockPaths, "release": UnlockPaths, "recover": RecoverLock},
    "scent": {"deposit": DepositScent, "claim": ClaimScent, "release": ReleaseScent},
    "diary": {"write": WriteDiary},
}


SUMMARIES = {
    "chat.init": "Create a channel (members, topic).",
    "chat.post": "Post a message to a channel, to all or to one agent.",
    "chat.read": "Read the messages for the agent after its cursor (moves the cursor).",
    "chat.event.post": "Record an adapter capability or status event.",
    "task.create": "Create a task (dependencies, files hint, acceptance, delegate).",
    "task.update": "Change a task's fields or status.",
    "task.claim": "Claim a task with a lease (in progress, owned by the agent).",
    "task.renew": "Renew the agent's lease on a task.",
    "task.done": "Complete a task.",
    "task.block": "Block a task, with a reason.",
    "task.release": "Release the agent's lease (the task reopens).",
    "task.recover": "Take over a task whose lease expired, with a reason.",
    "scent.deposit": "Deposit a scent mark on a target (decays with its half-life).",
    "scent.claim": "Claim a target on the scent field.",
    "scent.release": "Release the agent's claim on a target.",
    "diary.write": "Write an entry in the agent's diary.",
}


def command_route(family: str, action: str, command: type[Command]) -> RouteSpec:
    async def endpoint(request: Request) -> Response:
        st = srv(request)
        agent = require_agent(request, st.tokens)
        body = await json_body(request, st.config.max_body_bytes)
        cmd = convert(body, command, what=command.name)
        return JSON(envelope(await st.dispatch(request, cmd, actor=agent)))

    endpoint.__name__ = f"{family}_{action}"
    spec = HANDLERS.get(command)
    result = spec.result if spec is not None and spec.result is not None else Any
    doc = (command.__doc__ or "").strip().splitlines()
    summary = SUMMARIES.get(command.name) or (doc[0] if doc else f"Dispatch `{command.name}`.")
    return RouteSpec("POST", f"/v1/{family}/{action}", endpoint, summary, family, auth=AGENT, body=command,
                     response=envelope_type(result, command.name), operation_id=command.name)


_ENVELOPES: dict[str, Any] = {}


def envelope_type(result: Any, name: str) -> Any:
    """A Struct describing the answer of command ``name`` (for OpenAPI)."""
    cls_name = "Result_" + name.replace(".", "_")
    if cls_name not in _ENVELOPES:
        _ENVELOPES[cls_name] = msgspec.defstruct(
            cls_name,
            [("result", result), ("correlation_id", str), ("call_position", int), ("positions", list[int]),
             ("duplicate", bool)],
            kw_only=True,
        )
    return _ENVELOPES[cls_name]


# --- read routes ----------------------------------------------------------------------------

class TaskList(msgspec.Struct):
    tasks: list[TaskView]


async def tasks_list(request: Request) -> Response:
    st = srv(request)
    statuses = q_list(request, "status")
    bad = [s for s in statuses if s not in STATUSES]
    if bad:
        raise InvalidInput("TASK_INVALID_ARGUMENT", f"status {bad[0]!r} is not one of: {', '.join(STATUSES)}")
    lease = q_str(request, "lease")
    if lease is not None and lease not in ("none", "active", "expired"):
        raise InvalidInput("TASK_INVALID_ARGUMENT", "lease must be none, active or expired")
    channel, owner, assigned = q_str(request, "channel"), q_str(request, "owner"), q_str(request, "assigned_to")

    def query() -> list[TaskView]:
        return list_tasks(st.reader("tasks"), now=st.now(), channel=channel, status=statuses or None, owner=owner,
                          assigned_to=assigned, lease=lease)

    return JSON(TaskList(await st.run(query)))


async def tasks_show(request: Request) -> Response:
    st = srv(request)
    task_id = q_str(request, "task_id", max_len=64)
    channel = q_str(request, "channel", "general", max_len=64) or "general"
    if not task_id:
        raise InvalidInput("TASK_INVALID_ARGUMENT", "name the task: /v1/tasks/show?task_id=t1&channel=general")
    view = await st.run(lambda: get_task(st.reader("tasks"), channel, task_id, now=st.now()))
    if view is None:
        raise NotFound("TASK_NOT_FOUND", f"no task {task_id!r} in channel {channel!r}; see /v1/tasks/list")
    return JSON(view)


class ChannelList(msgspec.Struct):
    channels: list[ChannelInfo]


async def chat_channels_(request: Request) -> Response:
    st = srv(request)
    reader = agent_of(request, st.tokens)
    return JSON(ChannelList(await st.run(chat_channels, st.lc, reader)))


class MessageList(msgspec.Struct):
    messages: list[MessageView]


async def chat_peek_(request: Request) -> Response:
    st = srv(request)
    reader = require_agent(request, st.tokens)
    channel = q_str(request, "channel", "general", max_len=256) or "general"
    n = q_int(request, "n", 10, lo=0, hi=1000)
    return JSON(MessageList(await st.run(chat_peek, st.lc, channel, reader, n)))


class LockList(msgspec.Struct):
    locks: list[LockView]


async def locks_list(request: Request) -> Response:
    st = srv(request)
    workspace = q_str(request, "workspace")
    owner = q_str(request, "owner", max_len=256)
    include_expired = q_bool(request, "include_expired", True)

    def query() -> list[LockView]:
        return list_locks(st.reader("path_locks"), now=st.now(), workspace=workspace, owner=owner,
                          include_expired=include_expired)

    return JSON(LockList(await st.run(query)))


class DiaryList(msgspec.Struct):
    entries: list[DiaryEntry]


async def diary_recall(request: Request) -> Response:
    st = srv(request)
    agent = require_agent(request, st.tokens)
    category = q_str(request, "category", max_len=64)
    if category is not None:
        category = check_category(category)
    limit = q_int(request, "limit", 20, lo=1, hi=1000)
    matching = q_str(request, "matching", max_len=1000)

    def query() -> list[DiaryEntry]:
        return recall_diary(st.reader("diaries"), agent, category=category, limit=limit, matching=matching)

    return JSON(DiaryList(await st.run(query)))


async def budget_show(request: Request) -> Response:
    st = srv(request)
    agent = require_agent(request, st.tokens)
    return JSON(await st.run(lambda: budget_view(st.reader("budgets"), agent)))


ROUTES = [command_route(f, a, c) for f, actions in FAMILIES.items() for a, c in actions.items()]
ROUTES += [
    RouteSpec("GET", "/v1/tasks/list", tasks_list, "Tasks by channel, status, owner, delegate or lease state.",
              "tasks", response=TaskList,
              params=(Param("channel"), Param("status", repeated=True, description=" | ".join(STATUSES)),
                      Param("owner"), Param("assigned_to"), Param("lease", description="none | active | expired"))),
    RouteSpec("GET", "/v1/tasks/show", tasks_show, "One task.", "tasks", response=TaskView,
              params=(Param("task_id", required=True), Param("channel", description="default: general"))),
    RouteSpec("GET", "/v1/chat/channels", chat_channels_, "Channels (with unread counts for the token's agent).",
              "chat", auth=AGENT_OPTIONAL, response=ChannelList),
    RouteSpec("GET", "/v1/chat/peek", chat_peek_, "The last messages of a channel the agent can see; no cursor moves.",
              "chat", auth=AGENT, response=MessageList,
              params=(Param("channel", description="default: general"), Param("n", type="integer"))),
    RouteSpec("GET", "/v1/locks/list", locks_list, "Path locks held (expired ones too unless asked).", "locks",
              response=LockList, params=(Param("workspace"), Param("owner"),
                                         Param("include_expired", type="boolean"))),
    RouteSpec("GET", "/v1/diary/recall", diary_recall, "The token's agent's diary, newest first.", "diary",
              auth=AGENT, response=DiaryList,
              params=(Param("category"), Param("limit", type="integer"), Param("matching"))),
    RouteSpec("GET", "/v1/budget", budget_show, "The token's agent's token budget.", "budget", auth=AGENT,
              response=BudgetView),
]
