"""Provider formats (used by ``secrets.redact``): secrets recognised by their own shape, wherever
they occur — private key blocks, AWS, GitHub, GitLab, OpenAI, Anthropic, Slack, Stripe, Google,
npm, PyPI, Vault, Hugging Face, SendGrid, age, JWTs — and the password of a URL
(``postgresql://u:p@h/db``, ``redis://:pass@h``; not a placeholder: ``user:pass@``,
``<password>``, ``${PASS}``) or of a ``.netrc`` (``machine h login u password X``; not a template's
``password {self.password}``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

REDACTED = "[REDACTED:{kind}]"

# placeholder words, no secret in any rule: a value that is one names the secret instead of
# holding it (``user%pass``, ``USER:PASSWORD``, ``"YOUR_API_KEY"``, ``your-token-here``,
# ``changeme``; ``pass1234``, ``your_key_9f8e7d6c`` are values): an alternation, for patterns
# compiled with ``re.IGNORECASE`` (``secret_names`` takes them lowercase or uppercase only)
PLACEHOLDER_WORDS = (r"pass|passwd|password|passphrase|pwd|secret|token|changeme|changeit|example|dummy|none|null"
                     r"|true|false|your(?:[-_ ]?[a-z]++)++")

# A private key block: its BEGIN line, then what reads as a key's body — else the marker is a
# constant naming it (``_SK_START = b"-----BEGIN OPENSSH PRIVATE KEY-----"``, ``PKCS1_HEADER = "..."``,
# ``s.startswith("-----BEGIN RSA PRIVATE KEY-----")``), code follows, and nothing is redacted. The
# first line of the body (past string syntax and line ends, real or escaped: ``\n" +``, ``",``) is a
# PEM header (``Proc-Type:``, ``Version:``) or a base64 line (4+ characters, then only string syntax
# before its end), maybe after a diff, comment, ``grep -n`` or ``cat -n`` prefix; or it holds a
# random base64 run (32+ characters with a digit, a capital and a small letter: a key flattened
# onto one line, a log prefix). Every part is bounded or possessive: linear on any text.
_B64 = r"A-Za-z0-9+/="
_KEY_SYNTAX = r"""(?:\\[rn]|[\r\n \t"'`+,;()\\])"""  # what may stand between BEGIN and the body
_KEY_PREFIX = r"""(?:[-+>#*/|!]{1,2}[ \t]*|[ \t]*[0-9]+\t|[^\s"':]{1,200}+:(?:[0-9]+:)?)"""
_KEY_LINE = (rf"""(?:[A-Z][A-Za-z0-9]*+(?:-[A-Za-z0-9]+)*+:[ \t]|[{_B64}]{{4,}}+(?:[ \t"'`+,;)]|\\(?![rn]))*+"""
             r"""(?:\\[rn]|\r?\n|\Z|-----END))""")
_KEY_RANDOM = (rf"[^\n]{{0,200}}?(?<![{_B64}])(?=[A-Za-z+/=]*+[0-9])(?=[A-Z0-9+/=]*+[a-z])(?=[a-z0-9+/=]*+[A-Z])"
               rf"[{_B64}]{{32}}")
KEY_BEGIN = (r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
             rf"(?={_KEY_SYNTAX}{{0,100}}+(?:{_KEY_PREFIX}?{_KEY_LINE}|{_KEY_RANDOM}))")

# (kind, pattern). Order matters: specific provider formats first, generic assignment last.
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    # a block without its END line (a truncated paste, ``head`` of a key file) runs to the end
    ("private_key", re.compile(
        KEY_BEGIN + r"(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*\Z)")),
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

# a URL password that is a documentation placeholder: ``https://user:pass@host``, ``[user:passwd@]``,
# ``<password>`` (maybe HTML-escaped), ``${PASS}``, ``%s``, ``****``
_URL_PLACEHOLDER = re.compile(rf"(?:{PLACEHOLDER_WORDS}|pass(?:word)?\]|x+|\*+|\.\.\.|%s|\$\{{?\w+\}}?"
                              r"|\{\w*\}|<[^<>]*>?|&lt;.*?(?:&gt;)?|\\fI.*|\[REDACTED:\w+\])$", re.IGNORECASE)

# a ``.netrc`` line built by a template: ``f"... password {self.password}"``, ``${PASS}``, ``%s``, ``<password>``
# (a ``.netrc`` expands no variable: ``password $ecr3t`` is a password)
_NETRC_TEMPLATE = re.compile(r"""(?:\{[\w.]*\}|\$\{\w+\}|%s|<[^<>\s]*>)["'`]?$""")


def redact_providers(text: str, hide: Callable[[str, str], str]) -> str:
    """``text`` with each provider format replaced by ``hide(kind, value)`` (what a ``keep``
    group matched, a URL's user, stays in front of it)."""

    def sub(kind: str) -> Callable[[re.Match[str]], str]:
        def repl(m: re.Match[str]) -> str:
            keep = m.groupdict().get("keep") or ""
            value = m.group(0)[len(keep):]
            if (kind == "url_password" and _URL_PLACEHOLDER.match(value)) or (
                    kind == "netrc_password" and _NETRC_TEMPLATE.match(value)):
                return m.group(0)
            return keep + hide(kind, value)

        return repl

    for kind, pat in _PATTERNS:
        if kind == "private_key" and "PRIVATE KEY" not in text:
            continue
        text = pat.sub(sub(kind), text)
    return text
