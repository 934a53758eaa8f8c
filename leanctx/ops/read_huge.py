"""``lines:`` reads of files over the read limit (``MAX_FILE_BYTES``, 8 MiB): streamed.

Every other mode refuses such a file (``READ_FILE_TOO_LARGE``, ``leanctx.ops.read_load``); a
``lines:N-M`` read needs only its lines, so the file is read once, in chunks of ``CHUNK`` bytes,
never whole:

- the **sha256** of all its bytes is computed on the way (the content hash of the answer, so
  stubs and deliveries work as for any file), and its **lines are counted** as ``source_lines``
  counts them: LF, CRLF and a lone CR each end a line (``read_load.decode`` makes a lone CR a
  LF), a final line end opens no line;
- only the lines asked for are kept (plus ``CONTEXT`` lines around each range, for
  redaction), decoded as ``read_load.decode`` does (a byte that is not UTF-8 becomes U+FFFD);
  the header's notes count bytes not UTF-8 and CR-only line ends over the whole file;
- a file whose first 8,192 bytes hold a NUL is refused (``READ_BINARY_FILE``), as any read;
- the lines asked for may hold at most ``MAX_FILE_BYTES`` bytes in all
  (``READ_LINES_TOO_LARGE`` otherwise: ask for fewer lines; for one line over the limit by
  itself, which no ``lines:`` read can send, the message names the shell command that sends it
  in pieces of ``PIECE_BYTES`` bytes), so memory stays bounded;
- **redaction** (``redact_keeping_lines``) runs on each range with ``CONTEXT`` lines on either
  side (of each, at most ``CONTEXT_BYTES``: its end before the range, its start after; they do
  not count towards the limit above, so a huge line next to the lines asked for is no obstacle) (a secret split over a range's edge is still recognized), and on a range that starts
  inside a private key block (its ``BEGIN`` line earlier in the file, no ``END`` since) with
  that ``BEGIN`` line in front, so the key's lines are redacted as in a whole-file read;
- the view is rendered exactly as ``render_lines`` renders it (``N<TAB>line``, the gaps, the
  footer), then capped and archived like any other view. Nothing is cached (no blob of the
  whole file exists; the stat record is not written), and ``raw_tokens`` (what a plain read
  of the whole file would send, for the savings projection) is an estimate from a sample of
  every chunk (``lines:`` savings are measured against the lines anyway).
"""

from __future__ import annotations

import codecs
import hashlib
import os
import re

from ..cache.views import FileStat, View
from ..commands.read import redact_keeping_lines
from ..context.errors import ContextError
from ..context.modes.basic import numbered_ranges, parse_ranges, ranges_spec
from ..context.tokens import count_tokens
from ..errors import InvalidInput
from .read_load import MAX_FILE_BYTES, decode

__all__ = ["CHUNK", "CONTEXT", "PIECE_BYTES", "Streamed", "render_streamed", "stream_lines"]

CHUNK = 1 << 20
CONTEXT = 2  # lines kept around each range for redaction only
CONTEXT_BYTES = 65_536  # of a context line, at most this much is kept (its end before a range, its start after)
_SAMPLE = 2048  # bytes of each chunk counted for the raw_tokens estimate
_LONE_CR = re.compile(rb"\r(?!\n)")
_KEY_MARK = re.compile(rb"-----(BEGIN|END) [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
_MARK_BYTES = 96  # longer than any key marker
_NOT_UTF8 = re.compile("[\udc80-\udcff]")
_ENOUGH = 10**15  # a line count no file reaches: ranges resolved before the file is counted


class Streamed:
    """A file over the read limit, streamed for the lines of ``spec``: its hash and stat record,
    its line count, and the kept lines (decoded, by number: the ranges and their context)."""

    __slots__ = ("begins", "kept", "lines", "raw_tokens", "rel", "sha", "spec", "stat")

    def __init__(self, rel: str, sha: str, st: FileStat, lines: int, kept: dict[int, str],
                 begins: dict[int, str], raw_tokens: int, spec: str) -> None:
        self.rel, self.sha, self.stat, self.lines, self.kept = rel, sha, st, lines, kept
        self.begins, self.raw_tokens, self.spec = begins, raw_tokens, spec

    @property
    def fast(self) -> bool:
        return False


def _wanted(spec: str) -> list[tuple[int, int]]:
    """The ranges of ``spec`` widened by ``CONTEXT`` lines (before the line count is known)."""
    try:
        ranges = parse_ranges(spec, _ENOUGH)
    except ContextError as exc:
        raise InvalidInput(exc.code, exc.message) from None
    return [(max(1, s - CONTEXT), e + CONTEXT) for s, e in ranges]


def stream_lines(fd: int, rel: str, st: os.stat_result, spec: str, hashed_ns: int, encoding: str) -> Streamed:
    """Stream the open file ``fd`` (see the module doc); refusals raise ``InvalidInput``."""
    want = _wanted(spec)
    asked = parse_ranges(spec, _ENOUGH)  # valid: _wanted parsed it
    sha = hashlib.sha256()
    utf8 = codecs.getincrementaldecoder("utf-8")("surrogateescape")  # only to count bytes not UTF-8
    kept: dict[int, bytearray] = {}
    kept_bytes = 0
    sizes: dict[int, int] = {}  # bytes of each line kept (or that would have been)
    too_many = False
    line = 1  # the line the next byte belongs to
    held = b""  # a CR at the end of a chunk: its LF may start the next one
    size = bad = cr_breaks = 0
    ends_open = False  # the last byte read did not end a line
    begins: dict[int, str] = {}  # window start -> the BEGIN line of the key block it starts inside
    sample_tokens = sample_bytes = 0
    tail = b""  # the end of the last line of the previous chunk: a key marker may straddle chunks
    chunk = os.read(fd, CHUNK)
    if b"\x00" in chunk[:8192]:
        raise InvalidInput("READ_BINARY_FILE", f"{rel} is a binary file; lean-ctx reads text files", path=rel)
    while chunk or held:
        sha.update(chunk)
        size += len(chunk)
        if not chunk.isascii():
            bad += len(_NOT_UTF8.findall(utf8.decode(chunk)))
        piece = chunk[:_SAMPLE]
        sample_tokens += count_tokens(decode(piece)[0], encoding) if piece else 0
        sample_bytes += len(piece)
        data, held = held + chunk, b""
        if chunk and data.endswith(b"\r"):
            held, data = b"\r", data[:-1]
        data, n = _LONE_CR.subn(b"\n", data)
        cr_breaks += n
        if data:
            nl = data.count(b"\n")
            if b"PRIVATE KEY" in data or b"PRIVATE KEY" in tail + data[:_MARK_BYTES]:
                _key_marks(tail + data, line, want, begins)
            tail = data[data.rfind(b"\n") + 1:][-_MARK_BYTES:]
            if any(s <= line + nl and e >= line for s, e in want):
                for i, part in enumerate(data.split(b"\n")):
                    k = line + i
                    if any(s <= k <= e for s, e in want):
                        if not any(s <= k <= e for s, e in asked):  # context only: a bounded piece of it
                            got = kept.setdefault(k, bytearray())
                            if any(s > k for s, _ in asked):  # before a range: its end
                                got.extend(part)
                                del got[:max(0, len(got) - CONTEXT_BYTES)]
                            else:  # after one: its start
                                got.extend(part[:max(0, CONTEXT_BYTES - len(got))])
                            continue
                        sizes[k] = sizes.get(k, 0) + len(part)
                        if kept_bytes + len(part) > MAX_FILE_BYTES:
                            too_many = True
                            continue
                        kept.setdefault(k, bytearray()).extend(part)
                        kept_bytes += len(part)
            line += nl
            ends_open = not data.endswith(b"\n")
        chunk = os.read(fd, CHUNK) if chunk else b""
    bad += len(_NOT_UTF8.findall(utf8.decode(b"", final=True)))
    lines = line if ends_open else line - 1
    fs = FileStat(st.st_mtime_ns, st.st_size, st.st_ino, sha.hexdigest(), st.st_ctime_ns, st.st_dev,
                  hashed_ns if size == st.st_size else 0, bad, cr_breaks)
    ranges = _resolve(rel, spec, lines)
    if too_many:
        raise _too_large(rel, ranges, lines, sizes)
    raw = round(sample_tokens * size / sample_bytes) if sample_bytes else 0
    out: dict[int, str] = {}
    for k, b in kept.items():
        if k <= lines:
            out[k] = decode(bytes(b).removesuffix(b"\r"))[0]  # a CRLF's CR (lone CRs are line ends already)
    return Streamed(rel, fs.sha256, fs, lines, out, begins, raw, spec)


PIECE_BYTES = 60_000  # bytes of one piece of an over-long line in the advice (about 15,000 tokens)


def _too_large(rel: str, ranges: list[tuple[int, int]], lines: int, sizes: dict[int, int]) -> InvalidInput:
    """``READ_LINES_TOO_LARGE``: fewer lines, or, for a line over the limit by itself (which no
    ``lines:`` read can send: ``lines:`` has no character ranges), the shell command that sends
    pieces of it (its lines numbered as lean-ctx numbers them, ``read_load.crlf_as_lines``)."""
    import shlex

    from .read_load import crlf_as_lines

    asked = {k for s, e in ranges for k in range(s, e + 1)}
    huge = [k for k in sorted(sizes) if k in asked and sizes[k] > MAX_FILE_BYTES]
    if not huge:
        return InvalidInput("READ_LINES_TOO_LARGE", f"lines {ranges_spec(ranges)} of {rel} hold more than"
                            f" {MAX_FILE_BYTES:,} bytes, more than lean-ctx keeps of a file; ask for fewer lines"
                            f" (the file has {lines:,})", path=rel)
    k = huge[0]
    piece = f"{crlf_as_lines(rel)} | sed -n '{k}{{p;q}}' | cut -b 1-{PIECE_BYTES}"
    more = f" (and {len(huge) - 1:,} more such line{'s' if len(huge) > 2 else ''})" if len(huge) > 1 else ""
    return InvalidInput(
        "READ_LINES_TOO_LARGE",
        f"line {k} of {rel} alone holds {sizes[k]:,} bytes{more}, more than lean-ctx keeps of a file"
        f" ({MAX_FILE_BYTES:,}), and a lines: read sends whole lines only; take it in pieces with lean-ctx shell --"
        f" {shlex.quote(piece)} (bytes 1-{PIECE_BYTES:,}; then {PIECE_BYTES + 1}-{2 * PIECE_BYTES}, …)"
        + (", and read the other lines with lines: ranges that leave it out" if len(asked) > 1 else ""),
        path=rel, line=k, bytes=sizes[k])


def _key_marks(data: bytes, line: int, want: list[tuple[int, int]], begins: dict[int, str]) -> None:
    """Private key markers in ``data`` (its first byte on line ``line``): a window starting after
    a BEGIN starts inside its block (the BEGIN line is kept for it), after an END outside."""
    for m in _KEY_MARK.finditer(data):
        at = line + data.count(b"\n", 0, m.start())
        text = ""
        if m.group(1) == b"BEGIN":
            start = data.rfind(b"\n", 0, m.start()) + 1
            stop = data.find(b"\n", m.end())
            text = decode(data[start:stop if stop >= 0 else len(data)])[0].removesuffix("\r")
        for s, _ in want:
            if s > at:
                if text:
                    begins[s] = text
                else:
                    begins.pop(s, None)


def _resolve(rel: str, spec: str, lines: int) -> list[tuple[int, int]]:
    try:
        return parse_ranges(spec, lines)
    except ContextError as exc:
        raise InvalidInput(exc.code, exc.message, path=rel) from None


def render_streamed(f: Streamed, encoding: str, *, raw: bool) -> tuple[View, View, int]:
    """(the view sent, its redacted rendering, secrets redacted in the lines kept)."""
    ranges = _resolve(f.rel, f.spec, f.lines)
    real: dict[int, str] = {}
    red: dict[int, str] = {}
    count = 0
    for s, e in ranges:
        lo, hi = max(1, s - CONTEXT), min(f.lines, e + CONTEXT)
        window = [f.kept.get(k, "") for k in range(lo, hi + 1)]
        lead = [f.begins[lo]] if lo in f.begins else []
        text, n = redact_keeping_lines("\n".join([*lead, *window]))
        count += n
        got = text.split("\n")[len(lead):]
        for k in range(s, e + 1):
            real[k] = f.kept.get(k, "")
            red[k] = got[k - lo]
    redacted = _render(f, ranges, red, encoding)
    return (_render(f, ranges, real, encoding) if raw else redacted), redacted, count


def _render(f: Streamed, ranges: list[tuple[int, int]], lines: dict[int, str], encoding: str) -> View:
    text, shown, note = numbered_ranges(ranges, lines.__getitem__, f.lines)
    return View("lines", text, f.lines, shown, f.lines - shown, note, None, count_tokens(text, encoding))
