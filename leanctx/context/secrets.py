"""Secret detection and redaction (pure).

The log is immutable: a secret written into it cannot be taken out. File contents, shell
output and search results pass through ``redact`` before anything is appended, archived or
(unless the caller explicitly asks for raw content of a project file) sent to the agent.

Four kinds of rules: provider formats (``leanctx.context.secret_providers``: private key blocks —
a BEGIN line followed by a key's body, base64 or PEM headers, through its END line or, with none,
to the end of the text; a constant naming the marker, ``_SK_START = b"-----BEGIN OPENSSH PRIVATE
KEY-----"``, followed by code, is no key —, PuTTY ``.ppk`` private lines, AWS, GitHub, GitLab, OpenAI, Vault
``hvs.``, Hugging Face ``hf_``, SendGrid, Stripe ``whsec_``, age, Google ``ya29.``... tokens, URL
passwords — ``psql "postgresql://u:p@h/db"``, ``git clone https://user:token@host/...``,
``redis://:pass@h``; not a placeholder: ``user:pass@``, ``<password>``, ``${PASS}`` — ``.netrc``
``login u password X`` (not a template's ``password {self.password}``), JWTs) wherever they occur; **credentials of connection strings, URL query
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
(8+ characters with a digit, mixed case or ``+/=``, not an identifier such as ``accessToken``; an
auth-param list one such value: ``WSSE profile="UsernameToken"`` stays), so
placeholders (``Bearer $TOKEN``, ``${TOKEN}``, ``<token>``, f-string ``{token}``), variables
(``{"Authorization": token}``) and prose (``the Authorization header``) stay, and ``-u``/``-p``
count for those commands only (``sort -u``, ``ps -u root``, ``docker run -p 80:80``, ``ls -p``
stay); and **assignments** whose name says the value is secret (``leanctx.context.secret_names``
has the names, ``leanctx.context.secret_assign`` the rule):
the name must *end* with ``_KEY``, ``_TOKEN``, ``_SECRET``, ``PASSWORD``, ``PASSWD``,
``PASSPHRASE``, ``_PWD``, ``_PW``, ``APIKEY``... (any case), or camelCase ``Secret``, ``Token``,
``AccessKey``, ``SecretKey``... (``clientSecret``, ``SecretAccessKey``, ``refreshToken``), or be
``.npmrc``'s ``_auth``, or be ``secret``/``token`` whole (``SECRET=``, ``"token":``; its value must be
one key-shaped word of 8+ characters with a digit or ``+/=``: ``token = Name.Builtin`` stays) (a camelCase name's value must look generated: a digit, mixed case,
``+/=`` or 32+ characters, one word: ``UnexpectedToken: 'Unexpected token'`` stays) (``pw``/``pwd`` whole:
the working directory more often, so its value must look generated and be no path: ``pwd =
"Tr0ub4dor&3"`` goes, ``PWD=/home/u``, ``pwd = os.getcwd()``, ``{pwd: cwd}``, ``$PWD`` stay) (a generic
``_KEY`` name, ``SORT_KEY``, ``cache_key``, names a dictionary key or a setting far more often: a value
of identifier words stays, ``dest_key='Args'``, ``STATS_KEY = "_hypothesis_stats"``, ``CACHE_KEY =
"user:{id}"``, ``X_KEY = "io.example/protocolVersion"``; one holding a random word goes,
``"d41d8cd98f00..."``, ``"Xk29dLmQ"``, or saying secret, ``"my-secret-key"``; a name that says
secret takes any value: ``API_KEY``, ``aws_secret_key``, ``ENCRYPTION_KEY``, ``SIGNING_KEY``,
``MASTER_KEY``, ``LICENSE_KEY``...), so ``PASSWORD_MIN_LENGTH = 8`` or ``TOKEN_TTL`` are not secrets (nor a
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
names or aliases named as constants (``access_token: Token``, ``"Token"``, ``key: Foo[Bar]``,
``private_key: _SSH_PRIVATE_KEY_TYPES,``) on a line that reads as code (a
class body, a signature, a declaration keyword, a default). A bare ``db_password: Password123``
or ``password: Hunter`` (YAML, ``.env``, a line out of context) is a value and redacted: the
text carries no file type, and when nothing says code, it is redacted. The **default** after an
annotation goes through the assignment rule (``api_key: str = "sk-..."`` redacts the quoted
value), except an unquoted default that is code reading the value from elsewhere (a name,
attribute, call, subscript, ``lambda``: ``= Field(...)``, ``= settings.key``).

**Code** reading the value from elsewhere is kept (``leanctx.context.secret_code`` has the exact
rule): an unquoted value that is a call or
subscript of a name (``tokenizer.expect(``, ``getpass()``, ``headers["x"]``, Perl's
``PEM_string2key($data)``; not ``Xk29d(ab``, a password), starts with ``lambda``, ``await``, ``new``, ``not``, or is ``self.x``/``this.x``; a
bare (dotted) name only where the line says code: a declaration (``const``, ``let``, ``var``,
``my $``, ``final String``...), tuple unpacking (``user, passwd = creds``), ``self.x = y``, a
keyword argument (``f(a, password=pw)``, or on a line of its own in a call opened on a line above:
``signing_key=private_key_pem,``, in a docstring's example too), a quoted key's variable holding
``_``, ``.`` or camelCase humps (``"password": t_string,``; not ``"password": hunter2,``); any
unquoted value but a number after ``=`` on a line of a Python function or class body (``meta_key =
header``, ``out_token = Generic.Error``; its ``def`` may span lines, a block header go on after a
``\\``; a keyword argument of a call opened above too); a subscript called
(``pastebinfile_key = StashKey[IO[bytes]]()``, anywhere; not ``Xk29d[ab]()``); an expression whose
brackets close past a space (``StashKey[Config | None]()``); a bare name or number that an expression goes on
from (``explicit_token = token is not None``, ``X_KEY = BASE + 1``, ``a = b = c``, ``a if b else
c``, ``cond ? x : y``; after a name with a digit only ``is``/``==``/a conditional: ``{api_key:
abcd1234 - prod}`` is a value). ``PASSWORD=hunter2``, ``password = hunter2``,
``API_TOKEN=abc.def.ghi`` hold no code signal and are redacted; a quoted value is a value in a
conditional too (``password = "x" if prod else "y"``), and in a tuple its own literal goes
wherever the name stands (``user, password = "wile", "[REDACTED]"``, ``password, user =
"[REDACTED]", "bob"``; before the last name, only a statement of as many values as names).

**Numbers** are constants, not secrets: an unquoted value that is a number (``AF_KEY = 0x1e``,
``TOKEN_EOF = -1``, ``ScanToken = -1000 - iota``, ``1_000``, ``2.5``, ``13UL``) or, on a config
line, arithmetic over numbers and names with a number in it (``MAX_KEY = 1024 - 1``). Not: a
decimal of 6+ digits or a hex literal longer than 64 bits (``AES_KEY = 0x2b7e...``), nor any plain
decimal after a password's name (``PASSWORD=1234``, a PIN).

**Sentences** are not values: after ``name:`` (never ``=``), a plain word of 3+ letters and 3+
more words, one of them a small word of prose (``the``, ``to``, ``for``, ``on``, ``in``...):
changelog subjects (``pre_shared_key: limit 0-RTT to resumption connections``, ``- af_key:
validate families in pfkey_send_migrate()``), messages (``EncodeToken: Unable to encode token``);
or an English word of two letters and two small words (``pre_shared_key: do not send extension
when no identities are present``; ``password: to be or not`` holds one); nor are a changelog's
status words (``gnutls_session_get_master_secret: Added``, ``GNUTLS_BAG_SECRET: ADDED to x.h.``)
and a phrase of 3+ words naming the field's own noun (``_tls13_derive_secret: define secret
argument``; ``leanctx.context.secret_prose`` has these rules).
A passphrase holding none (``password: correct horse battery``) or not opening with a plain word
(``password: Tr0ub4dor to the moon``) stays a value, as does any ``NAME=several words``.

**Patterns** are not values (``leanctx.context.secret_regex``): a JavaScript regex literal holding
regex syntax (``const UNEXPECTED_TOKEN = /^Unexpected token '?(.)'?(,)? /i``; not ``password =
/Tr0ub4dor&3/``), a raw string holding a character class and an operator (``jsonnet_token =
r'[^\\W\\d]\\w*'``; not ``r'C0mpl3x\\Pass'``).

Left alone (false positives are kept few, not absent): values under 4 characters (the whole value: a
phrase counts whole, so ``sk with spaces`` is redacted although ``sk`` is short), placeholders
(``${VAR}``, ``<your key>``, ``value``, ``xxxx``, a mask ``:****``, the placeholder words of
``secret_providers.PLACEHOLDER_WORDS`` in every rule: ``pass``, ``password``, ``token``, ``secret``,
``changeme``, ``YOUR_API_KEY``, ``your-password``; after a name, lowercase or uppercase only:
``access_token: "Token"`` is redacted; ``-U user%pass,`` before a sentence's ``,`` too), a schema's
type word (``"password": "string?"``, ``"passphrase": "string"``), the name itself in any case or
separators (``CHALLENGE_PASSWORD: "challengePassword"``, ``API_KEY = "api-key"``) or its last words
as a label (``challengePassword = A challenge password``), an HTML-escaped placeholder
(``passphrase: &#x3C;string>``), an auth scheme after a token's name (``default_token='Bearer'``),
nsswitch's sources (``passwd: files ldap``), after a generic ``_KEY`` name a fingerprint
(``sig_key: 51:C4:0C:...``) or words with a sigil (``cdata_key='#text'``), a quoted symbol
of lowercase words (``"passwd:gecos"``; not ``"password:hunter2"``), references (``os.environ[...]``,
``os.getenv(...)``, ``process.env.X``, ``$(cmd)``, Perl's ``$entry->{$key}``), a signature's
default (``def read(self, pwd=None):``), f-strings and bracketed structures, a
variable passed on under its own name (``password=password``), walrus assignments, and
several-word values that read as code (brackets, ``=``, ``|``, quotes, ``is not``, ``None``,
``lambda``, `` + ``, a conditional...) or prose (ending with ``.``, ``;``, ``:`` or ``,``); of those, the
general rule still takes the first word when it is a value on its own.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from pathlib import PurePosixPath

import msgspec

from .secret_assign import redact_assignments
from .secret_formats import redact_formats
from .secret_headers import redact_credentials
from .secret_names import _ASSIGN, _PLACEHOLDER
from .secret_providers import _PATTERNS, REDACTED, redact_providers

# ``_PATTERNS``, ``_ASSIGN``, ``_PLACEHOLDER``: re-exported, ``ops.files`` and ``cache.views`` read
# the rules (a cached view's key holds them)
__all__ = ["REDACTED", "SECRET_FILES", "_ASSIGN", "_PATTERNS", "_PLACEHOLDER", "Redacted", "is_secret_path", "redact",
           "scrub"]

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
    kinds: list[str] = []
    found: list[str] = []

    def hide(kind: str, value: str) -> str:
        found.append(value)
        if kind not in kinds:
            kinds.append(kind)
        return REDACTED.format(kind=kind)

    text = redact_providers(text, hide)
    text = redact_formats(text, hide)  # connection/query strings, XML, CLIs
    text = redact_assignments(text, lambda value: hide("assignment", value))
    text = redact_credentials(text, hide)  # headers, cookies, command lines
    return Redacted(text, len(found), kinds, found)


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
