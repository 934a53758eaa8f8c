"""Assignments of secret names (used by ``secrets.redact``; the rules are described there).

``redact_assignments`` runs the config-line rule (a value of several words) and then the
general rule (``_ASSIGN``: a quoted or one-word value), keeping type annotations
(``secret_types``), code (``secret_code``) and regexes (``secret_regex``); what the names and
values must be is ``secret_names``'.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .secret_code import (
    QuoteParity,
    code_phrase,
    code_value,
    conditional,
    no_assignment,
    number,
    numeric_expression,
    prose_after,
    tuple_literals,
)
from .secret_names import (
    _ASSIGN,
    _ASSIGN_HEAD,
    _CODE,
    _CONFIG_LINE,
    _DEFAULT,
    _EXPRESSION,
    _SECRET_NAME,
    _VALUE,
    bare_pw,
    generic_key,
    identifier_words,
    keep,
    pin,
    trim_closers,
    weak,
)
from .secret_prose import described
from .secret_regex import raw_regex, regex_literal
from .secret_types import Annotations

# a tuple target given literals, its names before the ``=`` (``password, user = "hunter2", "bob"``;
# the last name is ``_ASSIGN``'s)
_TUPLE = re.compile(r"""^[ \t]*(?P<targets>[\w.*]+(?:[ \t]*,[ \t]*[\w.*]+)+)[ \t]*=[ \t]*(?=(?:br|rb|[bru])?["'])""",
                    re.MULTILINE)
# an item of the tuple of values: a literal or a plain word (``3``, ``pw``), then ``,`` or the end
_ITEM = re.compile(r"""(?:(?:br|rb|[bru])?(?P<q>["'])(?P<quoted>(?:\\[^\n]|(?!(?P=q))[^\\\n])*)(?P=q)|[^\s,"'()\[\]{}]+)"""
                   r"""[ \t]*(?:(?P<comma>,)[ \t]*|(?=[\n#;]|$))""")


def redact_assignments(text: str, hide: Callable[[str], str]) -> str:
    """``text`` with the value of each assignment of a secret name replaced by ``hide(value)``."""
    if "=" not in text and ":" not in text:
        return text
    return _Assignments(hide).run(text)


class _Assignments:
    def __init__(self, hide: Callable[[str], str]) -> None:
        self.hide = hide

    def run(self, text: str) -> str:
        if "," in text:
            text = self.tuples(text)
        self.lines = Annotations(text)  # a Python body's lines are code, not config lines
        text = _CONFIG_LINE.sub(self.config_line, text)
        return self.assignments(text)

    def swap(self, m: re.Match[str], group: str, value: str) -> str:
        """The match with ``value`` (the start of ``group``) redacted, everything else kept."""
        at = m.start(group) - m.start()
        return m.group(0)[:at] + self.hide(value) + m.group(0)[at + len(value):]

    def tuples(self, text: str) -> str:
        """``text`` with the literals of the secret names of tuple targets but the last redacted
        (``password, user = "hunter2", "bob"``; ``_ASSIGN`` finds the last name); only a
        statement of as many values as names (``password, user="bob")`` is a call's arguments)."""
        out: list[str] = []
        pos = 0
        for m in _TUPLE.finditer(text):
            targets = [t.strip() for t in m.group("targets").split(",")]
            items: list[re.Match[str]] = []
            at = m.end()
            while len(items) < len(targets) and (item := _ITEM.match(text, at)) is not None:
                items.append(item)
                at = item.end()
                if not item.group("comma"):
                    break
            if len(items) != len(targets) or items[-1].group("comma") or any(t.startswith("*") for t in targets):
                continue
            for name, item in zip(targets[:-1], items, strict=False):
                value = item.group("quoted")
                if (item.group("q") and _SECRET_NAME.fullmatch(name)
                        and not (keep(value, name) or weak(value, name, quoted=True))):
                    out += [text[pos:item.start("quoted")], self.hide(value)]
                    pos = item.end("quoted")
        out.append(text[pos:])
        return "".join(out)

    def config_line(self, m: re.Match[str]) -> str:
        value = m.group("value").rstrip()
        sep, name = m.group("sep"), m.group("name")
        if bare_pw(name) or (generic_key(name) and identifier_words(value)):
            return m.group(0)  # ``PWD=/home/my dir``: the general rule decides the first word
        if (not re.search(r"\s", value) or value.endswith((".", ";", ":", ",")) or _CODE.search(value)
                or conditional(value) or numeric_expression(value) or (":" in sep and described(value, name))
                or keep(value, m.group("name")) or code_phrase(value) or regex_literal(m.string, m.start("value"))
                or (sep.strip() == "=" and self.lines.python_body(m.start("name")))):
            return m.group(0)  # one word (the general rule below decides), prose or code
        return self.swap(m, "value", value)

    def literals(self, text: str, start: int, spans: list[tuple[int, int]], name: str) -> str:
        """``text`` from ``start`` to the quote closing the last of ``spans`` (string literals),
        with the literals of ``spans`` redacted unless kept."""
        out, pos = [], start
        for a, b in spans:
            value = text[a:b]
            if not (keep(value, name) or weak(value, name, quoted=True)):
                out += [text[pos:a], self.hide(value)]
                pos = b
        out.append(text[pos:max(spans[-1][1] + 1, pos)])
        return "".join(out)

    def assign(self, m: re.Match[str], name: str, default: bool = False, text: str = "",
               lines: Annotations | None = None) -> str:
        """``m`` (an ``_ASSIGN`` or ``_VALUE`` match) with its value redacted unless kept; a
        ``default`` of a parameter may also be followed by the ``:`` closing its signature;
        ``text``: the text ``m`` matched in (an unquoted value that reads as code in it stays;
        ``lines``: its line structure); a raw string holding a regex is a pattern
        (``r'[^\\W\\d]\\w*'``)."""
        # a camelCase name (``refreshToken``) is code's far more often than config's: its value
        # must look generated (one word: a digit, mixed case, ``+/=`` or 32+ characters; ``weak``)
        if m.group("q"):
            value = m.group("quoted")
            if keep(value, name) or weak(value, name, quoted=True) or ("r" in m.group("prefix").lower() and raw_regex(value)):
                return m.group(0)
            return self.swap(m, "quoted", value)
        value = trim_closers(m.group("value"), ":" if default else "")
        if keep(value, name) or (number(value) and not pin(value, name)) or (default and _EXPRESSION.match(value)) \
                or (text and ((":" in m.group("sep") and prose_after(text, m.start("value"), name))
                              or code_value(text, m, value, lines))) \
                or weak(value, name):
            return m.group(0)
        return self.swap(m, "value", value)

    def assignments(self, text: str) -> str:
        """``_ASSIGN`` substituted, except that a type annotation after ``name:`` is kept and
        only the default after it (``= value``) goes through the rule."""
        out: list[str] = []
        pos = 0
        annotations = Annotations(text)
        parity = QuoteParity(text)
        # a name and its separator first (``_ASSIGN_HEAD``), its value (``_ASSIGN``) only when one
        # is read: an unquoted value runs to the next whitespace, and read for each of many names
        # that assign nothing on one long run (``NOPASSWD:NOPASSWD:...``, ``a_key:str,a_key:str,...``),
        # its scan would cost the square of the run's length
        while h := _ASSIGN_HEAD.search(text, pos):
            out.append(text[pos:h.start()])
            name, sep = h.group("name"), h.group("sep")
            if (h.group("q") and parity.closes(h.start("q"))) or no_assignment(text, h):
                out.append(text[h.start():h.end("sep")])  # ``prompt='Password: '``: no value
                pos = h.end("sep")
                continue
            end = (annotations.annotation_end(h.end("sep"), h.start("name"))
                   if sep.strip() == ":" and not name.endswith(("'", '"')) else None)
            m = _ASSIGN.match(text, h.start()) if end is None else None
            if end is None and m is None:  # a quoted value broken by ``\`` at the line's end
                out.append(text[h.start():h.end("sep")])
                pos = h.end("sep")
                continue
            if (m is not None and m.group("q") and m.group("close") and sep.strip() == "="
                    and (spans := tuple_literals(text, m)) is not None):  # ``user, password = "wile", "coyote"``
                out.append(self.literals(text, m.start(), spans, name))
                pos = max(m.end(), spans[-1][1] + 1)
                continue
            if m is not None:
                walrus = ":=" in sep and not m.group("q")  # ``if token := next(it)``: code
                out.append(m.group(0) if walrus else self.assign(m, name, text=text, lines=annotations))
                pos = m.end()
                continue
            assert end is not None
            out.append(text[h.start():end])
            pos = end
            if (d := _DEFAULT.match(text, pos)) and (v := _VALUE.match(text, d.end())):
                out.append(d.group(0) + self.assign(v, name, default=True))
                pos = v.end()
        out.append(text[pos:])
        return "".join(out)
