"""cargo: build, check, clippy, test (rustc diagnostics, test harness, panics)."""

from __future__ import annotations

import re

from leanctx.context.shell.builder import Builder
from leanctx.context.shell.patterns.common import Ctx, compiler_diagnostics

__all__ = ["cargo"]

_PROGRESS = re.compile(
    r"^\s*(?:Compiling|Checking|Downloaded|Downloading|Updating|Locking|Adding|Blocking|Fresh|"
    r"Documenting|Packaging|Verifying|Installing|Installed|Replacing|Unpacking|Fetching|Removed|"
    r"Running|Doc-tests|Building)\b"
)
# the test harness's fixed advice about backtraces: the same words in every run
_FIXED_NOTES = {
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
    "note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.",
}
_TEST = re.compile(r"^test (\S+) \.\.\. (ok|FAILED|ignored.*|bench:.*)$")
_FRAME = re.compile(r"^\s+\d+: (.+)$")
_AT = re.compile(r"^\s+at (.+)$")


def cargo(b: Builder, ctx: Ctx) -> None:
    progress: list[int] = []
    passed: list[int] = []
    ignored: list[int] = []
    frames: list[int] = []
    notes: list[int] = []
    fixed: list[int] = []
    hints: list[int] = []
    failed: list[tuple[int, str]] = []
    failures_list: list[int] = []
    in_failures_list = False
    i = 0
    while i < b.n:
        line = b.lines[i]
        s = line.strip()
        if _PROGRESS.match(line) and not s.startswith("Running `") or re.match(r"^running \d+ tests?$", s):
            progress.append(i)
        elif s.startswith("Finished ") or s.startswith("test result:"):
            b.must_keep(i)
            b.keep(i, s)
        elif m := _TEST.match(line):
            if m.group(2) == "ok":
                passed.append(i)
            elif m.group(2).startswith("ignored"):
                ignored.append(i)
            elif m.group(2) == "FAILED":
                failed.append((i, m.group(1)))
        elif re.match(r"^---- (\S+) stdout ----$", s):
            b.must_keep(i)
            b.keep(i)
        elif re.match(r"^thread '.*' (?:\(\d+\) )?panicked at ", s):
            b.must_keep(i)
            b.rewrite(i, re.sub(r"^(thread '.*') \(\d+\)", r"\1", s))  # the OS thread id says nothing
            j = i + 1
            while j < b.n and b.lines[j].strip() and not b.lines[j].startswith(("stack backtrace:", "note:")):
                b.must_keep(j)
                b.keep(j)
                j += 1
            i = j
            continue
        elif s == "stack backtrace:":
            frames.append(i)
            j = i + 1
            while j < b.n and (_FRAME.match(b.lines[j]) or _AT.match(b.lines[j])):
                fm = _FRAME.match(b.lines[j])
                at = _AT.match(b.lines[j + 1]) if j + 1 < b.n and fm else None
                if fm and at and at.group(1).startswith("./"):
                    b.represent([j, j + 1], f"   at {at.group(1)} {fm.group(1)}")
                    j += 2
                    continue
                frames.append(j)
                j += 1
            i = j
            continue
        elif s in _FIXED_NOTES:
            fixed.append(i)
        elif s.startswith("note: Some details are omitted") or s.startswith("note: run with `RUST_BACKTRACE"):
            notes.append(i)
        elif re.match(r"^(?:Some errors have detailed explanations|For more information about (?:this|an) error, try `rustc --explain)", s):
            b.release(i)  # the generic pass saw "error" in it: it is a pointer to the docs
            hints.append(i)
        elif s == "failures:":
            in_failures_list = any(_TEST.match(x) is None and x.startswith("    ") for x in b.lines[i + 1 : i + 2])
            if in_failures_list:
                failures_list.append(i)
            else:
                b.keep(i)
        elif in_failures_list and line.startswith("    "):
            failures_list.append(i)
        else:
            in_failures_list = False if not s else in_failures_list
        i += 1
    listed: set[str] = set()
    if failures_list:
        names = [b.lines[k].strip() for k in failures_list[1:]]
        listed = set(names)
        for k, name in zip(failures_list[1:], names):
            b.must_keep(k, name)
        b.represent(failures_list, "failures: " + ", ".join(names))
    repeated = [i for i, name in failed if name in listed]
    for i in repeated:
        b.release(i)
    for i, name in failed:
        if name not in listed:
            b.must_keep(i, name)
            b.keep(i)
    b.omit(repeated, "repeated FAILED lines", inline=False)
    b.omit(progress, "build progress", inline=False)
    b.omit(passed, "passed", inline=False)
    b.omit(ignored, "ignored", inline=False)
    b.omit(frames, "backtrace frames", inline=False)
    b.omit(notes, "notes", inline=False)
    b.boilerplate(fixed)
    b.omit(hints, "--explain hints", inline=False)
    compiler_diagnostics(b)
