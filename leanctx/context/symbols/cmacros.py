"""C/C++: macro words before a function, which tree-sitter parses as a declaration of their own.

tree-sitter does not expand macros. One macro word before a function's type still parses as
the function (``CPy_NOINLINE void f(void)``, ``EXPORT_API int g(void);``, ``Py_LOCAL_INLINE(int)
h(void)``: the macro is read as the type, the real type as an error node, and the text of the
signature is right). Two or more macro words (``CPy_NOINLINE`` and ``CPy_COLD`` on the lines
before ``PyObject *f(...)``; ``PyAPI_FUNC(void) _Py_NO_RETURN Py_Exit(int);``) parse as a
declaration without a declarator, its ``;`` missing, and the function after it lost its
prefix: a definition then starts at its type, and a prototype becomes a call statement.

Such words are the prefix of the declaration that follows them (its signature and line start
with them) when they are only specifiers, attributes and names, with nothing but whitespace and
at most one line break between them and the function (no blank line, no comment).
"""

from __future__ import annotations

from typing import Any

__all__ = ["prefix", "prototype"]

# what macro words parse as
_WORDS = frozenset({"type_identifier", "identifier", "primitive_type", "sized_type_specifier",
                    "storage_class_specifier", "type_qualifier", "attribute_specifier",
                    "attribute_declaration", "macro_type_specifier", "ms_declspec_modifier",
                    "virtual", "virtual_specifier", "explicit_function_specifier"})


def prefix(node: Any, src: bytes) -> Any | None:
    """The macro-word declaration right before ``node`` (see module doc), or None."""
    prev = node.prev_sibling
    if prev is None or prev.type != "declaration" or not prev.children or not prev.children[-1].is_missing:
        return None
    if not prev.named_children or any(c.type not in _WORDS for c in prev.named_children):
        return None
    gap = src[prev.end_byte : node.start_byte]
    if gap.strip() or gap.count(b"\n") > 1 or b"\n\n" in src[prev.start_byte : prev.end_byte]:
        return None
    return prev


def prototype(node: Any, src: bytes) -> tuple[Any, Any] | None:
    """For a call statement after macro words (``PyAPI_FUNC(void) _Py_NO_RETURN Py_Exit(int);``):
    the macro words and the function's name; None for any other statement."""
    if node.type != "expression_statement" or not node.named_children:
        return None
    call = node.named_children[0]
    fn = call.child_by_field_name("function") if call.type == "call_expression" else None
    if fn is None or fn.type != "identifier":
        return None
    words = prefix(node, src)
    return (words, fn) if words is not None else None
