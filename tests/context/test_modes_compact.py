"""Compact signatures: what is elided is marked, and no declaration, kind or line is lost."""

from __future__ import annotations

import ast
import importlib.util
import re
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from leanctx.context.langs import detect_language
from leanctx.context.modes import read
from leanctx.context.modes.compact import compact_symbols
from leanctx.context.symbols import Symbol, extract_symbols
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
    assert lines[0] == "5 class Client"
    stream = lines[1]
    assert stream.startswith("6   @deprecated(…) stream(url: str, *, timeout: float=5.0, headers: dict[str, str]=…,")
    assert 'mode: Annotated[str, …]="lines")->None' in stream
    assert "#" not in stream and "pragma" not in stream and "self" not in stream and "def" not in stream
    assert lines[2] == '17   @classmethod make(name: str="x")->Client'  # a forward reference without quotes
    assert lines[3] == "21   @staticmethod helper(x: int)->int"
    assert lines[4] == "26 top(a: int, b: str=…)->bool"
    assert lines[-1] == "[signatures · 27 lines · 22 lines not shown]"


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
            assert row.startswith(f"{s.line} {'  ' * s.depth}") and s.name in row, (p, s, row)
        old = "\n".join(f"{s.line}: {'  ' * s.depth}{s.signature}" for s in syms)
        assert count_tokens(out) <= count_tokens(old) + 30, p  # the footer is at most a few tokens


def test_stacked_decorators_and_long_signatures_keep_every_parameter() -> None:
    opts = "".join(f'@click.option("--opt-{i}", help="an option with a fairly long help text number {i}")\n'
                   for i in range(12))
    src = f"@click.command()\n{opts}def main(" + ", ".join(f"argument_number_{i}: int = {i}" for i in range(30)) + "):\n    pass\n"
    row = read("cli.py", src, "signatures").text.splitlines()[0]
    assert row.startswith('1 @click.command() @click.option(…) (+11 decorators) main(argument_number_0: int=0,')
    assert row.endswith("argument_number_29: int=29)") and "…," not in row


def test_other_languages_elide_long_defaults_and_comments() -> None:
    ts = ("export function connect(url: string, /* the url */ opts: Options = "
          "{ retries: 3, backoff: 'exponential', timeoutMs: 10000 }): Client {\n  return x\n}\n")
    r = read("a.ts", ts, "signatures")
    assert r.text.splitlines()[0] == "1 export connect(url: string, opts: Options=…): Client"
    kt = 'fun greet(name: String = "a default greeting that is long"): String {\n  return name\n}\n'
    assert read("a.kt", kt, "signatures").text.splitlines()[0] == "1 greet(name: String=…): String"


# ---------------------------------------------------------------- Python against its own parser


class _NoMetadata(ast.NodeTransformer):
    """``Annotated[T, metadata]`` as the compact form writes it: ``Annotated[T, …]``."""

    def visit_Subscript(self, n: ast.Subscript) -> ast.AST:
        self.generic_visit(n)
        if ast.unparse(n.value).endswith("Annotated") and isinstance(n.slice, ast.Tuple):
            n.slice = ast.Tuple([n.slice.elts[0], ast.Name("…")])
        return n


def _type_text(node: ast.expr) -> str:
    # the compact form drops forward-reference quotes, spaces and redundant parentheses
    return re.sub(r"[\s'\"()]", "", ast.unparse(_NoMetadata().visit(node)))


def _defs(body: list[ast.stmt]) -> list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]:
    """Functions and classes of a module or class body, through ``if``/``try`` (not under
    ``if __name__ == "__main__":``)."""
    out: list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] = []
    for n in body:
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.append(n)
            if isinstance(n, ast.ClassDef):
                out.extend(_defs(n.body))
        elif isinstance(n, ast.If) and "__name__" not in ast.unparse(n.test):
            out.extend(_defs(n.body) + _defs(n.orelse))
        elif isinstance(n, ast.Try):
            out.extend(_defs(n.body + n.orelse + n.finalbody + [s for h in n.handlers for s in h.body]))
    return out


def _check_python_file(path: Path, symbols: Callable[[str, str, str], list[Symbol]] = compact_symbols) -> int:
    """Every function and class is a row; every parameter, annotation and return type of a
    function is in its row. Returns the number of functions checked."""
    text = path.read_text()
    rows = {(s.line, s.name): s.signature for s in symbols(str(path), text, "python")}
    checked = 0
    for d in _defs(ast.parse(text).body):
        line = d.decorator_list[0].lineno if d.decorator_list else d.lineno
        assert (line, d.name) in rows, (path, d.name, line)
        if isinstance(d, ast.ClassDef):
            continue
        sig = rows[line, d.name]
        flat = re.sub(r"[\s'\"()]", "", sig)
        a = d.args
        positional = a.posonlyargs + a.args
        params = positional + a.kwonlyargs + [p for p in (a.vararg, a.kwarg) if p is not None]
        for p in params:
            if positional and p is positional[0] and p.arg in ("self", "cls") and p.annotation is None:
                assert not re.search(rf"\({p.arg}\b", sig), (path, sig)  # the receiver is left out
                continue
            assert re.search(rf"[(,*]\**{p.arg}\b", sig.replace(" ", "")), (path, d.name, p.arg, sig)
            if p.annotation is not None:
                assert _type_text(p.annotation) in flat, (path, d.name, p.arg, sig)
        if d.returns is not None and not (d.name == "__init__" and ast.unparse(d.returns) == "None"):
            assert flat.endswith("->" + _type_text(d.returns)), (path, d.name, sig)
        checked += 1
    return checked


@pytest.mark.parametrize("pkg", ["starlette", "httpx", "click", "typer", "rich", "mcp"])
def test_real_python_files_keep_every_declaration_parameter_and_return_type(pkg: str) -> None:
    spec = importlib.util.find_spec(pkg)
    assert spec is not None and spec.origin is not None
    files = sorted(Path(spec.origin).parent.rglob("*.py"))[:60]
    assert sum(_check_python_file(p) for p in files) > 100


def test_the_python_check_can_fail(tmp_path: Path) -> None:
    """The parser-based check above notices a lost parameter, annotation, return type or def."""
    src = tmp_path / "m.py"
    src.write_text("class A:\n    def f(self, x: int, *, y: str = 'a') -> bool:\n        return True\n")
    assert _check_python_file(src) == 1
    for broken in ["f(x: int, *)->bool", "f(x, *, y: str='a')->bool", "f(x: int, *, y: str='a')"]:
        def fake(path: str, text: str, language: str, broken: str = broken) -> list[Symbol]:
            return [s if s.name != "f" else msgspec.structs.replace(s, signature=broken)
                    for s in compact_symbols(path, text, language)]
        with pytest.raises(AssertionError):
            _check_python_file(src, fake)
    with pytest.raises(AssertionError):
        _check_python_file(src, lambda path, text, language: [s for s in compact_symbols(path, text, language)
                                                              if s.name != "f"])


def test_python_constants_type_aliases_and_branches() -> None:
    src = '''import sys
from typing import Final, TypeAlias, TypeVar

MAX_RETRIES = 3
TIMEOUT: Final[float] = 5.0
HEADERS = {"user-agent": "lean-ctx", "accept": "application/json"}
T = TypeVar("T", bound="Base")
StyleType = Union[str, "Style"]
Callback: TypeAlias = "Callable[[int], None]"
Mode = Literal["fast", "slow"]
type Pair[K] = tuple[K, K]
counter = 0
if sys.platform == "win32":
    def open_console(handle: int) -> None: ...
else:
    def open_console(fd: int) -> None: ...
try:
    from fast import parse
except ImportError:
    def parse(data: bytes) -> dict: ...


class Color(Enum):
    RED = 1
    name_map: dict = {}

    def hex(self) -> str:
        return ""


if __name__ == "__main__":
    def demo() -> None: ...
'''
    rows = read("m.py", src, "signatures").text.splitlines()
    assert rows[:-1] == [
        "4 MAX_RETRIES = 3",
        "5 TIMEOUT: Final[float] = 5.0",
        "6 HEADERS = …",  # a constant's long value is elided; a type alias keeps its value
        '7 T = TypeVar("T", bound="Base")',
        "8 StyleType = Union[str, Style]",
        "9 Callback: TypeAlias = Callable[[int], None]",
        '10 Mode = Literal["fast", "slow"]',
        "11 type Pair[K] = tuple[K, K]",
        "14 open_console(handle: int)->None",
        "16 open_console(fd: int)->None",
        "20 parse(data: bytes)->dict",
        "23 class Color(Enum)",
        "24   RED = 1",
        "27   hex()->str",
    ]
    kinds = {(s.name, s.line): s.kind for s in extract_symbols("m.py", src)}
    assert kinds["MAX_RETRIES", 4] == "constant" and kinds["T", 7] == "type" and kinds["Mode", 10] == "type"
    assert ("counter", 12) not in kinds and ("demo", 32) not in kinds


def test_forward_references_lose_quotes_literals_and_short_comments_do_not_leak() -> None:
    src = ('def f(a: "Style", b: Optional["Style"] = None, c: Literal["x", "y"] = "x",  # note\n'
           '      d: "list[Item] | None" = None, e: typing.Optional["A"] = None) -> "Style":\n    pass\n')
    row = read("m.py", src, "signatures").text.splitlines()[0]
    assert row == ('1 f(a: Style, b: Optional[Style]=None, c: Literal["x", "y"]="x", d: list[Item] | None=None, '
                   'e: typing.Optional[A]=None)->Style')
    long_ref = 'def g(x: "SomeVeryLongForwardReferenceName[WithParameters]") -> None:\n    pass\n'
    assert "x: SomeVeryLongForwardReferenceName[WithParameters]" in read("m.py", long_ref, "signatures").text
