"""Redaction fixes of the fifth round.

False positives: a quoted (or bare) constant after a generic ``_KEY`` name is a dictionary key, a
setting's name or a namespace far more often than a secret (``dest_key='Args'``, ``SORT_KEY =
"name"``, ``PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"``): its value
must look like a secret (not identifier words), as a camelCase name's must; names that say
secret (``API_KEY``, ``aws_secret_key``, ``ENCRYPTION_KEY``...) keep the strict rule.

False negatives: the password of a tuple assignment when its name is not the last target
(``password, user = "hunter2secret", "bob"``); ``_pw`` names (``db_pw``) and a bare ``pw``/``pwd``
given a generated value (``pwd = "Tr0ub4dor&3"``), while the working directory stays
(``PWD=/home/user``, ``pwd = os.getcwd()``, ``$PWD``, ``pwd.getpwnam(...)``).

Pure function tests over ``redact`` (and 1 MB pathological lines for the new rules), plus the real
``lean-ctx`` console script reading a settings module.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leanctx.context.secrets import redact

from .secret_checks import MB, assert_redacts_in_linear_time
from .secret_checks import secret_cli as _cli

pytestmark = pytest.mark.timeout(120)

AWS = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

# constants after generic ``_KEY`` names: identifier words, not secrets (most from site-packages)
KEY_CONSTANTS = [
    "dest_key='Args'",
    'SORT_KEY = "name"',
    "cache_key = 'users'",
    'xml_key = "_xml"  # type: ignore',  # hypothesis
    'STATS_KEY = "_hypothesis_stats"',
    'GET_STREAM_KEY = "_GET_stream"',  # mcp
    'PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"',
    'SPAN_KEY = "current-span"',  # opentelemetry
    "METADATA_TAG_KEY = 'pydantic-mypy-metadata-tag'",
    "ROOT_VALIDATOR_CONFIG_KEY = '__root_validator_config__'",
    'MARKUP_MODE_KEY = "TYPER_RICH_MARKUP_MODE"',
    'MAX_BODY_SIZE_SCOPE_KEY = "starlette.max_body_size"',
    'meta_schema_key = "meta schema id"',  # jsonschema
    '    PublicKeyAlgorithmOID.EC_PUBLIC_KEY: "id-ecPublicKey",',  # cryptography
    'X_MCP_HEADER_KEY: Final = "x-mcp-header"',
    'cache_key = "cached_" + name',
    'CACHE_KEY = "user:{id}"',
    'HASH_KEY = "sha256"',
    'self.save_choices(data.choices, sub_key=b"pareto")',
    "js_constraint_key = 'minItems' if constraint == 'min_length' else 'maxItems'",
    # bare values: names and dotted names, in code or a config file
    "SORT_KEY = name",
    "CACHE_KEY=users",
    "group_key = next_key",
    "environment_key = lhs.value",
    "    PROTOCOL_VERSION_META_KEY: verdict.protocol_version,",
]


@pytest.mark.parametrize("line", KEY_CONSTANTS)
def test_identifier_constants_after_generic_key_names_are_kept(line: str) -> None:
    r = redact(line + "\n")
    assert (r.text, r.count) == (line + "\n", 0)


# (line, secret): generated values after any key name, and any value after a name that says secret
KEY_SECRETS = [
    ('API_KEY = "sk-live-abcdefgh"', "sk-live-abcdefgh"),
    ('API_KEY = "users"', "users"),  # an API key's name: any value
    (f'aws_secret_key = "{AWS}"', AWS),
    ("STRIPE_KEY='rk_live_51Habc'", "rk_live_51Habc"),
    ('CACHE_KEY = "d41d8cd98f00b204e9800998ecf8427e"', "d41d8cd98f00b204e9800998ecf8427e"),
    ('SESSION_KEY = "Xk29dLmQvT"', "Xk29dLmQvT"),
    ('ENCRYPTION_KEY = "mysupersecretkey"', "mysupersecretkey"),  # a name that says secret
    ('MASTER_KEY = "correct horse battery"', "correct horse battery"),
    ('FERNET_KEY = "my-secret-key"', "my-secret-key"),  # a value that says secret
    ('JWT_SIGNING_KEY = "please-change-this-password"', "please-change-this-password"),
    ("WEBHOOK_KEY=whk_9f8e7d6c5b4a", "whk_9f8e7d6c5b4a"),
    ('mailgun_key: "key-3ax6xnjp29jd6fds4gc373sgvjxteol0"', "key-3ax6xnjp29jd6fds4gc373sgvjxteol0"),
    ("LICENSE_KEY=ABCD-EFGH-IJKL-MNOP", "ABCD-EFGH-IJKL-MNOP"),
    ("DEPLOY_KEY = 0x2b7e151628aed2a6abf7158809cf4f3c", "0x2b7e151628aed2a6abf7158809cf4f3c"),
    ('X_MCP_HEADER_KEY: Final = "xk2-Hq9m-Ab7z"', "xk2-Hq9m-Ab7z"),
    ('ROUTING_KEY = "wJalrXUtnFEMIbPxRfiCY"', "wJalrXUtnFEMIbPxRfiCY"),  # random mixed case, no digit
]


@pytest.mark.parametrize(("line", "secret"), KEY_SECRETS, ids=[s for _, s in KEY_SECRETS])
def test_secret_values_after_key_names_are_still_redacted(line: str, secret: str) -> None:
    r = redact(line + "\n")
    assert r.text == line.replace(secret, "[REDACTED:assignment]", 1) + "\n"
    assert r.found == [secret]


# (line, the secrets in it): a password named anywhere in a tuple target
TUPLES = [
    ('password, user = "hunter2secret", "bob"', ["hunter2secret"]),
    ('user, password = "bob", "S3cr3tPassw0rd!"', ["S3cr3tPassw0rd!"]),
    ('host, db_password, port = "db.local", "Hunter2horse", "5432"', ["Hunter2horse"]),
    ("    password, user = 'hunter2secret', 'bob'", ["hunter2secret"]),
    ('password, user = "hunter2secret", "bob"  # the test account', ["hunter2secret"]),
    ('password, retries = "Tr0ub4dor&3", 3', ["Tr0ub4dor&3"]),
    ('api_token, secret_key = "abc.def.ghi", "Zm9vYmFyYmF6MTIz"', ["abc.def.ghi", "Zm9vYmFyYmF6MTIz"]),
]


@pytest.mark.parametrize(("line", "secrets"), TUPLES, ids=[t[0][:30] for t in TUPLES])
def test_a_password_named_anywhere_in_a_tuple_target_is_redacted(line: str, secrets: list[str]) -> None:
    r = redact(line + "\n")
    expected = line
    for s in secrets:
        expected = expected.replace(f'"{s}"', '"[REDACTED:assignment]"').replace(f"'{s}'", "'[REDACTED:assignment]'")
    assert (r.text, r.found) == (expected + "\n", secrets)


TUPLES_KEPT = [
    "password, user = pw, name",  # no literal: code
    'password, confirm = "", ""',
    'token, kind = "Name", "Builtin"',  # a lexer's tuple: a bare ``token`` needs a generated value
    'sort_key, order = "name", "asc"',
    "a, b = password, 'x'",
    'password, user = get_creds("bob")',
    '    connect(host,\n            password, user="bob")',  # a call's arguments, not a tuple
    'password, user = "hunter2secret", "bob", "x"',  # as many values as names, or no tuple
]


@pytest.mark.parametrize("line", TUPLES_KEPT)
def test_tuples_without_a_secret_literal_are_kept(line: str) -> None:
    r = redact(line + "\n")
    assert (r.text, r.count) == (line + "\n", 0)


PW_SECRETS = [
    ('db_pw = "Tr0ub4dor&3"', "Tr0ub4dor&3"),
    ("DB_PW=Tr0ub4dor3", "Tr0ub4dor3"),
    ("admin_pw: hunter2horse", "hunter2horse"),
    ("PASSWD=Tr0ub4dor3", "Tr0ub4dor3"),
    ('smtp_pwd: "Tr0ub4dor&3"', "Tr0ub4dor&3"),
    ("export SMTP_PWD=correcthorse", "correcthorse"),
    ('pwd = "Tr0ub4dor&3"', "Tr0ub4dor&3"),
    ('pw = "S3cr3tPassw0rd"', "S3cr3tPassw0rd"),
    ("PW=Xk29dLmQvT", "Xk29dLmQvT"),
    ('{"user": "bob", "pwd": "Tr0ub4dor&3"}', "Tr0ub4dor&3"),
]


@pytest.mark.parametrize(("line", "secret"), PW_SECRETS, ids=[t[0][:30] for t in PW_SECRETS])
def test_pw_and_pwd_names_are_redacted(line: str, secret: str) -> None:
    r = redact(line + "\n")
    assert r.text == line.replace(secret, "[REDACTED:assignment]", 1) + "\n"
    assert r.found == [secret]


PW_KEPT = [
    "pwd = os.getcwd()",
    "pwd",
    "echo $PWD",
    'cd "$PWD/build"',
    "PWD=/home/user/project",  # ``env`` output: the working directory
    "OLDPWD=/tmp",
    "pwd = '/srv/app'",
    "pwd: ~/src",
    'pwd.getpwnam("root")',
    "pw = pwd.getpwnam(user)",
    "\tpwd = name // always absolute",  # go/src
    "\t{pwd: cwd},",
    "\t\tpwd: link},",
    "Python: the `debug` package of Node.js reads DEBUG=pw:api,pw:channel; this reads the",  # playwright
    'full_name = "pw:" + name',
    "pw: str | None = None",
    "pwd=$(pwd)",
    "PWD=`pwd`",
    "pw = auth, None",
    "pwd = Path.cwd()",
    "pw = getpass.getpass()",
    "pwd: String,",
    "pwd = 1",
]


@pytest.mark.parametrize("line", PW_KEPT)
def test_the_working_directory_and_pw_code_are_kept(line: str) -> None:
    r = redact(line + "\n")
    assert (r.text, r.count) == (line + "\n", 0)


PATHOLOGICAL = {
    "tuple of passwords": lambda: "password, " * (MB // 10) + '= "x"',
    "tuple targets with literals": lambda: 'a, password, b = "hunter2secret", "x", "y"; ' * (MB // 44),
    "pw names repeated": lambda: "pw=pw:pwd=pwd: " * (MB // 15),
    "generic key values": lambda: 'x_key = "' + "ab_cd-ef.gh/" * (MB // 12) + '"',
    "generic key camel humps": lambda: 'x_key = "' + "aBcDeFgH" * (MB // 8) + '"',
}


@pytest.mark.parametrize("make", PATHOLOGICAL.values(), ids=list(PATHOLOGICAL))
def test_pathological_megabyte_lines_redact_in_linear_time(make: object) -> None:
    assert callable(make)
    assert_redacts_in_linear_time(make())


SETTINGS = '''\
SORT_KEY = "name"
CACHE_KEY = "users"
FERNET_KEY = "Zm9vYmFyYmF6cXV4LEAKONE="
password, user = "Hunter2LEAKTWO", "bob"
db_pw = "Tr0ub4dor&LEAKTHREE"


def where():
    pwd = os.getcwd()
    return pwd
'''
LEAKS = ("Zm9vYmFyYmF6cXV4LEAKONE=", "Hunter2LEAKTWO", "Tr0ub4dor&LEAKTHREE")


@pytest.mark.timeout(180)
def test_a_settings_module_reads_with_its_constants_and_without_its_secrets(tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    (project / ".git").mkdir(parents=True)
    (project / "settings.py").write_text(SETTINGS)
    p = _cli(home, project, "read", "settings.py", "-m", "full", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    shown = str((out[0] if isinstance(out, list) else out)["text"])
    for line in ('SORT_KEY = "name"', 'CACHE_KEY = "users"', "    pwd = os.getcwd()",
                 'FERNET_KEY = "[REDACTED:assignment]"', 'password, user = "[REDACTED:assignment]", "bob"',
                 'db_pw = "[REDACTED:assignment]"'):
        assert line in shown.split("\n"), line
    joined = b"".join(f.read_bytes() for f in (home / "data").rglob("*") if f.is_file())
    for leak in LEAKS:
        assert leak not in p.stdout
        assert leak.encode() not in joined, leak
