"""The tool registry: one table of every tool lean-ctx offers agents, for every transport.

A tool is a row: ``name`` (``ctx_read``), ``category`` (which lazy group lists it), a short
``description``, a msgspec ``Struct`` for its arguments (its JSON Schema is generated from the
Struct, then compacted), and a function ``fn(lc, caller, args) -> dict`` that returns a
JSON-ready mapping. By convention the mapping's ``"text"`` is what the agent reads; the rest is
machine-readable detail. Functions call operations (``leanctx.ops``) and the command bus; they
never print and never know which transport called them.

Rows are defined in ``leanctx/api/tools/<family>.py`` with the :func:`tool` decorator and
discovered on first use (``import_submodules``): adding a family adds its module there and
touches no transport. Each row also names what the other transports derive from it: the HTTP
route (``POST /v1/tools/<name>``, the JSON body is the arguments) and the CLI verb
(``verb``, the name without ``ctx_``).

Errors are ``LeanCtxError`` subclasses with stable codes and pass through unchanged; each
transport translates them once (MCP: a tool error ``CODE: sentence``; HTTP: status + JSON).
Arguments that do not fit the Struct are refused here with ``INVALID_ARGUMENT``, and an
unknown tool with ``TOOL_UNKNOWN``.

The exec policy lives here, the one place every transport passes through (``/v1/tools``,
``/mcp``, stdio MCP, the CLI, and ``ctx_call`` naming another tool): a row that runs commands
or writes project files says so (``tool(..., exec_when=True)``, or ``exec_when=<predicate of its parsed
arguments>`` when only some calls write, e.g. ``ctx_handoff create out=FILE``; ``ctx_shell`` and
``ctx_edit`` always), and :func:`call` refuses such a call from a caller whose
``allow_exec`` is False with ``403 HTTP_EXEC_DISABLED`` (:class:`ExecDisabled`). ``Caller``
allows exec by default (the CLI and stdio MCP are the user's own processes); ``lean-ctx
serve`` passes its ``--allow-exec``/``--no-exec`` policy. ``tools(allow_exec=False)`` leaves out
the rows that always need exec (a tools list does not offer what would be refused).

``ctx_session`` and ``ctx_overview`` are in category ``session``; ``ctx_knowledge``,
``ctx_handoff`` and ``ctx_proof`` in ``memory``.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from ..errors import InvalidInput, LeanCtxError, NotFound

__all__ = [
    "CATEGORIES",
    "DEFAULT_CATEGORIES",
    "Caller",
    "ExecDisabled",
    "Tool",
    "ToolSet",
    "call",
    "compact_schema",
    "get",
    "parse_args",
    "tool",
    "tools",
    "wire",
]

CATEGORIES: dict[str, str] = {
    "core": "read, run, search, list and edit the project",
    "session": "work with other agents: messages, claims, diaries, tasks",
    "arch": "architecture views of the project (none yet)",
    "debug": "diagnostics of the log and the caches (none yet)",
    "memory": "knowledge (remember, recall, conflicts, consolidation), signed handoffs, Context Proofs",
    "metrics": "token savings",
}
DEFAULT_CATEGORIES: tuple[str, ...] = ("core", "session")


class ExecDisabled(LeanCtxError):
    """A call that runs commands or writes files, from a caller not allowed to (``--no-exec``)."""

    code = "HTTP_EXEC_DISABLED"
    http_status = 403


class ToolSet(Protocol):
    """The tools a conversation lists (an MCP session's lazy categories), for ``ctx_load_tools``."""

    def loaded(self) -> list[str]: ...

    def load(self, categories: Sequence[str]) -> list[str]:
        """Load categories; returns those that were not loaded before."""
        ...

    def unload(self, categories: Sequence[str]) -> list[str]:
        """Unload categories; returns those that were loaded before."""
        ...


@dataclass(frozen=True)
class Caller:
    """Who calls: the agent, its conversation (session) and the project root.

    ``toolset`` is the caller's lazy tool list when its transport has one (MCP), else None
    (every tool is always available). ``allow_exec``: whether calls that run commands or write
    files are allowed (the module doc)."""

    agent_id: str | None
    session_id: str | None
    project: str
    toolset: ToolSet | None = field(default=None, compare=False)
    allow_exec: bool = True


ToolFn = Callable[[Any, Caller, Any], dict[str, Any]]
ExecWhen = bool | Callable[[Any], bool]


@dataclass(frozen=True)
class Tool:
    name: str
    category: str
    description: str
    args: type[msgspec.Struct]
    fn: ToolFn = field(compare=False)
    exec_when: ExecWhen = field(default=False, compare=False)  # runs commands or writes files (module doc)

    def needs_exec(self, args: Any) -> bool:
        """Whether this call (its parsed ``args``) runs commands or writes files."""
        return bool(self.exec_when(args)) if callable(self.exec_when) else self.exec_when

    @property
    def route(self) -> str:
        """The HTTP route a REST transport derives: ``POST /v1/tools/<name>`` (body = args)."""
        return f"/v1/tools/{self.name}"

    @property
    def verb(self) -> str:
        """The CLI verb a command-line transport derives (``ctx_read`` → ``read``)."""
        return self.name.removeprefix("ctx_").replace("_", "-")

    def input_schema(self) -> dict[str, Any]:
        return copy.deepcopy(_schema(self.args))


_TABLE: dict[str, Tool] = {}
_loaded = False
_load_lock = threading.Lock()


def tool(name: str, *, category: str, description: str, args: type[msgspec.Struct],
         exec_when: ExecWhen = False) -> Callable[[ToolFn], ToolFn]:
    """Register ``fn`` as the tool ``name`` (a row of the table). ``exec_when``: the call runs
    commands or writes files — True, or a predicate of the parsed arguments."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown tool category {category!r}")

    def register(fn: ToolFn) -> ToolFn:
        if name in _TABLE:
            raise ValueError(f"tool {name!r} is registered twice")
        _TABLE[name] = Tool(name, category, " ".join(description.split()), args, fn, exec_when)
        return fn

    return register


def _load() -> None:
    global _loaded
    if _loaded:
        return
    with _load_lock:
        if not _loaded:
            from ..discovery import import_submodules

            import_submodules(f"{__package__}.tools")
            _loaded = True


def tools(categories: Iterable[str] | None = None, *, allow_exec: bool = True) -> list[Tool]:
    """Every tool (of ``categories`` if given), in category order, then table order; without
    ``allow_exec``, not the rows that always need it."""
    _load()
    order = list(CATEGORIES)
    wanted = None if categories is None else set(categories)
    rows = [t for t in _TABLE.values() if (wanted is None or t.category in wanted)
            and (allow_exec or t.exec_when is not True)]
    return sorted(rows, key=lambda t: order.index(t.category))


def get(name: str) -> Tool:
    _load()
    found = _TABLE.get(name) if isinstance(name, str) else None
    if found is None:
        raise NotFound("TOOL_UNKNOWN", f"no tool {name!r}; the tools are {', '.join(sorted(_TABLE))}")
    return found


def parse_args(t: Tool, raw: Any) -> Any:
    """The arguments as ``t.args``, or ``INVALID_ARGUMENT`` naming the field at fault."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise InvalidInput("INVALID_ARGUMENT", f"{t.name}: the arguments must be a JSON object")
    try:
        return msgspec.convert(raw, t.args, strict=False)
    except msgspec.ValidationError as exc:
        raise InvalidInput("INVALID_ARGUMENT", f"{t.name}: {exc}; see the tool's input schema") from None


def call(lc: Any, caller: Caller, name: str, raw_args: Any = None) -> dict[str, Any]:
    """Run the tool ``name`` as ``caller``; a JSON-ready mapping (``LeanCtxError`` passes through).
    A call that needs exec from a caller without it is refused (``ExecDisabled``), before it runs."""
    t = get(name)
    if not caller.allow_exec and t.exec_when is True:  # refused whatever the arguments
        raise _exec_disabled(t)
    args = parse_args(t, raw_args)
    if not caller.allow_exec and t.needs_exec(args):
        raise _exec_disabled(t)
    out = t.fn(lc, caller, args)
    return msgspec.to_builtins(out)


def _exec_disabled(t: Tool) -> ExecDisabled:
    what = "runs commands or writes files" if t.exec_when is True else "writes a file with these arguments"
    return ExecDisabled(message=f"{t.name} {what}, which this server does not allow (it was started with "
                        "--no-exec, or bound beyond loopback without --allow-exec)", tool=t.name)


# --- schemas -------------------------------------------------------------------------------

_schemas: dict[type, dict[str, Any]] = {}


def _schema(args: type[msgspec.Struct]) -> dict[str, Any]:
    found = _schemas.get(args)
    if found is None:
        found = _schemas[args] = compact_schema(msgspec.json.schema(args))
    return found


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``msgspec.json.schema`` output made small for a tools list: the top ``$ref`` inlined
    (nested Structs stay under ``$defs``), titles and the Struct's docstring dropped (the tool
    description says it), ``X | None = None`` shown as an optional ``X``, and
    ``additionalProperties`` dropped (unknown fields are still refused: ``INVALID_ARGUMENT``)."""
    defs = dict(schema.get("$defs", {}))
    root = schema
    ref = schema.get("$ref", "")
    if ref.startswith("#/$defs/"):
        root = defs.pop(ref.rsplit("/", 1)[-1])

    def clean(node: Any) -> Any:
        if isinstance(node, list):
            return [clean(n) for n in node]
        if not isinstance(node, dict):
            return node
        out = {k: ({p: clean(s) for p, s in v.items()} if k == "properties" else clean(v))
               for k, v in node.items() if k not in ("title", "additionalProperties")}
        if out.get("required") == []:
            del out["required"]
        alts = out.get("anyOf")
        if isinstance(alts, list) and {"type": "null"} in alts and out.get("default", ...) is None:
            rest = [a for a in alts if a != {"type": "null"}]
            if len(rest) == 1:
                del out["anyOf"], out["default"]
                out = {**rest[0], **out}
        return out

    root = clean(root)
    root.pop("description", None)
    if defs:
        root["$defs"] = {k: clean(v) for k, v in defs.items()}
    if "properties" not in root:
        root["properties"] = {}
    return root


def wire(t: Tool) -> dict[str, Any]:
    """The tool as a tools/list entry (MCP wire shape)."""
    return {"name": t.name, "description": t.description, "inputSchema": t.input_schema()}
