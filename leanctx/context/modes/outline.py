"""Structure-only modes: ``map`` (dependencies + outline) and ``signatures`` (declarations).

``map`` lists each exported top-level declaration on a line of its own (with its members), and
the names and lines of the others (functions, types, constants, variables) on one ``private:``
line. Consecutive exported constants (no other declaration shown between them) share one row,
the first at the row's line and the next ones with theirs (``12 const A B:13 C:20``), at most
``_MAX_MEMBERS`` names and then a count (``+N``), as a class's members. What counts as exported
(JS/TS export lists and CommonJS too) and which constants are declarations:
``leanctx.context.symbols.bindings``.
"""

from __future__ import annotations

from leanctx.context.modes.compact import compact_symbols
from leanctx.context.modes.rendered import Rendered, footer, source_lines
from leanctx.context.symbols import Symbol, extract_imports, extract_symbols, uses_tree_sitter

__all__ = ["render_map", "render_signatures"]

_KIND_SHORT = {"function": "fn", "method": "fn", "constructor": "new", "interface": "iface",
               "namespace": "ns", "property": "prop", "constant": "const", "variable": "var"}
# not exported: listed by name and line on one ``private:`` line
_PRIVATE_KINDS = frozenset({"function", "method", "type", "constant", "variable", "static"})
_MAX_MEMBERS = 40
# consecutive exported constants (variables, statics) share a row: ``12 const A B:13 C:20``
_RUN_KINDS = ("constant", "variable", "static")


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
    shown = len(imports)
    run: list[int] = []  # a run of constants on one row: [row index, how many, kind index]
    for s in top:
        if not s.exported and s.kind in _PRIVATE_KINDS:
            shown += 1
            private.append(f"{s.name}:{s.line}")
            continue
        members = _members(symbols, s)
        kind = _KIND_SHORT.get(s.kind, s.kind)
        if s.kind in _RUN_KINDS and not members:
            if run and run[2] == _RUN_KINDS.index(s.kind):
                run[1] += 1
                if run[1] <= _MAX_MEMBERS:
                    out[run[0]] += f" {s.name}:{s.line}"
                    shown += 1
                continue
            _end_run(out, run)
            run = [len(out), 1, _RUN_KINDS.index(s.kind)]
        else:
            _end_run(out, run)
            run = []
        shown += 1
        line = f"{s.line} {kind} {s.name}"
        if members:
            names = [f"{m.name}:{m.line}" for m in members[:_MAX_MEMBERS]]
            more = f" +{len(members) - _MAX_MEMBERS}" if len(members) > _MAX_MEMBERS else ""
            line += " [" + " ".join(names) + more + "]"
            shown += min(len(members), _MAX_MEMBERS)
        out.append(line)
    _end_run(out, run)
    if private:
        out.append("private: " + " ".join(private))
    if not out:
        out.append("(no imports or declarations found)")
    omitted = max(0, n - shown)
    how = "tree-sitter" if uses_tree_sitter(language) else "pattern match"
    note = f"{len(symbols)} declarations ({how}) · bodies and the other {omitted} lines not shown"
    out.append(footer("map", n, note))
    return Rendered(mode="map", path=path, language=language, text="\n".join(out), line_count=n,
                    shown_lines=n - omitted, omitted_lines=omitted, omitted=note)


def render_signatures(path: str, text: str, language: str) -> Rendered:
    """One line per declaration: its line number, one indentation step per nesting level
    (members under their class), and its compact signature (see ``compact``); no bodies."""
    n = len(source_lines(text))
    symbols = compact_symbols(path, text, language)
    out = [f"{s.line} {'  ' * s.depth}{s.signature}" for s in symbols]
    if not out:
        out.append("(no declarations found)")
    shown = len({s.line for s in symbols})
    omitted = n - shown
    how = "" if uses_tree_sitter(language) else "pattern match · "
    note = f"{how}{omitted} lines not shown"
    out.append(footer("signatures", n, note))
    return Rendered(mode="signatures", path=path, language=language, text="\n".join(out), line_count=n,
                    shown_lines=shown, omitted_lines=omitted, omitted=note)
