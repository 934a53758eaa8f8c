"""Secret detection and redaction (pure).

The log is immutable: a secret written into it cannot be taken out. File contents, shell
output and search results pass through ``redact`` before anything is appended, archived or
(unless the caller explicitly asks for raw content of a project file) sent to the agent.

Four kinds of rules: provider formats (private key blocks, PuTTY ``.ppk`` private lines, AWS, GitHub, GitLab, OpenAI, Vault
``hvs.``, Hugging Face ``hf_``, SendGrid, Stripe ``whsec_``, age, Google ``ya29.``... tokens, URL
passwords — ``psql "postgresql://u:p@h/db"``, ``git clone https://user:token@host/...``,
``redis://:pass@h``; not a placeholder: ``user:pass@``, ``<password>``, ``${PASS}`` — ``.netrc``
``login u password X``, JWTs) wherever they occur; **credentials of connection strings, URL query
strings, XML config and a few more command lines** (``leanctx.context.secret_formats`` has the
exact rules: Azure ``AccountKey=``/``SharedAccessKey=``/``SharedAccessSignature=``, ``?token=``,
``&sig=``, ``Signature=``, ``X-Amz-Signature=``, ``X-Amz-Credential=``, Maven ``<password>``, NuGet
``<add key="ClearTextPassword" value="..."/>``, ``<property name="password" value="..."/>``, ``aws configure set aws_secret_access_key X``,
OpenSSL ``-passin pass:X``/``enc -k X``, keytool ``-storepass X``, Samba ``-U user%pass``, ``net use``), the value only;
**credentials of HTTP headers, cookies and command lines**, the value only,
its header or flag name (and a user name) kept (``leanctx.context.secret_headers`` has the exact
rules): ``Authorization: Bearer|Basic|Token|<scheme> <credential>`` and ``Proxy-Authorization``
(kinds ``auth_header``, ``basic_auth`` for ``Basic``), ``X-API-Key``, ``Api-Key``, ``X-Auth-Token``,
``X-Access-Token``, ``Private-Token``... (``auth_header``) in ``-H "..."``, ``--header=``, httpie
``Name:'value'``, JSON/YAML/dicts and raw dumps (``> Authorization: ...``), any case; the values
of session cookies (``Cookie:``/``Set-Cookie:``/``curl -b``, a name holding ``sess``, ``token``,
``auth``, ``sid`` or ``jwt``: ``cookie``); ``curl -u/--user user:pass``, httpie ``-a user:pass``,
``--password x``, ``--token x``, ``--api-key x`` (spaced: a value that looks generated), ``mysql -pPASS``, ``sshpass -p x``, ``docker login
-p x``, ``htpasswd -b file user pass`` (``cli_password``). A header credential must look generated
(8+ characters with a digit, mixed case or ``+/=``, not an identifier such as ``accessToken``), so
placeholders (``Bearer $TOKEN``, ``${TOKEN}``, ``<token>``, f-string ``{token}``), variables
(``{"Authorization": token}``) and prose (``the Authorization header``) stay, and ``-u``/``-p``
count for those commands only (``sort -u``, ``ps -u root``, ``docker run -p 80:80``, ``ls -p``
stay); and **assignments** whose name says the value is secret:
the name must *end* with ``_KEY``, ``_TOKEN``, ``_SECRET``, ``PASSWORD``, ``PASSWD``,
``PASSPHRASE``, ``_PWD``, ``APIKEY``... (any case), or camelCase ``Secret``, ``Token``,
``AccessKey``, ``SecretKey``... (``clientSecret``, ``SecretAccessKey``, ``refreshToken``), or be
``.npmrc``'s ``_auth``, or be ``secret``/``token`` whole (``SECRET=``, ``"token":``; its value must be
one key-shaped word of 8+ characters with a digit or ``+/=``: ``token = Name.Builtin`` stays) (a camelCase name's value must look generated: a digit, mixed case,
``+/=`` or 32+ characters, one word: ``UnexpectedToken: 'Unexpected token'`` stays), so ``PASSWORD_MIN_LENGTH = 8`` or ``TOKEN_TTL`` are not secrets (nor a
Sphinx ``:param min_key:``, a path ``/etc/passwd:``, sudoers ``NOPASSWD:``), followed by ``=``, ``:`` or ``:=`` (``.env``, ``export X=``,
YAML, JSON ``"password": "..."``, TOML/INI, code, ``--password=``, ``?api_key=``):

- a **quoted** value (``'...'`` or ``"..."``, a ``b``/``r``/``u`` prefix or Go ``[]byte(`` allowed)
  is redacted whole, whatever it holds (spaces, ``;``, ``,``, escaped quotes), up to its closing
  quote on that line (an unclosed quote: to the end of the line); a quote that closes a string
  the name is in opens none (``prompt='Password: '``, ``print("Password:", x)``);
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

**Code** reading the value from elsewhere is kept (``leanctx.context.secret_code`` has the exact
rule): an unquoted value that is a call or
subscript of a name (``tokenizer.expect(``, ``getpass()``, ``headers["x"]``; not ``Xk29d(ab``,
a password), starts with ``lambda``, ``await``, ``new``, ``not``, or is ``self.x``/``this.x``; a
bare (dotted) name only where the line says code: a declaration (``const``, ``let``, ``var``,
``my $``, ``final String``...), tuple unpacking (``user, passwd = creds``), ``self.x = y``, a
keyword argument (``f(a, password=pw)``); any unquoted value but a number after ``=`` on a line of a
Python function or class body (``meta_key = header``, ``x_key = StashKey[IO[bytes]]()``; a keyword
argument of a call opened above too); an expression whose brackets close past a space
(``StashKey[Config | None]()``); a bare name or number that an expression goes on
from (``explicit_token = token is not None``, ``X_KEY = BASE + 1``, ``a = b = c``, ``a if b else
c``, ``cond ? x : y``; after a name with a digit only ``is``/``==``/a conditional: ``{api_key:
abcd1234 - prod}`` is a value). ``PASSWORD=hunter2``, ``password = hunter2``,
``API_TOKEN=abc.def.ghi`` hold no code signal and are redacted; a quoted value is a value in a
conditional too (``password = "x" if prod else "y"``), and in a tuple its own literal goes
(``user, password = "wile", "[REDACTED]"``).

**Numbers** are constants, not secrets: an unquoted value that is a number (``AF_KEY = 0x1e``,
``TOKEN_EOF = -1``, ``ScanToken = -1000 - iota``, ``1_000``, ``2.5``, ``13UL``) or, on a config
line, arithmetic over numbers and names with a number in it (``MAX_KEY = 1024 - 1``). Not: a
decimal of 6+ digits or a hex literal longer than 64 bits (``AES_KEY = 0x2b7e...``), nor any plain
decimal after a password's name (``PASSWORD=1234``, a PIN).

**Sentences** are not values: after ``name:`` (never ``=``), a plain word of 3+ letters and 3+
more words, one of them a small word of prose (``the``, ``to``, ``for``, ``on``, ``in``...):
changelog subjects (``pre_shared_key: limit 0-RTT to resumption connections``, ``- af_key:
validate families in pfkey_send_migrate()``), messages (``EncodeToken: Unable to encode token``).
A passphrase holding none (``password: correct horse battery``) or not opening with a plain word
(``password: Tr0ub4dor to the moon``) stays a value, as does any ``NAME=several words``.

Left alone (false positives are kept few, not absent: the constant ``CACHE_KEY = "user:{id}"``
is still redacted): values under 4 characters (the whole value: a
phrase counts whole, so ``sk with spaces`` is redacted although ``sk`` is short), placeholders
(``${VAR}``, ``<your key>``, ``changeme``, ``value``, ``xxxx``...), references (``os.environ[...]``,
``os.getenv(...)``, ``process.env.X``, ``$(cmd)``), f-strings and bracketed structures, a
variable passed on under its own name (``password=password``), walrus assignments, and
several-word values that read as code (brackets, ``=``, ``|``, quotes, ``is not``, ``None``,
``lambda``, `` + ``, a conditional...) or prose (ending with ``.``, ``;``, ``:`` or ``,``); of those, the
general rule still takes the first word when it is a value on its own.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable
from pathlib import PurePosixPath

import msgspec

from .secret_code import (
    QuoteParity,
    code_phrase,
    code_value,
    conditional,
    no_assignment,
    number,
    numeric_expression,
    prose,
    prose_after,
    tuple_literals,
)
from .secret_formats import redact_formats
from .secret_headers import looks_generated, redact_credentials
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
    ("gitlab_token", re.compile(r"\bgl(?:pat|cbt)-[A-Za-z0-9_-]{20,}\b")),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}\b")),
    ("openai_key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}\b")),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b")),
    ("stripe_key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("npm_token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    ("pypi_token", re.compile(r"\bpypi-[A-Za-z0-9_-]{50,}\b")),
    ("vault_token", re.compile(r"\bhv[sb]\.[A-Za-z0-9_-]{24,}")),
    ("huggingface_token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("sendgrid_key", re.compile(r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}")),
    ("stripe_key", re.compile(r"\bwhsec_[A-Za-z0-9]{24,}\b")),
    ("age_key", re.compile(r"\bAGE-SECRET-KEY-1[0-9A-Z]{50,}\b")),
    ("google_oauth_token", re.compile(r"\bya29\.[A-Za-z0-9_-]{20,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\b")),
    # only the password goes; the user may be empty (``redis://:pass@host``); a placeholder stays
    ("url_password", re.compile(r"(?P<keep>://[^\s:/@]+:)[^\s@/]+(?=@)")),
    ("url_password", re.compile(r"(?P<keep>://:)[^\s@/:]+(?=@)")),  # not ``cvs://:pserver:anon@``
    # ``.netrc``: ``machine h login u password X``, on one line or several
    ("netrc_password", re.compile(r"(?P<keep>(?<![\w-])(?:machine[ \t]+\S+|default)\s+login[ \t]+\S+\s+password[ \t]+)"
                                  r"(?!(?:password|string|str)\b)[^\s#]+")),
]

# KEY=value / KEY: value / "key": "value" where the name says it is a secret: it must END with
# one of these (``DB_PASSWORD``, ``api_key``, ``GITHUB_TOKEN``), so ``PASSWORD_MIN_LENGTH`` or
# ``TOKEN_TTL`` name no secret.
_SUFFIXES = ("_KEY|_TOKEN|_SECRET|SECRET_KEY|PASSWORD|PASSWD|PASSPHRASE|_PWD|API_KEY|APIKEY|ACCESS_KEY|PRIVATE_KEY"
             "|CLIENT_SECRET|AUTH_TOKEN")
# camelCase names end so too (case-sensitive: ``clientSecret``, ``SecretAccessKey``, ``refreshToken``,
# ``npmAuthToken``, ``secretKey``; not ``tokenSecretary``), and ``.npmrc`` has ``_auth`` (above:
# ``:_auth=``; ``_authToken`` is camelCase)
_CAMEL = (r"(?-i:(?<=[a-z0-9])(?:Secret|Password|Passwd|Token|ApiKey|AccessKey|SecretKey|PrivateKey|AuthToken)"
          r"|(?<=secret|access)Key|(?<=private|account)Key)")
# a whole name that says secret (``SECRET=``, ``token:``, ``"secret": "..."``): a lexer's or a
# schema's word far more often, so its value must look like a key: one token-shaped word of 8+
# characters with a digit or ``+/=`` (``token = Name.Builtin``, ``Token: '#d0d0d0'``, ``"token":
# "NAME"``, ``token=None):`` stay); not after ``::`` (``AWS::SecretsManager::Secret``), nor in a URL
# query (``?token=``/``&secret=`` are ``secret_formats``', whose values end at ``&``)
_BARE_NAMES = "(?<![?&;:])(?:secret|token)"
_BARE_NAME = re.compile(r"""["']?(?:secret|token)["']?""", re.IGNORECASE)
_KEY_SHAPED = re.compile(r"(?=[^\n]*[0-9+/=])[A-Za-z0-9._~+/=-]{8,}")
_PHRASE_SUFFIXES = _SUFFIXES  # every secret name's value may be several words (``API_KEY: sk live words``)
_CAMEL_IDENT = re.compile(r"[a-z]+(?:[A-Z][a-z]*)+")  # ``lastEventId``, ``tString``: a variable
_PASSWORD_NAME = re.compile(r"""(?:PASS(?:WORD|WD|PHRASE)|_PWD)["']?$""", re.IGNORECASE)  # ``PIN=1234``: a password
_UPPER_NAME = re.compile(rf"""(?:{_SUFFIXES})["']?$""", re.IGNORECASE)  # not only camelCase


def _name(suffixes: str) -> str:
    # the name starts where a run of name characters does (a lookbehind, not ``\b``: from each
    # ``\b`` inside a long run, ``a-b-c...``, the run would be scanned again: quadratic time)
    return (rf"""(?P<name>(?<![\w.-])(?:[A-Za-z0-9_.-]*(?:{suffixes}|{_CAMEL})|(?-i:_auth)|{_BARE_NAMES})\b["']?)"""
            r"""(?P<sep>[ \t]*(?::=|[:=])[ \t]*)""")


_VALUE_SOURCE = r"""(?:
        # quoted (a Python b/r/u prefix or a Go ``[]byte(`` allowed): everything up to the closing quote on that line,
        # backslash escapes skipped; a quote that is never closed runs to the end of the line
        (?P<prefix>(?:br|rb|[bru]|\[\]byte\()?)(?P<q>["'])(?P<quoted>(?:\\[^\n]|(?!(?P=q))[^\\\n])*)(?P<close>(?P=q)|$)
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
# a URL password that is a documentation placeholder: ``https://user:pass@host``, ``[user:passwd@]``,
# ``<password>`` (maybe HTML-escaped), ``${PASS}``, ``%s``, ``****``
_URL_PLACEHOLDER = re.compile(r"(?:pass|passwd|password|pwd|secret|token|pass(?:word)?\]|x+|\*+|\.\.\.|%s|\$\{?\w+\}?"
                              r"|\{\w*\}|<[^<>]*>?|&lt;.*?(?:&gt;)?|\\fI.*|\[REDACTED:\w+\])$", re.IGNORECASE)
_OPEN, _CLOSE, _QUOTES = "([{", ")]}", "\"'`"
# A config line (``.env``, YAML, INI, ``export``) of any secret name (a key, password, passphrase,
# secret or token): an unquoted value of several words runs to the end of the line (before a `` #``
# comment), unless it looks like code (brackets, ``=``, quotes, ``|``: ``token: str | None`` is a
# Python annotation; see ``_CODE`` for the rest) or prose (it ends with ``.`` ``;`` ``:`` ``,``:
# ``password: The password of the URL.`` documents one).
_CONFIG_LINE = re.compile(
    r"""^(?P<lead>[ \t]*(?:export[ \t]+|-[ \t]+)?)(?!-)""" + _name(_PHRASE_SUFFIXES)
    + r"""(?P<value>[^\s()\[\]{}<>="'`|\#][^\n()\[\]{}<>="'`|]*?)(?P<trail>[ \t]+\#[^\n]*)?[ \t]*$""",
    re.IGNORECASE | re.VERBOSE | re.MULTILINE,
)
# several words that read as an expression, not a phrase: ``use_key = key is not None``,
# ``cache_key = prefix + name``, ``sort_key = lambda x: x.name``, ``x_key = a if b else c``
# (``a if b else c``, ``c ? x : y``: ``secret_code.conditional``, without a backtracking ``.*``)
_CODE = re.compile(r"""^(?:not|new|typeof)[ \t]|\b(?:is[ \t]+not|not[ \t]+in|is[ \t]+None|None|True|False|lambda|await)\b
                       |[ \t](?:[+*/%]|&&)[ \t]""", re.VERBOSE)  # ``=``, ``<>``: never in a value
# The minimum applies to the whole value: to the phrase on a config line (``sk with spaces tapir``
# is a secret although ``sk`` alone is too short to be one).
_MIN_VALUE = 4  # shorter values are type names, flags and numbers far more often than secrets
_PLACEHOLDER = re.compile(r"^(?:\$\{?[A-Za-z_]+\}?|<[^>]*>|x+|\*+|changeme|example|dummy|value|none|null|true|false)$",
                          re.IGNORECASE)

SECRET_FILES = (
    ".env", ".env.*", "*.env", ".envrc", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "*.pem", "*.key", "*.p12",
    "*.pfx", "*.keystore", "*.jks", ".netrc", ".pgpass", ".npmrc", ".pypirc", "credentials", "credentials.json",
    "*credentials*.json", "service-account*.json", ".git-credentials", "secrets.yml", "secrets.yaml",
    "secrets.json", ".htpasswd", "*.ppk",
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
            keep = m.groupdict().get("keep") or ""
            if kind == "url_password" and _URL_PLACEHOLDER.match(m.group(0)[len(keep):]):
                return m.group(0)
            count += 1
            found.append(m.group(0)[len(keep):])
            if kind not in kinds:
                kinds.append(kind)
            return keep + REDACTED.format(kind=kind)

        return repl

    def hide(value: str, kind: str = "assignment") -> str:
        nonlocal count
        count += 1
        found.append(value)
        if kind not in kinds:
            kinds.append(kind)
        return REDACTED.format(kind=kind)

    for kind, pat in _PATTERNS:
        if kind == "private_key" and "PRIVATE KEY" not in text:
            continue
        text = pat.sub(sub(kind), text)
    text = redact_formats(text, lambda kind, value: hide(value, kind))  # connection/query strings, XML, CLIs

    def keep(value: str, name: str) -> bool:
        """Whether ``value`` is no secret: short, a placeholder, a reference (``os.environ[...]``),
        already redacted, or the variable of the same name passed on (a keyword argument)."""
        v = value.strip()
        return (len(v) < _MIN_VALUE or bool(_PLACEHOLDER.match(v)) or bool(_REFERENCE.match(v))
                or v.startswith("[REDACTED:")
                or v.rsplit(".", 1)[-1].lower() == name.strip("\"'").rsplit(".", 1)[-1].lstrip("-").lower())

    def swap(m: re.Match[str], group: str, value: str) -> str:
        """The match with ``value`` (the start of ``group``) redacted, everything else kept."""
        at = m.start(group) - m.start()
        return m.group(0)[:at] + hide(value) + m.group(0)[at + len(value):]

    lines = Annotations(text)  # a Python body's lines are code, not config lines

    def config_line(m: re.Match[str]) -> str:
        value = m.group("value").rstrip()
        if (not re.search(r"\s", value) or value.endswith((".", ";", ":", ",")) or _CODE.search(value)
                or conditional(value) or numeric_expression(value) or (":" in m.group("sep") and prose(value))
                or keep(value, m.group("name")) or code_phrase(value) or (m.group("sep").strip() == "=" and lines.python_body(m.start("name")))):
            return m.group(0)  # one word (the general rule below decides), prose or code
        return swap(m, "value", value)

    def literals(text: str, start: int, spans: list[tuple[int, int]], name: str) -> str:
        """``text`` from ``start`` to the quote closing the last of ``spans`` (string literals),
        with the literals of ``spans`` redacted unless kept."""
        out, pos = [], start
        for a, b in spans:
            value = text[a:b]
            if not (keep(value, name) or weak(value, name, quoted=True)):
                out += [text[pos:a], hide(value)]
                pos = b
        out.append(text[pos:max(spans[-1][1] + 1, pos)])
        return "".join(out)

    def weak(value: str, name: str, quoted: bool = False) -> bool:
        """Whether ``value`` is too weak a value for a camelCase or bare name (``refreshToken``,
        ``token``): code's names far more often than config's (an unquoted camelCase value,
        ``accessToken``, is a variable)."""
        if _BARE_NAME.fullmatch(name):
            return not (_KEY_SHAPED.fullmatch(value) and looks_generated(value))
        return (not _UPPER_NAME.search(name) and name.strip("\"'") != "_auth"
                and (not looks_generated(value) or (not quoted and bool(_CAMEL_IDENT.fullmatch(value)))))

    def assign(m: re.Match[str], name: str, default: bool = False, text: str = "",
               body: Callable[[int], bool] | None = None) -> str:
        """``m`` (an ``_ASSIGN`` or ``_VALUE`` match) with its value redacted unless kept; a
        ``default`` of a parameter may also be followed by the ``:`` closing its signature;
        ``text``: the text ``m`` matched in (an unquoted value that reads as code in it stays)."""
        # a camelCase name (``refreshToken``) is code's far more often than config's: its value
        # must look generated (one word: a digit, mixed case, ``+/=`` or 32+ characters; ``weak``)
        if m.group("q"):
            value = m.group("quoted")
            if keep(value, name) or weak(value, name, quoted=True):
                return m.group(0)
            return swap(m, "quoted", value)
        value = _trim_closers(m.group("value"), ":" if default else "")
        if keep(value, name) or (number(value) and not (value.isdigit() and _PASSWORD_NAME.search(name))) or (default and _EXPRESSION.match(value)) \
                or (text and ((":" in m.group("sep") and prose_after(text, m.start("value")))
                              or code_value(text, m, value, body))) \
                or weak(value, name):
            return m.group(0)
        return swap(m, "value", value)

    def assignments(text: str) -> str:
        """``_ASSIGN`` substituted, except that a type annotation after ``name:`` is kept and
        only the default after it (``= value``) goes through the rule."""
        out: list[str] = []
        pos = 0
        annotations = Annotations(text)
        parity = QuoteParity(text)
        while m := _ASSIGN.search(text, pos):
            out.append(text[pos:m.start()])
            name, sep = m.group("name"), m.group("sep")
            if (m.group("q") and parity.closes(m.start("q"))) or no_assignment(text, m):
                out.append(text[m.start():m.end("sep")])  # ``prompt='Password: '``: no value
                pos = m.end("sep")
                continue
            end = (annotations.annotation_end(m.end("sep"), m.start("name"))
                   if sep.strip() == ":" and not name.endswith(("'", '"')) else None)
            if (end is None and m.group("q") and m.group("close") and sep.strip() == "="
                    and (spans := tuple_literals(text, m)) is not None):  # ``user, password = "wile", "coyote"``
                out.append(literals(text, m.start(), spans, name))
                pos = max(m.end(), spans[-1][1] + 1)
                continue
            if end is None:
                walrus = ":=" in sep and not m.group("q")  # ``if token := next(it)``: code
                out.append(m.group(0) if walrus else assign(m, name, text=text, body=annotations.python_body))
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
