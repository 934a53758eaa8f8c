"""SQL declarations: the ``CREATE`` statements of a script, split by a small lexer (``sqllex``).

The SQL grammar of the language pack is not used: its error recovery swallows the statements
after one it does not know into one error node (a SQLite trigger's ``BEGIN … END``, PostgreSQL
``CREATE OPERATOR``, a psql ``\\echo`` line), and measured on real scripts it loses most of them
(this repository's ``schema/events.sql``: 5 of its 8 ``CREATE`` statements; PostgreSQL's
``snowball_create.sql``: 57 of 59).

Each ``CREATE`` statement is one declaration: its kind (``table``, ``view``, ``index``,
``function``, ``trigger``, ``type``, ...; several words joined by ``_``), its name (quotes
dropped, schema kept), its first and last lines, and a compact signature:

- a table (or a composite type, an enum, a virtual table's ``USING module(…)``): its head and
  its column list, each column with its type and constraints (``CREATE TABLE t (id INTEGER PRIMARY
  KEY, name TEXT NOT NULL, CHECK (…))``); a parenthesized expression longer than ``MAX_GROUP``
  characters is ``(…)`` unless it only lists names (``PRIMARY KEY (a, b, c)`` stays); a string
  longer than ``MAX_STRING`` characters ``'…'``; the table options after the list kept the same
  way and ``AS …`` for a query;
- a view: its head and its columns, the explicit list or the names its ``SELECT`` gives (an
  alias, a column's own name, ``?`` for an unnamed expression), then ``AS …``;
- an index: the whole statement, its ``WHERE`` predicate ``…`` when longer than ``MAX_WHERE``;
- a function, procedure or aggregate: its parameters and its ``RETURNS`` clause (not its
  attributes, language or body);
- a trigger: everything before its ``BEGIN … END`` body (timing, event, table, ``FOR EACH
  ROW``, ``EXECUTE FUNCTION f()``), a long ``WHEN`` condition ``(…)``;
- anything else (an operator, a domain, a text search dictionary...): the statement, its first
  parenthesized group (the definition) kept element by element, cut after ``MAX_OTHER`` characters
  with ``…``.

Comments are dropped and whitespace collapsed in every signature. What ends a statement:
``sqllex``.
"""

from __future__ import annotations

import bisect
import re

from leanctx.context.symbols.model import Symbol
from leanctx.context.symbols.sqllex import MAX_GROUP, MAX_STRING, Lexer, Statement

__all__ = ["MAX_GROUP", "MAX_OTHER", "MAX_STRING", "MAX_WHERE", "extract"]

MAX_OTHER = 120
MAX_WHERE = 48
_NEWLINE = re.compile("\n")

_MODIFIERS = frozenset({
    "OR", "REPLACE", "ALTER", "TEMP", "TEMPORARY", "UNLOGGED", "GLOBAL", "LOCAL", "VIRTUAL", "EXTERNAL",
    "MATERIALIZED", "RECURSIVE", "UNIQUE", "CONSTRAINT", "TRUSTED", "PROCEDURAL", "DEFAULT", "CLUSTERED",
    "NONCLUSTERED", "FULLTEXT", "SPATIAL", "BITMAP", "SECURE", "TRANSIENT", "EDITIONABLE", "NONEDITIONABLE",
    "FORCE", "NOFORCE",
})
_SKIP_ASSIGNMENTS = frozenset({"DEFINER", "ALGORITHM"})  # MySQL: ``DEFINER = `u`@`h```
_KINDS = frozenset({
    "TABLE", "VIEW", "INDEX", "FUNCTION", "PROCEDURE", "TRIGGER", "TYPE", "DOMAIN", "SCHEMA", "SEQUENCE",
    "EXTENSION", "DATABASE", "ROLE", "USER", "GROUP", "AGGREGATE", "CAST", "RULE", "POLICY", "COLLATION",
    "CONVERSION", "EVENT", "PUBLICATION", "SUBSCRIPTION", "SERVER", "TABLESPACE", "STATISTICS", "TRANSFORM",
    "LANGUAGE", "SYNONYM", "PACKAGE", "MACRO", "OPERATOR", "TEXT", "FOREIGN", "ACCESS",
})
_SECOND = {  # kinds of two or more words
    "OPERATOR": {"CLASS", "FAMILY"}, "TEXT": {"SEARCH"}, "SEARCH": {"CONFIGURATION", "DICTIONARY", "PARSER", "TEMPLATE"},
    "FOREIGN": {"DATA", "TABLE"}, "DATA": {"WRAPPER"}, "EVENT": {"TRIGGER"}, "ACCESS": {"METHOD"},
    "USER": {"MAPPING"}, "PACKAGE": {"BODY"},
}
_ROUTINE_STOPS = frozenset({
    "AS", "IS", "LANGUAGE", "IMMUTABLE", "STABLE", "VOLATILE", "STRICT", "CALLED", "SECURITY", "PARALLEL",
    "COST", "ROWS", "SET", "WINDOW", "LEAKPROOF", "NOT", "SUPPORT", "TRANSFORM", "RETURN", "BEGIN",
    "DETERMINISTIC", "READS", "MODIFIES", "CONTAINS", "NO", "COMMENT", "SQL", "EXTERNAL", "WITH", "ATOMIC",
})
_SELECT_ENDS = frozenset({"FROM", "WHERE", "GROUP", "ORDER", "LIMIT", "UNION", "INTERSECT", "EXCEPT", "WINDOW",
                          "HAVING", "INTO"})
_NOT_ALIASES = frozenset({"END", "NULL", "TRUE", "FALSE", "AND", "OR", "NOT", "IS", "THEN", "ELSE", "DESC",
                          "ASC", "DISTINCT", "ALL"})


def _signature(st: Statement) -> tuple[str, str, str] | None:
    """(kind, name, signature) of a CREATE statement, None when it declares nothing we can name."""
    up, n = st.up, len(st.toks)
    i = 1
    while i < n:
        w = up[i]
        if w in _SKIP_ASSIGNMENTS:
            i += 1
            while i < n and up[i] not in _KINDS and up[i] not in _MODIFIERS:
                i += 1
            continue
        if w == "SQL" and i + 1 < n and up[i + 1] == "SECURITY":
            i += 3
            continue
        if w not in _MODIFIERS:
            break
        i += 1
    if i >= n or not up[i]:
        return None
    kind_words = [up[i]]
    i += 1
    while i < n and up[i] in _SECOND.get(kind_words[-1], ()):
        kind_words.append(up[i])
        i += 1
    if kind_words[0] == "FOREIGN" and kind_words[-1] == "TABLE":
        kind_words = ["TABLE"]
    kind = "_".join(w.lower() for w in kind_words)
    if i + 2 < n and up[i] == "IF" and up[i + 1] == "NOT" and up[i + 2] == "EXISTS":
        i += 3
    if i < n and up[i] == "CONCURRENTLY":
        i += 1
    head = kind_words[0]
    if head == "INDEX":
        return _index(st, i)
    if head == "CAST" and st.is_p(i, "("):
        j = st.after_group(i)
        return kind, st.render(i + 1, j - 1), st.render(0, j)
    if kind == "operator":
        j = i
        while j < n and not st.is_p(j, "("):
            j += 1
        return kind, "".join(st.tok(k) for k in range(i, j)), _other(st, j)
    name, j = st.name_at(i)
    if not name:
        return None
    if head in ("TABLE", "TYPE"):
        return kind, name, _table(st, j)
    if head == "VIEW":
        return kind, name, _view(st, j)
    if head in ("FUNCTION", "PROCEDURE", "AGGREGATE", "MACRO"):
        return kind, name, _routine(st, j)
    if head == "TRIGGER" or kind == "event_trigger":
        stop = st.find(j, {"BEGIN"})
        return kind, name, _cut(st.render(0, _strip_end(st, stop)))
    return kind, name, _other(st, j)


def _other(st: Statement, j: int) -> str:
    """Any other statement: its first group from ``j`` (options, definition) compacted element by
    element, the statement cut after ``MAX_OTHER`` characters."""
    n = _strip_end(st, len(st.toks))
    g = j
    while g < n and not st.is_p(g, "("):
        g += 1
    return _cut(st.render(0, n, frozenset({g})))


def _strip_end(st: Statement, b: int) -> int:
    while b > 0 and st.toks[b - 1][0] == "p" and st.tok(b - 1) in (";", "/"):
        b -= 1
    return b


def _cut(sig: str, limit: int = MAX_OTHER) -> str:
    if len(sig) <= limit:
        return sig
    at = sig.rfind(" ", 0, limit)
    return sig[: at if at > 0 else limit].rstrip(" ,(") + " …"


def _table(st: Statement, j: int) -> str:
    """A table or type: its head and its columns (the first group), then its options."""
    n = _strip_end(st, len(st.toks))
    g = j
    if g < n and st.up[g] == "USING":  # SQLite virtual table: ``USING fts5(…)``
        g += 1 if g + 1 < n and st.toks[g + 1][0] == "w" else 0
        g += 1
    elif g + 1 < n and st.up[g] == "AS" and st.up[g + 1] in ("ENUM", "RANGE"):
        g += 2
    elif g < n and st.up[g] == "AS" and st.is_p(g + 1, "("):
        g += 1
    if not st.is_p(g, "("):
        a = st.find(j, {"AS"}, n)
        return st.render(0, a) + (" AS …" if a < n else "")
    end = st.after_group(g)
    sig = st.render(0, end, frozenset({g}))
    a = st.find(end, {"AS"}, n)
    tail = st.render(end, a)
    if tail:
        sig += " " + _cut(tail, 80)
    return sig + (" AS …" if a < n else "")


def _view(st: Statement, j: int) -> str:
    """A view: its head, its columns (written or derived from its query), its options, ``AS …``."""
    n = _strip_end(st, len(st.toks))
    a = st.find(j, {"AS"}, n)
    if st.is_p(j, "("):
        j = st.after_group(j)
        head = st.render(0, j, frozenset({j}))
    else:
        head = st.render(0, j)
        cols = _select_names(st, a + 1, n) if a < n else []
        if cols:
            head += "(" + ", ".join(cols) + ")"
    options = st.render(j, a)
    return head + (" " + options if options else "") + (" AS …" if a < n else "")


def _select_names(st: Statement, i: int, n: int) -> list[str]:
    """The names of the columns of the first top-level ``SELECT`` from ``i`` (see module doc)."""
    i = st.find(i, {"SELECT", "VALUES"}, n)
    if i >= n or st.up[i] != "SELECT":
        return []
    i += 1
    while i < n and st.up[i] in ("DISTINCT", "ALL"):
        i += 1
        if st.up[i - 1] == "DISTINCT" and i < n and st.up[i] == "ON" and st.is_p(i + 1, "("):
            i = st.after_group(i + 1)
    end = st.find(i, _SELECT_ENDS, n)
    names: list[str] = []
    item: list[int] = []
    k = i
    while k <= end:
        if k == end or st.is_p(k, ","):
            if item:
                names.append(_item_name(st, item))
            item = []
            k += 1
            continue
        if st.is_p(k, "("):
            nxt = min(st.after_group(k), end)
            item.extend(range(k, nxt))
            k = nxt
            continue
        item.append(k)
        k += 1
    return names


def _item_name(st: Statement, item: list[int]) -> str:
    def name(i: int) -> str:
        t = st.tok(i)
        return t[1:-1] if st.toks[i][0] == "q" else t

    last = item[-1]
    kinds = [st.toks[i][0] for i in item]
    if len(item) >= 2 and st.up[item[-2]] == "AS" and kinds[-1] in ("w", "q"):
        return name(last)
    if st.is_p(last, "*"):
        return "".join(st.tok(i) for i in item)
    plain = all(k in ("w", "q") if x % 2 == 0 else st.is_p(i, ".") for x, (i, k) in enumerate(zip(item, kinds)))
    if plain:
        return name(last)
    if kinds[-1] in ("w", "q") and st.up[last] not in _NOT_ALIASES:
        prev = item[-2]
        if st.toks[prev][0] in ("w", "q", "n", "s") or st.is_p(prev, ")"):
            return name(last)
        if st.is_p(prev, "::") and len(item) >= 3:
            head = item[: item.index(prev)]
            if all(st.toks[i][0] in ("w", "q") or st.is_p(i, ".") for i in head):
                return name(head[-1])
    return "?"


def _index(st: Statement, i: int) -> tuple[str, str, str] | None:
    n = _strip_end(st, len(st.toks))
    name, j = st.name_at(i) if i < n and st.up[i] != "ON" else ("", i)
    on = st.find(j, {"ON"}, n)
    table, k = st.name_at(on + 1) if on < n else ("", on)
    while k < n and not st.is_p(k, "("):
        k += 1
    keep = frozenset({k}) if k < n else frozenset()
    where = st.find(k, {"WHERE"}, n)
    sig = st.render(0, where, keep)
    if where < n:
        pred = st.render(where + 1, n)
        sig += " WHERE " + (pred if len(pred) <= MAX_WHERE else "…")
    return "index", name or table, sig


def _routine(st: Statement, j: int) -> str:
    n = _strip_end(st, len(st.toks))
    keep: set[int] = set()
    k = j
    if st.is_p(k, "("):
        keep.add(k)
        k = st.after_group(k)
    if k < n and st.up[k] == "RETURNS":
        k += 1
        while k < n and st.up[k] not in _ROUTINE_STOPS:
            if st.is_p(k, "("):
                keep.add(k)
                k = st.after_group(k)
            else:
                k += 1
    elif k == j:  # T-SQL parameters without parentheses: ``@a INT, @b DATE = NULL AS``
        k = st.find(j, _ROUTINE_STOPS, n)
    return st.render(0, min(k, n), frozenset(keep))


def extract(text: str) -> list[Symbol]:
    """The ``CREATE`` statements of ``text`` as declarations (see the module doc)."""
    lex = Lexer(text)
    lex.run()
    newlines = [m.start() for m in _NEWLINE.finditer(text)]
    out: list[Symbol] = []
    for toks in lex.statements:
        if not toks or toks[0][0] != "w" or text[toks[0][1] : toks[0][2]].upper() != "CREATE":
            continue
        st = Statement(lex, toks)
        got = _signature(st)
        if got is None:
            continue
        kind, name, sig = got
        out.append(Symbol(name=name, kind=kind, line=bisect.bisect_left(newlines, toks[0][1]) + 1,
                          end_line=bisect.bisect_left(newlines, toks[-1][2] - 1) + 1, depth=0, signature=sig))
    return out
