"""Credentials in HTTP headers, cookies and command lines (used by ``secrets.redact``).

Only the value goes; the header or flag name (and a user name) stays, so the text still reads:
``-H 'Authorization: Bearer [REDACTED:auth_header]'``, ``curl -u deploy:[REDACTED:cli_password]``.

- **Headers** (any case, wherever they occur: ``-H "..."``, ``--header=...``, httpie
  ``Authorization:'Bearer x'``, JSON/YAML/dict ``"Authorization": "Bearer x"``, a raw dump
  ``> Authorization: ...``): ``Authorization`` and ``Proxy-Authorization`` (``<scheme> <credential>``
  or a bare credential; an auth-param list — ``Digest username="x", response="..."``, AWS
  ``Credential=...`` — goes whole to the end of the header if a value in it looks generated
  (``OAuth realm="Example",`` holds none); kind ``basic_auth`` for ``Basic``, else ``auth_header``), and ``X-API-Key``, ``Api-Key``, ``X-Auth-Token``, ``X-Access-Token``,
  ``Private-Token``, ``X-...-Token``/``-Key``/``-Secret`` (kind ``auth_header``). A credential is
  token-shaped (``[A-Za-z0-9._~+/=-]``, 8+ characters) and looks random: a digit, mixed case, ``+/=``
  or 32+ characters, and not an identifier (``accessToken``, ``API_TOKEN``, ``settings.api_key``).
- **Cookies** (``Cookie:``, ``Set-Cookie:``, curl ``-b``/``--cookie``): the values of cookies whose
  name holds ``sess``, ``token``, ``auth``, ``sid`` or ``jwt``; the other cookies stay (kind ``cookie``).
- **Command lines** (kind ``cli_password``): ``curl -u/--user/--proxy-user user:pass`` (the user stays;
  ``-u user`` or ``-u :`` hold none), httpie ``-a/--auth user:pass``, ``--creds user:pass`` (skopeo),
  ``--password``/``--passwd``/``--token``/``--api-key``/``--access-token``/``--account-key``/``--oauth2-bearer``... followed
  by ``=`` or a space (any command; ``--password=`` is usually taken first by the assignment rule),
  ``-pPASS`` for ``mysql``/``mysqldump``/``mariadb``..., ``-p PASS`` for ``sshpass`` and ``docker``/
  ``podman``/``helm``/``az``... ``login``, and the password of ``htpasswd -b [file] user pass``.

Left alone: placeholders and references (``$TOKEN``, ``${TOKEN}``, ``<token>``, f-string ``{token}``,
``%s``, ``xxxx``), a dict whose quoted header name is followed by an unquoted value (a variable:
``{"Authorization": token}``), code assignments to a variable named ``authorization``, prose
(``the Authorization header``), ``-u``/``-p`` of any other command (``sort -u``, ``docker run -p``,
``ls -p``), a spaced flag value that does not look generated (``--token TOKEN``, ``--password when``,
``--token flags,``: a digit, mixed case, ``+/=`` or 32+ characters make one), an unquoted argument's
trailing ``,`` ``;`` or unopened ``)`` (``mysql -pPASS,`` in prose; ``-pX;`` ends a shell command),
``pass``/``passwd``/``pwd`` (``curl -u user:pass``) and ``htpasswd`` followed by no flag (``htpasswd -b)``). URL passwords (``postgresql://u:p@h``,
``https://user:token@host``) are the URL rule's, in ``secrets``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from .secret_providers import PLACEHOLDER_WORDS

Span = tuple[int, int, str]  # (start, end, kind) of a value to redact

_MIN_CREDENTIAL = 8  # a header credential
_MIN_PASSWORD = 4  # a command-line password (``-u admin:admin`` is one)
# how far a header value or a command is looked at: a minified file is one long line, and a value
# or command scanned to its end from each of many names would cost the square of its length
_MAX_VALUE = 1024
_MAX_COMMAND = 16384

_AUTH = r"(?:Proxy-)?Authorization"
_KEYS = (r"(?:[A-Za-z0-9]+-)*(?:Api-?Key|Auth-?Token|Access-?Token|Session-?Token|Security-?Token|Subscription-Key"
         r"|Private-Token|Job-Token|Deploy-Token)|X-(?:[A-Za-z0-9]+-)*(?:Key|Token|Secret)")
# every header name ends with one of these: the text is scanned for them (``str.find``, fast), and
# the patterns are matched only where one is followed by a separator
_HEADER_ENDS = ("authorization", "key", "token", "secret")
_AFTER_HEADER = re.compile(r"""(?:\\?["'])?\]?[ \t]*[:=]""")
_AFTER_COOKIE = re.compile(r"""["']?[ \t]*:""")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
# a header name, maybe quoted (a JSON/dict key, or ``-H "Authorization: ...``; JSON in a string:
# ``\"Authorization\": \"...\"``), then ``:`` or ``=``, then maybe a quote
_HEADER = re.compile(rf"""(?P<oq>["'`]?)(?:(?<![\w-])|(?<=\\[nrt]))(?P<name>(?P<auth>{_AUTH})|{_KEYS})(?P<nq>(?:\\?["'])?\]?)"""
                     r"""(?P<sep>[ \t]*[:=][ \t]*)(?P<vq>(?:\\?["'`])?)""", re.IGNORECASE)
_TOKEN = r"[A-Za-z0-9._~+/=-]+"
# an auth-param list (``Digest username="x", ...``, ``AWS4-HMAC-SHA256 Credential=...``), not a
# base64 credential's ``=`` padding; a space may be escaped (``--header=Authorization:Bearer\ x``)
_PARAMS = re.compile(r"(?P<scheme>[A-Za-z][\w-]*)\\?[ \t]+[A-Za-z_][\w-]*=(?=[\"\w])")
_PARAM_VALUE, _GENERATED = re.compile(r"""[\w-]+=\\?["']?([^"'\s,\\]*)"""), re.compile(r"[0-9+/=%]")
_SCHEMED = re.compile(rf"(?P<scheme>[A-Za-z][\w-]*)\\?[ \t]+(?P<cred>{_TOKEN})(?=[\s,;)}}\]\\]|$)")
_BARE = re.compile(rf"(?P<cred>{_TOKEN})(?=[\s,;)}}\]\\]|$)")  # ``\\``: an escape (``abc\r\nHost: x``)
_SPACE = re.compile(r"\s")
_COOKIE = re.compile(r"""(?P<oq>["'`]?)(?<![\w-])(?:Set-)?Cookie(?P<nq>["']?)[ \t]*:[ \t]*(?P<vq>["'`]?)""", re.IGNORECASE)
_COOKIE_FLAG = re.compile(r"""(?<=\s)(?:-b|--cookie)(?:[ \t]+|=)(?P<vq>["'`]?)""")
_PAIR = re.compile(r"""(?P<name>[^\s=;,"']+)=(?P<value>[^;,\s"'\\]*)""")
_SESSION = re.compile(r"sess|token|auth|sid|jwt", re.IGNORECASE)
# ``--password x``, ``--token=x``: any command; ``--no-password`` and ``--password-stdin`` name none
_LONG = re.compile(r"--(?P<flag>(?:[A-Za-z0-9]+-)*(?:password|passwd|passphrase|token|api-?key|access-?key"
                   r"|secret-?key|account-?key|client-secret|oauth2-bearer))(?![\w-])(?P<sep>=|[ \t]+)", re.IGNORECASE)
_CREDS = re.compile(r"--(?:[a-z]+-)*creds(?:=|[ \t]+)")
_COMMANDS = ("curl", "http", "mysql", "mariadb", "sshpass", "htpasswd", "docker", "podman", "nerdctl", "buildah", "helm",
             "oras", "crane", "regctl", "az")
_COMMAND = re.compile(r"(?<![\w.-])(?:[\w.~/-]*/)?(?P<cmd>curl|https?|mysql(?:dump|admin|import|show|check|slap)?"
                      r"|mariadb(?:-?[a-z]+)?|sshpass|htpasswd|docker|podman|nerdctl|buildah|helm|oras|crane|regctl|az)"
                      r"(?=[ \t])")
_SEGMENT_STOP = re.compile(r"""[\n;|&"']""")
_PATH_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.~/-")
_CURL_USER = re.compile(r"(?<!\S)(?:-[sSfLkvIiGgNjJOqRZ]*[uU]|--user|--proxy-user)(?:=|[ \t]*)(?=\S)")
_HTTPIE_AUTH = re.compile(r"(?<!\S)(?:-a|--auth)(?:=|[ \t]+)")
_HTTPIE_BEARER = re.compile(r"(?<!\S)(?:-A|--auth-type)(?:=|[ \t]+)(?:bearer|jwt)\b", re.IGNORECASE)
_SHORT_P = re.compile(r"(?<!\S)-p")
_LOGIN = re.compile(r"[ \t]+(?:[a-z-]+[ \t]+)?login(?=[ \t])")  # docker login, helm registry login
_ARG = re.compile(r"""(?P<q>["'])(?P<quoted>[^\n]*?)(?:(?P=q)|$)|(?P<plain>[^\s"']+)""", re.MULTILINE)

# values that are no credential: placeholders, references, filler
_PLACEHOLDER = re.compile(rf"^(?:\$\S*|%\w*|\{{.*|<.*|\[REDACTED:.*|\.\.\.+|[xX*.#]+|(.)\1*|{PLACEHOLDER_WORDS})$",
                          re.IGNORECASE)
# names, not values: ``accessToken``, ``AuthHeader``, ``API_TOKEN``, ``api_key``, ``TOKEN``, ``settings.api_key``
_WORD = r"(?:[a-z]{2,}[0-9]*(?:[A-Z][a-z]{2,}[0-9]*)+|(?:[A-Z][a-z]{2,}[0-9]*){2,}|[A-Za-z]+[0-9]*(?:_[A-Za-z]+[0-9]*)+|[A-Z]+[0-9]*)"
_IDENT = re.compile(rf"{_WORD}|(?:{_WORD}|[a-z_]+)(?:\.(?:{_WORD}|[a-z_]+))+")
# a spaced flag's value that is a usage text's metavar or a word of prose: ``--token TOKEN``,
# ``--api-key api_key``, ``pass --password when asked``
_METAVAR = re.compile(r"[A-Z][A-Z0-9_-]*|[a-z]+(?:[_-][a-z]+)+|[a-z]{1,7}")


def _random(v: str) -> bool:
    """Whether ``v`` reads as a generated value: a digit, ``+/=``, mixed case or 32+ characters."""
    return (bool(re.search(r"[0-9+/=]", v)) or (v.lower() != v and v.upper() != v) or len(v) >= 32) \
        and not _IDENT.fullmatch(v)


def looks_generated(v: str) -> bool:
    """Whether ``v`` is one word that reads as a generated value (``secrets`` asks it of a
    camelCase name's value: ``refreshToken: tokens.refresh``, ``'Unexpected token'`` stay)."""
    return bool(v) and not _SPACE.search(v) and _random(v)


def _credential(v: str) -> bool:
    return len(v) >= _MIN_CREDENTIAL and not _PLACEHOLDER.match(v) and _random(v)


def _password(v: str, *, spaced: bool = False) -> bool:
    """A password on a command line; ``spaced``: an unquoted ``--flag value``, where prose and
    usage texts (``--token TOKEN``, ``pass --password when asked``, ``--token flags,``) put words
    too: it must look generated (``_random``: a digit, ``+/=``, mixed case or 32+ characters)."""
    v = v.strip()
    if len(v) < _MIN_PASSWORD or _PLACEHOLDER.match(v) or v.startswith("-"):
        return False
    return not spaced or (not _METAVAR.fullmatch(v) and _random(v))


def _region_end(text: str, start: int, closer: str, *, word: bool = False) -> int:
    """The end of a value starting at ``start``: its closing quote (``closer``: unescaped, or
    ``\\"`` itself), else the end of the line (``word``: the next whitespace)."""
    limit = min(len(text), start + _MAX_VALUE)
    line_end = text.find("\n", start, limit)
    line_end = limit if line_end < 0 else line_end
    if closer:
        i = start
        while (i := text.find(closer, i, line_end)) >= 0:
            if len(closer) > 1 or text[i - 1] != "\\":
                return i
            i += 1
        return line_end
    if word:
        m = _SPACE.search(text, start, line_end)
        return m.start() if m else line_end
    return line_end


def _starts(text: str, low: str, ends: tuple[str, ...], after: re.Pattern[str]) -> list[int]:
    """Where a name ending with one of ``ends`` (any case) and followed by ``after`` begins (on
    its opening quote, if any)."""
    out: set[int] = set()
    for word in ends:
        i = low.find(word)
        while i >= 0:
            j = i + len(word)
            if after.match(text, j):
                k = i
                while k and text[k - 1] in _NAME_CHARS:
                    k -= 1
                if k and text[k - 1] == "\\" and text[k] in "nrt":  # a line of a string: ``\r\nAuthorization:``
                    k += 1
                out.add(k - 1 if k and text[k - 1] in "\"'`" else k)
            i = low.find(word, j)
    return sorted(out)


def _headers(text: str, low: str) -> Iterator[Span]:
    for s in _starts(text, low, _HEADER_ENDS, _AFTER_HEADER):
        if (m := _HEADER.match(text, s)) is None:
            continue
        oq, nq, vq, sep = m.group("oq"), m.group("nq"), m.group("vq"), m.group("sep")
        if nq.strip("]") and not vq:
            continue  # {"Authorization": token}: a variable
        spaced_eq = "=" in sep and sep != "="
        if spaced_eq and not vq:
            continue  # authorization = compute(...): code
        closer = vq or (oq if oq and not nq else "")
        start = m.end()
        end = _region_end(text, start, closer)
        region = text[start:end]
        auth = m.group("auth") is not None
        if auth and (p := _PARAMS.match(region)):
            value = region[p.end("scheme"):].strip()
            # a credential when a value in it is 8+ characters with a digit or ``+/=%``, or 32+
            # (``response="6629fae4..."``; not ``realm="Example"``, ``profile="UsernameToken"``)
            if len(value) >= _MIN_CREDENTIAL and "{" not in value and "$" not in value and any(
                    len(v) >= _MIN_CREDENTIAL and (len(v) >= 32 or _GENERATED.search(v)) for v in _PARAM_VALUE.findall(value)):
                at = start + region.index(value, p.end("scheme"))
                yield at, at + len(value), "auth_header"
            continue
        if auth and (sm := _SCHEMED.match(region)):
            cred = sm.group("cred").rstrip(".")
            if _credential(cred):
                kind = "basic_auth" if sm.group("scheme").lower() == "basic" else "auth_header"
                yield start + sm.start("cred"), start + sm.start("cred") + len(cred), kind
            continue
        b = _BARE.match(region)
        if b is None or (auth and spaced_eq):
            continue
        rest = region[b.end():]
        # a bare credential ends its header (``X-Api-Key: abc123``, ``{Authorization: abc123, ...}``),
        # or its argument when the header is written tight (``X-Api-Key:abc123 https://...``); a
        # first word of several is none (``Authorization: Negotiate $X``)
        if rest.strip() and rest.lstrip()[0] not in ",;)}]\\" and sep != sep.strip():
            continue
        cred = b.group("cred").rstrip(".")
        if _credential(cred):
            yield start + b.start("cred"), start + b.start("cred") + len(cred), "auth_header"


def _cookies(text: str, low: str) -> Iterator[Span]:
    found: list[tuple[re.Match[str], bool]] = []
    for s in _starts(text, low, ("cookie",), _AFTER_COOKIE):
        if (m := _COOKIE.match(text, s)) is not None and not (m.group("nq") and not m.group("vq")):
            found.append((m, False))
    for name in ("-b", "--cookie"):
        i = text.find(name)
        while i >= 0:
            if (m := _COOKIE_FLAG.match(text, i)) is not None:
                found.append((m, True))
            i = text.find(name, i + len(name))
    done = 0
    for m, flag in sorted(found, key=lambda f: f[0].start()):
        if m.start() < done:
            continue  # inside the value of the cookie header before (``Cookie: a=b; Cookie: ...``)
        oq = "" if flag else m.group("oq")
        closer = m.group("vq") or (oq if oq and not m.group("nq") else "")
        start = m.end()
        end = done = _region_end(text, start, closer, word=flag and not closer)
        for p in _PAIR.finditer(text, start, end):
            if p.start() != start and text[p.start() - 1] not in "; \t":  # a pair begins the value or follows ``;``
                continue
            value = p.group("value")
            if _SESSION.search(p.group("name")) and _password(value):
                yield p.start("value"), p.end("value"), "cookie"


def _arg(text: str, pos: int, end: int) -> tuple[int, int] | None:
    """The argument at ``pos`` (its content, without the quotes); an unquoted one less the
    punctuation of the prose or shell around it (``-pPASS,`` ``user:pass;`` ``(curl -u a:b)``)."""
    a = _ARG.match(text, pos, end)
    if not a:
        return None
    if a.group("q"):
        return a.start("quoted"), a.end("quoted")
    start, stop = a.start("plain"), a.end("plain")
    while stop > start and (text[stop - 1] in ",;" or (text[stop - 1] == ")" and "(" not in text[start:stop])):
        stop -= 1
    return start, stop


def _segment_end(text: str, start: int) -> int:
    """Where the shell command starting at ``start`` ends: a newline, or ``;``, ``|``, ``&``
    outside quotes."""
    limit = min(len(text), start + _MAX_COMMAND)
    pos = start
    while (m := _SEGMENT_STOP.search(text, pos, limit)) is not None:
        if m.group() not in "\"'":
            return m.start()
        close = text.find(m.group(), m.end(), limit)
        line_end = text.find("\n", m.end(), limit)
        if close < 0 or 0 <= line_end < close:
            return limit if line_end < 0 else line_end
        pos = close + 1
    return limit


def _user_pass(text: str, a: tuple[int, int] | None) -> Iterator[Span]:
    """The password of a ``user:pass`` argument."""
    if a is None:
        return
    colon = text.find(":", a[0], a[1])
    if colon >= 0 and _password(text[colon + 1:a[1]]):
        yield colon + 1, a[1], "cli_password"


def _command_starts(text: str) -> list[re.Match[str]]:
    """The command words of ``text`` (``curl``, ``/usr/bin/mysql``...), in order."""
    found: dict[int, re.Match[str]] = {}
    tried: set[int] = set()
    for word in _COMMANDS:
        i, last_i, last_k = text.find(word), -1, 0
        while i >= 0:
            k = i
            while k and text[k - 1] in _PATH_CHARS:
                k -= 1
                if k == last_i:  # the run of the word before: its start is known (one walk per run)
                    k = last_k
                    break
            if k not in tried:
                tried.add(k)
                if (m := _COMMAND.match(text, k)) is not None:
                    found[k] = m
            last_i, last_k = i, k
            i = text.find(word, i + len(word))
    return [found[k] for k in sorted(found)]


def _commands(text: str) -> Iterator[Span]:
    starts = _command_starts(text)
    done = 0  # the end of the shell command being read
    for n, m in enumerate(starts):
        cmd, start = m.group("cmd"), m.end()
        if start > done:
            done = _segment_end(text, start)
        # up to the next command word in it, if any (``docker exec db mysql -pX``: mysql's own)
        end = min(done, starts[n + 1].start()) if n + 1 < len(starts) else done
        if cmd == "curl":
            for f in _CURL_USER.finditer(text, start, end):
                yield from _user_pass(text, _arg(text, f.end(), end))
        elif cmd in ("http", "https"):
            bearer = _HTTPIE_BEARER.search(text, start, end) is not None
            for f in _HTTPIE_AUTH.finditer(text, start, end):
                a = _arg(text, f.end(), end)
                if a and bearer and _password(text[a[0]:a[1]]):
                    yield a[0], a[1], "cli_password"
                elif not bearer:
                    yield from _user_pass(text, a)
        elif cmd.startswith(("mysql", "mariadb")):
            for f in _SHORT_P.finditer(text, start, end):  # -pPASS only: ``-p db`` prompts
                if f.end() < end and not text[f.end()].isspace():
                    a = _arg(text, f.end(), end)
                    if a and _password(text[a[0]:a[1]]):
                        yield a[0], a[1], "cli_password"
        elif cmd == "sshpass" or (cmd != "htpasswd" and _LOGIN.match(text, start, end)):
            for f in _SHORT_P.finditer(text, start, end):  # -p PASS or -pPASS
                pos = f.end()
                while pos < end and text[pos] in " \t":
                    pos += 1
                a = _arg(text, pos, end)
                if a and _password(text[a[0]:a[1]]):
                    yield a[0], a[1], "cli_password"
        elif cmd == "htpasswd":
            yield from _htpasswd(text, start, end)


def _htpasswd(text: str, start: int, end: int) -> Iterator[Span]:
    """``htpasswd -b[c] file user pass`` / ``htpasswd -nb user pass``: the last one."""
    flags: list[str] = []
    args: list[tuple[int, int]] = []
    pos = start
    while (a := _ARG.search(text, pos, end)) is not None:
        span = (a.start("quoted"), a.end("quoted")) if a.group("q") else (a.start("plain"), a.end("plain"))
        word = text[span[0]:span[1]]
        if not args and word.startswith("-") and not a.group("q"):
            if not re.fullmatch(r"-[A-Za-z]+", word):
                return  # ``htpasswd -b) are ...``: prose, not a command line
            flags.append(word)
        else:
            args.append(span)
        pos = a.end()
    if not any("b" in f[1:] for f in flags):
        return
    need = 2 if any("n" in f[1:] for f in flags) else 3
    if len(args) >= need and _password(text[args[need - 1][0]:args[need - 1][1]]):
        yield args[need - 1][0], args[need - 1][1], "cli_password"


def _long_flags(text: str) -> Iterator[Span]:
    for m in _LONG.finditer(text):  # (a lookbehind first would make the scan slow: checked here)
        if m.group("flag").lower().startswith("no-") or (m.start() and text[m.start() - 1] in _NAME_CHARS):
            continue
        a = _arg(text, m.end(), len(text))
        if a is None:
            continue
        quoted = a[0] != m.end()
        if _password(text[a[0]:a[1]], spaced=m.group("sep") != "=" and not quoted):
            yield a[0], a[1], "cli_password"
    for m in _CREDS.finditer(text):
        if m.start() and text[m.start() - 1] in _NAME_CHARS:
            continue
        yield from _user_pass(text, _arg(text, m.end(), len(text)))


def redact_credentials(text: str, hide: Callable[[str, str], str]) -> str:
    """``text`` with the credentials of headers, cookies and command lines replaced by
    ``hide(kind, value)`` (which counts them); overlapping finds: the first one."""
    low = text.lower()
    if len(low) != len(text):  # a few characters lower to two (``İ``): keep the offsets
        low = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    spans: list[Span] = [*_headers(text, low), *_cookies(text, low), *_commands(text)]
    if "--" in text:
        spans += _long_flags(text)
    return replace_spans(text, spans, hide)


def replace_spans(text: str, spans: list[Span], hide: Callable[[str, str], str]) -> str:
    """``text`` with each ``(start, end, kind)`` span replaced by ``hide(kind, value)``, in order;
    a span overlapping one before it is skipped (the first find wins)."""
    if not spans:
        return text
    out: list[str] = []
    pos = 0
    for start, end, kind in sorted(spans):
        if start < pos or start >= end:
            continue
        out.append(text[pos:start])
        out.append(hide(kind, text[start:end]))
        pos = end
    out.append(text[pos:])
    return "".join(out)
