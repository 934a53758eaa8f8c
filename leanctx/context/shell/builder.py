"""Build a compressed text from raw output lines while accounting for every line.

Each raw line ends in exactly one state: kept (it appears in the text, maybe rewritten),
folded (a repeat represented by a count), omitted (announced by a marker with the number of
lines) or blank. A line shown only in part (a very long line shortened in its middle, a line
redrawn with carriage returns whose progress frames were dropped) counts as omitted: its
marker names it, and the full line is in the archive (:meth:`Builder.seal`). Lines holding
binary output are omitted behind a marker counting its bytes (:meth:`Builder.binary`). Lines marked
*must-keep* can never be omitted or folded away: asking to omit one keeps it instead. Output pieces are placed by the position of the raw line they stand
for, so a pattern may handle some lines and leave the rest to the generic pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from enum import IntEnum

from leanctx.context.shell.model import ARCHIVE_PLACEHOLDER, Omission

__all__ = ["SAMPLE_ARCHIVE_ID", "Builder", "State", "cut_marker", "footer_marker", "frames_marker", "marker"]

# What a marker costs is counted with an archive id in it, as the caller fills it in
# (``"A" + 16 hex digits``: 10 to 16 o200k tokens, this one 12), not with the short placeholder.
SAMPLE_ARCHIVE_ID = "Ab81e35548d3f1e4a"


class State(IntEnum):
    PENDING = 0
    KEPT = 1
    FOLDED = 2
    OMITTED = 3
    BLANK = 4


def _plural(n: int) -> str:
    return "line" if n == 1 else "lines"


def marker(count: int, reason: str) -> str:
    """The inline marker announcing ``count`` omitted lines."""
    return f"[… {count} {_plural(count)} omitted ({reason}) · expand {ARCHIVE_PLACEHOLDER}]"


def cut_marker(chars: int, line: int, frames: int = 0) -> str:
    """The marker standing, inside a shortened line, for the ``chars`` characters left out of
    raw line ``line`` (1-based, the archive's numbering); ``frames``: progress frames of that
    line dropped too."""
    extra = f" and {frames} progress frame{'' if frames == 1 else 's'}" if frames else ""
    return f"[… {chars} chars{extra} of line {line} omitted · expand {ARCHIVE_PLACEHOLDER}]"


def frames_marker(frames: int, lines: int) -> str:
    """The marker announcing the progress frames dropped from ``lines`` redrawn lines."""
    return (f"[… {frames} progress frame{'' if frames == 1 else 's'} of {lines} redrawn {_plural(lines)} "
            f"omitted · expand {ARCHIVE_PLACEHOLDER}]")


def footer_marker(groups: Sequence[tuple[str, int]]) -> str:
    """The one marker at the end announcing the footer omissions (``(reason, count)`` pairs):
    with a single reason it is the inline form, so the count is not stated twice."""
    if len(groups) == 1:
        reason, n = groups[0]
        return marker(n, reason)
    total = sum(n for _, n in groups)
    parts = ", ".join(f"{n} {r}" for r, n in groups)
    return f"[… {total} {_plural(total)} omitted: {parts} · expand {ARCHIVE_PLACEHOLDER}]"


def _ranges(idxs: Sequence[int]) -> list[tuple[int, int]]:
    """0-based indices -> inclusive 1-based ranges."""
    out: list[tuple[int, int]] = []
    for i in sorted(idxs):
        if out and out[-1][1] == i:  # previous range ends at 1-based i == 0-based i-1
            out[-1] = (out[-1][0], i + 1)
        else:
            out.append((i + 1, i + 1))
    return out


class Builder:
    """Collects output pieces and the state of every raw line."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines: list[str] = list(lines)
        self.n = len(self.lines)
        self.state: list[State] = [State.PENDING] * self.n
        self.must: set[int] = set()
        self._facts: dict[int, str] = {}
        self._pieces: list[tuple[float, int, str]] = []
        self._seq = 0
        self._footer: dict[str, list[int]] = {}
        self._inline_runs: list[tuple[list[int], str, int]] = []  # (lines, reason, seq of the marker piece)
        self._dropped: set[int] = set()  # seqs of marker pieces withdrawn by settle()
        self._shown_by: dict[int, int] = {}  # line -> seq of the piece that shows it
        self.notes: list[str] = []  # short notes appended to the footer marker (e.g. columns)
        # line -> progress frames dropped from it (a line redrawn with carriage returns: set
        # before the patterns run; the line reads as its final frame, plus any frame with a fact)
        self.frames: dict[int, int] = {}
        self._cut: set[int] = set()  # lines kept shortened (their text holds a cut_marker)
        self._partial: tuple[list[int], list[int]] | None = None  # set by seal(): (cut, redrawn)
        self._binary: list[list[int]] = []  # runs of lines holding binary output (see binary())

    # ------------------------------------------------------------------ marking
    def must_keep(self, i: int, fact: str | None = None) -> None:
        """Mark line ``i`` as a must-keep fact.

        ``fact`` is the substring of the line that must appear in the text (default: the whole
        stripped line); a later call for the same line replaces it, so a pattern that rewrites
        a line compactly names the part it guarantees to keep.
        """
        self.must.add(i)
        f = (fact if fact is not None else self.lines[i]).strip()
        if f:
            self._facts[i] = f

    def rewrite(self, i: int, text: str) -> None:
        """Keep line ``i`` as ``text`` (a more compact form of it). For a must-keep line whose
        fact the new text no longer contains, the fact becomes the new text."""
        self._refact(i, text)
        self.keep(i, text)

    def restate(self, i: int, text: str) -> None:
        """Line ``i`` reads ``text`` from now on (a more compact form of it) and stays pending:
        the generic pass keeps, folds or omits it like any other line. Its fact, as in
        :meth:`rewrite`."""
        self._refact(i, text)
        self.lines[i] = text

    def _refact(self, i: int, text: str) -> None:
        if i in self.must and self._facts.get(i, "") not in text:
            self.must_keep(i, text)

    def release(self, i: int) -> None:
        """A pattern that knows line ``i`` repeats a fact kept elsewhere (a failing test's
        ``FAILED`` line next to the failures list) lifts the generic pass's must-keep mark."""
        self.must.discard(i)
        self._facts.pop(i, None)

    def fact_lines(self) -> list[tuple[int, str]]:
        """``(line, fact)`` for each distinct fact, at the first line that states it."""
        out: dict[str, int] = {}
        for i in sorted(self._facts):
            out.setdefault(self._facts[i], i)
        return [(i, f) for f, i in out.items()]

    @property
    def facts(self) -> list[str]:
        return [f for _, f in self.fact_lines()]

    def missing_facts(self, text: str) -> list[str]:
        """The facts that ``text`` (what :meth:`render` returned) does not contain. Each is looked
        for first in the piece that shows its line (from where the previous fact of that piece
        was found), and only then in the whole text: about linear in the size of the text, where
        ``f in text`` for every fact costs facts × text."""
        pieces = {seq: t for _, seq, t in self._pieces}
        cursor: dict[int, int] = {}
        out = []
        for i, f in self.fact_lines():
            seq = self._shown_by.get(i)
            if seq is not None and seq not in self._dropped:
                piece = pieces[seq]
                k = piece.find(f, cursor.get(seq, 0))
                if k < 0:  # a piece may state its facts out of line order
                    k = piece.find(f)
                if k >= 0:
                    cursor[seq] = k
                    continue
            if f not in text:
                out.append(f)
        return out

    def pending(self, idxs: Iterable[int] | None = None) -> list[int]:
        rng = range(self.n) if idxs is None else idxs
        return [i for i in rng if self.state[i] == State.PENDING]

    def is_pending(self, i: int) -> bool:
        return self.state[i] == State.PENDING

    # ------------------------------------------------------------------ emitting
    def _put(self, pos: float, text: str, shows: Iterable[int] = ()) -> None:
        """Add a piece of output at ``pos``; ``shows``: the raw lines it stands for."""
        for i in shows:
            self._shown_by[i] = self._seq
        self._pieces.append((pos, self._seq, text))
        self._seq += 1

    def _claim(self, idxs: Iterable[int], state: State) -> list[int]:
        got = [i for i in idxs if self.state[i] == State.PENDING]
        for i in got:
            self.state[i] = state
        return got

    def keep(self, i: int, text: str | None = None) -> None:
        """Keep line ``i`` (as ``text`` if given, e.g. a more compact rewrite)."""
        if self._claim([i], State.KEPT):
            self._put(i, self.lines[i] if text is None else text, [i])

    def keep_cut(self, i: int, text: str) -> None:
        """Keep line ``i`` shortened as ``text``, which states what it leaves out with a
        :func:`cut_marker`: the line counts as omitted (:meth:`seal`), the archive has it whole."""
        if self._claim([i], State.KEPT):
            self._put(i, text, [i])
            self._cut.add(i)

    def mark_cut(self, i: int) -> None:
        """Line ``i``, kept (by :meth:`represent`, say), is shown shortened: its text holds a
        :func:`cut_marker`; it counts as omitted, like :meth:`keep_cut`."""
        self._cut.add(i)

    def keep_all(self, idxs: Iterable[int]) -> None:
        for i in idxs:
            self.keep(i)

    def represent(self, idxs: Sequence[int], text: str, pos: float | None = None) -> None:
        """One output line standing for several raw lines (all counted as kept)."""
        got = self._claim(idxs, State.KEPT)
        if got:
            self._put(min(got) if pos is None else pos, text, got)

    def fold(self, idxs: Sequence[int], text: str, cut: bool = False) -> None:
        """Exact repeats: the first line is kept as ``text``, the others are folded into it.
        ``cut``: ``text`` shows the line shortened (as :meth:`keep_cut`)."""
        got = self._claim(idxs, State.FOLDED)
        if not got:
            return
        self.state[got[0]] = State.KEPT
        self._put(got[0], text, got)
        if cut:
            self._cut.add(got[0])

    def boilerplate(self, idxs: Iterable[int]) -> None:
        """Lines of a tool's fixed advice text (``  (use "git add <file>..." to ...)``,
        ``Traceback (most recent call last):``): the same words in every run, whatever the
        input, so they carry no information about this one. Counted with the blank lines, like
        rulers. Only for text with no variable part: advice that names a count, a version or a
        path is omitted and announced instead."""
        for i in idxs:
            self.release(i)
            self.blank(i)

    def blank(self, i: int) -> None:
        if self.must and i in self.must:
            self.keep(i)
            return
        self._claim([i], State.BLANK)

    def note(self, pos: float, text: str) -> None:
        """A synthetic line (not standing for raw lines), placed at ``pos``."""
        self._put(pos, text)

    def omit(self, idxs: Iterable[int], reason: str, inline: bool = True) -> int:
        """Omit lines; must-keep lines among them are kept instead. Returns lines omitted.

        Inline omissions put a marker where the lines were (one per contiguous run);
        footer omissions are announced together in one marker at the end of the text.
        """
        idxs = sorted(set(self.pending(idxs)))
        keep = [i for i in idxs if i in self.must]
        drop = [i for i in idxs if i not in self.must]
        for i in keep:
            self.keep(i)
        if not drop:
            return 0
        for i in drop:
            self.state[i] = State.OMITTED
        if inline:
            run: list[int] = []
            for i in drop:
                if run and self._breaks(run[-1], i):
                    self._inline(run, reason)
                    run = []
                run.append(i)
            if run:
                self._inline(run, reason)
        else:
            self._footer.setdefault(reason, []).extend(drop)
        return len(drop)

    def binary(self, idxs: Sequence[int], text: str) -> None:
        """Lines holding a run of binary output: omitted whatever they hold, shown as ``text``
        (their text parts and a marker counting the bytes). Called before any other marking;
        :meth:`settle` never restores them (their raw form is not text an agent can use)."""
        got = self._claim(idxs, State.OMITTED)
        if got:
            self._binary.append(got)
            self._put(got[0], text)

    def _breaks(self, a: int, b: int) -> bool:
        """Whether a line between ``a`` and ``b`` is (or may become) visible."""
        return any(
            self.state[k] in (State.KEPT, State.PENDING) or k in self.must for k in range(a + 1, b)
        )

    def _inline(self, run: list[int], reason: str) -> None:
        self._inline_runs.append((run, reason, self._seq))
        self._put(run[0], marker(len(run), reason))

    def _restore(self, idxs: Iterable[int]) -> None:
        for i in idxs:
            self.state[i] = State.KEPT
            self._put(i, self.lines[i], [i])

    def settle(self, tokens: Callable[[str], int]) -> None:
        """Never pay more for an announcement than for what it announces: omitted lines that
        cost no more tokens than their share of a marker (archive id included) are kept
        verbatim instead. ``tokens`` counts the tokens of a text."""

        def cost(text: str) -> int:
            return tokens(text.replace(ARCHIVE_PLACEHOLDER, SAMPLE_ARCHIVE_ID))

        def lines_cost(idxs: Sequence[int], limit: int) -> int:
            text = "\n".join(self.lines[i] for i in idxs)
            if len(text) > 8 * limit:  # far longer than the marker: no need to count
                return limit + 1
            return tokens(text)

        kept_runs = []
        for run, reason, seq in self._inline_runs:
            m = cost(marker(len(run), reason))
            if lines_cost(run, m) <= m:
                self._dropped.add(seq)
                self._restore(run)
            else:
                kept_runs.append((run, reason, seq))
        self._inline_runs = kept_runs
        while self._footer:
            groups = [(r, len(ix)) for r, ix in self._footer.items()]
            whole = cost(footer_marker(groups))
            best = None
            for r, ix in self._footer.items():
                rest = [(g, n) for g, n in groups if g != r]
                share = whole - (cost(footer_marker(rest)) if rest else 0)
                if lines_cost(ix, share) <= share:
                    best = r
                    break
            if best is None:
                break
            self._restore(self._footer.pop(best))

    def seal(self) -> None:
        """Account for the lines shown only in part, once every other decision is made (after
        :meth:`settle`): a shortened line, or a redrawn line whose progress frames were dropped,
        becomes omitted (unless it was omitted whole already). Shortened lines carry their own
        marker; the redrawn ones are announced by one marker at the end. Idempotent."""
        if self._partial is not None:
            return
        cut = sorted(i for i in self._cut if self.state[i] != State.OMITTED)
        redrawn = sorted(i for i in self.frames if i not in self._cut and self.state[i] != State.OMITTED)
        for i in (*cut, *redrawn):
            self.state[i] = State.OMITTED
        self._partial = (cut, redrawn)

    # ------------------------------------------------------------------ result
    def counts(self) -> dict[State, int]:
        self.seal()
        c = {s: 0 for s in State}
        for s in self.state:
            c[s] += 1
        return c

    def omissions(self) -> list[Omission]:
        self.seal()
        inline = [Omission(reason=r, count=len(run), ranges=_ranges(run)) for run, r, _ in self._inline_runs]
        footer = [
            Omission(reason=r, count=len(ix), ranges=_ranges(ix)) for r, ix in self._footer.items()
        ]
        cut, redrawn = self._partial or ([], [])
        partial = [Omission(reason=r, count=len(ix), ranges=_ranges(ix))
                   for r, ix in (("long lines shortened", cut), ("progress frames", redrawn)) if ix]
        binary = [Omission(reason="binary output", count=len(run), ranges=_ranges(run)) for run in self._binary]
        return [*inline, *binary, *footer, *partial]

    def render(self, exit_code: int) -> str:
        self.seal()
        pieces = sorted(p for p in self._pieces if p[1] not in self._dropped)
        out = [t for _, _, t in pieces]
        if self._footer:
            out.append(footer_marker([(r, len(v)) for r, v in self._footer.items()]))
        redrawn = (self._partial or ([], []))[1]
        if redrawn:
            out.append(frames_marker(sum(self.frames[i] for i in redrawn), len(redrawn)))
        for n in self.notes:
            out.append(f"[{n}]")
        if exit_code != 0:
            out.append(f"[exit {exit_code}]")
        return "\n".join(out)
