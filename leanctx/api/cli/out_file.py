"""``--out FILE`` of the CLI commands that write a file they made (``handoff create``, ``pack
seal|receive``, ``keys export-pub``): checked, and written, with a code of the command's family
instead of a traceback.

``prepare`` runs before the command does anything that lasts (``handoff create`` checks before
the handoff is recorded, so a bundle that cannot be written leaves no ``handoff.created``), and
changes nothing: a directory is ``<PREFIX>_OUT_IS_A_DIRECTORY``; a path that cannot take a file
(under a regular file, in a folder that cannot be written, a read-only file) is
``<PREFIX>_OUT_UNWRITABLE``, with the sentence of ``failures.output_file``. ``write`` checks
again, creates the missing folders (as ``ctx_handoff out=`` does) and writes, with the same
codes should that still fail."""

from __future__ import annotations

import os
from pathlib import Path

from ...errors import InvalidInput
from .failures import output_file


def _unwritable(prefix: str, out: str, message: str) -> InvalidInput:
    return InvalidInput(f"{prefix}_OUT_UNWRITABLE", message, path=out)


def prepare(out: str, prefix: str, what: str = "the output") -> Path:
    """``out`` as a path a file can be written to (missing folders can be created); raise otherwise."""
    if Path(out).is_dir():
        raise InvalidInput(f"{prefix}_OUT_IS_A_DIRECTORY", f"{out} is a directory; name a file to write {what} "
                           f"to, e.g. {os.path.join(out, 'out.json')}", path=out)
    try:
        path = output_file(out, what)
    except InvalidInput as exc:
        raise _unwritable(prefix, out, exc.message) from None
    return path


def write(out: str, data: bytes, prefix: str, what: str = "the output", *, failed_after: str = "") -> Path:
    """``data`` into ``out`` (``prepare`` first). ``failed_after``: what already happened, said
    in the error should the write itself fail."""
    path = prepare(out, prefix, what)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    except OSError as exc:
        raise _unwritable(prefix, out, f"cannot write {what} {out}: {exc.strerror or exc}{failed_after}") from None
    return path
