"""Knowledge commands: remember, remove, resolve, consolidate and import facts (stream
``knowledge:<key>``). Status and export are queries (``leanctx.projections.knowledge``); so is
``recall`` (bm25, fused with the nearest facts in sqlite-vec when a model is installed), in
:mod:`.knowledge_recall` because it keeps the vector cache current; it appends nothing.

Any agent may write any key: knowledge is the project's, not an agent's. Two agents writing
different values to one key within ``conflict_window_s`` (default 10 minutes) is a conflict:
both values are kept and flagged to the next reader (see the projection's docstring for what
clears it). Codes: KNOWLEDGE_NO_AGENT, KNOWLEDGE_INVALID_KEY, KNOWLEDGE_INVALID_CATEGORY,
KNOWLEDGE_INVALID_CONFIDENCE, KNOWLEDGE_EMPTY_VALUE, KNOWLEDGE_VALUE_TOO_LONG,
KNOWLEDGE_INVALID_SOURCE, KNOWLEDGE_INVALID_WINDOW, KNOWLEDGE_INVALID_THRESHOLD,
KNOWLEDGE_NOT_FOUND, KNOWLEDGE_NO_CONFLICT, KNOWLEDGE_INVALID_VALUE, KNOWLEDGE_QUERY_TOO_LONG (recall: over
ctx_search's ``MAX_QUERY_CHARS``).
"""

from __future__ import annotations

import math
import re

import msgspec

from .. import clock
from ..errors import CommandError, InvalidInput, NotFound
from ..events.kinds.knowledge import (
    KnowledgeConsolidated,
    KnowledgeRemembered,
    KnowledgeRemoved,
    KnowledgeResolved,
)
from ..ops.search_input import MAX_QUERY_CHARS
from ..projections.knowledge import (
    Alternative,
    get_entry,
    near_duplicates,
    normalize,
)
from .bus import Command, CommandContext, handles

DEFAULT_WINDOW_S = 600.0
DEFAULT_CONFIDENCE = 0.8
DEFAULT_THRESHOLD = 0.8
MAX_VALUE = 8_000
MAX_SOURCE = 1_000
MAX_IMPORT = 10_000
_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$")
_CATEGORY = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def stream_of(key: str) -> str:
    return f"knowledge:{key}"


def check_key(key: str) -> str:
    k = key.strip()
    if not _KEY.match(k):
        raise InvalidInput("KNOWLEDGE_INVALID_KEY",
                           f"knowledge key {key!r} must be 1-200 letters, digits or '._:/@+-', starting with a "
                           "letter or digit (e.g. 'db.engine')")
    return k


def check_category(category: str) -> str:
    c = category.strip().lower()
    if not _CATEGORY.match(c):
        raise InvalidInput("KNOWLEDGE_INVALID_CATEGORY",
                           f"knowledge category {category!r} must be one word of 1-40 lowercase letters, digits, "
                           "'_' or '-', starting with a letter (e.g. 'architecture')")
    return c


def check_confidence(confidence: float) -> float:
    if not isinstance(confidence, (int, float)) or isinstance(confidence, bool) \
            or not math.isfinite(confidence) or not 0.0 <= confidence <= 1.0:
        raise InvalidInput("KNOWLEDGE_INVALID_CONFIDENCE",
                           f"confidence {confidence!r} must be a number from 0 to 1")
    return float(confidence)


def check_value(value: str) -> str:
    v = value.strip()
    if not v:
        raise InvalidInput("KNOWLEDGE_EMPTY_VALUE", "a fact needs a value")
    if len(v) > MAX_VALUE:
        raise InvalidInput("KNOWLEDGE_VALUE_TOO_LONG", f"a value holds at most {MAX_VALUE} characters; split it")
    return v


def check_query(query: str) -> str:
    """Refuse a recall query longer than ctx_search's (``ops.search_input.MAX_QUERY_CHARS``)."""
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInput("KNOWLEDGE_QUERY_TOO_LONG", f"the query has {len(query)} characters; use at most "
                           f"{MAX_QUERY_CHARS} (a few words of the fact you are looking for)")
    return query


def check_source(source: str | None) -> str | None:
    if source is None or not source.strip():
        return None
    s = source.strip()
    if len(s) > MAX_SOURCE or _CONTROL.search(s):
        raise InvalidInput("KNOWLEDGE_INVALID_SOURCE",
                           f"a source is at most {MAX_SOURCE} characters without control characters")
    return s


def _me(ctx: CommandContext) -> str:
    if not ctx.actor:
        raise InvalidInput("KNOWLEDGE_NO_AGENT", "a fact needs the writing agent's identity (set $LEAN_CTX_AGENT_ID)")
    return ctx.actor


class RememberKnowledge(Command, frozen=True):
    name = "knowledge.remember"
    category: str
    key: str
    value: str
    confidence: float = DEFAULT_CONFIDENCE
    source: str | None = None
    conflict_window_s: float = DEFAULT_WINDOW_S


class RememberAck(msgspec.Struct, frozen=True):
    key: str
    category: str
    version: int
    ts: str
    conflict: bool = False
    alternatives: list[Alternative] = []  # when conflict: the values in dispute


@handles(RememberKnowledge, emits=("knowledge.remembered",), result=RememberAck)
def remember(ctx: CommandContext, cmd: RememberKnowledge) -> RememberAck:
    me = _me(ctx)
    key, category = check_key(cmd.key), check_category(cmd.category)
    value, confidence, source = check_value(cmd.value), check_confidence(cmd.confidence), check_source(cmd.source)
    if not math.isfinite(cmd.conflict_window_s) or cmd.conflict_window_s < 0:
        raise InvalidInput("KNOWLEDGE_INVALID_WINDOW", "conflict_window_s must be a number of seconds ≥ 0")
    prev = get_entry(ctx.conn, key)
    conflict = (prev is not None and prev.agent != me and normalize(prev.value) != normalize(value)
                and ctx.now - clock.parse(prev.ts) <= cmd.conflict_window_s)
    alts: list[Alternative] = []
    if conflict and prev is not None:
        alts = list(prev.alternatives) if prev.conflict else [
            Alternative(prev.agent, prev.value, prev.confidence, prev.ts, prev.position, prev.source)]
        alts = [a for a in alts if a.agent != me] + [Alternative(me, value, confidence, ctx.ts, 0, source)]
    stream = stream_of(key)
    version = ctx.tx.stream_version(stream) + 1  # the write lock is held
    ctx.emit(stream, KnowledgeRemembered(key=key, category=category, value=value, confidence=confidence,
                                         source=source, conflict_window_s=float(cmd.conflict_window_s)))
    return RememberAck(key, category, version, ctx.ts, conflict, alts)


class RemoveKnowledge(Command, frozen=True):
    name = "knowledge.remove"
    key: str


class RemoveAck(msgspec.Struct, frozen=True):
    key: str
    value: str


def _existing(ctx: CommandContext, key: str):  # type: ignore[no-untyped-def]
    entry = get_entry(ctx.conn, check_key(key))
    if entry is None:
        raise NotFound("KNOWLEDGE_NOT_FOUND",
                       f"no fact with key {key.strip()!r}; look it up (ctx_knowledge action=recall query={key.strip()},"
                       f" or `lean-ctx knowledge recall {key.strip()}`)")
    return entry


@handles(RemoveKnowledge, emits=("knowledge.removed",), result=RemoveAck)
def remove(ctx: CommandContext, cmd: RemoveKnowledge) -> RemoveAck:
    _me(ctx)
    entry = _existing(ctx, cmd.key)
    ctx.emit(stream_of(entry.key), KnowledgeRemoved(key=entry.key))
    return RemoveAck(entry.key, entry.value)


class ResolveKnowledge(Command, frozen=True):
    """Settle a flagged conflict: keep ``value`` (default: the current head value)."""

    name = "knowledge.resolve"
    key: str
    value: str | None = None


class ResolveAck(msgspec.Struct, frozen=True):
    key: str
    value: str
    discarded: list[str]


@handles(ResolveKnowledge, emits=("knowledge.resolved",), result=ResolveAck)
def resolve(ctx: CommandContext, cmd: ResolveKnowledge) -> ResolveAck:
    _me(ctx)
    entry = _existing(ctx, cmd.key)
    if not entry.conflict:
        raise CommandError("KNOWLEDGE_NO_CONFLICT", f"{entry.key!r} has no conflict to resolve")
    value = entry.value if cmd.value is None else check_value(cmd.value)
    if normalize(value) not in {normalize(a.value) for a in entry.alternatives}:
        raise InvalidInput("KNOWLEDGE_INVALID_VALUE",
                           f"{value!r} is not one of the values in dispute for {entry.key!r}; pick one of them "
                           "or write a new value with `remember`")
    ctx.emit(stream_of(entry.key), KnowledgeResolved(key=entry.key, value=value))
    return ResolveAck(entry.key, value, sorted({a.value for a in entry.alternatives
                                                if normalize(a.value) != normalize(value)}))


class ConsolidateKnowledge(Command, frozen=True):
    name = "knowledge.consolidate"
    threshold: float = DEFAULT_THRESHOLD
    dry_run: bool = False


class Merge(msgspec.Struct, frozen=True):
    key: str  # kept
    merged: list[str]
    category: str
    confidence: float
    similarity: float


class ConsolidateResult(msgspec.Struct, frozen=True):
    merges: list[Merge]
    dry_run: bool = False


@handles(ConsolidateKnowledge, emits=("knowledge.consolidated",), result=ConsolidateResult)
def consolidate(ctx: CommandContext, cmd: ConsolidateKnowledge) -> ConsolidateResult:
    _me(ctx)
    if not math.isfinite(cmd.threshold) or not 0.0 < cmd.threshold <= 1.0:
        raise InvalidInput("KNOWLEDGE_INVALID_THRESHOLD", "threshold must be a Jaccard overlap in (0, 1]")
    merges = []
    for keep, merged, sim in near_duplicates(ctx.conn, threshold=cmd.threshold):
        kept = get_entry(ctx.conn, keep)
        assert kept is not None
        conf = max([kept.confidence] + [e.confidence for e in (get_entry(ctx.conn, k) for k in merged) if e])
        merges.append(Merge(keep, merged, kept.category, conf, sim))
        if not cmd.dry_run:
            ctx.emit(stream_of(keep), KnowledgeConsolidated(key=keep, merged=tuple(merged), category=kept.category,
                                                            confidence=conf, similarity=sim))
    return ConsolidateResult(merges, cmd.dry_run)


class ImportEntry(msgspec.Struct, frozen=True, kw_only=True):
    key: str
    category: str
    value: str
    confidence: float = DEFAULT_CONFIDENCE
    source: str | None = None


class ImportKnowledge(Command, frozen=True):
    """Append the given facts; an entry identical (key, category, value, confidence, source)
    to the current fact, or to an earlier one of the batch, is skipped."""

    name = "knowledge.import"
    entries: tuple[ImportEntry, ...]
    conflict_window_s: float = DEFAULT_WINDOW_S


class ImportResult(msgspec.Struct, frozen=True):
    imported: list[str]
    skipped: list[str]


@handles(ImportKnowledge, emits=("knowledge.remembered",), result=ImportResult)
def import_(ctx: CommandContext, cmd: ImportKnowledge) -> ImportResult:
    _me(ctx)
    if len(cmd.entries) > MAX_IMPORT:
        raise InvalidInput("KNOWLEDGE_IMPORT_TOO_LARGE", f"import at most {MAX_IMPORT} facts at a time; split the file")
    imported: list[str] = []
    skipped: list[str] = []
    seen: dict[str, tuple[object, ...]] = {}
    rows = []
    for i, e in enumerate(cmd.entries, start=1):
        try:
            row = (check_key(e.key), check_category(e.category), check_value(e.value),
                   check_confidence(e.confidence), check_source(e.source))
        except InvalidInput as exc:
            raise InvalidInput(exc.code, f"entry {i}: {exc.message}") from None
        rows.append(row)
    for row in rows:
        key = row[0]
        cur = seen.get(key)
        if cur is None:
            entry = get_entry(ctx.conn, key)
            cur = None if entry is None else (entry.key, entry.category, entry.value, entry.confidence, entry.source)
        if cur == row:
            skipped.append(key)
            continue
        seen[key] = row
        ctx.emit(stream_of(key), KnowledgeRemembered(key=row[0], category=row[1], value=row[2],  # type: ignore[arg-type]
                                                     confidence=row[3], source=row[4],  # type: ignore[arg-type]
                                                     conflict_window_s=float(cmd.conflict_window_s)))
        imported.append(key)
    return ImportResult(imported, skipped)


# --- export / import files (JSON lines) -----------------------------------------------------

_line_dec = msgspec.json.Decoder(ImportEntry)
_enc = msgspec.json.Encoder()


def export_jsonl(entries: list) -> str:  # list[KnowledgeEntry]
    """One JSON object per fact (key, category, value, confidence, source, agent, ts, conflict):
    what ``parse_jsonl`` / ``ImportKnowledge`` read back (agent, ts and conflict are informative)."""
    out = []
    for e in entries:
        out.append(_enc.encode({"key": e.key, "category": e.category, "value": e.value, "confidence": e.confidence,
                                "source": e.source, "agent": e.agent, "ts": e.ts, "conflict": e.conflict}).decode())
    return "".join(line + "\n" for line in out)


def parse_jsonl(text: str) -> tuple[ImportEntry, ...]:
    entries = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entries.append(_line_dec.decode(line))
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise InvalidInput("KNOWLEDGE_INVALID_IMPORT",
                               f"line {n} is not a knowledge entry ({exc}); expected JSON lines as written by "
                               "ctx_knowledge action=export or `lean-ctx knowledge export`") from None
    return tuple(entries)


def entry_lines(e) -> list[str]:  # e: KnowledgeEntry
    """A fact as text for a reader; a conflict is spelt out with every value in dispute."""
    src = f" (source: {e.source})" if e.source else ""
    lines = [f"{e.key} [{e.category}] = {e.value}  conf {e.confidence:.2f}, by {e.agent} at {e.ts[:19]}{src}"]
    if e.conflict:
        lines.append(f"  ⚠ CONFLICT on {e.key}: agents disagree — resolve it (ctx_knowledge action=resolve"
                     f" key={e.key} value=VALUE, or `lean-ctx knowledge resolve {e.key} [VALUE]`)")
        lines.extend(f"    {a.agent} at {a.ts[:19]}: {a.value}" for a in e.alternatives)
    return lines
