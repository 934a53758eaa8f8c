"""Redaction false positives met on real text: every excerpt under ``tests/fixtures/redaction_fp``
(``SOURCES.md`` says where each comes from: Debian docs, the system's and the venv's Python) holds
no secret and is kept byte for byte; next to each rule that keeps one, the secret-shaped text it
must not let through is still redacted.

The survey that found them ran ``redact`` over every text file under /usr/share/doc, the Python
files of /usr/lib/python3* and of the venv's site-packages (see the task report for the figures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from leanctx.context.secrets import redact

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "redaction_fp"
EXCERPTS = sorted(p for p in FIXTURES.iterdir() if p.name != "SOURCES.md")


def test_every_fixture_is_documented() -> None:
    sources = (FIXTURES / "SOURCES.md").read_text()
    assert len(EXCERPTS) >= 25
    assert all(f"`{p.name}`" in sources for p in EXCERPTS)


@pytest.mark.parametrize("path", EXCERPTS, ids=lambda p: p.name)
def test_a_real_excerpt_without_a_secret_is_kept(path: Path) -> None:
    text = path.read_text()
    r = redact(text)
    assert (r.count, r.text) == (0, text), r.kinds


# the secrets each new rule must still catch: (text, the value that must go)
STILL_REDACTED = [
    # a changelog status word is one word: any other value after the name goes
    ("GNUTLS_BAG_SECRET: Xk29dLmQ8v", "Xk29dLmQ8v"),
    ("db_password: Added2024!", "Added2024!"),
    ("password: Added hunter2xyz", "hunter2xyz"),
    # a phrase naming its own noun describes it; one that does not is a passphrase
    ("db_password: correct horse battery", "correct horse battery"),
    ("api_secret: define stable argument", "define stable argument"),
    ("db_password: my db password is hunter2", "hunter2"),
    ("* README: s#password: cvs#password: [empty password]#", "cvs#password:"),
    # nsswitch sources only for ``passwd`` and only when every word is a source
    ("passwd: hunter2horse", "hunter2horse"),
    ("passwd: files Tr0ub4dor", "files Tr0ub4dor"),
    ("password: files", "files"),
    # a call's ``$`` argument is code; a password holding ``(`` is not a call
    ("$passwd = Xk29d($ab);", "Xk29d($ab)"),
    ("my_password = Xk29d_aB($x)", "Xk29d_aB($x)"),
    # a dereference starts with ``$name->`` or ``$name{``; ``$`` alone starts a password
    ("PASSWORD=$ecr3tPa55", "$ecr3tPa55"),
    # a label restates the name; anything else is a value
    ("challengePassword = A challenge Tr0ub4dor", "A challenge Tr0ub4dor"),
    ("db_password = the password", None),  # kept: a placeholder-like label
    # sigils make identifier words; a random word after one is a value
    ("cdata_key = '#Xk29dLmQ8v'", "#Xk29dLmQ8v"),
    # a signature default: ``None``/``False`` and variables are code; a literal password is not
    ("def f(password='hunter2x'):", "hunter2x"),
    ("PASSWORD=hunter2):", "hunter2"),
    # a type alias in a signature is a type; in YAML the same word is a value
    ("db_password: HUNTER_TWO_2024", "HUNTER_TWO_2024"),
    # a token type is no token; a token is
    ("default_token='Xk29dLmQ8v'", "Xk29dLmQ8v"),
    ("password = 'Bearer'", "Bearer"),
    # auth params: one generated value makes the header a credential
    ('Authorization: OAuth realm="Example", oauth_token="ad180jjd733klru7"', "ad180jjd733klru7"),
    ('Authorization: Digest username="bob", realm="api", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093"',
     "dcd98b7102dd2f0e8b11d0f600bfb0c093"),
    # netrc: a template is a placeholder, a password is not
    ("machine h login u password Xk29d{q}", "Xk29d{q}"),
    # an HTML-escaped placeholder names a type; escaped text that is no placeholder goes
    ("passphrase: &#x3C;Tr0ub4dor&3", "&#x3C;Tr0ub4dor&3"),
    # a fingerprint is colon hex bytes after a generic key name only
    ("signing_key: 51:C4:0C:6D:7E:A5:6C:D8:8F:B4:3A:DF:91:78:4F:18", "51:C4:0C:6D:7E:A5:6C:D8:8F:B4:3A:DF:91:78:4F:18"),
    ("sig_key: 51:C4:0C:6D:hunter2", "51:C4:0C:6D:hunter2"),
]


@pytest.mark.parametrize(("text", "value"), STILL_REDACTED, ids=[t for t, _ in STILL_REDACTED])
def test_the_secret_next_to_each_rule_is_still_redacted(text: str, value: str | None) -> None:
    r = redact(text)
    if value is None:
        assert r.count == 0, r.text
    else:
        assert r.count and value not in r.text, (r.text, r.found)
