"""Assignments of secrets: quoted values with spaces, ``;`` or ``,``, unquoted values up to
whitespace, config lines of several words, in the forms of ``.env``, shell, YAML, JSON, TOML,
INI and code; and what is left alone. Then the proof through the real CLI: a file holding
every form is read (and cat through ``lean-ctx shell``), and no planted value reaches a byte of
the data directory (the database, its WAL, the archives)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.context.secrets import redact

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))

# (line, the secret value in it): every value must be gone from the redacted text
SECRET_FORMS = [
    ('DB_PASSWORD = "correct horse battery"', "correct horse battery"),
    ("ADMIN_PASSWORD=ab;cdLEAKONE", "ab;cdLEAKONE"),
    ("ADMIN_PASSWORD=ab,cd,LEAKTWO", "ab,cd,LEAKTWO"),
    ("export DB_PASSWORD='correct horse staple'", "correct horse staple"),
    ("export API_KEY=Zq8;w3,LEAKTHREE", "Zq8;w3,LEAKTHREE"),
    ('export STRIPE_SECRET="semi;colon, comma value"', "semi;colon, comma value"),
    ("password: yaml horse battery", "yaml horse battery"),
    ("  db_password: indented yaml words  # the prod one", "indented yaml words"),
    ('  password: "quoted yaml, with; stuff"', "quoted yaml, with; stuff"),
    ("- DB_PASSWORD=compose secret value", "compose secret value"),
    ('{"password": "json pass, with comma; and semi"}', "json pass, with comma; and semi"),
    (r'{"client_secret": "esc\"aped quote inside"}', r'esc\"aped quote inside'),
    ("password = 'toml literal pass'", "toml literal pass"),
    ('api_key = "toml basic; string"', "toml basic; string"),
    ("password = ini style pass word", "ini style pass word"),
    ("DB_PASSWORD=dotenv unquoted words", "dotenv unquoted words"),
    ('connect(password="hunter two three", user="x")', "hunter two three"),
    ("PASSWORD = b'bytes secret value'", "bytes secret value"),
    ('apiKey := "go style secret"', "go style secret"),
    ("curl https://x.test/v1?api_key=QueryLEAKFOUR&page=2", "QueryLEAKFOUR&page=2"),
    ("run --password=Cli;LEAKFIVE --verbose", "Cli;LEAKFIVE"),
    ('PASSWORD="never closed quote runs on', "never closed quote runs on"),
    ("ADMIN_PASSWORD=ab;cdLEAKSIX;", "ab;cdLEAKSIX"),
]

# lines that must come out unchanged
NOT_SECRETS = [
    "PASSWORD_MIN_LENGTH = 8",
    "TOKEN_TTL = 3600",
    "API_KEY_HEADER = 'X-Api-Key'",  # the name does not end with a secret suffix
    "def connect(password: str, api_key: str) -> None:",
    "    self.password = password",
    "    conn = connect(password=password, user=user)",
    '    API_KEY = os.environ["API_KEY"]',
    '    token_secret = os.getenv("TOKEN_SECRET", "")',
    "    idempotency_key: str | None",
    "    use_key = key is not None",
    "    password: The password part of the URL, or omit for no password.",
    "GITHUB_TOKEN=${GITHUB_TOKEN}",
    "API_KEY=<your key here>",
    "SECRET_KEY=changeme",
    'cache_key = f"{user}:{item}"',
    "_NOT_SECRET_KEY = ('.env.example', '.env.sample')",
    "if value_token := next(tokens):",
    'PRIMARY_KEY = "id"',
]


@pytest.mark.parametrize(("line", "secret"), SECRET_FORMS, ids=[s for _, s in SECRET_FORMS])
def test_secret_forms_are_redacted_whole(line: str, secret: str) -> None:
    r = redact(line + "\nafter = 1\n")
    # exactly the value goes, whole; the name, the quotes and the next line stay
    assert r.text == line.replace(secret, "[REDACTED:assignment]") + "\nafter = 1\n"
    assert r.found == [secret] and r.kinds == ["assignment"]


def test_what_surrounds_the_value_is_kept() -> None:
    text = ('DB_PASSWORD = "correct horse battery"  # shared\n'
            "  password: yaml horse battery  # comment stays\n"
            "call(api_key=Abcd;efgh, retries=3)\n")
    assert redact(text).text == ('DB_PASSWORD = "[REDACTED:assignment]"  # shared\n'
                                 "  password: [REDACTED:assignment]  # comment stays\n"
                                 "call(api_key=[REDACTED:assignment], retries=3)\n")


@pytest.mark.parametrize("line", NOT_SECRETS)
def test_obvious_non_secrets_are_left_alone(line: str) -> None:
    r = redact(line + "\n")
    assert (r.text, r.count) == (line + "\n", 0)


def test_provider_tokens_inside_quotes_keep_their_kind() -> None:
    r = redact('OPENAI_API_KEY="sk-proj-abcdefghijklmnopqrstuvwxyz012345"\n')
    assert r.text == 'OPENAI_API_KEY="[REDACTED:openai_key]"\n' and r.kinds == ["openai_key"]


# --- through the real CLI: nothing planted reaches the data directory ------------------------------

PLANTED = {
    "quoted_spaces": "correct horse battery LEAK1",
    "unquoted_semicolon": "ab;cdLEAK2",
    "unquoted_commas": "ab,cd,LEAK3",
    "yaml_words": "yaml horse battery LEAK4",
    "json_commas": "json pass, with; LEAK5",
    "toml_single": "toml literal LEAK6",
    "shell_export": "export quoted LEAK7",
    "ini_words": "ini style LEAK8",
}


def _config() -> str:
    p = PLANTED
    lines = [
        f'DB_PASSWORD = "{p["quoted_spaces"]}"',
        f"ADMIN_PASSWORD={p['unquoted_semicolon']}",
        f"BACKUP_PASSWORD={p['unquoted_commas']}",
        f"password: {p['yaml_words']}",
        f'{{"client_secret": "{p["json_commas"]}"}}',
        f"api_key = '{p['toml_single']}'",
        f"export DEPLOY_TOKEN='{p['shell_export']}'",
        f"smtp_password = {p['ini_words']}",
    ]
    filler = [f"setting_{i} = {i * 7 % 13}  # tuning knob {i}" for i in range(900)]
    return "\n".join(filler[:20] + lines + filler[20:] + lines) + "\n"


def _cli(home: Path, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_HOME=str(home), LEAN_CTX_DB=str(home / "data" / "events.db"), LEAN_CTX_NO_DAEMON="1",
               LEAN_CTX_AGENT_ID="secret-tester")
    return subprocess.run([LEAN_CTX, *args], check=False, capture_output=True, text=True, env=env, cwd=project, timeout=120)


@pytest.mark.timeout(180)
def test_quoted_and_unquoted_secrets_never_reach_the_db_or_the_archives(tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    (project / ".git").mkdir()
    (project / "deploy.conf").write_text(_config())
    outputs = [
        _cli(home, project, "read", "deploy.conf", "--mode", "full", "--json", "--session", "s1"),
        _cli(home, project, "read", "deploy.conf", "--mode", "full", "--json", "--session", "s2",
             "--max-tokens", "600"),  # capped: the whole view goes to an archive
        _cli(home, project, "read", "deploy.conf", "--mode", "aggressive", "--json", "--session", "s3"),
        _cli(home, project, "shell", "--json", "--", "cat", "deploy.conf"),
    ]
    for p in outputs:
        assert p.returncode == 0, p.stderr
        for secret in PLANTED.values():
            assert secret not in p.stdout, secret
    capped = json.loads(outputs[1].stdout)
    capped = capped[0] if isinstance(capped, list) else capped
    assert capped["capped"] and capped["archive_id"] and capped["redactions"] >= 2 * len(PLANTED)
    data = home / "data"
    archives = sorted((data / "archives").glob("*"))
    assert archives, "no archive was written: the byte check below would be vacuous"
    kept = [p for p in data.rglob("*") if p.is_file()]
    assert data / "events.db" in kept
    joined = b"".join(p.read_bytes() for p in kept)
    assert b"[REDACTED:assignment]" in joined
    for path in kept:
        raw = path.read_bytes()
        for kind, secret in PLANTED.items():
            for part in (secret, secret.split()[-1]):  # the whole value, and its distinctive LEAKn tail
                assert part.encode() not in raw, f"{kind} ({part!r}) found in {path.relative_to(home)}"


@pytest.mark.parametrize("head", ["OPENSSH", "RSA", "EC", "ENCRYPTED", "PGP", ""])
def test_a_private_key_block_without_its_end_line_is_redacted_to_the_end(head: str) -> None:
    """Every caller of ``redact`` (search snippets, expand, shell) gets the same rule as reads:
    a block cut before its END line (``head -3 id_rsa``, a truncated paste) is a secret too."""
    begin = f"-----BEGIN {head + ' ' if head else ''}PRIVATE KEY-----"
    r = redact(f"before\n{begin}\nAAAAB3NzaLEAKONE\nLEAKTWOxyz\n")
    assert r.text == "before\n[REDACTED:private_key]" and r.count == 1
    closed = redact(f"x {begin}\nLEAK\n-----END {head + ' ' if head else ''}PRIVATE KEY----- after")
    assert closed.text == "x [REDACTED:private_key] after"  # a closed block stops at its END


# --- several-word values of ``*_KEY`` names (re-audit: ``secret_key: sk with spaces tapir``) ----------

# (line, the secret value in it): a value of several words under any secret name goes whole, even
# when its first word alone is under the 4-character minimum
KEY_PHRASES = [
    ("API_KEY: sk words unquoted okapi", "sk words unquoted okapi"),
    ("secret_key: sk with spaces tapir", "sk with spaces tapir"),
    ("api_key=live words unquoted bison", "live words unquoted bison"),
    ("api_key: sk lower yaml gecko", "sk lower yaml gecko"),
    ("  access_key: sk indented yaml lemur  # note", "sk indented yaml lemur"),
    ("- PRIVATE_KEY=sk compose list heron", "sk compose list heron"),
    ("export X_API_KEY=sk export unquoted ibex", "sk export unquoted ibex"),
    ('export X_API_KEY="sk export quoted yak"', "sk export quoted yak"),
    ("export secret_key='sk single quoted eland'", "sk single quoted eland"),
    ('api_key = "a b c"', "a b c"),
    ("secret_key = a b c", "a b c"),
    ("SECRET_KEY = sk ini upper marmot", "sk ini upper marmot"),
    ("client_secret: ab cd", "ab cd"),
    ("auth_token = xy zw", "xy zw"),
    ("apikey: sk camel words quokka", "sk camel words quokka"),
]

# code and prose under ``*_KEY`` names that must come out unchanged
KEY_NOT_SECRETS = [
    "    use_key = key is not None",
    "    has_key = key not in seen",
    "    sort_key: The key used to sort rows.",
    "    api_key: The API key, or omit for none,",
    "SECRET_KEY=${SECRET_KEY}",
    "export API_KEY=<your api key>",
    '    api_key = os.environ["API_KEY"]',
    "    connect(api_key=api_key)",
    "    idempotency_key: str | None = None",
    "    x_key = a if b else c",
]


@pytest.mark.parametrize(("line", "secret"), KEY_PHRASES, ids=[s for _, s in KEY_PHRASES])
def test_key_phrases_are_redacted_whole(line: str, secret: str) -> None:
    r = redact(line + "\nafter_key = 1\n")
    assert r.text == line.replace(secret, "[REDACTED:assignment]") + "\nafter_key = 1\n"
    assert r.found == [secret] and r.count == 1 and r.kinds == ["assignment"]


@pytest.mark.parametrize("line", KEY_NOT_SECRETS)
def test_key_code_and_prose_are_left_alone(line: str) -> None:
    r = redact(line + "\n")
    assert (r.text, r.count) == (line + "\n", 0)


def test_a_key_phrase_never_runs_past_its_line() -> None:
    r = redact("secret_key: sk with spaces tapir\nnext_line words stay here\nAPI_KEY: sk more okapi\n")
    assert r.text == ("secret_key: [REDACTED:assignment]\nnext_line words stay here\n"
                      "API_KEY: [REDACTED:assignment]\n")
    assert r.found == ["sk with spaces tapir", "sk more okapi"]


@pytest.mark.timeout(120)
def test_key_phrases_never_reach_the_data_directory(tmp_path: Path) -> None:
    """The re-audit's file, read through the real CLI: no word of a value reaches a byte on disk."""
    project, home = tmp_path / "proj", tmp_path / "home"
    (project / "sec").mkdir(parents=True)
    (project / ".git").mkdir()
    (project / "sec" / "c2.yaml").write_text(
        "API_KEY: sk words unquoted okapi\nsecret_key: sk with spaces tapir\napi_key=live words unquoted bison\n")
    p = _cli(home, project, "read", "sec/c2.yaml", "-m", "full", "--json", "--session", "k1")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    out = out[0] if isinstance(out, list) else out
    assert out["redactions"] == 3
    kept = [f for f in (home / "data").rglob("*") if f.is_file()]
    assert home / "data" / "events.db" in kept
    joined = b"".join(f.read_bytes() for f in kept)
    assert b"[REDACTED:assignment]" in joined
    for word in ("okapi", "tapir", "bison", "unquoted", "with spaces"):
        assert word not in p.stdout
        assert word.encode() not in joined, word
