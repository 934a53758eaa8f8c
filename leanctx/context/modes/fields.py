"""The fields of a data class (Python), the properties of an object shape (TypeScript) or of a
class (TypeScript, JavaScript), written on the ``signatures`` row of their declaration.

A class whose annotated attributes are its constructor is read like a function: what matters is
what to pass. Its fields go on the class row, in source order, written like parameters
(``compact``'s rules: no spaces around ``=``, a default longer than ``MAX_DEFAULT`` characters
becomes ``…``, ``Annotated`` metadata elided, forward references unquoted)::

    12 @dataclass(frozen=True) class Point(x: int, y: int=0, tags: list[str]=…)
    30 class Msg(msgspec.Struct, frozen=True)(id: int, body: str=…)

One row rather than a ``fields`` row under it: the class line is written anyway, the field list
costs two characters more than the fields themselves (no line number, indentation or label),
and the call form ``Point(x: int, y: int=0)`` is how the class is constructed.

Python: which classes
    decorated ``@dataclass`` / ``@dataclasses.dataclass(...)`` / ``@pydantic.dataclasses.dataclass``,
    ``@attr.s`` / ``@attr.attrs`` / ``@define`` / ``@frozen`` / ``@mutable`` (any module prefix:
    ``@attrs.define``), or deriving from ``Struct`` (msgspec), ``BaseModel`` / ``RootModel`` /
    ``BaseSettings`` (pydantic), ``NamedTuple`` or ``TypedDict`` (any module prefix), or from a
    class of the same file that is one of these.
Python: inherited fields
    a data class is constructed with the fields of its data-class bases too, before its own. A
    base of the same file whose row shows fields is written first, as ``…Base``, and its fields
    are on its own row above: ``@dataclass class B(A)(…A, z: float=0.0)``, ``class
    ListType(CollectionType)(…CollectionType)`` (no field of its own, yet not built from
    nothing); several such bases in the order their fields come (the last base's first). A base
    from another module is not marked: whether it has fields is not known here (most such bases
    of the packages measured are plain mixins), and the base is named in the class's row anyway.
Python: which fields
    ``name: T`` and ``name: T = default`` directly in the class body, and, unannotated,
    ``name = attr.ib(...)`` / ``attrs.field(...)`` / ``field(...)``. Left out: ``ClassVar[...]``
    attributes (not fields) and fields declared ``init=False`` (not passed to the constructor).
    ``_: KW_ONLY`` is written ``*``, as in a parameter list. A default given through
    ``field(default=…)`` / ``attr.ib(…)`` / ``Field(…)`` is that value; ``default_factory=`` /
    ``factory=`` is ``=…``; such a call without a default (``field(kw_only=True)``,
    ``Field(..., alias="x")``, ``Field(default=...)``) means the field is required and is
    written without ``=``.
    A private field (``_x``: a name that starts with ``_`` and is no ``__dunder__``, the mode's
    private rule) is its name, and ``=…`` when it has a default, unless its annotation and
    default take no more than ``MAX_DEFAULT`` characters (then it is written whole).
TypeScript
    an exported ``interface`` (``export``, an export list, or inside ``declare``) gets its
    property and index signatures, in braces as TypeScript writes an object type
    (``export interface Options {name: string; retries?: number}``); an exported ``type X =
    {…}`` its object type (``export type Shape = {kind: "circle"; radius: number}``). Methods
    keep their own rows under the interface; types are verbatim (comments dropped, whitespace
    collapsed). A non-exported interface is a helper of its module, like a private Python
    function: its row stays, its properties are not written.
TypeScript and JavaScript classes
    an exported class (the interface rule, and CommonJS ``module.exports = X`` /
    ``exports.X = class …``) gets its property declarations (and index signatures) in the same
    braces, in source order: modifiers, decorators and the type kept, ``=`` without spaces, a
    value longer than ``MAX_DEFAULT`` characters ``…`` and a function value its parameters
    (``export class Foo {static count=0; baz?: string; readonly tags: string[]=…;
    onClick=(e: Event): void=>…}``). A private member (``private``, ``#name``) is not part of the
    class's API: it is written by the private field rule above (``private cache=…``, ``#n=0``),
    so nothing vanishes and no count is needed. Constructor parameter properties
    (``constructor(private readonly x: X)``) are on the constructor's row, not repeated here;
    methods, accessors and ``static {}`` blocks are not fields.
"""

from __future__ import annotations

import re
from typing import Any

from leanctx.context.symbols import bindings as _b

__all__ = ["shape"]

_DECORATORS = frozenset({"dataclass", "define", "frozen", "mutable"})  # last component of the name
_ATTR_S = frozenset({"attr.s", "attr.attrs", "attrs.s", "attrs.attrs"})
_BASES = frozenset({"Struct", "BaseModel", "RootModel", "BaseSettings", "NamedTuple", "TypedDict"})
_FIELD_CALLS = frozenset({"field", "ib", "attrib", "Field"})
_FACTORIES = frozenset({"default_factory", "factory"})
_CLASSVAR = re.compile(r"(?:^|[\s.\[|])ClassVar\b")
_KW_ONLY = frozenset({"KW_ONLY", "dataclasses.KW_ONLY"})
_TS_MEMBERS = frozenset({"property_signature", "index_signature"})
_JS_CLASSES = frozenset({"class_declaration", "abstract_class_declaration", "class", "assignment_expression"})
_JS_FIELDS = frozenset({"public_field_definition", "field_definition", "index_signature"})
_WS = re.compile(r"\s+")
_OPEN = re.compile(r"([(\[]) ")
_CLOSE = re.compile(r",? ([)\]])")


def shape(w: Any, node: Any, root: Any, limit: int) -> str:
    """What to append to the row of ``node`` (``''`` when it is not a data class or an exported
    object shape): `` (fields)`` glued to a Python class, `` {props}`` after a TS interface or
    a TS/JS class, `` = {props}`` after a TS object type alias. ``w`` is the compact walker (``compact``),
    ``root`` the wrapper holding its decorators; longer than ``limit`` characters: cut with ``…``."""
    if w.lang == "python":
        got = _python(w, node, root) if node.type == "class_definition" else ""
    elif node.type in ("interface_declaration", "type_alias_declaration") and w.lang in ("typescript", "tsx"):
        got = _typescript(w, node)
    elif node.type in _JS_CLASSES and w.lang in _b.JS_LANGS:
        got = _js_class(w, node)
    else:
        return ""
    if len(got) > limit:  # generated code only
        got = got[:limit].rstrip(" ,;") + " …" + got[-1]
    return got


# ---------------------------------------------------------------------- Python
def _python(w: Any, node: Any, root: Any) -> str:
    name = node.child_by_field_name("name")
    if not _is_data(w, node, root):
        return ""
    cls = w.text(name.start_byte, name.end_byte) if name is not None else ""
    if cls:
        w.data_classes.add(cls)
    with_fields = _with_fields(w)
    fields = [f"…{b}" for b in reversed(_bases(w, node)) if b in with_fields]  # inherited, first
    body = node.child_by_field_name("body")
    for c in body.named_children if body is not None else ():
        if c.type == "expression_statement" and c.named_child_count == 1:
            c = c.named_children[0]
        if c.type == "assignment":
            f = _py_field(w, c)
            if f is not None:
                fields.append(f)
    if fields and cls:
        with_fields.add(cls)
    return "(" + ", ".join(fields) + ")" if fields else ""


def _with_fields(w: Any) -> set[str]:
    """The data classes of the file so far whose row shows fields (their own or inherited)."""
    got: set[str] | None = getattr(w, "data_classes_with_fields", None)
    if got is None:
        got = set()
        w.data_classes_with_fields = got
    return got


def _bases(w: Any, node: Any) -> list[str]:
    """The base classes of a class definition, dotted, without their subscripts (``Base[T]``: ``Base``)."""
    sup = node.child_by_field_name("superclasses")
    return [_dotted(w, b) for b in (sup.named_children if sup is not None else ())
            if b.type in ("identifier", "attribute", "subscript", "generic_type")]


def _dotted(w: Any, n: Any) -> str:
    if n.type == "call":
        n = n.child_by_field_name("function") or n
    if n.type in ("subscript", "generic_type"):
        n = n.child_by_field_name("value") or (n.named_children[0] if n.named_children else n)
    return _WS.sub("", w.text(n.start_byte, n.end_byte))


def _is_data(w: Any, node: Any, root: Any) -> bool:
    if root is not node:
        for d in root.named_children:
            if d.type != "decorator" or not d.named_children:
                continue
            name = _dotted(w, d.named_children[0])
            if name.rsplit(".", 1)[-1] in _DECORATORS or name in _ATTR_S:
                return True
    return any(name.rsplit(".", 1)[-1] in _BASES or name in w.data_classes for name in _bases(w, node))


def _py_field(w: Any, a: Any) -> str | None:
    """``name: T=default`` for a field assignment, ``*`` for ``_: KW_ONLY``, None for no field."""
    left = a.child_by_field_name("left")
    if left is None or left.type != "identifier":
        return None
    name = w.text(left.start_byte, left.end_byte)
    typ = a.child_by_field_name("type")
    right = a.child_by_field_name("right")
    call = right if right is not None and right.type == "call" and _dotted(w, right).rsplit(".", 1)[-1] in _FIELD_CALLS else None
    if typ is None and call is None:
        return None  # a plain class attribute (``model_config = …``), not a field
    ann = _type(w, typ) if typ is not None else ""
    if _CLASSVAR.search(ann):
        return None
    if ann in _KW_ONLY:
        return "*"
    default = "" if right is None else _value(w, right)
    if call is not None:
        args = _call_args(w, call)
        if args.get("init") == "False":
            return None
        if not ann and "type" in args:
            ann = args["type"]
        if "default" in args:  # pydantic ``Field(default=...)``: required
            default = _short(args["default"]) if args["default"] != "..." else ""
        elif args.keys() & _FACTORIES:
            default = "…"
        elif 0 in args and args[0] != "...":  # ``attr.ib(0)`` / ``Field(0, ge=0)``; ``Field(...)``: required
            default = _short(args[0])
        else:
            default = ""  # ``field(kw_only=True)``: required
    tail = (f": {ann}" if ann else "") + (f"={default}" if default else "")
    private = name.startswith("_") and not (name.startswith("__") and name.endswith("__"))
    if private and len(tail) > _max_default():
        tail = "=…" if default else ""
    return name + tail


def _call_args(w: Any, call: Any) -> dict[str | int, str]:
    """A call's arguments: keyword ones by name, the first positional one under 0."""
    out: dict[str | int, str] = {}
    args = call.child_by_field_name("arguments")
    for c in args.named_children if args is not None else ():
        if c.type == "keyword_argument":
            k, v = c.child_by_field_name("name"), c.child_by_field_name("value")
            if k is not None and v is not None:
                out[w.text(k.start_byte, k.end_byte)] = _collapse(w.text(v.start_byte, v.end_byte))
        elif "comment" not in c.type and 0 not in out and not c.type.endswith("splat"):
            out[0] = _collapse(w.text(c.start_byte, c.end_byte))
    return out


def _type(w: Any, typ: Any) -> str:
    edits: list[tuple[int, int, bytes]] = []
    w._scan(typ, typ.start_byte, typ.end_byte, None, edits, True, False)
    edits.sort(key=lambda e: (e[0], -e[1]))
    return _tidy(w._apply(edits, typ.start_byte, typ.end_byte))


def _value(w: Any, v: Any) -> str:
    raw = w.text(v.start_byte, v.end_byte)
    return "…" if "\n" in raw.strip() else _short(_collapse(raw))


def _short(value: str) -> str:
    return "…" if len(value) > _max_default() or "\n" in value else value


def _max_default() -> int:
    from leanctx.context.modes.compact import MAX_DEFAULT

    return MAX_DEFAULT


def _collapse(s: str) -> str:
    return _WS.sub(" ", s).strip()


def _tidy(s: str) -> str:
    return _CLOSE.sub(r"\1", _OPEN.sub(r"\1", _collapse(s)))


# ---------------------------------------------------------------------- TypeScript
def _typescript(w: Any, node: Any) -> str:
    if node.type == "interface_declaration":
        body, lead = node.child_by_field_name("body"), " "
    else:
        body, lead = node.child_by_field_name("value"), " = "
        if body is None or body.type != "object_type":
            return ""
    if body is None or not _ts_exported(w, node):
        return ""
    props = [_ts_member(w, c) for c in body.named_children if c.type in _TS_MEMBERS]
    return lead + "{" + "; ".join(p for p in props if p) + "}" if props else ""


def _ts_exported(w: Any, node: Any) -> bool:
    """Exported: right under ``export``, anywhere under ``declare`` (an ambient declaration exports
    its members), or named in a top-level export list (``export { Options }``). An interface of
    an exported namespace is exported only when it says so."""
    name = node.child_by_field_name("name")
    top = node.parent is not None and node.parent.type == "program"
    if top and name is not None and w.text(name.start_byte, name.end_byte) in w.js_exports:
        return True
    if node.parent is not None and node.parent.type == "export_statement":
        return True
    p = node.parent
    while p is not None:
        if p.type == "ambient_declaration":
            return True
        p = p.parent
    return False


def _ts_member(w: Any, m: Any) -> str:
    edits: list[tuple[int, int, bytes]] = []
    todo = list(m.named_children)
    while todo:
        c = todo.pop()
        if "comment" in c.type:
            edits.append((c.start_byte, c.end_byte, b" "))
        else:
            todo.extend(c.named_children)
    edits.sort(key=lambda e: (e[0], -e[1]))
    return _tidy(w._apply(edits, m.start_byte, m.end_byte)).rstrip(";,").rstrip()


# ---------------------------------------------------------------------- TS/JS classes
def _js_class(w: Any, node: Any) -> str:
    """The property declarations of an exported class (``_ts_exported``; CommonJS
    ``module.exports.X = class …`` is exported), in braces after its row, in source order."""
    cls = _b.unwrap(node.child_by_field_name("right")) if node.type == "assignment_expression" else node
    body = cls.child_by_field_name("body") if cls is not None and cls.type in _JS_CLASSES else None
    if body is None or not (node.type == "assignment_expression" or _ts_exported(w, node)):
        return ""
    props = [_ts_member(w, c) if c.type == "index_signature" else _js_field(w, c)
             for c in body.named_children if c.type in _JS_FIELDS]
    return " {" + "; ".join(p for p in props if p) + "}" if props else ""


def _js_field(w: Any, f: Any) -> str:
    """``[decorators] [modifiers] name[?|!][: T][=value]``: the type verbatim (comments dropped),
    a value longer than ``MAX_DEFAULT`` characters ``…``, a function value its parameters and
    ``=>…``. A private member (``private``, ``#name``) by the private field rule (``_py_field``)."""
    name = f.child_by_field_name("name") or f.child_by_field_name("property")
    if name is None:
        return ""
    value = f.child_by_field_name("value")
    edits: list[tuple[int, int, bytes]] = []
    todo = [c for c in f.named_children if c.type != "decorator" and c.start_byte != getattr(value, "start_byte", -1)]
    while todo:  # comments (the value is written by ``_js_value``)
        c = todo.pop()
        if "comment" in c.type:
            edits.append((c.start_byte, c.end_byte, b" "))
        else:
            todo.extend(c.named_children)
    for d in f.children_by_field_name("decorator"):  # arguments past MAX_DECORATOR: ``(…)``
        w._scan(d, d.start_byte, d.end_byte, None, edits, False, False)
    eq = next((c for c in f.children if c.type == "="), None)
    if value is not None and eq is not None and eq.prev_sibling is not None:
        edits.append((eq.prev_sibling.end_byte, value.start_byte, b"="))
        edits.append((value.start_byte, value.end_byte, _js_value(w, value).encode()))
    edits.sort(key=lambda e: (e[0], -e[1]))
    head = _tidy(w._apply(edits, f.start_byte, name.end_byte))
    tail = _tidy(w._apply(edits, name.end_byte, f.end_byte)).rstrip(";,").rstrip()
    access = next((c for c in f.named_children if c.type == "accessibility_modifier"), None)
    private = w.text(name.start_byte, name.end_byte).startswith("#") or (
        access is not None and w.text(access.start_byte, access.end_byte) == "private")
    if private and len(tail) > _max_default():
        tail = "=…" if value is not None else ""
    return head + tail


def _js_value(w: Any, v: Any) -> str:
    """A field's value: whole when as short as ``MAX_DEFAULT`` characters, a function's
    parameters and return type (the compact walker's signature) and ``=>…``, else ``…``."""
    raw = _collapse(w.text(v.start_byte, v.end_byte))
    if len(raw) <= _max_default() and "\n" not in w.text(v.start_byte, v.end_byte):
        return raw
    fn = _b.unwrap(v)
    if fn is None or fn.type not in _b.FUNCTION_VALUES or fn.child_by_field_name("body") is None:
        return "…"
    body = fn.child_by_field_name("body")
    head = w._signature(fn, fn.start_byte, body)  # the compact walker's: parameters and return type
    return head + ("=>…" if fn.type == "arrow_function" else "{…}")
