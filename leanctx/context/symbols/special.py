"""Declarations of the grammars whose trees do not follow the usual shape (Elixir, Zig): walked
by hand, with the walker's ``text`` and ``_signature`` (so the ``signatures`` mode renders them
compactly too)."""

from __future__ import annotations

import re
from typing import Any

from leanctx.context.symbols.model import Symbol
from leanctx.context.symbols.nodes import find, first

__all__ = ["elixir", "zig"]

_WS = re.compile(r"\s+")
_TRAILERS = re.compile(r"(?:\s*(?:\{|:|=>|=|\bdo|\bwhere|;|,))+\s*$")
_ELIXIR_DEFS = {
    "defmodule": "module", "defprotocol": "protocol", "defimpl": "impl", "def": "function",
    "defp": "function", "defmacro": "macro", "defmacrop": "macro", "defguard": "function",
    "defguardp": "function", "defdelegate": "function", "defstruct": "struct", "defexception": "struct",
}
_ELIXIR_CONTAINERS = {"defmodule", "defprotocol", "defimpl"}


def elixir(w: Any, node: Any, depth: int, parent: str) -> None:
    """``def``/``defmodule``/... calls: declarations; a module's body is walked one level down."""
    target = node.child_by_field_name("target")
    macro = w.text(target.start_byte, target.end_byte) if target is not None else ""
    if macro not in _ELIXIR_DEFS:
        return
    args = first(node, {"arguments"})
    name = ""
    if args is not None and args.named_children:
        a = args.named_children[0]
        head = a.child_by_field_name("target") if a.type == "call" else None
        n = head if head is not None else a
        name = w.text(n.start_byte, n.end_byte).split("(")[0]
    body = first(node, {"do_block"})
    sig = w._signature(node, node.start_byte, body)
    sig = re.sub(r",\s*do:.*$", "", sig)
    w.out.append(Symbol(name=name, kind=_ELIXIR_DEFS[macro], line=node.start_point[0] + 1,
                        end_line=node.end_point[0] + 1, depth=depth, signature=sig,
                        exported=not macro.endswith("p"), parent=parent))
    if macro in _ELIXIR_CONTAINERS and body is not None:
        for c in body.named_children:
            if c.type == "call":
                elixir(w, c, depth + 1, name)


def zig(w: Any, node: Any, depth: int, parent: str) -> None:
    """A ``Decl``: a function, or a container (``const S = struct { ... }``) with its members."""
    fn = first(node, {"FnProto"})
    is_pub = w.src[max(0, node.start_byte - 4) : node.start_byte].strip() == b"pub"
    if fn is not None:
        nm = fn.child_by_field_name("function") or first(fn, {"IDENTIFIER"})
        name = w.text(nm.start_byte, nm.end_byte) if nm is not None else ""
        body = first(node, {"Block"})
        sig = w._signature(node, node.start_byte, body)
        if is_pub:
            sig = "pub " + sig
        w.out.append(Symbol(name=name, kind="method" if depth else "function", line=node.start_point[0] + 1,
                            end_line=node.end_point[0] + 1, depth=depth, signature=sig,
                            exported=sig.startswith("pub"), parent=parent))
        return
    var = first(node, {"VarDecl"})
    container = find(var, {"ContainerDecl"}, 3) if var is not None else None
    if var is None or container is None:
        return
    nm = var.child_by_field_name("variable_type_function") or first(var, {"IDENTIFIER"})
    name = w.text(nm.start_byte, nm.end_byte) if nm is not None else ""
    ctype = first(container, {"ContainerDeclType"})
    kind = w.text(ctype.start_byte, ctype.end_byte).split("(")[0] if ctype is not None else "struct"
    brace = w.src.find(b"{", container.start_byte, container.end_byte)
    sig = _TRAILERS.sub("", _WS.sub(" ", w.text(node.start_byte, brace if brace > 0 else container.end_byte)).strip())
    sig = "pub " + sig if is_pub else sig
    w.out.append(Symbol(name=name, kind=kind or "struct", line=node.start_point[0] + 1,
                        end_line=node.end_point[0] + 1, depth=depth, signature=sig,
                        exported=sig.startswith("pub"), parent=parent))
    for c in container.named_children:
        if c.type == "Decl":
            zig(w, c, depth + 1, name)
