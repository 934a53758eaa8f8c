"""Declarations from a tree-sitter parse (``tree_sitter_language_pack``, grammars bundled).

Which module-level bindings (constants, variables) count as declarations, and which names an
export list or CommonJS makes exported: see ``bindings``."""

from __future__ import annotations

import re
import threading
from typing import Any

from leanctx.context.symbols import bindings as _b
from leanctx.context.symbols.model import Symbol
from leanctx.context.symbols.specs import SPECS, LangSpec

__all__ = ["extract", "parser_for", "supported"]

_parsers: dict[str, Any] = {}
_lock = threading.Lock()
_WS = re.compile(r"\s+")
_TRAILERS = re.compile(r"(?:\s*(?:\{|:|=>|=|\bdo|\bwhere|;|,))+\s*$")
_OPEN = re.compile(r"([(\[]) ")
_CLOSE = re.compile(r",? \)")
_MAX_SIG = 4000  # generated code only: no real declaration comes near it
_ELIXIR_DEFS = {
    "defmodule": "module", "defprotocol": "protocol", "defimpl": "impl", "def": "function",
    "defp": "function", "defmacro": "macro", "defmacrop": "macro", "defguard": "function",
    "defguardp": "function", "defdelegate": "function", "defstruct": "struct", "defexception": "struct",
}
_ELIXIR_CONTAINERS = {"defmodule", "defprotocol", "defimpl"}
_NAME_TYPES = ("identifier", "type_identifier", "simple_identifier", "field_identifier", "constant",
               "name", "property_identifier", "word", "namespace_identifier", "qualified_identifier",
               "scoped_identifier", "operator_name", "destructor_name", "IDENTIFIER", "variable")


def supported(language: str) -> bool:
    return language in SPECS


def parser_for(language: str) -> Any:
    """A cached tree-sitter parser (one per language and process)."""
    p = _parsers.get(language)
    if p is None:
        from tree_sitter_language_pack import get_parser

        with _lock:
            p = _parsers.get(language)
            if p is None:
                p = get_parser(language)  # type: ignore[arg-type]
                _parsers[language] = p
    return p


class _Walker:
    def __init__(self, language: str, src: bytes) -> None:
        self.lang = language
        self.spec: LangSpec = SPECS[language]
        self.src = src
        self.out: list[Symbol] = []
        self._in_class = False
        self.js_exports: set[str] = set()  # names an export list or CommonJS exports (bindings)

    def text(self, start: int, end: int) -> str:
        return self.src[start:end].decode("utf-8", errors="replace")

    # ------------------------------------------------------------------ traversal
    def walk(self, node: Any, depth: int, parent: str, wrapper_start: int | None = None, exported: bool = False) -> None:
        spec = self.spec
        for child in node.named_children:
            t = child.type
            if t in spec.wrappers:
                start = wrapper_start if wrapper_start is not None else child.start_byte
                is_export = exported or t == "export_statement"
                if t == "decorated_definition":
                    inner = child.child_by_field_name("definition")
                    if inner is not None:
                        self.visit(inner, depth, parent, start, is_export)
                        continue
                self.walk(child, depth, parent, start, is_export)
                continue
            if t in spec.scopes:
                if not (t == "if_statement" and self.lang == "python" and _main_guard(self, child)):
                    self.walk(child, depth, parent)
                continue
            if t in spec.defs:
                self.visit(child, depth, parent, wrapper_start, exported)

    def visit(self, node: Any, depth: int, parent: str, wrapper_start: int | None, exported: bool) -> None:
        t = node.type
        if self.lang == "elixir":
            self._elixir(node, depth, parent)
            return
        if self.lang == "zig":
            self._zig(node, depth, parent)
            return
        need = self.spec.needs_child.get(t)
        if need and not _contains(node, need, 3):
            return
        exported = exported or t == "assignment_expression"  # CommonJS ``exports.f = …``
        kind = self._kind(node, depth, exported)
        if kind is None:
            return
        body = self._body(node)
        start = wrapper_start if wrapper_start is not None else node.start_byte
        sig = self._signature(node, start, body)
        name = self._name(node)
        if not name and sig:
            name = (sig.split("(")[0].split() or [""])[-1]
        sym = Symbol(
            name=name,
            kind=kind,
            line=node.start_point[0] + 1 if wrapper_start is None else _line_of(self.src, start),
            end_line=node.end_point[0] + 1,
            depth=depth,
            signature=sig,
            exported=self._exported(name, sig, exported, depth),
            parent=parent,
        )
        self.out.append(sym)
        if body is not None and (t in self.spec.containers or (t == "assignment_expression" and kind == "class")):
            saved = self._in_class
            self._in_class = kind not in {"namespace", "module"}
            self.walk(body, depth + 1, name)
            self._in_class = saved

    # ------------------------------------------------------------------ pieces
    def _kind(self, node: Any, depth: int, exported: bool = False) -> str | None:
        t = node.type
        kind = self.spec.defs[t]
        lang = self.lang
        if lang == "python" and t == "assignment":
            return self._binding_kind(node)
        if t in _b.BINDING_TYPES or t == "assignment_expression":
            return _b.binding_kind(lang, node, kind, exported, self.src, self.js_exports)
        if kind == "function" and depth > 0 and lang != "haskell" and self._in_class:
            kind = "method"
        if lang == "go" and t == "type_spec":
            ty = node.child_by_field_name("type")
            kind = {"struct_type": "struct", "interface_type": "interface"}.get(ty.type if ty else "", "type")
        elif lang == "kotlin" and t == "class_declaration":
            head = self.text(node.start_byte, min(node.end_byte, node.start_byte + 200))
            kind = "interface" if re.search(r"\binterface\b", head.split("{")[0]) else (
                "enum" if re.search(r"\benum\s+class\b", head) else "class")
        elif lang == "swift" and t == "class_declaration":
            dk = node.child_by_field_name("declaration_kind")
            kind = self.text(dk.start_byte, dk.end_byte) if dk is not None else "class"
        elif lang in {"c", "cpp"} and t == "declaration" and depth == 0 and lang == "c":
            kind = "function"
        return kind

    def _binding_kind(self, node: Any) -> str | None:
        """A Python assignment: ``type`` (a type alias), ``constant`` (UPPER_CASE or ``Final``),
        or None (a variable: not a declaration shown here)."""
        left = node.child_by_field_name("left")
        if left is None or left.type != "identifier":
            return None
        name = self.text(left.start_byte, left.end_byte)
        typ = node.child_by_field_name("type")
        ann = self.text(typ.start_byte, typ.end_byte) if typ is not None else ""
        right = node.child_by_field_name("right")
        if _TYPE_ALIAS_ANN.search(ann):
            return "type"
        if right is not None and right.type == "call":
            fn = right.child_by_field_name("function")
            if fn is not None and self.text(fn.start_byte, fn.end_byte).rsplit(".", 1)[-1] in _TYPE_FACTORIES:
                return "type"
        alias_like = name.lstrip("_")[:1].isupper() and right is not None and not typ
        if alias_like and right.type in {"subscript", "binary_operator"} and self._is_type_expr(right):
            return "type"  # ``Headers = dict[str, str]``, ``Id = int | str``
        if _CONSTANT.fullmatch(name) or _FINAL_ANN.match(ann):
            return "constant"
        if alias_like and right.type in {"identifier", "attribute"} and self._is_type_expr(right):
            return "type"  # ``Alias = SomeClass``
        return None

    def _is_type_expr(self, n: Any) -> bool:
        """``Union[...]``, ``dict[str, Any]``, ``A | B | None``: the value of a type alias."""
        if n.type == "binary_operator":
            op = n.child_by_field_name("operator")
            sides = (n.child_by_field_name("left"), n.child_by_field_name("right"))
            return op is not None and op.type == "|" and all(c is not None and self._is_type_expr(c) for c in sides)
        if n.type == "subscript":
            head = n.child_by_field_name("value")
            last = self.text(head.start_byte, head.end_byte).rsplit(".", 1)[-1] if head is not None else ""
            return last in _GENERIC_BUILTINS or (last[:1].isupper() and not last.isupper())
        if n.type in {"identifier", "attribute"}:
            last = self.text(n.start_byte, n.end_byte).rsplit(".", 1)[-1]
            return last in _GENERIC_BUILTINS or last in _BUILTIN_TYPES or (last[:1].isupper() and not last.isupper())
        return n.type in {"none", "string"}

    def _body(self, node: Any) -> Any | None:
        if node.type in {"lexical_declaration", "variable_declaration"}:
            fn = _b.js_function_value(node)
            return fn.child_by_field_name("body") if fn is not None else None
        if node.type == "assignment_expression":  # CommonJS: the function's or the class's body
            right = _b.unwrap(node.child_by_field_name("right"))
            return right.child_by_field_name("body") if right is not None else None
        if node.type in _b.BINDING_TYPES:
            return None
        if self.lang == "go" and node.type == "type_spec":
            ty = node.child_by_field_name("type")
            return ty if ty is not None and ty.type in {"struct_type", "interface_type"} else None
        if self.lang == "haskell" and node.type == "function":
            return node.child_by_field_name("match") or _first(node, {"match", "guards"})
        b = node.child_by_field_name("body")
        if b is not None:
            return b
        return _first(node, self.spec.bodies)

    def _signature(self, node: Any, start: int, body: Any | None) -> str:
        if body is not None and body.start_byte > start:
            raw = self.text(start, body.start_byte)
        else:
            raw = self.text(start, node.end_byte)
            lines = raw.split("\n")
            if len(lines) > 1:
                raw = lines[0] + (" …" if any(x.strip() for x in lines[1:]) else "")
        sig = _TRAILERS.sub("", _WS.sub(" ", raw).strip())
        sig = _CLOSE.sub(")", _OPEN.sub("(", sig))
        if self.lang == "go" and node.type == "type_spec":
            sig = "type " + sig
            if body is not None:
                sig += " " + body.type.split("_")[0]  # struct / interface
        elif node.type in _b.GO_SPECS:  # a spec of a ``const (...)`` block has no keyword of its own
            sig = f"{_b.GO_SPECS[node.type]} {sig}"
        if len(sig) > _MAX_SIG:
            sig = sig[:_MAX_SIG] + "…"
        return sig

    def _name(self, node: Any) -> str:
        if node.type in {"assignment", "type_alias_statement"} and self.lang == "python":
            left = node.child_by_field_name("left")
            if left is not None and left.type != "identifier":
                left = _first(left, {"identifier"}) or _first(_first(left, {"generic_type"}) or left, {"identifier"})
            return self.text(left.start_byte, left.end_byte) if left is not None else ""
        if self.lang in _b.JS_LANGS and node.type in _b.VALUE_DECLARATIONS:
            return _b.value_name(node, self.src)
        n = node.child_by_field_name("name")
        if n is None and self.lang in {"c", "cpp"}:
            n = _declarator_name(node)
        if n is None and node.type in {"lexical_declaration", "variable_declaration"}:
            d = _first(node, {"variable_declarator"})
            n = d.child_by_field_name("name") if d is not None else None
        if n is None and node.type == "impl_item":
            n = node.child_by_field_name("type")
        if n is None:
            n = _first(node, set(_NAME_TYPES))
        return self.text(n.start_byte, n.end_byte) if n is not None else ""

    def _exported(self, name: str, sig: str, exported: bool, depth: int) -> bool:
        lang = self.lang
        words = set(sig.split())
        if lang in _b.JS_LANGS:
            if depth == 0:
                return exported or name in self.js_exports
            return not ({"private", "protected"} & words or name.startswith("#"))
        if lang == "python":
            return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))
        if lang == "go":
            return name[:1].isupper()
        if lang in {"rust", "zig"}:
            return sig.startswith("pub")
        if lang == "c":
            return "static" not in words
        if lang == "lua":
            return not sig.startswith("local")
        return not ({"private", "protected", "fileprivate", "internal", "defp", "defmacrop"} & words)

    # ------------------------------------------------------------------ special grammars
    def _elixir(self, node: Any, depth: int, parent: str) -> None:
        target = node.child_by_field_name("target")
        macro = self.text(target.start_byte, target.end_byte) if target is not None else ""
        if macro not in _ELIXIR_DEFS:
            return
        args = _first(node, {"arguments"})
        name = ""
        if args is not None and args.named_children:
            a = args.named_children[0]
            head = a.child_by_field_name("target") if a.type == "call" else None
            n = head if head is not None else a
            name = self.text(n.start_byte, n.end_byte).split("(")[0]
        body = _first(node, {"do_block"})
        sig = self._signature(node, node.start_byte, body)
        sig = re.sub(r",\s*do:.*$", "", sig)
        self.out.append(Symbol(name=name, kind=_ELIXIR_DEFS[macro], line=node.start_point[0] + 1,
                               end_line=node.end_point[0] + 1, depth=depth, signature=sig,
                               exported=not macro.endswith("p"), parent=parent))
        if macro in _ELIXIR_CONTAINERS and body is not None:
            for c in body.named_children:
                if c.type == "call":
                    self._elixir(c, depth + 1, name)

    def _zig(self, node: Any, depth: int, parent: str) -> None:
        fn = _first(node, {"FnProto"})
        if fn is not None:
            nm = fn.child_by_field_name("function") or _first(fn, {"IDENTIFIER"})
            name = self.text(nm.start_byte, nm.end_byte) if nm is not None else ""
            body = _first(node, {"Block"})
            sig = self._signature(node, node.start_byte, body)
            if self.src[max(0, node.start_byte - 4) : node.start_byte].strip() == b"pub":
                sig = "pub " + sig
            self.out.append(Symbol(name=name, kind="method" if depth else "function", line=node.start_point[0] + 1,
                                   end_line=node.end_point[0] + 1, depth=depth, signature=sig,
                                   exported=sig.startswith("pub"), parent=parent))
            return
        var = _first(node, {"VarDecl"})
        container = _find(var, {"ContainerDecl"}, 3) if var is not None else None
        if var is None or container is None:
            return
        nm = var.child_by_field_name("variable_type_function") or _first(var, {"IDENTIFIER"})
        name = self.text(nm.start_byte, nm.end_byte) if nm is not None else ""
        ctype = _first(container, {"ContainerDeclType"})
        kind = self.text(ctype.start_byte, ctype.end_byte).split("(")[0] if ctype is not None else "struct"
        brace = self.src.find(b"{", container.start_byte, container.end_byte)
        is_pub = self.src[max(0, node.start_byte - 4) : node.start_byte].strip() == b"pub"
        sig = _TRAILERS.sub("", _WS.sub(" ", self.text(node.start_byte, brace if brace > 0 else container.end_byte)).strip())
        sig = "pub " + sig if is_pub else sig
        self.out.append(Symbol(name=name, kind=kind or "struct", line=node.start_point[0] + 1,
                               end_line=node.end_point[0] + 1, depth=depth, signature=sig,
                               exported=sig.startswith("pub"), parent=parent))
        for c in container.named_children:
            if c.type == "Decl":
                self._zig(c, depth + 1, name)


_CONSTANT = _b.CONSTANT
_FINAL_ANN = re.compile(r"(?:\w+\.)?Final\b")
_TYPE_ALIAS_ANN = re.compile(r"\bTypeAlias\b")
_TYPE_FACTORIES = frozenset({"TypeVar", "ParamSpec", "TypeVarTuple", "NewType", "NamedTuple", "TypedDict"})
_GENERIC_BUILTINS = frozenset({"list", "dict", "set", "frozenset", "tuple", "type"})
_BUILTIN_TYPES = frozenset({"int", "str", "bytes", "float", "bool", "complex", "object", "bytearray", "None"})


def _main_guard(w: _Walker, node: Any) -> bool:
    """``if __name__ == "__main__":``: demo code, not declarations of the module."""
    cond = node.child_by_field_name("condition")
    return cond is not None and "__name__" in w.text(cond.start_byte, cond.end_byte)


def _line_of(src: bytes, offset: int) -> int:
    return src.count(b"\n", 0, offset) + 1


def _first(node: Any, types: set[str] | frozenset[str]) -> Any | None:
    for c in node.named_children:
        if c.type in types:
            return c
    return None


def _find(node: Any, types: set[str] | frozenset[str], depth: int) -> Any | None:
    if depth < 0:
        return None
    for c in node.named_children:
        if c.type in types:
            return c
        got = _find(c, types, depth - 1)
        if got is not None:
            return got
    return None


def _contains(node: Any, types: frozenset[str], depth: int) -> bool:
    return _find(node, types, depth) is not None


def _declarator_name(node: Any) -> Any | None:
    d = node.child_by_field_name("declarator")
    for _ in range(6):
        if d is None:
            return None
        if d.type in {"identifier", "field_identifier", "qualified_identifier", "operator_name",
                      "destructor_name", "type_identifier"}:
            return d
        nxt = d.child_by_field_name("declarator")
        d = nxt if nxt is not None else _first(d, {"identifier", "field_identifier", "qualified_identifier"})
    return None


def extract(language: str, text: str, walker: type[_Walker] = _Walker) -> list[Symbol]:
    """All declarations of ``text`` in ``language`` (must be :func:`supported`); ``walker``
    renders their signatures (the ``signatures`` mode passes its compact one)."""
    src = text.encode("utf-8")
    tree = parser_for(language).parse(src)
    w = walker(language, src)
    if language in _b.JS_LANGS:
        w.js_exports = _b.js_exported_names(tree.root_node, src)
    w.walk(tree.root_node, 0, "")
    syms = w.out
    if language == "haskell":  # equations of a function that has a type signature are redundant
        typed = {s.name for s in syms if s.kind == "function" and "::" in s.signature}
        syms = [s for s in syms if not (s.name in typed and "::" not in s.signature)]
    return syms
