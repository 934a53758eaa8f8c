"""Redaction fixes of the seventh round: two false positives, each beside the secrets that must
still go.

- A constant naming a private key's BEGIN marker (cryptography's ``_SK_START = b"-----BEGIN
  OPENSSH PRIVATE KEY-----"``, Java's ``PKCS1_HEADER``, Rust's ``PKCS8_PEM_BEGIN``, a
  ``startswith("-----BEGIN RSA PRIVATE KEY-----")`` check) is no key: the block rule took it
  through the END constant (or, with no END in the text, to the end), code and all. A block is a
  key when what follows its BEGIN line reads as a key's body: a base64 line or a PEM header
  (``Proc-Type:``, ``Version:``), maybe inside string syntax (``\\n" +``, ``",``), a diff, grep or
  ``cat -n`` prefix, or a random base64 run (32+ characters) on its first line.
- A changelog subject opening with a two-letter word (gnutls' ``pre_shared_key: do not send
  extension when no identities are present``) is prose, not a passphrase.

Measured: ``leanctx.ops.files.redact_text`` over every file, counting the lines it changed — the
2,930 .py files of the venv's site-packages, its 168 docs (.md, .rst, .txt, METADATA, changelogs)
and the 1,242 distinct changelogs/NEWS of /usr/share/doc (gzip read): before 18 / 1 / 16 lines,
after 16 / 1 / 15 (the two ``cryptography`` ``ssh.py`` lines and the gnutls subject); no other line
changed.

Pure function tests over ``redact`` and ``redact_text`` (and 1 MB pathological lines for the
new lookahead), plus the real ``lean-ctx read`` console script on a module holding both.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leanctx.context.secrets import redact
from leanctx.ops.files import redact_text

from .secret_checks import MB, assert_redacts_in_linear_time
from .secret_checks import secret_cli as _cli

pytestmark = pytest.mark.timeout(120)

# --- 1. constants naming a BEGIN marker ------------------------------------------------------------

# real code (cryptography's ssh.py as installed here; the others from public repositories): no key
MARKER_CODE = {
    "cryptography ssh.py": '''\
_SSH_PUBKEY_RC = re.compile(rb"\\A(\\S+)[ \\t]+(\\S+)")
_SK_MAGIC = b"openssh-key-v1\\0"
_SK_START = b"-----BEGIN OPENSSH PRIVATE KEY-----"
_SK_END = b"-----END OPENSSH PRIVATE KEY-----"
_BCRYPT = b"bcrypt"
_NONE = b"none"
_DEFAULT_CIPHER = b"aes256-ctr"
_DEFAULT_ROUNDS = 16

# re is only way to work on bytes-like data
_PEM_RC = re.compile(_SK_START + b"(.*?)" + _SK_END, re.DOTALL)
''',
    "java constants": '''\
    private static final String PKCS1_HEADER = "-----BEGIN RSA PRIVATE KEY-----";
    private static final String PKCS1_FOOTER = "-----END RSA PRIVATE KEY-----";
    private static final String OPENSSL_DSA_HEADER = "-----BEGIN DSA PRIVATE KEY-----";
    private static final String OPENSSL_DSA_FOOTER = "-----END DSA PRIVATE KEY-----";
''',
    "rust consts": '''\
const PKCS8_PEM_BEGIN: &str = "-----BEGIN PRIVATE KEY-----";
const PKCS8_PEM_END: &str = "-----END PRIVATE KEY-----";

/// Framings an operator plausibly pastes instead of PKCS#8.
const PKCS1_PEM_BEGIN: &str = "-----BEGIN RSA PRIVATE KEY-----";
const ENCRYPTED_PKCS8_PEM_BEGIN: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----";
const SEC1_EC_PEM_BEGIN: &str = "-----BEGIN EC PRIVATE KEY-----";
''',
    "php": '''\
        $begin_private = "-----BEGIN RSA PRIVATE KEY-----";
        $end_private = "-----END RSA PRIVATE KEY-----";
        if ($begin_private !== substr($this->private_key, 0, strlen($begin_private))) {
            $this->private_key = $begin_private . "\\n" . $this->private_key;
        }
''',
    "python header/footer": '''\
def normalize_pem(pem_str: str) -> str:
    header = "-----BEGIN RSA PRIVATE KEY-----"
    footer = "-----END RSA PRIVATE KEY-----"
    s = pem_str.strip()
    if header in s and footer in s and "\\n" not in s:
        inner = s[len(header):-len(footer)]
        return f"{header}\\n{inner}\\n{footer}\\n"
''',
    "c# const": '''\
            const string pemprivheader = "-----BEGIN RSA PRIVATE KEY-----";
            const string pemprivfooter = "-----END RSA PRIVATE KEY-----";
            string pemstr = instr.Trim();
''',
    "yara string": '''\
        $rsa_begin = "-----BEGIN RSA PRIVATE KEY-----" wide ascii
        $rsa_structure = {30 82 ?? ?? 02 01 00 02}
''',
    "javascript checks": '''\
  if (
    !candidate.startsWith("-----BEGIN PRIVATE KEY-----\\n") ||
    !candidate.endsWith("\\n-----END PRIVATE KEY-----")
  ) {
    fail(CLASSIFICATION.INVALID_PRIVATE_KEY);
  }
''',
    # no END anywhere: the rule ran to the end of the text
    "unterminated check": '''\
    if not private_key_pem.startswith("-----BEGIN RSA PRIVATE KEY-----"):
        logger.error("Generated private key has unexpected format")
        raise KeyGenerationError("Generated private key has unexpected format")
    return private_key_pem
''',
    "unterminated constant": '''\
_PEM = "-----BEGIN RSA PRIVATE KEY-----"


def test_scan_detects_private_key_pem():
    assert ss.scan_text("key:\\n%s\\n..." % _PEM)
''',
    "placeholder body": "-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----\n",
}


@pytest.mark.parametrize("code", MARKER_CODE.values(), ids=list(MARKER_CODE))
def test_constants_naming_a_begin_marker_are_kept(code: str) -> None:
    r = redact(code)
    assert (r.text, r.count) == (code, 0)
    assert redact_text(code) == (code, 0)  # the rule of reads, search and shell (line numbers kept)


def test_the_installed_cryptography_ssh_module_keeps_its_markers() -> None:
    ssh = pytest.importorskip("cryptography.hazmat.primitives.serialization.ssh")
    assert ssh.__file__ is not None
    text = Path(ssh.__file__).read_text()
    assert "_SK_START = b\"-----BEGIN OPENSSH PRIVATE KEY-----\"\n" in text
    red, _ = redact_text(text)
    assert "private_key" not in redact(text).kinds
    assert red.split("\n") == text.split("\n")


# real key blocks in the shapes they are met in: each body piece must go, the text around stays
B1 = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun"
B2 = "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK"
B3 = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtz"
RSA = "-----BEGIN RSA PRIVATE KEY-----"
RSA_END = "-----END RSA PRIVATE KEY-----"

KEYS = {
    "pem file": (f"a = 1\n{RSA}\n{B1}\n{B2}\n{RSA_END}\nafter = 2\n", "after = 2"),
    "short body": (f"x {RSA}\nLEAK\n{RSA_END} after", " after"),
    "javascript concatenation": (f'privateKey = "{RSA}" +\n  "{B1}" +\n  "{B2}" +\n  "{RSA_END}";\nafter();\n',
                                 "after();"),
    "java escaped lines": (f'String k = "{RSA}\\n" +\n    "{B1}\\n" +\n    "{RSA_END}";\nafter();', "after();"),
    "json service account": ((f'{{"private_key": "-----BEGIN PRIVATE KEY-----\\n{B1}\\n{B2}\\n'
                              f'-----END PRIVATE KEY-----\\n", "client_email": "a@b.iam"}}'), "client_email"),
    "python parenthesised": (f'KEY = (\n    "{RSA}\\n"\n    "{B1}\\n"\n    "{RSA_END}\\n"\n)\nafter = 1\n',
                             "after = 1"),
    "yaml block": (f"tls:\n  key: |\n    {RSA}\n    {B1}\n    {RSA_END}\n  after: 1\n", "after: 1"),
    "encrypted pem": (f"{RSA}\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,9F2E3A\n\n{B1}\n{RSA_END}\nok\n",
                      "\nok"),
    "pgp block": ((f"-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n{B1}\n=Xk2d\n"
                   "-----END PGP PRIVATE KEY BLOCK-----\nok\n"), "\nok"),
    "grep -rn": ((f"keys/id_rsa:1:-----BEGIN OPENSSH PRIVATE KEY-----\nkeys/id_rsa:2:{B3}\n"
                  f"keys/id_rsa:3:{B1}\nkeys/id_rsa:4:-----END OPENSSH PRIVATE KEY-----\n"), ""),
    "grep -rn encrypted": (f"k.pem:1:{RSA}\nk.pem:2:Proc-Type: 4,ENCRYPTED\nk.pem:3:{B1}\nk.pem:4:{RSA_END}\n", ""),
    "cat -n": (f"     1\t{RSA}\n     2\t{B1}\n     3\t{RSA_END}\n", ""),
    "diff removed": (f"-{RSA}\n-{B1}\n-{B2}\n-{RSA_END}\n+KEY_FILE = 'x'\n", "+KEY_FILE = 'x'"),
    "one line with spaces": (f"KEY={RSA} {B1}{B2} {RSA_END} rest", " rest"),
    "crlf": (f"{RSA}\r\n{B1}\r\n{RSA_END}\r\nok\r\n", "\r\nok"),
    "unterminated": (f"before\n{RSA}\n{B1}\n{B2}\n", "before\n"),
    "unterminated at the end": (f"{RSA}\n{B1}", ""),
    "marker constant then a key": (f'BEGIN = "{RSA}"\nEND = "{RSA_END}"\n\nKEY = """{RSA}\n{B1}\n{RSA_END}"""\n',
                                   'BEGIN = "-----BEGIN RSA PRIVATE KEY-----"\nEND = '),
}


@pytest.mark.parametrize(("text", "kept"), KEYS.values(), ids=list(KEYS))
def test_real_key_blocks_stay_redacted_whole(text: str, kept: str) -> None:
    for red in (redact(text).text, redact_text(text)[0]):
        assert "[REDACTED:private_key]" in red
        for body in (B1, B2, B3, "LEAK", "Xk2d"):
            assert body not in red, body
        assert kept in red


# --- 2. changelog prose opening with a two-letter word --------------------------------------------

PROSE = [
    "pre_shared_key: do not send extension when no identities are present",  # gnutls' changelog
    "pre_shared_key: do not send it when the server did not negotiate it",
    "  * pre_shared_key: do not send it when resuming with a ticket",
    "- secret_key: no longer read it from the environment when unset",
    "access_token: Do not log it when the request fails",
]


@pytest.mark.parametrize("line", PROSE)
def test_changelog_prose_opening_with_a_short_word_is_kept(line: str) -> None:
    r = redact(line + "\n")
    assert (r.text, r.count) == (line + "\n", 0)


@pytest.mark.parametrize(("line", "secret"), [
    ("pre_shared_key: Zx8kQ2mLp9vR4tW7", "Zx8kQ2mLp9vR4tW7"),
    ("pre_shared_key: do not", "do not"),  # too few words for a sentence
    ("password: to be or not", "to be or not"),  # one small word: a passphrase
    ("secret_key: sk with the spaces tapir", "sk with the spaces tapir"),  # ``sk``: a key's prefix
    ("password: ab to the moon and back", "ab to the moon and back"),  # ``ab``: no word of prose
    ("export DB_PASSWORD=do not send it when", "do not send it when"),  # ``=``: a sentence is never written so
])
def test_values_beside_the_prose_rule_stay_redacted(line: str, secret: str) -> None:
    assert redact(line).text == line.replace(secret, "[REDACTED:assignment]")


# --- pathological lines for the new lookahead --------------------------------------------------

PATHOLOGICAL = {
    "markers, no end": lambda: ('"-----BEGIN PRIVATE KEY-----" ' + "a" * 60 + ",") * (MB // 90),
    "markers in a row": lambda: "-----BEGIN PRIVATE KEY-----" * (MB // 27),
    "marker, long run without a digit": lambda: "-----BEGIN PRIVATE KEY----- " + "aB" * (MB // 2),
    "markers, grep prefixes": lambda: ("-----BEGIN PRIVATE KEY-----\n" + "a" * 70 + "\t") * (MB // 99),
}


@pytest.mark.parametrize("make", PATHOLOGICAL.values(), ids=list(PATHOLOGICAL))
def test_pathological_megabyte_texts_redact_in_linear_time(make: object) -> None:
    assert callable(make)
    assert_redacts_in_linear_time(make())


# --- the real CLI ------------------------------------------------------------------------------

MODULE = f'''\
"""OpenSSH key handling."""

_SK_START = b"-----BEGIN OPENSSH PRIVATE KEY-----"
_SK_END = b"-----END OPENSSH PRIVATE KEY-----"
_PEM_RC = re.compile(_SK_START + b"(.*?)" + _SK_END, re.DOTALL)

TEST_KEY = b"""-----BEGIN OPENSSH PRIVATE KEY-----
{B3}
{B1}
-----END OPENSSH PRIVATE KEY-----
"""

CHANGES = """
pre_shared_key: do not send extension when no identities are present
"""
'''


def test_a_module_with_marker_constants_and_a_test_key_reads_with_its_code(tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    (project / ".git").mkdir(parents=True)
    (project / "keys.py").write_text(MODULE)
    p = _cli(home, project, "read", "keys.py", "-m", "full", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    shown = str((out[0] if isinstance(out, list) else out)["text"]).split("\n")
    for line in ('_SK_START = b"-----BEGIN OPENSSH PRIVATE KEY-----"', '_SK_END = b"-----END OPENSSH PRIVATE KEY-----"',
                 '_PEM_RC = re.compile(_SK_START + b"(.*?)" + _SK_END, re.DOTALL)',
                 'TEST_KEY = b"""[REDACTED:private_key]',
                 "pre_shared_key: do not send extension when no identities are present"):
        assert any(s.endswith(line) for s in shown), line
    joined = b"".join(f.read_bytes() for f in (home / "data").rglob("*") if f.is_file())
    for body in (B1, B3):
        assert body not in p.stdout
        assert body.encode() not in joined, body
