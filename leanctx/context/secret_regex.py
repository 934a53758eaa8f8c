"""Values that are regexes, not secrets (used by ``secret_assign`` and ``secret_code``).

``regex_literal``: a JavaScript regex literal after a secret name, ending its expression on the
line and holding regex syntax (``const UNEXPECTED_TOKEN = /^Unexpected token '?(.)'?(,)? /i``,
``/Bearer (\\S+)/g;``, ``/^[A-Z]{4}$/.test(k)``); ``/Tr0ub4dor&3/`` holds none (a password
between slashes), ``/etc/secret/pw`` does not end there (a path).

``raw_regex``: a Python raw string's content that is a regex: a character class (``\\w``,
``[^\\W\\d]``) and an operator (a quantifier, an anchor, a group, ``|``), its groups and classes
balanced (``jsonnet_token = r'[^\\W\\d]\\w*'``); ``r'C0mpl3x\\Pass'`` and ``r'P@ss(w0rd)+'`` hold
no class: values.

Both read a bounded stretch (``_LOOK_AHEAD``, ``_MAX_REGEX`` characters), possessively: linear
on any line.
"""

from __future__ import annotations

import re

_LOOK_AHEAD = 256  # how far a regex literal is looked for on its line
# a JavaScript regex literal (possessive: each character read once), then the end of its
# expression: ``/^Unexpected token '?(.)'?(,)? /i``, ``/Bearer (\S+)/g;``, ``/^[A-Z]{4}$/.test(k)``
_REGEX_LITERAL = re.compile(r"/(?![*/])(?P<body>(?:\\[^\n]|\[(?:\\[^\n]|[^\]\\\n])*+\]|[^/\\\n\[])++)/[dgimsuyv]*+"
                            r"(?=[ \t]*+(?:$|[;,)\]}]|\.[A-Za-z_]|//))")
_REGEX_SYNTAX = re.compile(r"[\\^$()\[\]?*+{}|]")  # ``/Tr0ub4dor&3/`` holds none: a password between slashes
# a raw string's regex: a class (``\w``, ``\d``, ``[^\W\d]``, ``[A-Za-z_]``) and an operator
# (a quantifier, an anchor, a group, ``|``); ``r'C0mpl3x\Pass'`` and ``r'P@ss(w0rd)+'`` hold no class
_REGEX_CLASS = re.compile(r"\\[wWdDsSbBAZ]|\[\^?(?:\\[^\n]|[^\]\\\n])++\]")
_REGEX_OPERATOR = re.compile(r"[*+?|^$(]|\{[0-9]+(?:,[0-9]*)?\}")
_MAX_REGEX = 512  # characters of a raw string read as a regex
_CLASS_END = re.compile(r"\^?\]?(?:\\.|[^\]\\])*+\]")  # from after a ``[`` to its ``]`` (``[]a]``: ``]`` first is a member)


def raw_regex(value: str) -> bool:
    """Whether a raw string's ``value`` is a regex: a character class and an operator in it, its
    groups and classes balanced (``[^\\W\\d]\\w*``, ``^\\s*(\\w+)\\s*=``)."""
    if len(value) > _MAX_REGEX or not (_REGEX_CLASS.search(value) and _REGEX_OPERATOR.search(value)):
        return False
    depth, i, n = 0, 0, len(value)
    while i < n:
        c = value[i]
        if c == "\\":
            i += 1
        elif c == "[":
            close = _CLASS_END.match(value, i + 1)
            if close is None:
                return False
            i = close.end() - 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth < 0:
                return False
        i += 1
    return depth == 0


def regex_literal(text: str, start: int) -> bool:
    """Whether a JavaScript regex literal holding regex syntax starts at ``start`` and ends its
    expression on the line (``/^Unexpected token '?(.)'?(,)? /i``; ``/Tr0ub4dor&3/`` is a
    password between slashes, ``/etc/secret/pw`` a path)."""
    if not text.startswith("/", start):
        return False
    end = text.find("\n", start, start + _LOOK_AHEAD)
    r = _REGEX_LITERAL.match(text[start:end if end >= 0 else start + _LOOK_AHEAD])
    return r is not None and _REGEX_SYNTAX.search(r.group("body")) is not None
