"""make and C/C++ compilers (gcc, clang): commands, diagnostics, make errors."""

from __future__ import annotations

import re

from leanctx.context.shell.builder import Builder
from leanctx.context.shell.patterns.common import Ctx, compiler_diagnostics

__all__ = ["make", "cc"]

_DIR = re.compile(r"^make(?:\[\d+\])?: (?:Entering|Leaving) directory|^make(?:\[\d+\])?: Nothing to be done")
_CC_CMD = re.compile(
    r"^\s*(?:\S*/)?(?:[\w.+-]+-)?(?:gcc|g\+\+|cc|c\+\+|clang|clang\+\+|ld|ar|ranlib|as|nvcc|rustc|javac)(?:-\d+)?\s"
)
_MAKE_ERR = re.compile(r"^make(?:\[\d+\])?: \*\*\*|^make(?:\[\d+\])?: Target .* not remade")
_CMAKE_PROGRESS = re.compile(r"^\[\s*\d+%\] (?:Building|Linking|Built target|Scanning)")


def make(b: Builder, ctx: Ctx) -> None:
    dirs: list[int] = []
    cmds: list[int] = []
    for i, line in enumerate(b.lines):
        if _DIR.match(line):
            dirs.append(i)
        elif _CC_CMD.match(line) or _CMAKE_PROGRESS.match(line):
            cmds.append(i)
        elif _MAKE_ERR.match(line):
            b.must_keep(i)
            b.keep(i)
    b.omit(dirs, "make dir messages", inline=False)
    b.omit(cmds, "compiler commands", inline=False)
    compiler_diagnostics(b)


def cc(b: Builder, ctx: Ctx) -> None:
    compiler_diagnostics(b)
