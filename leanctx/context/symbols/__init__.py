"""Declarations (functions, classes, types...) and imports of a source file."""

from __future__ import annotations

import re

from leanctx.context.langs import detect_language
from leanctx.context.symbols import regex as _regex
from leanctx.context.symbols import sql as _sql
from leanctx.context.symbols import treesitter as _ts
from leanctx.context.symbols.model import Symbol

__all__ = ["Symbol", "extract_imports", "extract_symbols", "uses_tree_sitter"]


def uses_tree_sitter(language: str) -> bool:
    return _ts.supported(language)


def extract_symbols(path: str, text: str, language: str | None = None) -> list[Symbol]:
    """Declarations in source order; tree-sitter when the language has a grammar, SQL's
    ``CREATE`` statements by its lexer (``sql``), else keyword-led lines (``regex``)."""
    lang = language or detect_language(path, text)
    if _ts.supported(lang):
        return _ts.extract(lang, text)
    if lang == "sql":
        return _sql.extract(text)
    return _regex.extract(text)


_IMPORT_RULES: dict[str, list[re.Pattern[str]]] = {
    "python": [re.compile(r"^\s*import\s+([\w.]+(?:\s*,\s*[\w.]+)*)"), re.compile(r"^\s*from\s+(\.*[\w.]*)\s+import\b")],
    "javascript": [re.compile(r"^\s*import\b.*?from\s+['\"]([^'\"]+)"), re.compile(r"^\s*import\s+['\"]([^'\"]+)"),
                   re.compile(r"\brequire\(\s*['\"]([^'\"]+)['\"]\s*\)"), re.compile(r"^\s*export\b.*?from\s+['\"]([^'\"]+)")],
    "rust": [re.compile(r"^\s*(?:pub\s+)?use\s+([\w:]+)"), re.compile(r"^\s*extern\s+crate\s+(\w+)"),
             re.compile(r"^\s*(?:pub\s+)?mod\s+(\w+)\s*;")],
    "go": [re.compile(r'^\s*import\s+(?:\w+\s+)?"([^"]+)"'), re.compile(r'^\s+(?:\w+\s+)?"([^"]+)"\s*$')],
    "java": [re.compile(r"^\s*import\s+(?:static\s+)?([\w.*]+)")],
    "c": [re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)')],
    "csharp": [re.compile(r"^\s*using\s+(?:static\s+)?([\w.]+)\s*;")],
    "ruby": [re.compile(r"^\s*require(?:_relative)?\s*\(?\s*['\"]([^'\"]+)")],
    "php": [re.compile(r"^\s*use\s+([\w\\]+)"), re.compile(r"^\s*(?:require|include)(?:_once)?\s*\(?\s*['\"]([^'\"]+)")],
    "swift": [re.compile(r"^\s*import\s+(\w+)")],
    "lua": [re.compile(r"\brequire\s*\(?\s*['\"]([^'\"]+)")],
    "elixir": [re.compile(r"^\s*(?:alias|import|use|require)\s+([\w.]+)")],
    "haskell": [re.compile(r"^\s*import\s+(?:qualified\s+)?([\w.]+)")],
    "zig": [re.compile(r"@import\(\s*\"([^\"]+)\"\s*\)")],
    "bash": [re.compile(r"^\s*(?:source|\.)\s+(\S+)")],
    "make": [re.compile(r"^\s*-?s?include\s+([^#\n]+)")],  # several files a line, by spaces
}
_IMPORT_RULES["typescript"] = _IMPORT_RULES["tsx"] = _IMPORT_RULES["javascript"]
_IMPORT_RULES["cpp"] = _IMPORT_RULES["c"]
_IMPORT_RULES["kotlin"] = _IMPORT_RULES["scala"] = _IMPORT_RULES["java"]


def extract_imports(language: str, text: str) -> list[tuple[int, str]]:
    """(line, module) pairs of the file's imports/dependencies, in order, first occurrence only."""
    rules = _IMPORT_RULES.get(language)
    if not rules:
        return []
    out: list[tuple[int, str]] = []
    seen: set[str] = set()
    in_go_block = False
    for i, line in enumerate(text.split("\n"), 1):
        if language == "go":
            if re.match(r"^\s*import\s*\(", line):
                in_go_block = True
                continue
            if in_go_block and line.strip() == ")":
                in_go_block = False
                continue
            if not in_go_block and rules[1].match(line):
                continue
        for rx in rules:
            for m in rx.finditer(line):
                for mod in m.group(1).split(None if language == "make" else ","):
                    mod = mod.strip()
                    if mod and mod not in seen:
                        seen.add(mod)
                        out.append((i, mod))
    return out
