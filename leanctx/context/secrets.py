"""Secret detection and redaction (pure).

The log is immutable: a secret written into it cannot be taken out. File contents, shell
output and search results pass through ``redact`` before anything is appended, archived or
(unless the caller explicitly asks for raw content of a project file) sent to the agent.

Three kinds of rules: provider formats (private key blocks, AWS, GitHub, OpenAI... tokens, URL
passwords — ``psql "postgresql://u:p@h/db"``, ``git clone https://user:token@host/...`` — JWTs)
wherever they occur; **credentials of HTTP headers, cookies and command lines**, the value only,
its header or flag name (and a user name) kept (``leanctx.context.secret_headers`` has the exact
rules): ``Authorization: Bearer|Basic|Token|<scheme> <credential>`` and ``Proxy-Authorization``
(kinds ``auth_header``, ``basic_auth`` for ``Basic``), ``X-API-Key``, ``Api-Key``, ``X-Auth-Token``,
``X-Access-Token``, ``Private-Token``... (``auth_header``) in ``-H "..."``, ``--header=``, httpie
``Name:'value'``, JSON/YAML/dicts and raw dumps (``> Authorization: ...``), any case; the values
of session cookies (``Cookie:``/``Set-Cookie:``/``curl -b``, a name holding ``sess``, ``token``,
``auth``, ``sid`` or ``jwt``: ``cookie``); ``curl -u/--user user:pass``, httpie ``-a user:pass``,
``--password x``, ``--token x``, ``--api-key x``, ``mysql -pPASS``, ``sshpass -p x``, ``docker login
-p x``, ``htpasswd -b file user pass`` (``cli_password``). A header credential must look generated
(8+ characters with a digit, mixed case or ``+/=``, not an identifier such as ``accessToken``), so
placeholders (``Bearer $TOKEN``, ``${TOKEN}``, ``<token>``, f-string ``{token}``), variables
(``{"Authorization": token}``) and prose (``the Authorization header``) stay, and ``-u``/``-p``
count for those commands only (``sort -u``, ``ps -u root``, ``docker run -p 80:80``, ``ls -p``
stay); and **assignments** whose name says the value is secret:
the name must *end* with ``_KEY``, ``_TOKEN``, ``_SECRET``, ``PASSWORD``, ``PASSWD``,
``PASSPHRASE``, ``_PWD``, ``APIKEY``... (any case), so ``PASSWORD_MIN_LENGTH = 8`` or
``TOKEN_TTL`` are not secrets, followed by ``=``, ``:`` or ``:=`` (``.env``, ``export X=``,
YAML, JSON ``"password": "..."``, TOML/INI, code, ``--password=``, ``?api_key=``):

- a **quoted** value (``'...'`` or ``"..."``, a ``b``/``r``/``u`` prefix allowed) is redacted
  whole, whatever it holds (spaces, ``;``, ``,``, escaped quotes), up to its closing quote on
  that line (an unclosed quote: to the end of the line);
- an **unquoted** value runs to the next whitespace (``ab;cd,ef`` is one value), less the
  closers of the syntax around it (``str,`` ``x)`` ``x"``); on a config line of any of these
  names (the name first on the line, after indentation, ``export`` or ``- ``), a value of
  several words runs to the end of the line (before a `` #`` comment):
  ``password: correct horse battery``, ``API_KEY: sk live words``, ``secret_key = a b c``.

**Type annotations** are code, not values (``leanctx.context.secret_types`` has the exact
rule): after ``name:`` (one colon, an unquoted name), a type expression is kept wherever it
occurs when it holds a known type name (``api_key: Optional[str]``, ``password: SecretStr``,
``pub api_key: String,``, ``access_token: str | None``), and otherwise when it is made of PascalCase
names (``access_token: Token``, ``"Token"``, ``key: Foo[Bar]``) on a line that reads as code (a
class body, a signature, a declaration keyword, a default). A bare ``db_password: Password123``
or ``password: Hunter`` (YAML, ``.env``, a line out of context) is a value and redacted: the
text carries no file type, and when nothing says code, it is redacted. The **default** after an
annotation goes through the assignment rule (``api_key: str = "sk-..."`` redacts the quoted
value), except an unquoted default that is code reading the value from elsewhere (a name,
attribute, call, subscript, ``lambda``: ``= Field(...)``, ``= settings.key``).

Left alone (false positives are kept few, not absent: ``x_key = compute(key)`` or the constant
``CACHE_KEY = "user:{id}"`` are still redacted): values under 4 characters (the whole value: a
phrase counts whole, so ``sk with spaces`` is redacted although ``sk`` is short), placeholders
(``${VAR}``, ``<your key>``, ``changeme``, ``xxxx``...), references (``os.environ[...]``,
``os.getenv(...)``, ``process.env.X``, ``$(cmd)``), f-strings and bracketed structures, a
variable passed on under its own name (``password=password``), walrus assignments, and
several-word values that read as code (brackets, ``=``, ``|``, quotes, ``is not``, ``None``,
``lambda``, `` + ``...) or prose (ending with ``.``, ``;``, ``:`` or ``,``); of those, the
general rule still takes the first word when it is a value on its own.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable
from pathlib import PurePosixPath

import msgspec

from .secret_headers import redact_credentials
from .secret_types import Annotations

REDACTED = "[REDACTED:{kind}]"

# (kind, pattern). Order matters: specific provider formats first, generic assignment last.
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    # a block without its END line (a truncated paste, ``head`` of a key file) runs to the end
    ("private_key", re.compile(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*\Z)")),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b")),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b")),
    ("gitlab_token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}\b")),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}\b")),
    ("openai_key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}\b")),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b")),
    ("stripe_key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("npm_token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    ("pypi_token", re.compile(r"\bpypi-[A-Za-z0-9_-]{50,}\b")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\b")),
    ("url_password", re.compile(r"(?P<keep>://[^\s:/@]+:)[^\s@/]+(?=@)")),  # only the password goes
]

# KEY=value / KEY: value / "key": "value" where the name says it is a secret: it must END with
# one of these (``DB_PASSWORD``, ``api_key``, ``GITHUB_TOKEN``), so ``PASSWORD_MIN_LENGTH`` or
# ``TOKEN_TTL`` name no secret.
_SUFFIXES = ("_KEY|_TOKEN|_SECRET|SECRET_KEY|PASSWORD|PASSWD|PASSPHRASE|_PWD|API_KEY|APIKEY|ACCESS_KEY|PRIVATE_KEY"
             "|CLIENT_SECRET|AUTH_TOKEN")
_PHRASE_SUFFIXES = _SUFFIXES  # every secret name's value may be several words (``API_KEY: sk live words``)


def _name(suffixes: str) -> str:
    return rf"""(?P<name>\b[A-Za-z0-9_.-]*(?:{suffixes})\b["']?)(?P<sep>[ \t]*(?::=|[:=])[ \t]*)"""


_VALUE_SOURCE = r"""(?:
        # quoted (a Python b/r/u prefix allowed): everything up to the closing quote on that line,
        # backslash escapes skipped; a quote that is never closed runs to the end of the line
        (?P<prefix>(?:br|rb|[bru])?)(?P<q>["'])(?P<quoted>(?:\\[^\n]|(?!(?P=q))[^\\\n])*)(?P<close>(?P=q)|$)
        # unquoted: a <placeholder>, else up to whitespace; not an f-string (it is computed) nor a
        # bracketed structure (a tuple, list or dict holds its own quoted values)
      | (?P<value><[^<>\n]*>|(?![\"'`=(\[{]|f[r]?["']|rf["'])\S+)
    )"""
_ASSIGN = re.compile(_name(_SUFFIXES) + _VALUE_SOURCE, re.IGNORECASE | re.VERBOSE | re.MULTILINE)
_VALUE = re.compile(_VALUE_SOURCE, re.IGNORECASE | re.VERBOSE | re.MULTILINE)  # a default after an annotation
_DEFAULT = re.compile(r"[ \t]*=(?![=>~])[ \t]*")
# an unquoted default that is code reading its value from elsewhere (a name, attribute, call,
# subscript, lambda): ``= Field(...)``, ``= settings.token``, ``= load_key(data)``
_EXPRESSION = re.compile(r"(?:lambda|await|not)\b|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?:[(\[]|$)")
# an unquoted value that reads the secret from elsewhere instead of holding it: ``os.environ[...]``,
# ``os.getenv(...)``, ``process.env.X``, ``ENV[...]``, ``$(cmd)``, ``${VAR:-x}``
_REFERENCE = re.compile(r"^(?:os\.(?:environ\b|getenv\()|process\.env\b|ENV\[|\$\(|\$\{)")
_OPEN, _CLOSE, _QUOTES = "([{", ")]}", "\"'`"
# A config line (``.env``, YAML, INI, ``export``) of any secret name (a key, password, passphrase,
# secret or token): an unquoted value of several words runs to the end of the line (before a `` #``
# comment), unless it looks like code (brackets, ``=``, quotes, ``|``: ``token: str | None`` is a
# Python annotation; see ``_CODE`` for the rest) or prose (it ends with ``.`` ``;`` ``:`` ``,``:
# ``password: The password of the URL.`` documents one).
_CONFIG_LINE = re.compile(
    r"""^(?P<lead>[ \t]*(?:export[ \t]+|-[ \t]+)?)""" + _name(_PHRASE_SUFFIXES)
    + r"""(?P<value>[^\s()\[\]{}<>="'`|\#][^\n()\[\]{}<>="'`|]*?)(?P<trail>[ \t]+\#[^\n]*)?[ \t]*$""",
    re.IGNORECASE | re.VERBOSE | re.MULTILINE,
)
# several words that read as an expression, not a phrase: ``use_key = key is not None``,
# ``cache_key = prefix + name``, ``sort_key = lambda x: x.name``, ``x_key = a if b else c``
_CODE = re.compile(r"""\b(?:is[ \t]+not|not[ \t]+in|is[ \t]+None|None|True|False|lambda|await)\b
                       |\bif\b.*\belse\b|[ \t](?:[+*/%]|&&)[ \t]""", re.VERBOSE)  # ``=``, ``<>``: never in a value
# The minimum applies to the whole value: to the phrase on a config line (``sk with spaces tapir``
# is a secret although ``sk`` alone is too short to be one).
_MIN_VALUE = 4  # shorter values are type names, flags and numbers far more often than secrets
_PLACEHOLDER = re.compile(r"^(?:\$\{?[A-Za-z_]+\}?|<[^>]*>|x+|\*+|changeme|example|dummy|none|null|true|false)$",
                          re.IGNORECASE)

SECRET_FILES = (
    ".env", ".env.*", "*.env", ".envrc", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "*.pem", "*.key", "*.p12",
    "*.pfx", "*.keystore", "*.jks", ".netrc", ".pgpass", ".npmrc", ".pypirc", "credentials", "credentials.json",
    "*credentials*.json", "service-account*.json", ".git-credentials", "secrets.yml", "secrets.yaml",
    "secrets.json", ".htpasswd",
)
_NOT_SECRET = (".env.example", ".env.sample", ".env.template", "*.pub")


class Redacted(msgspec.Struct, frozen=True):
    text: str
    count: int
    kinds: list[str]
    # the secret values themselves, so a caller can scrub them elsewhere (e.g. from the command
    # line that printed them); in memory only — never encode or log this field
    found: list[str] = msgspec.field(default_factory=list)


def redact(text: str) -> Redacted:
    """``text`` with every detected secret replaced by ``[REDACTED:<kind>]``."""
    count = 0
    kinds: list[str] = []
    found: list[str] = []

    def sub(kind: str) -> Callable[[re.Match[str]], str]:
        def repl(m: re.Match[str]) -> str:
            nonlocal count
            count += 1
            keep = m.groupdict().get("keep") or ""
            found.append(m.group(0)[len(keep):])
            if kind not in kinds:
                kinds.append(kind)
            return keep + REDACTED.format(kind=kind)

        return repl

    for kind, pat in _PATTERNS:
        if kind == "private_key" and "PRIVATE KEY" not in text:
            continue
        text = pat.sub(sub(kind), text)

    def keep(value: str, name: str) -> bool:
        """Whether ``value`` is no secret: short, a placeholder, a reference (``os.environ[...]``),
        already redacted, or the variable of the same name passed on (a keyword argument)."""
        v = value.strip()
        return (len(v) < _MIN_VALUE or bool(_PLACEHOLDER.match(v)) or bool(_REFERENCE.match(v))
                or v.startswith("[REDACTED:") or v.lower() == name.strip("\"'").rsplit(".", 1)[-1].lower())

    def hide(value: str, kind: str = "assignment") -> str:
        nonlocal count
        count += 1
        found.append(value)
        if kind not in kinds:
            kinds.append(kind)
        return REDACTED.format(kind=kind)

    def swap(m: re.Match[str], group: str, value: str) -> str:
        """The match with ``value`` (the start of ``group``) redacted, everything else kept."""
        at = m.start(group) - m.start()
        return m.group(0)[:at] + hide(value) + m.group(0)[at + len(value):]

    def config_line(m: re.Match[str]) -> str:
        value = m.group("value").rstrip()
        if (not re.search(r"\s", value) or value.endswith((".", ";", ":", ",")) or _CODE.search(value)
                or keep(value, m.group("name"))):
            return m.group(0)  # one word (the general rule below decides), prose or code
        return swap(m, "value", value)

    def assign(m: re.Match[str], name: str, default: bool = False) -> str:
        """``m`` (an ``_ASSIGN`` or ``_VALUE`` match) with its value redacted unless kept; a
        ``default`` of a parameter may also be followed by the ``:`` closing its signature."""
        if m.group("q"):
            value = m.group("quoted")
            return m.group(0) if keep(value, name) else swap(m, "quoted", value)
        value = _trim_closers(m.group("value"), ":" if default else "")
        if keep(value, name) or (default and _EXPRESSION.match(value)):
            return m.group(0)
        return swap(m, "value", value)

    def assignments(text: str) -> str:
        """``_ASSIGN`` substituted, except that a type annotation after ``name:`` is kept and
        only the default after it (``= value``) goes through the rule."""
        out: list[str] = []
        pos = 0
        annotations = Annotations(text)
        while m := _ASSIGN.search(text, pos):
            out.append(text[pos:m.start()])
            name, sep = m.group("name"), m.group("sep")
            end = (annotations.annotation_end(m.end("sep"), m.start("name"))
                   if sep.strip() == ":" and not name.endswith(("'", '"')) else None)
            if end is None:
                walrus = ":=" in sep and not m.group("q")  # ``if token := next(it)``: code
                out.append(m.group(0) if walrus else assign(m, name))
                pos = m.end()
                continue
            out.append(text[m.start():end])
            pos = end
            if (d := _DEFAULT.match(text, pos)) and (v := _VALUE.match(text, d.end())):
                out.append(d.group(0) + assign(v, name, default=True))
                pos = v.end()
        out.append(text[pos:])
        return "".join(out)

    if "=" in text or ":" in text:
        text = _CONFIG_LINE.sub(config_line, text)
        text = assignments(text)
    text = redact_credentials(text, lambda kind, value: hide(value, kind))  # headers, cookies, command lines
    return Redacted(text, count, kinds, found)


def _trim_closers(value: str, also: str = "") -> str:
    """An unquoted value less what closes the syntax around it: trailing ``,`` ``;`` (and ``also``),
    brackets it never opened and quotes it never opened (``str,`` → ``str``, ``x")`` → ``x``,
    ``Optional[str]`` stays)."""
    while value and value[-1] in ",;)]}\"'`" + also:
        c = value[-1]
        if c in _CLOSE and value.count(_OPEN[_CLOSE.index(c)]) >= value.count(c):
            break
        if c in _QUOTES and value.count(c) % 2 == 0:
            break
        value = value[:-1]
    return value


def scrub(text: str, values: Iterable[str]) -> tuple[str, int]:
    """``text`` with each of ``values`` (secrets found elsewhere) replaced; returns the count."""
    n = 0
    for v in sorted(set(values), key=len, reverse=True):
        if len(v) >= 6 and v in text:
            n += text.count(v)
            text = text.replace(v, REDACTED.format(kind="echoed"))
    return text, n


def is_secret_path(path: str, extra: Iterable[str] = ()) -> bool:
    """Whether ``path`` names a well-known secret file (``.env``, ``id_rsa``, ``*.pem``, ...)."""
    name = PurePosixPath(path.replace("\\", "/")).name
    if any(fnmatch.fnmatch(name, p) for p in _NOT_SECRET):
        return False
    return any(fnmatch.fnmatch(name, p) for p in (*SECRET_FILES, *extra))
