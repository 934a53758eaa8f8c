"""Secret detection and redaction (pure).

The log is immutable: a secret written into it cannot be taken out. File contents, shell
output and search results pass through ``redact`` before anything is appended, archived or
(unless the caller explicitly asks for raw content of a project file) sent to the agent.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from pathlib import PurePosixPath

import msgspec

REDACTED = "[REDACTED:{kind}]"

# (kind, pattern). Order matters: specific provider formats first, generic assignment last.
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("private_key", re.compile(
        r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY(?: BLOCK)?-----"
        r"[\s\S]*?-----END (?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY(?: BLOCK)?-----")),
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

# KEY=value / KEY: value / "key": "value" where the name says it is a secret
_ASSIGN = re.compile(
    r"""(?P<name>\b[A-Za-z0-9_.-]*(?:_KEY|_TOKEN|_SECRET|SECRET_KEY|PASSWORD|PASSWD|_PWD|API_KEY|APIKEY|
        ACCESS_KEY|PRIVATE_KEY|CLIENT_SECRET|AUTH_TOKEN)\b["']?)
        (?P<sep>\s*[:=]\s*)
        (?P<q>["']?)(?P<value>[^\s"'`,;]{4,})(?P=q)""",
    re.IGNORECASE | re.VERBOSE,
)
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

    def sub(kind: str) -> "re.Callable[[re.Match[str]], str]":  # type: ignore[name-defined]
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

    def assign(m: re.Match[str]) -> str:
        nonlocal count
        value = m.group("value")
        if _PLACEHOLDER.match(value) or value.startswith("[REDACTED:"):
            return m.group(0)
        count += 1
        found.append(value)
        if "assignment" not in kinds:
            kinds.append("assignment")
        return f"{m.group('name')}{m.group('sep')}{m.group('q')}{REDACTED.format(kind='assignment')}{m.group('q')}"

    text = _ASSIGN.sub(assign, text)
    return Redacted(text, count, kinds, found)


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
