"""The read-mode audit's findings on ``aggressive`` and ``entropy``.

``aggressive`` claims to strip only comments, docstrings and blank lines: what it sends must mean
the same code (a Python file that parsed still parses, with the same AST apart from docstrings;
string values unchanged; directive comments kept). ``entropy`` claims to drop low-information
lines: it never drops a line that carries structure (a closing delimiter, a docstring or fence
delimiter, a mapping key), repeated ones included.
"""

from __future__ import annotations

import ast
import json
import random
import sysconfig
import time
from pathlib import Path

import pytest

from leanctx.context.modes import read


def _body(text: str) -> str:
    """A rendering without its footer line."""
    lines = text.split("\n")
    assert lines[-1].startswith("[")
    return "\n".join(lines[:-1])


def agg(path: str, text: str) -> str:
    return _body(read(path, text, "aggressive").text)


def ent(path: str, text: str) -> list[str]:
    return _body(read(path, text, "entropy").text).split("\n")


def _no_docstrings(tree: ast.AST) -> str:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                body = body[1:]
            if len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and body[0].value.value is Ellipsis:
                body = []
            node.body = body
    return ast.dump(tree)


def same_code(src: str, out: str) -> bool:
    return _no_docstrings(ast.parse(src)) == _no_docstrings(ast.parse(out))


# ---------------------------------------------------------------- 1. empty Python bodies


def test_aggressive_python_body_of_only_a_docstring_becomes_ellipsis() -> None:
    src = ('class MyError(Exception):\n    """Only a docstring."""\n\n'
           'def f():\n    """Doc only."""\n\n'
           'def g():\n    """Doc and a comment."""\n    # nothing yet\n\n'
           'class A:\n    """Doc."""\n    x = 1\n')
    out = agg("m.py", src)
    assert same_code(src, out)
    assert "class MyError(Exception):\n    ..." in out and "def f():\n    ..." in out
    assert "class A:\n    x = 1" in out  # a body with other statements needs no ``...``


def test_aggressive_python_docstring_followed_by_a_statement_on_its_line() -> None:
    src = 'def f():\n    "doc"; return 1\n\nclass B: "doc"; y = 2\n'
    out = agg("m.py", src)
    assert same_code(src, out)


def test_aggressive_keeps_a_string_that_is_no_docstring() -> None:
    """A first string in an ``if`` body is an expression, and an f-string is never a docstring."""
    src = 'if True:\n    "kept"\n    x = 1\n\ndef f(a):\n    f"{a.close()}"\n'
    out = agg("m.py", src)
    assert same_code(src, out) and '"kept"' in out and 'f"{a.close()}"' in out
    # cutting a docstring followed by another string would make that string the docstring
    two = 'class R:\n    """Doc."""\n\n    """Attribute doc."""\n    x = 1\n'
    assert agg("r.py", two) == 'class R:\n    """Doc."""\n    """Attribute doc."""\n    x = 1'


# ---------------------------------------------------------------- 2. string values unchanged


def test_aggressive_keeps_blank_lines_and_trailing_spaces_inside_python_strings() -> None:
    src = 'SQL = """\nSELECT 1\n\nUNION SELECT 2   \n"""  # the query\n\n\nX = 1\n'
    out = agg("q.py", src)
    assert same_code(src, out)
    ns: dict[str, object] = {}
    exec(compile(out, "q.py", "exec"), ns)  # noqa: S102 - our own literal
    assert ns["SQL"] == "\nSELECT 1\n\nUNION SELECT 2   \n"
    assert "# the query" not in out and "\n\n\nX" not in out


def test_aggressive_keeps_blank_lines_inside_js_template_literals() -> None:
    src = "// head\nconst t = `a\n\n  b  \n`; // tail\n\nlet c = 1;\n"
    out = agg("t.js", src)
    assert out == "const t = `a\n\n  b  \n`;\nlet c = 1;"


# ---------------------------------------------------------------- 3. languages without a scanner-safe syntax


@pytest.mark.parametrize(
    ("path", "src", "kept", "gone"),
    [
        ("c.yml", "homepage: https://example.org/docs#install  # where\nchannel: irc#lean\n",
         ["homepage: https://example.org/docs#install", "channel: irc#lean"], ["# where"]),
        ("c.yml", "job:\n  run: |\n    # a shell comment is part of the value\n\n    make   \n# gone\n",
         ["    # a shell comment is part of the value\n\n    make   "], ["# gone"]),
        ("setup.cfg", "[metadata]\nurl = https://example.org/#top\npattern = a;b\n; a comment\n",
         ["url = https://example.org/#top", "pattern = a;b"], ["; a comment"]),
        ("Makefile", "HASH := \\#\n# a comment\nall:\n\techo a#b\n", ["HASH := \\#", "\techo a#b"], ["# a comment"]),
        ("Dockerfile", "FROM alpine\n# a comment\nRUN echo a#b && apk add x\n",
         ["RUN echo a#b && apk add x"], ["# a comment"]),
        ("App.vue", ("<template>\n  <p>Docs at https://example.com/guide and more</p>\n</template>\n"
                     "<script>\n// a comment\nexport default {}\n</script>\n"),
         ["<p>Docs at https://example.com/guide and more</p>", "export default {}"], ["// a comment"]),
        ("q.sql", "SELECT 'C:\\' AS path, 1 -- comment\nFROM t WHERE a = 'x -- y';\n",
         ["SELECT 'C:\\' AS path, 1", "FROM t WHERE a = 'x -- y';"], ["-- comment"]),
        ("a.pl", "my $n = $#array;  # count\ns#foo#bar#g;\n", ["my $n = $#array;", "s#foo#bar#g;"], ["# count"]),
    ],
    ids=["yaml-hash-in-value", "yaml-block-scalar", "ini", "make", "dockerfile", "vue-html-text", "sql-quotes", "perl"],
)
def test_aggressive_cuts_only_real_comments(path: str, src: str, kept: list[str], gone: list[str]) -> None:
    out = agg(path, src)
    for k in kept:
        assert k in out
    for g in gone:
        assert g not in out


# ---------------------------------------------------------------- 4. directive comments stay


@pytest.mark.parametrize(
    ("path", "src", "kept"),
    [
        ("main.go", ("//go:build linux\n// +build linux\n\n// Package p does things.\npackage p\n\n"
                     "import _ \"embed\"\n\n//go:embed hello.txt\nvar s string\n"),
         ["//go:build linux", "// +build linux", "//go:embed hello.txt"]),
        ("cgo.go", "package user\n\n/*\n#include <pwd.h>\nstatic int f(void) { return 1; }\n*/\nimport \"C\"\n",
         ["#include <pwd.h>", "static int f(void) { return 1; }", "*/\nimport \"C\""]),
        ("run.py", ("#!/usr/bin/env python3\n# -*- coding: latin-1 -*-\n# plain\nx = f()  # type: ignore\n"
                    "y = []  # type: list[int]\nimport os  # noqa: F401\nif x:  # pragma: no cover\n    pass\n"),
         ["#!/usr/bin/env python3", "# -*- coding: latin-1 -*-", "# type: ignore", "# type: list[int]",
          "# noqa: F401", "# pragma: no cover"]),
        ("a.ts", ("// @ts-ignore\nconst a: number = 'x';\n/* eslint-disable no-console */\n// plain\n"
                  "const b = /*#__PURE__*/ make();\n"),
         ["// @ts-ignore", "/* eslint-disable no-console */", "/*#__PURE__*/"]),
        ("run.sh", "#!/bin/bash\n# shellcheck disable=SC2086\n# plain\necho $x\n",
         ["#!/bin/bash", "# shellcheck disable=SC2086"]),
        ("Dockerfile", "# syntax=docker/dockerfile:1\n# plain\nFROM alpine\n", ["# syntax=docker/dockerfile:1"]),
        ("r.rb", "# frozen_string_literal: true\n# plain\nX = 'a'\n", ["# frozen_string_literal: true"]),
    ],
    ids=["go-build-embed", "cgo-preamble", "python", "ts-eslint-pure", "bash", "dockerfile", "ruby-magic"],
)
def test_aggressive_keeps_directive_comments(path: str, src: str, kept: list[str]) -> None:
    out = agg(path, src)
    for k in kept:
        assert k in out
    assert "plain" not in out and "Package p does things" not in out


# ---------------------------------------------------------------- the compile check on real files


def test_aggressive_python_stdlib_files_still_parse_with_the_same_code() -> None:
    """30 files of the installed standard library (fixed sample): each still parses, same AST."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    pool = sorted(p for p in stdlib.glob("*.py") if p.stat().st_size < 150_000)
    files = random.Random(7).sample(pool, 30)
    t0 = time.process_time()  # CPU: a loaded machine stretches wall time
    bad = []
    for p in files:
        src = p.read_text(encoding="utf-8", errors="replace")
        try:
            ast.parse(src)
        except SyntaxError:
            continue
        out = agg(str(p), src)
        try:
            if not same_code(src, out):
                bad.append(f"{p.name}: AST differs")
        except SyntaxError as e:
            bad.append(f"{p.name}: {e}")
    assert not bad, bad
    assert time.process_time() - t0 < 10


# ---------------------------------------------------------------- 5. entropy keeps structure


def test_entropy_keeps_docstring_delimiter_lines() -> None:
    src = "".join(f'def f{i}():\n    """\n    Doc {i}.\n    """\n    return {i}\n\n' for i in range(5))
    out = ent("d.py", src)
    assert out.count('    """') == 10


def test_entropy_keeps_yaml_keys_and_repeated_structure() -> None:
    jobs = "".join(f"  {name}:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n"
                   f"      - run: make {name}\n\n" for name in ("test", "lint", "docs", "build"))
    src = "name: ci\non: [push]\njobs:\n" + jobs
    out = ent("ci.yml", src)
    assert "  test:" in out and "  lint:" in out
    assert out.count("    runs-on: ubuntu-latest") == 4 and out.count("    steps:") == 4


def test_entropy_keeps_json_closers_and_repeated_values() -> None:
    doc = {"properties": {k: {"type": "string", "items": [1, 100, 1000]} for k in "abcdef"}}
    src = json.dumps(doc, indent=2) + "\n"
    out = ent("s.json", src)
    assert json.loads("\n".join(out)) == doc


def test_entropy_keeps_closing_code_fences() -> None:
    src = "# Guide\n\n" + "".join(f"Step {i}:\n\n```sh\nmake {i}\n```\n\n" for i in range(5))
    out = ent("guide.md", src)
    assert out.count("```") == 5 and out.count("```sh") == 5


def test_entropy_keeps_closing_delimiters_in_code_and_drops_comment_rulers() -> None:
    src = "fn main() {\n    go();\n    // ========\n}\n\n#endif\n"
    assert ent("a.rs", src) == ["fn main() {", "    go();", "}", "#endif"]


def test_entropy_keeps_letterless_data_values() -> None:
    src = "nums = [\n    100,\n    1000,\n    0.00,\n]\n"
    assert ent("n.py", src) == src.rstrip("\n").split("\n")


def test_aggressive_ini_keeps_multi_line_values() -> None:
    """A blank line inside a multi-line value is part of it; a comment line inside it is not."""
    import configparser

    src = ("[options]\n; a comment\ninstall_requires =\n    foo\n\n    # pinned below\n    bar\n\n"
           "[tool]\nurl = https://example.org/#top\n")

    def load(s: str) -> dict[str, dict[str, str]]:
        c = configparser.RawConfigParser()
        c.read_string(s)
        return {sec: dict(c[sec]) for sec in c.sections()}

    out = agg("setup.cfg", src)
    assert load(out) == load(src)
    assert "; a comment" not in out and "# pinned below" not in out


def test_aggressive_cfg_that_is_c_keeps_its_preprocessor_lines() -> None:
    """``.cfg`` reads as INI, but NSPR's ``md/_linux.cfg`` is a C header."""
    src = "#ifndef nspr_cpucfg___\n#define nspr_cpucfg___\n# a comment\n#define PR_BYTES_PER_INT 4\n#endif\n"
    assert agg("_linux.cfg", src) == "#ifndef nspr_cpucfg___\n#define nspr_cpucfg___\n#define PR_BYTES_PER_INT 4\n#endif"
