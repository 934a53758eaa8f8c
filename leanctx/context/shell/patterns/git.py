"""git: status, log, diff, show, branch, push, pull, fetch, commit."""

from __future__ import annotations

import re
from leanctx.context.shell.builder import Builder
from leanctx.context.shell.patterns.common import Ctx
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
_ENTRY = re.compile(r"^\t(?:(" + "|".join(_STATUS_CODES) + r"):\s+)?(.+?)(?:\s+\((?:new commits|modified content|untracked content)[^)]*\))?$")
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
        _log_and_diff(b, oneline=sub == "log" and any(a.startswith("--oneline") or a.startswith("--pretty=oneline") for a in args))
    elif sub == "branch":
        _branch(b)
    elif sub in {"push", "pull", "fetch", "clone", "commit", "merge", "rebase", "checkout", "switch", "stash", "tag", "remote"}:
        _transfer(b)


def _status(b: Builder) -> None:
    section = ""
    entries: dict[str, list[tuple[int, str]]] = {}
    hints: list[int] = []
    branch_lines: list[int] = []
    for i, line in enumerate(b.lines):
        s = line.strip()
        if not s:
            b.blank(i)
        elif line.startswith(("On branch ", "HEAD detached", "Your branch", "  (use \"git pull\"", "and have ")) and not section:
            if line.startswith("  ("):
                hints.append(i)
            else:
                branch_lines.append(i)
        elif s in _SECTIONS:
            section = _SECTIONS[s]
            entries.setdefault(section, [])
            hints.append(i)  # represented by the section label
        elif re.match(r"^\s+\(use ", line) or s.startswith(("no changes added to commit", "nothing added to commit")):
            hints.append(i)
        elif section and (m := _ENTRY.match(line)):
            code = _STATUS_CODES.get(m.group(1) or "", "?" if section == "untracked" else "")
            path = m.group(2)
            b.must_keep(i, path)
            entries[section].append((i, f"{code} {path}".strip() if section != "untracked" else path))
    if branch_lines:
        b.represent(branch_lines, " · ".join(b.lines[i].strip().rstrip(".") for i in branch_lines))
    for sec, items in entries.items():
        if not items:
            continue
        shown = items[:_MAX_LIST]
        b.represent([i for i, _ in shown], f"{sec} ({len(items)}): " + ", ".join(t for _, t in shown))
        if len(items) > _MAX_LIST:
            b.omit([i for i, _ in items[_MAX_LIST:]], f"more {sec} paths")
    # hints and section titles are represented by the compact labels
    b.omit(hints, "git hints", inline=False)


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


_DIFF_META = re.compile(
    r"^(?:index [0-9a-f]+\.\.[0-9a-f]+|(?:new|deleted) file mode|old mode|new mode|similarity index|"
    r"dissimilarity index|rename from|rename to|copy from|copy to|--- |\+\+\+ )"
)
_DATE = re.compile(r"^\w{3} (\w{3}) +(\d{1,2}) [\d:]+ (\d{4})")
_MONTHS = {m: f"{k:02d}" for k, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), 1)}
_MAX_COMMITS = 40
_MAX_CHANGED_PER_FILE = 80
_MAX_ONELINE = 60


def _short_date(raw: str) -> str:
    m = _DATE.match(raw.strip())
    if not m:
        return raw.strip()
    mon, day, year = m.groups()
    return f"{year}-{_MONTHS.get(mon, mon)}-{int(day):02d}"


def _log_and_diff(b: Builder, oneline: bool) -> None:
    i = 0
    n = b.n
    commits = 0
    bodies: list[int] = []
    context: list[int] = []
    meta: list[int] = []
    authors = {re.sub(r"\s*<[^>]*>", "", ln[7:]).strip() for ln in b.lines if ln.startswith("Author:")}
    dates = {_short_date(ln.partition(":")[2]) for ln in b.lines if ln.startswith(("Date:", "AuthorDate:"))}
    one_author = next(iter(authors)) if len(authors) == 1 else ""
    one_date = next(iter(dates)) if len(dates) == 1 else ""
    if sum(1 for ln in b.lines if re.match(r"^commit [0-9a-f]{7,}", ln)) > 1 and (one_author or one_date):
        shared = [f"author {one_author}"] if one_author else []
        shared += [f"date {one_date}"] if one_date else []
        b.note(-1, f"all commits: {', '.join(shared)}")
    else:
        one_author = one_date = ""
    if oneline:
        rows = [k for k in range(n) if b.lines[k].strip()]
        if len(rows) > _MAX_ONELINE:
            b.omit(rows[_MAX_ONELINE:], "older commits")
        return
    while i < n:
        line = b.lines[i]
        if line.startswith("commit ") and re.match(r"^commit [0-9a-f]{7,}", line):
            commits += 1
            j = i + 1
            header = [i]
            author = date = ""
            while j < n and re.match(r"^(Author|AuthorDate|Commit|CommitDate|Date|Merge):", b.lines[j]):
                key, _, val = b.lines[j].partition(":")
                if key == "Author":
                    author = re.sub(r"\s*<[^>]*>", "", val).strip()
                elif key in {"Date", "AuthorDate"}:
                    date = _short_date(val)
                header.append(j)
                j += 1
            msg: list[int] = []
            while j < n and (not b.lines[j].strip() or b.lines[j].startswith("    ")):
                if b.lines[j].strip():
                    msg.append(j)
                else:
                    b.blank(j)
                j += 1
            parts = line.split()
            sha = parts[1][:9]
            deco = " ".join(parts[2:])
            subject = b.lines[msg[0]].strip() if msg else ""
            if commits > _MAX_COMMITS:
                b.omit([*header, *msg], "older commits")
            else:
                who = "" if one_author else f" {author}:"
                when = "" if one_date else f" {date}"
                b.represent([*header, *(msg[:1])], f"{sha}{when}{who} {subject}" + (f" {deco}" if deco else ""))
                if subject:
                    b.must_keep(msg[0], subject)
                bodies.extend(msg[1:])
            i = j
            continue
        if line.startswith("diff --git ") or line.startswith("diff --cc "):
            i = _file_diff(b, i, context, meta)
            continue
        if m := _STAT.match(line):  # --stat: the +/- bar is a scaled drawing of the count
            path, count = m.group(1).strip(), m.group(2).strip()
            b.must_keep(i, path)
            if count.startswith("Bin"):
                b.keep(i, f" {path} {count}")
            else:
                num, _, bar = count.partition(" ")
                b.keep(i, f" {path} {num}{''.join(c for c in '+-' if c in bar)}")
        elif re.match(r"^\s*\d+ files? changed", line):
            b.must_keep(i)
            b.keep(i, line.strip())
        i += 1
    b.omit(bodies, "commit message body lines", inline=False)
    b.omit(meta, "diff metadata lines", inline=False)
    b.omit(context, "unchanged context lines", inline=False)


def _file_diff(b: Builder, i: int, context: list[int], meta: list[int]) -> int:
    n = b.n
    m = re.match(r"^diff --git a/(.+?) b/(.+)$", b.lines[i])
    path = m.group(2) if m else b.lines[i].split()[-1]
    head = [i]
    status = ""
    j = i + 1
    while j < n and _DIFF_META.match(b.lines[j]):
        t = b.lines[j]
        if t.startswith("new file mode"):
            status = "new"
        elif t.startswith("deleted file mode"):
            status = "deleted"
        elif t.startswith("rename from "):
            status = f"renamed from {t[12:]}"
        head.append(j)
        j += 1
    b.must_keep(i, path)
    b.represent([i], f"--- {path}" + (f" ({status})" if status else ""))
    meta.extend(head[1:])
    changed: list[int] = []
    while j < n and not b.lines[j].startswith("diff --") and not re.match(r"^commit [0-9a-f]{7,}", b.lines[j]):
        t = b.lines[j]
        if t.startswith("@@"):
            b.keep(j)
        elif t.startswith(("+", "-")):
            changed.append(j)
        elif t.startswith(("Binary files", "GIT binary patch")):
            b.keep(j)
        elif t.startswith(" ") or t.startswith("\\ No newline") or t == "":
            context.append(j)
        j += 1
    if status == "deleted" and len(changed) > 3:
        b.omit(changed, "content of the deleted file")
    elif len(changed) > _MAX_CHANGED_PER_FILE:
        b.keep_all(changed[: _MAX_CHANGED_PER_FILE - 20])
        b.keep_all(changed[-20:])
        b.omit(changed[_MAX_CHANGED_PER_FILE - 20 : -20], f"changed lines of {path}")
    else:
        b.keep_all(changed)
    return j


def _branch(b: Builder) -> None:
    rows = [i for i in range(b.n) if b.lines[i].strip()]
    verbose = any(re.search(r"\s[0-9a-f]{7,}\s", b.lines[i]) for i in rows)
    for i in rows:
        line = b.lines[i]
        if line.startswith("*"):
            b.must_keep(i, line.strip())
    if verbose:
        for i in rows:
            b.keep(i, squeeze_spaces(b.lines[i]))
        return
    names = [b.lines[i].strip() for i in rows]
    b.represent(rows, ", ".join(names))


_TRANSFER_NOISE = re.compile(
    r"^(?:remote: )?(?:Enumerating objects|Counting objects|Compressing objects|Writing objects|"
    r"Total \d+|Resolving deltas|Unpacking objects|Receiving objects|Delta compression|"
    r"Checking connectivity|Updating files|Filtering content)"
)
_REF = re.compile(r"^\s+(?:[+*!=-] )?\s*(\S+\.\.\.?\S+|\[new (?:branch|tag|ref)\]|\[deleted\]|\[up to date\]|\[rejected\])\s+(\S+)\s+->\s+(\S+)")
_STAT = re.compile(r"^ (\S.*?)\s+\|\s+(\d+ [+-]*|Bin .*)$")
_MODE = re.compile(r"^ (create|delete|rename|copy) mode (?:\d+ )?(.+)$")


def _transfer(b: Builder) -> None:
    noise: list[int] = []
    modes: dict[str, list[tuple[int, str]]] = {}
    stats: list[tuple[int, str]] = []
    for i, line in enumerate(b.lines):
        if _TRANSFER_NOISE.match(line):
            noise.append(i)
        elif m := _REF.match(line):
            b.must_keep(i, f"{m.group(2)} -> {m.group(3)}")
            b.keep(i, squeeze_spaces(line).strip())
        elif m := _MODE.match(line):
            modes.setdefault(m.group(1), []).append((i, m.group(2)))
        elif m := _STAT.match(line):
            stats.append((i, f"{m.group(1).strip()} {m.group(2).strip()}"))
            b.must_keep(i, m.group(1).strip())
        elif re.match(r"^\s*\d+ files? changed", line) or re.match(r"^\[[\w/.-]+ [0-9a-f]+\]", line):
            b.must_keep(i)
            b.keep(i, line.strip())
        elif re.match(r"^(To|From) ", line) or line.startswith(("Fast-forward", "Updating ", "Already up to date")):
            b.keep(i)
    if stats:
        b.represent([i for i, _ in stats], "changed: " + ", ".join(t for _, t in stats))
    for kind, items in modes.items():
        for i, p in items:
            b.must_keep(i, p)
        label = {"create": "created", "delete": "deleted", "rename": "renamed", "copy": "copied"}[kind]
        b.represent([i for i, _ in items], f"{label}: " + ", ".join(p for _, p in items))
    b.omit(noise, "transfer progress", inline=False)
