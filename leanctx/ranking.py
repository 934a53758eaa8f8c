"""Reciprocal rank fusion, shared by code search (``ops.search``) and knowledge recall
(``commands.knowledge_recall``, ``projections.knowledge``): a pure function with no imports from
either side."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

RRF_K = 60  # the usual constant: a rank's weight is 1 / (60 + rank)

K = TypeVar("K", bound=Hashable)


def rrf(rankings: Sequence[Sequence[K]], k: int = RRF_K) -> list[tuple[K, float]]:
    """Reciprocal rank fusion: ``score(d) = Σ 1 / (k + rank_i(d))`` over the lists holding
    ``d`` (ranks from 1 among a list's distinct items: a repeat within one list counts once). Ties go to the better best rank,
    then to the earlier first appearance (list order, then rank)."""
    scores: dict[K, float] = {}
    best: dict[K, int] = {}
    first: dict[K, tuple[int, int]] = {}
    for li, ranking in enumerate(rankings):
        seen: set[K] = set()
        for key in ranking:
            if key in seen:
                continue
            seen.add(key)
            rank = len(seen)
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
            best[key] = min(best.get(key, rank), rank)
            first.setdefault(key, (li, rank))
    order = sorted(scores, key=lambda d: (-scores[d], best[d], first[d]))
    return [(d, scores[d]) for d in order]
