"""Python assignments that bind several names at once (``A, B = 1, 2``, ``(X, Y) = …``,
``M = N = 0``): every UPPER_CASE name is a constant, sharing the statement's line and
signature, as the names of a Go spec ``const A, B = 1, 2`` do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from leanctx.context.modes import read
from leanctx.context.symbols import extract_symbols

TUPLES = """\
A, B = 1, 2
(X, Y) = (3, 4)
[P, Q] = 5, 6
lower, UPPER = 1, 2
M = N = 7
_P, _Q = 1, 2
D, *REST = [1, 2, 3]
obj.attr, C = 1, 2
x, y = 1, 2
for I, J in pairs:
    pass


class Color:
    RED, GREEN = range(2)
    a, b = 1, 2
"""


def _rows(path: str, src: str, mode: str) -> list[str]:
    return read(path, src, mode).text.splitlines()[:-1]


def test_every_upper_case_name_of_a_tuple_assignment_is_a_constant() -> None:
    syms = [(s.name, s.kind, s.line, s.depth, s.exported) for s in extract_symbols("m.py", TUPLES)]
    assert syms == [
        ("A", "constant", 1, 0, True), ("B", "constant", 1, 0, True),
        ("X", "constant", 2, 0, True), ("Y", "constant", 2, 0, True),
        ("P", "constant", 3, 0, True), ("Q", "constant", 3, 0, True),
        ("UPPER", "constant", 4, 0, True),  # ``lower`` is a variable, not a declaration
        ("M", "constant", 5, 0, True), ("N", "constant", 5, 0, True),  # a chain binds both
        ("_P", "constant", 6, 0, False), ("_Q", "constant", 6, 0, False),
        ("D", "constant", 7, 0, True), ("REST", "constant", 7, 0, True),
        ("C", "constant", 8, 0, True),  # an attribute binds no name
        ("Color", "class", 14, 0, True),
        ("RED", "constant", 15, 1, True), ("GREEN", "constant", 15, 1, True),
    ]  # nothing from ``x, y``, ``a, b`` (lowercase) or the ``for`` target


def test_signatures_share_one_row_per_statement_and_map_lists_every_name() -> None:
    assert _rows("m.py", TUPLES, "signatures") == [
        "1 A, B = 1, 2", "2 (X, Y) = (3, 4)", "3 [P, Q] = 5, 6", "4 lower, UPPER = 1, 2", "5 M = N = 7",
        "6 _P, _Q = 1, 2", "7 D, *REST = [1, 2, 3]", "8 obj.attr, C = 1, 2",
        "14 class Color", "15   RED, GREEN = range(2)"]
    assert _rows("m.py", TUPLES, "map") == [
        "1 const A B:1 X:2 Y:2 P:3 Q:3 UPPER:4 M:5 N:5 D:7 REST:7 C:8",
        "14 class Color [RED:15 GREEN:15]", "private: _P:6 _Q:6"]


def test_a_long_tuple_value_is_elided_like_any_constant() -> None:
    src = "WIDTH, HEIGHT = compute_the_default_dimensions(of_the_screen)\n"
    assert _rows("m.py", src, "signatures") == ["1 WIDTH, HEIGHT = …"]


def test_the_cli_map_lists_tuple_constants(tmp_path: Path) -> None:
    (tmp_path / "consts.py").write_text(TUPLES)
    env = {**os.environ, "LEAN_CTX_HOME": str(tmp_path / "home"), "LEAN_CTX_NO_DAEMON": "1"}
    exe = Path(sys.executable).with_name("lean-ctx")
    p = subprocess.run([str(exe), "read", "--mode", "map", "consts.py"], check=False, capture_output=True,
                       text=True, timeout=120, cwd=tmp_path, env=env)
    assert p.returncode == 0, p.stderr
    assert "1 const A B:1 X:2 Y:2 P:3 Q:3 UPPER:4 M:5 N:5 D:7 REST:7 C:8" in p.stdout.splitlines()
