"""Per-command patterns and their dispatch (by program and subcommand, else by content)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from leanctx.context.shell.builder import Builder
from leanctx.context.shell.dispatch import Command
from leanctx.context.shell.patterns.build import cc, make
from leanctx.context.shell.patterns.common import Ctx, Pattern, python_traceback
from leanctx.context.shell.patterns.containers import docker, kubectl
from leanctx.context.shell.patterns.files import find, ls, tree
from leanctx.context.shell.patterns.git import git
from leanctx.context.shell.patterns.golang import go
from leanctx.context.shell.patterns.lint import mypy, ruff
from leanctx.context.shell.patterns.node import eslint, jest, npm, tap, tsc
from leanctx.context.shell.patterns.python import pip, pytest, unittest
from leanctx.context.shell.patterns.rust import cargo
from leanctx.context.shell.patterns.search import grep

__all__ = ["NO_GENERIC_FACTS", "Ctx", "Pattern", "by_content", "select"]

_BY_TOOL: dict[str, tuple[str, Pattern]] = {
    "git": ("git", git),
    "pytest": ("pytest", pytest), "py.test": ("pytest", pytest),
    "unittest": ("unittest", unittest), "nose2": ("unittest", unittest),
    "pip": ("pip", pip),
    "npm": ("npm", npm), "pnpm": ("npm", npm), "yarn": ("npm", npm), "bun": ("npm", npm),
    "jest": ("jest", jest), "vitest": ("jest", jest),
    "tsc": ("tsc", tsc), "vue-tsc": ("tsc", tsc),
    "eslint": ("eslint", eslint),
    "cargo": ("cargo", cargo),
    "go": ("go", go),
    "docker": ("docker", docker), "podman": ("docker", docker),
    "kubectl": ("kubectl", kubectl), "oc": ("kubectl", kubectl),
    "make": ("make", make), "gmake": ("make", make), "ninja": ("make", make), "cmake": ("make", make),
    "gcc": ("cc", cc), "g++": ("cc", cc), "cc": ("cc", cc), "c++": ("cc", cc),
    "clang": ("cc", cc), "clang++": ("cc", cc), "rustc": ("cc", cc),
    "ruff": ("ruff", ruff),
    "mypy": ("mypy", mypy), "dmypy": ("mypy", mypy),
    "ls": ("ls", ls), "exa": ("ls", ls), "eza": ("ls", ls),
    "tree": ("tree", tree),
    "find": ("find", find), "fd": ("find", find),
    "grep": ("grep", grep), "egrep": ("grep", grep), "rg": ("grep", grep), "ag": ("grep", grep),
    "ack": ("grep", grep),
}

# patterns whose output is data (code, paths, matches): "error" in it is not a fact
NO_GENERIC_FACTS = {"ls", "tree", "find", "grep", "git:diff", "git:show", "git:log", "pip:list"}


def traceback(b: Builder, ctx: Ctx) -> None:
    """Any output with a Python traceback: frames as ``path:line in function``, the exception
    kept, the source lines of the frames omitted (the rest goes to the generic pass)."""
    python_traceback(b)


def by_content(lines: Sequence[str]) -> Pattern | None:
    """Recognize well-known outputs whatever launched them (npm scripts, make targets...)."""
    head = lines[:400]
    joined = "\n".join(head)
    if re.search(r"^=+ test session starts =+$", joined, re.M):
        return pytest
    if re.search(r"^TAP version \d+$|^(?:not )?ok \d+ - ", joined, re.M):
        return tap
    if re.search(r"^running \d+ tests?$", joined, re.M) and re.search(r"^test \S+ \.\.\. ", joined, re.M):
        return cargo
    if re.search(r"^=== RUN\s", joined, re.M) or re.search(r"^--- FAIL: ", joined, re.M):
        return go
    if re.search(r"^Test Suites: ", joined, re.M) or re.search(r"^\s*Test Files\s", joined, re.M):
        return jest
    if re.search(r"^\S+\(\d+,\d+\): error TS\d+:|^\S+:\d+:\d+ - error TS\d+:", joined, re.M):
        return tsc
    tail = "\n".join(lines[-50:])
    if re.search(r"^Ran \d+ tests? in ", tail, re.M):
        return unittest
    if any(line.rstrip() == "Traceback (most recent call last):" for line in lines):
        return traceback  # a Python program that crashed: whatever ran it
    return None


def select(cmd: Command, lines: Sequence[str]) -> tuple[str, Pattern | None]:
    """The pattern for a command: (name, function), or ("generic", None)."""
    tool = cmd.tool
    if tool == "uv" and cmd.sub == "pip" and cmd.args:
        return "pip", pip
    if tool == "git" and cmd.sub == "grep":
        return "grep", grep
    if tool == "node" and any(a == "--test" or a.startswith("--test-") for a in cmd.args):
        return "tap", tap
    found = _BY_TOOL.get(tool)
    if found is not None:
        return found
    fn = by_content(lines)
    if fn is not None:
        return fn.__name__, fn
    return "generic", None
