"""Credentials in connection strings, URL query strings, XML config and a few command lines
(used by ``secrets.redact``, before its assignment rule).

Only the value goes; its name, flag or tag stays, so the text still reads:
``AccountKey=[REDACTED:connection_string];EndpointSuffix=...``, ``?sig=[REDACTED:url_query]&se=...``,
``<password>[REDACTED:xml_secret]</password>``, ``-passin pass:[REDACTED:cli_password]``.

- **Connection strings** (kind ``connection_string``, any case): Azure ``AccountKey=``,
  ``SharedAccessKey=`` and ``SharedAccessSignature=`` (a SAS, whole), the value up to the next
  ``;``, whitespace or quote.
- **URL query strings** (kind ``url_query``): after ``?``, ``&`` or ``&amp;``, the parameters
  ``token``, ``api-key``, ``sig``/``signature`` (Azure SAS, S3 presigned URLs), ``X-Amz-Signature``,
  ``X-Amz-Credential``, ``X-Amz-Security-Token``, ``X-Goog-Signature``, ``X-Goog-Credential`` (any
  case), and ``secret``, ``client_secret``, ``pwd``, ``passwd``; the value up to ``&``, ``#``, whitespace, a quote or a bracket, less a trailing ``.`` or
  ``,``. It must look generated (6+ characters; a digit, mixed case, ``+/=`` or 32+ characters;
  not an identifier): ``?token={token}``, ``&sig=%s``, ``?token=TOKEN`` stay. (``?access_token=``,
  ``&api_key=``, ``&client_secret=``, ``&password=`` are names of the assignment rule of
  ``secrets``, which takes their value up to the next whitespace.)
- **XML** (kind ``xml_secret``): an element on one line whose tag ends with ``password``,
  ``passwd`` or ``passphrase`` (Maven ``settings.xml``'s ``<password>...</password>``; any value
  of 4+ characters), or with ``secret``, ``token``, ``apiKey``/``api_key``, ``accessKey``,
  ``secretKey`` (a value that looks generated); NuGet/.NET ``<add key="ClearTextPassword"
  value="..."/>`` and any ``<add key="...">`` whose key names a secret the same way; any element
  with a ``name=``/``key=`` attribute naming one, its value in ``value="..."`` (Spring, Ant:
  ``<property name="password" value="..."/>``) or its text (``<property
  name="hibernate.connection.password">x</property>``, ``<entry key="db.password">x</entry>``).
- **PuTTY keys** (kind ``private_key``): the base64 lines after ``Private-Lines: N`` (the public
  lines, comment and MAC stay).
- **Command lines** (kind ``cli_password``): ``aws configure set aws_secret_access_key VALUE``
  (and ``aws_session_token``), OpenSSL ``-passin``/``-passout``/``-pass``/``-password pass:SECRET``
  (``env:VAR``, ``file:path``, ``fd:N``, ``stdin`` name no secret), Java ``keytool``
  ``-storepass``/``-keypass``/``-srcstorepass``/``-deststorepass`` ``VALUE``, Samba
  ``-U``/``--user`` ``user%pass`` (``smbclient``, ``rpcclient``, ``smbcacls``...; the user stays),
  ``openssl enc -k SECRET`` (``-kfile`` names a file), Windows ``net use [X:] \\\\host\\share PASS
  /user:u`` or ``... /user:u PASS`` (``*`` prompts).

Left alone: placeholders and references (``$VAR``, ``${VAR}``, ``%s``, NuGet/MSBuild ``%VAR%``, ``{x}``, ``<key>``,
``xxxx``, ``****``, ``...``, the words of ``secret_providers.PLACEHOLDER_WORDS``: ``pass``, ``password``,
``changeme``/``changeit``, ``your-password``...; before a sentence's ``,`` or ``.`` too: ``-U user%pass,``),
and values under 4 characters. Every
pattern is anchored on a fixed name and its value is a run of characters that cannot hold the
next name's start, so the scan is linear on any line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from .secret_headers import Span, looks_generated, replace_spans
from .secret_providers import PLACEHOLDER_WORDS

_MIN = 4
_MIN_QUERY = 6
_PLACEHOLDER = re.compile(rf"(?:\$\S*|%\w*%?|\{{\{{.*|\{{[\w.-]*\}}|<.*|\[REDACTED:.*|\.\.\.+|[xX*.#]+|(.)\1*"
                          rf"|{PLACEHOLDER_WORDS})", re.IGNORECASE)

_CONNECTION = re.compile(r"(?<![\w-])(?:AccountKey|SharedAccessKey|SharedAccessSignature)=(?P<v>[^;\s\"'<>]+)",
                         re.IGNORECASE)
_QUERY = re.compile(
    r"(?:[?&]|&amp;)(?:token|api-key|sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token"
    r"|x-goog-signature|x-goog-credential|secret|client_secret|client-secret|pwd|passwd)"
    r"=(?P<v>[^&#\s\"'<>()\[\]{}\\;]+)", re.IGNORECASE)
# ``<password>x</password>``: the tag is checked in Python (a run of name characters, then ``>``)
_ELEMENT = re.compile(r"<(?P<tag>[\w.:-]+)>(?P<v>[^<\n]*)</(?P=tag)>")
_ADD = re.compile(r"""<add[ \t]+key=(?P<q>["'])(?P<name>[\w.:-]+)(?P=q)[ \t]+value=(?P<vq>["'])(?P<v>[^"'\n]*)(?P=vq)""",
                  re.IGNORECASE)
# ``<property name="password" value="..."/>`` (Spring, Hibernate, Ant), ``<param name=... value=...>``
_NAMED_VALUE = re.compile(r"""<[\w.:-]+[ \t]+(?:name|key)=(?P<q>["'])(?P<name>[\w.:-]+)(?P=q)[ \t]+value="""
                          r"""(?P<vq>["'])(?P<v>[^"'\n]*)(?P=vq)""")
# ``<property name="hibernate.connection.password">x</property>``, ``<entry key="db.password">x</entry>``
_NAMED_ELEMENT = re.compile(r"""<(?P<tag>[\w.:-]+)[ \t]+(?:name|key)=(?P<q>["'])(?P<name>[\w.:-]+)(?P=q)[ \t]*>"""
                            r"""(?P<v>[^<\n]*)</(?P=tag)>""")
_PASSWORD_NAME = re.compile(r"(?:password|passwd|passphrase)$", re.IGNORECASE)
# a PuTTY key file (``PuTTY-User-Key-File-3: ...``): the base64 lines after ``Private-Lines: N``
_PPK = re.compile(r"^Private-Lines:[ \t]*[0-9]+[ \t]*\r?\n"
                  r"(?P<v>[A-Za-z0-9+/=]+[ \t]*(?=\r?$)(?:\r?\n[A-Za-z0-9+/=]+[ \t]*(?=\r?$))*)", re.MULTILINE)
_SECRET_NAME = re.compile(r"(?:secret|token|api_?key|access_?key|secret_?key|accountkey|sharedaccesskey)$",
                          re.IGNORECASE)

_ARG = r"""(?:(?P<q>["'])(?P<qv>[^"'\n]*)(?P=q)|(?P<v>[^\s"';|&]+))"""
_AWS = re.compile(r"(?<![\w-])configure[ \t]+set[ \t]+(?:[\w-]+\.){0,3}(?:aws_secret_access_key|aws_session_token"
                  r"|aws_security_token)[ \t]+" + _ARG)
_OPENSSL = re.compile(r"""(?<!\S)-(?:passin|passout|pass|password|kpass)[ \t]+(?P<q>["'])?pass:"""
                      r"""(?P<v>(?(q)[^"'\n]*|[^\s"';|&]*))""")
_KEYTOOL = re.compile(r"(?<!\S)-(?:src|dest|new)?(?:storepass|keypass)[ \t]+" + _ARG)
# ``openssl enc -k SECRET`` (the passphrase itself; ``-kfile`` names a file)
_OPENSSL_K = re.compile(r"(?<![\w-])openssl[ \t]+(?:enc|aes[\w-]*|des[\w-]*|bf[\w-]*|camellia[\w-]*|chacha20)\b"
                        r"[^\n;|&]{0,512}?[ \t]-k[ \t]+" + _ARG)
# Windows ``net use [X:] \\host\share PASSWORD /user:dom\u`` or ``... /user:dom\u PASSWORD``
_NET_USE = re.compile(r"(?<![\w-])net[ \t]+use\b[^\n;|&]{0,512}?(?:[ \t]/user:[^\s/]+|[ \t]\\\\[^\s/]+)[ \t]+"
                      r"(?P<v>[^\s/*\"'][^\s\"']*)", re.IGNORECASE)
_SMB = re.compile(r"""(?<!\S)(?:-U|--user(?:name)?)(?:=|[ \t]*)(?P<q>["'])?[^\s%"']+%"""
                  r"""(?P<v>(?(q)[^"'\n]*|[^\s"';|&]*))""")


def _keep(v: str, minimum: int = _MIN) -> bool:
    """A value too short, or a placeholder, maybe before the punctuation of a sentence
    (``smbclient -U user%pass, keytool``)."""
    return len(v) < minimum or bool(_PLACEHOLDER.fullmatch(v) or _PLACEHOLDER.fullmatch(v.rstrip(".,;:)")))


def _value(m: re.Match[str]) -> tuple[int, int]:
    """The span of the ``v`` group, or of ``qv`` (a quoted argument's content)."""
    g = "qv" if "qv" in m.re.groupindex and m.group("qv") is not None else "v"
    return m.start(g), m.end(g)


def _spans(text: str) -> Iterator[Span]:
    low = text.lower()
    if "Private-Lines:" in text:
        for m in _PPK.finditer(text):
            yield m.start("v"), m.end("v"), "private_key"
    if "accountkey" in low or "sharedaccess" in low:
        for m in _CONNECTION.finditer(text):
            if not _keep(m.group("v")):
                yield m.start("v"), m.end("v"), "connection_string"
    if "=" in text and ("?" in text or "&" in text):
        for m in _QUERY.finditer(text):
            v = m.group("v").rstrip(".,")
            if not _keep(v, _MIN_QUERY) and looks_generated(v):
                yield m.start("v"), m.start("v") + len(v), "url_query"
    if "</" in text:
        for m in _ELEMENT.finditer(text):
            yield from _named(m, m.group("tag").rsplit(":", 1)[-1], "xml_secret")
    if "<add" in low:
        for m in _ADD.finditer(text):
            yield from _named(m, m.group("name"), "xml_secret")
    if "name=" in text or "key=" in text:
        for pat in (_NAMED_VALUE, _NAMED_ELEMENT):
            for m in pat.finditer(text):
                yield from _named(m, m.group("name"), "xml_secret")
    if "configure" in text:
        for m in _AWS.finditer(text):
            if not _keep(text[slice(*_value(m))]):
                yield (*_value(m), "cli_password")
    if "pass:" in text:
        for m in _OPENSSL.finditer(text):
            if not _keep(m.group("v")):
                yield m.start("v"), m.end("v"), "cli_password"
    if "pass" in low:
        for m in _KEYTOOL.finditer(text):
            if not _keep(text[slice(*_value(m))]):
                yield (*_value(m), "cli_password")
    if "openssl" in text:
        for m in _OPENSSL_K.finditer(text):
            if not _keep(text[slice(*_value(m))]):
                yield (*_value(m), "cli_password")
    if "net" in low:
        for m in _NET_USE.finditer(text):
            if not _keep(m.group("v")):
                yield m.start("v"), m.end("v"), "cli_password"
    if "%" in text:
        for m in _SMB.finditer(text):
            if not _keep(m.group("v")):
                yield m.start("v"), m.end("v"), "cli_password"


def _named(m: re.Match[str], name: str, kind: str) -> Iterator[Span]:
    """The ``v`` of ``m`` when ``name`` names a secret: a password's any value, another secret's
    a generated-looking one."""
    v = m.group("v").strip()
    if _keep(v):
        return
    if _PASSWORD_NAME.search(name) or (_SECRET_NAME.search(name) and looks_generated(v)):
        at = m.start("v") + m.group("v").index(v)
        yield at, at + len(v), kind


def redact_formats(text: str, hide: Callable[[str, str], str]) -> str:
    """``text`` with the credentials of connection strings, query strings, XML and the command
    lines above replaced by ``hide(kind, value)``; overlapping finds: the first one."""
    return replace_spans(text, list(_spans(text)), hide)
