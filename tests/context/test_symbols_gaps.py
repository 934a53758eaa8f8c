"""Gaps in ``map`` / ``signatures`` closed: functions of an exported object literal, names bound
by destructuring and by several declarators, C functions after macro words, prototypes whose
parameters span lines, and long runs of constants folded with their count and lines."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.context.modes import read
from leanctx.context.modes.compact import compact_symbols
from leanctx.context.modes.outline import FOLD_HEAD, FOLD_OVER, FOLD_TAIL
from leanctx.context.symbols import extract_symbols


def _rows(path: str, src: str, mode: str) -> list[str]:
    return read(path, src, mode).text.splitlines()[:-1]


def _syms(path: str, src: str) -> dict[str, tuple[str, int, int, bool]]:
    return {s.name: (s.kind, s.line, s.depth, s.exported) for s in extract_symbols(path, src)}


# ---------------------------------------------------------------- 1. CommonJS object literals
CJS_OBJECT = """\
'use strict'
const helper = (x) => x
module.exports = {
  f (a, b) { return a },
  g: function (c) { return c },
  h: (d, e = 1) => d,
  async k (z) {},
  'quoted-key': function (q) {},
  name: 'thing',
  helper,
}
exports.codec = {
  encode (value, opts) { return value },
}
exports.run = function (cmd) {}
"""


def test_functions_of_an_exported_object_literal_are_exported_symbols() -> None:
    syms = _syms("m.js", CJS_OBJECT)
    assert syms["module.exports"] == ("object", 3, 0, True)
    assert syms["f"] == ("function", 4, 1, True)
    assert syms["g"] == ("function", 5, 1, True)
    assert syms["h"] == ("function", 6, 1, True)
    assert syms["k"] == ("function", 7, 1, True)
    assert syms["quoted-key"] == ("function", 8, 1, True)
    assert syms["codec"] == ("object", 12, 0, True) and syms["encode"] == ("function", 13, 1, True)
    assert syms["run"] == ("function", 15, 0, True)  # exports.x = function: as before
    assert "name" not in syms  # a value that is not a function is not a declaration
    assert syms["helper"] == ("function", 2, 0, True)  # shorthand: the local function, exported
    assert _rows("m.js", CJS_OBJECT, "signatures") == [
        "2 const helper = (x)",
        "3 module.exports",
        "4   f (a, b)",
        "5   g: function (c)",
        "6   h: (d, e=1)",
        "7   async k (z)",
        "8   'quoted-key': function (q)",
        "12 exports.codec",
        "13   encode (value, opts)",
        "15 exports.run = function (cmd)",
    ]
    assert _rows("m.js", CJS_OBJECT, "map") == [
        "2 fn helper",
        "3 object module.exports [f:4 g:5 h:6 k:7 quoted-key:8]",
        "12 object codec [encode:13]",
        "15 fn run",
    ]


def test_default_exported_object_literal_and_plain_objects() -> None:
    src = "export default {\n  data () { return 1 },\n  x: 1,\n}\nconst local = { f () {} }\n"
    assert _rows("c.js", src, "signatures") == ["1 export default", "2   data ()"]
    assert _rows("c.js", src, "map") == ["1 object default [data:2]"]
    # an object that is not exported, or exports no function, declares nothing (as before)
    assert _rows("d.js", "const api = { f () {} }\nmodule.exports = { a: 1, b }\n", "map") == [
        "(no imports or declarations found)"]


# ---------------------------------------------------------------- 2. destructuring
DESTRUCTURING = """\
export const { a, b: renamed, ...rest } = obj;
export const [x, , y = 2, ...zs] = arr;
const { local1, local2 } = require('./k');
const { LOCAL_CONST } = require('./constants');
const { shared } = other;
export { shared };
"""


def test_each_name_bound_by_an_exported_pattern_is_an_exported_symbol() -> None:
    syms = _syms("m.ts", DESTRUCTURING)
    for name in ("a", "renamed", "rest"):
        assert syms[name] == ("constant", 1, 0, True), name
    for name in ("x", "y", "zs"):
        assert syms[name] == ("constant", 2, 0, True), name
    assert syms["shared"] == ("constant", 5, 0, True)  # exported by a list
    # a destructured import is not a declaration, whatever its case
    assert not {"b", "obj", "arr", "local1", "local2", "LOCAL_CONST", "other"} & set(syms)
    assert _rows("m.ts", DESTRUCTURING, "signatures") == [  # one row per pattern
        "1 export const { a, b: renamed, ...rest } = obj",
        "2 export const [x, , y = 2, ...zs] = arr",
        "5 const { shared } = other",
    ]
    assert _rows("m.ts", DESTRUCTURING, "map") == [
        "deps: ./k, ./constants", "1 const a renamed:1 rest:1 x:2 y:2 zs:2 shared:5"]


# ---------------------------------------------------------------- 3. several declarators
MULTI_JS = """\
export const a = 1, b = 2;
export let c, d;
const K1 = 1, K2 = 2, small = 3;
var q = function (m) {}, r = (n) => n;
export const
  first = 'x',
  second = function (p) { return p };
"""


def test_every_declarator_of_a_declaration_is_a_symbol() -> None:
    syms = _syms("m.js", MULTI_JS)
    assert syms["a"] == syms["b"] == ("constant", 1, 0, True)
    assert syms["c"] == syms["d"] == ("constant", 2, 0, True)
    assert syms["K1"] == syms["K2"] == ("constant", 3, 0, False)
    assert "small" not in syms
    assert syms["q"] == syms["r"] == ("function", 4, 0, False)
    assert syms["first"] == ("constant", 5, 0, True)  # the declaration's line
    assert syms["second"] == ("function", 7, 0, True)  # its own line
    assert _rows("m.js", MULTI_JS, "signatures") == [
        "1 export const a = 1",
        "1 export const b = 2",
        "2 export let c",
        "2 export let d",
        "3 const K1 = 1",
        "3 const K2 = 2",
        "4 var q = function (m)",
        "4 var r = (n)",
        "5 export const first = 'x'",
        "7 export const second = function (p)",
    ]
    assert _rows("m.js", MULTI_JS, "map") == [
        "1 const a b:1 c:2 d:2 first:5", "7 fn second", "private: K1:3 K2:3 q:4 r:4"]


GO_MULTI = """\
package p

const A, B = 1, 2
const (
\tC, d = 3, 4
\tE    = 5
)
var X, y, Z int
"""


def test_every_name_of_a_go_spec_is_a_symbol() -> None:
    syms = _syms("p.go", GO_MULTI)
    assert syms["A"] == syms["B"] == ("constant", 3, 0, True)
    assert syms["C"] == ("constant", 5, 0, True) and syms["E"] == ("constant", 6, 0, True)
    assert syms["X"] == syms["Z"] == ("variable", 8, 0, True)
    assert not {"d", "y"} & set(syms)  # unexported
    assert _rows("p.go", GO_MULTI, "signatures") == [  # the names of one spec share its row
        "3 const A, B = 1, 2", "5 const C, d = 3, 4", "6 const E = 5", "8 var X, y, Z int"]
    assert _rows("p.go", GO_MULTI, "map") == ["3 const A B:3 C:5 E:6", "8 var X Z:8"]
    one_line = "package p\n\nconst ( A = 1; B = 2 )\nvar ( X = 1; y = 2; Z = 3 )\n"
    assert _rows("p.go", one_line, "signatures") == ["3 const A = 1", "3 const B = 2", "4 var X = 1", "4 var Z = 3"]


# ---------------------------------------------------------------- 4. C macros
C_MACROS = """\
CPy_NOINLINE static PyObject *f(int x) { return 0; }
static inline PY_INLINE int g(void) { return 1; }
EXPORT_API void h(void) { }
__attribute__((unused)) static int k(void) { return 2; }
CPy_NOINLINE
CPy_COLD
PyObject *slow(PyObject *v, PyObject *owner) {
    return v;
}
CPy_NOINLINE CPy_COLD static int both(int z) { return z; }
PyAPI_FUNC(void) _Py_NO_RETURN Py_Exit(int);
PyAPI_FUNC(int)
Py_Multi(int a,
         int b);
MACRO_ONE MACRO_TWO

int after_blank(void) { return 0; }
MACRO_ONE MACRO_TWO
/* a comment */
int after_comment(void) { return 0; }
MODULE_INIT(foo);
"""


def test_c_functions_after_macro_words_keep_their_line_and_signature() -> None:
    syms = {s.name: s for s in compact_symbols("m.c", C_MACROS, "c")}
    expected = {
        "f": (1, "CPy_NOINLINE static PyObject *f(int x)"),
        "g": (2, "static inline PY_INLINE int g(void)"),
        "h": (3, "EXPORT_API void h(void)"),
        "k": (4, "__attribute__((unused)) static int k(void)"),
        "slow": (5, "CPy_NOINLINE CPy_COLD PyObject *slow(PyObject *v, PyObject *owner)"),
        "both": (10, "CPy_NOINLINE CPy_COLD static int both(int z)"),
        "Py_Exit": (11, "PyAPI_FUNC(void) _Py_NO_RETURN Py_Exit(int)"),  # parsed as a call statement
        "Py_Multi": (12, "PyAPI_FUNC(int) Py_Multi(int a, int b)"),  # every parameter, not the first line
        "after_blank": (17, "int after_blank(void)"),  # a blank line: not a prefix
        "after_comment": (20, "int after_comment(void)"),  # nor a comment; MODULE_INIT(foo): no function
    }
    assert {n: (s.line, s.signature) for n, s in syms.items()} == expected
    assert not syms["both"].exported and syms["slow"].exported and syms["Py_Exit"].exported
    assert {n: s.line for n, s in _syms_full("m.c", C_MACROS).items()} == {n: v[0] for n, v in expected.items()}


def _syms_full(path: str, src: str) -> dict[str, object]:
    return {s.name: s for s in extract_symbols(path, src)}


def test_a_real_mypyc_function_after_two_macro_lines() -> None:
    path = Path(__file__).resolve().parents[1] / "fixtures" / "c" / "pythonsupport_excerpt.c"  # mypyc's, copied
    text = path.read_text()
    at = text.split("\n").index("CPy_NOINLINE") + 1
    assert text.split("\n")[at] == "CPy_COLD"  # the file still has the shape this test is about
    rows = _rows(str(path), text, "signatures")
    assert f"{at} CPy_NOINLINE CPy_COLD PyObject *CPy_GetAttrRefSlow(PyObject *v, PyObject *owner, PyObject **field)" in rows
    assert f"{at} fn CPy_GetAttrRefSlow" in _rows(str(path), text, "map")


@pytest.mark.parametrize(
    ("path", "src", "row"),
    [
        ("o.ts", "export function f(\n  a: string,\n  b: number,\n): void;\nexport function f(a: any, b: any) {}\n",
         "1 export f(a: string, b: number): void"),
        ("o.ts", "interface I {\n  m(\n    x: number,\n  ): string;\n}\n", "2   m(x: number): string"),
        ("o.rs", "trait T {\n    fn m(\n        &self,\n        b: u8,\n    ) -> u8;\n}\n", "2   m(&self, b: u8)->u8"),
        ("p.h", "static int\nbar(int a,\n    int b);\n", "1 static int bar(int a, int b)"),
    ],
    ids=["ts-overload", "ts-interface", "rust-trait", "c-prototype"],
)
def test_a_function_without_a_body_keeps_parameters_on_several_lines(path: str, src: str, row: str) -> None:
    assert row in _rows(path, src, "signatures")


# ---------------------------------------------------------------- 5. long runs of constants
def _go_generated(n_af: int, n_errno: int) -> str:
    head = "// mkerrors.sh -m64\n// Code generated by the command above; DO NOT EDIT.\n\npackage syscall\n\nconst (\n"
    af = "".join(f"\tAF_{i:04d} = 0x{i:x}\n" for i in range(n_af))
    errno = "".join(f"\tE{i:04d} = Errno(0x{i:x})\n" for i in range(n_errno))
    return head + af + ")\n\nconst (\n" + errno + ")\n\nfunc F() {}\n"


def _fold_rows(rows: list[str]) -> list[re.Match[str]]:
    rx = re.compile(r"\s*… (\d+) more (\w+) in lines (\d+)-(\d+) \((\d+) in lines (\d+)-(\d+); mode lines:(\d+)-(\d+)")
    return [m for r in rows if (m := rx.match(r))]


def test_a_long_go_const_block_is_folded_with_its_count_and_lines() -> None:
    src = _go_generated(1500, 45)
    rows = _rows("zerrors.go", src, "signatures")
    lines = src.split("\n")
    # block 1: AF_0000 at line 7 ... AF_1499 at line 1506; block 2: E0000 at 1510 ... E0044 at 1554
    assert rows[:FOLD_HEAD] == [f"{7 + i} const AF_{i:04d} = 0x{i:x}" for i in range(FOLD_HEAD)]
    hidden = 1500 - FOLD_HEAD - FOLD_TAIL
    first, last = 7 + FOLD_HEAD, 7 + 1500 - FOLD_TAIL - 1
    assert rows[FOLD_HEAD] == (f"… {hidden} more constants in lines {first}-{last} "
                               f"(1500 in lines 7-1506; mode lines:{first}-{last} shows them)")
    assert rows[FOLD_HEAD + 1 : FOLD_HEAD + 1 + FOLD_TAIL] == [
        f"{7 + i} const AF_{i:04d} = 0x{i:x}" for i in range(1500 - FOLD_TAIL, 1500)]
    folds = _fold_rows(rows)
    assert len(folds) == 2  # one per block: a run does not cross a ``const (…)`` group
    assert folds[1].group(5, 6, 7) == ("45", "1510", "1554")
    assert rows[-1] == "1557 F()"
    # nothing vanishes silently: rows shown + counts folded = every declaration
    shown = [r for r in rows if re.match(r"\d+ const ", r)]
    assert len(shown) + sum(int(m.group(1)) for m in folds) == 1545
    # the range a fold names holds exactly the declarations it stands for
    for m in folds:
        a, b = int(m.group(3)), int(m.group(4))
        assert sum(1 for ln in lines[a - 1 : b] if re.match(r"\t(AF_|E)\d{4} = ", ln)) == int(m.group(1))
    r = read("zerrors.go", src, "signatures")
    assert r.shown_lines == len(shown) + 1 and f"{1545 - len(shown)} declarations folded" in r.text.splitlines()[-1]
    assert len(r.text) < 2000  # was one row per constant


@pytest.mark.parametrize(
    ("path", "make"),
    [
        ("consts.py", lambda i: f"OPT_{i} = {i}\n"),
        ("consts.ts", lambda i: f"export const OPT_{i} = {i};\n"),
        ("consts.rs", lambda i: f"pub const OPT_{i}: u32 = {i};\n"),
    ],
    ids=["python", "typescript", "rust"],
)
def test_runs_of_constants_are_folded_in_any_language_past_the_threshold(path: str, make) -> None:  # type: ignore[no-untyped-def]
    at_limit = "".join(make(i) for i in range(FOLD_OVER))
    rows = _rows(path, at_limit, "signatures")
    assert len(rows) == FOLD_OVER and not _fold_rows(rows)  # up to FOLD_OVER: every one
    over = "".join(make(i) for i in range(FOLD_OVER + 1))
    rows = _rows(path, over, "signatures")
    folds = _fold_rows(rows)
    assert len(folds) == 1 and len(rows) == FOLD_HEAD + 1 + FOLD_TAIL
    hidden = FOLD_OVER + 1 - FOLD_HEAD - FOLD_TAIL
    assert folds[0].group(1, 3, 4, 5, 6, 7) == (
        str(hidden), str(FOLD_HEAD + 1), str(FOLD_OVER + 1 - FOLD_TAIL), str(FOLD_OVER + 1), "1", str(FOLD_OVER + 1))
    assert "OPT_0" in rows[0] and f"OPT_{FOLD_OVER}" in rows[-1]


def test_a_declaration_between_constants_ends_the_run() -> None:
    half = FOLD_OVER // 2 + 5
    src = "".join(f"A_{i} = {i}\n" for i in range(half)) + "def f(x): pass\n" + "".join(
        f"B_{i} = {i}\n" for i in range(half))
    rows = _rows("m.py", src, "signatures")
    assert len(rows) == 2 * half + 1 and not _fold_rows(rows)
    joined = _rows("m.py", src.replace("def f(x): pass\n", ""), "signatures")  # one run of 2 * half
    assert [m.group(5) for m in _fold_rows(joined)] == [str(2 * half)]


def test_cli_signatures_of_a_generated_go_file(tmp_path: Path) -> None:
    (tmp_path / "zerrors_linux_amd64.go").write_text(_go_generated(1200, 10))
    exe = Path(sys.executable).with_name("lean-ctx")
    p = subprocess.run([str(exe), "read", "--mode", "signatures", "zerrors_linux_amd64.go"], check=False,
                       capture_output=True, text=True, timeout=120, cwd=tmp_path,
                       env={**os.environ, "LEAN_CTX_NO_DAEMON": "1"})
    assert p.returncode == 0, p.stderr
    out = p.stdout.splitlines()
    assert f"… {1200 - FOLD_HEAD - FOLD_TAIL} more constants in lines 12-1203 (1200 in lines 7-1206; " \
           "mode lines:12-1203 shows them)" in out
    assert "1210 const E0000 = Errno(0x0)" in out and "1219 const E0009 = Errno(0x9)" in out  # 10: not folded
    assert len(out) < 30
