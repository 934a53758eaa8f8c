"""Diary facts: what an agent found, decided, got stuck on, did and understood."""

from __future__ import annotations

from typing import Literal

from .base import Event

DiaryCategory = Literal["discovery", "decision", "blocker", "progress", "insight"]


class DiaryWritten(Event, tag="diary.written"):
    """An agent wrote an entry in its own diary (stream ``diary:<agent_id>``). Diaries live in
    the log, so they outlast sessions and context compaction."""

    agent_id: str
    category: DiaryCategory
    text: str
    tags: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    session_id: str | None = None
