"""Structure-only modes: ``map`` (dependencies + outline) and ``signatures`` (declarations).

``map`` lists each exported top-level declaration on a line of its own (with its members), and
the names and lines of the others (functions, types, constants, variables) on one ``private:``
line (Go constants and variables that are neither exported nor UPPER_CASE are not
declarations there: when nothing else is listed, the map counts them, ``(no imports or exported
declarations; 1 private declaration not listed)``, rather than say the file declares nothing).
Consecutive exported constants (no other declaration shown between them) share one row,
the first at the row's line and the next ones with theirs (``12 const A B:13 C:20``), at most
``_MAX_MEMBERS`` names and then a count (``+N``), as a class's members. What counts as exported
(JS/TS export lists and CommonJS too) and which constants are declarations:
``leanctx.context.symbols.bindings``. Its line count is of the source lines it names. The fields
of a data class (which ``signatures`` writes on the class's row) are not listed: the map names
declarations and their lines, members included, and a field is not a declaration of its own;
what a class is built from is the ``signatures`` mode's answer.

``signatures`` writes one row per declaration (a data class with its fields on its row, an
exported TypeScript interface or TS/JS class with its properties: ``fields``); declarations that share a line and a signature
(the names of one destructuring pattern, of a Go spec ``const A, B = 1, 2``) share a row. A run
of more than ``FOLD_OVER`` (40) constants is folded: consecutive constants, variables or statics
(no other declaration between them) at one depth under one parent, and within one Go ``const
(…)`` / ``var (…)`` group. Its first ``FOLD_HEAD`` (5) and last ``FOLD_TAIL`` (3) rows are
kept; one row stands for the others and says how many they are, their lines, the run's own
count and lines, and the read mode that shows them::

    … 1182 more constants in lines 17-1198 (1190 in lines 12-1201; mode lines:17-1198 shows them)

and the footer counts the declarations folded. The rule holds in every language and for every
file, generated (Go's ``// Code generated … DO NOT EDIT.``) or not: past forty, a run of
constants is a table (error numbers, opcodes, protocol codes), whose first and last names say
what it is and whose lines are one read away; forty is also where ``map`` stops naming a
run's members (``+N``). Nothing vanishes without its count and lines.

In Python, two kinds of function keep their row (line, depth, decorators, ``async``, name) but
not their parameters, written ``name(…)`` (``unwritten``):

- a private function or method (the map's rule: a name that starts with ``_`` and is no
  ``__dunder__``): a helper of its module or class, not a way to call it from outside. Its
  parameters and return type are written when they are as short as ``MAX_DEFAULT`` (12)
  characters (``_reset()->None``), shorter than the elision is worth;
- the implementation that follows ``@overload`` declarations of its name in its scope: a type
  checker checks a call against the overloads only, and their rows are kept whole. The footer
  counts these (``2 private functions written name(…)``,
  ``1 overload implementation written name(…): see its @overload rows``).

Private constants, type aliases and classes stay written out (a public signature may name them).

SQL and Makefiles: the declarations are a script's ``CREATE`` statements (``symbols.sql``: a
table with its columns, a view with the columns its query gives, an index, a trigger without its
body, a routine with its parameters and return type) and a Makefile's rules, variables and
``define``s (``symbols.make``), their signatures compact as found; the map lists them by kind and
name (``4 table events``, ``7 var prefix gitexecdir:8``, ``58 target $(GIT_SUBTREE)``) and a
Makefile's ``include`` lines as its ``deps``.
"""

from __future__ import annotations

import re

from leanctx.context.modes.compact import MAX_DEFAULT, compact_symbols
from leanctx.context.modes.rendered import Rendered, footer, plural, source_lines
from leanctx.context.symbols import (
    Symbol,
    extract_imports,
    extract_symbols,
    uses_tree_sitter,
)

__all__ = ["FOLD_HEAD", "FOLD_OVER", "FOLD_TAIL", "fold_runs", "render_map", "render_signatures", "unwritten"]

_KIND_SHORT = {"function": "fn", "method": "fn", "constructor": "new", "interface": "iface",
               "namespace": "ns", "property": "prop", "constant": "const", "variable": "var"}
# not exported: listed by name and line on one ``private:`` line
_PRIVATE_KINDS = frozenset({"function", "method", "type", "constant", "variable", "static"})
_MAX_MEMBERS = 40
# consecutive exported constants (variables, statics) share a row: ``12 const A B:13 C:20``
_RUN_KINDS = ("constant", "variable", "static")
FOLD_OVER = 40  # signatures: a run of more constants than this is folded
FOLD_HEAD = 5
FOLD_TAIL = 3
_FOLD_WORDS = {"constant": "constants", "variable": "variables", "static": "statics"}


def _members(symbols: list[Symbol], parent: Symbol) -> list[Symbol]:
    return [s for s in symbols if s.depth == parent.depth + 1 and parent.line <= s.line <= parent.end_line]


def _end_run(out: list[str], run: list[int]) -> None:
    if run and run[1] > _MAX_MEMBERS:
        out[run[0]] += f" +{run[1] - _MAX_MEMBERS}"


def render_map(path: str, text: str, language: str) -> Rendered:
    lines = source_lines(text)
    n = len(lines)
    symbols = extract_symbols(path, text, language)
    imports = extract_imports(language, text)
    out: list[str] = []
    if imports:
        out.append("deps: " + ", ".join(m for _, m in imports))
    top = [s for s in symbols if s.depth == 0]
    private: list[str] = []
    shown = {line for line, _ in imports}  # the source lines the map names
    run: list[int] = []  # a run of constants on one row: [row index, how many, kind index]
    for s in top:
        if not s.exported and s.kind in _PRIVATE_KINDS:
            shown.add(s.line)
            private.append(f"{s.name}:{s.line}")
            continue
        members = _members(symbols, s)
        kind = _KIND_SHORT.get(s.kind, s.kind)
        if s.kind in _RUN_KINDS and not members:
            if run and run[2] == _RUN_KINDS.index(s.kind):
                run[1] += 1
                if run[1] <= _MAX_MEMBERS:
                    out[run[0]] += f" {s.name}:{s.line}"
                    shown.add(s.line)
                continue
            _end_run(out, run)
            run = [len(out), 1, _RUN_KINDS.index(s.kind)]
        else:
            _end_run(out, run)
            run = []
        shown.add(s.line)
        line = f"{s.line} {kind} {s.name}"
        if members:
            names = [f"{m.name}:{m.line}" for m in members[:_MAX_MEMBERS]]
            more = f" +{len(members) - _MAX_MEMBERS}" if len(members) > _MAX_MEMBERS else ""
            line += " [" + " ".join(names) + more + "]"
            shown.update(m.line for m in members[:_MAX_MEMBERS])
        out.append(line)
    _end_run(out, run)
    if private:
        out.append("private: " + " ".join(private))
    unlisted = 0
    if not out:
        unlisted = _unlisted_bindings(text, language)
        out.append(f"(no imports or exported declarations; {plural(unlisted, 'private declaration')} not listed)"
                   if unlisted else "(no imports or declarations found)")
    omitted = max(0, n - len(shown))
    how = "tree-sitter" if uses_tree_sitter(language) else "pattern match"
    count = f"0 listed + {plural(unlisted, 'private declaration')} not listed" if unlisted else plural(
        len(symbols), "declaration")
    note = f"{count} ({how}) · bodies and the other {plural(omitted, 'line')} not shown"
    out.append(footer("map", n, note))
    return Rendered(mode="map", path=path, language=language, text="\n".join(out), line_count=n,
                    shown_lines=n - omitted, omitted_lines=omitted, omitted=note)


def _unlisted_bindings(text: str, language: str) -> int:
    """Go: the names of top-level ``const``/``var`` specs that are not declarations
    (``symbols.bindings.listed``: unexported and not UPPER_CASE), which the symbol list leaves
    out; counted only when a map would otherwise be empty, so it says what the file holds."""
    if language != "go" or not uses_tree_sitter(language):
        return 0
    from leanctx.context.symbols.bindings import listed
    from leanctx.context.symbols.treesitter import parser_for

    root = parser_for(language).parse(text.encode("utf-8", "surrogatepass")).root_node
    n = 0
    for decl in root.named_children:
        if decl.type not in ("const_declaration", "var_declaration"):
            continue
        specs = [c for c in decl.named_children if c.type in ("const_spec", "var_spec")]
        for group in (c for c in decl.named_children if c.type == "var_spec_list"):
            specs += [c for c in group.named_children if c.type == "var_spec"]
        for spec in specs:
            for name_node in spec.children_by_field_name("name"):
                if name_node.type != "identifier":  # the commas of ``a, b`` come under the field too
                    continue
                name = (name_node.text or b"").decode("utf-8", "replace")
                n += name not in ("", "_") and not listed(name, name[:1].isupper())
    return n


def render_signatures(path: str, text: str, language: str) -> Rendered:
    """One line per declaration: its line number, one indentation step per nesting level
    (members under their class), and its compact signature (see ``compact``); no bodies.
    Declarations that share a line and a signature (the names of one pattern, Go's ``const A, B
    = 1, 2``) share one row; a long run of constants is folded (``fold_runs``); a Python private
    function and an overload implementation are written ``name(…)`` (``unwritten``)."""
    n = len(source_lines(text))
    # without a grammar (SQL, the regex fallback), the declarations are written as found
    symbols = compact_symbols(path, text, language) if uses_tree_sitter(language) else extract_symbols(
        path, text, language)
    private, impls = unwritten(symbols, language)
    out: list[str] = []
    shown: set[int] = set()
    folded = 0
    prev: tuple[int, int, str] | None = None
    for item in fold_runs(symbols):
        if isinstance(item, str):
            out.append(item)
            folded += int(item.split()[1])
            prev = None
            continue
        key = (item.line, item.depth, item.signature)
        if key != prev:
            sig = item.signature
            if id(item) in private or id(item) in impls:
                sig = sig[: _name_end(item)] + "(…)"
            out.append(f"{item.line} {'  ' * item.depth}{sig}")
            shown.add(item.line)
        prev = key
    if not out:
        out.append("(no declarations found)")
    omitted = n - len(shown)
    how = "" if uses_tree_sitter(language) else "pattern match · "
    note = f"{how}{plural(omitted, 'line')} not shown" + (f" · {plural(folded, 'declaration')} folded" if folded else "")
    if private:
        note += f" · {plural(len(private), 'private function')} written name(…)"
    if impls:
        note += f" · {plural(len(impls), 'overload implementation')} written name(…): see its @overload rows"
    out.append(footer("signatures", n, note))
    return Rendered(mode="signatures", path=path, language=language, text="\n".join(out), line_count=n,
                    shown_lines=len(shown), omitted_lines=omitted, omitted=note)


_OVERLOAD = re.compile(r"(?:^|\s)@(?:\w+\.)*overload\b")


def unwritten(symbols: list[Symbol], language: str) -> tuple[set[int], set[int]]:
    """The ``id`` of each Python function or method ``signatures`` writes ``name(…)``, its
    decorators kept: (private, overload implementations).

    - private: a name that starts with ``_`` and is no ``__dunder__`` (the map's private rule):
      a helper of the module or the class, not its interface; written whole when its parameters
      and return type take no more than ``MAX_DEFAULT`` (12) characters (``_reset()->None``);
    - an overload implementation: the function right after ``@overload`` declarations of its
      name in its scope. A type checker checks a call against the overloads only, so their rows
      are the function's signatures."""
    if language != "python":
        return set(), set()
    private: set[int] = set()
    impls: set[int] = set()
    pending: set[tuple[int, str, str]] = set()
    for s in symbols:
        at = _name_end(s)
        if s.kind not in ("function", "method") or at < 0:
            continue
        key = (s.depth, s.parent, s.name)
        if not s.exported:
            if len(s.signature) - at > MAX_DEFAULT:
                private.add(id(s))
        elif _OVERLOAD.search(s.signature[:at]):
            pending.add(key)
        elif key in pending:
            pending.discard(key)
            impls.add(id(s))
    return private, impls


def _name_end(s: Symbol) -> int:
    """Where the parameters of ``s``'s signature start (after its name and its Python 3.12 type
    parameters, ``f[T: (int, str)](``), -1 when not found."""
    m = re.search(r"(?:^|\s)" + re.escape(s.name) + r"(?=[(\[])", s.signature)
    if m is None:
        return -1
    at = m.end()
    if s.signature[at] == "[":  # type parameters: to their closing bracket
        depth = 0
        for i in range(at, len(s.signature)):
            depth += {"[": 1, "]": -1}.get(s.signature[i], 0)
            if depth == 0:
                at = i + 1
                break
        else:
            return -1
    return at if s.signature[at : at + 1] == "(" else -1


def fold_runs(symbols: list[Symbol]) -> list[Symbol | str]:
    """The symbols, with each run of more than ``FOLD_OVER`` constants folded: its first
    ``FOLD_HEAD`` and last ``FOLD_TAIL`` kept, the others replaced by one row that says how many
    there are, their lines, and the run's own count and lines (see the module doc)."""
    out: list[Symbol | str] = []
    i = 0
    while i < len(symbols):
        s = symbols[i]
        j = i + 1
        if s.kind in _RUN_KINDS:
            while (j < len(symbols) and symbols[j].kind in _RUN_KINDS and symbols[j].depth == s.depth
                   and symbols[j].parent == s.parent and symbols[j].group == s.group):
                j += 1
        run = symbols[i:j]
        if len(run) <= FOLD_OVER:
            out.extend(run)
        else:
            hidden = run[FOLD_HEAD : len(run) - FOLD_TAIL]
            a, b = hidden[0].line, hidden[-1].end_line
            kinds = sorted({_FOLD_WORDS[h.kind] for h in run})
            what = " and ".join(kinds) if len(kinds) > 1 else kinds[0]
            out.extend(run[:FOLD_HEAD])
            out.append(f"{'  ' * s.depth}… {len(hidden)} more {what} in lines {a}-{b} ({len(run)} in lines "
                       f"{run[0].line}-{run[-1].end_line}; mode lines:{a}-{b} shows them)")
            out.extend(run[len(run) - FOLD_TAIL :])
        i = j
    return out
