"""Archives: full texts kept out of an answer, stored content-addressed next to the log.

``<db dir>/archives/<id>.txt`` where ``id = "A" + sha256(text)[:16]``; identical outputs share
one file. Callers redact secrets *before* ``put`` (see ``leanctx.context.secrets``). Writes
are atomic (temp file + rename). No SQL here: the ``archive.created`` event records the id.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

import msgspec

from .errors import InvalidInput, NotFound

_ID = re.compile(r"^A[0-9a-f]{16}$")


class ArchiveInfo(msgspec.Struct, frozen=True):
    """An archive an operation wrote before dispatching the command that records it (the
    text itself is only in the file); ``source`` is the tool that kept it out of an answer."""

    archive_id: str
    sha256: str
    bytes: int
    lines: int
    tokens: int
    source: str = "shell"


class ArchiveStore:
    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    @classmethod
    def beside(cls, db_path: str | os.PathLike[str]) -> "ArchiveStore":
        return cls(Path(db_path).parent / "archives")

    @staticmethod
    def id_of(text: str) -> tuple[str, str]:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        return "A" + digest[:16], digest

    def path(self, archive_id: str) -> Path:
        if not _ID.match(archive_id):
            raise InvalidInput("ARCHIVE_INVALID_ID", f"{archive_id!r} is not an archive id (like A3f2a9c1b7e4d5f60)")
        return self.root / f"{archive_id}.txt"

    def put(self, text: str) -> tuple[str, str, bool]:
        """Store ``text``; returns (archive_id, sha256, created)."""
        archive_id, digest = self.id_of(text)
        target = self.path(archive_id)
        if target.exists():
            return archive_id, digest, False
        self.root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".tmp-", suffix=".txt")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass", newline="") as f:
                f.write(text)
            os.replace(tmp, target)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return archive_id, digest, True

    def get(self, archive_id: str) -> str:
        p = self.path(archive_id)
        if not p.exists():
            raise NotFound("ARCHIVE_NOT_FOUND",
                           f"no archive {archive_id} in {self.root}: archives are kept beside the log of the project "
                           "whose command made them; run expand in that project (or name it with --project), or "
                           "re-run the command", archive_id=archive_id, archives=str(self.root))
        return p.read_text(encoding="utf-8", errors="surrogatepass")

    def exists(self, archive_id: str) -> bool:
        return self.path(archive_id).exists()
