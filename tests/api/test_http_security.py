"""Security: bind policy, bearer token, Host/Origin allowlist, rate limit, content type, body
size, the agent-token secret, and the real ``lean-ctx serve`` process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from leanctx.api.http.config import is_loopback
from leanctx.errors import InvalidInput

from .test_http_common import Api, SSEReader, make_config, make_server  # noqa: F401

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))  # this interpreter's, not whatever PATH finds
TOKEN = "s3cret-token-for-tests-0123456789"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_loopback_detection() -> None:
    assert all(map(is_loopback, ["127.0.0.1", "localhost", "::1", "[::1]", "127.1.2.3"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "10.0.0.5", "example.org", "192.168.1.1"]))


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "::", "box.example.org"])
def test_a_non_loopback_bind_needs_a_token(tmp_path: Path, host: str) -> None:
    cfg = make_config(tmp_path, host=host)
    with pytest.raises(InvalidInput) as e:
        cfg.validate()
    assert e.value.code == "HTTP_TOKEN_REQUIRED"
    with pytest.raises(InvalidInput) as e:
        make_config(tmp_path, host=host, token="short").validate()
    assert e.value.code == "HTTP_TOKEN_TOO_SHORT"
    make_config(tmp_path, host=host, token=TOKEN).validate()  # accepted (not bound here)
    assert not make_config(tmp_path, host=host, token=TOKEN).exec_allowed()
    assert make_config(tmp_path, host=host, token=TOKEN).effective_rate() == (50.0, 100)


def test_serve_refuses_to_start_beyond_loopback_without_a_token(tmp_path: Path) -> None:
    env = {**os.environ, "LEAN_CTX_DB": str(tmp_path / "e.db"), "LEAN_CTX_HOME": str(tmp_path / "home")}
    env.pop("LEAN_CTX_HTTP_TOKEN", None)
    p = subprocess.run([LEAN_CTX, "serve", "--host", "0.0.0.0", "--port", str(free_port())], capture_output=True,
                       text=True, timeout=30, env=env)
    assert p.returncode == 2 and "error[HTTP_TOKEN_REQUIRED]" in p.stderr, p.stderr
    p = subprocess.run([LEAN_CTX, "--json", "serve", "--host", "0.0.0.0", "--token", "tiny"], capture_output=True,
                       text=True, timeout=30, env=env)
    assert p.returncode == 2 and '"HTTP_TOKEN_TOO_SHORT"' in p.stdout
    assert not (tmp_path / "e.db").exists()  # refused before opening anything


def test_bearer_token_on_every_route_but_health(make_server) -> None:  # noqa: F811
    server = make_server(token=TOKEN)
    bare = httpx.Client(base_url=server.url)
    assert bare.get("/health").status_code == 200
    for method, path in (("GET", "/v1/agents/list"), ("GET", "/metrics"), ("GET", "/openapi.json"),
                         ("GET", "/.well-known/agent.json"), ("POST", "/a2a"), ("GET", "/v1/events"),
                         ("POST", "/v1/agents/register"), ("GET", "/no/such/route")):
        r = bare.request(method, path)
        assert r.status_code == 401 and r.json()["error"]["code"] == "AUTH_TOKEN_REQUIRED", (path, r.text)
        assert r.headers["www-authenticate"].startswith("Bearer")
    r = bare.get("/v1/agents/list", headers={"Authorization": "Bearer " + TOKEN[:-1] + "X"})
    assert r.status_code == 401 and r.json()["error"]["code"] == "AUTH_TOKEN_INVALID"
    r = bare.get("/v1/agents/list", headers={"Authorization": "Basic " + TOKEN})
    assert r.status_code == 401
    api = Api(server, headers={"Authorization": f"Bearer {TOKEN}"})
    a = api.register()
    assert api.ok("/v1/agents/heartbeat", a)["ok"]
    stream = SSEReader(api.url + "/v1/events", headers={"Authorization": f"Bearer {TOKEN}"}).open()
    api.ok("/v1/chat/post", a, title="t", body="b")
    assert stream.wait_for(lambda e: e.event == "message.posted")
    # the agent token alone is not the bearer token
    r = bare.post("/v1/agents/heartbeat", json={}, headers=a.headers)
    assert r.status_code == 401 and r.json()["error"]["code"] == "AUTH_TOKEN_REQUIRED"
    card = api.client.get("/.well-known/agent.json").json()
    assert "bearer" in card["securitySchemes"]


def test_host_and_origin_allowlist(make_server) -> None:  # noqa: F811
    server = make_server(allowed_hosts=("lean.example",))
    c = httpx.Client(base_url=server.url)
    for host in ("evil.example", "evil.example:3344", "127.0.0.1.evil.example", ""):
        r = c.get("/v1/agents/list", headers={"Host": host})
        assert r.status_code == 400 and r.json()["error"]["code"] == "HTTP_HOST_NOT_ALLOWED", host
    r = c.get("/health", headers={"Host": "rebind.attacker.example"})
    assert r.status_code == 400  # DNS rebinding gets nothing, not even health
    for host in (f"localhost:{server.port}", f"127.0.0.1:{server.port}", "lean.example", "LEAN.example:80"):
        assert c.get("/v1/agents/list", headers={"Host": host}).status_code == 200, host
    for origin in ("http://evil.example", "null", "https://127.0.0.1.evil.example"):
        r = c.get("/v1/agents/list", headers={"Origin": origin})
        assert r.status_code == 403 and r.json()["error"]["code"] == "HTTP_ORIGIN_NOT_ALLOWED", origin
    assert c.get("/v1/agents/list", headers={"Origin": f"http://localhost:{server.port}"}).status_code == 200
    assert "access-control-allow-origin" not in c.options("/v1/agents/list").headers


def test_rate_limit_answers_429_with_a_code(make_server) -> None:  # noqa: F811
    server = make_server(rate=1, burst=5)  # slow refill: a loaded machine cannot refill during the burst
    api = Api(server)
    codes = [api.client.get("/v1/agents/list").status_code for _ in range(8)]
    assert codes[:5] == [200] * 5 and 429 in codes[5:]
    r = api.client.get("/v1/agents/list")
    assert r.status_code == 429 and r.json()["error"]["code"] == "RATE_LIMITED"
    assert int(r.headers["retry-after"]) >= 1
    assert api.client.get("/health").status_code == 200  # health is never limited
    time.sleep(1.05)  # one token per second
    assert api.client.get("/v1/agents/list").status_code == 200


def test_rate_limit_buckets_per_agent(make_server) -> None:  # noqa: F811
    server = make_server(rate=1, burst=3)
    api = Api(server)
    a = api.register()  # two requests of the address's bucket
    b = api.register()
    a_codes = [api.post("/v1/agents/heartbeat", a).status_code for _ in range(5)]
    assert a_codes[:3] == [200] * 3 and a_codes[-1] == 429
    assert api.post("/v1/agents/heartbeat", b).status_code == 200  # b has its own bucket


def test_bodies_must_be_json_and_bounded(make_server) -> None:  # noqa: F811
    server = make_server(max_body_bytes=1024)
    api = Api(server)
    a = api.register()
    r = api.client.post("/v1/tasks/create", content=b'{"title": "x"}',
                        headers={**a.headers, "Content-Type": "text/plain"})
    assert r.status_code == 415 and r.json()["error"]["code"] == "HTTP_UNSUPPORTED_MEDIA_TYPE"
    r = api.client.post("/v1/tasks/create", json={"title": "x" * 5000}, headers=a.headers)
    assert r.status_code == 413 and r.json()["error"]["code"] == "HTTP_BODY_TOO_LARGE"

    def chunks():  # type: ignore[no-untyped-def]
        for _ in range(10):
            yield b" " * 200  # no Content-Length: counted while streaming

    r = api.client.post("/v1/tasks/create", content=chunks(),
                        headers={**a.headers, "Content-Type": "application/json"})
    assert r.status_code == 413
    r = api.client.post("/v1/tasks/create", json={"title": "t", "depends_on": [2**70]}, headers=a.headers)
    assert r.status_code == 422 and r.json()["error"]["code"] == "INVALID_INPUT"
    r = api.client.post("/v1/tasks/create", json=[1, 2], headers=a.headers)
    assert r.status_code == 422 and "object" in r.json()["error"]["message"]


def test_shell_and_edit_need_allow_exec(make_server) -> None:  # noqa: F811
    server = make_server(allow_exec=False)
    api = Api(server)
    a = api.register()
    for path, body in (("/v1/context/shell", {"command": "echo hi"}),
                       ("/v1/context/edit", {"path": "f", "old": "a", "new": "b"})):
        r = api.post(path, a, **body)
        assert r.status_code == 403 and r.json()["error"]["code"] == "HTTP_EXEC_DISABLED"


def test_an_insecure_secret_file_is_refused(tmp_path: Path) -> None:
    from leanctx.api.http.tokens import load_secret

    secret = tmp_path / "secret"
    load_secret(secret)
    os.chmod(secret, 0o644)
    with pytest.raises(InvalidInput) as e:
        load_secret(secret)
    assert e.value.code == "HTTP_SECRET_INSECURE"


def test_the_real_serve_command(tmp_path: Path) -> None:
    """``lean-ctx serve`` in its own process: health, register, SSE sees an append made by the
    CLI in a third process, and SIGTERM stops it promptly with a stream still open."""
    port = free_port()
    project = tmp_path / "proj"
    project.mkdir()
    env = {**os.environ, "LEAN_CTX_DB": str(tmp_path / "e.db"), "LEAN_CTX_HOME": str(tmp_path / "home")}
    env.pop("LEAN_CTX_HTTP_TOKEN", None)
    proc = subprocess.Popen([LEAN_CTX, "--project", str(project), "serve", "--port", str(port), "--log-level",
                             "warning"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "lean-ctx serve did not come up"
            time.sleep(0.05)
        c = httpx.Client(base_url=url)
        reg = c.post("/v1/agents/register", json={"agent_type": "claude"}).json()
        assert reg["project_root"] == str(project)
        stream = SSEReader(url + "/v1/events", params={"kinds": "message.posted"}).open()
        cli = subprocess.run([LEAN_CTX, "chat", "post", "--title", "from the cli", "--body", "hi"],
                             env={**env, "LEAN_CTX_AGENT_ID": "cli-agent"}, capture_output=True, text=True, timeout=30)
        assert cli.returncode == 0, cli.stderr
        e = stream.next(timeout=5)
        assert e.json()["actor"] == "cli-agent" and e.json()["payload"]["title"] == "from the cli"
        t = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
        assert time.monotonic() - t < 5
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
