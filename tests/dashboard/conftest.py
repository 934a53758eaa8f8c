"""The dashboard in a real browser: Debian's headless Chromium driven by Playwright (the Python
package's bundled driver only: no browser download, ever), against a real ``lean-ctx`` HTTP
server on 127.0.0.1 over a real SQLite log, filled through the real CLI in subprocesses.

Screenshots go to ``tests/artifacts/dashboard/`` (git-ignored). With
``LEAN_CTX_UPDATE_DOCS_SCREENSHOT=1`` the 1280×800 light screenshot is also copied to
``docs/img/dashboard.png`` (the README's picture).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from leanctx.api.http import ServerConfig
from leanctx.api.http.server import BackgroundServer

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts" / "dashboard"
DOCS_SHOT = REPO / "docs" / "img" / "dashboard.png"
LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))  # this interpreter's, not whatever PATH finds
CHROMIUM = os.environ.get("LEAN_CTX_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
TOKEN = "dashboard-test-token-0123456789"


# --- a project with a log, filled through the CLI ----------------------------------------------

@dataclass
class Project:
    base: Path
    home: Path = field(init=False)
    db: Path = field(init=False)
    root: Path = field(init=False)

    def __post_init__(self) -> None:
        self.home = self.base / "home"
        self.db = self.base / "events.db"
        self.root = self.base / "project"
        self.home.mkdir(parents=True, exist_ok=True)
        self.root.mkdir(parents=True, exist_ok=True)

    def env(self, agent: str) -> dict[str, str]:
        env = dict(os.environ, LEAN_CTX_HOME=str(self.home), XDG_DATA_HOME=str(self.base / "xdg"),
                   LEAN_CTX_AGENT_ID=agent, NO_COLOR="1")
        for k in ("LEAN_CTX_DB", "LEAN_CTX_SESSION_ID"):
            env.pop(k, None)
        return env

    def cli(self, *args: str, agent: str = "a1", ok: bool = True) -> subprocess.CompletedProcess[str]:
        """``lean-ctx --db DB --project ROOT ARGS`` as ``agent``, in a subprocess."""
        r = subprocess.run([LEAN_CTX, "--db", str(self.db), "--project", str(self.root), *args], cwd=self.root,
                           env=self.env(agent), capture_output=True, text=True, timeout=60)
        if ok:
            assert r.returncode == 0, f"lean-ctx {' '.join(args)} failed ({r.returncode}): {r.stderr or r.stdout}"
        return r

    def parallel(self, *calls: tuple[str, ...]) -> None:
        """``(agent, *args)`` calls at once, each in its own process."""
        with ThreadPoolExecutor(max_workers=4) as pool:
            for f in [pool.submit(self.cli, *args, agent=agent) for agent, *args in calls]:
                f.result()

    def write(self, rel: str, text: str) -> Path:
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        return p


@dataclass
class Served:
    project: Project
    server: BackgroundServer
    token: str | None = None

    @property
    def url(self) -> str:
        return self.server.url

    def client(self) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        return httpx.Client(base_url=self.url, timeout=10, headers=headers)

    def get(self, path: str) -> Any:
        with self.client() as c:
            r = c.get(path)
            assert r.status_code == 200, r.text
            return r.json()

    def state(self) -> dict[str, Any]:
        return self.get("/v1/dashboard/state")


def serve(project: Project, token: str | None = None) -> Served:
    cfg = ServerConfig(db=project.db, project_root=str(project.root), host="127.0.0.1", port=0, token=token,
                       secret_path=project.base / "http-secret", mount_mcp=False, sse_ping=5)
    return Served(project, BackgroundServer(cfg).start(), token)


def python_module(n: int, funcs: int = 40) -> str:
    return "\n".join(f"def handler_{n}_{i}(request, retries=3):\n    \"\"\"Handle case {i}.\"\"\"\n"
                     f"    value = request.get('k{i}', {i})\n    return value * retries\n" for i in range(funcs))


def fill_project(p: Project) -> None:
    """Two agents, messages in two channels, tasks with a dependency, a claim, a lock, reads in
    several modes (one with negative savings, one that bounces), a shell command, and budgets at 80-100 % and
    past 100 % (set from the tokens the agents really used). Calls that do not depend on each
    other run at once (each is still its own process and its own write transaction)."""
    p.write("src/mod0.py", python_module(0))
    p.write("src/tiny.py", "x = 1\n")
    p.write("README.md", "# demo\n\n" + "\n".join(f"- item {i}: some words about the project" for i in range(80)))
    p.parallel(("a1", "agent", "register", "--type", "claude", "--role", "dev"),
               ("a2", "agent", "register", "--type", "cursor", "--role", "reviewer"))
    p.parallel(("a1", "chat", "post", "--title", "hello from the fixture", "--body", "first message"),
               ("a1", "chat", "init", "backend", "--members", "a1,a2", "--topic", "API work"),
               ("a1", "chat", "task", "create", "--id", "base", "--title", "set up the parser"),
               ("a1", "agent", "claim", "src/app.py"),
               ("a2", "chat", "lock", "src/mod0.py", "--ttl", "900"),
               ("a1", "read", "src/mod0.py", "--mode", "signatures"),
               ("a2", "read", "src/tiny.py", "--mode", "full"),  # a header on a one-liner: negative savings
               ("a2", "shell", "--", "ls", "-la"))
    p.parallel(("a2", "chat", "post", "-c", "backend", "--title", "found a race", "--body", "in the lock code",
                "--category", "finding"),
               ("a1", "chat", "task", "create", "--id", "later", "--title", "test the parser", "--depends-on", "base"),
               ("a1", "read", "README.md", "--mode", "map"))
    # a full read of what a1 just read as a map: the map read bounces (its savings are retracted)
    p.parallel(("a1", "chat", "task", "claim", "base"),
               ("a1", "read", "README.md", "--mode", "full"))
    # budgets from what was really used: a1 at ~90 % (warning), a2 at ~200 % (exceeded)
    used = {a: json.loads(p.cli("agent", "budget", "--json", agent=a).stdout)["used"] for a in ("a1", "a2")}
    assert used["a1"] > 0 and used["a2"] > 0, used
    p.parallel(("a1", "agent", "budget", "--set", str(max(1, int(used["a1"] / 0.9)))),
               ("a2", "agent", "budget", "--set", str(max(1, used["a2"] // 2))))


# --- fixtures -----------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="module")  # not session: Playwright's sync API holds an asyncio loop in this
def browser() -> Iterator[Any]:  # thread until it stops, and later tests (MCP clients) run their own
    assert Path(CHROMIUM).is_file(), (f"{CHROMIUM} is missing: `bash scripts/setup` installs Debian's chromium "
                                      "(apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A filled project and its server, shared by a module's tests (they only add to the log)."""
    p = Project(tmp_path_factory.mktemp("dash-live"))
    fill_project(p)
    s = serve(p)
    try:
        yield s
    finally:
        s.server.stop()


@pytest.fixture()
def fresh(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    """Servers on new, empty projects (``fresh(token=...)``), stopped after the test."""
    started: list[Served] = []

    def make(token: str | None = None) -> Served:
        s = serve(Project(tmp_path / f"p{len(started)}"), token)
        started.append(s)
        return s

    yield make
    for s in started:
        s.server.stop()


class Watch:
    """What the page reported: console errors and warnings, uncaught exceptions, failed requests
    (requests the page aborted itself, e.g. a stream reopened with a new filter, excepted)."""

    def __init__(self, page: Any) -> None:
        self.console: list[str] = []
        self.errors: list[str] = []
        self.failed: list[str] = []
        self.responses: list[tuple[int, str]] = []
        page.on("console", self._console)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("requestfailed", self._failed)
        page.on("response", lambda r: self.responses.append((r.status, r.url)))

    def _console(self, msg: Any) -> None:
        if msg.type in ("error", "warning"):
            self.console.append(f"{msg.type}: {msg.text}")

    def _failed(self, req: Any) -> None:
        failure = req.failure or ""
        if "ERR_ABORTED" not in failure:
            self.failed.append(f"{req.method} {req.url}: {failure}")

    def problems(self) -> list[str]:
        bad = [f"HTTP {st} {u}" for st, u in self.responses if st >= 400]
        return self.console + self.errors + self.failed + bad


@dataclass
class Tab:
    page: Any
    watch: Watch
    context: Any

    def open(self, url: str, *, wait_live: bool = True) -> "Tab":
        self.page.goto(url)
        self.page.wait_for_selector("html[data-loaded='true']", timeout=10_000)
        if wait_live:
            self.page.wait_for_selector("[data-testid=connection][data-state=live]", timeout=10_000)
            self.page.wait_for_selector("[data-testid=stream-status][data-state=open]", timeout=10_000)
        return self


@pytest.fixture()
def tab(browser: Any) -> Iterator[Callable[..., Tab]]:
    """New browser contexts (``tab(width=, height=, color_scheme=)``), closed after the test."""
    contexts: list[Any] = []

    def make(width: int = 1280, height: int = 800, color_scheme: str = "light") -> Tab:
        ctx = browser.new_context(viewport={"width": width, "height": height}, color_scheme=color_scheme,
                                  reduced_motion="reduce")
        contexts.append(ctx)
        page = ctx.new_page()
        return Tab(page, Watch(page), ctx)

    yield make
    for ctx in contexts:
        # a test's request handlers (page.route) may still be answering a refresh: stop them and
        # let those in flight end quietly, so closing the page cannot fail them at teardown
        for page in ctx.pages:
            page.unroute_all(behavior="ignoreErrors")
        ctx.close()


def wait_until(cond: Callable[[], Any], timeout: float = 5.0, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            return v
        time.sleep(interval)


def copy_docs_screenshot(src: Path) -> None:
    if os.environ.get("LEAN_CTX_UPDATE_DOCS_SCREENSHOT") == "1":
        DOCS_SHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, DOCS_SHOT)
