"""Context Proofs on disk: create, find the latest, verify and record the verification.

One module for every surface (``lean-ctx proof``, ``POST /v1/proof``..., ``ctx_proof``), so they
write the same files and answer the same shapes.

- The proofs directory of a log is ``<db dir>/proofs`` (``proofs_dir``). ``create`` builds a
  proof of the log at its head (``leanctx.proof.build``) and writes ``context-proof-<head>.json``
  and ``.html`` there (or into ``out_dir``), each atomically (``proof.write``: a reader never
  sees half a file).
- ``latest`` is the proof with the highest head position in a directory; ``describe`` reads what
  a viewer shows of it (head, signer, chain, counts) and its recorded verification. ``on_latest``
  uses the latest proof and lists again when it vanishes before it is read (a pruned directory).
- ``verify_file`` verifies a proof file against a log (``leanctx.proof.verify``: a replay into a
  fresh database) and records the result **next to the file, always**, as
  ``<name>.verify.json`` (``context-proof-12.json`` → ``context-proof-12.verify.json``): whether it
  verified, when, the differences, the signer, and the sha256 of the proof bytes it checked. A
  record whose sha256 is not the file's current one is stale (the proof was rewritten since) and
  is not shown; ``create`` removes the record of a proof it overwrites. A record that cannot be
  written (read-only directory, or a file of that name that is not a record: it is never
  overwritten) does not change the verification: the report is returned and the failure is
  reported beside it (``Recorded.error``).
- Remote surfaces name a proof by its bare file name inside the proofs directory only
  (``resolve_name``): ``context-proof-<N>.json`` (or ``.html`` where the page is served);
  anything else (a path, ``..``, another name) is refused with ``PROOF_INVALID_NAME``, a missing
  file is ``PROOF_NOT_FOUND``.
- A file that is not a proof at all (not JSON, not an object, or a ``format`` other than a
  proof's: a verification record, someone's notes) is refused with ``PROOF_NOT_A_PROOF`` before
  anything is verified or written (``require_proof``): no ``.verify.json`` lands next to it. A
  proof that was edited (a changed figure, a re-formatted file) is still a proof: it fails the
  verification, and that failure is recorded.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import msgspec

from . import clock, proof
from .errors import InvalidInput, NotFound

PROOFS_DIR = "proofs"
PROOF_NOT_FOUND = "PROOF_NOT_FOUND"
PROOF_INVALID_NAME = "PROOF_INVALID_NAME"
PROOF_NOT_A_PROOF = "PROOF_NOT_A_PROOF"
VERIFICATION_FORMAT = "lean-ctx/context-proof-verification"
VERIFY_SUFFIX = ".verify.json"
_NAME = re.compile(r"^context-proof-(\d{1,19})\.(json|html)$")
_LATEST_TRIES = 5  # listings of the proofs directory before a vanishing latest proof is an answer
T = TypeVar("T")


class ProofHead(msgspec.Struct, frozen=True):
    position: int
    hash: str | None


class ProofCreated(msgspec.Struct, kw_only=True):
    """What creating a proof answers (``POST /v1/proof``, ``ctx_proof create``)."""

    file: str  # context-proof-<head>.json, a name inside the proofs directory
    html: str  # context-proof-<head>.html
    path: str  # the JSON file's path as written
    html_path: str
    head: ProofHead
    chain_ok: bool
    first_broken: int | None  # where the hash chain breaks, when it does
    signer: dict[str, Any]
    generated_at: str
    events_total: int
    projections: int  # how many projection digests the proof holds
    agents: int  # how many agents it has figures for


class ProofVerification(msgspec.Struct, kw_only=True):
    """The record ``<name>.verify.json`` written next to a verified proof."""

    format: str = VERIFICATION_FORMAT
    file: str  # the proof's file name
    proof_sha256: str  # of the proof bytes that were checked
    head_position: int | None
    verified: bool
    verified_at: str
    differences: list[proof.Difference]
    signer: dict[str, Any] | None
    trusted: bool
    signature_valid: bool
    db_path: str | None


class ProofInfo(msgspec.Struct, kw_only=True):
    """A stored proof as a viewer shows it (``GET /v1/proof/latest``, ``ctx_proof latest``).

    Read from the file without replaying anything; ``verification`` is the last recorded
    verification of exactly these bytes, or None (never verified, or rewritten since)."""

    file: str
    html: str | None  # the page's name when it exists
    path: str
    head: ProofHead
    generated_at: str | None
    signer: dict[str, Any] | None
    chain_ok: bool | None
    events_total: int | None
    verification: ProofVerification | None


class ProofVerifyAnswer(proof.VerifyReport, kw_only=True):
    """A verification report with when it was made and where it was recorded."""

    verified_at: str
    record: str | None = None  # the .verify.json file's name; None when it could not be written
    record_error: str | None = None


class Recorded(NamedTuple):
    report: proof.VerifyReport
    record: ProofVerification
    path: Path | None  # where the record was written
    error: str | None  # why it was not


# --- where -------------------------------------------------------------------------------------
def proofs_dir(lc: Any) -> Path:
    """``<db dir>/proofs`` of ``lc``'s log."""
    return Path(lc.db).resolve().parent / PROOFS_DIR


def verification_path(path: str | os.PathLike[str]) -> Path:
    """``context-proof-12.json`` → ``context-proof-12.verify.json`` (next to the file)."""
    p = Path(path)
    return p.with_name(p.name.removesuffix(".json") + VERIFY_SUFFIX)


def head_of_name(name: str) -> int | None:
    m = _NAME.match(name)
    return int(m.group(1)) if m and m.group(2) == "json" else None


def latest(directory: str | os.PathLike[str]) -> Path | None:
    """The proof with the highest head position in ``directory`` (None: no proof there)."""
    best: tuple[int, Path] | None = None
    try:
        entries = list(os.scandir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return None
    for entry in entries:
        n = head_of_name(entry.name)
        if n is not None and entry.is_file() and (best is None or n > best[0]):
            best = (n, Path(entry.path))
    return best[1] if best else None


def resolve_name(directory: str | os.PathLike[str], name: Any, *, suffix: str = "json") -> Path:
    """The proof named ``name`` (a bare ``context-proof-<N>.json`` or ``.html`` name) inside
    ``directory``, as its ``.<suffix>`` file. ``PROOF_INVALID_NAME`` for anything that is not
    such a name (paths and ``..`` included); ``PROOF_NOT_FOUND`` when the file does not exist."""
    if not isinstance(name, str) or not name:
        raise InvalidInput(PROOF_INVALID_NAME, "name a proof by its file name, e.g. context-proof-12.json")
    shown = name[:80]
    if "/" in name or "\\" in name or "\x00" in name or ".." in name:
        raise InvalidInput(PROOF_INVALID_NAME, f"{shown!r} is a path (or holds '..'); name a proof by its bare "
                           "file name in the proofs directory, e.g. context-proof-12.json")
    m = _NAME.match(name)
    if m is None:
        raise InvalidInput(PROOF_INVALID_NAME, f"{shown!r} is not a proof's file name; proofs are named "
                           "context-proof-<head position>.json")
    path = Path(directory) / f"context-proof-{m.group(1)}.{suffix}"
    if not path.is_file():
        raise NotFound(PROOF_NOT_FOUND, f"no {path.name} in the proofs directory; create one with "
                       "`lean-ctx proof` (POST /v1/proof, ctx_proof create)")
    return path


def require_latest(directory: str | os.PathLike[str]) -> Path:
    found = latest(directory)
    if found is None:
        raise NotFound(PROOF_NOT_FOUND, "no proof has been written for this log yet; create one with `lean-ctx "
                       "proof` (POST /v1/proof, ctx_proof create)")
    return found


def on_latest(directory: str | os.PathLike[str], use: Callable[[Path], T]) -> T:
    """``use(the latest proof's path)``. When that proof is removed between the listing and
    ``use`` reading it (``PROOF_NOT_FOUND`` while the file is gone), the directory is listed
    again, so ``PROOF_NOT_FOUND`` means that no proof is left, not that one was pruned meanwhile."""
    for attempt in range(_LATEST_TRIES):
        path = require_latest(directory)
        try:
            return use(path)
        except NotFound:
            if attempt == _LATEST_TRIES - 1 or path.exists():
                raise
    raise AssertionError("unreachable")  # pragma: no cover


# --- writing ---------------------------------------------------------------------------------
def create(lc: Any, project_root: str | os.PathLike[str] | None,
           out_dir: str | os.PathLike[str] | None = None) -> ProofCreated:
    """Build a signed proof of ``lc``'s log at its head and write it (JSON + HTML) into
    ``out_dir`` (default: ``proofs_dir(lc)``)."""
    doc = proof.build(lc, project_root=None if project_root is None else str(project_root))
    jp, hp = proof.write(doc, out_dir if out_dir is not None else proofs_dir(lc))
    verification_path(jp).unlink(missing_ok=True)  # a record of the file this one replaced
    return ProofCreated(file=jp.name, html=hp.name, path=str(jp), html_path=str(hp),
                        head=ProofHead(doc["head"]["position"], doc["head"]["hash"]),
                        chain_ok=bool(doc["chain"]["ok"]), first_broken=doc["chain"]["first_broken"],
                        signer=doc["signer"], generated_at=doc["generated_at"], events_total=doc["events"]["total"],
                        projections=len(doc["projections"]), agents=len(doc["agents"]))


# --- reading -----------------------------------------------------------------------------------
def recorded_verification(path: str | os.PathLike[str],
                          data: bytes | None = None) -> ProofVerification | None:
    """The recorded verification of the proof at ``path`` if it is of these very bytes."""
    try:
        raw = verification_path(path).read_bytes()
        rec = msgspec.json.decode(raw, type=ProofVerification)
        if data is None:
            data = Path(path).read_bytes()
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None
    if rec.format != VERIFICATION_FORMAT or rec.proof_sha256 != hashlib.sha256(data).hexdigest():
        return None
    return rec


def describe(path: str | os.PathLike[str]) -> ProofInfo:
    """What ``path`` (a proof file) says, read without a replay, with its recorded verification."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise NotFound(PROOF_NOT_FOUND, f"no {p.name} in the proofs directory") from None
    try:
        doc = msgspec.json.decode(data)
    except msgspec.DecodeError:
        doc = None
    doc = doc if isinstance(doc, dict) else {}

    def part(key: str) -> dict[str, Any]:
        v = doc.get(key)
        return v if isinstance(v, dict) else {}

    pos = part("head").get("position")
    hash_ = part("head").get("hash")
    html = p.with_suffix(".html")
    events_total = part("events").get("total")
    return ProofInfo(
        file=p.name, html=html.name if html.is_file() else None, path=str(p),
        head=ProofHead(pos if isinstance(pos, int) else (head_of_name(p.name) or 0),
                  hash_ if isinstance(hash_, str) else None),
        generated_at=doc.get("generated_at") if isinstance(doc.get("generated_at"), str) else None,
        signer=part("signer") or None,
        chain_ok=part("chain").get("ok") if isinstance(part("chain").get("ok"), bool) else None,
        events_total=events_total if isinstance(events_total, int) else None,
        verification=recorded_verification(p, data),
    )


# --- verifying ---------------------------------------------------------------------------------
def require_proof(data: bytes, label: str) -> None:
    """Raise ``PROOF_NOT_A_PROOF`` unless ``data`` is a JSON object with a proof's ``format``."""
    try:
        doc = msgspec.json.decode(data)
    except (msgspec.DecodeError, UnicodeError):
        why = "it is not JSON"
    else:
        fmt = doc.get("format") if isinstance(doc, dict) else None
        if fmt == proof.FORMAT:
            return
        why = ("it is not a JSON object" if not isinstance(doc, dict) else
               "it is a verification record (what `lean-ctx proof verify` writes next to a proof)"
               if fmt == VERIFICATION_FORMAT else f"its format is {fmt!r}, not {proof.FORMAT!r}" if fmt is not None
               else f"it has no \"format\": {proof.FORMAT!r} field")
    raise InvalidInput(PROOF_NOT_A_PROOF, f"{label} is not a Context Proof: {why}; nothing was verified or written. "
                       "Give a context-proof-<N>.json file written by `lean-ctx proof`", file=label)


def verify_and_record(lc: Any, path: str | os.PathLike[str], *, label: str | None = None) -> Recorded:
    """Verify the proof file at ``path`` against ``lc``'s log and record the result next to it
    (``PROOF_NOT_A_PROOF``, and nothing written, for a file that is not a proof)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise NotFound(PROOF_NOT_FOUND, f"cannot read {label or path}: no such file") from None
    except OSError as exc:
        raise InvalidInput(PROOF_NOT_FOUND, f"cannot read {label or path}: {exc.strerror}") from exc
    require_proof(data, label or str(path))
    report = proof.verify(lc, data, file=label if label is not None else str(path))
    rec = ProofVerification(file=p.name, proof_sha256=hashlib.sha256(data).hexdigest(),
                            head_position=report.head_position, verified=report.ok, verified_at=clock.iso(),
                            differences=list(report.differences), signer=report.signer, trusted=report.trusted,
                            signature_valid=report.signature_valid, db_path=report.db_path)
    target = verification_path(p)
    if p.name.endswith(VERIFY_SUFFIX):  # a record itself (not a proof): never a record of a record
        return Recorded(report, rec, None, f"{p.name} is a verification record, not a proof")
    if _foreign(target):  # a file of someone else's that happens to have the record's name
        return Recorded(report, rec, None, f"{target} exists and is not a verification record; it was left as it is")
    try:
        proof.write_atomic(target, proof.render(msgspec.to_builtins(rec)))
    except OSError as exc:
        return Recorded(report, rec, None, f"cannot write {target}: {exc.strerror or exc}")
    return Recorded(report, rec, target, None)


def _foreign(target: Path) -> bool:
    """Whether ``target`` exists and is not a verification record (never overwritten)."""
    try:
        raw = target.read_bytes()
    except FileNotFoundError:
        return False
    except OSError:
        return True
    try:
        return msgspec.json.decode(raw, type=ProofVerification).format != VERIFICATION_FORMAT
    except (msgspec.DecodeError, msgspec.ValidationError):
        return True


def verify_file(lc: Any, path: str | os.PathLike[str], *, label: str | None = None) -> proof.VerifyReport:
    """``verify_and_record`` returning the report only."""
    return verify_and_record(lc, path, label=label).report


def answer(r: Recorded) -> ProofVerifyAnswer:
    rep = r.report
    return ProofVerifyAnswer(rep.ok, rep.file, rep.head_position, rep.signer, rep.trusted, rep.signature_valid,
                             rep.differences, rep.db_path, verified_at=r.record.verified_at,
                             record=r.path.name if r.path else None, record_error=r.error)


def verify_named(lc: Any, name: str | None = None,
                 directory: str | os.PathLike[str] | None = None) -> ProofVerifyAnswer:
    """Verify the proof ``name`` (a bare file name; default: the latest) of ``lc``'s proofs
    directory, record the result, and answer the report."""
    d = Path(directory) if directory is not None else proofs_dir(lc)
    if name is None:
        return on_latest(d, lambda path: answer(verify_and_record(lc, path, label=path.name)))
    path = resolve_name(d, name)
    return answer(verify_and_record(lc, path, label=path.name))


# --- text (CLI, MCP) -----------------------------------------------------------------------------
def created_text(c: ProofCreated) -> str:
    return (f"proof of head {c.head.position} {c.head.hash}\n"
            f"chain {'ok' if c.chain_ok else 'BROKEN at ' + str(c.first_broken)}, {c.events_total:,} events, "
            f"{c.projections} projections, {c.agents} agents\n"
            f"signed by {c.signer.get('key_id')} {c.signer.get('fingerprint')}\n"
            f"wrote {c.path}\n      {c.html_path}")


def info_text(i: ProofInfo) -> str:
    total = "?" if i.events_total is None else f"{i.events_total:,}"
    chain = "?" if i.chain_ok is None else ("ok" if i.chain_ok else "BROKEN")
    lines = [(f"latest proof: {i.file} (head {i.head.position}, {total} events, chain {chain}), generated "
              f"{i.generated_at or '?'}, signed by {(i.signer or {}).get('key_id', '?')}")]
    v = i.verification
    if v is None:
        lines.append("not verified since it was written")
    elif v.verified:
        lines.append(f"verified at {v.verified_at}: ok")
    else:
        lines.append(f"verified at {v.verified_at}: FAILED, {len(v.differences)} difference(s)")
        lines += [f"  [{d.code}] {d.field or '-'}: {d.message}" for d in v.differences]
    return "\n".join(lines)


def verify_text(a: ProofVerifyAnswer) -> str:
    if a.ok:
        signer = a.signer or {}
        text = (f"ok: proof of head {a.head_position} ({a.file}) verified against {a.db_path}; signed by trusted "
                f"key {signer.get('key_id')} {signer.get('fingerprint')}")
    else:
        text = "\n".join([f"FAILED: {len(a.differences)} difference(s) in {a.file}",
                          *(f"  [{d.code}] {d.field or '-'}: {d.message}" for d in a.differences)])
    if a.record_error:
        text += f"\n(the result was not recorded: {a.record_error})"
    return text
