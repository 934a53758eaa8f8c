"""Structure-only modes: ``map`` (dependencies + outline) and ``signatures`` (declarations)."""

from __future__ import annotations

from leanctx.context.modes.compact import compact_symbols
from leanctx.context.modes.rendered import Rendered, footer, source_lines
from leanctx.context.symbols import Symbol, extract_imports, extract_symbols, uses_tree_sitter

__all__ = ["render_map", "render_signatures"]

_KIND_SHORT = {"function": "fn", "method": "fn", "constructor": "new", "interface": "iface",
               "namespace": "ns", "property": "prop", "constant": "const"}
_MAX_MEMBERS = 40


def _members(symbols: list[Symbol], parent: Symbol) -> list[Symbol]:
    return [s for s in symbols if s.depth == parent.depth + 1 and parent.line <= s.line <= parent.end_line]


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
    for s in top:
        shown += 1
        if not s.exported and s.kind in {"function", "method", "type", "constant"}:
            private.append(f"{s.name}:{s.line}")
            continue
        members = _members(symbols, s)
        kind = _KIND_SHORT.get(s.kind, s.kind)
        line = f"{s.line} {kind} {s.name}"
        if members:
            names = [f"{m.name}:{m.line}" for m in members[:_MAX_MEMBERS]]
            more = f" +{len(members) - _MAX_MEMBERS}" if len(members) > _MAX_MEMBERS else ""
            line += " [" + " ".join(names) + more + "]"
            shown += min(len(members), _MAX_MEMBERS)
        out.append(line)
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
