"""Node tooling: npm/pnpm/yarn (install, test, run), node --test (TAP), jest/vitest, tsc, eslint."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from leanctx.context.shell.builder import Builder
from leanctx.context.shell.dispatch import parse_command
from leanctx.context.shell.patterns.common import Ctx, drop_rulers, shared_dir
from leanctx.context.shell.text import squeeze_spaces

__all__ = ["eslint", "jest", "node_error", "npm", "tap", "tsc"]

_INSTALL_NOISE = re.compile(
    r"^(?:npm notice|\d+ packages? (?:is|are) looking for funding|\s*run `npm fund`|"
    r"Progress: resolved|[+-]+\s*$|info (?:No lockfile|fsevents)|"
    r"\s*To address (?:all )?issues.*run:|\s*npm audit fix|Run `npm audit` for details|"
    r"Lockfile is up to date|Resolving: total|Downloading registry|"
    r"\[\d/\d\] (?:Resolving|Fetching|Linking|Building) |"
    # pnpm, on the install that creates node_modules: where its store is (a machine setting)
    r"Packages are (?:hard linked|copied|cloned) from the content-addressable store|"
    r"\s*(?:Content-addressable|Virtual) store is at:)"
)
# the run's wall time ("Done in 0.13s.", "Done in 47ms using pnpm v12.21.0") and yarn's banner
# ("yarn install v1.22.22", "yarn run v1.22.22"): no result, but a number or a version in them
_TIMING = re.compile(r"^(?:Done in [\d.]+m?s\b.*|yarn \w[\w-]* v\d+\.\d+\.\d+)$")
# yarn's fixed pointer to its docs, the same words for every run of a command
_YARN_ADVICE = re.compile(r"^info Visit https://yarnpkg\.com/\S+ for documentation about this command\.$")
# what an install did: npm's counts, pnpm's "Packages: +3 -1" and "+ name 1.2.3" lines, yarn's
# "success ..." lines
_INSTALL_RESULT = re.compile(
    r"^(?:(?:added|removed|changed|audited|up to date)\b|Packages: [+-]\d|Already up to date\b|success |"
    r"[+-] (?:@[\w.-]+/)?[\w.-]+ \d\S*(?: .*)?$)"
)
_YARN_TREE = re.compile(r"^[├└│]─ (\S+)")
_DEPRECATED = re.compile(r"^(?:npm (?:warn|WARN) deprecated|warning .*deprecated|\s*WARN\s+deprecated) (\S+?)(?::| )")
_SCRIPT_HEADER = re.compile(r"^> (\S+@\S+) (\S+)$")
# yarn (v1) and pnpm echo the script they run as "$ command"
_SCRIPT_ECHO = re.compile(r"^\$ (\S.*)$")


def npm(b: Builder, ctx: Ctx) -> None:
    sub = ctx.cmd.sub
    b.boilerplate(i for i, line in enumerate(b.lines) if _YARN_ADVICE.match(line))
    timing = [i for i, line in enumerate(b.lines) if _TIMING.match(line)]
    for i in timing:
        b.release(i)  # the generic pass takes "Done in 0.1s" for a summary: it states no result
    if sub in {"install", "update", "uninstall", "remove", "ci", "add", "audit", "outdated", "dedupe"}:
        _install(b)
        b.omit(timing, "install log", inline=False)
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
        elif (m := _SCRIPT_ECHO.match(line)) and not inner:
            inner = m.group(1).strip()
            b.keep(i)
    b.omit(headers, "npm script header", inline=False)
    b.omit(timing, "banner and timing", inline=False)
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
    node_error(b)


def _install(b: Builder) -> None:
    noise: list[int] = []
    deprecated: list[tuple[int, str]] = []
    for i, line in enumerate(b.lines):
        if _INSTALL_NOISE.match(line):
            noise.append(i)
        elif m := _DEPRECATED.match(line):
            deprecated.append((i, m.group(1)))
        elif _INSTALL_RESULT.match(line) or "vulnerabilit" in line:
            b.must_keep(i)
            b.keep(i)
    _yarn_lists(b)
    if deprecated:
        b.represent([i for i, _ in deprecated], "deprecated: " + ", ".join(p for _, p in deprecated))
    # progress, store locations, banners and npm's update notices: the log of the install, not
    # its result (one reason for all, so the footer marker stays one short line)
    b.omit(noise, "install log", inline=False)


def _yarn_lists(b: Builder) -> None:
    """yarn (v1) add/upgrade list the packages twice: ``info Direct dependencies`` (what was
    asked for) then ``info All dependencies`` (those again, with every new transitive package).
    The direct list is kept; the second list is omitted (its count is in ``success Saved N new
    dependencies``). Without a direct list, the one list is kept."""
    lists: dict[str, list[int]] = {}
    current = ""
    for i, line in enumerate(b.lines):
        if line in {"info Direct dependencies", "info All dependencies"}:
            current = line.split()[1]
            lists[current] = [i]
        elif current and _YARN_TREE.match(line):
            lists[current].append(i)
        else:
            current = ""
    direct, every = lists.get("Direct", []), lists.get("All", [])
    for i in direct[1:]:
        b.must_keep(i, _YARN_TREE.match(b.lines[i]).group(1))  # type: ignore[union-attr]
    if direct and every:
        b.omit(every, "all-dependencies list", inline=False)


# node's report of an uncaught error: "file:line", the source line, a caret, the error, the
# stack ("    at fn (file:line:col)") and "Node.js v20.1.0"
_NODE_AT = re.compile(r"^\s+at (?:.+ \()?(\S+?:\d+:\d+)\)?$")
_NODE_VERSION = re.compile(r"^Node\.js v\d+\.\d+\.\d+$")
_NODE_HEADER = re.compile(r"^(?:file://)?(\S+\.[cm]?[jt]sx?):(\d+)$")


def node_error(b: Builder) -> None:
    """Node's uncaught-error report in a script's output: the location, the source line and the
    error are kept, so are the stack frames in the project; the frames of node itself
    (``node:internal/...``) and of node_modules, the caret under the source line and the
    ``Node.js vX`` line are omitted."""
    frames: list[int] = []
    other: list[int] = []
    for i in b.pending():
        line = b.lines[i]
        if m := _NODE_AT.match(line):
            where = m.group(1)
            if where.startswith("node:") or "node_modules/" in where:
                frames.append(i)
            else:
                b.must_keep(i, where)
                b.keep(i)
        elif _NODE_VERSION.match(line):
            other.append(i)
        elif (m := _NODE_HEADER.match(line)) and i + 2 < b.n and re.match(r"^\s*\^+\s*$", b.lines[i + 2]):
            b.must_keep(i)
            b.keep(i)
            b.keep(i + 1)  # the source line that threw
            other.append(i + 2)
    b.omit(frames, "node internal stack frames", inline=False)
    b.omit(other, "caret, node version", inline=False)


_TAP_OK = re.compile(r"^\s*ok \d+ - (.*)$")
_TAP_NOT_OK = re.compile(r"^\s*not ok \d+ - (.*)$")
_TAP_SUMMARY = re.compile(r"^# (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) ")


def tap(b: Builder, ctx: Ctx) -> None:
    """node --test / any TAP producer: failures with their message and location, a summary."""
    passed: list[int] = []
    noise: list[int] = []
    repeats: list[int] = []
    summary: list[int] = []
    # node's runner writes absolute locations and stack frames: the project directory once
    short = shared_dir(b, range(b.n))
    i = 0
    while i < b.n:
        line = b.lines[i]
        if _TAP_NOT_OK.match(line):
            b.must_keep(i, _TAP_NOT_OK.match(line).group(1))  # type: ignore[union-attr]
            b.keep(i)
            i = _tap_block(b, i + 1, keep=True, noise=noise, repeats=repeats, short=short)
            continue
        if _TAP_OK.match(line):
            passed.append(i)
            i = _tap_block(b, i + 1, keep=False, noise=passed, repeats=repeats, short=short)
            continue
        if (line.lstrip().startswith("# Subtest:") or line.startswith(("TAP version", "# duration_ms "))
                or re.match(r"^\s*1\.\.\d+$", line)):  # bookkeeping, and the run's timing
            noise.append(i)
        elif _TAP_SUMMARY.match(line):
            summary.append(i)
        i += 1
    if summary:
        for i in summary:
            if b.lines[i].startswith(("# fail", "# pass")):
                b.must_keep(i)
        # counts of zero are stated together: the counts that are not zero are the information
        shown = [b.lines[i] for i in summary if i in b.must or not re.match(r"^# \w+ 0$", b.lines[i])]
        if len(shown) < len(summary):
            shown.append("others 0")
        b.represent(summary, " | ".join(shown))
    b.omit(passed, "passed", inline=False)
    b.omit(noise, "TAP bookkeeping", inline=False)
    b.omit(repeats, "expected/actual repeats", inline=False)


_TAP_NOISE_KEYS = {"duration_ms", "failureType", "code", "name", "type"}


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _tap_block_end(b: Builder, i: int, indent: int) -> int:
    """The ``...`` line closing the YAML block whose content starts at ``i``; a block cut short
    (output truncated, another stream interleaved) ends before the first line indented less
    than its ``---``: the test lines after it are not part of it."""
    while i < b.n:
        line = b.lines[i]
        if line.strip() and (_indent(line) < indent or (_indent(line) == indent and line.strip() == "...")):
            return i
        i += 1
    return i


def _tap_block(b: Builder, i: int, keep: bool, noise: list[int], repeats: list[int],
               short: Callable[[str], str]) -> int:
    """The YAML block (``---`` .. ``...``) after a test line."""
    if i >= b.n or b.lines[i].strip() != "---":
        return i
    indent = _indent(b.lines[i])
    noise.append(i)
    i += 1
    end = _tap_block_end(b, i, indent)
    key = ""
    # the error message shows both values: "+ actual - expected" with a diff, or, for short
    # values, the comparison itself ("'1h' !== '60m'")
    diff = _compared_in_message(b, i, end, indent)
    while i < end:
        line = b.lines[i]
        s = line.strip()
        if _indent(line) == indent and (km := re.match(r"^(\w+):", s)):
            key = km.group(1)
        if not keep:
            noise.append(i)
        elif key == "stack":
            if s.startswith("stack:") or "node:internal" in s or "node:async_hooks" in s:
                noise.append(i)
            else:
                b.must_keep(i, short(s))
                b.keep(i, short(line))
        elif key in _TAP_NOISE_KEYS:
            noise.append(i)
        elif key in {"expected", "actual", "operator"} and diff:
            repeats.append(i)
        elif not s:
            b.blank(i)
        else:
            if key == "error" and s == "+ actual - expected":
                diff = True
            if key == "location":
                b.must_keep(i, short(s))
            b.keep(i, short(line))
        i += 1
    if end < b.n and b.lines[end].strip() == "..." and _indent(b.lines[end]) == indent:
        noise.append(end)
        return end + 1
    return end


def _compared_in_message(b: Builder, i: int, end: int, indent: int) -> bool:
    """Whether the YAML block ``[i, end)`` has an error message line ``<actual> <op>
    <expected>`` made of its one-line ``actual:`` and ``expected:`` values."""
    fields: dict[str, str] = {}
    body: list[str] = []
    for line in b.lines[i:end]:
        if _indent(line) == indent and (km := re.match(r"^(\w+):\s*(.*)$", line.strip())):
            fields[km.group(1)] = km.group(2)
        else:
            body.append(line.strip())
    actual, expected = fields.get("actual", ""), fields.get("expected", "")
    if not actual or not expected or actual in {"|-", "|", ">-"} or expected in {"|-", "|", ">-"}:
        return False
    return any(re.fullmatch(rf"{re.escape(actual)} (?:!==|!=|===|==) {re.escape(expected)}", x) for x in body)


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
    b.omit(passed, "passed", inline=False)
    b.omit(frames, "code frames", inline=False)
    b.omit(stack, "node_modules stack frames", inline=False)
    b.omit(noise, "npm notices", inline=False)
    drop_rulers(b)


_TSC_LINE = re.compile(r"^(\S+?)(?:\((\d+),(\d+)\)|:(\d+):(\d+)) ?[:-] ?(error|warning) (TS\d+): (.*)$")


def tsc(b: Builder, ctx: Ctx) -> None:
    frames: list[int] = []
    table: int | None = None
    per_file: list[int] = []
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
        elif re.match(r"^Errors\s+Files$", line.strip()):
            table = i
        elif table is not None and re.match(r"^\s+\d+\s+\S+", line):
            per_file.append(i)
    # --pretty ends with an "Errors  Files" table: per-file counts of the diagnostics listed
    # above, each file with its first line; when every diagnostic line is shown it says nothing new
    listed = Counter(m.group(1) for ln in b.lines if (m := _TSC_LINE.match(ln)))
    if table is not None:
        rows = [re.match(r"^\s+(\d+)\s+(\S+?)(?::\d+)?$", b.lines[i]) for i in per_file]
        if all(r and listed[r.group(2)] == int(r.group(1)) for r in rows):
            b.omit([table, *per_file], "per-file count table", inline=False)
        else:
            b.keep(table)
            for i in per_file:
                b.keep(i, squeeze_spaces(b.lines[i]).strip())
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
