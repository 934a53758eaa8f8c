"""Module-level bindings (constants, variables) and export lists, for the tree-sitter walk.

Which bindings are declarations (one rule for every language that has them here):

- a binding is listed when its name is UPPER_CASE (the constant convention of Python,
  JavaScript and Rust) or it is exported: JavaScript/TypeScript ``export const/let/var``, a name
  of an export list (below), a Go name that starts with a capital, a Rust ``pub`` item. So a
  lowercase, unexported ``const x = …`` (JS) or ``const maxSize = …`` (Go) is not listed, and
  ``_`` never is. Python has no export marker: UPPER_CASE or ``Final``, and type aliases
  (``treesitter``). Kinds: ``constant`` (JS/TS const/let/var, Go const, Rust const),
  ``variable`` (Go var), ``static`` (Rust static);
- a JavaScript/TypeScript binding whose value is a function (``const f = (a) => …``,
  ``function (…) {}``, or a call wrapping one: ``memo((p) => …)``) is a function, listed
  whatever its name (its signature keeps its parameters and return type); any other value (an
  object, even one holding functions) makes a binding;
- every name a declaration binds is a binding of its own (``binds_many``): each declarator of
  ``export const a = 1, b = 2`` / ``var f = function () {}, g = …`` (written on its own after
  the declaration's keywords, ``export const b = 2``, at its own line), each name of a Go spec
  ``const A, B = 1, 2`` (sharing the spec's signature), each UPPER_CASE name of a Python
  assignment to a pattern or a chain (``A, B = 1, 2``, ``(X, Y) = …``, ``M = N = 0``: constants
  sharing the statement's line and signature). A name bound by destructuring
  (``export const { a, b: c } = o``, ``export const [x, y] = arr``) is listed only when
  exported (``export``, or an export list), whatever its case: ``const { A, b } =
  require(…)`` is an import, not a declaration. The names of one pattern share its line and
  signature;
- CommonJS: ``exports.f = function (…) {}`` / ``module.exports.f = (…) => …`` declare an
  exported function ``f``; ``module.exports = function/arrow/class`` one named after the class
  or ``module.exports``; ``export default function () {}`` one named ``default``;
- an exported object literal that holds functions (``module.exports = { f() {}, g: function
  () {}, h: () => … }``, ``exports.x = {…}``, ``export default {…}``, ``export = {…}``) is an
  exported ``object`` named ``module.exports`` / ``x`` / ``default``, with each of those
  functions (methods, and keys whose value is a function as above) as an exported member
  ``function`` at its own line; its other keys are not declarations;
- export lists make a top-level declaration exported: ``export { a, b as c }`` (not a
  re-export ``… from "m"``), ``export default a``, ``export = a``, ``module.exports = { a, b: c }``,
  ``module.exports = a``, ``exports.x = a`` / ``module.exports.x = a`` (``a`` and ``c`` here).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["BINDING_TYPES", "CONSTANT", "FUNCTION_VALUES", "GO_SPECS", "JS_LANGS", "VALUE_DECLARATIONS",
           "binding_kind", "binding_values", "binds_many", "bound_names", "cjs_target", "declarators",
           "exported_object", "function_of", "go_group", "js_binding_name", "js_exported_names", "js_function_value",
           "key_name", "listed", "object_functions", "py_binds_many", "py_bound_names", "unwrap", "value_name"]

CONSTANT = re.compile(r"_*[A-Z][A-Z0-9_]*")
JS_LANGS = frozenset({"javascript", "typescript", "tsx"})
FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})
# the node types of a binding: JS/TS ``const/let/var``, Go ``const``/``var`` specs, Rust items
BINDING_TYPES = frozenset({"lexical_declaration", "variable_declaration", "const_spec", "var_spec",
                           "const_item", "static_item"})
GO_SPECS = {"const_spec": "const", "var_spec": "var"}  # the keyword a spec of a block lacks
# a declaration that is a value: CommonJS ``exports.f = …``, ``export default function () {}``
VALUE_DECLARATIONS = FUNCTION_VALUES | {"class", "assignment_expression"}
_WRAPPED = frozenset({"parenthesized_expression", "as_expression", "satisfies_expression", "non_null_expression"})
_CALLS = frozenset({"call_expression", "new_expression"})


def listed(name: str, exported: bool) -> bool:
    """A module-level binding is a declaration when exported or named like a constant."""
    return bool(name) and name != "_" and (exported or CONSTANT.fullmatch(name) is not None)


def binding_kind(lang: str, node: Any, kind: str, exported: bool, src: bytes, js_exports: set[str]) -> str | None:
    """The kind of a binding or CommonJS assignment (``node``, declared as ``kind`` by the
    spec), or None when it is not a declaration (see the module doc)."""
    t = node.type
    if t == "assignment_expression":
        right = unwrap(node.child_by_field_name("right"))
        if cjs_target(node, src) is None or right is None:
            return None
        return "function" if right.type in FUNCTION_VALUES else "class" if right.type == "class" else None
    if t in {"lexical_declaration", "variable_declaration"}:
        if js_function_value(node) is not None:
            return kind
        name = js_binding_name(node, src)
        return "constant" if listed(name, exported or name in js_exports) else None
    n = node.child_by_field_name("name")
    name = _text(n, src) if n is not None else ""
    if lang == "go":
        return kind if listed(name, name[:1].isupper()) else None
    pub = any(c.type == "visibility_modifier" for c in node.named_children)  # Rust
    return kind if listed(name, pub) else None


def value_name(node: Any, src: bytes) -> str:
    """The name of a CommonJS assignment (the exported name; ``module.exports = class C`` its
    own) or of an exported function / class value (its own, else "default")."""
    if node.type == "assignment_expression":
        target = cjs_target(node, src) or ""
        right = unwrap(node.child_by_field_name("right"))
        own = right.child_by_field_name("name") if right is not None and target == "module.exports" else None
        return _text(own, src) if own is not None else target
    own = node.child_by_field_name("name")
    return _text(own, src) if own is not None else "default"


def unwrap(n: Any | None) -> Any | None:
    while n is not None and n.type in _WRAPPED and n.named_children:
        n = n.named_children[0]
    return n


def js_function_value(node: Any) -> Any | None:
    """The function a ``const/let/var`` declaration (its first declarator) binds (``function_of``)."""
    d = next((c for c in node.named_children if c.type == "variable_declarator"), None)
    return function_of(d.child_by_field_name("value")) if d is not None else None


def function_of(value: Any | None) -> Any | None:
    """The function a value is: itself, or a function passed straight to the call that makes it
    (``memo((p) => …)``); None for any other value."""
    value = unwrap(value)
    if value is None:
        return None
    if value.type in FUNCTION_VALUES:
        return value
    if value.type in _CALLS:
        args = value.child_by_field_name("arguments")
        if args is not None:
            return next((a for a in args.named_children if a.type in FUNCTION_VALUES), None)
    return None


def binds_many(node: Any) -> bool:
    """A declaration that binds more than one name, or a name through a pattern: several JS/TS
    declarators (``const a = 1, b = 2``), a destructuring one (``const {a, b} = o``), a Go spec
    with several names (``const A, B = 1, 2``)."""
    if node.type in GO_SPECS:
        return len(node.children_by_field_name("name")) > 1
    if node.type not in {"lexical_declaration", "variable_declaration"}:
        return False
    decls = declarators(node)
    if len(decls) != 1:
        return len(decls) > 1
    n = decls[0].child_by_field_name("name")
    return n is not None and n.type != "identifier"


_PY_PATTERNS = frozenset({"pattern_list", "tuple_pattern", "list_pattern", "parenthesized_expression",
                          "list_splat_pattern", "tuple", "list", "expression_list"})


def py_binds_many(node: Any) -> bool:
    """A Python assignment to a pattern (``A, B = 1, 2``, ``(X, Y) = …``, ``[P, Q] = …``) or a
    chain of them (``M = N = 0``)."""
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    return (left is not None and left.type in _PY_PATTERNS) or (right is not None and right.type == "assignment")


def py_bound_names(node: Any) -> list[Any]:
    """The identifiers a Python assignment (and every assignment chained in it) binds, in order:
    ``M = (A, [B, *C]) = …`` binds M, A, B, C; attributes and subscripts bind no name."""
    out: list[Any] = []

    def names(n: Any) -> None:
        if n.type == "identifier":
            out.append(n)
        elif n.type in _PY_PATTERNS:
            for c in n.named_children:
                names(c)

    while node is not None and node.type == "assignment":
        left = node.child_by_field_name("left")
        if left is not None:
            names(left)
        node = node.child_by_field_name("right")
    return out


def declarators(node: Any) -> list[Any]:
    return [c for c in node.named_children if c.type == "variable_declarator"]


def bound_names(pattern: Any | None) -> list[Any]:
    """The identifiers a declarator's name binds: itself, or each name of a destructuring pattern
    (``{a, b: c, ...d}`` binds a, c, d; ``[x, , y = 2]`` x, y), in order."""
    if pattern is None:
        return []
    t = pattern.type
    if t in {"identifier", "shorthand_property_identifier_pattern"}:
        return [pattern]
    if t == "pair_pattern":
        return bound_names(pattern.child_by_field_name("value"))
    if t in {"assignment_pattern", "object_assignment_pattern"}:
        return bound_names(pattern.child_by_field_name("left"))
    if t in {"object_pattern", "array_pattern", "rest_pattern"}:
        return [n for c in pattern.named_children for n in bound_names(c)]
    return []


def exported_object(node: Any, src: bytes) -> Any | None:
    """The object literal a module exports, when it holds functions: ``module.exports = {…}``,
    ``exports.x = {…}``, ``export default {…}``, ``export = {…}`` (``node`` the assignment or
    the object)."""
    if node.type == "assignment_expression":
        obj = unwrap(node.child_by_field_name("right")) if cjs_target(node, src) is not None else None
    else:
        obj = node if node.type == "object" and node.parent is not None and node.parent.type == "export_statement" else None
    return obj if obj is not None and obj.type == "object" and object_functions(obj) else None


def object_functions(obj: Any) -> list[tuple[Any, Any, Any]]:
    """(member, key, function) for each member of an object literal that is a function: a method
    (``f() {}``, ``async g() {}``, ``*h() {}``, get/set) or a key with a function value
    (``g: function () {}``, ``h: (x) => …``, ``k: memo(() => …)``)."""
    out: list[tuple[Any, Any, Any]] = []
    for m in obj.named_children:
        if m.type == "method_definition":
            key = m.child_by_field_name("name")
            if key is not None:
                out.append((m, key, m))
        elif m.type == "pair":
            key, fn = m.child_by_field_name("key"), function_of(m.child_by_field_name("value"))
            if key is not None and fn is not None:
                out.append((m, key, fn))
    return out


def key_name(key: Any, src: bytes) -> str:
    """A property key as a name: ``f``, ``'quoted-key'`` → ``quoted-key``, ``[expr]`` kept."""
    text = _text(key, src)
    return text[1:-1] if key.type == "string" and len(text) >= 2 else text


def js_binding_name(node: Any, src: bytes) -> str:
    """The name of a declaration's first declarator; "" for a destructuring pattern."""
    d = next((c for c in node.named_children if c.type == "variable_declarator"), None)
    n = d.child_by_field_name("name") if d is not None else None
    return src[n.start_byte : n.end_byte].decode("utf-8", "replace") if n is not None and n.type == "identifier" else ""


def _text(n: Any, src: bytes) -> str:
    return src[n.start_byte : n.end_byte].decode("utf-8", "replace")


def cjs_target(node: Any, src: bytes) -> str | None:
    """For ``module.exports = …`` "module.exports"; for ``exports.x = …`` /
    ``module.exports.x = …`` "x"; None for any other assignment."""
    left = node.child_by_field_name("left")
    if left is None or left.type != "member_expression":
        return None
    target = _text(left, src).replace(" ", "")
    if target == "module.exports":
        return target
    obj, prop = left.child_by_field_name("object"), left.child_by_field_name("property")
    if obj is None or prop is None or prop.type != "property_identifier":
        return None
    return _text(prop, src) if _text(obj, src).replace(" ", "") in {"exports", "module.exports"} else None


def js_exported_names(root: Any, src: bytes) -> set[str]:
    """Local names the module exports through an export list or CommonJS (see module doc)."""
    names: set[str] = set()
    for st in root.named_children:
        if st.type == "export_statement" and st.child_by_field_name("source") is None:
            for c in st.named_children:
                if c.type == "export_clause":
                    for spec in c.named_children:
                        local = spec.child_by_field_name("name")
                        if spec.type == "export_specifier" and local is not None:
                            names.add(_text(local, src))
                elif c.type == "identifier":  # export default a; export = a
                    names.add(_text(c, src))
        elif st.type == "expression_statement":
            for a in st.named_children:
                if a.type != "assignment_expression" or cjs_target(a, src) is None:
                    continue
                right = unwrap(a.child_by_field_name("right"))
                if right is None:
                    continue
                if right.type == "identifier":
                    names.add(_text(right, src))
                elif right.type == "object" and cjs_target(a, src) == "module.exports":
                    for p in right.named_children:
                        if p.type == "shorthand_property_identifier":
                            names.add(_text(p, src))
                        elif p.type == "pair":
                            v = unwrap(p.child_by_field_name("value"))
                            if v is not None and v.type == "identifier":
                                names.add(_text(v, src))
    return names


def binding_values(node: Any) -> list[Any]:
    """The value nodes of a binding declaration (each declarator's, the spec's, the item's)."""
    if node.type in {"lexical_declaration", "variable_declaration"}:
        found = [d.child_by_field_name("value") for d in node.named_children if d.type == "variable_declarator"]
        return [v for v in found if v is not None]
    v = node.child_by_field_name("value")
    return [v] if v is not None else []


def go_group(spec: Any) -> int:
    """The line of the parenthesized ``const (…)`` / ``var (…)`` group of a Go spec, else 0."""
    p = spec.parent
    if spec.type not in GO_SPECS or p is None or not any(c.type == "(" for c in p.children):
        return 0
    return p.start_point[0] + 1
