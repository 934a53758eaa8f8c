"""Every real captured output: facts survive, never worse, every dropped line accounted for."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from leanctx.context.shell import compress, fill_archive, raw_text, split_lines
from leanctx.context.tokens import count_tokens

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "shell"
CASES = sorted(FIXTURES.glob("*.json"))
_INLINE = re.compile(r"\[… (\d+) lines? omitted \([^)]*\) · expand \{archive\}\]")
_FOOTER = re.compile(r"\[… (\d+) lines? omitted: [^\]]* · expand \{archive\}\]")
# a line shown in part: shortened (the marker names the line), or redrawn (frames dropped)
_CUT = re.compile(r"\[… \d+ chars(?: and \d+ progress frames?)? of line (\d+) omitted · expand \{archive\}\]")
_FRAMES = re.compile(r"\[… \d+ progress frames? of (\d+) redrawn lines? omitted · expand \{archive\}\]")


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def test_corpus_covers_the_command_families() -> None:
    text = " | ".join(_load(p)["command"] for p in CASES)
    for family in ["git status", "git log", "git diff", "git show", "git branch", "git push", "git pull",
                   "git fetch", "git commit", "pytest", "unittest", "pip install", "npm install", "npm test",
                   "npm run", "cargo build", "cargo test", "cargo clippy", "go test", "go build", "docker ps",
                   "docker build", "kubectl get", "make", "tsc", "eslint", "ruff", "mypy", "ls", "tree",
                   "find", "fd", "grep", "rg", "jest", "ls -laR"]:
        assert family in text, family
    assert len(CASES) >= 60


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_fixture(path: Path) -> None:
    fx = _load(path)
    c = compress(fx["command"], fx["stdout"], fx["stderr"], fx["exit_code"])
    # must-keep facts survive
    for fact in fx["must_keep"]:
        assert fact in c.text, f"lost must-keep fact {fact!r}"
    for fact in c.must_keep:
        assert fact in c.text, f"engine fact {fact!r} not in the text"
    if fx["exit_code"] != 0:
        assert f"[exit {fx['exit_code']}]" in c.text
    # never worse, and the counts are honest
    assert c.sent_tokens == count_tokens(c.text)
    assert c.raw_tokens >= c.sent_tokens
    if c.pattern != "raw":
        assert c.sent_tokens < c.raw_tokens
        assert "\x1b[" not in c.text
    # every line accounted for
    raw_lines = split_lines(fx["stdout"]) + split_lines(fx["stderr"])
    assert c.raw_lines == len(raw_lines) == len(split_lines(raw_text(fx["stdout"], fx["stderr"])))
    assert c.raw_lines == c.kept_lines + c.folded_lines + c.omitted_lines + c.blank_lines
    assert sum(o.count for o in c.omissions) == c.omitted_lines
    covered: set[int] = set()
    for o in c.omissions:
        lines = {k for a, b in o.ranges for k in range(a, b + 1)}
        assert len(lines) == o.count
        assert all(1 <= k <= c.raw_lines for k in lines)
        assert not lines & covered, "a line is omitted twice"
        covered |= lines
    stated = sum(int(n) for rx in (_INLINE, _FOOTER, _FRAMES) for n in rx.findall(c.text))
    stated += len(set(_CUT.findall(c.text)))  # one line may have several gaps
    assert stated == c.omitted_lines, "the markers must state every omitted line"
    if c.omitted_lines:
        assert "{archive}" in c.text
        assert "{archive}" not in fill_archive(c.text, "arc-1")


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_argv_and_string_commands_agree(path: Path) -> None:
    fx = _load(path)
    a = compress(fx["argv"], fx["stdout"], fx["stderr"], fx["exit_code"])
    b = compress(fx["command"], fx["stdout"], fx["stderr"], fx["exit_code"])
    assert a.pattern == b.pattern or "raw" in {a.pattern, b.pattern}


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_markers_cost_less_than_the_lines_they_announce(path: Path) -> None:
    from leanctx.context.shell import archive_text
    from leanctx.context.shell.builder import SAMPLE_ARCHIVE_ID

    fx = _load(path)
    c = compress(fx["command"], fx["stdout"], fx["stderr"], fx["exit_code"])
    if not c.omitted_lines:
        assert not any(rx.search(c.text) for rx in (_INLINE, _FOOTER, _CUT, _FRAMES))
        return
    lines = archive_text(fx["stdout"], fx["stderr"]).split("\n")
    omitted = "\n".join(lines[k - 1] for o in c.omissions for a, b in o.ranges for k in range(a, b + 1))
    markers = "\n".join(m.group(0) for rx in (_INLINE, _FOOTER, _CUT, _FRAMES) for m in rx.finditer(c.text))
    assert count_tokens(markers.replace("{archive}", SAMPLE_ARCHIVE_ID)) < count_tokens(omitted)


def test_corpus_covers_pnpm_and_yarn() -> None:
    """pnpm and yarn are dispatched to the npm pattern: real captures of each (fresh and repeat
    install, a failing test run, a build, a failing script), compressed by it, not the generic pass."""
    fixtures = [_load(p) for p in CASES]
    text = " | ".join(fx["command"] for fx in fixtures)
    for family in ["pnpm install", "pnpm test", "pnpm run", "yarn install", "yarn add", "yarn test", "yarn run"]:
        assert family in text, family
    for fx in fixtures:
        if fx["command"].split()[0] in {"pnpm", "yarn"}:
            c = compress(fx["command"], fx["stdout"], fx["stderr"], fx["exit_code"])
            assert c.pattern in {"npm", "raw"}, fx["name"]
