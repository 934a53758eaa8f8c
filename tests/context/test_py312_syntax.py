"""Python 3.12 syntax (PEP 695) in ``signatures`` and ``map``: ``type`` statements, type
parameters of functions and classes (``def f[T](x: T)``, ``class Box[T]``).

What a Python 3.12 interpreter's own ``ast`` says the real files declare (CPython's tests of
PEP 695, ``tests/fixtures/outline/python``) is what the rows must name, at the same lines and
depths, with the type parameters written. The private-function and overload rules of
``signatures`` (``name(…)``) hold for functions with type parameters too: no installed package
here uses PEP 695 in a private or overloaded function, so that rule is shown on a snippet.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from leanctx.context.modes import read
from leanctx.context.symbols import extract_symbols

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "outline" / "python"
FILES = ["inspect_stringized_annotations_pep695.py", "type_aliases_cpython.py"]

_AST = r"""
import ast, json, sys
out = []
def walk(body, depth):
    for n in body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.TypeAlias)):
            name = n.name.id if isinstance(n, ast.TypeAlias) else n.name
            out.append([name, n.lineno, depth, [p.name for p in n.type_params]])
        if isinstance(n, ast.ClassDef):
            walk(n.body, depth + 1)
walk(ast.parse(open(sys.argv[1]).read()).body, 0)
print(json.dumps(out))
"""


@cache
def _python312() -> str | None:
    """A Python 3.12 or later: on the PATH, else one pyenv installed (its shims may have none set)."""
    found = [shutil.which(n) for n in ("python3.12", "python3.13", "python3.14")]
    found += sorted(str(p) for p in Path.home().glob(".pyenv/versions/3.1[2-9]*/bin/python3"))
    for exe in found:
        if exe is None:
            continue
        p = subprocess.run([exe, "-c", "import sys; print(sys.version_info >= (3, 12))"], capture_output=True,
                           text=True, timeout=60, check=False)
        if p.returncode == 0 and p.stdout.strip() == "True":
            return exe
    return None


@pytest.mark.parametrize("name", FILES)
def test_declarations_are_what_python312_parses(name: str) -> None:
    exe = _python312()
    if exe is None:
        pytest.skip("no Python 3.12 or later here")
    path = FIXTURES / name
    p = subprocess.run([exe, "-c", _AST, str(path)], capture_output=True, text=True, timeout=60, check=True)
    want = json.loads(p.stdout)
    assert any(params for *_, params in want)  # the file does use PEP 695
    syms = {(s.name, s.line, s.depth): s for s in extract_symbols(name, path.read_text())}
    for decl, line, depth, params in want:
        s = syms.get((decl, line, depth))
        assert s is not None, (decl, line, depth)
        if params:  # ``name[T, *Ts, **P]`` in its row, as written
            assert f"{decl}[" in s.signature and all(p in s.signature for p in params), s.signature


def test_rows_write_type_parameters_and_type_statements() -> None:
    text = (FIXTURES / FILES[0]).read_text()
    sig = read(FILES[0], text, "signatures").text.splitlines()
    assert "5 class A[T, *Ts, **P]" in sig
    assert "29 generic_function[T, *Ts, **P](x: T, *y: Unpack[Ts], z: P.args, zz: P.kwargs)->None" in sig
    assert "41   generic_method[Foo, **Bar](x: Foo, y: Bar)->None" in sig  # no ``self``
    aliases = (FIXTURES / FILES[1]).read_text()
    sig = read(FILES[1], aliases, "signatures").text.splitlines()
    assert "288 type ConstrainedGenericAlias[LongName: (str, bytes)] = list[LongName]" in sig
    assert "289 type AllTypesAlias[A, *B, **C] = Callable[C, A] | tuple[*B]" in sig
    assert "332   type ClassLevel = str" in sig
    mp = read(FILES[1], aliases, "map").text.splitlines()
    assert "284 type GenericAlias" in mp
    assert "292 class TypeAliasPickleTest [test_pickling:293 ClassLevel:332 test_pickling_local:334]" in mp


GENERIC = '''\
from typing import overload


def _first_of[T](items: list[T], default: T | None = None) -> T | None:
    return items[0] if items else default


def _id[T](x: T) -> T:
    return x


@overload
def pick[T](xs: list[T]) -> T: ...
@overload
def pick[K, V](xs: dict[K, V]) -> K: ...
def pick[T](xs: list[T] | dict[T, object], strict: bool = False) -> T:
    return next(iter(xs))


class Registry[T: (int, str)]:
    def _lookup[K](self, key: K, fallback: T | None = None) -> T | None:
        return fallback
'''


def test_private_and_overload_rules_with_type_parameters() -> None:
    r = read("generic.py", GENERIC, "signatures")
    assert r.text.splitlines()[:-1] == [
        "4 _first_of[T](…)",  # private: its type parameters kept, its parameters not
        "8 _id[T](x: T)->T",  # as short as MAX_DEFAULT: written whole
        "12 @overload pick[T](xs: list[T])->T",
        "14 @overload pick[K, V](xs: dict[K, V])->K",
        "16 pick[T](…)",  # the implementation after its @overload rows
        "20 class Registry[T: (int, str)]",
        "21   _lookup[K](…)",
    ]
    assert r.omitted and "2 private functions written name(…)" in r.omitted and "1 overload implementation" in r.omitted


def test_cli_signatures_of_pep695_file(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / FILES[0], tmp_path / "pep695.py")
    exe = Path(sys.executable).with_name("lean-ctx")
    env = {**os.environ, "LEAN_CTX_HOME": str(tmp_path / "home"), "LEAN_CTX_NO_DAEMON": "1"}
    p = subprocess.run([str(exe), "read", "--mode", "signatures", "pep695.py"], capture_output=True, text=True,
                       timeout=120, cwd=tmp_path, env=env, check=False)
    assert p.returncode == 0, p.stderr
    assert "24 class C[Eggs, **Spam]" in p.stdout.splitlines()
