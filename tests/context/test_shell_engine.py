"""Dispatch, the generic pass and the accounting builder, on small generated inputs."""

from __future__ import annotations

import pytest

from leanctx.context.shell import compress, fill_archive, parse_command
from leanctx.context.shell.builder import Builder, State
from leanctx.context.shell.patterns import select


@pytest.mark.parametrize(
    ("command", "tool", "sub"),
    [
        ("python -m pytest -x tests", "pytest", ""),
        ("python3.11 -m unittest discover", "unittest", ""),
        (".venv/bin/python -m mypy src", "mypy", ""),
        ("uv run pytest -q", "pytest", ""),
        ("poetry run ruff check .", "ruff", ""),
        ("npx tsc --noEmit", "tsc", ""),
        ("pnpm exec eslint src", "eslint", ""),
        ("FOO=1 BAR=2 cargo test --lib", "cargo", "test"),
        ("env RUST_LOG=debug cargo +nightly build", "cargo", "build"),
        ("cd app && git --no-pager log -n 5 | head -50", "git", "log"),
        ("git -C ../repo -c color.ui=always status", "git", "status"),
        ("sudo docker ps -a", "docker", "ps"),
        ("docker compose logs web", "docker", "logs"),
        ("timeout 30 go test ./...", "go", "test"),
        ("kubectl -n prod get pods", "kubectl", "get"),
        ("npm run build", "npm", "run:build"),
        ("npm t", "npm", "test"),
        ("yarn", "yarn", "install"),
        ("fdfind -e py", "fd", ""),
        ("time make -j4 all", "make", "all"),
    ],
)
def test_parse_command(command: str, tool: str, sub: str) -> None:
    cmd = parse_command(command)
    assert (cmd.tool, cmd.sub) == (tool, sub)


def test_argv_lists_are_accepted() -> None:
    assert parse_command(["git", "status", "--short"]).sub == "status"
    assert select(parse_command("uv pip install x"), [])[0] == "pip"
    assert select(parse_command("some-unknown-tool"), [])[0] == "generic"
    assert select(parse_command("./run.sh"), ["=" * 10 + " test session starts " + "=" * 10])[0] == "pytest"


def test_never_worse_returns_the_raw_output() -> None:
    c = compress("echo hi", "hi\n", "", 0)
    assert c.pattern == "raw" and c.text == "hi" and c.sent_tokens == c.raw_tokens
    assert c.omissions == [] and c.omitted_lines == 0


def test_repeats_are_folded_with_a_count() -> None:
    out = "\n".join(["starting"] + ["retrying connection to db:5432"] * 200 + ["done"]) + "\n"
    c = compress("./worker", out, "", 0)
    assert "retrying connection to db:5432  [×200]" in c.text
    assert c.folded_lines == 199 and c.omitted_lines == 0
    assert c.raw_lines == c.kept_lines + c.folded_lines + c.blank_lines


def test_progress_bars_and_ansi_are_collapsed() -> None:
    lines = [f"\x1b[32mDownloading\x1b[0m {i}% |{'█' * (i // 5)}| eta 0:00:{i:02d}" for i in range(0, 100, 2)]
    out = "\n".join(["fetching model", *lines, "saved to ./m.bin"]) + "\n"
    c = compress("fetch-model", out, "", 0)
    assert "\x1b" not in c.text
    assert "saved to ./m.bin" in c.text and "fetching model" in c.text
    assert "50 progress output" in c.text
    assert c.omitted_lines == 50


def test_carriage_return_redraws_keep_the_last_state() -> None:
    c = compress("wget x", "".join(f"\r{i}%" for i in range(101)) + "\rdone\n" + "ok\n" * 30, "", 0)
    assert c.text.startswith("done")


def test_long_middle_is_elided_but_errors_survive() -> None:
    body = [f"processing item {i}: key={i * 7919 % 1000} value={i * 31}" for i in range(400)]
    body[213] = "ERROR: failed to parse config at settings/app.yaml:42: unexpected key"
    c = compress("./batch", "\n".join(body) + "\n", "", 3)
    assert "settings/app.yaml:42" in c.text
    assert "[exit 3]" in c.text
    assert "lines omitted" in c.text
    assert c.sent_tokens < c.raw_tokens / 3
    assert sum(o.count for o in c.omissions) == c.omitted_lines


def test_fill_archive_only_touches_markers() -> None:
    body = [f"line {i} {'x' * (i % 13)} {i * 17 % 101}" for i in range(300)]
    body[0] = "user text mentioning {archive} literally"
    c = compress("./gen", "\n".join(body) + "\n", "", 0)
    filled = fill_archive(c.text, "A7")
    assert "{archive} literally" in filled
    assert "· expand A7]" in filled


def test_builder_never_omits_a_must_keep_line() -> None:
    b = Builder(["a", "b", "FATAL x", "c", "d"])
    b.must_keep(2)
    assert b.omit(range(5), "noise") == 4
    assert b.state[2] == State.KEPT
    text = b.render(0)
    assert "FATAL x" in text
    assert text.count("omitted") == 2  # the kept line splits the run into two markers
    counts = b.counts()
    assert counts[State.OMITTED] == 4 and counts[State.KEPT] == 1


def test_builder_footer_states_totals() -> None:
    b = Builder([f"l{i}" for i in range(6)])
    b.omit([0, 1], "hints", inline=False)
    b.omit([4], "noise", inline=False)
    b.keep_all(range(6))
    text = b.render(1)
    assert "[… 3 lines omitted: 2 hints, 1 noise · expand {archive}]" in text
    assert text.endswith("[exit 1]")
    assert sorted(o.reason for o in b.omissions()) == ["hints", "noise"]


def test_fact_scan_over_the_whole_text_matches_the_per_line_regexes() -> None:
    from leanctx.context.shell.generic import FACT_RE, SUMMARY_RE, WARN_RE, _hit_lines

    lines = [
        "ok  \texample.com/geo\t0.01s", "OK", "FAILED (failures=1)", "  ValueError: bad", "İstanbul error here",
        "Warning: deprecated", "[warn] x", "WARN y", "plain line", "", "Ran 3 tests in 0.1s", "3 passed in 0.2s",
        "could not open", "build finished", "done in 3s", "segmentation fault", "KeyboardInterrupt", "tokens: ok",
        "error[E0308]: mismatched", "ẞ ſ Ǆ mixed case ERROR", "found 3 issues", "test result: ok",
    ] * 3
    for warnings in (True, False):
        want = [i for i, ln in enumerate(lines)
                if FACT_RE.search(ln) or SUMMARY_RE.search(ln) or (warnings and WARN_RE.search(ln))]
        assert _hit_lines(lines, warnings) == want
    assert _hit_lines([], True) == []
