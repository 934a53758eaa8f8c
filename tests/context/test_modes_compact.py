"""Compact signatures: what is elided is marked, and no declaration, kind or line is lost."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from leanctx.context.langs import detect_language
from leanctx.context.modes import read
from leanctx.context.modes.compact import compact_symbols
from leanctx.context.symbols import extract_symbols
from leanctx.context.tokens import count_tokens

SNIPPETS = Path(__file__).parent / "snippets"

SRC = '''import typing
from typing import Annotated


class Client:
    @deprecated("this method is deprecated as of 2026; use Client.listen() instead, it is better")
    def stream(
        self,
        url: str,  # the address
        *,
        timeout: float = 5.0,
        headers: dict[str, str] = {"user-agent": "lean-ctx/0.1 (+https://example.invalid)"},
        mode: Annotated[str, Doc("""How to stream: a long explanation of every mode there is.""")] = "lines",
    ) -> None:  # pragma: no cover
        return None

    @classmethod
    def make(cls, name: str = "x") -> "Client":
        return cls()

    @staticmethod
    def helper(x: int) -> int:
        return x


def top(a: int, b: str = "a very long default string value here") -> bool:
    return True
'''


def test_compact_python_signature() -> None:
    r = read("client.py", SRC, "signatures")
    lines = r.text.splitlines()
    assert lines[0] == "5: class Client"
    stream = lines[1]
    assert stream.startswith("6:   @deprecated(…) def stream(url: str, *, timeout: float = 5.0, headers: dict[str, str] = …,")
    assert 'mode: Annotated[str, …] = "lines") -> None' in stream
    assert "#" not in stream and "pragma" not in stream and "self" not in stream
    assert lines[2] == '17:   @classmethod def make(name: str = "x") -> "Client"'
    assert lines[3] == "21:   @staticmethod def helper(x: int) -> int"
    assert lines[4] == "26: def top(a: int, b: str = …) -> bool"
    assert lines[-1] == "[signatures · 27 lines · 5 declarations · 22 lines not shown]"


def test_same_declarations_as_the_symbol_walk() -> None:
    for p in sorted(SNIPPETS.iterdir()):
        text = p.read_text()
        lang = detect_language(p.name, text)
        full = [(s.name, s.kind, s.line, s.end_line, s.depth, s.exported) for s in extract_symbols(p.name, text, lang)]
        compact = [(s.name, s.kind, s.line, s.end_line, s.depth, s.exported)
                   for s in compact_symbols(p.name, text, lang)]
        assert compact == full, p.name


@pytest.mark.parametrize("pkg", ["starlette", "typer", "httpx"])
def test_real_files_keep_every_declaration_and_get_smaller(pkg: str) -> None:
    spec = importlib.util.find_spec(pkg)
    assert spec is not None and spec.origin is not None
    root = Path(spec.origin).parent
    for p in sorted(root.glob("*.py"))[:12]:
        text = p.read_text()
        syms = extract_symbols(str(p), text)
        out = read(str(p), text, "signatures").text
        rows = out.splitlines()[:-1] if syms else []
        assert len(rows) == len(syms), p
        for s, row in zip(syms, rows, strict=True):
            assert row.startswith(f"{s.line}: {'  ' * s.depth}") and s.name in row, (p, s, row)
        old = "\n".join(f"{s.line}: {'  ' * s.depth}{s.signature}" for s in syms)
        assert count_tokens(out) <= count_tokens(old) + 30, p  # the footer is at most a few tokens


def test_stacked_decorators_and_long_signatures_keep_the_name() -> None:
    opts = "".join(f'@click.option("--opt-{i}", help="an option with a fairly long help text number {i}")\n'
                   for i in range(12))
    src = f"@click.command()\n{opts}def main(" + ", ".join(f"argument_number_{i}: int = {i}" for i in range(30)) + "):\n    pass\n"
    row = read("cli.py", src, "signatures").text.splitlines()[0]
    assert row.startswith('1: @click.command() @click.option(…) (+11 decorators) def main(argument_number_0: int = 0,')
    assert row.endswith(" …") and len(row) < 300


def test_other_languages_elide_long_defaults_and_comments() -> None:
    ts = ("export function connect(url: string, /* the url */ opts: Options = "
          "{ retries: 3, backoff: 'exponential', timeoutMs: 10000 }): Client {\n  return x\n}\n")
    r = read("a.ts", ts, "signatures")
    assert r.text.splitlines()[0] == "1: export function connect(url: string, opts: Options = …): Client"
    kt = 'fun greet(name: String = "a default greeting that is long"): String {\n  return name\n}\n'
    assert read("a.kt", kt, "signatures").text.splitlines()[0] == "1: fun greet(name: String = …): String"
