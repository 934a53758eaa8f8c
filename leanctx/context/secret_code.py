"""Code and non-assignments around secret names (used by ``secrets.redact``).

``code_value``: whether an unquoted value after a secret name is code reading the secret from
elsewhere — on any line a call or subscript of a name (``tokenizer.expect(``, ``getpass()``,
``headers["x"]``; not ``Xk29d(ab``: a password), ``lambda``, ``await``, ``new``, ``not``,
``function``, ``class``, ``void``, ``&X{``, ``self.x``/``this.x``; a bare (dotted) name only
where the line says code: a declaration before the name (``const``, ``let``, ``var``, ``my $``,
``final String``...), tuple unpacking (``user, passwd = creds``), a ``self.x``/``this.x`` name, a
dotted name given a dotted value (``hs.secret = hs.session.secret``), a keyword argument
(``f(a, password=pw)``). ``PASSWORD=hunter2``, ``password = hunter2``, ``API_TOKEN=abc.def.ghi``
hold no code signal: they are values.

``no_assignment``: a name followed by ``=``/``:`` that assigns nothing: ``NAME= word``, sudoers
``NOPASSWD:``, a Sphinx field (``:param min_key: ...``), a path before a ``:`` (``/etc/passwd:``).

``QuoteParity``: whether a quote closes a string the name is in (``prompt='Password: '``).

Each looks back at most ``_LOOK_BACK`` characters of a line, or once along it: a minified file
is one long line, and a look from each name to its start would cost the square of its length.
"""

from __future__ import annotations

import re

_LOOK_BACK = 400

# an unquoted value that is code on any line (matched where the value starts): ``lambda``,
# ``await x``, ``new X``, ``not x``, an attribute of ``self``/``this``, a call or subscript of a
# (dotted) name (``tokenizer.expect(``, ``getpass()``, ``headers["x"]``; a name of digits in mixed
# case, ``Xk29d(``, is a password holding a bracket), ``(``/``[`` followed by what opens an argument
# (``Hunter[Horse]`` may be a YAML value: a subscript holds a lowercase name, a quote or a number)
_CODE_VALUE = re.compile(r"""lambda\b|(?:await|new|not|typeof|yield|void|function|class|async)\b[ \t(]*[A-Za-z_$(\[{0-9]
    |(?:self|this|cls)\.[A-Za-z_]|&[A-Za-z_]
    |(?P<path>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?:\((?=[\s)A-Za-z_"'`*\[{(]|$)|\[(?=[\s\]a-z_"'\d-]))""", re.VERBOSE)
_RANDOM_PART = re.compile(r"(?=[^.]*\d)(?=[^.]*[a-z])(?=[^.]*[A-Z])[^.]+")  # ``Xk29d``: mixed case and a digit
_BARE_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")  # ``pw``, ``settings.password``
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
_FIELD = re.compile(r"[ \t]*:(?:param|parameter|arg|argument|key|keyword|type|ivar|cvar|var|raises?)[ \t]+(?:[\w.\[\], |]+[ \t]+)?$")


def code_value(text: str, m: re.Match[str], value: str) -> bool:
    """Whether the unquoted ``value`` of the ``_ASSIGN`` match ``m`` is code reading the secret
    from elsewhere: on any line a call, subscript, ``lambda``, ``await``, ``self.x``...
    (``_CODE_VALUE``); a bare (dotted) name only when the line says code (``password = pw`` may
    be a config line's password): the name is ``self.x``/``this.x``, a declaration or tuple
    unpacking precedes it, or it is a keyword argument (``f(a, password=pw)``)."""
    start = m.start("value")
    if (c := _CODE_VALUE.match(text, start)) is not None:
        return not (c.group("path") and _RANDOM_PART.search(c.group("path")))
    if not _BARE_NAME.fullmatch(value):
        return False
    name = m.group("name").strip("\"'")
    if name.startswith(("self.", "this.")) or ("." in name and "." in value):  # ``hs.secret = hs.x.secret``
        return True
    before, _ = _line_before(text, m.start("name"))
    if _DECLARED.fullmatch(before, max(before.rfind(";"), before.rfind("{")) + 1):
        return True
    return m.group("sep") == "=" and _in_call(before)


def no_assignment(text: str, m: re.Match[str]) -> bool:
    """Whether the ``_ASSIGN`` match ``m`` names no assignment: ``NAME= word`` (empty, then
    prose), sudoers ``NOPASSWD:``, a Sphinx
    field (``:param min_key: The key``), a path's last part before a ``:`` (``/etc/passwd:``)."""
    name, at = m.group("name"), m.start("name")
    if name == "NOPASSWD":
        return True
    sep = m.group("sep")
    if sep[0] == "=" and sep != sep.rstrip():
        return True  # ``IPv6Token= section``: ``NAME=`` empty, then prose
    if sep.strip() != ":":
        return False
    before, whole = _line_before(text, at)
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
