"""Language detection by file name (and shebang), and each language's comment syntax.

``GRAMMAR_LANGUAGES``: the languages whose tree-sitter grammar ``tree_sitter_language_pack``
bundles under the same name; ``aggressive`` finds their comments and strings from a parse
(``modes.comments``). ``comment_syntax`` (comment tokens only) serves line-level checks that need
no parse, such as ``entropy``'s comment rulers."""

from __future__ import annotations

import os
import re
from typing import Final

import msgspec

__all__ = [
    "CODE_LANGUAGES",
    "DATA_LANGUAGES",
    "GRAMMAR_LANGUAGES",
    "TREE_SITTER_LANGUAGES",
    "CommentSyntax",
    "comment_syntax",
    "detect_language",
]

_EXT: Final[dict[str, str]] = {
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".rs": "rust", ".go": "go", ".java": "java",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp", ".ipp": "cpp",
    ".cs": "csharp", ".rb": "ruby", ".rake": "ruby", ".gemspec": "ruby", ".php": "php",
    ".kt": "kotlin", ".kts": "kotlin", ".swift": "swift", ".scala": "scala", ".sc": "scala",
    ".sh": "bash", ".bash": "bash", ".zsh": "bash", ".lua": "lua",
    ".ex": "elixir", ".exs": "elixir", ".hs": "haskell", ".lhs": "haskell", ".zig": "zig",
    # languages without a signatures grammar here (regex fallback) or data/markup
    ".dart": "dart", ".m": "objc", ".mm": "objc", ".pl": "perl", ".pm": "perl", ".r": "r", ".R": "r",
    ".jl": "julia", ".nim": "nim", ".clj": "clojure", ".erl": "erlang", ".fs": "fsharp", ".ml": "ocaml",
    ".vue": "vue", ".svelte": "svelte", ".sql": "sql", ".proto": "proto", ".tf": "hcl",
    ".json": "json", ".jsonc": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml",
    ".ini": "ini", ".cfg": "ini", ".xml": "xml", ".html": "html", ".htm": "html", ".css": "css",
    ".scss": "css", ".md": "markdown", ".rst": "text", ".txt": "text", ".log": "log", ".csv": "csv",
    ".lock": "lock", ".mk": "make", ".mak": "make",
}
_NAMES: Final[dict[str, str]] = {
    "Makefile": "make", "makefile": "make", "GNUmakefile": "make", "Dockerfile": "dockerfile",
    "Rakefile": "ruby", "Gemfile": "ruby", "Cargo.lock": "lock", "package-lock.json": "lock",
    "yarn.lock": "lock", "pnpm-lock.yaml": "lock", "poetry.lock": "lock", "uv.lock": "lock",
    "CMakeLists.txt": "cmake",
}
_SHEBANG = re.compile(r"^#!\s*(?:/usr/bin/env\s+(?:-S\s+)?)?(?:\S*/)?(\w+)")
_SHEBANG_LANG = {"python": "python", "python3": "python", "bash": "bash", "sh": "bash", "zsh": "bash",
                 "node": "javascript", "ruby": "ruby", "lua": "lua", "php": "php", "elixir": "elixir"}

TREE_SITTER_LANGUAGES: Final = frozenset({
    "python", "javascript", "typescript", "tsx", "rust", "go", "java", "c", "cpp", "csharp", "ruby",
    "php", "kotlin", "swift", "scala", "bash", "lua", "elixir", "haskell", "zig",
})
GRAMMAR_LANGUAGES: Final = TREE_SITTER_LANGUAGES | frozenset({
    "dart", "objc", "proto", "css", "make", "dockerfile", "yaml", "toml", "r", "perl", "julia", "nim", "cmake",
    "hcl", "ini", "sql", "html", "xml", "vue", "svelte", "clojure", "erlang", "ocaml", "fsharp", "json", "markdown",
})
DATA_LANGUAGES: Final = frozenset({"json", "yaml", "toml", "ini", "xml", "csv", "lock", "log", "text", "markdown"})
CODE_LANGUAGES: Final = frozenset(set(_EXT.values()) | set(_NAMES.values())) - DATA_LANGUAGES - {"html", "css"}


def detect_language(path: str, text: str | None = None) -> str:
    """Language name for a path (by name, extension, then shebang); ``"text"`` if unknown."""
    base = os.path.basename(path)
    if base in _NAMES:
        return _NAMES[base]
    _, ext = os.path.splitext(base)
    if ext in _EXT:
        return _EXT[ext]
    if ext.lower() in _EXT:
        return _EXT[ext.lower()]
    if text:
        m = _SHEBANG.match(text[:200])
        if m and m.group(1) in _SHEBANG_LANG:
            return _SHEBANG_LANG[m.group(1)]
    return "text"


class CommentSyntax(msgspec.Struct, frozen=True):
    line: tuple[str, ...] = ()
    block: tuple[tuple[str, str], ...] = ()
    docstrings: bool = False  # Python-style string statements used as documentation


_C_LIKE = CommentSyntax(line=("//",), block=(("/*", "*/"),))
_HASH = CommentSyntax(line=("#",))
_COMMENTS: Final[dict[str, CommentSyntax]] = {
    "python": CommentSyntax(line=("#",), docstrings=True),
    "javascript": _C_LIKE, "typescript": _C_LIKE, "tsx": _C_LIKE, "rust": _C_LIKE, "go": _C_LIKE,
    "java": _C_LIKE, "c": _C_LIKE, "cpp": _C_LIKE, "csharp": _C_LIKE, "kotlin": _C_LIKE,
    "swift": _C_LIKE, "scala": _C_LIKE, "dart": _C_LIKE, "objc": _C_LIKE, "proto": _C_LIKE,
    "css": CommentSyntax(block=(("/*", "*/"),)), "zig": CommentSyntax(line=("//",)),
    "php": CommentSyntax(line=("//", "#"), block=(("/*", "*/"),)),
    "ruby": CommentSyntax(line=("#",), block=(("=begin", "=end"),)),
    "bash": _HASH, "make": _HASH, "dockerfile": _HASH, "yaml": _HASH, "toml": _HASH, "r": _HASH,
    "perl": _HASH, "elixir": _HASH, "julia": _HASH, "nim": _HASH, "cmake": _HASH, "hcl": _HASH,
    "ini": CommentSyntax(line=(";", "#")),
    "lua": CommentSyntax(line=("--",), block=(("--[[", "]]"),)),
    "haskell": CommentSyntax(line=("--",), block=(("{-", "-}"),)),
    "sql": CommentSyntax(line=("--",), block=(("/*", "*/"),)),
    "html": CommentSyntax(block=(("<!--", "-->"),)), "xml": CommentSyntax(block=(("<!--", "-->"),)),
    "vue": CommentSyntax(line=("//",), block=(("/*", "*/"), ("<!--", "-->"))),
    "clojure": CommentSyntax(line=(";",)), "erlang": CommentSyntax(line=("%",)),
    "ocaml": CommentSyntax(block=(("(*", "*)"),)), "fsharp": CommentSyntax(line=("//",), block=(("(*", "*)"),)),
}


def comment_syntax(language: str) -> CommentSyntax:
    return _COMMENTS.get(language, CommentSyntax())
