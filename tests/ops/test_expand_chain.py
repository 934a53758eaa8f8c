"""``expand`` chains through big archives: a capped answer announces (``~N tokens not sent``)
what following its notice will send, ``N:`` prefixes included; and a chain counts about
each line once, not the whole rest at every step (the tokenizer's work is measured)."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest

from leanctx.app import LeanCtx
from leanctx.archive import ArchiveStore
from leanctx.context import tokens
from leanctx.ops.expand import expand
from leanctx.ops.followup import lines_rest
from leanctx.ops.read import read_files

pytestmark = pytest.mark.timeout(120)

_WORDS = ["alpha", "beta", "gamma", "0x1f3a", "return", "self.x", "=", "(", ")", "{", "}", "é", "数据",
          "__init__", "'q'", "42", "3.14", "foo_bar", "Baz", "#", "->", "::"]
_ANNOUNCED = re.compile(r"\(~([\d,]+) tokens not sent(, estimated from a sample of them)?;")
_NEXT = re.compile(r"next: lean-ctx expand (A[0-9a-f]{16}) --lines (?:'(\d+\[\d+-\d*\])'|(\d+-\d+))")


def _lines(n: int, seed: int = 1) -> list[str]:
    rnd = random.Random(seed)
    return [" ".join(rnd.choice(_WORDS) for _ in range(rnd.randint(2, 18))) for _ in range(n)]


def _announced(text: str) -> tuple[int, bool]:
    m = _ANNOUNCED.search(text.rsplit("\n", 1)[-1])
    assert m, text[-400:]
    return int(m.group(1).replace(",", "")), bool(m.group(2))


def _next(text: str) -> str:
    m = _NEXT.search(text.rsplit("\n", 1)[-1])
    assert m, text[-400:]
    return m.group(2) or m.group(3)


@pytest.fixture()
def lc(tmp_path: Path) -> Any:
    with LeanCtx(tmp_path / "data" / "events.db") as app:
        yield app


@pytest.mark.parametrize("first", [None, "1-1200", "tail"])
def test_the_figure_announced_is_what_the_next_call_sends(lc: Any, first: str | None) -> None:
    """Whole (unnumbered), a range (numbered), a tail (unnumbered): the rest, asked for with
    ``--lines``, comes back numbered and costs what the notice said (within 3 %)."""
    lines = _lines(1200)
    aid = ArchiveStore.beside(lc.db).put("\n".join(lines) + "\n")[0]
    if first == "tail":
        e = expand(lc, aid, tail=1000, max_tokens=6000)
    else:
        e = expand(lc, aid, lines=first, max_tokens=6000)
    assert e.capped
    announced, estimated = _announced(e.text)
    assert not estimated  # a rest this small is counted, not estimated
    follow = expand(lc, aid, lines=_next(e.text))
    assert not follow.capped and follow.text.split("\n", 1)[0].split(":", 1)[0].isdigit()
    assert abs(follow.sent_tokens - announced) <= 0.03 * follow.sent_tokens, (announced, follow.sent_tokens)


def test_a_line_cut_by_characters_announces_its_rest_and_the_lines_after(lc: Any) -> None:
    rnd = random.Random(7)
    long = "".join(rnd.choice(_WORDS) + " " for _ in range(2500))
    lines = [long, *_lines(800, 3)]
    aid = ArchiveStore.beside(lc.db).put("\n".join(lines) + "\n")[0]
    e = expand(lc, aid, max_tokens=2000)
    assert e.capped and "cut: characters" in e.text
    announced, _ = _announced(e.text)
    spent, spec = 0, _next(e.text)
    for _ in range(50):  # the character ranges of line 1, then the lines after it
        step = expand(lc, aid, lines=spec)
        body = step.text.rsplit("\n", 1)
        spent += step.sent_tokens - (tokens.count_tokens("\n" + body[1]) if len(body) > 1 and
                                     body[1].startswith("[…") else 0)
        if not (len(body) > 1 and body[1].startswith("[…")):
            break
        spec = _next(step.text)
    assert abs(spent - announced) <= 0.03 * spent, (announced, spent)


class _Tally:
    """The characters the tokenizer was given (all counting goes through ``get_encoding``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.chars = 0
        real = tokens.get_encoding

        def get(name: str = tokens.DEFAULT_ENCODING) -> Any:
            enc, tally = real(name), self

            class Counting:
                def encode_ordinary(self, text: str) -> list[int]:
                    tally.chars += len(text)
                    return enc.encode_ordinary(text)

                def __getattr__(self, attr: str) -> Any:
                    return getattr(enc, attr)

            return Counting()

        monkeypatch.setattr(tokens, "get_encoding", get)


def test_a_chain_through_a_big_archive_counts_each_line_about_once(lc: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """~1 MB, ~25 answers: the tokenizer sees a few times the archive, not ~25/2 times it (as
    when each answer counted everything after it); the first notice's estimate says it is one
    and is within 5 % of what the whole chain then sends."""
    lines = _lines(24_000, 5)
    text = "\n".join(lines) + "\n"
    aid = ArchiveStore.beside(lc.db).put(text)[0]
    tally = _Tally(monkeypatch)
    e = expand(lc, aid)
    assert e.capped
    sent, steps, spec = 0, 0, _next(e.text)
    while True:
        step = expand(lc, aid, lines=spec)
        sent += step.sent_tokens
        steps += 1
        if not step.capped:
            break
        spec = _next(step.text)
    assert steps >= 15
    assert tally.chars <= 5 * len(text), (tally.chars, len(text))
    announced, estimated = _announced(e.text)
    assert estimated and abs(sent - announced) <= 0.05 * sent, (announced, sent)


def test_lines_rest_costs_what_expand_sends_after_a_capped_read(lc: Any, tmp_path: Path) -> None:
    """``followup.lines_rest`` (for the read handler's notice): the rest of a capped read's view,
    priced as the ``--lines`` call its notice names sends it."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "log.txt").write_text("\n".join(_lines(700, 9)) + "\n")
    a = read_files(lc, ["log.txt"], mode="full", actor="a", session_id="s", project=str(proj), cap_tokens=2000)[0]
    m = re.search(r"lines 1-(\d+) of the (\d+)-line view sent .* lean-ctx expand (A[0-9a-f]{16}) --lines (\d+-\d+)",
                  a.text)
    assert a.capped and m, a.text[-300:]
    view = ArchiveStore.beside(lc.db).get(m.group(3)).removesuffix("\n").split("\n")
    predicted = lines_rest(view, int(m.group(1)), 0, "o200k_base")
    follow = expand(lc, m.group(3), lines=m.group(4))
    assert not follow.capped and not predicted.estimated
    assert abs(follow.sent_tokens - predicted.tokens) <= 0.03 * follow.sent_tokens, (predicted, follow.sent_tokens)


def test_a_capped_reads_notice_announces_what_its_follow_up_sends(lc: Any, tmp_path: Path) -> None:
    """The read notice's "~N tokens" is what the ``--lines`` call it names will send (with
    expand's ``N:`` prefixes), within 3 %."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "log.txt").write_text("\n".join(_lines(700, 9)) + "\n")
    a = read_files(lc, ["log.txt"], mode="full", actor="a", session_id="s", project=str(proj), cap_tokens=2000)[0]
    m = re.search(r"lines (\d+)-\d+ \(~([\d,]+) tokens\) archived as (A[0-9a-f]{16}) · lean-ctx expand \3"
                  r" --lines (\d+-\d+)", a.text)
    assert a.capped and m, a.text[-300:]
    announced = int(m.group(2).replace(",", ""))
    follow = expand(lc, m.group(3), lines=m.group(4))
    assert not follow.capped
    assert abs(follow.sent_tokens - announced) <= 0.03 * follow.sent_tokens, (announced, follow.sent_tokens)
