"""Redaction fixes from the third secrets audit.

False negatives: Azure connection strings (``AccountKey=``, ``SharedAccessKey=``,
``SharedAccessSignature=``), SAS and presigned URLs (``sig=``, ``Signature=``, ``X-Amz-Signature=``,
``X-Amz-Credential=``), ``?token=``, Maven ``<password>``, NuGet ``ClearTextPassword``, ``aws
configure set``, OpenSSL ``pass:``, keytool ``-storepass``, Samba ``-U user%pass``.

False positives: numeric constants (``AF_KEY = 0x1e``, ``ScanToken = -1000 - iota``), changelog
sentences after a name and a colon, ternaries; while config lines (``.env``, YAML, INI) of
several words and numeric passwords stay redacted.

Pure function tests over ``redact`` (each pattern on 1 MB pathological lines too), plus the real
``lean-ctx read`` console script on a Maven ``settings.xml`` and an Azure ``.config``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leanctx.context.secrets import redact

from .secret_checks import MB, assert_redacts_in_linear_time
from .secret_checks import secret_cli as _cli

pytestmark = pytest.mark.timeout(120)


AZ_KEY = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA+/Lk3y=="
SAS = "sv=2020-08-04&ss=b&srt=sco&sp=rwdlac&se=2031-01-01T00:00:00Z&sig=AbC%2Bde3FgH4iJk%3D"

# (line, the secret value in it, the kind): exactly the value goes, the rest of the line stays
FOUND = [
    (f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={AZ_KEY};EndpointSuffix=core.windows.net",
     AZ_KEY, "connection_string"),
    (f'"conn": "DefaultEndpointsProtocol=https;AccountName=acct;accountkey={AZ_KEY}"', AZ_KEY, "connection_string"),
    ("Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=Ab3dEf+gHi/jKl9=",
     "Ab3dEf+gHi/jKl9=", "connection_string"),
    (f"BlobEndpoint=https://a.blob.core.windows.net/;SharedAccessSignature={SAS};", SAS, "connection_string"),
    ("curl 'https://a.blob.core.windows.net/c/f.txt?sv=2020-08-04&sp=r&sig=AbC%2Bde3FgH4iJk%3D' -o f",
     "AbC%2Bde3FgH4iJk%3D", "url_query"),
    (("https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature="
      "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404&x=1"),
     "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404", "url_query"),
    ("https://storage.googleapis.com/b/o?X-Goog-Credential=svc%40p.iam.gserviceaccount.com%2F20240101&X-Goog-Date=1",
     "svc%40p.iam.gserviceaccount.com%2F20240101", "url_query"),
    ("GET /k?X-Amz-Security-Token=FwoGZXIvYXdzEBYaDHqa0AP1%2FnbXMplY HTTP/1.1",
     "FwoGZXIvYXdzEBYaDHqa0AP1%2FnbXMplY", "url_query"),
    ("https://b.s3.amazonaws.com/k?Expires=1141889120&Signature=vjbyPxybdZaNmGa%2ByT272YEAiv4%3D",
     "vjbyPxybdZaNmGa%2ByT272YEAiv4%3D", "url_query"),
    ("see https://api.example.com/v1/feed?token=Ab12Cd34Ef56.", "Ab12Cd34Ef56", "url_query"),
    ('<a href="/dl?id=7&amp;token=9f8e7d6c5b4a">', "9f8e7d6c5b4a", "url_query"),
    ("      <password>Sup3rS3cret</password>", "Sup3rS3cret", "xml_secret"),
    ("<password>correct horse battery</password>", "correct horse battery", "xml_secret"),
    ("<passphrase>{COQLCE6DU6GtcS5PHxyz=}</passphrase>", "{COQLCE6DU6GtcS5PHxyz=}", "xml_secret"),
    ("<apiKey>aK93jd72LqP0</apiKey>", "aK93jd72LqP0", "xml_secret"),
    ('    <add key="ClearTextPassword" value="Sup3rS3cret" />', "Sup3rS3cret", "xml_secret"),
    ("<add key='StorageApiKey' value='aK93jd72LqP0'/>", "aK93jd72LqP0", "xml_secret"),
    ("aws configure set aws_secret_access_key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "cli_password"),
    ('aws configure set profile.dev.aws_session_token "FwoGZXIvYXdzEBYaDH" --profile dev',
     "FwoGZXIvYXdzEBYaDH", "cli_password"),
    ("openssl pkcs12 -export -in c.pem -passout pass:Sup3rS3cret -out x.p12", "Sup3rS3cret", "cli_password"),
    ("openssl rsa -in k.pem -passin 'pass:two words' -out k2.pem", "two words", "cli_password"),
    ("openssl enc -d -aes256 -pass pass:Sup3rS3cret -in f", "Sup3rS3cret", "cli_password"),
    ("keytool -list -keystore ks.jks -storepass Sup3rS3cret", "Sup3rS3cret", "cli_password"),
    ("smbclient //srv/share -U alice%Sup3rS3cret -c ls", "Sup3rS3cret", "cli_password"),
    ("rpcclient -U 'DOM\\alice%Sup3r S3cret' 10.0.0.1", "Sup3r S3cret", "cli_password"),
    ("smbclient //srv/share --user=alice%Sup3rS3cret", "Sup3rS3cret", "cli_password"),
]


@pytest.mark.parametrize(("line", "secret", "kind"), FOUND, ids=[f[2] + ":" + f[1][:20] for f in FOUND])
def test_credentials_of_new_forms_are_redacted(line: str, secret: str, kind: str) -> None:
    r = redact(line + "\nafter = 1\n")
    assert r.text == line.replace(secret, f"[REDACTED:{kind}]", 1) + "\nafter = 1\n"
    assert secret in r.found


KEPT = [
    "AccountKey=<your-account-key>;",
    "AccountKey=${AZURE_STORAGE_KEY};EndpointSuffix=x",
    "https://x.test/api?token={token}&page=2",
    "https://x.test/api?token=%s&sig=TOKEN",
    "https://x.test/api?token=xxxxxxxx",
    "https://x.test/search?signature=hello",
    "<password>${env.MAVEN_PASSWORD}</password>",
    "<password></password>",
    "<token>name</token>",
    "<secret>the secret</secret>",
    '<add key="Username" value="deploy-bot-2" />',
    "openssl rsa -in k.pem -passin env:PEM_PASS -passout file:pw.txt",
    "openssl req -passin stdin -passout fd:3",
    "keytool -list -storepass changeit",
    "keytool -list -storepass $STOREPASS",
    "smbclient //srv/share -U alice%$SMB_PASS",
    "smbclient -U% -L host",
    "date -u +%Y%m%d",
    "aws configure set region us-east-1",
    "aws configure set aws_secret_access_key $AWS_SECRET",
]


@pytest.mark.parametrize("line", KEPT)
def test_placeholders_and_other_values_of_those_forms_are_kept(line: str) -> None:
    r = redact(line + "\n")
    assert (r.text, r.count) == (line + "\n", 0)


NUMBERS = [
    "AF_KEY                            = 0x1e",
    "KEY_ENTER = 13",
    "TOKEN_EOF = -1",
    "\tLSH          ScanToken = -1000 - iota // << Left shift.",
    "\tKEY_SPEC_REQKEY_AUTH_KEY                    = -0x7",
    "\tFS_IOC_ADD_ENCRYPTION_KEY                   = 0xc0506617",
    "\tSYS_ADD_KEY                      = 4280",
    "\tNL80211_ATTR_SAE_PASSWORD                               = 0x115",
    "\tPKCS12_NO_PERSIST_KEY              = 0x00008000",
    "MAX_KEY = 1024 - 1",
    "X_KEY = BASE + 1",
    "SHIFT_KEY = (1 << 3) + BASE",
    "ERROR_WRONG_PASSWORD = -1323",
    "LOCK_TOKEN = 1_000_000",
    "RETRY_TOKEN = 2.5",
    "#define MAX_TOKEN 0x7fff",
    "enum { KEY_A = 0x1e, KEY_B = 0x30 };",
]


@pytest.mark.parametrize("line", NUMBERS)
def test_numeric_constants_are_not_secrets(line: str) -> None:
    r = redact(line + "\n")
    assert (r.text, r.count) == (line + "\n", 0)


@pytest.mark.parametrize(("line", "secret"), [
    ("PASSWORD=1234", "1234"),  # a PIN is a password
    ("DB_PASSWORD=123456", "123456"),
    ("API_TOKEN=12345678901", "12345678901"),  # more digits than a constant has
    ("AES_KEY = 0x2b7e151628aed2a6abf7158809cf4f3c", "0x2b7e151628aed2a6abf7158809cf4f3c"),  # longer than 64 bits
    ("password = 0x1e2f3a4b5c6d7e8f9a", "0x1e2f3a4b5c6d7e8f9a"),
])
def test_numbers_that_can_be_secrets_stay_redacted(line: str, secret: str) -> None:
    assert redact(line).text == line.replace(secret, "[REDACTED:assignment]")


CHANGELOG = [
    "  * _gnutls_pkcs_generate_key: use HMAC-SHA256 for PBKDF2",
    "pre_shared_key: limit 0-RTT to resumption connections",
    "pre_shared_key: avoid use-after-free around realloc",
    "- userauth_password: pass on the underlying error code",
    "    - net/sched: act_tunnel_key: Defer dst_release to RCU callback",
    "    - net: af_key: initialize alg_key_len for IPComp states (CVE-2026-64436)",
    "    - af_key: validate families in pfkey_send_migrate()",
    '\tt.Fatalf("enc.EncodeToken: Unable to encode token (%#v), %v", tok, err)',
    "  * secret_key: Document the rotation of keys in the README.",
]


@pytest.mark.parametrize("line", CHANGELOG)
def test_changelog_sentences_after_a_name_are_not_values(line: str) -> None:
    r = redact(line + "\n")
    assert (r.text, r.count) == (line + "\n", 0)


@pytest.mark.parametrize(("line", "secret"), [
    ("password: correct horse battery", "correct horse battery"),
    ("  db_password: staple horse battery  # prod", "staple horse battery"),
    ("secret_key: sk with spaces tapir", "sk with spaces tapir"),
    ("password = ini style pass word", "ini style pass word"),
    ("API_KEY=abc def ghi", "abc def ghi"),
    ("export DB_PASSWORD=to be or not", "to be or not"),  # ``=``: a sentence is never written so
    ("DB_PASSWORD: Tr0ub4dor to the moon", "Tr0ub4dor to the moon"),  # no plain word first
    ("password: hunter2", "hunter2"),
    ("password: salt or pepper", "salt or pepper"),
    ("password: 12ab - cd", "12ab - cd"),  # ``12ab`` is no number: no arithmetic
])
def test_config_values_of_several_words_stay_redacted(line: str, secret: str) -> None:
    assert redact(line).text == line.replace(secret, "[REDACTED:assignment]")


TERNARIES = [
    "token = a if b else c",
    "key = cond ? x : y",
    "api_token = a_val if use_a else c_val",
    "access_token = token_value if use else None",
    "secret_key = useProd ? prodKey : devKey",
    "    host_token = String.Double if host_double else String.Single",
    "next_key = element if key is None else await key(element)",
    "const apiKey = useProd ? prodKey : devKey;",
    "f(secret_key = use_prod ? prod_key : dev_key)",
    "explicit_token = token is not None",
    "same_token = other_token == expected",
    "lo_key = hi_key = key(lo)",
]


@pytest.mark.parametrize("line", TERNARIES)
def test_conditional_expressions_are_code(line: str) -> None:
    r = redact(line + "\n")
    assert (r.text, r.count) == (line + "\n", 0)


@pytest.mark.parametrize(("line", "secret"), [
    ("{api_key: abcd1234 - the prod key}", "abcd1234"),  # a generated value, then a comment
    ("creds = {password: Xk29dQ + 1}", "Xk29dQ"),
    ("{password: hunter2 if you like}", "hunter2"),  # no ``else``: no conditional
])
def test_a_value_before_an_operator_can_still_be_a_secret(line: str, secret: str) -> None:
    assert redact(line).text == line.replace(secret, "[REDACTED:assignment]")


def test_a_value_placeholder_is_kept() -> None:
    assert redact("// SOME_KEY=value").count == 0


def test_a_quoted_value_in_a_conditional_is_still_a_value() -> None:
    line = 'password = "Sup3rS3cret" if prod else "dev"'
    assert redact(line).text == 'password = "[REDACTED:assignment]" if prod else "dev"'


# a 1 MB line each, for every new pattern and check: no quadratic scan
PATHOLOGICAL = {
    "password: if if if": lambda: "password: " + "if " * (MB // 3),
    "password: ? ? ?": lambda: "password: " + "? " * (MB // 2),
    "af_key: limit to, repeated": lambda: "af_key: limit to " * (MB // 17),
    "x_key = 1 - repeated": lambda: "x_key = 1 - " * (MB // 12),
    "x_key = a if b, no else": lambda: "x_key = abcd if b " * (MB // 18),
    "1 - 1 - 1 expression": lambda: "MAX_KEY = " + "1 - " * (MB // 4),
    "?sig= repeated": lambda: "https://x/?sig=" * (MB // 15),
    "&token=a&token=a": lambda: "?" + "&token=aB3" * (MB // 10),
    "AccountKey= repeated": lambda: "AccountKey=" * (MB // 11),
    "AccountKey=;": lambda: "AccountKey=a;" * (MB // 13),
    "<password> unclosed": lambda: "<password>" * (MB // 10),
    "<password>x repeated": lambda: "<password>abcd " * (MB // 15),
    "<a><a><a>": lambda: "<a>" * (MB // 3),
    "<add key= repeated": lambda: '<add key="Password" value="' * (MB // 28),
    "configure set repeated": lambda: "configure set aws_session_token " * (MB // 32),
    "-passin pass: repeated": lambda: "-passin pass:" * (MB // 13),
    "-U a% repeated": lambda: " -U a%" * (MB // 6),
    "-U long user, no %": lambda: " -U " + "a" * MB,
    "-storepass repeated": lambda: " -storepass" * (MB // 11),
    "numbers after key names": lambda: "A_KEY = 0x1e " * (MB // 13),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", list(PATHOLOGICAL))
def test_pathological_megabyte_lines_redact_in_linear_time(name: str) -> None:
    assert_redacts_in_linear_time(PATHOLOGICAL[name]())


@pytest.mark.timeout(180)
def test_maven_nuget_and_azure_secrets_never_reach_the_data_directory(tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    (project / ".m2").mkdir(parents=True)
    (project / ".git").mkdir()
    (project / ".m2" / "settings.xml").write_text(
        "<settings>\n  <servers>\n    <server>\n      <id>nexus</id>\n      <username>deploy</username>\n"
        "      <password>MavenLeakOkapi7</password>\n    </server>\n  </servers>\n</settings>\n")
    (project / "NuGet.Config").write_text(
        '<configuration>\n  <packageSourceCredentials>\n    <feed>\n'
        '      <add key="Username" value="deploy" />\n'
        '      <add key="ClearTextPassword" value="NugetLeakTapir8" />\n    </feed>\n'
        '  </packageSourceCredentials>\n</configuration>\n')
    (project / "app.config").write_text(
        "storage=DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=AzureLeakBison9+/==;EndpointSuffix=x\n")
    total = 0
    outputs = []
    for name in (".m2/settings.xml", "NuGet.Config", "app.config"):
        p = _cli(home, project, "read", name, "-m", "full", "--json", "--session", "m4")
        assert p.returncode == 0, p.stderr
        out = json.loads(p.stdout)
        out = out[0] if isinstance(out, list) else out
        total += out["redactions"]
        outputs.append(p.stdout)
    assert total == 3
    assert "<username>deploy</username>" in outputs[0] and "AccountName=acct" in outputs[2]
    kept = [f for f in (home / "data").rglob("*") if f.is_file()]
    assert home / "data" / "events.db" in kept
    joined = b"".join(f.read_bytes() for f in kept)
    assert b"[REDACTED:xml_secret]" in joined and b"[REDACTED:connection_string]" in joined
    for word in ("MavenLeakOkapi7", "NugetLeakTapir8", "AzureLeakBison9"):
        assert all(word not in o for o in outputs)
        assert word.encode() not in joined, word
