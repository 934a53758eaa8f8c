"""Compact declarations for the ``signatures`` mode.

The same tree-sitter walk as ``leanctx.context.symbols`` (same names, kinds, line numbers,
depths and export flags), with each signature rendered compactly from the syntax tree:

- comments inside a signature are dropped (``# pragma: no cover``, notes between parameters);
- a default value longer than ``MAX_DEFAULT`` characters becomes ``…`` (``= …``): the
  parameter, its type and the fact that it has a default stay;
- a string literal longer than ``MAX_STRING`` characters becomes ``"…"`` (deprecation
  messages in decorators, help texts);
- decorator / annotation / attribute arguments longer than ``MAX_DECORATOR`` characters become
  ``(…)`` (``@deprecated(…)``): the decorator's name stays;
- ``Annotated[T, metadata...]`` keeps ``T`` and elides the metadata (``Annotated[T, …]``);
- the receiver ``self`` / ``cls`` of a Python method is left out (the method is shown under
  its class, and ``@classmethod`` / ``@staticmethod`` stay);
- past ``MAX_DECORATORS`` stacked decorators, the first ones and a count are shown
  (``@click.command(…) @click.argument(…) (+13 decorators) def main(…)``);
- whitespace is collapsed and a signature is capped at ``MAX_SIG`` characters at a word
  boundary (``…`` marks the cut), always after the declaration's name.

Nothing here changes which declarations are found: only how each one is written. Every elision
is marked with ``…``.
"""

from __future__ import annotations

import re
from typing import Any

from leanctx.context.symbols import regex as _regex
from leanctx.context.symbols import treesitter as _ts
from leanctx.context.symbols.model import Symbol

__all__ = ["MAX_DECORATOR", "MAX_DECORATORS", "MAX_DEFAULT", "MAX_SIG", "MAX_STRING", "compact_symbols"]

MAX_DEFAULT = 12
MAX_STRING = 24
MAX_DECORATOR = 24
MAX_SIG = 240
MAX_DECORATORS = 3  # more decorators than this: the first ones and a count

_DECORATOR_TYPES = frozenset({"decorator", "annotation", "marker_annotation", "attribute_list", "attribute_item"})
_DEFAULT_HOLDERS = frozenset({"assignment_pattern", "equals_value_clause", "optional_parameter_declaration"})
_RECEIVERS = frozenset({b"self", b"cls"})
_WS = re.compile(r"\s+")
_OPEN = re.compile(r"([(\[]) ")
_CLOSE = re.compile(r",? ([)\]])")


def _is_string(t: str) -> bool:
    return t.endswith(("string", "string_literal")) or t == "encapsed_string"


class _CompactWalker(_ts._Walker):  # reuse the walk, render compactly
    """The symbols walker with a compact ``_signature``."""

    def _signature(self, node: Any, start: int, body: Any | None) -> str:
        src = self.src
        has_body = body is not None and body.start_byte > start
        end = body.start_byte if body is not None and has_body else node.end_byte
        root = node
        while root.start_byte > start and root.parent is not None:
            root = root.parent  # decorators live beside the definition, in its wrapper
        edits: list[tuple[int, int, bytes]] = []
        self._scan(root, start, end, body, edits)
        if self.lang == "python" and self._in_class and node.type == "function_definition":
            self._drop_receiver(node, edits)
        edits.sort()
        split = max(start, min(node.start_byte, end))  # wrapper prefix (decorators, export) | declaration
        prefix = self._prefix(root, start, split, edits)
        raw = self._apply(edits, split, end)
        if not has_body:
            lines = raw.split("\n")
            if len(lines) > 1:
                raw = lines[0] + (" …" if any(x.strip() for x in lines[1:]) else "")
        sig = _ts._TRAILERS.sub("", _WS.sub(" ", raw).strip())
        sig = _CLOSE.sub(r"\1", _OPEN.sub(r"\1", sig))
        if self.lang == "go" and node.type == "type_spec":
            sig = "type " + sig
            if body is not None:
                sig += " " + body.type.split("_")[0]
        limit = max(MAX_SIG - len(prefix), MAX_SIG // 2)
        if len(sig) > limit:  # cut the parameters, never the name
            name = self._name(node)
            at = sig.find(name) if name else -1
            keep = at + len(name) if at >= 0 else 0
            cut = sig.rfind(" ", keep, limit)
            if cut <= keep:
                cut = max(limit, keep)
            sig = sig[:cut].rstrip(" ,") + " …"
        return f"{prefix} {sig}" if prefix else sig

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
    def _scan(self, n: Any, start: int, end: int, body: Any | None, edits: list[tuple[int, int, bytes]]) -> None:
        if n.end_byte <= start or n.start_byte >= end:
            return
        if body is not None and n.start_byte == body.start_byte and n.end_byte == body.end_byte and n.type == body.type:
            return
        t = n.type
        size = n.end_byte - n.start_byte
        if size <= MAX_DEFAULT and n.child_count < 3:  # too small to hold anything worth eliding
            return
        if "comment" in t:
            edits.append((n.start_byte, n.end_byte, b" "))
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
        for c in n.named_children:
            if skip is None or c.start_byte != skip.start_byte or c.end_byte != skip.end_byte:
                self._scan(c, start, end, body, edits)

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
        """Elide a long default value; returns the elided node (not to be scanned further)."""
        seen_eq = False
        for c in n.children:
            if not c.is_named:
                seen_eq = seen_eq or c.type == "="
                continue
            if seen_eq:
                if c.end_byte - c.start_byte > MAX_DEFAULT and "comment" not in c.type:
                    edits.append((c.start_byte, c.end_byte, "…".encode()))
                    return c
                return None
        return None

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

    def _drop_receiver(self, node: Any, edits: list[tuple[int, int, bytes]]) -> None:
        params = node.child_by_field_name("parameters")
        if params is None or not params.named_children:
            return
        first = params.named_children[0]
        if first.type != "identifier" or self.src[first.start_byte : first.end_byte] not in _RECEIVERS:
            return
        nxt = first.next_named_sibling
        edits.append((first.start_byte, nxt.start_byte if nxt is not None else first.end_byte, b""))


def compact_symbols(path: str, text: str, language: str) -> list[Symbol]:
    """Declarations of ``text`` with compact signatures (tree-sitter), else the regex fallback."""
    if not _ts.supported(language):
        return _regex.extract(text)
    src = text.encode("utf-8")
    tree = _ts.parser_for(language).parse(src)
    w = _CompactWalker(language, src)
    w.walk(tree.root_node, 0, "")
    syms = w.out
    if language == "haskell":  # equations of a function that has a type signature are redundant
        typed = {s.name for s in syms if s.kind == "function" and "::" in s.signature}
        syms = [s for s in syms if not (s.name in typed and "::" not in s.signature)]
    return syms
