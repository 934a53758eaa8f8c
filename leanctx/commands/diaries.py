"""Diary commands: an agent writes entries in its own diary (stream ``diary:<agent_id>``).

Recall is a query (``leanctx.projections.diaries.recall_diary``): anyone may recall any
agent's diary — diaries are how agents pass on what they learnt — but an agent writes only
its own (the caller's identity is the diary's owner).
"""

from __future__ import annotations

import re

import msgspec

from ..errors import InvalidInput
from ..events.kinds.diary import DiaryWritten
from ..projections.diaries import CATEGORIES
from .bus import Command, CommandContext, handles

MAX_TEXT = 20_000
MAX_TAGS = 32
MAX_PATHS = 64
_TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/+-]{0,63}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def stream_of(agent_id: str) -> str:
    return f"diary:{agent_id}"


class WriteDiary(Command, frozen=True):
    name = "diary.write"
    category: str
    text: str
    tags: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()


class DiaryAck(msgspec.Struct, frozen=True):
    agent_id: str
    seq: int  # the entry's number in the agent's diary
    category: str
    ts: str


def check_category(category: str) -> str:
    c = category.strip().lower()
    if c not in CATEGORIES:
        raise InvalidInput(
            "DIARY_INVALID_CATEGORY",
            f"diary category {category!r} is not one of {', '.join(CATEGORIES)}; pick one of those",
        )
    return c


@handles(WriteDiary, emits=("diary.written",), result=DiaryAck)
def write(ctx: CommandContext, cmd: WriteDiary) -> DiaryAck:
    if not ctx.actor:
        raise InvalidInput("DIARY_NO_AGENT", "a diary entry needs the writing agent's identity (set $LEAN_CTX_AGENT_ID)")
    category = check_category(cmd.category)
    text = cmd.text.strip()
    if not text:
        raise InvalidInput("DIARY_EMPTY_TEXT", "a diary entry needs some text")
    if len(text) > MAX_TEXT:
        raise InvalidInput("DIARY_TEXT_TOO_LONG", f"a diary entry holds at most {MAX_TEXT} characters; split it")
    tags = tuple(dict.fromkeys(t.strip() for t in cmd.tags if t.strip()))
    if len(tags) > MAX_TAGS or any(not _TAG.match(t) for t in tags):
        raise InvalidInput(
            "DIARY_INVALID_TAG",
            f"tags are at most {MAX_TAGS} words of 1-64 letters, digits or '._:/+-', starting with a letter or digit",
        )
    paths = tuple(dict.fromkeys(p.strip() for p in cmd.paths if p.strip()))
    if len(paths) > MAX_PATHS or any(_CONTROL.search(p) or len(p) > 4096 for p in paths):
        raise InvalidInput("DIARY_INVALID_PATH", f"paths are at most {MAX_PATHS}, without control characters")
    stream = stream_of(ctx.actor)
    seq = ctx.tx.stream_version(stream) + 1
    ctx.emit(stream, DiaryWritten(agent_id=ctx.actor, category=category, text=text, tags=tags,  # type: ignore[arg-type]
                                  paths=paths, session_id=ctx.session_id))  # seq: the write lock is held
    return DiaryAck(ctx.actor, seq, category, ctx.ts)
