"""Redaction fixes from the fourth secrets audit.

False positives that corrupted code: a slice (``key[:16]``), a call of a PascalCase name with a
digit (``Ed25519PrivateKey.generate()``), a call with a number (``get_random_string(10)``), an
expression whose brackets close past a space (``StashKey[Config | None]()``), a bare name in a
Python function body (``meta_key = header``, ``get_token = lexer.token``) or a keyword argument on a
line of its own there, a tuple of ``self.x`` (``self._key = self.__class__, self.name``); the
password of ``user, password = "wile", "coyote"`` is the second literal, not the first.

False negatives: ``accountKey``, ``az ... --account-key``, ``az login -p``, ``?secret=``, XML
``<property name="password" value=...>``/``<property name="...password">x</property>``/``<entry
key="db.password">``, ``openssl enc -k``, ``net use ... /user:x PASS``, a bare ``SECRET``/``TOKEN``
holding a long hex or decimal number, ``password: Passw0rd is the default, change it.``, PuTTY
``.ppk`` private lines (and ``*.ppk`` a well-known secret file). Over-redaction: NuGet ``%VAR%``
placeholders are kept.

Pure function tests over ``redact`` (each new pattern on 1 MB pathological lines too), plus the
real ``lean-ctx`` console script reading a ``.ppk`` through ``shell cat``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leanctx.context.secrets import is_secret_path, redact

from .secret_checks import MB, assert_redacts_in_linear_time
from .secret_checks import secret_cli as _cli

pytestmark = pytest.mark.timeout(120)

AZ_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

# code read from elsewhere: kept as it is, inside a function body as in the files it came from
CODE = [
    "self._signing_key = key[:16]",  # cryptography/fernet.py
    "self._encryption_key = key[16:]",
    "private_key = Ed25519PrivateKey.generate()",
    "old_mark_config_key = StashKey[Config | None]()",  # pytest
    "pastebinfile_key = StashKey[IO[bytes]]()",
    "meta_key = header",
    "get_token = lexer.token",  # ply yacc.py
    "_token = parser.token",
    "client_token = rnd.get_random_string(10)",
    "self.secret_access_key = random_alphanumeric(40)",
    "self._key = self.__class__, self.name, self.case_flags",  # regex _regex_core.py
    "normalized_key = key[:1].lower() + key[1:]",
    "token = Name.Builtin.Pseudo",  # pygments
]


@pytest.mark.parametrize("line", CODE)
def test_code_reading_a_value_from_elsewhere_is_kept(line: str) -> None:
    text = f"class A:\n    def f(self, key, header, lexer):\n        {line}\n        return 1\n"
    r = redact(text)
    assert (r.text, r.count) == (text, 0)


@pytest.mark.parametrize("line", [
    "self._signing_key = key[:16]",
    "private_key = Ed25519PrivateKey.generate()",
    "old_mark_config_key = StashKey[Config | None]()",
    "client_token = rnd.get_random_string(10)",
    "self._key = self.__class__, self.name, self.case_flags",
])
def test_code_with_a_code_signal_is_kept_out_of_a_function_too(line: str) -> None:
    assert redact(line + "\n").text == line + "\n"


def test_keyword_arguments_of_a_call_opened_above_are_code() -> None:
    text = ("def upload(secret_key, session_token):\n    client = boto3.client(\n        's3',\n"
            "        aws_secret_access_key=secret_key,\n        aws_session_token=session_token,\n    )\n")
    assert redact(text).text == text


# a value: a bare name outside Python code, a literal, a config line
@pytest.mark.parametrize(("text", "secret"), [
    ("meta_secret = header\n", "header"),  # no code around it: a value
    ("[pypi]\n  password = hunter2abc\n", "hunter2abc"),  # .pypirc: indented INI, not a Python body
    ('def f():\n    s = """\n    password = hunter2abc\n    """\n', "hunter2abc"),  # inside a string
    ("password = Xk29d(ab\n", "Xk29d(ab"),  # random mixed case before a bracket: a password
    ("db_password: Hunter[Horse]\n", "Hunter[Horse]"),
    ("secret_key = a b c\n", "a b c"),  # a config line of several words
    ("PASSWORD=hunter2\n", "hunter2"),
])
def test_values_without_a_code_signal_stay_redacted(text: str, secret: str) -> None:
    r = redact(text)
    assert r.text == text.replace(secret, "[REDACTED:assignment]", 1)


def test_the_password_of_a_tuple_is_its_own_literal() -> None:
    for q in ('"', "'"):
        line = f"user, password = {q}wile{q}, {q}coyote{q}\n"
        r = redact(line)
        assert r.text == f"user, password = {q}wile{q}, {q}[REDACTED:assignment]{q}\n"
        assert r.found == ["coyote"]
    # counts that do not tell which: every literal goes
    r = redact('a, b, password = "hunter2x", "tapir9yz"\n')
    assert "hunter2x" not in r.text and "tapir9yz" not in r.text
    assert redact('user, password = "coyote2"\n').text == 'user, password = "[REDACTED:assignment]"\n'


# (line, the secret value in it, the kind): exactly the value goes, the rest of the line stays
FOUND = [
    (f'"accountKey": "{AZ_KEY}"', AZ_KEY, "assignment"),
    (f"accountKey: {AZ_KEY}", AZ_KEY, "assignment"),
    (f"az storage blob list --account-name acct --account-key {AZ_KEY}", AZ_KEY, "cli_password"),
    (("az login --service-principal -u 0a1b2c3d-0000-1111-2222-333344445555 -p Xy7~Q8r.AbCdEfGhIjKlMnOpQrStUvWx"
      " --tenant t"), "Xy7~Q8r.AbCdEfGhIjKlMnOpQrStUvWx", "cli_password"),
    ("https://example.com/x?secret=5f4dcc3b5aa765d61d8327deb882cf99&u=1", "5f4dcc3b5aa765d61d8327deb882cf99",
     "url_query"),
    ('<property name="password" value="dbPassw0rd!"/>', "dbPassw0rd!", "xml_secret"),
    ('  <property name="hibernate.connection.password">S3cretDb</property>', "S3cretDb", "xml_secret"),
    ('<entry key="db.password">S3cretDbPass</entry>', "S3cretDbPass", "xml_secret"),
    ('<param name="apiKey" value="AbCdEf0123456789GhIjKl"/>', "AbCdEf0123456789GhIjKl", "xml_secret"),
    ("openssl enc -aes-256-cbc -k MySymmetricSecret -in a -out b", "MySymmetricSecret", "cli_password"),
    ("net use Z: \\\\srv\\share /user:dom\\admin Passw0rd123", "Passw0rd123", "cli_password"),
    ("net use Z: \\\\srv\\share Passw0rd123 /user:dom\\admin", "Passw0rd123", "cli_password"),
    ("SECRET=0x5f4dcc3b5aa765d61d8327deb882cf99", "0x5f4dcc3b5aa765d61d8327deb882cf99", "assignment"),
    ("secret = 0x5f4dcc3b5aa765d61d8327deb882cf99", "0x5f4dcc3b5aa765d61d8327deb882cf99", "assignment"),
    ("TOKEN=31415926535897932384626433832795028841", "31415926535897932384626433832795028841", "assignment"),
    ("token: 31415926535897932384626433832795028841", "31415926535897932384626433832795028841", "assignment"),
    ('"secret": "Zk3q9Lp2Vx8Rt5Wm"', "Zk3q9Lp2Vx8Rt5Wm", "assignment"),
    ("password: Passw0rd is the default, change it.", "Passw0rd", "assignment"),
]


@pytest.mark.parametrize(("line", "secret", "kind"), FOUND)
def test_credentials_of_new_forms_are_redacted(line: str, secret: str, kind: str) -> None:
    r = redact(line + "\n")
    assert r.text == line.replace(secret, f"[REDACTED:{kind}]", 1) + "\n"
    assert r.found == [secret] and r.kinds == [kind]


KEPT = [
    "<password>%DB_PASS%</password>",  # NuGet/MSBuild placeholders
    '<add key="ClearTextPassword" value="%NUGET_PAT%" />',
    '<property name="password" value="${db.password}"/>',
    '<property name="username" value="deploy"/>',
    "openssl enc -aes-256-cbc -pass env:MYVAR -in a",
    "openssl enc -aes-256-cbc -kfile key.txt -in a",
    "net use Z: \\\\srv\\share * /user:dom\\admin",
    "net use Z: \\\\srv\\share /user:dom\\admin /persistent:yes",
    "az storage blob list --account-key $AZURE_STORAGE_KEY",
    "https://x.test/api?token=%s&sig=TOKEN",
    '"token": "NAME",',  # a lexer's table
    "Token:              '#d0d0d0',",  # a pygments style
    "def get_metadata(token=None):",
    "def __init__(self, token:Token):",
    '"AWS::SecretsManager::Secret": "c85175a4ebcce361",',  # after ``::``: a schema's name
    "token = tok",
    "secret: 0x1f",
    "password: Use a strong password with at least 12 characters.",
]


@pytest.mark.parametrize("line", KEPT)
def test_placeholders_and_words_of_those_forms_are_kept(line: str) -> None:
    r = redact(line + "\n")
    assert (r.text, r.count) == (line + "\n", 0)


PPK = ("PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy\nPublic-Lines: 2\n"
       "AAAAC3NzaC1lZDI1NTE5AAAAIBq5Kk2nCjgUWqO5P2z6m3yZ1xjF0yKQ3q6r7s8t\n9u0v\nPrivate-Lines: 2\n"
       "AAAAIHJlYWxseXNlY3JldGtleW1hdGVyaWFsMTIzNDU2Nzg5MGFiY2RlZmdoaWpr\nQmlzb25QcmltYXJ5S2V5\n"
       "Private-MAC: 7a1e3f0c0d5b4e8a9c2f1b3d5e7f9a1c3e5f7a9b1d3f5e7a9c1e3f5a7b9d1f3e\n")


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_putty_private_lines_are_redacted(eol: str) -> None:
    r = redact(PPK.replace("\n", eol))
    assert "AAAAIHJlYWxseXNl" not in r.text and "Qmlzb25QcmltYXJ5S2V5" not in r.text
    assert f"Private-Lines: 2{eol}[REDACTED:private_key]{eol}Private-MAC: 7a1e" in r.text
    assert "AAAAC3NzaC1lZDI1NTE5" in r.text and "Comment: deploy" in r.text  # the public part stays
    assert r.count == 1


def test_a_ppk_file_is_a_well_known_secret_file() -> None:
    assert is_secret_path("keys/deploy.ppk") and is_secret_path("C:\\Users\\me\\.ssh\\id.ppk")
    assert not is_secret_path("src/ppk.py")


# a 1 MB line each, for every new pattern and check: no quadratic scan
PATHOLOGICAL = {
    "az repeated": lambda: "az" * (MB // 2),
    "curl repeated": lambda: "curl" * (MB // 4),
    "az login -p repeated": lambda: "az login -p Xy7Q8rAbCd " * (MB // 23),
    "net use repeated": lambda: "net use " * (MB // 8),
    "net use /user: repeated": lambda: "net use /user:a " * (MB // 16),
    "openssl enc repeated": lambda: "openssl enc " * (MB // 12),
    "<p name= value= repeated": lambda: '<p name="password" value="' * (MB // 26),
    "<p key=> unclosed": lambda: '<p key="db.password">' * (MB // 21),
    "token= repeated": lambda: "token=" * (MB // 6),
    "secret: repeated": lambda: "secret: " * (MB // 8),
    "key[ repeated": lambda: "self.x_key = key[" * (MB // 17),
    "StashKey[Config repeated": lambda: "x_key = StashKey[Config " * (MB // 24),
    "tuple literals": lambda: 'a, password = "x1234567"' + ', "y1234567"' * (MB // 12),
    "Private-Lines repeated": lambda: "Private-Lines: 1\n" * (MB // 17),
    "Private-Lines, one long line": lambda: "Private-Lines: 1\n" + "A" * MB + "-",
    "indented bare names": lambda: "def f():\n" + "    x_key = y\n" * (MB // 14),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", list(PATHOLOGICAL))
def test_pathological_megabyte_lines_redact_in_linear_time(name: str) -> None:
    assert_redacts_in_linear_time(PATHOLOGICAL[name]())


@pytest.mark.timeout(180)
def test_a_ppk_is_refused_by_read_and_redacted_by_shell_cat(tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    (project / ".git").mkdir(parents=True)
    (project / "deploy.ppk").write_text(PPK)
    p = _cli(home, project, "read", "deploy.ppk", "-m", "full")
    assert p.returncode != 0 and "AAAAIHJlYWxseXNl" not in p.stdout + p.stderr
    p = _cli(home, project, "shell", "--json", "--", "cat", "deploy.ppk")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert "[REDACTED:private_key]" in out["text"] and "Comment: deploy" in out["text"]
    assert "AAAAIHJlYWxseXNl" not in p.stdout
    joined = b"".join(f.read_bytes() for f in (home / "data").rglob("*") if f.is_file())
    assert b"AAAAIHJlYWxseXNl" not in joined and b"Qmlzb25QcmltYXJ5S2V5" not in joined
