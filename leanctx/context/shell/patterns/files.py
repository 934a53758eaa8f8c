"""Listings: ls, tree, find, fd. Names are kept; layout, padding and repeated prefixes are not."""

from __future__ import annotations

import os
import re
from collections import defaultdict

from leanctx.context.shell.builder import Builder
from leanctx.context.shell.patterns.common import Ctx

__all__ = ["NOISE_DIRS", "find", "ls", "tree"]

NOISE_DIRS = {"__pycache__", "node_modules", ".git", ".mypy_cache", ".pytest_cache", ".ruff_cache",
              ".tox", ".venv", "venv", "target", ".next", "dist", "build", ".gradle", ".idea"}
_LS_LONG = re.compile(
    r"^([bcdlps-][rwxsStT-]{9}[.@+]?)\s+\d+\s+\S+\s+\S+\s+(\d[\d,]*|\d+,\s*\d+)\s+"
    r"(\w{3}\s+\d{1,2}\s+(?:\d{1,2}:\d{2}|\d{4})|\d{4}-\d{2}-\d{2}(?:\s+[\d:.]+(?:\s+[+-]\d{4})?)?)\s+(.+)$"
)
_MAX_PER_DIR = 60


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "K", "M", "G", "T"):
        if size < 1024 or unit == "T":
            return f"{size:.0f}{unit}" if unit == "B" or size >= 10 else f"{size:.1f}{unit}"
        size /= 1024
    return f"{n}B"  # pragma: no cover


def ls(b: Builder, ctx: Ctx) -> None:
    block: list[int] = []
    long_rows: list[tuple[int, str]] = []
    plain: list[tuple[int, str]] = []

    def flush() -> None:
        if long_rows:
            dirs = [t for _, t in long_rows if t.endswith("/")]
            files = [t for _, t in long_rows if not t.endswith("/")]
            text = []
            if dirs:  # the label says they are directories: no trailing "/" on each
                text.append(f"dirs ({len(dirs)}): " + ", ".join(d[:-1] for d in dirs))
            if files:
                text.append(f"files ({len(files)}): " + ", ".join(files))
            b.represent([i for i, _ in long_rows] + block, "\n".join(text))
            note = "ls -l columns mode/links/owner/group/date dropped"
            if note not in b.notes:
                b.notes.append(note)
        if plain:
            b.represent([i for i, _ in plain], ", ".join(t for _, t in plain))
        long_rows.clear()
        plain.clear()
        block.clear()

    root = ""  # the first "dir:" header of ls -R; later headers are shown relative to it
    noisy: list[int] = []  # lines of a __pycache__/node_modules/... block of ls -R
    in_noise = ""
    for i, line in enumerate(b.lines):
        if not line.strip():
            b.blank(i)
            continue
        if line.endswith(":") and not _LS_LONG.match(line):  # "dir:" header of ls -R / several dirs
            flush()
            path = line[:-1]
            below = path[len(root.rstrip("/")) + 1 :] if root and path.startswith(root.rstrip("/") + "/") else ""
            in_noise = next((p for p in below.split("/") if p in NOISE_DIRS), "")  # only below what was listed
            if in_noise:
                noisy.append(i)
                continue
            if not root:
                root = path
                b.keep(i)
            elif path.startswith(root.rstrip("/") + "/"):
                rel = path[len(root.rstrip("/")) + 1 :]
                b.must_keep(i, f"{rel}:")
                b.keep(i, f"./{rel}:")
            else:
                b.keep(i)
            continue
        if in_noise:
            noisy.append(i)
            continue
        if re.match(r"^total \d", line):
            block.append(i)
            continue
        m = _LS_LONG.match(line)
        if m:
            mode, size, _, name = m.groups()
            if name in {".", ".."}:
                block.append(i)
                continue
            if mode.startswith("d"):
                long_rows.append((i, f"{name}/"))
            elif mode.startswith("l"):
                long_rows.append((i, name))
            else:
                sz = int(size.replace(",", "")) if size.replace(",", "").isdigit() else 0
                long_rows.append((i, f"{name} {_human(sz)}"))
        else:
            plain.append((i, line.strip()))
    flush()
    if noisy:
        kinds = sorted({p for i in noisy if b.lines[i].endswith(":")
                        for p in b.lines[i][len(root.rstrip("/")) + 1 : -1].split("/") if p in NOISE_DIRS})
        b.omit(noisy, f"lines of {', '.join(k + '/' for k in kinds)} listings", inline=False)


_TREE = re.compile(r"^((?:(?:│|\|)\s{2,3}|\s{4})*)(?:├──|└──|\|--|`--)\s?(.*)$")


def tree(b: Builder, ctx: Ctx) -> None:
    """Rebuild the hierarchy and print one line per directory: ``dir/: a, b, sub/``."""
    children: dict[str, list[tuple[int, str]]] = defaultdict(list)
    stack: list[str] = []
    root = ""
    for i, line in enumerate(b.lines):
        m = _TREE.match(line)
        if not m:
            if not line.strip():
                b.blank(i)
            elif re.match(r"^\d+ director(?:y|ies)(?:, \d+ files?)?$", line.strip()):
                b.must_keep(i)
                b.keep(i)
            elif not root and not children:
                root = line.strip()
                b.keep(i)
            continue
        depth = len(m.group(1).replace("│", " ").replace("|", " ")) // 4
        name = m.group(2)
        del stack[depth:]
        parent = "/".join(stack)
        is_dir = i + 1 < b.n and (_TREE.match(b.lines[i + 1]) is not None) and (
            len(_TREE.match(b.lines[i + 1]).group(1).replace("│", " ").replace("|", " ")) // 4 > depth  # type: ignore[union-attr]
        )
        children[parent].append((i, name + ("/" if is_dir else "")))
        stack.append(name)
    _emit_dirs(b, children)


def _emit_dirs(b: Builder, children: dict[str, list[tuple[int, str]]]) -> None:
    for parent in sorted(children, key=lambda p: min(i for i, _ in children[p])):
        items = children[parent]
        parts = parent.split("/") if parent else []
        if any(p in NOISE_DIRS for p in parts[:-1]):
            continue  # counted by the noise directory's own line
        if parts and parts[-1] in NOISE_DIRS:
            nested = [i for p, its in children.items() if p == parent or p.startswith(parent + "/") for i, _ in its]
            b.omit(nested, f"entries under {parts[-1]}/ dirs", inline=False)
            continue
        shown, extra = items[:_MAX_PER_DIR], items[_MAX_PER_DIR:]
        label = f"{parent}/: " if parent else "./: "
        b.represent([i for i, _ in shown], label + ", ".join(t for _, t in shown))
        if extra:
            b.omit([i for i, _ in extra], f"more entries of {parent or '.'}/")


def find(b: Builder, ctx: Ctx) -> None:
    """find / fd: paths grouped by directory under their common prefix."""
    paths: list[tuple[int, str]] = []
    for i, line in enumerate(b.lines):
        s = line.strip()
        if not s:
            b.blank(i)
        elif ":" in s and s.startswith(("find:", "fd:", "[fd error]")):
            b.must_keep(i)
            b.keep(i)
        else:
            paths.append((i, s))
    if len(paths) < 2:
        return
    prefix = os.path.commonpath([p for _, p in paths]) if all(p.startswith("/") for _, p in paths) or all(
        not p.startswith("/") for _, p in paths
    ) else ""
    if prefix and any(p == prefix for _, p in paths):
        prefix = os.path.dirname(prefix)
    groups: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for i, p in paths:
        rel = os.path.relpath(p, prefix) if prefix else p
        d, base = os.path.split(rel.rstrip("/"))
        groups[d].append((i, base + ("/" if p.endswith("/") else "")))
    if prefix:
        b.note(paths[0][0] - 0.5, f"under {prefix}/:")
    for d in sorted(groups, key=lambda k: min(i for i, _ in groups[k])):
        items = groups[d]
        noisy = [part for part in d.split("/") if part in NOISE_DIRS]
        if noisy:
            b.omit([i for i, _ in items], f"entries under {noisy[0]}/ dirs", inline=False)
            continue
        shown, extra = items[:_MAX_PER_DIR], items[_MAX_PER_DIR:]
        b.represent([i for i, _ in shown], f"{d or '.'}/: " + ", ".join(t for _, t in shown))
        if extra:
            b.omit([i for i, _ in extra], f"more entries of {d or '.'}/")
