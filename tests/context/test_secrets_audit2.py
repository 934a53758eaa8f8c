"""Redaction fixes from the second secrets audit: linear time on pathological lines, no
RecursionError, code that reads a secret from elsewhere kept, prose around command-line flags
kept, a string's closing quote opening no value, camelCase secret names, provider formats,
``.netrc``, placeholder URL passwords, Sphinx fields, paths and sudoers ``NOPASSWD:``.

Pure function tests over ``redact``, plus the real ``lean-ctx read`` console script on a file
whose type annotation nests deeper than the parser goes.
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from leanctx.context.secrets import redact

from .secret_checks import LEAN_CTX, MB, assert_redacts_in_linear_time

pytestmark = pytest.mark.timeout(120)



def _uuids(n: int) -> str:
    return "-".join(str(uuid.UUID(int=i * 7919 + 1)) for i in range(n))


# a 1 MB line each: long runs of name characters (``a-b-c``, ``a.b.c``, ``x_y``) after an ``=``
# or ``:``, where a name starting at every word boundary made the assignment rule quadratic
PATHOLOGICAL = {
    "uuids after ids=": lambda: "ids=" + _uuids(MB // 37),
    "css property names": lambda: "x=1 " + ".".join(["grid-column-end"] * (MB // 16)),
    "a.a.a": lambda: "x=1 " + ".".join(["a"] * (MB // 2)),
    "x_y.x_y": lambda: "x=1 " + ".".join(["x_y"] * (MB // 4)),
    "a-b.a-b": lambda: "x=1 " + ".".join(["a-b"] * (MB // 4)),
    "dash words after key:": lambda: "k: " + "-".join(["word"] * (MB // 5)),
    "token. repeated": lambda: "x=1 " + "token." * (MB // 6),
    "_key- repeated": lambda: "x=1 " + "_key-" * (MB // 5),
    "Token camel repeated": lambda: "x=1 " + "aToken-" * (MB // 7),
    "api_key names without separator": lambda: "a=1 " + "api_key " * (MB // 8),
    "password= then a dashed run": lambda: "password=" + "-".join(["ab"] * (MB // 3)),
    "--password words": lambda: "--password " * (MB // 11),
    "--token prose": lambda: "--token flags, " * (MB // 15),
    "minified js assignments": lambda: "var a_key=b.c(d),e_token=f[g];x.password=y||z;" * (MB // 47),
    "quoted names closing strings": lambda: "f('Password: ', x) " * (MB // 19),
    "login password repeated": lambda: "login u password " * (MB // 17),
    "url user colon no at": lambda: "://:" + "b" * MB,
    "api_key: values on one line": lambda: "api_key: abcdefgh " * (MB // 18),
    "password = pw on one line": lambda: "password = pw12; " * (MB // 17),
    "keyword arguments on one line": lambda: "f(password=pw12, " * (MB // 17),
    "paths before colons": lambda: "/etc/passwd: x " * (MB // 15),
}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", list(PATHOLOGICAL))
def test_pathological_megabyte_lines_redact_in_linear_time(name: str) -> None:
    assert_redacts_in_linear_time(PATHOLOGICAL[name]())


DEEP = {
    "List[ nested": lambda n: "api_key: " + "List[" * n + "str" + "]" * n,
    "Foo<Bar nested": lambda n: "api_key: Foo" + "<Bar" * n,
    "& references": lambda n: "token: " + "&" * n + "str",
    "Optional[ unclosed": lambda n: "token: " + "Optional[" * n,
    "Callable[[ lists": lambda n: "token: " + "Callable[[" * n,
    "quoted forward reference": lambda n: 'token: "' + "List[" * n + "str" + "]" * n + '"',
}


@pytest.mark.parametrize("depth", [40, 331, 3000])
@pytest.mark.parametrize("name", list(DEEP))
def test_deep_type_nesting_never_raises_recursion_error(name: str, depth: int) -> None:
    r = redact(DEEP[name](depth) + "\n")
    assert isinstance(r.text, str)


def test_shallow_nesting_is_still_a_type() -> None:
    text = "api_key: " + "List[" * 20 + "str" + "]" * 20
    assert redact(text).text == text


def test_cli_read_of_deeply_nested_annotation_does_not_crash(tmp_path: Path) -> None:
    (tmp_path / "deep.yaml").write_text("api_key: " + "List[" * 400 + "str" + "]" * 400 + "\n")
    p = subprocess.run([LEAN_CTX, "read", "deep.yaml"], capture_output=True, text=True, cwd=tmp_path,
                       env={**__import__("os").environ, "LEAN_CTX_NO_DAEMON": "1"}, timeout=90, check=False)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr and "RecursionError" not in p.stderr
    assert "api_key:" in p.stdout


CODE_KEPT = [
    "name_token = tokenizer.expect(",
    "url, username, password = self._get_url_and_credentials(req.url)",
    "const password = await read.password({ prompt: 'x' })",
    "sort_key = lambda x: x[0]",
    "sort_key = lambda: 0",
    "conn = connect(host, password=getpass())",
    'token = headers["x"]',
    "token = tokens[0]",
    "password = self.password",
    "token = this.token;",
    "const password = pw;",
    "let api_token = tok",
    "my $password = shift;",
    "    user, passwd = creds",
    "index_url, _, index_url_user_password = index_info",
    "f(a, password=pw)",
    "self.api_key = api_key_value",
    "raw_token = backend_class.current_token()",
    "if user: user, passwd = _splitpasswd(user)",
    "x_token = new Token(kind)",
    "use_token = not disabled",
    "var a_key=b.c(d),e_token=f[g];",
    "const accessToken = getToken()",
    "refreshToken: string",
    "  refreshToken?: string;",
    "hs.masterSecret = hs.session.masterSecret",
    "\t\tmasterSecret:       hs.masterSecret,",
    "password = settings.password",
    "var rsaPrivateKey = &PrivateKey{",
    "var pemPrivateKey = testingKey(`",
    "  const unsupportedToken = tokens.find((token) => {",
    "    CSSParserToken = class {",
    "  p.onToken = function (token) {",
    "    return await this._startOrAuthSse({ resumptionToken: void 0 });",
    "    UnexpectedToken: 'Unexpected token %0',",
    '            "privateKey": "string",',
    "    sessionToken: env.AWS_SESSION_TOKEN,",
    "_authToken=MYTOKEN",
    "      resumptionToken: lastEventId,",
    "      privateKey: tString,",
]


@pytest.mark.parametrize("text", CODE_KEPT)
def test_code_reading_a_value_from_elsewhere_is_kept(text: str) -> None:
    r = redact(text)
    assert (r.text, r.count) == (text, 0)


CONFIG_REDACTED = [
    ("API_TOKEN=abc.def.ghi", "abc.def.ghi"),
    ("PASSWORD=hunter2", "hunter2"),
    ("password = hunter2", "hunter2"),  # a bare name: code only with a code signal
    ("DB_PASSWORD=aB3x(9Lq", "aB3x(9Lq"),  # a bracket in a password, not a call
    ("DB_PASSWORD=Xk29d(abc)", "Xk29d(abc)"),
    ("db_password: Hunter[Horse]", "Hunter[Horse]"),
    ("signing.password=Sup3rS3cret2", "Sup3rS3cret2"),
    ("--password=abc123", "abc123"),
    ("export SECRET_KEY=settings.prod", "settings.prod"),
    ("api_token: abc.def", "abc.def"),
]


@pytest.mark.parametrize(("text", "secret"), CONFIG_REDACTED)
def test_config_values_without_a_code_signal_are_still_redacted(text: str, secret: str) -> None:
    assert redact(text).text == text.replace(secret, "[REDACTED:assignment]")


def test_same_name_after_dashes_is_a_variable_passed_on() -> None:
    assert redact("--password=password").text == "--password=password"


PROSE = (
    "Secrets: credentials in HTTP headers and on command lines (curl -u user:pass, --password/--token "
    "flags, mysql -pPASS, sshpass/docker login -p, htpasswd -b) are redacted, names kept; a secret"
)


def test_prose_about_command_line_flags_is_kept() -> None:
    r = redact(PROSE)
    assert (r.text, r.count) == (PROSE, 0)


@pytest.mark.parametrize("text", ["--token flags, and names", "--password correcthorse", "--ask-password simultaneously."])
def test_spaced_flag_value_that_is_a_word_is_kept(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(("text", "secret"), [
    ("docker login --password Sup3rS3cret reg", "Sup3rS3cret"),
    ("gpg --batch --passphrase Sup3rS3cret -d f.gpg", "Sup3rS3cret"),
    ("tool --token abc123def", "abc123def"),
    ("tool --api-key aZ9+bY8/cX7= x", "aZ9+bY8/cX7="),
    ("mysql -u root -pSup3rS3cret; echo", "Sup3rS3cret"),
    ("(curl -u admin:Sup3rS3cret https://x)", "Sup3rS3cret"),
    ("htpasswd -b /etc/h user Sup3rS3cret", "Sup3rS3cret"),
])
def test_command_line_credentials_are_still_redacted(text: str, secret: str) -> None:
    assert redact(text).text == text.replace(secret, "[REDACTED:cli_password]")


@pytest.mark.parametrize("text", [
    "def unix_getpass(prompt='Password: ', stream=None):",
    'print("Password:", masked)',
    "read.password('Password:', creds.password)",
    'log("Enter your api_key: ", level)',
])
def test_name_inside_a_string_opens_no_value_at_its_closing_quote(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(("text", "secret"), [
    ("don't set password: 'abc123xyz'", "abc123xyz"),
    ('curl -d \'{"password":"Tr0ub4dor&3"}\' x', "Tr0ub4dor&3"),
    ("print(\"Password:\", x); api_key = 'Sup3rS3cret'", "Sup3rS3cret"),
])
def test_quoted_values_after_strings_are_still_redacted(text: str, secret: str) -> None:
    assert redact(text).text == text.replace(secret, "[REDACTED:assignment]")


@pytest.mark.parametrize(("text", "secret"), [
    ('{"AccessKeyId": "x", "SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}',
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ('{"SessionToken": "IQoJb3JpZ2luX2VjEJr//////////wEaCXVz"}', "IQoJb3JpZ2luX2VjEJr//////////wEaCXVz"),
    ("secretAccessKey: 'wJalrXUtnFEMI/K7MDENG'", "wJalrXUtnFEMI/K7MDENG"),
    ("clientSecret: 'Xk29dLq0pW7zR3mN8vB1'", "Xk29dLq0pW7zR3mN8vB1"),
    ('refreshToken = "1//0gXyZ8aBcDeFgHiJkLmNoP"', "1//0gXyZ8aBcDeFgHiJkLmNoP"),
    ('{"idToken":"abc123def456ghi789jkl"}', "abc123def456ghi789jkl"),
    ("npmAuthToken: abc123def456ghi789", "abc123def456ghi789"),
    ("//registry.npmjs.org/:_authToken=a1b2c3d4-e5f6-7a8b-9c0d-e1f2a3b4c5d6", "a1b2c3d4-e5f6-7a8b-9c0d-e1f2a3b4c5d6"),
    ("_auth=Y2k6ZGNrcl9wYXRfQWJDZEVmMTIzNDU2Nzg5MA==", "Y2k6ZGNrcl9wYXRfQWJDZEVmMTIzNDU2Nzg5MA=="),
    ('const apiToken = "a8f5f167f44f4964e6c998dee827110c"', "a8f5f167f44f4964e6c998dee827110c"),
    ('var jwtSecret = []byte("my-jwt-signing-secret-1234")', "my-jwt-signing-secret-1234"),
    ('private String secretKey = "abcdefgh123";', "abcdefgh123"),
])
def test_camel_case_secret_names_are_redacted(text: str, secret: str) -> None:
    assert redact(text).text == text.replace(secret, "[REDACTED:assignment]")


@pytest.mark.parametrize("text", ["tokenSecretary = 'abcdefgh'", "basic_auth = (user, pw)", "use_auth: enabled",
                                  "nextTokenizer = 'whitespace'"])
def test_names_that_merely_contain_a_camel_suffix_are_not_secret(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(("text", "kind", "secret"), [
    ("Success! token is hvs.CAESIJlU0wZ8aBcDeFgHiJkLmNoPqRs", "vault_token", "hvs.CAESIJlU0wZ8aBcDeFgHiJkLmNoPqRs"),
    ("HF hub: hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "huggingface_token", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567"),
    ("key 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 ok", "sendgrid_key",
     "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"),
    ("hook whsec_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "stripe_key", "whsec_AbCdEfGhIjKlMnOpQrStUvWxYz012345"),
    ("AGE-SECRET-KEY-1QYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQS", "age_key",
     "AGE-SECRET-KEY-1QYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQS"),
    ("$ gcloud auth print-access-token\nya29.a0AfH6SMBx3k9Lq2Zp7VwXyZ8aBcDeFgHiJkLmNoPqRs", "google_oauth_token",
     "ya29.a0AfH6SMBx3k9Lq2Zp7VwXyZ8aBcDeFgHiJkLmNoPqRs"),
    ("https://gitlab-ci-token:glcbt-64_AbCdEfGhIjKlMnOpQrSt@gitlab.com/g/p.git", "gitlab_token",
     "glcbt-64_AbCdEfGhIjKlMnOpQrSt"),
    ("machine h login u password Xk29dLq0", "netrc_password", "Xk29dLq0"),
    ("machine h\n  login u\n  password Xk29dLq0\n", "netrc_password", "Xk29dLq0"),
    ("redis://:Sup3rS3cret@redis.corp:6379/0", "url_password", "Sup3rS3cret"),
])
def test_more_secret_formats_are_redacted(text: str, kind: str, secret: str) -> None:
    r = redact(text)
    assert r.text == text.replace(secret, f"[REDACTED:{kind}]")
    assert (r.count, r.kinds, r.found) == (1, [kind], [secret])


@pytest.mark.parametrize("text", [
    "https://user:pass@host/path",
    "https://[user:passwd@]host",
    "https://user:&lt;password&gt;@host",
    "postgres://user:<password>@localhost/db",
    "https://user:${PASSWORD}@host",
    "    :param min_key: The minimum key length",
    ":type api_key: str or None",
    "cat: /etc/passwd: Permission denied",
    "ext/pre_shared_key: avoid unnecessary use of VLA",
    "%admin ALL=(ALL) NOPASSWD: /usr/bin/apt",
    "  cvs://:pserver:anoncvs@sources.redhat.com:/cvs/src",
    "      git-send-email: ssh/login style password requests",
    "type netrcLine struct {\n\tmachine string\n\tlogin string\n\tpassword string\n}",
    "machine h login u password password",
    "  * The IPv6Token= section in the [Network] section is deprecated, and",
    "          --root-password= but accepts a pre-hashed UNIX password as",
])
def test_placeholders_fields_paths_and_sudoers_are_not_secrets(text: str) -> None:
    r = redact(text)
    assert (r.text, r.count) == (text, 0)
