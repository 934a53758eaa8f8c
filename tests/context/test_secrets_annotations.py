"""Type annotations after a secret name are code, not values (``api_key: Optional[str] = None``),
while config lines that look alike stay redacted (``db_password: Password123``); the default
after an annotation still goes through the assignment rule. Table-driven, both sides; then the
proof through the real CLI: a settings module reads back verbatim (an ``edit --old`` copied
from the read matches), and no planted value reaches the answer or a byte of the data directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.context.secrets import redact

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))

# texts that must come out unchanged: annotations (types), in every language the brief names
ANNOTATIONS = [
    # Python: settings, dataclasses, parameters, locals
    "api_key: Optional[str] = None",
    "password: str",
    "secret_key: SecretStr",
    "db_password: SecretBytes",
    "access_token: str | None = None",
    "self.api_key: Optional[str] = None",
    "password: Annotated[str, Field(min_length=8)]",
    "progress_token: Annotated[ProgressToken | None, Field(alias='progressToken')] = None",
    "passphrase: NotRequired[Optional[str]]",
    "sort_key: Callable[[int], str] = lambda x: str(x)",
    "public_key: typing.Optional[str] = None,",
    "api_key: SecretStr = Field(default=None, alias='API_KEY')",
    "signing_key: str = Field(description='Private key for JWT signing (PEM format).')",
    "public_key: PublicKeyTypes = load_ssh_public_key(key_bytes)",
    "private_key: PrivateKey = settings.private_key",
    "def f(api_key: str, password: Optional[str] = None):",
    "def f(api_key: str, password: Optional[str] = None) -> None:",
    "def exchange(self, peer_public_key: X25519PublicKey) -> bytes:",
    "def make(username: str | None, password: HiddenText | None) -> CommandArgs:",
    "def __init__(self, read_token: Callable[[], Token | None]) -> None:",
    "def get(access_token: Token = Depends(oauth2)):",
    "pool_key: PoolKey[str]",
    "native_token: object = None",
    ":type password: bytes",
    # a class body, a multi-line signature, a local in a nested block: weak (PascalCase) types
    "class Settings(BaseSettings):\n    access_token: Token\n    db_password: Password\n    api_key: ApiKey  # doc\n",
    'class Settings(BaseModel):\n    """Doc."""\n\n    access_token: "Token"\n',
    "@dataclass\nclass Creds:\n    signing_key: ec.EllipticCurvePrivateKey\n    _public_key: SSHPublicKeyTypes\n",
    "    def encode(\n        self, private_key: dsa.DSAPrivateKey, f_priv: _FragList\n    ) -> None:\n",
    ("def _serialize(\n    private_key: SSHPrivateKeyTypes,\n    password: bytes,\n):\n    x = 1\n"
     "    public_key: SSHPublicKeyTypes\n"),
    "def load(obj):\n    try:\n        if 'd' not in obj:\n            private_key: Ed25519PrivateKey | Ed448PrivateKey\n",
    # TypeScript
    "apiKey?: string;",
    "  apiKey: string;",
    "private readonly secretKey: string",
    "private readonly api_key: ApiKey;",
    "interface Config {\n  api_key: ApiKey;\n  db_password: string | undefined;\n}\n",
    "constructor(private readonly apiKey: Secret) {}",
    # Go, Rust, Kotlin, Swift
    'APIKey string `json:"api_key"`',
    "pub api_key: String,",
    "pub api_key: Option<String>,",
    "pub(crate) signing_key: SigningKey,",
    "fn new(api_key: &str, password: &'static str) -> Self {",
    "val apiKey: String",
    "data class Creds(val password: CharArray, val apiKey: ApiKey)",
    "let apiKey: String?",
]

# (text, the secret value in it): config lines and literal defaults that must still be redacted
VALUES = [
    # YAML / .env / config: a bare value after ``name:``, even a PascalCase-looking one
    ("password: hunter2horse", "hunter2horse"),
    ("API_KEY: abcdEFGH1234", "abcdEFGH1234"),
    ("secret_key: My Secret Words", "My Secret Words"),
    ("db_password: Password123", "Password123"),
    ("db_password: Hunterhorse", "Hunterhorse"),  # type-shaped, but nothing says code
    ("  db_password: Hunterhorse  # prod", "Hunterhorse"),
    ("- password: Hunterhorse", "Hunterhorse"),
    ("{user: bob, password: Hunterhorse}", "Hunterhorse"),
    ("api_key: Zx9Vb8Nm7Lk6Jh5Gf4Ds3", "Zx9Vb8Nm7Lk6Jh5Gf4Ds3"),
    ("access_token: \"Token\"", "Token"),  # a forward reference, or a quoted YAML value: redacted
    ('"password": "SecretStr"', "SecretStr"),  # a quoted key is JSON, never an annotation
    ("password: Hunter2 = abc", "Hunter2"),  # digits: a password, even before ``=``
    ("db_password: Hunter[Horse]", "Hunter[Horse]"),  # a subscript of unknown names: a type only in code
    ("{Password:Hunterhorse}", "Hunterhorse"),  # a Go ``%+v`` dump: no space, no declaration
    ("class S:\n    api_key: ABCD1234EFGH\n", "ABCD1234EFGH"),  # not type-shaped, even in a class body
    ("class S:\n    apiKey: GfXfcx1sApIuuW7;\n", "GfXfcx1sApIuuW7"),  # random mixed case
    ("func f() {\n    - db_password: Shadow5194\n}\n", "Shadow5194"),  # ``- `` is no parameter list
    ("func connect() {\n    client_secret: Hunterhorse\n}\n", "Hunterhorse"),  # a function body (not Python)
    ("def f():\n    login(password: Hunterhorse)\n", "Hunterhorse"),  # a call, not a signature
    # the default after an annotation goes through the assignment rule
    ('api_key: str = "sk-live-abc123def"', "sk-live-abc123def"),
    ('password: Optional[str] = "hunter2horse"', "hunter2horse"),
    ('def f(password: str = "hunter2horse") -> None:', "hunter2horse"),
    ("def f(pin_password: int = 12345678):", "12345678"),
    ('val apiKey: String = "hunter2horse"', "hunter2horse"),
    ("X_MCP_HEADER_KEY: Final = 'xk2-Hq9m-Ab7z'", "xk2-Hq9m-Ab7z"),  # 'x-mcp-header' is a name
    ('class S(BaseModel):\n    signing_key: SecretStr = "Hunter2horseSIGN"\n', "Hunter2horseSIGN"),
    # code that is not an annotation: named arguments (C#, Swift), dict entries, YAML in a string
    ('func connect() {\n    login(password: "Hunter2horse")\n}\n', "Hunter2horse"),
    ('Connect(password: "hunter2horse");', "hunter2horse"),
    ('def f():\n    d = {PASSWORD: "Hunter2horse"}\n', "Hunter2horse"),
    ('class S:\n    MAPPING = {\n        PASSWORD: "Hunterhorse",\n    }\n', "Hunterhorse"),
    ('def test():\n    cfg = """\n    password: Hunterhorse\n    """\n', "Hunterhorse"),
    ("def test():\n    cfg = textwrap.dedent('''\\\n        db_password: Hunterhorse\n    ''')\n", "Hunterhorse"),
]


@pytest.mark.parametrize("text", ANNOTATIONS, ids=[f"{i}-{t.split(chr(10))[0][:50]}" for i, t in enumerate(ANNOTATIONS)])
def test_annotations_are_left_alone(text: str) -> None:
    r = redact(text + "\n")
    assert (r.text, r.count, r.found) == (text + "\n", 0, [])


@pytest.mark.parametrize(("text", "secret"), VALUES, ids=[f"{i}-{s}" for i, (_, s) in enumerate(VALUES)])
def test_values_that_look_like_annotations_are_still_redacted(text: str, secret: str) -> None:
    r = redact(text + "\nafter = 1\n")
    assert r.text == text.replace(secret, "[REDACTED:assignment]", 1) + "\nafter = 1\n"
    assert r.found == [secret] and r.kinds == ["assignment"]


def test_a_file_mixing_code_and_config_keeps_the_one_and_redacts_the_other() -> None:
    """One text (a shell ``cat`` of two files): the settings class reads verbatim, the YAML below
    it (at the same indentation as no declaration) is redacted, line for line."""
    code = ("class Settings(BaseSettings):\n"
            "    api_key: Optional[str] = None\n"
            "    access_token: Token\n"
            "    db_password: SecretStr\n")
    config = ("database:\n"
              "  db_password: Hunterhorse\n"
              "  api_key: Password123\n"
              "  secret_key: My Secret Words\n")
    r = redact(code + config)
    assert r.text == code + ("database:\n"
                             "  db_password: [REDACTED:assignment]\n"
                             "  api_key: [REDACTED:assignment]\n"
                             "  secret_key: [REDACTED:assignment]\n")
    assert r.found == ["My Secret Words", "Hunterhorse", "Password123"]


# --- through the real CLI ------------------------------------------------------------------------

SETTINGS = '''"""Settings."""
from typing import Optional

from pydantic import BaseSettings, Field, SecretStr


class Settings(BaseSettings):
    api_key: Optional[str] = None
    access_token: Token
    db_password: SecretStr = Field(default=None, alias="DB_PASSWORD")
    signing_key: str = "Hunter2horseLEAKONE"


def connect(api_key: str, password: Optional[str] = None) -> None:
    pass
'''
CONFIG = "database:\n  db_password: HunterhorseLEAKTWO\n  api_key: Password123LEAKTHREE\n"
LEAKS = ("Hunter2horseLEAKONE", "HunterhorseLEAKTWO", "Password123LEAKTHREE")


def _cli(home: Path, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_HOME=str(home), LEAN_CTX_DB=str(home / "data" / "events.db"), LEAN_CTX_NO_DAEMON="1",
               LEAN_CTX_AGENT_ID="annotation-tester")
    return subprocess.run([LEAN_CTX, *args], check=False, capture_output=True, text=True, env=env, cwd=project, timeout=120)


def _text(p: subprocess.CompletedProcess[str]) -> str:
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    return str((out[0] if isinstance(out, list) else out)["text"])


@pytest.mark.timeout(120)
def test_a_settings_module_reads_verbatim_and_edits_from_what_was_read(tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    (project / ".git").mkdir(parents=True)
    (project / "settings.py").write_text(SETTINGS)
    (project / "config.yaml").write_text(CONFIG)
    shown = _text(_cli(home, project, "read", "settings.py", "-m", "full", "--json", "--session", "a1"))
    for line in ("    api_key: Optional[str] = None", "    access_token: Token",
                 '    db_password: SecretStr = Field(default=None, alias="DB_PASSWORD")',
                 "def connect(api_key: str, password: Optional[str] = None) -> None:"):
        assert line in shown.split("\n"), line
    assert '    signing_key: str = "[REDACTED:assignment]"' in shown
    yaml_shown = _text(_cli(home, project, "read", "config.yaml", "-m", "full", "--json", "--session", "a1"))
    assert "  db_password: [REDACTED:assignment]\n  api_key: [REDACTED:assignment]" in yaml_shown
    cat = _cli(home, project, "shell", "--json", "--", "cat", "settings.py", "config.yaml")
    assert cat.returncode == 0, cat.stderr
    assert "access_token: Token" in cat.stdout and "api_key: Optional[str] = None" in cat.stdout
    # the agent copies a line it saw into ``edit --old``: it matches the file
    old = next(line for line in shown.split("\n") if "api_key: Optional" in line)
    ed = _cli(home, project, "edit", "settings.py", "--old", old, "--new", "    api_key: Optional[str] = ''",
              "--session", "a1", "--json")
    assert ed.returncode == 0, ed.stderr
    assert json.loads(ed.stdout)["replacements"] == 1
    assert "    api_key: Optional[str] = ''\n" in (project / "settings.py").read_text()
    kept = [f for f in (home / "data").rglob("*") if f.is_file()]
    assert home / "data" / "events.db" in kept
    joined = b"".join(f.read_bytes() for f in kept)
    assert b"[REDACTED:assignment]" in joined
    for leak in LEAKS:
        assert leak not in shown + yaml_shown + cat.stdout
        assert leak.encode() not in joined, leak
