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
  object, even one holding functions) makes a binding. Destructuring (``const {a, b} =
  require(…)``) declares nothing here;
- CommonJS: ``exports.f = function (…) {}`` / ``module.exports.f = (…) => …`` declare an
  exported function ``f``; ``module.exports = function/arrow/class`` one named after the class
  or ``module.exports``; ``export default function () {}`` one named ``default``;
- export lists make a top-level declaration exported: ``export { a, b as c }`` (not a
  re-export ``… from "m"``), ``export default a``, ``export = a``, ``module.exports = { a, b: c }``,
  ``module.exports = a``, ``exports.x = a`` / ``module.exports.x = a`` (``a`` and ``c`` here).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["BINDING_TYPES", "CONSTANT", "FUNCTION_VALUES", "GO_SPECS", "JS_LANGS", "VALUE_DECLARATIONS",
           "binding_kind", "binding_values", "cjs_target", "js_binding_name", "js_exported_names",
           "js_function_value", "listed", "unwrap", "value_name"]

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
    """The function a ``const/let/var`` declaration (its first declarator) binds: its value, or a
    function passed straight to the call that makes its value (``memo((p) => …)``)."""
    d = next((c for c in node.named_children if c.type == "variable_declarator"), None)
    value = unwrap(d.child_by_field_name("value")) if d is not None else None
    if value is None:
        return None
    if value.type in FUNCTION_VALUES:
        return value
    if value.type in _CALLS:
        args = value.child_by_field_name("arguments")
        if args is not None:
            return next((a for a in args.named_children if a.type in FUNCTION_VALUES), None)
    return None


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
