"""Credentials in HTTP headers, cookies and command lines: the value goes, the header or flag
name (and a user name) stays; placeholders, variables, prose and other commands' ``-u``/``-p``
stay whole. Table-driven, both sides; then the proof through the real CLI: a shell command line
and a raw HTTP dump read from a file leave no planted value in the answer or in any byte of
``LEAN_CTX_HOME`` (the database, its WAL, the archives)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from leanctx.context.secrets import redact

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))

HEX = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
B64 = "dXNlcjpUcjB1YjRkb3I="  # base64 of user:Tr0ub4dor
PW = "Tr0ub4dorXYZ77"

# (text, the secret value in it, its kind): exactly the value is replaced, nothing else moves
SECRETS = [
    # Authorization, every scheme and form
    (f"Authorization: Bearer {HEX}", HEX, "auth_header"),
    (f"Authorization: Basic {B64}", B64, "basic_auth"),
    ("Authorization: Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b", "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b",
     "auth_header"),
    ("Authorization: ApiKey Zq7Xw2Ce4Rv6Bt8Y", "Zq7Xw2Ce4Rv6Bt8Y", "auth_header"),
    ("Authorization: Zq7Xw2Ce4Rv6Bt8Y", "Zq7Xw2Ce4Rv6Bt8Y", "auth_header"),  # no scheme
    (f"authorization: bearer {HEX}", HEX, "auth_header"),  # HTTP/2 lower case
    (f"AUTHORIZATION: BEARER {HEX}", HEX, "auth_header"),
    (f"curl -H \"Authorization: Bearer {HEX}\" https://api.test/v1", HEX, "auth_header"),
    (f"curl -H 'Authorization: Bearer {HEX}' https://api.test/v1", HEX, "auth_header"),
    (f"wget --header=Authorization:Bearer\\ {HEX} https://api.test/", HEX, "auth_header"),
    (f"wget --header=\"Authorization: Bearer {HEX}\" https://api.test/", HEX, "auth_header"),
    (f"http api.test/v1 Authorization:'Bearer {HEX}'", HEX, "auth_header"),
    (f"http api.test/v1 Authorization=Bearer\\ {HEX}", HEX, "auth_header"),
    (f'{{"headers": {{"Authorization": "Bearer {HEX}"}}}}', HEX, "auth_header"),
    (f"  Authorization: Bearer {HEX}  ", HEX, "auth_header"),  # YAML
    (f"headers['Authorization'] = 'Bearer {HEX}'", HEX, "auth_header"),
    (f"> Authorization: Basic {B64}", B64, "basic_auth"),  # curl -v
    (f'"GET / HTTP/1.1\\r\\nAuthorization: Bearer {HEX}\\r\\nHost: api.test\\r\\n"', HEX, "auth_header"),
    (f'"{{\\"Authorization\\": \\"Bearer {HEX}\\"}}"', HEX, "auth_header"),  # JSON inside a string
    (f"Proxy-Authorization: Basic {B64}", B64, "basic_auth"),
    ('Authorization: Digest username="bob", realm="api", response="6629fae49393a05397450978507c4ef1"',
     'username="bob", realm="api", response="6629fae49393a05397450978507c4ef1"', "auth_header"),
    (("Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, "
      "SignedHeaders=host;x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"),
     ("Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, SignedHeaders=host;x-amz-date, "
      "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"), "auth_header"),
    # other credential headers
    (f"X-API-Key: {HEX}", HEX, "auth_header"),
    (f"curl -H 'X-Api-Key: {HEX}' https://api.test", HEX, "auth_header"),
    (f"http api.test X-API-Key:{HEX} name=x", HEX, "auth_header"),
    (f"Api-Key: {HEX}", HEX, "auth_header"),
    (f"x-auth-token: {HEX}", HEX, "auth_header"),
    (f"X-Access-Token: {HEX}", HEX, "auth_header"),
    ("curl -H 'PRIVATE-TOKEN: glxYz1234567890abcdEF' https://gitlab.test/api", "glxYz1234567890abcdEF", "auth_header"),
    (f'{{"X-Goog-Api-Key": "{HEX}"}}', HEX, "auth_header"),
    # cookies: the session ones only
    ("Cookie: theme=dark; sessionid=38afe7a8b9c0; lang=en", "38afe7a8b9c0", "cookie"),
    ("< Set-Cookie: SID=31d4d96e407aad42; Path=/; Secure; HttpOnly", "31d4d96e407aad42", "cookie"),
    ("curl -b 'AUTHSID=Zq7Xw2Ce; theme=dark' https://api.test", "Zq7Xw2Ce", "cookie"),
    ("curl --cookie=jwt_cookie=abc123def https://api.test", "abc123def", "cookie"),
    # command lines
    (f"curl -sS -u deploy:{PW} https://api.test/", PW, "cli_password"),
    (f"curl --user deploy:{PW} https://api.test/", PW, "cli_password"),
    (f"curl --user=deploy:{PW} https://api.test/", PW, "cli_password"),
    (f"curl -u 'deploy:{PW}' https://api.test/", PW, "cli_password"),
    (f"curl -udeploy:{PW} https://api.test/", PW, "cli_password"),
    (f"/usr/bin/curl --proxy-user me:{PW} https://api.test/", PW, "cli_password"),
    ("curl -u admin:hunter2 http://127.0.0.1/", "hunter2", "cli_password"),  # a short one too
    (f"http -a deploy:{PW} api.test", PW, "cli_password"),
    (f"http -A bearer -a {HEX} api.test", HEX, "cli_password"),
    (f"wget --user=bob --password {PW} https://api.test/", PW, "cli_password"),
    (f"wget --http-password {PW} https://api.test/", PW, "cli_password"),
    (f"kubectl --token={HEX} get pods", HEX, "cli_password"),
    (f"deploy --api-key {HEX}", HEX, "cli_password"),
    (f"curl --oauth2-bearer {HEX} https://api.test/", HEX, "cli_password"),
    (f"mysql -uroot -p{PW} shop", PW, "cli_password"),
    (f"mysqldump -h db -u root -p'{PW}' shop", PW, "cli_password"),
    (f"mariadb -p{PW} shop", PW, "cli_password"),
    (f"docker exec -it db mysql -uroot -p{PW} shop", PW, "cli_password"),
    (f"sshpass -p '{PW}' ssh deploy@host", PW, "cli_password"),
    (f"sshpass -p{PW} ssh deploy@host", PW, "cli_password"),
    (f"docker login -u me -p {PW} registry.test", PW, "cli_password"),
    (f"podman login -p {PW} quay.test", PW, "cli_password"),
    (f"helm registry login -u me -p {PW} registry.test", PW, "cli_password"),
    (f"docker login --password {PW} registry.test", PW, "cli_password"),
    (f"skopeo copy --src-creds me:{PW} docker://a docker://b", PW, "cli_password"),
    (f"htpasswd -b .htpasswd admin {PW}", PW, "cli_password"),
    (f"htpasswd -nbB admin {PW}", PW, "cli_password"),
]

# texts that must come out unchanged
NOT_SECRETS = [
    "Authorization: Bearer ${TOKEN}",
    "Authorization: Bearer $TOKEN",
    "Authorization: Bearer <token>",
    "Authorization: Bearer {{ token }}",
    "Authorization: Bearer YOUR_ACCESS_TOKEN",
    "Authorization: Bearer xxxxxxxxxxxxxxxx",
    "Authorization: Negotiate $KRB_TICKET",
    'curl -H "Authorization: Bearer $(cat ~/.token)" https://api.test',
    '-H "Authorization: token ${{ secrets.GITHUB_TOKEN }}"',
    "Set the Authorization header to the token.",
    "Authorization: required for every call",
    "Authorization: see the section below",
    'headers = {"Authorization": f"Bearer {token}"}',
    'headers = {"Authorization": "Bearer " + token}',
    'headers = {"Authorization": "Bearer %s" % token}',
    'headers = {"Authorization": token, "X-Api-Key": api_key}',
    "headers: { Authorization: `Bearer ${token}` }",
    "headers: { Authorization: accessToken }",
    "r.headers['Authorization'] = _basic_auth_str(self.username, self.password)",
    'authorization = request.headers.get("Authorization")',
    "authorization: Optional[str] = None",
    "API_KEY_HEADER = 'X-Api-Key'",
    "X-Request-Id: 8f14e45fceea167a",
    "Cookie: theme=dark; lang=en; _ga=GA1.2.3",
    "auth=(user, password)",
    "sort -u names.txt | uniq -u",
    "ps -u root",
    "pip install -U pkg",
    "git add -u",
    "ls -p; grep -p pattern file",
    "docker run -u 1000:1000 -p 8080:80 image",
    "curl -u deploy https://api.test/",  # no password: curl prompts
    "curl -u : --negotiate https://api.test/",
    'curl -u "$USER:$PASS" https://api.test/',
    "curl -s https://api.test | sort -u a:b",
    "mysql -u root -p shop",  # -p alone prompts
    "docker login --password-stdin registry.test",
    "psql --no-password shop_production",
    "--token TOKEN   the API token",
    "the --username and --password options instead",
    "kubectl --token=$KUBE_TOKEN get pods",
]


@pytest.mark.parametrize(("text", "secret", "kind"), SECRETS, ids=[t[:60] for t, _, _ in SECRETS])
def test_credential_values_are_redacted_and_their_names_kept(text: str, secret: str, kind: str) -> None:
    r = redact(text + "\nafter = 1\n")
    assert r.text == text.replace(secret, f"[REDACTED:{kind}]", 1) + "\nafter = 1\n"
    assert r.kinds == [kind] and r.found == [secret] and r.count == 1


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_placeholders_code_prose_and_other_commands_are_left_alone(text: str) -> None:
    r = redact(text + "\n")
    assert (r.text, r.count) == (text + "\n", 0)


def test_one_command_with_every_form_keeps_everything_but_the_values() -> None:
    cmd = (f"curl -sS -H 'Authorization: Bearer {HEX}' -H 'X-Api-Key: Zq7Xw2Ce4Rv6Bt8Y' -u deploy:{PW} "
           "-b 'theme=dark; sessionid=38afe7a8b9c0' https://api.test/v1 | sort -u")
    r = redact(cmd)
    assert r.text == ("curl -sS -H 'Authorization: Bearer [REDACTED:auth_header]' -H 'X-Api-Key: [REDACTED:auth_header]'"
                      " -u deploy:[REDACTED:cli_password] -b 'theme=dark; sessionid=[REDACTED:cookie]'"
                      " https://api.test/v1 | sort -u")
    assert r.found == [HEX, "Zq7Xw2Ce4Rv6Bt8Y", PW, "38afe7a8b9c0"]


def test_a_provider_token_in_a_header_keeps_its_provider_kind() -> None:
    gh = "ghp_Qw3rTy9UiOp2AsDf4GhJk6LzXc8VbNm1Qw3r"
    r = redact(f"curl -H 'Authorization: token {gh}' https://api.github.test")
    assert r.text == "curl -H 'Authorization: token [REDACTED:github_token]' https://api.github.test"
    assert r.kinds == ["github_token"] and r.count == 1


@pytest.mark.timeout(60)
def test_long_lines_of_names_and_commands_stay_linear() -> None:
    # each header name, cookie and command word looks at a bounded stretch after it: minified
    # text (one line) with thousands of them is not rescanned per name
    texts = ["curl -u 'x " * 20_000, "Cookie: a=b; " * 50_000, '{"key": "v", "api-key": "abc", ' * 40_000,
             f"Authorization: Bearer {HEX}\n" * 20_000]
    for text in texts:
        start = time.process_time()  # CPU: a loaded machine stretches wall time
        redact(text)
        assert time.process_time() - start < 10, text[:40]


# --- through the real CLI: nothing planted reaches LEAN_CTX_HOME --------------------------------

PLANTED = {
    "bearer": "0a1b2c3d4e5f60718293a4b5c6d7e8f9",
    "api_key": "Zq7Xw2Ce4Rv6Bt8Yn1Um",
    "curl_user": "Tr0ub4dorXYZ77",
    "cookie": "38afe7a8b9c0d1e2",
    "mysql": "MyS3cretPassw0rd",
    "sshpass": "Ssh9Pass7Word5",
    "dump_basic": "ZGVwbG95OkR1bXBQYXNzOTk=",
}


def _cli(home: Path, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_HOME=str(home), LEAN_CTX_NO_DAEMON="1", LEAN_CTX_AGENT_ID="header-tester")
    return subprocess.run([LEAN_CTX, *args], check=False, capture_output=True, text=True, env=env, cwd=project,
                          timeout=120)


@pytest.mark.timeout(180)
def test_header_and_command_line_credentials_never_reach_lean_ctx_home(tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    (project / ".git").mkdir()
    p = PLANTED
    (project / "session.log").write_text(
        "> GET /v1/items HTTP/1.1\n> Host: api.test\n"
        f"> Authorization: Basic {p['dump_basic']}\n> Accept: */*\n>\n< HTTP/1.1 200 OK\n"
        f"< Set-Cookie: sessionid={p['cookie']}; Path=/; HttpOnly\n")
    command = (f"true curl -sS -H 'Authorization: Bearer {p['bearer']}' -H 'X-Api-Key: {p['api_key']}' "
               f"-u deploy:{p['curl_user']} -b 'sessionid={p['cookie']}' http://127.0.0.1:9/; "
               f"true mysql -uroot -p{p['mysql']} shop; true sshpass -p {p['sshpass']} ssh host; "
               f"echo 'Authorization: Bearer {p['bearer']}'; cat session.log")
    outputs = [_cli(home, project, "shell", "--json", "--", command),
               _cli(home, project, "read", "session.log", "--mode", "full", "--json", "--session", "s1")]
    for out in outputs:
        assert out.returncode == 0, out.stderr
        assert "[REDACTED:" in out.stdout
        for secret in p.values():
            assert secret not in out.stdout, secret
    assert "Authorization: Bearer [REDACTED:" in outputs[0].stdout and "-u deploy:[REDACTED:" in outputs[0].stdout
    files = [f for f in home.rglob("*") if f.is_file()]
    assert any(f.name.endswith(".db") for f in files), files
    joined = b"".join(f.read_bytes() for f in files)
    assert b"[REDACTED:cli_password]" in joined and b"[REDACTED:auth_header]" in joined
    for f in files:
        raw = f.read_bytes()
        for kind, secret in p.items():
            assert secret.encode() not in raw, f"{kind} found in {f.relative_to(home)}"
