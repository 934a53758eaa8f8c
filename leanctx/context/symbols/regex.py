"""Fallback declaration finder for languages without a grammar here: keyword-led lines."""

from __future__ import annotations

import re

from leanctx.context.symbols.model import Symbol

__all__ = ["extract"]

_MODIFIERS = (
    r"(?:(?:export|default|public|private|protected|internal|static|final|abstract|async|pub(?:\([\w:]+\))?|"
    r"unsafe|extern|inline|virtual|override|open|sealed|data|case|local|const|mutable|partial|readonly|"
    r"suspend|operator|infix|synchronized|native)\s+)*"
)
_DECL = re.compile(
    r"^(?P<indent>[ \t]*)" + _MODIFIERS +
    r"(?P<kw>def|defp|fn|func|function|fun|sub|proc|method|class|struct|interface|trait|enum|module|"
    r"type|typedef|impl|object|record|protocol|namespace|package|macro|defmodule|union|mixin|extension|"
    r"actor|message|service|rpc|CREATE\s+(?:OR\s+REPLACE\s+)?(?:TABLE|VIEW|FUNCTION|PROCEDURE|INDEX))\b"
    r"\s*(?P<name>[A-Za-z_$][\w$.:]*)?",
    re.IGNORECASE,
)
_KIND = {
    "def": "function", "defp": "function", "fn": "function", "func": "function", "function": "function",
    "fun": "function", "sub": "function", "proc": "function", "method": "method", "class": "class",
    "struct": "struct", "interface": "interface", "trait": "trait", "enum": "enum", "module": "module",
    "type": "type", "typedef": "type", "impl": "impl", "object": "object", "record": "record",
    "protocol": "protocol", "namespace": "namespace", "package": "module", "macro": "macro",
    "defmodule": "module", "union": "union", "mixin": "class", "extension": "extension", "actor": "class",
    "message": "struct", "service": "interface", "rpc": "method",
}
_TRAIL = re.compile(r"(?:\s*(?:\{|:|=>|=|\bdo|\bwhere|;))+\s*$")


def _indent_width(s: str) -> int:
    return len(s.expandtabs(4))


def extract(text: str) -> list[Symbol]:
    lines = text.split("\n")
    found: list[tuple[int, int, str, str, str]] = []  # line index, indent, kind, name, signature
    for i, line in enumerate(lines):
        m = _DECL.match(line)
        if not m or not m.group("name"):
            continue
        kw = m.group("kw").lower()
        kind = _KIND.get(kw, "table" if kw.startswith("create") else kw)
        sig = _TRAIL.sub("", line.strip())
        found.append((i, _indent_width(m.group("indent")), kind, m.group("name"), sig[:240]))
    out: list[Symbol] = []
    stack: list[tuple[int, str]] = []  # (indent, name)
    for i, indent, kind, name, sig in found:
        while stack and stack[-1][0] >= indent:
            stack.pop()
        end = len(lines)
        for j in range(i + 1, len(lines)):
            s = lines[j]
            if s.strip() and _indent_width(s[: len(s) - len(s.lstrip())]) <= indent:
                end = j + 1 if s.strip() in {"}", "};", "end", "}}"} else j
                break
        while end > i + 1 and not lines[end - 1].strip():
            end -= 1
        out.append(Symbol(name=name, kind=kind if not stack or kind != "function" else "method",
                          line=i + 1, end_line=max(i + 1, end), depth=len(stack), signature=sig,
                          exported=not re.search(r"\b(private|protected|static|local)\b", sig),
                          parent=stack[-1][1] if stack else ""))
        stack.append((indent, name))
    return out
