"""Context Proof v1: what the log says, as of one head position, signed with the project key.

``build(app)`` replays the log up to its head into a fresh database (the log is the only
source of truth) and records: the head (position, hash), the hash chain check up to the head,
event counts by kind, every projection's name / version / digest, and per agent the
``tool.called`` calls (and errors), the tokens of ``budget.consumed`` and the savings figures
of ``savings.report(by=agent)``. It then signs the canonical bytes (``keys.canonical``) of
the whole document without its ``signature`` field with the project key; ``signer`` (key id,
public key, fingerprint) is part of the signed content.

``verify(app, text)`` refuses a file that is not exactly the canonical rendering of its
content (``render``), checks the signature with a *trusted* key (the trust store or this data
dir's own keys — a key carried only by the file is reported as ``KEY_UNTRUSTED``), then
re-derives every figure from the log with events after the proof's head ignored, and names
each difference.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import msgspec

from . import clock, keys
from .errors import LeanCtxError
from .events import StoredEvent
from .events.codec import GENESIS_HASH, check_link
from .projections import savings as sv
from .projections.fresh import build_fresh

FORMAT = "lean-ctx/context-proof"
VERSION = 1


class Difference(msgspec.Struct, frozen=True):
    code: str  # SIGNATURE_INVALID, KEY_UNTRUSTED, PROOF_MALFORMED, CHAIN_BROKEN, FIGURE_MISMATCH, ...
    field: str  # the dotted path of the figure ("events.by_kind.task.created", "projections.tasks.digest")
    message: str
    expected: Any = None  # what the proof says
    actual: Any = None  # what the log says


class VerifyReport(msgspec.Struct):
    ok: bool
    file: str
    head_position: int | None
    signer: dict[str, Any] | None
    trusted: bool
    signature_valid: bool
    differences: list[Difference]
    db_path: str | None = None


# --- deriving the figures from the log ---------------------------------------------------
class _Scan:
    """One pass over the log up to ``upto``: checks the hash chain and counts, passing the
    events through to the projection replay."""

    def __init__(self, store: Any, upto: int) -> None:
        self.store, self.upto = store, upto
        self.by_kind: Counter[str] = Counter()
        self.tool_calls: Counter[str] = Counter()
        self.tool_errors: Counter[str] = Counter()
        self.tokens: Counter[str] = Counter()
        self.checked = 0
        self.first_broken: int | None = None
        self.reason: str | None = None
        self.stored_head_hash = GENESIS_HASH
        self.computed_head_hash = GENESIS_HASH
        self.last_position = 0  # of the last event at or before ``upto``
        self.current: StoredEvent | None = None  # the event being replayed (None while reading the log)

    def events(self) -> Iterator[StoredEvent]:
        prev = GENESIS_HASH  # the chain as recomputed from the content
        expected_pos = 0
        rows = iter(self.store.iter_all(0))
        while True:
            self.current = None
            e = next(rows, None)
            if e is None or e.position > self.upto:
                break
            self.last_position = e.position
            expected_pos += 1
            row = msgspec.structs.astuple(e)
            reason, computed = check_link(prev, expected_pos, row, e.payload, e.prev_hash, e.hash)
            if self.first_broken is None:
                if reason is None:
                    self.checked += 1
                else:
                    self.first_broken, self.reason = expected_pos, reason
            prev = computed
            self.stored_head_hash = e.hash
            self.by_kind[e.kind] += 1
            if e.kind == "tool.called":
                who = e.actor or sv.ANONYMOUS
                self.tool_calls[who] += 1
                try:
                    if e.data().outcome == "error":
                        self.tool_errors[who] += 1
                except Exception:  # noqa: BLE001 - an undecodable payload is counted, not fatal
                    pass
            elif e.kind == "budget.consumed":
                try:
                    d = e.data()
                    self.tokens[d.agent_id] += int(d.tokens)
                except Exception:  # noqa: BLE001
                    pass
            self.current = e
            yield e
        self.current = None
        self.computed_head_hash = prev


class ReplayFailed(LeanCtxError):
    """The log cannot be replayed up to a proof's head; ``position`` / ``kind`` name the event the
    replay stopped at when it is known."""

    code = "PROOF_REPLAY_FAILED"

    def __init__(self, upto: int, position: int | None, kind: str | None, exc: BaseException) -> None:
        reason = exc.message if isinstance(exc, LeanCtxError) else f"{type(exc).__name__}: {exc}"
        named = isinstance(exc, LeanCtxError) and exc.details.get("position") is not None
        where = "" if named or position is None else f"event {position} ({kind}) cannot be replayed: "
        super().__init__(None, f"the log cannot be replayed up to position {upto}: {where}{reason}",
                         position=position, kind=kind)
        self.position, self.kind = position, kind


def _savings_row(r: sv.SavingsRow) -> dict[str, Any]:
    return {
        "calls": r.calls, "raw_tokens": r.raw_tokens, "sent_tokens": r.sent_tokens, "saved_tokens": r.saved_tokens,
        "savings_pct": r.savings_pct, "bounces": r.bounces, "wasted_tokens": r.wasted_tokens,
        "expansions": r.expansions,
    }


def derive(app: Any, upto: int | None = None) -> dict[str, Any]:
    """Every figure of the proof, from the log alone, as of position ``upto`` (default: head).

    Returns ``{"head", "chain", "events", "projections", "agents", "savings_totals"}``; ``head``
    carries ``available`` (how many events the log has up to ``upto``) and ``last`` (the position
    of the last of them). A log that cannot be replayed raises :class:`ReplayFailed`."""
    store = app.store
    head = store.head().position if upto is None else upto
    projections = list(app.projections.all.values())
    scan = _Scan(store, head)
    tmpdir = tempfile.mkdtemp(prefix="lean-ctx-proof-")
    try:
        path = os.path.join(tmpdir, "fresh.db")
        try:
            n, digests = build_fresh(path, scan.events(), projections, head)
        except Exception as exc:  # named by its event: an edited log, or a projection's bug
            cur, d = scan.current, (exc.details if isinstance(exc, LeanCtxError) else {})
            raise ReplayFailed(head, d.get("position", cur and cur.position), d.get("kind", cur and cur.kind),
                               exc) from exc
        conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
        try:
            by_agent = sv.report(conn, by=("agent",))
        finally:
            conn.close()
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    agents: dict[str, dict[str, Any]] = {}
    names = set(scan.tool_calls) | set(scan.tokens) | {r.group["agent"] for r in by_agent.rows}
    saved = {r.group["agent"]: r for r in by_agent.rows}
    for a in sorted(names):
        agents[a] = {
            "tool_calls": scan.tool_calls.get(a, 0),
            "tool_errors": scan.tool_errors.get(a, 0),
            "budget_tokens": scan.tokens.get(a, 0),
            "savings": _savings_row(saved[a]) if a in saved else None,
        }
    return {
        "head": {"position": head, "hash": scan.stored_head_hash, "available": n, "last": scan.last_position},
        "chain": {
            "ok": scan.first_broken is None and n == head,
            "checked": scan.checked,
            "upto": head,
            "first_broken": scan.first_broken,
            "reason": scan.reason,
        },
        "computed_head_hash": scan.computed_head_hash,
        "events": {"total": n, "by_kind": dict(sorted(scan.by_kind.items()))},
        "projections": [{"name": p.name, "version": p.version, "digest": digests[p.name]} for p in projections],
        "agents": agents,
        "savings_totals": _savings_row(by_agent.totals),
    }


# --- building ------------------------------------------------------------------------------
def render(doc: dict[str, Any]) -> bytes:
    """The one accepted file form: canonical JSON (sorted keys), indented 2, trailing newline."""
    return msgspec.json.format(keys.canonical(doc), indent=2) + b"\n"


def signed_bytes(doc: dict[str, Any]) -> bytes:
    return keys.canonical({k: v for k, v in doc.items() if k != "signature"})


def build(app: Any, *, project_root: str | None = None, key_id: str | None = None) -> dict[str, Any]:
    """A signed Context Proof v1 of ``app``'s log at its current head."""
    from .config import project_root as _root

    root = str(_root(project_root))
    kid = key_id or keys.project_key_id(root)
    pub = keys.public_key(kid)
    figures = derive(app)
    chain = figures["chain"]
    doc: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "project_root": root,
        "db_path": str(Path(app.db).resolve()) if getattr(app, "db", None) else None,
        "generated_at": clock.iso(),
        "head": {"position": figures["head"]["position"], "hash": figures["head"]["hash"]},
        "chain": {k: chain[k] for k in ("ok", "checked", "upto", "first_broken", "reason")},
        "events": figures["events"],
        "projections": figures["projections"],
        "agents": figures["agents"],
        "savings_totals": figures["savings_totals"],
        "signer": {"alg": keys.ALG, "key_id": kid, "public_key": keys.b64(pub), "fingerprint": keys.fingerprint(pub)},
    }
    doc["signature"] = keys.b64(keys.sign(kid, signed_bytes(doc)))
    return doc


def write(doc: dict[str, Any], out_dir: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Write ``context-proof-<head>.json`` and ``.html`` into ``out_dir`` (each atomically); returns both paths."""
    from .proof_html import render_html

    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    stem = f"context-proof-{doc['head']['position']}"
    jp, hp = d / f"{stem}.json", d / f"{stem}.html"
    write_atomic(hp, render_html(doc).encode("utf-8"))  # the page first: a listed .json has its page
    write_atomic(jp, render(doc))
    return jp, hp


def write_atomic(path: Path, data: bytes) -> None:
    """``data`` into ``path`` atomically (a reader sees the old file or the new one, never part
    of one); a new file is 0644: a proof is meant to be shared."""
    from .ops.files import atomic_write

    atomic_write(path, data, new_mode=0o644)


# --- verifying -----------------------------------------------------------------------------
def _compare(out: list[Difference], field: str, expected: Any, actual: Any) -> None:
    if expected == actual:
        return
    if isinstance(expected, dict) and isinstance(actual, dict):
        for k in sorted(set(expected) | set(actual), key=str):
            if k not in actual:
                out.append(Difference("FIGURE_MISMATCH", f"{field}.{k}", f"{field}.{k} is in the proof, not in the log",
                                      expected[k], None))
            elif k not in expected:
                out.append(Difference("FIGURE_MISMATCH", f"{field}.{k}", f"{field}.{k} is in the log, not in the proof",
                                      None, actual[k]))
            else:
                _compare(out, f"{field}.{k}", expected[k], actual[k])
        return
    out.append(Difference("FIGURE_MISMATCH", field, f"{field}: the proof says {expected!r}, the log gives {actual!r}",
                          expected, actual))


def parse(data: bytes) -> tuple[dict[str, Any] | None, list[Difference]]:
    """Decode a proof file; (None, [why]) when it is not a well-formed, canonical v1 proof."""
    try:
        doc = msgspec.json.decode(data)
    except (msgspec.DecodeError, UnicodeError) as exc:
        return None, [Difference("PROOF_MALFORMED", "", f"not JSON: {exc}")]
    if not isinstance(doc, dict):
        return None, [Difference("PROOF_MALFORMED", "", "a proof is a JSON object")]
    if doc.get("format") != FORMAT or doc.get("version") != VERSION:
        return None, [Difference("PROOF_MALFORMED", "format", f"not a {FORMAT} v{VERSION} document",
                                 {"format": FORMAT, "version": VERSION},
                                 {"format": doc.get("format"), "version": doc.get("version")})]
    try:
        canonical_form = render(doc)
    except (TypeError, msgspec.EncodeError) as exc:  # pragma: no cover - decoded JSON always re-encodes
        return None, [Difference("PROOF_MALFORMED", "", str(exc))]
    if canonical_form != data:
        return None, [Difference("PROOF_NOT_CANONICAL", "", "the file is not the canonical rendering of its "
                                 "content (edited by hand or re-formatted); a proof file is accepted byte for byte")]
    return doc, []


def _check_shape(doc: dict[str, Any]) -> list[Difference]:
    out = []
    need = {"head": dict, "chain": dict, "events": dict, "projections": list, "agents": dict, "signer": dict,
            "signature": str, "savings_totals": dict}
    for k, t in need.items():
        if not isinstance(doc.get(k), t):
            out.append(Difference("PROOF_MALFORMED", k, f"field {k!r} is missing or not a {t.__name__}"))
    if not out and not isinstance(doc["head"].get("position"), int):
        out.append(Difference("PROOF_MALFORMED", "head.position", "head.position is not an integer"))
    return out


class FileCheck(msgspec.Struct):
    """What the file alone says: its content, signer, whether the key is trusted and the signature valid."""

    doc: dict[str, Any] | None
    signer: dict[str, Any] | None
    trusted: bool
    signature_valid: bool
    differences: list[Difference]


def check_file(data: bytes, *, base: Path | None = None) -> FileCheck:
    """Form, signature and signer trust of a proof file, without reading any log."""
    doc, diffs = parse(data)
    if doc is None or (diffs := _check_shape(doc)):
        return FileCheck(None, None, False, False, diffs)
    signer = doc["signer"]
    trusted = sig_ok = False
    try:
        pub = keys.unb64(str(signer.get("public_key", "")))
        sig = keys.unb64(doc["signature"])
    except Exception:  # noqa: BLE001 - reported as a difference
        pub, sig = b"", b""
    if len(pub) != 32:
        diffs.append(Difference(keys.SIGNATURE_INVALID, "signer.public_key", "the signer's public key is not 32 bytes"))
        return FileCheck(doc, signer, False, False, diffs)
    if signer.get("fingerprint") != keys.fingerprint(pub):
        diffs.append(Difference(keys.SIGNATURE_INVALID, "signer.fingerprint",
                                "the fingerprint does not belong to the public key",
                                signer.get("fingerprint"), keys.fingerprint(pub)))
    known = keys.find_trusted(pub, base)
    trusted = known is not None
    if known is None:
        diffs.append(Difference(keys.KEY_UNTRUSTED, "signer",
                                f"signed by {keys.fingerprint(pub)} ({signer.get('key_id')}), a key not trusted "
                                f"here; to trust it, {keys.TRUST_HOW}"))
    sig_ok = keys.is_valid(pub, signed_bytes(doc), sig)
    if not sig_ok:
        diffs.append(Difference(keys.SIGNATURE_INVALID, "signature",
                                "the signature does not match the proof's content: the file was altered"))
    return FileCheck(doc, signer, trusted, sig_ok, diffs)


def verify(app: Any, data: bytes, *, file: str = "", base: Path | None = None) -> VerifyReport:
    """Check a proof file's bytes against this data dir's trust store and ``app``'s log."""
    fc = check_file(data, base=base)
    db = str(getattr(app, "db", "")) or None
    if fc.doc is None:
        return VerifyReport(False, file, None, None, False, False, fc.differences, db)
    doc, signer, trusted, sig_ok, diffs = fc.doc, fc.signer, fc.trusted, fc.signature_valid, fc.differences
    head = doc["head"]["position"]
    try:
        got = derive(app, head)
    except ReplayFailed as exc:  # a log edited into undecodable rows cannot be replayed
        at = None if exc.position is None else {"position": exc.position, "kind": exc.kind}
        diffs.append(Difference("REPLAY_FAILED", "", exc.message, None, at))
        return VerifyReport(False, file, head, signer, trusted, sig_ok, diffs, db)
    available, last = got["head"]["available"], got["head"]["last"]
    if available < head:
        ends = f" (it ends at position {last})" if last < head else ""
        diffs.append(Difference("HEAD_MISSING", "head.position",
                                f"the proof's head is position {head}; the log holds {available} events up to it, "
                                f"not {head}{ends}", head, available))
    if got["chain"]["first_broken"] is not None:
        p = got["chain"]["first_broken"]
        diffs.append(Difference("CHAIN_BROKEN", "chain", f"the hash chain breaks at position {p}: "
                                f"{got['chain']['reason']} (the log was edited behind the store's back)",
                                doc["chain"].get("first_broken"), p))
    if last != head:  # no event at the head: its hash cannot be shown
        diffs.append(Difference("HEAD_MISMATCH", "head.hash",
                                f"the log has no event at position {head} (its last event up to it is position "
                                f"{last}); the proof says the head's hash is {doc['head'].get('hash')}",
                                doc["head"].get("hash"), None))
    elif doc["head"].get("hash") != got["head"]["hash"]:
        diffs.append(Difference("HEAD_MISMATCH", "head.hash",
                                f"the event at position {head} has hash {got['head']['hash']}, the proof says "
                                f"{doc['head'].get('hash')}", doc["head"].get("hash"), got["head"]["hash"]))
    elif got["computed_head_hash"] != got["head"]["hash"]:
        diffs.append(Difference("HEAD_MISMATCH", "head.hash", "the head hash is not what the log's content hashes to",
                                doc["head"].get("hash"), got["computed_head_hash"]))
    _compare(diffs, "chain", doc["chain"], {k: got["chain"][k] for k in ("ok", "checked", "upto", "first_broken",
                                                                         "reason")})
    _compare(diffs, "events", doc["events"], got["events"])
    want = {p.get("name"): p for p in doc["projections"] if isinstance(p, dict)}
    have = {p["name"]: p for p in got["projections"]}
    for name in sorted(set(want) | set(have), key=str):
        if name not in have:
            diffs.append(Difference("FIGURE_MISMATCH", f"projections.{name}", f"projection {name!r} is not known here"))
        elif name not in want:
            diffs.append(Difference("FIGURE_MISMATCH", f"projections.{name}", f"projection {name!r} is missing "
                                    "from the proof"))
        else:
            if want[name].get("version") != have[name]["version"]:
                diffs.append(Difference("PROJECTION_VERSION", f"projections.{name}.version",
                                        f"projection {name} is version {want[name].get('version')} in the proof, "
                                        f"{have[name]['version']} here (its digest cannot match)",
                                        want[name].get("version"), have[name]["version"]))
            _compare(diffs, f"projections.{name}.digest", want[name].get("digest"), have[name]["digest"])
    _compare(diffs, "agents", doc["agents"], got["agents"])
    _compare(diffs, "savings_totals", doc["savings_totals"], got["savings_totals"])
    return VerifyReport(not diffs, file, head, signer, trusted, sig_ok, diffs, db)
