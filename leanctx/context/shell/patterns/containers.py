"""docker (ps, images, logs, build) and kubectl (get, logs, describe)."""

from __future__ import annotations

import re

from leanctx.context.shell.builder import Builder
from leanctx.context.shell.generic import detect_facts
from leanctx.context.shell.patterns.common import Ctx

__all__ = ["docker", "kubectl"]

_MAX_ROWS = 60
_BUILD_NOISE = re.compile(
    r"^\s*(?:---> [0-9a-f]{6,}|---> Running in |---> Using cache|Removing intermediate container|"
    r"Sending build context|#\d+ (?:DONE|CACHED|sha256:|transferring|resolve |extracting |\[internal\])|"
    r"#\d+ \[internal\]|#\d+ load (?:build definition|\.dockerignore|metadata)|#\d+ writing image|"
    r"#\d+ naming to|#\d+ exporting)"
)
_BUILD_STEP = re.compile(r"^(?:Step \d+/\d+ : |#\d+ \[[\w\s-]*\d+/\d+\] )")


def _table(b: Builder) -> None:
    """Column-padded tables (ps, images, get): padding squeezed, long tables capped."""
    rows = [i for i in range(b.n) if b.is_pending(i) and b.lines[i].strip()]
    if not rows or not re.match(r"^[A-Z][A-Z0-9 ()/_.-]*\s{2,}[A-Z]", b.lines[rows[0]]):
        return  # not a table with a header row (NAME  READY  STATUS ...)
    for k, i in enumerate(rows):
        if k <= _MAX_ROWS:
            b.keep(i, re.sub(r" {2,}", "  ", b.lines[i].rstrip()))
    if len(rows) > _MAX_ROWS + 1:
        b.omit(rows[_MAX_ROWS + 1 :], "more rows")


_LEGACY_NOTICE = [
    "DEPRECATED: The legacy builder is deprecated and will be removed in a future release.",
    "Install the buildx component to build images with BuildKit:",
    "https://docs.docker.com/go/buildx/",
]
_LOGRUS_TIME = re.compile(r'^time="[^"]*" (level=\w+ .*)$')


def _client_notices(b: Builder) -> None:
    """What the docker client prints besides the command's own output: the legacy builder's
    fixed ``DEPRECATED:`` notice (the same three lines on every build, so counted as blank) and
    a logrus line's ``time="..."`` (the moment of the message: timing noise) are dropped."""
    for i in range(b.n - 2):
        if b.lines[i] == _LEGACY_NOTICE[0] and [x.strip() for x in b.lines[i + 1 : i + 3]] == _LEGACY_NOTICE[1:]:
            b.boilerplate(range(i, i + 3))
    for i, line in enumerate(b.lines):
        if b.is_pending(i) and (m := _LOGRUS_TIME.match(line)):
            b.rewrite(i, m.group(1))


def docker(b: Builder, ctx: Ctx) -> None:
    detect_facts(b)
    _client_notices(b)
    sub = ctx.cmd.sub
    if sub in {"ps", "images", "image", "container", "volume", "network", "stats", "top"}:
        _table(b)
    elif sub in {"build", "buildx"}:
        noise: list[int] = []
        for i, line in enumerate(b.lines):
            if _BUILD_NOISE.match(line):
                noise.append(i)
            elif _BUILD_STEP.match(line) or line.startswith(("Successfully built", "Successfully tagged")):
                b.keep(i)
        b.omit(noise, "build bookkeeping", inline=False)


def kubectl(b: Builder, ctx: Ctx) -> None:
    detect_facts(b)
    if ctx.cmd.sub in {"get", "top"}:
        _table(b)
