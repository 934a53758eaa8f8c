"""Node tooling: npm/pnpm/yarn (install, test, run), node --test (TAP), jest/vitest, tsc, eslint."""

from __future__ import annotations

import re

from leanctx.context.shell.builder import Builder
from leanctx.context.shell.dispatch import parse_command
from leanctx.context.shell.patterns.common import Ctx, drop_rulers
from leanctx.context.shell.text import squeeze_spaces

__all__ = ["eslint", "npm", "tap", "jest", "tsc"]

_INSTALL_NOISE = re.compile(
    r"^(?:npm notice|\d+ packages? (?:is|are) looking for funding|\s*run `npm fund`|"
    r"Progress: resolved|Packages: [+-]|[+-]{5,}\s*$|Done in [\d.]+m?s|info (?:No lockfile|fsevents|Visit)|"
    r"\s*To address (?:all )?issues.*run:|\s*npm audit fix|Run `npm audit` for details|"
    r"Lockfile is up to date|Already up to date|Resolving: total|Downloading registry|"
    r"\[\d/\d\] (?:Resolving|Fetching|Linking|Building) )"
)
_DEPRECATED = re.compile(r"^(?:npm (?:warn|WARN) deprecated|warning .*deprecated|\s*WARN\s+deprecated) (\S+?)(?::| )")
_SCRIPT_HEADER = re.compile(r"^> (\S+@\S+) (\S+)$")


def npm(b: Builder, ctx: Ctx) -> None:
    sub = ctx.cmd.sub
    if sub in {"install", "update", "uninstall", "remove", "ci", "add", "audit", "outdated", "dedupe"}:
        _install(b)
        return
    # npm test / npm run X / pnpm test: the script echo tells what ran
    inner = ""
    headers: list[int] = []
    for i, line in enumerate(b.lines[:12]):
        if _SCRIPT_HEADER.match(line):
            headers.append(i)
        elif line.startswith("> ") and headers and not inner:
            inner = line[2:].strip()
            b.keep(i)
    b.omit(headers, "npm script header", inline=False)
    for i, line in enumerate(b.lines):
        if line.startswith(("npm ERR!", "npm error", " ELIFECYCLE", "ERR_PNPM")):
            if re.search(r"A complete log of this run|Lifecycle script|^npm error\s*$", line):
                continue
            b.must_keep(i)
    from leanctx.context.shell.patterns import by_content, select  # local: avoid cycle

    pattern = by_content(b.lines)
    if pattern is None and inner:
        inner_cmd = parse_command(inner)
        name, fn = select(inner_cmd, b.lines)
        if name not in {"generic", "npm"}:
            pattern = fn
    if pattern is not None:
        pattern(b, ctx)


def _install(b: Builder) -> None:
    noise: list[int] = []
    deprecated: list[tuple[int, str]] = []
    for i, line in enumerate(b.lines):
        if _INSTALL_NOISE.match(line):
            noise.append(i)
        elif m := _DEPRECATED.match(line):
            deprecated.append((i, m.group(1)))
        elif re.match(r"^(?:added|removed|changed|audited|up to date)\b", line) or "vulnerabilit" in line:
            b.must_keep(i)
            b.keep(i)
    if deprecated:
        b.represent([i for i, _ in deprecated], "deprecated: " + ", ".join(p for _, p in deprecated))
    b.omit(noise, "npm notices/progress", inline=False)


_TAP_OK = re.compile(r"^\s*ok \d+ - (.*)$")
_TAP_NOT_OK = re.compile(r"^\s*not ok \d+ - (.*)$")
_TAP_KEEP = re.compile(r"^\s*(?:error|location|expected|actual|message|operator):")
_TAP_SUMMARY = re.compile(r"^# (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) ")


def tap(b: Builder, ctx: Ctx) -> None:
    """node --test / any TAP producer: failures with their message and location, a summary."""
    passed: list[int] = []
    noise: list[int] = []
    summary: list[int] = []
    i = 0
    while i < b.n:
        line = b.lines[i]
        if _TAP_NOT_OK.match(line):
            b.must_keep(i, _TAP_NOT_OK.match(line).group(1))  # type: ignore[union-attr]
            b.keep(i)
            i = _tap_block(b, i + 1, keep=True, noise=noise)
            continue
        if _TAP_OK.match(line):
            passed.append(i)
            i = _tap_block(b, i + 1, keep=False, noise=passed)
            continue
        if line.lstrip().startswith("# Subtest:") or line.startswith("TAP version") or re.match(r"^\s*1\.\.\d+$", line):
            noise.append(i)
        elif _TAP_SUMMARY.match(line):
            summary.append(i)
        i += 1
    if summary:
        for i in summary:
            if b.lines[i].startswith(("# fail", "# pass")):
                b.must_keep(i)
        b.represent(summary, " | ".join(b.lines[i] for i in summary))
    b.omit(passed, "passed tests", inline=False)
    b.omit(noise, "TAP bookkeeping", inline=False)


def _tap_block(b: Builder, i: int, keep: bool, noise: list[int]) -> int:
    """The YAML block (``---`` .. ``...``) after a test line."""
    if i >= b.n or b.lines[i].strip() != "---":
        return i
    indent = len(b.lines[i]) - len(b.lines[i].lstrip())
    noise.append(i)
    i += 1
    in_stack = False
    while i < b.n:
        line = b.lines[i]
        if line.strip() == "..." and len(line) - len(line.lstrip()) == indent:
            noise.append(i)
            return i + 1
        if not keep:
            noise.append(i)
        else:
            s = line.strip()
            if re.match(r"^stack:", s):
                in_stack = True
                noise.append(i)
            elif in_stack and ("node:internal" in s or "node:async_hooks" in s):
                noise.append(i)
            elif _TAP_KEEP.match(s) or in_stack:
                if "location:" in s or in_stack:
                    b.must_keep(i)
                b.keep(i)
            elif re.match(r"^(?:duration_ms|failureType|code|name|type):", s):
                noise.append(i)
            elif not s:
                b.blank(i)
            else:
                b.keep(i)
        i += 1
    return i


_JEST_FRAME = re.compile(r"^\s*(>)?\s*\d+ \|(.*)$|^\s+\|\s*[\^~]+\s*$")
_JEST_AT = re.compile(r"^\s+at (?:.+ \()?(\S+?:\d+:\d+)\)?$")


def jest(b: Builder, ctx: Ctx) -> None:
    """jest / vitest: failures with their expectation, diff, the failing source line and its
    location; passing tests, code-frame context and node_modules stack frames are omitted."""
    passed: list[int] = []
    frames: list[int] = []
    stack: list[int] = []
    noise: list[int] = []
    for i, line in enumerate(b.lines):
        s = line.strip()
        if re.match(r"^(?:✓|√|✔)\s", s) or re.match(r"^PASS\s", s):
            passed.append(i)
        elif re.match(r"^(?:✕|×|✗|✖)\s", s) or re.match(r"^FAIL\s", s) or s.startswith("●"):
            b.must_keep(i)
            b.keep(i)
        elif re.match(r"^(?:Tests|Test Suites|Test Files|Snapshots|Time|Duration):\s", s):
            b.must_keep(i)
            b.keep(i, s)
        elif m := _JEST_FRAME.match(line):
            if m.group(1):  # the failing line of the code frame
                b.keep(i, f"  > {m.group(2).strip()}")
            else:
                frames.append(i)
        elif m := _JEST_AT.match(line):
            if "node_modules" in m.group(1) or m.group(1).startswith("node:"):
                stack.append(i)
            else:
                b.must_keep(i, m.group(1))
                b.keep(i, f"  at {m.group(1)}")
        elif line.startswith("npm notice") or s == "Ran all test suites.":
            noise.append(i)
    b.omit(passed, "passed tests", inline=False)
    b.omit(frames, "code frame context", inline=False)
    b.omit(stack, "node_modules stack frames", inline=False)
    b.omit(noise, "npm notices", inline=False)
    drop_rulers(b)


_TSC_LINE = re.compile(r"^(\S+?)(?:\((\d+),(\d+)\)|:(\d+):(\d+)) ?[:-] ?(error|warning) (TS\d+): (.*)$")


def tsc(b: Builder, ctx: Ctx) -> None:
    frames: list[int] = []
    for i, line in enumerate(b.lines):
        if _TSC_LINE.match(line):
            b.must_keep(i)
            b.keep(i)
        elif re.match(r"^Found \d+ errors?", line):
            b.must_keep(i)
            b.keep(i)
        elif re.match(r"^\d+\s", line) or re.match(r"^\s+~+\s*$", line) or re.match(r"^\s*\d*\s+~+", line):
            frames.append(i)
        elif re.match(r"^\s+\S+:\d+:\d+$", line):  # related-location line of pretty output
            b.keep(i, line.strip())
        elif re.match(r"^\s{4}\d+\s", line) or re.match(r"^\s{4}\s*~+", line):
            frames.append(i)
        elif re.match(r"^\s+\d+\s+\S+", line) and "Errors" in "".join(b.lines[max(0, i - 5) : i]):
            b.keep(i, squeeze_spaces(line).strip())
    b.omit(frames, "code frames", inline=False)


_ESLINT_ROW = re.compile(r"^\s+(\d+:\d+)\s+(error|warning)\s+(.*?)\s{2,}(\S+)\s*$")


def eslint(b: Builder, ctx: Ctx) -> None:
    for i, line in enumerate(b.lines):
        m = _ESLINT_ROW.match(line)
        if m:
            b.must_keep(i, m.group(3))
            b.keep(i, f"  {m.group(1)} {m.group(2)} {m.group(3)} [{m.group(4)}]")
        elif re.match(r"^[✖✗×]?\s*\d+ problems?", line.strip()):
            b.must_keep(i)
            b.keep(i, line.strip())
        elif line.startswith("/") or re.match(r"^[\w.~-]+/\S+\.\w+$", line):
            b.must_keep(i)
            b.keep(i)
