"""go: test (plain and -v), build, vet."""

from __future__ import annotations

import re

from leanctx.context.shell.builder import Builder
from leanctx.context.shell.patterns.common import Ctx

__all__ = ["go"]

_RUN = re.compile(r"^\s*=== (?:RUN|PAUSE|CONT|NAME)\s")
_PASS = re.compile(r"^\s*--- (?:PASS|SKIP): ")
_FAIL = re.compile(r"^\s*--- FAIL: (\S+)")
_PKG = re.compile(r"^(?:ok|FAIL|---|\?)\s+\S+\s")
_LOC = re.compile(r"^\s*[\w./-]+\.go:\d+(?::\d+)?:")


def go(b: Builder, ctx: Ctx) -> None:
    runs: list[int] = []
    passed: list[int] = []
    no_tests: list[int] = []
    for i, line in enumerate(b.lines):
        s = line.strip()
        if _RUN.match(line):
            runs.append(i)
        elif _PASS.match(line):
            passed.append(i)
        elif m := _FAIL.match(line):
            b.must_keep(i, m.group(1))
            b.keep(i, s)
        elif "[no test files]" in line:
            no_tests.append(i)
        elif _LOC.match(line):
            b.must_keep(i)
            b.keep(i, s if line.startswith("    ") else line)
        elif _PKG.match(line) or s in {"PASS", "FAIL"} or line.startswith("# "):
            b.must_keep(i)
            b.keep(i)
    b.omit(runs, "=== RUN lines", inline=False)
    b.omit(passed, "passed tests", inline=False)
    b.omit(no_tests, "packages without tests", inline=False)
