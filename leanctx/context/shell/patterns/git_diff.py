"""git diff, show and log: commit headers, per-file diffs and ``--stat`` rows.

Which lines of a hunk are changes depends on the form of the diff:

* unified (``@@ -a,b +c,d @@``): one prefix column, ``+``/``-`` a change, a space context. The
  header's counts say where the hunk ends: what follows it (the blank line ``git log -p``
  writes before the next commit, ``* Unmerged path x``) is not part of it;
* combined (``diff --cc``/``diff --combined``, hunks ``@@@ … @@@``: a merge commit, or a
  conflict in the work tree): one prefix column per parent, N = the number of ``@`` minus 1;
  a line is a change when any of its first N columns is ``+`` or ``-``;
* word diffs. Plain (``--word-diff``): no prefix column; a changed line holds ``[-removed-]``
  or ``{+added+}``, any other line is context. Porcelain (``--word-diff=porcelain``): each
  piece of a line on a row of its own prefixed `` ``/``-``/``+``, each line ended by a ``~``
  row: a line with a ``-`` or ``+`` row is a change. Colour (``--word-diff=color``,
  ``--color-words``): the changed words are only coloured. While the colours are in the raw
  output, :mod:`git_color_words` rewrites them as plain markers before they are stripped (and
  adds ``--word-diff=plain`` to the arguments), and the diff is read as a plain one; when they
  are not (git wrote no colours, or they could not be told apart) no line can be said to be
  context: every line is kept.

The form is told by the command's flags, else by the hunks: a unified hunk's lines all carry
a prefix and add up to its header's counts; a word diff's do not.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from leanctx.context.shell.builder import Builder

__all__ = ["STAT", "detect_word", "is_boundary", "log_and_diff", "stat_count", "unified_end", "word_mode"]

_DIFF_META = re.compile(
    r"^(?:index [0-9a-f]+(?:,[0-9a-f]+)*\.\.[0-9a-f]+|(?:new|deleted) file mode|old mode|new mode|"
    r"mode \d+(?:,\d+)+\.\.\d+$|similarity index|dissimilarity index|rename from|rename to|copy from|copy to|"
    r"--- |\+\+\+ )"
)
_COMMIT = re.compile(r"^commit [0-9a-f]{7,}")
_UNIFIED = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_WORD_MARK = re.compile(r"\[-.*?-\]|\{\+.*?\+\}")
_UNMERGED = re.compile(r"^\* Unmerged path (.+)$")
_DATE = re.compile(r"^\w{3} (\w{3}) +(\d{1,2}) [\d:]+ (\d{4})")
_MONTHS = {
    m: f"{k:02d}"
    for k, m in enumerate(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], 1)
}
_MAX_COMMITS = 40
_MAX_CHANGED_PER_FILE = 80
_MAX_ONELINE = 60
STAT = re.compile(r"^ (\S.*?)\s+\|\s+(\d+(?: [+-]*)?|Bin .*)$")  # "| 0": an empty file, no bar


def stat_count(count: str) -> str:
    """``12 +++--`` → ``12+-``: the bar is a scaled drawing of the count; which signs it has is
    the information (``Bin 0 -> 12 bytes`` is kept as it is)."""
    if count.startswith("Bin"):
        return count
    num, _, bar = count.partition(" ")
    return num + "".join(c for c in "+-" if c in bar)


def word_mode(args: Sequence[str]) -> str:
    """The word diff the flags ask for: ``plain``, ``porcelain``, ``color`` or ``""`` (none)."""
    mode = ""
    for a in args:
        if a == "--word-diff":
            mode = "plain"
        elif a.startswith("--word-diff="):
            value = a.partition("=")[2]
            mode = "" if value == "none" else value
        elif a.startswith("--color-words"):
            mode = "color"
        elif a.startswith("--word-diff-regex") and not mode:  # implies --word-diff
            mode = "plain"
    return mode


def _short_date(raw: str) -> str:
    m = _DATE.match(raw.strip())
    if not m:
        return raw.strip()
    mon, day, year = m.groups()
    return f"{year}-{_MONTHS.get(mon, mon)}-{int(day):02d}"


def is_boundary(t: str) -> bool:
    """A line that ends a hunk's body: the next hunk, file or commit."""
    return t.startswith(("@@", "diff --")) or bool(_COMMIT.match(t))


def unified_end(lines: Sequence[str], h: int) -> int | None:
    """Where the unified hunk whose header is line ``h`` ends (the index after its last line),
    by the header's counts; ``None`` when its lines do not make a unified hunk (a word diff).
    A hunk cut short by the end of the output (``git diff | head``) ends there."""
    m = _UNIFIED.match(lines[h])
    if not m:
        return None
    old, new = (1 if g is None else int(g) for g in m.groups())
    j, n = h + 1, len(lines)
    while old > 0 or new > 0:
        if j >= n:
            return n
        t = lines[j]
        c = t[:1]
        if c == "-":
            old -= 1
        elif c == "+":
            new -= 1
        elif c == " " or not t:
            old, new = old - 1, new - 1
        elif c != "\\":
            return None
        if old < 0 or new < 0:
            return None
        j += 1
    while j < n and lines[j].startswith("\\"):
        j += 1
    return j


def detect_word(lines: Sequence[str]) -> str:
    """The word diff an output holds when the flags do not say: ``""`` when every unified hunk
    is a unified hunk; else ``porcelain`` (``~`` rows), ``plain`` (``[-…-]``/``{+…+}``) or,
    with neither, ``color`` (the colours that told the changes apart were stripped)."""
    word = False
    porcelain = plain = False
    for h, t in enumerate(lines):
        if not t.startswith("@@ ") or unified_end(lines, h) is not None:
            continue
        word = True
        j = h + 1
        while j < len(lines) and not is_boundary(lines[j]):
            porcelain = porcelain or lines[j] == "~"
            plain = plain or bool(_WORD_MARK.search(lines[j]))
            j += 1
    if not word:
        return ""
    return "porcelain" if porcelain else "plain" if plain else "color"


def log_and_diff(b: Builder, args: Sequence[str], oneline: bool) -> None:
    i = 0
    n = b.n
    commits = 0
    bodies: list[int] = []
    context: list[int] = []
    meta: list[int] = []
    word = word_mode(args) or detect_word(b.lines)
    authors = {re.sub(r"\s*<[^>]*>", "", ln[7:]).strip() for ln in b.lines if ln.startswith("Author:")}
    dates = {_short_date(ln.partition(":")[2]) for ln in b.lines if ln.startswith(("Date:", "AuthorDate:"))}
    one_author = next(iter(authors)) if len(authors) == 1 else ""
    one_date = next(iter(dates)) if len(dates) == 1 else ""
    if sum(1 for ln in b.lines if _COMMIT.match(ln)) > 1 and (one_author or one_date):
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
        if line.startswith("commit ") and _COMMIT.match(line):
            commits += 1
            if commits > _MAX_COMMITS:  # the older commits, whole (with any diff or stat): one marker
                older = [k for k in range(i, n) if b.lines[k].strip()]
                for k in range(i, n):
                    if not b.lines[k].strip():
                        b.blank(k)
                n_older = sum(1 for k in older if _COMMIT.match(b.lines[k]))
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
        if line.startswith(("diff --git ", "diff --cc ", "diff --combined ")):
            i = _file_diff(b, i, context, meta, word)
            continue
        if m := STAT.match(line):  # --stat: the +/- bar is a scaled drawing of the count
            path, count = m.group(1).strip(), m.group(2).strip()
            b.must_keep(i, path)
            b.keep(i, f" {path} {stat_count(count)}")
        elif re.match(r"^\s*\d+ files? changed", line):
            b.must_keep(i)
            b.keep(i, line.strip())
        i += 1
    b.omit(bodies, "message bodies", inline=False)
    b.omit(meta, "index lines", inline=False)
    b.omit(context, "context lines", inline=False)


def _header_label(t: str) -> str | None:
    """What a file header line (``new file mode 100755``, ``rename from x``...) states, for the
    compact header; ``""`` for a line whose content the compact header's path states;
    ``None`` for an ``index`` line (blob ids, stated nowhere else)."""
    if m := re.match(r"^(new|deleted) file mode ([\d,]+)$", t):
        modes = m.group(2)
        return m.group(1) + ("" if set(modes.split(",")) == {"100644"} else f" mode {modes}")
    if m := re.match(r"^(rename|copy) from (.+)$", t):
        return f"{'renamed' if m.group(1) == 'rename' else 'copied'} from {m.group(2)}"
    if m := re.match(r"^(old|new) mode (\d+)$", t):
        return f"{m.group(1)} mode {m.group(2)}"
    if m := re.match(r"^mode ([\d,]+)\.\.(\d+)$", t):  # a combined diff's modes: parents..result
        return f"mode {m.group(1)}..{m.group(2)}"
    if m := re.match(r"^(?:dis)?similarity index (\d+%)$", t):
        return f"{'dissimilarity' if t.startswith('dis') else 'similarity'} {m.group(1)}"
    if t.startswith(("rename to ", "copy to ", "--- ", "+++ ")):
        return ""  # the path (or /dev/null for a new/deleted file) is the header's, stated above
    return None


def _file_diff(b: Builder, i: int, context: list[int], meta: list[int], word: str) -> int:
    n = b.n
    m = re.match(r"^diff --git a/(.+?) b/(.+)$", b.lines[i])
    if m:
        path = m.group(2)
    elif b.lines[i].startswith("diff --git "):  # --no-prefix, or a path with " b/" in it
        path = b.lines[i].split()[-1]
    else:  # diff --cc <path>, diff --combined <path>
        path = b.lines[i].split(" ", 2)[2]
    said: list[int] = []  # header lines whose content the compact header line states
    labels: list[str] = []
    j = i + 1
    while j < n and _DIFF_META.match(b.lines[j]):
        label = _header_label(b.lines[j])
        if label is None:
            meta.append(j)
        else:
            said.append(j)
            if label:
                labels.append(label)
        j += 1
    status = ", ".join(labels)
    b.must_keep(i, path)
    b.represent([i, *said], f"--- {path}" + (f" ({status})" if status else ""))
    changed: list[int] = []
    while j < n and not b.lines[j].startswith("diff --") and not _COMMIT.match(b.lines[j]):
        t = b.lines[j]
        if t.startswith("@@"):
            b.keep(j)
            j = _hunk(b, j, word, changed, context)
            continue
        if t.startswith(("Binary files", "GIT binary patch")):
            b.keep(j)
        elif u := _UNMERGED.match(t):
            b.must_keep(j, u.group(1))
            b.keep(j)
        j += 1
    if status.startswith("deleted") and len(changed) > 3:
        b.omit(changed, "content of the deleted file")
    elif len(changed) > _MAX_CHANGED_PER_FILE:
        b.keep_all(changed[: _MAX_CHANGED_PER_FILE - 20])
        b.keep_all(changed[-20:])
        what = "lines" if word == "color" else "changed lines"  # colour: changes not told apart
        b.omit(changed[_MAX_CHANGED_PER_FILE - 20 : -20], f"{what} of {path}")
    else:
        b.keep_all(changed)
    return j


def _hunk(b: Builder, h: int, word: str, changed: list[int], context: list[int]) -> int:
    """Sort the lines of the hunk whose header is line ``h`` into ``changed`` and ``context``;
    returns the index after its last line (what follows before the next hunk, file or commit,
    such as the blank line ``git log -p`` writes before a commit, is left to the caller)."""
    lines = b.lines
    end = h + 1
    while end < b.n and not is_boundary(lines[end]):
        end += 1
    at = len(lines[h]) - len(lines[h].lstrip("@"))
    if at >= 3:  # combined: one prefix column per parent
        cols = at - 1
        k = h + 1
        while k < end and (len(lines[k]) >= cols and set(lines[k][:cols]) <= {" ", "+", "-"}
                           or lines[k].startswith("\\")):
            prefix = lines[k][:cols]
            if lines[k].startswith("\\"):  # "\ No newline at end of file": goes with the line above
                (changed if changed and changed[-1] == k - 1 else context).append(k)
            else:
                (changed if "+" in prefix or "-" in prefix else context).append(k)
            k += 1
        return k
    if word == "plain":
        stop = max((k + 1 for k in range(h + 1, end) if lines[k]), default=h + 1)
        for k in range(h + 1, stop):  # the blank rows after the last line: a separator
            (changed if _WORD_MARK.search(lines[k]) else context).append(k)
        return stop
    if word == "porcelain":
        group: list[int] = []
        for k in range(h + 1, end):
            group.append(k)
            if lines[k] == "~" or k == end - 1:
                is_change = any(lines[g].startswith(("+", "-")) for g in group)
                (changed if is_change else context).extend(group)
                group = []
        return end
    if word == "color":  # the colours told changes from context; without them, nothing can
        changed.extend(k for k in range(h + 1, end) if lines[k])
        return end
    stop = min(unified_end(lines, h) or end, end)
    prev = context
    for k in range(h + 1, stop):
        t = lines[k]
        if t.startswith(("+", "-")):
            prev = changed
        elif t.startswith(" ") or not t:
            prev = context
        elif not t.startswith("\\"):  # not a hunk's line (a header without counts): left pending
            continue
        # "\ No newline at end of file" qualifies the line above it: it goes with that line
        prev.append(k)
    return stop
