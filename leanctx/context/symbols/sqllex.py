"""The SQL lexer of ``sql``: a script as statements of tokens, and the compact rendering of a
statement's source.

A statement ends at ``;`` outside strings (``'…'``, ``E'…'``, ``$tag$…$tag$``), quoted
identifiers, comments (``--``, ``/* */``, MySQL ``#``) and parentheses, and outside the ``BEGIN …
END`` body of a trigger or routine (``CASE … END`` counted too; ``END IF`` / ``END LOOP``... close
nothing counted); at the MySQL client's ``DELIMITER`` when one is set; at a T-SQL ``GO`` line; and
before a ``CREATE`` that starts a line outside a body (a statement whose ``;`` is missing ends
there, and an unbalanced parenthesis costs one statement, not the rest of the file). psql
meta-commands (a line starting with ``\\``) and ``DELIMITER`` lines are not statements. The
MySQL dialect (backslash escapes in strings, ``#`` comments, no dollar quotes) is assumed when
the script has a backquote, ``ENGINE=``, ``AUTO_INCREMENT`` or ``DELIMITER``.
"""

from __future__ import annotations

import bisect
import re

__all__ = ["MAX_GROUP", "MAX_STRING", "Lexer", "Statement", "Tok"]

MAX_GROUP = 24
MAX_STRING = 24


def _tokens(mysql: bool) -> re.Pattern[str]:
    """Comments (c), strings (s), quoted identifiers (q), words (w), numbers (n), punctuation (p);
    whitespace is skipped by the search. MySQL: backslash escapes in strings, ``#`` comments, no
    dollar quotes; PostgreSQL: ``E'…'`` escapes, ``$tag$…$tag$``."""
    if mysql:
        strings = r"(?P<s>(?:[BbXxNn])?'(?:[^'\\]|\\.|'')*'?)|(?P<q>`[^`]*`?|\"(?:[^\"\\]|\\.|\"\")*\"?)"
        comments = r"(?P<c>--[^\n]*|\#[^\n]*|/\*.*?(?:\*/|\Z))"
    else:
        strings = (r"(?P<s>[Ee]'(?:[^'\\]|\\.|'')*'?|(?:[BbXxNn]|[Uu]&)?'(?:[^']|'')*'?"
                   r"|\$(?P<tag>(?:[A-Za-z_\x80-\uffff][\w\x80-\uffff]*)?)\$.*?\$(?P=tag)\$)"
                   r"|(?P<q>\"(?:[^\"]|\"\")*\"?)")
        comments = r"(?P<c>--[^\n]*|/\*.*?(?:\*/|\Z))"
    return re.compile(comments + "|" + strings + r"|(?P<w>[A-Za-z_\x80-\uffff][\w$\x80-\uffff]*)"
                      r"|(?P<n>\d[\w.]*)|(?P<p>::|<=|>=|<>|!=|\|\||\S)", re.DOTALL)


_TOKEN = _tokens(False)
_TOKEN_MYSQL = _tokens(True)
_MYSQL_HINTS = re.compile(r"`|\bENGINE\s*=|\bAUTO_INCREMENT\b|^\s*DELIMITER\s", re.IGNORECASE | re.MULTILINE)
_NEXT_WORD = re.compile(r"\s*([A-Za-z_]\w*)")
_WS = re.compile(r"\s+")
_ROUTINES = frozenset({"TRIGGER", "FUNCTION", "PROCEDURE", "EVENT", "PACKAGE"})  # may hold BEGIN … END
_NOT_BLOCKS = frozenset({"TRANSACTION", "TRAN", "WORK", "DISTRIBUTED"})  # ``BEGIN TRANSACTION`` opens none
_STARTS = frozenset({"CREATE", "GO", "DELIMITER"})  # words that mean something at the start of a line
_BLOCK_WORDS = frozenset({"BEGIN", "CASE", "END"})
_END_OF_OTHER = frozenset({"IF", "LOOP", "WHILE", "REPEAT", "FOR"})  # ``END IF``: their openers are not counted

Tok = tuple[str, int, int]  # (kind, start, end): kind w(ord) q(uoted id) s(tring) n(umber) p(unctuation)


class Lexer:
    """Splits a script into statements of tokens (comments kept apart, in ``comments``)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.mysql = _MYSQL_HINTS.search(text) is not None
        self.comments: list[tuple[int, int]] = []
        self.statements: list[list[Tok]] = []

    def run(self) -> None:
        text, n = self.text, len(self.text)
        cur: list[Tok] = []
        depth = block = 0
        routine: bool | None = None
        delim = ";"
        skip_to = 0  # past a DELIMITER line or psql meta-command, or past a custom delimiter
        skip_case = False
        append = cur.append
        for m in (_TOKEN_MYSQL if self.mysql else _TOKEN).finditer(text):
            kind = m.lastgroup or "p"
            start, end = m.span()
            if start < skip_to:
                continue
            if kind == "c":
                self.comments.append((start, end))
                continue
            if kind == "tag":
                kind = "s"
            if kind == "p" and (delim == ";" or not text.startswith(delim, start)):
                c = text[start]
                if c == "(":
                    depth += 1
                elif c == ")":
                    depth = max(0, depth - 1)
                elif c == ";" and delim == ";" and block == 0 and depth == 0:
                    append((kind, start, end))
                    self.statements.append(cur)
                    cur, depth, block, routine = [], 0, 0, None
                    append = cur.append
                    continue
                elif c == "\\" and not cur and _at_line_start(text, start):  # psql meta-command
                    eol = text.find("\n", start)
                    skip_to = n if eol < 0 else eol
                    continue
            elif kind == "p":  # a custom delimiter (MySQL client ``DELIMITER //``)
                if cur:
                    self.statements.append(cur)
                cur, depth, block, routine = [], 0, 0, None
                append = cur.append
                skip_to = start + len(delim)
                continue
            elif kind == "w":
                word = text[start:end].upper()
                if word in _STARTS and _at_line_start(text, start):
                    eol = text.find("\n", end)
                    eol = n if eol < 0 else eol
                    if word == "DELIMITER" and not cur:
                        parts = text[end:eol].split()
                        delim = parts[0] if parts else ";"
                        skip_to = eol
                        continue
                    go = word == "GO" and not text[end:eol].strip()  # T-SQL batch separator
                    if block == 0 and cur and (word == "CREATE" or go):
                        self.statements.append(cur)
                        cur, depth, block, routine = [], 0, 0, None
                        append = cur.append
                    if go:
                        continue
                if word in _BLOCK_WORDS and cur:
                    if routine is None:
                        routine = self._is_routine(cur)
                    if routine:
                        if word == "BEGIN" and not self._next_word_in(end, _NOT_BLOCKS):
                            block += 1
                        elif word == "CASE":
                            block += 0 if skip_case else 1
                            skip_case = False
                        elif word == "END" and block > 0:
                            if self._next_word_in(end, frozenset({"CASE"})):
                                skip_case = True
                                block -= 1
                            elif not self._next_word_in(end, _END_OF_OTHER):
                                block -= 1
            append((kind, start, end))
        if cur:
            self.statements.append(cur)

    def _next_word_in(self, pos: int, words: frozenset[str]) -> bool:
        m = _NEXT_WORD.match(self.text, pos)
        return m is not None and m.group(1).upper() in words

    def _is_routine(self, cur: list[Tok]) -> bool:
        words = [self.text[s:e].upper() for k, s, e in cur[:12] if k == "w"]
        return bool(words) and words[0] == "CREATE" and any(w in _ROUTINES for w in words[1:8])


def _at_line_start(text: str, pos: int) -> bool:
    return not text[text.rfind("\n", 0, pos) + 1 : pos].strip()


class Statement:
    """A statement: its tokens, their matching parentheses, its words upper-cased (``up``, "" for
    other tokens), and the helpers ``sql`` reads it with."""

    def __init__(self, lex: Lexer, toks: list[Tok]) -> None:
        self.lex = lex
        self.text = lex.text
        self.toks = toks
        self.match: dict[int, int] = {}
        stack: list[int] = []
        for i, (k, s, _e) in enumerate(toks):
            if k == "p" and self.text[s] == "(":
                stack.append(i)
            elif k == "p" and self.text[s] == ")" and stack:
                self.match[stack.pop()] = i
        self.up = [self.text[s:e].upper() if k == "w" else "" for k, s, e in toks]

    # ------------------------------------------------------------------ tokens
    def tok(self, i: int) -> str:
        _k, s, e = self.toks[i]
        return self.text[s:e]

    def is_p(self, i: int, c: str) -> bool:
        return i < len(self.toks) and self.toks[i][0] == "p" and self.tok(i) == c

    def after_group(self, i: int) -> int:
        """The index after the group opening at ``i`` (its end when unclosed)."""
        return self.match.get(i, len(self.toks) - 1) + 1

    def name_at(self, i: int) -> tuple[str, int]:
        """A qualified name (``schema.name``, quotes dropped) at ``i``, and the index after it."""
        parts: list[str] = []
        while i < len(self.toks) and self.toks[i][0] in ("w", "q"):
            t = self.tok(i)
            parts.append(t[1:-1] if self.toks[i][0] == "q" and len(t) >= 2 else t)
            i += 1
            if not self.is_p(i, "."):
                break
            i += 1
        return ".".join(parts), i

    def find(self, i: int, words: frozenset[str] | set[str], stop: int | None = None) -> int:
        """The index of the first of ``words`` at depth 0 from ``i``; ``stop`` (or the end) if none."""
        end = len(self.toks) if stop is None else stop
        while i < end:
            if self.up[i] in words:
                return i
            i = self.after_group(i) if self.is_p(i, "(") else i + 1
        return end

    # ------------------------------------------------------------------ rendering
    def render(self, a: int, b: int, keep: frozenset[int] = frozenset()) -> str:
        """The source of tokens ``a``..``b`` (exclusive), compacted: comments dropped, whitespace
        collapsed, a string longer than ``MAX_STRING`` characters ``'…'`` and a parenthesized group
        ``(…)`` when ``_elide`` says so, except the groups ``keep`` (a column list, parameters:
        their elements are compacted one by one)."""
        if a >= b:
            return ""
        edits: list[tuple[int, int, str]] = []
        i = a
        while i < b:
            k, s, e = self.toks[i]
            if k == "s" and e - s > MAX_STRING:
                q = "$$" if self.text[s] == "$" else "'"
                edits.append((s, e, f"{q}…{q}"))
            elif k == "p" and self.text[s] == "(" and i not in keep:
                j = self.match.get(i)
                if j is not None and j < b and self._elide(i, j):
                    edits.append((e, self.toks[j][1], "…"))
                    i = j
            i += 1
        start, end = self.toks[a][1], self.toks[b - 1][2]
        lo = bisect.bisect_left(self.lex.comments, (start, start))
        for cs, ce in self.lex.comments[lo:]:
            if cs >= end:
                break
            edits.append((cs, ce, " "))
        edits.sort()
        parts: list[str] = []
        pos = start
        for s, e, rep in edits:
            if s < pos or e > end:
                continue
            parts.append(self.text[pos:s])
            parts.append(rep)
            pos = e
        parts.append(self.text[pos:end])
        return _tidy("".join(parts))

    def _elide(self, i: int, j: int) -> bool:
        """A group to write ``(…)``: longer than ``MAX_GROUP`` and not a plain list of names."""
        inner = self.text[self.toks[i][2] : self.toks[j][1]]
        if len(_WS.sub(" ", inner).strip()) <= MAX_GROUP:
            return False
        return not all(k in ("w", "q") or (k == "p" and self.text[s] in ",.") for k, s, _e in self.toks[i + 1 : j])


def _tidy(s: str) -> str:
    """Whitespace collapsed, none inside parentheses or before a comma."""
    s = _WS.sub(" ", s).strip()
    s = re.sub(r"\(\s+", "(", s)
    s = re.sub(r"\s+\)", ")", s)
    return re.sub(r"\s+,", ",", s)
