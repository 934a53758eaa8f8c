"""A per-user cache of the vocabularies of ``leanctx.context.tokens``, ready to use.

Turning a shipped ``.tiktoken.gz`` file into ``{token bytes: rank}`` costs ~150 ms of CPU
(decompress, sha256, parse 200,000 base64 lines). Reading this cache costs ~3 ms: one file, one
sha256, and no parsing at all: ``SortedRanks`` looks tokens up by binary search in the file's
bytes, which is all a short count needs (``leanctx.context.tokens_pure``); ``SortedRanks.to_dict``
builds the dict tiktoken's encoder wants (~70 ms) only for a process that counts more.

**Why the ranks can be trusted.** The vocabulary is trusted because its sha256 is the one tiktoken
publishes (``tokens.EXPECTED_SHA256``). A checksum kept *beside* a cache file would only catch
corruption: whoever can rewrite the cache can rewrite its checksum too. So the expected digest of
the cache's payload is pinned in this source file (``RANKS_SHA256``), like the vocabulary's: the
payload is a canonical serialization of the ranks (below), a pure function of the verified
vocabulary, and tests/context/test_tokens_cache.py derives it from the verified vocabulary and
checks it equals the pinned digest. A payload is used only when its sha256 is the pinned one: then
it *is* the verified vocabulary's ranks, byte for byte, whoever wrote the file. Anything else
(missing, truncated, edited, another format) is ignored and rewritten from the vocabulary, which
is verified against tiktoken's hash as before.

**Which file.** ``<cache dir>/tokenizers/<name>-<key hash>.ranks``, where the key is the
vocabulary file's path, size, mtime, inode and device: a reinstalled or edited vocabulary gets a
new key, so it is read and verified again (its hash check still fails loudly,
``TOKENIZER_HASH_MISMATCH``). The cache dir is ``$LEAN_CTX_HOME/cache`` when ``$LEAN_CTX_HOME``
is set (everything of one lean-ctx home in one place; tests rely on it), else
``$XDG_CACHE_HOME/lean-ctx``, else ``~/.cache/lean-ctx``. Removing it is always safe. At most
``KEEP`` files per encoding are kept (two installations side by side do not evict each other).

**Format.** ``MAGIC`` then the payload (integers little-endian): the number of tokens ``n``
(u32), the greatest token length ``top`` (u8), the number of tokens of each length 1..top
(``top`` × u32), the tokens grouped by length (shortest first) and sorted within a group, then
the rank of each token in the same order (``n`` × u32).
"""

from __future__ import annotations

import array
import hashlib
import os
import re
import sys
from typing import Final, overload

__all__ = ["KEEP", "MAGIC", "RANKS_SHA256", "SortedRanks", "cache_dir", "encode", "load", "source_key", "store"]

MAGIC: Final = b"lean-ctx-ranks/2\n"
KEEP: Final = 3
_MAX_FILE: Final = 16 << 20

# sha256 of ``encode(ranks)`` for the verified vocabularies (a test derives them again).
RANKS_SHA256: Final[dict[str, str]] = {
    "o200k_base": "b71173a10145fa8e59304ecf5947912f75fd996d8965a5247f5f0c379274ff37",
    "cl100k_base": "5759c0b1533f55b45560a16f0333c93720184a0440ad3d1f8a49fb2eb616899f",
}


def cache_dir() -> str:
    """Where lean-ctx keeps what it can rebuild (see the module docstring)."""
    home = os.environ.get("LEAN_CTX_HOME")
    if home:
        return os.path.join(os.path.expanduser(home), "cache")
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = os.path.expanduser(xdg) if xdg else os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "lean-ctx")


def source_key(path: str | os.PathLike[str]) -> str | None:
    """The identity of a vocabulary file (None when it cannot be stat'ed)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{os.fspath(path)}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\0{st.st_dev}"


def _u32(values: list[int] | array.array[int]) -> bytes:
    out = array.array("I", values)
    if sys.byteorder == "big":  # pragma: no cover
        out.byteswap()
    return out.tobytes()


def _from_u32(data: bytes) -> array.array[int]:
    out = array.array("I")
    out.frombytes(data)
    if sys.byteorder == "big":  # pragma: no cover
        out.byteswap()
    return out


def encode(ranks: dict[bytes, int]) -> bytes | None:
    """The canonical payload of ``ranks`` (None for a token of 0 or more than 255 bytes)."""
    groups: dict[int, list[tuple[bytes, int]]] = {}
    for token, rank in ranks.items():
        if not 0 < len(token) < 256:
            return None
        groups.setdefault(len(token), []).append((token, rank))
    top = max(groups, default=0)
    ordered = [item for size in range(1, top + 1) for item in sorted(groups.get(size, ()))]
    return b"".join([
        len(ranks).to_bytes(4, "little"), bytes([top]), _u32([len(groups.get(s, ())) for s in range(1, top + 1)]),
        *(token for token, _ in ordered), _u32([rank for _, rank in ordered]),
    ])


class SortedRanks:
    """The ranks of a verified payload, looked up in place (``get``, ``in``), as a dict on demand."""

    def __init__(self, payload: bytes) -> None:
        n, top = int.from_bytes(payload[:4], "little"), payload[4]
        counts = _from_u32(payload[5:5 + 4 * top])
        at = 5 + 4 * top
        end = at + sum(size * c for size, c in zip(range(1, top + 1), counts))
        self._buf = payload
        self._ranks = _from_u32(payload[end:end + 4 * n])
        if len(self._ranks) != n or sum(counts) != n or end + 4 * n != len(payload):
            raise ValueError("inconsistent ranks payload")
        self._groups: dict[int, tuple[int, int, int]] = {}  # length -> (offset, index of its first, count)
        first = 0
        for size, c in zip(range(1, top + 1), counts):
            if c:
                self._groups[size] = (at, first, c)
            at += size * c
            first += c

    def __len__(self) -> int:
        return len(self._ranks)

    @overload
    def get(self, key: bytes, /) -> int | None: ...
    @overload
    def get(self, key: bytes, default: int, /) -> int: ...

    def get(self, key: bytes, default: int | None = None, /) -> int | None:
        size = len(key)
        group = self._groups.get(size)
        if group is None:
            return default
        offset, first, count = group
        buf = self._buf
        lo, hi = 0, count
        while lo < hi:
            mid = (lo + hi) >> 1
            at = offset + mid * size
            if buf[at:at + size] < key:
                lo = mid + 1
            else:
                hi = mid
        at = offset + lo * size
        return self._ranks[first + lo] if lo < count and buf[at:at + size] == key else default

    def __contains__(self, key: object) -> bool:
        return isinstance(key, bytes) and self.get(key) is not None

    def to_dict(self) -> dict[bytes, int]:
        out: dict[bytes, int] = {}
        for size, (offset, first, count) in self._groups.items():
            tokens = re.findall(b"(?s).{%d}" % size, self._buf[offset:offset + size * count])  # C-speed split
            out.update(zip(tokens, self._ranks[first:first + count]))
        return out


def _path(name: str, key: str) -> str:
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return os.path.join(cache_dir(), "tokenizers", f"{name}-{digest}.ranks")


def load(name: str, key: str) -> SortedRanks | None:
    """The cached ranks of ``name`` for the vocabulary file ``key``, if a file with the pinned
    payload is there; None otherwise (the caller reads the vocabulary and calls ``store``)."""
    expected = RANKS_SHA256.get(name)
    if not expected:
        return None
    try:
        with open(_path(name, key), "rb") as f:
            if os.fstat(f.fileno()).st_size > _MAX_FILE:
                return None
            data = f.read()
    except OSError:
        return None
    if not data.startswith(MAGIC):
        return None
    payload = data[len(MAGIC):]
    if hashlib.sha256(payload).hexdigest() != expected:
        return None
    try:
        return SortedRanks(payload)
    except (ValueError, IndexError):  # pragma: no cover - a payload with the pinned digest is consistent
        return None


def store(name: str, key: str, ranks: dict[bytes, int]) -> bool:
    """Write the cache file of ``name`` (atomically; best effort: a read-only or full disk only
    means no cache). Only ranks whose payload has the pinned digest are written."""
    payload = encode(ranks)
    if payload is None or hashlib.sha256(payload).hexdigest() != RANKS_SHA256.get(name):
        return False
    target = _path(name, key)
    folder = os.path.dirname(target)
    tmp = f"{target}.{os.getpid()}.tmp"
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(MAGIC + payload)
        os.replace(tmp, target)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False
    _prune(folder, name, keep=os.path.basename(target))
    return True


def _prune(folder: str, name: str, keep: str) -> None:
    """Remove all but the ``KEEP`` newest cache files of ``name`` (left by reinstalls)."""
    try:
        entries = [e for e in os.scandir(folder)
                   if e.name.startswith(f"{name}-") and e.name.endswith(".ranks") and e.name != keep]
        entries.sort(key=lambda e: e.stat().st_mtime_ns, reverse=True)
        for e in entries[KEEP - 1:]:
            os.unlink(e.path)
    except OSError:
        pass
