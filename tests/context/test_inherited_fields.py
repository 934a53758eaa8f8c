"""A data class built from another of the same file: its ``signatures`` row starts its fields with
``…Base`` (``fields``), so the row says the constructor takes the base's fields first and where
they are written (the base's own row), rather than look like the whole constructor.

Proven against the classes themselves: for every data class of the real files (h11's events,
msgspec's ``inspect`` types, ``tests/fixtures/outline/python``) the fields its row gives, each
``…Base`` replaced by the fields of that base's row, are the fields the imported class has
(``dataclasses.fields``, ``msgspec.structs.fields``), in their order. A base with no fields
(``msgspec.Struct``'s subclass ``Type``, h11's plain ``Event``) and a base from another module
are not marked.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from leanctx.context.modes import read

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "outline" / "python"
_CLASS = re.compile(r"\bclass (\w+)")


def _rows(name: str, text: str) -> dict[str, list[str]]:
    """Class name: the field entries of its row (``…Base`` kept), from ``signatures``: the last
    parenthesized group of a class row when it holds fields (``name: T``, ``…Base``), else none."""
    out: dict[str, list[str]] = {}
    for row in read(name, text, "signatures").text.splitlines()[:-1]:
        m = _CLASS.search(row)
        if m is None:
            continue
        groups = _groups(row[m.end() :])
        last = groups[-1] if groups else ""
        out[m.group(1)] = _split(last) if (":" in last or last.startswith("…")) else []
    return out


def _groups(tail: str) -> list[str]:
    """The top-level ``(…)`` groups of ``tail`` (type parameters ``[…]`` skipped)."""
    groups, depth, cur = [], 0, ""
    for c in tail:
        if c == "(" and depth == 0:
            depth, cur = 1, ""
            continue
        if depth:
            depth += (c == "(") - (c == ")")
            if depth == 0:
                groups.append(cur)
            else:
                cur += c
    return groups


def _split(fields: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for c in fields:
        depth += c in "([{"
        depth -= c in ")]}"
        if c == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += c
    return [*parts, cur.strip()] if cur.strip() else parts


def _expand(rows: dict[str, list[str]], cls: str) -> list[str]:
    names: list[str] = []
    for f in rows[cls]:
        if f.startswith("…"):
            names += _expand(rows, f[1:])
        elif f != "*":
            names.append(re.split(r"[:=]", f, maxsplit=1)[0].strip())
    return names


def _runtime_fields(cls: Any) -> list[str] | None:
    if dataclasses.is_dataclass(cls):
        return [f.name for f in dataclasses.fields(cls)]
    if isinstance(cls, type) and issubclass(cls, msgspec.Struct):
        return [f.name for f in msgspec.structs.fields(cls)]
    return None


@pytest.mark.parametrize(("fixture", "module"), [("h11_events.py", "h11._events"),
                                                 ("msgspec_inspect.py", "msgspec.inspect")])
def test_rows_give_every_field_the_class_has(fixture: str, module: str) -> None:
    rows = _rows(fixture, (FIXTURES / fixture).read_text())
    mod = importlib.import_module(module)
    checked = inherited = 0
    for cls_name in rows:
        want = _runtime_fields(getattr(mod, cls_name, None))
        if want is None:
            continue
        assert _expand(rows, cls_name) == want, (cls_name, rows[cls_name])
        checked += 1
        inherited += any(f.startswith("…") for f in rows[cls_name])
    assert checked >= 6 and inherited >= 2


def test_marked_bases_are_in_file_data_classes_with_fields() -> None:
    rows = read("h11_events.py", (FIXTURES / "h11_events.py").read_text(), "signatures").text.splitlines()
    assert "175 @dataclass(…) class InformationalResponse(_ResponseBase)(…_ResponseBase)" in rows
    assert ("40 @dataclass(…) class Request(Event)(method: bytes, headers: Headers, target: bytes, "
            "http_version: bytes)") in rows  # ``Event`` is a plain class
    rows = read("inspect.py", (FIXTURES / "msgspec_inspect.py").read_text(), "signatures").text.splitlines()
    assert "371 class ListType(CollectionType)(…CollectionType)" in rows
    assert "107 class AnyType(Type)" in rows  # ``Type`` is a Struct without fields
    assert "84 class Type(msgspec.Struct)" in rows
    assert read("inspect.py", (FIXTURES / "msgspec_inspect.py").read_text(), "map").text.count("…") == 0


SNIPPET = '''\
from dataclasses import dataclass, field, KW_ONLY
from typing import TypedDict
from .elsewhere import Imported


@dataclass
class B:
    b: int


@dataclass
class C:
    c: str


@dataclass
class D(B, C):
    _: KW_ONLY
    d: list[int] = field(default_factory=list)


@dataclass
class E(Imported):
    e: int = 0


class Movie(TypedDict):
    title: str


class Rated(Movie, total=False):
    stars: int
'''


def test_several_bases_in_field_order(tmp_path: Path) -> None:
    rows = read("models.py", SNIPPET, "signatures").text.splitlines()
    assert "16 @dataclass class D(B, C)(…C, …B, *, d: list[int]=…)" in rows  # C's fields come first
    assert "22 @dataclass class E(Imported)(e: int=0)" in rows  # not known here: not marked
    assert "31 class Rated(Movie, total=False)(…Movie, stars: int)" in rows
    code = SNIPPET.replace("from .elsewhere import Imported\n", "Imported = object\n")
    (tmp_path / "models.py").write_text(code)
    p = subprocess.run([sys.executable, "-c", ("import dataclasses, models; "
                        "print([f.name for f in dataclasses.fields(models.D) if f.name != '_'])")],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60, check=True)
    assert p.stdout.strip() == "['c', 'b', 'd']"


def test_cli_signatures_mark_inherited_fields(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "h11_events.py", tmp_path / "events.py")
    exe = Path(sys.executable).with_name("lean-ctx")
    env = {**os.environ, "LEAN_CTX_HOME": str(tmp_path / "home"), "LEAN_CTX_NO_DAEMON": "1"}
    p = subprocess.run([str(exe), "read", "--mode", "signatures", "events.py"], capture_output=True, text=True,
                       timeout=120, cwd=tmp_path, env=env, check=False)
    assert p.returncode == 0, p.stderr
    assert "217 @dataclass(…) class Response(_ResponseBase)(…_ResponseBase)" in p.stdout.splitlines()
