"""The dashboard when things go wrong or pile up: a failing snapshot is shown and retried, a
stream that repeats itself after a reconnect shows each event once and keeps a bounded list,
an older search answer never replaces a newer one, a proof action cannot be started twice, and
a long history of finished tasks does not grow the board without end. Answers the server
would not give on its own (a 503, a repeated event, a slow search) are played by routing the
page's requests."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .conftest import Served, Tab

STATE = "/v1/dashboard/state"


def pump(page: Any, cond: Callable[[], Any], timeout: float = 5.0) -> None:
    """Wait for ``cond`` while Playwright runs the route handlers (a plain sleep would not)."""
    for _ in range(int(timeout / 0.05)):
        if cond():
            return
        page.wait_for_timeout(50)
    assert cond()


def _event(position: int) -> dict[str, Any]:
    return {"position": position, "kind": "message.posted", "stream": "chat:general", "version": position,
            "ts": "2026-01-01T00:00:00.000000Z", "actor": "a1", "to_agent": None, "channel": "general",
            "causation_id": None, "correlation_id": None,
            "payload": {"channel": "general", "seq": position, "title": f"m{position}", "body": ""}}


def _sse(positions: list[int]) -> str:
    return "".join(f"id: {p}\nevent: message.posted\ndata: {json.dumps(_event(p))}\n\n" for p in positions)


def test_a_failing_snapshot_is_shown_retried_and_cleared(fresh: Callable[..., Served],
                                                         tab: Callable[..., Tab]) -> None:
    s = fresh()
    s.project.cli("agent", "register", "--type", "claude", agent="r1")
    t = tab()
    page = t.page
    failing = {"n": 1}

    def state(route: Any) -> None:
        if failing["n"] > 0:
            failing["n"] -= 1
            route.fulfill(status=503, content_type="application/json",
                          body=json.dumps({"error": {"code": "STORE_BUSY", "message": "the database is busy"}}))
        else:
            route.continue_()

    page.route(f"**{STATE}", state)
    page.goto(s.url + "/")
    banner = page.locator("[data-testid=error-banner]")
    banner.wait_for(state="visible", timeout=5000)
    assert "the database is busy (STORE_BUSY)" in banner.inner_text() and "retrying" in banner.inner_text()
    # retried without a reload: the data, the streams, and the banner gone
    page.wait_for_selector("[data-testid=agent-row][data-agent-id=r1]", timeout=8000)
    page.wait_for_selector("[data-testid=connection][data-state=live]", timeout=5000)
    assert not banner.is_visible()
    # a later failure keeps what is shown and says so; the next snapshot clears it
    failing["n"] = 1
    s.project.cli("agent", "heartbeat", "r1", "--status", "busy", agent="r1")
    banner.wait_for(state="visible", timeout=5000)
    assert page.get_attribute("html", "data-loaded") == "true" and page.locator("[data-testid=agent-row]").count() == 1
    s.project.cli("agent", "heartbeat", "r1", agent="r1")
    banner.wait_for(state="hidden", timeout=5000)
    assert t.watch.errors == []


def test_a_stream_that_repeats_itself_shows_each_event_once_in_a_bounded_list(fresh: Callable[..., Served],
                                                                             tab: Callable[..., Tab]) -> None:
    s = fresh()
    t = tab()
    page = t.page
    resumed: list[str | None] = []

    def filtered(url: str) -> bool:
        return "/v1/events?" in url and "kinds=" in url

    def answer(route: Any) -> None:
        resumed.append(route.request.headers.get("last-event-id"))
        if len(resumed) == 1:  # 250 events, one of them twice
            body = _sse([*range(1, 151), 100, *range(151, 251)])
        else:  # every reconnect repeats the last ten and adds ten
            body = _sse(list(range(241, 261)))
        route.fulfill(status=200, headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"}, body=body)

    page.route(filtered, answer)
    t.open(s.url, wait_live=False)
    pump(page, lambda: len(resumed) >= 3, timeout=6)
    assert resumed[1:3] == ["250", "260"]  # each reconnect resumes after the last event received
    items = page.locator("[data-testid=stream-item]")
    positions = [int(p) for p in items.evaluate_all("els => els.map(e => e.dataset.position)")]
    assert len(positions) == 200 and positions == sorted(set(positions), reverse=True)
    assert positions[0] == 260 and positions[-1] == 61
    assert t.watch.errors == []


def test_an_older_search_answer_never_replaces_a_newer_one(fresh: Callable[..., Served],
                                                           tab: Callable[..., Tab]) -> None:
    s = fresh()
    s.project.cli("chat", "post", "--title", "found a race", "--body", "in the lock code", agent="q1")
    t = tab().open(s.url)
    page = t.page
    held: list[Any] = []

    def search(route: Any) -> None:
        if "q=alpha" in route.request.url:
            held.append(route)  # answered later, after the newer search
        else:
            route.continue_()

    page.route("**/v1/events/search?*", search)
    page.fill("[data-testid=search-input]", "alpha")
    page.click("[data-testid=search-submit]")
    pump(page, lambda: held, timeout=3)
    page.fill("[data-testid=search-input]", "race")
    page.click("[data-testid=search-submit]")
    page.wait_for_selector("[data-testid=search-hit]", timeout=3000)
    with page.expect_response(lambda r: "q=alpha" in r.url):
        held[0].continue_()
    page.wait_for_timeout(200)
    assert page.locator("[data-testid=search-none]").count() == 0  # alpha's empty answer came too late
    assert "found a race" in page.inner_text("[data-testid=search-results]")
    assert t.watch.problems() == []


def test_a_proof_action_under_way_cannot_be_started_again(fresh: Callable[..., Served],
                                                         tab: Callable[..., Tab]) -> None:
    s = fresh()
    s.project.cli("agent", "register", "--type", "claude", agent="p1")
    t = tab().open(s.url)
    page = t.page
    held: list[Any] = []
    page.route("**/v1/proof", lambda route: held.append(route) if route.request.method == "POST" else route.continue_())
    page.click("[data-testid=proof-create]")
    pump(page, lambda: held, timeout=3)
    create = page.locator("[data-testid=proof-create]")
    assert create.is_disabled() and "creating" in page.inner_text("[data-testid=proof-note]")
    head = page.get_attribute("html", "data-head")
    s.project.cli("chat", "post", "--title", "meanwhile", "--body", "a refresh re-renders the panel", agent="p1")
    page.wait_for_function(f"() => document.documentElement.dataset.head !== '{head}'", timeout=3000)
    assert create.is_disabled()  # the re-render kept it disabled
    held[0].continue_()
    page.wait_for_selector("[data-testid=proof-file]", timeout=15_000)
    page.wait_for_selector("[data-testid=proof-create]:not([disabled])", timeout=5000)
    assert len(held) == 1
    assert t.watch.problems() == []


def test_finished_tasks_show_the_latest_ones_and_say_how_many_more(fresh: Callable[..., Served],
                                                                   tab: Callable[..., Tab]) -> None:
    s = fresh()
    s.project.cli("chat", "task", "create", "--id", "live1", "--title", "still open", agent="d1")
    t = tab()
    page = t.page
    real = s.state()["tasks"][0]

    def state(route: Any) -> None:
        resp = route.fetch()
        data = resp.json()
        data["tasks"] = data["tasks"] + [
            dict(real, task_id=f"done{i}", title=f"finished {i}", status="done", lease_state="none",
                 lease_remaining_seconds=None, updated_at=f"2026-01-01T00:{i:02d}:00.000000Z")
            for i in range(45)]
        route.fulfill(response=resp, json=data)

    page.route(f"**{STATE}", state)
    t.open(s.url)
    done = page.locator("[data-testid=task-column][data-status=done]")
    assert done.locator(".column-head .count").inner_text() == "45"
    assert done.locator("[data-testid=task-card]").count() == 30
    assert done.locator("[data-testid=column-more]").inner_text().startswith("15 older not shown")
    assert done.locator("[data-task-id=done44]").count() == 1 and done.locator("[data-task-id=done0]").count() == 0
    open_col = page.locator("[data-testid=task-column][data-status=open]")
    assert open_col.locator("[data-task-id=live1]").count() == 1  # open work is always shown in full
    assert t.watch.errors == []
