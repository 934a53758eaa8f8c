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
from ..commands.read import ArchiveInfo, ReadFile, ReadView
from ..commands.read_compose import cap_note_reserve, not_sent_line
from ..context.tokens import count_tokens, cumulative_tokens

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
                store: ArchiveStore, surface: str = "tool") -> list[ReadFile]:
    """Archive every view the handler may cut or leave out. The handler gives each answer what
    is left of the cap once the later files' not-sent lines (and, with several files, the final
    note and the separators) are kept back; what the earlier answers spent is at most their
    whole answers (estimated generously: ``need``), so a view whose answer may need more than
    the least it can be given is archived. Stubs only leave more room. (The budget warning's
    reserve is the handler's alone: a view it then cuts is archived there.)"""
    many = len(files) > 1
    unsent = [_unsent_estimate(f, encoding) for f in files] if many else [0]
    kept = cap_note_reserve(len(files), cap, surface, encoding) + len(files) - 1 if many else 0
    spent = 0  # at most, by the earlier answers
    later = sum(unsent)
    out: list[ReadFile] = []
    for f, (red, alt_red), own in zip(files, redacted, unsent, strict=True):
        later -= own
        least = max(0, cap - kept - later - spent)
        margin = 64 + len(f.path) + sum(len(n) for n in f.view.notes) // 2 + len(f.view.detail or "") // 2
        need = f.view.tokens + margin
        view = _fit(f.view, red, need, least, encoding, store)
        alt = None
        if f.alt is not None:
            alt_need = f.alt.tokens + margin + len(f.alt.detail or "") // 2
            alt = _fit(f.alt, alt_red, alt_need, least, encoding, store)
            need = max(need, alt_need)
        out.append(msgspec.structs.replace(f, view=view, alt=alt))
        spent += need
    return out


def _unsent_estimate(f: ReadFile, encoding: str) -> int:
    """At least the tokens of the file's not-sent line, whatever ref it gets."""
    return max(count_tokens(not_sent_line(f"F{10 ** 6}={f.path}", v.label, f.lines, v.tokens), encoding)
               for v in (f.view, f.alt) if v is not None)
