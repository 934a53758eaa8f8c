"""The security middleware on a real server: an ``Origin`` must be the server's own origin, port
included (a page on another local port is another site), and the rate limit counts requests by
address before the bearer check (so failed authentication is limited too), with a cap per
address that N registered agents cannot multiply."""

from __future__ import annotations

import httpx

from .test_http_common import Api, make_server  # noqa: F401

TOKEN = "s3cret-token-for-tests-0123456789"


def test_an_origin_on_another_port_is_another_site(make_server) -> None:  # noqa: F811
    server = make_server()
    c = httpx.Client(base_url=server.url)
    other = server.port + 1 if server.port < 65535 else server.port - 1
    for origin in (f"http://localhost:{other}", f"http://127.0.0.1:{other}", "http://localhost",
                   "http://127.0.0.1:80", f"ftp://localhost:{server.port}", f"http://localhost:{server.port}x",
                   f"http://user@localhost:{server.port}"):
        for method, path in (("GET", "/v1/agents/list"), ("POST", "/v1/agents/register"), ("POST", "/mcp")):
            r = c.request(method, path, headers={"Origin": origin}, json={"agent_type": "claude"})
            assert r.status_code == 403 and r.json()["error"]["code"] == "HTTP_ORIGIN_NOT_ALLOWED", (origin, path)
    for origin in (f"http://localhost:{server.port}", f"http://127.0.0.1:{server.port}",
                   f"HTTP://LOCALHOST:{server.port}", f"http://[::1]:{server.port}"):
        assert c.get("/v1/agents/list", headers={"Origin": origin}).status_code == 200, origin


def test_an_origin_without_port_matches_a_host_without_port(make_server) -> None:  # noqa: F811
    """Behind a reverse proxy (``--allow-host``), the browser's Host and Origin carry no port."""
    server = make_server(allowed_hosts=("lean.example",))
    c = httpx.Client(base_url=server.url)
    ok = {"Host": "lean.example"}
    for origin in ("https://lean.example", "http://lean.example", "https://lean.example:443"):
        assert c.get("/v1/agents/list", headers={**ok, "Origin": origin}).status_code == 200, origin
    for origin in ("https://lean.example:8443", f"http://lean.example:{server.port}"):
        r = c.get("/v1/agents/list", headers={**ok, "Origin": origin})
        assert r.status_code == 403, origin


def test_requests_failing_the_bearer_check_are_rate_limited(make_server) -> None:  # noqa: F811
    server = make_server(token=TOKEN, rate=1, burst=4)
    c = httpx.Client(base_url=server.url)
    codes = [c.get("/v1/agents/list").status_code for _ in range(4)]
    assert codes == [401] * 4
    for headers in ({}, {"Authorization": "Bearer wrong-token-wrong-token-00"}, {"Authorization": "Basic x"}):
        r = c.get("/v1/agents/list", headers=headers)
        assert r.status_code == 429 and r.json()["error"]["code"] == "RATE_LIMITED", (headers, r.text)
        assert int(r.headers["retry-after"]) >= 1
    assert c.get("/health").status_code == 200  # health is never limited


def test_registered_agents_do_not_multiply_the_limit_of_an_address(make_server) -> None:  # noqa: F811
    rate, burst = 0.01, 5  # no refill worth counting during the test
    server = make_server(rate=rate, burst=burst)
    api = Api(server)
    agents = [api.register() for _ in range(burst)]  # the whole burst of the address's own bucket
    ok = 0
    for _ in range(burst):
        for a in agents:
            ok += api.post("/v1/agents/heartbeat", a).status_code == 200
    sent = burst + burst * burst
    assert ok + burst < sent  # some were refused
    from leanctx.api.http.security import ADDRESS_FACTOR

    assert ok + burst <= ADDRESS_FACTOR * burst  # the cap of one address, whatever its agents
    r = api.post("/v1/agents/heartbeat", agents[0])
    assert r.status_code == 429 and r.json()["error"]["code"] == "RATE_LIMITED"
