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
    bare: list[int] = []
    pkgs: list[int] = []
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
        elif s in {"PASS", "FAIL"}:
            bare.append(i)
        elif _PKG.match(line) or line.startswith("# "):
            b.must_keep(i)
            if line.startswith(("ok ", "FAIL\t", "FAIL ")):
                pkgs.append(i)
            else:
                b.keep(i)
    # a bare PASS/FAIL line restates the result of the package line that follows it (and the
    # last FAIL the run's): each is stated by that package line, not printed again
    said: dict[int, list[int]] = {k: [] for k in pkgs}
    last = {status: k for k in pkgs for status in ("ok", "FAIL") if b.lines[k].startswith(status)}
    for i in bare:
        status = "ok" if b.lines[i].strip() == "PASS" else "FAIL"
        if i + 1 in said and b.lines[i + 1].startswith(status):  # the package line right below
            said[i + 1].append(i)
        elif status in last and last[status] < i:  # none below: the last one above
            said[last[status]].append(i)
        else:
            b.must_keep(i)
            b.keep(i)
    for k in pkgs:
        for i in said[k]:
            b.release(i)
        b.represent([k, *said[k]], b.lines[k], pos=k)
    b.omit(runs, "=== RUN lines", inline=False)
    b.omit(passed, "passed", inline=False)
    b.omit(no_tests, "packages without tests", inline=False)
