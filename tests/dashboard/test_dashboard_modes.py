"""The dashboard on an empty project (helpful empty states, not blank panels) and behind a
bearer token (a clear banner without it; the token taken from the URL fragment)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from .conftest import TOKEN, Served, Tab

EMPTY_STATES = ("empty-agents", "empty-tasks", "empty-locks", "empty-scent", "empty-messages", "empty-savings",
                "empty-proof", "empty-search", "empty-lineage")


def test_an_empty_project_shows_what_each_panel_is_for(fresh: Callable[..., Served], tab: Callable[..., Tab],
                                                       artifacts: Path) -> None:
    s = fresh()
    assert s.state()["head"]["position"] == 0
    t = tab().open(s.url)
    page = t.page
    for testid in EMPTY_STATES:
        box = page.locator(f"[data-testid={testid}]")
        assert box.count() == 1, testid
        assert box.is_visible(), testid
        text = box.inner_text()
        assert len(text) > 40, (testid, text)  # says what the panel shows
        if testid not in ("empty-search",):
            commands = [c.inner_text() for c in box.locator("code").all()]
            assert commands and all(c.startswith("lean-ctx ") for c in commands), (testid, commands)
    # no panel is left blank
    for panel in page.locator("section.panel").all():
        assert len(panel.inner_text().strip()) > 40
    assert page.locator("[data-testid=stream-item]").count() == 0
    assert "nothing matched yet" in page.inner_text("[data-testid=stream-status]")
    assert t.watch.problems() == []
    page.screenshot(path=str(artifacts / "dashboard-empty.png"), full_page=True)


def test_the_first_event_replaces_the_empty_state_without_a_reload(fresh: Callable[..., Served],
                                                                   tab: Callable[..., Tab]) -> None:
    s = fresh()
    t = tab().open(s.url)
    t.page.wait_for_selector("[data-testid=empty-agents]")
    s.project.cli("agent", "register", "--type", "codex", "--role", "tester", agent="solo")
    t.page.wait_for_selector("[data-testid=agent-row][data-agent-id=solo]", timeout=3000)
    assert t.page.locator("[data-testid=empty-agents]").count() == 0
    assert t.page.get_attribute("[data-testid=head-position]", "data-position") == str(s.state()["head"]["position"])
    assert t.watch.problems() == []


def test_without_its_token_the_page_says_how_to_give_it(fresh: Callable[..., Served], tab: Callable[..., Tab],
                                                        artifacts: Path) -> None:
    s = fresh(token=TOKEN)
    t = tab()
    page = t.page
    page.goto(s.url + "/")
    banner = page.locator("[data-testid=auth-banner]")
    banner.wait_for(state="visible", timeout=5000)
    text = banner.inner_text()
    assert "needs its token" in text and "#token=" in text
    assert page.get_attribute("[data-testid=connection]", "data-state") == "auth"
    assert page.get_attribute("html", "data-loaded") is None  # no data shown
    statuses = {st for st, u in t.watch.responses if "/v1/" in u}
    assert statuses == {401}
    assert t.watch.errors == []  # no uncaught exception either
    page.screenshot(path=str(artifacts / "dashboard-auth-banner.png"))


def test_the_token_in_the_fragment_is_used_and_removed_from_the_address(fresh: Callable[..., Served],
                                                                        tab: Callable[..., Tab]) -> None:
    s = fresh(token=TOKEN)
    s.project.cli("agent", "register", "--type", "claude", agent="t1")
    t = tab().open(s.url + "/#token=" + TOKEN)
    page = t.page
    assert "token" not in page.url
    assert page.evaluate("() => sessionStorage.getItem('lean-ctx-token')") == TOKEN
    assert not page.locator("[data-testid=auth-banner]").is_visible()
    page.wait_for_selector("[data-testid=agent-row][data-agent-id=t1]")
    # live behind the token too: SSE read with fetch() and the Authorization header
    s.project.cli("chat", "post", "--title", "behind the token", "--body", "sent with SSE over fetch", agent="t1")
    page.locator("[data-testid=stream-item]", has_text="behind the token").wait_for(timeout=10_000)
    # a reload keeps the token for this tab
    page.reload()
    page.wait_for_selector("[data-testid=agent-row][data-agent-id=t1]")
    assert t.watch.problems() == []


def test_a_token_pasted_into_the_banner_form_loads_the_data(fresh: Callable[..., Served],
                                                            tab: Callable[..., Tab]) -> None:
    s = fresh(token=TOKEN)
    t = tab()
    page = t.page
    page.goto(s.url + "/#token=not-the-right-one-at-all")
    page.locator("[data-testid=auth-banner]").wait_for(state="visible")
    assert "not the one" in page.inner_text("[data-testid=auth-banner]")
    page.fill("#auth-token", TOKEN)
    page.click("#auth-form button[type=submit]")
    page.wait_for_selector("html[data-loaded='true']", timeout=5000)
    page.wait_for_selector("[data-testid=connection][data-state=live]", timeout=5000)
    assert not page.locator("[data-testid=auth-banner]").is_visible()


def test_the_header_shows_when_the_server_goes_away(fresh: Callable[..., Served], tab: Callable[..., Tab]) -> None:
    s = fresh()
    t = tab().open(s.url)
    assert t.page.inner_text("[data-testid=connection]") == "live"
    s.server.stop()
    t.page.wait_for_selector("[data-testid=connection][data-state=down]", timeout=5000)
    assert "disconnected" in t.page.inner_text("[data-testid=connection]")
    assert t.watch.errors == []  # the retries raise nothing uncaught


def test_a_token_with_url_characters_survives_the_fragment_and_the_redirect_file(
        fresh: Callable[..., Served], tab: Callable[..., Tab]) -> None:
    from leanctx.api.cli.serve_cmd import browser_target, dashboard_url

    tricky = "plus+slash/eq=amp&pct%hash#-0123"
    s = fresh(token=tricky)
    s.project.cli("agent", "register", "--type", "claude", agent="u1")
    url = dashboard_url(s.url, tricky)  # what `lean-ctx dashboard` prints
    t = tab().open(url)
    assert t.page.evaluate("() => sessionStorage.getItem('lean-ctx-token')") == tricky
    assert "token" not in t.page.url
    t.page.wait_for_selector("[data-testid=agent-row][data-agent-id=u1]")
    # typed by hand, a `+` is a plus (not a space, as form data would have it)
    plain = "raw+plus/and=eq-0123456789"
    s2 = fresh(token=plain)
    t2 = tab().open(s2.url + "/#token=" + plain)
    assert t2.page.evaluate("() => sessionStorage.getItem('lean-ctx-token')") == plain
    # what --open hands the browser: a private file that redirects to the address
    made: list[Path] = []
    target = browser_target(url, tricky, made)
    try:
        t3 = tab()
        t3.page.goto(target)
        t3.page.wait_for_selector("[data-testid=connection][data-state=live]", timeout=10_000)
        assert t3.page.url == s.url + "/"
        assert t3.page.evaluate("() => sessionStorage.getItem('lean-ctx-token')") == tricky
    finally:
        for f in made:
            f.unlink()
    assert t.watch.problems() == [] and t2.watch.problems() == [] and t3.watch.problems() == []
