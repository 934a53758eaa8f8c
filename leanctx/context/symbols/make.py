"""Makefile declarations from the tree-sitter ``make`` grammar: rules, variables, ``define``.

Every declaration is at depth 0 and exported (a Makefile has no private names):

- a rule is a ``target`` named by its targets as written (``all``, ``$(GIT_SUBTREE)``,
  ``%.o``, ``.PHONY``), its signature the rule line without its recipe or comment:
  ``install: all doc``, ``%.o: %.c | builddir``, ``.PHONY: all clean install``; past
  ``MAX_PREREQUISITES`` prerequisites (object lists of generated Makefiles), the first ones and
  how many more (``python: a.o b.o … +52``);
- a variable assignment is a ``variable``, written ``NAME op value`` (``prefix ?= /usr/local``,
  one space around the operator however the source spaces it), with its ``export`` /
  ``override`` / ``private`` word and, for a target-specific one, its targets
  (``foo.o: CFLAGS += -g``); a value longer than ``MAX_VALUE`` characters is cut at a space
  before it, with ``…`` (``CFLAGS = -O2 -Wall -Wextra …``); its comment is dropped;
- ``define NAME`` … ``endef`` is a ``macro`` (what ``$(call NAME,…)`` expands), its body not shown.

Assignments and rules inside ``ifeq``/``ifdef`` … ``endif`` count (both branches), as they do
for make (the grammar reads a conditional that follows a recipe into the recipe: it is looked
into there too; and it reads a tab-indented assignment of a conditional outside any rule as a
recipe line, which make does not: such a line is read by the pattern below). ``include`` lines
are the file's dependencies (``extract_imports``), not declarations.

The grammar sometimes fails on a line it does not know (``\\#`` in a shell snippet, a quote or
a parenthesis in a variable's value, ``$(foreach …)`` in a recipe of a conditional), and what
it makes of the rest can run to the end of the file: an error node, the pieces of a rule
(``list``, ``prerequisites``, ``concatenation``... at the top), a rule whose targets run over
several lines. The first line of such a stretch is read by a pattern (an assignment or a rule
head at the start of the line, unless that line already has its declaration) and what follows
it is parsed again, so one odd line costs about that line only (at most ``_REPARSES`` times a
file). Checked against GNU make's own database (``make -p``) on the 75 Makefiles of this
machine: every variable it defines from a Makefile's text has a row (the ones ``$(eval …)``
makes are not in the text).
"""

from __future__ import annotations

import bisect
import re
from typing import Any

from leanctx.context.symbols.model import Symbol

__all__ = ["MAX_PREREQUISITES", "MAX_VALUE", "extract"]

MAX_VALUE = 40
MAX_PREREQUISITES = 10
_REPARSES = 64
_WS = re.compile(r"\s+")
_CONTINUATION = re.compile(r"\\\r?\n\s*")
_OPERATOR = re.compile(r"\s*(:::=|::=|:=|\?=|\+=|!=|=)$")  # ``X?=1`` is written ``X ?= 1``
_CONTINUED = re.compile(rb"(?:[^\n]*\\\r?\n)*[^\n]*")
_DIRECTIVE = re.compile(rb"^(?:-?include|sinclude|ifn?eq|ifn?def|else|endif|define|endef|undefine|vpath|unexport)\b")
# the statements that declare nothing here (any other node is a misparse: ``_recover``)
_OTHER_STATEMENTS = frozenset({
    "comment", "include_directive", "vpath_directive", "unexport_directive", "undefine_directive",
    "function_call", "shell_function", "ifeq_directive", "ifneq_directive", "ifdef_directive", "ifndef_directive",
    "recipe_line", "export_directive", "load_directive",
})
_PREFIXES = frozenset({"export_directive", "override_directive", "private_directive"})
_SCOPES = frozenset({"conditional", "elsif_directive", "else_directive"})
_ASSIGNMENT = re.compile(rb"^(?:(?:export|override|private)\s+)*([^\s:#=]+)\s*(::?=|:::=|\?=|\+=|!=|=)")
_RULE = re.compile(rb"^([^\s:#=\t][^:#=]*?)\s*(::|&:|:)(?![=:])")


class _Out:
    def __init__(self, src: bytes) -> None:
        self.src = src
        self.newlines = [m.start() for m in re.finditer(rb"\n", src)]
        self.symbols: list[Symbol] = []
        self.lines: set[int] = set()  # the lines a declaration starts on
        self.reparses = 0

    def line(self, offset: int) -> int:
        return bisect.bisect_left(self.newlines, offset) + 1

    def text(self, a: int, b: int) -> str:
        return self.src[a:b].decode("utf-8", "replace")

    def add(self, name: str, kind: str, start: int, end: int, sig: str) -> None:
        while end > start and self.src[end - 1 : end].isspace():
            end -= 1
        self.lines.add(self.line(start))
        self.symbols.append(Symbol(name=name, kind=kind, line=self.line(start), end_line=self.line(max(start, end - 1)),
                                   depth=0, signature=sig))


def extract(parser: Any, src: bytes) -> list[Symbol]:
    """The declarations of a Makefile (see the module doc), in source order."""
    out = _Out(src)
    _walk(parser, out, parser.parse(src).root_node, 0, "")
    out.symbols.sort(key=lambda s: s.line)
    return out.symbols


def _walk(parser: Any, out: _Out, node: Any, base: int, prefix: str, in_recipe: bool = False) -> None:
    for c in node.named_children:
        t = c.type
        if t == "rule":
            _rule(parser, out, c, base)
        elif t in ("variable_assignment", "VPATH_assignment"):
            _assignment(out, c, base, prefix)
        elif t == "define_directive":
            name = c.child_by_field_name("name") or next((k for k in c.named_children if k.type == "word"), None)
            if name is not None:
                word = out.text(name.start_byte + base, name.end_byte + base)
                out.add(word, "macro", c.start_byte + base, c.end_byte + base, f"{prefix}define {word}")
        elif t in _PREFIXES:
            word = out.text(c.start_byte + base, c.end_byte + base).split(None, 1)[0]
            _walk(parser, out, c, base, f"{prefix}{word} ")
        elif t in _SCOPES:
            _walk(parser, out, c, base, "", in_recipe)
        elif t == "recipe_line" and not in_recipe:  # a tab-indented line of a conditional: a make line
            _line(out, c.start_byte + base, c.end_byte + base)
        elif t not in _OTHER_STATEMENTS:  # an error, or a piece of a statement the grammar lost
            _recover(parser, out, c.start_byte + base, c.end_byte + base)


def _rule(parser: Any, out: _Out, node: Any, base: int) -> None:
    targets = next((k for k in node.named_children if k.type == "targets"), None)
    if targets is None:
        return
    if "\n" in _CONTINUATION.sub(" ", out.text(targets.start_byte + base, targets.end_byte + base)):
        _recover(parser, out, node.start_byte + base, node.end_byte + base)  # a misparse: lines as targets
        return
    end = node.end_byte
    for k in node.named_children:
        if k.type in ("recipe", "comment"):
            end = k.start_byte
            break
    sig = _collapse(out.text(node.start_byte + base, end + base)).rstrip(";").rstrip()
    first = next((k for k in node.named_children if k.type in ("prerequisites", "pattern_list")), None)
    if first is not None and first.start_byte < end:
        words = _collapse(out.text(first.start_byte + base, end + base)).rstrip(";").split()
        if len(words) > MAX_PREREQUISITES:
            head = _collapse(out.text(node.start_byte + base, first.start_byte + base))
            sig = f"{head} {' '.join(words[:MAX_PREREQUISITES])} … +{len(words) - MAX_PREREQUISITES}"
    out.add(_collapse(out.text(targets.start_byte + base, targets.end_byte + base)), "target",
            node.start_byte + base, node.end_byte + base, sig)
    for k in node.named_children:  # a conditional after recipe lines is read into the recipe
        if k.type == "recipe":
            for c in k.named_children:
                if c.type == "conditional":
                    _walk(parser, out, c, base, "", True)


def _assignment(out: _Out, node: Any, base: int, prefix: str) -> None:
    name = node.child_by_field_name("name")
    op = node.child_by_field_name("operator") or next((k for k in node.children if not k.is_named), None)
    if op is None:
        return
    value = node.child_by_field_name("value")
    head = _OPERATOR.sub(r" \1", _collapse(out.text(node.start_byte + base, op.end_byte + base)))
    raw = out.text(value.start_byte + base, value.end_byte + base) if value is not None else ""
    val = _value(raw)
    sig = f"{prefix}{head}" + (f" {val}" if val else "")
    # ``X?=1`` is read as the name ``X?`` and ``=``; ``VPATH = dirs`` has no name node
    word = out.text(name.start_byte + base, name.end_byte + base).rstrip("?+:!") if name is not None else "VPATH"
    out.add(word, "variable", node.start_byte + base, node.end_byte + base, sig)


def _recover(parser: Any, out: _Out, start: int, end: int) -> None:
    """A misparsed stretch: its first line by pattern (unless a declaration of that line is
    already out), the rest parsed again (see the module doc)."""
    src = out.src
    bol = src.rfind(b"\n", 0, start) + 1
    logical = _CONTINUED.match(src, bol)  # the line, its backslash-newlines joined
    eol = logical.end() if logical is not None else len(src)
    if out.line(bol) not in out.lines:
        _line(out, bol, eol)
    rest = eol + 1
    if rest < end and out.reparses < _REPARSES:
        out.reparses += 1
        _walk(parser, out, parser.parse(src[rest:end]).root_node, rest, "")


def _line(out: _Out, start: int, eol: int) -> None:
    """One line read by pattern: an assignment or a rule head, else nothing (a directive, a
    recipe line, text)."""
    line = out.src[start:eol]
    if _DIRECTIVE.match(line):
        return
    m = _ASSIGNMENT.match(line)
    if m is not None:
        val = _value(out.text(start + m.end(), eol))
        sig = _OPERATOR.sub(r" \1", _collapse(out.text(start, start + m.end()))) + (f" {val}" if val else "")
        out.add(m.group(1).decode("utf-8", "replace"), "variable", start, eol, sig)
    elif (r := _RULE.match(line)) is not None:
        sig = _collapse(_strip_comment(out.text(start, eol)).split(";")[0])
        out.add(_collapse(r.group(1).decode("utf-8", "replace")), "target", start, eol, sig)


def _value(raw: str) -> str:
    """A variable's value: its comment dropped, continuations joined, past ``MAX_VALUE`` cut."""
    val = _collapse(_strip_comment(_CONTINUATION.sub(" ", raw)))
    if len(val) <= MAX_VALUE:
        return val
    cut = val.rfind(" ", 0, MAX_VALUE)
    return val[: cut if cut > 0 else MAX_VALUE].rstrip() + " …"


def _strip_comment(s: str) -> str:
    """Up to a ``#`` that starts a comment: not escaped, not inside ``$(…)`` / ``${…}``."""
    depth = 0
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "$" and s[i + 1 : i + 2] in ("(", "{"):
            depth += 1
            i += 2
            continue
        if c in "({" and depth:
            depth += 1
        elif c in ")}" and depth:
            depth -= 1
        elif c == "#" and not depth:
            return s[:i]
        i += 1
    return s


def _collapse(s: str) -> str:
    return _WS.sub(" ", _CONTINUATION.sub(" ", s)).strip()
