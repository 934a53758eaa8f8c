"""Secret names and what their values must be (used by ``secret_assign``).

``_ASSIGN`` finds a name that says its value is secret, its ``=``/``:``/``:=`` and a value (quoted
or not); ``_CONFIG_LINE`` a config line of such a name, whose value may be several words.
``keep``: a value that is none (short, a placeholder, a reference, the same name passed on);
``weak``: a value too weak for a name that is code's more often than config's (camelCase, a bare
``secret``/``token``); ``trim_closers``: an unquoted value less the syntax closing around it.
"""

from __future__ import annotations

import re

from .secret_headers import looks_generated
from .secret_providers import PLACEHOLDER_WORDS

# KEY=value / KEY: value / "key": "value" where the name says it is a secret: it must END with
# one of these (``DB_PASSWORD``, ``api_key``, ``GITHUB_TOKEN``), so ``PASSWORD_MIN_LENGTH`` or
# ``TOKEN_TTL`` name no secret.
_SUFFIXES = ("_KEY|_TOKEN|_SECRET|SECRET_KEY|PASSWORD|PASSWD|PASSPHRASE|_PWD|_PW|API_KEY|APIKEY|ACCESS_KEY|PRIVATE_KEY"
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
# ``pw``/``pwd`` whole: the working directory far more often (``PWD=/home/u``, ``pwd = os.getcwd()``,
# Go's ``{pwd: cwd}``), so its value must look generated and be no path (``pwd = "Tr0ub4dor&3"``);
# not in a value (``DEBUG=pw:api``) nor after ``$`` or ``/``
_BARE_NAMES = "(?<![?&;:])(?:secret|token)|(?<![?&;:=/$])pwd?"
_BARE_NAME = re.compile(r"""["']?(?:secret|token)["']?""", re.IGNORECASE)
_BARE_PW = re.compile(r"""["']?pwd?["']?""", re.IGNORECASE)
_PATH = re.compile(r"[/~]|\.{1,2}/|[A-Za-z]:[\\/]")
_KEY_SHAPED = re.compile(r"(?=[^\n]*[0-9+/=])[A-Za-z0-9._~+/=-]{8,}")
# a generic ``_KEY`` name (``SORT_KEY``, ``cache_key``, ``X_MCP_HEADER_KEY``) names a dictionary
# key, a setting or a namespace far more often than a secret: a value of identifier words stays
# (``identifier_words``); a name that says secret (``API_KEY``, ``aws_secret_key``,
# ``ENCRYPTION_KEY``...) takes any value
_GENERIC_KEY = re.compile(r"""_key["']?$""", re.IGNORECASE)
_SECRET_KEY_NAME = re.compile(r"""(?:secret|private|access|api|account|encryption|signing|master|hmac|aes|jwt"""
                              r"""|cipher|crypt|license|shared)[_-]?key["']?$|secret""", re.IGNORECASE)
# identifier words: letters with at most 3 digits after them (``sha256``), a sigil before them
# (``$id``, ``#text``), a template (``{id}``, ``%s``), or a short number, between ``-_./:`` and spaces
_WORD_SEPARATORS = re.compile(r"[-_./: ]+")
_WORD = re.compile(r"[$#@]?[A-Za-z]+[0-9]{0,3}|\{\w*\}|%[sd]|[0-9]{1,3}")  # ``$id``, ``#text``, ``@attr``
# a key's fingerprint, colon hex bytes (modinfo's ``sig_key: 51:C4:0C:...``): public, after a generic ``_key`` name
_FINGERPRINT = re.compile(r"[0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){7,63}")
# the humps of a word (``get``, ``HTTP``, ``Server``): a name has few for its length, random
# mixed case many (``bPxRfiCY``: b Px Rfi CY)
_HUMPS = re.compile(r"[A-Z]+(?![a-z])|[A-Z][a-z]*|[a-z]+")
_SAYS_SECRET = re.compile(r"secret|passw", re.IGNORECASE)  # ``"my-secret-key"``: a (weak) secret
_MAX_WORDS = 256  # characters: a longer value is no identifier
_PHRASE_SUFFIXES = _SUFFIXES  # every secret name's value may be several words (``API_KEY: sk live words``)
_CAMEL_IDENT = re.compile(r"[a-z]+(?:[A-Z][a-z]*)+")  # ``lastEventId``, ``tString``: a variable
_PASSWORD_NAME = re.compile(r"""(?:PASS(?:WORD|WD|PHRASE)|_PWD?)["']?$""", re.IGNORECASE)  # ``PIN=1234``: a password
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
# a secret name on its own (a target of a tuple assignment: ``password, user = ...``)
_SECRET_NAME = re.compile(rf"""(?:[A-Za-z0-9_.-]*(?:{_SUFFIXES}|{_CAMEL})|(?-i:_auth)|secret|token|pwd?)""",
                          re.IGNORECASE)
_ASSIGN = re.compile(_name(_SUFFIXES) + _VALUE_SOURCE, re.IGNORECASE | re.VERBOSE | re.MULTILINE)
# ``_ASSIGN`` up to its value's first character (a quote: ``q``): where ``_ASSIGN`` matches (searched
# for first: an unquoted value is read only for a name that assigns one)
_ASSIGN_HEAD = re.compile(_name(_SUFFIXES) + r"""(?=(?:br|rb|[bru]|\[\]byte\()?(?P<q>["'])|(?![\"'`=(\[{]|f[r]?["']|rf["'])\S)""",
                          re.IGNORECASE | re.MULTILINE)
_VALUE = re.compile(_VALUE_SOURCE, re.IGNORECASE | re.VERBOSE | re.MULTILINE)  # a default after an annotation
_DEFAULT = re.compile(r"[ \t]*=(?![=>~])[ \t]*")
# an unquoted default that is code reading its value from elsewhere (a name, attribute, call,
# subscript, lambda): ``= Field(...)``, ``= settings.token``, ``= load_key(data)``
_EXPRESSION = re.compile(r"(?:lambda|await|not)\b|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?:[(\[]|$)")
# an unquoted value that reads the secret from elsewhere instead of holding it: ``os.environ[...]``,
# ``os.getenv(...)``, ``process.env.X``, ``ENV[...]``, ``$(cmd)``, ``${VAR:-x}``, a Perl or PHP
# variable's element (``$entry->{$key}``, ``$opts{pass}``, ``$args[1]``)
_REFERENCE = re.compile(r"^(?:os\.(?:environ\b|getenv\()|process\.env\b|ENV\[|\$\(|\$\{|\$[A-Za-z_]\w*(?:->|\{|\[))")
_OPEN, _CLOSE, _QUOTES = "([{", ")]}", "\"'`"
# an HTML-escaped placeholder: ``&#x3C;string>``, ``&lt;password&gt;`` (Node's docs)
_ESCAPED_PLACEHOLDER = re.compile(r"&(?:lt|#x0*3c|#0*60);[\w|. -]*(?:>|&gt;|&#x0*3e;|&#0*62;)", re.IGNORECASE)
# a token's type, an HTTP auth scheme, is no token (``default_token='Bearer'``)
_TOKEN_NAME = re.compile(r"token[\"']?$", re.IGNORECASE)
_SCHEME = re.compile(r"Bearer|bearer|BEARER|Basic|Digest|MAC|Negotiate|OAuth|DPoP")
# nsswitch.conf's ``passwd:`` database lists its sources (``passwd: files ldap``, ``compat systemd``)
_NSS_SOURCE = re.compile(r"files|db|compat|nis(?:plus)?|dns|ldap|sss|systemd|hesiod|mdns[46]?(?:_minimal)?|winbind"
                         r"|wins|myhostname|mymachines|resolve|altfiles|cache|extrausers|usrfiles|libvirt(?:_guest)?"
                         r"|\[!?[A-Za-z]+=[a-z]+\]")
_ARTICLE = re.compile(r"^(?:a|an|the|your|my)[ \t]+", re.IGNORECASE)
_NAME_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")  # ``challengePassword``: challenge, Password
_HEADER_END = re.compile(r"[^(\[][)\]]:$")  # ``None):``, ``x]:``: a signature or block header ends (``():`` is a value's)
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
# a schema's type word (playwright's ``"password": "string?"``, Swagger's ``"password": "string"``)
_SCHEMA_TYPES = r"(?:string|str|number|integer|int|boolean|bool|bytes|binary|object)\??(?:\[\])?"
# placeholders: a variable, ``<your key>``, ``xxxx``, a mask (``****``, pip's ``:****``), a placeholder
# word (``secret_providers.PLACEHOLDER_WORDS``: ``pass``, ``token``, ``YOUR_API_KEY``...; lowercase or
# uppercase: ``access_token: "Token"`` may be a YAML value), a type word
_PLACEHOLDER = re.compile(rf"^(?:\$\{{?[A-Za-z_]+\}}?|<[^>]*>|x+|:?\*+|value|changeme|example|dummy|none|null|true|false"
                          rf"|(?-i:{PLACEHOLDER_WORDS}|{PLACEHOLDER_WORDS.upper()})|{_SCHEMA_TYPES})$", re.IGNORECASE)


def keep(value: str, name: str) -> bool:
    """Whether ``value`` is no secret: short, a placeholder, a reference (``os.environ[...]``),
    already redacted, or the name itself in any case and separators (the variable of the same
    name passed on, ``password=password``; a schema's name, ``CHALLENGE_PASSWORD: "challengePassword"``,
    ``API_KEY = "api-key"``), or its last words as a label (``A challenge password``)."""
    v = value.strip()
    return (len(v) < _MIN_VALUE or bool(_PLACEHOLDER.match(v)) or bool(_REFERENCE.match(v))
            or v.startswith("[REDACTED:") or _bare(v.rsplit(".", 1)[-1]) == _bare(name.strip("\"'").rsplit(".", 1)[-1])
            or (" " in v and _label(v, name)) or (v[0] == "&" and bool(_ESCAPED_PLACEHOLDER.match(v)))
            or (bool(_SCHEME.fullmatch(v)) and bool(_TOKEN_NAME.search(name)))
            or (name.strip("\"'").lower() == "passwd" and all(_NSS_SOURCE.fullmatch(w) for w in v.split())))


def _label(phrase: str, name: str) -> bool:
    """Whether ``phrase`` (several words) is the name's own last words, maybe after an article: a
    prompt or label naming the field (OpenSSL's ``challengePassword = A challenge password``,
    ``db_password: the password``)."""
    words = _ARTICLE.sub("", phrase).lower().split()
    if not (1 <= len(words) < len(phrase.split()) or len(words) >= 2):
        return False
    own = [w.lower() for w in _NAME_WORDS.findall(name)]
    return all(w.isalpha() for w in words) and len(words) <= len(own) and own[-len(words):] == words


def _bare(name: str) -> str:
    """``name`` without case nor ``_``/``-`` (``CHALLENGE_PASSWORD``, ``challengePassword``: ``challengepassword``)."""
    return name.replace("_", "").replace("-", "").lower()


def weak(value: str, name: str, quoted: bool = False) -> bool:
    """Whether ``value`` is too weak a value for a camelCase or bare name (``refreshToken``,
    ``token``): code's names far more often than config's (an unquoted camelCase value,
    ``accessToken``, is a variable)."""
    if _BARE_NAME.fullmatch(name):
        return not (_KEY_SHAPED.fullmatch(value) and looks_generated(value))
    if _BARE_PW.fullmatch(name):
        return not looks_generated(value) or bool(_PATH.match(value))
    if generic_key(name):  # a dictionary key or a setting: identifier words, a fingerprint
        return identifier_words(value) or bool(_FINGERPRINT.fullmatch(value))
    return (not _UPPER_NAME.search(name) and name.strip("\"'") != "_auth"
            and (not looks_generated(value) or (not quoted and bool(_CAMEL_IDENT.fullmatch(value)))))


def generic_key(name: str) -> bool:
    """Whether ``name`` is a generic ``_KEY`` name (``SORT_KEY``; not ``API_KEY``, ``aws_secret_key``)."""
    return bool(_GENERIC_KEY.search(name)) and not _SECRET_KEY_NAME.search(name)


def bare_pw(name: str) -> bool:
    """Whether ``name`` is ``pw``/``pwd`` whole (the working directory more often than a password)."""
    return bool(_BARE_PW.fullmatch(name))


def identifier_words(value: str) -> bool:
    """Whether ``value`` is made of identifier words (``users``, ``_hypothesis_stats``,
    ``io.modelcontextprotocol/protocolVersion``, ``user:{id}``, ``meta schema $id``): a name, not
    a secret; not when it says secret (``my-secret-key``) or holds a random word (``Xk29dLmQ``,
    ``bPxRfiCY``, ``d41d8cd98f00``)."""
    if len(value) > _MAX_WORDS or _SAYS_SECRET.search(value):
        return False
    for word in _WORD_SEPARATORS.split(value):
        if not word:
            continue
        if not _WORD.fullmatch(word):
            return False
        letters = word.strip("$#@0123456789")
        if len(_HUMPS.findall(letters)) > max(1, len(letters) // 3):
            return False
    return True


def pin(value: str, name: str) -> bool:
    """Whether the unquoted ``value`` is a plain decimal after a password's name (``PIN=1234``):
    a password, not a constant."""
    return value.isdigit() and bool(_PASSWORD_NAME.search(name))


def trim_closers(value: str, also: str = "") -> str:
    """An unquoted value less what closes the syntax around it: trailing ``,`` ``;`` (and ``also``),
    brackets it never opened and quotes it never opened (``str,`` → ``str``, ``x")`` → ``x``,
    ``Optional[str]`` stays), and the ``:`` after such a bracket (a signature's end: ``None):``)."""
    while value and (value[-1] in ",;)]}\"'`" + also or _HEADER_END.search(value)):
        c = value[-1]
        if c == ":":
            value = value[:-1]
            continue
        if c in _CLOSE and value.count(_OPEN[_CLOSE.index(c)]) >= value.count(c):
            break
        if c in _QUOTES and value.count(c) % 2 == 0:
            break
        value = value[:-1]
    return value
