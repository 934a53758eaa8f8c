"""Code and non-assignments around secret names (used by ``secrets.redact``).

``code_value``: whether an unquoted value after a secret name is code reading the secret from
elsewhere — on any line a call or subscript of a name (``tokenizer.expect(``, ``getpass()``,
``get_random_string(10)``, ``headers["x"]``, ``key[:16]``, Perl's ``verify_cb($verify)``; not ``Xk29d(ab``: a password; a
PascalCase name with digits is a type: ``Ed25519PrivateKey.generate()``), a subscript called
(``StashKey[IO[bytes]]()``), a value whose brackets close past a space (``StashKey[Config |
None]()``), a JavaScript regex literal holding regex syntax (``/^Unexpected token '?(.)'?/i``;
not ``/Tr0ub4dor&3/``), ``lambda``, ``await``, ``new``, ``not``, ``function``, ``class``,
``void``, ``&X{``, ``self.x``/``this.x``; a bare (dotted) name only where the line says code: a
declaration before the name (``const``, ``let``, ``var``, ``my $``, ``final String``...), tuple
unpacking (``user, passwd = creds``), a ``self.x``/``this.x`` name, a dotted name given a dotted
value (``hs.secret = hs.session.secret``), a keyword argument (``f(a, password=pw)``, or on a line
of its own in a call opened above: ``signing_key=private_key_pem,``), a quoted key's value
holding ``_``, ``.`` or camelCase humps before ``,`` ``}`` ``)`` or the line's end (``"password":
t_string,``; not ``"password": hunter2,``); after ``=``, any value but a number on a line of a
Python function or class body (asked of ``secret_types.Annotations.python_body``; the name's
line: ``Annotations.call_above``); a bare name or number followed
by the rest of an expression (``code_tail``: an arithmetic operator and an operand, a chained
``=``, ``is`` + ``not``/``None``/a last name (``Passw0rd is the default`` is a value), ``==``, ``!=``,
``a if b else c``, ``cond ? x : y``). ``PASSWORD=hunter2``, ``password = hunter2``,
``API_TOKEN=abc.def.ghi`` hold no code signal: they are values.

``number``, ``numeric_expression``: a constant (``0x1e``, ``-1000``; not a decimal of 6+ digits
nor a hex literal over 64 bits), arithmetic with a number in it (``1024 - 1``). ``conditional``:
a phrase holding ``a if b else c`` or ``c ? x : y``. ``prose_after``: a sentence, not a value
(``limit 0-RTT to resumption connections``; ``secret_prose`` has the rules).

``no_assignment``: a name followed by ``=``/``:`` that assigns nothing: ``NAME= word``, sudoers
``NOPASSWD:``, a Sphinx field (``:param min_key: ...``), a path before a ``:`` (``/etc/passwd:``),
the first branch of a conditional (``cond ? prod_key : dev_key``).

``QuoteParity``: whether a quote closes a string the name is in (``prompt='Password: '``).
``tuple_literals``: which literal of ``user, password = "wile", "coyote"`` is the password's.
``code_phrase``: a config line's phrase that opens with ``self.``/``this.`` (a tuple of code).

Each looks back at most ``_LOOK_BACK`` characters of a line (ahead: ``_LOOK_AHEAD``), or once
along it: a minified file is one long line, and a look from each name to its start (or end)
would cost the square of its length.
"""

from __future__ import annotations

import re

from .secret_prose import described
from .secret_regex import regex_literal
from .secret_types import _TYPE_SHAPED, Annotations

_LOOK_BACK = 400
_LOOK_AHEAD = 256  # how far past a value its line is read (a tail of code, a sentence)

# a number: a constant, not a secret (``0x1e``, ``-1``, ``-0x7``, ``1_000``, ``3.5``, ``13UL``); a
# decimal of 6+ digits may be a PIN or a numeric password, a hex literal of 17+ digits a key
_NUMBER = (r"[-+~]?(?:0[xX][0-9a-fA-F]{1,16}|0[bB][01]{1,64}|0[oO][0-7]{1,22}|0[0-7]{0,4}|[1-9][0-9]{0,4}"
           r"|[0-9]{1,3}(?:_[0-9]{3})+|[0-9]+\.[0-9]+(?:[eE][-+]?[0-9]+)?)[uUlL]{0,3}")
NUMBER = re.compile(_NUMBER)
# arithmetic: numbers (any length: the expression is code), (dotted) names, operators, brackets
# (possessive: each character is read once); ``numeric_expression`` also asks for a number, an
# operator and two operands in it
_ARITHMETIC = re.compile(r"(?:[ \t]*+(?:(?:0[xX][0-9a-fA-F_]++|0[bBoO][0-9_]++|[0-9][0-9_]*+(?:\.[0-9]++)?+)[uUlL]{0,3}+"
                         r"(?![\w.])|[A-Za-z_][\w.]*+|<<|>>|\*\*|//|[-+*/%&^~()]))++[ \t]*+")
_A_NUMBER = re.compile(r"(?<![\w.])[0-9]")
_AN_OPERATOR = re.compile(r"<<|>>|[-+*/%&^~]")
_TWO_OPERANDS = re.compile(r"[\w.][^\w.]+[\w.]")
# what after a value's first word makes it code (``explicit_token = token is not None``,
# ``X_KEY = BASE + 1``, ``ScanToken = -1000 - iota``, ``a = b = c``, ``a if b else
# c``, ``cond ? x : y``); only a bare name or a number counts as a first word
# (``is`` followed by ``not``, ``None``... or a name that ends the expression: ``Passw0rd is the
# default, change it`` is a value and a sentence)
_TAIL = re.compile(rf"[ \t]+(?:(?P<op>(?:[-+*/%]|<<|>>)[ \t]+[-+~(]?(?:{_NUMBER}|[A-Za-z_(])|=[ \t])|(?:==|!=)[ \t]"
                   r"|is[ \t]+(?:(?:not|None|True|False|null|nil)\b|[A-Za-z_][\w.]*[ \t]*(?:$|[)\]},;:\#]))"
                   r"|(?P<if>if[ \t])|(?P<ternary>\?[ \t]))")
_IF = re.compile(r"(?:^|[ \t])if[ \t]")
_QUESTION = re.compile(r"[ \t]\?[ \t]")
_ELSE = re.compile(r"[ \t]else\b")
_COLON = re.compile(r"[ \t]:[ \t]")
# an unquoted value that is code on any line (matched where the value starts): ``lambda``,
# ``await x``, ``new X``, ``not x``, an attribute of ``self``/``this``, a call or subscript of a
# (dotted) name (``tokenizer.expect(``, ``getpass()``, ``headers["x"]``; a name of digits in mixed
# case, ``Xk29d(``, is a password holding a bracket), ``(``/``[`` followed by what opens an argument
# (``Hunter[Horse]`` may be a YAML value: a subscript holds a lowercase name, a quote or a number)
_CODE_VALUE = re.compile(r"""lambda\b|(?:await|new|not|typeof|yield|void|function|class|async)\b[ \t(]*[A-Za-z_$(\[{0-9]
    |(?:self|this|cls)\.[A-Za-z_]|&[A-Za-z_]
    |(?P<path>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?:\((?=[\s)A-Za-z_"'`*\[{(]|[$@%]\w|-?[\d.]+[ \t]*[,)]|$)|\[(?=[\s\]a-z_"'\d:-]))
    """, re.VERBOSE)
# ``Xk29d``: mixed case and a digit, not type-shaped (``Ed25519PrivateKey.generate()`` is a call)
_RANDOM_PART = re.compile(r"(?=[^.]*\d)(?=[^.]*[a-z])(?=[^.]*[A-Z])[^.]+")
_BARE_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")  # ``pw``, ``settings.password``
# a quoted key's variable: ``t_string``, ``settings.api_key``, ``userPassword`` (not ``hunter2``)
_VARIABLE_SHAPED = re.compile(r"_\w|[A-Za-z][A-Za-z0-9]*+[_.]\w|[a-z]++[A-Z]")  # matched at the start
# what before a name on its line says that a bare name after it is a variable: a declaration
# (``const``, ``let``, ``var``, ``my $``..., maybe a type: ``final String``; not the shell's
# ``export``, ``local`` or ``readonly``: a shell value is a string), tuple unpacking
# (``user, passwd = creds``)
# (matched on the statement: after the last ``;`` or ``{`` of the line)
_DECLARED = re.compile(r"""[ \t]*(?:(?:const|let|var|my|our|val|auto|final|static
    |private|public|protected|internal|mut)[ \t]+)+(?:[\w.<>\[\]]+[ \t]+)?[$@%]?
    |[ \t]*(?:[\w.*]+[ \t]*,[ \t]*)+""", re.VERBOSE)
# a name that is no assignment's (``assignments`` skips it): a Sphinx field (``:param min_key: ...``),
# a path before an error message (``cat: /etc/passwd: Permission denied``, ``ext/pre_shared_key: x``)
_SYMBOL_TAIL = re.compile(r"[a-z]++(?:[-_][a-z]++)*+")  # ``gecos``, ``login-shell``: a symbol's last part
_FIELD = re.compile(r"[ \t]*:(?:param|parameter|arg|argument|key|keyword|type|ivar|cvar|var|raises?)[ \t]+(?:[\w.\[\], |]+[ \t]+)?$")


def code_value(text: str, m: re.Match[str], value: str, lines: Annotations | None = None) -> bool:
    """Whether the unquoted ``value`` of the ``_ASSIGN`` match ``m`` is code reading the secret
    from elsewhere: on any line a call, subscript, ``lambda``, ``await``, ``self.x``...
    (``_CODE_VALUE``), a subscript called, a regex literal; a bare (dotted) name only when the
    line says code (``password = pw`` may be a config line's password): the name is
    ``self.x``/``this.x``, a declaration or tuple unpacking precedes it, it is a keyword argument
    (``f(a, password=pw)``; ``lines.call_above``), a quoted key's variable, or its line is a
    statement of a Python function or class body (``lines.python_body``, asked with the name's
    start); a value whose brackets close past a space (``StashKey[Config | None]()``)."""
    start = m.start("value")
    if (_BARE_NAME.fullmatch(value) or number(value)) and code_tail(text, value, start + len(value)):
        return True  # ``explicit_token = token is not None``, ``X_KEY = BASE + 1``, ``a if b else c``
    if (c := _CODE_VALUE.match(text, start)) is not None:
        return not (c.group("path") and random_path(c.group("path"), called=True))
    if _opens_past(text, value, start) or subscript_called(value) or regex_literal(text, start):
        return True  # ``StashKey[Config | None]()``, ``StashKey[IO[bytes]]()``, ``/^Unexpected (.)/i``
    name, sep = m.group("name"), m.group("sep").strip()
    if lines is not None and sep == "=" and not value[0].isdigit() and lines.python_body(m.start("name")):
        return True  # ``meta_key = header`` in a function: an expression (a literal is quoted, or a number)
    if not _BARE_NAME.fullmatch(value):
        return False
    if sep == ":" and name.endswith(("'", '"')) and _VARIABLE_SHAPED.match(value) and not random_path(value):
        return text[start + len(value):start + len(value) + 1] in ("", "\n", ",", "}", ")")  # ``"password": t_string,``
    name = name.strip("\"'")
    if name.startswith(("self.", "this.")) or ("." in name and "." in value):  # ``hs.secret = hs.x.secret``
        return True
    before, _ = _line_before(text, m.start("name"))
    if _DECLARED.fullmatch(before, max(before.rfind(";"), before.rfind("{")) + 1):
        return True
    # a keyword argument on its line below the call's ``(``: a parameter's name, not an
    # environment variable's (``DB_PASSWORD=hunter2`` under a line ending with ``(`` is a value)
    return m.group("sep") == "=" and (_in_call(before) or (lines is not None and not name.isupper()
                                                             and not random_path(value)
                                                             and lines.call_above(m.start("name"))))


def subscript_called(value: str) -> bool:
    """Whether the unquoted ``value`` is a (dotted) name subscripted and called:
    ``StashKey[IO[bytes]]()`` (not ``Hunter[Horse]``, a YAML value, nor ``Xk29d[ab]()``)."""
    n = _BARE_NAME.match(value)
    if n is None or not value.startswith("[", n.end()) or random_path(n.group()):
        return False
    depth = 0
    for i in range(n.end(), len(value)):
        c = value[i]
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return value.startswith("(", i + 1)
        elif not (c.isalnum() or c in "_.,|"):
            return False
    return False


_BRACKET = re.compile(r"[()\[\]\"']")
_TUPLE_TARGET = re.compile(r"[ \t]*(?:[\w.*]+[ \t]*,[ \t]*)+")
# the next item of a tuple of literals: ``, "coyote"``
_NEXT_LITERAL = re.compile(r"""[ \t]*,[ \t]*(?P<q>["'])(?P<quoted>(?:\\[^\n]|(?!(?P=q))[^\\\n])*)(?P=q)""")
_CODE_PHRASE = re.compile(r"(?:self|this|cls)\.[A-Za-z_]")


def code_phrase(phrase: str) -> bool:
    """Whether a config line's phrase opens with code (``self.__class__, self.name``: a tuple)."""
    return bool(_CODE_PHRASE.match(phrase))


def tuple_literals(text: str, m: re.Match[str]) -> list[tuple[int, int]] | None:
    """For a name in a tuple target given a tuple of literals (``user, password = "wile",
    "coyote"``), the spans of the literal contents that are its value: the one at the name's
    place, or all of them when the counts do not tell; ``None`` when the name is no tuple's
    (``m``: an ``_ASSIGN`` match of a quoted value)."""
    before, _ = _line_before(text, m.start("name"))
    t = _TUPLE_TARGET.fullmatch(before, max(before.rfind(";"), before.rfind("{")) + 1)
    if t is None:
        return None
    index = t.group().count(",")
    spans = [(m.start("quoted"), m.end("quoted"))]
    pos = m.end()
    while len(spans) <= index and (n := _NEXT_LITERAL.match(text, pos)) is not None:
        spans.append((n.start("quoted"), n.end("quoted")))
        pos = n.end()
    return [spans[index]] if index < len(spans) else spans


def random_path(path: str, *, called: bool = False) -> bool:
    """Whether a part of the dotted ``path`` reads as random (mixed case and a digit, not
    PascalCase humps: ``Xk29d``, not ``Ed25519PrivateKey``); ``called`` (the name of a call), a
    snake_case part is read word by word (``PEM_string2key(``: ``PEM``, ``string2key``; ``Xk29d_ab(``:
    ``Xk29d``)."""
    return any(_RANDOM_PART.fullmatch(p) and not _TYPE_SHAPED.match(p)
               and (not called or any(_RANDOM_PART.fullmatch(w) for w in p.split("_") if w)) for p in path.split("."))


def _opens_past(text: str, value: str, start: int) -> bool:
    """Whether the unquoted ``value`` (at ``start``) opens a bracket that closes after the space
    ending it, on its line: ``StashKey[Config | None]()``, ``foo(a, b)`` read as one expression."""
    if not _BARE_NAME.match(value):
        return False
    depth = value.count("(") + value.count("[") - value.count(")") - value.count("]")
    if depth <= 0:
        return False
    for b in _BRACKET.finditer(_line_after(text, start + len(value))):  # only the brackets and quotes
        c = b.group()
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
            if depth == 0:
                return True
        else:
            return False
    return False


def number(value: str) -> bool:
    """Whether the unquoted ``value`` is a number (``0x1e``, ``-1000``, ``13UL``): a constant."""
    return bool(NUMBER.fullmatch(value))


def numeric_expression(phrase: str) -> bool:
    """Whether ``phrase`` is arithmetic over numbers and names with a number in it
    (``1024 - 1``, ``-1000 - iota``, ``(1 << 3) + BASE``): code, not a passphrase."""
    return (bool(_ARITHMETIC.fullmatch(phrase)) and bool(_A_NUMBER.search(phrase))
            and bool(_AN_OPERATOR.search(phrase)) and bool(_TWO_OPERANDS.search(phrase)))


def _line_after(text: str, at: int) -> str:
    """The line from ``at``, its first ``_LOOK_AHEAD`` characters at most."""
    end = text.find("\n", at, at + _LOOK_AHEAD)
    return text[at:end if end >= 0 else at + _LOOK_AHEAD]


def code_tail(text: str, value: str, end: int) -> bool:
    """Whether what follows ``value`` (ending at ``end``) makes it the first operand of an
    expression: an arithmetic operator and an operand or a chained ``=`` (after a number or a
    name without digits: ``abcd1234 - the prod one`` is a password and a comment),
    ``is``/``==``/``!=``, a conditional (``a if b else c``, ``cond ? x : y``; the ``else``/``:``
    on the same line)."""
    rest = _line_after(text, end)
    t = _TAIL.match(rest)
    if t is None or (t.group("op") and not number(value) and any(c.isdigit() for c in value)):
        return False
    if t.group("if"):
        return _ELSE.search(rest, t.end() - 1) is not None
    if t.group("ternary"):
        return _COLON.search(rest, t.end() - 1) is not None
    return True


def conditional(phrase: str) -> bool:
    """Whether ``phrase`` holds a conditional expression: ``a if b else c``, ``cond ? x : y``
    (one search each, never a backtracking ``.*``: linear on any line)."""
    i = _IF.search(phrase)
    if i is not None and _ELSE.search(phrase, i.end() - 1):
        return True
    q = _QUESTION.search(phrase)
    return q is not None and _COLON.search(phrase, q.end() - 1) is not None


def prose_after(text: str, start: int, name: str = "") -> bool:
    """Whether the line from ``start`` (a value's first word) is no value after ``name:`` but a
    sentence, a status or a description (``secret_prose.described``)."""
    return described(_line_after(text, start), name)


def no_assignment(text: str, m: re.Match[str]) -> bool:
    """Whether the ``_ASSIGN`` match ``m`` names no assignment: ``NAME= word`` (empty, then
    prose), sudoers ``NOPASSWD:``, a Sphinx field (``:param min_key: The key``), a path's last
    part before a ``:`` (``/etc/passwd:``), a quoted symbol of lowercase words (``"passwd:gecos"``;
    not ``"password:hunter2"``)."""
    name, at = m.group("name"), m.start("name")
    if name == "NOPASSWD":
        return True
    sep = m.group("sep")
    if sep[0] == "=" and sep != sep.rstrip():
        return True  # ``IPv6Token= section``: ``NAME=`` empty, then prose
    if sep.strip() != ":":
        return False
    if sep == ":" and at and text[at - 1] in "\"'" and (s := _SYMBOL_TAIL.match(text, m.end("sep"))) is not None \
            and text.startswith(text[at - 1], s.end()):
        return True  # ``"passwd:gecos"``: one quoted symbol (a Scheme accessor, a scope)
    before, whole = _line_before(text, at)
    if sep[0] in " \t" and before.rstrip(" \t").endswith(" ?"):
        return True  # ``cond ? prod_key : dev_key``: the branches of a conditional
    return before.endswith("/") or (whole and bool(_FIELD.fullmatch(before)))


def _line_before(text: str, at: int, limit: int = _LOOK_BACK) -> tuple[str, bool]:
    """The line up to ``at``, its last ``limit`` characters at most (a minified file is one long
    line: looking back to its start from each name would cost the square of its length), and
    whether that is the whole of it."""
    lo = max(0, at - limit)
    start = text.rfind("\n", lo, at) + 1
    if start == 0 and lo > 0:
        return text[lo:at], False
    return text[start:at], True


class QuoteParity:
    """Whether a quote closes a string opened earlier on its line (``'Password: '``, ``print("Password:",
    x)``): an odd number of the same quotes before it on the line, apostrophes between two letters
    (``don't``) and escaped quotes not counted. Counted on from the last position asked (asked in
    increasing order: one pass per line, not one per name on a long minified line)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.counts = {"'": 0, '"': 0}

    def closes(self, at: int) -> bool:
        text, q = self.text, self.text[at]
        if at < self.pos:
            self.pos = text.rfind("\n", 0, at) + 1
            self.counts = {"'": 0, '"': 0}
        if (nl := text.rfind("\n", self.pos, at)) >= 0:
            self.pos = nl + 1
            self.counts = {"'": 0, '"': 0}
        for i in range(self.pos, at):
            c = text[i]
            if c in self.counts and not (i and text[i - 1] == "\\") and not (
                    c == "'" and i and text[i - 1].isalnum() and text[i + 1:i + 2].isalnum()):
                self.counts[c] += 1
        self.pos = at
        return self.counts[q] % 2 == 1


def _in_call(before: str) -> bool:
    """Whether ``before`` (a line up to a name) leaves a call's argument list open: ``f(a, ``
    (not a shell ``$(``)."""
    if "(" not in before:
        return False
    depth = 0
    for i in range(len(before) - 1, -1, -1):
        c = before[i]
        if c in ")]}":
            depth += 1
        elif c in "([{":
            if depth == 0:
                return c == "(" and i > 0 and (before[i - 1].isalnum() or before[i - 1] == "_")
            depth -= 1
    return False
