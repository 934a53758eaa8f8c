"""Declarations from a tree-sitter parse (``tree_sitter_language_pack``, grammars bundled).

Which module-level bindings (constants, variables) count as declarations, which names an
export list or CommonJS makes exported, and how a declaration that binds several names or an
exported object literal of functions become several symbols: see ``bindings``. C/C++ macro words
before a function: ``cmacros``. Elixir and Zig: ``special``; Makefiles: ``make``. A function
declared without a body (C prototype, TS overload, Rust trait method) has its whole declaration
as its signature (``prototype``); any other bodiless declaration spanning lines, its first line
and ``…``."""

from __future__ import annotations

import re
import threading
from typing import Any

from leanctx.context.symbols import bindings as _b
from leanctx.context.symbols import cmacros as _cmacros
from leanctx.context.symbols import make as _make
from leanctx.context.symbols import special as _special
from leanctx.context.symbols.model import Symbol
from leanctx.context.symbols.nodes import contains as _contains
from leanctx.context.symbols.nodes import first as _first
from leanctx.context.symbols.nodes import line_of as _line_of
from leanctx.context.symbols.specs import SPECS, LangSpec

__all__ = ["extract", "parser_for", "supported"]

_parsers: dict[str, Any] = {}
_lock = threading.Lock()
_WS = re.compile(r"\s+")
_TRAILERS = re.compile(r"(?:\s*(?:\{|:|=>|=|\bdo|\bwhere|;|,))+\s*$")
_OPEN = re.compile(r"([(\[]) ")
_CLOSE = re.compile(r",? \)")
_MAX_SIG = 4000  # generated code only: no real declaration comes near it
_NAME_TYPES = ("identifier", "type_identifier", "simple_identifier", "field_identifier", "constant",
               "name", "property_identifier", "word", "namespace_identifier", "qualified_identifier",
               "scoped_identifier", "operator_name", "destructor_name", "IDENTIFIER", "variable")


def supported(language: str) -> bool:
    return language in SPECS or language in _WHOLE_FILE


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
            elif t == "expression_statement" and self.lang in _C_LANGS:
                self._c_prototype(child, depth, parent)

    def visit(self, node: Any, depth: int, parent: str, wrapper_start: int | None, exported: bool) -> None:
        t = node.type
        if self.lang == "elixir":
            _special.elixir(self, node, depth, parent)
            return
        if self.lang == "zig":
            _special.zig(self, node, depth, parent)
            return
        need = self.spec.needs_child.get(t)
        if need and not _contains(node, need, 3):
            return
        if self.lang in _b.JS_LANGS and t in {"assignment_expression", "object"}:
            obj = _b.exported_object(node, self.src)
            if obj is not None:
                self._object(node, obj, depth, parent, wrapper_start)
                return
            if t == "object":
                return
        if t in _b.BINDING_TYPES and _b.binds_many(node):
            self._bindings(node, depth, parent, wrapper_start, exported)
            return
        if self.lang == "python" and t == "assignment" and _b.py_binds_many(node):
            self._py_bindings(node, depth, parent)
            return
        if self.lang in _C_LANGS and wrapper_start is None:
            words = _cmacros.prefix(node, self.src)
            wrapper_start = words.start_byte if words is not None else None
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
            group=_b.go_group(node) if self.lang == "go" else 0,
        )
        self.out.append(sym)
        if body is not None and (t in self.spec.containers or (t == "assignment_expression" and kind == "class")):
            saved = self._in_class
            self._in_class = kind not in {"namespace", "module"}
            self.walk(body, depth + 1, name)
            self._in_class = saved

    # ------------------------------------------------------------------ several symbols from one node
    def _add(self, name: str, kind: str, node: Any, start: int, sig: str, depth: int, parent: str,
             exported: bool) -> None:
        self.out.append(Symbol(name=name, kind=kind, line=_line_of(self.src, start), end_line=node.end_point[0] + 1,
                               depth=depth, signature=sig, exported=self._exported(name, sig, exported, depth),
                               parent=parent, group=_b.go_group(node) if self.lang == "go" else 0))

    def _bindings(self, node: Any, depth: int, parent: str, wrapper_start: int | None, exported: bool) -> None:
        """A declaration binding several names (``bindings.binds_many``): one symbol per name
        that is a declaration. A JS/TS declarator is written on its own, after the declaration's
        keywords (``export const b = 2``), at its line; the names of one pattern or Go spec share
        its signature and line."""
        start = wrapper_start if wrapper_start is not None else node.start_byte
        if node.type in _b.GO_SPECS:
            sig = self._signature(node, start, None)
            for n in node.children_by_field_name("name"):
                name = self.text(n.start_byte, n.end_byte)
                if _b.listed(name, name[:1].isupper()):
                    self._add(name, self.spec.defs[node.type], node, start, sig, depth, parent, exported)
            return
        decls = _b.declarators(node)
        keywords = _WS.sub(" ", self.text(start, decls[0].start_byte)).strip()
        for i, d in enumerate(decls):
            at = start if i == 0 else d.start_byte
            pattern = d.child_by_field_name("name")
            single = pattern is not None and pattern.type == "identifier"
            fn = _b.function_of(d.child_by_field_name("value")) if single else None
            body = fn.child_by_field_name("body") if fn is not None else None
            sig = f"{keywords} {self._signature(d, d.start_byte, body)}"
            for n in _b.bound_names(pattern):
                name = self.text(n.start_byte, n.end_byte)
                is_exported = exported or name in self.js_exports
                if fn is not None:
                    self._add(name, self.spec.defs[node.type], d, at, sig, depth, parent, exported)
                elif _b.listed(name, is_exported) and (single or is_exported):  # destructured: exported only
                    self._add(name, "constant", d, at, sig, depth, parent, exported)

    def _py_bindings(self, node: Any, depth: int, parent: str) -> None:
        """``A, B = 1, 2`` / ``M = N = 0``: a constant per UPPER_CASE name, sharing line and signature."""
        sig = self._signature(node, node.start_byte, None)
        for name in (self.text(n.start_byte, n.end_byte) for n in _b.py_bound_names(node)):
            if _b.listed(name, False):
                self._add(name, "constant", node, node.start_byte, sig, depth, parent, False)

    def _object(self, node: Any, obj: Any, depth: int, parent: str, wrapper_start: int | None) -> None:
        """An exported object literal holding functions (``bindings.exported_object``): the object,
        named after what exports it, with its functions as members."""
        start = wrapper_start if wrapper_start is not None else node.start_byte
        name = (_b.cjs_target(node, self.src) or "") if node.type == "assignment_expression" else "default"
        self._add(name, "object", node, start, self._signature(node, start, obj), depth, parent, True)
        for member, key, fn in _b.object_functions(obj):
            sig = self._signature(member, member.start_byte, fn.child_by_field_name("body"))
            self._add(_b.key_name(key, self.src), "function", member, member.start_byte, sig, depth + 1, name, True)

    def _c_prototype(self, node: Any, depth: int, parent: str) -> None:
        """A C/C++ prototype after macro words, parsed as a call statement (``cmacros``)."""
        got = _cmacros.prototype(node, self.src)
        if got is not None:
            words, fn = got
            self._add(self.text(fn.start_byte, fn.end_byte), "function", node, words.start_byte,
                      self._signature(node, words.start_byte, None), depth, parent, False)

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
            if len(lines) > 1 and not prototype(node):
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


_CONSTANT = _b.CONSTANT
_WHOLE_FILE = {"make": _make.extract}  # no declaration walk: rules and variables (``make``)
_C_LANGS = frozenset({"c", "cpp"})
_FUNCTION_DECLARATORS = frozenset({"function_declarator"})
_FINAL_ANN = re.compile(r"(?:\w+\.)?Final\b")
_TYPE_ALIAS_ANN = re.compile(r"\bTypeAlias\b")
_TYPE_FACTORIES = frozenset({"TypeVar", "ParamSpec", "TypeVarTuple", "NewType", "NamedTuple", "TypedDict"})
_GENERIC_BUILTINS = frozenset({"list", "dict", "set", "frozenset", "tuple", "type"})
_BUILTIN_TYPES = frozenset({"int", "str", "bytes", "float", "bool", "complex", "object", "bytearray", "None"})


def prototype(node: Any) -> bool:
    """A function declared without a body (a C prototype, a TS overload or interface method, a
    Rust trait method): all of it is its signature, its parameters on as many lines as they are."""
    if node.type == "expression_statement":  # a C prototype after macro words (cmacros)
        return True
    if node.child_by_field_name("parameters") is not None:
        return True
    return node.type in {"declaration", "field_declaration"} and _contains(node, _FUNCTION_DECLARATORS, 3)


def _main_guard(w: _Walker, node: Any) -> bool:
    """``if __name__ == "__main__":``: demo code, not declarations of the module."""
    cond = node.child_by_field_name("condition")
    return cond is not None and "__name__" in w.text(cond.start_byte, cond.end_byte)


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
    whole = _WHOLE_FILE.get(language)
    if whole is not None:  # a language walked by a module of its own, whose signatures are compact
        return whole(parser_for(language), src)
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
