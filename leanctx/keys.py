"""Ed25519 keys (pynacl): the project key, per-agent keys, a trust store, sign / verify.

Layout under the data dir (``leanctx.config.data_dir()``)::

    keys/                    mode 0700
      <key_id>.key           the 32-byte seed, hex, one line; mode 0600 (refused if group/other can read it)
      <key_id>.pub           ``ed25519 <base64 public key> <key_id>`` (one line, mode 0644)
      trusted/<fp>.pub       public keys added with ``lean-ctx keys trust FILE`` (same format)

An agent's key is created when the agent registers (``ensure_key``, called by the
``agent.register`` command: see ``leanctx.commands.agents``), and any key on first use
(``load_signing_key(key_id)`` / ``public_key(key_id)``): an actor that never registered gets
one at its first signature. Looking a key up (``info``, what ``lean-ctx keys show|export-pub ID``
use) creates nothing: an id that is neither held nor trusted is ``KEY_NOT_FOUND``. An existing key is never replaced. Creation is atomic across
processes: the seed is written to a temporary file (0600) and hard-linked into place, so a
``.key`` file is either absent or complete. The project key's id is ``project-<project slug>``
(``project_key_id()``); an agent's key id is its agent id (so every valid agent id, ``:``
included, is a valid key id).

Trust: the keys of ``trusted/`` plus the keys this data dir holds a private key for
(``local_keys``); which of the latter count as known signers of a handoff is decided by
``leanctx.handoff_bundle`` (registered agents only), which also trusts the public key the log
recorded for an agent's current registration (``agent.registered``; that key, when there is
one, wins over a local key of the same id).

Signatures cover canonical bytes: msgspec JSON with sorted keys (``canonical``). Stable codes:
``KEY_NOT_FOUND``, ``KEY_UNTRUSTED``, ``SIGNATURE_INVALID``, ``KEY_INSECURE`` (a private key
file readable by others), ``KEY_INVALID_ID``, ``KEY_INVALID_FILE``, ``KEY_UNWRITABLE`` (the keys
directory cannot be written).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import stat
from pathlib import Path
from typing import Any

import msgspec
from nacl.exceptions import BadSignatureError, CryptoError
from nacl.signing import SigningKey, VerifyKey

from .config import data_dir, project_root, project_slug
from .errors import CommandError, InvalidInput, NotFound

ALG = "ed25519"
KEY_NOT_FOUND = "KEY_NOT_FOUND"
KEY_UNTRUSTED = "KEY_UNTRUSTED"
# how a key becomes trusted (keys have no MCP tool: the CLI only), said wherever KEY_UNTRUSTED is
TRUST_HOW = ("its owner runs `lean-ctx keys export-pub --out FILE` and you add FILE with "
             "`lean-ctx keys trust FILE`")
SIGNATURE_INVALID = "SIGNATURE_INVALID"
KEY_INSECURE = "KEY_INSECURE"
KEY_INVALID_ID = "KEY_INVALID_ID"
KEY_INVALID_FILE = "KEY_INVALID_FILE"
KEY_UNWRITABLE = "KEY_UNWRITABLE"
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$")


class KeyInfo(msgspec.Struct, frozen=True):
    key_id: str
    fingerprint: str
    public_key: str  # base64 of the 32 raw bytes
    private: bool  # this data dir holds the private key
    trusted: bool
    path: str


# --- encoding -----------------------------------------------------------------------------
def canonical(value: Any) -> bytes:
    """The bytes that get signed: compact msgspec JSON, object keys sorted at every level."""
    return msgspec.json.encode(value, order="sorted")


def fingerprint(pub: bytes) -> str:
    return "sha256:" + hashlib.sha256(pub).hexdigest()[:32]


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def unb64(text: str) -> bytes:
    """``text`` decoded; only the one canonical spelling of its bytes is accepted. The last
    character before ``=`` padding has unused low bits: ``...w==`` and ``...x==`` decode alike,
    and a signed document whose signature could be respelled would be a changed file that still
    verifies."""
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeError) as exc:
        raise InvalidInput(KEY_INVALID_FILE, f"not base64: {text[:40]!r}") from exc
    if b64(raw) != text:
        raise InvalidInput(KEY_INVALID_FILE, f"not canonical base64 (unused bits set): {text[:40]!r}")
    return raw


def pub_line(pub: bytes, key_id: str) -> str:
    return f"{ALG} {b64(pub)} {key_id}\n"


def parse_pub(text: str, source: str = "public key") -> tuple[bytes, str]:
    """``ed25519 <base64> <key_id>`` → (raw public key, key id)."""
    parts = text.strip().split()
    if len(parts) != 3 or parts[0] != ALG:
        raise InvalidInput(KEY_INVALID_FILE, f"{source} is not an '{ALG} <base64> <key id>' line")
    pub = unb64(parts[1])
    if len(pub) != 32:
        raise InvalidInput(KEY_INVALID_FILE, f"{source}: an ed25519 public key has 32 bytes, not {len(pub)}")
    check_id(parts[2])
    return pub, parts[2]


# --- places -------------------------------------------------------------------------------
def keys_dir(base: Path | None = None) -> Path:
    return (base or data_dir()) / "keys"


def trusted_dir(base: Path | None = None) -> Path:
    return keys_dir(base) / "trusted"


def check_id(key_id: str) -> str:
    if not isinstance(key_id, str) or not _ID.match(key_id) or ".." in key_id:
        raise InvalidInput(KEY_INVALID_ID, f"{key_id!r} is not a key id (letters, digits, '.', '_', ':', '-')")
    return key_id


def project_key_id(root: str | os.PathLike[str] | None = None) -> str:
    return "project-" + project_slug(project_root(root))


def _mkdir(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)


# --- private keys -------------------------------------------------------------------------
def _read_private(path: Path, key_id: str) -> SigningKey:
    st = path.stat()
    if st.st_mode & 0o077:
        raise CommandError(
            KEY_INSECURE,
            f"{path} can be read by other users (mode {stat.S_IMODE(st.st_mode):04o}); run `chmod 600 {path}`",
            key_id=key_id,
        )
    try:
        seed = bytes.fromhex(path.read_text().strip())
        if len(seed) != 32:
            raise ValueError(len(seed))
        return SigningKey(seed)
    except (ValueError, CryptoError) as exc:
        raise InvalidInput(KEY_INVALID_FILE, f"{path} does not hold a 32-byte hex ed25519 seed") from exc


def _seed_line(sk: SigningKey) -> bytes:
    return bytes(sk).hex().encode("ascii") + b"\n"


def _create_0600(path: Path, data: bytes) -> bool:
    """Create ``path`` (0600) holding ``data``; False when it exists already."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    return True


def _write_private(path: Path, sk: SigningKey) -> bool:
    """Create ``path`` (0600) with the seed, atomically: written to a temporary file first, then
    hard-linked into place, so no process reads a half-written key. False when another process
    created ``path`` first (its key wins)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        _create_0600(tmp, _seed_line(sk))
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError:  # a file system without hard links: exclusive create instead
            return _create_0600(path, _seed_line(sk))
        return True
    finally:
        tmp.unlink(missing_ok=True)


def _write_pub(path: Path, pub: bytes, key_id: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    tmp.write_text(pub_line(pub, key_id))
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def _load_or_create(key_id: str, *, create: bool, base: Path | None) -> tuple[SigningKey, bool]:
    """(the private key ``key_id``, whether this call created it)."""
    d = keys_dir(base)
    path = d / f"{check_id(key_id)}.key"
    if not path.exists():
        if not create:
            raise NotFound(KEY_NOT_FOUND, f"no key {key_id!r} in {d}; see `lean-ctx keys list`", key_id=key_id)
        _mkdir(d)
        sk = SigningKey.generate()
        if _write_private(path, sk):
            _write_pub(d / f"{key_id}.pub", bytes(sk.verify_key), key_id)
            return sk, True
    sk = _read_private(path, key_id)
    pub_path = d / f"{key_id}.pub"
    if not pub_path.exists():
        _write_pub(pub_path, bytes(sk.verify_key), key_id)
    return sk, False


def load_signing_key(key_id: str, *, create: bool = True, base: Path | None = None) -> SigningKey:
    """The private key ``key_id``, created (0600) on first use unless ``create`` is False."""
    return _load_or_create(key_id, create=create, base=base)[0]


def ensure_key(key_id: str, *, base: Path | None = None) -> tuple[KeyInfo, bool]:
    """The key ``key_id`` (its private half checked: mode and content), created if missing and
    never replaced; and whether this call created it. Raises ``KEY_INSECURE`` /
    ``KEY_INVALID_FILE`` for a bad existing file and ``KEY_UNWRITABLE`` when the keys directory
    cannot be written."""
    try:
        sk, created = _load_or_create(key_id, create=True, base=base)
    except OSError as exc:
        raise CommandError(KEY_UNWRITABLE, f"cannot create or read the key {key_id!r} in {keys_dir(base)}: "
                           f"{exc.strerror or exc}", key_id=key_id) from None
    pub = bytes(sk.verify_key)
    return KeyInfo(key_id, fingerprint(pub), b64(pub), True, True, str(keys_dir(base) / f"{key_id}.key")), created


def public_key(key_id: str, *, create: bool = True, base: Path | None = None) -> bytes:
    """The raw public key of ``key_id`` (from its ``.pub``; the key is created if missing and ``create``)."""
    pub_path = keys_dir(base) / f"{check_id(key_id)}.pub"
    if pub_path.exists() and (keys_dir(base) / f"{key_id}.key").exists():
        return parse_pub(pub_path.read_text(), str(pub_path))[0]
    return bytes(load_signing_key(key_id, create=create, base=base).verify_key)


def sign(key_id: str, data: bytes, *, base: Path | None = None) -> bytes:
    """A 64-byte detached Ed25519 signature of ``data`` by ``key_id`` (created on first use)."""
    return load_signing_key(key_id, base=base).sign(data).signature


def verify(pub: bytes, data: bytes, sig: bytes) -> None:
    """Raise ``SIGNATURE_INVALID`` unless ``sig`` is ``pub``'s signature of ``data``."""
    try:
        VerifyKey(pub).verify(data, sig)
    except (BadSignatureError, CryptoError, ValueError, TypeError) as exc:
        raise CommandError(SIGNATURE_INVALID, "the signature does not match the signed content and key") from exc


def is_valid(pub: bytes, data: bytes, sig: bytes) -> bool:
    try:
        verify(pub, data, sig)
    except CommandError:
        return False
    return True


# --- the trust store ----------------------------------------------------------------------
def local_keys(base: Path | None = None) -> list[KeyInfo]:
    """Keys this data dir holds the private half of (trusted implicitly)."""
    d = keys_dir(base)
    out = []
    for pub_path in sorted(d.glob("*.pub")) if d.is_dir() else []:
        key_id = pub_path.name[: -len(".pub")]
        if not (d / f"{key_id}.key").exists():
            continue
        try:
            pub, _ = parse_pub(pub_path.read_text(), str(pub_path))
        except InvalidInput:
            continue
        out.append(KeyInfo(key_id, fingerprint(pub), b64(pub), True, True, str(d / f"{key_id}.key")))
    return out


def trusted_keys(base: Path | None = None) -> list[KeyInfo]:
    """Keys added to the trust store (``trusted/``)."""
    d = trusted_dir(base)
    out = []
    for p in sorted(d.glob("*.pub")) if d.is_dir() else []:
        try:
            pub, key_id = parse_pub(p.read_text(), str(p))
        except InvalidInput:
            continue
        out.append(KeyInfo(key_id, fingerprint(pub), b64(pub), False, True, str(p)))
    return out


def find_trusted(pub: bytes, base: Path | None = None) -> KeyInfo | None:
    """The trusted key equal to ``pub`` (own keys first), or None."""
    want = b64(pub)
    for k in (*local_keys(base), *trusted_keys(base)):
        if k.public_key == want:
            return k
    return None


def require_trusted(pub: bytes, base: Path | None = None) -> KeyInfo:
    k = find_trusted(pub, base)
    if k is None:
        raise CommandError(
            KEY_UNTRUSTED,
            f"the signer key {fingerprint(pub)} is not trusted here; to trust it, {TRUST_HOW}",
            fingerprint=fingerprint(pub),
        )
    return k


def trust(text: str, source: str = "public key", base: Path | None = None) -> KeyInfo:
    """Add a public key (a ``.pub`` line) to the trust store; idempotent."""
    pub, key_id = parse_pub(text, source)
    d = trusted_dir(base)
    _mkdir(d)
    path = d / f"{fingerprint(pub).split(':', 1)[1]}.pub"
    _write_pub(path, pub, key_id)
    return KeyInfo(key_id, fingerprint(pub), b64(pub), False, True, str(path))


def info(key_id: str, *, create: bool = False, base: Path | None = None) -> KeyInfo:
    """The key ``key_id``: the one this data dir holds the private half of, else a trusted key of
    that id (``private`` False), else ``KEY_NOT_FOUND``; with ``create`` a missing own key is
    created instead (the project key on first use: never for an id someone merely typed)."""
    d = keys_dir(base)
    if create or (d / f"{check_id(key_id)}.key").exists():
        pub = public_key(key_id, create=create, base=base)
        return KeyInfo(key_id, fingerprint(pub), b64(pub), True, True, str(d / f"{key_id}.key"))
    found = next((k for k in trusted_keys(base) if k.key_id == key_id), None)
    if found is None:
        raise NotFound(KEY_NOT_FOUND, f"no key {key_id!r} here (neither held in {d} nor trusted); "
                       "`lean-ctx keys list` shows the keys there are", key_id=key_id)
    return found
