"""Find which program produced an output: argv[0] and subcommand, through wrappers.

Handles environment prefixes (``FOO=1 cmd``, ``env FOO=1 cmd``), launchers (``uv run``,
``poetry run``, ``npx``, ``pnpm exec``, ``python -m``, ``sudo``, ``time``, ``timeout 5``...),
chains (``cd x && pytest`` -> pytest) and pipelines into pagers (``git log | head``).
"""

from __future__ import annotations

import os
import re
import shlex

import msgspec

__all__ = ["Command", "parse_command"]

_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PAGERS = {"head", "tail", "less", "more", "cat", "tee", "sort", "uniq", "wc", "cut", "column"}
_SIMPLE_PREFIXES = {"sudo", "time", "nice", "nohup", "command", "exec", "stdbuf", "unbuffer"}
_RUNNERS = {  # tool -> subcommand that means "run the rest"
    "uv": {"run", "tool"},
    "poetry": {"run"},
    "pipenv": {"run"},
    "pdm": {"run"},
    "hatch": {"run"},
    "rye": {"run"},
    "pnpm": {"exec", "dlx"},
    "yarn": {"exec", "dlx"},
    "bundle": {"exec"},
    "nix": {"run"},
}
_DIRECT_LAUNCHERS = {"npx", "bunx", "uvx", "pipx"}
# tools whose first positional argument is a subcommand
_HAS_SUB = {
    "git", "npm", "pnpm", "yarn", "bun", "cargo", "go", "docker", "podman", "kubectl", "pip",
    "uv", "poetry", "helm", "gh", "docker-compose", "make",
}
# git/docker/kubectl/cargo global options that take a value
_OPT_WITH_VALUE = {
    "git": {"-C", "-c", "--git-dir", "--work-tree", "--namespace"},
    "docker": {"-H", "--host", "--context", "-c", "--config", "-l", "--log-level"},
    "kubectl": {"-n", "--namespace", "--context", "--kubeconfig", "-s", "--server", "--cluster", "--user"},
    "make": {"-C", "-f", "-j", "--directory", "--file", "-o", "-W"},
}


class Command(msgspec.Struct, frozen=True):
    """A normalized command: ``tool`` (basename, version suffix dropped), ``sub`` and ``args``."""

    tool: str
    sub: str
    args: list[str]
    argv: list[str]


def _normalize_tool(name: str) -> str:
    base = os.path.basename(name)
    m = re.match(r"^(python|pip|pytest|node|ruby|perl|php)[0-9.]*$", base)
    if m:
        return m.group(1)
    if base == "fdfind":
        return "fd"
    if base == "docker-compose":
        return "docker"
    return base


def _split(command: str) -> list[str]:
    try:
        lex = shlex.shlex(command, posix=True, punctuation_chars=";&|")
        lex.whitespace_split = True
        return list(lex)
    except ValueError:
        return command.split()


def _last_segment(tokens: list[str]) -> list[str]:
    """From a chain ``a && b ; c | d`` pick the command whose output we are looking at."""
    segments: list[list[str]] = [[]]
    for t in tokens:
        if t in {"&&", "||", ";", "&"}:
            segments.append([])
        else:
            segments[-1].append(t)
    segments = [s for s in segments if s and _normalize_tool(s[0]) not in {"cd", "export", "source", "."}]
    if not segments:
        return []
    seg = segments[-1]
    stages: list[list[str]] = [[]]
    for t in seg:
        if t in {"|", "|&"}:
            stages.append([])
        else:
            stages[-1].append(t)
    stages = [s for s in stages if s]
    for stage in reversed(stages):
        if _normalize_tool(stage[0]) not in _PAGERS:
            return stage
    return stages[0] if stages else []


def _unwrap(argv: list[str]) -> list[str]:
    """Strip env assignments and launchers until the real program is argv[0]."""
    while argv:
        head = argv[0]
        tool = _normalize_tool(head)
        if _ENV_ASSIGN.match(head):
            argv = argv[1:]
        elif tool == "env":
            argv = argv[1:]
            while argv and (argv[0].startswith("-") or _ENV_ASSIGN.match(argv[0])):
                argv = argv[1:]
        elif tool in _SIMPLE_PREFIXES:
            argv = [a for a in argv[1:]]
            while argv and argv[0].startswith("-"):
                argv = argv[1:]
        elif tool == "timeout":
            rest = [a for a in argv[1:]]
            while rest and rest[0].startswith("-"):
                rest = rest[1:]
            argv = rest[1:]  # drop the duration
        elif tool in _DIRECT_LAUNCHERS:
            rest = argv[1:]
            while rest and rest[0].startswith("-"):
                rest = rest[1:]
            argv = rest
        elif tool in _RUNNERS and len(argv) > 1 and argv[1] in _RUNNERS[tool]:
            rest = argv[2:]
            while rest and rest[0].startswith("-"):
                rest = rest[1:]
            argv = rest
        elif tool == "python" and "-m" in argv[1:3]:
            k = argv.index("-m")
            argv = argv[k + 1 :]
        else:
            return argv
    return argv


def _subcommand(tool: str, args: list[str]) -> tuple[str, list[str]]:
    if tool not in _HAS_SUB:
        return "", args
    takes_value = _OPT_WITH_VALUE.get(tool, set())
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("+") and tool == "cargo":  # cargo +nightly test
            i += 1
        elif a in takes_value:
            i += 2
        elif a.startswith("-"):
            i += 1
        else:
            if tool == "docker" and a == "compose":
                sub, rest = _subcommand(tool, args[i + 1 :])
                return sub, rest
            if tool in {"npm", "pnpm", "yarn", "bun"} and a in {"run", "run-script"} and i + 1 < len(args):
                return f"run:{args[i + 1]}", args[i + 2 :]
            return a, args[i + 1 :]
    return "", []


_SUB_ALIASES = {
    "npm": {"i": "install", "ci": "install", "add": "install", "t": "test", "tst": "test"},
    "pnpm": {"i": "install", "add": "install", "t": "test"},
    "yarn": {"add": "install", "": "install"},
    "pip": {},
    "git": {},
}


def parse_command(command: str | list[str]) -> Command:
    """Normalize a command line (string or argv) to :class:`Command`."""
    tokens = _split(command) if isinstance(command, str) else list(command)
    argv = _unwrap(_last_segment(tokens))
    if not argv:
        return Command(tool="", sub="", args=[], argv=[])
    tool = _normalize_tool(argv[0])
    sub, args = _subcommand(tool, argv[1:])
    sub = _SUB_ALIASES.get(tool, {}).get(sub, sub)
    if tool in {"npm", "pnpm", "yarn", "bun"} and sub in {"run:test", "run:tests"}:
        sub = "test"
    return Command(tool=tool, sub=sub, args=args, argv=argv)
