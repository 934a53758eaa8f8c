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
        _log_and_diff(b, oneline=sub == "log" and any(a.startswith("--oneline") or a.startswith("--pretty=oneline") for a in args))
    elif sub == "branch":
        _branch(b)
    elif sub in {"push", "pull", "fetch", "clone", "commit", "merge", "rebase", "checkout", "switch", "stash", "tag", "remote"}:
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
            if commits > _MAX_COMMITS:  # the older commits, whole (with any diff or stat): one marker
                older = [k for k in range(i, n) if b.lines[k].strip()]
                for k in range(i, n):
                    if not b.lines[k].strip():
                        b.blank(k)
                n_older = sum(1 for k in older if re.match(r"^commit [0-9a-f]{7,}", b.lines[k]))
                b.omit(older, f"{n_older} older commits")
                break
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
            b.keep(i, f" {path} {_stat_count(count)}")
        elif re.match(r"^\s*\d+ files? changed", line):
            b.must_keep(i)
            b.keep(i, line.strip())
        i += 1
    b.omit(bodies, "message bodies", inline=False)
    b.omit(meta, "index lines", inline=False)
    b.omit(context, "context lines", inline=False)


def _file_diff(b: Builder, i: int, context: list[int], meta: list[int]) -> int:
    n = b.n
    m = re.match(r"^diff --git a/(.+?) b/(.+)$", b.lines[i])
    path = m.group(2) if m else b.lines[i].split()[-1]
    said: list[int] = []  # header lines whose content the compact header line states
    labels: list[str] = []
    j = i + 1
    while j < n and _DIFF_META.match(b.lines[j]):
        t = b.lines[j]
        if m := re.match(r"^(new|deleted) file mode (\d+)$", t):
            labels.append(m.group(1) + ("" if m.group(2) == "100644" else f" mode {m.group(2)}"))
            said.append(j)
        elif m := re.match(r"^(rename|copy) from (.+)$", t):
            labels.append(f"{'renamed' if m.group(1) == 'rename' else 'copied'} from {m.group(2)}")
            said.append(j)
        elif m := re.match(r"^(?:old|new) mode (\d+)$", t):
            labels.append(f"{'old' if t.startswith('old') else 'new'} mode {m.group(1)}")
            said.append(j)
        elif m := re.match(r"^(?:dis)?similarity index (\d+%)$", t):
            labels.append(f"{'dissimilarity' if t.startswith('dis') else 'similarity'} {m.group(1)}")
            said.append(j)
        elif t.startswith(("rename to ", "copy to ", "--- ", "+++ ")):
            # the path (or /dev/null for a new/deleted file) is the header's, stated above
            said.append(j)
        else:  # index <blob>..<blob> [mode]: blob ids, stated nowhere else
            meta.append(j)
        j += 1
    status = ", ".join(labels)
    b.must_keep(i, path)
    b.represent([i, *said], f"--- {path}" + (f" ({status})" if status else ""))
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
    if status.startswith("deleted") and len(changed) > 3:
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


_TRANSFER_NOISE = re.compile(
    r"^(?:remote: )?(?:Enumerating objects|Counting objects|Compressing objects|Writing objects|"
    r"Total \d+|Resolving deltas|Unpacking objects|Receiving objects|Delta compression|"
    r"Checking connectivity|Updating files|Filtering content)"
)
_REF = re.compile(r"^\s+(?:[+*!=-] )?\s*(\S+\.\.\.?\S+|\[new (?:branch|tag|ref)\]|\[deleted\]|\[up to date\]|\[rejected\]|branch|tag)\s+(\S+)\s+->\s+(\S+)")
_STAT = re.compile(r"^ (\S.*?)\s+\|\s+(\d+(?: [+-]*)?|Bin .*)$")  # "| 0": an empty file, no bar
_MODE = re.compile(r"^ (create|delete|rename|copy) mode (?:(\d+) )?(.+)$")


def _stat_count(count: str) -> str:
    """``12 +++--`` → ``12+-``: the bar is a scaled drawing of the count; which signs it has is
    the information (``Bin 0 -> 12 bytes`` is kept as it is)."""
    if count.startswith("Bin"):
        return count
    num, _, bar = count.partition(" ")
    return num + "".join(c for c in "+-" if c in bar)


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
        elif m := _STAT.match(line):
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
    texts = [f"{path} {_stat_count(c)}" for (_, path), c in zip(stats, counts)]
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
