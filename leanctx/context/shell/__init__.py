"""Shell-output compression: per-command patterns, generic fallback, honest accounting.

``compress(command, stdout, stderr, exit_code)`` returns a :class:`Compressed`. Guarantees:

* never worse: if the compressed text is not shorter in tokens than the raw output, the raw
  output is returned (``pattern == "raw"``);
* nothing dropped silently: every omitted line is announced in the text by a marker with the
  number of lines and an ``{archive}`` placeholder (see :func:`fill_archive`), and listed in
  ``omissions`` so that the caller can archive the full output;
* must-keep facts survive: failing tests, assertion and error lines with their locations
  (every error or warning line naming a ``file:line``), changed paths, summary lines and the
  exit code;
* a line shown only in part counts as omitted: a very long line keeps its head and tail (and
  the location and message start of a fact) around a marker that counts the characters left
  out and names the line; a line redrawn with carriage returns reads as a terminal shows it
  (its last frame) plus any earlier frame that states a fact, and the progress frames dropped
  are counted in one marker at the end (kept instead when they cost no more than it);
* no announcement costs more than what it announces: omitted lines that cost no more tokens
  than their part of a marker (counted with a real-length archive id) are kept instead
  (:meth:`Builder.settle`). Lines of a tool's fixed advice text (the same words in every run,
  such as git's ``(use "git add <file>..." ...)``) carry no information and count as blank;
* binary output is not sent as text: each binary run (``leanctx.context.shell.binary``: mostly
  NUL, control characters and bytes that are not UTF-8) is replaced by one marker,
  ``[binary output: N bytes (lines A-B), not shown · expand {archive}]``, its lines counted as
  omitted, the text before and after it on those lines kept (from 4 characters on); the archive
  (:func:`archive_text`) has the run escaped byte by byte (``\\x89PNG\\r\\n``), so line ``k``
  of the archive is still raw line ``k``. The never-worse rule applies as everywhere (a run
  cheaper than its marker is sent as a plain decode shows it).

``stdout`` and ``stderr`` may hold bytes that are not UTF-8 as lone surrogates
(``surrogateescape``, as ``ops.process`` decodes); every text this package returns shows them
as U+FFFD (:func:`leanctx.context.shell.binary.plain`), except the archive, which escapes them
inside binary runs.
"""

from __future__ import annotations

import bisect
import re

from leanctx.context.errors import ShellInvalidCommand
from leanctx.context.shell.binary import escaped, find_runs, plain
from leanctx.context.shell.builder import (
    SAMPLE_ARCHIVE_ID,
    Builder,
    State,
    frames_marker,
)
from leanctx.context.shell.dispatch import Command, parse_command
from leanctx.context.shell.generic import detect_facts, finish, is_fact
from leanctx.context.shell.model import (
    ARCHIVE_PLACEHOLDER,
    Compressed,
    Omission,
    fill_archive,
)
from leanctx.context.shell.patterns import NO_GENERIC_FACTS, Ctx, select
from leanctx.context.shell.patterns.git_color_words import color_word_marks
from leanctx.context.shell.text import (
    FRAME_SEP,
    redraw_segments,
    screen_text,
    strip_ansi,
    terminal_line,
)
from leanctx.context.tokens import DEFAULT_ENCODING, count_tokens

__all__ = [
    "ARCHIVE_PLACEHOLDER",
    "Command",
    "Compressed",
    "Omission",
    "archive_text",
    "binary_notice",
    "compress",
    "fill_archive",
    "parse_command",
    "raw_render",
    "raw_text",
    "split_lines",
]


def split_lines(text: str) -> list[str]:
    """Lines as a terminal counts them: split on ``\\n`` only, no trailing empty line."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def raw_text(stdout: str, stderr: str) -> str:
    """stdout then stderr, as one text; omission ranges are line numbers of this text."""
    stdout, stderr = plain(stdout), plain(stderr)
    if stdout and stderr and not stdout.endswith("\n"):
        return f"{stdout}\n{stderr}"
    return stdout + stderr


def raw_render(stdout: str, stderr: str, exit_code: int) -> str:
    """The output as a plain run shows it (stdout, stderr, and ``[exit N]`` when it failed):
    what is sent when compression would not be shorter, and what ``raw_tokens`` counts."""
    text = raw_text(stdout, stderr).rstrip("\n")
    if exit_code == 0:
        return text
    return f"{text}\n[exit {exit_code}]" if text else f"[exit {exit_code}]"


def _screen(lines: list[str], encoding: str) -> tuple[list[str], dict[int, int]]:
    """The raw lines as the patterns read them, and the progress frames dropped per line.

    A line redrawn with carriage returns reads as its last frame, preceded by every earlier
    frame that states a fact (joined by ``␍``); the other earlier frames are dropped and
    counted, unless all the dropped frames together cost no more tokens than the marker that
    would announce them: then every frame is shown."""
    out: list[str] = []
    dropped: dict[int, list[str]] = {}
    for i, line in enumerate(lines):
        if "\r" not in line:
            out.append(strip_ansi(line).rstrip())
            continue
        segs = redraw_segments(line)
        final = segs[-1].rstrip() if segs else ""
        shown: list[str] = []
        for seg in segs[:-1]:
            seg = seg.rstrip()
            if not seg.strip() or seg.strip() == final.strip():
                continue  # blanking, or the same as what stays on screen
            if is_fact(seg):
                if not shown or shown[-1] != seg:
                    shown.append(seg)
            else:
                dropped.setdefault(i, []).append(seg)
        out.append(FRAME_SEP.join([*shown, final]).rstrip(FRAME_SEP) if shown else final)
    if not dropped:
        return out, {}
    n_frames = sum(len(v) for v in dropped.values())
    marker = frames_marker(n_frames, len(dropped)).replace(ARCHIVE_PLACEHOLDER, SAMPLE_ARCHIVE_ID)
    if count_tokens("\n".join(s for v in dropped.values() for s in v), encoding) <= count_tokens(marker, encoding):
        for i in dropped:  # cheaper to show every frame than to announce them
            out[i] = FRAME_SEP.join(s.rstrip() for s in redraw_segments(lines[i]) if s.strip())
        return out, {}
    return out, {i: len(v) for i, v in dropped.items()}


def archive_text(stdout: str, stderr: str, command: str | list[str] | None = None) -> str:
    """The text to archive when lines were omitted: one line per raw line (stdout lines, then
    stderr lines), ANSI escapes removed and every frame of a line redrawn with carriage returns
    kept, in order, separated by ``␍``, and binary runs escaped byte by byte (nothing else
    changed), so that line ``k`` of the archive is line ``k`` of the omission ranges of
    :class:`Compressed`. Given the ``command``, a colour word diff's colours are read as
    ``[-…-]``/``{+…+}`` first, as :func:`compress` reads them (stripped, its old and new words
    would run together in an expansion)."""
    lines = [*split_lines(escaped(stdout)), *split_lines(escaped(stderr))]
    if command is not None:
        lines = color_word_marks(parse_command(command), lines)[1]
    return "".join(screen_text(x) + "\n" for x in lines)


def binary_notice(nbytes: int, first: int, last: int) -> str:
    """The marker standing for a binary run of ``nbytes`` bytes on raw lines ``first``-``last``
    (1-based, the archive's numbering)."""
    where = f"line {first}" if first == last else f"lines {first}-{last}"
    return f"[binary output: {nbytes:,} byte{'' if nbytes == 1 else 's'} ({where}), not shown · expand {ARCHIVE_PLACEHOLDER}]"


MIN_EDGE_CHARS = 4  # text on a binary run's first or last line is kept from this length on


def _binary_runs(text: str, base: int) -> list[tuple[int, int, str]]:
    """The binary runs of one stream as ``(first line, last line, text shown)`` (0-based lines,
    offset by ``base``): runs sharing a line are one; the text before and after a run on its
    first and last line is kept on lines of its own around the marker, unless it is shorter
    than ``MIN_EDGE_CHARS`` (random bytes that happen to decode: counted with the run)."""
    runs = find_runs(text)
    if not runs:
        return []
    nl = [m.start() for m in re.finditer("\n", text)]

    def line_of(pos: int) -> int:
        return bisect.bisect_left(nl, pos)

    merged: list[list[int]] = []  # [first line, last line, start, end]
    for r in runs:
        first, last = line_of(r.start), line_of(r.end - 1)
        if merged and first <= merged[-1][1]:
            merged[-1][1], merged[-1][3] = last, r.end
        else:
            merged.append([first, last, r.start, r.end])
    out = []
    for first, last, start, end in merged:
        nbytes = len(text[start:end].encode("utf-8", "surrogateescape"))  # text between merged runs too
        stop = text.find("\n", end)
        edges = []
        for raw in (text[text.rfind("\n", 0, start) + 1:start], text[end:stop if stop >= 0 else len(text)]):
            shown = strip_ansi(terminal_line(plain(raw))).rstrip()
            if len(shown.strip()) < MIN_EDGE_CHARS:  # a few stray characters go with the run
                nbytes += len(raw.encode("utf-8", "surrogateescape"))
                shown = ""
            edges.append(shown)
        parts = [edges[0], binary_notice(nbytes, base + first + 1, base + last + 1), edges[1]]
        out.append((base + first, base + last, "\n".join(p for p in parts if p)))
    return out


def compress(
    command: str | list[str],
    stdout: str,
    stderr: str = "",
    exit_code: int = 0,
    *,
    encoding: str = DEFAULT_ENCODING,
) -> Compressed:
    """Compress a command's output for an agent; see the module docstring for the guarantees."""
    if not isinstance(command, (str, list)):
        raise ShellInvalidCommand("command must be a string or a list of strings (argv).")
    out_lines = split_lines(plain(stdout))
    err_lines = split_lines(plain(stderr))
    raw_lines = [*out_lines, *err_lines]
    raw = raw_render(stdout, stderr, exit_code)
    raw_tokens = count_tokens(raw, encoding)
    binary = [*_binary_runs(stdout, 0), *_binary_runs(stderr, len(out_lines))]
    in_binary = {i for first, last, _ in binary for i in range(first, last + 1)}

    cmd = parse_command(command)
    # a colour word diff's colours read as git's plain marks before _screen strips them
    cmd, screened = color_word_marks(cmd, [("" if i in in_binary else x) for i, x in enumerate(raw_lines)])
    cleaned, frames = _screen(screened, encoding)
    b = Builder(cleaned)
    b.frames = frames
    for first, last, shown in binary:
        b.binary(range(first, last + 1), shown)
    name, fn = select(cmd, b.lines)
    key = f"{name}:{cmd.sub}" if name in {"git", "pip"} else name
    if key not in NO_GENERIC_FACTS:
        detect_facts(b)
    if fn is not None:
        fn(b, Ctx(cmd=cmd, exit_code=exit_code, n_stdout=len(out_lines)))
    finish(b)
    b.settle(lambda t: count_tokens(t, encoding))
    b.seal()
    text = b.render(exit_code)
    missing = b.missing_facts(text)
    if missing:  # a pattern rewrote a fact away: restore it verbatim rather than lose it
        text = text + "\n" + "\n".join(f"[kept] {f}" for f in missing)
    fact_lines = b.fact_lines()
    facts = [f for _, f in fact_lines]
    if exit_code != 0:
        facts.append(f"exit {exit_code}")
    sent_tokens = count_tokens(text, encoding)
    counts = b.counts()
    if sent_tokens >= raw_tokens or not raw_lines:
        return Compressed(
            text=raw,
            pattern="raw",
            exit_code=exit_code,
            raw_tokens=raw_tokens,
            sent_tokens=raw_tokens,
            raw_lines=len(raw_lines),
            kept_lines=len(raw_lines),
            folded_lines=0,
            omitted_lines=0,
            blank_lines=0,
            omissions=[],
            # raw output: every line is there verbatim (a fact is looked for in its own line first:
            # searching the whole output for each fact would cost facts × output)
            must_keep=[f for i, f in fact_lines if f in raw_lines[i] or f in raw]
            + ([f"exit {exit_code}"] if exit_code != 0 else []),
        )
    omissions = b.omissions()
    return Compressed(
        text=text,
        pattern=name,
        exit_code=exit_code,
        raw_tokens=raw_tokens,
        sent_tokens=sent_tokens,
        raw_lines=len(raw_lines),
        kept_lines=counts[State.KEPT],
        folded_lines=counts[State.FOLDED],
        omitted_lines=counts[State.OMITTED],
        blank_lines=counts[State.BLANK],
        omissions=omissions,
        must_keep=facts,
    )
