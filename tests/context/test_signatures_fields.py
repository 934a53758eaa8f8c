"""``signatures`` writes a data class's fields on its row, like parameters, so an agent sees how to
construct it: dataclasses, attrs, msgspec ``Struct``, pydantic ``BaseModel``, ``NamedTuple``,
``TypedDict`` (``ClassVar`` and ``init=False`` left out, ``KW_ONLY`` as ``*``, defaults elided past
``MAX_DEFAULT``, private fields by the mode's private rule); exported TypeScript interfaces and
object type aliases get their property signatures. ``map`` lists no fields. Proven on the rows,
against what Python itself says the constructors take (``inspect.signature`` of the imported
classes), and through the real CLI."""

from __future__ import annotations

import importlib.util
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

from leanctx.context.modes import read

DATA = '''\
import dataclasses
from dataclasses import KW_ONLY, dataclass, field
from typing import Annotated, ClassVar, NamedTuple, TypedDict

import attr
import attrs
import msgspec
from pydantic import BaseModel, Field


@dataclass(frozen=True)
class Point:
    """A point."""

    x: int  # the abscissa
    y: int = 0
    tags: list[str] = field(default_factory=list)
    label: str = field(default="origin")
    cache: dict = field(init=False, default_factory=dict)
    KIND: ClassVar[str] = "point"
    _: KW_ONLY
    scale: float = 1.0
    _hidden_secret_value: Annotated[dict[str, int], "meta"] = field(default_factory=dict)
    _n: int = 0

    def norm(self) -> float:
        return 0.0


@dataclasses.dataclass(frozen=True)
class Child(Point):
    z: int = 0


class Msg(msgspec.Struct, frozen=True):
    id: int
    body: str = "hello there, general kenobi"


class Pair(NamedTuple):
    a: int
    b: "Point"


class Opts(TypedDict, total=False):
    verbose: bool


@attrs.define
class A:
    q: int
    r: list[int] = attrs.field(factory=list)
    s: int = attrs.field(kw_only=True)


@attr.s
class B:
    u = attr.ib()
    v = attr.ib(default=3)
    w = attr.ib(type=int, default=0)


class User(BaseModel):
    model_config = {"frozen": True}
    name: str = Field(..., min_length=1)
    age: int = Field(0, ge=0)
    uri: str = Field(default=..., description="where")
    nick: str | None = None


class Admin(User):
    level: int = 1


class Plain:
    x: int = 0
'''

ROWS = {
    "Point": ("11 @dataclass(frozen=True) class Point(x: int, y: int=0, tags: list[str]=…, label: str=\"origin\", "
              "*, scale: float=1.0, _hidden_secret_value=…, _n: int=0)"),
    "KIND": "20   KIND: ClassVar[str] = \"point\"",  # a constant row, as before; not a field
    "norm": "26   norm()->float",
    "Child": "30 @dataclasses.dataclass(…) class Child(Point)(…Point, z: int=0)",
    "Msg": "35 class Msg(msgspec.Struct, frozen=True)(id: int, body: str=…)",
    "Pair": "40 class Pair(NamedTuple)(a: int, b: Point)",
    "Opts": "45 class Opts(TypedDict, total=False)(verbose: bool)",
    "A": "49 @attrs.define class A(q: int, r: list[int]=…, s: int)",
    "B": "56 @attr.s class B(u, v=3, w: int=0)",
    "User": "63 class User(BaseModel)(name: str, age: int=0, uri: str, nick: str | None=None)",
    "Admin": "71 class Admin(User)(…User, level: int=1)",
    "Plain": "75 class Plain",
}


def _rows(path: str, src: str, mode: str = "signatures") -> list[str]:
    return read(path, src, mode).text.splitlines()


def test_data_classes_carry_their_fields_on_their_row() -> None:
    assert _rows("models.py", DATA)[:-1] == list(ROWS.values())


def test_the_rows_name_what_the_constructors_take(tmp_path: Path) -> None:
    """The field names and which ones have a default are those ``inspect.signature`` reports for
    the imported classes (attrs strips the underscore of a private field: ``_n`` → ``n``)."""
    (tmp_path / "models_m10.py").write_text(DATA)
    spec = importlib.util.spec_from_file_location("models_m10", tmp_path / "models_m10.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["models_m10"] = mod
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.modules.pop("models_m10", None)
    rows = _rows("models.py", DATA)
    for name in ("Point", "Msg", "Pair", "A", "B", "User"):
        row = next(r for r in rows if f" class {name}(" in r)
        fields = row.split(f"class {name}(", 1)[1][:-1]
        if ")(" in fields:  # after the bases
            fields = fields.split(")(", 1)[1]
        written = [f.strip() for f in re.split(r",\s*(?![^\[]*\])", fields)]
        params = inspect.signature(getattr(mod, name)).parameters.values()
        expected = []
        for p in params:
            if p.kind is p.KEYWORD_ONLY and "*" not in expected and name == "Point":
                expected.append("*")
            expected.append((p.name, p.default is not p.empty))
        got = [w if w == "*" else (re.split(r"[:=]", w)[0], "=" in w) for w in written]
        if name == "A":  # attrs puts kw_only fields last, keyword-only; the row keeps source order
            got = [g for g in got if g != ("s", False)] + [("s", False)]
        assert got == expected, (name, got, expected)


def test_map_lists_no_fields() -> None:
    rows = _rows("models.py", DATA, "map")
    assert "11 class Point [KIND:20 norm:26]" in rows
    assert "35 class Msg" in rows and "63 class User" in rows
    assert not any("x: int" in r or "verbose" in r for r in rows)


TS = '''\
export interface Options {
  /** the name */
  name: string;
  retries?: number; // how often
  readonly tags: string[];
  [key: string]: unknown;
  run(x: number): void;
}
export type Shape = { kind: "circle"; radius: number };
interface Hidden { a: number }
type Local = { b: number };
interface Listed { c: string }
export { Listed };
declare module "m" {
  interface Ambient { d: boolean }
}
export interface OnlyMethods { m(): void }
export namespace NS {
  interface Inner { e: number }
  export interface Outer { f: number }
}
'''


def test_exported_typescript_shapes_list_their_properties() -> None:
    for path in ("a.ts", "a.tsx"):
        assert _rows(path, TS)[:-1] == [
            ("1 export interface Options {name: string; retries?: number; readonly tags: string[]; "
             "[key: string]: unknown}"),
            "7   run(x: number): void",
            '9 export type Shape = {kind: "circle"; radius: number}',
            "10 interface Hidden",  # not exported: a helper of the module, its row only
            "11 type Local",
            "12 interface Listed {c: string}",  # exported by the list below it
            "14 declare module \"m\"",
            "15   interface Ambient {d: boolean}",  # an ambient declaration exports its members
            "17 export interface OnlyMethods",
            "17   m(): void",
            "18 export namespace NS",
            "19   interface Inner",  # not exported from its namespace
            "20   export interface Outer {f: number}",
        ], path


def test_other_classes_and_languages_are_unchanged() -> None:
    src = ("from typing import Protocol\n\nclass P(Protocol):\n    x: int\n\n"
           "class E(Exception):\n    code: int = 1\n")
    assert _rows("p.py", src)[:-1] == ["3 class P(Protocol)", "6 class E(Exception)"]
    go = "package p\n\ntype Point struct {\n\tX int\n}\n"
    assert _rows("p.go", go)[0] == "3 type Point struct"


def cli_signatures(tmp_path: Path, files: dict[str, str]) -> list[str]:
    """The rows of ``lean-ctx read --mode signatures`` over ``files`` (name: text) written in ``tmp_path``."""
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    exe = Path(sys.executable).with_name("lean-ctx")
    env = {**os.environ, "LEAN_CTX_HOME": str(tmp_path / "home"), "LEAN_CTX_NO_DAEMON": "1"}
    p = subprocess.run([str(exe), "read", "--mode", "signatures", *files], check=False,
                       capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


def test_cli_signatures_shows_fields(tmp_path: Path) -> None:
    out = cli_signatures(tmp_path, {"models.py": DATA, "opts.ts": TS})
    assert ROWS["Msg"] in out and ROWS["User"] in out and ROWS["Point"] in out
    assert '9 export type Shape = {kind: "circle"; radius: number}' in out
