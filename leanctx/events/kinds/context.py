"""Context-engine facts: reads, shell runs, searches, expansions, edits, archives.

Every one carries real tokenizer counts (``raw_tokens``: what the agent would have received
without lean-ctx; ``sent_tokens``: what it did receive) so that savings are measured from the
log. Text content never enters the log: only paths, hashes, counts and archive ids.
"""

from __future__ import annotations

from .base import Event

UNSENT_MODE = "unsent"  # FileRead.mode of a file a read named past its cap without sending it


class FileRead(Event, tag="file.read"):
    """A file was read through ctx_read (one event per path)."""

    path: str  # project-relative
    mode: str  # the mode used (auto resolved); UNSENT_MODE: named past the cap, not sent (not a read)
    requested_mode: str
    content_hash: str  # sha256 of the file's bytes
    lines: int
    raw_tokens: int  # the whole file, as a plain read would have sent it
    sent_tokens: int
    stub: bool = False  # the unchanged-stub was sent
    fresh: bool = False
    ref: str | None = None  # F1..Fn of the session
    archive_id: str | None = None  # set when the answer was capped and the rest archived
    redactions: int = 0
    session_id: str | None = None
    encoding: str = "o200k_base"  # the encoding spec that counted (cl100k_base*1.1: with a correction)
    # capped answers only (else None, as on events written before these fields): the tokens of
    # the whole view the answer was cut from, and of the part of it left out and archived, not
    # sent (the ``~N tokens`` of the cap notice). A cap defers content, it does not compress it.
    view_tokens: int | None = None
    deferred_tokens: int | None = None
    # ``lines:`` views only (else None, as on events written before the field): the tokens of the
    # view's body, i.e. of those lines as a plain ranged read would send them (what the savings
    # projection counts as raw for the read, instead of the whole file's ``raw_tokens``).
    plain_tokens: int | None = None
    # capped answers only (else None, as on events written before the field): how many leading
    # lines of the view (= of the archive) the answer sent whole; a line it sent only the first
    # characters of is not counted. The conversation holds those lines: expanding them again is
    # a cost, not the recovery of what the cap deferred.
    sent_lines: int | None = None


class ShellRan(Event, tag="shell.ran"):
    """A command ran through ctx_shell (or captured output went through compress)."""

    command: str
    pattern: str  # the compression pattern used (git_status, pytest, generic, ...)
    exit_code: int
    raw_tokens: int
    sent_tokens: int
    omitted_lines: int = 0
    archive_id: str | None = None
    duration_ms: float = 0.0
    captured: bool = False  # True for `lean-ctx compress` (no command was run)
    redactions: int = 0
    session_id: str | None = None
    encoding: str = "o200k_base"
    # capped answers only (else None, as on events written before these fields): the tokens of
    # the whole answer the cap cut (compressed or raw, notes included), of the part of it left
    # out and archived, not sent (the ``~N tokens`` of the cap notice), and the archive holding
    # that whole answer (the one the notice names; ``archive_id`` is the full output's when
    # compression also omitted lines). A cap defers content, it does not compress it.
    answer_tokens: int | None = None
    deferred_tokens: int | None = None
    capped_archive_id: str | None = None
    # capped answers only, optional (None: not known): the lines of the capped answer (= of
    # ``capped_archive_id``'s archive) it sent whole, as runs ``[first, last]`` (1-based,
    # inclusive, ascending, disjoint: the head, and the tail when the cap kept one), as
    # ``ArchiveExpanded.line_spans``.
    line_spans: list[list[int]] | None = None


class SearchRan(Event, tag="search.ran"):
    """A search over the project (regex, bm25, semantic or fused)."""

    query: str
    method: str
    results: int
    raw_tokens: int
    sent_tokens: int
    archive_id: str | None = None
    redactions: int = 0
    session_id: str | None = None
    encoding: str = "o200k_base"


class ArchiveCreated(Event, tag="archive.created"):
    """Full text kept out of an answer was archived (content-addressed, secrets redacted)."""

    archive_id: str
    source: str  # shell | read | search | tree
    sha256: str
    bytes: int
    lines: int
    tokens: int


class ArchiveExpanded(Event, tag="archive.expanded"):
    """Part of an archive was sent back (head, tail, lines, grep)."""

    archive_id: str
    selector: str
    sent_tokens: int  # the whole answer: ``N:`` line prefixes and notices included
    session_id: str | None = None
    encoding: str | None = None  # the tokenizer that counted sent_tokens (None: written before it was recorded)
    # the tokens of the archived text actually returned, without ``N:`` prefixes or notices
    # (None: not given, as on events written before the field; the savings projection then
    # takes ``sent_tokens``)
    text_tokens: int | None = None
    # the archive lines this answer sent whole, as runs ``[first, last]`` (1-based, inclusive,
    # ascending, disjoint); a line sent only in part (a character range, a line cut by the cap)
    # is not in them. None: not given (the projection then reads what it can from ``selector``).
    line_spans: list[list[int]] | None = None


class FileEdited(Event, tag="file.edited"):
    """A file was changed through ctx_edit (old text replaced by new, atomically)."""

    path: str
    before_hash: str
    after_hash: str
    replacements: int
    sent_tokens: int = 0
    session_id: str | None = None
