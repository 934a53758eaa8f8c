"""``ctx_call`` (run any tool by name, listed or not) and ``ctx_load_tools`` (the caller's lazy
tool categories: list, load, unload).

``ctx_call`` calls through ``registry.call`` with the same caller, so the registry's exec policy
holds for the tool it names (``HTTP_EXEC_DISABLED`` for ``ctx_shell`` on a ``--no-exec`` server);
the listing names only what the caller may call that way (no ``ctx_shell``/``ctx_edit`` without exec)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from ...errors import InvalidInput
from .. import registry
from ..registry import CATEGORIES, Caller, tool


class CallArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str
    args: dict[str, Any] = {}


@tool("ctx_call", category="core", args=CallArgs, description="""
Run any lean-ctx tool by name with its arguments, even one whose category is not loaded.""")
def ctx_call(lc: Any, caller: Caller, a: CallArgs) -> dict[str, Any]:
    if a.name == "ctx_call":
        raise InvalidInput("INVALID_ARGUMENT", "ctx_call cannot call itself; name another tool")
    return registry.call(lc, caller, a.name, a.args)


class LoadArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    action: Literal["list", "load", "unload"] = "list"
    categories: list[str] = []


def _listing(loaded: set[str], allow_exec: bool) -> list[dict[str, Any]]:
    out = []
    for name, about in CATEGORIES.items():
        names = [t.name for t in registry.tools([name], allow_exec=allow_exec)]
        out.append({"category": name, "loaded": name in loaded, "tools": names, "about": about})
    return out


@tool("ctx_load_tools", category="core", args=LoadArgs, description=f"""
List, load or unload tool categories ({', '.join(CATEGORIES)}); core and session are listed at
start.""")
def ctx_load_tools(lc: Any, caller: Caller, a: LoadArgs) -> dict[str, Any]:
    bad = [c for c in a.categories if c not in CATEGORIES]
    if bad:
        raise InvalidInput("TOOLS_UNKNOWN_CATEGORY",
                           f"no tool category {', '.join(map(repr, bad))}; use {', '.join(CATEGORIES)}")
    if a.action != "list" and not a.categories:
        raise InvalidInput("INVALID_ARGUMENT", f"ctx_load_tools {a.action} needs categories")
    ts = caller.toolset
    changed: list[str] = []
    if ts is None:
        loaded = set(CATEGORIES)  # this transport lists every tool
        note = "every category is available here"
    else:
        if a.action == "load":
            changed = ts.load(a.categories)
        elif a.action == "unload":
            changed = ts.unload(a.categories)
        loaded = set(ts.loaded())
        note = f"{a.action}ed: {', '.join(changed)}" if changed else ("" if a.action == "list" else "nothing changed")
    rows = _listing(loaded, caller.allow_exec)
    lines = [f"{'*' if r['loaded'] else ' '} {r['category']}: {', '.join(r['tools']) or '(no tools yet)'} — {r['about']}"
             for r in rows]
    if note:
        lines.append(f"[{note}]")
    return {"text": "\n".join(lines), "categories": rows, "changed": changed}
