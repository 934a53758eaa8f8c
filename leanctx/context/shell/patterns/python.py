"""Python tools: pytest, unittest, pip."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from leanctx.context.shell.builder import Builder
from leanctx.context.shell.patterns.common import Ctx, drop_rulers, python_traceback
from leanctx.context.shell.patterns.pytest_blocks import (
    FailureBlocks,
    WarningsSummary,
    sep_title,
)

__all__ = ["pip", "pytest", "unittest"]

_PROGRESS = re.compile(r"^\S+\.py [.FEsxXp]+\s*(?:\[\s*\d+%\])?$|^[.FEsxX]+\s*\[\s*\d+%\]$")
_OUTCOME = r"(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)"
# "nodeid OUTCOME", and pytest-xdist's "[gw1] [ 37%] OUTCOME nodeid"
_VERBOSE = re.compile(rf"^(\S+::\S.*?) {_OUTCOME}\b|^\[gw\d+\] \[\s*\d+%\] {_OUTCOME} (\S+::\S.*?)\s*$")
_STARTED = re.compile(r"^[^\s:]+\.py::\S+$")  # pytest-xdist -v: a test handed to a worker
_SUMMARY = re.compile(r"\b\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|warnings?|deselected)\b.* in [0-9.]+s")
_ROOTDIR = re.compile(r"^rootdir: (/\S+)")
_SHORT = re.compile(r"^(FAILED|ERROR) (\S+)(?: - .*)?$")
# what stands for "collected N items": pytest-xdist's "4 workers [48 items]"
_COLLECTED = re.compile(r"^collect|^\d+ workers? \[\d+ items?\]$")


def _test_name(nodeid: str) -> str:
    """``tests/x.py::TestA::test_b[1]`` → ``TestA.test_b[1]`` (how failure blocks title it)."""
    path, sep, rest = nodeid.partition("::")
    return rest.replace("::", ".") if sep else path


def pytest(b: Builder, ctx: Ctx) -> None:
    section = "header"
    header: list[int] = []
    passed: list[int] = []
    skipped: list[int] = []
    progress: list[int] = []
    fixed: list[int] = []  # pytest's fixed advice (the docs link)
    verbose_fail: list[tuple[int, str]] = []
    short: list[tuple[int, str]] = []
    short_heading: int | None = None
    short_other = False  # the short summary lists more than failures (XFAIL, SKIPPED...)
    collected: int | None = None
    finished = False  # the final "N failed, M passed in Xs" line was seen
    relative = _relative_to_rootdir(b.lines)
    blocks = FailureBlocks(b, relative)
    warnings = WarningsSummary(b, relative)

    for i, line in enumerate(b.lines):
        s = line.strip()
        title = sep_title(line, "=")
        if title is not None:
            blocks.end_section()
            if _SUMMARY.search(title) or re.search(r"\bno tests ran\b|Interrupted", title):
                b.must_keep(i, title)
                b.keep(i, title)
                section = "done"
                finished = finished or bool(_SUMMARY.search(title))
            elif "test session starts" in title:
                section = "header"
                header.append(i)
            else:
                section = title.lower()
                if "short test summary" in section:
                    short_heading = i
                else:
                    b.keep(i, f"== {title} ==")
            continue
        if not s:
            b.blank(i)
            continue
        if section == "header":
            if _COLLECTED.match(s):
                collected = i
                section = "run"
            else:
                header.append(i)
            continue
        if section == "run":
            v = _VERBOSE.match(line)
            if v:
                outcome, nodeid = (v.group(2), v.group(1)) if v.group(1) else (v.group(3), v.group(4))
                if outcome == "PASSED":
                    passed.append(i)
                elif outcome in {"SKIPPED", "XFAIL"}:
                    skipped.append(i)
                else:
                    verbose_fail.append((i, nodeid))
            elif _PROGRESS.match(s) or _STARTED.match(line):
                progress.append(i)
            continue
        if section in {"failures", "errors"}:
            blocks.line(i, line)
            continue
        if re.match(r"^-- Docs: https://docs\.pytest\.org/\S+$", s):
            fixed.append(i)
            continue
        if section == "warnings summary":
            warnings.line(i, line)
            continue
        if "short test summary" in section:
            sm = _SHORT.match(line)
            if sm:
                short.append((i, sm.group(2)))
            elif line.startswith("PASSED "):  # -rA: counted by the final summary
                passed.append(i)
            else:
                b.must_keep(i)
                b.keep(i)
                short_other = short_other or bool(re.match(r"^(?:XFAIL|XPASS|SKIPPED)\b", line))
            continue
        # anything else: leave to the generic pass
    # a failing test named in the short summary or in a -v line, whose block is shown above,
    # is stated twice: keep the block (traceback, E lines, location), drop the repeats
    repeated_short = [i for i, nodeid in short if _test_name(nodeid) in blocks.blocks]
    for i, nodeid in short:
        if i in repeated_short:
            b.release(i)
        else:
            b.must_keep(i)
            b.keep(i)
    listed = {_test_name(n) for _, n in short}
    repeated_v = [i for i, nodeid in verbose_fail if _test_name(nodeid) in blocks.blocks | listed]
    for i, nodeid in verbose_fail:
        if i in repeated_v:
            b.release(i)
        else:
            b.must_keep(i, nodeid)
            b.keep(i)
    if short_heading is not None:
        later = any(b.is_pending(i) and b.lines[i].strip() and not _SHORT.match(b.lines[i])
                    and not b.lines[i].startswith("PASSED ") and sep_title(b.lines[i], "=") is None
                    for i in range(short_heading + 1, b.n))  # lines the generic pass may show
        if len(repeated_short) < len(short) or short_other or later:
            b.keep(short_heading, f"== {b.lines[short_heading].strip('= ')} ==")
        else:
            repeated_short.append(short_heading)
    if collected is not None:
        if finished and collected not in b.must:  # the final summary counts every collected test
            header.append(collected)
        else:
            b.must_keep(collected)
            b.keep(collected)
    for i in b.pending():  # what the generic pass keeps (warnings summary...): paths relative to rootdir
        if (text := relative(b.lines[i])) != b.lines[i]:
            b.restate(i, text)
    b.omit(header, "header", inline=False)
    b.omit(progress, "progress", inline=False)
    b.omit(passed, "passed", inline=False)
    b.omit(skipped, "skipped/xfail", inline=False)
    b.omit(repeated_v, "repeated -v lines", inline=False)
    b.omit(repeated_short, "repeated summary lines", inline=False)
    blocks.finish()
    warnings.finish()
    b.boilerplate(fixed)
    drop_rulers(b)


def _relative_to_rootdir(lines: Sequence[str]) -> Callable[[str], str]:
    """The function writing the absolute paths under pytest's rootdir relative to it, as pytest
    writes its own locations (identity without a rootdir, or with ``rootdir: /``). The rootdir
    is the header's ``rootdir:``; ``-q`` does not print it, but test ids are relative to it: an
    absolute path ending with a test id's file names it."""
    m = next((m for ln in lines[:12] if (m := _ROOTDIR.match(ln))), None)
    root = m.group(1).rstrip("/") + "/" if m else _infer_rootdir(lines)
    if len(root) < 2:
        return lambda text: text
    at_root = re.compile(r"(?<![\w.~/-])" + re.escape(root))  # a path that starts there
    return lambda text: at_root.sub("", text) if root in text else text


_NODEID_FILE = re.compile(r"^(?:(?:FAILED|ERROR|PASSED) )?([\w.-][\w./-]*\.py)::")
_ABS_PY = re.compile(r"(?<![\w.~/-])/[\w.@+/-]+\.py\b")


def _infer_rootdir(lines: Sequence[str]) -> str:
    files = {m.group(1) for ln in lines if (m := _NODEID_FILE.match(ln))}
    if not files:
        return ""
    for ln in lines:
        if "/" in ln and ".py" in ln:
            for p in _ABS_PY.findall(ln):
                for f in files:
                    if p.endswith("/" + f):
                        return p[: len(p) - len(f)]
    return ""


_UT_RESULT = re.compile(r"^(.+?) \.\.\. (ok|FAIL|ERROR|skipped.*|expected failure|unexpected success)$")


def _ut_header(line: str) -> str:
    """``FAIL: test_x (pkg.Case.test_x)`` → ``FAIL: pkg.Case.test_x``: Python 3.11+ names the
    method twice (older ones write ``test_x (pkg.Case)``: the same id, spelled out once)."""
    m = re.match(r"^(FAIL|ERROR): (\w+) \(([\w.]+)\)$", line)
    if not m:
        return line
    kind, name, ident = m.groups()
    return f"{kind}: {ident if ident.endswith('.' + name) else ident + '.' + name}"


def unittest(b: Builder, ctx: Ctx) -> None:
    ok: list[int] = []
    skipped: list[int] = []
    failing: list[tuple[int, str]] = []  # verbose "name (id) ... FAIL" lines
    headers: set[str] = set()  # "FAIL: name (id)" block headers
    dots: list[int] = []  # the quiet runner's progress line (failures are named in the blocks)
    for i, line in enumerate(b.lines):
        m = _UT_RESULT.match(line)
        if m:
            if m.group(2) == "ok":
                ok.append(i)
            elif m.group(2).startswith("skipped") or m.group(2) == "expected failure":
                skipped.append(i)
            else:
                failing.append((i, m.group(1).strip()))
            continue
        if h := re.match(r"^(?:FAIL|ERROR): (.+)$", line):
            headers.add(h.group(1).strip())
            b.must_keep(i)
            b.rewrite(i, _ut_header(line))
        elif re.match(r"^Ran \d+ tests? in", line) or re.match(r"^(FAILED|OK)\b", line):
            b.must_keep(i)
            b.keep(i)
        elif re.match(r"^[.FEsxu]+$", line) and i < 3:
            dots.append(i)
    repeated = []
    for i, name in failing:
        if name in headers:  # its FAIL:/ERROR: block below names it with the traceback
            b.release(i)
            repeated.append(i)
        else:
            b.must_keep(i)
            b.keep(i)
    b.omit(ok, "passed", inline=False)
    b.omit(skipped, "skipped", inline=False)
    b.omit(repeated, "repeated result lines", inline=False)
    b.omit(dots, "progress", inline=False)
    drop_rulers(b)
    python_traceback(b)


_PIP_NOISE = re.compile(
    r"^(?:Looking in (?:indexes|links):|\s+Downloading |\s+Using cached |\s+Obtaining dependency|"
    r"\s+Preparing metadata|\s+Getting requirements|\s+Installing build dependencies|"
    r"\s+Building wheel|\s+Created wheel|\s+Stored in directory|Using pip |"
    r"\s+Found existing installation|\s+Uninstalling |\s+Successfully uninstalled|"
    r"\[notice\]|\s*Attempting uninstall)"
)
_SATISFIED = re.compile(r"^Requirement already satisfied: (\S+?)(?:[<>=!~;].*?)? in \S+(?: \(from [^)]*\))? \(([^)]+)\)")
_COLLECTING = re.compile(r"^Collecting (\S+)")


def pip(b: Builder, ctx: Ctx) -> None:
    if ctx.cmd.sub in {"list", "freeze"}:
        _pip_list(b)
        return
    noise: list[int] = []
    satisfied: list[tuple[int, str]] = []
    collecting: list[tuple[int, str]] = []
    installing: list[int] = []
    for i, line in enumerate(b.lines):
        if _PIP_NOISE.match(line):
            noise.append(i)
            continue
        m = _SATISFIED.match(line)
        if m:
            satisfied.append((i, f"{m.group(1)} {m.group(2)}"))
            continue
        m = _COLLECTING.match(line)
        if m:
            collecting.append((i, m.group(1)))
            continue
        if line.startswith(("Successfully installed", "ERROR", "error:", "WARNING")):
            b.must_keep(i)
            b.keep(i)
        elif line.startswith("Installing collected packages: "):
            installing.append(i)
    if satisfied:
        idxs = [i for i, _ in satisfied]
        b.represent(idxs, "Requirement already satisfied: " + ", ".join(t for _, t in satisfied))
    installed = {
        _pep503(word.rsplit("-", 1)[0])
        for line in b.lines if line.startswith("Successfully installed ")
        for word in line.split()[2:]
    }
    if collecting and all(_pep503(re.split(r"[<>=!~;\[ ]", spec, maxsplit=1)[0]) in installed for _, spec in collecting):
        # "Successfully installed" names every collected package, with the version chosen
        b.omit([i for i, _ in collecting], "Collecting lines", inline=False)
    elif collecting:
        idxs = [i for i, _ in collecting]
        b.represent(idxs, "collected: " + ", ".join(t for _, t in collecting))
    b.omit(noise, "progress", inline=False)
    if installed:  # it names them, with versions
        b.omit(installing, "repeated package list", inline=False)


def _pep503(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pip_list(b: Builder) -> None:
    rows: list[int] = []
    items: list[str] = []
    for i, line in enumerate(b.lines):
        parts = line.split()
        if not parts:
            b.blank(i)
        elif set(line.strip()) <= {"-", " "}:
            b.blank(i)
        elif parts[:2] == ["Package", "Version"]:
            rows.append(i)
        elif len(parts) >= 2 and not line.startswith(" "):
            rows.append(i)
            items.append(f"{parts[0]}=={parts[1]}" + (f" ({' '.join(parts[2:])})" if len(parts) > 2 else ""))
    if items:
        b.represent(rows, f"{len(items)} packages: " + ", ".join(items))
