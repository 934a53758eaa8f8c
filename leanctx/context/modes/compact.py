"""Compact declarations for the ``signatures`` mode.

The same tree-sitter walk as ``leanctx.context.symbols`` (same names, kinds, line numbers,
depths and export flags), with each signature rendered compactly from the syntax tree. Every
parameter, its type and the return type stay; what goes is syntax the reader does not need:

- comments inside a signature are dropped (``# pragma: no cover``, notes between parameters);
- the function keyword is dropped where the name and its parameter list follow it
  (``def f(x)`` → ``f(x)``, ``pub fn new()`` → ``pub new()``, ``function total(p)`` →
  ``total(p)``): the parentheses already say it is a function. ``class``, ``struct``, ...
  stay, and so does ``func`` before a Go receiver or ``def`` without parentheses;
- no spaces around a default's ``=`` or a return arrow (``x: int=0``, ``)->str``);
- a default value longer than ``MAX_DEFAULT`` characters becomes ``…`` (``=…``): the
  parameter, its type and the fact that it has a default stay;
- a string literal longer than ``MAX_STRING`` characters becomes ``"…"`` (deprecation
  messages in decorators, help texts), except in a type annotation: Python forward
  references lose their quotes (``-> "Style"`` → ``-> Style``) and ``Literal[...]`` values
  stay verbatim;
- a C++ constructor's member initializer list becomes ``: …``;
- decorator / annotation / attribute arguments longer than ``MAX_DECORATOR`` characters become
  ``(…)`` (``@deprecated(…)``): the decorator's name stays;
- ``Annotated[T, metadata...]`` keeps ``T`` and elides the metadata (``Annotated[T, …]``);
- the receiver ``self`` / ``cls`` of a Python method is left out (the method is shown under
  its class, and ``@classmethod`` / ``@staticmethod`` stay), and so is ``-> None`` on
  ``__init__`` (it can return nothing else);
- past ``MAX_DECORATORS`` stacked decorators, the first ones and a count are shown
  (``@click.command(…) @click.option(…) (+13 decorators) main(…)``);
- a Python constant is ``NAME[: T] = value`` with a value longer than ``MAX_STRING``
  characters elided; a type alias keeps its value, which is the type. The module-level bindings
  of other languages (``export const K = 1``, ``export const CONFIG = …``, Go ``const A Kind =
  iota`` / ``var ErrX = …``, Rust ``pub const N: usize = 4``; which ones: see
  ``leanctx.context.symbols.bindings``) are written the same way, each value elided alike; a
  JS/TS declarator of a declaration that has several is written on its own after the
  declaration's keywords (``export const a = 1, b = 2`` → ``export const a = 1`` and ``export
  const b = 2``);
- a function declared without a body (a C prototype, a TS overload or interface method, a
  Rust trait method) is its whole declaration, its parameters on as many lines as they take; any
  other declaration without a body whose text spans lines is its first line and ``…``;
- a data class carries its fields on its row, written like parameters and by the rules above
  (``@dataclass class Point(x: int, y: int=0, tags: list[str]=…)``, ``class Msg(Struct)(id:
  int)``; dataclasses, attrs, msgspec ``Struct``, pydantic ``BaseModel``, ``NamedTuple``,
  ``TypedDict``; ``ClassVar`` left out), an exported TypeScript interface or object type alias
  its property signatures (``export interface Options {name: string; retries?: number}``), and
  an exported TypeScript or JavaScript class its field declarations (``export class Cache {private
  store; static max=100; ttl?: number}``): which classes, which fields and why one row, see
  ``leanctx.context.modes.fields``;
- whitespace is collapsed. Only a signature longer than ``MAX_SIG`` characters (generated
  code; no real one comes near it) is cut, after its name, with ``…``.

Nothing here changes which declarations are found: only how each one is written. Every elision
of source text is marked with ``…``.
"""

from __future__ import annotations

import re
from typing import Any

from leanctx.context.modes import fields as _fields
from leanctx.context.symbols import bindings as _b
from leanctx.context.symbols import regex as _regex
from leanctx.context.symbols import treesitter as _ts
from leanctx.context.symbols.model import Symbol

__all__ = ["MAX_DECORATOR", "MAX_DECORATORS", "MAX_DEFAULT", "MAX_SIG", "MAX_STRING", "compact_symbols"]

MAX_DEFAULT = 12
MAX_STRING = 24
MAX_DECORATOR = 24
MAX_SIG = 4000
MAX_DECORATORS = 3  # more decorators than this: the first ones and a count

_DECORATOR_TYPES = frozenset({"decorator", "annotation", "marker_annotation", "attribute_list", "attribute_item"})
_DEFAULT_HOLDERS = frozenset({"assignment_pattern", "equals_value_clause", "optional_parameter_declaration"})
_FN_KEYWORDS = frozenset({"def", "fn", "func", "fun", "function"})
_NAMES = frozenset(_ts._NAME_TYPES) | {"dot_index_expression", "method_index_expression"}
_RECEIVERS = frozenset({b"self", b"cls"})
_FORWARD_REF = re.compile(rb"[A-Za-z_][\w.]*(?:\[[\w.,\[\] |]*\])?(?: \| [A-Za-z_][\w.]*(?:\[[\w.,\[\] |]*\])?)*")
_INTERESTING_IN_TYPE = re.compile(rb"[\"'#]|Annotated")  # strings, comments, metadata to elide
_WS = re.compile(r"\s+")
_OPEN = re.compile(r"([(\[]) ")
_CLOSE = re.compile(r",? ([)\]])")


_STRING_TYPES: dict[str, bool] = {}


def _is_string(t: str) -> bool:
    got = _STRING_TYPES.get(t)
    if got is None:
        got = _STRING_TYPES[t] = t.endswith(("string", "string_literal")) or t == "encapsed_string"
    return got


class _CompactWalker(_ts._Walker):  # reuse the walk, render compactly
    """The symbols walker with a compact ``_signature``."""

    def __init__(self, language: str, src: bytes) -> None:
        super().__init__(language, src)
        self.data_classes: set[str] = set()  # Python data classes seen so far (``fields``)

    def _signature(self, node: Any, start: int, body: Any | None) -> str:
        if self.lang == "python" and node.type in {"assignment", "type_alias_statement"}:
            return self._binding(node)
        if body is None and (node.type in _b.BINDING_TYPES or node.type == "variable_declarator"):
            return self._module_binding(node, start)
        has_body = body is not None and body.start_byte > start
        end = body.start_byte if body is not None and has_body else node.end_byte
        root = node
        while root.start_byte > start and root.parent is not None:
            root = root.parent  # decorators live beside the definition, in its wrapper
        edits: list[tuple[int, int, bytes]] = []
        self._scan(root, start, end, body, edits, False, False)
        self._syntax(node, end, edits)
        if self.lang == "python" and node.type == "function_definition":
            self._python_method(node, edits)
        edits.sort(key=lambda e: (e[0], -e[1]))  # of two edits at one place, the wider wins
        split = max(start, min(node.start_byte, end))  # wrapper prefix (decorators, export) | declaration
        prefix = self._prefix(root, start, split, edits)
        raw = self._apply(edits, split, end)
        if not has_body and not _ts.prototype(node):
            lines = raw.split("\n")
            if len(lines) > 1:
                raw = lines[0] + (" …" if any(x.strip() for x in lines[1:]) else "")
        sig = _ts._TRAILERS.sub("", _WS.sub(" ", raw).strip())
        sig = _CLOSE.sub(r"\1", _OPEN.sub(r"\1", sig))
        if self.lang == "go" and node.type == "type_spec":
            sig = "type " + sig
            if body is not None:
                sig += " " + body.type.split("_")[0]
        if len(sig) > MAX_SIG:  # generated code only: cut the parameters, never the name
            name = self._name(node)
            at = sig.find(name) if name else -1
            keep = at + len(name) if at >= 0 else 0
            cut = sig.rfind(" ", keep, MAX_SIG)
            if cut <= keep:
                cut = max(MAX_SIG, keep)
            sig = sig[:cut].rstrip(" ,") + " …"
        if not sig:  # the declaration is all prefix: ``export default {…}``
            return _ts._TRAILERS.sub("", prefix)
        sig += _fields.shape(self, node, root, MAX_SIG)
        return f"{prefix} {sig}" if prefix else sig

    def _binding(self, node: Any) -> str:
        """A Python constant or type alias: ``NAME: T = value``. A type alias keeps its value (the
        type); a constant's value longer than ``MAX_STRING`` characters becomes ``…``."""
        edits: list[tuple[int, int, bytes]] = []
        is_alias = node.type == "type_alias_statement" or self._binding_kind(node) == "type"
        for c in node.named_children:
            if c.type == "comment":
                edits.append((c.start_byte, c.end_byte, b" "))
            elif c.type != "call" and (c != node.child_by_field_name("right") or is_alias):  # types
                self._scan(c, node.start_byte, node.end_byte, None, edits, True, False)
        right = node.child_by_field_name("right")
        if right is not None and not is_alias:
            value = _WS.sub(" ", self.text(right.start_byte, right.end_byte)).strip()
            if len(value) > MAX_STRING or "\n" in self.text(right.start_byte, right.end_byte).strip():
                edits.append((right.start_byte, right.end_byte, "…".encode()))
        edits.sort(key=lambda e: (e[0], -e[1]))
        sig = _WS.sub(" ", self._apply(edits, node.start_byte, node.end_byte)).strip()
        return _CLOSE.sub(r"\1", _OPEN.sub(r"\1", sig))

    def _module_binding(self, node: Any, start: int) -> str:
        """A JS/TS, Go or Rust constant or variable: its declaration (``export const K = 1``),
        each value longer than ``MAX_STRING`` characters or spanning lines elided to ``…``."""
        edits: list[tuple[int, int, bytes]] = []
        values = _b.binding_values(node)
        for v in values:
            raw = self.text(v.start_byte, v.end_byte).strip()
            if len(_WS.sub(" ", raw)) > MAX_STRING or "\n" in raw:
                edits.append((v.start_byte, v.end_byte, "…".encode()))
        keep = {(v.start_byte, v.end_byte) for v in values}
        todo = list(node.named_children)
        while todo:  # comments outside the values
            c = todo.pop()
            if "comment" in c.type:
                edits.append((c.start_byte, c.end_byte, b" "))
            elif (c.start_byte, c.end_byte) not in keep:
                todo.extend(c.named_children)
        edits.sort(key=lambda e: (e[0], -e[1]))
        sig = _WS.sub(" ", self._apply(edits, start, node.end_byte)).strip().rstrip(";").rstrip()
        sig = _CLOSE.sub(r"\1", _OPEN.sub(r"\1", sig))
        return f"{_b.GO_SPECS[node.type]} {sig}" if node.type in _b.GO_SPECS else sig

    def _apply(self, edits: list[tuple[int, int, bytes]], a: int, b: int) -> str:
        """The source between ``a`` and ``b`` with the edits that fall inside it applied."""
        parts: list[bytes] = []
        pos = a
        for s, e, rep in edits:
            if s < pos or e > b:  # before the range, or overlapping an earlier edit
                continue
            parts.append(self.src[pos:s])
            parts.append(rep)
            pos = e
        parts.append(self.src[pos:b])
        return b"".join(parts).decode("utf-8", errors="replace")

    def _prefix(self, root: Any, start: int, split: int, edits: list[tuple[int, int, bytes]]) -> str:
        """Decorators and other wrapper text before the declaration; past ``MAX_DECORATORS``
        decorators, the first ones and a count."""
        if split <= start:
            return ""
        decos = [c for c in root.named_children
                 if c.type in _DECORATOR_TYPES and start <= c.start_byte and c.end_byte <= split]
        if len(decos) > MAX_DECORATORS:
            keep = decos[: MAX_DECORATORS - 1]
            text = " ".join(self._apply(edits, c.start_byte, c.end_byte) for c in keep)
            text += f" (+{len(decos) - len(keep)} decorators)"
            text += self._apply(edits, decos[-1].end_byte, split)
        else:
            text = self._apply(edits, start, split)
        return _CLOSE.sub(r"\1", _OPEN.sub(r"\1", _WS.sub(" ", text).strip()))

    # ------------------------------------------------------------------ edits
    def _syntax(self, node: Any, end: int, edits: list[tuple[int, int, bytes]]) -> None:
        """The function keyword before ``name(``, and the spaces around a return arrow."""
        for c in node.children:
            if c.start_byte >= end:
                break
            if c.type == "field_initializer_list":  # C++ constructor: which members, not the signature
                edits.append((c.start_byte, c.end_byte, ": …".encode()))
                continue
            if c.is_named:
                continue
            if c.type in _FN_KEYWORDS:
                name = c.next_sibling
                after = name.next_sibling if name is not None else None
                if (name is not None and name.is_named and name.type in _NAMES and after is not None
                        and self.src[after.start_byte : after.start_byte + 1] in (b"(", b"<", b"[")):
                    edits.append((c.start_byte, name.start_byte, b""))
            elif c.type == "->" and c.prev_sibling is not None and c.next_sibling is not None:
                edits.append((c.prev_sibling.end_byte, c.next_sibling.start_byte, b"->"))
            elif c.type == "=" and c.prev_sibling is not None and c.prev_sibling.type == "parameter":
                # Swift: a default beside its parameter (not the value of a generic type alias,
                # ``type Res<T> = ...``, whose "=" follows its type_parameters)
                self._default_value(c, edits)

    def _scan(self, n: Any, start: int, end: int, body: Any | None, edits: list[tuple[int, int, bytes]],
              in_type: bool, literal: bool) -> None:
        if n.end_byte <= start or n.start_byte >= end:
            return
        if body is not None and n.start_byte == body.start_byte and n.end_byte == body.end_byte and n.type == body.type:
            return
        t = n.type
        if "comment" in t:
            edits.append((n.start_byte, n.end_byte, b" "))
            return
        if in_type:  # a type: never elided; a forward reference loses its quotes
            if _is_string(t):
                if not literal:
                    self._unquote(n, edits)
                return
            if not _INTERESTING_IN_TYPE.search(self.src, n.start_byte, n.end_byte):
                return
        elif self.lang == "python" and t == "type":
            in_type = True
        size = n.end_byte - n.start_byte
        if size <= MAX_DEFAULT and n.child_count < 3 and not in_type:  # too small to hold anything to elide
            return
        if _is_string(t):
            if size > MAX_STRING:
                q = self.src[n.start_byte : n.start_byte + 1]
                q = q if q in (b'"', b"'", b"`") else b'"'
                edits.append((n.start_byte, n.end_byte, q + "…".encode() + q))
            return
        if t in _DECORATOR_TYPES and size > MAX_DECORATOR:
            args = self._args_of(n, 3)
            if args is not None:
                edits.append((args.start_byte, args.end_byte, "(…)".encode()))
                return
        skip = None
        if "parameter" in t or t in _DEFAULT_HOLDERS:
            skip = self._default(n, edits)
        if t in ("generic_type", "subscript"):
            self._annotated(n, edits)
            if in_type and n.named_children:
                head = n.named_children[0]
                literal = literal or self.src[head.start_byte : head.end_byte].endswith(b"Literal")
        for c in n.named_children:
            if skip is None or c.start_byte != skip.start_byte or c.end_byte != skip.end_byte:
                self._scan(c, start, end, body, edits, in_type, literal)

    def _unquote(self, n: Any, edits: list[tuple[int, int, bytes]]) -> None:
        raw = self.src[n.start_byte : n.end_byte]
        if len(raw) < 3 or raw[:1] not in (b'"', b"'") or raw[-1:] != raw[:1] or raw[:3] in (b'"""', b"'''"):
            return
        inner = raw[1:-1]
        if _FORWARD_REF.fullmatch(inner):
            edits.append((n.start_byte, n.end_byte, inner))

    def _args_of(self, n: Any, depth: int) -> Any | None:
        for c in n.named_children:
            if "argument" in c.type and self.src[c.start_byte : c.start_byte + 1] == b"(":
                return c
            if depth > 0:
                got = self._args_of(c, depth - 1)
                if got is not None:
                    return got
        return None

    def _default(self, n: Any, edits: list[tuple[int, int, bytes]]) -> Any | None:
        """``=`` without spaces, and a long default value elided; returns the elided node (not
        to be scanned further)."""
        eq = None
        for c in n.children:
            if not c.is_named:
                if c.type == "=":
                    eq = c
                continue
            if eq is not None:
                if "comment" in c.type:
                    return None
                if self._default_value(eq, edits):
                    return c
                eq = None  # Kotlin: one parameter list holds every parameter's default
        return None

    def _default_value(self, eq: Any, edits: list[tuple[int, int, bytes]]) -> bool:
        """``=`` without the spaces around it, and the value after it elided when longer than
        ``MAX_DEFAULT`` characters (True then)."""
        value = eq.next_named_sibling
        if value is None or "comment" in value.type:
            return False
        at = value.start_byte
        while self.src[at : at + 1].isspace():  # C++ initializer lists start with the space
            at += 1
        if eq.prev_sibling is not None:
            edits.append((eq.prev_sibling.end_byte, at, b"="))
        if value.end_byte - at > MAX_DEFAULT:
            edits.append((at, value.end_byte, "…".encode()))
            return True
        return False

    def _annotated(self, n: Any, edits: list[tuple[int, int, bytes]]) -> None:
        kids = n.named_children
        if not kids:
            return
        head = self.src[kids[0].start_byte : kids[0].end_byte]
        if head != b"Annotated" and not head.endswith(b".Annotated"):
            return
        args = kids[1:]
        if len(args) == 1 and args[0].type == "type_parameter":
            args = args[0].named_children
        if len(args) < 2:
            return
        close = self.src.rfind(b"]", args[-1].end_byte, n.end_byte)
        if close >= 0:  # the metadata goes; the kept type is still scanned
            edits.append((args[0].end_byte, close, ", …".encode()))

    def _python_method(self, node: Any, edits: list[tuple[int, int, bytes]]) -> None:
        """Inside a class: no ``self`` / ``cls`` receiver, and no ``-> None`` on ``__init__``."""
        if not self._in_class:
            return
        params = node.child_by_field_name("parameters")
        if params is None:
            return
        ret = node.child_by_field_name("return_type")
        name = node.child_by_field_name("name")
        if (ret is not None and name is not None and self.src[name.start_byte : name.end_byte] == b"__init__"
                and self.src[ret.start_byte : ret.end_byte] == b"None"):
            edits.append((params.end_byte, ret.end_byte, b""))
        named = [c for c in params.named_children if c.type != "comment"]
        if not named:
            return
        first = named[0]
        if first.type != "identifier" or self.src[first.start_byte : first.end_byte] not in _RECEIVERS:
            return
        end = named[1].start_byte if len(named) > 1 else first.end_byte
        edits.append((first.start_byte, end, b""))


def compact_symbols(path: str, text: str, language: str) -> list[Symbol]:
    """Declarations of ``text`` with compact signatures (tree-sitter), else the regex fallback."""
    if not _ts.supported(language):
        return _regex.extract(text)
    return _ts.extract(language, text, _CompactWalker)
