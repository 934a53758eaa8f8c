"""Type annotations after a secret name: code, not a secret value (used by ``secrets.redact``).

``api_key: Optional[str] = None``, ``password: SecretStr``, ``pub api_key: String,`` or
``def f(token: Token)`` name a secret and then its **type**; ``password: hunter2horse`` (YAML)
names one and then its value. ``Annotations(text).annotation_end`` tells them apart for a name
followed by a single ``:`` (never ``=`` or ``:=``, never a quoted JSON key ``"password":``) and
returns where the annotation ends, or ``None`` when what follows may be a value (the caller
redacts it). The text's lines are indexed once, on first need (one pass per text).

What follows the ``:`` must parse, on its line, as a type expression: names (``a.b``, ``a::b``),
a subscript or generic (``X[...]``, ``X<...>``: the first argument a type, or a ``[...]`` list of
types, the others a type or anything balanced: ``Annotated[str, Field(min_length=8)]``;
``Literal[...]``: anything balanced), unions (``A | B``), suffixes ``?`` and ``[]``, a Rust
reference (``&str``, ``&'a mut T``), a Swift variadic ``T...`` (``tokens: String...``), a quoted
forward reference (``"Token"``); and it must end
the line or be followed by ``,`` ``;`` ``)`` ``]`` ``}`` ``{`` ``=`` ``by`` or a comment. A name
in it is a known type name (``_KNOWN``: ``str``, ``bytes``, ``string``, ``String``, ``SecretStr``,
``Optional``, ``None``...), type-shaped (PascalCase humps with a lowercase letter: ``Token``,
``SSHPublicKeyTypes``, ``X25519PublicKey``, ``_FragList``; never ``hunter2horse``, ``ABCD1234``
or random mixed case like ``GfXfc1sAp``), an alias named as a constant (words of capitals joined
by ``_``: ``_SSH_PRIVATE_KEY_TYPES``) or a type name that is also a word (``_CODE_ONLY``:
``object``, ``unknown``, ``Promise``...). Then it is:

- **a type wherever it occurs** when it holds a known name, unquoted: ``password: Optional[str]``,
  ``secret_key: SecretStr``, ``password: bytes | None``, ``key: PoolKey[str]``;
- **a type only in code** otherwise (``access_token: Token``, ``db_password: Password123``,
  ``key: Foo[Bar]``, ``access_token: "Token"``), with a space after the ``:``, when the line
  says code: a default follows (`` = ``, spaces around; not when a name holds a digit:
  ``password: Hunter2 = x`` may be a value), a declaration keyword precedes the name (``val``,
  ``let``, ``pub``, ``private readonly``...) or it is ``self.x``/``this.x``, the name sits in a
  signature left open on its line (``def f(``, ``fn new(``, ``data class X(``, ``constructor(``,
  with no quote, brace or call between; a call ``login(password: x)`` is not one: C# and Swift
  name their arguments so), or the line (only indentation and parameters before the name)
  belongs to a declaration: the nearest less-indented line above, past Python blocks (``if x:``,
  ``try:``) and closing lines (``) -> None:``), opens a Python class or function (``class
  X(Base):``, ``def f(``, ``def f(x):``), a type (``struct X {``, ``interface X {``, ``type X = {``,
  ``data class X(``) or another language's signature (``fn new(``; not its body), and no triple
  quote is left open in between (YAML in a Python string stays a value). A quoted one counts
  only before a default or in a Python class body or open ``def`` signature:
  ``login(password: "x")`` (C#, Swift) and ``{PASSWORD: "x"}`` (a dict) hold values.

Anything else (``db_password: Password123`` on its own, ``{user: bob, password: Hunter}``) may be
a value and is left to the rules of ``secrets``.

``Annotations.python_body`` answers, with the same index, whether a line is a statement of a
Python function or class body (its nearest less-indented line, past Python blocks, is ``def
f(...):``, maybe over several lines, or ``class X:``, no triple quote open in between; a block
header may go on after a ``\\``): there an unquoted value is code (``meta_key = header`` reads a
variable; in a ``.pypirc`` or INI file it would be a password), and so is a keyword argument on a
line of its own in a call opened above (``client(\naws_session_token=session_token,``).
``Annotations.call_above`` answers whether a line is one of a call's arguments (its nearest
less-indented line ends with ``(``), in any text (a docstring's example too).
"""

from __future__ import annotations

import bisect
import re

# type names that are no one's password: a type wherever they occur (``password: bytes`` in a YAML
# file documents a schema); PascalCase names outside this list are types only in code
_KNOWN = frozenset({
    "str", "bytes", "bytearray", "bool", "int", "float", "list", "dict", "set", "frozenset", "tuple",
    "memoryview", "None", "NoneType", "Any", "Optional", "Union", "Annotated", "Literal", "ClassVar",
    "Final", "List", "Dict", "Set", "FrozenSet", "Tuple", "Callable", "Sequence", "Mapping",
    "MutableMapping", "Iterable", "Iterator", "Awaitable", "Coroutine", "NotRequired", "Required",
    "ReadOnly", "TypeAlias", "SecretStr", "SecretBytes", "HttpUrl", "AnyUrl", "AnyHttpUrl", "UUID", "string",
    "number", "boolean", "bigint", "undefined", "null", "void", "Uint8Array", "String", "Option", "Vec",
    "Box", "Rc", "Arc", "Cow", "usize", "isize", "u8", "u16", "u32", "u64", "u128", "i8", "i16", "i32",
    "i64", "i128", "f32", "f64", "char", "byte", "Int", "Boolean", "Integer", "CharArray", "ByteArray",
})
# type names that are also words (``password: unknown``): types only in code, like PascalCase names
_CODE_ONLY = frozenset({
    "object", "type", "complex", "unknown", "never", "symbol", "any", "double", "long", "short", "Self",
    "Type", "Json", "Record", "Promise", "Array", "Buffer", "Unit", "Nothing", "Long", "Double", "Char",
})
_NAME = re.compile(r"[A-Za-z_$][\w$]*")
# PascalCase humps (``Token``, ``SSHPublicKeyTypes``, ``X25519PublicKey``, ``_FragList``) with a
# lowercase letter: not ``ABCD1234`` nor random mixed case (``GfXfcx1sAp``: a lowercase after a digit)
_TYPE_SHAPED = re.compile(r"(?=\w*[a-z])_*(?=[A-Z])(?:[A-Z][a-z]+|[A-Z]+(?=[A-Z][a-z]|[0-9_]|$)|[0-9]+|_)+$")
# a type alias named as a constant, words of capitals joined by ``_`` (``_SSH_PRIVATE_KEY_TYPES``,
# ``CERTIFICATE_PUBLIC_KEY_TYPES``): a type only in code, like a type-shaped name
_ALIAS_SHAPED = re.compile(r"_*[A-Z]{2,}(?:_[A-Z]{2,})+$")
_FOLLOW = re.compile(r"[ \t]*(?:$|[,;)\]}{]|=(?![=>~])|\#|//|/\*|by\b)", re.MULTILINE)
_DEFAULT = re.compile(r"[ \t]+=[ \t]")
_DECL = re.compile(r"(?:^|[(,])[ \t]*(?:(?:pub(?:\([\w:]*\))?|private|public|protected|internal|readonly|static|final"
                   r"|override|lateinit|open|const|let|var|val|export|declare|abstract|mut)[ \t]+)+$")
_RECEIVER = re.compile(r"(?:self|this|cls)\.")
# indentation, maybe ``self, x: int, `` (a quoted forward reference among them: ``backend: "Backend", ``)
_PARAMS = re.compile(r"""[ \t]*(?:[A-Za-z_*](?:[^\[\]{}()"'`=]|"[\w.]+"|'[\w.]+')*,[ \t]*)?""")
_CALL_ARGS = re.compile(r"[^{}()\"'`]*")  # from an open ``def f(`` to the name: no quote, brace, call
# a signature opened on the line before the name: ``def f(``, ``fn new<T>(``, ``data class X(``
_SIGNATURE = re.compile(r"(?:^|[^\w.])(?:def|fn|fun|func|function|constructor|init|class)\b[^()]*$")
_TAIL = r"[ \t]*(?:(?:\#|//).*)?$"
_PY_CLASS = r"class[ \t]+[A-Za-z_]\w*[ \t]*(?:\(.*\))?[ \t]*:"
_PY_DEF = r"(?:async[ \t]+)?def[ \t]+\w+[ \t]*(?=\()"
# a Python class body or a signature left open (``def f(``, ``def f(self,``): fields and parameters
_PY_HEADER = re.compile(rf"[ \t]*(?:{_PY_CLASS}|{_PY_DEF}.*[(,]){_TAIL}")
_MODIFIERS = (r"(?:(?:export|default|declare|pub(?:\([\w:]*\))?|public|private|protected|internal|abstract|sealed"
              r"|final|data|open|async|static|unsafe|partial|inline|value)[ \t]+)*")
# ... or any declaration's fields or parameters: a Python function's body (``def f(x):``), a type's
# body or parameters (``struct X {``, ``interface X {``, ``type X = {``, ``data class X(``), a
# function's open signature (``fn new(``, ``constructor(``); not another language's function body
_HEADER = re.compile(
    rf"[ \t]*(?:{_PY_CLASS}{_TAIL}|{_PY_DEF}.*[(,:]{_TAIL}"
    rf"|{_MODIFIERS}(?:class|struct|interface|trait|enum|union|record|type|object|protocol)[ \t]+[A-Za-z_$].*[{{(,]{_TAIL}"
    rf"|{_MODIFIERS}(?:fn|fun|func|function|constructor|init)\b[^{{]*[(,]{_TAIL})")
# a Python scope: a class, or a function whose signature ends (``def f(x):``) or goes on (``def f(``)
_PY_SCOPE = re.compile(rf"[ \t]*(?:{_PY_CLASS}|{_PY_DEF}.*[(,:]){_TAIL}")
_PY_BLOCK = re.compile(r"[ \t]*(?:(?:el)?if[ \t]+\S.*|else|try|finally|except\b.*|(?:async[ \t]+)?(?:for|with)[ \t]+\S.*"
                       r"|while[ \t]+\S.*|match[ \t]+\S.*|case[ \t]+\S.*):[ \t]*(?:\#.*)?$")
# ... or one going on after a ``\`` (``if m.group(1).startswith("ERROR") \``): its ``:`` is on a line below
_PY_BLOCK_START = re.compile(r"[ \t]*(?:(?:el)?if|except|(?:async[ \t]+)?(?:for|with)|while)[ \t(]")
_MAX_TYPE = 2048  # characters of a type expression: longer is no annotation
_MAX_DEPTH = 32  # type nesting (``X[Y[Z]]``, ``&&T``): deeper is no type
_REF_TAIL = re.compile(r"(?:'\w+[ \t]+)?(?:mut[ \t]+)?")  # always matches (maybe empty)


class _Parser:
    """A type expression on ``text[pos:end]``; each method returns True and advances, or False.
    Nesting deeper than ``_MAX_DEPTH`` (``List[List[...`` 300 times) is no type: False, never a
    ``RecursionError``."""

    def __init__(self, text: str, pos: int, end: int, depth: int = 0) -> None:
        self.text, self.pos, self.end = text, pos, end
        self.depth = depth  # the nesting level of the current unit
        self.strong = False  # a known type name in it
        self.digits = False  # a type-shaped name with a digit (``X25519PublicKey``)

    def peek(self, s: str) -> bool:
        return self.text.startswith(s, self.pos) and self.pos + len(s) <= self.end

    def ws(self) -> None:
        while self.pos < self.end and self.text[self.pos] in " \t":
            self.pos += 1

    def union(self) -> bool:
        if not self.unit():
            return False
        while True:
            save = self.pos
            self.ws()
            if not self.peek("|"):
                self.pos = save
                return True
            self.pos += 1
            self.ws()
            if not self.unit():
                return False

    def unit(self) -> bool:
        if self.depth >= _MAX_DEPTH:
            return False
        self.depth += 1
        try:
            return self._unit()
        finally:
            self.depth -= 1

    def _unit(self) -> bool:
        if self.peek("&"):  # a Rust reference: &str, &'a str, &mut T
            self.pos += 1
            m = _REF_TAIL.match(self.text, self.pos, self.end)
            self.pos = m.end() if m else self.pos
            return self.unit()
        if self.pos < self.end and self.text[self.pos] in "\"'":  # a forward reference: "Token"
            q = self.text[self.pos]
            close = self.text.find(q, self.pos + 1, self.end)
            if close < 0:
                return False
            inner = _Parser(self.text, self.pos + 1, close, self.depth)
            if not (inner.union() and inner.pos == close):
                return False  # "Optional[Token]" counts, weak like any quoted type
            self.pos = close + 1
            return True
        parts = []
        while True:
            m = _NAME.match(self.text, self.pos, self.end)
            if not m:
                return False
            parts.append(m.group())
            self.pos = m.end()
            sep = next((s for s in (".", "::") if self.peek(s) and not self.peek("...")), None)
            if sep is None:
                break
            self.pos += len(sep)
        head = parts[-1]
        known = head in _KNOWN or (len(parts) > 1 and ".".join(parts) in _KNOWN)
        shaped = head in _CODE_ONLY or bool(_TYPE_SHAPED.match(head) or _ALIAS_SHAPED.match(head))
        if not (known or shaped):
            return False
        self.strong |= known
        self.digits |= not known and any(c.isdigit() for c in head)
        if self.pos < self.end and self.text[self.pos] in "[<" and not self.arguments(literal=head == "Literal"):
            return False
        while self.peek("?") or self.peek("[]") or self.peek("..."):  # ``T?``, ``T[]``, Swift's variadic ``T...``
            self.pos += 1 if self.peek("?") else 2 if self.peek("[]") else 3
        return True

    def arguments(self, *, literal: bool, listed: bool = False) -> bool:
        """``[...]`` or ``<...>``: the first argument a type (or a ``[...]`` list of types, or
        ``...``), the others a type or anything balanced (``Field(...)``); ``listed``: a list of
        parameter types (``Callable[[int, str], T]``), empty allowed."""
        close = "]" if self.text[self.pos] == "[" else ">"
        self.pos += 1
        first = True
        while True:
            self.ws()
            if self.peek(close) and (listed or not first):
                self.pos += 1
                return True
            if literal or not (first or listed):
                ok = self.balanced(close)
            elif self.peek("[") and not listed:
                ok = self.arguments(literal=False, listed=True)
            elif self.peek("..."):
                self.pos += 3
                ok = True
            else:
                ok = self.union()
            if not ok:
                return False
            first = False
            self.ws()
            if self.peek(","):
                self.pos += 1
            elif not self.peek(close):
                return False

    def balanced(self, close: str) -> bool:
        """Skip to the next ``,`` or ``close`` outside brackets and quotes."""
        depth, start = 0, self.pos
        while self.pos < self.end:
            c = self.text[self.pos]
            if c in "\"'":
                end = self.text.find(c, self.pos + 1, self.end)
                if end < 0:
                    return False
                self.pos = end
            elif c in "([{":
                depth += 1
            elif c in ")]}" and depth:
                depth -= 1
            elif depth == 0 and (c == "," or c == close):
                return self.pos > start
            elif c in ")]}":
                return False
            self.pos += 1
        return False


class Annotations:
    """``annotation_end`` over one text; the line structure (each line's declaration) is indexed
    once, on first need, so a text of many fields costs one pass, not one per field."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._index: _Index | None = None

    def annotation_end(self, start: int, name_start: int) -> int | None:
        """Where the type annotation at ``text[start:]`` ends, for the name at ``name_start``
        (its ``:`` just before ``start``), or ``None`` when what follows may be a secret value."""
        text = self.text
        # (looked for within ``_MAX_TYPE`` characters: from each of many names on one long
        # minified line, a search to its end would cost the square of its length)
        line_end = text.find("\n", start, start + _MAX_TYPE)
        line_end = min(len(text), start + _MAX_TYPE) if line_end < 0 else line_end
        p = _Parser(text, start, line_end)
        if not p.union() or not _FOLLOW.match(text, p.pos):
            return None
        quoted = text[start] in "\"'"
        if p.strong and not quoted:
            return p.pos
        if text[start - 1] not in " \t":
            return None  # ``{Password:Hunter}`` (a Go struct dump) is no declaration
        line_start = text.rfind("\n", 0, name_start) + 1
        before = text[line_start:name_start]
        default = bool(_DEFAULT.match(text, p.pos))
        if quoted:  # ``f(password: "x")`` is a C#/Swift argument, ``{PASSWORD: "x"}`` a dict entry
            code = default or self._declared(line_start, before, _PY_HEADER)
        else:
            code = ((default and not p.digits) or bool(_DECL.search(before)) or bool(_RECEIVER.match(text, name_start))
                    or _open_signature(before) or self._declared(line_start, before, _HEADER))
        return p.pos if code else None

    def python_body(self, at: int) -> bool:
        """Whether the line holding ``at`` is a statement of a Python function or class body
        (only indentation before it on its line)."""
        text, line_start = self.text, at
        while line_start and text[line_start - 1] in " \t":  # indentation only: never a long line's start
            line_start -= 1
        if line_start and text[line_start - 1] != "\n":
            return False
        return self._declared(line_start, text[line_start:at], _PY_SCOPE, brackets=True)

    def _declared(self, line_start: int, before: str, header: re.Pattern[str], brackets: bool = False) -> bool:
        """Whether the line at ``line_start`` (``before`` the name: only indentation and
        parameters) is a field or parameter of the declaration (a ``header`` line) nearest above
        it with less indentation, passing Python blocks (``if x:``, ``try:``), blank lines,
        comments and closing lines (``) -> None:``), with no triple quote left open between;
        ``brackets``: passing lines that leave a bracket open too (``client = boto3.client(``: its
        keyword arguments on the lines below are the function body's)."""
        if not _PARAMS.fullmatch(before):
            return False
        if self._index is None:
            self._index = _Index(self.text)
        ix = self._index
        line = bisect.bisect_right(ix.starts, line_start) - 1
        parent = ix.parent[line]
        while parent >= 0:
            if (ix.triple[line] - ix.triple[parent]) % 2:
                return False  # inside a string literal that opens after the declaration
            text = ix.line(parent)
            if not (_PY_BLOCK.match(text) or (text.endswith("\\") and _PY_BLOCK_START.match(text))):
                if header.match(text):  # ``def f(``: a header, though it leaves a bracket open
                    return True
                if not (brackets and text.rstrip(" \t").endswith(("(", "[", "{", ","))):
                    return False
            parent = ix.parent[parent]  # ``if x:``: the declaration is further up
        return False

    def call_above(self, at: int) -> bool:
        """Whether the line holding ``at`` (only indentation before it) is an argument of a call
        opened above: its nearest less-indented line (past blank lines and comments) ends with
        ``(`` (``SignedJWTParameters(``, in code or a docstring's example)."""
        text, line_start = self.text, at
        while line_start and text[line_start - 1] in " \t":
            line_start -= 1
        if line_start and text[line_start - 1] != "\n":
            return False
        if self._index is None:
            self._index = _Index(self.text)
        ix = self._index
        parent = ix.parent[bisect.bisect_right(ix.starts, line_start) - 1]
        return parent >= 0 and ix.line(parent).rstrip(" \t").endswith("(")


class _Index:
    """Each line's start, its parent (the nearest line above with less indentation that is not
    blank, a comment, a closing line or the continuation of a line ending with ``\\``; -1: none)
    and the triple quotes before it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0, *(m.end() for m in re.finditer("\n", text))]
        self.parent: list[int] = []
        self.triple = [0]
        stack: list[tuple[int, int]] = []  # (indent, line) of the open lines, indents increasing
        goes_on = False  # the line before ended with ``\\``: this one is its continuation
        for n, start in enumerate(self.starts):
            line = self.line(n)
            stripped = line.lstrip(" \t")
            indent = len(line) - len(stripped)
            skip = not stripped or goes_on or stripped.startswith(("#", "//", ")", "]", "}"))
            goes_on = line.endswith("\\")
            if skip:  # a parent for it all the same, without closing any open line
                k = bisect.bisect_left(stack, (indent, -1)) - 1
                self.parent.append(stack[k][1] if k >= 0 else -1)
            else:
                while stack and stack[-1][0] >= indent:
                    stack.pop()
                self.parent.append(stack[-1][1] if stack else -1)
                stack.append((indent, n))
            self.triple.append(self.triple[-1] + line.count('"""') + line.count("'''"))

    def line(self, n: int) -> str:
        end = self.starts[n + 1] - 1 if n + 1 < len(self.starts) else len(self.text)
        return self.text[self.starts[n]:end]


def _open_signature(before: str) -> bool:
    """Whether ``before`` (a line up to the name) leaves a signature open: ``def f(a, ``
    (``connect(password: x)`` is a call: C# and Swift name their arguments so)."""
    depth = 0
    for i in range(len(before) - 1, -1, -1):
        c = before[i]
        if c == ")":
            depth += 1
        elif c == "(":
            if depth == 0:
                return bool(_SIGNATURE.search(before, 0, i)) and bool(_CALL_ARGS.fullmatch(before, i + 1))
            depth -= 1
    return False
