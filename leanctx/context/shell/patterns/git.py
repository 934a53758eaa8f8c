"""git: status, branch, and the commands that move commits (push, pull, fetch, commit, merge,
rebase, cherry-pick...); log, diff and show are in :mod:`git_diff`.

A merge, rebase, cherry-pick, revert or stash that stops on conflicts names each conflicting
path on a ``CONFLICT (<kind>): ...`` line, every one of which is kept, as is the line that says
the merge failed; the ``Auto-merging <path>`` lines before them are omitted and counted."""

from __future__ import annotations

import re

from leanctx.context.shell.builder import Builder
from leanctx.context.shell.patterns.common import Ctx
from leanctx.context.shell.patterns.git_diff import STAT, log_and_diff, stat_count
from leanctx.context.shell.text import squeeze_spaces

__all__ = ["git"]

_STATUS_CODES = {
    "modified": "M", "new file": "A", "deleted": "D", "renamed": "R", "copied": "C",
    "typechange": "T", "both modified": "UU", "both added": "AA", "both deleted": "DD",
    "added by us": "AU", "added by them": "UA", "deleted by us": "DU", "deleted by them": "UD",
}
_SECTIONS = {
    "Changes to be committed:": "staged",
    "Changes not staged for commit:": "unstaged",
    "Untracked files:": "untracked",
    "Unmerged paths:": "unmerged",
    "Ignored files:": "ignored",
}
# git's advice lines (advice.statusHints): a fixed sentence per situation, no path or count in it
_ADVICE = re.compile(
    r'^\s+\((?:use "git [\w/ -]+(?: <[\w.]+>\.\.\.)?"(?: and/or "git [\w -]+")? to [\w ,/-]+'
    r'|fix conflicts and (?:then )?run "git [\w -]+"|all conflicts fixed: run "git [\w -]+"'
    r'|commit or discard the untracked or modified content in submodules)\)$'
)
# an entry; a submodule's state ("(new commits, modified content)") is kept with its path
_ENTRY = re.compile(
    r"^\t(?:(" + "|".join(_STATUS_CODES) + r"):\s+)?(.+?)"
    r"(\s+\((?:new commits|modified content|untracked content)(?:, (?:new commits|modified content|untracked content))*\))?$"
)
_MAX_LIST = 40


def git(b: Builder, ctx: Ctx) -> None:
    sub = ctx.cmd.sub
    args = ctx.cmd.args
    if sub == "status":
        if any(a in {"-s", "--short", "--porcelain"} or a.startswith("--porcelain") for a in args):
            _status_short(b)
        else:
            _status(b)
    elif sub in {"diff", "show", "log"}:
        oneline = sub == "log" and any(a.startswith(("--oneline", "--pretty=oneline")) for a in args)
        log_and_diff(b, args, oneline)
    elif sub == "branch":
        _branch(b)
    elif sub in _MOVES:
        _conflicts(b)
        _transfer(b)


def _status(b: Builder) -> None:
    section = ""
    entries: dict[str, list[tuple[int, str]]] = {}
    hints: list[int] = []
    advice: list[int] = []  # git's fixed "(use "git ..." to ...)" lines
    titles: dict[str, int] = {}
    branch_lines: list[int] = []
    for i, line in enumerate(b.lines):
        s = line.strip()
        if not s:
            b.blank(i)
        elif _ADVICE.match(line):
            advice.append(i)
        elif not section and (
            line.startswith(("On branch ", "HEAD detached", "Your branch"))
            or (branch_lines and branch_lines[-1] == i - 1 and b.lines[i - 1].endswith(",") and line[:1] != " ")
        ):  # the branch, and its state sentence (which git may wrap onto a second line)
            branch_lines.append(i)
        elif s in _SECTIONS:
            section = _SECTIONS[s]
            entries.setdefault(section, [])
            titles[section] = i  # represented by the section's label
        elif re.match(r"^\s+\(use ", line) or s.startswith(("no changes added to commit", "nothing added to commit")):
            hints.append(i)
        elif section and (m := _ENTRY.match(line)):
            code = _STATUS_CODES.get(m.group(1) or "", "?" if section == "untracked" else "")
            path = m.group(2) + (m.group(3) or "")  # a submodule's "(new commits)" is part of its state
            b.must_keep(i, path)
            entries[section].append((i, f"{code} {path}".strip() if section != "untracked" else path))
    if branch_lines:
        sentences: list[str] = []
        for i in branch_lines:  # a line ending in "," goes on in the next one
            if sentences and sentences[-1].endswith(","):
                sentences[-1] += " " + b.lines[i].strip()
            else:
                sentences.append(b.lines[i].strip())
        state = ", ".join(_branch_state(x) for x in sentences)
        b.must_keep(branch_lines[0], state)
        b.represent(branch_lines, state)
    for sec, items in entries.items():
        if not items:
            continue
        shown = items[:_MAX_LIST]
        head = [titles[sec]] if sec in titles else []
        b.represent([*head, *(i for i, _ in shown)], f"{sec} ({len(items)}): " + ", ".join(t for _, t in shown))
        if len(items) > _MAX_LIST:
            b.omit([i for i, _ in items[_MAX_LIST:]], f"more {sec} paths")
    b.boilerplate(advice)
    b.omit(hints, "git hints", inline=False)


_DIVERGED = re.compile(
    r"^Your branch and (.+) have diverged, and have (\d+) and (\d+) different commits? each, respectively$"
)


def _branch_state(s: str) -> str:
    """One branch sentence of ``git status`` as its facts: ``On branch main`` → ``branch
    main``; ``Your branch is ahead of 'o/m' by 2 commits.`` → ``ahead of 'o/m' by 2 commits``;
    ``Your branch and 'o/x' have diverged, and have 2 and 3 different commits each,
    respectively.`` → ``diverged from 'o/x': 2 and 3 different commits each``."""
    s = s.strip().rstrip(".")
    if s.startswith("On branch "):
        return "branch " + s[10:]
    if m := _DIVERGED.match(s):
        return f"diverged from {m.group(1)}: {m.group(2)} and {m.group(3)} different commits each"
    if s.startswith("Your branch "):
        return re.sub(r"^Your branch (?:is )?", "", s)
    return s


def _status_short(b: Builder) -> None:
    groups: dict[str, list[tuple[int, str]]] = {}
    for i, line in enumerate(b.lines):
        if line.startswith("## "):
            b.keep(i)
        elif len(line) > 3 and line[2] == " ":
            code = line[:2].strip() or "?"
            b.must_keep(i, line[3:])
            groups.setdefault(code, []).append((i, line[3:]))
    for code, items in groups.items():
        b.represent([i for i, _ in items], f"{code}: " + ", ".join(p for _, p in items))


def _branch(b: Builder) -> None:
    rows = [i for i in range(b.n) if b.lines[i].strip()]
    verbose = any(re.search(r"\s[0-9a-f]{7,}\s", b.lines[i]) for i in rows)
    for i in rows:
        line = b.lines[i]
        if line.startswith("*"):
            b.must_keep(i, line.strip())
    if verbose:
        _branch_verbose(b, rows)
        return
    names = [b.lines[i].strip() for i in rows]
    b.represent(rows, ", ".join(names))


_BRANCH_V = re.compile(r"^([*+]?)\s+(\S+)\s+([0-9a-f]{7,40})\s(?:\[([^\]]+)\]\s)?(.*)$")


def _branch_verbose(b: Builder, rows: list[int]) -> None:
    """``git branch -v/-vv``: branches pointing at the same commit share one line with its
    hash and subject (printed once), each branch with its upstream and ahead/behind state."""
    groups: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for i in rows:
        m = _BRANCH_V.match(b.lines[i])
        if not m:
            b.keep(i, squeeze_spaces(b.lines[i]))
            continue
        mark, name, sha, upstream, subject = m.groups()
        label = f"{mark} {name}" if mark else name
        if mark:
            b.must_keep(i, label)
        groups.setdefault((sha, subject.strip()), []).append((i, label + (f" [{upstream}]" if upstream else "")))
    for (sha, subject), items in groups.items():
        if len(items) == 1:
            i, label = items[0]
            b.keep(i, f"{label} {sha} {subject}")
        else:
            b.represent([i for i, _ in items], f"{sha} {subject}: " + ", ".join(t for _, t in items))


_MOVES = {
    "push", "pull", "fetch", "clone", "commit", "merge", "rebase", "cherry-pick", "revert", "am", "checkout",
    "switch", "restore", "stash", "tag", "remote",
}
_CONFLICT = re.compile(r"^CONFLICT \([^)]+\): ")  # content, add/add, modify/delete, rename/delete...
_STOPPED = re.compile(r"^Automatic merge failed; |^(?:error: )?[Cc]ould not apply [0-9a-f]+\.\.\. ")
# "error: Your local changes to the following files would be overwritten by merge:" + tab-indented paths
_PATH_LIST = re.compile(
    r"\bthe following (?:untracked working tree )?files would be (?:overwritten|removed)\b", re.IGNORECASE
)


def _conflicts(b: Builder) -> None:
    """The conflicts a merge (pull, rebase, cherry-pick, revert, stash pop) stopped on: every
    ``CONFLICT`` line and the line saying it stopped are kept; the ``Auto-merging <path>`` lines
    (a content conflict's path is on its ``CONFLICT`` line) are omitted and counted. The paths
    git refuses to overwrite are kept too."""
    merging: list[int] = []
    listing = False
    for i, line in enumerate(b.lines):
        if _CONFLICT.match(line) or _STOPPED.match(line):
            b.must_keep(i)
            b.keep(i)
        elif line.startswith("Auto-merging "):
            merging.append(i)
        elif listing and line.startswith("\t"):
            b.must_keep(i, line.strip())
            b.keep(i)
            continue
        listing = bool(_PATH_LIST.search(line))
    b.omit(merging, "Auto-merging lines", inline=False)


_TRANSFER_NOISE = re.compile(
    r"^(?:remote: )?(?:Enumerating objects|Counting objects|Compressing objects|Writing objects|"
    r"Total \d+|Resolving deltas|Unpacking objects|Receiving objects|Delta compression|"
    r"Checking connectivity|Updating files|Filtering content)"
)
_REF = re.compile(r"^\s+(?:[+*!=-] )?\s*(\S+\.\.\.?\S+|\[new (?:branch|tag|ref)\]|\[deleted\]|\[up to date\]|\[rejected\]|branch|tag)\s+(\S+)\s+->\s+(\S+)")
_MODE = re.compile(r"^ (create|delete|rename|copy) mode (?:(\d+) )?(.+)$")


def _transfer(b: Builder) -> None:
    noise: list[int] = []
    modes: dict[str, list[tuple[int, str, str]]] = {}  # kind -> (line, path, " mode N" or "")
    stats: list[tuple[int, str]] = []  # (line, path)
    counts: list[str] = []
    for i, line in enumerate(b.lines):
        if _TRANSFER_NOISE.match(line):
            noise.append(i)
        elif m := _REF.match(line):
            b.must_keep(i, f"{m.group(2)} -> {m.group(3)}")
            b.keep(i, re.sub(r"\s+", " ", line.strip()))  # column padding carries nothing
        elif m := _MODE.match(line):
            # a mode other than a plain file's (100755: executable, 120000: symlink) is stated
            mode = "" if m.group(2) in {None, "100644"} else f" mode {m.group(2)}"
            modes.setdefault(m.group(1), []).append((i, m.group(3), mode))
        elif m := STAT.match(line):
            stats.append((i, m.group(1).strip()))
            counts.append(m.group(2).strip())
            b.must_keep(i, m.group(1).strip())
        elif re.match(r"^\s*\d+ files? changed", line) or re.match(r"^\[[\w/.-]+ [0-9a-f]+\]", line):
            b.must_keep(i)
            b.keep(i, line.strip())
        elif re.match(r"^(To|From) ", line) or line.startswith(("Fast-forward", "Updating ", "Already up to date")):
            b.keep(i)
    # a "create/delete mode" line names a path the --stat list already shows: it becomes a
    # mark on that entry (+ created, - deleted) instead of a second list of the same paths
    stat_at = {path: k for k, (_, path) in enumerate(stats)}
    mark = {"create": "new", "delete": "deleted"}
    rest: dict[str, list[tuple[int, str]]] = {}
    said: list[int] = []
    texts = [f"{path} {stat_count(c)}" for (_, path), c in zip(stats, counts)]
    for kind, items in modes.items():
        for i, p, mode in items:
            b.must_keep(i, p)
            k = stat_at.get(p)
            if k is not None and kind in mark:
                texts[k] += f" ({mark[kind]}{mode})"
                said.append(i)
            else:
                rest.setdefault(kind, []).append((i, p + (f" ({mode.strip()})" if mode else "")))
    if stats:
        b.represent([i for i, _ in stats] + said, "changed: " + ", ".join(texts))
    for kind, entries in rest.items():
        label = {"create": "created", "delete": "deleted", "rename": "renamed", "copy": "copied"}[kind]
        b.represent([i for i, _ in entries], f"{label}: " + ", ".join(p for _, p in entries))
    b.omit(noise, "transfer progress", inline=False)
