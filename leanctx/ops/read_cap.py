"""The cap of ``ctx_read`` (``leanctx.ops.read``), outside the write transaction: archive every
view that might not fit under the answer cap, with the running token counts of its lines, so
that the handler (``leanctx.commands.read``) can send its head and point at the rest.

Every count is in the call's encoding spec, its correction factor applied (``cl100k_base*1.1``:
``leanctx.context.tokens.cumulative_tokens``).
"""

from __future__ import annotations

import msgspec

from ..archive import ArchiveStore
from ..cache.views import View
from ..commands.read import NOTICE_RESERVE, ArchiveInfo, ReadFile, ReadView
from ..context.tokens import cumulative_tokens

__all__ = ["cumulative", "foresee_cap"]


def cumulative(body: str, encoding: str) -> list[int]:
    """Running token counts of the body's lines (each with its newline), in the encoding spec
    ``encoding``, its correction factor applied (the handler cuts the view with them)."""
    b = body.removesuffix("\n")
    if not b:
        return []
    return cumulative_tokens([ln + "\n" for ln in b.split("\n")], encoding)


def _archive(store: ArchiveStore, v: View) -> ArchiveInfo:
    aid, digest, _ = store.put(v.text)
    body = v.text.removesuffix("\n")
    return ArchiveInfo(aid, digest, len(v.text.encode("utf-8", "surrogatepass")),
                       len(body.split("\n")) if body else 0, v.tokens, source="read")


def _fit(view: ReadView, red_view: View | None, need: int, allowed: int, encoding: str,
         store: ArchiveStore) -> ReadView:
    if need <= allowed or red_view is None:
        return view
    return msgspec.structs.replace(view, cum=cumulative(view.body, encoding), archive=_archive(store, red_view))


def foresee_cap(files: list[ReadFile], redacted: list[tuple[View, View | None]], cap: int, encoding: str,
                store: ArchiveStore) -> list[ReadFile]:
    """Archive every view that might not fit, assuming every answer is content (stubs only
    leave more room, so the handler never caps a view that was not archived here)."""
    remaining = cap
    out: list[ReadFile] = []
    for i, (f, (red, alt_red)) in enumerate(zip(files, redacted, strict=True)):
        allowed = max(0, remaining - NOTICE_RESERVE * (len(files) - i - 1))
        margin = 64 + len(f.path) + sum(len(n) for n in f.view.notes) // 2
        need = f.view.tokens + margin
        view = _fit(f.view, red, need, allowed, encoding, store)
        alt = None
        if f.alt is not None:
            alt_need = f.alt.tokens + margin
            alt = _fit(f.alt, alt_red, alt_need, allowed, encoding, store)
            need = max(need, alt_need)
        out.append(msgspec.structs.replace(f, view=view, alt=alt))
        remaining = max(0, remaining - min(need, allowed))
    return out
